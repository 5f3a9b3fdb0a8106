"""Planar pose integration on SE(2) for the slipping model (paper 001 §2.3 / extraction §1.6).

Poses and increments are stored as (x [m], y [m], theta [rad]) rows; theta is not wrapped, so it is the
integrated yaw. ``compose(a, b)`` = a * b (b expressed in a's frame). With a body-frame twist
(v_x, v_y, omega) held over dt the increment is the group exponential.

Because the slipping model is stateless and pose-invariant, every frame's increment can be computed at once;
the poses are then the prefix products g_0 E_0 E_1 ... E_{n-1}. ``integrate_sequential`` forms them one after
another (T dependent steps); ``integrate_prefix`` forms them as a parallel prefix (tree) scan:
2 ceil(log2 T) levels, each level one vectorised composition of independent pairs, which is the paper's
logarithmic-time claim.
"""
import math

import numpy as np

from ..model._numba import njit
from ._checks import finite_array, kernel_array


def se2_exp(twist, dt):
    """Increments (T, 3) for body-frame twists (T, 3) = (v_x, v_y, omega) held for dt [s] (scalar or (T,))."""
    tw = finite_array(twist, "twist", (1, 2), last_dim=3)
    dt = np.asarray(dt, float)
    if not np.all(np.isfinite(dt)):
        raise ValueError("dt: contains NaN or inf")
    shape = np.broadcast(tw[..., 0], dt).shape
    rows = kernel_array(np.broadcast_to(tw, shape + (3,)).reshape(-1, 3))
    out = np.empty_like(rows)
    _exp_rows(rows, kernel_array(np.broadcast_to(dt, shape).reshape(-1)), out)
    return out.reshape(shape + (3,))


@njit(cache=True)
def _exp_rows(tw, dt, out):
    """se2_exp row by row (compiled: the predictor takes one step per call): tw (T, 3), dt (T,) -> out (T, 3)."""
    for t in range(tw.shape[0]):
        vx, vy, phi = tw[t, 0] * dt[t], tw[t, 1] * dt[t], tw[t, 2] * dt[t]
        # V(phi) = [[a, -b], [b, a]] with a = sin(phi)/phi, b = (1 - cos(phi))/phi (series near 0)
        if abs(phi) < 1e-6:
            a, b = 1.0 - phi ** 2 / 6.0, phi / 2.0 - phi ** 3 / 24.0
        else:
            a, b = math.sin(phi) / phi, (1.0 - math.cos(phi)) / phi
        out[t, 0], out[t, 1], out[t, 2] = a * vx - b * vy, b * vx + a * vy, phi


def compose(a, b):
    """Group product a * b of pose rows (broadcasting over leading axes)."""
    c, s = np.cos(a[..., 2]), np.sin(a[..., 2])
    return np.stack([a[..., 0] + c * b[..., 0] - s * b[..., 1],
                     a[..., 1] + s * b[..., 0] + c * b[..., 1],
                     a[..., 2] + b[..., 2]], axis=-1)


def inverse(g):
    c, s = np.cos(g[..., 2]), np.sin(g[..., 2])
    return np.stack([-c * g[..., 0] - s * g[..., 1], s * g[..., 0] - c * g[..., 1], -g[..., 2]], axis=-1)


def to_matrix(g):
    """Homogeneous 3x3 matrices of pose rows."""
    g = np.asarray(g, float)
    m = np.zeros(g.shape[:-1] + (3, 3))
    c, s = np.cos(g[..., 2]), np.sin(g[..., 2])
    m[..., 0, 0], m[..., 0, 1], m[..., 1, 0], m[..., 1, 1] = c, -s, s, c
    m[..., 0, 2], m[..., 1, 2], m[..., 2, 2] = g[..., 0], g[..., 1], 1.0
    return m


def _start(increments, start):
    inc = finite_array(increments, "increments", (2,), last_dim=3)
    g0 = np.zeros(3) if start is None else finite_array(start, "start", (1,), last_dim=3)
    return inc, g0


def integrate_sequential(increments, start=None):
    """Poses (T + 1, 3): start, start*E_0, start*E_0*E_1, ... one composition after another
    (scalar loop: T dependent steps, the reference the prefix scan is checked against)."""
    inc, g0 = _start(increments, start)
    out = np.empty((inc.shape[0] + 1, 3))
    x, y, th = (float(v) for v in g0)
    out[0] = x, y, th
    for n, (dx, dy, dth) in enumerate(inc.tolist(), start=1):
        c, s = math.cos(th), math.sin(th)
        x, y, th = x + c * dx - s * dy, y + s * dx + c * dy, th + dth
        out[n] = x, y, th
    return out


def integrate_prefix(increments, start=None):
    """Same poses as ``integrate_sequential`` by a parallel prefix (Brent-Kung tree) scan.

    Up-sweep: pairwise products up a binary tree (level d combines elements 2d apart); down-sweep: fills in
    the remaining prefixes. 2*ceil(log2 T) levels, about 2T compositions in all; every level is one
    vectorised composition whose elements are independent (one parallel step).
    """
    inc, g0 = _start(increments, start)
    P = np.concatenate([g0[None], inc], axis=0)
    n = P.shape[0]
    d = 1
    while 2 * d <= n:
        P[2 * d - 1::2 * d] = compose(P[d - 1::2 * d][:len(P[2 * d - 1::2 * d])], P[2 * d - 1::2 * d])
        d *= 2
    while d >= 1:
        right = P[3 * d - 1::2 * d]
        if len(right):
            P[3 * d - 1::2 * d] = compose(P[2 * d - 1::2 * d][:len(right)], right)
        d //= 2
    return P
