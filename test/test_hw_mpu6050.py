"""MPU6050 driver, register emulator and orientation filter.

Oracles: datasheet register values and sensitivities written into a hand-made register map; the physics of
the scripted motion (gravity in the body frame for a known tilt, integrated constant rates); the ``ahrs``
package's Madgwick implementation where installed.
"""
import errno
import math

import numpy as np
import pytest
from transforms3d.euler import euler2quat, quat2euler
from transforms3d.quaternions import quat2mat

from jethexa_dynamics.hardware.errors import (ImuCalibrationError, ImuDisconnectedError, ImuError, ImuNotFoundError,
                                              ImuStuckError, ParameterError)
from jethexa_dynamics.hardware.imu_filter import MadgwickFilter, quat_from_accel
from jethexa_dynamics.hardware.mpu6050 import Mpu6050, Mpu6050Config, Reg, axis_remap_matrix
from jethexa_dynamics.hardware.mpu6050_emulator import Mpu6050Emulator, constant_rotation, static_motion

G0 = 9.80665


class Clock:
    def __init__(self, t=0.0):
        self.t = t

    def __call__(self):
        return self.t


class RegisterMap:
    """Minimal SMBus stand-in: a dict of registers, records writes (independent of Mpu6050Emulator)."""

    def __init__(self, regs):
        self.regs = dict(regs)
        self.writes = []

    def read_byte_data(self, addr, reg):
        assert addr == 0x68
        return self.regs.get(reg, 0)

    def write_byte_data(self, addr, reg, val):
        assert addr == 0x68
        self.writes.append((reg, val))
        self.regs[reg] = val

    def read_i2c_block_data(self, addr, reg, n):
        return [self.regs.get(reg + i, 0) for i in range(n)]


def be16(v):
    v &= 0xFFFF
    return [v >> 8, v & 0xFF]


def driver(bus, **kw):
    return Mpu6050(bus, Mpu6050Config(**kw), sleep_fn=lambda s: None)


