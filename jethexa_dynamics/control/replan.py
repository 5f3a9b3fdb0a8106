"""Gait re-planning for a damaged hexapod: static stability from the model's centre of mass (pure core).

For a morphology (links per leg, ``model.Morphology``) the planner picks, for the legs that still have a
foot, a periodic gait that keeps the robot statically stable at every phase of the cycle:

* **Static stability margin** ``m = dist(c_xy, ∂S)`` (m), positive when the horizontal projection of the
  whole-body centre of mass ``c`` lies inside the support polygon ``S`` (convex hull of the stance feet, in
  ``base_link`` xy with the body level), negative (minus the distance to ``S``) outside.
* **Centre of mass** from the modular model: main body + the links that exist (lost links do not count),
  at the joint angles the gait commands (``model.com.center_of_mass``).
* **Healthy (six feet)**: the configured gait (tripod by default), no body shift.
* **Four or five feet: a crawl with body shift.** One leg swings at a time, in ``WAVE_ORDER`` (back to
  front, right side then left). The cycle has one slot of length 1/n per walking leg; in the first
  ``shift_fraction`` of slot k all feet are down and the body moves (cosine blend) to the shift ``b_k``,
  then leg k swings while the body holds ``b_k``. Duty factor ``1 - (1 - shift_fraction)/n``. Each ``b_k``
  is the Chebyshev centre of the support triangles/quads seen during leg k's swing (linear program,
  ``scipy.optimize.linprog``): the shift that maximises the worst distance to their edges up to
  required_margin + ``MARGIN_HEADROOM``, then spends as little shift as it can, |b| <= max_shift.
  Foot targets in base_link are ``gait foot - b(phase)`` (the body moves by +b relative to the feet).
* **Candidates** (``_candidates``): full speed before ``speed_scales`` fallbacks, the configured body height
  before 2 cm lower, and the stance of each foot: the support lengthened along x next to a missing leg by
  ``spreads``. **Second stage** (``_candidates_balanced``, four or five feet): the *balanced* stance
  (``_balanced_neutral``: the feet spread evenly around the CoM), LP target ``required_margin +
  BALANCED_HEADROOM``, with the planner's heading-hold envelope then ``NARROW_ENVELOPE`` times it (recorded
  in ``GaitPlan.yaw_allowance`` / ``vy_allowance``). Order of preference: the first stage's preferred stance
  at each speed, the balanced stance, then the other stances of both stages (one LP per group). The first
  candidate whose LP reaches ``required_margin`` and whose verification passes and whose joint targets stay
  within the servos' speed (``max_joint_rate``) is used.
* **Folded legs**: legs keeping some links but no foot hold ``FOLD`` (femur raised), out of the ground.
* **No statically stable gait** (fewer than four feet, or no candidate reaching ``required_margin``):
  ``NoStableGait`` names the reason and gives a safe stance: every remaining foot down, body shifted to the
  Chebyshev centre of the all-feet polygon (its margin may still be <= 0 with fewer than three feet).

The plan is verified by sampling the whole cycle (``samples`` phases) with the model's centre of mass at
the commanded joint angles; ``GaitPlan.min_margin`` is that verified minimum for the design command
(and for the design command trimmed by the corners of the heading hold's correction range: yaw rate +/-
``yaw_allowance``, lateral speed +/- ``vy_allowance``).
Required margin default: ``REQUIRED_MARGIN`` = 0.01 m.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from jethexa_dynamics.model import kernels
from jethexa_dynamics.model.com import center_of_mass, com_kernel
from jethexa_dynamics.model._numba import njit

from .gait import MIN_FEET, WAVE_ORDER, Gait, gait_targets, in_swing, stride_vectors
from .ik import IK_OK, LegGeometry, leg_ik

REQUIRED_MARGIN = 0.01      # m: the planner's stated minimum static stability margin
FOLD = (0.0, 1.3, 1.6)      # rad: coxa radial, femur raised 75 deg, tibia folded (limits are +/-1.6)
MARGIN_HEADROOM = 0.015    # m: the shift aims at required_margin + this, then spends no more shift
BALANCED_HEADROOM = 0.01    # m: the balanced stance's LP aims at required_margin + this (smaller shifts)
NARROW_ENVELOPE = 0.2       # the balanced stance's second try: the heading hold's range x this


# ---------------------------------------------------------------------------------------------- geometry
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
    # many small independent blocks: HiGHS's presolve costs more than it saves (same solution, ~30 % faster)
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


# ---------------------------------------------------------------------------------------------- cycle kernels
@njit(cache=True)
def _body_shift(shifts, shift_fraction, phase, out):
    """Body shift b (m, xy) at cycle phase ``phase`` into out (2,): slot k = floor(frac(phase) n) holds
    shifts[k] after a cosine move from shifts[k-1] over the first ``shift_fraction`` of the slot."""
    n = shifts.shape[0]
    out[0] = 0.0
    out[1] = 0.0
    if n == 0:
        return
    s = (phase - math.floor(phase)) * n
    k = min(int(s), n - 1)
    u = (s - k) / shift_fraction if shift_fraction > 0.0 else 1.0
    if u >= 1.0:
        out[0] = shifts[k, 0]
        out[1] = shifts[k, 1]
        return
    w = 0.5 - 0.5 * math.cos(math.pi * u)
    km = k - 1 if k > 0 else n - 1
    out[0] = (1.0 - w) * shifts[km, 0] + w * shifts[k, 0]
    out[1] = (1.0 - w) * shifts[km, 1] + w * shifts[k, 1]


@njit(cache=True)
def _plan_feet(prm, offsets, neutral, stride, shifts, shift_fraction, t, b, out):
    """Foot targets (n_walking, 3) m, base_link, of a plan at gait time t (s): gait feet minus the body shift."""
    gait_targets(prm, offsets, neutral, stride, t, out)
    _body_shift(shifts, shift_fraction, t / prm[0], b)
    for j in range(out.shape[0]):
        out[j, 0] -= b[0]
        out[j, 1] -= b[1]


@njit(cache=True, nogil=True)
def _cycle_margins(prm, offsets, neutral, stride, shifts, shift_fraction, geom, limits, idx, theta, mask, data,
                   n, out):
    """Static margin (m) at the n phases (k + 1/2)/n of one cycle into out (n,): feet of the plan, leg IK
    into the full joint vector ``theta`` (folded legs preset), CoM of the existing links, hull of the stance
    feet; -inf where a foot is unreachable. Releases the GIL (the gait controller plans in a thread)."""
    nw = neutral.shape[0]
    nmax = data[kernels.D_XI].shape[1]
    R, p, xp = np.empty((nmax, 3, 3)), np.empty((nmax, 3)), np.empty((nmax, 6))
    c, Ic, com = np.empty((nmax, 3)), np.empty((nmax, 3, 3)), np.empty(3)
    feet, b, down = np.empty((nw, 3)), np.empty(2), np.empty((nw, 2))
    T = prm[0]
    for k in range(n):
        t = T * (k + 0.5) / n
        _plan_feet(prm, offsets, neutral, stride, shifts, shift_fraction, t, b, feet)
        ok = True
        for j in range(nw):
            i = idx[j]
            if leg_ik(geom[i], limits[i], feet[j], theta[3 * i:3 * i + 3]) != IK_OK:
                ok = False
                break
        if not ok:
            out[k] = -np.inf
            continue
        com_kernel(data, theta, mask, R, p, xp, c, Ic, com)
        m = 0
        for j in range(nw):
            if not in_swing(prm, offsets, t, j):
                down[m, 0] = feet[j, 0]
                down[m, 1] = feet[j, 1]
                m += 1
        out[k] = _margin(down[:m].copy(), com[0], com[1])


@njit(cache=True, nogil=True)
def _peak_rate(prm, offsets, neutral, stride, shifts, shift_fraction, geom, limits, idx, samples):
    """Largest |d theta/dt| (rad/s) of the plan's joint targets: finite differences of the leg IK at
    ``samples`` + 1 equally spaced times over one cycle; inf if a target is unreachable."""
    nw = neutral.shape[0]
    feet, b = np.empty((nw, 3)), np.empty(2)
    prev, cur = np.empty(3 * nw), np.empty(3 * nw)
    dt = prm[0] / samples
    peak = 0.0
    for k in range(samples + 1):
        _plan_feet(prm, offsets, neutral, stride, shifts, shift_fraction, k * dt, b, feet)
        for j in range(nw):
            if leg_ik(geom[idx[j]], limits[idx[j]], feet[j], cur[3 * j:3 * j + 3]) != IK_OK:
                return np.inf
        if k > 0:
            for q in range(3 * nw):
                r = abs(cur[q] - prev[q]) / dt
                if r > peak:
                    peak = r
        prev[:] = cur
    return peak


@njit(cache=True)
def _swing_polygons(prm, offsets, neutral, strides, slots, shift_fraction, n_u):
    """Support polygons (n_slots, n_u * n_strides, n - 1, 2) seen while slot k's leg ``slots[k]`` swings: the
    other feet at ``n_u`` times evenly over the swing window of slot k, for each stride (n_strides, n, 2)."""
    n = neutral.shape[0]
    ns = slots.shape[0]
    out = np.empty((ns, n_u * strides.shape[0], n - 1, 2))
    feet = np.empty((n, 3))
    T = prm[0]
    for k in range(ns):
        q = 0
        for a in range(n_u):
            u = a / (n_u - 1.0)
            t = T * (k + shift_fraction + u * (1.0 - shift_fraction)) / ns
            for s in range(strides.shape[0]):
                gait_targets(prm, offsets, neutral, strides[s], t, feet)
                m = 0
                for j in range(n):
                    if j != slots[k]:
                        out[k, q, m, 0] = feet[j, 0]
                        out[k, q, m, 1] = feet[j, 1]
                        m += 1
                q += 1
    return out


# ---------------------------------------------------------------------------------------------- results
@dataclass
class GaitPlan:
    """A statically stable periodic gait for one morphology (SI units, base_link, phases in cycles).

    ``legs`` walking legs (geometry order); ``gait`` the ``Gait`` over them (offsets, duty, neutral feet
    = the chosen stance, stride for the design command); ``order`` swing order; ``shifts`` (n_slots, 2)
    body shift b_k held while slot k's leg swings (zeros for the healthy gait); ``shift_fraction`` part of
    each slot spent shifting with all feet down; ``folded`` {leg: joint angles} of footless legs;
    ``min_margin`` verified minimum static margin over the cycle (m); ``required_margin`` the target (m).
    """
    legs: List[str]
    gait: Gait
    kind: str
    order: List[str]
    shifts: np.ndarray
    shift_fraction: float
    folded: Dict[str, Tuple[float, float, float]]
    min_margin: float
    required_margin: float
    spread: float = 0.0
    stable: bool = True
    peak_joint_rate: float = float("nan")
    yaw_allowance: float = 0.1     # rad/s: yaw-rate trim range the margin is verified over
    vy_allowance: float = 0.01     # m/s: lateral-speed trim range the margin is verified over
    stance: str = "spread"         # "spread" (feet moved along x next to a missing leg) or "balanced"

    def body_shift(self, phase: float) -> np.ndarray:
        """Body shift b (m, xy) at cycle phase ``phase`` (cycles)."""
        out = np.zeros(2)
        _body_shift(self.shifts, float(self.shift_fraction), float(phase), out)
        return out

    def foot_targets(self, t: float, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Foot targets (n_walking, 3) m, base_link, at gait time t (s): gait feet minus the body shift."""
        g = self.gait
        out = np.empty_like(g.neutral) if out is None else out
        _plan_feet(g.prm, g.offsets, g.neutral, g.stride, self._shifts(), float(self.shift_fraction), float(t),
                   np.empty(2), out)
        return out

    def _shifts(self) -> np.ndarray:
        return np.ascontiguousarray(self.shifts, dtype=np.float64).reshape(-1, 2)

    @property
    def label(self) -> str:
        return "%s(%s)" % (self.kind, ",".join(self.order))

    def copy(self) -> "GaitPlan":
        """An independent copy (the gait controller trims the stride of the plan it runs; a cached plan stays
        as planned)."""
        g = copy.copy(self.gait)
        g.neutral, g.stride, g.command = self.gait.neutral.copy(), self.gait.stride.copy(), self.gait.command.copy()
        return dataclasses.replace(self, gait=g, shifts=self.shifts.copy(), folded=dict(self.folded))


