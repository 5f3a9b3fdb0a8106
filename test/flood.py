"""Flood every topic the sim graph subscribes to with malformed messages (issue 14), until SIGTERM/SIGINT.

``python test/flood.py [RATE [PREFIX]]``: RATE messages per second per topic (default 100), cycling through
NaN/inf, wrong array sizes, unknown joint names, non-unit quaternions, out-of-limit joints, malformed
morphologies, malformed servo statuses and absurd stamps (on otherwise plausible content). Prints ``flooding``
once its publishers exist. A process of its own, as a foreign client on the same DDS domain would be. With a
PREFIX (e.g. ``control/``) the same messages go to PREFIX + each topic, which nobody subscribes to: the
flooding process's own load on the machine without a single message reaching the graph (the control).
"""
import math
import signal
import sys
import time

import numpy as np

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, Twist
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import MultiArrayDimension, UInt8MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from transforms3d.quaternions import qinverse, qmult

LEGS = ("LF", "LM", "LR", "RF", "RM", "RR")
JOINTS = ["%s_joint_%s" % (j, leg) for leg in LEGS for j in ("coxa", "femur", "tibia")]
NAN, INF = math.nan, math.inf
ABSURD = [(2_000_000_000, 0), (1, 0), (5, 1_500_000_000)]  # year 2033, 1970, nanosec out of range


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
            traj(JOINTS, [1e3] * 18), traj(JOINTS, [INF] + [0.0] * 17)] + [traj(JOINTS, [0.3] * 18, s) for s in ABSURD]


def joint_states(now):
    def js(names, pos, stamp=None):
        return _stamped(JointState(name=list(names), position=[float(v) for v in pos]), stamp, now)
    return [js(JOINTS, [NAN] * 18), js(JOINTS, [0.0] * 5), js(["knee"] * 18, [0.0] * 18), js(JOINTS, [50.0] * 18),
            js(JOINTS + ["extra"], [0.0] * 19)] + [js(JOINTS, [0.3] * 18, s) for s in ABSURD]


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
        [m(tilted, s) for s in ABSURD]


def mocap(now):
    def pose(p, q_xyzw, stamp=None):
        msg = PoseStamped()
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(v) for v in p)
        o = msg.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in q_xyzw)
        return _stamped(msg, stamp, now)
    return [pose((NAN, 0, 0), (0, 0, 0, 1)), pose((0, 0, 0.1), (0, 0, 0, 0.5)), pose((0, 0, 0.1), (0.3, 0, 0, 1.2)),
            pose((1e9, 0, 0), (0, 0, 0, 1)), pose((0, 0, 0.1), (0.1, 0, 0, 1.0))] + \
        [pose((1.0, 1.0, 0.3), (math.sin(0.3), 0, 0, math.cos(0.3)), s) for s in ABSURD]


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


# ---------------------------------------------------------------------------------- measuring (test, bench)
def walking_graph(tag):
    """The demo's sim graph (predictor at 50 Hz): the robot's five nodes in this process, the emulator in its
    own (as in the demo), walking, with a ``Watcher`` on predicted/pose, mocap/pose and /diagnostics; returns
    (graph, nodes, watcher) once past the start-up transient (the caller closes the graph, which stops the
    emulator too)."""
    import os
    import tempfile

    from geometry_msgs.msg import PoseStamped as Pose

    from jethexa_dynamics.nodes._common import SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, Watcher, add_launch_graph, wait_for
    from jethexa_dynamics.nodes.graph_spec import processes

    g = Graph()
    try:
        args = {"port_link": "/tmp/jethexa_%s_%d" % (tag, os.getpid()), "predictor_rate": "50"}
        g.start_process([p for p in processes("sim", args) if p.name == "robot_emulator"][0], tempfile.mkdtemp())
        nodes = add_launch_graph(g, "sim", args, exclude=("robot_emulator",))
        w = g.add(Watcher)
        w.watch(Pose, "predicted/pose")
        w.watch(Pose, "mocap/pose", SENSOR_QOS)
        w.watch(DiagnosticArray, "/diagnostics")
        w.drive(0.05)
        g.start()
        assert wait_for(lambda: w.count("predicted/pose") > 50 and w.count("mocap/pose") > 50, 120.0)
        time.sleep(5.0)  # past the first re-anchors (horizon 2 s): the start-up transient is not the model
    except BaseException:
        g.close()
        raise
    return g, nodes, w


