"""damage_monitor over real DDS (loopback): detection from servo diagnostics, override, bad input."""
import time

import pytest

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue  # noqa: E402
from rcl_interfaces.msg import Parameter as ParameterMsg  # noqa: E402
from rcl_interfaces.msg import ParameterType, ParameterValue  # noqa: E402
from rcl_interfaces.srv import SetParameters  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from jethexa_dynamics.damage.detection import ServoStatus, encode_servo_status  # noqa: E402
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


def test_detects_silenced_servo_on_the_first_status_that_proves_it_and_accepts_override(graph):
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
    assert wait_for(lambda: mon.servo_diag_messages == 5, 5.0)
    pub.publish(servo_array(silent=["tibia_joint_RM"], age=0.5))
    assert wait_for(lambda: morph(w) == [3, 3, 3, 3, 2, 3], 5.0), morph(w)
    # decided on the one message carrying the evidence (not on a later check tick): no wall-time bound
    assert mon.servo_diag_messages == 6
    assert mon.detector.faults["tibia_joint_RM"].since == mon.last_servo_diag

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


def test_garbage_set_points_are_rejected_each_and_the_body_estimate_keeps_pairing(graph):
    """body_estimate's input joint_states/setpoint: unknown or repeated names, a NaN, a wrong length, a stamp far
    from the clock are each rejected (counted, one log line per topic); nothing is paired from them, and a
    valid set-point still pairs with its joint_states twin."""
    mon = graph.add(DamageMonitor, {"body_estimate": True})
    w = graph.add(Watcher)
    sp_pub = w.create_publisher(JointState, "joint_states/setpoint", 10)
    js_pub = w.create_publisher(JointState, "joint_states", 10)
    graph.start()
    assert wait_for(lambda: sp_pub.get_subscription_count() >= 1 and js_pub.get_subscription_count() >= 1, 10.0)
    now = mon.get_clock().now().to_msg()

    def msg(names, positions, stamp=now):
        m = JointState(name=names, position=positions)
        m.header.stamp = stamp
        return m
    far = type(now)(sec=now.sec + 3600, nanosec=0)
    garbage = [msg(["coxa_joint_XX"], [0.1]), msg([JOINTS[0], JOINTS[0]], [0.1, 0.1]),
               msg([JOINTS[0]], [float("nan")]), msg([JOINTS[0], JOINTS[1]], [0.1]), msg([JOINTS[0]], [0.1], far)]
    for m in garbage:
        sp_pub.publish(m)
    assert wait_for(lambda: mon.rejected.get("joint_states/setpoint", 0) >= len(garbage), 5.0), mon.rejected
    assert mon.body_pairs.pairs == 0
    sp_pub.publish(msg([JOINTS[0]], [0.1]))
    js_pub.publish(msg([JOINTS[0]], [0.1]))
    assert wait_for(lambda: mon.body_pairs.pairs >= 1, 5.0)
    assert mon.rejected.get("joint_states/setpoint", 0) == len(garbage) and graph.spin_error is None


def test_the_body_estimate_reads_the_load_with_the_servo_law_given(graph):
    """``body_servo_kp/ki/kd/damping`` reach the estimator; a value outside its range falls back to the default
    (the emulated servo's law) with one rejection naming it."""
    mon = graph.add(DamageMonitor, {"body_estimate": True, "body_servo_ki": 0.0, "body_servo_damping": "rate"})
    assert (mon.body.kp, mon.body.ki, mon.body.kd, mon.body.damping) == (50.0, 0.0, 1.0, "rate")
    mon = graph.add(DamageMonitor, {"body_estimate": True, "body_servo_kp": 0.0, "body_servo_damping": "measured"})
    assert (mon.body.kp, mon.body.damping) == (50.0, "error")
    assert mon.rejected.get("parameter body_servo_kp") == 1 and mon.rejected.get("parameter body_servo_damping") == 1


