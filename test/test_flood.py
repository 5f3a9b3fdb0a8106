"""A flood of malformed messages on every subscribed topic (issue 14) costs little and reaches no model.

The sim graph (the demo's, in one process) walks; a foreign process publishes about 100 malformed messages per
second on each topic the graph subscribes to (test/flood.py: NaN/inf, wrong sizes, unknown joints, non-unit
quaternions, malformed morphologies and servo statuses, absurd stamps). Compared with the SAME run's window
without the flood: the predictor's attitude error against the emulator's true attitude (mocap/pose, at equal
stamps) stays close; every rejection is counted per topic on /diagnostics; no node errors, no morphology change, no
false damage. What the flood costs in rate is benchmarks/bench_flood.py's.
"""
import os
import sys
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from geometry_msgs.msg import PoseStamped  # noqa: E402

from std_msgs.msg import UInt8MultiArray  # noqa: E402

from jethexa_dynamics import demo  # noqa: E402
from jethexa_dynamics.nodes._common import LATCHED_QOS, SENSOR_QOS  # noqa: E402
from jethexa_dynamics.nodes.graph import Watcher  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flood import measure, start_flood, walking_graph  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(400)]
WINDOW = 8.0  # s of each phase
INPUTS = ("on_command", "on_joints", "on_imu", "on_ground_truth", "on_morphology")


def spy_on_model_inputs(node):
    """Record (method, args) of every input the predictor node passes to its models from now on."""
    seen = []
    for model in node.models.values():
        for name in INPUTS:
            fn = getattr(model, name)

            def spy(*args, _fn=fn, _name=name):
                seen.append((_name, args))
                return _fn(*args)
            setattr(model, name, spy)
    return seen


def check_model_inputs(seen, node):
    """The flood's values are recognisable: NaN/inf, 34 deg of roll, non-unit quaternions, positions of 1 m or
    1e9 m, every joint at 0.3 rad or at 0, morphologies other than healthy. None may be among the inputs."""
    from jethexa_dynamics.model.se3 import QUAT_NORM_TOL
    from transforms3d.euler import quat2euler

    kinds = {name: [a for n, a in seen if n == name] for name in INPUTS}
    assert len(kinds["on_command"]) > 100 and len(kinds["on_imu"]) > 100 and len(kinds["on_joints"]) > 50, \
        {k: len(v) for k, v in kinds.items()}
    now = node.t()
    for name, calls in kinds.items():
        for args in calls:
            assert 0.0 <= args[0] <= now + 1.0, (name, args[0], now)          # node time, never absurd
    for _, q, _ in kinds["on_command"]:
        assert np.all(np.isfinite(q)) and not np.allclose(q, 0.3) and not np.allclose(q, 0.0), q
        assert np.all(q >= node.lower - 1e-9) and np.all(q <= node.upper + 1e-9), q
    for _, q in kinds["on_joints"]:
        read = q[np.isfinite(q)]
        assert np.isnan(q).sum() + read.size == q.size and read.size and not np.allclose(read, 0.3), q
    for quat in [a[1] for a in kinds["on_imu"]] + [a[2] for a in kinds["on_ground_truth"]]:
        assert abs(np.linalg.norm(quat) - 1.0) <= QUAT_NORM_TOL, quat
        roll, pitch, _ = quat2euler(quat)
        assert abs(roll) < 0.2 and abs(pitch) < 0.2, (roll, pitch)           # a walking body, not 34 deg
    for _, pos, _ in kinds["on_ground_truth"]:
        assert np.all(np.isfinite(pos)) and abs(pos[2]) < 0.3 and np.linalg.norm(pos[:2]) < 5.0, pos
    assert all(list(links) == [3] * 6 for _, links in kinds["on_morphology"])


