"""damage_monitor over real DDS (loopback): detection from servo diagnostics, override, bad input."""
import time

import pytest

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue  # noqa: E402
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: E402
from rcl_interfaces.msg import ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from jethexa_dynamics.monitor.damage import ServoStatus, encode_servo_status  # noqa: E402
from jethexa_dynamics.nodes._common import LATCHED_QOS  # noqa: E402
from jethexa_dynamics.nodes.damage_monitor import DamageMonitor  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, wait_for  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
JOINTS = ["%s_joint_%s" % (k, leg) for leg in LEGS for k in ("coxa", "femur", "tibia")]


def servo_array(silent=(), age=0.0):
    arr = DiagnosticArray()
    for i, j in enumerate(JOINTS):
        h = ServoStatus(j, i + 1, reads=20, last_reply_age=0.01)
        if j in silent:
            h.consecutive_misses, h.misses, h.last_reply_age, h.silent_confirmations = 5, 5, age, 1
        level, msg, values = encode_servo_status(h)
        arr.status.append(DiagnosticStatus(level=bytes([level]), name="servo_driver: %s" % j, message=msg,
                                           values=[KeyValue(key=k, value=v) for k, v in values]))
    return arr


def set_param_remote(node, target, name, ptype, field, value, timeout=10.0):
    """What ``ros2 param set`` does: call <target>/set_parameters."""
    cli = node.create_client(SetParameters, "/%s/set_parameters" % target)
    assert cli.wait_for_service(timeout_sec=timeout)
    pv = ParameterValue(type=ptype)
    setattr(pv, field, value)
    fut = cli.call_async(SetParameters.Request(parameters=[ParameterMsg(name=name, value=pv)]))
    assert wait_for(fut.done, timeout)
    return fut.result().results[0]


@pytest.fixture
def graph():
    g = Graph()
    try:
        yield g
    finally:
        g.close()


def morph(w):
    m = w.last("morphology")
    return None if m is None else list(m.data)


def test_detects_silenced_servo_within_one_second_and_accepts_override(graph):
    mon = graph.add(DamageMonitor)
    graph.start()
    # a late joiner gets the current morphology (transient local)
    time.sleep(0.3)
    w = graph.add(Watcher)
    w.watch(UInt8MultiArray, "morphology", LATCHED_QOS)
    pub = w.create_publisher(DiagnosticArray, "/diagnostics", 10)
    assert wait_for(lambda: morph(w) == [3] * 6, 10.0), morph(w)
    assert w.last("morphology").layout.dim[0].label == "LF,LM,LR,RF,RM,RR"
    for _ in range(5):
        pub.publish(servo_array())
        time.sleep(0.05)
    assert morph(w) == [3] * 6
    t0 = time.monotonic()
    pub.publish(servo_array(silent=["tibia_joint_RM"], age=0.5))
    assert wait_for(lambda: morph(w) == [3, 3, 3, 3, 2, 3], 5.0), morph(w)
    assert time.monotonic() - t0 < 1.0
    assert "tibia_joint_RM" in mon.detector.faults

    # manual override through the parameter service (ros2 param set), per leg
    res = set_param_remote(w, "damage_monitor", "morphology", ParameterType.PARAMETER_INTEGER_ARRAY,
                           "integer_array_value", [-1, 0, -1, -1, 0, -1])
    assert res.successful, res.reason
    assert wait_for(lambda: morph(w) == [3, 0, 3, 3, 0, 3], 5.0), morph(w)

    # reset service clears the latched fault; the override stays
    cli = w.create_client(Trigger, "/damage_monitor/reset")
    assert cli.wait_for_service(timeout_sec=10)
    fut = cli.call_async(Trigger.Request())
    assert wait_for(fut.done, 10.0) and fut.result().success
    assert wait_for(lambda: morph(w) == [3, 0, 3, 3, 0, 3], 5.0)
    assert not mon.detector.faults


