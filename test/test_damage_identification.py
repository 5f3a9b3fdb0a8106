"""Damage identification (issue 11) on the project's engine as an independent plant: silent breaks are named
within 3 gait cycles, two damages one after the other are both found, healthy walking (turning, stop-and-go,
standing, gyro bias, body-mass error) raises nothing; bad samples are rejected and counted, never raised.

The plant (``sim.streams``) is the engine at 1 ms with the body mass scaled and sensor noise; the identifier's
models are the healthy-mass engine at 2 ms, so the model is never exactly the plant."""
import math

import numpy as np
import pytest

from jethexa_dynamics.damage.hypotheses import link_shares, single_leg_hypotheses
from jethexa_dynamics.damage.identification import DamageIdentifier
from jethexa_dynamics.sim.streams import Segment, WalkConfig, feed, feed_predictor, walk_streams

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
CYCLE = 1.3          # s, the paper's tripod
T_BREAK = 3.0


def test_hypotheses_are_healthy_plus_every_single_leg_loss():
    h = single_leg_hypotheses([3] * 6)
    assert len(h) == 19 and h[0] == (3,) * 6 and len(set(h)) == 19
    assert all(sum(a != 3 for a in x) == 1 for x in h[1:])
    # re-centred on LM:1 found by the model: LM may be revised (0 or 2), the others lose 1-3 links
    r = single_leg_hypotheses([3, 1, 3, 3, 3, 3], [False, True, False, False, False, False])
    assert r[0] == (3, 1, 3, 3, 3, 3) and (3, 2, 3, 3, 3, 3) in r and (3, 0, 3, 3, 3, 3) in r and len(r) == 18


@pytest.mark.parametrize("kw,msg", [({"window": 0.0}, r"window=0.0 outside the allowed range \[0.2, 3\]"),
                                    ({"threshold": 1.0}, "threshold=1.0 outside"),
                                    ({"confirm": 0}, "confirm=0 outside"),
                                    ({"stay_prior": float("nan")}, "stay_prior=nan outside"),
                                    ({"max_misfit": 0.0}, "max_misfit=0.0 outside"),
                                    ({"unexplained_misfit": 2.0}, "unexplained_misfit=2.0 outside")])
def test_parameters_are_range_checked(kw, msg):
    with pytest.raises(ValueError, match=msg):
        DamageIdentifier(**kw)


def test_bad_samples_are_rejected_and_counted_not_raised():
    idf = DamageIdentifier()
    q = np.zeros(18)
    assert idf.on_command(1.0, q, 1.02)
    assert not idf.on_command(0.5, q, 0.52)                       # out of order
    assert not idf.on_command(2.0, np.full(18, np.nan), 2.02)     # nothing commanded
    assert not idf.on_command(2.0, np.full(18, np.inf), 2.02)     # inf
    assert not idf.on_command(2.0, q[:5], 2.02)                   # wrong size
    assert not idf.on_command(2.0, q, 40.0)                       # beyond the servo's 30 s move
    assert not idf.on_command(2.0, np.full(18, 1e3), 2.02)        # beyond the joint limits (a flood's)
    assert not idf.on_command(2.0, q, float("nan"))               # no target time
    assert not idf.on_joints(1.0, np.full(18, np.inf))
    assert not idf.on_imu(1.0, (1.0, 0, 0, 0), (0.0, math.inf, 0.0))
    assert not idf.on_imu(1.0, (0.0, 0, 0, 0), (0.0, 0.0, 0.0))   # not a unit quaternion
    assert not idf.on_imu(float("nan"), (1.0, 0, 0, 0), (0.0, 0.0, 0.0))
    assert idf.on_imu(1.0, (1.0, 0, 0, 0), (0.0, 0.0, 0.0))
    assert not idf.on_imu(0.9, (1.0, 0, 0, 0), (0.0, 0.0, 0.0))
    assert not idf.on_servo_morphology(1.0, [3, 3, 9, 3, 3, 3])
    assert idf.rejections == {"command": 7, "joints": 1, "imu": 4, "servo": 1}
    assert "link counts in [0, 3]" in idf.last_rejection
    assert idf.on_command(2.0, q, 2.02)                           # and it goes on
    assert idf.morphology == (3,) * 6 and idf.events == []


