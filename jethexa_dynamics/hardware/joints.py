"""Joint layer over a :class:`ServoBus`: radians in URDF joint order, limits, group moves, read scheduling.

* :meth:`JointServoBus.command` validates every joint (finite, inside its limits) **before** a byte is sent,
  then writes all servos in one group write.
* :meth:`JointServoBus.poll` spends a time budget on reads, round-robin over the servos: mostly positions,
  with a voltage / temperature / load read every ``aux_every`` reads (each servo's first one reads its VIN
  and temperature limits instead). A measurement outside the servo's own limits is a :class:`ServoFault`
  (``errors.measured_faults``); the LED alarm setting (cmd 36) is never read as a fault. A full position read of 18
  servos takes > 100 ms at 115200 baud, so each control tick gets a few reads only. Servos that stop
  answering are marked offline and retried only every ``offline_retry_every`` rounds, so a dead servo
  never eats the budget of the healthy ones.
* :meth:`unload_all`, :meth:`emergency_stop` and :meth:`close` take the torque off.

No rclpy here; the ``servo_driver`` node wraps this class.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .bus import BROADCAST_ID, ServoBus
from .errors import (BusClosedError, EmergencyStopActive, HardwareError, ParameterError, ServoError, ServoFault,
                     UnsupportedCommand, measured_faults)
from .protocol import MAX_MOVE_TIME_S
from .servo_table import ServoSpec, ServoTable
from .setpoints import ServoSetpoints

__all__ = ["JointReadings", "ServoHealth", "JointServoBus"]

log = logging.getLogger(__name__)
#: s: a position read whose round trip exceeds its wire time by more than this has no set-point (``setpoints_at``):
#: its instant is uncertain by half the excess, and a set-point 1 ms off moves the body estimate's mass by ~4 %
READ_TIME_SLACK_S = 0.001
#: periods: the step of the servo driver's read dither (``read_dither``), the golden ratio's fractional part: each
#: cycle's read delay lands as far from the earlier ones as it can, the cycle's phases covered evenly
READ_DITHER_STEP = (math.sqrt(5.0) - 1.0) / 2.0
Positions = Union[Mapping[str, float], Sequence[float]]



@dataclass
class JointReadings:
    """What one :meth:`JointServoBus.poll` obtained. Keys are joint names.

    positions [rad, URDF convention], voltages [V], temperatures [deg C], loads (LOAD_OR_UNLOAD_READ: True =
    torque on), limits ((temp_max [deg C], vin_min [mV], vin_max [mV]) read from the servo), faults (a
    :class:`ServoFault` for a voltage/temperature read outside that servo's limits), errors (the typed
    exception of each failed read), ``stamp`` (time_fn at the start), ``elapsed`` [s] spent on the bus,
    ``reads`` attempted, ``read_times`` (time_fn at the middle of each position read: request sent, reply in;
    with the line modelled (``JointServoBus`` ``line_model``) when its request was through the line: the servo
    samples then, and a request written while the line still carries earlier bytes goes out after them),
    ``read_spans`` [s] (each position read's round trip, from when its request could go out: a longer one than the
    wire time leaves its instant uncertain). Only joints read in this poll appear.
    """

    stamp: float
    positions: Dict[str, float] = field(default_factory=dict)
    voltages: Dict[str, float] = field(default_factory=dict)
    temperatures: Dict[str, float] = field(default_factory=dict)
    loads: Dict[str, bool] = field(default_factory=dict)
    limits: Dict[str, Tuple[float, float, float]] = field(default_factory=dict)
    faults: Dict[str, ServoFault] = field(default_factory=dict)
    errors: Dict[str, HardwareError] = field(default_factory=dict)
    read_times: Dict[str, float] = field(default_factory=dict)
    read_spans: Dict[str, float] = field(default_factory=dict)
    elapsed: float = 0.0
    reads: int = 0


@dataclass
class ServoHealth:
    """Per-joint bus health: ``online`` False after ``offline_after`` consecutive failed reads; the servo's
    own limits once read (``temp_limit_c`` [deg C], ``vin_limits_mv`` (min, max) [mV]), its last voltage
    [mV] and temperature [deg C], and the ``faults`` they show (``errors.measured_faults``)."""

    joint: str
    servo_id: int
    online: bool = True
    consecutive_failures: int = 0
    last_ok: Optional[float] = None
    last_error: Optional[HardwareError] = None
    temp_limit_c: float = math.nan
    vin_limits_mv: Tuple[float, float] = (math.nan, math.nan)
    vin_mv: float = math.nan
    temperature_c: float = math.nan
    faults: List[str] = field(default_factory=list)

    @property
    def limits_known(self) -> bool:
        return not math.isnan(self.temp_limit_c)


class JointServoBus:
    """The robot's 18 joints on one servo bus.

    ``bus``: a :class:`ServoBus` (DirectUartBus / RrcBoardBus). ``table``: the :class:`ServoTable`.
    ``limits``: optional extra {joint: (lo, hi)} [rad], intersected with the table's (URDF and servo range).
    ``read_timeout``: reply timeout of scheduled reads [s] (None = the bus default).
    ``aux_every``: one voltage/temperature/load (or, once per servo, limits) read after this many position
    reads.
    ``offline_after`` consecutive failures mark a servo offline; offline servos are retried once every
    ``offline_retry_every`` read rounds.
    ``line_model``: the set-points and read times follow the bytes through the line (``ServoBus.move_receipts``:
    each servo acts on its frame's last byte, the 18th of a group move 15.6 ms after the first at 115200 baud; a
    read written behind a move waits for it), as on the robot's UART and ``BusEmulator(line_rate=...)``; off
    (default) for a bus with no line time (the emulator as the sim graph runs it): moves start, and reads are
    timed, as written. A line shared by an 18-servo move at 50 Hz has 4.4 ms of each 20 ms free, so reads land
    right after the moves, each servo's at its own instant of its move (``damage.body_load``).
    """

    AUX_KINDS = ("voltage", "temperature", "load")

    def __init__(self, bus: ServoBus, table: ServoTable, limits: Optional[Mapping[str, Tuple[float, float]]] = None,
                 read_timeout: Optional[float] = None, aux_every: int = 6, offline_after: int = 3,
                 offline_retry_every: int = 5, time_fn: Callable[[], float] = time.monotonic,
                 line_model: bool = False):
        if aux_every < 1:
            raise ParameterError("aux_every", aux_every, 1, None)
        self.bus = bus
        self.table = table.with_limits(limits) if limits else table
        self.read_timeout = read_timeout
        self.aux_every, self.offline_after, self.offline_retry_every = aux_every, offline_after, offline_retry_every
        self.time_fn = time_fn
        self.health: Dict[str, ServoHealth] = {s.joint: ServoHealth(s.joint, s.servo_id) for s in self.table}
        self._pos_i = 0
        self._aux_i = 0
        self._since_aux = 0
        self._round = 0
        self._estop = False
        self._closed = False
        self._aux = [k for k in self.AUX_KINDS if k != "load" or bus.supports("read_torque")]
        self._read_limits = bus.supports("read_voltage_limits") and bus.supports("read_temperature_limit")
        self._cost: Dict[str, float] = {}
        self._wire: Dict[str, float] = {}      # bus.read_time per kind (fixed by the bus's line rate): asked once
        #: last commanded {joint: rad}, its duration [s] and time
        self.last_command: Dict[str, float] = {}
        self.last_command_duration = 0.0
        self.last_command_time: Optional[float] = None
        #: each servo's set-point over time from the moves sent (goals as sent: whole ticks, whole ms)
        self.setpoints = ServoSetpoints(self.joint_names)
        #: time_fn value when the line is through with the moves and reads sent (a write queues behind it;
        #: ``line_model`` only)
        self.line_free = -math.inf
        self.line_model = bool(line_model)

    # -- properties -------------------------------------------------------------------------------------
    @property
    def joint_names(self) -> Tuple[str, ...]:
        return self.table.joint_names

    @property
    def emergency_stopped(self) -> bool:
        return self._estop

    def limits(self, joint: str) -> Tuple[float, float]:
        s = self.table.by_joint(joint)
        return s.lower, s.upper

    # -- commands ---------------------------------------------------------------------------------------
    def _resolve(self, positions: Positions) -> List[Tuple[ServoSpec, float]]:
        if isinstance(positions, Mapping):
            return [(self.table.by_joint(j), q) for j, q in positions.items()]
        try:
            values = list(positions)
        except TypeError:
            raise ParameterError("positions", positions, detail="expected a mapping joint -> rad or a sequence") \
                from None
        if len(values) != len(self.table):
            raise ParameterError("positions length", len(values), len(self.table), len(self.table),
                                 "one value per joint in the order %s" % ", ".join(self.joint_names))
        return list(zip(self.table, values))

    def command(self, positions: Positions, duration_s: float) -> None:
        """Move joints to ``positions`` [rad] in ``duration_s`` [s] with one group write.

        ``positions``: {joint: rad} (any subset) or a sequence in :attr:`joint_names` order.
        Every value is checked (finite, inside the joint's limits) before anything is sent;
        :class:`JointLimitError` names the first bad joint. ``duration_s`` in [0, 30] s.
        """
        self._check_usable()
        if self._estop:
            raise EmergencyStopActive("emergency stop is active; call reset_emergency_stop() first")
        try:
            d = float(duration_s)
        except (TypeError, ValueError):
            raise ParameterError("duration_s", duration_s, 0.0, MAX_MOVE_TIME_S) from None
        if not (math.isfinite(d) and 0.0 <= d <= MAX_MOVE_TIME_S):
            raise ParameterError("duration_s", duration_s, 0.0, MAX_MOVE_TIME_S)
        items = self._resolve(positions)
        targets = [(spec.servo_id, spec.to_ticks(q)) for spec, q in items]  # raises before any byte is sent
        ms = int(round(d * 1000.0))
        # the move starts when its bytes go out, not when the write returned: the thread may get the GIL (or the
        # CPU) back ms later, and every set-point of the move would be that late (the sim graph: -0.85 ms median);
        # each servo has it when its frame is through the line (up to 15.6 ms later for 18 at 115200 baud)
        now = self.time_fn()
        start = max(now, self.line_free)
        self.bus.move(targets, ms)
        receipts = ()
        if self.line_model:
            self.line_free = start + self.bus.move_time(len(targets))
            receipts = self.bus.move_receipts(len(targets))
        for spec, q in items:
            self.last_command[spec.joint] = float(q)
        self.last_command_duration, self.last_command_time = d, now
        self.setpoints.move(start, {spec.joint: spec.to_rad(ticks) for (spec, _), (_, ticks) in zip(items, targets)},
                            ms / 1000.0, receipts)

    def setpoints_at(self, readings: JointReadings, max_slack: float = READ_TIME_SLACK_S) -> Dict[str, float]:
        """Each position read of ``readings`` whose time is known well enough: the servo's set-point at its read
        time [rad] (NaN: never moved). A read whose round trip took more than its wire time plus ``max_slack``
        [s] (the OS or the servo held it up: its instant is uncertain by half of that) gets none."""
        limit = self.bus.read_time("position") + max_slack
        return self.setpoints.at_times({j: t for j, t in readings.read_times.items()
                                        if readings.read_spans.get(j, 0.0) <= limit})

    def stop(self) -> None:
        """Stop all servos where they are (torque stays on)."""
        self._check_usable()
        self.bus.stop([BROADCAST_ID])
        self.setpoints.stop(self.time_fn())

    def load_all(self) -> None:
        """Torque on for every servo of the table."""
        self._check_usable()
        if self._estop:
            raise EmergencyStopActive("emergency stop is active; call reset_emergency_stop() first")
        self.bus.set_torque(list(self.table.servo_ids), True)

    def unload_all(self) -> None:
        """Torque off: one broadcast frame, then each servo by ID (a servo may miss the broadcast)."""
        self._check_usable()
        self.bus.set_torque([BROADCAST_ID], False)
        self.bus.set_torque(list(self.table.servo_ids), False)

    def set_led_alarm(self, bits: int) -> Dict[str, Union[int, HardwareError]]:
        """Write the LED alarm setting ``bits`` (0..7; cmd 35) to every servo and read it back (cmd 36).

        Returns {joint: setting read back, or the error of that servo}. The setting only says which conditions
        flash the servo's LED; it is configuration, never a fault source. :class:`UnsupportedCommand` if the
        transport does not carry cmd 35/36 (the RRC board).
        """
        self._check_usable()
        if not self.bus.supports("write_led_alarm"):
            raise UnsupportedCommand(None, "not supported by %s" % type(self.bus).__name__, command="write_led_alarm")
        out: Dict[str, Union[int, HardwareError]] = {}
        for spec in self.table:
            self.bus.write_led_alarm(spec.servo_id, bits)
        for spec in self.table:
            try:
                out[spec.joint] = int(self.bus.read_led_alarm(spec.servo_id, self.read_timeout))
            except ServoError as exc:
                out[spec.joint] = exc.with_joint(spec.joint)
        return out

    def emergency_stop(self) -> List[HardwareError]:
        """Stop and unload every servo, best effort (never raises for bus errors), and refuse further
        :meth:`command` calls until :meth:`reset_emergency_stop`. Returns the errors met on the way."""
        self._estop = True
        errors: List[HardwareError] = []
        if self._closed:
            return errors
        self.setpoints.stop(self.time_fn())
        for step in (lambda: self.bus.stop([BROADCAST_ID]), self.unload_all):
            try:
                step()
            except (HardwareError, OSError) as exc:  # keep going: the unload matters more than the stop
                log.error("emergency stop: %s", exc)
                errors.append(exc if isinstance(exc, HardwareError) else HardwareError(str(exc)))
        return errors

    def reset_emergency_stop(self) -> None:
        """Allow commands again (the next move re-loads the servos)."""
        self._estop = False

    def close(self) -> None:
        """Unload all servos (best effort) and close the bus. Idempotent."""
        if self._closed:
            return
        try:
            self.unload_all()
        except (HardwareError, OSError) as exc:
            log.error("unload on close failed: %s", exc)
        finally:
            self._closed = True
            self.bus.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check_usable(self) -> None:
        if self._closed:
            raise BusClosedError("JointServoBus is closed")

    # -- reads ------------------------------------------------------------------------------------------
    def _read(self, spec: ServoSpec, kind: str, out: JointReadings) -> None:
        h = self.health[spec.joint]
        t0 = time.monotonic()
        ta = self._line_start()
        timeout = self._timeout(self.read_timeout, ta)
        try:
            if kind == "position":
                out.positions[spec.joint] = spec.to_rad(self.bus.read_position(spec.servo_id, timeout))
                tb = self.time_fn()
                out.read_times[spec.joint] = ta + self.bus.request_time("position") if self.line_model \
                    else 0.5 * (ta + tb)
                out.read_spans[spec.joint] = tb - ta
            elif kind == "voltage":
                h.vin_mv = float(self.bus.read_voltage(spec.servo_id, timeout))
                out.voltages[spec.joint] = h.vin_mv / 1000.0
                self._classify(spec, h, out)
            elif kind == "temperature":
                h.temperature_c = float(self.bus.read_temperature(spec.servo_id, timeout))
                out.temperatures[spec.joint] = h.temperature_c
                self._classify(spec, h, out)
            elif kind == "load":
                out.loads[spec.joint] = bool(self.bus.read_torque(spec.servo_id, timeout))
            else:  # limits
                lo, hi = self.bus.read_voltage_limits(spec.servo_id, timeout)
                tmax = self.bus.read_temperature_limit(spec.servo_id, timeout)
                h.vin_limits_mv, h.temp_limit_c = (float(lo), float(hi)), float(tmax)
                out.limits[spec.joint] = (h.temp_limit_c, h.vin_limits_mv[0], h.vin_limits_mv[1])
                self._classify(spec, h, out)
        except UnsupportedCommand:
            if kind == "limits":
                self._read_limits = False
            self._aux = [k for k in self._aux if k != kind]
            return
        except ServoError as exc:
            exc = exc.with_joint(spec.joint)
            out.errors[spec.joint] = exc
            h.consecutive_failures += 1
            h.last_error = exc
            if h.online and h.consecutive_failures >= self.offline_after:
                h.online = False
                log.warning("%s marked offline: %s", spec.joint, exc)
        else:
            h.consecutive_failures = 0
            h.last_ok = self.time_fn()
            if not h.online:
                log.info("%s back online", spec.joint)
            h.online = True
        finally:
            out.reads += 1
            self._line_through(ta, kind)
            dt = time.monotonic() - t0
            old = self._cost.get(kind)
            # cost estimate of successful-or-not reads; the wire time is the floor
            self._cost[kind] = max(self._read_time(kind), dt if old is None else 0.8 * old + 0.2 * dt)

    def read_position(self, joint: str, timeout: Optional[float] = None) -> float:
        """One position read of ``joint`` [rad] outside the schedule (no health bookkeeping; the bus's errors
        raised), its request after the bytes still on the line."""
        spec = self.table.by_joint(joint)
        ta = self._line_start()
        try:
            return spec.to_rad(self.bus.read_position(spec.servo_id, self._timeout(timeout, ta)))
        finally:
            self._line_through(ta, "position")

    def _line_start(self) -> float:
        """When a request written now goes out [time_fn]: now, or once the line is through with what is on it."""
        return max(self.time_fn(), self.line_free)

    def _line_through(self, ta: float, kind: str) -> None:
        """A read of ``kind`` whose request went out at ``ta`` is over: the line is free once its request and reply
        are through (``line_model``; a real read that took longer: when it returned)."""
        if self.line_model:
            self.line_free = max(self.time_fn(), ta + self._read_time(kind))

    def _timeout(self, timeout: Optional[float], ta: float) -> Optional[float]:
        """A read's reply timeout [s] from its write: ``timeout`` (None: the bus's) plus the wait for the line
        (``line_model``: a request written behind a move goes out up to 15.6 ms later)."""
        wait = ta - self.time_fn() if self.line_model else 0.0
        if wait <= 0.0:
            return timeout
        return (self.bus.reply_timeout if timeout is None else timeout) + wait

    def _read_time(self, kind: str) -> float:
        t = self._wire.get(kind)
        if t is None:
            t = self._wire[kind] = self.bus.read_time(kind)
        return t

    @staticmethod
    def _classify(spec: ServoSpec, h: ServoHealth, out: JointReadings) -> None:
        """Faults of the servo's latest voltage/temperature against its own limits (none before the limits
        are read: the protocol gives no other source of over-temperature / over- or under-voltage)."""
        h.faults = measured_faults(h.temperature_c, h.temp_limit_c, h.vin_mv, *h.vin_limits_mv)
        if h.faults:
            out.faults[spec.joint] = ServoFault(spec.servo_id, spec.joint, h.faults, "%.0f mV in [%.0f, %.0f], "
                                                "%.0f degC, max %.0f" % (h.vin_mv, h.vin_limits_mv[0],
                                                                         h.vin_limits_mv[1], h.temperature_c,
                                                                         h.temp_limit_c))

    def mark_responsive(self, joint: str) -> None:
        """A read outside the scheduler (e.g. the driver's confirmation read) got a valid reply from ``joint``:
        it is online again and read on every round, not only on retry rounds."""
        h = self.health[self.table.by_joint(joint).joint]
        h.consecutive_failures = 0
        h.last_ok = self.time_fn()
        if not h.online:
            log.info("%s back online", joint)
        h.online = True

    def _next(self) -> Tuple[ServoSpec, str]:
        """Next (servo, kind) of the round-robin; skips offline servos except on retry rounds."""
        n = len(self.table)
        aux = bool(self._aux) and self._since_aux >= self.aux_every
        for _ in range(2 * n):
            if aux:
                i = self._aux_i % (n * len(self._aux))
                spec, kind = self.table[i // len(self._aux)], self._aux[i % len(self._aux)]
                self._aux_i += 1
                if self._read_limits and not self.health[spec.joint].limits_known:
                    kind = "limits"  # faults are judged against the servo's own limits: read them first
            else:
                spec, kind = self.table[self._pos_i], "position"
                self._pos_i = (self._pos_i + 1) % n
                if self._pos_i == 0:
                    self._round += 1
            if self.health[spec.joint].online or self._round % self.offline_retry_every == 0:
                break
        if aux:
            self._since_aux = 0
        else:
            self._since_aux += 1
        return spec, kind

    def poll(self, budget_s: float, max_reads: Optional[int] = None) -> JointReadings:
        """Do scheduled reads for at most about ``budget_s`` [s] (a read is started only if its estimated
        cost fits the remaining budget; at least one read per call). Returns what was obtained."""
        self._check_usable()
        if not budget_s > 0:
            raise ParameterError("budget_s", budget_s, "> 0", None)
        out = JointReadings(stamp=self.time_fn())
        # the budget runs from when the line is free (a move's bytes may still be on it: up to 15.6 ms)
        t_start = time.monotonic()
        t0 = t_start + max(0.0, self.line_free - out.stamp)
        while True:
            spec, kind = self._next()
            self._read(spec, kind, out)
            if max_reads is not None and out.reads >= max_reads:
                break
            remaining = budget_s - (time.monotonic() - t0)
            nxt = min(self._cost[k] if k in self._cost else self._read_time(k)
                      for k in ["position"] + list(self._aux))
            if remaining < nxt:
                break
        out.elapsed = time.monotonic() - t_start
        return out

    def tick(self, budget_s: float = 0.004) -> JointReadings:
        """One control tick's reads (default budget: what is left of a 20 ms tick after an 18-servo move)."""
        return self.poll(budget_s)

    def read_all_positions(self, timeout: Optional[float] = None) -> Tuple[Dict[str, float], Dict[str, HardwareError]]:
        """Blocking read of every joint position [rad] (~ 0.1-0.2 s on the robot's bus); (positions, errors)."""
        self._check_usable()
        pos: Dict[str, float] = {}
        errs: Dict[str, HardwareError] = {}
        for spec in self.table:
            try:
                pos[spec.joint] = spec.to_rad(self.bus.read_position(spec.servo_id, timeout))
            except ServoError as exc:
                errs[spec.joint] = exc.with_joint(spec.joint)
        return pos, errs
