"""MPU6050 register model behind the ``smbus2.SMBus`` interface, fed by a motion source.

Motion source: a callable ``motion(t) -> (q_world_body (w, x, y, z), omega_body [rad/s], accel_world [m/s^2])``
where ``accel_world`` is the linear acceleration of the IMU point (gravity not included) and ``t`` is
``time_fn()``; or push states with :meth:`Mpu6050Emulator.set_state` (the simulation engine does this each
step). The chip reports specific force ``R^T (a - g)`` with ``g = (0, 0, -gravity)``, in chip axes (the inverse
of the driver's ``axis_remap``), quantised at the configured full scale, saturated at int16, plus noise
and bias (chip axes, SI units).

Faults: :meth:`disconnect` (every transfer fails with EREMOTEIO like a NACK), ``i2c_error_rate``
(random EIO), :meth:`freeze` (data registers stop updating).
Not modelled: the DLPF's delay, FIFO, interrupts, self-test.
"""
from __future__ import annotations

import errno
import math
import random
import threading
import time
from typing import Callable, Optional, Sequence, Tuple

import numpy as np
from transforms3d.quaternions import axangle2quat, qmult, quat2mat

from .errors import ParameterError
from .mpu6050 import ACCEL_LSB_PER_G, GYRO_LSB_PER_DPS, STANDARD_GRAVITY, Reg, axis_remap_matrix

__all__ = ["Mpu6050Emulator", "static_motion", "constant_rotation"]

MotionState = Tuple[Sequence[float], Sequence[float], Sequence[float]]
_DATA = range(Reg.ACCEL_XOUT_H, Reg.GYRO_XOUT_H + 6)


def static_motion(q: Sequence[float] = (1.0, 0.0, 0.0, 0.0)) -> Callable[[float], MotionState]:
    """Robot at rest with orientation ``q``."""
    q = np.asarray(q, dtype=float)
    return lambda t: (q, np.zeros(3), np.zeros(3))


def constant_rotation(omega_body: Sequence[float], q0: Sequence[float] = (1.0, 0.0, 0.0, 0.0),
                      t0: float = 0.0) -> Callable[[float], MotionState]:
    """Rotation at constant body rate ``omega_body`` [rad/s] about a fixed point: q(t) = q0 (x) exp(w (t-t0) / 2)."""
    w = np.asarray(omega_body, dtype=float)
    rate = float(np.linalg.norm(w))
    q0 = np.asarray(q0, dtype=float)

    def motion(t):
        q = q0 if rate == 0 else qmult(q0, axangle2quat(w / rate, rate * (t - t0)))
        return q, w, np.zeros(3)

    return motion


