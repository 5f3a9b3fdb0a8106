"""jethexa_dynamics: fast modular whole-body dynamics of the Hiwonder JetHexa hexapod.

Subpackages (none of them imports rclpy, except the node modules of ``nodes`` and ``demo``):

- ``model``           Boltzmann-Hamel equations on SE(3) with screw theory (Farghdani et al., paper 003),
                      ``LeggedRobot`` and ``Morphology`` (``Morphology.parse``: every morphology spec).
- ``control``         gait generator, the gait controller's walking gait, inverse kinematics, joint PID.
- ``sim``             simulation engine (contact, integration, damage scenarios), ``jethexa-sim``.
- ``predictors``      the predictor interface, the Boltzmann-Hamel, slip and Newton-Euler predictors, their
                      registry and the prediction error (live and offline).
- ``second_opinions`` the other papers' models: slipping model (paper 001), recursive Newton-Euler (paper 004).
- ``damage``          damage detection from servo health.
- ``hardware``        Hiwonder bus-servo and MPU6050 drivers, and their device emulators.
- ``validation``      rosbag I/O, replay through a predictor, metrics, ``jethexa-validate``.
- ``nodes``           thin ROS 2 wrappers; their parameter specs and message checks (importable without rclpy).
"""

__version__ = "0.1.0"
