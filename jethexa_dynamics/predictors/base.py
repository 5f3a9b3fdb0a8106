"""What every predictor offers (no rclpy): the ``Predictor`` protocol and the plumbing the predictors share.

A predictor turns time-stamped joint commands (and measurements to re-anchor on) into the predicted pose
of ``base_link`` in the world. The predictor node, ``jethexa-validate``'s replay and the damage identifier
talk to every model through :class:`Predictor` only.

Conventions: times t [s] on the caller's clock (any origin, only forward); quaternions (w, x, y, z) of
base_link in the world; joint vectors in the order given to ``reset(t, joint_names)``; NaN in a measured
joint vector = that joint was not read.

Shared plumbing (:class:`PredictorBase`): the joint-name mapping (:class:`JointMap`), the input checks
(:func:`check_time`, :func:`check_move_time`), the anchor clock (:class:`AnchorClock`) with a short
:class:`MeasurementBuffer` per measured stream, so an anchor at time t uses the newest measurement stamped at
or before t even when later ones have already arrived, and the cycle-time statistics (:class:`CycleStats`).
"""
from __future__ import annotations

import bisect
import math
from collections import deque
from typing import List, Optional, Protocol, Sequence, Tuple, runtime_checkable

import numpy as np
from transforms3d.axangles import mat2axangle
from transforms3d.quaternions import quat2mat

from jethexa_dynamics.hardware.protocol import MAX_MOVE_TIME_S
from jethexa_dynamics.model.se3 import rot_exp, unit_quat

#: the longest a measurement is carried forward to an anchor time (s); an older one is used as it is. A
#: first-order carry beats holding the sample for a swaying body up to ~1/3 of its sway period (1.3 s here)
MAX_CARRY = 0.25


@runtime_checkable
class Predictor(Protocol):
    """The interface of every predictor (all times in s, quaternions w, x, y, z).

    Explicit subclasses inherit the no-op input methods below, so a test double only writes what it uses.
    """

    name: str = "predictor"
    horizon: float = float("nan")        #: re-anchoring horizon (s)

    def reset(self, t: float, joint_names: Optional[Sequence[str]] = None) -> None:
        """Start at ``t``; joint vectors given later are in the order of ``joint_names``."""

    def on_command(self, t: float, q: np.ndarray, t_target: float) -> None:
        """Joint command received at ``t`` (target ``q`` to be reached at ``t_target``)."""

    def on_joints(self, t: float, q: np.ndarray) -> None:
        """Measured joint positions read at ``t`` (NaN = not read)."""

    def on_imu(self, t: float, quat: np.ndarray, gyro: Optional[np.ndarray] = None,
               accel: Optional[np.ndarray] = None) -> None:
        """IMU sample (orientation from the IMU filter; rates rad/s, acceleration m/s^2 in the IMU frame)."""

    def on_ground_truth(self, t: float, pos: np.ndarray, quat: np.ndarray) -> None:
        """Motion-capture pose of base_link (position m, world)."""

    def on_morphology(self, t: float, links: Sequence[int]) -> None:
        """Intact links per leg (URDF leg order) from ``t`` on."""

    def pose(self, t: float) -> Tuple[np.ndarray, np.ndarray]:
        """Advance to ``t`` and return the predicted ``(position (3,), quaternion (4,))``."""
        raise NotImplementedError

    @property
    def twist(self) -> np.ndarray:
        """Predicted base twist [v (m/s); w (rad/s)] of base_link in base_link at the last ``pose`` time."""
        return np.full(6, np.nan)

    @property
    def anchors(self) -> List[float]:
        """Times at which the prediction was re-anchored to measurements."""
        return []


# ---------------------------------------------------------------------------------------------- checks
def check_time(t, field="t") -> float:
    """``t`` as a finite float [s], or a ``ValueError`` naming ``field``."""
    try:
        t = float(t)
    except (TypeError, ValueError):
        raise ValueError("%s must be a finite time (s), got %r" % (field, t)) from None
    if not math.isfinite(t):
        raise ValueError("%s must be a finite time (s), got %r" % (field, t))
    return t


