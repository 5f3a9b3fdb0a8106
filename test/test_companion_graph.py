"""Companion mode: the predictor and the damage monitor beside Hiwonder's stock ROS 2 stack (companion.launch.py).

The stock robot is stood in for by the emulated world without a servo driver (robot_emulator ``interface: topics``,
the sim graph's gait) and ``stock_standin`` (test/stock_standin.py), which publishes exactly the stock topics,
types, joint names (with their angle convention) and frames: ``/controller_manager/joint_states`` (commanded,
``tibla``, coxa_RM negated) and ``/imu`` in imu_link (yawed -90 deg). The companion graph, in its namespace, reads
only those (and a motion capture's ``mocap/pose``, the truth the native graph's predictor has too):

* the prediction follows the truth (roll/pitch and position), /diagnostics says ``mode: companion`` and what is
  unavailable;
* a silent break (robot_emulator ``breaks``) is named on ``companion/morphology`` -- and the stock gait (here the
  sim gait, on ``/morphology``) is not told: reported, not acted on;
* a foreign joint name or IMU frame: counted and said on /diagnostics, the node keeps serving; a bad joint_map at
  launch: one line.
"""
import math
import os
import sys

import numpy as np
import pytest

from jethexa_dynamics.nodes import graph_spec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def test_companion_graph_is_the_models_nodes_in_their_namespace_with_no_device(tmp_path):
    resolved = graph_spec.node_parameters("companion")
    assert [e.name for e, _ in resolved] == ["stock_adapter", "predictor", "damage_monitor"]
    params = {e.name: p for e, p in resolved}
    assert params["damage_monitor"]["joints_from_commands"] and not params["damage_monitor"]["body_estimate"]
    assert params["stock_adapter"]["joint_map"] == "" and params["stock_adapter"]["imu_mount_rpy"] == [
        0.0, 0.0, -math.pi / 2]
    assert graph_spec.GRAPHS["companion"]["namespace"] == "companion"
    assert [p.label for p in graph_spec.processes("companion")] == ["stock_adapter", "robot_model"]
    # nothing opens a device: no servo_driver, no imu, no emulator; no robot_state_publisher (the stock TF stays)
    assert "robot_state_publisher" not in graph_spec.graph_endpoints("companion")
    names = {a.name for a in graph_spec.GRAPHS["companion"]["arguments"]}
    assert {"joint_map", "commands_topic", "imu_topic", "predictor"} <= names and "kit" not in names
    # as launched: each process in the namespace, its parameter file keyed by the nodes' fully qualified names
    # (a file's plain "predictor:" would not reach /companion/predictor)
    import yaml

    for proc in graph_spec.processes("companion"):
        assert proc.namespace == "companion"
        with open(graph_spec.write_parameters(proc, str(tmp_path))) as f:
            keys = set(yaml.safe_load(f))
        assert keys == {"/companion/" + e.name for e, _ in proc.nodes}
    with pytest.raises(ValueError) as e:
        graph_spec.node_parameters("companion", {"joint_map": "coxa_LF_joint=nowhere"})
    assert "joint_map" in str(e.value) and "'nowhere' is not a joint" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError, match="unknown companion.launch.py arguments"):
        graph_spec.node_parameters("companion", {"kit": "orin"})


def _adapter_status(w):
    for _, arr in reversed(w.since("/diagnostics", 0.0)):
        for st in arr.status:
            if st.name.startswith("stock_adapter"):
                return st, {kv.key: kv.value for kv in st.values}
    return None, {}


