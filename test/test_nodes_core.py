"""Pure-Python core of the nodes (nodes.params, nodes.messages, damage.detection, Morphology.parse): parameter
specs, message validation, morphology specs and wire format, damage detection."""
import math

import numpy as np
import pytest

from jethexa_dynamics.nodes import messages as validate, params as node_params
from jethexa_dynamics.damage.detection import (DamageDetector, DetectorConfig, ServoStatus, ServoStatusTracker,
                                               decode_servo_status, encode_servo_status, joint_leg_link)
from jethexa_dynamics.model import LeggedRobot, Morphology, format_morphology
from jethexa_dynamics.model.wire import morphology_from_wire
from jethexa_dynamics.nodes.param_spec import ParamError, ParamSpec, load_node_yaml

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
JOINTS = ["%s_joint_%s" % (k, leg) for leg in LEGS for k in ("coxa", "femur", "tibia")]


# ---------------------------------------------------------------------------------------------- params
def test_param_spec_rejects_out_of_range_with_a_clear_message():
    s = ParamSpec("rate", "double", 50.0, "rate", lo=1.0, hi=100.0, unit="Hz")
    assert s.validate(20) == 20.0
    with pytest.raises(ParamError, match=r"'rate' = 500.*above 100.*\[1, 100\] Hz"):
        s.validate(500.0)
    with pytest.raises(ParamError, match="not finite"):
        s.validate(float("nan"))
    with pytest.raises(ParamError, match="not a number"):
        s.validate("fast")


def test_param_spec_arrays_strings_and_bad_defaults():
    m = node_params.DAMAGE_MONITOR["morphology"]
    assert m.validate([3, 3, 0, 0, 3, 3]) == [3, 3, 0, 0, 3, 3]
    with pytest.raises(ParamError, match="wrong length 5"):
        m.validate([3, 3, 3, 3, 3])
    with pytest.raises(ParamError, match=r"above 3"):
        m.validate([3, 3, 7, 3, 3, 3])
    g = node_params.GAIT_CONTROLLER["gait"]
    with pytest.raises(ParamError, match="unknown value.*tripod"):
        g.validate("gallop")
    with pytest.raises(ValueError):
        ParamSpec("x", "int", 5, "x", lo=0, hi=3)  # default outside its own range


@pytest.mark.parametrize("name", sorted(node_params.ALL))
def test_config_yaml_matches_the_declared_parameters(name):
    """config/<node>.yaml names only declared parameters, with valid values equal to the spec defaults."""
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "config", name + ".yaml")
    values = load_node_yaml(path, name)
    ps = node_params.ALL[name]
    assert ps.validate(values) == {k: ps[k].default for k in values}
    assert set(values) == set(ps.specs)


# ---------------------------------------------------------------------------------------------- validate
def test_joint_state_validation_names_fields():
    idx, pos, vel = validate.joint_state(JOINTS[:2], [0.1, 0.2], [], [], JOINTS)
    assert idx == [0, 1] and vel is None and pos.tolist() == [0.1, 0.2]
    with pytest.raises(validate.InvalidMessage, match=r"joint_states.position\[1\] = nan"):
        validate.joint_state(JOINTS[:2], [0.1, math.nan], [], [], JOINTS)
    with pytest.raises(validate.InvalidMessage, match="unknown joint 'knee'"):
        validate.joint_state(["knee"], [0.1], [], [], JOINTS)
    with pytest.raises(validate.InvalidMessage, match="has 1 entries, expected 2"):
        validate.joint_state(JOINTS[:2], [0.1], [], [], JOINTS)
    with pytest.raises(validate.InvalidMessage, match="empty"):
        validate.joint_state([], [], [], [], JOINTS)
    with pytest.raises(validate.InvalidMessage, match="listed twice"):
        validate.joint_state([JOINTS[0], JOINTS[0]], [0, 0], [], [], JOINTS)


