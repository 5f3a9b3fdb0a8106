"""Who may tell the robot that its body changed (issue 25): the gait controller and the predictor act on a
morphology only from their configured authority (the damage_monitor), identified by the publisher endpoint.

Pure rules first (nodes/authority.py, no rclpy); then the nodes over real DDS, both ways the sender is found:
per message by the publisher GID (this rclpy) and by the graph alone (what Humble's rclpy allows; forced with
``authority.PER_MESSAGE_GID = False``); an outside process; the walking sim graph of the issue; bag replay.
"""
import json
import os
import subprocess
import sys
import time

import pytest

from jethexa_dynamics.nodes import authority
from jethexa_dynamics.nodes.authority import (UNIDENTIFIED, MorphologyGate, Publisher, allowed_senders, gid_bytes,
                                              judge, resolve_node_name)
from jethexa_dynamics.nodes.param_spec import ParamError

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
MONITOR, INTRUDER = Publisher("/damage_monitor", b"\x01\x0f\x33\x03"), Publisher("/intruder", b"\x01\x0f\x34\x03")
ALLOWED = ("/damage_monitor",)


# ---------------------------------------------------------------------------------------------- rules
def test_names_resolve_in_the_namespace_and_node_names_are_checked():
    assert resolve_node_name("damage_monitor", "/") == "/damage_monitor"
    assert resolve_node_name("damage_monitor", "/robot1") == "/robot1/damage_monitor"
    assert resolve_node_name("/damage_monitor", "/robot1") == "/damage_monitor"
    assert allowed_senders("damage_monitor", " watcher, /lab/monitor2 ", "/") == (
        "/damage_monitor", "/lab/monitor2", "/watcher")
    assert allowed_senders("damage_monitor", "", "/") == ALLOWED
    assert gid_bytes({"data": b"\x01\x02" + b"\0" * 14}) == gid_bytes([1, 2] + [0] * 22) == b"\x01\x02"
    from jethexa_dynamics.nodes.params import GAIT_CONTROLLER, PREDICTOR

    for params in (GAIT_CONTROLLER, PREDICTOR):
        auth, others = params["morphology_authority"], params["morphology_publishers_allowed"]
        assert auth.default == "damage_monitor" and others.default == "" and auth.read_only and others.read_only
        for bad in ("", "damage monitor", "~/x", "1abc", "a//b"):
            with pytest.raises(ParamError, match="morphology_authority.*a ROS node name"):
                auth.validate(bad)
        for bad in ("a b", "a,", ",a", "a;b"):
            with pytest.raises(ParamError, match="morphology_publishers_allowed"):
                others.validate(bad)
        assert others.validate("watcher, /lab/monitor2") == "watcher, /lab/monitor2"


def test_by_publisher_gid_the_sender_is_the_node_of_that_endpoint():
    both = [MONITOR, INTRUDER]
    assert judge(ALLOWED, both, MONITOR.gid).accepted
    v = judge(ALLOWED, both, INTRUDER.gid)
    assert not v.accepted and v.sender == "/intruder" and "not the morphology authority" in v.why
    # not in the graph yet, or in it without its node's name: unidentified (looked up again later)
    assert judge(ALLOWED, [MONITOR], INTRUDER.gid).unidentified
    assert judge(ALLOWED, [Publisher("", INTRUDER.gid)], INTRUDER.gid).unidentified
    # a field of the message never counts: only the endpoint; a node that takes the authority's name passes
    assert judge(ALLOWED, [Publisher("/damage_monitor", b"\x99")], b"\x99").accepted


def test_by_the_graph_a_message_passes_only_while_every_publisher_is_allowed():
    assert judge(ALLOWED, [MONITOR]).accepted
    v = judge(ALLOWED, [MONITOR, INTRUDER])
    assert not v.accepted and v.sender == "one of /damage_monitor, /intruder" and "/intruder" in v.why
    v = judge(ALLOWED, [INTRUDER])
    assert not v.accepted and v.sender == "/intruder"
    assert judge(ALLOWED, []).unidentified and judge(ALLOWED, [MONITOR, Publisher("", b"\x07")]).unidentified
    assert judge(ALLOWED + ("/intruder",), [MONITOR, INTRUDER]).accepted


class Rig:
    """A MorphologyGate over a hand-made graph and clock."""

    def __init__(self, publishers, timeout=3.0):
        self.graph, self.now = list(publishers), 0.0
        self.delivered, self.rejected, self.cleared, self.lookups = [], [], 0, 0
        self.gate = MorphologyGate(ALLOWED, self.publishers, self.delivered.append,
                                   lambda s, why: self.rejected.append(s), self.clear, lambda: self.now, timeout)

    def publishers(self):
        self.lookups += 1
        return list(self.graph)

    def clear(self):
        self.cleared += 1


