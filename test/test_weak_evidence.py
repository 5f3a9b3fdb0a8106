"""Weak evidence resolves itself: a leg said lost only because its joints left ``joint_states`` (a robot whose joints
come from another driver: no servo statuses, nothing confirms a silence) is probed -- the robot stands, the leg
moves, the gyro says whether it is there -- and confirmed (the model's count, strong) or ruled out within seconds,
instead of the robot standing on every foot for good.

Over DDS, the sim graph without servo_driver and imu (``interface:=topics``: the world publishes joint_states and
imu/data itself), recovery on, walking straight at 0.05 m/s; the oracle is the emulated world (its pose and its own
damage), sampled on its own clock: every time below is simulated. The pure parts (the detector's weak faults, the
suspect probe's verdicts) are checked on their own first."""
import numpy as np
import pytest

from jethexa_dynamics.damage.active_probe import ActiveProbe
from jethexa_dynamics.damage.detection import DamageDetector, DetectorConfig, JointPresenceTracker, ServoStatus
from jethexa_dynamics.damage.identification import DamageIdentifier
from jethexa_dynamics.damage.probe import LinkProbe

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
JOINTS = ["%s_joint_%s" % (k, leg) for leg in LEGS for k in ("coxa", "femur", "tibia")]
RM = [j for j in JOINTS if j.endswith("_RM")]


# ---------------------------------------------------------------------------------------------- pure
def test_weak_faults_are_not_the_servos_and_clear_with_a_hold_until_the_joints_are_back():
    det, pres = DamageDetector(JOINTS, LEGS, DetectorConfig(no_reply_timeout=0.4, min_missed_reads=2)), \
        JointPresenceTracker(JOINTS)
    det.update(0.0, [ServoStatus("coxa_joint_LF", 1, reads=5, consecutive_misses=5, last_reply_age=1.0,
                                 silent_confirmations=1)])            # a servo confirmed silent: strong
    others = [j for j in JOINTS if j not in RM and not j.endswith("_LF")]
    t = 0.0
    for _ in range(10):                                                 # every joint but LF's (the servo's)
        t += 0.02
        pres.observe(t, others + RM)
        det.update_presence(t, pres)
    for _ in range(40):                                                 # RM left out of every message for 0.8 s
        t += 0.02
        pres.observe(t, others)
        det.update_presence(t, pres)
    assert det.detected() == [0, 3, 3, 3, 0, 3] and det.detected(strong=True) == [0, 3, 3, 3, 3, 3]
    assert det.clear(JOINTS, hold=pres) == sorted(RM, key=JOINTS.index)   # the servo's fault stays
    assert det.detected() == [0, 3, 3, 3, 3, 3]
    for _ in range(40):                                                 # still left out: held, not judged again
        t += 0.02
        pres.observe(t, others)
        assert det.update_presence(t, pres) == []
    pres.observe(t + 0.02, others + RM)                                 # back once: judged by the rule again
    det.update_presence(t + 0.02, pres)
    assert not det.held
    t += 0.02
    new = []
    for _ in range(40):
        t += 0.02
        pres.observe(t, others)
        new += det.update_presence(t, pres)
    assert sorted(f.joint for f in new) == sorted(RM) and det.detected() == [0, 3, 3, 3, 0, 3]


def _suspect_by_hand(gyro_of, leg="RM", seconds=5.0, withdraw_at=None):
    """A suspect probe of ``leg`` (weak evidence: 0 links) driven by hand: IMU samples at 100 Hz with the gyro
    ``gyro_of(tau)`` at probe time tau [s] (``None`` before the probe), commands at 50 Hz."""
    idf = DamageIdentifier()
    probe = ActiveProbe(idf)
    i = LEGS.index(leg)
    probe.suspect(i, 0)
    level = np.array([1.0, 0.0, 0.0, 0.0])
    for k in range(int(round(seconds / 0.01))):
        t = 1.0 + 0.01 * k
        if withdraw_at is not None and t >= withdraw_at:
            probe.withdraw(i)
        run = probe._run
        tau = t - run["t0"] if run is not None and run["phase"] == "probe" else None
        probe.on_imu(t, level, gyro_of(tau))
        if k % 2 == 0:
            probe.command(t, probe.stance)
    return idf, probe


