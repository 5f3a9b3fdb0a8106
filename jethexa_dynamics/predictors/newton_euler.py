"""Newton-Euler predictor: paper 004's formulation on the JetHexa, from commanded joint angles.

Paper 004 takes the joint angles as generalized coordinates and derives the body's attitude, velocity and
acceleration from the stance legs' joint trajectories; the recursive Newton-Euler inverse dynamics with the
ground-reaction resolution then gives joint torques and foot forces. Here, per joint command:

1. stance set, roll, pitch and height from the spring-support stage (as the slip predictor: the gait phase
   enters only through the commanded foot heights);
2. joint rates and accelerations by finite differences of the commands;
3. body twist (v, w) such that the stance feet do not move on the ground: v + w x p_k + pdot_k = 0 for every
   stance foot k, by SVD least squares with a rank check (two stance feet leave the roll about their line
   free: rank 5, minimum-norm answer, flagged); body acceleration by differencing the twist;
4. ``contact_inverse_dynamics`` on the RNEA chains (independent of the core model): ground forces (rank
   checked) and joint torques, available as ``joint_torques()`` and ``ground_reactions()``.

The planar part of the twist of the centre of mass is integrated on SE(2) like the slip predictor.
"""
import numpy as np

from jethexa_dynamics.second_opinions.ground_reactions import contact_inverse_dynamics
from jethexa_dynamics.second_opinions.rnea import NewtonEulerRobot

from .slip import SlipPredictor


def _hat(p):
    z = np.zeros(len(p))
    return np.stack([np.stack([z, -p[:, 2], p[:, 1]], -1), np.stack([p[:, 2], z, -p[:, 0]], -1),
                     np.stack([-p[:, 1], p[:, 0], z], -1)], -2)


class NewtonEulerPredictor(SlipPredictor):
    """Same interface as ``SlipPredictor``; ``scheme`` = ground-reaction unknowns ('full' = all three
    components of every stance foot, minimum norm; 'paper' = the paper's reduced sets)."""

    name = "newton_euler"

    def __init__(self, robot=None, morphology=None, reanchor_horizon=2.0, stiffness=5000.0, scheme="full"):
        if scheme not in ("full", "paper"):
            raise ValueError(f"scheme: expected 'full' or 'paper', got {scheme!r}")
        self.scheme = scheme
        self._ne_full = None
        super().__init__(robot, morphology, reanchor_horizon, stiffness)
        self._ne_full = NewtonEulerRobot.from_urdf(self.full.urdf_path)
        self.set_morphology(self._initial_morphology)

    def set_morphology(self, morphology, t=None):
        super().set_morphology(morphology, t)
        if self._ne_full is not None:
            self.dynamics = self._ne_full.with_morphology(self.robot.morphology.links_per_leg)
        self._qd_prev = self._body_prev = self._tau = self._grf = None
        self.twist_rank = 0

    def _planar_twist(self, t, q, com, feet_velocity, frame, dt):
        stance = frame.contact[0][self._tip_rows]
        qd = np.zeros_like(q) if dt is None else (q - self._q_prev) / dt
        qdd = np.zeros_like(q) if dt is None or self._qd_prev is None else (qd - self._qd_prev) / dt
        # rigid body motion that keeps the stance feet still: [I, -hat(p_k)] (v, w) = -pdot_k
        p = self.dynamics.tip_poses(q)[stance, :3, 3]
        pdot = feet_velocity[self._tip_rows][stance]
        A = np.concatenate([np.broadcast_to(np.eye(3), (len(p), 3, 3)), -_hat(p)], axis=2).reshape(-1, 6)
        body, _, self.twist_rank, _ = np.linalg.lstsq(A, -pdot.ravel(), rcond=1e-10) if len(p) else (
            np.zeros(6), None, 0, None)
        acc = np.zeros(6) if dt is None or self._body_prev is None else (body - self._body_prev) / dt
        self._tau, self._grf = contact_inverse_dynamics(self.dynamics, self.pose_matrix, q, np.r_[body, qd],
                                                        np.r_[acc, qdd], stance, self.scheme)
        self._q_prev, self._qd_prev, self._body_prev = q, qd, body
        v_com = body[:3] + np.cross(body[3:], com)
        return np.array([v_com[0], v_com[1], body[5]])

    def joint_torques(self):
        """Predicted joint torques [N m] (current morphology's joint order) for the last command, or None."""
        return None if self._tau is None else self._tau[6:].copy()

    def ground_reactions(self):
        """``GroundReactions`` of the last command (forces [N] on the stance feet, world axes; rank; residual;
        message), or None."""
        return self._grf