def check_move_time(move_time) -> float:
    """A command's move time [s] in [0, MAX_MOVE_TIME_S] (the servo's limit), or a ``ValueError``."""
    mt = float(move_time)
    if not (math.isfinite(mt) and 0.0 <= mt <= MAX_MOVE_TIME_S):
        raise ValueError("move_time=%r outside the allowed range [0, %g] s" % (move_time, MAX_MOVE_TIME_S))
    return mt


def check_horizon(horizon) -> float:
    h = float(horizon)
    if not h > 0.0:
        raise ValueError("reanchor_horizon must be > 0 s (inf: never), got %r" % (horizon,))
    return h


def rotation(quat, field="quat") -> np.ndarray:
    """3x3 rotation of a (w, x, y, z) quaternion checked by :func:`~jethexa_dynamics.model.se3.unit_quat`."""
    return quat2mat(unit_quat(quat, field))


def position(p, field="position") -> np.ndarray:
    a = np.asarray(p, dtype=np.float64).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError("%s must be 3 finite coordinates (m), got %r" % (field, p))
    return a.copy()


# ---------------------------------------------------------------------------------------------- joints
class JointMap:
    """Joint vectors in a caller's order <-> the healthy robot's joint order (``robot_joints``)."""

    def __init__(self, robot_joints: Sequence[str], joint_names: Optional[Sequence[str]] = None):
        self.robot_joints = list(robot_joints)
        names = list(self.robot_joints) if joint_names is None else list(joint_names)
        unknown = [n for n in names if n not in self.robot_joints]
        if unknown:
            raise ValueError("joint_names: unknown joints %s (the robot has %s)" % (unknown, self.robot_joints))
        self.names = names
        self.cols = np.array([self.robot_joints.index(n) for n in names], dtype=np.int64)

    def columns(self, joints=None) -> np.ndarray:
        """Robot-order columns of ``joints`` (names or indices into ``names``; None: all)."""
        if joints is None:
            return self.cols
        return np.array([self.cols[self.names.index(j)] if isinstance(j, str) else self.cols[int(j)]
                         for j in joints], dtype=np.int64)

    def targets(self, targets, joints=None) -> Tuple[np.ndarray, np.ndarray]:
        """(finite target angles [rad], their robot-order columns) of a command."""
        cols = self.columns(joints)
        q = np.asarray(targets, dtype=np.float64).reshape(-1)
        if q.shape != cols.shape:
            raise ValueError("targets must have %d joint angles, got %d" % (len(cols), q.size))
        if not np.all(np.isfinite(q)):
            raise ValueError("targets must be finite joint angles (rad), got %s" % q)
        return q.copy(), cols

    def measured(self, angles) -> np.ndarray:
        """Robot-order vector of measured angles [rad] (NaN where not read) from one in ``names`` order."""
        q = np.asarray(angles, dtype=np.float64).reshape(-1)
        if q.shape != self.cols.shape:
            raise ValueError("angles must have %d values, got %d" % (len(self.cols), q.size))
        full = np.full(len(self.robot_joints), np.nan)
        full[self.cols] = q
        return full


