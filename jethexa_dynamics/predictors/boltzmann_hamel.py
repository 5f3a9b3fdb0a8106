"""The modular whole-body model as a real-time predictor running next to the robot.

``BoltzmannHamelPredictor`` integrates the floating-base dynamics with contact (the simulation engine in
servo-target mode) from time-stamped joint commands, and exposes the predicted base pose and twist at any
requested time. It re-anchors on measurements every ``reanchor_horizon`` seconds: orientation from the IMU
(roll and pitch by default: the MPU6050 has no magnetometer, so its yaw drifts like ours), the whole pose
from motion capture when given, and the angles of the joints read shortly before the anchor. Each anchor at
time t uses the newest measurement stamped at or before t (``predictors.base.MeasurementBuffer``). Between
anchors it runs open loop on the commands, so the error growth over the horizon measures the model.

Times are seconds on the caller's clock (any origin; ``reset(t)`` sets it). Quaternions are (w, x, y, z).
Joint vectors are in the order given to ``reset(joint_names=...)`` (default: ``robot.joint_names``).
It implements the ``predictors.base.Predictor`` protocol (``on_command``, ``on_imu``, ``pose``, ...), so
``jethexa-validate`` and the ``predictor`` node use it directly. Every ``predict`` call is a few compiled
engine chunks (one per event in between); ``cycle_stats()`` reports its wall time percentiles.
"""
import heapq
import math
import time

import numpy as np
from transforms3d.euler import euler2mat, mat2euler

from jethexa_dynamics.model import LeggedRobot, Morphology
from jethexa_dynamics.model.se3 import rot_to_quat
from jethexa_dynamics.sim.engine import Engine

from .base import MeasurementBuffer, PredictorBase, check_move_time, check_time

_CMD, _MORPH = 0, 1
#: samples of the model's joint angles kept for the joint anchor (one per ``predict`` call: 1.3 s at 100 Hz); a
#: read older than the oldest is not used
JOINT_HISTORY = 128


