"""imu: MPU6050 (``jethexa_dynamics.hardware.mpu6050``) -> ``imu/data_raw`` and ``imu/data``.

* ``imu/data_raw`` (sensor_msgs/Imu): specific force [m/s^2] and body rates [rad/s] in ``imu_link``
  (REP-103/145 axes, the chip's 90 deg mount already remapped), no orientation
  (``orientation_covariance[0] = -1``); published only while something subscribes (a publish costs more than
  the sample: nothing in the launch graphs reads it, a recorder or a tool does).
* ``imu/data``: the same plus the Madgwick-filtered orientation (yaw drifts: no magnetometer), published once
  the filter's initialisation is over (``filter_init_time`` s after a (re)start of the chip: an orientation still
  converging from a jolted first sample is not published as a measurement; ``/diagnostics`` says
  "initialising").
* Covariances are diagonal, from the ``*_stddev`` parameters.
* ``source: emulator`` runs the MPU6050 register model (``hardware.mpu6050_emulator``) fed by the emulated
  robot's motion on ``emulator/imu_motion``; the driver and filter are the same as on the robot.

The publishing path (filter, gap rule, messages) is :class:`ImuPublisher`, one implementation for both kits: this
node drives it with the MPU6050's samples (the Jetson Nano kit); ``servo_driver`` with the STM32 board's IMU
reports, which only the process owning ``/dev/rrc`` can read (today's kit, ``transport: rrc``).
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional

import numpy as np
from rclpy.time import Time
from sensor_msgs.msg import Imu

from jethexa_dynamics.hardware.errors import HardwareError
from jethexa_dynamics.hardware.imu_filter import MadgwickFilter
from jethexa_dynamics.hardware.mpu6050 import Mpu6050, Mpu6050Config
from jethexa_dynamics.nodes import messages as validate, params as node_params
from jethexa_dynamics.nodes._common import SENSOR_QOS, ThinNode, run

REINIT_AFTER = 10  # consecutive failed reads before the chip is re-initialised
GAP_PERIODS = 5    # a sample later than this many periods after the previous one follows a gap


def ros_stamp(node, t: float):
    """The ROS time (a ``builtin_interfaces/Time``) of monotonic time ``t`` [s] on ``node``'s clock: the two
    clocks read back to back (again if a thread switch came between them: a late read of one would shift the
    stamp by the switch, and a stream's stamps would run backwards)."""
    best = None
    for _ in range(3):
        m0 = time.monotonic()
        now = node.get_clock().now()
        m1 = time.monotonic()
        if best is None or m1 - m0 < best[0]:
            best = (m1 - m0, now, 0.5 * (m0 + m1))
        if m1 - m0 < 2e-4:
            break
    _, now, m = best
    return Time(nanoseconds=now.nanoseconds - int(round((m - t) * 1e9)), clock_type=now.clock_type).to_msg()


def _diag(stddev: float) -> list:
    v = float(stddev) ** 2
    return [v, 0.0, 0.0, 0.0, v, 0.0, 0.0, 0.0, v]


class ImuPublisher:
    """``imu/data_raw`` and ``imu/data`` of ``node`` from body-frame samples: the Madgwick filter, the gap rule
    and the messages, with the node's parameters ``<prefix>frame_id``, ``<prefix>filter_beta``, ... (``nodes/params.py``
    ``_imu_publishing``). :meth:`sample` takes one sample at its time ``t`` [s, monotonic], ``period`` [s] the
    expected time between samples."""

    def __init__(self, node: ThinNode, prefix: str = ""):
        self.node, self.prefix = node, prefix
        self.filter = MadgwickFilter(beta=self._p("filter_beta"), init_time=self._p("filter_init_time"))
        self.samples = 0
        self.gaps = 0         # samples after a gap (the filter stepped one period, not across the gap)
        self._last_stamp: Optional[float] = None
        self.raw_pub = node.create_publisher(Imu, "imu/data_raw", SENSOR_QOS)
        self.data_pub = node.create_publisher(Imu, "imu/data", SENSOR_QOS)
        # the two messages are built once and refilled at every sample (rclpy's publish serializes at once):
        # frame and covariances change only with the parameters
        self.raw_msg, self.data_msg = Imu(), Imu()
        self.fill_constant_fields()

    def _p(self, name: str):
        return self.node.p[self.prefix + name]

    def reset(self) -> None:
        """A (re)started sensor: the filter initialises again."""
        self.filter.reset()

    def fill_constant_fields(self) -> None:
        """frame_id and covariances of both messages, from the parameters."""
        self.filter.beta = self._p("filter_beta")
        for msg in (self.raw_msg, self.data_msg):
            msg.header.frame_id = self._p("frame_id")
            msg.angular_velocity_covariance = _diag(self._p("angular_velocity_stddev"))
            msg.linear_acceleration_covariance = _diag(self._p("linear_acceleration_stddev"))
        self.raw_msg.orientation_covariance = [-1.0] + [0.0] * 8    # imu/data_raw carries no orientation
        self.data_msg.orientation_covariance = _diag(self._p("orientation_stddev"))

    def sample(self, t: float, gyro, accel, period: float) -> None:
        """One sample: body rates ``gyro`` [rad/s] and specific force ``accel`` [m/s^2] in ``frame_id``, taken at
        ``t`` [s, time.monotonic: the MPU6050's read, the board report's receipt], stamped with it."""
        dt = period if self._last_stamp is None else max(t - self._last_stamp, 1e-4)
        if dt > GAP_PERIODS * period:
            # a paused or starved node, not a long step: integrating the gyro over the gap would tilt the
            # attitude by degrees that the filter then takes seconds to correct (a model would read it as damage)
            self.gaps += 1
            dt = period
        self._last_stamp = t
        qw, qx, qy, qz = self.filter.update(gyro, accel, dt).tolist()
        stamp = ros_stamp(self.node, t)
        gx, gy, gz = (float(v) for v in gyro)
        ax, ay, az = (float(v) for v in accel)
        # imu/data_raw is published only while someone subscribes (nobody in the launch graphs; a recorder or
        # a tool does): a publish costs more than the sample itself; imu/data waits for the filter's initialisation
        wanted = ((self.raw_msg, self.raw_pub, self.raw_pub.get_subscription_count() > 0),
                  (self.data_msg, self.data_pub, not self.filter.initialising))
        for msg, pub, publish in wanted:
            if publish:
                msg.header.stamp = stamp
                v, a = msg.angular_velocity, msg.linear_acceleration
                v.x, v.y, v.z = gx, gy, gz
                a.x, a.y, a.z = ax, ay, az
                if pub is self.data_pub:
                    o = msg.orientation
                    o.w, o.x, o.y, o.z = qw, qx, qy, qz
                pub.publish(msg)
        self.samples += 1

    def status(self) -> str:
        return "initialising the attitude" if self.filter.initialising else "publishing"


class ImuNode(ThinNode):
    def __init__(self, **kwargs):
        super().__init__(node_params.IMU, **kwargs)
        self.bus = None
        self.chip: Optional[Mpu6050] = None
        self.init_error = ""
        self.failures = 0
        self.motion_seen = self.p["source"] != "emulator"  # the emulated chip waits for its robot's motion
        self.out = ImuPublisher(self)
        self.filter, self.raw_pub, self.data_pub = self.out.filter, self.out.raw_pub, self.out.data_pub
        if self.p["source"] == "emulator":
            from jethexa_dynamics.hardware.mpu6050_emulator import Mpu6050Emulator

            self.bus = Mpu6050Emulator(address=self.p["address"])
            self.sub(Imu, "emulator/imu_motion", self._on_motion, SENSOR_QOS, wake=False,   # taken at each sample
                     stamped=True)
        self._init_chip()
        self.rate_timer("rate", self._on_tick, "sample")
        self._diag_timer = self.timer(1.0, self._on_diag, "diagnostics")

    # ------------------------------------------------------------------ chip
    def _config(self) -> Mpu6050Config:
        rate = self.p["rate"]
        div = int(min(255, max(0, round(1000.0 / rate) - 1)))  # 1 kHz internal rate with the DLPF on
        return Mpu6050Config(address=self.p["address"], accel_range_g=self.p["accel_range_g"],
                             gyro_range_dps=self.p["gyro_range_dps"], dlpf_cfg=self.p["dlpf_cfg"],
                             sample_rate_div=div)

    def _init_chip(self) -> bool:
        try:
            if self.bus is None:
                import smbus2

                self.bus = smbus2.SMBus(self.p["i2c_bus"])
            chip = Mpu6050(self.bus, self._config())
            chip.initialize()
            if self.p["calibrate_gyro"]:
                try:
                    chip.calibrate_gyro(samples=100, period_s=1.0 / self.p["rate"])
                except HardwareError as exc:
                    self.get_logger().warning("gyro calibration skipped: %s" % exc)
        except (HardwareError, OSError) as exc:
            if str(exc) != self.init_error:
                self.get_logger().error("MPU6050 on %s: %s (retrying)" % (self._where(), exc))
            self.init_error = str(exc)
            self.chip = None
            return False
        self.chip, self.init_error, self.failures = chip, "", 0
        self.out.reset()
        self.get_logger().info("MPU6050 ready on %s at %.0f Hz" % (self._where(), self.p["rate"]))
        return True

    def _where(self) -> str:
        return "the emulated robot" if self.p["source"] == "emulator" else "/dev/i2c-%d" % self.p["i2c_bus"]

    def apply_params(self, changed: Dict[str, Any]) -> None:
        self.out.fill_constant_fields()

    # ------------------------------------------------------------------ callbacks
    def _on_motion(self, msg: Imu) -> None:
        """emulator/imu_motion: orientation world<-body, body rates, IMU-point acceleration in the world."""
        self.check_stamp("emulator/imu_motion", msg.header)
        q = validate.quaternion("emulator/imu_motion.orientation",
                                (msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w))
        w = validate.finite_vector("emulator/imu_motion.angular_velocity",
                                   (msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z))
        a = validate.finite_vector("emulator/imu_motion.linear_acceleration", (
            msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z))
        self.bus.set_state((q[3], q[0], q[1], q[2]), w, a)
        self.motion_seen = True

    def _on_tick(self) -> None:
        if not self.motion_seen or (self.chip is None and not self._init_chip()):
            return
        try:
            sample = self.chip.read()
        except HardwareError as exc:
            self.failures += 1
            self.reject("MPU6050 read", str(exc))
            if self.failures >= REINIT_AFTER:
                self.chip = None
            return
        self.failures = 0
        self.out.sample(time.monotonic(), sample.gyro, sample.accel, 1.0 / self.p["rate"])

    @property
    def samples(self) -> int:
        return self.out.samples

    @property
    def gaps(self) -> int:
        return self.out.gaps

    def _on_diag(self) -> None:
        if self.chip is None:
            level, message = 2, "MPU6050 not available: " + self.init_error
        else:
            level, message = 0, self.out.status()
        values = [("source", self.p["source"]), ("samples", self.samples), ("read_failures", self.failures),
                  ("gaps", self.gaps)]
        if self.chip is not None:
            values.append(("gyro_bias", np.round(self.chip.gyro_bias, 5).tolist()))
        self.publish_diagnostics([self.node_status(message, level, values)])

    def close(self) -> None:
        close = getattr(self.bus, "close", None)
        if close is not None:
            close()


NODE = ImuNode  # the class graph.node_class() finds


def main(args=None):
    return run(ImuNode, args)


if __name__ == "__main__":
    main()