# -- driver against datasheet values ----------------------------------------------------------------------
def test_init_sequence_and_si_conversion_from_datasheet_values():
    block = be16(8192) + be16(0) + be16(-8192) + be16(-521) + be16(655) + be16(-131 // 2 * 0) + be16(-1310)
    regs = {Reg.WHO_AM_I: 0x68}
    regs.update({Reg.ACCEL_XOUT_H + i: b for i, b in enumerate(block)})
    bus = RegisterMap(regs)
    imu = driver(bus)  # +-4 g (8192 LSB/g), +-500 deg/s (65.5 LSB/(deg/s))
    imu.initialize()
    assert bus.writes == [(0x6B, 0x80), (0x6B, 0x01), (0x19, 9), (0x1A, 3), (0x1B, 0x08), (0x1C, 0x08)]
    s = imu.read()
    # chip: ax = +1 g, az = -1 g, gx = 10 deg/s, gz = -20 deg/s; JetHexa remap body = (-chip y, chip x, chip z)
    np.testing.assert_allclose(s.accel, [0.0, G0, -G0], atol=1e-12)
    np.testing.assert_allclose(s.gyro, [0.0, math.radians(10), math.radians(-20)], atol=1e-12)
    assert s.temperature == pytest.approx(-521 / 340 + 36.53)


def test_wrong_who_am_i_and_readback_mismatch():
    with pytest.raises(ImuNotFoundError, match="0x68: WHO_AM_I = 0x70, expected 0x68"):
        driver(Mpu6050Emulator(who_am_i=0x70)).initialize()
    driver(Mpu6050Emulator(who_am_i=0x70), accepted_who_am_i=(0x68, 0x70)).initialize()

    class Deaf(RegisterMap):
        def write_byte_data(self, addr, reg, val):
            self.writes.append((reg, val))  # writes are lost
    with pytest.raises(ImuError, match="register 0x19 reads 0x00 after writing 0x09"):
        driver(Deaf({Reg.WHO_AM_I: 0x68})).initialize()


@pytest.mark.parametrize("kw,field", [
    (dict(accel_range_g=3), "accel_range_g"), (dict(gyro_range_dps=300), "gyro_range_dps"),
    (dict(dlpf_cfg=7), "dlpf_cfg"), (dict(sample_rate_div=256), "sample_rate_div"),
    (dict(address=0x50), "address"), (dict(axis_remap=("x", "x", "z")), "axis_remap"),
    (dict(axis_remap=("-x", "y", "z")), "axis_remap"), (dict(stuck_samples=1), "stuck_samples"),
])
def test_config_validation(kw, field):
    with pytest.raises(ParameterError, match=field):
        Mpu6050Config(**kw)


def test_axis_remap_matrix():
    m = axis_remap_matrix(("-y", "x", "z"))
    np.testing.assert_array_equal(m @ [1.0, 2.0, 3.0], [-2.0, 1.0, 3.0])
    assert Mpu6050Config().sample_rate_hz == 100.0


# -- emulator + driver: physics of the scripted motion ---------------------------------------------------
def test_register_bytes_at_rest_match_sensitivity():
    emu = Mpu6050Emulator(static_motion(), accel_noise=0, gyro_noise=0, gravity=9.81, temperature_c=25.0)
    imu = driver(emu, accel_range_g=2, gyro_range_dps=250)
    imu.initialize()
    block = emu.read_i2c_block_data(0x68, Reg.ACCEL_XOUT_H, 14)
    az = int.from_bytes(bytes(block[4:6]), "big", signed=True)
    temp = int.from_bytes(bytes(block[6:8]), "big", signed=True)
    assert az == round(9.81 / G0 * 16384) and block[:4] == [0, 0, 0, 0]
    assert temp == round((25.0 - 36.53) * 340)


@pytest.mark.parametrize("rpy", [(0.3, -0.2, 1.0), (-0.5, 0.4, -2.0), (0.0, 0.0, 0.0), (1.2, 0.1, 0.3)])
def test_tilted_robot_reads_gravity_in_body_frame(rpy):
    q = euler2quat(*rpy, "sxyz")
    emu = Mpu6050Emulator(static_motion(q), accel_noise=0, gyro_noise=0)
    imu = driver(emu, stuck_samples=None)
    imu.initialize()
    s = imu.read()
    expected = quat2mat(q).T @ [0, 0, 9.81]  # specific force at rest: +g up, seen from the body
    np.testing.assert_allclose(s.accel, expected, atol=G0 / 8192)
    np.testing.assert_allclose(s.gyro, 0, atol=1e-12)


def test_rotation_rates_and_linear_acceleration():
    clock = Clock(1.0)
    w = np.array([0.4, -0.7, 1.3])
    emu = Mpu6050Emulator(constant_rotation(w), accel_noise=0, gyro_noise=0, time_fn=clock)
    imu = driver(emu)
    imu.initialize()
    s = imu.read()
    np.testing.assert_allclose(s.gyro, w, atol=math.radians(1) / 65.5)
    emu2 = Mpu6050Emulator(None, accel_noise=0, gyro_noise=0)
    emu2.set_state((1, 0, 0, 0), (0, 0, 0), (2.0, -1.0, 0.5))  # accelerating forward-right-up, level
    imu2 = driver(emu2)
    imu2.initialize()
    np.testing.assert_allclose(imu2.read().accel, [2.0, -1.0, 9.81 + 0.5], atol=G0 / 8192)


def test_saturation_at_full_scale():
    emu = Mpu6050Emulator(None, accel_noise=0, gyro_noise=0)
    emu.set_state((1, 0, 0, 0), (0, 0, 20.0), (50.0, 0, 0))
    imu = driver(emu, accel_range_g=2, gyro_range_dps=250)
    imu.initialize()
    s = imu.read()
    assert s.raw[1] == -32768  # chip y = -body x: 50 m/s^2 > 2 g clips
    assert s.gyro[2] == pytest.approx(math.radians(32767 / 131.0))


def test_gyro_bias_calibration_at_rest_and_refusal_when_moving():
    bias_chip = np.array([0.01, -0.02, 0.005])
    emu = Mpu6050Emulator(static_motion(), gyro_bias=bias_chip, gyro_noise=2e-3, accel_noise=0.02)
    imu = driver(emu)
    imu.initialize()
    n = 400
    est = imu.calibrate_gyro(samples=n, period_s=0)
    # 5 sigma of a mean of n samples with 2e-3 rad/s noise
    np.testing.assert_allclose(est, axis_remap_matrix(("-y", "x", "z")) @ bias_chip, atol=5 * 2e-3 / math.sqrt(n))
    residual = np.mean([imu.read().gyro for _ in range(n)], axis=0)
    np.testing.assert_allclose(residual, 0, atol=5 * 2e-3 * math.sqrt(2.0 / n))
    clock = Clock()
    moving = Mpu6050Emulator(lambda t: (euler2quat(0.3 * math.sin(5 * t), 0, 0), (1.5 * math.cos(5 * t), 0, 0),
                                        (0, 0, 0)), time_fn=clock)
    imu2 = driver(moving)
    imu2.initialize()

    def tick(_):
        clock.t += 0.01
    imu2.sleep_fn = tick
    with pytest.raises(ImuCalibrationError, match="at rest"):
        imu2.calibrate_gyro(samples=100, period_s=0.01)


# -- faults -----------------------------------------------------------------------------------------------
def test_frozen_sensor_is_detected_and_recovers():
    emu = Mpu6050Emulator(static_motion())
    imu = driver(emu, stuck_samples=10)
    imu.initialize()
    for _ in range(20):
        imu.read()  # noise keeps samples distinct
    emu.freeze()  # the registers keep the last sample: that one plus 9 more reads are 10 identical
    for _ in range(8):
        imu.read()
    with pytest.raises(ImuStuckError, match="10 identical samples"):
        imu.read()
    assert imu.stuck
    emu.unfreeze()
    imu.read()
    assert not imu.stuck


def test_sensor_reset_behind_our_back_is_detected_and_reinit_recovers():
    emu = Mpu6050Emulator(static_motion())
    imu = driver(emu, stuck_samples=5)
    imu.initialize()
    imu.read()
    emu.write_byte_data(0x68, Reg.PWR_MGMT_1, 0x80)  # brown-out: back to sleep, data registers zero
    with pytest.raises(ImuStuckError):
        for _ in range(6):
            imu.read()
    imu.initialize()
    assert imu.read().accel[2] == pytest.approx(9.81, abs=0.15)


def test_disconnect_and_transient_i2c_errors():
    emu = Mpu6050Emulator(static_motion())
    imu = driver(emu, i2c_retries=2)
    imu.initialize()
    emu.disconnect()
    n0 = emu.transfers
    with pytest.raises(ImuDisconnectedError, match=r"0x68: 14-byte burst read at 0x3B failed 3 times.*Remote I/O"):
        imu.read()
    assert emu.transfers - n0 == 3 and imu.i2c_failures == 3
    emu.reconnect()
    imu.read()
    assert imu.i2c_failures == 0
    flaky = Mpu6050Emulator(static_motion(), i2c_error_rate=0.1, seed=3)
    imu = driver(flaky, i2c_retries=4)
    imu.initialize()
    n0 = flaky.transfers
    assert all(abs(imu.read().accel[2] - 9.81) < 0.2 for _ in range(200))  # P(5 failures) = 1e-5 per read
    assert flaky.transfers - n0 > 200  # some transfers failed and were retried
    with pytest.raises(OSError) as ei:
        Mpu6050Emulator().read_byte_data(0x69, Reg.WHO_AM_I)
    assert ei.value.errno == errno.EREMOTEIO


# -- orientation filter -----------------------------------------------------------------------------------
def gravity_dir(q):
    return quat2mat(q).T @ [0, 0, 1]


def test_quat_from_accel_levels_gravity():
    for rpy in [(0.3, -0.2, 0), (-1.0, 0.5, 0), (0, 0, 0)]:
        q = euler2quat(*rpy, "sxyz")
        np.testing.assert_allclose(quat_from_accel(9.81 * gravity_dir(q)), q, atol=1e-12)


def test_madgwick_converges_to_tilt_from_wrong_start():
    q_true = euler2quat(0.35, -0.25, 0.0, "sxyz")
    acc = 9.81 * gravity_dir(q_true)
    f = MadgwickFilter(beta=0.1, q0=(1, 0, 0, 0))
    for _ in range(3000):
        q = f.update(np.zeros(3), acc, 0.01)  # gyro exactly zero: the correction must still act
    np.testing.assert_allclose(gravity_dir(q), gravity_dir(q_true), atol=2e-3)


def test_madgwick_initialisation_corrects_a_jolted_first_sample():
    """The first sample's tilt is the start (a jolt: 35 deg of pitch read); the initialisation ramp (gain 1 ->
    0.033 rad/s over 2 s) brings the filter to the true tilt by its end, the working gain alone does not (it
    corrects at most beta * t = 3.8 deg in 2 s)."""
    q_true = euler2quat(0.1, -0.05, 0.0, "sxyz")
    acc = 9.81 * gravity_dir(q_true)
    jolt = acc + np.array([7.0, 0.0, -2.0])
    errors = {}
    for init_time in (2.0, 0.0):
        f = MadgwickFilter(beta=0.033, init_time=init_time)
        f.update(np.zeros(3), jolt, 0.01)
        assert f.initialising == (init_time > 0)
        for _ in range(199):
            q = f.update(np.zeros(3), acc, 0.01)
        assert not f.initialising
        errors[init_time] = math.degrees(math.acos(min(1.0, gravity_dir(q) @ gravity_dir(q_true))))
    assert errors[2.0] < 0.5 and errors[0.0] > 25.0, errors
    f.reset()
    assert f.initialising and f.q is None


def test_madgwick_integrates_constant_yaw_rate():
    f = MadgwickFilter(beta=0.033)
    rate, dt = 0.5, 0.01
    for _ in range(200):
        q = f.update([0, 0, rate], [0, 0, 9.81], dt)
    assert quat2euler(q, "sxyz")[2] == pytest.approx(rate * 2.0, abs=1e-3)


def test_madgwick_matches_ahrs_reference():
    ahrs = pytest.importorskip("ahrs")
    rng = np.random.default_rng(1)
    ref = ahrs.filters.Madgwick(frequency=100.0, gain=0.05)
    ours = MadgwickFilter(beta=0.05, q0=(1, 0, 0, 0))
    q_ref = np.array([1.0, 0, 0, 0])
    for _ in range(300):
        g = rng.normal(0, 0.5, 3)
        a = np.array([0, 0, 9.81]) + rng.normal(0, 1.0, 3)
        q_ref = ref.updateIMU(q_ref, g, a, dt=0.01)
        q = ours.update(g, a, 0.01)
        np.testing.assert_allclose(q, q_ref, atol=1e-9)


def test_driver_and_filter_track_a_rolling_robot():
    clock = Clock(0.0)
    w = np.array([0.6, 0.0, 0.0])
    emu = Mpu6050Emulator(constant_rotation(w), time_fn=clock)  # default noise
    imu = driver(emu)
    imu.initialize()
    f = MadgwickFilter(beta=0.05, q0=(1, 0, 0, 0))
    for _ in range(100):  # 1 s at 100 Hz
        clock.t += 0.01
        s = imu.read()
        q = f.update(s.gyro, s.accel, 0.01)
    roll = quat2euler(q, "sxyz")[0]
    assert roll == pytest.approx(0.6, abs=0.02)


def test_filter_rejects_bad_input():
    f = MadgwickFilter()
    with pytest.raises(ParameterError, match="dt"):
        f.update([0, 0, 0], [0, 0, 9.8], 0.0)
    with pytest.raises(ParameterError, match="not finite"):
        f.update([0, float("nan"), 0], [0, 0, 9.8], 0.01)
