"""Gait re-planning (control/replan.py, support.py, cycle.py) against independent oracles.

* support margin vs scipy.spatial.ConvexHull's facet equations (distance to the supporting lines);
* centre of mass vs Pinocchio's centerOfMass on a URDF that physically lacks the lost links;
* every plan re-checked at phases the planner never sampled, with the scipy margin and the checked CoM;
* the cases the issue names: 18 single-leg losses and damage 1 plan a stable gait; fewer than four feet and
  two adjacent legs of one side do not, and say so with a safe stance.
"""
import math

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from jethexa_dynamics.control.gait import in_swing
from jethexa_dynamics.control.replan import REQUIRED_MARGIN, GaitPlan, GaitPlanner, NoStableGait
from jethexa_dynamics.control.support import chebyshev_shift, support_margin
from jethexa_dynamics.model.com import center_of_mass
from jethexa_dynamics.model import LeggedRobot, Morphology

LEGS = ("LF", "LM", "LR", "RF", "RM", "RR")
SINGLE = [(leg, k) for leg in LEGS for k in (0, 1, 2)]


@pytest.fixture(scope="module")
def robot():
    return LeggedRobot.jethexa()


@pytest.fixture(scope="module")
def planner(robot):
    return GaitPlanner(robot)


def _lpl(**lost):
    return [lost.get(leg, 3) for leg in LEGS]


def scipy_margin(feet_xy, c):
    """Inside: min distance to the hull's supporting lines (ConvexHull equations n.x + d <= 0)."""
    h = ConvexHull(np.asarray(feet_xy))
    return float(np.min(-(h.equations[:, :2] @ np.asarray(c) + h.equations[:, 2])))


def test_support_margin_matches_scipy_hull_inside_and_bounds_outside():
    rng = np.random.default_rng(3)
    for _ in range(300):
        pts = rng.uniform(-0.2, 0.2, size=(int(rng.integers(3, 7)), 2))
        c = rng.uniform(-0.25, 0.25, size=2)
        m = support_margin(pts, c)
        h = ConvexHull(pts)
        viol = h.equations[:, :2] @ c + h.equations[:, 2]      # signed distances to the supporting lines
        if viol.max() < 0:
            assert m == pytest.approx(-viol.max(), abs=1e-12)
        else:   # outside: the distance to the polygon is at least the worst line violation, at most to a vertex
            assert m < 0
            assert viol.max() - 1e-12 <= -m <= np.min(np.hypot(*(pts[h.vertices] - c).T)) + 1e-12


def test_support_margin_degenerate_supports_are_never_stable():
    assert support_margin(np.array([[0.0, 0.0], [0.1, 0.0]]), (0.05, 0.0)) == pytest.approx(0.0)
    assert support_margin(np.array([[0.0, 0.0], [0.1, 0.0]]), (0.05, 0.02)) == pytest.approx(-0.02)
    assert support_margin(np.zeros((0, 2)), (0.0, 0.0)) == -math.inf


def test_chebyshev_shift_centres_a_square():
    sq = np.array([[0.0, 0.0], [0.1, 0.0], [0.1, 0.1], [0.0, 0.1]])
    b, r = chebyshev_shift([sq], (0.0, 0.0), max_shift=0.2)
    assert r == pytest.approx(0.05, abs=1e-9) and np.allclose(b, [0.05, 0.05], atol=1e-9)
    assert support_margin(sq, b) == pytest.approx(r, abs=1e-9)
    b, r = chebyshev_shift([sq], (-0.05, -0.05), max_shift=0.01)   # the box keeps the CoM outside
    assert r == pytest.approx(-0.04, abs=1e-9) and np.allclose(b, [0.01, 0.01], atol=1e-9)


@pytest.mark.parametrize("lost", [{}, {"LM": 0}, {"LM": 1, "RR": 1}, {"RF": 2}, {"LM": 0, "RM": 0}])
def test_center_of_mass_matches_pinocchio_on_the_reduced_urdf(robot, lost):
    pin = pytest.importorskip("pinocchio")
    from pin_oracle import PinOracle
    from robot_factory import urdf_without_links

    lpl = _lpl(**lost)
    red = robot.with_morphology(Morphology.from_vector(robot, lpl))
    oracle = PinOracle(urdf_without_links(robot.urdf_path, LEGS, lpl), red)
    rng = np.random.default_rng(len(lost))
    for _ in range(5):
        q_full = rng.uniform(-1.0, 1.0, len(robot.joint_names))
        q = q_full[red.joint_index_in_full]
        qp = oracle.config(np.eye(4), q)
        ref = pin.centerOfMass(oracle.model, oracle.data, qp)
        assert np.allclose(center_of_mass(red, q_full), ref, atol=1e-12)


