"""Slipping-model predictor for the JetHexa (or any URDF robot): commanded joint angles in, roll, pitch, yaw
rate and planar odometry out. No joint feedback, no dynamics: the quasi-static model of paper 001.

Per joint command: feet = the core model's ``robot.tip_poses(q)`` relative to the whole-robot centre of
mass (the model's body origin); foot velocities = the commanded motion (target minus set-point over the
move time, or the finite difference of consecutive commands when the move time is 0); Stage A decides which
feet touch (the gait phase enters only through the commanded foot heights); Stage B gives the body twist,
held over the move and integrated on SE(2). Every ``reanchor_horizon`` seconds the planar pose is re-anchored
on the latest motion-capture pose, if any (roll and pitch are the model's own; the IMU is only compared).

The public interface is that of ``predictors.boltzmann_hamel.BoltzmannHamelPredictor`` (``reset``,
``command``, ``set_morphology``, ``measure_imu``, ``measure_pose``, ``measure_joints``, ``predict``,
``pose_matrix``, ``twist``, ``position``, ``quaternion``, ``cycle_stats`` and the ``predictors.base.Predictor``
protocol ``on_*`` / ``pose(t)``), so it can stand in for it; the streaming calls ``push_joint_command``,
``push_imu`` and ``advance`` add the command-at-target-time form. Each anchor at time t uses the newest
measurement stamped at or before t.

Pose convention: base_link in the world (z up); yaw and xy from the integrated planar twist of the centre
of mass, roll/pitch/height from Stage A (small angles: R = Rz(yaw) Ry(pitch) Rx(roll), pitch > 0 nose down,
roll > 0 left side up). Quaternions (w, x, y, z) everywhere.
"""
import math
import time

import numpy as np

from jethexa_dynamics.model.com import center_of_mass
from jethexa_dynamics.model import LeggedRobot, Morphology
from jethexa_dynamics.model.se3 import rot_to_quat
from jethexa_dynamics.second_opinions._checks import finite_array
from jethexa_dynamics.second_opinions.se2 import compose, se2_exp
from jethexa_dynamics.second_opinions.slip_model import SlipModel
from jethexa_dynamics.second_opinions.spring_support import SupportStatus

from .base import PredictorBase, check_move_time, check_time


def _rot(roll, pitch, yaw):
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


