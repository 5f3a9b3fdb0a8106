"""The modular whole-body model as a real-time predictor running next to the robot.

``Predictor`` integrates the floating-base dynamics with contact (the simulation engine in servo-target mode)
from time-stamped joint commands, and exposes the predicted base pose and twist at any requested time. It
re-anchors on measurements every ``reanchor_horizon`` seconds: orientation from the IMU (roll and pitch by
default: the MPU6050 has no magnetometer, so its yaw drifts like ours), the whole pose from motion capture
when given, and the joint angles from the servos when given. Between anchors it runs open loop on the
commands, so the error growth over the horizon measures the model.

Times are seconds on the caller's clock (any origin; ``reset(t)`` sets it). Quaternions are (w, x, y, z).
Joint vectors are in the order given to ``reset(joint_names=...)`` (default: ``robot.joint_names``).
The class also implements the replay protocol of ``validation.replay.PredictorAdapter`` (``on_command``,
``on_imu``, ``pose``, ...), so ``jethexa-validate`` and the ``predictor`` node can use it directly.
Every ``predict`` call is a few compiled engine chunks (one per event in between); ``cycle_stats()`` reports
its wall time percentiles.
"""
import heapq
import math
import time
from collections import deque

import numpy as np
from transforms3d.euler import euler2mat, mat2euler
from transforms3d.quaternions import quat2mat

from jethexa_dynamics.model import LeggedRobot, Morphology
from jethexa_dynamics.model.se3 import rot_to_quat, unit_quaternion
from jethexa_dynamics.timing import cycle_stats

from .engine import Engine

_CMD, _MORPH = 0, 1


def _unit_quat(q, name):
    return unit_quaternion(q, name + " (w, x, y, z)")


def _time(t, name="t"):
    t = float(t)
    if not math.isfinite(t):
        raise ValueError("%s must be a finite time (s), got %r" % (name, t))
    return t


