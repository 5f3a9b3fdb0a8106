"""Flood every topic the robot's nodes subscribe to with malformed messages, until SIGTERM/SIGINT.

``python test/flood.py [RATE [PREFIX]] [--big N] [--only TOPIC,...] [--nice N]``: RATE messages per second on
each topic (default 100), cycling through the kinds of garbage of that topic: NaN/inf; wrong array sizes;
unknown and repeated joint names; non-unit quaternions; out-of-range joint values; stale, future and absurd
stamps (on otherwise plausible content); malformed morphologies, evidence, probe requests and servo statuses;
bytes that do not decode as the topic's type (a message cut in half); with ``--big N`` also huge messages
among them (arrays of N numbers, N/8 names or statuses, frame ids of N bytes: a sender that has lost its mind,
or a bit flip in a length field). ``--only`` floods the topics named
(each topic alone, for its own cost); ``--nice`` lowers the sender's priority (19: it stands for a sender on
another machine: its own CPU is not the robot's). A process of its own, as a foreign client on the same DDS
domain would be. Prints ``flooding`` once its publishers exist, and ``sent {topic: messages}`` (JSON) when
stopped. With a PREFIX (e.g. ``control/``) the same messages go to PREFIX + each topic, which nobody subscribes
to: the flooding process's own load on the machine without a single message reaching the graph (the control).
"""
import argparse
import json
import math
import os
import signal
import sys
import time

import numpy as np

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import InertiaStamped, PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import serialize_message
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import MultiArrayDimension, MultiArrayLayout, UInt8MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from transforms3d.quaternions import qinverse, qmult

LEGS = ("LF", "LM", "LR", "RF", "RM", "RR")
JOINTS = ["%s_joint_%s" % (j, leg) for leg in LEGS for j in ("coxa", "femur", "tibia")]
NAN, INF = math.nan, math.inf
ABSURD = [(2_000_000_000, 0), (1, 0), (5, 1_500_000_000)]  # year 2033, 1970, nanosec out of range
#: stale and future stamps [s from now]: outside every node's stamp_tolerance (2 s by default), inside a day
SKEWS = (-60.0, 60.0)
#: the huge messages' size in test_flood (numbers; ~8x that in bytes): beyond every subscription's size limit
TEST_BIG = 20000


def _skewed(now, dt):
    """``now`` (builtin_interfaces/Time) moved by ``dt`` seconds, as (sec, nanosec)."""
    ns = now.sec * 1_000_000_000 + now.nanosec + int(dt * 1e9)
    return ns // 1_000_000_000, ns % 1_000_000_000


def _wrong_stamps(now):
    """ABSURD, then stale and future stamps (need a ``now``)."""
    return list(ABSURD) + ([_skewed(now, dt) for dt in SKEWS] if now is not None else [])


def _stamped(msg, stamp=None, now=None):
    if stamp is not None:
        msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
    elif now is not None:
        msg.header.stamp = now
    return msg


def commands(now):
    def traj(names, pos, stamp=None):
        return _stamped(JointTrajectory(joint_names=list(names), points=[JointTrajectoryPoint(
            positions=[float(v) for v in pos])]), stamp, now)
    return [traj(JOINTS, [NAN] * 18), traj(JOINTS, [0.0] * 3), traj(["hip_joint_XX"], [0.0]),
            traj(JOINTS, [1e3] * 18), traj(JOINTS, [INF] + [0.0] * 17), traj(JOINTS[:2] * 2, [0.0] * 4),
            _stamped(JointTrajectory(joint_names=list(JOINTS)), None, now)] + \
        [traj(JOINTS, [0.3] * 18, s) for s in _wrong_stamps(now)]


def joint_states(now):
    def js(names, pos, stamp=None):
        return _stamped(JointState(name=list(names), position=[float(v) for v in pos]), stamp, now)
    return [js(JOINTS, [NAN] * 18), js(JOINTS, [0.0] * 5), js(["knee"] * 18, [0.0] * 18), js(JOINTS, [50.0] * 18),
            js(JOINTS + ["extra"], [0.0] * 19), js(JOINTS[:3] * 2, [0.0] * 6)] + \
        [js(JOINTS, [0.3] * 18, s) for s in _wrong_stamps(now)]


