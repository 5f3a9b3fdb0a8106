"""Stage A of the slipping model (Wu, Zhao & Revzen, paper 001): spring support and contact search.

Each leg is a vertical linear spring under a rigid, slightly tilted "body plane". The support state
``s = (alpha_x, alpha_y, p_z0)`` is found such that the spring loads carry the weight ``Mg`` and cancel the
roll/pitch moments about the body origin (assumed to be the centre of mass).

Conventions (body frame REP-103: x forward, y left, z up; ground at world z = 0):
- foot world height  ``h_j(s) = -alpha_x x_j + alpha_y y_j + z_j + p_z0``  (paper eq. 6); leg j is in contact
  when ``h_j < 0`` and then carries ``F_j = -K_j h_j`` (eq. 7).
- ``alpha_x`` is the pitch (positive = nose down), ``alpha_y`` the roll (positive = left side up): the
  paper's prose swaps the names, its equations do not (extraction §1.3).

Algorithm: the paper's contact-switching path search, written as an active-set Newton method on the
convex energy ``U(s) = sum_j K_j/2 [-h_j]_+^2 + Mg p_z0`` (its stationary points are the balanced states):
1. closed-form level start (step A1),
2. Newton step for the current contact set (the paper's 3x3 solve, step A2, errata fixed),
3. walk along the step and flip exactly one leg at the first contact switch (step A3),
4. with fewer than three non-collinear contacts and an unbalanced moment, tilt the plane about the support
   point/line in the direction gravity turns it until another leg touches (appendix 6.1.2/6.1.3, component
   orders fixed). No leg to touch = the centre of mass is outside the support: tip-over, reported.
The centre of mass exactly above one foot or on the line between two feet is balanced without a unique tilt;
the rank-deficient Newton step is then solved by pseudo-inverse and reported as ``DEGENERATE``.

Everything is vectorised over frames (leading axis T) and legs (axis N).
"""
import enum
from dataclasses import dataclass

import numpy as np

from ._checks import leg_frames, per_leg, positive_scalar


class SupportStatus(enum.IntEnum):
    OK = 0          # unique balanced state (>= 3 non-collinear contacts)
    DEGENERATE = 1  # balanced, loads unique but tilt not (COM above one foot / on a support line)
    TIPPED = 2      # COM outside the support polygon: no balanced state; last searched state returned
    FALLBACK = 3    # path search hit its iteration cap; solved by minimising the energy instead


@dataclass
class SupportResult:
    """Stage A output. Shapes: (T, ...) for batched input, without the T axis for a single frame.

    state: (alpha_x [rad], alpha_y [rad], p_z0 [m]); loads: normal force per leg [units of ``weight``];
    contact: bool per leg; heights: foot world height per leg [m]; residual: (F_z - Mg, M_x, M_y)
    [force, force*m]; status: SupportStatus per frame; iterations: path-search steps per frame.
    """
    state: np.ndarray
    loads: np.ndarray
    contact: np.ndarray
    heights: np.ndarray
    residual: np.ndarray
    status: np.ndarray
    iterations: np.ndarray

    @property
    def tipped(self):
        return self.status == SupportStatus.TIPPED

    @property
    def pitch(self):
        return self.state[..., 0]

    @property
    def roll(self):
        return self.state[..., 1]

    @property
    def height(self):
        return self.state[..., 2]


def _design(x, y):
    """Rows a_j = dh_j/ds = (-x_j, y_j, 1), shape (T, N, 3)."""
    return np.stack([-x, y, np.ones_like(x)], axis=-1)


def _heights(s, x, y, z):
    return -s[:, :1] * x + s[:, 1:2] * y + z + s[:, 2:3]


def _gradient(loads, x, y, weight):
    """grad U = (sum F x, -sum F y, Mg - sum F); its negative is the balance residual (F - Mg, M_x, M_y)."""
    return np.stack([(loads * x).sum(1), -(loads * y).sum(1), weight - loads.sum(1)], axis=-1)