class SlipPredictor(PredictorBase):
    """Real-time slipping-model predictor.

    robot: core ``LeggedRobot`` (default: the bundled JetHexa); morphology: initial morphology;
    reanchor_horizon [s] between re-anchors on motion capture (inf: never); stiffness [N/m] per leg (servo
    and foot compliance; to be identified), mu [1/(m/s)] and anisotropy (N_legs, 2): the model's friction
    parameters (velocities depend only on their ratios); smoothing: the paper's IIR low-pass gamma on the
    twist (0 = off; the paper used 0.15 at 100 Hz for Spirit); imu_yaw: also take the yaw from the IMU at
    re-anchors. Weight = total mass x 9.81 N.
    """

    name = "slip"

    def __init__(self, robot=None, morphology=None, reanchor_horizon=2.0, stiffness=5000.0, mu=1.0,
                 anisotropy=None, smoothing=0.0, imu_yaw=False):
        self.full = (robot or LeggedRobot.jethexa()).full
        self._start(self.full.joint_names, reanchor_horizon)
        self.imu_arms_anchor = bool(imu_yaw)     # else the IMU is nothing to anchor on: motion capture starts the clock
        self.slip = SlipModel(len(self.full.leg_names), stiffness, mu, anisotropy,
                              weight=self.full.total_mass * 9.81)
        self.smoothing = float(smoothing)
        if not 0.0 <= self.smoothing < 1.0:
            raise ValueError(f"smoothing: IIR gamma must be in [0, 1), got {smoothing!r}")
        self.imu_yaw = bool(imu_yaw)
        self._initial_morphology = morphology
        self.robot = None
        self.reset()

    # ---- set-up -----------------------------------------------------------------------------------------
    def reset(self, t=0.0, joint_names=None, pose=None):
        """Start afresh at time t [s] (no command history; the morphology is kept) with the planar pose of
        ``pose`` (4x4 base_link pose, default identity); later joint vectors are in ``joint_names`` order
        (default: the healthy robot's)."""
        self._restart(joint_names)
        self._q_set = np.zeros(len(self.full.joint_names))
        self._t = check_time(t)
        self._twist = np.zeros(3)
        self._twist_until = math.inf
        self._frame = None
        self._com = np.zeros(3)
        self._planar = np.zeros(3)
        self.set_morphology(self._initial_morphology if self.robot is None else self.robot.morphology)
        self.anchor(t, np.eye(4) if pose is None else pose)

    def set_morphology(self, morphology, t=None):
        """Morphology (any spec of ``Morphology.parse``; None = healthy) from time t (default now). Legs
        without a foot (removed or truncated) leave the slipping model's list."""
        if t is not None:
            self.advance(check_time(t))
        self.robot = self.full.with_morphology(Morphology.parse(self.full, morphology))
        self._present = np.array([leg in self.robot.tip_legs for leg in self.full.leg_names])
        self._tip_rows = np.array([self.full.leg_names.index(leg) for leg in self.robot.tip_legs], dtype=int)
        self._theta = np.zeros(len(self.full.joint_names))    # full joint vector for the COM (per command)
        self._last_cmd = None          # no finite difference across a morphology change
        self._feet_set = None

    @property
    def time(self):
        """Time [s] the prediction has reached."""
        return self._t

    # ---- inputs -----------------------------------------------------------------------------------------
    def _centre_of_mass(self, q):
        """Whole-robot centre of mass c [m] in base_link at this morphology's joint angles q: the core model's
        compiled sum over the existing links (``model.com.center_of_mass``, which the engine and the
        re-planner use too)."""
        self._theta[self.robot.joint_index_in_full] = q
        return center_of_mass(self.robot, self._theta)

    def _feet(self, q):
        """Feet (N_legs, 3) relative to the COM in base_link axes (absent legs: 0), and the COM."""
        com = self._centre_of_mass(q)
        feet = np.zeros((len(self.full.leg_names), 3))
        feet[self._tip_rows] = self.robot.tip_poses(q)[:, :3, 3] - com
        return feet, com

    def command(self, t, targets, move_time=0.0, joints=None):
        """Joint command issued at t [s]: move ``joints`` (names or indices into ``joint_names``; default all)
        to ``targets`` [rad] over ``move_time`` [s] (0: the finite difference to the previous command)."""
        t = check_time(t)
        q, cols = self.joint_map.targets(targets, joints)
        mt = check_move_time(move_time)
        self.advance(t)
        self._q_set[cols] = q
        self._apply(t, self._q_set[self.robot.joint_index_in_full], mt)

    def push_joint_command(self, t, q):
        """Commanded joint angles [rad] reached at time t [s] (current-morphology or healthy joint order)."""
        t = check_time(t)
        q = finite_array(q, "q", (1,))
        if q.shape[0] == len(self.robot.joint_names):
            self._q_set[self.robot.joint_index_in_full] = q
        elif q.shape[0] == len(self.full.joint_names):
            self._q_set[:] = q
        else:
            raise ValueError(f"q: expected {len(self.robot.joint_names)} (current morphology) or "
                             f"{len(self.full.joint_names)} (healthy) joint angles, got {q.shape[0]}")
        self.advance(t)
        self._apply(t, self._q_set[self.robot.joint_index_in_full], 0.0)

    def _apply(self, t, q, move_time):
        """New set-point q (current morphology's joints) from t: evaluate the model, hold its twist."""
        feet, com = self._feet(q)
        if move_time > 0 and self._feet_set is not None:
            dt, prev = move_time, self._feet_set
        elif self._last_cmd is not None and t > self._last_cmd:
            dt, prev = t - self._last_cmd, self._feet_set
        else:
            dt, prev = None, feet
        vel = np.zeros_like(feet) if dt is None else (feet - prev) / dt
        frame = self.slip.evaluate(feet, vel, present=self._present)
        raw = self._planar_twist(t, q, com, vel, frame, dt)
        self._twist = self.smoothing * self._twist + (1.0 - self.smoothing) * raw
        self._twist_until = t + move_time if move_time > 0 else math.inf
        self._frame, self._com, self._feet_set, self._last_cmd = frame, com, feet, t

    def _planar_twist(self, t, q, com, feet_velocity, frame, dt):
        """Body twist (v_x, v_y, omega) of the COM for this command: the slipping model's Stage B."""
        return frame.twist[0]

    def push_imu(self, t, quat, gyro):
        """IMU sample: orientation (w, x, y, z) and rates [rad/s] (the streaming form of ``measure_imu``). The
        IMU is compared (``imu_residual``); its yaw is used at re-anchors with ``imu_yaw``."""
        self.measure_imu(t, quat, gyro)

    def anchor(self, t, pose):
        """Re-anchor the odometry on a 4x4 base_link pose at time t [s], keeping the command history and the
        current support state."""
        g = finite_array(pose, "pose", (2,))
        if g.shape != (4, 4):
            raise ValueError(f"pose: expected a 4x4 homogeneous transform, got shape {g.shape}")
        self._integrate(max(check_time(t), self._t))
        yaw = math.atan2(g[1, 0], g[0, 0])
        # the odometry tracks the centre of mass: the inverse of the base_link placement in pose_matrix
        com_world = _rot(*self.attitude(), yaw) @ self._com
        self._planar = np.array([g[0, 3] + com_world[0], g[1, 3] + com_world[1], yaw])

    def _anchor_on_measurements(self, t):
        """Re-anchor at ``t`` on the newest motion capture (or, with ``imu_yaw``, IMU yaw) stamped at or before
        ``t``, carried forward to ``t``; with neither, the next measurement restarts the anchor clock."""
        mocap = self.mocap_pose_at(t)
        imu = self.imu_attitude_at(t) if self.imu_yaw and mocap is None else None
        if mocap is not None:
            g = np.eye(4)
            g[:3, 3], g[:3, :3] = mocap
        elif imu is not None:
            g = self.pose_matrix
            R = imu
            g[:3, :3] = _rot(0.0, 0.0, math.atan2(R[1, 0], R[0, 0]))
        else:
            self.clock.disarm()
            return
        self.anchor(t, g)
        self.clock.done(t, True)

    # ---- prediction -------------------------------------------------------------------------------------
    def _integrate(self, t):
        """Integrate the held planar twist up to t (zero after the current move has ended)."""
        while t > self._t:
            end = min(t, self._twist_until)
            if end > self._t:
                self._planar = compose(self._planar, se2_exp(self._twist[None], end - self._t)[0])
                self._t = end
            if self._t < t:                 # the move is over: the feet stand still, so does the body
                self._twist = np.zeros(3)
                self._twist_until = math.inf

    def advance(self, t):
        """Integrate up to time t [s], re-anchoring when due."""
        t = check_time(t)
        if t < self._t - 1e-9:
            raise ValueError(f"t: {t} s is before the predictor's time {self._t} s (time only runs forward)")
        while self.clock.due(t):
            ta = self.clock.next
            self._integrate(ta)
            self._anchor_on_measurements(ta)
        self._integrate(t)

    def predict(self, t):
        """Integrate to t [s]; returns the 4x4 pose of base_link."""
        w0 = time.perf_counter()
        self.advance(t)
        self.wall.add(time.perf_counter() - w0)
        return self.pose_matrix

    def pose(self, t):
        """Advance to ``t``; (position (3,), quaternion (w, x, y, z)) of base_link, from one pose matrix."""
        g = self.predict(max(check_time(t), self.time))
        return g[:3, 3].copy(), rot_to_quat(g[:3, :3])

    # ---- outputs ----------------------------------------------------------------------------------------
    @property
    def frame(self):
        """Last ``SlipFrames`` (1 frame): contact, loads [N], status, roll, pitch, ... or None."""
        return self._frame

    @property
    def tipped(self):
        return self._frame is not None and bool(self._frame.status[0] == SupportStatus.TIPPED)

    def attitude(self):
        """(roll, pitch) [rad] of the spring-support equilibrium (0, 0 before the first command)."""
        if self._frame is None:
            return 0.0, 0.0
        return float(self._frame.roll[0]), float(self._frame.pitch[0])

    def yaw_rate(self):
        return float(self._twist[2])

    def planar_pose(self):
        """(x [m], y [m], yaw [rad]) of the centre of mass in the world (yaw not wrapped)."""
        return self._planar.copy()

    @property
    def pose_matrix(self):
        """4x4 pose of base_link in the world at ``time``."""
        roll, pitch = self.attitude()
        x, y, yaw = self._planar
        R = _rot(roll, pitch, yaw)
        height = 0.0 if self._frame is None else float(self._frame.height[0])
        g = np.eye(4)
        g[:3, :3] = R
        g[:3, 3] = np.array([x, y, height]) - R @ self._com
        return g

    @property
    def twist(self):
        """Base twist [v (3) m/s, w (3) rad/s] of base_link in base_link (quasi-static: planar only)."""
        vx, vy, wz = self._twist
        cx, cy = self._com[0], self._com[1]
        # v_base = v_com - w x r_com with w = (0, 0, wz): w x r = (-wz cy, wz cx, 0)
        return np.array([vx + wz * cy, vy - wz * cx, 0.0, 0.0, 0.0, wz])

    @property
    def position(self):
        return self.pose_matrix[:3, 3].copy()

    @property
    def quaternion(self):
        """(w, x, y, z) of the predicted orientation."""
        return rot_to_quat(self.pose_matrix[:3, :3])

    def imu_residual(self):
        """Predicted minus measured (roll, pitch, yaw rate) for the last IMU sample, or None."""
        last = self.imu.at_or_before(math.inf)
        if last is None:
            return None
        roll, pitch = self.attitude()
        R, gyro = last[1]
        r_m = math.atan2(R[2, 1], R[2, 2])
        p_m = math.asin(max(-1.0, min(1.0, -R[2, 0])))
        return np.array([roll - r_m, pitch - p_m, self._twist[2] - gyro[2]])

    # ---- whole trajectories at once --------------------------------------------------------------------
    def evaluate_commands(self, t, q, method="prefix"):
        """Offline: all commands (T,) times [s] and (T, n) angles (current-morphology or healthy order)
        at once, integrated by the SE(2) prefix product. Returns ``SlipTrajectory`` (frames and (T + 1, 3)
        planar poses of the COM) starting from the current planar pose. Same twists as feeding the commands
        one by one with ``push_joint_command`` (smoothing 0)."""
        t = finite_array(t, "t", (1,))
        q = finite_array(q, "q", (2,))
        if q.shape[0] != t.shape[0]:
            raise ValueError(f"q: {q.shape[0]} commands for {t.shape[0]} times")
        if np.any(np.diff(t) <= 0):
            raise ValueError("t: command times must increase")
        if q.shape[1] == len(self.full.joint_names) != len(self.robot.joint_names):
            q = q[:, self.robot.joint_index_in_full]
        elif q.shape[1] != len(self.robot.joint_names):
            raise ValueError(f"q: expected {len(self.robot.joint_names)} or {len(self.full.joint_names)} "
                             f"joint angles per command, got {q.shape[1]}")
        feet = np.array([self._feet(qk)[0] for qk in q])
        vel = np.zeros_like(feet)
        vel[1:] = np.diff(feet, axis=0) / np.diff(t)[:, None, None]
        dt = np.append(np.diff(t), 0.0)            # each twist is held until the next command
        return self.slip.trajectory(feet, vel, dt, start=self._planar, present=self._present, method=method)
