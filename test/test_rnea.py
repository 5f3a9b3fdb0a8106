"""Recursive Newton-Euler (paper 004) against the Boltzmann-Hamel model and Pinocchio, to 1e-10 relative.

The RNEA builds its own per-leg chains from the URDF; the oracles are the project's modular Boltzmann-Hamel
model (``LeggedRobot``) and Pinocchio (crba, nonLinearEffects, rnea, frame Jacobians) on the same URDF text,
joints mapped by name. Random robots come from the core's generator (2-12 legs, 1-4 joints per leg, random
axes, placements and inertias, massive fixed frames to merge), healthy and with links removed. A planar
two-link leg checks Walker-Orin's M against the textbook closed form.
"""
import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from jethexa_dynamics.model import LeggedRobot, Morphology  # noqa: E402
from jethexa_dynamics.second_opinions.rnea import NewtonEulerRobot  # noqa: E402
from pin_oracle import PinOracle, random_state, rel_err  # noqa: E402
from robot_factory import random_robot_params, urdf_from_params  # noqa: E402

TOL = 1e-10


def pin_rnea(oracle, g, q, v, a):
    return oracle.back(pin.rnea(oracle.model, oracle.data, oracle.config(g, q), oracle.vel(v), oracle.vel(a)))


def check(ne, bh, oracle, rng, n_states):
    assert ne.joint_names == bh.joint_names and ne.tip_names == bh.tip_names
    for _ in range(n_states):
        g, q, v, tau = random_state(rng, ne)
        a = rng.normal(size=ne.nv)
        f = rng.normal(size=(len(ne.tip_names), 3)) * 5
        M = ne.mass_matrix(q)
        assert rel_err(M, bh.mass_matrix(q)) < TOL and rel_err(M, oracle.M(g, q)) < TOL
        h = ne.bias_forces(g, q, v)
        assert rel_err(h, bh.bias_forces(g, q, v)) < TOL and rel_err(h, oracle.nle(g, q, v)) < TOL
        assert rel_err(ne.gravity_forces(g, q), bh.gravity_forces(g, q)) < TOL
        assert rel_err(ne.coriolis_forces(q, v), h - bh.gravity_forces(g, q)) < TOL
        tid = ne.inverse_dynamics(g, q, v, a)
        assert rel_err(tid, bh.mass_matrix(q) @ a + bh.bias_forces(g, q, v)) < TOL
        assert rel_err(tid, pin_rnea(oracle, g, q, v, a)) < TOL
        # foot forces: forward dynamics against the core model, and the round trip through RNEA
        if len(ne.tip_names):
            fd = ne.forward_dynamics(g, q, v, tau, f)
            assert rel_err(fd, bh.forward_dynamics(g, q, v, tau, f)) < TOL
            assert rel_err(ne.inverse_dynamics(g, q, v, fd, f), tau) < 1e-9
            # superposition (NE-T7, generalized): ID(f) - ID(0) = -J^T [f in the tip frame; 0]
            Rw = g[:3, :3] @ ne.tip_poses(q)[:, :3, :3]
            F = np.concatenate([np.einsum("kji,kj->ki", Rw, f), np.zeros_like(f)], axis=1).ravel()
            J = np.vstack([oracle.frame_jacobian_local(g, q, name) for name in ne.tip_names])
            assert rel_err(ne.inverse_dynamics(g, q, v, a, f) - tid, -J.T @ F) < TOL
        assert rel_err(ne.tip_poses(q), bh.tip_poses(q)) < TOL


def test_jethexa_matches_boltzmann_hamel_and_pinocchio():
    ne, bh = NewtonEulerRobot.jethexa(), LeggedRobot.jethexa()
    with open(bh.urdf_path) as fh:
        oracle = PinOracle(fh.read(), bh)
    check(ne, bh, oracle, np.random.default_rng(3), 20)
    assert ne.total_mass == pytest.approx(bh.total_mass, rel=1e-14)
    np.testing.assert_allclose(ne.center_of_mass(np.zeros(18)),
                               pin.centerOfMass(oracle.model, oracle.data, oracle.config(np.eye(4), np.zeros(18))),
                               atol=1e-15)


@pytest.mark.parametrize("seed", range(10))
def test_random_legged_robots(seed):
    rng = np.random.default_rng(7000 + seed)
    text = urdf_from_params(random_robot_params(rng))
    ne, bh = NewtonEulerRobot.from_urdf_string(text), LeggedRobot.from_urdf_string(text)
    check(ne, bh, PinOracle(text, bh), rng, 4)


