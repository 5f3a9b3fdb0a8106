"""Issue 23 point 1 in the loop: the identifier names a leg (by default any; with ``always=False`` one whose link
count it left ambiguous), the robot stops, stands on its other five feet, probes the leg and takes the count
(``damage.active_probe``). The plant is the engine
walking through ``sim.streams.walk_streams`` with a body the models do not know (+10 % mass, CoM 5 mm forward)
and a gyro bias; the oracles are the plant's own break and its own CoM over its own feet. Times are simulated."""
import math
from types import SimpleNamespace

import numpy as np
import pytest

from jethexa_dynamics.control.support import support_margin
from jethexa_dynamics.damage.active_probe import ActiveProbe, ProbeConfig, probe_margin
from jethexa_dynamics.damage.identification import DamageIdentifier
from jethexa_dynamics.damage.probe import LinkProbe, ProbeSpec
from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.sim.engine import Engine
from jethexa_dynamics.sim.streams import WalkConfig, walk_streams

BREAK = 3.0
PLANT = dict(mass_scale=1.1, body_com_offset=(0.005, 0.0, 0.0), gyro_bias=(0.01, -0.01, 0.02))
LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]


def _walk(brk, seed=1, gaps=(), **probe_kw):
    """Walk, break ``brk`` at BREAK, 6 s more (``gaps``: WalkConfig's); the identifier, the probe and the plant's
    own margin [m] of its CoM over its other five feet at every command tick of the probe."""
    idf = DamageIdentifier()
    probe = ActiveProbe(idf, **probe_kw)
    plant = []

    def oracle(t, eng):
        if probe.active and probe._run["phase"] == "probe":
            feet, _ = eng.foot_states()
            others = [k for k in range(6) if k != probe._run["leg"]]
            plant.append(support_margin(feet[others, :2], eng.center_of_mass()[:2]))
    walk_streams(WalkConfig(duration=BREAK + 6.0, breaks=[(BREAK, brk)], seed=seed, gaps=list(gaps), **PLANT),
                 identifier=idf,
                 probe=probe, on_tick=oracle)
    return idf, probe, plant


@pytest.mark.parametrize("spec", ["LM:1", "RF:0", "RR:2"])
def test_the_loop_probes_an_ambiguous_leg_and_ends_at_the_exact_count(spec):
    """Breaks the walking evidence leaves ambiguous (the identifier's event lists alternatives) end at the plant's
    own count on that leg, no other leg touched, by 6 s after the break; the plant's CoM stays inside its other
    five feet all through the probe, as the model planned."""
    leg, links = spec.split(":")
    i, links = LEGS.index(leg), int(links)
    idf, probe, plant = _walk(spec)
    model = [e for e in idf.events if e["source"] == "model"]
    assert model and model[0]["alternatives"], "the walk alone settled it: no probe case"
    (res,) = probe.results
    assert res["probed"] and res["leg"] == leg and res["count"] == links and res["probabilities"][links] >= 0.9
    # each count's chi^2 per scored value (3 axes x 2 per Fourier coefficient in (0, band] Hz of the samples inside
    # the lag margin, 3 each side at 30 ms): the verdict's count fits best, and the misfits give the probabilities'
    # ratios (Gaussian likelihood)
    m, p = res["misfit_per_value"], res["probabilities"]
    f = np.fft.rfftfreq(res["samples"] - 2 * 3, ProbeSpec().imu_period)
    values = 6 * int(np.sum((f > 0) & (f <= ProbeConfig().band)))
    assert min(m, key=m.get) == links
    for c in (0, 1, 2):
        if c != links and p[c] > 1e-300:
            assert math.log(p[c] / p[links]) == pytest.approx(-0.5 * values * (m[c] - m[links]), rel=1e-6)
    assert idf.morphology == tuple(links if j == i else 3 for j in range(6))
    final = max(idf.events[-1]["t"], res["t_end"])
    assert final - BREAK <= 6.0
    assert res["t_end"] - res["t_start"] == pytest.approx(ProbeSpec().duration, abs=0.05)
    assert res["samples"] == round(ProbeSpec().duration / ProbeSpec().imu_period)      # every IMU sample scored
    assert min(plant) > 0.05 and res["margin_planned"] > 0.05 and res["margin_min"] > 0.05
    assert abs(min(plant) - res["margin_min"]) < 0.02          # the model's margin is the plant's, within 2 cm