def test_wake_on_chooses_the_input_that_wakes_the_monitor_and_polls_the_other(graph):
    """``wake_on``: joint_states (default) wakes the node and its IMU is polled (taken at those wake-ups), or the
    reverse with imu/data (beside the predictor); a value outside the two falls back to the default."""
    from jethexa_dynamics.nodes.executor import POLLED

    def polled(mon):
        return {s.topic_name.lstrip("/"): bool(getattr(s, POLLED, False)) for s in mon.subscriptions
                if s.topic_name.lstrip("/") in ("imu/data", "joint_states")}

    assert polled(graph.add(DamageMonitor)) == {"imu/data": True, "joint_states": False}
    assert polled(graph.add(DamageMonitor, {"wake_on": "imu/data"})) == {"imu/data": False, "joint_states": True}
    mon = graph.add(DamageMonitor, {"wake_on": "joint_commands"})
    assert mon.p["wake_on"] == "joint_states" and mon.rejected.get("parameter wake_on") == 1
    assert "imu/data" in mon.last_rejection


def test_bad_start_up_parameter_falls_back_to_default(graph):
    mon = graph.add(DamageMonitor, {"no_reply_timeout": -5.0, "morphology": [3, 3], "latch": "yes"})
    assert mon.p["no_reply_timeout"] == 0.4 and mon.get_parameter("no_reply_timeout").value == 0.4
    assert mon.p["morphology"] == [-1] * 6 and mon.p["latch"] is True
    assert mon.rejected.get("parameter no_reply_timeout") == 1
    assert "below 0.02" in mon.last_rejection or "not a boolean" in mon.last_rejection


def joint_state(names):
    return JointState(name=list(names), position=[0.0] * len(names))


def test_a_joint_another_driver_stops_publishing_is_lost(graph):
    """joint_states from a driver without servo diagnostics (e.g. the right legs behind another board): a joint
    it leaves out of its messages is lost under the silence rules; one message without it is not."""
    mon = graph.add(DamageMonitor)
    w = graph.add(Watcher)
    w.watch(UInt8MultiArray, "morphology", LATCHED_QOS)
    pub = w.create_publisher(JointState, "joint_states", 10)   # reliable: the test counts what it sent
    graph.start()
    assert wait_for(lambda: morph(w) == [3] * 6 and pub.get_subscription_count() > 0, 10.0)
    right = [j for j in JOINTS if j[-2] == "R"]
    sent = 0

    def publish(names, n):
        nonlocal sent
        for _ in range(n):
            pub.publish(joint_state(names))
            sent += 1
            time.sleep(0.02)
        wait_for(lambda: mon.presence.messages >= sent, 2.0)   # best-effort subscription: a loss is harmless

    publish(right, 10)
    publish(right[:-1], 1)             # one message without the RR tibia: not a loss
    publish(right, 5)
    assert morph(w) == [3] * 6 and not mon.detector.faults
    # the RM femur and tibia drop out of every message until the silence rule is met
    without = [j for j in right if j not in ("femur_joint_RM", "tibia_joint_RM")]
    for _ in range(200):               # hang guard; the rule needs >= 2 messages and 0.4 s of the node's clock
        publish(without, 1)
        if "femur_joint_RM" in mon.detector.faults:
            break
    assert wait_for(lambda: morph(w) == [3, 3, 3, 3, 1, 3], 5.0), morph(w)
    f = mon.detector.faults["femur_joint_RM"]
    assert f.source == "joint_states" and set(mon.detector.faults) == {"femur_joint_RM", "tibia_joint_RM"}
    assert mon.presence.consecutive_misses["femur_joint_RM"] >= 2
    assert graph.spin_error is None and not mon.errors


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


def test_a_parameter_change_from_another_thread_waits_for_the_running_callback(graph):
    """Seen in CI: the test thread switched the identifier off (``identifier = None``) while the executor ran
    an imu/data callback that had just checked it, and the callback then failed on ``None``. Callbacks and
    parameter changes share the node's lock: the change waits until the callback has returned."""
    import threading

    from rclpy.parameter import Parameter

    mon = graph.add(DamageMonitor)
    assert mon.identifier is not None
    started, release, seen = threading.Event(), threading.Event(), []

    def callback():
        started.set()
        release.wait(30.0)
        seen.append(mon.identifier is not None)        # still the identifier the callback started with

    a = threading.Thread(target=mon.guard("imu/data", callback))
    b = threading.Thread(target=lambda: seen.append(
        mon.set_parameters([Parameter("identify", value=False)])[0].successful))
    a.start()
    assert started.wait(30.0)
    b.start()
    b.join(0.5)
    assert b.is_alive()                                 # held at the lock while the callback runs
    release.set()
    a.join(30.0)
    b.join(30.0)
    assert seen == [True, True] and mon.identifier is None


