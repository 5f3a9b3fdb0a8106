"""Gait generator: the paper's eq. 56 as an oracle, phase patterns of tripod/wave/ripple, body-velocity
commands, and clear errors for bad parameters or steps the legs cannot reach."""
import os

import numpy as np
import pytest

from jethexa_dynamics.control.gait import Gait
from jethexa_dynamics.control.ik import LegGeometry
from jethexa_dynamics.model.urdf import parse_urdf

URDF = os.path.join(os.path.dirname(__file__), "..", "urdf", "jethexa.urdf")
LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
SIDE_ORDER = {"L": ["LF", "LM", "LR"], "R": ["RF", "RM", "RR"]}


@pytest.fixture(scope="module")
def geo():
    triples = [["%s_joint_%s" % (k, leg) for k in ("coxa", "femur", "tibia")] for leg in LEGS]
    return LegGeometry.from_urdf(parse_urdf(URDF), LEGS, triples)


def eq56(t, T, L_sl, L_sh, L_sd, H0, Phi):
    """Farghdani eq. 56 in the limit N_g -> inf (k/N_g = t/T), relative to the hip: (along-walk, z).

    The stance z uses -L_sd (a dip): the printed +L_sd would raise the foot; our documented choice."""
    along = -0.5 * L_sl * np.cos(2 * np.pi * t / T + Phi)
    half = (t / T + Phi / (2 * np.pi)) % 1.0 < 0.5          # swing during the leg's first half-cycle
    bump = 0.5 * (1 - np.cos(4 * np.pi * t / T))
    z = np.where(half, L_sh * bump, -L_sd * bump) - H0
    return along, z


def test_paper_tripod_is_eq56(geo):
    g = Gait.paper_tripod(geo)
    assert g.nominal_speed == pytest.approx(0.05 / 0.65)   # L_sl / (T_g / 2)
    t = np.linspace(0.0, 2 * 1.3, 1001)
    feet = np.array([g.foot_targets(tk) for tk in t])
    for i, leg in enumerate(LEGS):
        Phi = 0.0 if leg in ("RF", "LM", "RR") else np.pi   # paper group 1 = legs 1,4,5
        along, z = eq56(t, 1.3, 0.05, g.step_height, 0.001, 0.12, Phi)
        assert feet[:, i, 0] - g.neutral[i, 0] == pytest.approx(along, abs=1e-12)   # paper y = our x
        assert feet[:, i, 1] == pytest.approx(g.neutral[i, 1], abs=1e-15)           # paper x constant
        assert feet[:, i, 2] == pytest.approx(z, abs=1e-12)


@pytest.mark.parametrize("kind,n_swing", [("tripod", 3), ("wave", 1), ("ripple", 2)])
def test_phase_patterns(geo, kind, n_swing):
    g = Gait(geo, kind=kind, step_length=0.04)
    ts = (np.arange(600) + 0.5) / 600 * g.cycle_time
    sw = np.array([g.swing_mask(t) for t in ts])
    assert np.all(sw.sum(axis=1) == n_swing)
    assert sw.mean(axis=0) == pytest.approx(1 - g.duty, abs=2e-3)
    if kind == "tripod":   # the paper's groups move together
        assert np.all(sw[:, LEGS.index("RF")] == sw[:, LEGS.index("LM")])
        assert np.all(sw[:, LEGS.index("RF")] == sw[:, LEGS.index("RR")])
        assert np.all(sw[:, LEGS.index("LF")] != sw[:, LEGS.index("RF")])
    if kind == "ripple":   # never two neighbours on one side in the air
        for side in SIDE_ORDER.values():
            for a, b in zip(side[:-1], side[1:]):
                assert not np.any(sw[:, LEGS.index(a)] & sw[:, LEGS.index(b)])
    # continuous foot paths (no jumps at lift-off / touch-down)
    feet = np.array([g.foot_targets(t) for t in ts])
    step = np.abs(np.diff(feet, axis=0)).max()
    assert step < 0.04 * np.pi / 600 / (1 - g.duty) * 1.01 + 1e-9


