"""predictor node over real DDS: outputs and conventions, bad input on every subscription, bad parameters.

Uses the cheap slip model for the wiring checks; the whole sim graph test runs the default
(boltzmann_hamel) model.
"""
import math
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from builtin_interfaces.msg import Duration  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, UInt8MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from jethexa_dynamics.model.se3 import rot_to_quat  # noqa: E402
from jethexa_dynamics.predictors.base import CycleStats  # noqa: E402
from jethexa_dynamics.predictors.error_metric import pose_error  # noqa: E402
from jethexa_dynamics.nodes._common import LATCHED_QOS, SENSOR_QOS  # noqa: E402
from jethexa_dynamics.nodes.damage_monitor import morphology_msg  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, wait_for  # noqa: E402
from jethexa_dynamics.nodes.predictor import PredictorNode  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(120)]
LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
JOINTS = ["%s_joint_%s" % (k, leg) for leg in LEGS for k in ("coxa", "femur", "tibia")]


def test_pose_error_and_quaternions():
    from transforms3d.euler import euler2mat, euler2quat

    q = rot_to_quat(euler2mat(0.1, -0.2, 3.0, "sxyz"))
    assert np.allclose(q, euler2quat(0.1, -0.2, 3.0, "sxyz")) or np.allclose(-q, euler2quat(0.1, -0.2, 3.0))
    e = pose_error([1, 2, 3], euler2quat(0, 0, 3.1), None, euler2quat(0, 0, -3.1))
    assert e[2] == pytest.approx(-(2 * math.pi - 6.2)) and np.all(np.isnan(e[3:]))
    s = CycleStats(3)
    for v in (0.001, 0.002, 0.003, 0.004):
        s.add(v, period=0.0025)
    assert s.summary()["cycles"] == 4 and s.summary()["overruns"] == 2 and s.summary()["max_ms"] == pytest.approx(4)


def traj(names, positions, t=0.02):
    m = JointTrajectory(joint_names=list(names))
    m.points = [JointTrajectoryPoint(positions=[float(v) for v in positions],
                                     time_from_start=Duration(sec=0, nanosec=int(t * 1e9)))]
    return m


def imu_msg(w=1.0, x=0.0, y=0.0, z=0.0, cov0=0.0):
    m = Imu()
    m.orientation.w, m.orientation.x, m.orientation.y, m.orientation.z = w, x, y, z
    m.orientation_covariance[0] = cov0
    m.linear_acceleration.z = 9.81
    return m


def mocap(x=0.0, y=0.0, z=0.12):
    m = PoseStamped()
    m.pose.position.x, m.pose.position.y, m.pose.position.z = x, y, z
    m.pose.orientation.w = 1.0
    return m


_RIGS = iter(range(1, 1000))


@pytest.fixture
def rig(request):
    """The predictor and a watcher in one graph. ``@pytest.mark.parametrize("rig", [{"watch_lazy": False}],
    indirect=True)``: the watcher leaves the lazy outputs (predicted/odom, measured/pose, prediction/error) alone,
    so that nobody has ever subscribed to them."""
    # Each rig in a namespace of its own: a closed rig's participant whose goodbye a busy machine lost stays in
    # the DDS graph until its lease runs out (Fast DDS: 20 s), and its watcher's subscriptions would count here.
    watch_lazy = getattr(request, "param", {}).get("watch_lazy", True)
    ns = "/rig%d" % next(_RIGS)
    g = Graph()
    try:
        node = g.add(PredictorNode, {"predictor": "slip", "rate": 50.0, "morphology_publishers_allowed": "watcher"},
                     namespace=ns)
        w = g.add(Watcher, namespace=ns)
        w.watch(PoseStamped, "predicted/pose")
        if watch_lazy:
            w.watch(PoseStamped, "measured/pose")
            w.watch(Odometry, "predicted/odom")
            w.watch(Float64MultiArray, "prediction/error")
        pubs = {
            "joint_commands": w.create_publisher(JointTrajectory, "joint_commands", 10),
            "joint_states": w.create_publisher(JointState, "joint_states", SENSOR_QOS),
            "imu/data": w.create_publisher(Imu, "imu/data", SENSOR_QOS),
            "mocap/pose": w.create_publisher(PoseStamped, "mocap/pose", SENSOR_QOS),
            "morphology": w.create_publisher(UInt8MultiArray, "morphology", LATCHED_QOS),
        }
        g.start()
        assert wait_for(lambda: all(p.get_subscription_count() > 0 for p in pubs.values()), 10.0)
        yield g, node, w, pubs
    finally:
        g.close()