def test_gate_delivers_rejects_and_waits_for_a_sender_the_graph_does_not_name_yet():
    r = Rig([MONITOR, INTRUDER])
    r.gate.on_message("m1", MONITOR.gid)
    r.gate.on_message("x1", INTRUDER.gid)
    assert r.delivered == ["m1"] and r.rejected == ["/intruder"] and not r.gate.needs_poll
    n = r.lookups
    r.gate.on_message("x2", INTRUDER.gid)                  # a GID once named is remembered: no graph look-up
    assert r.lookups == n and r.rejected == ["/intruder"] * 2
    # a new publisher whose node the graph has not named yet: kept, in order, until it is named
    late = Publisher("/late_monitor", b"\x05")
    r.gate.on_message("l1", late.gid)
    r.gate.on_message("l2", late.gid)
    assert r.delivered == ["m1"] and r.gate.needs_poll
    r.gate.allowed += ("/late_monitor",)
    r.graph.append(Publisher("", late.gid))
    r.now = 1.0
    r.gate.poll()
    assert r.delivered == ["m1"] and r.gate.needs_poll
    r.graph[-1] = late
    r.gate.poll()
    assert r.delivered == ["m1", "l1", "l2"] and not r.gate.needs_poll
    # never named: rejected as unidentified after the time-out, nothing delivered
    r.gate.on_message("u1", b"\x66")
    r.now = 3.9
    r.gate.poll()
    assert r.gate.needs_poll and r.rejected == ["/intruder"] * 2
    r.now = 4.1
    r.gate.poll()
    assert r.rejected == ["/intruder"] * 2 + [UNIDENTIFIED] and not r.gate.needs_poll
    # a newer accepted message drops the older ones still waiting (they must not overwrite it later)
    r.gate.on_message("u2", b"\x66")
    r.gate.on_message("m2", MONITOR.gid)
    assert r.delivered[-1] == "m2" and not r.gate.pending
    assert r.gate.accepted == 4 and r.cleared == 0


def test_gate_by_the_graph_blocks_while_a_foreign_publisher_is_there_then_asks_to_resubscribe():
    r = Rig([MONITOR, INTRUDER])
    r.gate.on_message("m1")                                 # no GID: the monitor's message cannot be told apart
    assert r.delivered == [] and r.rejected == ["one of /damage_monitor, /intruder"] and r.gate.blocked
    r.gate.poll()
    assert r.cleared == 0 and r.gate.needs_poll
    r.graph.remove(INTRUDER)                                # it left: re-subscribe (the monitor's latched state)
    r.gate.poll()
    assert r.cleared == 1 and not r.gate.needs_poll
    r.gate.on_message("m1")
    assert r.delivered == ["m1"]


# ---------------------------------------------------------------------------------------------- nodes
rclpy = pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402

from jethexa_dynamics.nodes._common import LATCHED_QOS  # noqa: E402
from jethexa_dynamics.nodes.damage_monitor import DamageMonitor, evidence_msg, morphology_msg  # noqa: E402
from jethexa_dynamics.nodes.gait_controller import GaitController  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, wait_for  # noqa: E402
from jethexa_dynamics.nodes.predictor import PredictorNode  # noqa: E402

FOLD_FRONT = [1, 3, 3, 1, 3, 3]      # "LF:1 RF:1": what made the robot of the issue fold its front legs and fall


def diag_values(w, status):
    for _, arr in reversed(list(w.since("/diagnostics", 0.0))):
        for st in arr.status:
            if st.name == status:
                return {kv.key: kv.value for kv in st.values}
    return {}


def spy_logs(node):
    """The lines ``node`` logs as warnings from now on."""
    lines, logger = [], node.get_logger()
    real = logger.warning

    def warning(text, *a, **k):
        lines.append(text)
        return real(text, *a, **k)

    logger.warning = warning
    return lines


def spy_models(pr):
    """Every on_morphology call the predictor makes on its models from now on."""
    calls = []
    for m in pr.models.values():
        real = m.on_morphology

        def spy(t, links, _real=real):
            calls.append(list(links))
            return _real(t, links)
        m.on_morphology = spy
    return calls


@pytest.fixture(params=["publisher gid", "ros graph"])
def mode(request, monkeypatch):
    if request.param == "ros graph":
        monkeypatch.setattr(authority, "PER_MESSAGE_GID", False)
    return request.param


