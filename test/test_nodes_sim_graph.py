"""The whole sim graph (the nodes of sim.launch.py with its YAML parameters) over real DDS on loopback.

* it comes up; ``cmd_vel`` makes the emulated robot walk; predicted and measured pose are published at
  their configured rates;
* a leg's servos are silenced mid-walk in the emulator: damage_monitor publishes the new morphology within a
  few reads of each silenced servo, the predictor and the gait reconfigure without restarting, and no node dies.

In one process (as ``jethexa-demo``); ``test_launch_processes.py`` runs the console scripts as processes.
"""
import os
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402

from jethexa_dynamics.nodes._common import LATCHED_QOS, SENSOR_QOS  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, add_launch_graph, wait_for  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(240)]


def test_sim_graph_walks_predicts_and_survives_a_lost_leg():
    g = Graph()
    try:
        nodes = add_launch_graph(g, "sim", {"port_link": "/tmp/jethexa_test_bus_%d" % os.getpid(),
                                            "publish_slip": "true"})   # the second opinion keeps flowing too
        w = g.add(Watcher)
        for topic in ("predicted/pose", "measured/pose", "slip/pose"):
            w.watch(PoseStamped, topic)
        w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
        w.watch(UInt8MultiArray, "morphology", LATCHED_QOS)
        w.watch(JointState, "joint_states", SENSOR_QOS)
        w.drive(0.05)
        g.start()
        ids = {name: id(node) for name, node in nodes.items()}

        # comes up and walks
        # (measured/pose follows imu/data, which starts once the IMU filter's initialisation is over)
        assert wait_for(lambda: w.count("predicted/pose") > 20 and w.count("mocap/pose") > 10
                        and w.count("measured/pose") > 0, 60.0)
        x0 = w.last("mocap/pose").pose.position.x
        assert wait_for(lambda: w.last("mocap/pose").pose.position.x - x0 > 0.05, 10.0), \
            w.last("mocap/pose").pose.position
        assert nodes["gait_controller"].state == "walking"

        # configured rates, without timing assertions (the machine is shared; cycle-time figures are in
        # benchmarks/results/nodes.md): each publisher runs on a timer at its configured period and publishes
        # once per period -- messages received == timer cycles over the same window
        pr, emu = nodes["predictor"], nodes["robot_emulator"]
        assert pr._rate_timers["rate"][0].timer_period_ns == round(1e9 / pr.p["rate"])
        assert emu._rate_timers["rate"][0].timer_period_ns == round(1e9 / emu.p["rate"])
        every = round(emu.p["rate"] / emu.p["mocap_rate"])
        c0, n0, m0 = pr.stats.count, w.count("predicted/pose"), w.count("measured/pose")
        e0, k0 = emu._ticks, w.count("mocap/pose")
        # a window of > 50 cycles of each, however long it takes (the time-out only guards against a hang)
        assert wait_for(lambda: pr.stats.count - c0 > 50 and emu._ticks - e0 > 50 * every, 120.0)
        c1, n1, m1 = pr.stats.count, w.count("predicted/pose"), w.count("measured/pose")
        e1, k1 = emu._ticks, w.count("mocap/pose")
        assert c1 - c0 > 10 and abs((n1 - n0) - (c1 - c0)) <= 3 and abs((m1 - m0) - (c1 - c0)) <= 3
        assert e1 - e0 > 10 and abs((k1 - k0) - (e1 - e0) / every) <= 3
        js = w.last("joint_states")                       # measured only: the joints read in one cycle
        assert 1 <= len(js.name) <= nodes["servo_driver"].p["reads_per_cycle"]

        # silence the right middle leg's servos mid-walk (the emulator removes it from the world too)
        # promptness in reads of the silenced servos (no wall-time bound): the monitor has the new morphology
        # before the driver attempted 15 reads of any of them (about a second of its read schedule)
        assert list(w.last("morphology").data) == [3] * 6
        tracker = nodes["servo_driver"].tracker
        leg = ("coxa_joint_RM", "femur_joint_RM", "tibia_joint_RM")
        reads0 = {j: tracker.health[j].reads for j in leg}
        res = nodes["robot_emulator"].set_parameters([Parameter("damage", value="RM")])[0]
        assert res.successful, res.reason
        assert wait_for(lambda: list(w.last("morphology").data) == [3, 3, 3, 3, 0, 3], 10.0), \
            list(w.last("morphology").data)
        reads = {j: tracker.health[j].reads - reads0[j] for j in leg}
        assert max(reads.values()) <= 15, "reads of the silenced servos before detection: %s" % reads

        # predictor and gait reconfigured, same node objects (no restart), everything keeps flowing
        gc, pr = nodes["gait_controller"], nodes["predictor"]
        assert wait_for(lambda: gc.walker.walking_legs == ["LF", "LM", "LR", "RF", "RR"]
                        and pr.morphology == [3, 3, 3, 3, 0, 3], 3.0)
        assert {name: id(node) for name, node in nodes.items()} == ids
        n = {t: w.count(t) for t in ("predicted/pose", "measured/pose", "slip/pose", "mocap/pose")}
        x1 = w.last("mocap/pose").pose.position.x
        assert wait_for(lambda: all(w.count(t) > n[t] + 10 for t in n), 10.0)
        assert wait_for(lambda: w.last("mocap/pose").pose.position.x - x1 > 0.02, 10.0)  # still walking
        assert gc.state == "walking"
        assert g.spin_error is None
        assert {name: node.errors for name, node in nodes.items() if node.errors} == {}
    finally:
        g.close()


def test_sim_graph_on_todays_kit_reads_the_boards_imu():
    """kit:=orin: no imu node; the emulated STM32 board streams its IMU reports from the world's motion, the servo
    driver publishes imu/data from them and the predictor anchors on it (measured/pose) while the robot walks."""
    from sensor_msgs.msg import BatteryState, Imu

    g = Graph()
    try:
        nodes = add_launch_graph(g, "sim", {"kit": "orin", "port_link": "/tmp/jethexa_test_bus_%d" % os.getpid()})
        assert "imu" not in nodes and nodes["robot_emulator"].bus.transport == "rrc"
        w = g.add(Watcher)
        w.watch(PoseStamped, "measured/pose")
        w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
        w.watch(Imu, "imu/data", SENSOR_QOS)
        w.watch(BatteryState, "battery", SENSOR_QOS)
        w.drive(0.05)
        g.start()
        assert wait_for(lambda: w.count("measured/pose") > 20 and w.count("battery") > 0, 90.0)
        pubs = nodes["predictor"].get_publishers_info_by_topic("/imu/data")
        assert [p.node_name for p in pubs] == ["servo_driver"]
        x0, t0 = w.last("mocap/pose").pose.position.x, time.monotonic()
        assert wait_for(lambda: w.last("mocap/pose").pose.position.x - x0 > 0.03, 20.0)
        # walking, upright, in base_link axes: the specific force over the walk is g up (one sample is not: a
        # foot's touchdown took one to 11.3 m/s^2)
        a = np.mean([(m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z)
                     for _, m in w.since("imu/data", t0)], axis=0)
        assert 8.5 < a[2] < 11.0 and abs(a[0]) < 3.0 and abs(a[1]) < 3.0, a
        assert nodes["servo_driver"].board.imu.samples > 100 and not nodes["servo_driver"].board.imu_missing
        assert g.spin_error is None and all(getattr(n, "errors", 0) == 0 for n in nodes.values())
    finally:
        g.close()