def _level_start(x, y, z, K, weight):
    """Step A1: zero tilt, body height where the lowest legs' springs carry Mg (closed form).

    Depths d = -z sorted deepest first; z_n = (sum_{i<=n} K d - Mg) / sum_{i<=n} K is accepted for the first
    n with z_n >= d_(n+1). Those n legs are exactly the ones with d > z_n (z_n < d_n by construction).
    """
    T = z.shape[0]
    order = np.argsort(z, axis=1, kind="stable")
    ds = -z[np.arange(T)[:, None], order]
    Ks = K[np.arange(T)[:, None], order]
    zn = (np.cumsum(Ks * ds, 1) - weight) / np.cumsum(Ks, 1)
    d_next = np.concatenate([ds[:, 1:], np.full((T, 1), -np.inf)], axis=1)
    n = np.argmax(zn >= d_next, axis=1)                 # the last column is always True
    s = np.zeros((T, 3))
    s[:, 2] = zn[np.arange(T), n]
    return s, -z > s[:, 2:3]


def solve_support(feet, stiffness=1.0, weight=1.0, max_iter=None):
    """Spring-support equilibrium of the body plane.

    feet: (N, 3) or (T, N, 3) foot positions in the body frame [m], origin at the centre of mass.
    stiffness: K_j [force/m], scalar, (N,) or (T, N), > 0.  weight: Mg [force] > 0 (only ratios matter for
    the loads; the absolute value sets the spring compression).
    Returns a SupportResult; never raises for tip-over or degenerate support (see ``status``).
    """
    q, single = leg_frames(feet, "feet", 3)
    T, N = q.shape[:2]
    K = np.array(per_leg(stiffness, "stiffness", (T, N), positive=True))
    weight = positive_scalar(weight, "weight")
    x, y, z = q[..., 0], q[..., 1], q[..., 2]
    a = _design(x, y)
    scale = weight * (1.0 + np.abs(q[..., :2]).max(axis=(1, 2)))   # force and moment residual scale
    cap = 4 * N + 10 if max_iter is None else int(max_iter)

    s, contact = _level_start(x, y, z, K, weight)
    status = np.full(T, SupportStatus.OK, dtype=np.int8)
    iters = np.zeros(T, dtype=np.int32)
    active = np.ones(T, dtype=bool)
    for _ in range(cap):
        idx = np.nonzero(active)[0]
        if idx.size == 0:
            break
        iters[idx] += 1
        finished, degenerate, tipped = _search_step(idx, s, contact, x, y, z, K, a, weight, scale)
        status[idx[degenerate]] = SupportStatus.DEGENERATE
        status[idx[tipped]] = SupportStatus.TIPPED
        active[idx[finished]] = False

    stuck = np.nonzero(active)[0]
    for t in stuck:                       # rare: cycling at round-off; the convex energy has the answer
        s[t] = minimize_support_energy(q[t], K[t], weight, s0=s[t]).x
        contact[t] = _heights(s[t:t + 1], x[t:t + 1], y[t:t + 1], z[t:t + 1])[0] < 0
        status[t] = SupportStatus.FALLBACK

    h = _heights(s, x, y, z)
    loads = np.where(contact, np.maximum(-K * h, 0.0), 0.0)
    residual = -_gradient(loads, x, y, weight)
    out = SupportResult(s, loads, contact, h, residual, status, iters)
    if single:
        out = SupportResult(*(getattr(out, f)[0] for f in out.__dataclass_fields__))
    return out