def test_a_suspect_leg_that_moves_nothing_is_confirmed_lost_and_one_that_pushes_is_ruled_out():
    """The gyro still (white noise of the assumed sigma): no count but 0 explains it -> the identifier's RM:0 on
    the probe's verdict. The gyro a whole RM leg gives when probed (the model's own prediction of the healthy leg
    pushing on the ground: the plant here) -> the leg is there, nothing handed to the identifier."""
    rng = np.random.default_rng(5)
    sigma = 0.005
    idf, probe = _suspect_by_hand(lambda tau: rng.normal(0.0, sigma, 3))
    (res,) = probe.results
    assert res["suspect"] and res["count"] == 0 and res["taken"] == 0 and not res["present"]
    assert set(res["probabilities"]) == {0, 1, 2, 3}
    assert idf.morphology == (3, 3, 3, 3, 0, 3) and idf.events[-1]["source"] == "probe"

    idf2 = DamageIdentifier()
    whole = LinkProbe(leg="RM", stance=ActiveProbe(idf2).stance).predicted(3)
    n = len(whole)

    def healthy(tau):
        if tau is None:
            return rng.normal(0.0, sigma, 3)
        k = int(round(tau / 0.01)) - 1
        return (whole[k] if 0 <= k < n else np.zeros(3)) + rng.normal(0.0, sigma, 3)
    idf2, probe2 = _suspect_by_hand(healthy)
    (res,) = probe2.results
    assert res["present"] and res["count"] == 3 and res["taken"] is None
    assert all(v > 3.0 for c, v in res["misfit_per_value"].items() if c < 3)
    assert idf2.morphology == (3,) * 6 and not idf2.events


def test_a_withdrawn_suspect_ends_its_probe_without_a_verdict():
    idf, probe = _suspect_by_hand(lambda tau: np.zeros(3), withdraw_at=2.5)      # mid-probe: the joints are back
    (res,) = probe.results
    assert res["reason"].startswith("withdrawn") and "probabilities" not in res and not probe.active
    assert idf.morphology == (3,) * 6


# ---------------------------------------------------------------------------------------------- over DDS
#: the whole graph in the test's one process, on a machine CI shares: the predictor at 50 Hz (as in
#: test_false_morphology) leaves the probe its IMU samples; the launch's 100 Hz is bench_weak_evidence.py's
ARGS = {"predictor_rate": "50"}

def _report(run):
    return "\n".join("%7.2f %s" % (t - run.t_damage, what) for t, what in run.log)


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_leg_lost_only_from_joint_states_is_confirmed_and_the_robot_walks_on():
    """RM removed 8 s into the walk, seen only in joint_states: confirmed (strong evidence) within 5 s, the body
    within 10 deg of level all along, the last 8 s of the 17 s after the damage at >= 60 % of the command, and no
    joint reported seized on the way."""
    pytest.importorskip("rclpy")
    from jethexa_dynamics.nodes.damage_run import run_damage

    run = run_damage([(8.0, "damage", "RM")], seconds=8.0 + 17.0, arguments=ARGS)
    log = _report(run)
    confirmed = run.confirmed("RM", 0)
    assert confirmed is not None and confirmed <= 5.0, log
    assert run.max_tilt_deg() <= 10.0, log
    assert run.speed_fraction(9.0, 17.0) >= 0.6, log
    assert run.seized_ever() == (), log
    assert run.gait_morphologies() == [(3,) * 6, (3, 3, 3, 3, 0, 3)], log
    assert run.monitor_morphologies() == [(3,) * 6, (3, 3, 3, 3, 0, 3)], log      # never on weak evidence alone


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_joints_briefly_left_out_of_joint_states_change_nothing():
    """A starved publisher leaves RM's joints out for 1 s (longer than the silence rule's 0.4 s): the monitor's
    morphology and the gait's stay healthy, nothing is reported seized, and the robot walks on (a probe that had
    started is withdrawn when the joints come back)."""
    pytest.importorskip("rclpy")
    from jethexa_dynamics.nodes.damage_run import run_damage

    run = run_damage([(8.0, "hide", "RM"), (9.0, "hide", "")], seconds=8.0 + 17.0, arguments=ARGS)
    log = _report(run)
    assert run.monitor_morphologies() == [(3,) * 6], log
    assert run.gait_morphologies() == [(3,) * 6], log
    assert run.seized_ever() == (), log
    assert run.max_tilt_deg() <= 10.0, log
    assert run.speed_fraction(9.0, 17.0) >= 0.8, log
    assert all(r.get("taken") is None for r in run.probes), run.probes
