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
misses the servo's integral from before, and it drifts from the servo's as the load moves (standing to walking:
the servo's integral takes up a new load over kp/ki = 5 s) and as it leaks; that torque, and any per-joint torque
offset, varies slowly and is measured per joint in each swing of its leg: a leg whose commanded foot is more than
``swing_height`` above its stance level carries nothing, so there ``N - tau`` is that torque. A sample is used
once the swing after it is over, less the torque interpolated between the swings before and after it; samples
not between two swings ``bracket`` s apart (standing) are not used: with one offset per joint over the whole
window, taken while walking, the samples of the standing before a walk read the servo integral's change as load
(+15 % mass after 15 s standing and 30 s walking, ``test/test_body_setpoints.py``). All sums are linear in the
samples and kept with exponential forgetting (time constant ``window`` s): the estimate follows a payload added
mid-run.

What it needs and assumes (the choice where the papers are silent, written down): the servo law
(``control.servo_law``): its gains (``gains``: the emulated servo's) and where its kd acts (``damping``). On the
tracking error's rate (``'error'``, the paper's PID, the emulated servo) kd averages out over the window and is not
modelled. On the joint's own rate (``'rate'``, -kd qdot: a position actuator's damping, MuJoCo's ``kv``) it does not:
the stance sweeps each joint one way and the swing the other, and around each lift-off and touch-down the joint lags
its set-point by kd/kp, so the swings' baseline and the stance read different mean rates; the estimator then adds
-kd qdot with the rate modelled from the moves (``_follow_moves``: the set-point rate through the lag kd/kp). On
the MuJoCo plant (kp 50, kv 1, no integral; body +25 %, CoM +1 cm, 30 s) the 'error' law reads the mass +146 %,
the 'rate' law -3..-9 % and the CoM within 3.7 mm (``test/test_damage_body_load.py``). A real servo's law is not
published: it is found once against a known body (the URDF's, or weighed; docs/identification.md). Also a
healthy morphology (a leg that lost links breaks the force balance: samples are not used while the
morphology is not the healthy one); level, rigid ground. Servo zero offsets are not observable this way (a
servo holds its position in its own frame: the offset does not load it).

Measured on the project's engine (tripod at 0.05 m/s, joint noise 0.24 deg per sample, ``window`` 30 s): after
30 s of walking the body mass within 5 % and the CoM within 3 mm, for the URDF's body and for one 25 % heavier
with its CoM 1 cm forward; a 150 g payload put on mid-run is followed to within 1 % and 3 mm 30 s later
(``test/test_damage_body_load.py``). It needs the set-points' timing against the readings to about a millisecond
(``TIMING_NOTE``): what a bag of partial reads gives only with the driver's set-points (``partial_reads``; with
``joint_states/setpoint`` recorded, ``jethexa-calibrate`` reads the node's estimate from the bag). Cost: 14 ms of CPU
per second of data here (1.4 % of a core; 6-8 % of a Nano core at 4-6x; ``benchmarks/bench_identify.py``).

In the running graph the servo driver gives each reading's set-point (``joint_states/setpoint``: the moves it
sent, replayed at the read's time; none for a read whose round trip was held up; ``on_joints(..., setpoints)``,
paired by ``ReadingPairs``). The estimate is as good as that timing: a set-point 1 ms ahead of its reading moves
the mass by +4 % and the CoM by -4 mm. What is left of the moves' timing is fitted (``fit_lag``, on by default):
a move the servo ran ``lag`` s after the set-point given shifts its joint's torque by kp * (set-point rate) * lag,
a force along the walk at every stance foot, and over the window the feet's horizontal forces sum to zero, so
the lag that zeroes them corrects the vertical force and the moments (``estimate``). What biased it in the graph
and on the robot's 115200-baud line (``line_model``), what was fixed, and every figure measured -- the servos'
ticks as the floor (CoM sd 1.7 mm per axis on time-exact data), the graph within 5 mm in 11 of 13 runs, the line
at 50 Hz in 4 of 9 and at 25 Hz in 5 of 7, hence ``body_estimate:=true control_rate:=25.0`` on the robot -- are in
docs/identification.md ("The body estimate's timing, measured"). CPU: the ``body`` stage 23-37 ms per second of
walking in the graph (12-19 % of a Nano core at 5x).

Example::

    est = BodyLoadEstimator()
    for t, kind, payload in streams:          # sim.streams.walk_streams, or a bag's messages
        ...                                   # on_command / on_joints / on_imu as for DamageIdentifier
    est.estimate()   # BodyEstimate(mass=1.69, com=array([0.0102, 0.0003, 0.]), seconds=30.0)
"""
from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
from transforms3d.quaternions import quat2mat

from jethexa_dynamics.control.ik import LegGeometry, leg_fk, leg_fk_vel
from jethexa_dynamics.control.servo_law import PAPER_GAINS, SERVO_DAMPING
from jethexa_dynamics.hardware.setpoints import ServoMoves
from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.model.com import center_of_mass

from .identifier_config import MIN_QUAT_NORM
from .identifier_inputs import check_command, check_joints, check_stamp, check_vector

G = 9.81
#: the lag fit's ridge [(N/s)^2]: (the feet's horizontal force left over by the model, ~0.3 N on the engine at
#: exact timing) / (a lag to believe without evidence, 5 ms), squared; walking at 0.05 m/s gives ~1e6
LAG_RIDGE = (0.3 / 0.005) ** 2


@dataclass
class BodyEstimate:
    """The main body's mass [kg] and CoM [m, base_link] (z: the model's), how much walking it rests on
    (``seconds`` of samples used, forgetting not counted) and the servos' moves' timing fitted against the
    set-points given (``lag`` [s], positive: the servos ran their moves that much later; see ``fit_lag``)."""
    mass: float
    com: np.ndarray
    seconds: float
    lag: float = 0.0


class BodyLoadEstimator:
    """Online body mass and CoM from joint_commands, joint_states and imu/data (see the module's docstring).

    ``robot`` the model (healthy; its URDF's legs are taken as exact); ``gains`` (kp, ki, kd) of the servo law and
    ``damping`` where its kd acts (``control.servo_law.SERVO_DAMPING``; the module's docstring); ``window`` [s] the
    forgetting time constant; ``swing_height`` [m] a
    commanded foot this far above its stance level is in the air; ``max_gap`` [s] a longer silence of the
    joints restarts the rebuilt integral; ``leak`` [s] the rebuilt integral forgets with this time constant (the
    joint noise integrated would otherwise walk away; what is slower than ``leak`` the swing phase removes);
    ``bracket`` [s] a sample is used once its leg's swings before and after it are found this close together.
    ``fit_lag`` fits the servos' moves' timing against the set-points given (within ``max_lag`` [s]) from the
    horizontal force balance (see ``estimate``). Joint vectors in ``robot.joint_names`` order, like
    ``DamageIdentifier``.
    """

    def __init__(self, robot: Optional[LeggedRobot] = None, gains: Sequence[float] = PAPER_GAINS,
                 window: float = 30.0, swing_height: float = 0.004, max_gap: float = 0.2, leak: float = 3.0,
                 bracket: float = 3.0, fit_lag: bool = True, max_lag: float = 0.02, damping: str = "error"):
        if not (math.isfinite(window) and 1.0 <= window <= 600.0):
            raise ValueError("window=%r outside the allowed range [1, 600] s" % (window,))
        if not (math.isfinite(swing_height) and 0.0 < swing_height <= 0.05):
            raise ValueError("swing_height=%r outside the allowed range (0, 0.05] m" % (swing_height,))
        kp, ki, kd = float(gains[0]), float(gains[1]), float(gains[2]) if len(gains) > 2 else 0.0
        if not (math.isfinite(kp) and kp > 0 and math.isfinite(ki) and ki >= 0 and math.isfinite(kd) and kd >= 0):
            raise ValueError("gains=%r: kp > 0, ki >= 0 and kd >= 0 (N m/rad, N m/(rad s), N m s/rad)"
                             % (tuple(gains),))
        if damping not in SERVO_DAMPING:
            raise ValueError("damping=%r: one of %s (where the servo's kd acts)"
                             % (damping, ", ".join(SERVO_DAMPING)))
        self.robot = robot if robot is not None else LeggedRobot.jethexa()
        self.kp, self.ki, self.kd = kp, ki, kd
        self.damping = damping if kd > 0 else "error"     # no kd: nothing to model
        self.window, self.swing_height, self.max_gap = float(window), float(swing_height), float(max_gap)
        if not (math.isfinite(leak) and leak > 0):
            raise ValueError("leak=%r must be a time > 0 s" % (leak,))
        self.leak = float(leak)
        if not (math.isfinite(bracket) and 0.5 <= bracket <= 30.0):
            raise ValueError("bracket=%r outside the allowed range [0.5, 30] s" % (bracket,))
        self.bracket = float(bracket)
        if not (math.isfinite(max_lag) and 0.0 <= max_lag <= 0.1):
            raise ValueError("max_lag=%r outside the allowed range [0, 0.1] s" % (max_lag,))
        self.fit_lag, self.max_lag = bool(fit_lag), float(max_lag)
        self.joint_names = list(self.robot.joint_names)
        self.nj = len(self.joint_names)
        self.n_legs = self.nj // 3
        self._limits = (np.asarray(self.robot.joint_lower, dtype=float),
                        np.asarray(self.robot.joint_upper, dtype=float))
        self.geom = LegGeometry.from_robot(self.robot).geom
        d = self.robot.description
        self.body_mass_model, self.body_com_model = float(d.body_mass), np.asarray(d.body_com, float).copy()
        self.legs_mass = float(self.robot.total_mass) - self.body_mass_model
        self._all_links = tuple(int(n) for n in d.n_joints)
        self.healthy = True
        self.rejected = 0
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new run, a changed body the caller knows of)."""
        self.moves = ServoMoves(self.nj)
        self._R: Optional[np.ndarray] = None
        self._t_joint = self._t_imu = self._t_cmd = -math.inf
        self._integral = np.zeros(self.nj)
        self._rate = np.zeros(self.nj)   # damping 'rate': the joints' rates as the servos follow their moves [rad/s]
        self._t_rate = -math.inf
        self._q = np.full(self.nj, np.nan)  # each joint's latest reading [rad] and its error then (set-point - q)
        self._e = np.full(self.nj, np.nan)
        self._s_held = np.full(self.nj, np.nan)   # each joint's latest set-point from the driver [rad]
        self._stance_z = np.full(self.n_legs, np.nan)
        nj = self.nj                         # per joint k (leg i, column c), over the reads of k:
        self._b = np.zeros((nj, 3))          # sum w (R J_i^-T)[:, c] (N - tau)_k    (its share of the force)
        self._d = np.zeros((nj, 3))          # sum w ([R p_i]x R J_i^-T)[:, c] (N - tau)_k
        self._jw = np.zeros(nj)              # sum w over the reads of k
        self._bx = np.zeros((nj, 3))         # the same two sums of kp * (set-point rate)_k: what a lag adds per s
        self._dx = np.zeros((nj, 3))
        self._links = np.zeros(3)            # sum w R (sum_l m_l c_l)      (the legs' mass moment)
        self._w = 0.0
        self._t_sums = -math.inf             # the time the sums are forgotten to
        self._clear_swings()
        self.seconds = 0.0

    def _clear_swings(self) -> None:
        """Forget the swings and the samples waiting for one (the unseen torque may have jumped)."""
        self._in_swing = np.zeros(self.n_legs, dtype=bool)
        # per joint, the open swing: sum (N - tau), sum t, count, sum kp * set-point rate
        self._swing_acc = np.zeros((self.nj, 4))
        self._last_swing = [None] * self.nj        # per joint: (mean time [s], mean N - tau, mean kp rate) of its last
        # per joint: (t, (R J^-T)[:, c], moment col, N - tau, kp * set-point rate)
        self._pending = [deque() for _ in range(self.nj)]
        self._links_pending = deque()              # (t, R sum_l m_l c_l) not yet added

    # ------------------------------------------------------------------ inputs
    def on_morphology(self, links_per_leg: Sequence[int]) -> None:
        """Samples are used only while every leg has all its links (the force balance assumes the URDF's legs)."""
        self.healthy = tuple(int(n) for n in links_per_leg) == self._all_links
        if not self.healthy:
            self._clear_swings()

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
        if self.damping == "rate":
            self._follow_moves(t)          # the rates up to the new move, under the moves before it
        self.moves.command(t, idx, q_cmd, move_time)
        return True

    def on_imu(self, t, quat, gyro=None, accel=None) -> bool:
        """Orientation (w, x, y, z) world<-base_link at ``t``: the attitude (roll and pitch; its heading is not
        used) the next joint samples use."""
        t, err = check_stamp(t, self._t_imu, "imu")
        if t is None:
            return self._reject()
        q, err = check_vector(quat, 4, "imu orientation")
        n = math.sqrt(q.dot(q)) if q is not None else 0.0
        if not n > MIN_QUAT_NORM:
            return self._reject()
        self._t_imu = t
        R = quat2mat(q / n)
        # the heading is the IMU's own (a 6-axis IMU's drifts; the robot turns): the sums are kept in the level
        # frame that turns with the body, so the CoM comes out in base_link's axes (R = Ry Rx, yaw removed)
        c, s = R[0, 0], R[1, 0]
        h = math.hypot(c, s)
        if h > 1e-9:
            c, s = c / h, s / h
            R = np.array([[c, s, 0.0], [-s, c, 0.0], [0.0, 0.0, 1.0]]) @ R
        self._R = R
        return True

    def on_joints(self, t, q, setpoints=None) -> bool:
        """Measured joint angles [rad] at ``t`` (NaN: not read this time): one force-plate sample, once every
        joint has been read. ``setpoints`` [rad] (optional, NaN where unknown): each read servo's set-point at
        the instant of its own reading, as the servo driver knows it (``joint_states/setpoint``); with them,
        the error is taken against it instead of the set-point rebuilt from the commands at ``t`` (which stays
        the swing phase's commanded foot), and a reading without one is not used."""
        t, err = check_stamp(t, self._t_joint, "joints")
        if t is None:
            return self._reject()
        qm, err = check_joints(q, self.nj)
        if qm is None:
            return self._reject()
        sp = None
        if setpoints is not None:
            sp = np.asarray(setpoints, dtype=float).reshape(-1)
            if sp.shape != (self.nj,) or np.isinf(sp).any():
                return self._reject()
        dt = t - self._t_joint
        self._t_joint = t
        cmd = s = self.moves.at(t)
        # the real bus reads a few servos per message (3 of 18 at 50 Hz): NaN = not read this time. Each joint
        # keeps its latest reading and error (held until its next read); the sample uses those
        fresh = ~np.isnan(qm)
        if sp is not None:
            self._s_held = np.where(np.isnan(sp), self._s_held, sp)
            s = np.where(np.isnan(s), self._s_held, s)     # the commanded foot: the commands', else the driver's
            se = sp                                        # the error: against the set-point at the reading
            fresh &= ~np.isnan(sp)                         # none (its time uncertain, never moved): not used
        else:
            se = s
        if not math.isfinite(dt) or dt > self.max_gap:
            self._integral[:] = 0.0           # a gap: the servo's integral ran on unseen; rebuilt from here
            self._clear_swings()              # and the baseline the swings measured jumps with it
            self._q[:] = self._e[:] = np.nan
        else:
            self._integral *= math.exp(-dt / self.leak)
            self._integral += np.nan_to_num(self._e) * dt
        self._q[fresh] = qm[fresh]
        self._e[fresh] = se[fresh] - qm[fresh]
        if self._R is None or not self.healthy or np.isnan(self._e).any() or not math.isfinite(dt) \
                or dt > self.max_gap:
            return True
        # a joint not read now is where its commanded set-point is now less its last tracking error (slow: the
        # load), not where it was read up to 0.1 s ago (the leg's Jacobian and weight at the others' reads)
        q = np.where(fresh | np.isnan(cmd), self._q, cmd - self._e)
        rate = np.nan_to_num(self.moves.rate(t)) if self.fit_lag else np.zeros(self.nj)
        tau = self.kp * self._e + self.ki * self._integral
        if self.damping == "rate":
            self._follow_moves(t)
            tau -= self.kd * self._rate
        self._add(t, dt, q, s, tau, fresh, self.kp * rate)
        return True

    def _follow_moves(self, t: float) -> None:
        """Bring the modelled joint rates (damping 'rate') up to ``t`` [s]: a servo whose torque is kp e - kd qdot
        (load slow, inertia small) moves its joint as its set-point through a first-order lag kd/kp, so its rate is
        the set-point rate through that lag; integrated exactly over the moves' constant slopes (a move that ends
        before ``t``: its slope, then 0). An older ``t`` than the last (the streams interleave) changes nothing."""
        t0 = self._t_rate
        if not math.isfinite(t0) or t <= t0:
            self._t_rate = t if not math.isfinite(t0) else t0
            return
        self._t_rate = t
        m, k = self.moves, self.kp / self.kd
        moving = m.duration > 0
        slope = np.zeros(self.nj)
        slope[moving] = np.nan_to_num((m.goal[moving] - m.start[moving]) / m.duration[moving])
        t1 = np.clip(np.where(moving, m.t0 + m.duration, t0), t0, t)    # where each move's slope ends
        self._rate = slope + (self._rate - slope) * np.exp(-k * (t1 - t0))
        self._rate *= np.exp(-k * (t - t1))

    def _reject(self) -> bool:
        self.rejected += 1
        return False

    # ------------------------------------------------------------------ the force plate
    # The sums are kept per joint: f_i = R J_i^-T r_i = sum_c (R J_i^-T)[:, c] r_c (r = N - tau), so each joint's
    # share is sampled when that joint was read and averaged over its own reads; their sum is the window's mean
    # force (linearity), with no joint's error held across the gait's phases while other joints are read.
    # What the rebuilt integral misses (the servo's integral from before, its slow drift as the load moves from
    # standing to walking, the leak) is a slowly varying torque per joint: measured in each swing of the leg (it
    # carries nothing there) and interpolated between the swings before and after. A sample waits until the
    # swing after it is over; one not between two swings less than ``bracket`` s apart (standing) is not used.
    def _add(self, t: float, dt: float, q: np.ndarray, s: np.ndarray, tau: np.ndarray, fresh: np.ndarray,
             x: np.ndarray) -> None:
        self.seconds += dt
        R = self._R
        g_sb = np.eye(4)
        g_sb[:3, :3] = R
        resid = self.robot.gravity_forces(g_sb, q)[6:] - tau          # N - tau, (nj,)
        p, v, unit = np.empty(3), np.empty(3), np.zeros(3)
        J = np.empty((3, 3))
        for i in range(self.n_legs):
            th, geom = q[3 * i:3 * i + 3], self.geom[i]
            leg_fk(geom, s[3 * i:3 * i + 3], v)                       # the commanded foot: swing or stance
            z = v[2]
            low = self._stance_z[i]
            # the stance level: the lowest commanded foot, rising 5 mm/s when not refreshed (a new body height)
            self._stance_z[i] = z if not math.isfinite(low) else min(z, low + 0.005 * dt)
            swing = z > self._stance_z[i] + self.swing_height
            if self._in_swing[i] and not swing:
                for k in range(3 * i, 3 * i + 3):
                    self._close_swing(k, t)
            self._in_swing[i] = swing
            cols = [c for c in range(3) if fresh[3 * i + c]]
            if not cols:
                continue
            for c in range(3):                                       # J's columns: the foot's rate per joint
                unit[:] = 0.0
                unit[c] = 1.0
                leg_fk_vel(geom, th, unit, p, v)
                J[:, c] = v
            RJ = R @ np.linalg.inv(J.T)
            cross = _skew(R @ p) @ RJ
            for c in cols:
                k = 3 * i + c
                pend = self._pending[k]
                pend.append((t, RJ[:, c].copy(), cross[:, c].copy(), resid[k], x[k]))
                while pend and t - pend[0][0] > self.bracket:         # no swing for too long: standing
                    pend.popleft()
                if swing:
                    acc = self._swing_acc[k]
                    acc[0] += resid[k]
                    acc[1] += t
                    acc[2] += 1.0
                    acc[3] += x[k]
        m_total = self.body_mass_model + self.legs_mass
        c = center_of_mass(self.robot, q)
        self._links_pending.append((t, R @ (m_total * c - self.body_mass_model * self.body_com_model)))
        while self._links_pending and t - self._links_pending[0][0] > self.bracket:
            self._links_pending.popleft()

    def _close_swing(self, k: int, t: float) -> None:
        """Joint ``k``'s leg has touched down at ``t``: the swing's mean residual (at its mean time) is the
        baseline there; the samples since the last swing get the baseline interpolated between the two."""
        r_sum, t_sum, n, x_sum = self._swing_acc[k]
        self._swing_acc[k][:] = 0.0
        if n == 0:
            return
        now = (t_sum / n, r_sum / n, x_sum / n)
        last, self._last_swing[k] = self._last_swing[k], now
        pend, self._pending[k] = self._pending[k], deque()
        bracketed = last is not None and now[0] - last[0] <= self.bracket
        if k == 0:      # the legs' mass moment over the same stretch of time (leg 0's swings mark it)
            self._forget(t)
            for ts, h in self._links_pending if bracketed else ():
                w = math.exp(-(t - ts) / self.window)
                self._links += w * h
                self._w += w
            self._links_pending = deque()
        if not bracketed:
            return
        self._forget(t)
        (t0, r0, x0), (t1, r1, x1) = last, now
        for ts, rj, cr, r, x in pend:
            w = math.exp(-(t - ts) / self.window)                    # forgotten as if added at its own time
            a = min(max((ts - t0) / (t1 - t0), 0.0), 1.0) if t1 > t0 else 1.0
            r, x = r - (r0 + (r1 - r0) * a), x - (x0 + (x1 - x0) * a)
            self._b[k] += w * rj * r
            self._d[k] += w * cr * r
            self._bx[k] += w * rj * x
            self._dx[k] += w * cr * x
            self._jw[k] += w

    def _forget(self, t: float) -> None:
        """Decay the sums to time ``t`` (forgetting with time constant ``window``)."""
        if math.isfinite(self._t_sums):
            lam = math.exp(-max(t - self._t_sums, 0.0) / self.window)
            for arr in (self._b, self._d, self._bx, self._dx, self._jw, self._links):
                arr *= lam
            self._w *= lam
        self._t_sums = t

    def estimate(self, min_seconds: float = 5.0) -> Optional[BodyEstimate]:
        """The body's mass and CoM now, or None before ``min_seconds`` of usable samples (or before every joint
        has samples between two swings)."""
        if self.seconds < min_seconds or not (self._jw > 0).all() or self._w <= 0:
            return None
        w = self._jw[:, None]
        force = (self._b / w).sum(axis=0)
        moment = (self._d / w).sum(axis=0)
        lag = 0.0
        if self.fit_lag:
            # Over a window the feet's horizontal forces sum to zero (the body's momentum does not grow; world
            # axes, on a slope too). A move the servo ran ``lag`` s after its given set-point shifts its torque
            # by kp * rate * lag, and walking makes that a horizontal force along the walk: the lag that balances
            # them, ridged towards 0 where the set-points hardly move (standing: nothing to fit).
            fx, mx = (self._bx / w).sum(axis=0), (self._dx / w).sum(axis=0)
            lag = -float(force[:2] @ fx[:2]) / (float(fx[:2] @ fx[:2]) + LAG_RIDGE)
            lag = min(max(lag, -self.max_lag), self.max_lag)
            force, moment = force + lag * fx, moment + lag * mx
        links = self._links / self._w
        mass = force[2] / G - self.legs_mass
        # moment = g (R h_total) x z: its x is g h_y, its y is -g h_x (world axes, the body near level)
        h = np.array([moment[1] / -G - links[0], moment[0] / G - links[1]])
        com = self.body_com_model.copy()
        if mass > 0:
            com[:2] = h / mass
        return BodyEstimate(float(mass), com, float(self.seconds), lag)


class ReadingPairs:
    """The servo driver's ``joint_states`` and ``joint_states/setpoint`` messages paired by their header stamp
    (the driver gives a message and its set-points the same stamp; they arrive in either order). ``add`` one of
    them; once its twin is there it returns ``(t, q, s)``: joint vectors in ``joint_names`` order, NaN for a
    joint the message did not carry (``q``: not read; ``s``: never moved), ``t`` the time given with the
    ``joint_states`` message. The last ``keep`` unpaired messages of each kind wait; older ones are dropped
    (counted in ``unpaired``)."""

    def __init__(self, joint_names: Sequence[str], keep: int = 8):
        self.index = {n: i for i, n in enumerate(joint_names)}
        self.nj, self.keep = len(self.index), int(keep)
        self._waiting = ({}, {})       # per kind (0: readings, 1: set-points): stamp -> (t, vector)
        self.pairs = self.unpaired = 0

    def add(self, setpoints: bool, stamp, t: float, names: Sequence[str], values: Sequence[float]):
        """A ``joint_states`` (``setpoints`` False) or ``joint_states/setpoint`` message: ``stamp`` any hashable
        key of its header stamp, ``t`` [s] its time (used from the readings'), ``names`` and ``values`` its
        joints (known names only) and positions."""
        vec = np.full(self.nj, np.nan)
        vec[[self.index[n] for n in names]] = values
        mine, other = self._waiting[int(bool(setpoints))], self._waiting[1 - int(bool(setpoints))]
        twin = other.pop(stamp, None)
        if twin is None:
            mine[stamp] = (float(t), vec)
            while len(mine) > self.keep:
                mine.pop(next(iter(mine)))
                self.unpaired += 1
            return None
        self.pairs += 1
        (tq, q), s = ((twin[0], twin[1]), vec) if setpoints else ((float(t), vec), twin[1])
        return tq, q, s


@dataclass
class ServoLawFit:
    """The servo law found from walking with a known body (``fit_servo_law``): ``gains`` (kp, ki, kd) and
    ``damping``, the ``scale`` the given gains were multiplied by, the body estimated with them (``body``) and
    the estimate each damping gave with the given gains (``tried``: damping -> BodyEstimate or None)."""
    gains: tuple
    damping: str
    scale: float
    body: Optional[BodyEstimate]
    tried: dict


def fit_servo_law(estimate_with, known_mass: float, legs_mass: float,
                  gains: Sequence[float] = PAPER_GAINS) -> Optional[ServoLawFit]:
    """The servo law (where kd acts, and the gains' scale) under which walking with a body of ``known_mass`` [kg]
    reads that mass. ``estimate_with(laws)`` reads the same data through each law of ``laws`` ((gains, damping)
    pairs) and returns their ``BodyEstimate``s (None where too little data). Each damping (``SERVO_DAMPING``) is
    tried with ``gains``; the one whose estimate of the whole robot's weight is nearer (by ratio) is kept, and the
    gains are scaled by (known + legs) / (estimated + legs), the robot's known over its estimated weight (the feet
    carry the whole robot; the estimated force is linear in the gains); then the body is estimated with the scaled
    gains. None if no damping gave an estimate (too little data); ValueError if none read a positive weight (the
    gains too far from the servo's to scale)."""
    laws = [(tuple(float(g) for g in gains), d) for d in SERVO_DAMPING]
    tried = dict(zip(SERVO_DAMPING, estimate_with(laws)))
    if all(e is None for e in tried.values()):
        return None
    ratios = {d: (known_mass + legs_mass) / (e.mass + legs_mass) for d, e in tried.items()
              if e is not None and e.mass + legs_mass > 0}
    if not ratios:
        raise ValueError("with gains %s no damping reads a positive weight (%s): give gains nearer the servos'" % (
            tuple(gains), ", ".join("%s %.3f kg" % (d, e.mass + legs_mass) for d, e in tried.items()
                                    if e is not None)))
    damping = min(ratios, key=lambda d: abs(math.log(ratios[d])))
    scaled = tuple(float(g) * ratios[damping] for g in gains)
    return ServoLawFit(scaled, damping, ratios[damping], estimate_with([(scaled, damping)])[0], tried)


#: what a body estimate may be beside the URDF's (mass ratio, CoM shift [m]); beyond, the data did not carry the
#: load (see ``implausible``)
PLAUSIBLE = ((0.5, 2.0), 0.05)

#: why a body estimate far outside ``PLAUSIBLE`` means bad timing, not a strange robot (measured on the engine:
#: the commands shifted by 1 ms against the readings move the mass by ~6 %, by 5 ms ~35 %)
TIMING_NOTE = ("the estimate needs each servo's set-point at its reading to about a millisecond (the commands' "
               "and the readings' times; a 1 ms shift moves the mass by ~6 %): a recording whose commands were "
               "timed at another node than the servo driver, or an emulated world answering from its last update "
               "(servo_timing tick), is not timed that well")


def partial_reads(carried: np.ndarray) -> str:
    """Why joint_states whose messages carried only some joints (``carried``: messages x joints, bool) cannot give
    the body ('' if every message carried every joint): each joint's reading time is then only known to the
    message's (a bus reads a few servos per cycle, one after the other), not to the millisecond it needs."""
    if carried.size == 0 or carried.all():
        return ""
    return ("joint_states carries %.1f of %d joints per message (a bus that reads a few servos per cycle): their "
            "reading times are not known to the millisecond the body estimate needs" % (
                carried.sum(axis=1).mean(), carried.shape[1]))


def implausible(est: BodyEstimate, robot: LeggedRobot) -> str:
    """Why ``est`` cannot be the robot's body ('' if it can): a mass outside ``PLAUSIBLE`` times the URDF's, or a
    CoM more than 5 cm from the URDF's."""
    d = robot.description
    (lo, hi), shift = PLAUSIBLE
    if not lo * d.body_mass <= est.mass <= hi * d.body_mass:
        return "body mass %.3f kg outside [%g, %g] x the URDF's %.3f kg" % (est.mass, lo, hi, d.body_mass)
    if np.linalg.norm(est.com[:2] - np.asarray(d.body_com)[:2]) > shift:
        return "body CoM %.0f mm from the URDF's (more than %.0f mm)" % (
            1e3 * np.linalg.norm(est.com[:2] - np.asarray(d.body_com)[:2]), 1e3 * shift)
    return ""


def _skew(a: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
