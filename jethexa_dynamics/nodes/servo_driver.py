"""servo_driver: owns the Hiwonder bus (``jethexa_dynamics.hardware``).

* ``joint_commands`` (trajectory_msgs/JointTrajectory) -> one group move (the last point, in its
  ``time_from_start``); joint limits are enforced by the joint layer before a byte is sent.
* ``joint_states`` (sensor_msgs/JointState) at ``publish_rate``: measured positions only, of the joints the
  read scheduler read in that cycle (Hiwonder's bus cannot read 18 positions at 50 Hz), stamped with the
  mean instant of its reads (``JointReadings.read_times``: a read written while a move is still on the line goes
  out after it, up to 15.6 ms later); a cycle without a position read publishes nothing. With ``read_dither``
  the reads of each cycle start at a delay in the cycle that walks a golden-ratio sequence from a random start
  (not in phase with the commands, which come at the same rate).
* ``joint_states/setpoint`` (sensor_msgs/JointState) with each ``joint_states`` message while the topic has a
  subscriber (damage_monitor with ``body_estimate``), published just before it: the same header stamp and names
  (less joints never moved and reads whose instant is uncertain: a round trip 1 ms over its wire time,
  ``JointServoBus.setpoints_at``), position = each servo's set-point at the instant it was read
  (``hardware.setpoints``: the moves sent, replayed) -- with the reading, the servo's tracking error, i.e. its
  load (``damage.body_load``). A JointState because it is joint positions by name like
  its twin (one message type to validate and record); a topic of its own, not ``effort`` or ``velocity`` of
  ``joint_states``, which mean torques and rates to every consumer of that topic.
* All bus I/O runs in one thread of the node (a read of a silent servo blocks for its reply timeout);
  the subscription only validates and hands the command over.
* ``/diagnostics``: one status per servo (reply statistics, voltage and temperature against the servo's own
  limits read from it, load state, the LED alarm setting read back, commanded vs measured position) -- what
  ``damage_monitor`` decides from. The LED alarm setting (``led_alarm``, written with cmd 35 at start-up)
  is configuration: the reply of cmd 36 is never taken for active faults.
* Services ``~/emergency_stop`` (std_srvs/Trigger: stop + torque off, refuse moves) and ``~/set_torque``
  (std_srvs/SetBool: true = clear the e-stop and load, false = unload). Torque off on shutdown.
* ``transport: rrc`` (today's kit: Hiwonder's STM32 board on ``/dev/rrc``): the board sends its IMU and battery
  reports unasked in the same byte stream as the servo replies, so this node, which owns the port, reads them
  (``hardware.board_reports``): the bus thread waits on the port as well as on commands and reads what has
  arrived without waiting for more (a command is sent first, whenever it comes). IMU reports go through the IMU
  publishing path of the imu node (``nodes.imu.ImuPublisher``: the same filter, gap rule and messages) to
  ``imu/data`` and ``imu/data_raw``, turned into the URDF's ``imu_link`` by ``imu_mount_rpy`` and stamped with
  the time their bytes were read (the host's receipt: the board sends no time of its own). The battery's
  voltage goes to ``battery`` (sensor_msgs/BatteryState) and, with WARN/ERROR levels, to ``/diagnostics``
  (status ``<node>: board``), which also counts the reports skipped (bad CRC, unknown function, short IMU report,
  values not finite or beyond the QMI8658's full scale). No IMU report for ``imu_timeout`` is one ERROR line
  and an ERROR on /diagnostics: imu/data stops, nothing stands in for it.
"""
from __future__ import annotations

import math
import os
import random
import select
import threading
import time
from typing import Any, Dict, Optional, Tuple

from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool, Trigger
from trajectory_msgs.msg import JointTrajectory

from jethexa_dynamics.hardware.bus import open_bus
from jethexa_dynamics.hardware.errors import HardwareError, ServoError, ServoTimeout
from jethexa_dynamics.hardware.joints import READ_DITHER_STEP, JointServoBus
from jethexa_dynamics.hardware.servo_table import load_servo_table
from jethexa_dynamics.nodes import messages as validate, params as node_params
from jethexa_dynamics.damage.detection import ServoStatusTracker, encode_servo_status, read_deadline
from jethexa_dynamics.nodes._common import (RELIABLE_QOS, SENSOR_QOS, ThinNode, run, stamp_to_sec, status,
                                            switch_for_bus)


