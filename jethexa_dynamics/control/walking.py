"""The gait controller's logic (no rclpy): a gait that follows the morphology and a safe stance.

``WalkingGait`` turns a velocity command (vx m/s, vy m/s, yaw rate rad/s, base_link) into joint targets (rad)
of the legs present; how the legs walk it leaves to one of two strategies behind ``GaitStrategy``:
``FixedGait`` (the configured gait, a re-phased wave on a damaged robot) or ``ReplannedGait``
(``recovery=True``: the planner's gaits, planned in a worker thread with ``background=True``).

* Healthy robot: the configured gait (tripod by default) over all six legs.
* Damaged robot: only legs with all their links walk; the others are not commanded. The gait is re-phased
  for the legs that remain: a wave (one leg in swing at a time, back to front, right then left), which keeps
  at least three feet down with four or five legs. With fewer than four walking legs the robot holds its
  stance and does not step.
* Stale command: time stops and every walking leg goes to its neutral stance (feet down).
* ``recovery=True``: the gait comes from ``control.replan.GaitPlanner`` instead: the model's CoM,
  a body-shifted crawl that keeps the static margin >= the planner's ``required_margin`` at every phase,
  footless legs folded, and ``NoStableGait`` -> a safe stance. A gait switch blends the joint targets from
  the last ones sent to the new gait's t = 0 pose over ``blend_time`` (s, at least 1/4 cycle and long enough
  that no joint target moves faster than ``BLEND_RATE_FRACTION`` of the URDF's joint velocity limit), the gait
  clock held at 0 meanwhile.
  ``set_trim`` applies the heading hold's per-tick correction without re-validating (the plan is verified
  over the planner's ``yaw_allowance`` / ``vy_allowance``; the trim is clamped to them and may only slow
  the walk down).
* ``background=True`` (the gait controller node): the re-planning runs in a ``PlanWorker`` thread, never in
  the caller's callback. On a morphology change the targets blend at once to the planner's interim stance
  (every walking foot down, footless legs folded; status gait ``planning``); ``step`` switches (with a
  blend) to the plan when it is ready. A newer morphology supersedes a plan still being computed; plans
  are cached per (morphology, command), and ``prefetch`` computes likely ones ahead.
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence, Tuple

import numpy as np

from jethexa_dynamics.control.gait import MIN_FEET, WAVE_ORDER, Gait, stride_vectors
from jethexa_dynamics.control.ik import IK_OK, LegGeometry, leg_ik
from jethexa_dynamics.worker import IDLE, Worker

#: servo move time (s) when the gait goes to the stance (a smooth stop rather than one command period)
STANCE_MOVE_TIME = 0.3
#: blends move the joint targets at most this fraction of the URDF's joint velocity limit (JetHexa: 6 -> 3 rad/s):
#: the servo follows a target ramp with a lag, and a ramp at its full speed would leave it behind
BLEND_RATE_FRACTION = 0.5


def _gait_kwargs(settings: dict) -> dict:
    """The ``Gait`` keywords of the walker's settings (all but ``kind``)."""
    return dict(cycle_time=settings["cycle_time"], step_height=settings["step_height"],
                body_height=settings["body_height"], stance_radius=settings["stance_radius"])


def _strategy_attribute(name: str, doc: str) -> property:
    """A read-only attribute of ``WalkingGait`` that is its strategy's ``name``."""
    return property(lambda walker: getattr(walker._strategy, name), doc=doc)


def remaining_leg_offsets(legs: Sequence[str]) -> Tuple[List[float], float]:
    """Phase offsets and duty factor of a wave over ``legs`` (one swing at a time, back to front)."""
    order = [leg for leg in WAVE_ORDER if leg in legs] + [leg for leg in legs if leg not in WAVE_ORDER]
    n = len(order)
    start = {leg: k / n for k, leg in enumerate(order)}
    return [(-start[leg]) % 1.0 for leg in legs], 1.0 - 1.0 / n