def test_outputs_frames_and_measured_pose(rig):
    g, node, w, pubs = rig
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        pubs["imu/data"].publish(imu_msg(w=math.cos(0.05), x=math.sin(0.05)))  # roll 0.1 rad
        pubs["mocap/pose"].publish(mocap(x=0.3))
        time.sleep(0.02)
    assert wait_for(lambda: w.count("prediction/error") > 5, 5.0)
    odom = w.last("predicted/odom")
    assert odom.header.frame_id == "odom" and odom.child_frame_id == "base_link"
    meas = w.last("measured/pose")
    assert meas.pose.position.x == pytest.approx(0.3) and meas.pose.orientation.x == pytest.approx(math.sin(0.05))
    err = w.last("prediction/error")
    assert err.layout.dim[0].label == "roll,pitch,yaw,x,y,z" and len(err.data) == 6
    assert err.data[0] == pytest.approx(-0.1, abs=0.05)  # the slip model stands level; the IMU says roll 0.1
    assert w.last("predicted/pose").pose.position.x == pytest.approx(0.3, abs=0.02)  # anchored on mocap


def test_bad_input_on_every_subscription(rig):
    g, node, w, pubs = rig
    bad = {
        "joint_commands": [traj(JOINTS[:1], [math.nan]), traj(["hip"], [0.0]), traj(JOINTS[:2], [0.0]),
                           JointTrajectory()],
        "joint_states": [JointState(name=JOINTS[:2], position=[0.0]), JointState(name=["x"], position=[0.0]),
                         JointState(name=JOINTS[:1], position=[math.inf]), JointState()],
        "imu/data": [imu_msg(cov0=-1.0), imu_msg(w=math.nan), imu_msg(w=0.0)],
        "mocap/pose": [mocap(x=math.nan), mocap(x=1e9)],
        "morphology": [UInt8MultiArray(data=[3, 3]), UInt8MultiArray(data=[3, 3, 3, 3, 3, 7]), UInt8MultiArray()],
    }
    # and the flood's messages (test/flood.py): non-unit quaternions within the old +-0.1, out-of-limit joints,
    # absurd stamps on plausible content, malformed morphologies -- none may reach a model, not even in part
    import flood

    now = node.get_clock().now().to_msg()
    for topic, msgs in (("joint_commands", flood.commands(now)), ("joint_states", flood.joint_states(now)),
                        ("imu/data", flood.imu(now)), ("mocap/pose", flood.mocap(now)),
                        ("morphology", flood.morphologies())):
        bad[topic] = bad[topic] + msgs
    calls = []
    each = node._each
    node._each = lambda method, *args: (calls.append(method), each(method, *args))
    for topic, msgs in bad.items():
        for m in msgs:
            pubs[topic].publish(m)
            time.sleep(0.02)
    for topic, msgs in bad.items():
        assert wait_for(lambda: node.rejected.get(topic, 0) >= len(msgs), 5.0), (topic, node.rejected)
    assert calls == [], calls  # every message was rejected as a whole before any model call
    node._each = each
    for name, value in (("rate", 0.0), ("predictor", "oracle"), ("horizon", -1.0), ("joint_source", "x"),
                        ("pace_on_imu", "yes")):
        res = node.set_parameters([Parameter(name, value=value)])[0]
        assert not res.successful and name in res.reason
    # still serving, and valid input still works
    pubs["morphology"].publish(morphology_msg([3, 0, 3, 3, 0, 3], LEGS))
    pubs["joint_commands"].publish(traj(JOINTS, np.zeros(18)))
    assert wait_for(lambda: node.morphology == [3, 0, 3, 3, 0, 3], 5.0)
    n = w.count("predicted/pose")
    assert wait_for(lambda: w.count("predicted/pose") > n + 5, 5.0)
    assert node.errors == 0 and g.spin_error is None
    assert node.set_parameters([Parameter("horizon", value=0.5)])[0].successful