def imu(now, cov0=0.0004):
    def m(q_xyzw, stamp=None, cov=cov0):
        msg = Imu()
        o = msg.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in q_xyzw)
        msg.orientation_covariance[0] = cov
        return _stamped(msg, stamp, now)
    tilted = (math.sin(0.3), 0.0, 0.0, math.cos(0.3))  # 34 deg of roll: plausible, but every one is malformed
    return [m((0.0, 0.0, 0.0, 0.6)), m((0.0, 0.0, 0.0, 1.4)), m((0.1, 0.0, 0.0, 1.05)), m((NAN, 0, 0, 1)),
            m((0, 0, 0, 0)), m(tilted, cov=-1.0), m((0.2, 0.0, 0.0, 0.9)), m((0, 0, 0, INF))] + \
        [m(tilted, s) for s in _wrong_stamps(now)]


def mocap(now):
    def pose(p, q_xyzw, stamp=None):
        msg = PoseStamped()
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in p)
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in q_xyzw)
        return _stamped(msg, stamp, now)
    return [pose((NAN, 0, 0), (0, 0, 0, 1)), pose((0, 0, 0.1), (0, 0, 0, 0.5)), pose((0, 0, 0.1), (0.3, 0, 0, 1.2)),
            pose((1e9, 0, 0), (0, 0, 0, 1)), pose((0, 0, 0.1), (0.1, 0, 0, 1.0))] + \
        [pose((1.0, 1.0, 0.3), (math.sin(0.3), 0, 0, math.cos(0.3)), s) for s in _wrong_stamps(now)]


def morphologies():
    def mo(data, label=None):
        msg = UInt8MultiArray(data=list(data))
        if label is not None:
            msg.layout.dim = [MultiArrayDimension(label=label, size=len(data), stride=len(data))]
        return msg
    return [mo([3, 3]), mo([3, 3, 3, 3, 3, 7]), mo([]), mo([0] * 7), mo([3, 0, 3, 3, 0, 3], "LF,LM,XX,RF,RM,RR"),
            mo([1] * 6, "LF,LF,LF,LF,LF,LF"), mo([3] * 6, "a,b")]


def twists():
    out = []
    for v in ((NAN, 0, 0), (INF, 0, 0), (0, -INF, 0)):
        t = Twist()
        t.linear.x, t.linear.y, t.angular.z = v
        out.append(t)
    return out


def diagnostics():
    def status(joint, **values):
        kv = {"servo_id": "5", "joint": joint, "reads": "10", "misses": "0", "consecutive_misses": "0"}
        kv.update(values)
        return DiagnosticStatus(name="servo %s" % joint, values=[KeyValue(key=k, value=v) for k, v in kv.items()])
    bad = [{"servo_id": "five"}, {"consecutive_misses": "many"}, {"error_bits": "0x4?"}, {"last_reply_age": "old"}]
    return [DiagnosticArray(status=[status("tibia_joint_RM"), status("coxa_joint_LF", **b)]) for b in bad]


def _status(**values):
    return DiagnosticStatus(name="flood", values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])


def evidence():
    """Malformed ``morphology/evidence`` (damage.evidence's key/values); none from the morphology authority."""
    return [_status(morphology="3,3", legs="LF,LM"), _status(morphology="3,x,3,3,3,3", legs=",".join(LEGS)),
            _status(morphology="3,0,3,3,3,3", legs=",".join(LEGS), LM="telepathy"),
            _status(morphology="9,3,3,3,3,3", legs=",".join(LEGS)), _status(legs=",".join(LEGS)),
            _status(morphology="3,3,3,3,3,3", legs=",".join(LEGS), unexplained="maybe")]


def probes():
    """Malformed ``damage/probe`` requests (damage.probe_request's key/values)."""
    ok = dict(action="probe", id="7", leg="LM", t_start="1.0", duration="1.5", coxa_hz="1", coxa_amp="0.1",
              femur_hz="1", femur_amp="0.1", stance="0,0,0")
    return [_status(**dict(ok, action="dance")), _status(**dict(ok, id="-1")), _status(**dict(ok, leg="XX")),
            _status(**dict(ok, coxa_amp="nan")), _status(**dict(ok, stance="9,9,9")),
            _status(**dict(ok, t_start="1e12"))]


