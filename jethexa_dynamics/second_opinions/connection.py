"""Stage B of the slipping model (paper 001 §4.2-4.3, appendix 6.2): friction law and local connection.

Viscous-Coulomb ansatz with anisotropy (eq. 15), body frame:  f_k = -mu_k F_k (I + w_k w_k^T) u_k,
where u_k = v + omega S q_k + qdot_k is the slip velocity of contact k (S = 90 deg rotation), v the body's
planar velocity and omega its yaw rate, all in the body frame. Quasi-static planar balance
sum f_k = 0, sum q_k x f_k = 0 is a 3x3 linear system in (v, omega): the weighted least-squares rigid motion
that best cancels foot slip (minimum Rayleigh dissipation; extraction §1.5). The appendix's missing sign on
the right-hand side is fixed (all stance feet sweeping back at c move the body forward at c).

Units: positions [m], velocities [m/s], mu [1/(m/s)] (viscous-Coulomb, not the Coulomb mu), loads in any
force unit; velocities do not depend on a common scale of mu*F, forces scale with it.
Single contact (or all contacts at one point): yaw about that point is undetermined; omega = 0 is returned
and ``single_contact`` is set. No loaded contact: v = omega = 0 and ``no_contact`` is set.
One frame is scalar code compiled with numba, looping over the frames (leading axis T), so one frame per
call (the predictor) and many frames per call run the same code.
"""
from dataclasses import dataclass

import numpy as np

from ..model._numba import njit
from ._checks import finite_array, kernel_array, leg_frames, per_leg


@dataclass
class ConnectionResult:
    """velocity: (T, 2) body-frame planar velocity [m/s]; yaw_rate: (T,) [rad/s];
    forces: (T, N, 2) body-frame traction on the robot at each foot [force units of the loads];
    single_contact / no_contact: (T,) bool. Single-frame input drops the T axis."""
    velocity: np.ndarray
    yaw_rate: np.ndarray
    forces: np.ndarray
    single_contact: np.ndarray
    no_contact: np.ndarray


def _inputs(feet_xy, loads, mu, anisotropy):
    """Checked inputs as kernel arrays: (T, N, 2) feet, (T, N) c_k = mu_k F_k and (T, N, 2) anisotropy w_k."""
    q, single = leg_frames(feet_xy, "feet_xy", 2)
    T, N = q.shape[:2]
    c = per_leg(loads, "loads", (T, N), nonnegative=True) * per_leg(mu, "mu", (T, N), nonnegative=True)
    w = np.zeros((T, N, 2))
    if anisotropy is not None:
        w_in = finite_array(anisotropy, "anisotropy", (1, 2, 3), last_dim=2)
        try:
            w = np.broadcast_to(w_in, (T, N, 2))
        except ValueError:
            raise ValueError(f"anisotropy: shape {w_in.shape} does not match {N} legs") from None
    return kernel_array(q), kernel_array(c), kernel_array(w), single


@njit(cache=True)
def _normal_equations(q, c, w, W, r):
    """One frame: friction metrics W_k = mu_k F_k (I + w_k w_k^T) into W (N, 2, 2), r_k = S q_k into r (N, 2);
    returns the blocks of G = sum J_k^T W_k J_k with J_k = [I, S q_k]: Gvv (2, 2), gvw (2,), gww."""
    Gvv, gvw, gww = np.zeros((2, 2)), np.zeros(2), 0.0
    for k in range(q.shape[0]):
        r[k, 0], r[k, 1] = -q[k, 1], q[k, 0]
        for i in range(2):
            for j in range(2):
                W[k, i, j] = c[k] * ((1.0 if i == j else 0.0) + w[k, i] * w[k, j])
                Gvv[i, j] += W[k, i, j]
        for i in range(2):
            Wr = W[k, i, 0] * r[k, 0] + W[k, i, 1] * r[k, 1]
            gvw[i] += Wr
            gww += r[k, i] * Wr
    return Gvv, gvw, gww


@njit(cache=True)
def _solve(Gvv, gvw, gww, bv, bw, v, w):
    """Solve [[Gvv, gvw], [gvw^T, gww]] [v; w] = [bv; bw] by the Schur complement on the yaw rate, one frame.

    bv (2, m), bw (m,): m right-hand sides at once (m = 1 for a body twist, 2N for the connection); the
    solutions go to v (2, m), w (m,). Returns (single contact, no contact).
    """
    det = Gvv[0, 0] * Gvv[1, 1] - Gvv[0, 1] * Gvv[1, 0]
    no_contact = not det > 1e-300
    Ginv = np.zeros((2, 2))
    if not no_contact:
        Ginv[0, 0], Ginv[0, 1] = Gvv[1, 1] / det, -Gvv[0, 1] / det
        Ginv[1, 0], Ginv[1, 1] = -Gvv[1, 0] / det, Gvv[0, 0] / det
    k0 = Ginv[0, 0] * gvw[0] + Ginv[0, 1] * gvw[1]
    k1 = Ginv[1, 0] * gvw[0] + Ginv[1, 1] * gvw[1]
    schur = gww - (gvw[0] * k0 + gvw[1] * k1)          # = weighted spread of the contacts about
    single = not no_contact and not schur > 1e-12 * max(gww, 1e-300)  # their centre: 0 for one point
    for m in range(bw.size):
        w[m] = 0.0 if single or no_contact else (bw[m] - (k0 * bv[0, m] + k1 * bv[1, m])) / schur
        r0, r1 = bv[0, m] - gvw[0] * w[m], bv[1, m] - gvw[1] * w[m]
        v[0, m] = Ginv[0, 0] * r0 + Ginv[0, 1] * r1
        v[1, m] = Ginv[1, 0] * r0 + Ginv[1, 1] * r1
    return single, no_contact


