"""Stage B of the slipping model (paper 001): viscous-Coulomb friction and the local connection.

Oracles: extraction §3.3 (B-T1..B-T6), planar force/moment balance, an independent weighted least-squares
solve (numpy lstsq on stacked Cholesky-weighted rows), and frame covariance (rotating or mirroring the
whole input must rotate or mirror the output).
"""
import numpy as np
import pytest

from jethexa_dynamics.second_opinions.connection import body_twist, local_connection

S = np.array([[0.0, -1.0], [1.0, 0.0]])
Q = np.array([(0.3, 0.2), (0.0, -0.2), (-0.3, 0.2)])        # tripod of A-T2
F = np.array([0.25, 0.5, 0.25])


def rot(b):
    return np.array([[np.cos(b), -np.sin(b)], [np.sin(b), np.cos(b)]])


def random_case(rng, n):
    return (rng.normal(size=(n, 2)) * 0.2, rng.normal(size=(n, 2)) * 0.1, rng.uniform(0.1, 1, n),
            rng.uniform(0.5, 2, n), rng.normal(size=(n, 2)))


def test_uniform_backward_sweep_moves_body_forward():
    r = body_twist(Q, np.tile([-0.1, 0.0], (3, 1)), F)
    np.testing.assert_allclose(r.velocity, [0.1, 0.0], atol=1e-15)
    assert abs(r.yaw_rate) < 1e-15 and np.abs(r.forces).max() < 1e-15


def test_rigid_rotation_of_feet_gives_yaw():
    r = body_twist(Q, -0.5 * Q @ S.T, F)
    np.testing.assert_allclose(r.velocity, 0, atol=1e-15)
    assert r.yaw_rate == pytest.approx(0.5) and np.abs(r.forces).max() < 1e-15


def test_scale_invariance_of_velocity_and_linear_force_scaling():
    qd = np.random.default_rng(0).normal(size=(3, 2)) * 0.1
    a = body_twist(Q, qd, F, mu=1.0)
    b = body_twist(Q, qd, 7 * F, mu=3.0)
    np.testing.assert_allclose(b.velocity, a.velocity, atol=1e-14)
    np.testing.assert_allclose(b.yaw_rate, a.yaw_rate, atol=1e-14)
    np.testing.assert_allclose(b.forces, 21 * a.forces, atol=1e-14)


def test_balance_and_weighted_least_squares_oracle():
    rng = np.random.default_rng(1)
    for n in range(2, 8):
        q, qd, Fz, mu, w = random_case(rng, n)
        r = body_twist(q, qd, Fz, mu, w)
        np.testing.assert_allclose(r.forces.sum(0), 0, atol=1e-14)
        np.testing.assert_allclose(np.einsum("ni,ij,nj->", q, S, r.forces), 0, atol=1e-14)
        rows, rhs = [], []
        for k in range(n):
            L = np.linalg.cholesky(mu[k] * Fz[k] * (np.eye(2) + np.outer(w[k], w[k]))).T
            rows.append(L @ np.column_stack([np.eye(2), S @ q[k]]))
            rhs.append(-L @ qd[k])
        x = np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=None)[0]
        np.testing.assert_allclose(np.r_[r.velocity, r.yaw_rate], x, atol=1e-12)
        # the friction law itself: f = -mu F (I + w w^T) (slip velocity)
        slip = r.velocity + r.yaw_rate * q @ S.T + qd
        f = -np.einsum("n,nij,nj->ni", mu * Fz, np.eye(2) + w[:, :, None] * w[:, None, :], slip)
        np.testing.assert_allclose(r.forces, f, atol=1e-14)


def test_local_connection_reproduces_body_twist():
    rng = np.random.default_rng(2)
    q, qd, Fz, mu, w = random_case(rng, 5)
    A = local_connection(q, Fz, mu, w)
    r = body_twist(q, qd, Fz, mu, w)
    np.testing.assert_allclose(np.einsum("ink,nk->i", A, qd), np.r_[r.velocity, r.yaw_rate], atol=1e-13)