def test_without_the_probe_the_walk_alone_names_another_count():
    """The same break with ``enabled=False``: the result says the probe is off, and the identifier's count is the
    walk's guess, which here is not the plant's (so the test above rests on the probe, not on the walk)."""
    idf, probe, _ = _walk("LM:1", enabled=False)
    (res,) = probe.results
    assert not res["probed"] and "off" in res["reason"]
    assert idf.morphology[1] != 1 and all(m == 3 for j, m in enumerate(idf.morphology) if j != 1)


def test_a_stance_whose_com_is_outside_the_five_feet_refuses_the_probe():
    """A model body whose CoM is 20 cm forward and 15 cm left (a payload estimate out on the front left corner)
    puts the robot's CoM outside the five feet left after an LF break: the planner's margin is negative (as an
    engine standing in that stance finds it), the probe is refused with the reason, the walk goes on and the
    identifier's count stands."""
    body = SimpleNamespace(mass=LeggedRobot.jethexa().description.body_mass, com=(0.2, 0.15, 0.0))
    idf, probe, plant = _walk("LF:1", body=body)
    (res,) = probe.results
    assert not res["probed"] and res["reason"].startswith("refused") and res["margin_planned"] < 0.0
    assert plant == [] and [e["source"] for e in idf.events] == ["model"]
    # the oracle: that robot's engine standing in the stance, LF at each count, its CoM over the other five feet
    robot = LeggedRobot.jethexa().with_body(body.mass, body.com)
    q = probe.stance
    for c in (0, 1, 2):
        eng = Engine(robot, gait=None, record_every=0)
        eng.set_joint_targets(q, move_time=0.3)
        eng.set_breaks("LF:%d" % c)
        eng.step(300)            # the stance reached, before the body tips over the front edge
        feet, _ = eng.foot_states()
        m = support_margin(feet[1:, :2], eng.center_of_mass()[:2])
        planned = probe_margin(probe.robot, probe.geometry, q, 0, [3] * 6, eng.R, LinkProbe(robot, "LF"), (c,),
                               times=(0.0,))
        assert m < 0.0 and planned == pytest.approx(m, abs=0.01)


def test_a_pair_the_probe_cannot_tell_apart_is_reported_with_both_probabilities():
    """With the coxa held still (``coxa_amp=0``) LM:1 and LM:0 differ by a 20 g link that does not move: their
    predicted gyro series are the same within the noise (the physics), so the verdict gives both probabilities,
    names no count, and the identifier's count stands."""
    spec = ProbeSpec(coxa_amp=0.0)
    pr = LinkProbe(leg="LM", spec=spec)
    d = pr.predicted(1) - pr.predicted(0)
    assert np.sum(((d - d.mean(axis=0)) / pr.gyro_noise) ** 2) < 1.0      # indistinguishable: chi^2 < 1
    idf, probe, _ = _walk("LM:1", spec=spec)
    (res,) = probe.results
    p = res["probabilities"]
    assert res["probed"] and res["count"] is None and res["reason"].startswith("ambiguous")
    assert 0.1 < p[0] < 0.9 and 0.1 < p[1] < 0.9 and p[2] < 1e-6
    assert "LM:0 p=" in res["reason"] and "LM:1 p=" in res["reason"]
    assert [e["source"] for e in idf.events] == ["model"]


@pytest.mark.parametrize("kw, field, allowed", [
    (dict(settle=0.1), "settle", "[0.3, 5]"), (dict(min_margin=-0.01), "min_margin", "[0, 0.1]"),
    (dict(decide=1.5), "decide", "[0.5, 0.9999]"), (dict(gyro_noise=0.0), "gyro_noise", "[0.0001, 0.1]"),
    (dict(model_settle=float("nan")), "model_settle", "[0.1, 10]")])
def test_bad_probe_settings_are_refused_in_one_line_naming_the_field_and_range(kw, field, allowed):
    with pytest.raises(ValueError) as e:
        ProbeConfig(**kw)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(field + "=") and msg.endswith("outside the allowed range " + allowed)
    with pytest.raises(ValueError, match="^%s=" % field):
        ActiveProbe(DamageIdentifier(), **kw)