def _recheck(planner, plan, lpl, n=157):
    """Margins at n phases the planner never samples: feet from the plan, IK, CoM, scipy margin."""
    red = Morphology.from_vector(planner.robot, lpl)
    g = plan.gait
    idx = [LEGS.index(leg) for leg in plan.legs]
    th = np.zeros(18)
    out = []
    for k in range(n):
        t = g.cycle_time * (k + 0.137) / n
        feet = plan.foot_targets(t)
        for j, i in enumerate(idx):
            th[3 * i:3 * i + 3] = planner.geometry.ik(LEGS[i], feet[j])
        for leg, ang in plan.folded.items():
            i = LEGS.index(leg)
            th[3 * i:3 * i + 3] = ang
        c = center_of_mass(planner.robot, th, red.link_mask)
        down = [j for j in range(len(idx)) if not in_swing(g.prm, g.offsets, t, j)]
        assert len(down) >= 3
        out.append(scipy_margin(feet[down, :2], c[:2]))
    return np.array(out)


def _joint_rate(planner, plan, dt=1e-3):
    """Peak joint-target rate (rad/s) over one cycle at 1 ms steps (the planner samples 240 per cycle)."""
    prev, peak = None, 0.0
    for k in range(int(plan.gait.cycle_time / dt) + 1):
        feet = plan.foot_targets(k * dt)
        q = np.concatenate([planner.geometry.ik(leg, f) for leg, f in zip(plan.legs, feet)])
        if prev is not None:
            peak = max(peak, float(np.abs(q - prev).max()) / dt)
        prev = q
    return peak


@pytest.mark.parametrize("leg,links", SINGLE)
def test_every_single_leg_loss_has_a_statically_stable_gait(planner, leg, links):
    lpl = _lpl(**{leg: links})
    plan = planner.plan(lpl, (0.05, 0.0, 0.0))
    assert isinstance(plan, GaitPlan) and plan.stable
    assert leg not in plan.legs and len(plan.legs) == 5
    assert plan.min_margin >= REQUIRED_MARGIN
    assert set(plan.folded) == ({leg} if links else set())
    # the independent re-check, off the planner's samples: positive, near the stated margin
    m = _recheck(planner, plan, lpl)
    assert m.min() > 0.8 * REQUIRED_MARGIN
    assert _joint_rate(planner, plan) <= planner.robot.joint_velocity.min() * 1.02
    # the short body shift leaves the swing time for the full command within the servos' speed
    assert plan.shift_fraction == 0.25 and plan.gait.command[0] == pytest.approx(0.05)


def test_damage1_walks_forward_on_four_legs_with_body_shift(planner):
    lpl = _lpl(LM=0, RM=0)
    plan = planner.plan(lpl, (0.05, 0.0, 0.0))
    assert isinstance(plan, GaitPlan) and sorted(plan.legs) == ["LF", "LR", "RF", "RR"]
    assert plan.gait.command[0] > 0.0          # it walks forward
    assert np.abs(plan.shifts).max() > 0.01    # a plain crawl without body shift would not be stable
    assert _recheck(planner, plan, lpl).min() > 0.8 * REQUIRED_MARGIN
    assert _joint_rate(planner, plan) <= planner.robot.joint_velocity.min() * 1.02
    # the same crawl without the shift brings the CoM onto a support diagonal (margin ~ 0)
    plan.shifts[:] = 0.0
    assert _recheck(planner, plan, lpl).min() < 0.3 * REQUIRED_MARGIN


