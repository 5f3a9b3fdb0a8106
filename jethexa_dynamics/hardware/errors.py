"""Typed errors of the hardware layer.

Every error names what failed (servo ID, joint, field, register) and, for bad input, the allowed range,
so a ROS node can put it straight into a log line or a diagnostic status.
"""
from __future__ import annotations

from typing import Optional

__all__ = [
    "HardwareError",
    "ParameterError",
    "JointLimitError",
    "ServoError",
    "ServoTimeout",
    "ChecksumError",
    "FrameError",
    "ServoFault",
    "UnsupportedCommand",
    "BusClosedError",
    "BusIOError",
    "EmergencyStopActive",
    "ImuError",
    "ImuNotFoundError",
    "ImuDisconnectedError",
    "ImuStuckError",
    "ImuCalibrationError",
    "LED_ALARM_BIT_NAMES",
    "led_alarm_names",
    "measured_faults",
]

#: Bits of the LED alarm *setting* (LED_ERROR_WRITE/READ, cmd 35/36, reference §1.2): which conditions make
#: the servo's LED flash. 36 reads back what 35 wrote; it is a configuration, never an active fault.
LED_ALARM_BIT_NAMES = {1: "over-temperature", 2: "over-voltage", 4: "locked rotor"}


def led_alarm_names(bits: int) -> list:
    """Conditions enabled by an LED alarm setting, e.g. ``5`` -> ``['over-temperature', 'locked rotor']``."""
    names = [name for bit, name in LED_ALARM_BIT_NAMES.items() if bits & bit]
    unknown = bits & ~0x07
    if unknown:
        names.append("unknown bits 0x%02X" % unknown)
    return names


def measured_faults(temperature_c: float, temp_limit_c: float, vin_mv: float, vin_min_mv: float,
                    vin_max_mv: float) -> list:
    """Faults a servo's own measurements show against its own limits (reference §1.2, cmd 23/25/26/27).

    ``temperature_c`` (TEMP_READ) >= ``temp_limit_c`` (TEMP_MAX_LIMIT_READ) -> ``over-temperature``;
    ``vin_mv`` (VIN_READ) above / below the VIN_LIMIT_READ range [``vin_min_mv``, ``vin_max_mv``] ->
    ``over-voltage`` / ``under-voltage``. NaN (not read yet) never makes a fault. Stall is not decided here:
    it is a persistent position error under load (``damage.detection.DamageDetector``).
    """
    out = []
    if temperature_c >= temp_limit_c:        # False when either is NaN
        out.append("over-temperature")
    if vin_mv > vin_max_mv:
        out.append("over-voltage")
    if vin_mv < vin_min_mv:
        out.append("under-voltage")
    return out


class HardwareError(Exception):
    """Base class of everything raised by :mod:`jethexa_dynamics.hardware`."""


class ParameterError(HardwareError, ValueError):
    """A command parameter is outside the range the protocol or device allows."""

    def __init__(self, field: str, value, lo=None, hi=None, detail: str = ""):
        self.field, self.value, self.lo, self.hi = field, value, lo, hi
        rng = "" if lo is None and hi is None else " (allowed %s..%s)" % (lo, hi)
        super().__init__("%s = %r is out of range%s%s" % (field, value, rng, (": " + detail) if detail else ""))


class JointLimitError(ParameterError):
    """A joint command is non-finite or outside the joint's limits [lo, hi] (rad). Raised before any byte is sent."""

    def __init__(self, joint: str, value: float, lo: float, hi: float, detail: str = ""):
        self.joint = joint
        super().__init__("joint %s position [rad]" % joint, value, "%.4f" % lo, "%.4f" % hi, detail)
        self.lo, self.hi = lo, hi


class ServoError(HardwareError):
    """A transaction with one servo failed. ``servo_id`` and ``joint`` (if known) name the servo."""

    def __init__(self, servo_id: Optional[int], message: str, joint: Optional[str] = None,
                 command: Optional[str] = None):
        self.servo_id, self.joint, self.command = servo_id, joint, command
        who = "servo %s" % servo_id if servo_id is not None else "servo bus"
        if joint:
            who += " (%s)" % joint
        if command:
            who += " %s" % command
        super().__init__("%s: %s" % (who, message))

    def with_joint(self, joint: str) -> "ServoError":
        """Return a copy of this error that also names the joint (the bus layer only knows IDs)."""
        err = self.__class__.__new__(self.__class__)
        err.__dict__.update(self.__dict__)
        err.joint = joint
        err.args = (str(self.args[0]).replace("servo %s" % self.servo_id,
                                              "servo %s (%s)" % (self.servo_id, joint), 1),)
        return err


class ServoTimeout(ServoError):
    """No (complete) reply within the reply timeout: servo absent, unpowered, wrong ID or bytes lost."""


class ChecksumError(ServoError):
    """A reply arrived but its checksum (0x55 protocol) or CRC-8 (RRC board) did not match."""


class FrameError(ServoError):
    """A reply had a valid checksum but an unexpected length or content for the request."""


class UnsupportedCommand(ServoError):
    """The transport cannot carry this command (e.g. LED_ERROR_WRITE through the RRC board)."""


class ServoFault(ServoError):
    """A servo's measurement is outside its own limits (:func:`measured_faults`): ``faults`` names them
    (``over-temperature``, ``over-voltage``, ``under-voltage``), ``detail`` gives the values."""

    def __init__(self, servo_id: int, joint: Optional[str], faults, detail: str = ""):
        self.faults = list(faults)
        super().__init__(servo_id, ", ".join(self.faults) + (" (%s)" % detail if detail else ""), joint=joint)


class BusClosedError(HardwareError):
    """The bus (or joint layer) was used after :meth:`close`."""


class BusIOError(HardwareError):
    """The serial port itself failed (cannot open, device unplugged, pty closed): no servo can be reached."""


class EmergencyStopActive(HardwareError):
    """Motion commands are refused until :meth:`JointServoBus.reset_emergency_stop` is called."""


class ImuError(HardwareError):
    """Base class of MPU6050 errors."""


class ImuNotFoundError(ImuError):
    """WHO_AM_I did not return an accepted value (wrong address, wrong chip, nothing on the bus)."""


class ImuDisconnectedError(ImuError):
    """I2C transfers keep failing (NACK/EIO): the sensor is unplugged or unpowered."""


class ImuStuckError(ImuError):
    """The sensor returns bit-identical samples: frozen, reset into sleep mode, or a stuck bus."""


class ImuCalibrationError(ImuError):
    """Gyro bias calibration failed because the robot was not at rest."""