def test_a_non_boolean_switch_and_a_verdict_out_of_range_are_refused_naming_the_field():
    with pytest.raises(ValueError, match="^enabled="):
        ProbeConfig(enabled="yes")
    with pytest.raises(ValueError, match="^always="):
        ActiveProbe(DamageIdentifier(), always=1)
    with pytest.raises(ValueError, match="^leg=7"):
        DamageIdentifier().on_probe(0.0, 7, 1, 1.0)
    with pytest.raises(ValueError, match="^links=4"):
        DamageIdentifier().on_probe(0.0, 1, 4, 1.0)


def _walk_mujoco(brk, seed, **probe_kw):
    """``_walk`` on MuJoCo (``sim.mjcf.MujocoServoPlant``: contact unlike the models'), the same body error."""
    pytest.importorskip("mujoco")
    from jethexa_dynamics.sim.mjcf import MujocoServoPlant

    idf = DamageIdentifier()
    probe = ActiveProbe(idf, **probe_kw)
    cfg = dict(PLANT)
    plant = MujocoServoPlant(LeggedRobot.jethexa(), body_scale=cfg.pop("mass_scale"),
                             body_com_offset=cfg.pop("body_com_offset"), settle=0.0)
    walk_streams(WalkConfig(duration=BREAK + 6.0, breaks=[(BREAK, brk)], seed=seed, **cfg), identifier=idf,
                 probe=probe, plant=plant)
    return idf, probe, plant


def test_on_mujoco_a_break_mid_walk_rebuilds_the_plant_and_the_loop_probes_it():
    """MuJoCo walked by the same loop: the silent LM:2 break rebuilds its tree without the tibia mid-walk (the
    feet then carry the lighter robot), the identifier names LM, and the probe takes LM:2."""
    idf, probe, plant = _walk_mujoco("LM:2", seed=2)
    robot = LeggedRobot.jethexa()
    mass = robot.with_morphology([3, 2, 3, 3, 3, 3]).total_mass + 0.1 * robot.description.body_mass
    plant.step(500)                       # standing on the last targets: the weight settles on the feet
    assert plant.mj.normal_force_sum() == pytest.approx(mass * 9.81, rel=0.02)
    (res,) = probe.results
    assert res["probed"] and res["count"] == 2 and idf.morphology == (3, 2, 3, 3, 3, 3)


def test_by_default_a_leg_the_walk_named_without_doubt_is_probed_and_corrected():
    """On MuJoCo the walk names RF:2 for RF:0 and lists no alternative (sure and wrong: the models' contact is
    not MuJoCo's): with ``always=False`` no probe runs and RF:2 stands; by default (``always``) the probe runs
    and takes RF:0, no other leg touched."""
    idf, probe, _ = _walk_mujoco("RF:0", seed=0, always=False)
    model = [e for e in idf.events if e["source"] == "model"]
    assert model and not model[0]["alternatives"], "the walk left doubt: not the case of this test"
    assert probe.results == [] and idf.morphology == (3, 3, 3, 2, 3, 3)
    idf, probe, _ = _walk_mujoco("RF:0", seed=0)
    (res,) = probe.results
    assert res["probed"] and res["alternatives"] == [] and res["count"] == 0
    assert idf.morphology == (3, 3, 3, 0, 3, 3)


def test_the_defaults_probe_every_named_leg_and_fit_30_ms_of_gyro_lag():
    """The defaults (issue 23 point 1): every leg the model names is probed (``always``), the gyro's shift fitted
    within 30 ms (MuJoCo's 20 ms servo lag; the node's ``probe_max_lag``); both can be set, a non-boolean
    ``always`` is refused naming the field."""
    cfg = ProbeConfig()
    assert cfg.always is True and cfg.max_lag == 0.03 and cfg.enabled is True
    assert ActiveProbe(DamageIdentifier(), always=False, max_lag=0.0).config == ProbeConfig(always=False,
                                                                                            max_lag=0.0)
    with pytest.raises(ValueError, match="^always='no': True or False$"):
        ProbeConfig(always="no")


