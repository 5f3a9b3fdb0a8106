"""gait_controller over real DDS: cmd_vel -> joint_commands, stale stop, morphology follow, bad input."""
import math
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from geometry_msgs.msg import Twist  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from std_msgs.msg import MultiArrayDimension, UInt8MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory  # noqa: E402

from jethexa_dynamics.control.walking import remaining_leg_offsets  # noqa: E402
from jethexa_dynamics.nodes._common import LATCHED_QOS  # noqa: E402
from jethexa_dynamics.nodes.damage_monitor import evidence_msg, morphology_msg  # noqa: E402
from jethexa_dynamics.nodes.gait_controller import GaitController  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, wait_for  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]
LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]


@pytest.fixture
def setup():
    g = Graph()
    try:
        gc = g.add(GaitController, {"cmd_vel_timeout": 0.4, "morphology_publishers_allowed": "watcher"})
        w = g.add(Watcher)
        w.watch(JointTrajectory, "joint_commands")
        cmd = w.create_publisher(Twist, "cmd_vel", 10)
        morph = Monitor(w)
        g.start()
        yield g, gc, w, cmd, morph
    finally:
        g.close()


class Monitor:
    """Publishes morphologies as damage_monitor does: the evidence first (``kind`` for every damaged leg),
    then the morphology; ``kind=None`` publishes the morphology alone (no evidence)."""

    def __init__(self, node):
        self.morph = node.create_publisher(UInt8MultiArray, "morphology", LATCHED_QOS)
        self.evidence = node.create_publisher(DiagnosticStatus, "morphology/evidence", LATCHED_QOS)

    def publish(self, links, kind="servo", unexplained=False, seized=()):
        if kind is not None:
            self.evidence.publish(evidence_msg(links, {leg: kind for leg, n in zip(LEGS, links) if n < 3}, LEGS,
                                               unexplained, seized))
        self.morph.publish(morphology_msg(links, LEGS))


def twist(vx=0.0, vy=0.0, wz=0.0):
    t = Twist()
    t.linear.x, t.linear.y, t.angular.z = vx, vy, wz
    return t


def positions_since(w, t0):
    return [np.array(m.points[0].positions) for _, m in w.since("joint_commands", t0)]


def walk(cmd, seconds, vx=0.05, until=None, guard=60.0):
    """Publish cmd_vel every 50 ms for ``seconds``, and then on until ``until()`` holds (``guard`` only
    against a hang: on a slow machine the controller runs fewer cycles in the same time)."""
    end, stop = time.monotonic() + seconds, time.monotonic() + guard
    while time.monotonic() < end or (until is not None and not until() and time.monotonic() < stop):
        cmd.publish(twist(vx))
        time.sleep(0.05)


def test_walks_on_cmd_vel_then_holds_stance_when_stale(setup):
    g, gc, w, cmd, _ = setup
    assert wait_for(lambda: w.count("joint_commands") > 5, 10.0)
    last = w.last("joint_commands")
    assert len(last.joint_names) == 18 and last.joint_names[0] == "coxa_joint_LF"
    assert gc.state in ("stale", "stance")
    t0 = time.monotonic()
    walk(cmd, 1.0, until=lambda: len(positions_since(w, t0 + 0.2)) > 10)
    moving = positions_since(w, t0 + 0.2)
    assert len(moving) > 10 and gc.state == "walking"
    assert np.ptp(np.array(moving), axis=0).max() > 0.05  # the legs move
    # stop publishing: after the timeout the commands settle on one constant stance
    assert wait_for(lambda: gc.state == "stale", 3.0)
    t1 = time.monotonic() + 0.1
    assert wait_for(lambda: len(positions_since(w, t1)) > 5, 5.0)
    still = np.array(positions_since(w, t1))
    assert np.ptp(still, axis=0).max() < 1e-9
    assert np.allclose(still[0], gc.walker.stance)