def test_diagnostics_break_the_cycle_into_stages_and_count_every_callback(rig):
    """/diagnostics of the predictor: the cycle split into dynamics (the models' pose(t)) and publishing, and the
    CPU time of every callback by topic. Oracles: a callback's own CPU time measured inside it is within what the
    guard counts; the calls counted on imu/data are the IMU samples the models received; the stages add up to
    the cycle; the load rate is the CPU time over the interval."""
    from diagnostic_msgs.msg import DiagnosticArray

    from jethexa_dynamics.nodes._common import CpuLoad

    g, node, w, pubs = rig
    w.watch(DiagnosticArray, "/diagnostics")
    seen = []
    each = node._each
    node._each = lambda method, *args: (seen.append(method), each(method, *args))
    for _ in range(30):
        pubs["imu/data"].publish(imu_msg())
        pubs["joint_commands"].publish(traj(JOINTS, np.zeros(18)))
        time.sleep(0.02)
    assert wait_for(lambda: node.cpu.calls.get("joint_commands", 0) == seen.count("on_command") == 30, 5.0)
    assert wait_for(lambda: node.cpu.calls.get("imu/data", 0) == seen.count("on_imu") > 10, 5.0)
    node._each = each
    with node._lock:
        assert node.cpu.calls["predict"] == node.stats.count
        cycle = node.stats.summary()["mean_ms"]
        dyn, pub = (node.stage_stats[k].summary()["mean_ms"] for k in ("dynamics", "publishing"))
        assert dyn > 0.0 and pub > 0.0 and dyn + pub == pytest.approx(cycle, rel=1e-9)
    inner = []

    def burn():
        c0 = time.thread_time()
        sum(k * k for k in range(50000))
        inner.append(time.thread_time() - c0)

    before = node.cpu.total.get("test stage", 0.0)
    node.guard("test stage", burn)()
    assert node.cpu.total["test stage"] - before >= inner[0] > 0.0
    # what /diagnostics says: the stages and a rate per callback
    assert wait_for(lambda: any(any(kv.key == "cpu_ms_per_s test stage" for kv in st.values)
                                for _, arr in w.since("/diagnostics", 0.0) for st in arr.status
                                if st.name.endswith(": node")), 5.0)
    keys = {kv.key for _, arr in w.since("/diagnostics", 0.0) for st in arr.status for kv in st.values}
    for key in ("dynamics_p99_ms", "publishing_p99_ms", "cpu_ms_per_s imu/data", "cpu_ms_per_s predict",
                "cpu_s joint_commands", "calls imu/data"):
        assert key in keys, key
    load = CpuLoad(10.0)
    load.add("a", 0.002)
    load.add("a", 0.003)
    assert dict(load.values(12.0)) == {"cpu_ms_per_s a": pytest.approx(2.5), "cpu_s a": 0.005, "calls a": 2}
    load.add("a", 0.001)
    assert dict(load.values(13.0))["cpu_ms_per_s a"] == pytest.approx(1.0)


