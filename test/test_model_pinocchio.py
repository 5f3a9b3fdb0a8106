"""The modular Boltzmann-Hamel model against Pinocchio (independent oracle), to 1e-10 relative.

JetHexa and randomly generated legged robots (2-12 legs, 1-4 joints per leg, random axes, offsets and
inertias, fixed frames to merge), healthy and with legs and links removed. Pinocchio builds its model from
the same URDF text (for damaged robots: a URDF that physically lacks the removed links).
"""
import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from jethexa_dynamics.model import LeggedRobot, Morphology  # noqa: E402
from pin_oracle import PinOracle, random_state, rel_err  # noqa: E402
from robot_factory import random_robot_params, urdf_from_params, urdf_without_links  # noqa: E402

TOL = 1e-10


def _check_all(robot, oracle, rng, n_states):
    for _ in range(n_states):
        g, q, v, tau = random_state(rng, robot)
        assert rel_err(robot.mass_matrix(q), oracle.M(g, q)) < TOL
        assert rel_err(robot.bias_forces(g, q, v), oracle.nle(g, q, v)) < TOL
        assert rel_err(robot.gravity_forces(g, q), oracle.gravity(g, q)) < TOL
        assert rel_err(robot.forward_dynamics(g, q, v, tau), oracle.aba(g, q, v, tau)) < TOL
        J = robot.tip_jacobian(q)
        poses = robot.tip_poses(q)
        for k, frame in enumerate(robot.tip_names):
            assert rel_err(J[6 * k:6 * k + 6], oracle.frame_jacobian_local(g, q, frame)) < TOL
            assert rel_err(g @ poses[k], oracle.frame_pose(g, q, frame)) < TOL


def test_jethexa_matches_pinocchio_on_200_states():
    robot = LeggedRobot.jethexa()
    with open(robot.urdf_path) as f:
        oracle = PinOracle(f.read(), robot)
    _check_all(robot, oracle, np.random.default_rng(1), 200)


@pytest.mark.parametrize("seed", range(24))
def test_random_legged_robot_matches_pinocchio(seed):
    rng = np.random.default_rng(1000 + seed)
    P = random_robot_params(rng)
    text = urdf_from_params(P)
    robot = LeggedRobot.from_urdf_string(text)
    assert len(robot.leg_names) == len(P["legs"])
    _check_all(robot, PinOracle(text, robot), rng, 10)


@pytest.mark.parametrize("seed", range(12))
def test_damaged_random_robot_matches_pinocchio_built_without_the_links(seed):
    """Modularity: the reduced model (morphology vectors, Algorithm 1) equals Pinocchio's model of a URDF
    that physically lacks the removed links and legs."""
    rng = np.random.default_rng(2000 + seed)
    P = random_robot_params(rng, n_legs=int(rng.integers(3, 9)))
    n = [len(leg["links"]) for leg in P["legs"]]
    keep = [int(rng.integers(0, k + 1)) for k in n]
    keep[0] = n[0]  # keep at least one whole leg
    healthy = LeggedRobot.from_urdf_string(urdf_from_params(P))
    damaged = healthy.with_morphology(Morphology.from_vector(healthy, keep))
    text = urdf_from_params(P, keep)
    _check_all(damaged, PinOracle(text, damaged), rng, 8)


def test_jethexa_paper_damage_scenarios_match_pinocchio():
    robot = LeggedRobot.jethexa()
    rng = np.random.default_rng(7)
    for counts in ([3, 0, 3, 3, 0, 3], [3, 1, 3, 3, 3, 1], [2, 3, 1, 0, 3, 3]):
        damaged = robot.with_morphology(Morphology.from_vector(robot, counts))
        # the same URDF with the lost links (and their joints/feet) deleted
        text = urdf_without_links(robot.urdf_path, robot.leg_names, counts)
        _check_all(damaged, PinOracle(text, damaged), rng, 20)