def test_unexplained_motion_crawls_on_the_same_morphology_until_cleared(setup):
    """Issue 23: while the monitor says no morphology explains the motion, the gait keeps every leg and walks at
    unexplained_speed_scale (0.3) of cmd_vel (state 'crawl', on /diagnostics); cleared, full speed again."""
    g, gc, w, cmd, morph = setup
    walk(cmd, 0.5, until=lambda: gc.state == "walking")
    assert np.allclose(gc.walker.command, [0.05, 0.0, 0.0])
    morph.publish([3] * 6, unexplained=True)
    walk(cmd, 0.3, until=lambda: gc.state == "crawl")
    assert gc.state == "crawl" and gc.unexplained and np.allclose(gc.walker.command, [0.015, 0.0, 0.0])
    assert gc.walker.links_per_leg == [3] * 6 and len(w.last("joint_commands").joint_names) == 18
    morph.publish([3] * 6)
    walk(cmd, 0.3, until=lambda: gc.state == "walking")
    assert gc.state == "walking" and np.allclose(gc.walker.command, [0.05, 0.0, 0.0])
    assert not gc.errors and g.spin_error is None


def test_a_seized_joint_crawls_on_the_same_morphology_until_it_follows_again(setup):
    """Issue 23: a seized joint (morphology/evidence key ``seized``) keeps every leg; the gait crawls at
    unexplained_speed_scale of cmd_vel and says why on /diagnostics; cleared, full speed again."""
    g, gc, w, cmd, morph = setup
    walk(cmd, 0.5, until=lambda: gc.state == "walking")
    morph.publish([3] * 6, seized=("femur_joint_LM",))
    walk(cmd, 0.3, until=lambda: gc.state == "crawl")
    assert gc.state == "crawl" and gc.seized == ("femur_joint_LM",) and not gc.unexplained
    assert np.allclose(gc.walker.command, [0.015, 0.0, 0.0]) and gc.walker.links_per_leg == [3] * 6
    morph.publish([3] * 6)
    walk(cmd, 0.3, until=lambda: gc.state == "walking")
    assert gc.state == "walking" and np.allclose(gc.walker.command, [0.05, 0.0, 0.0]) and gc.seized == ()
    assert not gc.errors and g.spin_error is None


def test_follows_morphology_without_restart(setup):
    g, gc, w, cmd, morph = setup
    walk(cmd, 0.4)
    morph.publish([3, 0, 3, 3, 0, 3])  # scenario 1: RM, LM removed
    t0 = time.monotonic()

    def twelve():
        return [p for _, m in w.since("joint_commands", t0) for p in [np.array(m.points[0].positions)]
                if len(p) == 12]

    walk(cmd, 1.5, until=lambda: len(twelve()) > 30)
    assert wait_for(lambda: len(w.last("joint_commands").joint_names) == 12, 3.0)
    names = w.last("joint_commands").joint_names
    assert not any(n.endswith("_LM") or n.endswith("_RM") for n in names)
    assert gc.walker.walking_legs == ["LF", "LR", "RF", "RR"] and gc.state == "walking"
    offsets, duty = remaining_leg_offsets(["LF", "LR", "RF", "RR"])
    assert np.allclose(gc.walker.gait.offsets, offsets) and duty == 0.75
    # keeps walking on the remaining legs
    assert np.ptp(np.array(twelve()[-30:]), axis=0).max() > 0.03
    # too few legs: holds the stance and publishes only the remaining joints
    morph.publish([3, 0, 0, 3, 0, 1])
    assert wait_for(lambda: len(w.last("joint_commands").joint_names) == 6, 3.0)
    assert not gc.walker.can_walk