@pytest.mark.ros
@pytest.mark.timeout(180)
def test_an_outside_publisher_changes_nothing_and_the_monitors_messages_still_work(mode):
    g = Graph()
    outside = None
    try:
        gc = g.add(GaitController)
        pr = g.add(PredictorNode, {"predictor": "slip", "publish_slip": False})
        mon = g.add(DamageMonitor, {"identify": False})
        w = g.add(Watcher)
        w.watch(DiagnosticArray, "/diagnostics")
        # The intruder on a DDS participant of its own, closed whole when it leaves: a publisher destroyed inside
        # a shared participant can stay in that participant's graph for 30 s (see test_nodes_predictor); a
        # participant that leaves goes by its goodbye or, where a busy machine lost that, its lease (20 s).
        outside = Graph()
        intruder = outside.add(Watcher, name="intruder")
        g.start()
        for node in (gc, pr):     # the monitor's start-up morphology (healthy) is accepted
            assert wait_for(lambda: node.morphology_sub.gate.accepted >= 1, 30.0), node.rejected
        assert gc.morphology_sub.gate.mode == pr.morphology_sub.gate.mode == mode
        logs = {"gc": spy_logs(gc), "pr": spy_logs(pr)}
        calls = spy_models(pr)
        switches = gc.walker.switches

        pub = intruder.create_publisher(UInt8MultiArray, "morphology", LATCHED_QOS)
        for _ in range(3):
            pub.publish(morphology_msg(FOLD_FRONT, LEGS))
        key = "morphology from " + ("/intruder" if mode == "publisher gid" else "one of /damage_monitor, /intruder")
        for node in (gc, pr):
            assert wait_for(lambda: node.rejected.get(key, 0) == 3, 10.0), node.rejected
        # nothing changed: not the gait, not the predictor's models
        assert gc.walker.links_per_leg == [3] * 6 and gc.walker.switches == switches and not gc.walker.planning
        assert pr.morphology == [3] * 6 and calls == []
        # logged once per sender, counted on /diagnostics with the sender's node name
        for lines in logs.values():
            assert [line for line in lines if key in line] == [lines[0]] and "ignored, nothing changed" in lines[0]
        for status, node in (("gait_controller: node", gc), ("predictor: node", pr)):
            assert wait_for(lambda: diag_values(w, status).get("rejected " + key) == "3", 10.0), \
                diag_values(w, status)
            kv = diag_values(w, status)
            assert kv["morphology_authority"] == "/damage_monitor" and kv["morphology_sender_check"] == mode

        # the manual override stays where it is: the monitor's parameter -> its message
        assert mon.set_parameters([Parameter("morphology", value=[3, 3, 3, 3, 0, 3])])[0].successful
        if mode == "ros graph":   # the sender cannot be told apart while the intruder is on the topic ...
            assert wait_for(lambda: gc.rejected.get(key, 0) == 4 and pr.rejected.get(key, 0) == 4, 10.0)
            assert gc.walker.links_per_leg == [3] * 6 and pr.morphology == [3] * 6
            outside.close()   # ... once it has left, the monitor's current morphology comes again
        assert wait_for(lambda: gc.walker.links_per_leg == [3, 3, 3, 3, 0, 3]
                        and pr.morphology == [3, 3, 3, 3, 0, 3], 45.0), (gc.walker.links_per_leg, pr.morphology)
        assert calls and calls[-1] == [3, 3, 3, 3, 0, 3] and FOLD_FRONT not in calls
        assert (gc.morphology_sub.resubscriptions > 0) == (mode == "ros graph")
        assert gc.errors == pr.errors == 0 and g.spin_error is None
    finally:
        g.close()
        if outside is not None:
            outside.close()   # a second close does nothing


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_the_allowed_list_lets_a_named_publisher_in_and_malformed_messages_are_still_rejected():
    g = Graph()
    try:
        gc = g.add(GaitController, {"morphology_publishers_allowed": "watcher"})
        w = g.add(Watcher)
        pub = w.create_publisher(UInt8MultiArray, "morphology", LATCHED_QOS)
        g.start()
        assert gc.morphology_sub.allowed == ("/damage_monitor", "/watcher")
        pub.publish(UInt8MultiArray(data=[3, 3]))                         # allowed sender, malformed message
        assert wait_for(lambda: gc.rejected.get("morphology", 0) == 1, 10.0), gc.rejected
        evidence = w.create_publisher(DiagnosticStatus, "morphology/evidence", LATCHED_QOS)
        evidence.publish(evidence_msg([3, 0, 3, 3, 0, 3], {"LM": "servo", "RM": "servo"}, LEGS))
        pub.publish(morphology_msg([3, 0, 3, 3, 0, 3], LEGS))
        assert wait_for(lambda: gc.walker.links_per_leg == [3, 0, 3, 3, 0, 3], 10.0)
        assert not [k for k in gc.rejected if k.startswith("morphology from")]
    finally:
        g.close()


OUTSIDER = """
import sys, rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from jethexa_dynamics.nodes.damage_monitor import morphology_msg
rclpy.init()
node = rclpy.create_node("outsider")
pub = node.create_publisher(type(morphology_msg([3] * 6, %r)), "morphology", QoSProfile(
    depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
pub.publish(morphology_msg(%r, %r))
print("published", flush=True)
sys.stdin.read()            # stays until the test closes its stdin
""" % (LEGS, FOLD_FRONT, LEGS)


