"""jethexa_dynamics: fast modular whole-body dynamics of the Hiwonder JetHexa hexapod.

Layers, lowest first: no import, at module level or inside a function, runs from a layer to a higher one
(``test/test_layers.py`` reads these two lines and the imports of every module):

    cli_args errors kernel_cache stack worker < model < second_opinions < hardware < control < sim < predictors
    < validation < damage < warmup < nodes < demo

Subpackages (rclpy only in the node modules of ``nodes`` and in ``demo``):

- ``model``           paper 003's Boltzmann-Hamel model on SE(3): ``LeggedRobot``, ``Morphology`` (``.parse``), the
                      paper's damage scenarios.
- ``control``         gait generator, the gait controller's walking gait, inverse kinematics, joint PID.
- ``sim``             simulation engine (contact, integration), ``jethexa-sim``.
- ``predictors``      predictor protocol and plumbing; Boltzmann-Hamel, slip, Newton-Euler; registry; error.
- ``second_opinions`` the other papers' models: slipping model (paper 001), recursive Newton-Euler (paper 004).
- ``damage``          what changed on the robot: servo and joint_states evidence, the model's identification.
- ``hardware``        Hiwonder bus-servo and MPU6050 drivers, and their device emulators.
- ``validation``      rosbag I/O, replay through a predictor, metrics, ``jethexa-validate``.
- ``nodes``           thin ROS 2 nodes; their parameter specs and message checks (importable without rclpy).

Modules: ``errors`` (the input-error types every layer raises), ``worker`` (the background worker thread and its
error policy), ``demo`` (``jethexa-demo``), ``warmup``
(compiles the numba kernels into the cache), ``stack`` (the Python/numpy/numba the kernels run with; numpy 2 beside
a ROS build made for numpy 1).
"""

__version__ = "0.1.0"

# Before any @njit module is imported: a numba cache directory keyed on these sources (kernel_cache.py).
from jethexa_dynamics import kernel_cache as _kernel_cache  # noqa: E402

_kernel_cache.configure()
