"""jethexa_dynamics: fast modular whole-body dynamics of the Hiwonder JetHexa hexapod.

Subpackages (none of them imports rclpy, except ``nodes``):

- ``model``    Boltzmann-Hamel equations on SE(3) with screw theory (Farghdani et al., paper 003).
- ``control``  gait generator, inverse kinematics, joint PID.
- ``sim``      simulation engine (contact, integration, damage scenarios).
- ``hardware`` Hiwonder bus-servo and MPU6050 drivers, and their device emulators.
- ``nodes``    thin ROS 2 wrappers.
"""

__version__ = "0.1.0"