def test_identifier_worker_feeds_in_order_and_stops_on_a_bug_with_its_traceback():
    """The identifier's worker thread (off the executor) feeds every queued sample in order; a bug inside the
    identifier is reported once with its traceback and stops the worker (no silent swallowing, no loop)."""
    from jethexa_dynamics.nodes.damage_monitor import IdentifierWorker

    import threading

    import numpy as np

    from jethexa_dynamics.nodes._common import CpuLoad

    class Identifier:
        """Closes a window every 10th sample, which costs CPU (like a bank window)."""

        def __init__(self):
            self.seen = []
            self.windows = 0
            self.window_cpu = []

        def on_imu(self, t):
            if t < 0:
                raise RuntimeError("a bug")
            self.seen.append(t)
            if len(self.seen) % 10 == 0:
                c0 = time.thread_time()
                sum(k * k for k in range(20000))
                self.window_cpu.append(time.thread_time() - c0)
                self.windows += 1
            return True

    results, errors = [], []
    cpu = CpuLoad()
    w = IdentifierWorker(Identifier(), lambda idf, ok, topic: results.append((ok, topic)), errors.append, cpu=cpu,
                         lock=threading.RLock())
    try:
        for t in range(200):
            w.put("imu/data", "on_imu", float(t))
        assert w.wait_idle(30.0)
        assert w.identifier.seen == [float(t) for t in range(200)] and results == [(True, "imu/data")] * 200
        # its cost is accounted per sample, and apart for the samples that closed a window (the window's work,
        # timed inside by the fake, is within the worker's figure for that sample)
        assert cpu.calls["identifier"] == 200 and w.window_cpu.count == w.window_wall.count == 20
        inner = np.sort(w.identifier.window_cpu)
        assert np.all(np.sort(np.asarray(w.window_cpu.samples)) >= inner)
        assert cpu.total["identifier"] >= inner.sum()
        w.put("imu/data", "on_imu", -1.0)
        w.put("imu/data", "on_imu", 500.0)
        assert w.wait_idle(30.0)
        assert "RuntimeError: a bug" in w.failed and len(errors) == 1 and "Traceback" in errors[0]
        assert 500.0 not in w.identifier.seen
    finally:
        w.stop(5.0)
    assert not w.thread.is_alive()


def test_identifier_worker_feeds_the_polled_streams_in_time_order_and_wakes_on_a_joint_sample():
    """The monitor takes imu/data and joint_commands at joint_states' wake-ups (polled), one stream after the
    other: the worker hands the identifier every sample in the order of its time, not of its handling, and its
    thread stays asleep for IMU samples and commands until a joint sample (or a pile of 16) comes."""
    import threading

    from jethexa_dynamics.nodes.damage_monitor import RIDE_ALONG_MAX, IdentifierWorker

    class Identifier:
        windows = 0

        def __init__(self):
            self.seen = []

        def on_imu(self, t):
            self.seen.append(("imu", t))
            return True

        def on_command(self, t):
            self.seen.append(("cmd", t))
            return True

        def on_joints(self, t):
            self.seen.append(("joints", t))
            return True

    w = IdentifierWorker(Identifier(), lambda idf, ok, topic: None, lambda text: None, lock=threading.RLock())
    try:
        # one wake-up's drain: the polled commands, then the polled IMU samples, then the joint sample
        w.put("joint_commands", "on_command", 0.013)
        for t in (0.005, 0.015):
            w.put("imu/data", "on_imu", t)
        time.sleep(0.2)
        assert w.identifier.seen == [] and len(w._queue) == 3          # asleep: nothing woke it
        w.put("joint_states", "on_joints", 0.010)
        deadline = time.monotonic() + 30.0
        while len(w.identifier.seen) < 4 and time.monotonic() < deadline:   # hang guard only
            time.sleep(0.01)
        assert w.identifier.seen == [("imu", 0.005), ("joints", 0.010), ("cmd", 0.013), ("imu", 0.015)]
        for k in range(RIDE_ALONG_MAX):                                 # the joints paused: a pile wakes it
            w.put("imu/data", "on_imu", 1.0 + 0.01 * k)
        deadline = time.monotonic() + 30.0
        while len(w.identifier.seen) < 4 + RIDE_ALONG_MAX and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [t for _, t in w.identifier.seen[4:]] == [1.0 + 0.01 * k for k in range(RIDE_ALONG_MAX)]
    finally:
        w.stop(5.0)