@njit(cache=True)
def _twist(q, qd, c, w):
    """body_twist of every frame: q, qd, w (T, N, 2), c (T, N) = mu F. Returns velocity (T, 2), yaw rate (T,),
    forces (T, N, 2), single_contact (T,), no_contact (T,)."""
    T, N = q.shape[0], q.shape[1]
    velocity, yaw_rate, forces = np.zeros((T, 2)), np.zeros(T), np.zeros((T, N, 2))
    single, none = np.zeros(T, dtype=np.bool_), np.zeros(T, dtype=np.bool_)
    W, r = np.empty((N, 2, 2)), np.empty((N, 2))
    bv, bw, v, om = np.empty((2, 1)), np.empty(1), np.empty((2, 1)), np.empty(1)
    for t in range(T):
        Gvv, gvw, gww = _normal_equations(q[t], c[t], w[t], W, r)
        bv[:] = 0.0
        bw[0] = 0.0
        for k in range(N):                      # right-hand side -sum J_k^T W_k qdot_k
            for i in range(2):
                Wqd = W[k, i, 0] * qd[t, k, 0] + W[k, i, 1] * qd[t, k, 1]
                bv[i, 0] -= Wqd
                bw[0] -= r[k, i] * Wqd
        single[t], none[t] = _solve(Gvv, gvw, gww, bv, bw, v, om)
        velocity[t, 0], velocity[t, 1], yaw_rate[t] = v[0, 0], v[1, 0], om[0]
        for k in range(N):                      # f_k = -W_k u_k, u_k = v + omega S q_k + qdot_k
            u0 = v[0, 0] + om[0] * r[k, 0] + qd[t, k, 0]
            u1 = v[1, 0] + om[0] * r[k, 1] + qd[t, k, 1]
            forces[t, k, 0] = -(W[k, 0, 0] * u0 + W[k, 0, 1] * u1)
            forces[t, k, 1] = -(W[k, 1, 0] * u0 + W[k, 1, 1] * u1)
    return velocity, yaw_rate, forces, single, none


def _body_twist(q, qd, c, w):
    """body_twist on checked inputs: q, qd, w (T, N, 2), c (T, N) = mu F (any layout)."""
    return ConnectionResult(*_twist(*(kernel_array(a) for a in (q, qd, c, w))))


def body_twist(feet_xy, feet_velocity_xy, loads, mu=1.0, anisotropy=None):
    """Planar body twist and traction forces from the feet's body-frame motion.

    feet_xy, feet_velocity_xy: (N, 2) or (T, N, 2) [m], [m/s], body frame, origin at the COM.
    loads: normal loads (N,) / (T, N) from Stage A (0 = not in contact). mu: scalar, (N,) or (T, N).
    anisotropy: w_k, (2,), (N, 2) or (T, N, 2) body frame, or None (isotropic).
    """
    q, c, w, single = _inputs(feet_xy, loads, mu, anisotropy)
    qd = finite_array(feet_velocity_xy, "feet_velocity_xy", (2, 3), last_dim=2)
    if qd.ndim == 2:
        qd = qd[None]
    if qd.shape != q.shape:
        raise ValueError(f"feet_velocity_xy: shape {qd.shape} does not match feet_xy {q.shape}")
    out = _body_twist(q, qd, c, w)
    if single:
        out = ConnectionResult(*(getattr(out, f)[0] for f in out.__dataclass_fields__))
    return out


@njit(cache=True)
def _connection(q, c, w):
    """local_connection of every frame: (T, 3, 2N) with column 2k + i the twist of a unit qdot_(k, i)."""
    T, N = q.shape[0], q.shape[1]
    A = np.zeros((T, 3, 2 * N))
    W, r = np.empty((N, 2, 2)), np.empty((N, 2))
    bv, bw, v, om = np.empty((2, 2 * N)), np.empty(2 * N), np.empty((2, 2 * N)), np.empty(2 * N)
    for t in range(T):
        Gvv, gvw, gww = _normal_equations(q[t], c[t], w[t], W, r)
        # unit foot velocity e_(k,i) as a right-hand side: bv = -W_k e_i, bw = -r_k^T W_k e_i
        for k in range(N):
            for i in range(2):
                bv[0, 2 * k + i], bv[1, 2 * k + i] = -W[k, 0, i], -W[k, 1, i]
                bw[2 * k + i] = -(r[k, 0] * W[k, 0, i] + r[k, 1] * W[k, 1, i])
        _solve(Gvv, gvw, gww, bv, bw, v, om)
        A[t, :2], A[t, 2] = v, om
    return A


def local_connection(feet_xy, loads, mu=1.0, anisotropy=None):
    """The paper's local connection: (T, 3, N, 2) matrices A with [v_x, v_y, omega] = sum_k A[:, :, k] qdot_k.

    Same inputs as ``body_twist`` without the velocities; single-frame input gives (3, N, 2).
    (The paper's A_theta is minus the third row.)
    """
    q, c, w, single = _inputs(feet_xy, loads, mu, anisotropy)
    T, N = q.shape[:2]
    A = _connection(q, c, w).reshape(T, 3, N, 2)
    return A[0] if single else A