@pytest.mark.serial   # its attitude bound compares windows of one run: alone, they share the same machine
def test_flood_of_malformed_messages_reaches_no_model():
    g, nodes, w = walking_graph("flood_bus")
    flood = control = None
    try:
        w.watch(UInt8MultiArray, "morphology", LATCHED_QOS)
        # the demo's display checks, on the same topics
        shown = g.add(Watcher, name="display")
        shown.watch(PoseStamped, "mocap/pose", SENSOR_QOS, demo.check_pose("world"))
        pr = nodes["predictor"]

        t0 = time.monotonic()
        time.sleep(WINDOW)
        rate_quiet, att_quiet = measure(w, t0, time.monotonic())

        # the control: the same flooding process, its messages on topics nobody subscribes to -- its load on the
        # shared 2-core machine without a message reaching the graph (that load alone raises the one-process
        # graph's attitude error: 0.04-0.14 -> 0.15-0.54 deg measured, with no flood value reaching a model)
        rejected0 = {name: sum(node.rejected.values()) for name, node in nodes.items()}
        control = start_flood(100, pr, prefix="flood_control/")
        tc = time.monotonic()
        time.sleep(WINDOW)
        _, att_control = measure(w, tc, time.monotonic())
        control.terminate()
        control.wait(timeout=30)
        assert {name: sum(node.rejected.values()) for name, node in nodes.items()} == rejected0

        # every input the predictor hands its models from here on: what the flood must never reach; and every
        # command the damage monitor hands its identifier (a flood's 1000 rad commands once passed there)
        seen = spy_on_model_inputs(pr)
        idf = nodes["damage_monitor"].identifier
        idf_commands = []

        def on_command(t, q, *args, _fn=idf.on_command, **kw):
            idf_commands.append(np.array(q, dtype=float))
            return _fn(t, q, *args, **kw)
        idf.on_command = on_command
        flood = start_flood(100, pr)
        t1 = time.monotonic()
        time.sleep(WINDOW)
        rate_flood, att_flood = measure(w, t1, time.monotonic())
        rejected = {name: dict(node.rejected) for name, node in nodes.items()}
        flood.terminate()
        flood.wait(timeout=30)

        print("predicted/pose %.1f/s -> %.1f/s under the flood; attitude error RMS %.3f (quiet), %.3f (control) "
              "-> %.3f deg; rejected %s" % (rate_quiet, rate_flood, att_quiet, att_control, att_flood, rejected))
        # what the flood costs the predictor's rate is measured in benchmarks/bench_flood.py (a rate is a
        # timing, not a test's verdict): here it only has to keep publishing
        assert rate_flood > 0.0, (rate_quiet, rate_flood)
        # every subscription rejected its share, counted per topic on the node's own /diagnostics status
        # (the flood's morphologies are not the damage_monitor's: rejected by sender before their content is read)
        for name, topics in (("predictor", ("joint_commands", "joint_states", "imu/data", "mocap/pose",
                                            "morphology from /flood")),
                             ("servo_driver", ("joint_commands",)), ("imu", ("emulator/imu_motion",)),
                             ("gait_controller", ("cmd_vel", "morphology from /flood")),
                             ("damage_monitor", ("/diagnostics", "joint_states"))):
            for topic in topics:
                assert rejected[name].get(topic, 0) > 50, (name, topic, rejected[name])
        diag = {}
        for _, arr in w.since("/diagnostics", t1):
            for st in arr.status:
                if st.name == "predictor: node":
                    diag = {kv.key: kv.value for kv in st.values}
        assert int(diag["rejected imu/data"]) > 50 and int(diag["rejected morphology from /flood"]) > 50, diag
        # no node error, no morphology change, no false damage, the walk went on
        # the demo displays only what the graph published: the emulator's mocap, the monitor's morphology
        assert shown.rejected["mocap/pose"] > 50 and shown.count("mocap/pose") > 100
        assert all(m.header.frame_id == "world" for _, m in shown.since("mocap/pose", 0.0))
        morph = [demo.displayed_morphology(m, demo.LEGS, nodes["damage_monitor"])
                 for _, m in w.since("morphology", t1)]
        assert morph.count(None) > 50 and {tuple(x) for x in morph if x is not None} <= {(3,) * 6}
        assert all(node.errors == 0 for node in nodes.values()), {n: nd.errors for n, nd in nodes.items()}
        assert g.spin_error is None
        assert nodes["damage_monitor"].current == [3] * 6 and not nodes["damage_monitor"].changes
        assert pr.morphology == [3] * 6 and nodes["gait_controller"].walker.links_per_leg == [3] * 6
        assert nodes["gait_controller"].state == "walking"
        # nothing of the flood reached a model: every input the models got is the graph's own, plausible data
        check_model_inputs(seen, pr)
        assert len(idf_commands) > 100 and all(np.all(np.isfinite(q[np.isfinite(q)])) for q in idf_commands)
        assert not any(np.allclose(q, 0.3) or np.nanmax(np.abs(q)) > np.max(np.abs(np.r_[pr.lower, pr.upper])) + 1e-9
                       for q in idf_commands)
        assert not idf.unexplained and idf.unexplained_windows == 0
        # ... so the attitude error stays what it was without the flood (issue 14: 0.02 -> 0.27 deg; the code
        # before the fix went 0.45 -> 116 deg under this flood). Over 8 s the predictor re-anchors only 4 times
        # (horizon 2 s), and one window's error spreads from run to run on this shared 2-core machine: the quiet
        # and control windows read 0.08-0.47 deg and the flood's 0.29-0.44 over 13 runs of 2026-11-27, the code
        # before that day's changes alike (one CI run failed on control 0.084 against flood 0.368). The bound
        # takes the run's own spread, the larger of its two windows without the flood.
        assert att_flood <= 2.0 * max(att_quiet, att_control) + 0.2, (att_quiet, att_control, att_flood)
    finally:
        for proc in (control, flood):
            if proc is not None and proc.poll() is None:
                proc.kill()
        g.close()


