"""The paper's experiments (Farghdani et al. Sec. VI-B) reproduced qualitatively: 5 s tripod walks of the
healthy robot and of damage scenarios 1 and 2, checked against the paper's stated outcomes.

Oracles: healthy speed = step length / half cycle (Table IV: 0.05 m / 0.65 s); damage 1 (paper legs 3, 4
= RM, LM removed) "stays in place", "oscillates about its initial position in X and Z", "legs ... cannot
lift off"; damage 2 (links 2-3 of legs 4, 5 = LM, RR lost) "moves forward in +Y and laterally in X", "a
drop in Z when Group 1 should be supporting", leg 1 "rotates about Z" (paper y = our x, paper X = our y).
"""
import numpy as np
import pytest

from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.sim.engine import Engine
from jethexa_dynamics.model.scenarios import scenario_morphology

T_CYCLE, STEP = 1.3, 0.05


@pytest.fixture(scope="module")
def runs():
    robot = LeggedRobot.jethexa()
    out = {}
    for name in ("healthy", "damage1", "damage2"):
        e = Engine(robot, morphology=name, record_every=10)
        out[name] = e.run(5.0)
    out["robot"] = robot
    return out


def test_scenario_morphologies_follow_the_paper_numbering():
    robot = LeggedRobot.jethexa()
    d1 = scenario_morphology(robot, "damage1")
    d2 = scenario_morphology(robot, "damage2")
    assert dict(zip(robot.leg_names, d1.links_per_leg)) == dict(LF=3, LM=0, LR=3, RF=3, RM=0, RR=3)
    assert dict(zip(robot.leg_names, d2.links_per_leg)) == dict(LF=3, LM=1, LR=3, RF=3, RM=3, RR=1)
    assert robot.with_morphology(d1).nv == 18 and robot.with_morphology(d2).nv == 20   # paper: 18 / 20 DoF
    assert len(robot.with_morphology(d1).tip_names) == len(robot.with_morphology(d2).tip_names) == 4
    with pytest.raises(ValueError, match="scenario must be one of"):
        scenario_morphology(robot, "damage3")


def test_healthy_tripod_walks_at_step_length_over_half_cycle(runs):
    tr = runs["healthy"]
    sel = tr.t >= T_CYCLE                       # after the first cycle
    speed = np.polyfit(tr.t[sel], tr.pos[sel, 0], 1)[0]
    assert speed == pytest.approx(STEP / (T_CYCLE / 2), rel=0.12)
    e = np.rad2deg(tr.euler)
    assert np.abs(e[:, :2]).max() < 2.0         # bounded roll and pitch
    assert abs(e[-1, 2]) < 2.0 and abs(tr.pos[-1, 1]) < 0.01
    assert tr.pos[:, 2].min() > 0.11            # the body is carried at about H_0 = 0.12 m


def test_damage1_no_progress_oscillates_feet_stay_down(runs):
    tr, robot = runs["damage1"], runs["robot"]
    healthy_dx = runs["healthy"].pos[-1, 0]
    p = tr.pos
    assert abs(p[-1, 0]) < 0.03 * healthy_dx                  # "stays in place" (no forward motion)
    assert np.ptp(p[:, 1]) > 0.005 and abs(p[:, 1].mean()) < 0.002   # lateral oscillation about the start
    assert np.ptp(p[:, 2]) > 0.003                            # ... and in height
    e = np.rad2deg(tr.euler)
    assert np.ptp(e[:, 0]) > 2.0 and np.ptp(e[:, 2]) > 2.0    # tilting and yawing back and forth
    legs = [robot.leg_names.index(leg) for leg in ("LF", "LR", "RF", "RR")]
    assert tr.contact[:, legs].mean() > 0.95                  # "cannot lift off"


def test_damage2_moves_forward_drifts_and_drops(runs):
    tr = runs["damage2"]
    p = tr.pos
    healthy_dx = runs["healthy"].pos[-1, 0]
    assert 0.2 * healthy_dx < p[-1, 0] < 0.8 * healthy_dx    # still moves forward, but less
    assert abs(p[-1, 1]) > 0.005                             # lateral drift
    assert abs(np.rad2deg(tr.euler[-1, 2])) > 5.0             # turning: leg 1 (RF) pivots in support
    # group 1 (RF, LM, RR) supports during the second half of each cycle: the body drops then
    phase = (tr.t % T_CYCLE) / T_CYCLE
    g1 = (phase > 0.6) & (phase < 0.9) & (tr.t > T_CYCLE / 2)
    g2 = (phase > 0.1) & (phase < 0.4) & (tr.t > T_CYCLE / 2)
    assert p[g2, 2].mean() - p[g1, 2].mean() > 0.003
    assert p[g1, 2].min() < runs["healthy"].pos[:, 2].min() - 0.002