def test_damage2_walks_on_a_balanced_stance_within_a_narrower_heading_envelope(planner):
    """Paper damage 2 (LM, RR keep only the coxa; feet LF, LR, RF, RM): the x-spread stances leave the CoM
    outside the LF-RF-RM triangle while LR swings (docs/sim.md); the balanced stance (feet spread evenly
    around the CoM) walks, verified over a narrower heading-hold envelope, at >= 50 % of the command."""
    lpl = _lpl(LM=1, RR=1)
    plan = planner.plan(lpl, (0.05, 0.0, 0.0))
    assert isinstance(plan, GaitPlan) and sorted(plan.legs) == ["LF", "LR", "RF", "RM"]
    assert plan.stance == "balanced" and set(plan.folded) == {"LM", "RR"}
    assert plan.gait.command[0] >= 0.025 and plan.min_margin >= REQUIRED_MARGIN
    assert 0.0 < plan.yaw_allowance < planner.yaw_allowance
    m = _recheck(planner, plan, lpl)
    assert m.min() > 0.8 * REQUIRED_MARGIN
    # the same at the corners of the plan's (narrower) envelope, off the planner's samples
    design = plan.gait.command.copy()
    for dvy, dw in ((plan.vy_allowance, plan.yaw_allowance), (-plan.vy_allowance, -plan.yaw_allowance),
                    (plan.vy_allowance, -plan.yaw_allowance), (-plan.vy_allowance, plan.yaw_allowance)):
        plan.gait.set_command(design + (0.0, dvy, dw))
        assert _recheck(planner, plan, lpl, n=61).min() > 0.8 * REQUIRED_MARGIN
    plan.gait.set_command(design)
    assert _joint_rate(planner, plan) <= planner.robot.joint_velocity.min() * 1.02
    # with the first stage's stance (feet where the healthy gait puts them) no shift keeps the CoM inside
    feet = planner.healthy.neutral[[0, 3, 4]][:, :2]           # LF, RF, RM: the support while LR swings
    assert support_margin(feet, (0.0, 0.0)) < -0.05


def test_healthy_robot_keeps_its_tripod(planner):
    plan = planner.plan([3] * 6)
    assert plan.kind == "tripod" and not np.any(plan.shifts) and plan.min_margin > 0.05


@pytest.mark.parametrize("lost", [{"LF": 0, "LM": 0, "LR": 0}, {"LF": 0, "LM": 0}, {"RM": 0, "RR": 0}])
def test_no_stable_gait_is_reported_with_a_safe_stance(planner, lost):
    res = planner.plan(_lpl(**lost))
    assert isinstance(res, NoStableGait) and not res.stable
    assert "no statically stable gait" in res.reason or "needs >= 4" in res.reason
    assert res.stance.shape == (6 - len(lost), 3)
    red = Morphology.from_vector(planner.robot, _lpl(**lost))
    th = np.zeros(18)
    for leg, foot in zip(res.legs, res.stance):
        i = LEGS.index(leg)
        th[3 * i:3 * i + 3] = planner.geometry.ik(leg, foot)
    c = center_of_mass(planner.robot, th, red.link_mask)[:2]
    if len(res.legs) == 4:    # every remaining foot down, CoM shifted inside: the stance itself is stable
        assert res.margin > REQUIRED_MARGIN
        assert res.margin == pytest.approx(scipy_margin(res.stance[:, :2], c), abs=1e-9)
    else:                     # three feet on one side: the margin it reports is honest (negative)
        assert res.margin < 0 and not (ConvexHull(res.stance[:, :2]).equations[:, :2] @ c
                                       + ConvexHull(res.stance[:, :2]).equations[:, 2] < 0).all()


def test_body_shift_is_continuous(planner):
    plan = planner.plan(_lpl(LM=0, RM=0))
    ph = np.linspace(0.0, 2.0, 4001)
    b = np.array([plan.body_shift(p) for p in ph])
    assert np.abs(np.diff(b, axis=0)).max() < 2e-3        # < 2 mm per 1/2000 cycle: no step


def test_bad_input_names_the_field(planner, robot):
    with pytest.raises(ValueError, match="morphology"):
        planner.plan([3, 3, 3])
    with pytest.raises(ValueError, match="command"):
        planner.plan([3] * 6, (float("nan"), 0.0, 0.0))
    with pytest.raises(ValueError, match="required_margin"):
        GaitPlanner(robot, required_margin=-1.0)
    with pytest.raises(ValueError, match="shift_fractions"):
        GaitPlanner(robot, shift_fractions={5: (0.9,), 4: (0.45,)})
    with pytest.raises(ValueError, match="shift_fractions"):
        GaitPlanner(robot, shift_fractions={5: (0.25,)})