def test_servo_silence_is_fused_at_once_and_recentres():
    idf = DamageIdentifier()
    assert idf.on_servo_morphology(2.0, [3, 3, 3, 3, 1, 3])
    assert idf.morphology == (3, 3, 3, 3, 1, 3)
    assert idf.events[-1]["source"] == "servo" and idf.events[-1]["morphology"] == [3, 3, 3, 3, 1, 3]
    assert idf.hyps[0].links == (3, 3, 3, 3, 1, 3) and len(idf.hyps) == 1 + 5 * 3 + 1


def test_link_shares_split_the_changed_legs_probability_by_link_count():
    """The ``alternatives`` of a model event come from here: each link count's share of the probability of the
    hypotheses changing that leg (oracle: the same sums by hand over the bank's hypotheses)."""
    idf = DamageIdentifier()
    rng = np.random.default_rng(3)
    probs = rng.random(len(idf.hyps))
    probs /= probs.sum()
    i = LEGS.index("LM")
    shares = link_shares(idf.hyps, probs, i)
    mine = {k: sum(p for h, p in zip(idf.hyps[1:], probs[1:]) if h.links[i] == k) for k in (0, 1, 2)}
    total = sum(mine.values())
    assert set(shares) == {0, 1, 2} and sum(shares.values()) == pytest.approx(1.0)
    assert all(shares[k] == pytest.approx(mine[k] / total) for k in mine)
    assert idf.events == []


def _first_change(idf):
    return idf.events[0] if idf.events else None


@pytest.mark.slow
@pytest.mark.parametrize("leg", LEGS)
def test_each_single_leg_silent_break_is_named_within_three_cycles(leg):
    for links in (2, 1, 0):
        spec = "%s:%d" % (leg, links)
        idf = DamageIdentifier()      # closed loop: the identified morphology re-phases the gait
        _, plant = walk_streams(WalkConfig(duration=T_BREAK + 3 * CYCLE + 2.0, breaks=[(T_BREAK, spec)],
                                           gyro_bias=(0.0, 0.0, 0.02), mass_scale=1.05, seed=links), identifier=idf)
        assert plant.morphology.is_healthy and plant.breaks.links_per_leg[LEGS.index(leg)] == links  # silent
        # nothing else after the gait re-phased (a revision of the same leg's link count is allowed)
        assert all([i for i, n in enumerate(e["morphology"]) if n < 3] == [LEGS.index(leg)] for e in idf.events), \
            idf.events
        ev = _first_change(idf)
        assert ev is not None, "%s not identified" % spec
        changed = [LEGS[i] for i, n in enumerate(ev["morphology"]) if n < 3]
        assert changed == [leg], "%s identified as %s" % (spec, changed)
        assert 0.0 < ev["t"] - T_BREAK <= 3 * CYCLE and ev["source"] == "model" and ev["probability"] > 0.9
        assert idf.unexplained_windows == 0       # a break the bank holds is explained, never "unexplained"


@pytest.mark.slow
@pytest.mark.parametrize("first,second", [("RM:0", "LM:0"),      # paper damage 1: legs 3, 4 removed
                                          ("LM:1", "RR:1")])     # paper damage 2: legs 4, 5 keep the coxa
def test_paper_damages_as_silent_breaks_one_leg_after_the_other(first, second):
    """Closed loop, as on the robot: each identified morphology re-phases the gait (a wave over the legs
    left), then the second leg breaks."""
    t2 = 9.0
    idf = DamageIdentifier()
    walk_streams(WalkConfig(duration=t2 + 6.0, breaks=[(T_BREAK, first), (t2, first + " " + second)],
                            gyro_bias=(0.0, 0.0, 0.02), mass_scale=0.95, seed=3), identifier=idf)
    legs = [[LEGS[i] for i, n in enumerate(e["morphology"]) if n < 3] for e in idf.events]
    assert legs == [[first[:2]], sorted([first[:2], second[:2]], key=LEGS.index)], idf.events
    assert T_BREAK < idf.events[0]["t"] <= T_BREAK + 3 * CYCLE and t2 < idf.events[1]["t"] <= t2 + 6.0
    assert idf.unexplained_windows == 0      # the damaged gait's model misses more, but it explains the motion