def odometry(now):
    def odom(p, q_xyzw=(0, 0, 0, 1), stamp=None):
        msg = Odometry()
        pp = msg.pose.pose
        pp.position.x, pp.position.y, pp.position.z = (float(v) for v in p)
        pp.orientation.x, pp.orientation.y, pp.orientation.z, pp.orientation.w = (float(v) for v in q_xyzw)
        msg.child_frame_id = "base_link"
        return _stamped(msg, stamp, now)
    return [odom((NAN, 0, 0)), odom((0, INF, 0)), odom((1e9, 0, 0)), odom((0, 0, 0), (0, 0, 0, 0))] + \
        [odom((0.5, 0.5, 0.1), stamp=s) for s in _wrong_stamps(now)]


def inertia(now):
    def body(m, com, stamp=None):
        msg = InertiaStamped()
        msg.inertia.m = float(m)
        msg.inertia.com.x, msg.inertia.com.y, msg.inertia.com.z = (float(v) for v in com)
        return _stamped(msg, stamp, now)
    return [body(NAN, (0, 0, 0)), body(-1.0, (0, 0, 0)), body(1e6, (0, 0, 0)), body(1.4, (INF, 0, 0)),
            body(1.4, (5.0, 0, 0))] + [body(1.4, (0, 0, 0), s) for s in _wrong_stamps(now)]


