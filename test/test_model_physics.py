"""Structural and physical properties of the model (no external oracle needed: laws of mechanics).

- M symmetric positive definite; total mass in the base block.
- Ṁ - 2C skew-symmetric, i.e. Ṁ = C + C^T, with Ṁ by central finite differences of M: this checks the
  closed-form derivatives of Lemma 3 as corrected in the extraction §1.13.
- The paper's printed eq. (35) fails the same finite-difference check (the erratum is real).
- Free flight (no gravity, no contact): kinetic energy and world-frame momentum conserved over 2 s.
- With gravity: total energy conserved; the pose stays on SE(3); tumbling through ±90° pitch is harmless
  (singularity-free).
"""
import numpy as np
import pytest

from jethexa_dynamics.model import LeggedRobot, Morphology, se3
from jethexa_dynamics.model.integrators import rkmk4_step, semi_implicit_euler_step
from robot_factory import random_robot_urdf


@pytest.fixture(scope="module")
def hexa():
    return LeggedRobot.jethexa()


def _robots(hexa):
    yield hexa
    yield hexa.with_morphology(Morphology.from_vector(hexa, [3, 1, 0, 2, 3, 3]))
    for seed in (11, 12, 13):
        yield LeggedRobot.from_urdf_string(random_robot_urdf(seed))


def test_mass_matrix_spd_and_total_mass(hexa):
    rng = np.random.default_rng(0)
    for robot in _robots(hexa):
        for _ in range(20):
            q = rng.uniform(-2, 2, robot.nv - 6)
            M = robot.mass_matrix(q)
            assert np.array_equal(M, M.T)
            np.linalg.cholesky(M)
            assert np.allclose(M[:3, :3], robot.total_mass * np.eye(3), rtol=1e-13, atol=0)
    assert abs(hexa.total_mass - 2.55) < 1e-12


def test_mdot_minus_2c_is_skew_and_mdot_matches_finite_differences(hexa):
    """Ṁ by central finite differences of M along θ̇. The skew factorization has Ṁ - 2C skew (so
    Ṁ = C + C^T: the corrected Lemma 3 derivatives are right); the paper's eq. 36 C is passive along v
    only, and both give the same C v."""
    rng = np.random.default_rng(1)
    for robot in _robots(hexa):
        for _ in range(4):
            q = rng.uniform(-1.5, 1.5, robot.nv - 6)
            v = rng.normal(size=robot.nv)
            eps = 1e-6
            Mdot = (robot.mass_matrix(q + eps * v[6:]) - robot.mass_matrix(q - eps * v[6:])) / (2 * eps)
            scale = np.abs(Mdot).max()
            Cs = robot.coriolis_matrix(q, v, factorization="skew")
            N = Mdot - 2 * Cs
            assert np.abs(N + N.T).max() < 1e-7 * scale
            assert np.abs(Mdot - (Cs + Cs.T)).max() < 1e-7 * scale
            Cp = robot.coriolis_matrix(q, v)
            assert abs(v @ (Mdot - 2 * Cp) @ v) < 1e-7 * scale * (v @ v)
            assert np.allclose(Cp @ v, Cs @ v, rtol=0, atol=1e-12 * (1 + np.abs(Cp @ v).max()))
            Np = Mdot - 2 * Cp
            assert np.abs(Np + Np.T).max() > 1e-3 * scale   # the paper's C is not a skew factorization


def test_coriolis_matrix_times_v_plus_gravity_is_bias(hexa):
    rng = np.random.default_rng(2)
    for robot in _robots(hexa):
        g = se3.exp6(rng.normal(size=6))
        q = rng.uniform(-1, 1, robot.nv - 6)
        v = rng.normal(size=robot.nv)
        Cv = robot.coriolis_matrix(q, v) @ v
        assert np.allclose(Cv + robot.gravity_forces(g, q), robot.bias_forces(g, q, v), rtol=0, atol=1e-12 * (
            1 + np.abs(Cv).max()))


