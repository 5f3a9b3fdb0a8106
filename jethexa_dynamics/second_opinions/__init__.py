"""Second-opinion models next to the modular Boltzmann-Hamel model (GitHub issue #7). No rclpy here.

- slipping model of Wu, Zhao & Revzen (paper 001): :mod:`.spring_support` (Stage A), :mod:`.connection`
  (Stage B), :mod:`.se2` (sequential and parallel-prefix integration), :class:`.slip_model.SlipModel` (any number of
  legs), :mod:`.multipod` (multipod and disk foot kinematics);
- recursive Newton-Euler of Sureshkumar et al. (paper 004): :class:`.rnea.NewtonEulerRobot`
  (own chains from the URDF, Walker-Orin M/C/G, forward dynamics), :mod:`.ground_reactions` (the paper's
  ground-reaction resolution with a rank check).

Their predictors (``SlipPredictor``, ``NewtonEulerPredictor``) are in :mod:`jethexa_dynamics.predictors`.
"""