def test_a_model_event_without_alternatives_is_probed_by_default_and_only_recorded_if_not():
    """The policy, driven by hand: a model event on RM naming RM:0 with no alternative starts a probe by default
    (the stand: the leg to its stance angles); with ``always=False`` it starts none and records nothing; an event
    with alternatives starts one either way."""
    def named(alternatives, **kw):
        idf = DamageIdentifier()
        probe = ActiveProbe(idf, **kw)
        idf.events.append({"t": 1.0, "morphology": [3, 3, 3, 3, 0, 3], "source": "model", "probability": 1.0,
                           "alternatives": alternatives})
        idf.model_morphology = (3, 3, 3, 3, 0, 3)
        return probe
    sure, unsure = [], [([3, 3, 3, 3, 1, 3], 0.3)]
    for alternatives, kw, probes in ((sure, {}, True), (sure, dict(always=False), False),
                                     (unsure, dict(always=False), True), (unsure, {}, True)):
        probe = named(alternatives, **kw)
        out = probe.command(1.0, probe.stance)
        assert probe.active is probes and (out is not None) is probes
        if probes:
            (res,) = probe.results
            assert res["leg"] == "RM" and res["named"] == 0 and len(res["alternatives"]) == len(alternatives)
            assert list(out[0]) == [12, 13, 14] and np.allclose(out[1], probe.stance[12:15])
        else:
            assert probe.results == []


def test_a_body_tipped_during_the_probe_aborts_it_and_gives_no_verdict():
    """The probe driven by hand: a model event with alternatives on LM starts it; once it moves, an IMU attitude
    tipped 70 deg about x (a push) puts the CoM outside the five feet (the margin function says so at that
    attitude): the probe stops at that command, sends the leg back to its stance, records why, names no count."""
    from transforms3d.euler import euler2quat, euler2mat

    idf = DamageIdentifier()
    probe = ActiveProbe(idf)
    idf.events.append({"t": 1.0, "morphology": [3, 0, 3, 3, 3, 3], "source": "model", "probability": 1.0,
                       "alternatives": [([3, 1, 3, 3, 3, 3], 0.3), ([3, 2, 3, 3, 3, 3], 0.3)]})
    idf.model_morphology = (3, 0, 3, 3, 3, 3)
    level, tipped = euler2quat(0.0, 0.0, 0.0), euler2quat(math.radians(70.0), 0.0, 0.0)
    t, out = 1.0, []
    while t < 2.5:
        probe.on_imu(t, tipped if t > 2.2 else level, np.zeros(3))
        out.append(probe.command(t, probe.stance))
        t += 0.02
    (res,) = probe.results
    assert res["reason"].startswith("aborted") and "probabilities" not in res and not probe.active
    last = max(k for k, o in enumerate(out) if o is not None)            # the abort's command, then the walk
    assert out[last][2] == pytest.approx(0.3) and np.allclose(out[last][1], probe.stance[3:6])
    assert 2.19 < 1.0 + 0.02 * last < 2.25 and all(o is None for o in out[last + 1:])
    assert res["margin_planned"] > 0.1 and res["margin_min"] <= 0.01
    assert probe_margin(probe.robot, probe.geometry, probe.stance, 1, [3, 0, 3, 3, 3, 3],
                        euler2mat(math.radians(70.0), 0.0, 0.0), LinkProbe(leg="LM"), (0,), times=(0.0,)) < 0.0
    assert idf.morphology == (3, 0, 3, 3, 3, 3)


def _named(leg, links, alternatives, t=1.0):
    """An identifier whose model event at ``t`` [s] names leg index ``leg`` with ``links`` links, the counts
    ``alternatives`` listed beside it (0.3 each), and its probe."""
    idf = DamageIdentifier()
    probe = ActiveProbe(idf)
    morphology = lambda n: [n if j == leg else 3 for j in range(6)]       # noqa: E731
    idf.events.append({"t": t, "morphology": morphology(links), "source": "model", "probability": 1.0,
                       "alternatives": [(morphology(c), 0.3) for c in alternatives]})
    idf.model_morphology = tuple(morphology(links))
    return idf, probe