def test_unexplained_motion_is_said_on_the_evidence_and_diagnostics_with_the_morphology_kept(graph):
    """Issue 23: when the identifier finds no hypothesis explaining the motion, the monitor republishes
    morphology/evidence with unexplained = true (the gait crawls on it), says so on /diagnostics at WARN with
    the residual, and keeps the morphology; cleared, the evidence says false again."""
    import math

    from jethexa_dynamics.damage.evidence import evidence_from_values

    mon = graph.add(DamageMonitor)
    w = graph.add(Watcher)
    w.watch(DiagnosticStatus, "morphology/evidence", LATCHED_QOS)
    w.watch(DiagnosticArray, "/diagnostics")
    graph.start()
    assert wait_for(lambda: w.count("morphology/evidence") >= 1, 10.0)
    idf = mon.identifier
    idf.unexplained, idf.residual_rms = True, math.radians(7.5)
    published = []
    send = mon.publish_diagnostics
    mon.publish_diagnostics = lambda statuses: (published.extend(statuses), send(statuses))
    mon._check_identifier(idf, True, "imu/data")          # what the worker does after each sample
    # the status says it at once, not at the next check_rate tick (1 Hz by default)
    assert published and "motion unexplained" in published[-1].message

    def last_evidence():
        return evidence_from_values({kv.key: kv.value for kv in w.last("morphology/evidence").values}, LEGS)
    assert wait_for(lambda: last_evidence().unexplained, 5.0)
    assert last_evidence().links == (3,) * 6 and mon.current == [3] * 6
    t0 = time.monotonic()

    def status():
        for _, arr in w.since("/diagnostics", t0):
            for st in arr.status:
                if st.name.startswith("damage_monitor"):
                    return st
    assert wait_for(lambda: status() is not None, 5.0)
    st = status()
    values = {kv.key: kv.value for kv in st.values}
    assert st.level == bytes([1]) and "motion unexplained" in st.message and "7.5 deg" in st.message
    assert values["identifier_unexplained"] == "true" and values["identifier_residual_rms_deg"] == "7.500"
    idf.unexplained = False
    mon._check_identifier(idf, True, "imu/data")
    assert wait_for(lambda: not last_evidence().unexplained, 5.0)
    assert not mon.changes and mon.errors == 0 and graph.spin_error is None


def test_a_seized_joint_is_reported_as_such_with_the_morphology_kept(graph):
    """Issue 23: a joint whose servo answers but which follows no command (joint_states: its angle stays while
    the commands sweep it) is reported as seized on morphology/evidence and /diagnostics (WARN); the morphology
    stays (no lost link); when the joint follows again, it is cleared."""
    import math

    from builtin_interfaces.msg import Duration
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from jethexa_dynamics.damage.evidence import evidence_from_values

    mon = graph.add(DamageMonitor, {"identify": False})
    w = graph.add(Watcher)
    w.watch(DiagnosticStatus, "morphology/evidence", LATCHED_QOS)
    w.watch(DiagnosticArray, "/diagnostics")
    cmd_pub = w.create_publisher(JointTrajectory, "joint_commands", 10)
    js_pub = w.create_publisher(JointState, "joint_states", 10)
    graph.start()
    assert wait_for(lambda: w.count("morphology/evidence") >= 1, 10.0)

    def last_evidence():
        return evidence_from_values({kv.key: kv.value for kv in w.last("morphology/evidence").values}, LEGS)

    def run(seconds, frozen, until):
        """Commands sweeping every joint 0.2 rad at 1 Hz, and joint_states following them (``frozen`` held)."""
        t_end, guard = time.monotonic() + seconds, time.monotonic() + 30.0
        while time.monotonic() < t_end or (not until() and time.monotonic() < guard):
            now = w.get_clock().now()
            q = [0.2 * math.sin(2.0 * math.pi * time.monotonic())] * len(JOINTS)
            cmd = JointTrajectory(joint_names=JOINTS, points=[JointTrajectoryPoint(
                positions=q, time_from_start=Duration(sec=0, nanosec=20_000_000))])
            cmd.header.stamp = now.to_msg()
            cmd_pub.publish(cmd)
            js = JointState(name=JOINTS, position=[0.05 if j in frozen else v for j, v in zip(JOINTS, q)])
            js.header.stamp = now.to_msg()
            js_pub.publish(js)
            time.sleep(0.02)

    run(1.5, (), lambda: True)
    assert mon.seized == {} and last_evidence().seized == ()
    run(0.5, ("femur_joint_LM",), lambda: last_evidence().seized == ("femur_joint_LM",))
    assert last_evidence().seized == ("femur_joint_LM",) and last_evidence().links == (3,) * 6
    assert mon.current == [3] * 6 and not mon.changes
    t0 = time.monotonic()

    def status():
        for _, arr in w.since("/diagnostics", t0):
            for st in arr.status:
                if st.name.startswith("damage_monitor") and "seized" in st.message:
                    return st
    assert wait_for(lambda: status() is not None, 5.0)
    st = status()
    values = {kv.key: kv.value for kv in st.values}
    assert st.level == bytes([1]) and "seized: femur_joint_LM" in st.message
    assert values["seized"] == "femur_joint_LM" and "follows no command" in values["seized femur_joint_LM"]
    run(0.5, (), lambda: last_evidence().seized == ())
    assert last_evidence().seized == () and mon.seized == {} and mon.current == [3] * 6
    assert not mon.changes and mon.errors == 0 and graph.spin_error is None