class BoltzmannHamelPredictor(PredictorBase):
    """Real-time predictor of the JetHexa's base pose from joint commands (see the module docstring).

    Parameters: ``robot`` healthy ``LeggedRobot`` (default: bundled JetHexa); ``morphology`` initial
    morphology (any spec of ``Morphology.parse``); ``dt`` integration step (s); ``reanchor_horizon`` seconds
    between re-anchors (inf: never); ``contact``/``pid`` as for ``Engine``; ``imu_yaw`` also take the yaw from
    the IMU; ``anchor_joints`` use measured joint angles at anchors: per joint the newest read stamped at or
    before the anchor and at most ``joint_window`` s before it, taken as what it says about the model at its
    own time (``_anchor``).
    """

    name = "boltzmann_hamel"

    def __init__(self, robot=None, morphology=None, dt=1e-3, reanchor_horizon=2.0, contact=None, pid=None,
                 imu_yaw=False, anchor_joints=True, joint_window=math.inf):
        self.robot = (robot or LeggedRobot.jethexa()).full
        self._start(self.robot.joint_names, reanchor_horizon, joint_window)
        self.engine = Engine(self.robot, gait=None, dt=dt, contact=contact, pid=pid, record_every=0)
        self.imu_yaw = bool(imu_yaw)
        self.anchor_joints = bool(anchor_joints)
        self._theta = MeasurementBuffer(JOINT_HISTORY)   # (t, the model's joint angles) for the joint anchor
        self._initial_morphology = Morphology.parse(self.robot, morphology)
        self.reset(0.0)

    # ---- set-up -------------------------------------------------------------------------------------------
    def reset(self, t=0.0, joint_names=None):
        """Start over at time ``t`` (s), standing; later joint vectors are in ``joint_names`` order."""
        e = self.engine
        e.set_morphology(self._initial_morphology)
        e.R[:] = np.eye(3)
        e.p[:] = 0.0
        e.reset_standing(time=0.0)
        self.t0 = check_time(t)
        self._restart(joint_names)
        self._queue = []
        self._seq = 0
        self._theta.clear()

    @property
    def time(self):
        """Time (s, caller's clock) the prediction has reached."""
        return self.t0 + self.engine.time

    # ---- inputs -------------------------------------------------------------------------------------------
    def command(self, t, targets, move_time=0.0, joints=None):
        """Joint command issued at ``t``: move ``joints`` (names or indices into ``joint_names``; default all)
        to ``targets`` (rad) over ``move_time`` (s), like a Hiwonder MOVE_TIME_WRITE."""
        t = check_time(t)
        q, cols = self.joint_map.targets(targets, joints)
        self._push(t, _CMD, (q, check_move_time(move_time), cols))

    def set_morphology(self, morphology, t=None):
        """Morphology (any spec of ``Morphology.parse``) from time ``t`` (default now)."""
        self._push(self.time if t is None else check_time(t), _MORPH, Morphology.parse(self.robot, morphology))

    def _push(self, t, kind, payload):
        heapq.heappush(self._queue, (max(t, self.time), self._seq, kind, payload))
        self._seq += 1

    # ---- prediction ---------------------------------------------------------------------------------------
    def predict(self, t):
        """Integrate to ``t`` (s) applying the commands and anchors due; returns the 4x4 pose g_sb."""
        t = check_time(t)
        w0 = time.perf_counter()
        e = self.engine
        if t < self.time - 0.5 * e.dt:
            raise ValueError("t=%.6f s is before the prediction's time %.6f s (time only runs forward)"
                             % (t, self.time))
        while True:
            t_ev = self._queue[0][0] if self._queue else math.inf
            t_an = self.clock.next if self.clock.next is not None else math.inf
            t_next = min(t_ev, t_an)
            if t_next > t:
                break
            e.advance(t_next - self.t0)
            if t_an <= t_ev:
                self._theta.add(self.time, e.theta.copy())
                self._anchor(t_an)
            else:
                _, _, kind, payload = heapq.heappop(self._queue)
                if kind == _CMD:
                    q, mt, cols = payload
                    e.set_joint_targets(q, move_time=mt, joints=cols)
                else:
                    e.set_morphology(payload)
        e.advance(t - self.t0)
        self._theta.add(self.time, e.theta.copy())
        self.wall.add(time.perf_counter() - w0)
        return e.pose

    def _anchor(self, t):
        """Re-anchor at ``t`` on the newest measurements stamped no later than ``t``, carried forward to ``t``
        (``mocap_pose_at``, ``imu_attitude_at``)."""
        e = self.engine
        used = False
        mocap = self.mocap_pose_at(t)
        imu = None if mocap is not None else self.imu_attitude_at(t)
        if mocap is not None:
            e.p[:], e.R[:] = mocap
            used = True
        elif imu is not None:
            r_m, p_m, y_m = mat2euler(imu, "sxyz")
            yaw = y_m if self.imu_yaw else mat2euler(e.R, "sxyz")[2]
            e.R[:] = euler2mat(r_m, p_m, yaw, "sxyz")
            used = True
        if self.anchor_joints:
            # A read is old at the anchor: the bus reads a few joints per cycle, so each joint's newest read is
            # up to ~0.15 s old. Put in place of the model's angle now, it set the legs back by that much of
            # their motion and the body lurched forward at every anchor (~v * 65 ms: nearly all of the sim
            # graph's 3 mm position error). What a read tells is the model's discrepancy at the read's time (a
            # servo lagging its set-point, a sagging leg): that is carried onto the angle now.
            q, t_read = self.joint_reads(t)
            dq = q - self._theta.interp_columns(t_read)
            ok = np.isfinite(dq) & (e.pid.active > 0)
            e.theta[ok] += dq[ok]
            used = used or bool(ok.any())
        self.clock.done(t, used)

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
