"""jethexa_dynamics: fast modular whole-body dynamics of the Hiwonder JetHexa hexapod.

Subpackages (none of them imports rclpy, except ``nodes``):

- ``model``    Boltzmann-Hamel equations on SE(3) with screw theory (Farghdani et al., paper 003).
- ``control``  gait generator, inverse kinematics, joint PID.
- ``sim``      simulation engine (contact, integration, damage scenarios).
- ``hardware`` Hiwonder bus-servo and MPU6050 drivers, and their device emulators.
- ``nodes``    thin ROS 2 wrappers.
"""

__version__ = "0.1.0"

# Before any @njit module is imported: a numba cache directory keyed on these sources (kernel_cache.py).
from jethexa_dynamics import kernel_cache as _kernel_cache  # noqa: E402

_kernel_cache.configure()