def test_bad_parameters_and_diagnostics_are_rejected_and_node_keeps_serving(graph):
    mon = graph.add(DamageMonitor)
    w = graph.add(Watcher)
    w.watch(UInt8MultiArray, "morphology", LATCHED_QOS)
    pub = w.create_publisher(DiagnosticArray, "/diagnostics", 10)
    graph.start()
    assert wait_for(lambda: morph(w) == [3] * 6, 10.0)
    for value, why in (([3, 3, 3], "wrong length 3"), ([3, 3, 3, 3, 3, 9], "above 3")):
        res = set_param_remote(w, "damage_monitor", "morphology", ParameterType.PARAMETER_INTEGER_ARRAY,
                               "integer_array_value", value)
        assert not res.successful and why in res.reason and "morphology" in res.reason
    res = set_param_remote(w, "damage_monitor", "no_reply_timeout", ParameterType.PARAMETER_DOUBLE,
                           "double_value", -1.0)
    assert not res.successful and "no_reply_timeout" in res.reason and "[0.02, 30]" in res.reason
    res = set_param_remote(w, "damage_monitor", "no_reply_timeout", ParameterType.PARAMETER_STRING,
                           "string_value", "fast")
    assert not res.successful
    # malformed and empty diagnostics
    bad = servo_array()
    bad.status[0].values[2].value = "lots"
    pub.publish(bad)
    pub.publish(DiagnosticArray())
    assert wait_for(lambda: mon.rejected.get("/diagnostics", 0) >= 1, 5.0)
    assert mon.rejected.get("parameter", 0) >= 3
    # half-valid: a silent servo next to a malformed status -- the whole array is ignored, nothing detected
    half = servo_array(silent=["coxa_joint_RF"], age=1.0)
    half.status[-1].values[2].value = "lots"
    pub.publish(half)
    assert wait_for(lambda: mon.rejected.get("/diagnostics", 0) >= 2, 5.0)
    assert not mon.detector.faults and morph(w) == [3] * 6
    # still serving: a real fault is still detected
    pub.publish(servo_array(silent=["coxa_joint_LR"], age=1.0))
    assert wait_for(lambda: morph(w) == [3, 3, 0, 3, 3, 3], 5.0), morph(w)
    assert mon.p["no_reply_timeout"] == 0.4 and graph.spin_error is None


def test_bad_start_up_parameter_falls_back_to_default(graph):
    mon = graph.add(DamageMonitor, {"no_reply_timeout": -5.0, "morphology": [3, 3], "latch": "yes"})
    assert mon.p["no_reply_timeout"] == 0.4 and mon.get_parameter("no_reply_timeout").value == 0.4
    assert mon.p["morphology"] == [-1] * 6 and mon.p["latch"] is True
    assert mon.rejected.get("parameter no_reply_timeout") == 1
    assert "below 0.02" in mon.last_rejection or "not a boolean" in mon.last_rejection


def test_a_flood_of_rejections_is_counted_each_but_logged_once_per_topic(graph, monkeypatch):
    """Rejection is cheap (issue 14): every rejected message is counted per topic on /diagnostics, but a
    topic logs at most one line per 2 s however many arrive."""
    mon = graph.add(DamageMonitor)
    lines = []

    class Logger:
        def warning(self, text):
            lines.append(text)

    monkeypatch.setattr(mon, "get_logger", lambda: Logger())
    for _ in range(1000):
        mon.reject("imu/data", "imu/data.orientation: norm 0.6, must be a unit quaternion")
    mon.reject("morphology", "morphology.data: has 2 entries, expected 6")
    assert mon.rejected["imu/data"] == 1000 and mon.rejected["morphology"] == 1
    assert len(lines) == 2, lines
    kv = {v.key: v.value for v in mon.node_status().values}
    assert kv["rejected imu/data"] == "1000" and kv["rejected morphology"] == "1"