def truncated(raws):
    """``raws`` and, after them, the first of them cut in half: bytes that do not decode as the topic's type (a
    sender with another version of the message, a transport that cut it)."""
    return raws + [raws[0][:max(4, len(raws[0]) // 2)]] if raws else raws


def restamp(raw, stamp):
    """A serialized message that starts with a std_msgs/Header, its stamp set to ``stamp`` (plain CDR; another
    encoding as it is)."""
    import struct

    if len(raw) < 12 or raw[1] not in (0, 1):
        return raw
    out = bytearray(raw)
    struct.pack_into("<iI" if raw[1] == 1 else ">iI", out, 4, stamp.sec, stamp.nanosec)
    return bytes(out)


def _long_name(n):
    return "x" * max(1, int(n))


def big(topic, n):
    """The huge messages of ``topic`` (arrays of ``n`` numbers, ``n // 8`` strings or statuses, a frame id of
    ``n`` bytes: about 8 n bytes on the wire each), built once: the sender re-stamps them."""
    names, frame = max(1, n // 8), _long_name(n)
    if topic == "joint_commands":
        return [JointTrajectory(joint_names=list(JOINTS), points=[JointTrajectoryPoint(positions=[0.1] * n)]),
                JointTrajectory(joint_names=["hip_%d" % i for i in range(names)],
                                points=[JointTrajectoryPoint(positions=[0.0] * names)]),
                JointTrajectory(joint_names=list(JOINTS),
                                points=[JointTrajectoryPoint(positions=[0.1] * 18)] * max(1, n // 18))]
    if topic in ("joint_states", "joint_states/setpoint"):
        return [JointState(name=list(JOINTS), position=[0.1] * n),
                JointState(name=["knee_%d" % i for i in range(names)], position=[0.0] * names)]
    if topic in ("imu/data", "emulator/imu_motion"):
        m = Imu()
        m.header.frame_id = frame
        m.orientation.w = 1.0
        return [m]
    if topic == "mocap/pose":
        m = PoseStamped()
        m.header.frame_id = frame
        m.pose.orientation.w = 1.0
        return [m]
    if topic == "predicted/odom":
        m = Odometry()
        m.header.frame_id = frame
        m.pose.pose.orientation.w = 1.0
        return [m]
    if topic == "body/inertia":
        m = InertiaStamped()
        m.header.frame_id = frame
        return [m]
    if topic == "morphology":
        return [UInt8MultiArray(data=bytes([3]) * n),
                UInt8MultiArray(data=[3] * 6, layout=MultiArrayLayout(
                    dim=[MultiArrayDimension(label=frame, size=6, stride=6)]))]
    if topic in ("morphology/evidence", "damage/probe"):
        return [DiagnosticStatus(name="flood", values=[KeyValue(key="k%d" % i, value="v") for i in range(names)])]
    if topic == "/diagnostics":
        return [DiagnosticArray(status=[DiagnosticStatus(name="servo %d" % i, values=[
            KeyValue(key="servo_id", value="five"), KeyValue(key="joint", value="coxa_joint_LF")])
            for i in range(names)])]
    return []          # cmd_vel: a Twist has no arrays


def streams(now):
    """[(topic, message type, QoS, builder of the list of malformed messages: called with a current stamp)] of
    every topic the robot's nodes subscribe to in any launch of the sim graph (``test_flood`` checks the list
    against ``graph_spec``)."""
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    return [
        ("joint_commands", JointTrajectory, reliable, lambda: commands(now())),
        ("joint_states", JointState, reliable, lambda: joint_states(now())),
        ("joint_states/setpoint", JointState, reliable, lambda: joint_states(now())),
        ("imu/data", Imu, reliable, lambda: imu(now())),
        ("emulator/imu_motion", Imu, reliable,  # no orientation covariance there
         lambda: [m for m in imu(now()) if m.orientation_covariance[0] != -1.0]),
        ("mocap/pose", PoseStamped, reliable, lambda: mocap(now())),
        ("predicted/odom", Odometry, reliable, lambda: odometry(now())),
        ("body/inertia", InertiaStamped, reliable, lambda: inertia(now())),
        ("morphology", UInt8MultiArray, latched, morphologies),
        ("morphology/evidence", DiagnosticStatus, latched, evidence),
        ("damage/probe", DiagnosticStatus, latched, probes),
        ("cmd_vel", Twist, reliable, twists),
        ("/diagnostics", DiagnosticArray, reliable, diagnostics),
    ]


# ---------------------------------------------------------------------------------- measuring (test, bench)
def demo_arguments(tag):
    """The sim.launch.py arguments ``jethexa-demo`` runs with (its defaults: predictor at 50 Hz, recovery on, the
    slip model beside the main one), the servo bus linked at a path of this run's own."""
    from jethexa_dynamics import demo

    return demo._graph_overrides(demo.parse_args([]), "/tmp/jethexa_%s_%d" % (tag, os.getpid()))


def walking_graph(tag, arguments=None, layout="demo", start_timeout=180.0):
    """The sim graph walking, with a ``Watcher`` on predicted/pose, mocap/pose and /diagnostics in this process;
    returns (graph, nodes, watcher) once past the start-up transient (the caller closes the graph, which stops
    the other processes too). ``layout``: ``demo``: the robot's five nodes in this process, the emulator in its
    own (as in ``jethexa-demo``; ``nodes`` = {name: node}); ``launch``: every process as ``sim.launch.py``
    starts it (``graph_spec.processes``: the robot's nodes as ``composed`` splits them, default ``split``;
    ``nodes`` = {}). ``arguments``: the launch arguments (default: the predictor at 50 Hz, the rest the
    launch file's defaults). ``start_timeout`` [s]: a guard against a graph that never starts."""
    import tempfile

    from geometry_msgs.msg import PoseStamped as Pose

    from jethexa_dynamics.nodes._common import SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, Watcher, add_launch_graph, wait_for
    from jethexa_dynamics.nodes.graph_spec import processes

    if arguments is None:
        arguments = {"port_link": "/tmp/jethexa_%s_%d" % (tag, os.getpid()), "predictor_rate": "50"}
    g = Graph()
    try:
        workdir = tempfile.mkdtemp()
        nodes = {}
        for proc in processes("sim", arguments):
            if layout == "launch" or proc.name == "robot_emulator":   # the hardware's stand-in first (the pty)
                g.start_process(proc, workdir)
        if layout == "demo":
            nodes = add_launch_graph(g, "sim", arguments, exclude=("robot_emulator",))
        w = g.add(Watcher)
        w.watch(Pose, "predicted/pose")
        w.watch(Pose, "mocap/pose", SENSOR_QOS)
        w.watch(DiagnosticArray, "/diagnostics")
        w.drive(0.05)
        g.start()
        assert wait_for(lambda: w.count("predicted/pose") > 50 and w.count("mocap/pose") > 50, start_timeout), \
            ("the graph did not start", g.processes and {n: p.poll() for n, (p, _) in g.processes.items()})
        time.sleep(5.0)  # past the first re-anchors (horizon 2 s): the start-up transient is not the model
    except BaseException:
        g.close()
        raise
    return g, nodes, w


def rejections(w, t0=0.0):
    """{node: {topic: messages rejected}} as the nodes' own statuses on /diagnostics (``<node>: node``,
    ``rejected <topic>``) last said them, among the arrays a ``Watcher`` got since ``t0``."""
    out = {}
    for _, arr in w.since("/diagnostics", t0):
        for st in arr.status:
            if st.name.endswith(": node"):
                out[st.name[:-len(": node")]] = {kv.key[len("rejected "):]: int(kv.value) for kv in st.values
                                                 if kv.key.startswith("rejected ")}
    return out


def start_flood(rate, node=None, prefix="", big=0, only=(), nice=0):
    """This script in a process of its own at ``rate`` messages/s per topic (``big``, ``only``, ``nice``: its
    options), once ``node`` (one of the graph's, in this process) rejects them, else once it publishes; with a
    ``prefix``, the control (the same publishing on topics nobody subscribes to), once it publishes. Stop it with
    :func:`stop_flood`."""
    import subprocess

    from jethexa_dynamics.nodes.graph import wait_for

    cmd = [sys.executable, os.path.abspath(__file__), str(rate)] + ([prefix] if prefix else []) + (
        ["--big", str(big)] if big else []) + (["--only", ",".join(only)] if only else []) + (
        ["--nice", str(nice)] if nice else [])
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "flooding"
        if prefix or node is None:
            return proc
        n0 = sum(node.rejected.values())
        assert wait_for(lambda: sum(node.rejected.values()) > n0 + min(rate, 50), 30.0), node.rejected
    except BaseException:
        proc.kill()                 # never leave a flood behind on the domain: it would hit the next test
        proc.wait()
        raise
    return proc


def stop_flood(proc, timeout=30.0):
    """Stop a flood of :func:`start_flood`; returns {topic: messages it sent} (empty if it said nothing)."""
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=timeout)
    except Exception:               # noqa: BLE001 - a flood that does not stop is killed
        proc.kill()
        out, _ = proc.communicate()
    for line in (out or "").splitlines():
        if line.startswith("sent "):
            return json.loads(line[5:])
    return {}


def _wxyz(msg):
    o = msg.pose.orientation
    return np.array([o.w, o.x, o.y, o.z])


def _stamp(msg):
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def _truth(w, t0, t1):
    """Stamps and attitudes of the emulator's true pose in [t0, t1) -- what the emulator published, told apart
    from the flood's mocap messages as the predictor tells them apart (unit quaternion, stamp at arrival)."""
    ts, qs = [], []
    for t_arr, m in w.since("mocap/pose", t0):
        q = _wxyz(m)
        if t_arr < t1 and abs(np.linalg.norm(q) - 1.0) < 1e-6 and abs(_stamp(m) - time.time()) < 600 \
                and m.header.frame_id == "world":
            ts.append(_stamp(m))
            qs.append(q)
    order = np.argsort(ts)
    return np.asarray(ts)[order], np.asarray(qs)[order]


def measure(w, t0, t1, strict=True):
    """(predicted/pose messages per second, attitude error RMS [deg] against the emulator's true attitude at
    the prediction's stamp) over the arrival window [t0, t1) of a ``Watcher`` on predicted/pose and mocap/pose.

    The truth at a prediction's stamp is interpolated (slerp) between the two motion-capture samples around it
    (50 Hz; at most 0.1 s apart, as best-effort samples get lost under load). Taking the nearest sample instead
    would add up to 10 ms of the walking body's roll and pitch rates to the error, and how far apart the two
    clocks fall depends on the load. ``strict=False`` (a benchmark): too few samples give a NaN error instead
    of an AssertionError."""
    from scipy.spatial.transform import Rotation, Slerp

    preds = [m for t, m in w.since("predicted/pose", t0) if t < t1]
    ts, qs = _truth(w, t0 - 0.5, t1 + 0.5)
    if not strict and (len(ts) <= 20 or len(preds) <= 40):
        return len(preds) / (t1 - t0), math.nan       # (a benchmark: the watcher starved too)
    assert len(ts) > 20, ("emulator mocap samples in the window", len(ts), w.count("mocap/pose"))
    truth = Rotation.from_quat(qs[:, [1, 2, 3, 0]])          # scipy: (x, y, z, w)
    errs = []
    for m in preds:
        s = _stamp(m)
        k = int(np.searchsorted(ts, s))
        if not 0 < k < len(ts) or ts[k] - ts[k - 1] > 0.1:
            continue
        r = Slerp(ts[k - 1:k + 1], truth[k - 1:k + 1])([s])[0]
        x, y, z, qw = r.as_quat()
        d = qmult(qinverse(np.array([qw, x, y, z])), _wxyz(m))
        errs.append(2.0 * math.degrees(math.atan2(np.linalg.norm(d[1:]), abs(d[0]))))
    if not strict and not len(errs) > 0.5 * len(preds) > 20:
        return len(preds) / (t1 - t0), math.nan
    assert len(errs) > 0.5 * len(preds) > 20, (len(errs), len(preds))
    return len(preds) / (t1 - t0), float(np.sqrt(np.mean(np.square(errs))))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rate", nargs="?", type=float, default=100.0, help="messages per second on each topic")
    ap.add_argument("prefix", nargs="?", default="", help="publish on PREFIX + each topic instead (the control)")
    ap.add_argument("--big", type=int, default=0, help="also huge messages of about 8 N bytes (0: none)")
    ap.add_argument("--only", default="", help="comma-separated topics to flood (default: every topic)")
    ap.add_argument("--nice", type=int, default=0, help="niceness increment of this process")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    if args.nice:
        os.nice(args.nice)
    rclpy.init()
    node = rclpy.create_node("flood")
    now = node.get_clock().now

    def topic(name):
        return args.prefix + name.lstrip("/") if args.prefix else name

    only = {t.strip() for t in args.only.split(",") if t.strip()}
    chosen = [s for s in streams(lambda: now().to_msg()) if not only or s[0] in only]
    unknown = only - {s[0] for s in chosen}
    if unknown:
        print("flood.py: --only %s: no such topic (topics: %s)" % (
            ",".join(sorted(unknown)), ",".join(s[0] for s in streams(None))), file=sys.stderr)
        return 2
    pubs = [node.create_publisher(typ, topic(name), qos) for name, typ, qos, _ in chosen]
    # every message serialized once (a second), published as bytes: the sender's CPU goes to sending, not to
    # rclpy's conversion of huge Python lists; the huge ones are serialized once and re-stamped in their bytes
    bigs = [[(serialize_message(m), hasattr(m, "header")) for m in big(name, args.big)] if args.big > 0 else []
            for name, _, _, _ in chosen]
    sent = {name: 0 for name, _, _, _ in chosen}
    k = [0]
    lists = []

    def build():
        stamp = now().to_msg()
        fresh = [[restamp(b, stamp) if stamped else b for b, stamped in raws] for raws in bigs]
        lists[:] = [truncated([serialize_message(m) for m in build_()]) + b
                    for (_, _, _, build_), b in zip(chosen, fresh)]

    def tick():
        i = k[0]
        k[0] += 1
        if i % max(1, int(args.rate)) == 0:  # fresh stamps once a second
            build()
        for (name, _, _, _), pub, msgs in zip(chosen, pubs, lists):
            pub.publish(msgs[i % len(msgs)])
            sent[name] += 1

    build()
    node.create_timer(1.0 / args.rate, tick)
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(1))
    print("flooding", flush=True)
    while not stop:
        rclpy.spin_once(node, timeout_sec=0.1)
    print("sent " + json.dumps(sent), flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