def _by_hand(drop=lambda k, attempt: False, skip=lambda k, attempt: False, seconds=8.0, noise=lambda attempt: 0.0):
    """The probe driven by hand on LM (a model event with alternatives): IMU samples at 100 Hz (level, still;
    white gyro noise of ``noise(attempt)`` rad/s), command ticks at 50 Hz, ``drop(k, attempt)`` /
    ``skip(k, attempt)`` lose the k-th sample / tick."""
    rng = np.random.default_rng(3)
    idf, probe = _named(1, 0, (1, 2))
    level = np.array([1.0, 0.0, 0.0, 0.0])
    for k in range(int(round(seconds / 0.01))):
        t = 1.0 + 0.01 * k
        attempt = len(probe.results)
        if not drop(k, attempt):
            probe.on_imu(t, level, rng.normal(0.0, noise(attempt), 3) if noise(attempt) else np.zeros(3))
        if k % 2 == 0 and not skip(k, attempt):
            probe.command(t, probe.stance)
    return idf, probe.results


def test_a_probe_that_lost_more_than_a_tenth_of_its_imu_samples_gives_no_verdict_and_runs_once_more():
    """A starved reader is not evidence: a probe whose IMU samples came 3 of every 20 lost (gaps longer than the
    grid bridges: ~15 % of the grid empty) names no count, says how many samples came and that it probes again;
    the identifier's count stays. The second probe, starved too, gives no verdict and is the last; one with
    every sample is scored."""
    idf, results = _by_hand(drop=lambda k, attempt: k % 20 < 3)
    assert [r["attempt"] for r in results] == [1, 2]
    for res in results:
        assert res["probed"] and res["count"] is None and "probabilities" not in res
        assert res["reason"].startswith("no verdict") and 0.8 * 200 < res["samples"] < 0.9 * 200
    assert results[0]["reason"].endswith("probing again") and not results[1]["reason"].endswith("probing again")
    assert idf.morphology == (3, 0, 3, 3, 3, 3)
    _, results = _by_hand(drop=lambda k, attempt: attempt == 1 and k % 20 < 3)    # starved once, then on time
    assert [r["attempt"] for r in results] == [1, 2] and results[0]["count"] is None
    assert results[1]["samples"] == 200 and set(results[1]["probabilities"]) == {0, 1, 2}
    _, results = _by_hand()
    assert len(results) == 1 and results[0]["samples"] == 200 and results[0]["max_command_gap"] == pytest.approx(0.02)


def test_a_probe_whose_gait_ticks_came_late_is_scored_against_the_commands_as_they_came():
    """A gait controller starved for 100 ms in the middle of the probe (no command tick: the plant holds the leg
    there, its sensors go on) moved the leg off the probe's schedule; the models replay the commands as they came,
    so the probe still names the plant's count (LF:2) with a misfit at the noise's (chi^2 per value ~1; the models
    on the schedule left 9 per value there, over ``MAX_MISFIT``: no verdict)."""
    _, probe, _ = _walk("LF:2")
    t0 = probe.results[0]["t_start"]
    idf, probe, _ = _walk("LF:2", gaps=[(t0 + 0.9, 0.1, "commands")])
    with pytest.raises(ValueError, match="gaps: .*one of stall, sensors, commands"):
        WalkConfig(gaps=[(t0, 0.1, "command")])
    (res,) = probe.results
    assert res["max_command_gap"] == pytest.approx(0.12) and res["samples"] == 200
    assert res["count"] == 2 and res["probabilities"][2] >= 0.999 and res["misfit_per_value"][2] < 1.3
    assert idf.morphology == (2, 3, 3, 3, 3, 3)