def test_bad_input_is_rejected_and_node_keeps_running(setup):
    g, gc, w, cmd, morph = setup
    cmd.publish(twist(math.nan))
    cmd.publish(twist(0.0, wz=math.inf))
    bad = UInt8MultiArray(data=[3, 3, 3, 3, 3])
    morph.morph.publish(bad)
    morph.morph.publish(UInt8MultiArray())
    m = UInt8MultiArray(data=[3, 3, 3, 3, 3, 3])
    m.layout.dim = [MultiArrayDimension(label="a,b,c,d,e,f", size=6, stride=6)]
    morph.morph.publish(m)
    assert wait_for(lambda: gc.rejected.get("cmd_vel", 0) >= 2, 5.0)
    assert wait_for(lambda: gc.rejected.get("morphology", 0) >= 3, 5.0), gc.rejected
    assert "cmd_vel.linear[0] = nan" in gc.last_rejection or "morphology" in gc.last_rejection
    # huge command: clamped (logged) and still walkable
    cmd.publish(twist(5.0))
    assert wait_for(lambda: gc.rejected.get("cmd_vel (clamped)", 0) >= 1, 5.0)
    assert np.hypot(*gc.walker.command[:2]) <= 0.1 + 1e-9
    # parameters: out of range, unknown choice, unreachable stance -> rejected; good ones accepted
    for name, value in (("control_rate", 0.0), ("gait", "gallop"), ("cmd_vel_timeout", -1.0)):
        res = gc.set_parameters([Parameter(name, value=value)])[0]
        assert not res.successful and name in res.reason
    res = gc.set_parameters([Parameter("body_height", value=0.2), Parameter("stance_radius", value=0.2)])[0]
    assert not res.successful and "unreachable" in res.reason
    assert gc.p["body_height"] == 0.12
    res = gc.set_parameters([Parameter("control_rate", value=25.0), Parameter("gait", value="ripple")])[0]
    assert res.successful and gc.walker.settings["kind"] == "ripple"
    n = w.count("joint_commands")
    assert wait_for(lambda: w.count("joint_commands") > n + 3, 5.0)
    assert g.spin_error is None


def test_recovery_replans_reports_on_diagnostics_and_stops_when_the_imu_goes_silent():
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import Imu

    g = Graph()
    try:
        gc = g.add(GaitController, {"recovery": True, "heading_imu_timeout": 0.3,
                                     "morphology_publishers_allowed": "watcher"})
        w = g.add(Watcher)
        w.watch(JointTrajectory, "joint_commands")
        w.watch(DiagnosticArray, "/diagnostics")
        cmd = w.create_publisher(Twist, "cmd_vel", 10)
        imu = w.create_publisher(Imu, "imu/data", 10)
        morph = Monitor(w)
        g.start()
        morph.publish([3, 0, 3, 3, 0, 3])      # damage 1
        # the plan is made off the executor (the stance is held meanwhile): walk until it is in, however long
        # this machine takes (one failure here after 2.5 s, state 'stance', on a busy machine)
        end = time.monotonic() + 2.5
        while time.monotonic() < end or (gc.state != "walking" and time.monotonic() < end + 60.0):
            cmd.publish(twist(0.05))
            imu.publish(Imu())                                      # gyro z = 0: a live IMU
            time.sleep(0.05)
        assert gc.state == "walking" and gc.walker.status()["gait"].startswith("crawl")
        bad = Imu()
        bad.angular_velocity.z = math.nan                          # rejected with a line naming the field
        imu.publish(bad)
        assert wait_for(lambda: gc.rejected.get("imu/data", 0) >= 1, 3.0)
        assert "imu/data.angular_velocity" in gc.last_rejection

        def diag_values():
            m = w.last("/diagnostics")
            return {} if m is None else {kv.key: kv.value for s in m.status for kv in s.values}
        assert wait_for(lambda: diag_values().get("active_gait", "").startswith("crawl"), 3.0)
        assert float(diag_values()["stability_margin"]) >= 0.01
        # the IMU stops, cmd_vel keeps coming: the controller holds the stance
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            cmd.publish(twist(0.05))
            time.sleep(0.05)
        assert gc.state == "imu_stale"
        a = np.array(w.last("joint_commands").points[0].positions)
        time.sleep(0.3)
        b = np.array(w.last("joint_commands").points[0].positions)
        assert np.allclose(a, b)                                    # standing: targets no longer move
    finally:
        g.close()


