"""Paper 004's ground-reaction resolution ("reduced set of 6 unknowns") with its rank check, and the
contact inverse dynamics built on it.

Oracles: the extraction's checked singular values and null spaces (NE-T1..NE-T4), the paper's D-H leg
(NE-T5), body balance (base rows of the generalized force vanish), and the forward-dynamics round trip
through the Walker-Orin matrices.
"""
import numpy as np
import pytest

from jethexa_dynamics.second_opinions.ground_reactions import contact_inverse_dynamics, resolve_ground_reactions
from jethexa_dynamics.second_opinions.rnea import NewtonEulerRobot

QUAD = np.array([(0.2, 0.1, -0.3), (0.2, -0.1, -0.3), (-0.2, 0.1, -0.3), (-0.2, -0.1, -0.3)])  # FL FR BL BR
WEIGHT = np.array([0.0, 0.0, 10.0, 0.0, 0.0, 0.0])


def test_four_leg_rule_is_rank_5_and_falls_back_to_least_squares():
    r = resolve_ground_reactions(QUAD, WEIGHT)
    np.testing.assert_allclose(r.singular_values, [4.1777, 4.1765, 2.0, 0.383, 0.1915, 0.0], atol=1e-4)
    assert r.rank == 5 and r.least_squares and "least squares" in r.message and "rank 5" in r.message
    np.testing.assert_allclose(r.residual, 0, atol=1e-12)          # weight alone is consistent
    np.testing.assert_allclose(r.forces.sum(0), [0, 0, 10], atol=1e-12)
    # vertical forces give no yaw moment and the common F_x, F_y none either: a yaw demand is unmet
    r = resolve_ground_reactions(QUAD, WEIGHT + [0, 0, 0, 0, 0, 1.0])
    assert abs(r.residual[5]) == pytest.approx(1.0)


def test_three_leg_rule_is_full_rank():
    r = resolve_ground_reactions(QUAD[[0, 2, 3]], WEIGHT + [0.5, -0.3, 0, 0.2, -0.1, 0.05])   # FR lifted
    assert r.rank == 6 and not r.least_squares
    assert np.linalg.cond(r.matrix) == pytest.approx(24.0, abs=0.05)
    np.testing.assert_allclose(r.residual, 0, atol=1e-12)
    # the side rule: FL and BL (left) share F_y, BR alone on the right has its own; F_x is common
    assert r.forces[0, 1] == pytest.approx(r.forces[1, 1]) and r.forces[0, 0] == pytest.approx(r.forces[2, 0])


def test_two_leg_trot_is_rank_5_with_the_squeeze_force_unobservable():
    r = resolve_ground_reactions(QUAD[[0, 3]], WEIGHT)
    assert r.rank == 5 and r.least_squares
    null = np.linalg.svd(r.matrix)[2][-1].reshape(2, 3)
    np.testing.assert_allclose(np.abs(null[0] / np.linalg.norm(null[0])), [0.8944, 0.4472, 0.0], atol=1e-4)
    np.testing.assert_allclose(null[0], -null[1], atol=1e-12)           # equal and opposite: a squeeze
    # minimum norm = no squeeze: the solution has no component along the null vector
    assert abs(r.unknowns @ null.ravel()) < 1e-12


def test_hexapod_tripod_with_paper_sharing_is_rank_5_when_the_middle_leg_is_at_x0():
    tripod = np.array([(0.3, 0.2, -0.1), (0.0, -0.2, -0.1), (-0.3, 0.2, -0.1)])
    assert resolve_ground_reactions(tripod, WEIGHT).rank == 5
    tripod[1, 0] = 0.02
    r = resolve_ground_reactions(tripod, WEIGHT)
    assert r.rank == 6 and np.linalg.cond(r.matrix) == pytest.approx(169, rel=0.01)


def test_full_scheme_and_no_stance():
    r = resolve_ground_reactions(QUAD, WEIGHT + [1, 2, 0, 0.1, -0.2, 0.3], scheme="full")
    assert r.matrix.shape == (6, 12) and r.rank == 6
    np.testing.assert_allclose(r.residual, 0, atol=1e-12)
    r = resolve_ground_reactions(np.zeros((0, 3)), WEIGHT)
    assert r.forces.shape == (0, 3) and np.allclose(r.residual, -WEIGHT)
    with pytest.raises(ValueError, match="scheme"):
        resolve_ground_reactions(QUAD, WEIGHT, scheme="equal")
    with pytest.raises(ValueError, match="wrench"):
        resolve_ground_reactions(QUAD, WEIGHT[:5])
    with pytest.raises(ValueError, match="feet"):
        resolve_ground_reactions(QUAD[:, :2], WEIGHT)