HEALTHY_DAY = [Segment(0.0, "walk", (0.04, 0.0, 0.0)), Segment(10.0, "walk", (0.03, 0.0, 0.3)),
               Segment(20.0, "stand"), Segment(25.0, "walk", (0.04, 0.0, 0.0)), Segment(28.0, "stand"),
               Segment(30.0, "walk", (0.02, 0.0, -0.3)), Segment(38.0, "walk", (0.0, 0.0, 0.0)),
               Segment(42.0, "walk", (0.05, 0.0, 0.0)), Segment(50.0, "stand")]


@pytest.mark.slow
@pytest.mark.parametrize("seed,mass_scale", [(0, 0.9), (1, 1.1), (2, 1.0)])
def test_no_false_identification_in_a_minute_of_healthy_walking(seed, mass_scale):
    streams, plant = walk_streams(WalkConfig(duration=60.0, segments=HEALTHY_DAY, seed=seed, mass_scale=mass_scale,
                                             gyro_bias=(0.01, -0.01, 0.02)))
    wz = np.array([p[1][2] for _, kind, p in streams if kind == "imu"])
    idf = DamageIdentifier()
    feed(idf, streams)
    assert idf.events == [] and idf.morphology == (3,) * 6
    assert idf.unexplained_windows == 0 and idf.residual_rms < math.radians(1.0)    # explained all the way
    assert idf.windows >= 115 and not idf.rejections
    assert idf.gyro_bias == pytest.approx(0.02, abs=0.005)        # the z bias was learnt, not read as damage
    assert np.percentile(wz, 95) > 0.25 and np.percentile(wz, 5) < -0.2    # it did turn both ways
    assert plant.morphology.is_healthy and plant.breaks.is_healthy


@pytest.mark.slow
@pytest.mark.parametrize("spec,segments", [
    ("LM:1", [Segment(0.0, "walk", (0.03, 0.0, 0.3))]),                               # break while turning
    ("RR:2", [Segment(0.0, "stand"), Segment(5.0, "walk", (0.04, 0.0, 0.0))]),      # break while standing
])
def test_break_while_turning_or_standing_is_named_once_walking(spec, segments):
    idf = DamageIdentifier()
    walk_streams(WalkConfig(duration=12.0, segments=segments, breaks=[(T_BREAK, spec)], mass_scale=0.92, seed=7,
                            gyro_bias=(0.01, -0.01, 0.02)), identifier=idf)
    assert idf.events, "%s not identified" % spec
    assert all([LEGS[i] for i, n in enumerate(e["morphology"]) if n < 3] == [spec[:2]] for e in idf.events)
    walking_from = T_BREAK if segments[0].mode == "walk" else 0.5 + segments[1].t     # settle 0.5 s
    assert idf.events[0]["t"] - walking_from <= 3 * CYCLE


@pytest.mark.slow
def test_the_signal_a_wrong_model_misses_roll_tenfold():
    """The issue's premise on our plant (+10 % body mass, sensor noise): over 1 s horizons the predictor with
    the healthy model misses roll by ~10x more than with the broken morphology (silent LM femur+tibia)."""
    from transforms3d.euler import quat2euler

    from jethexa_dynamics.predictors.boltzmann_hamel import BoltzmannHamelPredictor as Predictor

    streams, _ = walk_streams(WalkConfig(duration=10.0, breaks=[(2.0, "LM:1")], mass_scale=1.1))
    rms = {}
    for name, morph in (("healthy", [3] * 6), ("right", [3, 1, 3, 3, 3, 3])):
        err = []

        def on_pose(t, pose, imu):
            if t > 4.0:
                err.append(quat2euler(pose[1])[0] - quat2euler(imu[0])[0])
        feed_predictor(Predictor(morphology=morph, reanchor_horizon=1.0), streams, on_pose)
        rms[name] = math.degrees(float(np.sqrt(np.mean(np.square(err)))))
    assert rms["healthy"] > 1.0 and rms["healthy"] > 8.0 * rms["right"], rms