def _search_step(idx, s, contact, x, y, z, K, a, weight, scale):
    """One path-search step for frames ``idx`` (updates s and contact in place).

    Returns boolean masks over idx: finished, degenerate (balanced, tilt not unique), tipped.
    """
    every = idx.size == s.shape[0]           # the common single-frame case: skip the gathers
    pick = (lambda arr: arr) if every else (lambda arr: arr[idx])
    xs, ys, zs, Ks, As, C, S = (pick(v) for v in (x, y, z, K, a, contact, s))
    h = _heights(S, xs, ys, zs)
    Kc = Ks * C
    grad = _gradient(-Kc * h, xs, ys, weight)
    H = np.einsum("tn,tni,tnj->tij", Kc, As, As)        # Hessian of U on the contact set
    lam, V = np.linalg.eigh(H)
    keep = lam > 1e-10 * lam[:, -1:]
    inv = np.where(keep, 1.0 / np.where(keep, lam, 1.0), 0.0)
    # (pseudo-)Newton step = the paper's 3x3 solve (appendix 6.1.1, corrected)
    step = -np.einsum("tij,tj->ti", V, inv * np.einsum("tji,tj->ti", V, grad))
    rank = keep.sum(1)
    # Full rank: the Newton step balances exactly (up to round-off, which can be large when the contacts
    # are nearly collinear). Rank-deficient: balanced only if the moment lies in the range of H.
    balanced = (rank == 3) | (
        np.linalg.norm(np.einsum("tij,tj->ti", H, step) + grad, axis=1) <= 1e-9 * pick(scale))
    direction = step
    if not balanced.all():
        direction = np.where(balanced[:, None], step, _tilt(rank, V, Kc, xs, ys))

    slope = np.einsum("tnk,tk->tn", As, direction)
    eps = 1e-12 * (1.0 + np.abs(direction).sum(1, keepdims=True))
    crossing = (C & (slope > eps) & balanced[:, None]) | (~C & (slope < -eps))
    t_j = np.where(crossing, np.maximum(0.0, -h / np.where(crossing, slope, 1.0)), np.inf)
    j = np.argmin(t_j, axis=1)
    t = t_j[np.arange(idx.size), j]

    accept = balanced & (t >= 1.0)
    tipped = ~balanced & ~np.isfinite(t)
    move = ~accept & ~tipped
    S = S + np.where(accept, 1.0, np.where(move, t, 0.0))[:, None] * direction
    C = C.copy()
    C[move, j[move]] = ~C[move, j[move]]
    s[idx] = S
    contact[idx] = C
    return accept | tipped, accept & (rank < 3), tipped


def _tilt(rank, V, Kc, xs, ys):
    """Tilt direction about the support when fewer than 3 non-collinear legs touch and the moment is
    unbalanced: every contact height stays fixed and the COM descends (appendix 6.1.2/6.1.3 in one rule).
    u = point of the contacts' affine hull closest to the COM; ds = (-u_x, u_y, -|u|^2)."""
    tilt = np.zeros((rank.size, 3))
    n = V[:, :, 0]                                          # null direction of H on a support line
    lam_n = -n[:, 2] / np.maximum(n[:, 0] ** 2 + n[:, 1] ** 2, 1e-300)
    line = rank == 2
    tilt[line] = (lam_n[:, None] * n)[line]
    point = rank == 1
    w = Kc / np.maximum(Kc.sum(1, keepdims=True), 1e-300)
    ux, uy = (w * xs).sum(1), (w * ys).sum(1)
    tilt[point] = np.stack([-ux, uy, -(ux ** 2 + uy ** 2)], -1)[point]
    tilt[rank == 0] = (0.0, 0.0, -1.0)                      # nothing touches: lower the body
    return tilt


@dataclass
class EnergyMinimum:
    x: np.ndarray
    success: bool


def support_energy(s, feet, stiffness, weight):
    """U(s) = sum_j K_j/2 [-h_j(s)]_+^2 + Mg p_z0 and its gradient, for one frame (feet (N, 3))."""
    q = np.asarray(feet, float)
    h = -s[0] * q[:, 0] + s[1] * q[:, 1] + q[:, 2] + s[2]
    F = np.asarray(stiffness, float) * np.maximum(-h, 0.0)
    U = 0.5 * np.sum(F * np.maximum(-h, 0.0)) + weight * s[2]
    g = np.array([np.sum(F * q[:, 0]), -np.sum(F * q[:, 1]), weight - F.sum()])
    return U, g


def minimize_support_energy(feet, stiffness, weight, s0=None):
    """Balanced state by direct minimisation of the convex support energy (independent of the path search;
    used as its fallback and as a cross-check). Only meaningful when the COM is inside the support."""
    from scipy.optimize import minimize

    q = np.asarray(feet, float)
    K = np.broadcast_to(np.asarray(stiffness, float), (q.shape[0],))
    if s0 is None:
        s0 = _level_start(q[None, :, 0], q[None, :, 1], q[None, :, 2], K[None], weight)[0][0]
    res = minimize(support_energy, np.asarray(s0, float), args=(q, K, weight), jac=True, method="BFGS",
                   options={"gtol": 1e-13 * weight, "maxiter": 2000})
    return EnergyMinimum(res.x, bool(res.success))
