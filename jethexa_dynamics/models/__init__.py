"""Second-opinion models next to the modular Boltzmann-Hamel model (GitHub issue #7).

- slipping model of Wu, Zhao & Revzen (paper 001): :mod:`.spring_support` (Stage A), :mod:`.connection`
  (Stage B), :mod:`.se2` (sequential and parallel-prefix integration), :class:`.slip.SlipModel` (any number of
  legs), :mod:`.multipod` (multipod and disk foot kinematics), :class:`.slip_predictor.SlipPredictor`;
- recursive Newton-Euler of Sureshkumar et al. (paper 004): :class:`.newton_euler.NewtonEulerRobot`
  (own chains from the URDF, Walker-Orin M/C/G, forward dynamics), :mod:`.ground_reactions` (the paper's
  ground-reaction resolution with a rank check), :class:`.ne_predictor.NewtonEulerPredictor`.

``PREDICTORS`` maps a predictor name to its class; all take an optional core ``LeggedRobot`` and share
``reset, anchor, set_morphology, push_joint_command, push_imu, advance, pose, twist``. No rclpy here.
"""
from .ne_predictor import NewtonEulerPredictor
from .slip_predictor import SlipPredictor

PREDICTORS = {"slip": SlipPredictor, "newton_euler": NewtonEulerPredictor}

__all__ = ["PREDICTORS", "SlipPredictor", "NewtonEulerPredictor"]
