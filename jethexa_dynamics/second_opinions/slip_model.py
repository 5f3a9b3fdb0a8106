"""The multi-legged slipping model of Wu, Zhao & Revzen (paper 001) for any number of legs.

Per frame (stateless, quasi-static, inertia-free): foot positions and velocities in the body frame ->
Stage A (``spring_support``): contact set, normal loads, pitch, roll, height;
Stage B (``connection``): planar body velocity, yaw rate and traction forces.
Both stages are per-frame code compiled with numba, one loop over the frames: one frame per call (the
predictor, ~25 us here) and whole trajectories per call run the same code. Trajectories are integrated on
SE(2) (``se2``), sequentially or by the parallel prefix product.

A removed leg simply leaves the list: pass ``present`` (bool per leg) and it is dropped before both stages;
its outputs read 0 / not in contact.
"""
from dataclasses import dataclass

import numpy as np

from . import connection, se2, spring_support
from ._checks import finite_array, per_leg, positive_scalar
from .spring_support import SupportStatus


@dataclass
class SlipFrames:
    """Outputs for T frames (leading axis), legs in the model's order (removed legs: 0 / False).

    pitch, roll [rad] (small-angle slopes, REP-103: pitch > 0 nose down, roll > 0 left side up; extraction
    §1.3), height [m] of the body origin above the ground; loads (T, N) normal forces [units of weight];
    contact (T, N); velocity (T, 2) [m/s] and yaw_rate (T,) [rad/s] in the body frame; forces (T, N, 2)
    planar traction on the robot, body frame; status (T,) SupportStatus; single_contact (T,) bool.
    """
    pitch: np.ndarray
    roll: np.ndarray
    height: np.ndarray
    loads: np.ndarray
    contact: np.ndarray
    velocity: np.ndarray
    yaw_rate: np.ndarray
    forces: np.ndarray
    status: np.ndarray
    single_contact: np.ndarray

    @property
    def tipped(self):
        return self.status == SupportStatus.TIPPED

    @property
    def twist(self):
        """(T, 3) body-frame planar twist (v_x, v_y, omega)."""
        return np.column_stack([self.velocity, self.yaw_rate])


@dataclass
class SlipTrajectory:
    frames: SlipFrames
    poses: np.ndarray       # (T + 1, 3) planar odometry (x [m], y [m], yaw [rad]), world frame


class SlipModel:
    """Slipping model with per-leg parameters.

    n_legs: number of legs N >= 1; stiffness K_j [force/m] (> 0), mu_j [1/(m/s)] (>= 0) and anisotropy
    w_j (N, 2) body frame: scalars or per leg; weight Mg [force] (> 0). Paper values: BigANT Mg = 1,
    multipods Mg = N, K = 1, mu = 1.
    """

    def __init__(self, n_legs, stiffness=1.0, mu=1.0, anisotropy=None, weight=1.0):
        n = int(n_legs)
        if n < 1:
            raise ValueError(f"n_legs: need at least 1 leg, got {n_legs!r}")
        self.n_legs = n
        self.stiffness = np.array(per_leg(stiffness, "stiffness", (1, n), positive=True)[0])
        self.mu = np.array(per_leg(mu, "mu", (1, n), nonnegative=True)[0])
        self.anisotropy = None if anisotropy is None else np.array(np.broadcast_to(
            finite_array(anisotropy, "anisotropy", (1, 2), last_dim=2), (n, 2)))
        self.weight = positive_scalar(weight, "weight")

    def _present(self, present):
        if present is None:
            return np.ones(self.n_legs, bool)
        p = np.asarray(present, bool)
        if p.shape != (self.n_legs,):
            raise ValueError(f"present: expected {self.n_legs} booleans, got shape {p.shape}")
        if not p.any():
            raise ValueError("present: need at least 1 leg")
        return p

    def evaluate(self, feet, feet_velocity, present=None):
        """All frames at once. feet (T, N, 3) [m] and feet_velocity (T, N, 3) or (T, N, 2) [m/s], body
        frame, origin at the COM (a single (N, 3) frame is accepted too)."""
        q = finite_array(feet, "feet", (2, 3), last_dim=3)
        qd = finite_array(feet_velocity, "feet_velocity", (2, 3))
        if q.ndim == 2:
            q, qd = q[None], qd[None] if qd.ndim == 2 else qd
        if q.shape[1] != self.n_legs:
            raise ValueError(f"feet: {q.shape[1]} legs given, the model has {self.n_legs}")
        if qd.shape[:2] != q.shape[:2] or qd.shape[2] not in (2, 3):
            raise ValueError(f"feet_velocity: shape {qd.shape} does not match feet {q.shape}")
        p = self._present(present)
        T, N = q.shape[:2]
        every = p.all()                         # (no gathers / scatters: the healthy robot's common case)
        if not every:
            q, qd = q[:, p], qd[:, p]
        n = q.shape[1]
        # the inputs are checked above: the stages' unchecked entry points (same code as their public ones)
        sup = spring_support._solve(q, np.broadcast_to(self.stiffness[p], (T, n)), self.weight, 4 * n + 10)
        w = np.zeros((T, n, 2)) if self.anisotropy is None else np.broadcast_to(self.anisotropy[p], (T, n, 2))
        con = connection._body_twist(q[..., :2], qd[..., :2], sup.loads * self.mu[p], w)
        loads, contact, forces = sup.loads, sup.contact, con.forces
        if not every:
            loads, contact, forces = np.zeros((T, N)), np.zeros((T, N), bool), np.zeros((T, N, 2))
            loads[:, p], contact[:, p], forces[:, p] = sup.loads, sup.contact, con.forces
        return SlipFrames(sup.pitch, sup.roll, sup.height, loads, contact, con.velocity, con.yaw_rate, forces,
                          sup.status, con.single_contact)

    def trajectory(self, feet, feet_velocity, dt, start=None, present=None, method="prefix"):
        """Evaluate T frames and integrate their body twists on SE(2), each held for dt [s] (scalar or (T,)).
        method: 'prefix' (parallel tree product) or 'sequential'."""
        frames = self.evaluate(feet, feet_velocity, present)
        inc = se2.se2_exp(frames.twist, dt)
        if method == "prefix":
            poses = se2.integrate_prefix(inc, start)
        elif method == "sequential":
            poses = se2.integrate_sequential(inc, start)
        else:
            raise ValueError(f"method: expected 'prefix' or 'sequential', got {method!r}")
        return SlipTrajectory(frames, poses)