def test_recovery_plans_off_the_executor_and_switches_when_the_plan_is_ready(monkeypatch):
    """The real planner behind a gate: while it is blocked the node keeps publishing joint_commands (the
    interim stance, diagnostics say ``planning``); once the gate opens the crawl comes."""
    import threading

    from sensor_msgs.msg import Imu

    from jethexa_dynamics.control.replan import GaitPlanner

    gate = threading.Event()
    real = GaitPlanner.plan

    def gated(self, links_per_leg, command=(0.05, 0.0, 0.0)):
        if list(links_per_leg) != [3] * 6:
            assert gate.wait(60.0), "test gate never opened"     # a guard against a hang only
        return real(self, links_per_leg, command)

    monkeypatch.setattr(GaitPlanner, "plan", gated)
    g = Graph()
    try:
        gc = g.add(GaitController, {"recovery": True, "morphology_publishers_allowed": "watcher"})
        w = g.add(Watcher)
        w.watch(JointTrajectory, "joint_commands")
        cmd = w.create_publisher(Twist, "cmd_vel", 10)
        imu = w.create_publisher(Imu, "imu/data", 10)
        morph = Monitor(w)
        g.start()

        def drive(seconds, until=lambda: False):
            """cmd_vel and a live IMU for ``seconds`` s or until ``until()`` (a guard, not a time bound)."""
            end = time.monotonic() + seconds
            while not until() and time.monotonic() < end:
                cmd.publish(twist(0.05))
                imu.publish(Imu())
                time.sleep(0.05)

        drive(10.0, lambda: gc.state == "walking")
        assert gc.state == "walking"
        morph.publish([3, 0, 3, 3, 0, 3])          # damage 1, its plan blocked
        assert wait_for(lambda: gc.walker.planning, 10.0)
        n = w.count("joint_commands")
        drive(60.0, lambda: w.count("joint_commands") > n + 10)       # the executor keeps ticking ...
        assert w.count("joint_commands") > n + 10
        assert gc.walker.planning and gc.walker.status()["gait"] == "planning"   # ... while the plan is blocked
        names = w.last("joint_commands").joint_names
        assert not any(j.endswith(("_LM", "_RM")) for j in names) and len(names) == 12
        gate.set()
        drive(30.0, lambda: not gc.walker.planning and gc.state == "walking")
        assert gc.walker.status()["gait"] == "crawl(RR,RF,LR,LF)" and gc.state == "walking"
        assert g.spin_error is None and not gc.errors
    finally:
        gate.set()
        g.close()


@pytest.mark.parametrize("links", [[3, 3, 3, 1, 3, 3], [3, 3, 3, 3, 0, 1], [1, 3, 3, 1, 3, 3]],
                         ids=["RF:1", "RM:0 RR:1", "LF:1 RF:1"])