@pytest.mark.parametrize("seed", range(5))
def test_damaged_random_robots(seed):
    """with_morphology on the RNEA chains = the core's reduced model = Pinocchio on a URDF without the
    lost links."""
    rng = np.random.default_rng(8000 + seed)
    P = random_robot_params(rng, n_legs=int(rng.integers(3, 8)))
    n = [len(leg["links"]) for leg in P["legs"]]
    keep = [int(rng.integers(0, k + 1)) for k in n]
    keep[0] = n[0]
    text = urdf_from_params(P)
    ne = NewtonEulerRobot.from_urdf_string(text).with_morphology(keep)
    bh = LeggedRobot.from_urdf_string(text)
    bh = bh.with_morphology(Morphology.from_vector(bh, keep))
    check(ne, bh, PinOracle(urdf_from_params(P, keep), bh), rng, 3)


def test_jethexa_paper_damage_scenarios():
    ne, bh = NewtonEulerRobot.jethexa(), LeggedRobot.jethexa()
    rng = np.random.default_rng(5)
    for counts in ([3, 0, 3, 3, 0, 3], [3, 1, 3, 3, 3, 1]):
        d_ne, d_bh = ne.with_morphology(counts), bh.with_morphology(counts)
        assert d_ne.joint_names == d_bh.joint_names and d_ne.tip_names == d_bh.tip_names
        g, q, v, tau = random_state(rng, d_ne)
        f = rng.normal(size=(len(d_ne.tip_names), 3))
        assert rel_err(d_ne.mass_matrix(q), d_bh.mass_matrix(q)) < TOL
        assert rel_err(d_ne.forward_dynamics(g, q, v, tau, f), d_bh.forward_dynamics(g, q, v, tau, f)) < TOL
    # a core Morphology object is accepted too
    m = Morphology.from_vector(bh, [3, 0, 3, 3, 0, 3])
    assert ne.with_morphology(m).joint_names == bh.with_morphology(m).joint_names


PLANAR = """<?xml version="1.0"?><robot name="arm">
<link name="base"><inertial><mass value="2"/>
 <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.03"/></inertial></link>
<joint name="j1_A" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/></joint>
<link name="l1"><inertial><origin xyz="{lc1} 0 0"/><mass value="{m1}"/>
 <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2e-4" iyz="0" izz="{I1}"/></inertial></link>
<joint name="j2_A" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="{l1} 0 0"/>
 <axis xyz="0 0 1"/></joint>
<link name="l2"><inertial><origin xyz="{lc2} 0 0"/><mass value="{m2}"/>
 <inertia ixx="1e-4" ixy="0" ixz="0" iyy="2e-4" iyz="0" izz="{I2}"/></inertial></link>
<joint name="foot_A" type="fixed"><parent link="l2"/><child link="foot"/><origin xyz="0.3 0 0"/></joint>
<link name="foot"/></robot>"""


def test_walker_orin_mass_matrix_of_a_planar_two_link_leg_is_the_textbook_one():
    p = dict(l1=0.4, lc1=0.15, lc2=0.12, m1=0.7, m2=0.4, I1=0.011, I2=0.007)
    ne = NewtonEulerRobot.from_urdf_string(PLANAR.format(**p))
    for q2 in (-1.2, 0.0, 0.4, 2.0):
        M = ne.mass_matrix([0.3, q2])
        c = np.cos(q2)
        m12 = p["I2"] + p["m2"] * (p["lc2"] ** 2 + p["l1"] * p["lc2"] * c)
        fixed = np.array([[p["I1"] + p["I2"] + p["m1"] * p["lc1"] ** 2
                           + p["m2"] * (p["l1"] ** 2 + p["lc2"] ** 2 + 2 * p["l1"] * p["lc2"] * c), m12],
                          [m12, p["I2"] + p["m2"] * p["lc2"] ** 2]])
        np.testing.assert_allclose(M[6:, 6:], fixed, rtol=1e-13)
        np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-15)
        np.linalg.cholesky(M)                             # positive definite


def test_bad_input_names_the_field():
    ne = NewtonEulerRobot.jethexa()
    g, q = np.eye(4), np.zeros(18)
    with pytest.raises(ValueError, match="q"):
        ne.mass_matrix(np.zeros(17))
    with pytest.raises(ValueError, match="q"):
        ne.bias_forces(g, np.full(18, np.nan), np.zeros(24))
    with pytest.raises(ValueError, match="v"):
        ne.bias_forces(g, q, np.zeros(23))
    with pytest.raises(ValueError, match="g_sb"):
        ne.gravity_forces(np.eye(3), q)
    with pytest.raises(ValueError, match="tip_forces"):
        ne.forward_dynamics(g, q, np.zeros(24), np.zeros(24), np.zeros((5, 3)))
    with pytest.raises(ValueError, match="tau"):
        ne.forward_dynamics(g, q, np.zeros(24), np.zeros(18))
    with pytest.raises(ValueError, match="morphology"):
        ne.with_morphology([3, 3, 3])
    with pytest.raises(ValueError, match="morphology"):
        ne.with_morphology([0] * 6)
    with pytest.raises(ValueError, match="urdf"):
        NewtonEulerRobot.from_urdf_string('<robot name="x"><link name="a"/><link name="b"/></robot>')
