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

One frame is scalar code compiled with numba (``_search``), looping over the frames (leading axis T): the
same code serves the predictor's one frame per command (no per-call array overhead) and whole trajectories.
"""
import enum
import math
from dataclasses import dataclass

import numpy as np

from ..model._numba import njit
from ._checks import kernel_array, leg_frames, per_leg, positive_scalar


class SupportStatus(enum.IntEnum):
    OK = 0          # unique balanced state (>= 3 non-collinear contacts)
    DEGENERATE = 1  # balanced, loads unique but tilt not (COM above one foot / on a support line)
    TIPPED = 2      # COM outside the support polygon: no balanced state; last searched state returned
    FALLBACK = 3    # path search hit its iteration cap; solved by minimising the energy instead


_OK, _DEGENERATE, _TIPPED, _FALLBACK = (int(v) for v in SupportStatus)   # plain ints for the compiled code


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


@njit(cache=True)
def _heights(s, x, y, z, h):
    """h_j = -alpha_x x_j + alpha_y y_j + z_j + p_z0 (eq. 6) for one frame, into h (N,)."""
    for j in range(x.size):
        h[j] = -s[0] * x[j] + s[1] * y[j] + z[j] + s[2]


@njit(cache=True)
def _gradient(loads, x, y, weight, g):
    """grad U = (sum F x, -sum F y, Mg - sum F) into g (3,); its negative is the balance residual
    (F - Mg, M_x, M_y)."""
    g[0], g[1], g[2] = 0.0, 0.0, weight
    for j in range(x.size):
        g[0] += loads[j] * x[j]
        g[1] -= loads[j] * y[j]
        g[2] -= loads[j]


@njit(cache=True)
def _level_start(x, y, z, K, weight, s, contact):
    """Step A1 for one frame: zero tilt, body height where the lowest legs' springs carry Mg (closed form).

    Depths d = -z sorted deepest first; z_n = (sum_{i<=n} K d - Mg) / sum_{i<=n} K is accepted for the first
    n with z_n >= d_(n+1). Those n legs are exactly the ones with d > z_n (z_n < d_n by construction).
    Writes s (3,) and contact (N,).
    """
    # stable insertion sort of the heights (N is small; numba's argsort costs seconds of compile time)
    order = np.arange(z.size)
    for i in range(1, z.size):
        j = i
        while j > 0 and z[order[j - 1]] > z[order[j]]:
            order[j - 1], order[j] = order[j], order[j - 1]
            j -= 1
    kd, k, zn = 0.0, 0.0, 0.0
    for i in range(z.size):
        kd += K[order[i]] * -z[order[i]]
        k += K[order[i]]
        zn = (kd - weight) / k
        if i + 1 == z.size or zn >= -z[order[i + 1]]:
            break
    s[0], s[1], s[2] = 0.0, 0.0, zn
    for j in range(z.size):
        contact[j] = -z[j] > zn


@njit(cache=True)
def _search_step(s, contact, x, y, z, K, weight, scale, h, Kc, slope):
    """One path-search step for one frame (updates s and contact in place; h, Kc, slope (N,) are scratch).

    Returns (finished, degenerate: balanced but the tilt is not unique, tipped).
    """
    N = x.size
    _heights(s, x, y, z, h)
    H = np.zeros((3, 3))                       # Hessian of U on the contact set: sum Kc_j a_j a_j^T
    for j in range(N):
        Kc[j] = K[j] if contact[j] else 0.0
        slope[j] = -Kc[j] * h[j]               # (the loads, for the gradient)
        a0, a1 = -x[j], y[j]                   # a_j = dh_j/ds = (-x_j, y_j, 1)
        H[0, 0] += Kc[j] * a0 * a0
        H[0, 1] += Kc[j] * a0 * a1
        H[0, 2] += Kc[j] * a0
        H[1, 1] += Kc[j] * a1 * a1
        H[1, 2] += Kc[j] * a1
        H[2, 2] += Kc[j]
    H[1, 0], H[2, 0], H[2, 1] = H[0, 1], H[0, 2], H[1, 2]
    grad = np.empty(3)
    _gradient(slope, x, y, weight, grad)
    lam, V = np.linalg.eigh(H)
    # (pseudo-)Newton step = the paper's 3x3 solve (appendix 6.1.1, corrected)
    rank = 0
    coef = np.zeros(3)
    for i in range(3):
        if lam[i] > 1e-10 * lam[2]:
            rank += 1
            coef[i] = (V[0, i] * grad[0] + V[1, i] * grad[1] + V[2, i] * grad[2]) / lam[i]
    step, unbalance = np.zeros(3), grad.copy()
    for r in range(3):
        for i in range(3):
            step[r] -= V[r, i] * coef[i]
    for r in range(3):
        for c in range(3):
            unbalance[r] += H[r, c] * step[c]
    # Full rank: the Newton step balances exactly (up to round-off, which can be large when the contacts
    # are nearly collinear). Rank-deficient: balanced only if the moment lies in the range of H.
    balanced = rank == 3 or math.sqrt(unbalance[0] ** 2 + unbalance[1] ** 2 + unbalance[2] ** 2) <= 1e-9 * scale
    direction = step if balanced else _tilt(rank, V, Kc, x, y)

    eps = 1e-12 * (1.0 + abs(direction[0]) + abs(direction[1]) + abs(direction[2]))
    t, jmin = np.inf, 0
    for j in range(N):
        sl = -direction[0] * x[j] + direction[1] * y[j] + direction[2]
        if (contact[j] and sl > eps and balanced) or (not contact[j] and sl < -eps):
            tj = max(0.0, -h[j] / sl)
            if tj < t:                         # the first leg to switch (lowest index on a tie)
                t, jmin = tj, j
    accept = balanced and t >= 1.0
    tipped = not balanced and not np.isfinite(t)
    if accept:
        s += direction
    elif not tipped:
        s += t * direction
        contact[jmin] = not contact[jmin]
    return accept or tipped, accept and rank < 3, tipped


@njit(cache=True)
def _tilt(rank, V, Kc, x, y):
    """Tilt direction about the support when fewer than 3 non-collinear legs touch and the moment is
    unbalanced: every contact height stays fixed and the COM descends (appendix 6.1.2/6.1.3 in one rule).
    u = point of the contacts' affine hull closest to the COM; ds = (-u_x, u_y, -|u|^2)."""
    tilt = np.zeros(3)
    if rank == 2:                                           # null direction n of H on a support line
        n = V[:, 0]
        tilt[:] = -n[2] / max(n[0] ** 2 + n[1] ** 2, 1e-300) * n
    elif rank == 1:
        total, ux, uy = 0.0, 0.0, 0.0
        for j in range(x.size):
            total += Kc[j]
        for j in range(x.size):
            ux += Kc[j] / max(total, 1e-300) * x[j]
            uy += Kc[j] / max(total, 1e-300) * y[j]
        tilt[0], tilt[1], tilt[2] = -ux, uy, -(ux ** 2 + uy ** 2)
    elif rank == 0:
        tilt[2] = -1.0                                      # nothing touches: lower the body
    return tilt