def test_a_morphology_without_strong_evidence_holds_every_foot_down_until_corrected(setup, links):
    """Issue 21: a false alarm must not fold a leg that still carries the body. Without evidence, or on weak
    evidence (a stall, a joint left out of joint_states), the gait keeps every foot of the accepted morphology
    down and stands still (state 'unconfirmed', said on /diagnostics); strong evidence for the same morphology
    lets it follow; a corrected morphology lets it walk again on all six legs."""
    g, gc, w, cmd, morph = setup
    walk(cmd, 0.5, until=lambda: gc.state == "walking")
    assert gc.state == "walking"
    for kind in (None, "stall", "joint_states"):
        morph.publish(links, kind)
        why = "no evidence" if kind is None else "(%s)" % kind
        walk(cmd, 0.3, until=lambda: gc.state == "unconfirmed" and why in gc.gate.held)
        assert gc.state == "unconfirmed" and gc.walker.walking_legs == LEGS, (kind, gc.state)
        assert gc.gate.requested == links and gc.gate.accepted == [3] * 6 and why in gc.gate.held
    t1 = time.monotonic()
    walk(cmd, 0.5, until=lambda: len(positions_since(w, t1 + 0.2)) > 10)
    still = np.array(positions_since(w, t1 + 0.2))
    assert still.shape[1] == 18 and np.allclose(still, gc.walker.stance)      # every foot down, not moving
    # corrected: walks again on all six legs, without a restart
    morph.publish([3] * 6, None)
    walk(cmd, 0.5, until=lambda: gc.state == "walking")
    assert gc.state == "walking" and not gc.gate.held and gc.walker.walking_legs == LEGS
    # the same morphology on strong evidence is followed
    morph.publish(links, "model")
    walk(cmd, 0.5, until=lambda: gc.walker.links_per_leg == links)
    assert gc.walker.links_per_leg == links and not gc.gate.held
    assert gc.gate.holds >= 3 and not gc.errors and g.spin_error is None   # (+1 if a morphology beat its evidence)


def _stamp_sec(stamp):
    return stamp.sec + 1e-9 * stamp.nanosec