def test_the_models_verdict_on_a_leg_with_a_seized_joint_is_not_followed(graph):
    """A seized joint explains the motion of its leg: the identifier's verdict on that leg waits until the joint
    follows again (then it is followed, if it still holds)."""
    mon = graph.add(DamageMonitor)
    graph.start()
    assert wait_for(lambda: mon.current is not None, 10.0)
    mon.seizure.seized["femur_joint_LM"] = "follows no command (test)"
    mon._seizure_changed(mon.now_sec())
    mon.identifier.model_morphology = (3, 1, 3, 3, 3, 3)
    mon._decide(mon.now_sec(), ["model: LM:1 (test)"])
    assert mon.current == [3] * 6 and not mon.changes
    mon.seizure.seized.clear()
    mon._seizure_changed(mon.now_sec())
    assert mon.current == [3, 1, 3, 3, 3, 3] and len(mon.changes) == 1


def test_the_probe_parameters_are_checked_at_start_up_and_the_switch_at_run_time(graph):
    """The active probe's settings (issue 23 point 1): out of range at start-up -> one line naming the parameter
    and its range, the default used (``probe`` on); ``probe`` switched at run time reaches the probe the worker
    drives, and the status says so."""
    from rclpy.parameter import Parameter

    keys = ("probe_min_margin", "probe_decide", "probe_max_lag", "probe_always", "probe")
    mon = graph.add(DamageMonitor, {"probe_min_margin": 0.5, "probe_decide": 0.2, "probe_max_lag": -1.0,
                                    "probe_always": "no", "probe": "yes"})
    assert mon.p["probe"] is True and mon.active_probe.config.enabled is True
    cfg = mon.active_probe.config
    assert (cfg.min_margin, cfg.decide, cfg.max_lag, cfg.always) == (0.01, 0.9, 0.03, True)
    assert {k: mon.rejected.get("parameter " + k) for k in keys} == dict.fromkeys(keys, 1)
    assert mon.worker.probe is mon.active_probe
    assert mon.set_parameters([Parameter("probe", value=False)])[0].successful
    assert mon.active_probe.config.enabled is False and mon.active_probe.config.min_margin == 0.01
    assert dict(mon._probe_values())["probe"] == "off"
    assert mon.set_parameters([Parameter("probe", value=True)])[0].successful
    assert mon.active_probe.config.enabled is True and mon.active_probe.config.min_margin == 0.01
    bad = mon.set_parameters([Parameter("probe", value="on")])[0]
    assert not bad.successful and "probe" in bad.reason and mon.active_probe.config.enabled is True
    for key, value in (("probe_decide", 0.95), ("probe_always", False)):
        res = mon.set_parameters([Parameter(key, value=value)])[0]
        assert not res.successful and "read-only" in res.reason and key in res.reason
    assert mon.active_probe.config.always is True
    values = dict(mon._probe_values())
    assert values["probe"] == "on" and values["probe_state"] == "idle" and values["probe_requests"] == 0