def test_trajectory_validation():
    lo, hi = -np.ones(18), np.ones(18)
    idx, pos, t = validate.trajectory(JOINTS, [(np.zeros(18), [], 0.02)], JOINTS, lo, hi)
    assert len(idx) == 18 and t == 0.02
    with pytest.raises(validate.InvalidMessage, match="points: empty"):
        validate.trajectory(JOINTS, [], JOINTS)
    with pytest.raises(validate.InvalidMessage, match=r"coxa_joint_LF\) = 2.0000 rad: must be in \[-1"):
        validate.trajectory(JOINTS, [(np.r_[2.0, np.zeros(17)], [], 0.0)], JOINTS, lo, hi)
    with pytest.raises(validate.InvalidMessage, match="time_from_start"):
        validate.trajectory(JOINTS, [(np.zeros(18), [], -1.0)], JOINTS)


def test_twist_quaternion_imu():
    cmd, clamped = validate.twist([1.0, 0, 0], [0, 0, 5.0], 0.1, 0.5)
    assert clamped and np.allclose(cmd, [0.1, 0, 0.5])
    with pytest.raises(validate.InvalidMessage, match=r"cmd_vel.linear\[0\] = inf"):
        validate.twist([math.inf, 0, 0], [0, 0, 0], 0.1, 0.5)
    with pytest.raises(validate.InvalidMessage, match="unit quaternion"):
        validate.quaternion("q", [0, 0, 0, 0])
    with pytest.raises(validate.InvalidMessage, match="has no orientation"):
        validate.imu_orientation([0, 0, 0, 1], [-1.0] + [0.0] * 8)


# ---------------------------------------------------------------------------------------------- damage
def parse_damage_spec(spec, legs):
    robot = LeggedRobot.jethexa()
    assert list(robot.leg_names) == legs
    return list(Morphology.parse(robot, spec).links_per_leg)


def test_damage_spec_parsing():
    assert parse_damage_spec("", LEGS) == [3] * 6
    assert parse_damage_spec("scenario1", LEGS) == [3, 0, 3, 3, 0, 3]
    assert parse_damage_spec("scenario2", LEGS) == [3, 1, 3, 3, 3, 1]
    assert parse_damage_spec("RM, LM", LEGS) == [3, 0, 3, 3, 0, 3]
    assert parse_damage_spec("LF:2", LEGS) == [2, 3, 3, 3, 3, 3]
    assert parse_damage_spec("3,3,0,0,3,3", LEGS) == [3, 3, 0, 0, 3, 3]
    for bad in ("XX", "LF:4", "LF:x"):
        with pytest.raises(ValueError, match="damage spec"):
            parse_damage_spec(bad, LEGS)
    assert format_morphology([3, 0, 3, 3, 0, 3], LEGS) == "LM:0 RM:0"


def test_joint_leg_link_and_wire_format():
    assert joint_leg_link(JOINTS, LEGS)[4] == (1, 1)
    assert morphology_from_wire([3, 0, 3, 3, 3, 3], "LF,LM,LR,RF,RM,RR", LEGS) == [3, 0, 3, 3, 3, 3]
    assert morphology_from_wire([0, 3, 3, 3, 3, 3], "LM,LF,LR,RF,RM,RR", LEGS) == [3, 0, 3, 3, 3, 3]
    with pytest.raises(ValueError, match="has 5 entries"):
        morphology_from_wire([3] * 5, "", LEGS)
    with pytest.raises(ValueError, match=r"data\[2\] = 9"):
        morphology_from_wire([3, 3, 9, 3, 3, 3], "", LEGS)
    with pytest.raises(ValueError, match="label"):
        morphology_from_wire([3] * 6, "a,b,c,d,e,f", LEGS)


def test_servo_status_roundtrip():
    h = ServoStatus("femur_joint_LM", 9, reads=10, misses=3, consecutive_misses=3, last_reply_age=0.7,
                    led_alarm=7, commanded=0.1, measured=0.3, measured_age=0.05, voltage_mv=11800.0,
                    temperature_c=86.0, temp_limit_c=85.0, vin_min_mv=4500.0, vin_max_mv=14500.0)
    level, msg, values = encode_servo_status(h)
    assert level == 2 and msg == "no reply, over-temperature"
    back = decode_servo_status(dict(values))
    assert back == h
    with pytest.raises(ValueError, match="'reads'"):
        decode_servo_status(dict(values, reads="many"))


def _healthy(now_age=0.01):
    return [ServoStatus(j, i + 1, reads=5, last_reply_age=now_age) for i, j in enumerate(JOINTS)]