def test_a_probe_request_stops_the_walk_moves_the_leg_on_its_schedule_then_walks_on(setup):
    """Issue 23 point 1: a request on damage/probe (as the damage monitor sends it) for LM, whose morphology lost
    links: the walk stops at once (state probe, cmd_vel kept but not followed), LM goes to the request's stance,
    then its coxa and femur follow ``LinkProbe.targets`` on the request's ROS-clock schedule (one tick ahead: each
    command's stamp plus its move time), within the joint limits; at its end LM back to its stance and the walk
    goes on. A malformed, stale, overlapping or foreign-leg request is rejected in one line; nothing breaks."""
    from jethexa_dynamics.control.walking import STANCE_MOVE_TIME
    from jethexa_dynamics.damage.probe import LinkProbe, ProbeSpec
    from jethexa_dynamics.damage.probe_request import NAME, ProbeRequest
    from jethexa_dynamics.nodes._common import status

    g, gc, w, cmd, morph = setup
    probe_pub = w.create_publisher(DiagnosticStatus, "damage/probe", LATCHED_QOS)
    morph.publish([3, 1, 3, 3, 3, 3], kind="model")
    assert wait_for(lambda: "LM" not in gc.walker.walking_legs, 10.0)
    walk(cmd, 0.3, until=lambda: gc.state == "walking")
    assert gc.state == "walking"
    stance = (0.0, 0.04, -0.06)          # the healthy stance (WalkingGait), within the joint limits
    spec = ProbeSpec()
    req = ProbeRequest("probe", 7, "LM", gc.now_sec() + 0.4, spec, stance)
    probe_pub.publish(status(NAME, "probe LM", 0, req.to_values()))
    t_sent = time.monotonic()
    # cmd_vel keeps coming all through the probe: held, not followed
    walk(cmd, 0.2, until=lambda: gc.probes_run == 1, guard=30.0)
    assert gc.probes_run == 1 and gc.probe is None
    lm = ["coxa_joint_LM", "femur_joint_LM", "tibia_joint_LM"]
    link = LinkProbe(leg="LM", spec=spec)
    during, checked = [], 0
    for _, m in w.since("joint_commands", t_sent):
        if lm[0] not in m.joint_names:
            continue
        q = np.array([m.points[0].positions[m.joint_names.index(n)] for n in lm])
        move = m.points[0].time_from_start.sec + 1e-9 * m.points[0].time_from_start.nanosec
        tau = _stamp_sec(m.header.stamp) - req.t_start
        during.append(q)
        if min(abs(tau + 0.02), abs(tau - spec.duration)) < 0.005:
            continue                          # the clock read just before the stamp: either side of a boundary
        if 0.0 < tau + 0.02 and tau < spec.duration:
            assert abs(move - 0.02) < 1e-6, (tau, move)
            assert np.allclose(q, link.targets(stance, tau + move), atol=0.02), (tau, q)
            checked += 1
        else:                                 # standing before, or the leg back after
            assert np.allclose(q, stance, atol=1e-9) and move == pytest.approx(STANCE_MOVE_TIME), (tau, q, move)
    assert checked >= 0.5 * spec.duration / 0.02, checked          # most ticks of the probe checked
    swing = np.ptp(np.array(during), axis=0)
    assert swing[0] > 0.2 and swing[1] > 0.3 and swing[2] < 1e-9       # coxa and femur moved, the tibia not
    walk(cmd, 0.1, until=lambda: gc.state == "walking", guard=10.0)       # the leg's way back, then the walk
    assert gc.state == "walking" and np.hypot(*gc.walker.command[:2]) > 0.0
    # a stale request, a malformed one, one over the joint rates: rejected, one line each, nothing moves
    before = gc.rejected.get("damage/probe", 0)
    old = ProbeRequest("probe", 8, "LM", gc.now_sec() - 5.0, spec, stance)
    probe_pub.publish(status(NAME, "probe LM", 0, old.to_values()))
    bad = dict(ProbeRequest("probe", 9, "LM", gc.now_sec() + 0.5, spec, stance).to_values())
    bad["leg"] = "XX"
    probe_pub.publish(status(NAME, "probe", 0, list(bad.items())))
    fast = dict(ProbeRequest("probe", 10, "LM", gc.now_sec() + 0.5, spec, stance).to_values())
    fast.update(coxa_hz="9", coxa_amp="0.5")
    probe_pub.publish(status(NAME, "probe", 0, list(fast.items())))
    assert wait_for(lambda: gc.rejected.get("damage/probe", 0) >= before + 3, 5.0), gc.rejected
    assert "stale" in gc.last_rejection or "coxa_amp" in gc.last_rejection or "leg" in gc.last_rejection
    assert gc.probe is None and gc.probes_run == 1
    # a request, then another while it runs (rejected), then its cancel: the leg back to its stance, walking on
    first = ProbeRequest("probe", 11, "LM", gc.now_sec() + 0.3, spec, stance)
    probe_pub.publish(status(NAME, "probe LM", 0, first.to_values()))
    assert wait_for(lambda: gc.probe is not None, 5.0)
    n = gc.rejected.get("damage/probe", 0)
    probe_pub.publish(status(NAME, "probe RR", 0, ProbeRequest("probe", 12, "RR", gc.now_sec() + 0.3, spec,
                                                               stance).to_values()))
    assert wait_for(lambda: gc.rejected.get("damage/probe", 0) == n + 1, 5.0)
    assert "under way" in gc.last_rejection
    probe_pub.publish(status(NAME, "cancel", 0, ProbeRequest("cancel", 11, "LM").to_values()))
    walk(cmd, 0.2, until=lambda: gc.probe is None and gc.state == "walking", guard=10.0)
    assert gc.probe is None and gc.probes_run == 2 and gc.state == "walking"
    assert g.spin_error is None and gc.errors == 0