def test_paper_printed_eq35_fails_finite_differences_and_corrected_form_passes():
    """∂(_i𝔄𝔡_j^1)/∂θ_k with 𝔄𝔡_j^k = Ad^-1(e^{ξk θk} ... e^{ξj θj}). Printed: -𝔄𝔡_j^{k-1} ad_ξk 𝔄𝔡_k^1 for
    k < j; corrected: -𝔄𝔡_j^{k+1} ad_ξk 𝔄𝔡_k^1 for 1 <= k <= j (identity when k = j)."""
    rng = np.random.default_rng(4)
    xis = [se3.revolute_twist(rng.normal(size=3), rng.normal(size=3)) for _ in range(3)]
    th = rng.uniform(-1, 1, 3)

    def AD(j, k, t):   # 1-based, identity when k > j or k == 0 per (29) boundary
        if k == 0 or k > j:
            return np.eye(6)
        g = np.eye(4)
        for m in range(k, j + 1):
            g = g @ se3.exp6(xis[m - 1], t[m - 1])
        return np.linalg.inv(se3.Ad(g))

    j = 3
    for k in (1, 2, 3):
        e = np.zeros(3)
        e[k - 1] = 1e-6
        fd = (AD(j, 1, th + e) - AD(j, 1, th - e)) / 2e-6
        corrected = -AD(j, k + 1, th) @ se3.ad(xis[k - 1]) @ AD(k, 1, th)
        printed = -AD(j, k - 1, th) @ se3.ad(xis[k - 1]) @ AD(k, 1, th) if k < j else np.zeros((6, 6))
        assert np.abs(corrected - fd).max() < 1e-7
        assert np.abs(printed - fd).max() > 1e-2


def _world_momentum(robot, g, q, v):
    """Spatial momentum of the whole robot about the world origin, world axes: Ad_g^-T (M v)_base."""
    P = (robot.mass_matrix(q) @ v)[:6]       # body-frame wrench-like momentum [p; L] at the base origin
    R, p = g[:3, :3], g[:3, 3]
    lin = R @ P[:3]
    ang = R @ P[3:] + np.cross(p, lin)
    return np.r_[lin, ang]


@pytest.mark.slow
def test_free_flight_conserves_energy_and_world_momentum(hexa):
    robot = hexa.with_gravity([0, 0, 0])
    rng = np.random.default_rng(5)
    g = se3.exp6(rng.normal(size=6))
    q = rng.uniform(-0.8, 0.8, robot.nv - 6)
    v = rng.normal(size=robot.nv) * 0.5
    E0 = robot.kinetic_energy(q, v)
    h0 = _world_momentum(robot, g, q, v)
    dt = 1e-3
    for _ in range(2000):
        g, q, v = rkmk4_step(robot, g, q, v, dt)
    assert abs(robot.kinetic_energy(q, v) - E0) / E0 < 1e-8
    assert np.abs(_world_momentum(robot, g, q, v) - h0).max() < 1e-7 * max(1.0, np.abs(h0).max())
    assert np.abs(g[:3, :3].T @ g[:3, :3] - np.eye(3)).max() < 1e-12


def test_semi_implicit_euler_energy_error_stays_small(hexa):
    robot = hexa.with_gravity([0, 0, 0])
    rng = np.random.default_rng(6)
    g = np.eye(4)
    q = rng.uniform(-0.5, 0.5, robot.nv - 6)
    v = rng.normal(size=robot.nv) * 0.3
    E0 = robot.kinetic_energy(q, v)
    tau = np.zeros(robot.nv)
    errs = []
    for _ in range(1000):
        g, q, v = semi_implicit_euler_step(robot, g, q, v, robot.forward_dynamics(g, q, v, tau), 1e-3)
        errs.append(abs(robot.kinetic_energy(q, v) - E0) / E0)
    assert max(errs) < 2e-2