def test_the_flood_covers_every_topic_the_robots_nodes_subscribe_to():
    """test/flood.py's streams are every topic a robot node subscribes to in any launch of the sim graph
    (graph_spec), each with a huge message among its kinds (a Twist has no array: none there) and a truncated
    one; and a huge message is larger than any subscription decodes."""
    import flood
    from jethexa_dynamics.nodes._common import max_bytes
    from jethexa_dynamics.nodes.graph_spec import ROBOT_NODES, graph_endpoints
    from rclpy.serialization import serialize_message

    from builtin_interfaces.msg import Time

    subscribed = {e.name for n in ROBOT_NODES for e in graph_endpoints("sim")[n] if e.kind == "subscribe"}
    streams = {topic: (typ, build) for topic, typ, _, build in flood.streams(lambda: Time(sec=1_800_000_000))}
    assert subscribed <= set(streams), subscribed - set(streams)
    assert not {"cmd_vel", "/diagnostics", "morphology", "damage/probe"} - set(streams)
    for topic, (typ, build) in streams.items():
        big = flood.big(topic, flood.TEST_BIG)
        assert big or topic == "cmd_vel", topic
        for m in big:
            assert isinstance(m, typ) and len(serialize_message(m)) > max_bytes(typ), topic
        msgs = build()
        assert len(msgs) >= 3 and all(isinstance(m, typ) for m in msgs), topic
        raws = flood.truncated([serialize_message(m) for m in msgs])
        assert len(raws) == len(msgs) + 1 and len(raws[-1]) < len(raws[0])