def test_detector_no_reply_femur_leaves_one_link():
    det = DamageDetector(JOINTS, LEGS, DetectorConfig(no_reply_timeout=0.3, min_missed_reads=2))
    assert det.update(0.0, _healthy()) == [] and det.detected() == [3] * 6
    hs = _healthy()
    hs[4].consecutive_misses, hs[4].last_reply_age = 1, 0.5  # femur_joint_LM: one miss only
    assert det.update(0.5, hs) == []
    hs[4].consecutive_misses = 2
    assert det.update(0.55, hs) == []                        # not confirmed by a long-timeout read yet
    hs[4].silent_confirmations = 1
    new = det.update(0.6, hs)
    assert [f.joint for f in new] == ["femur_joint_LM"] and "no reply" in new[0].reason
    assert det.detected() == [3, 1, 3, 3, 3, 3]
    # latched: recovery does not clear it, reset does
    det.update(0.7, _healthy())
    assert det.detected() == [3, 1, 3, 3, 3, 3]
    det.reset()
    assert det.detected() == [3] * 6
    # manual override per leg
    assert det.morphology([-1, -1, -1, -1, 0, -1]) == [3, 3, 3, 3, 0, 3]


def test_detector_stall_is_a_persistent_position_error_under_load():
    """A stall is a seized joint (``stalled``): reported, its links kept (issue 23: a seized servo is no lost
    link); it ends when the joint follows again or goes limp."""
    det = DamageDetector(JOINTS, LEGS, DetectorConfig(position_error_threshold=0.5, position_error_hold=0.3,
                                                      latch=False))
    hs = _healthy()
    hs[0].commanded, hs[0].measured, hs[0].measured_age = 0.0, 0.7, 0.05
    assert det.update(0.0, hs) == []
    assert det.update(0.2, hs) == [] and det.stalled == {}
    assert det.update(0.3, hs) == []
    assert list(det.stalled) == ["coxa_joint_LF"] and det.stalled["coxa_joint_LF"].startswith("stall")
    assert det.detected() == [3] * 6
    hs[0].measured = 0.1
    det.update(0.6, hs)
    assert det.stalled == {}
    # unloaded (the servo's supply protection, an e-stop): a limp joint far from its command is no stall
    hs[8].commanded, hs[8].measured, hs[8].measured_age, hs[8].torque = 0.0, 0.9, 0.05, False
    assert det.update(1.0, hs) == [] and det.update(2.0, hs) == [] and det.stalled == {}
    hs[8].torque = True
    det.update(2.1, hs)
    det.update(2.5, hs)
    assert list(det.stalled) == ["tibia_joint_LR"] and det.detected() == [3] * 6
    # readings outside the servo's own limits are reported, not a lost link
    hs[3].temperature_c, hs[3].temp_limit_c = 90.0, 85.0
    hs[3].voltage_mv, hs[3].vin_min_mv, hs[3].vin_max_mv = 4000.0, 4500.0, 14500.0
    assert encode_servo_status(hs[3])[:2] == (1, "over-temperature, under-voltage")
    assert det.update(3.0, hs) == [] and det.update(9.0, hs) == []


def test_health_tracker_ages_and_a_silent_bus():
    t = ServoStatusTracker([("coxa_joint_LF", 5), ("femur_joint_LF", 3)])
    t.record_reply("coxa_joint_LF", 1.0, measured=0.2)
    t.record_miss("coxa_joint_LF", 1.1)
    t.record_reply("femur_joint_LF", 1.15)
    t.record_miss("coxa_joint_LF", 1.2)
    h = t.snapshot(1.5)[0]
    assert (h.reads, h.misses, h.consecutive_misses) == (3, 2, 2)
    assert h.last_reply_age == pytest.approx(0.5) and h.measured == 0.2
    # the whole bus goes quiet: misses are counted but do not accumulate into a lost servo
    for k in range(10):
        t.record_miss("coxa_joint_LF", 2.0 + k)
        t.record_miss("femur_joint_LF", 2.0 + k)
    c, f = t.snapshot(12.0)
    assert c.consecutive_misses == 2 and f.consecutive_misses == 1 and f.misses == 10
    assert t.bus_silent_for(12.0) == pytest.approx(10.85)