def paper_quadruped_urdf(l2=1.0, l3=1.0, hips=((0.3, 0.15), (0.3, -0.15), (-0.3, 0.15), (-0.3, -0.15))):
    """The paper's quadruped from its modified D-H table (Table 1): frame 0 with the right-handed fix
    x0 = y_b, y0 = -x_b (Rz(+90 deg)); RotX(alpha) TransX(a) per row = URDF origin xyz=(a,0,0) rpy=(alpha,0,0)."""
    rows = [(np.pi / 2, 0.0), (-np.pi / 2, 0.0), (0.0, l2)]
    out = ['<robot name="quad"><link name="body"><inertial><mass value="8"/>'
           '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.3" iyz="0" izz="0.35"/></inertial></link>']
    for leg, (x, y) in zip(("FL", "FR", "BL", "BR"), hips):
        out.append(f'<joint name="frame0_{leg}" type="fixed"><parent link="body"/><child link="f0_{leg}"/>'
                   f'<origin xyz="{x} {y} 0" rpy="0 0 {np.pi / 2}"/></joint><link name="f0_{leg}"/>')
        parent = f"f0_{leg}"
        for k, (alpha, a) in enumerate(rows):
            link = f"link{k + 1}_{leg}"
            out.append(f'<joint name="j{k + 1}_{leg}" type="revolute"><parent link="{parent}"/>'
                       f'<child link="{link}"/><origin xyz="{a} 0 0" rpy="{alpha} 0 0"/><axis xyz="0 0 1"/></joint>'
                       f'<link name="{link}"><inertial><origin xyz="{0.5 * (l2 if k else 0.05)} 0 0"/>'
                       f'<mass value="{(0.3, 0.8, 0.4)[k]}"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.02" '
                       f'iyz="0" izz="0.02"/></inertial></link>')
            parent = link
        out.append(f'<joint name="foot_{leg}" type="fixed"><parent link="{parent}"/><child link="foot_{leg}"/>'
                   f'<origin xyz="{l3} 0 0"/></joint><link name="foot_{leg}"/>')
    return "".join(out) + "</robot>"


@pytest.fixture(scope="module")
def quad():
    return NewtonEulerRobot.from_urdf_string(paper_quadruped_urdf())


def test_paper_dh_leg_forward_kinematics(quad):
    """NE-T5: (theta1, theta2, theta3) = (-90, 45, -45) deg, l2 = l3 = 1: knee (-0.7071, 0, -0.7071) and
    foot (-0.7071, 0, -1.7071) relative to the hip."""
    q = np.tile(np.radians([-90.0, 45.0, -45.0]), 4)
    hip = np.array([0.3, 0.15, 0.0])
    np.testing.assert_allclose(quad.tip_poses(q)[0, :3, 3] - hip, [-0.7071068, 0, -1.7071068], atol=1e-7)
    assert quad.with_morphology([2, 3, 3, 3]).tip_names == quad.tip_names[1:]   # truncated leg: no foot


def standing(quad):
    q = np.tile(np.radians([-90.0, 45.0, -45.0]), 4)
    g = np.eye(4)
    g[2, 3] = 1.7071
    return g, q


def test_contact_inverse_dynamics_balances_the_body_and_round_trips(quad):
    g, q = standing(quad)
    rng = np.random.default_rng(4)
    v = np.r_[rng.normal(size=6) * 0.1, rng.normal(size=12) * 0.2]
    a = np.r_[rng.normal(size=6) * 0.1, rng.normal(size=12) * 0.5]
    # static walk, FR lifted: the paper's 3-leg rule is square and full rank
    tau, grf = contact_inverse_dynamics(quad, g, q, v, a, [1, 0, 1, 1])
    assert grf.rank == 6 and not grf.least_squares
    np.testing.assert_allclose(tau[:6], 0, atol=1e-9)               # the base needs no actuation
    f = np.zeros((4, 3))
    f[[0, 2, 3]] = grf.forces
    np.testing.assert_allclose(quad.forward_dynamics(g, q, v, tau, f), a, atol=1e-8)
    # standing on four: rank 5, least squares, said so; standing still is consistent -> balanced
    tau, grf = contact_inverse_dynamics(quad, g, q, np.zeros(18), np.zeros(18), [1, 1, 1, 1])
    assert grf.rank == 5 and grf.least_squares and "rank 5" in grf.message
    np.testing.assert_allclose(tau[:6], 0, atol=1e-9)
    np.testing.assert_allclose(grf.forces[:, 2].sum(), quad.total_mass * 9.81, rtol=1e-12)


def test_jethexa_tripod_paper_rule_is_rank_deficient_full_scheme_is_not():
    ne = NewtonEulerRobot.jethexa()
    q = np.tile([0.0, 0.3, -0.6], 6)
    g = np.eye(4)
    stance = [1, 0, 1, 0, 1, 0]                                      # LF, LR, RM (middle leg at x = 0)
    feet = ne.tip_poses(q)[:, :3, 3]
    assert abs(feet[4, 0]) < 1e-9                                   # URDF yaw 1.57079633
    _, grf = contact_inverse_dynamics(ne, g, q, np.zeros(24), np.zeros(24), stance)
    assert grf.rank == 5 and grf.least_squares
    tau, grf = contact_inverse_dynamics(ne, g, q, np.zeros(24), np.zeros(24), stance, scheme="full")
    assert grf.rank == 6
    np.testing.assert_allclose(tau[:6], 0, atol=1e-10)
    # three contacts carrying the weight: vertical loads are the barycentric split (paper 001's A-T6 too)
    np.testing.assert_allclose(grf.forces[:, 2].sum(), ne.total_mass * 9.81, rtol=1e-12)
    with pytest.raises(ValueError, match="stance"):
        contact_inverse_dynamics(ne, g, q, np.zeros(24), np.zeros(24), [1, 0, 1])
