"""MPU6050 driver over any object with the ``smbus2.SMBus`` interface (the real bus or :class:`Mpu6050Emulator`).

Register facts: InvenSense RM-MPU-6000A rev 4.2 (reference anchors_hardware_ros.md §3.2). Output in SI and in
the robot's body frame (REP-103: x forward, y left, z up): accelerometer = specific force [m/s^2] (+g on z at
rest, gravity not removed), gyro [rad/s], temperature [deg C]. The JetHexa's chip is mounted rotated 90 deg
about z: body x = -chip y, body y = chip x, body z = chip z (Hiwonder's imu_node), the default ``axis_remap``.
"""
from __future__ import annotations

import logging
import math
import struct
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from .errors import (ImuCalibrationError, ImuDisconnectedError, ImuError, ImuNotFoundError, ImuStuckError,
                     ParameterError)

__all__ = ["Reg", "Mpu6050Config", "ImuSample", "Mpu6050", "axis_remap_matrix", "ACCEL_LSB_PER_G",
           "GYRO_LSB_PER_DPS", "STANDARD_GRAVITY"]

log = logging.getLogger(__name__)

STANDARD_GRAVITY = 9.80665  # the datasheet's g (LSB/g sensitivities)


class Reg:
    """Register addresses."""

    SMPLRT_DIV = 0x19
    CONFIG = 0x1A
    GYRO_CONFIG = 0x1B
    ACCEL_CONFIG = 0x1C
    INT_ENABLE = 0x38
    ACCEL_XOUT_H = 0x3B
    TEMP_OUT_H = 0x41
    GYRO_XOUT_H = 0x43
    USER_CTRL = 0x6A
    PWR_MGMT_1 = 0x6B
    PWR_MGMT_2 = 0x6C
    WHO_AM_I = 0x75


#: full-scale range -> sensitivity (AFS_SEL / FS_SEL = index)
ACCEL_LSB_PER_G = {2: 16384.0, 4: 8192.0, 8: 4096.0, 16: 2048.0}
GYRO_LSB_PER_DPS = {250: 131.0, 500: 65.5, 1000: 32.8, 2000: 16.4}
_AXES = {"x": 0, "y": 1, "z": 2}


def axis_remap_matrix(spec: Sequence[str]) -> np.ndarray:
    """3x3 matrix M with body = M @ chip from e.g. ``("-y", "x", "z")`` (body x = -chip y, ...).

    Must be a proper rotation (a signed permutation with determinant +1), else :class:`ParameterError`.
    """
    if len(spec) != 3:
        raise ParameterError("axis_remap", spec, detail="three entries like ('-y', 'x', 'z')")
    m = np.zeros((3, 3))
    for i, s in enumerate(spec):
        s = str(s).strip().lower()
        sign = -1.0 if s.startswith("-") else 1.0
        ax = s.lstrip("+-")
        if ax not in _AXES:
            raise ParameterError("axis_remap[%d]" % i, s, detail="expected x, y, z with optional sign")
        m[i, _AXES[ax]] = sign
    if abs(np.linalg.det(m) - 1.0) > 1e-9:
        raise ParameterError("axis_remap", tuple(spec), detail="not a rotation (axes repeated or mirrored)")
    return m


@dataclass(frozen=True)
class Mpu6050Config:
    """Driver settings (defaults for a 50-100 Hz predictor on the JetHexa).

    ``accel_range_g`` 2/4/8/16, ``gyro_range_dps`` 250/500/1000/2000, ``dlpf_cfg`` 0..6 (3 = 44 Hz, 4.9 ms
    delay), ``sample_rate_div`` 0..255 (rate = 1 kHz / (1 + div) with the DLPF on), ``axis_remap`` body from
    chip axes, ``stuck_samples`` identical bursts that mean a frozen sensor (None = off), ``i2c_retries``
    per transfer before :class:`ImuDisconnectedError`.
    """

    address: int = 0x68
    accel_range_g: int = 4
    gyro_range_dps: int = 500
    dlpf_cfg: int = 3
    sample_rate_div: int = 9
    axis_remap: Tuple[str, str, str] = ("-y", "x", "z")
    accepted_who_am_i: Tuple[int, ...] = (0x68,)
    stuck_samples: Optional[int] = 25
    i2c_retries: int = 2
    reset_delay_s: float = 0.1

    def __post_init__(self):
        if self.address not in (0x68, 0x69):
            raise ParameterError("address", hex(self.address) if isinstance(self.address, int) else self.address,
                                 "0x68", "0x69")
        if self.accel_range_g not in ACCEL_LSB_PER_G:
            raise ParameterError("accel_range_g", self.accel_range_g, detail="one of 2, 4, 8, 16")
        if self.gyro_range_dps not in GYRO_LSB_PER_DPS:
            raise ParameterError("gyro_range_dps", self.gyro_range_dps, detail="one of 250, 500, 1000, 2000")
        if not 0 <= self.dlpf_cfg <= 6:
            raise ParameterError("dlpf_cfg", self.dlpf_cfg, 0, 6)
        if not 0 <= self.sample_rate_div <= 255:
            raise ParameterError("sample_rate_div", self.sample_rate_div, 0, 255)
        if self.stuck_samples is not None and self.stuck_samples < 2:
            raise ParameterError("stuck_samples", self.stuck_samples, 2, None)
        if self.i2c_retries < 0:
            raise ParameterError("i2c_retries", self.i2c_retries, 0, None)
        axis_remap_matrix(self.axis_remap)

    @property
    def sample_rate_hz(self) -> float:
        base = 8000.0 if self.dlpf_cfg in (0, 7) else 1000.0
        return base / (1 + self.sample_rate_div)


