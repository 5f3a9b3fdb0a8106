"""Predictors: models that turn joint commands (and measurements to re-anchor on) into a predicted pose.

- :mod:`.base`              the interface every predictor offers and the plumbing they share;
- :mod:`.boltzmann_hamel`   the modular whole-body model (paper 003) with contact: ``BoltzmannHamelPredictor``;
- :mod:`.slip`              the slipping model (paper 001): ``SlipPredictor``;
- :mod:`.newton_euler`      recursive Newton-Euler (paper 004): ``NewtonEulerPredictor``;
- :mod:`.registry`          predictors by name (``make_predictor``, ``predictor_names``);
- :mod:`.error_metric`      the prediction error (predicted minus measured pose), live and offline.

No rclpy here. Nothing is imported eagerly (the Boltzmann-Hamel predictor loads compiled kernels).
"""
