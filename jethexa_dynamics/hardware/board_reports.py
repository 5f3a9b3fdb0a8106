"""The STM32 board's unasked reports (IMU, battery) out of its packet stream, checked; bytes only, no I/O.

The board (today's JetHexa, ``/dev/rrc``) sends, between the replies to the host's servo reads and without being
asked, packets of other functions (:mod:`.rrc`). Their layout is the one Hiwonder's board SDK parses
(``ros_robot_controller_sdk.py``: ``Board.get_imu``, ``Board.get_battery``):

* IMU, function 7: ``struct '<6f'`` = ax, ay, az [g], gx, gy, gz [deg/s], in the axes of the chip on the board
  (a QMI8658). Hiwonder's node converts with x 9.80665 and ``radians()``.
* Battery, function 0 (SYS): ``[0x04, u16 little-endian]`` = the battery's voltage [mV].

:class:`BoardReports` sorts the packets by function and checks each report before it is given out: a packet
with a bad CRC, of a function the host does not know, an IMU report of another length than 24 bytes, a value that
is not finite or lies beyond the QMI8658's largest full scale (no measurement can read there), a battery report
of another layout -- each counted by kind (``counts``) and skipped, never given out. Bus-servo packets (function 5)
are the replies to the host's reads: not reports, left to the caller. Other functions the board sends (keys,
gamepad, SBUS) are counted as ``ignored``.
"""
from __future__ import annotations

import math
import struct
from typing import NamedTuple, Optional, Sequence, Union

import numpy as np

from . import rrc as R
from .mpu6050 import STANDARD_GRAVITY

__all__ = ["ImuReport", "BatteryReport", "BoardReports", "imu_report", "battery_report", "IMU_FORMAT",
           "ACCEL_FULL_SCALE_G", "GYRO_FULL_SCALE_DPS", "BATTERY_SUB", "COUNTERS"]

#: the IMU report's payload (Hiwonder's SDK: ``struct.unpack('<6f', ...)``): ax, ay, az [g], gx, gy, gz [deg/s]
IMU_FORMAT = "<6f"
IMU_SIZE = struct.calcsize(IMU_FORMAT)
#: first byte of a SYS packet that carries the battery voltage (``Board.get_battery``: ``data[0] == 0x04``)
BATTERY_SUB = 0x04
BATTERY_FORMAT = "<BH"
#: the QMI8658's largest full scales (QST data sheets: accelerometer +-2..+-16 g; gyroscope up to +-2048 deg/s in
#: the QMI8658C Rev 0.x sheets, +-1024 deg/s in Rev A): a value beyond them is not a measurement
ACCEL_FULL_SCALE_G = 16.0
GYRO_FULL_SCALE_DPS = 2048.0
#: what :attr:`BoardReports.counts` counts
COUNTERS = ("imu", "battery", "bad_crc", "unknown_function", "short_imu", "bad_imu_values", "bad_battery",
            "ignored")


class ImuReport(NamedTuple):
    """One IMU report: ``t`` the host's receive time [s, the caller's clock], ``accel`` specific force [m/s^2] and
    ``gyro`` body rates [rad/s], both in the chip's axes (the mount is the caller's), ``raw`` the six floats as
    sent (g, deg/s)."""
    t: float
    accel: np.ndarray
    gyro: np.ndarray
    raw: tuple


class BatteryReport(NamedTuple):
    """One battery report: ``t`` the host's receive time [s], ``mv`` the voltage [mV]."""
    t: float
    mv: int


def imu_report(accel_g: Sequence[float], gyro_dps: Sequence[float]) -> bytes:
    """The board's IMU packet for ``accel_g`` [g] and ``gyro_dps`` [deg/s] (chip axes), as the board sends it."""
    return R.encode_packet(R.Func.IMU, struct.pack(IMU_FORMAT, *accel_g, *gyro_dps))


def battery_report(mv: int) -> bytes:
    """The board's battery packet for ``mv`` [mV] (0..65535)."""
    return R.encode_packet(R.Func.SYS, struct.pack(BATTERY_FORMAT, BATTERY_SUB, int(mv)))


