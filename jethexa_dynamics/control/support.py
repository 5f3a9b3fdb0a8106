"""Support polygons and the linear programs over them (pure core): the static stability margin and the
Chebyshev body shifts of the gait re-planner (``replan``).

Every point is a horizontal position (m) in ``base_link`` xy with the body level: the feet on the ground
(the support polygon is their convex hull) and the projection of the whole-body centre of mass.

* ``support_margin`` (numba ``_margin`` on ``_hull``): distance (m) from the CoM to the edge of the support
  polygon, positive inside, negative (minus the distance to the polygon) outside.
* ``_halfplanes``, ``_lp_rows``: the hull's edges as half-planes n . x <= h (unit normals n, h in m), and the
  rows those give a linear program in the body shift b (m) and the margin r (m).
* ``chebyshev_shifts`` / ``chebyshev_shift``: the body shift (m, xy) that maximises the worst distance to
  the edges of a set of support polygons (``scipy.optimize.linprog``, HiGHS), then spends as little shift
  as it can.
"""
from __future__ import annotations

import math
from typing import List, Sequence, Tuple

import numpy as np

from jethexa_dynamics.model._numba import njit


@njit(cache=True)
def _hull(pts):
    """CCW convex hull (Andrew's monotone chain) of 2D points (k, 2); collinear and repeated points dropped."""
    k = pts.shape[0]
    order = np.arange(k)
    for a in range(1, k):               # insertion sort by (x, y): k <= 6 here
        j = a
        while j > 0 and (pts[order[j], 0] < pts[order[j - 1], 0] or
                         (pts[order[j], 0] == pts[order[j - 1], 0] and pts[order[j], 1] < pts[order[j - 1], 1])):
            order[j], order[j - 1] = order[j - 1], order[j]
            j -= 1
    h = np.empty((2 * k + 1, 2))
    m = 0
    for rep in range(2):
        start = m
        for q in range(k):
            i = order[q] if rep == 0 else order[k - 1 - q]
            while m >= start + 2 and ((h[m - 1, 0] - h[m - 2, 0]) * (pts[i, 1] - h[m - 2, 1])
                                      - (h[m - 1, 1] - h[m - 2, 1]) * (pts[i, 0] - h[m - 2, 0])) <= 1e-15:
                m -= 1
            h[m, 0] = pts[i, 0]
            h[m, 1] = pts[i, 1]
            m += 1
        m -= 1                           # the last point of each chain starts the other one
    if m < 1:
        m = 1 if k > 0 else 0
    if m == 2 and h[0, 0] == h[1, 0] and h[0, 1] == h[1, 1]:
        m = 1
    return h[:m].copy()


# support_margin's kernel: the cycle kernels call it at every sampled phase
@njit(cache=True)
def _margin(pts, cx, cy):
    hull = _hull(pts)
    n = hull.shape[0]
    if n == 0:
        return -np.inf
    dmin = np.inf
    inside = n >= 3
    for k in range(n if n > 1 else 1):
        ax, ay = hull[k, 0], hull[k, 1]
        bx, by = hull[(k + 1) % n, 0], hull[(k + 1) % n, 1]
        ex, ey = bx - ax, by - ay
        if ex * (cy - ay) - ey * (cx - ax) < 0.0:    # right of a CCW edge: outside
            inside = False
        L2 = ex * ex + ey * ey
        s = 0.0 if L2 == 0.0 else min(1.0, max(0.0, ((cx - ax) * ex + (cy - ay) * ey) / L2))
        d = math.hypot(cx - ax - s * ex, cy - ay - s * ey)
        if d < dmin:
            dmin = d
    return dmin if inside else -dmin


def support_margin(feet_xy: np.ndarray, com_xy: Sequence[float]) -> float:
    """Static stability margin (m): distance from ``com_xy`` to the edge of the convex hull of ``feet_xy``
    (k, 2), positive inside, negative (minus the distance to the hull) outside; a hull of fewer than three
    non-collinear points has no inside (margin <= 0), no point at all gives -inf."""
    return float(_margin(np.ascontiguousarray(np.asarray(feet_xy, dtype=np.float64)[:, :2]),
                         float(com_xy[0]), float(com_xy[1])))


@njit(cache=True)
def _halfplanes(feet_xy):
    """(hull (m, 2), rows (m, 3) = [n_x, n_y, h]) with n . x <= h inside the CCW hull of feet_xy."""
    hull = _hull(feet_xy)
    m = hull.shape[0]
    rows = np.empty((m, 3))
    for k in range(m):
        ex = hull[(k + 1) % m, 0] - hull[k, 0]
        ey = hull[(k + 1) % m, 1] - hull[k, 1]
        L = math.hypot(ex, ey)
        rows[k, 0] = ey / L
        rows[k, 1] = -ex / L
        rows[k, 2] = rows[k, 0] * hull[k, 0] + rows[k, 1] * hull[k, 1]
    return hull, rows