def start_flood(rate, node, prefix=""):
    """This script in a process of its own at ``rate`` messages/s per topic, once ``node`` rejects them; with a
    ``prefix``, the control (the same publishing on topics nobody subscribes to), once it publishes."""
    import os
    import subprocess

    from jethexa_dynamics.nodes.graph import wait_for

    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), str(rate)] + ([prefix] if prefix else []),
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "flooding"
        if prefix:
            return proc
        n0 = sum(node.rejected.values())
        assert wait_for(lambda: sum(node.rejected.values()) > n0 + rate, 30.0), node.rejected
    except BaseException:
        proc.kill()                 # never leave a flood behind on the domain: it would hit the next test
        proc.wait()
        raise
    return proc


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


def measure(w, t0, t1):
    """(predicted/pose messages per second, attitude error RMS [deg] against the emulator's true attitude at
    the prediction's stamp) over the arrival window [t0, t1) of a ``Watcher`` on predicted/pose and mocap/pose.

    The truth at a prediction's stamp is interpolated (slerp) between the two motion-capture samples around it
    (50 Hz; at most 0.1 s apart, as best-effort samples get lost under load). Taking the nearest sample instead
    would add up to 10 ms of the walking body's roll and pitch rates to the error, and how far apart the two
    clocks fall depends on the load."""
    from scipy.spatial.transform import Rotation, Slerp

    preds = [m for t, m in w.since("predicted/pose", t0) if t < t1]
    ts, qs = _truth(w, t0 - 0.5, t1 + 0.5)
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
    assert len(errs) > 0.5 * len(preds) > 20, (len(errs), len(preds))
    return len(preds) / (t1 - t0), float(np.sqrt(np.mean(np.square(errs))))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    rate = float(argv[0]) if argv else 100.0
    prefix = argv[1] if len(argv) > 1 else ""
    rclpy.init()
    node = rclpy.create_node("flood")
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    now = node.get_clock().now

    def topic(name):
        return prefix + name.lstrip("/") if prefix else name

    streams = [  # (publisher, builder of the message list; stamped ones re-built with a current stamp)
        (node.create_publisher(JointTrajectory, topic("joint_commands"), reliable), lambda: commands(now().to_msg())),
        (node.create_publisher(JointState, topic("joint_states"), reliable), lambda: joint_states(now().to_msg())),
        (node.create_publisher(Imu, topic("imu/data"), reliable), lambda: imu(now().to_msg())),
        (node.create_publisher(Imu, topic("emulator/imu_motion"), reliable),  # no orientation covariance there
         lambda: [m for m in imu(now().to_msg()) if m.orientation_covariance[0] != -1.0]),
        (node.create_publisher(PoseStamped, topic("mocap/pose"), reliable), lambda: mocap(now().to_msg())),
        (node.create_publisher(UInt8MultiArray, topic("morphology"), latched), morphologies),
        (node.create_publisher(Twist, topic("cmd_vel"), reliable), twists),
        (node.create_publisher(DiagnosticArray, topic("/diagnostics"), reliable), diagnostics),
    ]
    k = [0]
    lists = [build() for _, build in streams]

    def tick():
        i = k[0]
        k[0] += 1
        if i % int(rate) == 0:  # fresh stamps once a second
            lists[:] = [build() for _, build in streams]
        for (pub, _), msgs in zip(streams, lists):
            pub.publish(msgs[i % len(msgs)])

    node.create_timer(1.0 / rate, tick)
    stop = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.append(1))
    print("flooding", flush=True)
    while not stop:
        rclpy.spin_once(node, timeout_sec=0.1)
    node.destroy_node()
    rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