@dataclass
class NoStableGait:
    """No statically stable gait for this morphology: ``reason``; hold ``stance`` (feet (k, 3) m base_link
    of ``legs``) with body shift ``shift`` (m, xy) whose static margin is ``margin`` (m)."""
    reason: str
    legs: List[str]
    stance: np.ndarray
    shift: np.ndarray
    margin: float
    folded: Dict[str, Tuple[float, float, float]] = field(default_factory=dict)
    stable: bool = False
    kind: str = "stance"      # "planning": the stance held while a plan is being computed

    @property
    def label(self) -> str:
        return self.kind

    def copy(self) -> "NoStableGait":
        return dataclasses.replace(self, stance=self.stance.copy(), shift=self.shift.copy(), folded=dict(self.folded))


PlanResult = Union[GaitPlan, NoStableGait]


def common_morphologies(n_joints: Sequence[int], leg_names: Sequence[str]) -> List[List[int]]:
    """Links per leg of the morphologies worth planning ahead: every single-leg loss of the healthy robot and the
    paper's scenarios (``model.scenarios``)."""
    from jethexa_dynamics.model.scenarios import scenario_vectors, single_leg_losses

    return ([list(v) for v in single_leg_losses(n_joints, n_joints)]
            + [v for _, v in scenario_vectors(leg_names, n_joints)])