@njit(cache=True)
def _finish(x, y, z, K, weight, s, contact, h, loads, residual):
    """Heights, loads F_j = K_j [-h_j]_+ of the contacts (eq. 7) and the balance residual of state s."""
    _heights(s, x, y, z, h)
    for j in range(x.size):
        loads[j] = max(-K[j] * h[j], 0.0) if contact[j] else 0.0
    _gradient(loads, x, y, weight, residual)
    residual *= -1.0


@njit(cache=True)
def _search(q, K, weight, cap):
    """Path search (steps A1-A3 and the tilts) for every frame of q (T, N, 3), K (T, N): one frame after
    another, so one frame costs one frame. Frames that reach ``cap`` steps are marked FALLBACK (the caller
    minimises their energy). Returns state (T, 3), contact, heights, loads (T, N), residual (T, 3),
    status (T,) int8, iterations (T,) int32."""
    T, N = q.shape[0], q.shape[1]
    state, residual = np.zeros((T, 3)), np.zeros((T, 3))
    contact = np.zeros((T, N), dtype=np.bool_)
    heights, loads = np.zeros((T, N)), np.zeros((T, N))
    status = np.full(T, _FALLBACK, dtype=np.int8)
    iters = np.zeros(T, dtype=np.int32)
    Kc, slope = np.empty(N), np.empty(N)
    for t in range(T):
        x, y, z = q[t, :, 0].copy(), q[t, :, 1].copy(), q[t, :, 2].copy()
        reach = 0.0
        for j in range(N):
            reach = max(reach, abs(x[j]), abs(y[j]))
        scale = weight * (1.0 + reach)          # force and moment residual scale
        _level_start(x, y, z, K[t], weight, state[t], contact[t])
        for _ in range(cap):
            iters[t] += 1
            finished, degenerate, tipped = _search_step(state[t], contact[t], x, y, z, K[t], weight, scale,
                                                        heights[t], Kc, slope)
            if finished:
                status[t] = _TIPPED if tipped else _DEGENERATE if degenerate else _OK
                break
        _finish(x, y, z, K[t], weight, state[t], contact[t], heights[t], loads[t], residual[t])
    return state, contact, heights, loads, residual, status, iters