# ---------------------------------------------------------------------------------------------- anchors
class MeasurementBuffer:
    """The last ``maxlen`` samples of one measured stream, in stamp order (a late sample is inserted in place)."""

    def __init__(self, maxlen: int = 64):
        self._t: deque = deque(maxlen=maxlen)
        self._v: deque = deque(maxlen=maxlen)

    def __len__(self):
        return len(self._t)

    def clear(self) -> None:
        self._t.clear()
        self._v.clear()

    def add(self, t: float, value) -> None:
        if not self._t or t >= self._t[-1]:
            self._t.append(t)
            self._v.append(value)
            return
        k = bisect.bisect_right(list(self._t), t)      # out of order (rare): keep the buffer sorted
        ts, vs = list(self._t), list(self._v)
        ts.insert(k, t)
        vs.insert(k, value)
        self._t = deque(ts[-self._t.maxlen:], maxlen=self._t.maxlen)
        self._v = deque(vs[-self._v.maxlen:], maxlen=self._v.maxlen)

    def at_or_before(self, t: float, since: float = -math.inf):
        """(stamp, value) of the newest sample stamped in [since, t], or None."""
        for k in range(len(self._t) - 1, -1, -1):
            tk = self._t[k]
            if tk <= t + 1e-9:
                return (tk, self._v[k]) if tk >= since - 1e-9 else None
        return None

    def between(self, since: float, t: float):
        """(stamp, value) of every sample stamped in [since, t], oldest first."""
        return [(tk, v) for tk, v in zip(self._t, self._v) if since - 1e-9 <= tk <= t + 1e-9]

    def interp_columns(self, times: np.ndarray) -> np.ndarray:
        """For samples that are vectors (n,): element j linearly interpolated at ``times[j]`` [s] between the
        samples around it; NaN where ``times[j]`` is NaN or outside the buffer's span."""
        times = np.asarray(times, dtype=float)
        out = np.full(times.shape, np.nan)
        if not self._t:
            return out
        ts, vs = np.fromiter(self._t, float, len(self._t)), np.asarray(self._v, dtype=float)
        for j in np.flatnonzero((times >= ts[0] - 1e-9) & (times <= ts[-1] + 1e-9)):
            out[j] = np.interp(times[j], ts, vs[:, j])
        return out


class AnchorClock:
    """When to re-anchor: first at the first measurement that can anchor (``arm``), then every ``horizon``
    seconds. ``anchors`` lists the anchor times at which a measurement was actually used."""

    def __init__(self, horizon: float):
        self.horizon = check_horizon(horizon)
        self.next: Optional[float] = None
        self.anchors: List[float] = []

    def reset(self) -> None:
        self.next = None
        self.anchors = []

    def arm(self, t: float, now: float) -> None:
        """A measurement stamped ``t`` arrived while the prediction is at ``now``: start the clock if idle."""
        if self.next is None:
            self.next = max(t, now)

    def due(self, t: float) -> bool:
        return self.next is not None and self.next <= t

    def done(self, t: float, used: bool) -> None:
        """The anchor due at ``t`` ran; ``used`` says whether any measurement was applied."""
        if used:
            self.anchors.append(t)
        self.next = t + self.horizon

    def disarm(self) -> None:
        """Nothing could anchor: wait for the next measurement to start the clock again."""
        self.next = None


# ---------------------------------------------------------------------------------------------- timing
class CycleStats:
    """Rolling wall-time statistics of a repeated call (seconds in)."""

    def __init__(self, window: int = 2000):
        self.samples: deque = deque(maxlen=int(window))
        self.count = 0
        self.overruns = 0
        self._stats: Optional[Tuple[int, dict]] = None   # (count, stats()) of the last call: percentiles cost

    def clear(self) -> None:
        self.samples.clear()
        self.count = self.overruns = 0
        self._stats = None

    def add(self, seconds: float, period: Optional[float] = None) -> None:
        self.samples.append(float(seconds))
        self.count += 1
        if period is not None and seconds > period:
            self.overruns += 1

    def stats(self) -> dict:
        """{'n', 'p50', 'p99', 'mean', 'max'} in seconds over the window (NaN statistics and n = 0 when empty)."""
        if not self.samples:
            return {"n": 0, "p50": math.nan, "p99": math.nan, "mean": math.nan, "max": math.nan}
        count = self.count
        if self._stats is not None and self._stats[0] == count:   # nothing added since: the same figures
            return dict(self._stats[1])
        a = np.asarray(self.samples, dtype=float)
        out = {"n": len(a), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
               "mean": float(a.mean()), "max": float(a.max())}
        self._stats = (count, out)
        return dict(out)

    def summary(self) -> dict:
        """{'p50_ms', 'p99_ms', 'max_ms', 'mean_ms', 'cycles', 'overruns'} (NaN before the first cycle)."""
        s = self.stats()
        out = {k + "_ms": 1e3 * s[k] for k in ("p50", "p99", "max", "mean")}
        out.update(cycles=self.count, overruns=self.overruns)
        return out