# ---------------------------------------------------------------------------------------------- planner
class GaitPlanner:
    """Re-plans the gait for a morphology (see the module docstring).

    Parameters: ``robot`` healthy ``LeggedRobot``; ``geometry`` its ``LegGeometry``; ``kind`` healthy gait
    (tripod | wave | ripple); ``cycle_time`` healthy cycle (s); ``crawl_cycle_time`` cycle of the shifted
    crawl (s, default 2.0);
    ``step_height``, ``body_height``, ``stance_radius`` (m) as ``Gait``; ``crawl_step_height`` (m) swing
    apex of the crawl (its swings are short: a lower apex keeps the joint rates servo-feasible);
    ``required_margin`` (m, >= 0);
    ``max_shift`` largest body shift (m); ``shift_fraction`` in (0, 0.8); ``spreads`` candidate foot moves
    toward a missing neighbour (m); ``yaw_allowance`` yaw-rate range (rad/s) the plan must tolerate on top
    of the design command and ``vy_allowance`` (m/s) lateral speed (heading hold corrections); ``samples``
    phases per cycle for verification; ``speed_scales`` fallback fractions of the command;
    ``max_joint_rate`` (rad/s, default the URDF's joint velocity limit): a crawl whose joint targets would
    move faster (``peak_joint_rate``) is rejected for the next candidate (usually the slower speed).
    """

    def __init__(self, robot, geometry: Optional[LegGeometry] = None, kind: str = "tripod",
                 cycle_time: float = 1.3, crawl_cycle_time: float = 2.0, step_height: float = 0.02,
                 crawl_step_height: float = 0.012,
                 body_height: float = 0.12, stance_radius: float = 0.13, required_margin: float = REQUIRED_MARGIN,
                 max_shift: float = 0.05, shift_fraction: float = 0.45, spreads: Sequence[float] = (0.0, 0.03, 0.06),
                 yaw_allowance: float = 0.1, vy_allowance: float = 0.01, samples: int = 48,
                 speed_scales: Sequence[float] = (1.0, 0.8, 0.7), max_joint_rate: Optional[float] = None):
        self.robot = robot.full
        self.geometry = geometry or LegGeometry.from_robot(self.robot)
        for name, v, lo, hi in (("required_margin", required_margin, 0.0, 0.1), ("max_shift", max_shift, 0.0, 0.1),
                                ("shift_fraction", shift_fraction, 0.05, 0.8),
                                ("yaw_allowance", yaw_allowance, 0.0, 1.0), ("vy_allowance", vy_allowance, 0.0, 0.05)):
            if not (math.isfinite(v) and lo <= v <= hi):
                raise ValueError("%s=%r outside the allowed range [%g, %g]" % (name, v, lo, hi))
        self.kind = kind
        self.cycle_time = float(cycle_time)
        self.crawl_cycle_time = float(crawl_cycle_time)
        self.gait_kw = dict(step_height=step_height, body_height=body_height, stance_radius=stance_radius)
        self.crawl_step_height = float(crawl_step_height)
        self.required_margin = float(required_margin)
        self.max_shift = float(max_shift)
        self.shift_fraction = float(shift_fraction)
        self.spreads = tuple(float(s) for s in spreads)
        self.yaw_allowance = float(yaw_allowance)
        self.vy_allowance = float(vy_allowance)
        self.samples = int(samples)
        self._base_gaits = {}
        self._masks = {}
        self.speed_scales = tuple(float(k) for k in speed_scales)
        # the servos' speed: the URDF's joint velocity limit unless given
        self.max_joint_rate = float(np.min(self.robot.joint_velocity) if max_joint_rate is None else max_joint_rate)
        self.healthy = Gait(self.geometry, kind=kind, cycle_time=cycle_time, **self.gait_kw)  # validates

    # -- helpers ----------------------------------------------------------------------------------------
    def _split(self, links_per_leg):
        n_full = self.robot.description.n_joints
        walk = [i for i, (k, n) in enumerate(zip(links_per_leg, n_full)) if k == n]
        folded = {self.geometry.names[i]: FOLD for i, (k, n) in enumerate(zip(links_per_leg, n_full)) if 0 < k < n}
        return walk, folded

    def _mask(self, links_per_leg):
        """Link existence (n_legs, max_links) of a morphology (cached: the planner asks for it per candidate)."""
        from jethexa_dynamics.model import Morphology

        key = tuple(int(k) for k in links_per_leg)
        if key not in self._masks:
            self._masks[key] = Morphology.from_vector(self.robot, list(key)).link_mask
        return self._masks[key]

    def _theta(self, idx, feet, folded, out):
        """Full joint vector for walking feet (base_link) + folded legs; False if a foot is unreachable."""
        g = self.geometry
        for j, i in enumerate(idx):
            if leg_ik(g.geom[i], g.limits[i], feet[j], out[3 * i:3 * i + 3]) != IK_OK:
                return False
        for leg, ang in folded.items():
            i = g.names.index(leg)
            out[3 * i:3 * i + 3] = ang
        return True

    def _spread_neutral(self, neutral, names, spread):
        """Neutral feet of the walking legs; with ``spread`` (m) the support is lengthened along x next to a
        missing leg: a front/rear foot whose middle neighbour is gone moves out by ``spread`` (front +x, rear
        -x), a middle foot moves ``spread`` toward a missing front (+x) or rear (-x) neighbour."""
        neutral = neutral.copy()
        present = set(names)
        for j, leg in enumerate(names):
            side, pos = leg[0], leg[1]
            if pos == "F" and side + "M" not in present:
                neutral[j, 0] += spread
            elif pos == "R" and side + "M" not in present:
                neutral[j, 0] -= spread
            elif pos == "M" and (side + "F" not in present) != (side + "R" not in present):
                neutral[j, 0] += spread if side + "F" not in present else -spread
        return neutral

    def _balanced_neutral(self, neutral, idx, folded, lpl):
        """Neutral feet spread evenly around the centre of mass: seen from the CoM c (model, at the given
        stance), the n feet at angles a_i (sorted) move to c + |f_i - c| (cos a_i', sin a_i') with
        a_i' = a0 + 2 pi i / n and a0 the least-squares fit (mean of a_i - 2 pi i / n): the support polygon
        loses its wide gaps where legs are missing, so no swing leaves the CoM near an edge."""
        th = np.zeros(len(self.robot.joint_names))
        if not self._theta(idx, neutral, folded, th):
            raise ValueError("stance unreachable")
        c = center_of_mass(self.robot, th, self._mask(lpl))[:2]
        rel = neutral[:, :2] - c
        a = np.arctan2(rel[:, 1], rel[:, 0])
        n = len(a)
        order = np.argsort(a)
        even = 2.0 * np.pi * np.arange(n) / n
        target = np.empty(n)
        target[order] = np.mean(a[order] - even) + even
        d = np.hypot(rel[:, 0], rel[:, 1])
        out = neutral.copy()
        out[:, 0] = c[0] + d * np.cos(target)
        out[:, 1] = c[1] + d * np.sin(target)
        return out

    def _trims(self, allow=None):
        """(dvy m/s, dwz rad/s) corners of the heading hold's correction range the plan must tolerate;
        ``allow`` = (yaw rad/s, vy m/s), default the planner's."""
        a, v = (self.yaw_allowance, self.vy_allowance) if allow is None else allow
        return [(0.0, 0.0), (0.0, a), (0.0, -a), (v, a), (-v, -a), (v, -a), (-v, a)]

    def _design_strides(self, gait, command, allow=None):
        vx, vy, wz = command
        out = []
        trims = self._trims(allow)
        for dvy, dw in [trims[0]] + trims[3:]:   # nominal + the four corners
            s = np.zeros((len(gait.neutral), 2))
            stride_vectors(gait.neutral, gait.duty, gait.cycle_time, vx, vy + dvy, wz + dw, s)
            out.append(s)
        return out

    def peak_joint_rate(self, plan: GaitPlan, samples: int = 240) -> float:
        """Largest |d theta / dt| (rad/s) of the plan's joint targets over one cycle (finite differences of the
        IK at ``samples`` phases, design command); inf if a target is unreachable."""
        g = plan.gait
        idx = np.array([self.geometry.names.index(leg) for leg in plan.legs], dtype=np.int64)
        return float(_peak_rate(g.prm, g.offsets, g.neutral, g.stride, plan._shifts(), float(plan.shift_fraction),
                                self.geometry.geom, self.geometry.limits, idx, int(samples)))

    def evaluate(self, plan: GaitPlan, links_per_leg, command=None, samples: Optional[int] = None) -> np.ndarray:
        """Static margin (m) at ``samples`` phases of one cycle of ``plan`` for ``command`` (default: the
        plan's design command), CoM from the model at the commanded joint angles; -inf where unreachable."""
        return self._margins(plan, self._mask(links_per_leg), command, samples)

    def _margins(self, plan: GaitPlan, mask, command=None, samples: Optional[int] = None) -> np.ndarray:
        g = plan.gait
        idx = np.array([self.geometry.names.index(leg) for leg in plan.legs], dtype=np.int64)
        stride = g.stride
        if command is not None:
            stride = np.empty_like(g.stride)
            stride_vectors(g.neutral, g.duty, g.cycle_time, command[0], command[1], command[2], stride)
        th = np.zeros(len(self.robot.joint_names))
        for leg, ang in plan.folded.items():
            i = self.geometry.names.index(leg)
            th[3 * i:3 * i + 3] = ang
        n = int(samples or self.samples)
        out = np.empty(n)
        _cycle_margins(g.prm, g.offsets, g.neutral, stride, plan._shifts(), float(plan.shift_fraction),
                       self.geometry.geom, self.geometry.limits, idx, th,
                       np.ascontiguousarray(mask, dtype=np.float64), self.robot.full.kernel_data, n, out)
        return out

    # -- planning ---------------------------------------------------------------------------------------
    def plan(self, links_per_leg: Sequence[int], command=(0.05, 0.0, 0.0)) -> PlanResult:
        """Plan for a morphology (links per leg, geometry order) and a design command (vx m/s, vy m/s,
        wz rad/s). Returns a ``GaitPlan`` whose verified ``min_margin`` >= ``required_margin`` or a
        ``NoStableGait`` with a safe stance."""
        lpl = [int(k) for k in links_per_leg]
        if len(lpl) != self.geometry.n_legs:
            raise ValueError("morphology: %d entries, expected %d" % (len(lpl), self.geometry.n_legs))
        cmd = np.asarray(command, dtype=float)
        if cmd.shape != (3,) or not np.all(np.isfinite(cmd)):
            raise ValueError("command must be 3 finite values (vx, vy, yaw_rate), got %r" % (command,))
        idx, folded = self._split(lpl)
        names = [self.geometry.names[i] for i in idx]
        if len(idx) == self.geometry.n_legs:
            g = Gait(self.geometry, kind=self.kind, cycle_time=self.cycle_time, **self.gait_kw)
            g.set_command(cmd)
            plan = GaitPlan(names, g, self.kind, list(names), np.zeros((0, 2)), 0.0, folded, 0.0,
                            self.required_margin, yaw_allowance=self.yaw_allowance, vy_allowance=self.vy_allowance)
            plan.min_margin = float(self.evaluate(plan, lpl).min())
            if plan.min_margin >= self.required_margin:
                return plan
            idx_try = idx
        else:
            idx_try = idx
        if len(idx_try) < MIN_FEET:
            return self._no_gait("%d feet left (%s): a statically stable gait needs >= %d (one lifted, "
                                 "three down)" % (len(idx), ",".join(names) or "none", MIN_FEET), lpl, idx, folded)
        mask = self._mask(lpl)
        # preference: the first stage's preferred stance (spread 0, full height) at each speed; then the second
        # stage's (used only if all those fail): every foot moved around the CoM to even out the support
        # (per-foot stance), a tighter LP target (smaller shifts keep the feet in reach), the planner's
        # heading-hold envelope then a narrower one; then the other stances of both stages. One LP per group,
        # solved only when the search reaches it.
        first, second = self._candidates(), (self._candidates_balanced() if len(idx) < self.geometry.n_legs else [])
        heads1 = [c for c in first if c[0] == self.gait_kw["body_height"] and c[2] == self.spreads[0]]
        heads2 = [c for c in second if c[0] == self.gait_kw["body_height"]]
        groups = [heads1, heads2, [c for c in first if c not in heads1], [c for c in second if c not in heads2]]
        found, best, best_lp = self._search(lpl, idx, folded, cmd, mask, [gr for gr in groups if gr])
        if found is not None:
            return found
        got = best.min_margin if best is not None else best_lp
        return self._no_gait("no statically stable gait for legs %s: best margin %.4f m < required %.4f m"
                             % (",".join(names), got, self.required_margin), lpl, idx, folded)

    def _search(self, lpl, idx, folded, cmd, mask, groups):
        """Try the candidates of ``groups`` in order: (first passing plan or None, best failing plan or None,
        best LP margin). The shifts of a group come from one LP, solved when the search first reaches the group;
        a candidate is verified only after every candidate before it was."""
        best, best_lp = None, -math.inf
        too_fast = set()                        # (speed, envelope, stance) whose crawl the servos cannot follow
        cands = [c for gr in groups for c in gr]
        group_of = {c: gr for gr in groups for c in gr}
        solved = {}

        def solve(group):
            skeletons = []
            for c in group:
                height, scale, spread, cap, allow, stance = c
                if (scale, allow, stance) in too_fast:
                    solved[c] = None
                    continue
                try:
                    skeletons.append((c,) + self._crawl_skeleton(lpl, idx, folded, cmd * scale, spread, height,
                                                                 allow, stance))
                except ValueError:
                    solved[c] = None        # a stance or stride the legs cannot reach
            problems = [(pr, c[3]) for sk in skeletons for pr in sk[2]]
            caps = sorted({cap for _, cap in problems})
            sols = {}
            for cap in caps:                # one LP per target margin
                sub = [pr for pr, cp in problems if cp == cap]
                sols[cap] = iter(chebyshev_shifts(sub, self.max_shift, cap))
            for c, plan, probs, design in skeletons:
                sol = [next(sols[c[3]]) for _ in probs]
                plan.shifts = np.array([b for b, _ in sol])
                solved[c] = (plan, min(r for _, r in sol), design)

        for c in cands:
            if (c[1], c[4], c[5]) in too_fast:
                continue
            if c not in solved:
                solve(group_of[c])
            if solved.get(c) is None:
                continue
            plan, r, design = solved[c]
            height, scale, spread, cap, allow, stance = c
            best_lp = max(best_lp, r)
            if r < self.required_margin:
                continue            # the LP (sampled swing windows) already falls short: not worth verifying
            # the servos must follow it: the joint rate grows with the speed, hardly with the stance, so one
            # failure at a speed skips the other stances at that speed
            plan.peak_joint_rate = self.peak_joint_rate(plan)
            if plan.peak_joint_rate > self.max_joint_rate:
                too_fast.add((scale, allow, stance))
                continue
            # verify over the whole cycle, for the design command and the heading hold's correction range
            plan.min_margin = float(min(self._margins(plan, mask, command=(design[0], design[1] + dvy,
                                                                          design[2] + dw)).min()
                                        for dvy, dw in self._trims(allow)))
            if plan.min_margin >= self.required_margin:
                return plan, best, best_lp
            if best is None or plan.min_margin > best.min_margin:
                best = plan
        return None, best, best_lp

    def _candidates(self):
        """(body height m, command scale, spread m, LP target m, (yaw, vy) envelope, stance) in order of
        preference: full speed and height first."""
        h0 = self.gait_kw["body_height"]
        cap = self.required_margin + MARGIN_HEADROOM
        allow = (self.yaw_allowance, self.vy_allowance)
        return [(height, scale, spread, cap, allow, "spread") for scale in self.speed_scales
                for height in (h0, h0 - 0.02) for spread in self.spreads]

    def _candidates_balanced(self):
        """Second stage (``plan``): the balanced stance, LP target ``required_margin + BALANCED_HEADROOM``, the
        planner's envelope then ``NARROW_ENVELOPE`` of it, each at every speed and both heights."""
        h0 = self.gait_kw["body_height"]
        cap = self.required_margin + BALANCED_HEADROOM
        out = []
        for k in (1.0, NARROW_ENVELOPE):
            allow = (self.yaw_allowance * k, self.vy_allowance * k)
            out += [(height, scale, 0.0, cap, allow, "balanced") for scale in self.speed_scales
                    for height in (h0, h0 - 0.02)]
        return out

    def _crawl_skeleton(self, lpl, idx, folded, cmd, spread, height, allow=None, stance="spread"):
        """A crawl for one candidate without its shifts: (plan, [(polygons, com_xy)] per slot, command)."""
        g_all = self.geometry
        names = [g_all.names[i] for i in idx]
        n = len(idx)
        order = [leg for leg in WAVE_ORDER if leg in names]
        f = self.shift_fraction
        duty = 1.0 - (1.0 - f) / n
        starts = {leg: (k + f) / n for k, leg in enumerate(order)}
        offsets = [(-starts[leg]) % 1.0 for leg in names]
        key = (tuple(idx), height)
        if key not in self._base_gaits:      # one validated Gait per leg set and height; candidates copy it
            sub = LegGeometry(names, g_all.geom[idx], g_all.limits[idx])
            kw = dict(self.gait_kw, body_height=height, step_height=self.crawl_step_height)
            self._base_gaits[key] = Gait(sub, kind="wave", offsets=offsets, duty=duty,
                                         cycle_time=self.crawl_cycle_time, profile="linear", **kw)
        base = self._base_gaits[key]
        gait = copy.copy(base)
        if stance == "balanced":
            gait.neutral = self._balanced_neutral(base.neutral, idx, folded, lpl)
        else:
            gait.neutral = self._spread_neutral(base.neutral, names, spread)
        gait.stride = np.zeros_like(base.stride)
        gait.command = np.zeros(3)
        gait._check_stance()
        gait.set_command(cmd)                      # ValueError if a foot cannot follow
        mask = self._mask(lpl)
        th = np.zeros(len(self.robot.joint_names))
        if not self._theta(idx, gait.neutral, folded, th):
            raise ValueError("stance unreachable")
        com = center_of_mass(self.robot, th, mask)[:2]
        strides = self._design_strides(gait, cmd, allow)
        slots = np.array([names.index(leg) for leg in order], dtype=np.int64)
        polys = _swing_polygons(gait.prm, gait.offsets, gait.neutral, np.ascontiguousarray(np.array(strides)), slots,
                                f, 4)
        problems = [(polys[k], com) for k in range(n)]
        allow = (self.yaw_allowance, self.vy_allowance) if allow is None else allow
        plan = GaitPlan(names, gait, "crawl", order, np.zeros((n, 2)), f, folded, -math.inf,
                        self.required_margin, spread, yaw_allowance=float(allow[0]), vy_allowance=float(allow[1]),
                        stance=stance)
        return plan, problems, cmd

    def interim_stance(self, links_per_leg: Sequence[int]) -> NoStableGait:
        """The stance held while a plan for ``links_per_leg`` is being computed (cheap: no LP, no search):
        every walking foot down at the healthy gait's neutral position, no body shift, footless legs folded;
        ``margin`` is its static margin (m) with the model's CoM (with four or more feet spread around the
        body it is positive; the plan's blend then moves the body)."""
        lpl = [int(k) for k in links_per_leg]
        idx, folded = self._split(lpl)
        names = [self.geometry.names[i] for i in idx]
        feet = self.healthy.neutral[idx].copy()
        margin = -math.inf
        th = np.zeros(len(self.robot.joint_names))
        if idx and self._theta(idx, feet, folded, th):
            margin = support_margin(feet[:, :2], center_of_mass(self.robot, th, self._mask(lpl))[:2])
        return NoStableGait("re-planning the gait for this morphology", names, feet, np.zeros(2), float(margin),
                            folded, kind="planning")

    def _no_gait(self, reason, lpl, idx, folded) -> NoStableGait:
        names = [self.geometry.names[i] for i in idx]
        feet = self.healthy.neutral[idx].copy()
        shift, margin = np.zeros(2), -math.inf
        if idx:
            th = np.zeros(len(self.robot.joint_names))
            if self._theta(idx, feet, folded, th):
                com = center_of_mass(self.robot, th, self._mask(lpl))[:2]
                if len(idx) >= 3:
                    shift, _ = chebyshev_shift([feet[:, :2]], com, self.max_shift)
                feet[:, :2] -= shift
                self._theta(idx, feet, folded, th)
                com = center_of_mass(self.robot, th, self._mask(lpl))[:2]
                margin = support_margin(feet[:, :2], com)
        return NoStableGait(reason, names, feet, shift, float(margin), folded)