@pytest.mark.parametrize("rig", [{"watch_lazy": False}], indirect=True)
def test_outputs_without_subscribers_are_not_built_and_come_back_with_one(rig):
    """Lazy outputs: with nobody on predicted/odom, measured/pose and prediction/error the node neither builds
    nor publishes them (nor computes the error each cycle), the error on /diagnostics is still computed there,
    a new subscriber gets the messages again, and once it has left they stop again.

    The subscriber lives on a DDS participant of its own (a graph of its own), closed whole at the end: a
    subscription destroyed inside the rig's own participant stayed in the predictor's count for more than 10 s
    in a CI run (4 Dec); a participant that leaves is taken out of the graph by its goodbye or, where a busy
    machine lost that, by its lease (Fast DDS: 20 s)."""
    from diagnostic_msgs.msg import DiagnosticArray

    g, node, w, pubs = rig
    lazy = ("odom", "measured", "error")
    assert all(node.pubs[k].get_subscription_count() == 0 for k in lazy)
    built = []
    for key in ("_odom_msg", "_error_msg"):
        orig = getattr(node, key)
        setattr(node, key, lambda *a, orig=orig, key=key: (built.append(key), orig(*a))[1])
    n = node.stats.count
    w.watch(DiagnosticArray, "/diagnostics")

    def diag_error():
        for _, arr in w.since("/diagnostics", 0.0):
            for st in arr.status:
                vals = {kv.key: kv.value for kv in st.values}
                if "error_rpy_xyz" in vals and "nan" not in vals["error_rpy_xyz"]:
                    return vals["error_rpy_xyz"]
        return None

    def feed(until, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end and not until():
            pubs["imu/data"].publish(imu_msg(w=math.cos(0.05), x=math.sin(0.05)))  # roll 0.1 rad
            pubs["mocap/pose"].publish(mocap(x=0.3))
            time.sleep(0.02)
        return until()

    feed(lambda: diag_error() and node.stats.count > n + 10, 10.0)
    assert node.stats.count > n + 10 and built == []
    err = diag_error()
    assert err is not None and float(err.strip("[]").split(",")[0]) == pytest.approx(-0.1, abs=0.05)

    outside = Graph()
    try:
        listener = outside.add(Watcher, name="listener", namespace=w.get_namespace())
        listener.watch(Float64MultiArray, "prediction/error")
        outside.start()
        assert feed(lambda: listener.count("prediction/error") > 5, 10.0)
        assert "_error_msg" in built and "_odom_msg" not in built
        assert listener.last("prediction/error").data[0] == pytest.approx(-0.1, abs=0.05)
    finally:
        outside.close()
    assert feed(lambda: node.pubs["error"].get_subscription_count() == 0, 45.0)
    time.sleep(0.1)   # a cycle that had already asked for the count
    since, m = len(built), node.stats.count
    assert feed(lambda: node.stats.count > m + 10, 10.0) and len(built) == since


def test_odom_twist_is_the_models_twist_in_base_link(rig):
    """predicted/odom carries the model's base twist in base_link, linear and angular (before: angular unset,
    linear differenced). Oracle: over a turning walk its mean equals the motion of the published poses --
    yaw rate from the orientation change, forward/lateral speed from the displacement in the body frame."""
    from jethexa_dynamics.control.walking import WalkingGait
    from jethexa_dynamics.nodes._robot import jethexa, leg_geometry
    from jethexa_dynamics.predictors.error_metric import quat_to_rpy

    g, node, w, pubs = rig
    walker = WalkingGait(leg_geometry(), jethexa().joint_names)
    walker.set_command((0.03, 0.0, 0.3))
    dt, t0 = 0.02, None
    start = time.monotonic()
    while time.monotonic() < start + 3.0:
        names, q = walker.step(dt, walking=True)
        pubs["joint_commands"].publish(traj(names, q, 1.5 * dt))      # moves overlap: no still gaps
        if t0 is None and time.monotonic() > start + 1.0:
            t0 = time.monotonic()
        time.sleep(dt)
    odom = [m for _, m in w.since("predicted/odom", t0)]
    assert len(odom) > 20
    t = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in odom])
    quat = np.array([[m.pose.pose.orientation.w, m.pose.pose.orientation.x, m.pose.pose.orientation.y,
                      m.pose.pose.orientation.z] for m in odom])
    pos = np.array([[m.pose.pose.position.x, m.pose.pose.position.y, m.pose.pose.position.z] for m in odom])
    yaw = np.unwrap(quat_to_rpy(quat)[:, 2])
    wz = np.array([m.twist.twist.angular.z for m in odom])
    span = t[-1] - t[0]
    assert (yaw[-1] - yaw[0]) / span > 0.05                                 # it turned
    assert wz.mean() == pytest.approx((yaw[-1] - yaw[0]) / span, rel=0.3)
    c, s = np.cos(yaw[:-1]), np.sin(yaw[:-1])
    d = np.diff(pos[:, :2], axis=0)
    fwd = (c * d[:, 0] + s * d[:, 1]).sum() / span                           # displacement in base_link x
    assert fwd > 0.005
    assert np.mean([m.twist.twist.linear.x for m in odom]) == pytest.approx(fwd, rel=0.3)
    assert all(m.twist.twist.linear.z == 0.0 for m in odom)                 # the slip model is planar
    assert node.errors == 0 and g.spin_error is None


def test_guard_rejects_input_errors_and_lets_bugs_through(rig):
    """ThinNode.guard: the project's input errors are rejected (log line, count); anything else -- also a
    plain ValueError such as numpy's, which used to pass as 'rejected input' -- is a bug and propagates."""
    from jethexa_dynamics.hardware.errors import JointLimitError
    from jethexa_dynamics.nodes.messages import CannotServe, InvalidMessage
    from jethexa_dynamics.nodes.param_spec import ParamError

    g, node, w, pubs = rig

    def raising(exc):
        def callback():
            raise exc
        return node.guard("probe", callback)

    for exc in (InvalidMessage("probe.x: bad"), CannotServe("probe: bus not open"), ParamError("p: bad"),
                JointLimitError("coxa_joint_LF", 9.0, -1.0, 1.0)):
        assert raising(exc)() is None
    assert node.rejected["probe"] == 4 and node.errors == 0
    for exc in (ValueError("operands could not be broadcast together"), ZeroDivisionError("division by zero"),
                KeyError("coxa_joint_XX")):
        with pytest.raises(type(exc)):
            raising(exc)()
    assert node.rejected["probe"] == 4 and node.errors == 3