def test_total_energy_conserved_with_gravity_and_tumbling_through_90_deg_pitch(hexa):
    """A body tumbling about its y axis passes pitch = ±90° (gimbal lock for ZYX Euler angles):
    the SE(3) formulation does not care."""
    robot = hexa
    q = np.tile([0.0, 0.3, -0.4], 6)
    v = np.zeros(robot.nv)
    v[4] = 4.0      # 4 rad/s about body y: passes 90° pitch within 0.4 s
    g = np.eye(4)

    def energy(g, q, v):
        return robot.kinetic_energy(q, v) - robot.total_mass * -9.81 * 0 + _potential(robot, g, q)

    E0 = energy(g, q, v)
    pitches = []
    for _ in range(600):
        g, q, v = rkmk4_step(robot, g, q, v, 1e-3)
        pitches.append(np.arctan2(-g[2, 0], np.hypot(g[0, 0], g[1, 0])))
    assert max(np.abs(pitches)) > np.deg2rad(89)
    assert abs(energy(g, q, v) - E0) < 1e-7 * (abs(E0) + 1)
    assert np.all(np.isfinite(v))


def _potential(robot, g, q):
    """U = -Σ m g_s·p over the body and links, from the model's own link data (X_b CoMs via kinematics)."""
    from jethexa_dynamics.model import kernels
    d = robot.description
    U = -d.body_mass * (robot.gravity @ (g[:3, :3] @ d.body_com + g[:3, 3]))
    qf = robot._q_full(q)
    n = d.xi.shape[1]
    for i in range(len(d.legs)):
        R = np.empty((n, 3, 3)); p = np.empty((n, 3)); xp = np.empty((n, 6)); c = np.empty((n, 3)); Ic = np.empty((n, 3, 3))  # noqa: E702
        kernels.leg_kinematics(robot.kernel_data, i, qf, R, p, xp, c, Ic)
        for k in range(robot.morphology.links_per_leg[i]):
            U -= d.mass[i, k] * (robot.gravity @ (g[:3, :3] @ c[k] + g[:3, 3]))
    return U


def test_gravity_is_gradient_of_potential(hexa):
    """𝒩 = ∂U (eq. 9): joint rows by finite differences in θ, base rows along g e^{φ}."""
    rng = np.random.default_rng(8)
    for robot in (hexa, hexa.with_morphology(Morphology.from_vector(hexa, [3, 2, 1, 0, 3, 3]))):
        g = se3.exp6(rng.normal(size=6))
        q = rng.uniform(-1, 1, robot.nv - 6)
        N = robot.gravity_forces(g, q)
        eps = 1e-6
        for k in range(robot.nv):
            if k < 6:
                e = np.zeros(6)
                e[k] = eps
                d = (_potential(robot, g @ se3.exp6(e), q) - _potential(robot, g @ se3.exp6(-e), q)) / (2 * eps)
            else:
                e = np.zeros(robot.nv - 6)
                e[k - 6] = eps
                d = (_potential(robot, g, q + e) - _potential(robot, g, q - e)) / (2 * eps)
            assert abs(d - N[k]) < 1e-7 * (1 + np.abs(N).max())


def test_compiled_helpers_match_plain_screw_theory(hexa):
    """Closed-form M^bb and the SE(3) step equal the readable Ad^-T I Ad^-1 and expm forms."""
    from scipy.linalg import expm
    from jethexa_dynamics.model import kernels
    rng = np.random.default_rng(9)
    for _ in range(20):
        m = rng.uniform(0.1, 2)
        c = rng.normal(size=3)
        A = rng.normal(size=(3, 3))
        Ic = A @ A.T
        gcm = np.eye(4)
        gcm[:3, 3] = c
        Acm = np.linalg.inv(se3.Ad(gcm))
        ref = Acm.T @ np.block([[m * np.eye(3), np.zeros((3, 3))], [np.zeros((3, 3)), Ic]]) @ Acm
        out = np.empty((6, 6))
        kernels._inertia_matrix(m, c, Ic, out)
        assert np.allclose(out, ref, atol=1e-12)
        assert np.allclose(out, se3.spatial_inertia(m, c, Ic), atol=1e-12)
        V = rng.normal(size=6)
        g0 = se3.exp6(rng.normal(size=6))
        R, p = g0[:3, :3].copy(), g0[:3, 3].copy()
        kernels.se3_step(R, p, V, 0.01)
        ref = g0 @ expm(se3.hat6(V) * 0.01)
        assert np.allclose(R, ref[:3, :3], atol=1e-12) and np.allclose(p, ref[:3, 3], atol=1e-12)