class Mpu6050Emulator:
    """Drop-in for ``smbus2.SMBus`` with one MPU6050 at ``address``.

    Noise std per sample [SI]: ``accel_noise`` m/s^2, ``gyro_noise`` rad/s (defaults ~ datasheet densities at
    44 Hz bandwidth); ``accel_bias``/``gyro_bias`` (chip axes); ``gravity`` of the simulated world.
    """

    def __init__(self, motion: Optional[Callable[[float], MotionState]] = None, address: int = 0x68,
                 axis_remap: Sequence[str] = ("-y", "x", "z"), accel_noise: float = 0.025,
                 gyro_noise: float = 6e-4, accel_bias: Sequence[float] = (0.0, 0.0, 0.0),
                 gyro_bias: Sequence[float] = (0.0, 0.0, 0.0), temperature_c: float = 30.0,
                 gravity: float = 9.81, i2c_error_rate: float = 0.0, who_am_i: int = 0x68,
                 time_fn: Callable[[], float] = time.monotonic, seed: Optional[int] = 0):
        if not 0.0 <= i2c_error_rate <= 1.0:
            raise ParameterError("i2c_error_rate", i2c_error_rate, 0.0, 1.0)
        self.motion = motion
        self.address = address
        self._to_chip = axis_remap_matrix(axis_remap).T  # chip = M^T body
        self.accel_noise, self.gyro_noise = float(accel_noise), float(gyro_noise)
        self.accel_bias = np.asarray(accel_bias, dtype=float)
        self.gyro_bias = np.asarray(gyro_bias, dtype=float)
        self.temperature_c = float(temperature_c)
        self.gravity = float(gravity)
        self.i2c_error_rate = float(i2c_error_rate)
        self.time_fn = time_fn
        self._who = who_am_i
        self._rng = np.random.default_rng(seed)
        self._prng = random.Random(seed)
        self._lock = threading.Lock()
        self._state: MotionState = (np.array([1.0, 0, 0, 0]), np.zeros(3), np.zeros(3))
        self.connected = True
        self.frozen = False
        self.transfers = 0
        self.regs = bytearray(128)
        self._power_on_reset()

    # -- faults / feeding -------------------------------------------------------------------------------
    def set_state(self, q_world_body: Sequence[float], omega_body: Sequence[float],
                  accel_world: Sequence[float]) -> None:
        """Push the current motion state (used when ``motion`` is None)."""
        with self._lock:
            self._state = (np.asarray(q_world_body, float), np.asarray(omega_body, float),
                           np.asarray(accel_world, float))

    def disconnect(self) -> None:
        self.connected = False

    def reconnect(self) -> None:
        self.connected = True

    def freeze(self) -> None:
        self.frozen = True

    def unfreeze(self) -> None:
        self.frozen = False

    # -- register model ---------------------------------------------------------------------------------
    def _power_on_reset(self) -> None:
        self.regs[:] = bytes(128)
        self.regs[Reg.PWR_MGMT_1] = 0x40  # SLEEP
        self.regs[Reg.WHO_AM_I] = self._who

    @property
    def sleeping(self) -> bool:
        return bool(self.regs[Reg.PWR_MGMT_1] & 0x40)

    def _sample(self) -> None:
        """Latch a new sample into ACCEL_XOUT_H..GYRO_ZOUT_L (like the chip's shadow registers on a burst)."""
        if self.frozen or self.sleeping:
            return
        t = self.time_fn()
        q, w, a = self.motion(t) if self.motion is not None else self._state
        r = quat2mat(np.asarray(q, dtype=float) / np.linalg.norm(q))
        f_body = r.T @ (np.asarray(a, dtype=float) - np.array([0.0, 0.0, -self.gravity]))
        accel = self._to_chip @ f_body + self.accel_bias + self._rng.normal(0.0, self.accel_noise, 3)
        gyro = self._to_chip @ np.asarray(w, dtype=float) + self.gyro_bias + self._rng.normal(0.0, self.gyro_noise, 3)
        afs = (self.regs[Reg.ACCEL_CONFIG] >> 3) & 3
        fs = (self.regs[Reg.GYRO_CONFIG] >> 3) & 3
        a_lsb = ACCEL_LSB_PER_G[sorted(ACCEL_LSB_PER_G)[afs]] / STANDARD_GRAVITY
        g_lsb = GYRO_LSB_PER_DPS[sorted(GYRO_LSB_PER_DPS)[fs]] / math.radians(1.0)
        temp = (self.temperature_c - 36.53) * 340.0
        values = list(accel * a_lsb) + [temp] + list(gyro * g_lsb)
        raw = [int(min(max(round(v), -32768), 32767)) for v in values]
        for i, v in enumerate(raw):
            self.regs[Reg.ACCEL_XOUT_H + 2 * i:Reg.ACCEL_XOUT_H + 2 * i + 2] = (v & 0xFFFF).to_bytes(2, "big")

    def _transfer(self, i2c_addr: int) -> None:
        self.transfers += 1
        if not self.connected or i2c_addr != self.address:
            raise OSError(errno.EREMOTEIO, "Remote I/O error")  # what smbus2 raises on a NACK
        if self.i2c_error_rate and self._prng.random() < self.i2c_error_rate:
            raise OSError(errno.EIO, "Input/output error")

    def _check_reg(self, register: int, n: int = 1) -> None:
        if not (0 <= register and register + n <= 128):
            raise OSError(errno.EINVAL, "register 0x%X..+%d outside the MPU6050 map" % (register, n))

    # -- smbus2.SMBus interface -------------------------------------------------------------------------
    def read_byte_data(self, i2c_addr: int, register: int, force=None) -> int:
        with self._lock:
            self._transfer(i2c_addr)
            self._check_reg(register)
            if register in _DATA:
                self._sample()
            return self.regs[register]

    def read_i2c_block_data(self, i2c_addr: int, register: int, length: int, force=None) -> list:
        with self._lock:
            self._transfer(i2c_addr)
            if not 0 < length <= 32:
                raise OSError(errno.EINVAL, "block length %d (SMBus allows 1..32)" % length)
            self._check_reg(register, length)
            if any(r in _DATA for r in range(register, register + length)):
                self._sample()
            return list(self.regs[register:register + length])

    def write_byte_data(self, i2c_addr: int, register: int, value: int, force=None) -> None:
        with self._lock:
            self._transfer(i2c_addr)
            self._write(register, value)

    def write_i2c_block_data(self, i2c_addr: int, register: int, data: Sequence[int], force=None) -> None:
        with self._lock:
            self._transfer(i2c_addr)
            for i, v in enumerate(data):
                self._write(register + i, v)

    def _write(self, register: int, value: int) -> None:
        self._check_reg(register)
        if register == Reg.PWR_MGMT_1 and value & 0x80:
            self._power_on_reset()  # DEVICE_RESET: all registers to defaults, back to sleep
            return
        if register in _DATA or register == Reg.WHO_AM_I:
            return  # read-only
        self.regs[register] = value & 0xFF

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