@pytest.mark.parametrize("name", ["slip", "newton_euler"])
def test_second_opinion_reanchor_keeps_the_support_state(name):
    """The predictor node's second opinions (built by the registry jethexa-validate uses) re-anchor on mocap
    without losing the support state: no height or roll/pitch jump at a re-anchor (a reset would drop the
    body to z = 0, level, until the next command)."""
    from jethexa_dynamics.control.walking import WalkingGait
    from jethexa_dynamics.nodes._robot import jethexa, leg_geometry
    from jethexa_dynamics.predictors.registry import make_predictor

    model = make_predictor(name, horizon=0.5)
    walker = WalkingGait(leg_geometry(), jethexa().joint_names)
    walker.set_command((0.05, 0.0, 0.0))
    model.reset(0.0, JOINTS)
    z, tilt, dt = [], [], 0.02
    for k in range(1, 150):
        t = k * dt
        names, q = walker.step(dt, walking=True)
        assert names == JOINTS
        model.on_command(t, q, t + dt)
        model.on_ground_truth(t, np.array([0.05 * t, 0.0, 0.12]), np.array([1.0, 0.0, 0.0, 0.0]))
        pos, quat = model.pose(t + dt / 2)
        z.append(pos[2])
        tilt.append(np.linalg.norm(pose_error(pos, quat, None, [1.0, 0.0, 0.0, 0.0])[:2]))
    assert len(model.anchors) >= 4                                         # it did re-anchor (every 0.5 s)
    assert model.anchors[0] <= 2 * dt                                      # on the first mocap pose
    assert np.max(np.abs(np.diff(z[5:]))) < 0.01, "height jumps at a re-anchor"
    assert np.max(np.abs(np.diff(tilt[5:]))) < math.radians(2), "roll/pitch jumps at a re-anchor"


def test_imu_at_the_cycle_rate_paces_the_cycle_and_the_timer_takes_over_when_it_stops(rig):
    """With imu/data at the node's rate (50 Hz here) the cycles run right after the samples (``nodes/pacing.py``);
    when the IMU stops, rclpy's cancelled cycle timer is re-armed (``reset``) and the predictions go on."""
    g, node, w, pubs = rig
    period = 1.0 / node.p["rate"]
    t0 = time.monotonic()
    for k in range(1, 101):                        # on an absolute schedule: the mean interval is the period
        time.sleep(max(0.0, t0 + k * period - time.monotonic()))
        pubs["imu/data"].publish(imu_msg())
    assert wait_for(lambda: node.pacer.counts["input"] > 10, 5.0), node.pacer.counts
    with node._lock:
        on_timer = node.pacer.counts["timer"]
    poses = w.count("predicted/pose")
    assert wait_for(lambda: node.pacer.counts["timer"] > on_timer + 10 and not node.pacer.paced, 5.0)
    assert wait_for(lambda: w.count("predicted/pose") > poses + 10, 5.0)
    with node._lock:
        assert node.cpu.calls["predict"] == node.stats.count      # every cycle counted once, whoever ran it
    # pace_on_imu false: the same samples leave the cycle on its timer
    assert node.set_parameters([Parameter("pace_on_imu", value=False)])[0].successful
    paced, on_timer = node.pacer.counts["input"], node.pacer.counts["timer"]
    t0 = time.monotonic()
    for k in range(1, 51):
        time.sleep(max(0.0, t0 + k * period - time.monotonic()))
        pubs["imu/data"].publish(imu_msg())
    assert wait_for(lambda: node.pacer.counts["timer"] > on_timer + 20, 5.0)
    assert node.pacer.counts["input"] == paced and not node.pacer.paced