def test_a_failing_confirmed_model_costs_one_window_not_the_identifier(monkeypatch):
    """The confirmed model's integration fails (SimulationError) in one window: that window gives no
    evidence, the model stands up again, the identifier goes on with the next window."""
    from jethexa_dynamics.sim.engine import Engine, SimulationError

    streams, _ = walk_streams(WalkConfig(duration=3.0))
    idf = DamageIdentifier()
    feed(idf, streams, until=1.5)
    n = idf.windows
    real = Engine.advance
    calls = {"n": 0}

    def failing(self, t, record=None):
        calls["n"] += 1
        if calls["n"] == 1:
            raise SimulationError("simulation failed at t=%.4f s: test" % t)
        return real(self, t, record=record)
    monkeypatch.setattr(Engine, "advance", failing)
    feed(idf, [s for s in streams if 1.5 < s[0]])
    assert idf.sim_failures == 1 and idf.windows >= n + 1 and idf.events == [] and not idf.rejections


@pytest.mark.timeout(120)      # a guard: before the fix a gap longer than ~0.5 s looped forever
def test_a_data_gap_is_skipped_not_scored_and_not_looped_on():
    """IMU and joint states drop out for 1.2 s (longer than two windows) while the commands go on: the
    identifier goes on after the gap, the windows it falls in are driven through but not scored."""
    streams, _ = walk_streams(WalkConfig(duration=6.0, gaps=[(2.0, 1.2, "sensors")]))
    assert not any(2.0 < t < 3.2 for t, kind, _ in streams if kind != "cmd")
    idf = DamageIdentifier()
    feed(idf, streams)
    assert idf.gaps == 2 and idf.skipped_windows >= 2          # one gap seen on each stream
    # scored windows: none across the gap nor within gap_settle after it (a 6 s stream: the default 1 s settle)
    assert 5 <= idf.windows <= (6.0 - 0.5 - 1.2 - idf.gap_settle) / idf.window + 1
    assert idf.events == [] and not idf.rejections


GAIT_DAY = [Segment(0.0, "walk", (0.04, 0.0, 0.0)), Segment(5.0, "walk", (0.04, 0.0, 0.0), gait="wave"),
            Segment(11.0, "walk", (0.03, 0.0, 0.2), gait="ripple"), Segment(16.0, "walk", (0.04, 0.0, 0.0), gait="tripod")]


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_gait_switches_and_data_gaps_are_not_read_as_damage():
    """The robot's own controller switches gait three times (tripod, wave, ripple while turning, tripod: each
    re-phases) and the data stops twice for an executor stall (no command, no sample) and twice for a sensor
    dropout, up to 1 s: no identification."""
    streams, plant = walk_streams(WalkConfig(duration=22.0, segments=GAIT_DAY, seed=0, mass_scale=0.9,
                                             gyro_bias=(0.01, -0.01, 0.02),
                                             gaps=[(3.0, 1.0, "stall"), (9.0, 0.6, "sensors"),
                                                   (13.7, 0.3, "stall"), (17.2, 1.0, "sensors")]))
    idf = DamageIdentifier()
    feed(idf, streams)
    assert idf.events == [] and idf.morphology == (3,) * 6, idf.events
    assert idf.gaps == 8 and idf.skipped_windows >= 8 and idf.windows >= 25
    assert plant.morphology.is_healthy and plant.breaks.is_healthy


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("spec", ["LM:1", "RF:2"])
def test_break_found_after_a_stall_and_nothing_more_after_the_replanned_gait(spec):
    """With recovery on, each identified morphology re-plans the gait, and the executor stalls 0.8 s doing it
    (as the re-plan in the morphology callback did in the one-process graph); a stall just before the break
    too: the broken leg is named within 3 cycles, nothing else after the gait switch."""
    idf = DamageIdentifier()
    walk_streams(WalkConfig(duration=T_BREAK + 3 * CYCLE + 3.0, breaks=[(T_BREAK, spec)], recovery=True,
                            stall_on_switch=0.8, gaps=[(T_BREAK - 1.0, 0.7, "stall")], mass_scale=1.05, seed=1,
                            gyro_bias=(0.0, 0.0, 0.02)), identifier=idf)
    assert idf.events and all([LEGS[i] for i, n in enumerate(e["morphology"]) if n < 3] == [spec[:2]]
                              for e in idf.events), idf.events
    assert 0.0 < idf.events[0]["t"] - T_BREAK <= 3 * CYCLE and idf.gaps >= 4


