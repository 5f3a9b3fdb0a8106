"""Hardware layer of the JetHexa: Hiwonder bus servos and the MPU6050, with device emulators.

No rclpy here (the nodes wrap these classes). Typical use::

    from jethexa_dynamics.hardware import DirectUartBus, JointServoBus, load_servo_table
    joints = JointServoBus(DirectUartBus("/dev/ttyTHS1", gpio="jetson"), load_servo_table())
    joints.command({"femur_joint_LF": 0.3}, duration_s=0.2)
    readings = joints.tick()          # a few position/voltage/temperature reads
    joints.close()                    # unloads every servo

See docs/hardware.md.
"""
from .bus import BROADCAST_ID, DirectUartBus, RrcBoardBus, ServoBus, open_bus
from .emulator import FAULT_KINDS, BusEmulator, EmulatedServo, FaultSpec, parse_faults
from .errors import (BusClosedError, BusIOError, ChecksumError, EmergencyStopActive, FrameError, HardwareError,
                     ImuCalibrationError, ImuDisconnectedError, ImuError, ImuNotFoundError, ImuStuckError,
                     JointLimitError, ParameterError, ServoError, ServoFault, ServoTimeout, UnsupportedCommand)
from .imu_filter import MadgwickFilter, quat_from_accel
from .joints import JointReadings, JointServoBus, ServoHealth
from .mpu6050 import ImuSample, Mpu6050, Mpu6050Config, axis_remap_matrix
from .mpu6050_emulator import Mpu6050Emulator, constant_rotation, static_motion
from .servo_table import ServoSpec, ServoTable, default_config_path, load_servo_table, urdf_joint_limits

__all__ = [
    "BROADCAST_ID", "DirectUartBus", "RrcBoardBus", "ServoBus", "open_bus",
    "FAULT_KINDS", "BusEmulator", "EmulatedServo", "FaultSpec", "parse_faults",
    "BusClosedError", "BusIOError", "ChecksumError", "EmergencyStopActive", "FrameError", "HardwareError",
    "ImuCalibrationError",
    "ImuDisconnectedError", "ImuError", "ImuNotFoundError", "ImuStuckError", "JointLimitError", "ParameterError",
    "ServoError", "ServoFault", "ServoTimeout", "UnsupportedCommand",
    "MadgwickFilter", "quat_from_accel",
    "JointReadings", "JointServoBus", "ServoHealth",
    "ImuSample", "Mpu6050", "Mpu6050Config", "axis_remap_matrix",
    "Mpu6050Emulator", "constant_rotation", "static_motion",
    "ServoSpec", "ServoTable", "default_config_path", "load_servo_table", "urdf_joint_limits",
]