def test_frame_covariance_rotation_and_mirror():
    rng = np.random.default_rng(3)
    q, qd, Fz, mu, w = random_case(rng, 6)
    r = body_twist(q, qd, Fz, mu, w)
    Rb = rot(0.7)
    rr = body_twist(q @ Rb.T, qd @ Rb.T, Fz, mu, w @ Rb.T)
    np.testing.assert_allclose(rr.velocity, Rb @ r.velocity, atol=1e-13)
    np.testing.assert_allclose(rr.yaw_rate, r.yaw_rate, atol=1e-13)
    Mx = np.diag([1.0, -1.0])
    rm = body_twist(q @ Mx, qd @ Mx, Fz, mu, w @ Mx)
    np.testing.assert_allclose(rm.velocity, Mx @ r.velocity, atol=1e-13)
    np.testing.assert_allclose(rm.yaw_rate, -r.yaw_rate, atol=1e-13)


def test_anisotropy_favours_the_enhanced_traction_direction():
    # two feet pushing diagonally back-left; strong traction along x only -> body follows the x component
    q = np.array([(0.1, 0.1), (-0.1, -0.1)])
    qd = np.tile([-0.1, -0.1], (2, 1))
    iso = body_twist(q, qd, [0.5, 0.5])
    np.testing.assert_allclose(iso.velocity, [0.1, 0.1], atol=1e-14)   # no slip possible: pure translation
    # one foot slips: feet move apart along y; anisotropy along y on foot 0 makes foot 0 the anchor
    qd = np.array([(0.0, -0.1), (0.0, 0.1)])
    r = body_twist(q, qd, [0.5, 0.5], anisotropy=[(0.0, 3.0), (0.0, 0.0)])
    slip0 = r.velocity + r.yaw_rate * S @ q[0] + qd[0]
    slip1 = r.velocity + r.yaw_rate * S @ q[1] + qd[1]
    assert abs(slip0[1]) < abs(slip1[1])


def test_single_and_no_contact_are_handled():
    r = body_twist(Q[:1], [[0.05, -0.02]], [1.0])
    assert r.single_contact and not r.no_contact
    np.testing.assert_allclose(r.velocity, [-0.05, 0.02], atol=1e-15)    # the lone foot does not slip
    assert r.yaw_rate == 0.0
    r = body_twist(np.array([(0.1, 0.1), (0.1, 0.1)]), [[0.05, 0.0], [0.01, 0.0]], [1.0, 1.0])
    assert r.single_contact and np.all(np.isfinite(r.velocity))
    r = body_twist(Q, np.ones((3, 2)), np.zeros(3))
    assert r.no_contact and np.all(r.velocity == 0) and r.yaw_rate == 0
    # batched: one frame single, one frame normal
    rb = body_twist(np.stack([Q, Q]), np.zeros((2, 3, 2)), np.array([[1, 0, 0], F]))
    np.testing.assert_array_equal(rb.single_contact, [True, False])


@pytest.mark.parametrize("args, field", [
    ((np.zeros((0, 2)), np.zeros((0, 2)), np.zeros(0)), "feet_xy"),
    ((Q, np.zeros((2, 2)), F), "feet_velocity_xy"),
    ((Q, np.zeros((3, 2)), F[:2]), "loads"),
    ((Q, np.zeros((3, 2)), -F), "loads"),
    ((Q, np.full((3, 2), np.nan), F), "feet_velocity_xy"),
])
def test_bad_input_names_the_field(args, field):
    with pytest.raises(ValueError, match=field):
        body_twist(*args)


def test_bad_mu_and_anisotropy():
    with pytest.raises(ValueError, match="mu"):
        body_twist(Q, np.zeros((3, 2)), F, mu=[1.0, 2.0])
    with pytest.raises(ValueError, match="anisotropy"):
        body_twist(Q, np.zeros((3, 2)), F, anisotropy=np.zeros((4, 2)))
