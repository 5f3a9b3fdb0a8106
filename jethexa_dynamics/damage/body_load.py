"""The body's mass and centre of mass from the servos' load: the six legs as a force plate (issue 23, point 2).

A payload, or a robot simply heavier than its URDF, is no morphology hypothesis: it leaves the attitude as it was
(the IMU sees 0.02 deg for a 1 cm CoM shift) but loads the servos. A position-controlled servo holds its
set-point ``s`` against the load with its own law (``control.pid``, the emulated servo's; the paper's gains)

    tau = kp (s - q) + ki I,   I = integral of (s - q) dt

so its tracking error is a torque sensor. Per joint-state sample (quasi-static; rates and accelerations average
out over a window), in base_link axes, for leg i with joint angles q_i and foot p_i(q_i) (``control.ik``):

    tau_i + J_i(q_i)^T f_i = N_i(q, R)          ->  f_i = J_i^-T (N_i - tau_i)

N the model's generalized gravity (eq. 9, ``LeggedRobot.gravity_forces``) at the IMU's attitude R, f_i the
ground's force on foot i. Over a window the body's momentum change averages to zero (world axes, g = 9.81):

    mean sum_i (R f_i)_z                 = M g                      (M: the whole robot's mass)
    mean sum_i (R p_i) x (R f_i)         = g (R (m_b c_b + sum_l m_l c_l(q))) x z

so the body mass m_b = M - (the legs' links, the URDF's) and its CoM c_b (x, y; the height is not observable on
level ground and stays the model's). ``I`` is rebuilt from the streams since the estimator started, so it
misses the servo's integral from before; that constant, and any per-joint torque offset, is removed per joint
by the swing phase: a leg whose commanded foot is more than ``swing_height`` above its stance level carries
nothing, so there ``N - tau`` must be zero on average. All sums are linear in the samples and kept with
exponential forgetting (time constant ``window`` s): the estimate follows a payload added mid-run.

What it needs and assumes (the choice where the papers are silent, written down): the servo law's gains
(``gains``: the emulated servo's; a real servo's stiffness is calibrated once against the URDF's mass); a
healthy morphology (a leg that lost links breaks the force balance: samples are not used while the
morphology is not the healthy one); level, rigid ground. Servo zero offsets are not observable this way (a
servo holds its position in its own frame: the offset does not load it).

Measured on the project's engine (tripod at 0.05 m/s, joint noise 0.24 deg per sample, ``window`` 30 s): after
30 s of walking the body mass within 1 % and the CoM within 1 mm, for the URDF's body and for one 25 % heavier
with its CoM 1 cm forward; over 50 s the CoM wanders by up to 4.5 mm with the joint noise; a 150 g payload put on
mid-run is followed to within 1 % and 3 mm 25 s later (``test/test_damage_body_load.py``). Cost: ~11 ms of CPU
per second of data here (50 joint samples; Nano ~55 ms/s at 5x).

Example::

    est = BodyLoadEstimator()
    for t, kind, payload in streams:          # sim.streams.walk_streams, or a bag's messages
        ...                                   # on_command / on_joints / on_imu as for DamageIdentifier
    est.estimate()   # BodyEstimate(mass=1.69, com=array([0.0102, 0.0003, 0.]), seconds=30.0)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from transforms3d.quaternions import quat2mat

from jethexa_dynamics.control.ik import LegGeometry, leg_fk, leg_fk_vel
from jethexa_dynamics.control.pid import PAPER_GAINS
from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.model.com import center_of_mass

from .identifier_config import MIN_QUAT_NORM
from .identifier_inputs import check_command, check_joints, check_stamp, check_vector

G = 9.81


@dataclass
class BodyEstimate:
    """The main body's mass [kg] and CoM [m, base_link] (z: the model's), and how much walking it rests on
    (``seconds`` of samples used, forgetting not counted)."""
    mass: float
    com: np.ndarray
    seconds: float

    def as_dict(self) -> dict:
        return {"body_mass": round(self.mass, 4), "body_com": [round(float(c), 5) for c in self.com],
                "body_seconds": round(self.seconds, 2)}


class ServoMoves:
    """The servos' set-points from the command stream: each command moves its joints linearly from their
    current set-point to the target over its move time (the Hiwonder move, ``Engine.set_joint_targets``)."""

    def __init__(self, n_joints: int):
        self.start = np.full(n_joints, np.nan)
        self.goal = np.full(n_joints, np.nan)
        self.t0 = np.zeros(n_joints)
        self.duration = np.zeros(n_joints)

    def at(self, t: float) -> np.ndarray:
        """Set-points [rad] at ``t`` (NaN for a joint never commanded)."""
        s = np.ones_like(self.t0)
        moving = self.duration > 0
        s[moving] = np.clip((t - self.t0[moving]) / self.duration[moving], 0.0, 1.0)
        return self.start + s * (self.goal - self.start)

    def command(self, t: float, idx: np.ndarray, q: np.ndarray, move_time: float) -> None:
        now = self.at(t)[idx]
        self.start[idx] = np.where(np.isnan(now), q, now)
        self.goal[idx] = q
        self.t0[idx] = t
        self.duration[idx] = move_time


class BodyLoadEstimator:
    """Online body mass and CoM from joint_commands, joint_states and imu/data (see the module's docstring).

    ``robot`` the model (healthy; its URDF's legs are taken as exact); ``gains`` (kp, ki, kd) of the servo law
    (kd unused: the rates average out); ``window`` [s] the forgetting time constant; ``swing_height`` [m] a
    commanded foot this far above its stance level is in the air; ``max_gap`` [s] a longer silence of the
    joints restarts the rebuilt integral; ``leak`` [s] the rebuilt integral forgets with this time constant (the
    joint noise integrated would otherwise walk away; what is slower than ``leak`` the swing phase removes).
    Joint vectors in ``robot.joint_names`` order, like ``DamageIdentifier``.
    """

    def __init__(self, robot: Optional[LeggedRobot] = None, gains: Sequence[float] = PAPER_GAINS,
                 window: float = 30.0, swing_height: float = 0.004, max_gap: float = 0.2, leak: float = 3.0):
        if not (math.isfinite(window) and 1.0 <= window <= 600.0):
            raise ValueError("window=%r outside the allowed range [1, 600] s" % (window,))
        if not (math.isfinite(swing_height) and 0.0 < swing_height <= 0.05):
            raise ValueError("swing_height=%r outside the allowed range (0, 0.05] m" % (swing_height,))
        kp, ki = float(gains[0]), float(gains[1])
        if not (math.isfinite(kp) and kp > 0 and math.isfinite(ki) and ki >= 0):
            raise ValueError("gains=%r: kp > 0 and ki >= 0 (N m/rad, N m/(rad s))" % (tuple(gains),))
        self.robot = robot if robot is not None else LeggedRobot.jethexa()
        self.kp, self.ki = kp, ki
        self.window, self.swing_height, self.max_gap = float(window), float(swing_height), float(max_gap)
        if not (math.isfinite(leak) and leak > 0):
            raise ValueError("leak=%r must be a time > 0 s" % (leak,))
        self.leak = float(leak)
        self.joint_names = list(self.robot.joint_names)
        self.nj = len(self.joint_names)
        self.n_legs = self.nj // 3
        self._limits = (np.asarray(self.robot.joint_lower, dtype=float),
                        np.asarray(self.robot.joint_upper, dtype=float))
        self.geom = LegGeometry.from_robot(self.robot).geom
        d = self.robot.description
        self.body_mass_model, self.body_com_model = float(d.body_mass), np.asarray(d.body_com, float).copy()
        self.legs_mass = float(self.robot.total_mass) - self.body_mass_model
        self.healthy = True
        self.rejected = 0
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new run, a changed body the caller knows of)."""
        self.moves = ServoMoves(self.nj)
        self._R: Optional[np.ndarray] = None
        self._t_joint = self._t_imu = self._t_cmd = -math.inf
        self._integral = np.zeros(self.nj)
        self._stance_z = np.full(self.n_legs, np.nan)
        nl = self.n_legs
        self._A = np.zeros((nl, 3, 3))       # sum w R J^-T                 (force per unit torque offset)
        self._b = np.zeros((nl, 3))          # sum w R J^-T (N - tau)       (foot force)
        self._C = np.zeros((nl, 3, 3))       # sum w [R p]x R J^-T          (moment per unit torque offset)
        self._d = np.zeros((nl, 3))          # sum w [R p]x R J^-T (N - tau)
        self._swing = np.zeros(self.nj)      # sum over swing samples w (N - tau)
        self._swing_w = np.zeros(self.nj)
        self._links = np.zeros(3)            # sum w R (sum_l m_l c_l)      (the legs' mass moment)
        self._w = 0.0
        self.seconds = 0.0

    # ------------------------------------------------------------------ inputs
    def on_morphology(self, links_per_leg: Sequence[int]) -> None:
        """Samples are used only while every leg has all its links (the force balance assumes the URDF's legs)."""
        self.healthy = all(int(n) >= 3 for n in links_per_leg)

    def on_command(self, t, q, t_target, joints=None) -> bool:
        """A joint command received at ``t`` [s]: ``joints`` (indices, default all) to ``q`` [rad] at ``t_target``."""
        t, err = check_stamp(t, self._t_cmd, "command")
        if t is None:
            return self._reject()
        cmd, err = check_command(t, q, t_target, joints, self._limits, self.joint_names)
        if cmd is None:
            return self._reject()
        self._t_cmd = t
        q_cmd, move_time, idx = cmd
        self.moves.command(t, idx, q_cmd, move_time)
        return True

    def on_imu(self, t, quat, gyro=None, accel=None) -> bool:
        """Orientation (w, x, y, z) world<-base_link at ``t``: the attitude the next joint samples use."""
        t, err = check_stamp(t, self._t_imu, "imu")
        if t is None:
            return self._reject()
        q, err = check_vector(quat, 4, "imu orientation")
        n = math.sqrt(q.dot(q)) if q is not None else 0.0
        if not n > MIN_QUAT_NORM:
            return self._reject()
        self._t_imu = t
        self._R = quat2mat(q / n)
        return True

    def on_joints(self, t, q) -> bool:
        """Measured joint angles [rad] at ``t``: one force-plate sample."""
        t, err = check_stamp(t, self._t_joint, "joints")
        if t is None:
            return self._reject()
        qm, err = check_joints(q, self.nj)
        if qm is None:
            return self._reject()
        dt = t - self._t_joint
        self._t_joint = t
        s = self.moves.at(t)
        if not math.isfinite(dt) or dt > self.max_gap:
            self._integral[:] = 0.0           # a gap: the servo's integral ran on unseen; rebuilt from here
            return True
        e = s - qm
        self._integral *= math.exp(-dt / self.leak)
        self._integral += np.nan_to_num(e) * dt
        if self._R is None or not self.healthy or np.isnan(e).any():
            return True
        self._add(dt, qm, s, self.kp * e + self.ki * self._integral)
        return True

    def _reject(self) -> bool:
        self.rejected += 1
        return False

    # ------------------------------------------------------------------ the force plate
    def _add(self, dt: float, q: np.ndarray, s: np.ndarray, tau: np.ndarray) -> None:
        lam = math.exp(-dt / self.window)
        for arr in (self._A, self._b, self._C, self._d, self._swing, self._swing_w, self._links):
            arr *= lam
        self._w = self._w * lam + 1.0
        self.seconds += dt
        R = self._R
        g_sb = np.eye(4)
        g_sb[:3, :3] = R
        resid = self.robot.gravity_forces(g_sb, q)[6:] - tau          # N - tau, (nj,)
        p, v, unit = np.empty(3), np.empty(3), np.zeros(3)
        J = np.empty((3, 3))
        for i in range(self.n_legs):
            th, geom = q[3 * i:3 * i + 3], self.geom[i]
            for j in range(3):                                       # J's columns: the foot's rate per joint
                unit[:] = 0.0
                unit[j] = 1.0
                leg_fk_vel(geom, th, unit, p, v)
                J[:, j] = v
            RJ = R @ np.linalg.inv(J.T)
            cross = _skew(R @ p) @ RJ
            r_i = resid[3 * i:3 * i + 3]
            self._A[i] += RJ
            self._b[i] += RJ @ r_i
            self._C[i] += cross
            self._d[i] += cross @ r_i
            leg_fk(geom, s[3 * i:3 * i + 3], v)                       # the commanded foot: swing or stance
            z = v[2]
            low = self._stance_z[i]
            # the stance level: the lowest commanded foot, rising 5 mm/s when not refreshed (a new body height)
            self._stance_z[i] = z if not math.isfinite(low) else min(z, low + 0.005 * dt)
            if z > self._stance_z[i] + self.swing_height:
                self._swing[3 * i:3 * i + 3] += r_i
                self._swing_w[3 * i:3 * i + 3] += 1.0
        m_total = self.body_mass_model + self.legs_mass
        c = center_of_mass(self.robot, q)
        self._links += R @ (m_total * c - self.body_mass_model * self.body_com_model)

    def estimate(self, min_seconds: float = 5.0) -> Optional[BodyEstimate]:
        """The body's mass and CoM now, or None before ``min_seconds`` of usable samples (or no swing yet)."""
        if self.seconds < min_seconds or not (self._swing_w > 0).all():
            return None
        off = self._swing / self._swing_w                        # per joint: N - tau that carries nothing
        force = np.zeros(3)
        moment = np.zeros(3)
        for i in range(self.n_legs):
            o = off[3 * i:3 * i + 3]
            force += self._b[i] - self._A[i] @ o
            moment += self._d[i] - self._C[i] @ o
        force, moment, links = force / self._w, moment / self._w, self._links / self._w
        mass = force[2] / G - self.legs_mass
        # moment = g (R h_total) x z: its x is g h_y, its y is -g h_x (world axes, the body near level)
        h = np.array([moment[1] / -G - links[0], moment[0] / G - links[1]])
        com = self.body_com_model.copy()
        if mass > 0:
            com[:2] = h / mass
        return BodyEstimate(float(mass), com, float(self.seconds))


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