OPEN_LOG_PERIOD = 30.0  # s between 'waiting for the servo bus' lines
BOARD_POLL_S = 0.002    # a board port without a file descriptor (a test's stand-in) is read this often [s]


class _Wake:
    """A ``threading.Event`` (set, clear, is_set) whose waits also end when a file descriptor becomes readable:
    the bus thread waits for a command and for the board's bytes at once (a pipe written at each set)."""

    def __init__(self):
        self._event = threading.Event()
        self._r, self._w = os.pipe()
        self._closed = False
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)

    def set(self) -> None:
        self._event.set()
        if self._closed:
            return
        try:
            os.write(self._w, b"!")
        except (BlockingIOError, OSError):
            pass    # full (many sets unread) or closed: the event says it anyway

    def is_set(self) -> bool:
        return self._event.is_set()

    def clear(self) -> None:
        self._event.clear()
        try:
            while os.read(self._r, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def wait(self, timeout: float, fd: Optional[int] = None) -> None:
        if fd is None or self._event.is_set():
            self._event.wait(timeout)
            return
        try:
            select.select([self._r, fd], [], [], timeout)
        except (OSError, ValueError):     # the port closed under us: the loop finds out
            self._event.wait(min(timeout, BOARD_POLL_S))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass


class BoardSensors:
    """The STM32 board's IMU and battery reports (``transport: rrc``) -> imu/data (``ImuPublisher``), battery and
    the board's /diagnostics status, for ``node`` (the servo driver)."""

    def __init__(self, node: "ServoDriver"):
        from sensor_msgs.msg import BatteryState

        from jethexa_dynamics.hardware.board_reports import chip_to_imu_link
        from jethexa_dynamics.nodes.imu import ImuPublisher

        self.node = node
        self.imu = ImuPublisher(node, prefix="imu_")
        self.rotation = chip_to_imu_link(node.p["imu_mount_rpy"])
        self.battery_pub = node.create_publisher(BatteryState, "battery", SENSOR_QOS)
        self.battery_msg = BatteryState()
        m = self.battery_msg
        m.present = True
        m.current = m.charge = m.capacity = m.design_capacity = m.percentage = m.temperature = math.nan
        m.power_supply_status = BatteryState.POWER_SUPPLY_STATUS_UNKNOWN
        m.power_supply_health = BatteryState.POWER_SUPPLY_HEALTH_UNKNOWN
        m.power_supply_technology = BatteryState.POWER_SUPPLY_TECHNOLOGY_UNKNOWN
        self.battery_mv: Optional[int] = None
        self.battery_level = 0
        self.batteries = 0
        self.opened_at: Optional[float] = None     # when the port opened (the IMU's silence counts from there)
        self.last_imu: Optional[float] = None      # receive time of the last valid IMU report
        self.imu_missing = False
        self._counts: Dict[str, int] = {}

    def opened(self, t: float) -> None:
        self.opened_at, self.last_imu, self.imu_missing = t, None, False
        self.imu.reset()

    def ingest(self, bus, reports) -> None:
        """Publish what ``bus.poll_reports`` gave; count and log (once per kind) what the board layer skipped."""
        from jethexa_dynamics.hardware.board_reports import ImuReport

        period = 1.0 / self.node.p["imu_rate"]
        for r in reports:
            if isinstance(r, ImuReport):
                self.last_imu = r.t
                self.imu.sample(r.t, self.rotation @ r.gyro, self.rotation @ r.accel, period)
            else:
                self._battery(r.t, r.mv)
        counts = bus.report_counts()
        for kind, n in counts.items():
            if kind not in ("imu", "battery", "ignored") and n > self._counts.get(kind, 0):
                self.node.reject("board report (%s)" % kind, bus.board.last_skipped or kind, once=True)
        self._counts = counts

    def _battery(self, t: float, mv: int) -> None:
        from jethexa_dynamics.nodes.imu import ros_stamp

        self.battery_mv = mv
        self.batteries += 1
        self.battery_msg.header.stamp = ros_stamp(self.node, t)
        self.battery_msg.voltage = mv / 1000.0
        self.battery_pub.publish(self.battery_msg)
        level, text = self.battery_state()
        if level != self.battery_level:
            log = self.node.get_logger()    # rclpy: one severity per call site
            if level == 2:
                log.error("battery: " + text)
            elif level == 1:
                log.warning("battery: " + text)
            else:
                log.info("battery: " + text)
            self.battery_level = level

    def battery_state(self) -> Tuple[int, str]:
        """(diagnostic level, text) of the battery's last report."""
        if self.battery_mv is None:
            return 0, "no battery report yet"
        v, p = self.battery_mv / 1000.0, self.node.p
        if v < p["battery_error_voltage"]:
            return 2, "%.2f V, below %.1f V: stop and charge it (Hiwonder's manual)" % (v, p["battery_error_voltage"])
        if v < p["battery_warn_voltage"]:
            return 1, "%.2f V, below %.1f V: charge it soon" % (v, p["battery_warn_voltage"])
        return 0, "%.2f V" % v

    def check(self, now: float) -> None:
        """No IMU report for imu_timeout since the port opened (or since the last): one ERROR line."""
        if self.opened_at is None:
            return
        silent = now - (self.last_imu if self.last_imu is not None else self.opened_at)
        if silent > self.node.p["imu_timeout"] and not self.imu_missing:
            self.imu_missing = True
            self.node.get_logger().error(
                "no IMU report from the STM32 board on %s for %.1f s%s: imu/data is not published, so the predictor "
                "and the damage monitor have no body motion (is another program reading the board, e.g. Hiwonder's "
                "start_app_node.service? does its firmware stream its IMU?)" % (
                    self.node.p["port"], silent, "" if self.last_imu is not None else " since it opened"))
        elif self.imu_missing and silent <= self.node.p["imu_timeout"]:
            self.imu_missing = False
            self.node.get_logger().info("IMU reports from the STM32 board again: imu/data published")

    def status(self, now: float):
        """The board's /diagnostics status: IMU and battery, the skipped reports by kind."""
        b_level, b_text = self.battery_state()
        if self.imu_missing or self.opened_at is None:
            since = self.last_imu if self.last_imu is not None else self.opened_at
            i_level, i_text = 2, ("no IMU report for %.1f s" % (now - since) if since is not None else
                                  "board not open")
        else:
            i_level, i_text = 0, "IMU " + self.imu.status()
        values = [("imu_samples", self.imu.samples), ("imu_gaps", self.imu.gaps),
                  ("imu_rate_expected_hz", self.node.p["imu_rate"]),
                  ("battery_v", "nan" if self.battery_mv is None else "%.3f" % (self.battery_mv / 1000.0)),
                  ("battery_reports", self.batteries)]
        values += [("reports_" + k, n) for k, n in sorted(self._counts.items())]
        return status("%s: board" % self.node.get_name(), "%s; battery %s" % (i_text, b_text),
                      max(i_level, b_level), values, hardware_id="rrc_board")


class ServoDriver(ThinNode):
    def __init__(self, **kwargs):
        super().__init__(node_params.SERVO_DRIVER, **kwargs)
        self.table = load_servo_table(self.p["servo_table"] or None)
        self.joint_names = list(self.table.joint_names)
        self.lower = [s.lower for s in self.table]
        self.upper = [s.upper for s in self.table]
        self.tracker = ServoStatusTracker([(s.joint, s.servo_id) for s in self.table])
        self.joints: Optional[JointServoBus] = None
        self.lock = threading.RLock()  # the bus is used by callbacks and by close() (possibly another thread)
        self.open_error = ""
        self.closed = False
        self._t_start = time.monotonic()
        self._open_attempts = 0
        self._open_next_log = 0.0
        self.commanded: Dict[str, float] = {}
        self.commands_applied = 0
        # valid commands that came before the bus first opened: the gait starts before the port appears (the
        # emulator compiling, the board's USB enumerating); nothing to move yet, and no bad input: dropped, counted
        self.commands_before_open = 0
        self._opened = False
        self.state_pub = self.create_publisher(JointState, "joint_states", SENSOR_QOS)
        self.setpoint_pub = self.create_publisher(JointState, "joint_states/setpoint", SENSOR_QOS)
        self.setpoints_sent = 0        # joint_states/setpoint messages published
        self.sub(JointTrajectory, "joint_commands", self._on_commands, RELIABLE_QOS, stamped=True)
        self.create_service(Trigger, "~/emergency_stop", self._on_estop)
        self.create_service(SetBool, "~/set_torque", self._on_set_torque)
        self._diag_ticks = 0
        self._tracker_lock = threading.Lock()  # the tracker is written by the bus thread, read by diagnostics
        self.rate_timer("fault_report_rate", self._on_diag, "diagnostics")
        self._pending = None
        self._pending_lock = threading.Lock()
        self._wake, self._stop = _Wake(), threading.Event()
        self.board = BoardSensors(self) if self.p["transport"] == "rrc" else None
        self._dither = random.random()   # the reads' dither (read_dither): where its sequence starts, in cycles
        with self.lock:
            self._try_open()
        # for the body estimate (read_dither) the bus thread stamps each read and move after its syscall returns:
        # it must get the GIL back from the executor's thread at once, not after up to the 5 ms default switch
        # interval (a move stamped late puts every set-point of it late, and the body estimate reads 1 ms as ~4 %
        # of the body's mass). Without it Python's interval stays: the forced switches cost the control process
        # ~4 % of its CPU (0.201 against 0.210 CPU-s/s, 4 interleaved pairs, BENCHMARKS.md #21)
        if self.p["read_dither"]:
            switch_for_bus()
        self._thread = threading.Thread(target=self._bus_loop, name="servo-bus", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ bus
    def _try_open(self) -> bool:
        if self.joints is not None:
            return True
        if self.closed:
            return False
        try:
            extra = ({"sync_start": self.p["sync_start"], "gpio": self.p["gpio"] or None}
                     if self.p["transport"] == "uart" else {})
            bus = open_bus(self.p["transport"], self.p["port"], baudrate=self.p["baudrate"],
                           reply_timeout=self.p["reply_timeout"], **extra)
        except Exception as exc:  # noqa: BLE001 - serial errors vary by platform; retried
            self.open_error = "cannot open %s (%s): %s" % (self.p["port"], self.p["transport"], exc)
            self._open_attempts += 1
            now = time.monotonic()
            if now - self._t_start >= self.p["open_timeout"] and now >= self._open_next_log:
                # waiting is normal while the port appears (the emulator may still be compiling): a warning
                # with the count, repeated, not an error
                self._open_next_log = now + OPEN_LOG_PERIOD
                self.get_logger().warning(
                    "waiting for the servo bus for %.0f s (%d attempts, retrying every 0.1 s): %s -- is the "
                    "robot powered and the port right (or the emulator still starting)?"
                    % (now - self._t_start, self._open_attempts, self.open_error))
            return False
        self.joints = JointServoBus(bus, self.table, read_timeout=self.p["reply_timeout"],
                                    line_model=self.p["line_model"])
        self._opened = True
        self.open_error = ""
        self.get_logger().info("servo bus open on %s (%s, %d baud, %d servos)" % (
            self.p["port"], self.p["transport"], self.p["baudrate"], len(self.table)))
        if self.board is not None:
            self.board.opened(time.monotonic())
        if self.p["torque_on_start"]:
            self._guarded_bus(self.joints.load_all)
            self.tracker.set_torque(True)
        self._configure_led_alarm()
        return True

    def _configure_led_alarm(self) -> None:
        """Write the ``led_alarm`` setting (cmd 35) and book what each servo reads back (cmd 36)."""
        bits = self.p["led_alarm"]
        if bits < 0 or not self.joints.bus.supports("write_led_alarm"):
            return
        try:
            got = self.joints.set_led_alarm(bits)
        except HardwareError as exc:
            self.reject("servo bus", "led_alarm: %s" % exc)
            return
        now = time.monotonic()
        with self._tracker_lock:
            for joint, v in got.items():
                if isinstance(v, int):
                    self.tracker.record_reply(joint, now, led_alarm=v)
        differ = sorted(j for j, v in got.items() if isinstance(v, int) and v != bits)
        if differ:
            self.reject("servo bus", "led_alarm %d written but read back otherwise from %s" % (bits, ", ".join(differ)))

    def _guarded_bus(self, fn, *args) -> Optional[str]:
        try:
            fn(*args)
        except HardwareError as exc:
            if isinstance(exc, ValueError):
                raise
            self.reject("servo bus", str(exc))
            return str(exc)
        return None

    def apply_params(self, changed: Dict[str, Any]) -> None:
        if "publish_rate" in changed:
            self._wake.set()  # the bus thread picks up the new period

    # ------------------------------------------------------------------ commands (executor thread)
    def _on_commands(self, msg: JointTrajectory) -> None:
        self.check_stamp("joint_commands", msg.header)
        points = [(p.positions, p.velocities, stamp_to_sec(p.time_from_start)) for p in msg.points]
        idx, pos, t = validate.trajectory(msg.joint_names, points, self.joint_names, self.lower, self.upper)
        if self.joints is None:
            if not self._opened:
                self.commands_before_open += 1
                return
            raise validate.CannotServe("joint_commands: servo bus not open (%s)" % self.open_error)
        if self.joints.emergency_stopped:
            raise validate.CannotServe("joint_commands: emergency stop active (call ~/set_torque true to resume)")
        target = {self.joint_names[i]: float(q) for i, q in zip(idx, pos)}
        duration = t if t > 0.0 else self.p["default_move_time"]
        with self._pending_lock:  # merged with a command the bus thread has not sent yet
            pending = self._pending[0] if self._pending else {}
            pending.update(target)
            self._pending = (pending, duration)
        self._wake.set()

    # ------------------------------------------------------------------ bus thread
    def _bus_loop(self) -> None:
        """Owns the bus: sends commands as they arrive, runs the read scheduler and publishes joint_states
        at publish_rate. Blocking serial I/O stays off the executor (a silent servo costs a reply timeout
        per read), so the node's other callbacks, and other nodes sharing the executor, are not held up."""
        next_tick = time.monotonic()      # the cycle's start; its reads at read_at (read_dither later at most)
        read_at = next_tick
        while not self._stop.is_set():
            self._wait(max(0.0, read_at - time.monotonic()))
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                with self.lock:
                    if not self._try_open():
                        next_tick = read_at = time.monotonic() + 0.1
                        continue
                    self._send_pending()
                    if self.board is not None:      # after the command: what the board sent meanwhile
                        self._board_reports()
                    now = time.monotonic()
                    if now >= read_at:
                        period = 1.0 / self.p["publish_rate"]
                        next_tick = max(next_tick + period, now)
                        read_at = next_tick + (self._next_dither() * period if self.p["read_dither"] else 0.0)
                        self._read_and_publish()
                        self._confirm_silence()
                        if self.board is not None:  # the reports that came during the reads
                            self._board_reports()
            except Exception as exc:  # noqa: BLE001 - the bus thread must survive anything
                self.errors += 1
                self.reject("bus thread", "%s: %s" % (type(exc).__name__, exc))

    def _wait(self, timeout: float) -> None:
        """Until a command comes, ``timeout`` passes or (transport rrc) the board has sent something."""
        fd = None
        joints = self.joints
        if self.board is not None and joints is not None:
            fd = joints.bus.fileno()
            if fd is None:
                timeout = min(timeout, BOARD_POLL_S)
        self._wake.wait(timeout, fd)

    def _board_reports(self) -> None:
        """Read what the board has sent (never waiting for more) and publish its reports."""
        bus = self.joints.bus
        try:
            reports = bus.poll_reports()
        except HardwareError as exc:
            self.reject("servo bus", str(exc))
            return
        self.board.ingest(bus, reports)
        self.board.check(time.monotonic())

    def _next_dither(self) -> float:
        """The next cycle's read delay, in periods: the golden-ratio sequence (each delay as far from the earlier
        ones as it can be), so a few cycles' reads cover the cycle's phases evenly, as random delays would only
        on average (the body estimate's CoM scatters half as much)."""
        self._dither = (self._dither + READ_DITHER_STEP) % 1.0
        return self._dither

    def _send_pending(self) -> None:
        with self._pending_lock:
            pending, self._pending = self._pending, None
        if pending is None or self.joints.emergency_stopped:
            return
        target, duration = pending
        try:
            self.joints.command(target, duration)
        except HardwareError as exc:
            self.reject("joint_commands", str(exc))
            return
        self.commanded.update(target)
        with self._tracker_lock:
            self.tracker.set_commanded(target)
        self.commands_applied += 1

    def _read_and_publish(self) -> None:
        """One poll of the read scheduler; ``joint_states`` with the positions it read (never a commanded value
        in their place: the predictor anchors on these as measurements)."""
        if self.p["reads_per_cycle"] <= 0 or self.joints.emergency_stopped:
            return
        stamp, t_poll = self.get_clock().now(), self.joints.time_fn()
        try:
            readings = self.joints.poll(0.5 / self.p["publish_rate"], max_reads=self.p["reads_per_cycle"])
        except HardwareError as exc:
            self.reject("servo bus", str(exc))
            return
        if readings.read_times:   # stamped at the reads' mean instant (behind a move they wait up to 15.6 ms)
            shift = sum(readings.read_times.values()) / len(readings.read_times) - t_poll
            stamp = Time(nanoseconds=stamp.nanoseconds + int(round(shift * 1e9)), clock_type=stamp.clock_type)
        with self._tracker_lock:
            self.tracker.ingest(time.monotonic(), readings)
        names = [j for j in self.joint_names if j in readings.positions]
        if not names:
            return
        msg = JointState()
        msg.header.stamp = stamp.to_msg()
        msg.name = names
        msg.position = [float(readings.positions[j]) for j in names]
        moved = []
        # the set-points only for a reader (the body estimate): a JointState publish costs the robot ~0.1-0.2 ms
        if self.setpoint_pub.get_subscription_count() > 0:
            setpoints = self.joints.setpoints_at(readings)
            # NaN: never moved; absent: the read's time is uncertain (JointServoBus.setpoints_at)
            moved = [j for j in names if not math.isnan(setpoints.get(j, math.nan))]
        if self.context.ok():  # not while rclpy shuts down (Ctrl-C) and close() is on its way
            if moved:   # first: a subscriber pairing the two by stamp mostly has the set-points when q arrives
                sp = JointState()
                sp.header.stamp = msg.header.stamp
                sp.name = moved
                sp.position = [float(setpoints[j]) for j in moved]
                self.setpoint_pub.publish(sp)
                self.setpoints_sent += 1
            self.state_pub.publish(msg)

    def _confirm_silence(self) -> None:
        """One confirmation read (``confirm_timeout``) of the servo that missed a read longest ago, if any:
        the evidence ``damage_monitor`` needs before it calls a servo lost (``damage.detection``)."""
        with self._tracker_lock:
            joint = self.tracker.pending_confirmation()
        if joint is None or self.joints.emergency_stopped:
            return
        timeout = self.p["confirm_timeout"]
        values, timed_out = {}, False
        # bracketed by another servo answering promptly just before and just after: only then was the bus, and
        # whatever answers on it, on time around the silence (an emulator starved for 0.3 s between two prompt
        # replies is far less likely than one starved across either end)
        before = self._witness(joint)
        t0 = time.monotonic()
        try:
            values["measured"] = self.joints.read_position(joint, timeout)
            self.joints.mark_responsive(joint)
        except ServoTimeout:
            timed_out = True
        except ServoError:
            pass  # a corrupted reply: something answered; no evidence of silence
        except HardwareError as exc:
            self.reject("servo bus", str(exc))
            return
        now = time.monotonic()
        witness = timed_out and before and self._witness(joint)
        with self._tracker_lock:
            self.tracker.record_confirmation(joint, now, now - t0, timeout, timed_out, witness, **values)

    def _witness(self, joint: str) -> bool:
        """Around a confirmation read: does another servo answer within the normal reply timeout, read on time?
        Only then was a silence the servo's, not a starved bus or process."""
        with self._tracker_lock:
            other = self.tracker.witness_for(joint)
        if other is None:
            return False
        # prompt = within a third of the confirmation's timeout: a starved bus or emulator is late across all
        # three reads, while the reading thread itself may wait for the interpreter a few tens of ms (a node
        # sharing its process with the whole robot graph: a witness held to reply_timeout failed there)
        timeout = max(self.p["reply_timeout"], self.p["confirm_timeout"] / 3.0)
        t0 = time.monotonic()
        try:
            q = self.joints.read_position(other, timeout)
        except HardwareError:     # silent too, corrupted, or the bus failed: the confirmation proves nothing
            return False
        now = time.monotonic()
        with self._tracker_lock:
            self.tracker.record_reply(other, now, measured=q)
        return now - t0 <= read_deadline(timeout)

    def _on_estop(self, request, response):
        with self.lock:
            return self._estop(response)

    def _estop(self, response):
        if self.joints is None:
            response.success, response.message = False, "servo bus not open: " + self.open_error
            return response
        errors = self.joints.emergency_stop()
        self.tracker.set_torque(False)
        self.get_logger().warning("emergency stop: servos stopped and unloaded; moves refused until "
                                  "~/set_torque true")
        response.success = not errors
        response.message = "torque off" + ("; errors: %s" % "; ".join(map(str, errors)) if errors else "")
        return response

    def _on_set_torque(self, request, response):
        with self.lock:
            return self._set_torque(request, response)

    def _set_torque(self, request, response):
        if self.joints is None:
            response.success, response.message = False, "servo bus not open: " + self.open_error
            return response
        if request.data:
            self.joints.reset_emergency_stop()
            err = self._guarded_bus(self.joints.load_all)
        else:
            err = self._guarded_bus(self.joints.unload_all)
        if err is None:
            self.tracker.set_torque(bool(request.data))
        response.success = err is None
        response.message = err or ("torque on" if request.data else "torque off")
        return response

    def _on_diag(self) -> None:
        """Every servo at ``diagnostics_rate``; servos that miss replies, read outside their own voltage /
        temperature limits, or are far from their command at ``fault_report_rate`` (what damage_monitor needs
        to be quick, without flooding /diagnostics)."""
        self._diag_ticks += 1
        full = self._diag_ticks % max(1, int(round(self.p["fault_report_rate"] / self.p["diagnostics_rate"]))) == 0
        with self._tracker_lock:
            snapshot = self.tracker.snapshot(time.monotonic())
        statuses = []
        for h in snapshot:
            # 0.2 rad: well below damage_monitor's stall threshold (0.6), so a stall is followed at the fast rate
            if full or h.consecutive_misses or h.measured_faults or abs(h.position_error) > 0.2:  # NaN: False
                level, message, values = encode_servo_status(h)
                statuses.append(status("%s: servo %d (%s)" % (self.get_name(), h.servo_id, h.joint), message,
                                       level, values, hardware_id="bus_servo_%d" % h.servo_id))
        if full:
            joints = self.joints
            with self._tracker_lock:
                silent = self.tracker.bus_silent_for(time.monotonic())
            if joints is None:
                statuses.insert(0, self.node_status(self.open_error or "opening the bus", 2, [
                    ("commands_before_open", self.commands_before_open)]))
            else:
                level, message = (1, "e-stop active") if joints.emergency_stopped else (0, "running")
                if silent > 1.0 and self.p["reads_per_cycle"] > 0:
                    level, message = 2, "no servo has answered for %.1f s (bus, wiring or servo power?)" % silent
                statuses.insert(0, self.node_status(message, level, [
                    ("port", self.p["port"]), ("commands_applied", self.commands_applied),
                    ("commands_before_open", self.commands_before_open),
                    ("bus_silent_s", silent), ("led_alarm", self.p["led_alarm"])]))
        if full and self.board is not None:
            statuses.insert(1, self.board.status(time.monotonic()))
        if statuses:
            self.publish_diagnostics(statuses)

    def close(self) -> None:
        """Torque off and close the bus (called on shutdown)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
        with self.lock:
            self.closed = True
            if self.joints is None:
                self._wake.close()
                return
            self.joints.close()
            self.joints = None
            self._wake.close()
            self.get_logger().info("servos unloaded (torque off), bus closed")


NODE = ServoDriver  # the class graph.node_class() finds


def main(args=None):
    return run(ServoDriver, args)


if __name__ == "__main__":
    main()