def test_morphology_bank_equals_individual_reduced_models():
    robot = LeggedRobot.jethexa()
    rng = np.random.default_rng(3)
    g, q, v, tau = random_state(rng, robot)
    f = rng.normal(size=(6, 3))
    hyps = [Morphology.from_vector(robot, rng.integers(0, 4, size=6)) for _ in range(40)]
    hyps = [h for h in hyps if any(h.links_per_leg)]
    bank = robot.forward_dynamics_bank(g, q, v, tau, hyps, tip_forces=f)
    for h, row in zip(hyps, bank):
        red = robot.with_morphology(h)
        idx = red._vidx
        tips = [robot.tip_legs.index(leg) for leg in red.tip_legs]
        ref = red.forward_dynamics(g, q[red.joint_index_in_full], v[idx], tau[idx], tip_forces=f[tips])
        assert rel_err(row[idx], ref) < 1e-12
        mask = np.ones(robot.nv, bool)
        mask[idx] = False
        assert not row[mask].any()   # removed DoFs: zero acceleration (reshaped away)


def test_tip_forces_enter_as_jacobian_transpose():
    """forward_dynamics with world-frame foot forces == aba with 𝒥^T F added to tau (Pinocchio)."""
    robot = LeggedRobot.jethexa()
    with open(robot.urdf_path) as fh:
        oracle = PinOracle(fh.read(), robot)
    rng = np.random.default_rng(5)
    for _ in range(20):
        g, q, v, tau = random_state(rng, robot)
        f = rng.normal(size=(6, 3))
        extra = np.zeros(robot.nv)
        for k, frame in enumerate(robot.tip_names):
            J = oracle.frame_jacobian_local(g, q, frame)
            R_sf = oracle.frame_pose(g, q, frame)[:3, :3]
            extra += J.T @ np.r_[R_sf.T @ f[k], np.zeros(3)]
        assert rel_err(robot.forward_dynamics(g, q, v, tau, tip_forces=f), oracle.aba(g, q, v, tau + extra)) < TOL


def test_with_body_matches_pinocchio_built_from_a_urdf_with_that_body():
    """``LeggedRobot.with_body`` (a payload / heavier robot: mass, CoM, inertia scaled with the mass) against
    Pinocchio built from the URDF text with base_link's inertial rewritten the same way; the shared robot is
    left as it was; bad values name the field."""
    import re

    robot = LeggedRobot.jethexa()
    before = robot.gravity_forces(np.eye(4), np.zeros(18)).copy()
    mass, com = 1.7, (0.012, -0.004, 0.003)
    heavy = robot.with_body(mass, com)
    with open(robot.urdf_path) as f:
        text = f.read()
    i = text.index('<link name="base_link">')
    j = text.index("</link>", i)
    scale = mass / robot.description.body_mass
    block = re.sub(r'(ixx|iyy|izz|ixy|ixz|iyz)="([-0-9.eE+]+)"',
                   lambda m: '%s="%.12g"' % (m.group(1), float(m.group(2)) * scale), text[i:j])
    block = re.sub(r'<mass value="[^"]+"/>', '<mass value="%.12g"/>' % mass, block)
    block = re.sub(r'(<inertial>\s*<origin xyz=")[^"]+"', lambda m: m.group(1) + '%.12g %.12g %.12g"' % com, block)
    oracle = PinOracle(text[:i] + block + text[j:], heavy)
    _check_all(heavy, oracle, np.random.default_rng(5), 50)
    assert abs(heavy.total_mass - robot.total_mass - (mass - robot.description.body_mass)) < 1e-12
    np.testing.assert_array_equal(robot.gravity_forces(np.eye(4), np.zeros(18)), before)
    with pytest.raises(ValueError, match="body mass"):
        robot.with_body(-1.0)
    with pytest.raises(ValueError, match="body com"):
        robot.with_body(1.4, (0.5, 0.0, 0.0))
