"""Slipping-model predictor for the JetHexa (or any URDF robot): commanded joint angles in, roll, pitch, yaw
rate and planar odometry out. No IMU, no joint feedback, no dynamics: the quasi-static model of paper 001.

Per joint command: feet = the core model's ``robot.tip_poses(q)`` relative to the whole-robot centre of
mass (the model's body origin), foot velocities by finite differences of consecutive commands; Stage A
decides which feet touch (the gait phase enters only through the commanded foot heights); Stage B gives the
body twist, held until the next command and integrated on SE(2).

Pose convention: ``pose()`` is the 4x4 pose of base_link in the world (z up). Its yaw and xy come from the
integrated planar twist of the centre of mass, roll/pitch/height from Stage A (small angles:
R = Rz(yaw) Ry(pitch) Rx(roll), pitch > 0 nose down, roll > 0 left side up).
"""
import numpy as np

from ._checks import finite_array, positive_scalar
from .newton_euler import NewtonEulerRobot
from .se2 import compose, se2_exp
from .slip import SlipModel
from .spring_support import SupportStatus


def _rot(roll, pitch, yaw):
    cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


class SlipPredictor:
    """Real-time slipping-model predictor.

    robot: core ``LeggedRobot`` (default: the bundled JetHexa). stiffness [N/m] per leg (servo and foot
    compliance; to be identified), mu [1/(m/s)] and anisotropy (N_legs, 2): the model's friction parameters
    (velocities depend only on their ratios). smoothing: the paper's IIR low-pass gamma on the twist (0 = off;
    0.15 at 100 Hz for Spirit). Weight = total mass x 9.81 N.
    """

    name = "slip"

    def __init__(self, robot=None, stiffness=5000.0, mu=1.0, anisotropy=None, smoothing=0.0):
        if robot is None:
            from ..model import LeggedRobot
            robot = LeggedRobot.jethexa()
        self.full = robot.full
        self.com_model = NewtonEulerRobot.from_urdf(self.full.urdf_path) if self.full.urdf_path else None
        legs = list(self.full.leg_names)
        self.slip = SlipModel(len(legs), stiffness, mu, anisotropy, weight=self.full.total_mass * 9.81)
        self.smoothing = float(smoothing)
        if not 0.0 <= self.smoothing < 1.0:
            raise ValueError(f"smoothing: IIR gamma must be in [0, 1), got {smoothing!r}")
        self.set_morphology(None)
        self.reset()

    # ---- inputs -----------------------------------------------------------------------------------------
    def reset(self, t=0.0, pose=None):
        """Start afresh at time t [s] (no command history) with the planar pose of ``pose`` (4x4 base_link
        pose, default identity)."""
        self._t = float(t)
        self._last_cmd = None
        self._feet_prev = None
        self._twist = np.zeros(3)
        self._frame = None
        self._com = np.zeros(3)
        self._imu = None
        self._planar = np.zeros(3)
        self.anchor(t, np.eye(4) if pose is None else pose)

    def anchor(self, t, pose):
        """Re-anchor the odometry on a measured 4x4 base_link pose at time t [s], keeping the command history
        and the current support state (for periodic re-anchoring on motion capture)."""
        g = finite_array(pose, "pose", (2,))
        if g.shape != (4, 4):
            raise ValueError(f"pose: expected a 4x4 homogeneous transform, got shape {g.shape}")
        self.advance(max(float(t), self._t))
        yaw = np.arctan2(g[1, 0], g[0, 0])
        # the odometry tracks the centre of mass: the inverse of the base_link placement in pose()
        com_world = _rot(*self.attitude(), yaw) @ self._com
        self._planar = np.array([g[0, 3] + com_world[0], g[1, 3] + com_world[1], yaw])

    def set_morphology(self, m):
        """Morphology (core ``Morphology`` or intact links per leg); None = healthy. Legs without a foot
        (removed or truncated) leave the slipping model's list."""
        self.robot = self.full if m is None else self.full.with_morphology(m)
        counts = self.robot.morphology.links_per_leg
        self._present = np.array([leg in self.robot.tip_legs for leg in self.full.leg_names])
        self._tip_rows = np.array([self.full.leg_names.index(leg) for leg in self.robot.tip_legs], dtype=int)
        self._com_robot = None if self.com_model is None else self.com_model.with_morphology(counts)
        self._last_cmd = None          # no finite difference across a morphology change

    def _joint_vector(self, q):
        q = finite_array(q, "q", (1,))
        if q.shape[0] == len(self.robot.joint_names):
            return q
        if q.shape[0] == len(self.full.joint_names):
            return q[self.robot.joint_index_in_full]
        raise ValueError(f"q: expected {len(self.robot.joint_names)} (current morphology) or "
                         f"{len(self.full.joint_names)} (healthy) joint angles, got {q.shape[0]}")

    def _feet(self, q):
        """Feet (N_legs, 3) relative to the COM in base_link axes (absent legs: 0), and the COM."""
        com = np.zeros(3) if self._com_robot is None else self._com_robot.center_of_mass(q)
        feet = np.zeros((len(self.full.leg_names), 3))
        feet[self._tip_rows] = self.robot.tip_poses(q)[:, :3, 3] - com
        return feet, com

    def push_joint_command(self, t, q):
        """Commanded joint angles [rad] at time t [s] (current-morphology or healthy joint order)."""
        t = float(t)
        if not np.isfinite(t):
            raise ValueError("t: must be finite")
        q = self._joint_vector(q)
        self.advance(t)
        feet, com = self._feet(q)
        dt = None if self._last_cmd is None or t <= self._last_cmd else t - self._last_cmd
        vel = np.zeros_like(feet) if dt is None else (feet - self._feet_prev) / dt
        frame = self.slip.evaluate(feet, vel, present=self._present)
        raw = self._planar_twist(t, q, com, vel, frame, dt)
        self._twist = self.smoothing * self._twist + (1.0 - self.smoothing) * raw
        self._frame, self._com, self._feet_prev, self._last_cmd = frame, com, feet, t

    def _planar_twist(self, t, q, com, feet_velocity, frame, dt):
        """Body twist (v_x, v_y, omega) of the COM for this command: the slipping model's Stage B."""
        return frame.twist[0]

    def push_imu(self, t, quat_xyzw, gyro):
        """IMU sample; not used by the prediction, kept for ``imu_residual``."""
        quat = finite_array(quat_xyzw, "quat_xyzw", (1,), last_dim=4)
        gyro = finite_array(gyro, "gyro", (1,), last_dim=3)
        x, y, z, w = quat / np.linalg.norm(quat)
        roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
        pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1, 1))
        self._imu = (float(t), roll, pitch, gyro)

    def advance(self, t):
        """Integrate the held planar twist up to time t [s]."""
        t = float(t)
        if t < self._t - 1e-9:
            raise ValueError(f"t: {t} s is before the predictor's time {self._t} s")
        if t > self._t:
            self._planar = compose(self._planar, se2_exp(self._twist[None], t - self._t)[0])
            self._t = t

    # ---- outputs ----------------------------------------------------------------------------------------
    @property
    def time(self):
        return self._t

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

    def pose(self):
        """4x4 pose of base_link in the world."""
        roll, pitch = self.attitude()
        x, y, yaw = self._planar
        R = _rot(roll, pitch, yaw)
        height = 0.0 if self._frame is None else float(self._frame.height[0])
        g = np.eye(4)
        g[:3, :3] = R
        g[:3, 3] = np.array([x, y, height]) - R @ self._com
        return g

    def twist(self):
        """Body twist of base_link [v (3) m/s, w (3) rad/s] in base_link (quasi-static: planar only)."""
        v = np.array([self._twist[0], self._twist[1], 0.0])
        w = np.array([0.0, 0.0, self._twist[2]])
        return np.concatenate([v - np.cross(w, self._com), w])

    def imu_residual(self):
        """Predicted minus measured (roll, pitch, yaw rate) for the last IMU sample, or None."""
        if self._imu is None:
            return None
        roll, pitch = self.attitude()
        _, r, p, gyro = self._imu
        return np.array([roll - r, pitch - p, self._twist[2] - gyro[2]])

    # ---- whole trajectories at once --------------------------------------------------------------------
    def evaluate_commands(self, t, q, method="prefix"):
        """Offline: all commands (T,) times [s] and (T, n) angles at once, integrated by the SE(2) prefix
        product. Returns ``SlipTrajectory`` (frames and (T + 1, 3) planar poses of the COM) for the current
        morphology, starting from the planar pose at ``reset``. Same twists as feeding the commands one by
        one (with smoothing 0)."""
        t = finite_array(t, "t", (1,))
        q = finite_array(q, "q", (2,))
        if q.shape[0] != t.shape[0]:
            raise ValueError(f"q: {q.shape[0]} commands for {t.shape[0]} times")
        if np.any(np.diff(t) <= 0):
            raise ValueError("t: command times must increase")
        feet = np.array([self._feet(self._joint_vector(qk))[0] for qk in q])
        vel = np.zeros_like(feet)
        vel[1:] = np.diff(feet, axis=0) / np.diff(t)[:, None, None]
        dt = np.append(np.diff(t), 0.0)            # each twist is held until the next command
        return self.slip.trajectory(feet, vel, dt, start=self._planar, present=self._present, method=method)