@dataclass
class ImuSample:
    """One reading in the body frame: ``accel`` specific force [m/s^2], ``gyro`` [rad/s] (bias removed),
    ``temperature`` [deg C], ``stamp`` (driver clock, s), ``raw`` the seven int16 chip values."""

    stamp: float
    accel: np.ndarray
    gyro: np.ndarray
    temperature: float
    raw: Tuple[int, ...] = field(default=())


class Mpu6050:
    """MPU6050 on an SMBus-like ``bus`` (``read_byte_data``, ``write_byte_data``, ``read_i2c_block_data``).

    Call :meth:`initialize` once, then :meth:`read` at the sample rate. Errors: :class:`ImuNotFoundError`
    (WHO_AM_I), :class:`ImuDisconnectedError` (I2C keeps failing), :class:`ImuStuckError` (frozen data).
    """

    def __init__(self, bus, config: Optional[Mpu6050Config] = None, time_fn: Callable[[], float] = time.monotonic,
                 sleep_fn: Callable[[float], None] = time.sleep):
        self.bus = bus
        self.config = config or Mpu6050Config()
        self.time_fn, self.sleep_fn = time_fn, sleep_fn
        self._remap = axis_remap_matrix(self.config.axis_remap)
        self._accel_scale = STANDARD_GRAVITY / ACCEL_LSB_PER_G[self.config.accel_range_g]
        self._gyro_scale = math.radians(1.0) / GYRO_LSB_PER_DPS[self.config.gyro_range_dps]
        self.gyro_bias = np.zeros(3)
        self._last_block: Optional[bytes] = None
        self._same = 0
        #: consecutive failed I2C transfers (0 when healthy)
        self.i2c_failures = 0
        self.initialized = False

    # -- I2C with retries -------------------------------------------------------------------------------
    def _xfer(self, what: str, fn, *args):
        last = None
        for _ in range(self.config.i2c_retries + 1):
            try:
                out = fn(self.config.address, *args)
                self.i2c_failures = 0
                return out
            except OSError as exc:  # smbus2 reports NACK / bus errors as OSError (EREMOTEIO, EIO, ETIMEDOUT)
                last = exc
                self.i2c_failures += 1
        raise ImuDisconnectedError("MPU6050 at 0x%02X: %s failed %d times: %s"
                                   % (self.config.address, what, self.config.i2c_retries + 1, last))

    def _read_byte(self, reg: int) -> int:
        return self._xfer("read of register 0x%02X" % reg, self.bus.read_byte_data, reg)

    def _write_byte(self, reg: int, value: int) -> None:
        self._xfer("write of register 0x%02X" % reg, self.bus.write_byte_data, reg, value)

    # -- setup ------------------------------------------------------------------------------------------
    def who_am_i(self) -> int:
        return self._read_byte(Reg.WHO_AM_I)

    def initialize(self) -> None:
        """Check WHO_AM_I, reset, wake (PLL on gyro X), set sample rate, DLPF and ranges, verify them."""
        c = self.config
        who = self.who_am_i()
        if who not in c.accepted_who_am_i:
            raise ImuNotFoundError("MPU6050 at 0x%02X: WHO_AM_I = 0x%02X, expected %s (wrong chip or address)"
                                   % (c.address, who, " or ".join("0x%02X" % w for w in c.accepted_who_am_i)))
        self._write_byte(Reg.PWR_MGMT_1, 0x80)  # device reset
        self.sleep_fn(c.reset_delay_s)
        self._write_byte(Reg.PWR_MGMT_1, 0x01)  # wake up, clock = PLL with X gyro (datasheet recommendation)
        wanted = [
            (Reg.SMPLRT_DIV, c.sample_rate_div),
            (Reg.CONFIG, c.dlpf_cfg),
            (Reg.GYRO_CONFIG, sorted(GYRO_LSB_PER_DPS).index(c.gyro_range_dps) << 3),
            (Reg.ACCEL_CONFIG, sorted(ACCEL_LSB_PER_G).index(c.accel_range_g) << 3),
        ]
        for reg, val in wanted:
            self._write_byte(reg, val)
        for reg, val in wanted + [(Reg.PWR_MGMT_1, 0x01)]:
            got = self._read_byte(reg)
            if got != val:
                raise ImuError("MPU6050 at 0x%02X: register 0x%02X reads 0x%02X after writing 0x%02X"
                               % (c.address, reg, got, val))
        self._last_block, self._same = None, 0
        self.initialized = True

    # -- data -------------------------------------------------------------------------------------------
    def read_raw(self) -> Tuple[int, ...]:
        """Burst-read ACCEL_XOUT_H..GYRO_ZOUT_L (14 bytes): ax, ay, az, temp, gx, gy, gz as int16 (chip axes)."""
        block = bytes(self._xfer("14-byte burst read at 0x3B", self.bus.read_i2c_block_data, Reg.ACCEL_XOUT_H, 14))
        if len(block) != 14:
            raise ImuError("MPU6050 at 0x%02X: burst read returned %d bytes, expected 14"
                           % (self.config.address, len(block)))
        if block == self._last_block:
            self._same += 1
        else:
            self._same = 0
        self._last_block = block
        n = self.config.stuck_samples
        if n is not None and self._same >= n - 1:
            raise ImuStuckError("MPU6050 at 0x%02X: %d identical samples in a row (frozen, reset into sleep, or "
                                "stuck bus); re-initialize" % (self.config.address, self._same + 1))
        return struct.unpack(">7h", block)

    @property
    def stuck(self) -> bool:
        n = self.config.stuck_samples
        return n is not None and self._same >= n - 1

    def convert(self, raw: Sequence[int]) -> Tuple[np.ndarray, np.ndarray, float]:
        """Raw chip values -> (accel body [m/s^2], gyro body [rad/s] without bias removal, temperature [deg C])."""
        accel = self._remap @ (np.asarray(raw[0:3], dtype=float) * self._accel_scale)
        gyro = self._remap @ (np.asarray(raw[4:7], dtype=float) * self._gyro_scale)
        return accel, gyro, raw[3] / 340.0 + 36.53

    def read(self) -> ImuSample:
        """One sample in SI units, body frame, gyro bias removed."""
        stamp = self.time_fn()
        raw = self.read_raw()
        accel, gyro, temp = self.convert(raw)
        return ImuSample(stamp, accel, gyro - self.gyro_bias, temp, tuple(raw))

    def calibrate_gyro(self, samples: int = 200, period_s: float = 0.01, max_rate_std: float = math.radians(0.5),
                       max_accel_dev: float = 0.5) -> np.ndarray:
        """Average the gyro over ``samples`` reads at rest and store it as :attr:`gyro_bias` [rad/s, body].

        Raises :class:`ImuCalibrationError` if the robot moved (gyro std above ``max_rate_std`` rad/s, or the
        acceleration norm deviating from g by more than ``max_accel_dev`` m/s^2).
        """
        if samples < 10:
            raise ParameterError("samples", samples, 10, None)
        g, a = [], []
        for i in range(samples):
            raw = self.read_raw()
            acc, gyr, _ = self.convert(raw)
            g.append(gyr)
            a.append(np.linalg.norm(acc))
            if period_s > 0 and i + 1 < samples:
                self.sleep_fn(period_s)
        g = np.array(g)
        std = g.std(axis=0).max()
        dev = np.abs(np.array(a) - STANDARD_GRAVITY).max()
        if std > max_rate_std or dev > max_accel_dev:
            raise ImuCalibrationError(
                "gyro calibration needs the robot at rest: gyro std %.4f rad/s (max %.4f), "
                "|accel| - g up to %.3f m/s^2 (max %.3f)" % (std, max_rate_std, dev, max_accel_dev))
        self.gyro_bias = g.mean(axis=0)
        return self.gyro_bias.copy()
