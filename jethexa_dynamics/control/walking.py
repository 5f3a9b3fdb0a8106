"""The gait controller's logic (no rclpy): a gait that follows the morphology and a safe stance.

* Healthy robot: the configured gait (tripod by default) over all six legs.
* Damaged robot: only legs with all their links walk; the others are not commanded. The gait is re-phased
  for the legs that remain: a wave (one leg in swing at a time, back to front, right then left), which keeps
  at least three feet down with four or five legs. With fewer than four walking legs the robot holds its
  stance and does not step.
* Stale command: time stops and every walking leg goes to its neutral stance (feet down).
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from jethexa_dynamics.control.gait import WAVE_ORDER, Gait
from jethexa_dynamics.control.ik import LegGeometry

MIN_WALKING_LEGS = 4


def remaining_leg_offsets(legs: Sequence[str]) -> Tuple[List[float], float]:
    """Phase offsets and duty factor of a wave over ``legs`` (one swing at a time, back to front)."""
    order = [leg for leg in WAVE_ORDER if leg in legs] + [leg for leg in legs if leg not in WAVE_ORDER]
    n = len(order)
    start = {leg: k / n for k, leg in enumerate(order)}
    return [(-start[leg]) % 1.0 for leg in legs], 1.0 - 1.0 / n


class WalkingGait:
    """Joint targets of the walking legs for a velocity command, following the morphology.

    ``joint_names`` leg-major in ``geometry``'s leg order (like ``robot.joint_names``); ``n_joints`` joints per
    leg (default: the names split evenly over the legs). A leg walks while all its links are intact.
    """

    def __init__(self, geometry: LegGeometry, joint_names: Sequence[str], kind: str = "tripod",
                 cycle_time: float = 1.3, step_height: float = 0.02, body_height: float = 0.12,
                 stance_radius: float = 0.13, n_joints: Optional[Sequence[int]] = None):
        self.full = geometry
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
        self._build()

    # ------------------------------------------------------------------ configuration
    def _build(self, settings: Optional[dict] = None, links_per_leg: Optional[Sequence[int]] = None) -> None:
        """(Re)build the gait; ValueError (and nothing changed) if the settings don't give a reachable stance."""
        st = dict(self.settings if settings is None else settings)
        lpl = list(self.links_per_leg if links_per_leg is None else links_per_leg)
        kw = dict(cycle_time=st["cycle_time"], step_height=st["step_height"], body_height=st["body_height"],
                  stance_radius=st["stance_radius"])
        healthy = Gait(self.full, kind=st["kind"], **kw)  # validates the settings; its neutral feet = the stance
        idx = [i for i, n in enumerate(lpl) if n >= self.n_joints[i]]
        names = [self.full.names[i] for i in idx]
        gait = None
        if len(idx) == self.full.n_legs:
            gait = healthy
        elif len(idx) >= MIN_WALKING_LEGS:
            offsets, duty = remaining_leg_offsets(names)
            gait = Gait(LegGeometry(names, self.full.geom[idx], self.full.limits[idx]), kind="wave",
                        offsets=offsets, duty=duty, **kw)
        self.settings, self.links_per_leg = st, lpl
        self.leg_index, self.gait = idx, gait
        self.stance = np.concatenate([self.full.ik(n, healthy.neutral[i]) for i, n in zip(idx, names)]
                                     or [np.zeros(0)])
        self.names = [name for i in idx for name in self.leg_joints[i]]
        if len(self.stance) != len(self.names):
            raise ValueError("the leg IK gives %d angles for the %d joints of legs %s"
                             % (len(self.stance), len(self.names), [self.full.names[i] for i in idx]))
        self.t = 0.0
        self._command_set = False  # new gait: the command must be applied to it again
        self.set_command(self.command)

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
        self._build(links_per_leg=lpl)
        return before != self.leg_index

    @property
    def can_walk(self) -> bool:
        return self.gait is not None

    @property
    def walking_legs(self) -> List[str]:
        return [self.full.names[i] for i in self.leg_index]

    # ------------------------------------------------------------------ commands
    def set_command(self, command: Sequence[float]) -> np.ndarray:
        """Set (vx, vy, yaw rate); scaled down until every walking foot can follow. Returns what is applied."""
        cmd = np.asarray(command, dtype=float)
        if self._command_set and np.array_equal(cmd, self.command):
            return self.applied  # unchanged (cmd_vel repeats at 10+ Hz): skip the reachability search
        self._command_set = True
        self.command = cmd
        self.applied = np.zeros(3)
        if not self.can_walk:
            return self.applied
        for scale in (1.0, 0.75, 0.5, 0.35, 0.25, 0.12, 0.06):
            try:
                self.gait.set_command(cmd * scale)
            except ValueError:
                continue
            self.applied = cmd * scale
            break
        else:
            self.gait.set_command(self.applied)  # standing still is always reachable
        return self.applied

    def step(self, dt: float, walking: bool) -> Tuple[List[str], np.ndarray]:
        """Advance the gait by ``dt`` when ``walking`` (else hold the neutral stance): (joint names, targets)."""
        if not walking or not self.can_walk:
            return list(self.names), self.stance.copy()
        self.t += dt
        return list(self.names), self.gait.joint_targets(self.t)
