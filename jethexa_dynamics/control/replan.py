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
* **Candidates** (``_candidates``): full speed before ``speed_scales`` fallbacks, at each speed the shift
  fractions ``SHIFT_FRACTIONS`` in order (a short shift leaves the swing more time, so the full speed stays
  within the servos' joint rate), the configured body height
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

The geometry and the LP are in ``support``, the numba kernels over a cycle in ``cycle``; this module holds
the results (``GaitPlan``, ``NoStableGait``) and the planner's candidate search (``GaitPlanner``).
"""
from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from jethexa_dynamics.model.com import center_of_mass

from .cycle import _body_shift, _cycle_margins, _peak_rate, _plan_feet, _swing_polygons
from .gait import MIN_FEET, WAVE_ORDER, Gait, stride_vectors
from .ik import IK_OK, LegGeometry, leg_ik
from .support import chebyshev_shift, chebyshev_shifts, support_margin

REQUIRED_MARGIN = 0.01      # m: the planner's stated minimum static stability margin
FOLD = (0.0, 1.3, 1.6)      # rad: coxa radial, femur raised 75 deg, tibia folded (limits are +/-1.6)
MARGIN_HEADROOM = 0.015    # m: the shift aims at required_margin + this, then spends no more shift
BALANCED_HEADROOM = 0.01    # m: the balanced stance's LP aims at required_margin + this (smaller shifts)
NARROW_ENVELOPE = 0.2       # the balanced stance's second try: the heading hold's range x this
#: the crawl's shift fractions by number of walking feet, in order of preference at each speed. A slot's leg
#: swings in the last (1 - f) of it, so the swing's joint rates grow as 1/(1 - f): with 0.25 the five-leg crawls
#: follow the full command within the servos' speed and walk at 75-91 % of it on the engine (0.45 alone: 52-69 %,
#: slowed to 70-80 %). Four feet leave a triangle at each swing and the body travels farther between them: they
#: need 0.45 (no four-foot morphology has a stable crawl at 0.25; trying it only doubled the failed searches)
SHIFT_FRACTIONS = {5: (0.25, 0.45), 4: (0.45,)}


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
    ``max_shift`` largest body shift (m); ``shift_fractions`` {number of walking feet: the crawl's shift fractions
    to try, in order of preference at each speed}, each in [0.05, 0.8]; ``spreads`` candidate foot moves
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
                 max_shift: float = 0.05, shift_fractions: Optional[Dict[int, Sequence[float]]] = None,
                 spreads: Sequence[float] = (0.0, 0.03, 0.06),
                 yaw_allowance: float = 0.1, vy_allowance: float = 0.01, samples: int = 48,
                 speed_scales: Sequence[float] = (1.0, 0.8, 0.7), max_joint_rate: Optional[float] = None):
        self.robot = robot.full
        self.geometry = geometry or LegGeometry.from_robot(self.robot)
        fracs = {int(n): tuple(float(f) for f in fs) for n, fs in (shift_fractions or SHIFT_FRACTIONS).items()}
        if sorted(fracs) != [4, 5] or not all(fracs.values()):
            raise ValueError("shift_fractions: values in [0.05, 0.8] for 4 and for 5 walking feet, got %r"
                             % (shift_fractions,))
        for name, v, lo, hi in (("required_margin", required_margin, 0.0, 0.1), ("max_shift", max_shift, 0.0, 0.1),
                                *(("shift_fractions", f, 0.05, 0.8) for fs in fracs.values() for f in fs),
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
        self.shift_fractions = fracs
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
        n_feet = min(len(idx), max(self.shift_fractions))     # six feet whose gait failed: crawl as five do
        first = self._candidates(n_feet)
        second = self._candidates_balanced(n_feet) if len(idx) < self.geometry.n_legs else []
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
        too_fast = set()           # (speed, envelope, stance, shift fraction) whose crawl the servos cannot follow
        cands = [c for gr in groups for c in gr]
        group_of = {c: gr for gr in groups for c in gr}
        solved = {}

        def solve(group):
            skeletons = []
            for c in group:
                height, scale, spread, cap, allow, stance, frac = c
                if (scale, allow, stance, frac) in too_fast:
                    solved[c] = None
                    continue
                try:
                    skeletons.append((c,) + self._crawl_skeleton(lpl, idx, folded, cmd * scale, spread, height,
                                                                 allow, stance, frac))
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
            if (c[1], c[4], c[5], c[6]) in too_fast:
                continue
            if c not in solved:
                solve(group_of[c])
            if solved.get(c) is None:
                continue
            plan, r, design = solved[c]
            height, scale, spread, cap, allow, stance, frac = c
            best_lp = max(best_lp, r)
            if r < self.required_margin:
                continue            # the LP (sampled swing windows) already falls short: not worth verifying
            # the servos must follow it: the joint rate grows with the speed, hardly with the stance, so one
            # failure at a speed skips the other stances at that speed
            plan.peak_joint_rate = self.peak_joint_rate(plan)
            if plan.peak_joint_rate > self.max_joint_rate:
                too_fast.add((scale, allow, stance, frac))
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

    def _candidates(self, n_feet: int):
        """(body height m, command scale, spread m, LP target m, (yaw, vy) envelope, stance, shift fraction) in
        order of preference: full speed and height first, at each speed the shift fractions for ``n_feet``
        walking feet in their order."""
        h0 = self.gait_kw["body_height"]
        cap = self.required_margin + MARGIN_HEADROOM
        allow = (self.yaw_allowance, self.vy_allowance)
        return [(height, scale, spread, cap, allow, "spread", f) for scale in self.speed_scales
                for f in self.shift_fractions[n_feet] for height in (h0, h0 - 0.02) for spread in self.spreads]

    def _candidates_balanced(self, n_feet: int):
        """Second stage (``plan``): the balanced stance, LP target ``required_margin + BALANCED_HEADROOM``, the
        planner's envelope then ``NARROW_ENVELOPE`` of it, each at every speed, shift fraction and height."""
        h0 = self.gait_kw["body_height"]
        cap = self.required_margin + BALANCED_HEADROOM
        out = []
        for k in (1.0, NARROW_ENVELOPE):
            allow = (self.yaw_allowance * k, self.vy_allowance * k)
            out += [(height, scale, 0.0, cap, allow, "balanced", f) for scale in self.speed_scales
                    for f in self.shift_fractions[n_feet] for height in (h0, h0 - 0.02)]
        return out

    def _crawl_skeleton(self, lpl, idx, folded, cmd, spread, height, allow, stance, f):
        """A crawl for one candidate without its shifts: (plan, [(polygons, com_xy)] per slot, command);
        ``f`` its shift fraction."""
        g_all = self.geometry
        names = [g_all.names[i] for i in idx]
        n = len(idx)
        order = [leg for leg in WAVE_ORDER if leg in names]
        f = float(f)
        duty = 1.0 - (1.0 - f) / n
        starts = {leg: (k + f) / n for k, leg in enumerate(order)}
        offsets = [(-starts[leg]) % 1.0 for leg in names]
        key = (tuple(idx), height, f)
        if key not in self._base_gaits:      # one validated Gait per leg set, height and duty; candidates copy it
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