class PlanWorker(Worker):
    """``planner.plan`` off the caller's thread (a re-plan must never stall the node's executor).

    ``request(lpl, command)`` returns a request id and replaces any request not yet started; ``take(rid)``
    returns the result of request ``rid`` once it is ready (else None) and only while ``rid`` is the newest
    request, so a newer morphology always wins over a plan still being computed. Results are cached per
    (morphology, command) (``cached``); ``prefetch`` queues morphologies to plan while nothing is requested.
    An exception raised by the planner (a bug) stops the worker and is re-raised, with its traceback, by the next
    ``take``/``cached`` call in the caller's thread (``worker.Worker``'s policy). Cached results are shared: copy
    before mutating.
    """

    def __init__(self, planner):
        self.planner = planner
        self._newest = 0              # id of the newest request
        self._request = None          # (id, key) not started yet
        self._done = None             # (id, result) of the newest request, once finished
        self._cache = {}
        self.computed = 0             # plans computed (not cache hits)
        super().__init__("gait-replan")

    @staticmethod
    def key(lpl, command):
        return tuple(int(k) for k in lpl), tuple(float(c) for c in command)

    def cached(self, lpl, command):
        with self._cv:
            self.check()
            return self._cache.get(self.key(lpl, command))

    def request(self, lpl, command) -> int:
        with self._cv:
            self._newest += 1
            self._request = (self._newest, self.key(lpl, command))
            self._done = None
            self.wake()
            return self._newest

    def prefetch(self, morphologies, command) -> None:
        with self._cv:
            self._queue.extend(self.key(m, command) for m in morphologies)     # the worker's queue: prefetch keys
            self.wake()

    def take(self, rid: int):
        with self._cv:
            self.check()
            if self._done is not None and self._done[0] == rid == self._newest:
                res, self._done = self._done[1], None
                return res
            return None

    def _next(self):
        if self._request is not None:
            item, self._request = self._request, None
            return item
        return (None, self._queue.popleft()) if self._queue else IDLE

    def _next_is_idle(self) -> bool:
        return self._request is None and not self._queue

    def _handle(self, item) -> None:
        rid, key = item
        with self._cv:
            res = self._cache.get(key)
        if res is None:
            res = self.planner.plan(list(key[0]), key[1])
        with self._cv:
            if key not in self._cache:
                self.computed += 1
                self._cache[key] = res
            if rid is not None and rid == self._newest:
                self._done = (rid, res)