class BoardReports:
    """Turns the board's non-servo packets into checked reports; ``counts`` says what came and what was skipped.

    :meth:`feed` takes one parser event (:class:`.rrc.Packet` or :class:`.rrc.BadPacket`) with its receive time and
    returns an :class:`ImuReport`, a :class:`BatteryReport` or None (skipped, counted). ``unknown_function`` is
    added by the caller from the parser (:attr:`.rrc.PacketParser.unknown_functions`: a header with an unknown
    function byte is dropped before it is a packet).
    """

    def __init__(self):
        self.counts = {k: 0 for k in COUNTERS}
        #: the last skipped report, said: what it was and why
        self.last_skipped = ""

    def _skip(self, kind: str, why: str) -> None:
        self.counts[kind] += 1
        self.last_skipped = why

    def feed(self, t: float, event: Union[R.Packet, R.BadPacket]) -> Optional[Union[ImuReport, BatteryReport]]:
        if isinstance(event, R.BadPacket):
            self._skip("bad_crc", "function %d packet with a bad CRC (%s)" % (event.func, event.reason))
            return None
        func, data = event.func, event.data
        if func == R.Func.IMU:
            return self._imu(t, data)
        if func == R.Func.SYS:
            if len(data) == struct.calcsize(BATTERY_FORMAT) and data[0] == BATTERY_SUB:
                self.counts["battery"] += 1
                return BatteryReport(t, struct.unpack(BATTERY_FORMAT, data)[1])
            self._skip("bad_battery", "SYS report %s: expected [0x04, u16 mV]" % data.hex(" "))
            return None
        self.counts["ignored"] += 1
        return None

    def _imu(self, t: float, data: bytes) -> Optional[ImuReport]:
        if len(data) != IMU_SIZE:
            self._skip("short_imu", "IMU report of %d bytes, expected %d ('<6f')" % (len(data), IMU_SIZE))
            return None
        raw = struct.unpack(IMU_FORMAT, data)
        for v, fs, name, unit in zip(raw, (ACCEL_FULL_SCALE_G,) * 3 + (GYRO_FULL_SCALE_DPS,) * 3,
                                     ("ax", "ay", "az", "gx", "gy", "gz"), ("g",) * 3 + ("deg/s",) * 3):
            if not (math.isfinite(v) and abs(v) <= fs):
                self._skip("bad_imu_values", "IMU report %s = %r %s: outside -%g..%g (the QMI8658's full scale)"
                           % (name, v, unit, fs, fs))
                return None
        self.counts["imu"] += 1
        accel = np.array(raw[:3]) * STANDARD_GRAVITY
        gyro = np.radians(np.array(raw[3:]))
        return ImuReport(t, accel, gyro, raw)


def urdf_imu_rotation(path: Optional[str] = None) -> np.ndarray:
    """Rotation (3x3) of the URDF's ``imu_link`` in ``base_link`` (the fixed joint between them; identity if the
    URDF has none), from the bundled URDF by default: the frame the IMU's samples are published in."""
    import xml.etree.ElementTree as ET

    from transforms3d.euler import euler2mat

    from .servo_table import default_urdf_path

    root = ET.parse(path or default_urdf_path()).getroot()
    for joint in root.iter("joint"):
        parent, child = joint.find("parent"), joint.find("child")
        if parent is not None and child is not None and (parent.get("link"), child.get("link")) == (
                "base_link", "imu_link"):
            origin = joint.find("origin")
            rpy = [float(v) for v in (origin.get("rpy", "0 0 0") if origin is not None else "0 0 0").split()]
            return euler2mat(*rpy, "sxyz")
    return np.eye(3)


def chip_to_imu_link(mount_rpy: Sequence[float], urdf_path: Optional[str] = None) -> np.ndarray:
    """The matrix that turns a vector in the IMU chip's axes into the URDF's ``imu_link``: the chip's mount in
    ``base_link`` (``mount_rpy``, roll pitch yaw as a URDF origin [rad]) followed by base_link -> imu_link."""
    from .joint_map import mount_rotation

    return urdf_imu_rotation(urdf_path).T @ mount_rotation(mount_rpy)