def _error(w, since):
    """(mean roll/pitch error [deg], mean position error [m]) of companion/predicted/pose against mocap/pose
    (the nearest truth sample in arrival time)."""
    from jethexa_dynamics.predictors.error_metric import orientation_errors

    pred = w.since("/companion/predicted/pose", since)
    truth = w.since("/mocap/pose", since)
    tt = np.array([t for t, _ in truth])
    rp, pos = [], []
    for t, m in pred:
        k = int(np.argmin(np.abs(tt - t)))
        g = truth[k][1].pose
        p, o = m.pose.position, m.pose.orientation
        err = orientation_errors(np.array([[o.w, o.x, o.y, o.z]]),
                                 np.array([[g.orientation.w, g.orientation.x, g.orientation.y, g.orientation.z]]))
        rp.append(np.degrees(np.abs(err[0, :2])).mean())
        pos.append(math.dist((p.x, p.y, p.z), (g.position.x, g.position.y, g.position.z)))
    return float(np.mean(rp)), float(np.mean(pos))


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_companion_beside_a_stand_in_of_the_stock_stack_predicts_and_names_a_silent_break():
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped
    from rclpy.parameter import Parameter
    from std_msgs.msg import UInt8MultiArray

    from jethexa_dynamics.nodes._common import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, Watcher, add_launch_graph, wait_for
    from stock_standin import StockStandIn

    g = Graph()
    try:
        world = add_launch_graph(g, "sim", {"interface": "topics"}, exclude=("predictor", "damage_monitor"))
        standin = g.add(StockStandIn, mocap_to="/companion/mocap/pose")
        comp = add_launch_graph(g, "companion")
        w = g.add(Watcher)
        for t, ty, qos in (("/mocap/pose", PoseStamped, SENSOR_QOS),
                           ("/companion/predicted/pose", PoseStamped, RELIABLE_QOS),
                           ("/companion/morphology", UInt8MultiArray, LATCHED_QOS),
                           ("/morphology", UInt8MultiArray, LATCHED_QOS),
                           ("/diagnostics", DiagnosticArray, RELIABLE_QOS)):
            w.watch(ty, t, qos)
        w.drive(0.05)
        g.start()
        mon, adapter = comp["damage_monitor"], comp["stock_adapter"]
        assert comp["predictor"].get_namespace() == "/companion"
        assert wait_for(lambda: mon.identifier is not None and mon.identifier.windows > 8
                        and w.count("/companion/predicted/pose") > 200, 180.0), (
            mon.identifier and mon.identifier.windows, w.count("/companion/predicted/pose"), adapter.commands_in)
        assert standin.published > 0 and adapter.commands_in > 0 and adapter.imu_in > 0
        assert list(w.last("/companion/morphology").data) == [3] * 6 and mon.identifier.events == []
        t0 = __import__("time").monotonic()
        assert wait_for(lambda: w.count("/companion/predicted/pose") > 0 and
                        len(w.since("/companion/predicted/pose", t0)) > 300, 60.0)
        rp, pos = _error(w, t0)
        assert rp < 3.0 and pos < 0.05, (rp, pos)
        st, kv = _adapter_status(w)
        assert kv["mode"] == "companion"
        assert kv["unavailable"] == "measured joint positions, servo health, seizure detection"
        assert "not acted on" in kv["morphology"] and "foreign_joints" not in kv

        # a silent break in the world: the companion names it; the stock gait (the sim gait) is not told
        assert world["robot_emulator"].set_parameters([Parameter("breaks", value="LM:1")])[0].successful
        assert wait_for(lambda: [i for i, n in enumerate(w.last("/companion/morphology").data) if n < 3] == [1],
                        90.0), (list(w.last("/companion/morphology").data), mon.identifier.top(3))
        assert w.last("/morphology") is None or list(w.last("/morphology").data) == [3] * 6
        assert "LM" in world["gait_controller"].walker.walking_legs
        assert g.spin_error is None and adapter.errors == 0
    finally:
        g.close()


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_a_foreign_joint_or_frame_is_said_once_counted_and_the_adapter_keeps_serving():
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Imu, JointState
    from trajectory_msgs.msg import JointTrajectory

    from jethexa_dynamics.hardware.joint_map import HIWONDER_ROS2
    from jethexa_dynamics.nodes._common import RELIABLE_QOS, SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, Watcher, wait_for
    from jethexa_dynamics.nodes.stock_adapter import StockAdapter

    g = Graph()
    try:
        adapter = g.add(StockAdapter, {"stale_after": 0.5})
        w = g.add(Watcher)
        w.watch(JointTrajectory, "joint_commands", RELIABLE_QOS)
        w.watch(Imu, "imu/data", SENSOR_QOS)
        w.watch(DiagnosticArray, "/diagnostics", RELIABLE_QOS)
        js_pub = w.create_publisher(JointState, "/controller_manager/joint_states", 1)
        imu_pub = w.create_publisher(Imu, "/imu", 10)
        g.start()
        names = list(HIWONDER_ROS2.stock_names) + ["head_pan_joint"]

        def send(frame):
            m = JointState()
            m.header.stamp = w.get_clock().now().to_msg()
            m.name = names
            m.position = [0.1] * len(names)
            js_pub.publish(m)
            i = Imu()
            i.header.stamp = m.header.stamp
            i.header.frame_id = frame
            i.orientation.w = 1.0
            imu_pub.publish(i)

        def sent_until(cond, frame, timeout=30.0):
            return wait_for(lambda: send(frame) or cond(), timeout, poll=0.05)

        assert sent_until(lambda: w.count("joint_commands") > 3 and adapter.foreign_frames, "base_link")
        cmd = w.last("joint_commands")
        assert sorted(cmd.joint_names) == sorted(e.joint for e in HIWONDER_ROS2.entries)
        q = dict(zip(cmd.joint_names, cmd.points[0].positions))
        assert q["coxa_joint_RM"] == pytest.approx(-0.1) and q["tibia_joint_LF"] == pytest.approx(0.1)
        assert w.count("imu/data") == 0                                    # another frame: not used
        assert sent_until(lambda: (_adapter_status(w)[1].get("foreign_frames", "").startswith("base_link")
                                   and "head_pan_joint" in _adapter_status(w)[1].get("foreign_joints", "")),
                          "base_link")
        st, kv = _adapter_status(w)
        assert kv["mode"] == "companion" and st.level in (1, 2, b"\x01", b"\x02")
        assert sent_until(lambda: w.count("imu/data") > 3, "imu_link")    # the right frame: served
        m = w.last("imu/data")
        assert m.header.frame_id == "base_link"
        # imu_link yawed -90 deg: the identity in imu_link is base_link yawed +90 deg
        assert math.degrees(2 * math.atan2(m.orientation.z, m.orientation.w)) == pytest.approx(90.0, abs=1e-6)
        assert g.spin_error is None and adapter.errors == 0
    finally:
        g.close()