class Predictor:
    """Real-time predictor of the JetHexa's base pose from joint commands (see the module docstring).

    Parameters: ``robot`` healthy ``LeggedRobot`` (default: bundled JetHexa); ``morphology`` initial
    morphology; ``dt`` integration step (s); ``reanchor_horizon`` seconds between re-anchors (inf: never);
    ``contact``/``pid`` as for ``Engine``; ``imu_yaw`` also take the yaw from the IMU; ``anchor_joints`` use
    measured joint angles at anchors.
    """

    name = "boltzmann_hamel"

    def __init__(self, robot=None, morphology=None, dt=1e-3, reanchor_horizon=2.0, contact=None, pid=None,
                 imu_yaw=False, anchor_joints=True):
        h = float(reanchor_horizon)
        if not h > 0.0:
            raise ValueError("reanchor_horizon must be > 0 s (inf: never), got %r" % (reanchor_horizon,))
        self.horizon = h
        self.robot = (robot or LeggedRobot.jethexa()).full
        self.engine = Engine(self.robot, gait=None, dt=dt, contact=contact, pid=pid, record_every=0)
        self.imu_yaw = bool(imu_yaw)
        self.anchor_joints = bool(anchor_joints)
        self._initial_morphology = morphology
        self.notes = []
        self._wall = deque(maxlen=20000)
        self.reset(0.0)

    # ---- set-up -------------------------------------------------------------------------------------------
    def reset(self, t=0.0, joint_names=None):
        """Start over at time ``t`` (s), standing; later joint vectors are in ``joint_names`` order."""
        e = self.engine
        e.set_morphology(Morphology.healthy(self.robot) if self._initial_morphology is None
                         else self._initial_morphology)
        e.R[:] = np.eye(3)
        e.p[:] = 0.0
        e.reset_standing(time=0.0)
        self.t0 = _time(t)
        names = list(self.robot.joint_names) if joint_names is None else list(joint_names)
        unknown = [n for n in names if n not in self.robot.joint_names]
        if unknown:
            raise ValueError("joint_names: unknown joints %s (the robot has %s)" % (unknown, self.robot.joint_names))
        self.joint_names = names
        self._cols = np.array([self.robot.joint_names.index(n) for n in names], dtype=np.int64)
        self._queue = []
        self._seq = 0
        self._imu = None          # (t, R)
        self._mocap = None        # (t, p, R)
        self._joints = None       # (t, q full order, finite mask)
        self._next_anchor = None
        self.anchors = []
        self._wall.clear()

    @property
    def time(self):
        """Time (s, caller's clock) the prediction has reached."""
        return self.t0 + self.engine.time

    # ---- inputs -------------------------------------------------------------------------------------------
    def command(self, t, targets, move_time=0.0, joints=None):
        """Joint command issued at ``t``: move ``joints`` (names or indices into ``joint_names``; default all)
        to ``targets`` (rad) over ``move_time`` (s), like a Hiwonder MOVE_TIME_WRITE."""
        t = _time(t)
        if joints is None:
            cols = self._cols
        else:
            cols = np.array([self._cols[self.joint_names.index(j)] if isinstance(j, str) else self._cols[int(j)]
                             for j in joints], dtype=np.int64)
        q = np.asarray(targets, dtype=np.float64).reshape(-1)
        if q.shape != cols.shape:
            raise ValueError("targets must have %d joint angles, got %d" % (len(cols), q.size))
        if not np.all(np.isfinite(q)):
            raise ValueError("targets must be finite joint angles (rad), got %s" % q)
        mt = float(move_time)
        if not (math.isfinite(mt) and 0.0 <= mt <= 30.0):
            raise ValueError("move_time=%r outside the allowed range [0, 30] s" % (move_time,))
        self._push(t, _CMD, (q.copy(), mt, cols))

    def set_morphology(self, morphology, t=None):
        """Morphology (``Morphology``, links per leg, {leg: links} or scenario name) from time ``t`` (default now)."""
        self._push(self.time if t is None else _time(t), _MORPH, morphology)

    def measure_imu(self, t, quat):
        """IMU orientation (w, x, y, z) of base_link in the world at ``t``."""
        self._imu = (_time(t), quat2mat(_unit_quat(quat, "quat")))
        self._first_anchor(self._imu[0])

    def measure_pose(self, t, position, quat):
        """Ground-truth (motion capture) pose of base_link: position (m, world) and orientation (w, x, y, z)."""
        p = np.asarray(position, dtype=np.float64)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise ValueError("position must be 3 finite coordinates (m), got %r" % (position,))
        self._mocap = (_time(t), p.copy(), quat2mat(_unit_quat(quat, "quat")))
        self._first_anchor(self._mocap[0])

    def measure_joints(self, t, angles):
        """Measured joint angles (rad, ``joint_names`` order; NaN = not measured)."""
        q = np.asarray(angles, dtype=np.float64).reshape(-1)
        if q.shape != self._cols.shape:
            raise ValueError("angles must have %d values, got %d" % (len(self._cols), q.size))
        full = np.full(len(self.robot.joint_names), np.nan)
        full[self._cols] = q
        self._joints = (_time(t), full, np.isfinite(full))

    def _push(self, t, kind, payload):
        heapq.heappush(self._queue, (max(t, self.time), self._seq, kind, payload))
        self._seq += 1

    def _first_anchor(self, t):
        if self._next_anchor is None:
            self._next_anchor = max(t, self.time)

    # ---- prediction ---------------------------------------------------------------------------------------
    def predict(self, t):
        """Integrate to ``t`` (s) applying the commands and anchors due; returns the 4x4 pose g_sb."""
        t = _time(t)
        w0 = time.perf_counter()
        e = self.engine
        if t < self.time - 0.5 * e.dt:
            raise ValueError("t=%.6f s is before the prediction's time %.6f s (time only runs forward)"
                             % (t, self.time))
        while True:
            t_ev = self._queue[0][0] if self._queue else math.inf
            t_an = self._next_anchor if self._next_anchor is not None else math.inf
            t_next = min(t_ev, t_an)
            if t_next > t:
                break
            e.advance(t_next - self.t0)
            if t_an <= t_ev:
                self._anchor(t_an)
            else:
                _, _, kind, payload = heapq.heappop(self._queue)
                if kind == _CMD:
                    q, mt, cols = payload
                    e.set_joint_targets(q, move_time=mt, joints=cols)
                else:
                    e.set_morphology(payload)
        e.advance(t - self.t0)
        self._wall.append(time.perf_counter() - w0)
        return e.pose

    def _anchor(self, t):
        """Re-anchor at ``t`` on the latest measurements stamped no later than ``t``."""
        e = self.engine
        used = []
        if self._mocap is not None and self._mocap[0] <= t + 1e-9:
            e.p[:] = self._mocap[1]
            e.R[:] = self._mocap[2]
            used.append("mocap")
        elif self._imu is not None and self._imu[0] <= t + 1e-9:
            r_m, p_m, y_m = mat2euler(self._imu[1], "sxyz")
            yaw = y_m if self.imu_yaw else mat2euler(e.R, "sxyz")[2]
            e.R[:] = euler2mat(r_m, p_m, yaw, "sxyz")
            used.append("imu")
        if self.anchor_joints and self._joints is not None and self._joints[0] <= t + 1e-9:
            ok = self._joints[2] & (e.pid.active > 0)
            e.theta[ok] = self._joints[1][ok]
            used.append("joints")
        if used:
            self.anchors.append(t)
        self._next_anchor = t + self.horizon

    # ---- outputs ------------------------------------------------------------------------------------------
    @property
    def pose_matrix(self):
        """Predicted 4x4 pose of base_link in the world at ``self.time``."""
        return self.engine.pose

    @property
    def twist(self):
        """Predicted base twist [v; w] (m/s, rad/s) in base_link."""
        return self.engine.twist

    @property
    def position(self):
        return self.engine.p.copy()

    @property
    def quaternion(self):
        """(w, x, y, z) of the predicted orientation."""
        return rot_to_quat(self.engine.R)

    def cycle_stats(self):
        """Wall time per ``predict`` call (s): {'n', 'p50', 'p99', 'mean', 'max'} (NaN before any call)."""
        return cycle_stats(self._wall)

    # ---- validation.replay.PredictorAdapter protocol ------------------------------------------------------
    def on_command(self, t, q, t_target):
        self.command(t, q, move_time=max(0.0, float(t_target) - float(t)))

    def on_joints(self, t, q):
        self.measure_joints(t, q)

    def on_imu(self, t, quat, gyro=None, accel=None):
        self.measure_imu(t, quat)

    def on_ground_truth(self, t, pos, quat):
        self.measure_pose(t, pos, quat)

    def on_morphology(self, t, links):
        self.set_morphology([int(n) for n in links], t)

    def pose(self, t):
        """Advance to ``t``; (position (3,), quaternion (w, x, y, z))."""
        self.predict(max(_time(t), self.time))
        return self.position, self.quaternion