def test_imu_attitude_is_transforms3d_bit_for_bit():
    """``imu_attitude`` (every IMU sample, on Python floats) against what it replaces: quat2mat, mat2euler
    'sxyz' and the third row of R times the gyro, equal to the last bit on random and degenerate attitudes."""
    from transforms3d.euler import euler2quat, mat2euler
    from transforms3d.quaternions import quat2mat

    from jethexa_dynamics.damage.identifier_inputs import imu_attitude

    rng = np.random.default_rng(4)
    cases = [rng.normal(size=4) for _ in range(20000)]
    cases += [np.array(euler2quat(r, p, y)) for r, p, y in rng.uniform(-math.pi, math.pi, (2000, 3))]
    cases += [np.array(euler2quat(0.3, s * math.pi / 2, 1.0)) for s in (-1.0, 1.0)]      # gimbal lock
    cases += [np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 1.0]), np.array([1e-9, 0.0, 0.0, 0.0])]
    for q in cases:
        q = q / np.linalg.norm(q)
        w = rng.normal(size=3)
        R = quat2mat(q)
        roll, pitch, _ = mat2euler(R, "sxyz")
        assert imu_attitude(q, w) == (roll, pitch, float(R[2] @ w)), q


@pytest.mark.slow
def test_an_attitude_no_model_explains_names_nothing(monkeypatch):
    """Issue 21 (a CI run): the IMU filter started from a jolted sample, 20-40 deg off, and corrected at its
    working gain (1.9 deg/s), so for 14 s every hypothesis missed the attitude by degrees; the least wrong one
    was named (the rule before ``max_misfit`` named a leg in 4 of these 6 runs). Now nothing is named, while the
    identifier as it was then (no ``max_misfit``, no ground estimate -- an attitude offset learnt as a slope is
    held: no decision on a ground estimate on the move or at its bound --, viscous contact) names a leg in at
    least 4 of them; the same identifier still names a real break (test above) because the right
    model misses by ~0.1 deg."""
    from transforms3d.euler import euler2mat
    from transforms3d.quaternions import mat2quat, quat2mat

    from jethexa_dynamics.damage import identification

    named, loose_named, unexplained = [], 0, []
    for seed in range(6):
        streams, _ = walk_streams(WalkConfig(duration=14.0, seed=seed, mass_scale=1.05, gyro_bias=(0.0, 0.0, 0.01)))
        rng = np.random.default_rng(seed)
        r0, p0 = np.radians(rng.uniform(-15, 15)), np.radians(rng.choice([-1, 1]) * rng.uniform(20, 40))
        off = []
        for t, kind, p in streams:
            if kind == "imu":
                s = max(0.0, 1.0 - 0.033 * t / math.hypot(r0, p0))     # the tilt error, decaying at 0.033 rad/s
                p = (mat2quat(euler2mat(r0 * s, p0 * s, 0.0, "sxyz") @ quat2mat(p[0])),) + tuple(p[1:])
            off.append((t, kind, p))
        idf = DamageIdentifier()
        feed(idf, off)
        named += idf.events
        unexplained.append(idf.unexplained_windows)
        # windows whose models, anchored 20-40 deg off, fell are not scored (no evidence): 14-27 of 28 are
        assert idf.morphology == (3,) * 6 and idf.windows >= 10 and not idf.rejections
        # the identifier as it was (no max_misfit, no ground learnt, the paper's viscous contact): a leg is named
        with monkeypatch.context() as m:
            m.setattr(identification, "GROUND_GAIN", 0.0)
            m.setattr(identification, "MODEL_CONTACT", ("viscous", 0.8))
            loose = DamageIdentifier(max_misfit=math.radians(89.0))
            feed(loose, off)
        loose_named += bool(loose.events)
    assert named == [] and loose_named >= 4, (named, loose_named)
    # ... and said: "unexplained" in every run while the tilt error was large
    assert all(n >= 3 for n in unexplained), unexplained