def test_probe_always_is_passed_to_the_probe_and_a_bad_value_is_one_line_naming_it_and_its_range(graph):
    """``probe_always`` (read-only, default true: every leg the identifier names is probed) reaches the probe's
    config; false keeps the probe to the events with alternatives; a value that is no boolean is refused at start-up
    in one log line naming the parameter and what it allows, the default used, and the node goes on serving its
    status with the rejection counted."""
    narrow = graph.add(DamageMonitor, {"probe_always": False})
    assert narrow.active_probe.config.always is False and "parameter probe_always" not in narrow.rejected
    graph.remove(narrow)
    mon = graph.add(DamageMonitor, {"probe_always": 0.5})
    assert mon.p["probe_always"] is True and mon.active_probe.config.always is True
    assert mon.rejected["parameter probe_always"] == 1
    line = mon.last_rejection
    assert "\n" not in line and "'probe_always'" in line and "allowed: true or false" in line
    w = graph.add(Watcher)
    w.watch(DiagnosticArray, "/diagnostics")
    graph.start()

    def counted():
        for _, arr in w.since("/diagnostics", 0.0):
            for st in arr.status:
                if st.name.startswith("damage_monitor"):
                    kv = {v.key: v.value for v in st.values}
                    if kv.get("rejected parameter probe_always") == "1":
                        return True
        return False
    assert wait_for(counted, 10.0)


def test_a_started_probe_is_requested_on_its_schedule_and_a_refused_one_cancelled(graph):
    """The node's side of the active probe, driven as the worker drives it: a probe that starts (its stand) is
    requested on damage/probe with its start ``settle`` s later on the ROS clock, the leg's stance angles and the
    spec; one that then ends without a score (the plan refused it) is cancelled under the same id, logged and on
    /diagnostics; an ambiguous count with the probe off is only logged."""
    from types import SimpleNamespace

    import numpy as np

    from jethexa_dynamics.damage.active_probe import ProbeConfig
    from jethexa_dynamics.damage.probe_request import ProbeRequest

    mon = graph.add(DamageMonitor, {"probe": True})
    w = graph.add(Watcher)
    w.watch(DiagnosticStatus, "damage/probe", LATCHED_QOS)
    graph.start()
    named = {"t_named": 1.0, "leg": "RM", "named": 0, "probed": False, "alternatives": [(1, 0.3)]}
    fake = SimpleNamespace(active=True, results=[dict(named)], config=ProbeConfig(),
                           stance=np.arange(18) * 0.01)
    with mon._lock:
        mon.active_probe = fake
    t = mon.t()
    now = mon.now_sec()
    mon._probe_changed(fake, (False, 0), t)
    assert wait_for(lambda: w.count("damage/probe") == 1, 5.0)
    req = ProbeRequest.from_values({kv.key: kv.value for kv in w.last("damage/probe").values}, LEGS)
    assert req.action == "probe" and req.leg == "RM" and req.id == 1
    assert abs(req.t_start - (now + ProbeConfig().settle)) < 0.05               # settle after the stand began
    assert np.allclose(req.stance, [0.12, 0.13, 0.14]) and req.spec == ProbeConfig().spec
    assert dict(mon._probe_values())["probe_state"] == "standing"
    fake.active = False
    fake.results[-1].update(margin_planned=0.004, reason="refused: the stance's static margin over the probe is "
                                                          "0.004 m, not above min_margin 0.010 m")
    mon._probe_changed(fake, (True, 1), t + 0.8)
    assert wait_for(lambda: w.count("damage/probe") == 2, 5.0)
    cancel = ProbeRequest.from_values({kv.key: kv.value for kv in w.last("damage/probe").values}, LEGS)
    assert (cancel.action, cancel.id, cancel.leg) == ("cancel", 1, "RM")
    values = dict(mon._probe_values())
    assert values["probe_state"] == "idle" and values["probe_last"].startswith("refused") and \
        values["probe_last_margin_m"] == "0.0040"
    fake.results.append(dict(named, leg="LF", reason="probe off (enabled=False)"))
    mon._probe_changed(fake, (False, 1), t + 1.0)                 # off: said, nothing sent
    assert not wait_for(lambda: w.count("damage/probe") > 2, 0.5)
    assert mon.errors == 0 and graph.spin_error is None
