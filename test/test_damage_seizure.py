"""A seized joint (``damage.seizure``): its servo answers, the joint follows no command. Reported as such, never
a lost link, never from a healthy walk or a starved reader.

Oracle: the independent plant (``sim.streams``: the engine at 1 ms walking the gait controller's logic, servo
read noise 0.24 deg 1 sigma) for healthy joints; a seized joint is the same stream with that joint's measured
angle frozen (plus the same read noise) from the seizure on."""
import math

import numpy as np
import pytest

from jethexa_dynamics.damage.detection import DamageDetector, DetectorConfig, ServoStatus
from jethexa_dynamics.damage.evidence import evidence_from_values, evidence_to_values
from jethexa_dynamics.damage.seizure import SeizureConfig, SeizureTracker
from jethexa_dynamics.sim.streams import Segment, WalkConfig, walk_streams

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
JOINTS = ["%s_joint_%s" % (k, leg) for leg in LEGS for k in ("coxa", "femur", "tibia")]


@pytest.fixture(scope="module")
def healthy():
    """20 s of the plant: walking, turning, standing, walking sideways, a gait change (seed 3)."""
    segs = [Segment(0.0, "walk", (0.04, 0.0, 0.0)), Segment(5.0, "walk", (0.0, 0.0, 0.3)), Segment(9.0, "stand"),
            Segment(11.0, "walk", (0.02, 0.01, 0.0), gait="ripple"), Segment(15.0, "walk", (0.05, 0.0, -0.2))]
    return walk_streams(WalkConfig(duration=20.0, segments=segs, seed=3))[0]


def replay(tracker, streams, frozen=None, since=math.inf, latency=0.0, every=1):
    """Feed the plant's streams (commands at receipt, joint_states stamped at their sample time and received
    ``latency`` s later, every ``every``-th one); ``frozen`` joint's measured angle held from ``since`` s.
    Returns [(t, seized joints)] at every change."""
    rng = np.random.default_rng(0)
    held, out, k = None, [], 0
    for t, kind, p in streams:
        if kind == "cmd":
            q, move_time, idx = p
            tracker.on_command(t, [JOINTS[i] for i in idx], q, move_time)
        elif kind == "joints":
            k += 1
            if k % every:
                continue
            q = np.array(p)
            if frozen is not None and t >= since:
                j = JOINTS.index(frozen)
                held = q[j] if held is None else held
                q[j] = held + rng.normal(0.0, math.radians(0.24))
            tracker.on_joint_states(t + latency, t, JOINTS, q)
            if tracker.changed:
                tracker.changed = False
                out.append((t, sorted(tracker.seized)))
    return out


@pytest.mark.parametrize("joint", ["femur_joint_LM", "coxa_joint_RR"])
def test_a_driver_reading_a_few_servos_per_cycle_still_shows_a_seizure(healthy, joint):
    """The servo driver reads 3 of the 18 servos per 50 Hz cycle: each joint comes every 6th message (0.12 s)."""
    tr = SeizureTracker(JOINTS)
    changes = replay(tr, healthy, frozen=joint, since=2.0, every=6)
    assert changes and changes[0][1] == [joint] and changes[0][0] < 2.0 + 2.0, changes
    assert replay(SeizureTracker(JOINTS), healthy, every=6) == []


def test_a_healthy_walk_seizes_nothing(healthy):
    tr = SeizureTracker(JOINTS)
    assert replay(tr, healthy) == [] and tr.seized == {} and tr.late_messages == 0


@pytest.mark.parametrize("joint", ["coxa_joint_LF", "femur_joint_LM", "tibia_joint_RR", "femur_joint_RF"])
def test_a_frozen_joint_is_seized_within_a_second_and_nothing_else(healthy, joint):
    tr = SeizureTracker(JOINTS)
    changes = replay(tr, healthy, frozen=joint, since=2.0)
    assert changes and changes[0][1] == [joint], changes
    assert 2.0 + 0.5 * tr.config.window < changes[0][0] < 2.0 + 1.5, changes      # needs a window of evidence
    assert all(c[1] in ([joint], []) for c in changes)
    assert "follows no command" in tr.seized.get(joint, "follows no command")


def test_a_seized_joint_that_follows_again_is_cleared(healthy):
    tr = SeizureTracker(JOINTS)
    streams = [s for s in healthy if s[0] < 4.0]
    changes = replay(tr, streams, frozen="femur_joint_LM", since=1.5)
    assert changes[-1][1] == ["femur_joint_LM"]
    later = replay(tr, [s for s in healthy if 4.0 <= s[0] < 8.0])          # the joint moves again
    assert later and later[0][1] == [] and tr.seized == {}


def test_standing_still_proves_nothing(healthy):
    """While the commands hold the stance, a frozen joint is no evidence either way."""
    tr = SeizureTracker(JOINTS)
    stand = [s for s in healthy if 9.6 <= s[0] < 11.0]
    assert replay(tr, stand, frozen="femur_joint_LM", since=9.6) == []


