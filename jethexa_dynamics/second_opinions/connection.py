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
"""
from dataclasses import dataclass

import numpy as np

from ._checks import finite_array, leg_frames, per_leg


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
    # W_k = mu_k F_k (I + w w^T), the positive friction metric of each contact
    W = c[..., None, None] * (np.eye(2) + w[..., :, None] * w[..., None, :])
    return q, W, single


def _normal_equations(q, W):
    """Blocks of G = sum J_k^T W_k J_k with J_k = [I, S q_k]: Gvv (T,2,2), gvw (T,2), gww (T,)."""
    r = np.stack([-q[..., 1], q[..., 0]], -1)               # S q_k
    Wr = np.einsum("tnij,tnj->tni", W, r)
    return W.sum(1), Wr.sum(1), np.einsum("tni,tni->t", r, Wr), r


def _solve(Gvv, gvw, gww, bv, bw):
    """Solve [[Gvv, gvw], [gvw^T, gww]] [v; w] = [bv; bw] by the Schur complement on the yaw rate.

    bv (T, 2, m), bw (T, m): m right-hand sides at once (m = 1 for a body twist, 2N for the connection).
    """
    det = Gvv[:, 0, 0] * Gvv[:, 1, 1] - Gvv[:, 0, 1] * Gvv[:, 1, 0]
    no_contact = ~(det > 1e-300)
    det = np.where(no_contact, 1.0, det)
    Ginv = np.stack([np.stack([Gvv[:, 1, 1], -Gvv[:, 0, 1]], -1),
                     np.stack([-Gvv[:, 1, 0], Gvv[:, 0, 0]], -1)], -2) / det[:, None, None]
    Ginv[no_contact] = 0.0
    k = np.einsum("tij,tj->ti", Ginv, gvw)
    schur = gww - np.einsum("ti,ti->t", gvw, k)             # = weighted spread of the contacts about
    single = ~no_contact & ~(schur > 1e-12 * np.maximum(gww, 1e-300))  # their centre: 0 for one point
    schur = np.where(single | no_contact, 1.0, schur)
    w = (bw - np.einsum("ti,tim->tm", k, bv)) / schur[:, None]
    w[single | no_contact] = 0.0
    v = np.einsum("tij,tjm->tim", Ginv, bv - gvw[:, :, None] * w[:, None, :])
    return v, w, single, no_contact


def body_twist(feet_xy, feet_velocity_xy, loads, mu=1.0, anisotropy=None):
    """Planar body twist and traction forces from the feet's body-frame motion.

    feet_xy, feet_velocity_xy: (N, 2) or (T, N, 2) [m], [m/s], body frame, origin at the COM.
    loads: normal loads (N,) / (T, N) from Stage A (0 = not in contact). mu: scalar, (N,) or (T, N).
    anisotropy: w_k, (2,), (N, 2) or (T, N, 2) body frame, or None (isotropic).
    """
    q, W, single = _inputs(feet_xy, loads, mu, anisotropy)
    qd = finite_array(feet_velocity_xy, "feet_velocity_xy", (2, 3), last_dim=2)
    if qd.ndim == 2:
        qd = qd[None]
    if qd.shape != q.shape:
        raise ValueError(f"feet_velocity_xy: shape {qd.shape} does not match feet_xy {q.shape}")
    Gvv, gvw, gww, r = _normal_equations(q, W)
    Wqd = np.einsum("tnij,tnj->tni", W, qd)
    v, w, one, none = _solve(Gvv, gvw, gww, -Wqd.sum(1)[..., None], -np.einsum("tni,tni->t", r, Wqd)[:, None])
    v, w = v[..., 0], w[:, 0]
    slip = v[:, None, :] + w[:, None, None] * r + qd
    forces = -np.einsum("tnij,tnj->tni", W, slip)
    out = ConnectionResult(v, w, forces, one, none)
    if single:
        out = ConnectionResult(*(getattr(out, f)[0] for f in out.__dataclass_fields__))
    return out


def local_connection(feet_xy, loads, mu=1.0, anisotropy=None):
    """The paper's local connection: (T, 3, N, 2) matrices A with [v_x, v_y, omega] = sum_k A[:, :, k] qdot_k.

    Same inputs as ``body_twist`` without the velocities; single-frame input gives (3, N, 2).
    (The paper's A_theta is minus the third row.)
    """
    q, W, single = _inputs(feet_xy, loads, mu, anisotropy)
    T, N = q.shape[:2]
    Gvv, gvw, gww, r = _normal_equations(q, W)
    # unit foot velocity e_(k,i) as a right-hand side: bv = -W_k e_i, bw = -r_k^T W_k e_i
    bv = -W.transpose(0, 2, 1, 3).reshape(T, 2, 2 * N)
    bw = -np.einsum("tni,tnij->tnj", r, W).reshape(T, 2 * N)
    v, w, _, _ = _solve(Gvv, gvw, gww, bv, bw)
    A = np.concatenate([v, w[:, None, :]], axis=1).reshape(T, 3, N, 2)
    return A[0] if single else A
