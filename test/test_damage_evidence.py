"""The evidence a morphology rests on, and the gait's gate on it (pure core, issue 21)."""
import pytest

from jethexa_dynamics.damage.detection import DamageDetector, DetectorConfig, ServoStatus
from jethexa_dynamics.damage.evidence import (KINDS, STRONG, Evidence, SupportGate, evidence_from_values,
                                              evidence_to_values)

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
JOINTS = ["%s_joint_%s" % (k, leg) for leg in LEGS for k in ("coxa", "femur", "tibia")]


def ev(links, kind):
    return Evidence(tuple(links), {leg: kind for leg, n in zip(LEGS, links) if n < 3})


def test_wire_round_trip_and_bad_values_name_the_key():
    msg, values = evidence_to_values([3, 1, 3, 3, 3, 0], {"LM": "model", "RR": "servo"}, LEGS)
    assert msg == "LM:1 model; RR:0 servo"
    back = evidence_from_values(dict(values), LEGS)
    assert back.links == (3, 1, 3, 3, 3, 0) and back.kinds == {"LM": "model", "RR": "servo"}
    assert not back.unexplained
    msg, values = evidence_to_values([3] * 6, {}, LEGS, unexplained=True)
    assert msg == "healthy; motion unexplained" and evidence_from_values(dict(values), LEGS).unexplained
    # another leg order on the wire is honoured; a damaged leg without a kind is 'none'
    shuffled = {"legs": "RR,LF,LM,LR,RF,RM", "morphology": "0,3,1,3,3,3", "RR": "servo"}
    got = evidence_from_values(shuffled, LEGS)
    assert got.links == (3, 1, 3, 3, 3, 0) and got.kind("LM") == "none" and got.kind("RR") == "servo"
    for bad, key in (({"legs": ",".join(LEGS)}, "morphology"), ({"morphology": "3,3,3,3,3,3"}, "legs"),
                     ({"legs": ",".join(LEGS), "morphology": "3,3,x,3,3,3"}, "morphology"),
                     ({"legs": "LF,LM", "morphology": "3,3"}, "legs"),
                     ({"legs": ",".join(LEGS), "morphology": "3,3,3,3,3,4"}, "morphology"),
                     ({"legs": ",".join(LEGS), "morphology": "3,3,3,3,3,1", "RR": "rumour"}, "RR"),
                     ({"legs": ",".join(LEGS), "morphology": "3,3,3,3,3,3", "unexplained": "maybe"}, "unexplained")):
        with pytest.raises(ValueError, match=key):
            evidence_from_values(bad, LEGS)
    with pytest.raises(ValueError, match="kind"):
        evidence_to_values([3, 3, 3, 3, 3, 1], {"RR": "rumour"}, LEGS)
    assert STRONG < set(KINDS)


def test_gate_follows_only_strong_evidence_for_the_same_morphology():
    gate = SupportGate(LEGS)
    assert not gate.request([3, 3, 3, 1, 3, 3]) and "no evidence" in gate.held      # no evidence: held
    assert gate.accepted == [3] * 6
    assert not gate.set_evidence(ev([3, 3, 3, 1, 3, 3], "stall")) and "RF (stall)" in gate.held
    assert not gate.set_evidence(ev([3, 3, 3, 0, 3, 3], "servo"))                  # another morphology's
    assert "no evidence" in gate.held
    assert gate.set_evidence(ev([3, 3, 3, 1, 3, 3], "model")) and gate.accepted == [3, 3, 3, 1, 3, 3]
    assert gate.held == "" and gate.holds == 3
    # links that come back need nothing; a further loss needs its own evidence
    assert gate.request([3] * 6) and gate.accepted == [3] * 6
    gate.set_evidence(ev([3, 3, 3, 3, 0, 1], "servo"))
    assert gate.request([3, 3, 3, 3, 0, 1]) and gate.accepted == [3, 3, 3, 3, 0, 1]
    # two legs, one weak: nothing of it is followed
    gate.set_evidence(Evidence((1, 3, 3, 1, 0, 1), {"LF": "servo", "RF": "joint_states", "RM": "servo",
                                                      "RR": "servo"}))
    assert not gate.request([1, 3, 3, 1, 0, 1]) and "RF (joint_states)" in gate.held and "LF" not in gate.held
    assert gate.accepted == [3, 3, 3, 3, 0, 1]


def test_the_detector_names_its_evidence_per_leg():
    det = DamageDetector(JOINTS, LEGS, DetectorConfig(position_error_hold=0.0))
    silent = ServoStatus("femur_joint_RF", 11, reads=10, misses=3, consecutive_misses=3, last_reply_age=1.0,
                         silent_confirmations=1)
    stalled = ServoStatus("tibia_joint_LM", 5, reads=10, commanded=0.0, measured=1.0, measured_age=0.0)
    det.update(0.0, [silent, stalled])
    assert det.detected() == [3, 3, 3, 1, 3, 3]              # a stalled servo is seized: its links are kept
    assert det.leg_evidence() == {"RF": "servo"} and list(det.stalled) == ["tibia_joint_LM"]