def test_forward_dynamics_with_joint_diagonal_equals_dense_solve(hexa):
    """kernels.forward_dynamics(..., joint_diag): (M + diag) v̇ = τ - C v - 𝒩, the implicit-damping solve."""
    from jethexa_dynamics.model import kernels
    rng = np.random.default_rng(10)
    for counts in ([3, 3, 3, 3, 3, 3], [3, 1, 0, 2, 3, 3]):
        robot = hexa.with_morphology(Morphology.from_vector(hexa, counts))
        q = rng.uniform(-1, 1, robot.nv - 6)
        v = rng.normal(size=robot.nv)
        tau = np.r_[np.zeros(6), rng.normal(size=robot.nv - 6)]
        d = rng.uniform(0.0, 0.01, robot.nv - 6)
        M = robot.mass_matrix(q)
        M[6:, 6:] += np.diag(d)
        ref = np.linalg.solve(M, tau - robot.bias_forces(np.eye(4), q, v))
        dfull = np.zeros(hexa.nv - 6)
        dfull[robot.joint_index_in_full] = d
        out = np.empty(hexa.nv)
        assert kernels.forward_dynamics(hexa.kernel_data, np.eye(3), robot._q_full(q), robot._v_full(v),
                                        robot._v_full(tau), np.zeros((6, 3)), robot.morphology.link_mask, out, dfull)
        assert np.abs(out[robot._vidx] - ref).max() < 1e-10 * np.abs(ref).max()


def test_rot_to_quat_matches_transforms3d():
    from transforms3d.quaternions import mat2quat, quat2mat
    rng = np.random.default_rng(13)
    mats = [se3.rot_exp(rng.normal(size=3)) for _ in range(200)]
    mats += [np.diag([1.0, -1.0, -1.0]), np.diag([-1.0, 1.0, -1.0]), np.diag([-1.0, -1.0, 1.0]), np.eye(3)]
    for R in mats:
        q = se3.rot_to_quat(R)
        ref = mat2quat(R)
        ref = ref if ref[0] >= 0 else -ref
        assert np.allclose(quat2mat(q), R, atol=1e-12)
        assert np.allclose(q, ref, atol=1e-9) or np.allclose(q, -ref, atol=1e-9)


def test_cross3_is_np_cross_bit_for_bit():
    """``se3.cross3`` (floats, used where np.cross's array handling dominates) gives np.cross's bits."""
    rng = np.random.default_rng(7)
    for a, b in rng.normal(size=(200, 2, 3)) * rng.choice([1e-9, 1.0, 1e6], size=(200, 2, 1)):
        np.testing.assert_array_equal(np.array(se3.cross3(a.tolist(), b.tolist())), np.cross(a, b))


def test_se3_step_matches_expm_across_scales_and_keeps_the_rotation_orthonormal():
    """kernels.se3_step (scalar code) against scipy's expm of the twist, from rotations of 1e-9 rad (the series
    branch, |φ| < 1e-6) to ~1 rad per step, pure translations included; and the Newton re-orthonormalisation: a
    rotation perturbed by 1e-6 is pulled back to orthonormal and 20000 steps stay there."""
    from scipy.linalg import expm
    from jethexa_dynamics.model import kernels
    rng = np.random.default_rng(21)
    for k in range(300):
        V = rng.normal(size=6) * 10.0 ** rng.uniform(-9, 2)
        if k % 50 == 0:
            V[3:] = 0.0
        g0 = se3.exp6(rng.normal(size=6))
        R, p = g0[:3, :3].copy(), g0[:3, 3].copy()
        kernels.se3_step(R, p, V, 0.01)
        ref = g0 @ expm(se3.hat6(V) * 0.01)
        assert np.abs(R - ref[:3, :3]).max() < 1e-14
        assert np.abs(p - ref[:3, 3]).max() < 1e-14 * max(1.0, np.abs(p).max())
    R = se3.exp6(rng.normal(size=6))[:3, :3] + 1e-6 * rng.normal(size=(3, 3))
    p = np.zeros(3)
    V = rng.normal(size=6)
    for _ in range(20000):
        kernels.se3_step(R, p, V, 1e-3)
    assert np.abs(R.T @ R - np.eye(3)).max() < 1e-14