def test_a_probe_request_from_a_node_that_is_not_the_morphology_authority_moves_nothing():
    """damage/probe moves a leg: like the morphology, only the morphology authority's requests are acted on; an
    intruder's valid request is rejected (counted under its sender, logged once), the gait never enters probe."""
    from jethexa_dynamics.damage.probe import ProbeSpec
    from jethexa_dynamics.damage.probe_request import NAME, ProbeRequest
    from jethexa_dynamics.nodes._common import status

    g = Graph()
    try:
        gc = g.add(GaitController)
        intruder = g.add(Watcher, name="intruder")
        pub = intruder.create_publisher(DiagnosticStatus, "damage/probe", LATCHED_QOS)
        g.start()
        assert wait_for(lambda: gc.published > 3, 10.0)
        req = ProbeRequest("probe", 1, "LM", gc.now_sec() + 0.3, ProbeSpec(), (0.0, 0.04, -0.06))
        pub.publish(status(NAME, "probe LM", 0, req.to_values()))
        assert wait_for(lambda: any(k.startswith("damage/probe from") for k in gc.rejected), 10.0), gc.rejected
        assert gc.probe is None and gc.probes_run == 0 and gc.state != "probe"
        assert [k for k in gc.rejected if k.startswith("damage/probe")] == ["damage/probe from /intruder"]
        assert g.spin_error is None and gc.errors == 0
    finally:
        g.close()


def test_a_bad_quaternion_is_rejected_before_the_message_is_decoded(monkeypatch):
    """The heading hold's inputs (recovery on): an imu/data or predicted/odom whose quaternion is not a finite unit
    one is rejected from its serialized bytes, with the line the decoded check gives, and never decoded (the
    oracle: the node's decoders, counted); a valid one is decoded and taken. An Imu without orientation
    (covariance[0] = -1, imu/data_raw's layout) is not checked for one and is taken."""
    from nav_msgs.msg import Odometry
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Imu

    from jethexa_dynamics.nodes import _common

    decoded = []
    real = _common.decoder

    def counting(msg_type, topic=""):
        fn = real(msg_type, topic)

        def decode(raw):
            decoded.append(topic)
            return fn(raw)
        return decode
    monkeypatch.setattr(_common, "decoder", counting)
    g = Graph()
    try:
        gc = g.add(GaitController, {"recovery": True})
        subs = {s.topic_name.lstrip("/"): s.callback for s in gc.subscriptions}
        stamp = gc.get_clock().now().to_msg()

        def imu(q_xyzw, cov0=0.0004, gyro_z=0.0):
            m = Imu()
            m.header.stamp, m.header.frame_id = stamp, "imu_link"
            m.orientation.x, m.orientation.y, m.orientation.z, m.orientation.w = q_xyzw
            m.orientation_covariance[0] = cov0
            m.angular_velocity.z = gyro_z
            return serialize_message(m)

        def odom(q_xyzw):
            m = Odometry()
            m.header.stamp, m.header.frame_id, m.child_frame_id = stamp, "odom", "base_link"
            o = m.pose.pose.orientation
            o.x, o.y, o.z, o.w = q_xyzw
            return serialize_message(m)

        for topic, raw, field in (("imu/data", imu((0.0, 0.0, 0.0, 0.6)), "imu/data.orientation"),
                                  ("imu/data", imu((math.nan, 0.0, 0.0, 1.0)), "imu/data.orientation"),
                                  ("predicted/odom", odom((0.0, 0.0, 0.0, 0.0)),
                                   "predicted/odom.pose.pose.orientation")):
            before = gc.rejected.get(topic, 0)
            subs[topic](raw)
            assert gc.rejected[topic] == before + 1 and gc.last_rejection.startswith("%s: %s" % (topic, field)), \
                gc.last_rejection
        assert decoded == []
        n = sum(gc.rejected.values())
        subs["imu/data"](imu((0.0, 0.0, 0.0, 0.0), cov0=-1.0, gyro_z=0.25))
        assert gc._gyro == 0.25
        subs["imu/data"](imu((0.0, 0.0, 0.0, 1.0), gyro_z=0.5))
        subs["predicted/odom"](odom((0.0, 0.0, 0.0, 1.0)))
        assert sum(gc.rejected.values()) == n and gc._gyro == 0.5
        assert decoded == ["imu/data", "imu/data", "predicted/odom"]
    finally:
        g.close()