def _solve(q, K, weight, cap):
    """solve_support on checked (T, N, 3) feet and (T, N) stiffness: the compiled search, then the energy
    minimisation for the rare frame that cycles at round-off (the convex energy has the answer)."""
    q, K = kernel_array(q), kernel_array(K)
    s, contact, h, loads, residual, status, iters = _search(q, K, weight, cap)
    for t in np.nonzero(status == _FALLBACK)[0]:
        s[t] = minimize_support_energy(q[t], K[t], weight, s0=s[t]).x
        settle_frame(q[t], K[t], weight, s[t], contact[t], h[t], loads[t], residual[t])
    return SupportResult(s, loads, contact, h, residual, status, iters)


def settle_frame(feet, K, weight, s, contact, h, loads, residual):
    """One frame at the body state ``s`` (the energy minimum of the fallback): its heights ``h`` [m], contacts,
    loads and balance residual, written in place. feet (N, 3) [m], K (N,), ``s`` (3,) as in ``solve_support``;
    the compiled part of the fallback (``jethexa-warmup`` compiles it without importing ``scipy.optimize``,
    ~20 MB of the predictor's process)."""
    x, y, z = (kernel_array(feet[:, i]) for i in range(3))
    _heights(s, x, y, z, h)
    contact[:] = h < 0
    _finish(x, y, z, K, weight, s, contact, h, loads, residual)


def solve_support(feet, stiffness=1.0, weight=1.0, max_iter=None):
    """Spring-support equilibrium of the body plane.

    feet: (N, 3) or (T, N, 3) foot positions in the body frame [m], origin at the centre of mass.
    stiffness: K_j [force/m], scalar, (N,) or (T, N), > 0.  weight: Mg [force] > 0 (only ratios matter for
    the loads; the absolute value sets the spring compression).
    Returns a SupportResult; never raises for tip-over or degenerate support (see ``status``).
    """
    q, single = leg_frames(feet, "feet", 3)
    T, N = q.shape[:2]
    K = per_leg(stiffness, "stiffness", (T, N), positive=True)
    out = _solve(q, K, positive_scalar(weight, "weight"), 4 * N + 10 if max_iter is None else int(max_iter))
    if single:
        out = SupportResult(*(getattr(out, f)[0] for f in out.__dataclass_fields__))
    return out


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
        s0, contact = np.zeros(3), np.zeros(q.shape[0], bool)
        _level_start(*(kernel_array(q[:, i]) for i in range(3)), kernel_array(K), float(weight), s0, contact)
    res = minimize(support_energy, np.asarray(s0, float), args=(q, K, weight), jac=True, method="BFGS",
                   options={"gtol": 1e-13 * weight, "maxiter": 2000})
    return EnergyMinimum(res.x, bool(res.success))