@pytest.mark.parametrize("command", [(0.05, 0.0, 0.0), (0.0, 0.03, 0.0), (0.02, -0.02, 0.0), (0.0, 0.0, 0.3)])
def test_stance_feet_move_against_the_body_velocity(geo, command):
    g = Gait(geo, kind="wave", command=command)          # linear stance profile: constant foot speed
    vx, vy, wz = command
    dt = 1e-4
    for t in np.linspace(0.0, g.cycle_time, 37)[:-1]:
        t = t + 0.123
        f0, f1 = g.foot_targets(t), g.foot_targets(t + dt)
        for i in np.flatnonzero(~g.swing_mask(t) & ~g.swing_mask(t + dt)):
            p = g.neutral[i]
            expect = -np.array([vx - wz * p[1], vy + wz * p[0]])
            assert (f1[i, :2] - f0[i, :2]) / dt == pytest.approx(expect, abs=1e-6)


def test_cosine_stance_mean_speed_matches_command(geo):
    g = Gait.paper_tripod(geo)
    i = LEGS.index("LF")              # group 2: stance during the first half-cycle
    assert not g.swing_mask(0.1)[i]
    travel = g.foot_targets(0.0)[i, 0] - g.foot_targets(0.65 - 1e-12)[i, 0]
    assert travel / 0.65 == pytest.approx(g.nominal_speed, rel=1e-9)


def test_all_default_gaits_reachable_over_a_cycle(geo):
    for kind in ("tripod", "wave", "ripple"):
        g = Gait(geo, kind=kind, step_length=0.05)
        for t in np.linspace(0, g.cycle_time, 97):
            th = g.joint_targets(t).reshape(6, 3)
            for i, leg in enumerate(LEGS):
                assert geo.fk(leg, th[i]) == pytest.approx(g.foot_targets(t)[i], abs=1e-12)


def test_bad_parameters_raise_clear_errors(geo):
    with pytest.raises(ValueError, match=r"cycle_time=-1 outside the allowed range \[0.1, 20\] s"):
        Gait(geo, cycle_time=-1)
    with pytest.raises(ValueError, match=r"duty=1.2 outside the allowed range \(0, 0.95\]"):
        Gait(geo, duty=1.2)
    with pytest.raises(ValueError, match="gait must be one of tripod, wave, ripple"):
        Gait(geo, kind="trot")
    with pytest.raises(ValueError, match=r"step_height=0.12 m outside the allowed range \[0, 0.1\d+\] m"):
        Gait.paper_tripod(geo, step_height=0.12)           # Table IV as printed: foot up to hip height
    with pytest.raises(ValueError, match=r"step length in \[0, 0.1\d+\] m.*leg|leg .* cannot reach"):
        Gait.paper_tripod(geo, step_length=0.2)
    with pytest.raises(ValueError, match="body_height"):
        Gait(geo, body_height=0.3)
    with pytest.raises(ValueError, match="command must be finite"):
        Gait(geo, command=(np.nan, 0, 0))
    with pytest.raises(ValueError, match=r"at most 0\.\d+ x this command"):
        Gait(geo, command=(0.0, 0.0, 2.0))


def test_error_message_range_is_tight(geo):
    """The reported maximum step length is itself reachable and 1 % more is not."""
    try:
        Gait.paper_tripod(geo, step_length=0.2)
    except ValueError as e:
        smax = float(str(e).split("step length in [0, ")[1].split("]")[0])
    Gait.paper_tripod(geo, step_length=smax * 0.999)
    with pytest.raises(ValueError):
        Gait.paper_tripod(geo, step_length=smax * 1.01)


def test_walking_gait_takes_joints_per_leg_from_the_names_and_checks_them(geo):
    """The gait controller's walking gait commands each walking leg's own joints (no 3-per-leg constant):
    legs without all their links are dropped with exactly their joints; a joint count the leg IK cannot
    fill is refused."""
    from jethexa_dynamics.control.walking import WalkingGait
    from jethexa_dynamics.model import LeggedRobot

    robot = LeggedRobot.jethexa()
    names = list(robot.joint_names)
    walker = WalkingGait(geo, names, n_joints=[int(n) for n in robot.description.n_joints])
    assert walker.names == names
    walker.set_morphology([3, 0, 3, 3, 2, 3])
    legs = ["LF", "LR", "RF", "RR"]
    assert walker.names == [n for n in names if n.rsplit("_", 1)[1] in legs]
    joints, q = walker.step(0.02, walking=True)
    assert joints == walker.names and q.shape == (12,)
    with pytest.raises(ValueError, match="joint_names: 17 names"):
        WalkingGait(geo, names[:-1], n_joints=[3] * 6)
    with pytest.raises(ValueError, match="IK gives 18 angles for the 24 joints"):
        WalkingGait(geo, names + ["extra_%d" % k for k in range(6)], n_joints=[4] * 6)