def start_outsider():
    p = subprocess.Popen([sys.executable, "-c", OUTSIDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "published"
    return p


def stop(p):
    p.stdin.close()
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()


@pytest.mark.ros
@pytest.mark.timeout(120)
def test_a_message_from_another_process_is_rejected_under_its_node_name():
    """Another process, as a user's ``ros2 topic pub`` would be: its node's name reaches the graph by discovery
    (perhaps after its message, which then waits for it); the message is rejected naming it."""
    g = Graph()
    p = None
    try:
        gc = g.add(GaitController)
        g.start()
        p = start_outsider()
        assert wait_for(lambda: gc.rejected.get("morphology from /outsider", 0) >= 1, 20.0), gc.rejected
        assert gc.walker.links_per_leg == [3] * 6
    finally:
        if p is not None:
            stop(p)
        g.close()


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_the_walking_sim_graph_with_recovery_ignores_an_outsiders_morphology():
    """The issue's run: the launch graph walks a healthy robot with recovery on; another process publishes
    ``LF:1 RF:1`` (once it folded both front legs and the robot fell, 72 deg). Now the gait and the predictor stay
    healthy, the robot stays upright and walks on, and the outsider is named on /diagnostics."""
    import math

    from geometry_msgs.msg import PoseStamped

    from jethexa_dynamics.nodes._common import SENSOR_QOS
    from jethexa_dynamics.nodes.graph import add_launch_graph

    def tilt_deg(m):
        q = m.pose.orientation
        return math.degrees(math.acos(max(-1.0, min(1.0, 1.0 - 2.0 * (q.x * q.x + q.y * q.y)))))

    g = Graph()
    p = None
    try:
        nodes = add_launch_graph(g, "sim", {"recovery": "true", "port_link": "/tmp/jethexa_authority_bus_%d"
                                            % os.getpid()})
        w = g.add(Watcher)
        w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
        w.drive(0.05)
        g.start()
        gc, pr = nodes["gait_controller"], nodes["predictor"]
        assert wait_for(lambda: gc.state == "walking" and w.count("mocap/pose") > 20, 120.0), gc.state
        x0 = w.last("mocap/pose").pose.position.x
        t0 = time.monotonic()
        p = start_outsider()
        assert wait_for(lambda: gc.rejected.get("morphology from /outsider", 0) >= 1
                        and pr.rejected.get("morphology from /outsider", 0) >= 1, 30.0), (gc.rejected, pr.rejected)
        # walk on for a while: a distance and a number of ground-truth samples, not a time (the machine is shared)
        assert wait_for(lambda: w.last("mocap/pose").pose.position.x - x0 > 0.05
                        and len(w.since("mocap/pose", t0)) > 100, 120.0)
        poses = [m for _, m in w.since("mocap/pose", t0)]
        assert max(tilt_deg(m) for m in poses) < 15.0          # upright (the robot fell, 72 deg)
        assert gc.walker.links_per_leg == [3] * 6 and pr.morphology == [3] * 6 and gc.walker.can_walk
        assert nodes["damage_monitor"].current == [3] * 6
        assert {n: node.errors for n, node in nodes.items() if node.errors} == {} and g.spin_error is None
    finally:
        if p is not None:
            stop(p)
        g.close()


# ---------------------------------------------------------------------------------------------- replay
def test_bag_replay_takes_the_morphology_from_the_bag(tmp_path):
    """jethexa-validate and jethexa-identify read ``morphology`` from the bag (no live sender to check): the
    authority check is not in their way -- the recorded damage splits the validation into segments and is the
    identifier's servo evidence."""
    from jethexa_dynamics.damage import identify_cli
    from jethexa_dynamics.validation import cli as validate_cli, synthetic as S

    bag = S.write_synthetic_bag(tmp_path / "b", duration=3.0, damage_at=1.5)
    assert validate_cli.main([str(bag), "--predictor", "slip", "--out", str(tmp_path / "val"), "--quiet"]) == 0
    res = json.loads((tmp_path / "val" / "report.json").read_text())["results"][0]
    assert [tuple(s["morphology"]) for s in res["segments"]] == [(3,) * 6, tuple(S.DAMAGE_1)]
    assert identify_cli.main([str(bag), "--out", str(tmp_path / "idf"), "--no-plots"]) == 0
    rep = json.loads((tmp_path / "idf" / "identify.json").read_text())
    assert [leg for leg in LEGS if rep["final_morphology"][leg] < 3] == ["LM", "RM"]
    assert rep["events"][-1]["source"] == "servo" and rep["events"][-1]["t_s"] == pytest.approx(1.5)
