"""Hardware layer of the JetHexa: Hiwonder bus servos and the MPU6050, with device emulators.

No rclpy here (the nodes wrap these classes). Typical use::

    from jethexa_dynamics.hardware import DirectUartBus, JointServoBus, load_servo_table
    joints = JointServoBus(DirectUartBus("/dev/ttyTHS1", gpio="jetson"), load_servo_table())
    joints.command({"femur_joint_LF": 0.3}, duration_s=0.2)
    readings = joints.tick()          # a few position/voltage/temperature reads
    joints.close()                    # unloads every servo

Modules:

- :mod:`.protocol` (0x55 0x55 servo frames), :mod:`.rrc` (the STM32 board's packets), :mod:`.board_reports` (the
  board's unasked IMU and battery reports, checked): bytes only, no I/O.
- :mod:`.bus` -- the transports (direct UART, RRC board); :mod:`.joints` -- radians in URDF order on top of them;
  :mod:`.servo_table` -- IDs, directions, offsets, limits, rad <-> ticks; :mod:`.errors` -- the typed errors.
- Servo-bus emulator: :mod:`.emulator` (``BusEmulator``, the simulation's and tests' side) built from
  :mod:`.servo_model` (one emulated servo), :mod:`.servo_dispatch` and :mod:`.rrc_dispatch` (the two protocols'
  device side), :mod:`.pty_transport` (the pty and its thread) and :mod:`.servo_faults` (injected faults);
  :mod:`.emulator_cli` -- ``jethexa-bus-emulator``.
- :mod:`.mpu6050` (driver), :mod:`.imu_filter` (Madgwick), :mod:`.mpu6050_emulator` (SMBus register model).

See docs/hardware.md. The names below load their module on first use (PEP 562): a module that needs only
a constant of the protocol does not pay for pyserial, the emulators and the servo table.
"""
import importlib

_MODULES = {
    "bus": ("BROADCAST_ID", "DirectUartBus", "RrcBoardBus", "ServoBus", "open_bus"),
    "emulator": ("BusEmulator",),
    "errors": ("BusClosedError", "BusIOError", "ChecksumError", "EmergencyStopActive", "FrameError", "HardwareError",
               "ImuCalibrationError", "ImuDisconnectedError", "ImuError", "ImuNotFoundError", "ImuStuckError",
               "JointLimitError", "ParameterError", "ServoError", "ServoFault", "ServoTimeout", "UnsupportedCommand"),
    "imu_filter": ("MadgwickFilter", "quat_from_accel"),
    "joints": ("JointReadings", "JointServoBus", "ServoHealth"),
    "mpu6050": ("ImuSample", "Mpu6050", "Mpu6050Config", "axis_remap_matrix"),
    "mpu6050_emulator": ("Mpu6050Emulator", "constant_rotation", "static_motion"),
    "protocol": ("MAX_MOVE_TIME_MS", "MAX_MOVE_TIME_S"),
    "servo_faults": ("FAULT_KINDS", "FaultSpec", "parse_faults"),
    "servo_model": ("EmulatedServo",),
    "servo_table": ("ServoSpec", "ServoTable", "default_config_path", "load_servo_table", "urdf_joint_limits"),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}
__all__ = list(_WHERE)


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
