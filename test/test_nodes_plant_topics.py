"""robot_emulator with ``interface: topics`` over real DDS: the world as an independent plant without a servo
driver (joint_commands in, joint_states and imu/data out), on the engine and on MuJoCo.

* the joints follow joint_commands (joint_states reach the commanded angles);
* imu/data (the imu node's Madgwick filter on the world's rates and specific force) agrees with the ground truth
  (mocap/pose) in roll and pitch;
* a removed leg's joints vanish from joint_states, the others stay; ``hide`` leaves joints out and brings them
  back while the world keeps them;
* the sim graph launched with ``interface:=topics`` has no servo_driver and no imu.
"""
import math

import numpy as np
import pytest

from jethexa_dynamics.nodes import graph_spec


def test_sim_graph_with_interface_topics_has_no_servo_driver_and_no_imu():
    names = [e.name for e, _ in graph_spec.node_parameters("sim", {"interface": "topics", "plant": "mujoco"})]
    assert "servo_driver" not in names and "imu" not in names
    assert {"robot_emulator", "gait_controller", "predictor", "damage_monitor"} <= set(names)
    params = dict((e.name, p) for e, p in graph_spec.node_parameters("sim", {"interface": "topics"}))
    assert params["robot_emulator"]["interface"] == "topics" and params["robot_emulator"]["plant"] == "engine"
    assert [e.name for e, _ in graph_spec.node_parameters("sim")][:3] == ["robot_emulator", "servo_driver", "imu"]
    procs = graph_spec.processes("sim", {"interface": "topics"})          # the split layout without the two
    assert [p.label for p in procs] == ["robot_emulator", "gait_controller", "robot_model"]
    with pytest.raises(ValueError, match="interface"):
        graph_spec.node_parameters("sim", {"interface": "serial"})
    eps = {(e.kind, e.name) for e in graph_spec.node_endpoints("robot_emulator", params["robot_emulator"])}
    assert {("publish", "joint_states"), ("publish", "imu/data"), ("subscribe", "joint_commands")} <= eps
    assert ("publish", "emulator/imu_motion") not in eps


PLANTS = ["engine", pytest.param("mujoco", marks=pytest.mark.skipif(
    __import__("importlib").util.find_spec("mujoco") is None, reason="needs mujoco"))]


def _tilt_deg(qa, qb):
    """Angle [deg] between the body z axes of two (w, x, y, z) attitudes (roll and pitch; yaw is free)."""
    from transforms3d.quaternions import quat2mat

    za, zb = quat2mat(qa)[:, 2], quat2mat(qb)[:, 2]
    return math.degrees(math.acos(max(-1.0, min(1.0, float(za @ zb)))))


@pytest.mark.ros
@pytest.mark.timeout(240)
@pytest.mark.parametrize("plant", PLANTS)
def test_plant_on_topics_follows_commands_reports_attitude_and_loses_joints(plant):
    pytest.importorskip("rclpy")
    from geometry_msgs.msg import PoseStamped
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import Imu, JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from jethexa_dynamics.nodes._common import RELIABLE_QOS, SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, Watcher, wait_for
    from jethexa_dynamics.nodes.robot_emulator import RobotEmulator

    g = Graph()
    try:
        emu = g.add(RobotEmulator, {"interface": "topics", "plant": plant, "port_link": ""})
        w = g.add(Watcher)
        w.watch(JointState, "joint_states", SENSOR_QOS)
        w.watch(Imu, "imu/data", SENSOR_QOS)
        w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
        pub = w.create_publisher(JointTrajectory, "joint_commands", RELIABLE_QOS)
        g.start()
        assert wait_for(lambda: w.count("joint_states") > 10 and w.count("imu/data") > 10, 60.0)
        js = w.last("joint_states")
        assert sorted(js.name) == sorted(emu.joint_names) and not js.velocity
        names = list(js.name)
        q0 = dict(zip(names, js.position))

        # every coxa 0.1 rad forward over 0.3 s: joint_states reach the command (the command is the oracle)
        coxa = [n for n in names if n.startswith("coxa")]
        goal = {n: q0[n] + 0.1 * (1 if n.endswith(("LF", "LM", "LR")) else -1) for n in coxa}
        msg = JointTrajectory()
        msg.header.stamp = w.get_clock().now().to_msg()
        msg.joint_names = coxa
        point = JointTrajectoryPoint()
        point.positions = [goal[n] for n in coxa]
        point.time_from_start.nanosec = 300_000_000
        msg.points = [point]
        pub.publish(msg)

        def reached():
            m = w.last("joint_states")
            q = dict(zip(m.name, m.position))
            return max(abs(q[n] - goal[n]) for n in coxa) < 0.01
        assert wait_for(reached, 20.0), (w.last("joint_states").position, goal)
        assert emu.commands_applied >= 1

        # imu/data against the ground truth, after the move has settled
        def tilt_error():
            imu, pose = w.last("imu/data").orientation, w.last("mocap/pose").pose.orientation
            return _tilt_deg((imu.w, imu.x, imu.y, imu.z), (pose.w, pose.x, pose.y, pose.z))
        n0 = w.count("imu/data")
        assert wait_for(lambda: w.count("imu/data") > n0 + 100, 30.0)
        assert tilt_error() < 1.0
        assert w.last("imu/data").header.frame_id == "imu_link"

        # hidden joints leave joint_states and come back; the world keeps them
        assert emu.set_parameters([Parameter("hide", value="RM")])[0].successful
        rm = {"coxa_joint_RM", "femur_joint_RM", "tibia_joint_RM"}
        assert wait_for(lambda: not rm & set(w.last("joint_states").name), 10.0)
        assert emu.set_parameters([Parameter("hide", value="")])[0].successful
        assert wait_for(lambda: rm <= set(w.last("joint_states").name), 10.0)
        assert not emu.set_parameters([Parameter("hide", value="RX")])[0].successful

        # a removed leg's joints vanish, the rest stay
        assert emu.set_parameters([Parameter("damage", value="RM")])[0].successful
        assert wait_for(lambda: set(w.last("joint_states").name) == set(names) - rm, 10.0)
        n0 = w.count("joint_states")
        assert wait_for(lambda: w.count("joint_states") > n0 + 20, 10.0)
        assert all(set(m.name) == set(names) - rm for _, m in list(w.msgs["joint_states"])[-20:])
        pose = w.last("mocap/pose").pose.position
        assert 0.03 < pose.z < 0.2 and np.isfinite([pose.x, pose.y]).all()
        assert g.spin_error is None and emu.errors == 0
    finally:
        g.close()