# ---------------------------------------------------------------------------------------------- base class
class PredictorBase(Predictor):
    """The plumbing of the built-in predictors; a subclass provides ``time``, ``command``, ``set_morphology``,
    ``predict(t)``, ``position``, ``quaternion`` and ``twist``, calls :meth:`_start` from ``__init__`` and
    :meth:`_restart` from ``reset``, and runs ``self.clock`` (an anchor due at t reads the buffers at t).

    Measurements are kept in short buffers (``imu``, ``mocap``, ``joints``); the anchor due at t reads the
    newest sample stamped at or before t from each. ``joint_window`` [s]: a joint is anchored only on a read
    stamped within this long before the anchor (default: any read still in the buffer).
    """

    #: does an IMU sample start the anchor clock (the slip model only anchors on motion capture)?
    imu_arms_anchor = True

    def _start(self, robot_joints: Sequence[str], horizon: float, joint_window: float = math.inf,
               buffer: int = 64) -> None:
        self.clock = AnchorClock(horizon)
        self.horizon = self.clock.horizon
        self.joint_window = float(joint_window)
        self._robot_joints = list(robot_joints)
        self.imu = MeasurementBuffer(buffer)       # (R, gyro)
        self.mocap = MeasurementBuffer(buffer)     # (p, R)
        self.joints = MeasurementBuffer(buffer)    # robot-order angles, NaN = not read
        self.wall = CycleStats(20000)
        self.joint_map = JointMap(self._robot_joints)

    def _restart(self, joint_names=None) -> None:
        self.joint_map = JointMap(self._robot_joints, joint_names)
        self.clock.reset()
        for b in (self.imu, self.mocap, self.joints):
            b.clear()
        self.wall.clear()

    @property
    def joint_names(self) -> List[str]:
        return self.joint_map.names

    @property
    def anchors(self) -> List[float]:
        return self.clock.anchors

    # ---- measurements -------------------------------------------------------------------------------------
    def measure_imu(self, t, quat, gyro=None):
        """IMU orientation (w, x, y, z) of base_link in the world and rates [rad/s] at ``t``."""
        g = np.zeros(3) if gyro is None else np.asarray(gyro, dtype=float).reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ValueError("gyro must be 3 finite rates (rad/s), got %r" % (gyro,))
        t = check_time(t)
        self.imu.add(t, (rotation(quat), g))
        if self.imu_arms_anchor:
            self.clock.arm(t, self.time)

    def measure_pose(self, t, position_m, quat):
        """Motion-capture pose of base_link: position [m] (world) and orientation (w, x, y, z)."""
        t = check_time(t)
        self.mocap.add(t, (position(position_m), rotation(quat)))
        self.clock.arm(t, self.time)

    def measure_joints(self, t, angles):
        """Measured joint angles [rad] read at ``t`` (``joint_names`` order; NaN = not read)."""
        self.joints.add(check_time(t), self.joint_map.measured(angles))

    def measured_joints(self, t) -> np.ndarray:
        """Robot-order angles read within ``joint_window`` before ``t`` (newest read per joint; NaN: none)."""
        return self.joint_reads(t)[0]

    def joint_reads(self, t) -> Tuple[np.ndarray, np.ndarray]:
        """(angles, stamps): per robot-order joint the newest read within ``joint_window`` before ``t`` [rad]
        and the time it was read [s] (NaN, NaN: none)."""
        out, stamps = np.full(len(self._robot_joints), np.nan), np.full(len(self._robot_joints), np.nan)
        for tk, q in self.joints.between(t - self.joint_window, t):
            ok = np.isfinite(q)
            out[ok], stamps[ok] = q[ok], tk
        return out, stamps

    def cycle_stats(self):
        """Wall time per ``predict`` call (s): {'n', 'p50', 'p99', 'mean', 'max'} (NaN before any call)."""
        return self.wall.stats()

    # ---- anchoring ----------------------------------------------------------------------------------------
    # An anchor due at t finds the newest sample stamped t_m <= t; t - t_m is up to one sample period (20 ms
    # of motion capture, 10 ms of IMU) plus the transport delay, which grows with the machine's load. The
    # body rolls and pitches at several deg/s while it walks, so the sample is carried forward to t at the
    # rates measured with it (first order), not used as if it had been taken at t.
    def mocap_pose_at(self, t):
        """Motion-capture pose ``(p (3,) m, R (3, 3))`` of base_link in the world at ``t``, or None.

        The newest sample at or before ``t`` (stamp t_m) moved on by the constant twist of the last two samples
        (t_p < t_m, both in the buffer): ``p = p_m + v (t - t_m)`` with ``v = (p_m - p_p)/(t_m - t_p)``, and
        ``R = exp([w] (t - t_m)) R_m`` with ``w`` (world frame) the rotation ``R_m R_p^T`` over ``t_m - t_p``.
        Not carried when the step or the gap exceeds :data:`MAX_CARRY`.

        Example: samples at 0.00 s and 0.02 s of a body turning at 1 rad/s about z give, at t = 0.03 s, the
        yaw 0.03 rad.
        """
        last = self.mocap.at_or_before(t)
        if last is None:
            return None
        t_m, (p_m, R_m) = last
        prev = self.mocap.at_or_before(t_m - 1e-6)
        if prev is None or not (0.0 < t_m - prev[0] <= MAX_CARRY) or t - t_m > MAX_CARRY:
            return p_m.copy(), R_m.copy()
        t_p, (p_p, R_p) = prev
        dt, h = t_m - t_p, t - t_m
        axis, angle = mat2axangle(R_m @ R_p.T, unit_thresh=1e-5)
        return p_m + (p_m - p_p) * (h / dt), rot_exp(np.asarray(axis), angle * h / dt) @ R_m

    def imu_attitude_at(self, t):
        """IMU orientation ``R`` (3, 3) of base_link in the world at ``t``, or None: the newest sample at or
        before ``t`` (stamp t_m) turned on by its gyro rates ``w`` (body frame, rad/s): ``R = R_m exp([w] (t -
        t_m))``; not carried beyond :data:`MAX_CARRY`."""
        last = self.imu.at_or_before(t)
        if last is None:
            return None
        t_m, (R_m, gyro) = last
        h = t - t_m
        if h > MAX_CARRY or not np.any(gyro):
            return R_m.copy()
        return R_m @ rot_exp(gyro * h)

    # ---- the Predictor protocol ---------------------------------------------------------------------------
    def on_command(self, t, q, t_target):
        t = max(check_time(t), self.time)
        self.command(t, q, move_time=max(0.0, float(t_target) - t))

    def on_joints(self, t, q):
        self.measure_joints(t, q)

    def on_imu(self, t, quat, gyro=None, accel=None):
        self.measure_imu(t, quat, gyro)

    def on_ground_truth(self, t, pos, quat):
        self.measure_pose(t, pos, quat)

    def on_morphology(self, t, links):
        self.set_morphology([int(n) for n in links], max(check_time(t), self.time))

    def pose(self, t):
        """Advance to ``t``; (position (3,), quaternion (w, x, y, z))."""
        self.predict(max(check_time(t), self.time))
        return self.position, self.quaternion