def _side_slope_walk(identifier):
    """30 s on a 5 deg side slope (turning, standing, a gait change; Coulomb friction 0.86, body 0.9 of the
    model's, gyro bias): the schedule of the long soak's seed 2, where the level-ground models missed by 3 deg.
    Returns the confirmed model's residual RMS [deg] after each window."""
    rms, update = [], identifier._update_unexplained

    def record():
        update()
        rms.append(math.degrees(identifier.residual_rms))
    identifier._update_unexplained = record
    segs = [Segment(0.0, "walk", (0.04, 0.0, -0.066)), Segment(5.0, "stand"),
            Segment(12.6, "walk", (0.05, 0.0, -0.13)), Segment(18.1, "walk", (0.04, 0.0, 0.0)),
            Segment(21.5, "walk", (0.039, 0.0, 0.0), gait="ripple"), Segment(26.7, "walk", (0.027, 0.0, -0.092))]
    walk_streams(WalkConfig(duration=30.0, segments=segs, ground_tilt=(math.radians(5.0), 0.0), friction=[(0.5, 0.86)],
                            mass_scale=0.9, gyro_bias=(-0.0095, -0.0081, 0.0126), seed=2), identifier=identifier)
    return np.array(rms)


@pytest.mark.slow
def test_a_slope_is_learnt_as_ground_not_taken_for_damage(monkeypatch):
    """The models stand on level ground in their world; on a slope each is anchored in the ground's frame, the
    ground's tilt learnt from the best model's residual (turned with the robot's heading). Learnt: the healthy
    model explains the walk (residual ~0.1 deg) and nothing is named; not learnt, the same walk is missed by
    3 deg. A break on a slope is still named on its leg."""
    from jethexa_dynamics.damage import identification

    idf = DamageIdentifier(confirm=3)
    rms = _side_slope_walk(idf)
    assert idf.events == [] and idf.unexplained_windows == 0
    assert np.median(rms) < 0.5, np.median(rms)
    gx, gy = np.degrees(idf.ground_slope)        # the ground's normal in the first heading's level frame
    assert abs(gx) < 1.5 and -6.5 < gy < -4.0, (gx, gy)      # the plant's ground: roll 5 deg about x
    monkeypatch.setattr(identification, "GROUND_GAIN", 0.0)
    blind = DamageIdentifier(confirm=3)
    assert np.median(_side_slope_walk(blind)) > 2.0 and not blind.ground_slope.any()
    monkeypatch.undo()
    for spec in ("LM:1", "RF:0"):
        idf = DamageIdentifier()
        walk_streams(WalkConfig(duration=16.0, breaks=[(10.0, spec)], ground_tilt=(0.0, math.radians(5.0)),
                                gyro_bias=(0.0, 0.0, 0.02), mass_scale=1.05, seed=2), identifier=idf)
        ev = _first_change(idf)
        assert ev is not None and [LEGS[i] for i, n in enumerate(ev["morphology"]) if n < 3] == [spec[:2]], \
            (spec, idf.events)
        assert 0.0 < ev["t"] - 10.0 <= 3 * CYCLE