@pytest.mark.parametrize("latency, every", [(0.3, 1), (0.0, 18)])
def test_a_starved_reader_or_publisher_proves_nothing(healthy, latency, every):
    """joint_states received 0.3 s after their stamps (a reader working through a backlog), or only every 18th
    message arriving (a starved publisher: 0.36 s apart): no seizure, however still the joint looks."""
    tr = SeizureTracker(JOINTS)
    assert replay(tr, healthy, frozen="femur_joint_LM", since=2.0, latency=latency, every=every) == []
    assert tr.late_messages > 0


@pytest.mark.parametrize("every", [10, 12, 14])
def test_sparse_readings_of_a_healthy_walk_prove_nothing(healthy, every):
    """A driver retrying a lost leg's silent servos reads the others only every 0.2-0.3 s; a swing then falls
    between two readings, and the span of the goals against the span of the readings called a healthy femur
    seized (the demo, after LM:0 RM:0; here the ripple gait's femur_joint_RM at 11.9 s with readings 0.24 s apart
    and the old 0.3 s ``max_interval``). The plant is healthy: no read phase may seize anything."""
    for phase in range(every):
        k, streams = 0, []
        for s in healthy:
            if s[1] == "joints":
                k += 1
                if k <= phase:
                    continue
            streams.append(s)
        tr = SeizureTracker(JOINTS)
        assert replay(tr, streams, every=every) == [], (every, phase)


def test_a_silent_joint_is_no_seizure(healthy):
    """A servo that does not answer is left out of joint_states (the driver publishes what it read): that is
    the detector's lost servo, never a seizure."""
    tr = SeizureTracker(JOINTS)
    for t, kind, p in healthy:
        if kind == "cmd":
            q, move_time, idx = p
            tr.on_command(t, [JOINTS[i] for i in idx], q, move_time)
        elif kind == "joints":
            keep = [i for i in range(len(JOINTS)) if JOINTS[i] != "femur_joint_LM" or t < 2.0]
            tr.on_joint_states(t, t, [JOINTS[i] for i in keep], np.asarray(p)[keep])
    assert tr.seized == {}


def test_bad_thresholds_are_refused_naming_the_field():
    with pytest.raises(ValueError, match=r"seizure window=0.01 outside the allowed range \[0.1, 10\]"):
        SeizureConfig(window=0.01)
    with pytest.raises(ValueError, match="max_motion=0.2 must be below min_travel=0.1"):
        SeizureConfig(max_motion=0.2)


def test_a_stalled_servo_is_seized_with_its_links_kept():
    """The servo driver's stall (position error under load) is a seized joint: reported, not a lost link."""
    det = DamageDetector(JOINTS, LEGS, DetectorConfig(position_error_threshold=0.5, position_error_hold=0.3))
    h = ServoStatus("femur_joint_LM", 5, reads=10, commanded=0.0, measured=0.7, measured_age=0.05,
                    last_reply_age=0.01)
    assert det.update(0.0, [h]) == [] and det.update(0.35, [h]) == []
    assert list(det.stalled) == ["femur_joint_LM"] and det.stalled["femur_joint_LM"].startswith("stall")
    assert det.detected() == [3] * 6 and det.faults == {}
    h.measured = 0.1                               # follows again
    det.update(0.5, [h])
    assert det.stalled == {}


def test_the_evidence_message_carries_the_seized_joints():
    msg, values = evidence_to_values([3] * 6, {}, LEGS, seized=["femur_joint_LM"])
    assert "seized: femur_joint_LM" in msg and ("seized", "femur_joint_LM") in values
    ev = evidence_from_values(dict(values), LEGS)
    assert ev.seized == ("femur_joint_LM",) and ev.links == (3,) * 6 and not ev.unexplained
    assert evidence_from_values({"legs": ",".join(LEGS), "morphology": "3,3,3,3,3,3"}, LEGS).seized == ()
    with pytest.raises(ValueError, match="seized"):
        evidence_from_values({"legs": ",".join(LEGS), "morphology": "3,3,3,3,3,3", "seized": "elbow_XX"}, LEGS)


def test_the_plants_ground_and_floor_are_checked_before_it_walks():
    """``WalkConfig``'s slope and friction patches: one line naming the field and the allowed range."""
    with pytest.raises(ValueError, match=r"ground_tilt=\(0.5, 0.0\): two finite angles within \+-0.349"):
        WalkConfig(ground_tilt=(0.5, 0.0))
    with pytest.raises(ValueError, match=r"mu=-0.1 outside the allowed range \[0, 10\]"):
        WalkConfig(friction=[(1.0, -0.1)])
    with pytest.raises(ValueError, match="friction patch at t=nan"):
        WalkConfig(friction=[(math.nan, 0.5)])