def test_endpoints_carry_no_event_handlers_and_incompatible_qos_is_still_reported(rig):
    """Our nodes' publishers and subscriptions are created without rclpy's default event handlers (two
    waitables each, walked by the executor at every wake-up; a plain rclpy node, the Watcher, has them), and
    ``check_qos`` still names a publisher whose QoS cannot reach a subscription: rclpy's own incompatible-QoS
    verdict, a warning, and ``qos_incompatible`` on /diagnostics at level WARN; and nothing once it is gone.

    The incompatible publisher lives on a DDS participant of its own (a context), shut down whole at the end. A
    publisher destroyed inside the rig's own participant stayed in that participant's graph in two CI runs (the
    predictor still listed it 30 s later, under the watcher's name); a participant that leaves is taken out of
    the graph by its goodbye or, where a busy machine lost that, by its lease (Fast DDS: 20 s)."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticStatus
    from rclpy.context import Context
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    g, node, w, pubs = rig
    assert len(list(node.waitables)) == 0 and len(list(node.subscriptions)) >= 5
    assert len(list(w.waitables)) >= 2 * len(list(w.publishers)) > 0          # rclpy's default, the oracle
    assert node.check_qos() == {}                                                # the rig's publishers match
    ctx = Context()
    rclpy.init(context=ctx)
    try:
        other = rclpy.create_node("qos_probe", namespace=w.get_namespace(), context=ctx)
        other.create_publisher(JointTrajectory, "joint_commands",
                               QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT))
        key = (w.get_namespace() + "/joint_commands", "publisher", other.get_fully_qualified_name())
        assert wait_for(lambda: key in node.check_qos(), 30.0)
        assert "reliab" in node.qos_incompatible[key].lower() and len(node.qos_incompatible) == 1
        status = node.node_status()
        assert status.level == DiagnosticStatus.WARN and any(
            kv.key == "qos_incompatible" and "/joint_commands" in kv.value for kv in status.values)
        other.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)
    assert wait_for(lambda: node.check_qos() == {}, 45.0) and node.node_status().level == DiagnosticStatus.OK


def test_late_cycles_lower_the_rate_say_so_and_it_comes_back(rig):
    """``degrade`` (nodes/degrade.py) on the real node: a cycle made to take 60 ms of CPU (3x too slow for 50 Hz)
    halves the cycle rate until the cycles are on time (50 -> 25 -> 12.5 Hz: the cycle timer's period follows),
    /diagnostics says ``degraded`` at WARN with the effective rate and why; with the cycle fast again the rate
    steps back up to 50 Hz and ``degraded`` clears."""
    from diagnostic_msgs.msg import DiagnosticArray

    from jethexa_dynamics.nodes._common import level_of

    g, node, w, pubs = rig
    w.watch(DiagnosticArray, "/diagnostics")
    assert node.set_parameters([Parameter("degrade_recover", value=1.0)])[0].successful
    model = node.models["slip"]
    fast = model.pose

    def slow(t):                                   # 60 ms of CPU (the governor weighs the cycles' CPU)
        c0 = time.thread_time()
        while time.thread_time() - c0 < 0.06:
            pass
        return fast(t)
    model.pose = slow
    assert wait_for(lambda: node.governor.effective_rate == 12.5, 60.0), node.governor.effective_rate
    with node._lock:
        assert node._rate_timers["rate"][0].timer_period_ns == 80_000_000 and node.governor.degraded
        assert "late or missed" in node.governor.reason

    def status(t0, rate):
        # The newest node status received after t0 that reports ``rate``: one built before the step can still
        # arrive after t0 when the watcher's thread is starved, so the test follows the node, not the clock.
        for _, arr in reversed(w.since("/diagnostics", t0)):
            for st in arr.status:
                if st.name == node.get_name() + ": node":
                    return st if {kv.key: kv.value for kv in st.values}.get("effective_rate_hz") == rate else None
        return None
    st = wait_for(lambda: status(time.monotonic() - 1.0, "12.5"), 30.0)
    assert st is not None, w.since("/diagnostics", 0.0)[-1:]
    values = {kv.key: kv.value for kv in st.values}
    assert level_of(st) == 1 and "degraded to 12.5 Hz of 50" in st.message
    assert values["degraded"] == "true" and values["effective_rate_hz"] == "12.5"
    assert int(values["degrade_steps_down"]) == 2 and "late or missed" in values["degraded_reason"]
    model.pose = fast
    assert wait_for(lambda: node.governor.effective_rate == 50.0, 60.0), node.governor.effective_rate
    st = wait_for(lambda: status(time.monotonic() - 1.0, "50"), 30.0)
    assert st is not None, w.since("/diagnostics", 0.0)[-1:]
    values = {kv.key: kv.value for kv in st.values}
    assert values["degraded"] == "false" and values["effective_rate_hz"] == "50" and "degraded to" not in st.message
    assert int(values["degrade_steps_up"]) >= 2


def test_a_body_mass_it_cannot_use_at_start_up_is_refused_and_the_urdf_body_kept():
    """``body_mass`` in (0, 0.1) kg passes the parameter's range (0 means the URDF's) but is no body: refused once
    (counted, one line naming the parameter and its range), the parameters set back, the URDF's body used; a
    usable one is taken (the model's body mass, /diagnostics says ``parameters``)."""
    g = Graph()
    try:
        bad = g.add(PredictorNode, {"body_mass": 0.05})
        assert bad.body_source == "urdf" and bad.p["body_mass"] == 0.0
        assert bad.get_parameter("body_mass").value == 0.0
        assert bad.rejected.get("parameter body_mass") == 1 and "[0.1, 20] kg" in bad.last_rejection
        good = g.add(PredictorNode, {"body_mass": 1.5, "body_com_offset": [0.005, 0.0, 0.0]})
        body = good.models[good.p["predictor"]].robot.description
        assert good.body_source == "parameters" and body.body_mass == 1.5 and list(body.body_com) == [0.005, 0, 0]
    finally:
        g.close()


def test_body_estimates_set_the_models_body_in_place_and_a_bad_one_is_refused():
    """``body_estimate``: each body/inertia sets the models' body (mass, CoM) in place: the model is the same
    object (its state kept), its kernels use the new body (as ``with_body`` builds it); a mass
    outside [0.1, 20] kg or a stale stamp is refused with one line naming the field, the body kept."""
    from builtin_interfaces.msg import Time
    from geometry_msgs.msg import InertiaStamped

    from jethexa_dynamics.model import LeggedRobot, kernels
    from jethexa_dynamics.nodes._common import RELIABLE_QOS

    def inertia(m, com, stamp=None):
        msg = InertiaStamped()
        msg.header.stamp = stamp or node.get_clock().now().to_msg()
        msg.header.frame_id = "base_link"
        msg.inertia.m = m
        msg.inertia.com.x, msg.inertia.com.y, msg.inertia.com.z = com
        return msg

    g = Graph()
    try:
        node = g.add(PredictorNode, {"body_estimate": True, "rate": 50.0})
        w = g.add(Watcher)
        pub = w.create_publisher(InertiaStamped, "body/inertia", RELIABLE_QOS)
        imu = w.create_publisher(Imu, "imu/data", SENSOR_QOS)
        g.start()
        assert wait_for(lambda: pub.get_subscription_count() > 0, 10.0)
        model = node.models[node.p["predictor"]]
        assert node.body_source == "urdf" and model.robot.kernel_data is not LeggedRobot.jethexa().kernel_data
        pub.publish(inertia(1.69, (0.01, 0.002, 0.0)))
        for _ in range(50):
            imu.publish(imu_msg())            # the cycles take the polled body/inertia
            time.sleep(0.02)
            if node.body_estimates:
                break
        assert node.body_estimates == 1 and node.body_source == "estimate"
        assert node.models[node.p["predictor"]] is model
        want = LeggedRobot.jethexa().with_body(1.69, (0.01, 0.002, 0.0)).kernel_data
        for k in (kernels.D_BODY_MASS, kernels.D_BODY_COM, kernels.D_BODY_IC):
            np.testing.assert_allclose(model.robot.kernel_data[k], want[k])
        for bad, field in ((inertia(25.0, (0.0, 0.0, 0.0)), "body_mass"),
                           (inertia(1.5, (0.3, 0.0, 0.0)), "body_com_offset"),
                           (inertia(1.5, (0.0, 0.0, 0.0), stamp=Time(sec=1)), "stamp")):
            n = sum(node.rejected.values())
            pub.publish(bad)
            assert wait_for(lambda: (imu.publish(imu_msg()), sum(node.rejected.values()) > n)[1], 5.0, poll=0.02)
            assert field in node.last_rejection, node.last_rejection
        assert node.body_estimates == 1 and model.robot.kernel_data[kernels.D_BODY_MASS][0] == pytest.approx(1.69)
    finally:
        g.close()