def test_late_replies_are_not_silence_only_a_confirmed_timeout_is():
    """What CPU starvation does to the reads (late replies, a starved reading thread) never adds up to a lost
    servo; a servo that stays silent through a long confirmation read does, within a second."""
    from jethexa_dynamics.damage.detection import read_deadline

    joints = list(zip(JOINTS, range(1, 19)))
    det = DamageDetector(JOINTS, LEGS)                     # the monitor's defaults: 2 misses, 0.4 s, 1 confirmation
    t = ServoStatusTracker(joints)
    late = "tibia_joint_RF"

    def cycle(now):
        """One 20 ms read cycle: RF tibia misses its read, every other servo answers; the due confirmation."""
        for j, _ in joints:
            if j == late:
                t.record_miss(j, now)
            else:
                t.record_reply(j, now)
        due = t.pending_confirmation()
        assert due in (None, late)
        return due

    now = 0.0
    for j, _ in joints:
        t.record_reply(j, now)
    # 5 s of a loaded machine: RF tibia misses every regular read (its replies come after reply_timeout)
    # while the others answer; its confirmation reads get the late reply, or are themselves held up
    for k in range(250):
        now += 0.02
        due = cycle(now)
        if due is not None:
            if k % 3 == 0:       # the reading thread was descheduled: 0.3 s for a 0.1 s read -> proves nothing
                t.record_confirmation(due, now, 0.3, 0.1, timed_out=True)
            else:                # a reply 60 ms late is still a reply
                t.record_confirmation(due, now, 0.06, 0.1, timed_out=False, measured=0.1)
        assert det.update(now, t.snapshot(now)) == [], t.health[late]
    assert t.health[late].misses > 200 and t.health[late].silent_confirmations == 0
    assert det.detected() == [3] * 6
    assert read_deadline(0.1) < 0.3                        # the starved confirmation above proved nothing
    # now RF tibia goes really silent: a regular miss, then a confirmation that times out within its deadline
    t0 = now
    while not det.faults:
        now += 0.02
        if cycle(now) is not None:
            now += 0.1
            t.record_confirmation(late, now, 0.101, 0.1, timed_out=True, witness=True)
        det.update(now, t.snapshot(now))
        assert now - t0 < 1.0
    assert list(det.faults) == [late] and det.detected() == [3, 3, 3, 2, 3, 3]
    assert "1 confirmed" in det.faults[late].reason


def test_a_silent_confirmation_counts_only_with_a_prompt_witness():
    """Issue 21: with the machine starved, the emulated bus let a healthy femur time out through its whole
    confirmation read (RR:1 on a healthy robot). The confirmation is evidence only if another servo, read right
    after it, answers within its normal timeout; the witness is the servo that replied last."""
    joints = [("coxa_joint_RR", 16), ("femur_joint_RR", 17), ("tibia_joint_RR", 18)]
    t = ServoStatusTracker(joints)
    det = DamageDetector(JOINTS, LEGS)
    t.record_reply("coxa_joint_RR", 0.0)
    t.record_reply("tibia_joint_RR", 0.01)
    assert t.witness_for("femur_joint_RR") == "tibia_joint_RR" and t.witness_for("tibia_joint_RR") == "coxa_joint_RR"
    now = 0.0
    for k in range(40):                                    # 0.8 s: femur misses, the others answer, late witness
        now += 0.02
        t.record_miss("femur_joint_RR", now)
        t.record_reply("coxa_joint_RR", now)
        if t.pending_confirmation():
            t.record_confirmation("femur_joint_RR", now, 0.1, 0.1, timed_out=True, witness=False)
        assert det.update(now, t.snapshot(now)) == []
    assert t.unwitnessed > 5 and t.health["femur_joint_RR"].silent_confirmations == 0
    t.record_miss("femur_joint_RR", now + 0.02)
    t.record_reply("coxa_joint_RR", now + 0.02)
    t.record_confirmation("femur_joint_RR", now + 0.13, 0.1, 0.1, timed_out=True, witness=True)
    assert [f.joint for f in det.update(now + 0.13, t.snapshot(now + 0.13))] == ["femur_joint_RR"]