class WalkingGait:
    """Joint targets of the walking legs for a velocity command, following the morphology.

    ``joint_names`` leg-major in ``geometry``'s leg order (like ``robot.joint_names``); ``n_joints`` joints per
    leg (default: the names split evenly over the legs). A leg walks while all its links are intact.
    How the legs walk is a strategy's (``FixedGait``, or ``ReplannedGait`` with ``recovery``); the walker keeps
    what both share: the legs and joints in use (``leg_index``, ``names``), ``gait``, ``stance``, the gait
    time ``t`` (s), the command as asked and as applied (vx m/s, vy m/s, yaw rate rad/s).
    """

    def __init__(self, geometry: LegGeometry, joint_names: Sequence[str], kind: str = "tripod",
                 cycle_time: float = 1.3, step_height: float = 0.02, body_height: float = 0.12,
                 stance_radius: float = 0.13, n_joints: Optional[Sequence[int]] = None, recovery: bool = False,
                 robot=None, design_command: Sequence[float] = (0.05, 0.0, 0.0), background: bool = False,
                 planner=None):
        self.full = geometry
        self.recovery = bool(recovery)
        self.robot = robot
        self.design_command = np.asarray(design_command, dtype=float)
        self.background = bool(background)
        self.joint_names = list(joint_names)
        if n_joints is None:
            n_joints = [len(self.joint_names) // geometry.n_legs] * geometry.n_legs
        self.n_joints = [int(n) for n in n_joints]
        if len(self.n_joints) != geometry.n_legs or sum(self.n_joints) != len(self.joint_names):
            raise ValueError("joint_names: %d names for joints per leg %s of legs %s"
                             % (len(self.joint_names), self.n_joints, list(geometry.names)))
        starts = np.cumsum([0] + self.n_joints[:-1])
        self.leg_joints = [self.joint_names[s:s + n] for s, n in zip(starts, self.n_joints)]
        self.settings = dict(kind=kind, cycle_time=cycle_time, step_height=step_height, body_height=body_height,
                             stance_radius=stance_radius)
        self.links_per_leg = list(self.n_joints)
        self.command = np.zeros(3)   # as asked
        self.applied = np.zeros(3)   # as applied (scaled down to what the walking legs can follow)
        self.t = 0.0
        self._command_set = False
        # recovery: plans from the planner (given, or built from the settings); else the configured gait
        self._strategy = ReplannedGait(self, planner) if self.recovery else FixedGait(self)
        self._build()

    # ------------------------------------------------------------------ configuration
    def _build(self, settings: Optional[dict] = None, links_per_leg: Optional[Sequence[int]] = None) -> None:
        """(Re)build the gait; ValueError (and nothing changed) if the settings don't give a reachable stance."""
        st = dict(self.settings if settings is None else settings)
        lpl = list(self.links_per_leg if links_per_leg is None else links_per_leg)
        healthy = Gait(self.full, kind=st["kind"], **_gait_kwargs(st))  # validates the settings; neutral = stance
        self._strategy.build(st, lpl, healthy)

    def configure(self, **settings) -> None:
        """Change gait settings (kind, cycle_time, step_height, body_height, stance_radius)."""
        new = dict(self.settings)
        new.update(settings)
        self._build(settings=new)

    def set_morphology(self, links_per_leg: Sequence[int]) -> bool:
        """Follow a new morphology; returns True if the set of walking legs changed (gait re-phased)."""
        lpl = [int(n) for n in links_per_leg]
        if len(lpl) != self.full.n_legs:
            raise ValueError("morphology: %d entries, expected %d" % (len(lpl), self.full.n_legs))
        before = list(self.leg_index)
        if self._strategy.unchanged(lpl):
            return False
        self._build(links_per_leg=lpl)
        return before != self.leg_index

    @property
    def can_walk(self) -> bool:
        return self.gait is not None

    @property
    def walking_legs(self) -> List[str]:
        return [self.full.names[i] for i in self.leg_index]

    # ------------------------------------------------------------------ the re-planned gait's state
    plan = _strategy_attribute("plan", "Recovery: the ``GaitPlan`` / ``NoStableGait`` in use (None without recovery).")
    switches = _strategy_attribute("switches", "Recovery: gait switches so far (a node logs each new gait).")
    planning = _strategy_attribute("planning", "Background: a plan is being computed (the interim stance or the "
                                   "previous gait is held).")
    blend_time = _strategy_attribute("blend_time", "Recovery: duration (s) of the last blend started.")
    # tests read these two
    _blend = _strategy_attribute("blend", "Recovery: the blend under way, [elapsed s, duration s, start targets], "
                                 "or None.")
    _planner = _strategy_attribute("planner", "Recovery: the ``GaitPlanner``.")

    def prefetch(self, morphologies: Sequence[Sequence[int]]) -> None:
        """Background: plan these morphologies (links per leg) ahead for the design command, in the worker,
        while nothing else is asked of it; a later change to one of them then switches at once."""
        self._strategy.prefetch(morphologies)

    def close(self) -> None:
        """Stop the background worker (if any)."""
        self._strategy.close()

    # ------------------------------------------------------------------ commands
    def set_command(self, command: Sequence[float]) -> np.ndarray:
        """Set (vx, vy, yaw rate); scaled down until every walking foot can follow. Returns what is applied."""
        cmd = np.asarray(command, dtype=float)
        if self._command_set and np.array_equal(cmd, self.command):
            return self.applied  # unchanged (cmd_vel repeats at 10+ Hz): skip the reachability search
        try:
            self._strategy.check_command(cmd, command)
        except ValueError:
            self._command_set = False
            self.command = np.zeros(3)
            raise
        self._command_set = True
        self.command = cmd
        return self._strategy.set_command(cmd)

    def set_trim(self, command: Sequence[float]) -> np.ndarray:
        """Recovery: the heading hold's corrected command for this tick (vx, vy, wz), clamped to the plan's
        verified envelope (|wz - wz_cmd| <= plan.yaw_allowance, |vy - vy_cmd| <= plan.vy_allowance,
        |vx| <= |vx_cmd|).
        Returns what is applied."""
        return self._strategy.set_trim(command)

    def status(self) -> dict:
        """Active gait label, stability (planned min margin, m) and the reason when there is no gait."""
        return self._strategy.status()

    def step(self, dt: float, walking: bool) -> Tuple[List[str], np.ndarray]:
        """Advance the gait by ``dt`` when ``walking`` (else hold the neutral stance): (joint names, targets)."""
        names = list(self.names)     # before the step: a re-planned gait may switch in it
        return names, self._strategy.step(dt, walking)

    def stand(self) -> Tuple[List[str], np.ndarray]:
        """The stance's (joint names, targets) at once, no blend (the caller moves there in ``STANCE_MOVE_TIME``): a
        stand whose joints must then stay still, as the active probe's (its models start from the set-points held
        when it starts). Walking resumes from them with the usual start blend."""
        names = list(self.names)
        return names, self._strategy.stand()


class GaitStrategy:
    """How a ``WalkingGait`` walks: the interface of ``FixedGait`` and ``ReplannedGait``.

    A strategy sets the walker's shared state (``settings``, ``links_per_leg``, ``leg_index``, ``gait``,
    ``names``, ``stance``, ``t``, ``applied``) and keeps its own. The defaults are a gait that plans nothing.
    """
    plan = None        # the GaitPlan / NoStableGait in use
    planner = None     # the GaitPlanner
    switches = 0       # gait switches so far
    blend = None       # the blend under way
    planning = False   # a plan is being computed in the background

    def __init__(self, walker: WalkingGait):
        self.walker = walker

    def build(self, settings: dict, links_per_leg: List[int], healthy: Gait) -> None:
        """(Re)build for ``settings`` and a morphology (links per leg); ``healthy`` is the settings' gait over all
        legs (validated; its neutral feet are the stance). ValueError, nothing changed, if unreachable."""
        raise NotImplementedError

    def unchanged(self, links_per_leg: List[int]) -> bool:
        """True when this morphology needs no rebuild."""
        return False

    def check_command(self, cmd: np.ndarray, given) -> None:
        """ValueError if the gait refuses the command ``cmd`` (``given``: as the caller passed it)."""

    def set_command(self, cmd: np.ndarray) -> np.ndarray:
        """Use a new command (vx m/s, vy m/s, yaw rate rad/s); returns the walker's ``applied``."""
        raise NotImplementedError

    def set_trim(self, command: Sequence[float]) -> np.ndarray:
        """The heading hold's per-tick correction; returns the walker's ``applied``."""
        return self.walker.applied

    def step(self, dt: float, walking: bool) -> np.ndarray:
        """Joint targets (rad, the walker's ``names`` order) after ``dt`` s, walking or holding the stance."""
        raise NotImplementedError

    def status(self) -> dict:
        """{"gait": label, "stability_margin": m, "reason": why there is no gait}."""
        raise NotImplementedError

    def prefetch(self, morphologies: Sequence[Sequence[int]]) -> None:
        """Plan these morphologies ahead (background)."""

    def close(self) -> None:
        """Stop the background work."""


class FixedGait(GaitStrategy):
    """``recovery=False``: the configured gait over all the legs; a wave (``remaining_leg_offsets``) over four or
    five walking legs; fewer hold the stance. A command the walking feet cannot follow is scaled down."""

    def build(self, settings: dict, links_per_leg: List[int], healthy: Gait) -> None:
        w = self.walker
        idx = [i for i, n in enumerate(links_per_leg) if n >= w.n_joints[i]]
        names = [w.full.names[i] for i in idx]
        gait = None
        if len(idx) == w.full.n_legs:
            gait = healthy
        elif len(idx) >= MIN_FEET:
            offsets, duty = remaining_leg_offsets(names)
            gait = Gait(LegGeometry(names, w.full.geom[idx], w.full.limits[idx]), kind="wave",
                        offsets=offsets, duty=duty, **_gait_kwargs(settings))
        w.settings, w.links_per_leg = settings, links_per_leg
        w.leg_index, w.gait = idx, gait
        w.stance = np.concatenate([w.full.ik(n, healthy.neutral[i]) for i, n in zip(idx, names)]
                                  or [np.zeros(0)])
        w.names = [name for i in idx for name in w.leg_joints[i]]
        if len(w.stance) != len(w.names):
            raise ValueError("the leg IK gives %d angles for the %d joints of legs %s"
                             % (len(w.stance), len(w.names), [w.full.names[i] for i in idx]))
        w.t = 0.0
        w._command_set = False  # new gait: the command must be applied to it again
        w.set_command(w.command)

    def set_command(self, cmd: np.ndarray) -> np.ndarray:
        w = self.walker
        w.applied = np.zeros(3)
        if not w.can_walk:
            return w.applied
        for scale in (1.0, 0.75, 0.5, 0.35, 0.25, 0.12, 0.06):
            try:
                w.gait.set_command(cmd * scale)
            except ValueError:
                continue
            w.applied = cmd * scale
            break
        else:
            w.gait.set_command(w.applied)  # standing still is always reachable
        return w.applied

    def stand(self) -> np.ndarray:
        return self.walker.stance.copy()

    def step(self, dt: float, walking: bool) -> np.ndarray:
        w = self.walker
        if not walking or not w.can_walk:
            return w.stance.copy()
        w.t += dt
        return w.gait.joint_targets(w.t)

    def status(self) -> dict:
        w = self.walker
        return {"gait": w.settings["kind"] if len(w.leg_index) == w.full.n_legs else
                ("wave" if w.gait is not None else "stance"), "stability_margin": float("nan"), "reason": ""}


class ReplannedGait(GaitStrategy):
    """``recovery=True``: plans from ``control.replan.GaitPlanner`` (see the module docstring), switched to with
    a blend of the joint targets; with the walker's ``background`` the planning runs in a ``PlanWorker``."""

    def __init__(self, walker: WalkingGait, planner=None):
        from jethexa_dynamics.control.replan import GaitPlan

        super().__init__(walker)
        self._plan_type = GaitPlan       # imported here: a walker without recovery never loads the planner
        self.planner = planner           # a GaitPlanner (built from the settings unless given)
        self._planner_settings = None
        self.plan = None
        self.switches = 0
        self._worker = None              # background: the PlanWorker
        self._pending = None             # background: (request id, morphology change?) of the plan awaited
        self._interim_for = None         # background: the morphology of the interim stance held
        self.blend = None                # [elapsed s, duration s, start targets]
        self.blend_time = 0.0            # s: of the last blend started
        self._last = {}                  # last targets sent, by joint name
        self._folded = {}                # leg index -> joint angles (rad) of a folded leg
        self._present = []               # leg indices of the walking and the folded legs, sorted
        self._design = None              # the command the plan's stride is designed for (set_trim's base)
        self._prev_targets = None        # the last targets sent (names order)
        self._moving = None              # the last step walked

    # ------------------------------------------------------------------ plans
    def build(self, settings: dict, links_per_leg: List[int], healthy: Gait) -> None:
        from jethexa_dynamics.control.replan import GaitPlanner
        from jethexa_dynamics.model import LeggedRobot

        w = self.walker
        if self.planner is None or (self._planner_settings is not None and self._planner_settings != settings):
            w.robot = w.robot or LeggedRobot.jethexa()
            self.planner = GaitPlanner(w.robot, w.full, kind=settings["kind"], **_gait_kwargs(settings))
            self._planner_settings = dict(settings)
            if self._worker is not None:
                self._worker.close(timeout=0)
                self._worker = None
        elif self._planner_settings is None:
            self._planner_settings = dict(settings)     # a planner given by the caller: these are its settings
        if w.background and self._worker is None:
            self._worker = PlanWorker(self.planner)
            self.planner.interim_stance(links_per_leg)   # loads its kernels here, not in the first morphology callback
        w.settings, w.links_per_leg = settings, links_per_leg
        self._request_plan(links_per_leg, self._design_command(), morphology=True)

    def unchanged(self, links_per_leg: List[int]) -> bool:
        # the same morphology again (latched topic, repeats): nothing to re-plan
        return links_per_leg == self.walker.links_per_leg and self.plan is not None

    def _design_command(self) -> np.ndarray:
        """The command to plan for: the walker's, or its design command while it stands."""
        w = self.walker
        return w.command if np.any(w.command) else w.design_command

    def _request_plan(self, lpl: List[int], command, morphology: bool) -> None:
        """Plan for (lpl, command): at once (no worker, or a cached plan), else ask the worker and, for a
        morphology change, blend to the interim stance until the plan is ready (``_poll``)."""
        if self._worker is None or self.plan is None:     # the first plan (construction) is made here
            self._pending = None
            self._apply(self.planner.plan(lpl, command), morphology)
            return
        hit = self._worker.cached(lpl, command)
        if hit is not None:
            self._pending = None
            self._apply(hit.copy(), morphology)
            return
        morphology = morphology or (self._pending is not None and self._pending[1])
        if morphology and not (getattr(self.plan, "kind", "") == "planning" and self._interim_for == list(lpl)):
            self._switch(self.planner.interim_stance(lpl))
            self._interim_for = list(lpl)
        # last: the worker competes for the GIL once it runs
        self._pending = (self._worker.request(lpl, command), morphology)

    def _apply(self, new, morphology: bool) -> None:
        """Use a finished plan: always after a morphology change; after a command change only if it walks or
        the current one does not (a command no stable gait carries keeps the gait that walks)."""
        if morphology or isinstance(new, self._plan_type) or not isinstance(self.plan, self._plan_type):
            self._switch(new)

    def _poll(self) -> None:
        """Background: switch to the awaited plan if the worker has finished it."""
        if self._pending is None:
            return
        res = self._worker.take(self._pending[0])
        if res is not None:
            morphology = self._pending[1]
            self._pending = None
            self._apply(res.copy(), morphology)

    @property
    def planning(self) -> bool:
        return self._pending is not None

    def prefetch(self, morphologies: Sequence[Sequence[int]]) -> None:
        if self._worker is not None:
            self._worker.prefetch(morphologies, self._design_command())

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close(timeout=0)

    def _switch(self, plan) -> None:
        """Use ``plan`` (GaitPlan or NoStableGait); blend from the last targets sent."""
        w = self.walker
        self.plan = plan
        self.switches += 1
        names = w.full.names
        walking = [names.index(leg) for leg in plan.legs]
        folded = [names.index(leg) for leg in plan.folded]
        w.leg_index = walking
        w.gait = plan.gait if isinstance(plan, self._plan_type) else None
        self._folded = {names.index(leg): np.asarray(a, dtype=float) for leg, a in plan.folded.items()}
        present = sorted(walking + folded)
        self._present = present
        w.names = [name for i in present for name in w.leg_joints[i]]
        w.t = 0.0
        self._design = None if w.gait is None else w.gait.command.copy()
        w.applied = np.zeros(3) if w.gait is None else w.gait.command.copy()
        w.stance = self._targets(0.0, stance=True)
        start = np.array([self._last.get(n, v) for n, v in zip(w.names, self._targets(0.0))])
        dq = float(np.max(np.abs(start - self._targets(0.0)))) if len(start) else 0.0
        self.blend_time = self._blend_duration(dq)
        self.blend = [0.0, self.blend_time, start] if self._last and dq > 0.0 else None

    def _targets(self, t: float, stance: bool = False) -> np.ndarray:
        """Joint targets of the present joints (``names`` order) at gait time t, or of the stance."""
        w = self.walker
        out = np.zeros(3 * len(self._present))
        pos = {i: k for k, i in enumerate(self._present)}
        if isinstance(self.plan, self._plan_type):
            g = self.plan.gait
            if stance:
                feet = g.neutral.copy()
                feet[:, :2] -= self.plan.body_shift(0.0)
            else:
                feet = self.plan.foot_targets(t)
        else:
            feet = self.plan.stance
        prev = self._prev_targets
        for j, i in enumerate(w.leg_index):
            k = pos[i]
            th = out[3 * k:3 * k + 3]
            if leg_ik(w.full.geom[i], w.full.limits[i], feet[j], th) != IK_OK and prev is not None \
                    and len(prev) == len(out):
                th[:] = prev[3 * k:3 * k + 3]     # an unreachable trimmed target: keep the last one
        for i, ang in self._folded.items():
            out[3 * pos[i]:3 * pos[i] + 3] = ang
        return out

    # ------------------------------------------------------------------ commands
    def check_command(self, cmd: np.ndarray, given) -> None:
        if cmd.shape != (3,) or not np.all(np.isfinite(cmd)):
            raise ValueError("command must be 3 finite values (vx m/s, vy m/s, yaw_rate rad/s), got %r" % (given,))

    def set_command(self, cmd: np.ndarray) -> np.ndarray:
        """A new base command: keep the plan if its margin holds for it, else re-plan (and blend)."""
        w = self.walker
        if not np.any(cmd):
            if w.gait is not None:
                self._design = np.zeros(3)
                self.set_trim(np.zeros(3))
            return w.applied
        plan = self.plan
        if isinstance(plan, self._plan_type):
            saved, saved_cmd = plan.gait.stride.copy(), plan.gait.command.copy()
            try:
                plan.gait.set_command(cmd)
                ok = self.planner.evaluate(plan, w.links_per_leg, command=cmd, samples=24).min() \
                    >= self.planner.required_margin
            except ValueError:
                ok = False
            if ok:
                self._design = cmd.copy()
                w.applied = cmd.copy()
                return w.applied
            plan.gait.stride[:], plan.gait.command = saved, saved_cmd
        self._request_plan(w.links_per_leg, cmd, morphology=False)
        return w.applied

    def set_trim(self, command: Sequence[float]) -> np.ndarray:
        w = self.walker
        if w.gait is None:
            return w.applied
        c = np.asarray(command, dtype=float)
        if not np.all(np.isfinite(c)):
            return w.applied
        base = self._design
        lim, limv = self.plan.yaw_allowance, self.plan.vy_allowance     # the envelope this plan is verified over
        vx = math.copysign(min(abs(c[0]), abs(base[0])), base[0]) if base[0] != 0.0 else 0.0
        vy = min(max(c[1], base[1] - limv), base[1] + limv)
        wz = min(max(c[2], base[2] - lim), base[2] + lim)
        stride_vectors(w.gait.neutral, w.gait.duty, w.gait.cycle_time, vx, vy, wz, w.gait.stride)
        w.applied = np.array([vx, vy, wz])
        return w.applied

    def status(self) -> dict:
        p = self.plan
        return {"gait": p.label, "stability_margin": float(getattr(p, "min_margin", getattr(p, "margin", 0.0))),
                "reason": getattr(p, "reason", "")}

    # ------------------------------------------------------------------ ticks
    def step(self, dt: float, walking: bool) -> np.ndarray:
        w = self.walker
        self._poll()
        moving = walking and w.gait is not None
        prev = self._prev_targets
        if moving != self._moving and prev is not None and len(prev) == len(w.names):
            # start/stop: the gait restarts at t = 0; blend so the targets never jump
            w.t = 0.0
            self._blend_to(self._targets(0.0) if moving else w.stance)
        self._moving = moving
        if self.blend is not None:
            self.blend[0] += dt
            u = min(1.0, self.blend[0] / self.blend[1])
            wgt = u * u * (3.0 - 2.0 * u)          # smoothstep: peak slope 1.5 / blend_time
            goal = self._targets(0.0) if walking and w.gait is not None else w.stance
            out = (1.0 - wgt) * self.blend[2] + wgt * goal
            if u >= 1.0:
                self.blend = None
        elif walking and w.gait is not None:
            w.t += dt
            out = self._targets(w.t)
        else:
            out = w.stance.copy()
        self._prev_targets = out
        self._last = dict(zip(w.names, out))
        return out.copy()

    def stand(self) -> np.ndarray:
        """The stance now: any blend dropped, the gait clock at 0; the next walking step blends from here."""
        w = self.walker
        out = w.stance.copy()
        self.blend = None
        self._moving = False
        w.t = 0.0
        self._prev_targets = out
        self._last = dict(zip(w.names, out))
        return out.copy()

    def _blend_to(self, goal: np.ndarray) -> None:
        """Start a blend from the last targets sent to ``goal`` (same joints)."""
        prev = self._prev_targets
        dq = float(np.max(np.abs(goal - prev))) if len(prev) else 0.0
        self.blend_time = self._blend_duration(dq)
        self.blend = [0.0, self.blend_time, prev.copy()] if dq > 0.0 else None

    def _blend_duration(self, dq: float) -> float:
        """Blend time (s) for a largest joint move ``dq`` (rad): a quarter cycle at least, and long enough that
        the smoothstep's peak rate, 1.5 dq / T, stays within the blend rate."""
        w = self.walker
        cycle = w.gait.cycle_time if w.gait is not None else w.settings["cycle_time"]
        rate = BLEND_RATE_FRACTION * float(np.min(w.full.velocity))
        return max(0.25 * cycle, 1.5 * dq / rate)