@njit(cache=True)
def _lp_rows(polys, cx, cy):
    """Rows [n_x, n_y, 1, 0, 0] and right-hand sides h - n . c of the LP constraints n . (c + b) + r <= h of
    every polygon's hull (polys (P, k, 2)); ok False if a polygon has fewer than three hull vertices."""
    P = polys.shape[0]
    A = np.zeros((P * polys.shape[1], 5))
    rhs = np.empty(P * polys.shape[1])
    m = 0
    for q in range(P):
        hull, rows = _halfplanes(polys[q].copy())
        if hull.shape[0] < 3:
            return A[:0], rhs[:0], False
        for e in range(rows.shape[0]):
            A[m, 0] = rows[e, 0]
            A[m, 1] = rows[e, 1]
            A[m, 2] = 1.0
            rhs[m] = rows[e, 2] - rows[e, 0] * cx - rows[e, 1] * cy
            m += 1
    return A[:m], rhs[:m], True


def chebyshev_shifts(problems, max_shift: float, margin_cap: float = 1.0,
                     shift_weight: float = 0.1) -> List[Tuple[np.ndarray, float]]:
    """For each problem (polygons, com_xy), the shift b (m, xy) that maximises the smallest distance r from
    ``com_xy + b`` to the edges of every polygon (each the support feet (k, 2)), r capped at ``margin_cap``,
    then spends as little shift as it can. One linear program per problem in (b_x, b_y, r, |b_x|, |b_y|):
    minimise ``-r + shift_weight (|b_x| + |b_y|)`` (shift_weight < 1: margin first), |b_x|, |b_y| <=
    max_shift; all problems are solved as one block-diagonal LP (one solver call). Returns [(b, r)]; r < 0
    when no shift puts the CoM inside all the polygons, r = -inf for a degenerate polygon."""
    from scipy.optimize import linprog
    from scipy.sparse import block_diag

    out: List[Tuple[np.ndarray, float]] = [(np.zeros(2), -math.inf)] * len(problems)
    blocks, rhs, live = [], [], []
    absrows = np.array([[1, 0, 0, -1, 0], [-1, 0, 0, -1, 0], [0, 1, 0, 0, -1], [0, -1, 0, 0, -1]], dtype=float)
    for p, (polygons, com_xy) in enumerate(problems):
        polys = np.asarray(polygons, dtype=np.float64) if not isinstance(polygons, np.ndarray) else polygons
        if polys.ndim != 3:      # polygons of different sizes: one at a time
            parts = [_lp_rows(np.ascontiguousarray(np.asarray(f, dtype=np.float64)[None, :, :2]),
                              float(com_xy[0]), float(com_xy[1])) for f in polygons]
            A, h, ok = (np.vstack([a for a, _, _ in parts]), np.concatenate([b for _, b, _ in parts]),
                        all(o for _, _, o in parts))
        else:
            A, h, ok = _lp_rows(np.ascontiguousarray(polys[:, :, :2]), float(com_xy[0]), float(com_xy[1]))
        if ok:
            blocks.append(np.vstack([absrows, A]))
            rhs.append(np.concatenate([np.zeros(4), h]))
            live.append(p)
    if not live:
        return out
    k = len(live)
    # many small independent blocks: HiGHS's presolve costs more than it saves (same solution, faster)
    res = linprog(c=np.tile([0.0, 0.0, -1.0, shift_weight, shift_weight], k), A_ub=block_diag(blocks, format="csr"),
                  b_ub=np.concatenate(rhs),
                  bounds=[(-max_shift, max_shift), (-max_shift, max_shift), (None, margin_cap), (0, None),
                          (0, None)] * k, method="highs", options={"presolve": False})
    if res.status != 0:      # infeasible only if a block is; solve them one by one to find which
        if k == 1:
            return out
        for p in live:
            out[p] = chebyshev_shifts([problems[p]], max_shift, margin_cap, shift_weight)[0]
        return out
    x = res.x.reshape(k, 5)
    for row, p in zip(x, live):
        out[p] = (np.asarray(row[:2]), float(row[2]))
    return out


def chebyshev_shift(polygons: Sequence[np.ndarray], com_xy, max_shift: float,
                    margin_cap: float = 1.0) -> Tuple[np.ndarray, float]:
    """``chebyshev_shifts`` for one problem: (b, r)."""
    return chebyshev_shifts([(polygons, com_xy)], max_shift, margin_cap)[0]