def test_every_kind_of_garbage_on_every_topic_at_once_reaches_no_model():
    """The demo's graph (the robot's nodes in this process; its arguments: recovery on, the slip model beside the
    main one) walks while a foreign process at nice 19 floods EVERY topic the nodes subscribe to at once, 50
    messages/s each, with every kind of garbage: NaN/inf, wrong and huge array sizes, unknown and repeated joint
    names, out-of-range joints, non-unit quaternions, stale, future and absurd stamps, malformed morphologies,
    evidence, probe requests and servo statuses, truncated messages, huge messages (test/flood.py). Correctness
    only (the rates are benchmarks/bench_flood.py's): no garbage reaches a model or the gait's heading hold; the
    outputs stay finite; the morphology stays healthy; every topic's rejections are counted per node on
    /diagnostics (huge messages under ``<topic> (oversize)``, rejected before they are decoded); no node error."""
    from flood import TEST_BIG, demo_arguments, rejections, start_flood, stop_flood

    g, nodes, w = walking_graph("flood_all", demo_arguments("flood_all"))
    flood = None
    try:
        w.watch(UInt8MultiArray, "morphology", LATCHED_QOS)
        pr, gc, mon = nodes["predictor"], nodes["gait_controller"], nodes["damage_monitor"]
        assert set(pr.models) == {"boltzmann_hamel", "slip"} and gc.p["recovery"]
        seen = spy_on_model_inputs(pr)
        idf = mon.identifier
        idf_commands, hold_inputs = [], []

        def on_command(t, q, *args, _fn=idf.on_command, **kw):
            idf_commands.append(np.array(q, dtype=float))
            return _fn(t, q, *args, **kw)
        idf.on_command = on_command

        def update(command, now, dt, _fn=gc.hold.update, **kw):
            hold_inputs.append(kw)
            return _fn(command, now, dt, **kw)
        gc.hold.update = update
        t1 = time.monotonic()
        flood = start_flood(50, pr, big=TEST_BIG, nice=19)
        time.sleep(12.0)
        sent = stop_flood(flood)
        t2 = time.monotonic()
        time.sleep(2.5)                                 # every node's status after the flood (1 Hz or more)
        told = rejections(w, t2)

        print("sent %s; rejected on /diagnostics %s" % (sent, told))
        assert set(sent) >= {"joint_commands", "/diagnostics", "cmd_vel"} and min(sent.values()) > 100, sent
        # every subscription rejected its share, counted per topic on the node's own /diagnostics status; the
        # huge messages for their size, before they were decoded; foreign morphologies by their sender
        expected = {
            "predictor": ("joint_commands", "joint_states", "imu/data", "mocap/pose", "morphology from /flood"),
            "servo_driver": ("joint_commands",), "imu": ("emulator/imu_motion",),
            "gait_controller": ("cmd_vel", "imu/data", "predicted/odom", "morphology from /flood",
                                "morphology/evidence from /flood", "damage/probe from /flood"),
            "damage_monitor": ("/diagnostics", "joint_commands", "joint_states", "imu/data")}
        for name, topics in expected.items():
            for topic in topics:
                assert told[name].get(topic, 0) > 10, (name, topic, told[name])
            for topic in topics:
                topic = topic.replace(" from /flood", "")
                if topic != "cmd_vel":
                    assert told[name].get(topic + " (oversize)", 0) > 2, (name, topic, told[name])
        # nothing of the flood reached a model: every input the models got is the graph's own, plausible data
        check_model_inputs(seen, pr)
        assert len(idf_commands) > 100 and all(np.all(np.isfinite(q[np.isfinite(q)])) for q in idf_commands)
        assert not any(np.allclose(q, 0.3) or np.nanmax(np.abs(q)) > np.max(np.abs(np.r_[pr.lower, pr.upper])) + 1e-9
                       for q in idf_commands)
        assert not idf.unexplained and idf.unexplained_windows == 0
        # nor the heading hold: the gyro, the yaw and the odometry it read are the walking robot's
        assert len(hold_inputs) > 100
        for kw in hold_inputs:
            gyro, yaw, odom = kw.get("gyro_z"), kw.get("yaw"), kw.get("odom_xy")
            assert gyro is None or (np.isfinite(gyro) and abs(gyro) < 3.0), kw
            assert yaw is None or abs(yaw) < 0.5, kw
            assert odom is None or (np.all(np.isfinite(odom)) and abs(odom[1]) < 0.2 and abs(odom[0]) < 5.0), kw
        # the outputs stay finite: every pose the predictor published is a finite position and a unit quaternion
        poses = [m for _, m in w.since("predicted/pose", t1)]
        assert len(poses) > 100
        for m in poses:
            p, o = m.pose.position, m.pose.orientation
            assert np.all(np.isfinite([p.x, p.y, p.z])) and abs(np.linalg.norm([o.w, o.x, o.y, o.z]) - 1) < 1e-6
        # no node error, no morphology change, no false damage, the walk went on
        assert all(node.errors == 0 for node in nodes.values()), {n: nd.errors for n, nd in nodes.items()}
        assert g.spin_error is None
        assert mon.current == [3] * 6 and not mon.changes
        assert pr.morphology == [3] * 6 and gc.walker.links_per_leg == [3] * 6 and gc.probes_run == 0
        morph = [demo.displayed_morphology(m, demo.LEGS, mon) for _, m in w.since("morphology", t1)]
        assert {tuple(x) for x in morph if x is not None} <= {(3,) * 6}
        assert gc.state == "walking"
    finally:
        if flood is not None and flood.poll() is None:
            flood.kill()
        g.close()