def test_a_probe_driven_by_another_nodes_commands_replays_them():
    """The node graph's way: the gait controller (here a loop on the probe's request: start ``settle`` after the
    stand, targets one tick ahead) moves the leg of an engine plant (LF:2, its own break: the oracle) and the
    monitor hands each command to the probe with its move time; the gait's ticks are 20 ms apart but stop for
    100 ms mid-probe. The probe replays what was sent, names LF:2 with a misfit at the noise's, and reports the
    gap; with no command seen during the probe (fewer than half, ``MIN_COMMANDS``) it gives no verdict and probes
    again."""
    def run(gap):
        rng = np.random.default_rng(5)
        idf, probe = _named(0, 1, (0, 2), t=0.0)
        link = LinkProbe(leg="LF", stance=probe.stance)
        plant = link.standing_engine(links=2)
        q = plant.setpoints().copy()
        t_start = None
        for k in range(1, 400):
            plant.step(int(round(0.01 / plant.dt)))
            t = 0.01 * k
            gyro, _ = plant.imu()
            probe.on_imu(t, np.array([1.0, 0.0, 0.0, 0.0]), gyro + rng.normal(0.0, 0.005, 3))
            if k % 2 or gap(t - (t_start if t_start is not None else math.inf)):
                continue
            if t_start is None and probe.active:
                t_start = t + probe.config.settle      # the request: the stand began at this tick
            if t_start is not None and -0.02 < t - t_start < 2.0:
                q[0:3] = link.targets(probe.stance[0:3], t - t_start + 0.02)
                plant.set_joint_targets(q[0:3], move_time=0.02, joints=np.arange(3))
            probe.command(t, q, 0.02)
        return idf, probe.results

    idf, results = run(lambda tau: 0.9 <= tau < 1.0)
    (res,) = results
    assert res["max_command_gap"] > 0.099 and res["samples"] == 200
    assert res["count"] == 2 and res["misfit_per_value"][2] < 1.3 and idf.morphology[0] == 2
    _, results = run(lambda tau: -0.02 < tau < 2.0)
    assert results[0]["count"] is None and "of its 100 commands came" in results[0]["reason"]
    assert results[0]["reason"].endswith("probing again")


def test_a_probe_no_count_explains_gives_no_verdict_and_the_next_is_scored():
    """Likelihood ratios are exact only under the noise they assume: a gyro with 4 times the assumed noise
    (chi^2 ~16 per value for every count, as in a graph starved by busy loops, where one such probe named LM:2 at
    p = 1.000 for LM:1) names no count, says how far off the best count is, and the probe runs again; at the
    assumed noise (chi^2 ~1 per value, the oracle: white noise of sigma) it is scored."""
    sigma = ProbeConfig().gyro_noise
    idf, results = _by_hand(noise=lambda attempt: 4.0 * sigma if attempt == 1 else sigma)
    assert [r["attempt"] for r in results] == [1, 2]
    first, second = results
    assert first["count"] is None and "no count explains the gyro" in first["reason"]
    assert first["reason"].endswith("probing again") and min(first["misfit_per_value"].values()) > 10.0
    assert "probabilities" in second and min(second["misfit_per_value"].values()) == pytest.approx(1.0, abs=0.2)
    assert "no count explains" not in second["reason"] and not second["reason"].endswith("probing again")


def test_imu_samples_off_their_period_are_placed_at_their_own_time_on_the_probes_grid():
    """In a node graph the IMU's samples come a few ms off their 10 ms period (a late timer): ``on_grid`` puts
    each where it was measured (linear between its neighbours), so two samples near one grid time leave no hole
    in the next and shift nothing; samples on the grid stay as they are (the offline loop); a gap longer than two
    periods stays NaN (not scored)."""
    from jethexa_dynamics.damage.active_probe import on_grid

    period, n = 0.01, 200
    grid = (np.arange(n) + 1) * period

    def signal(t):
        return np.stack([np.sin(2 * np.pi * 5 * t), np.cos(2 * np.pi * 3 * t), 0.1 * t], axis=-1)
    exact = on_grid([(t, signal(t)) for t in grid], n, period)
    assert np.array_equal(exact, signal(grid))
    rng = np.random.default_rng(3)
    times = grid + rng.uniform(-0.0045, 0.0045, n)           # stamped up to 4.5 ms off the period
    times[0] = grid[0]
    placed = on_grid([(t, signal(t)) for t in times], n, period)
    assert np.all(np.isfinite(placed[:-1]))
    assert np.nanmax(np.abs(placed - signal(grid))) < 0.03          # linear over <= 19 ms of a 5 Hz sine
    nearest = np.full((n, 3), np.nan)                               # the nearest slot: holes and shifts
    for t in times:
        k = int(round(t / period)) - 1
        if 0 <= k < n:
            nearest[k] = signal(t)
    assert np.isnan(nearest).any() or np.nanmax(np.abs(nearest - signal(grid))) > 0.05
    gap = [(t, signal(t)) for t in grid if not 0.5 < t < 0.6]
    holed = on_grid(gap, n, period)
    assert np.isnan(holed[50:59]).all() and np.isfinite(holed[:49]).all() and np.isfinite(holed[60:]).all()