def test_confirmations_only_when_the_bus_answers():
    t = ServoStatusTracker([("coxa_joint_LF", 5), ("femur_joint_LF", 3)])
    for k in range(5):                                     # a dead bus: first misses only, nothing to confirm twice
        t.record_miss("coxa_joint_LF", k)
        t.record_miss("femur_joint_LF", k)
        while t.pending_confirmation() is not None:
            t.record_confirmation(t.pending_confirmation(), k, 0.1, 0.1, timed_out=True, witness=True)
    assert [h.consecutive_misses for h in t.snapshot(5.0)] == [1, 1]
    assert t.pending_confirmation() is None
    t.record_reply("femur_joint_LF", 6.0)                  # any reply ends that servo's streak
    assert t.health["femur_joint_LF"].silent_confirmations == 0


# ---------------------------------------------------------------------------------------------- issue 14
def test_one_unit_quat_tolerance():
    from jethexa_dynamics.model.se3 import QUAT_NORM_TOL

    ok = validate.quaternion("q", (0.0, 0.0, 0.0, 1.0 + 0.9 * QUAT_NORM_TOL))
    assert np.linalg.norm(ok) == pytest.approx(1.0)
    for w in (1.0 + 1.1 * QUAT_NORM_TOL, 0.6, 1.4, 0.0):
        with pytest.raises(validate.InvalidMessage, match=r"q must be a finite unit quaternion .*with norm in \[0.999, 1.001\]"):
            validate.quaternion("q", (0.0, 0.0, 0.0, w))


def test_stamps_far_from_the_clock_are_rejected():
    now = 1.7e9
    assert validate.stamp("s", int(now) - 1, 0, now, 2.0) == pytest.approx(now - 1)
    assert validate.stamp("s", 0, 0, now, 2.0) == 0.0  # not stamped
    for sec, nsec, why in ((int(now) + 3, 0, "within 2 s"), (1, 0, "within 2 s"),
                           (int(now), 1_500_000_000, r"nanosec = 1500000000: must be in \[0, 999999999\]")):
        with pytest.raises(validate.InvalidMessage, match=why):
            validate.stamp("s", sec, nsec, now, 2.0)


def test_measured_joint_angles_within_limits_plus_margin():
    lo, hi = np.full(18, -1.0), np.full(18, 1.0)
    m = validate.JOINT_STATE_MARGIN
    validate.joint_state(JOINTS, [1.0 + 0.9 * m] * 18, [], [], JOINTS, lower=lo, upper=hi)
    with pytest.raises(validate.InvalidMessage, match=r"joint_states.position\[0\] \(coxa_joint_LF\) = 50.0000 rad"):
        validate.joint_state(JOINTS, [50.0] * 18, [], [], JOINTS, lower=lo, upper=hi)


def test_a_quaternion_is_read_from_the_serialized_message_where_rclpy_put_it():
    """``messages.raw_quaternion`` against rclpy's own serializer (the oracle): Imu, PoseStamped and Odometry with
    frame ids of every length mod 8 (the CDR padding), the quaternion and the float64 after it as they were set."""
    pytest.importorskip("rclpy")
    from geometry_msgs.msg import PoseStamped
    from nav_msgs.msg import Odometry
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import Imu

    rng = np.random.default_rng(0)
    for n in range(12):
        for msg_type in (Imu, PoseStamped, Odometry):
            m = msg_type()
            m.header.frame_id = "f" * n
            if msg_type is Imu:
                o = m.orientation
                m.orientation_covariance[0] = -1.0
            elif msg_type is PoseStamped:
                o = m.pose.orientation
                m.pose.position.z = 0.7
            else:
                m.child_frame_id = "c" * (n % 5)
                o = m.pose.pose.orientation
                m.pose.pose.position.z = 0.7
            q = rng.normal(size=4)
            o.x, o.y, o.z, o.w = map(float, q)
            raw = serialize_message(m)
            got, after = validate.raw_quaternion(raw, *validate.QUATERNION_AT[msg_type.__name__][:2])
            assert np.array_equal(got, q), (msg_type, n)
            assert after == (-1.0 if msg_type is Imu else None if msg_type is PoseStamped else 0.0)
            assert validate.raw_quaternion(raw[:20], 1, 3) is None                 # too short: the decoder's
            assert validate.raw_quaternion(b"\x00\x09" + raw[2:], 0, 0) is None    # not plain CDR: the same
