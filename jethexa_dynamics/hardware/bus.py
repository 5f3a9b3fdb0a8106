"""Servo-bus transports behind one interface: the Jetson's direct UART and the STM32 (RRC) board.

Units at this layer are the servo's own: position in ticks (0..1000, 500 = centre), time in ms, voltage in
mV, temperature in deg C. Radians live in :mod:`.joints`. Both transports are opened by a port path (or a
pyserial URL), so the emulator's pty path works exactly like ``/dev/ttyTHS1``.

Reads are request/reply with a deadline: a missing, truncated or corrupted reply raises
:class:`ServoTimeout` or :class:`ChecksumError` naming the servo and command; stale bytes are flushed
before each request and replies from other servos are ignored, so one bad servo never poisons the next read.
"""
from __future__ import annotations

import abc
import logging
import struct
import threading
import time
from collections import deque
from typing import Callable, Optional, Sequence, Tuple, Union

import serial

try:
    import termios
    _PORT_ERRORS = (serial.SerialException, OSError, termios.error)  # tcflush on a hung-up tty: termios.error
except ImportError:  # pragma: no cover - not POSIX
    _PORT_ERRORS = (serial.SerialException, OSError)

from . import protocol as P
from . import rrc as R
from .errors import (BusClosedError, BusIOError, ChecksumError, FrameError, ParameterError, ServoTimeout,
                     UnsupportedCommand)

__all__ = ["ServoBus", "DirectUartBus", "RrcBoardBus", "open_bus", "BROADCAST_ID"]

log = logging.getLogger(__name__)
BROADCAST_ID = P.BROADCAST_ID
Targets = Sequence[Tuple[int, int]]


class ServoBus(abc.ABC):
    """A bus of Hiwonder servos. Thread-safe: one transaction at a time.

    Subclasses implement the core (group move, stop, torque, position/voltage/temperature reads); optional
    commands raise :class:`UnsupportedCommand` where the transport cannot carry them.
    """

    #: Serial port path or URL and line rate.
    port: str
    baudrate: int
    #: Default reply timeout [s] of a read.
    reply_timeout: float

    # -- core -------------------------------------------------------------------------------------------
    @abc.abstractmethod
    def move(self, targets: Targets, time_ms: int) -> None:
        """Group move: every ``(servo_id, position_ticks)`` in one write, arriving after ``time_ms``."""

    @abc.abstractmethod
    def stop(self, servo_ids: Sequence[int]) -> None:
        """Stop the servos where they are (MOVE_STOP)."""

    @abc.abstractmethod
    def set_torque(self, servo_ids: Sequence[int], enabled: bool) -> None:
        """Load (hold position) or unload (limp) the servos; ``BROADCAST_ID`` addresses all."""

    @abc.abstractmethod
    def read_position(self, servo_id: int, timeout: Optional[float] = None) -> int:
        """Present position [ticks] (signed: may read slightly below 0)."""

    @abc.abstractmethod
    def read_voltage(self, servo_id: int, timeout: Optional[float] = None) -> int:
        """Supply voltage at the servo [mV]."""

    @abc.abstractmethod
    def read_temperature(self, servo_id: int, timeout: Optional[float] = None) -> int:
        """Internal temperature [deg C]."""

    @abc.abstractmethod
    def close(self) -> None:
        """Close the port (does not unload: the joint layer does that first)."""

    @abc.abstractmethod
    def read_time(self, kind: str) -> float:
        """Wire time [s] of one read of ``kind`` ('position', 'voltage', 'temperature', 'load', or 'limits' =
        the VIN and temperature limits, two reads), request plus reply at the line rate; the lower bound for
        scheduling."""

    @abc.abstractmethod
    def move_time(self, n_servos: int) -> float:
        """Wire time [s] of a group move of ``n_servos``."""

    def move_receipts(self, n_servos: int) -> Tuple[float, ...]:
        """When each servo of a group move of ``n_servos`` has its move [s after its first byte went out], in the
        targets' order: a servo acts on its frame's last byte. Here all at the move's end (one packet; what a
        board does after it is not modelled)."""
        return (self.move_time(n_servos),) * n_servos

    @abc.abstractmethod
    def request_time(self, kind: str = "position") -> float:
        """Wire time [s] of the request of a read of ``kind``: the servo samples when it has it."""

    # -- optional ---------------------------------------------------------------------------------------
    def _unsupported(self, what: str, servo_id: Optional[int] = None):
        raise UnsupportedCommand(servo_id, "not supported by %s" % type(self).__name__, command=what)

    def supports(self, feature: str) -> bool:
        """True if the optional command ``feature`` (method name, e.g. 'read_led_alarm') is carried."""
        return getattr(type(self), feature, None) is not getattr(ServoBus, feature, None)

    def move_prepare(self, targets: Targets, time_ms: int) -> None:
        """Preload moves (MOVE_TIME_WAIT_WRITE); they start on :meth:`move_start`."""
        self._unsupported("move_prepare")

    def move_start(self, servo_id: int = BROADCAST_ID) -> None:
        self._unsupported("move_start", servo_id)

    def read_led_alarm(self, servo_id: int, timeout: Optional[float] = None) -> int:
        """LED alarm *setting* (LED_ERROR_READ, 36): which conditions make the LED flash (1 over-temperature,
        2 over-voltage, 4 locked rotor). It reads back what :meth:`write_led_alarm` wrote; it is not a fault
        register (reference §1.2): faults come from TEMP_READ/VIN_READ against the limits."""
        self._unsupported("read_led_alarm", servo_id)

    def write_led_alarm(self, servo_id: int, bits: int) -> None:
        """Set which conditions make the LED flash (LED_ERROR_WRITE, 35), bits 0..7."""
        self._unsupported("write_led_alarm", servo_id)

    def read_torque(self, servo_id: int, timeout: Optional[float] = None) -> bool:
        self._unsupported("read_torque", servo_id)

    def read_id(self, servo_id: int = BROADCAST_ID, timeout: Optional[float] = None) -> int:
        """ID of the servo (broadcast only with a single servo on the bus)."""
        self._unsupported("read_id", servo_id)

    def write_id(self, servo_id: int, new_id: int) -> None:
        self._unsupported("write_id", servo_id)

    def adjust_offset(self, servo_id: int, offset_ticks: int) -> None:
        """Angle offset -125..125 ticks (+-30 deg), not persisted until :meth:`save_offset`."""
        self._unsupported("adjust_offset", servo_id)

    def save_offset(self, servo_id: int) -> None:
        self._unsupported("save_offset", servo_id)

    def read_offset(self, servo_id: int, timeout: Optional[float] = None) -> int:
        self._unsupported("read_offset", servo_id)

    def write_angle_limits(self, servo_id: int, lo: int, hi: int) -> None:
        self._unsupported("write_angle_limits", servo_id)

    def read_angle_limits(self, servo_id: int, timeout: Optional[float] = None) -> Tuple[int, int]:
        self._unsupported("read_angle_limits", servo_id)

    def write_voltage_limits(self, servo_id: int, lo_mv: int, hi_mv: int) -> None:
        self._unsupported("write_voltage_limits", servo_id)

    def read_voltage_limits(self, servo_id: int, timeout: Optional[float] = None) -> Tuple[int, int]:
        self._unsupported("read_voltage_limits", servo_id)

    def write_temperature_limit(self, servo_id: int, max_c: int) -> None:
        self._unsupported("write_temperature_limit", servo_id)

    def read_temperature_limit(self, servo_id: int, timeout: Optional[float] = None) -> int:
        self._unsupported("read_temperature_limit", servo_id)

    def set_led(self, servo_id: int, on: bool) -> None:
        self._unsupported("set_led", servo_id)

    def read_led(self, servo_id: int, timeout: Optional[float] = None) -> bool:
        self._unsupported("read_led", servo_id)

    def set_motor_mode(self, servo_id: int, motor: bool, speed: int = 0) -> None:
        self._unsupported("set_motor_mode", servo_id)

    def read_motor_mode(self, servo_id: int, timeout: Optional[float] = None) -> Tuple[bool, int]:
        self._unsupported("read_motor_mode", servo_id)

    def read_move_target(self, servo_id: int, timeout: Optional[float] = None) -> Tuple[int, int]:
        """Last MOVE_TIME_WRITE (position ticks, time ms)."""
        self._unsupported("read_move_target", servo_id)

    def read_prepared_move(self, servo_id: int, timeout: Optional[float] = None) -> Tuple[int, int]:
        self._unsupported("read_prepared_move", servo_id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _SerialBus(ServoBus):
    """Shared pyserial plumbing: open by path/URL, one lock, deadline-driven reply matching."""

    _parser: Union[P.FrameParser, R.PacketParser]

    def __init__(self, port: str, baudrate: int, reply_timeout: float, retries: int,
                 serial_factory: Optional[Callable[..., serial.SerialBase]]):
        if not reply_timeout > 0:
            raise ParameterError("reply_timeout [s]", reply_timeout, "> 0", None)
        if retries < 0:
            raise ParameterError("retries", retries, 0, None)
        self.port, self.baudrate = port, int(baudrate)
        self.reply_timeout, self.retries = float(reply_timeout), int(retries)
        factory = serial_factory or serial.serial_for_url
        try:
            # the read timeout is only the polling granularity; replies are matched against our own deadline
            self._ser = factory(port, baudrate=self.baudrate, timeout=0.005, write_timeout=1.0)
        except _PORT_ERRORS + (ValueError,) as exc:
            raise BusIOError("cannot open servo bus %s at %d baud: %s" % (port, self.baudrate, exc)) from exc
        self._lock = threading.RLock()
        self._closed = False
        #: counters for diagnostics
        self.stats = {"requests": 0, "timeouts": 0, "checksum_errors": 0, "stray_replies": 0, "writes": 0}

    def _report(self, t: float, event) -> bool:
        """Take ``event`` (received at ``t`` [s, monotonic]) if it is an unasked report of the device, not a reply
        (True); the servos' own bus has none."""
        return False

    def _flush_stale(self) -> None:
        """Before a request: drop the bytes received since the last one (late replies) and any partial frame."""
        self._ser.reset_input_buffer()
        self._parser.reset()

    def _check_open(self) -> None:
        if self._closed:
            raise BusClosedError("%s on %s is closed" % (type(self).__name__, self.port))

    def _write(self, data: bytes, then_receive: bool = False) -> None:
        self._ser.write(data)
        self.stats["writes"] += 1

    def _await(self, matches, servo_id: int, name: str, timeout: float):
        """Read until an event satisfying ``matches(event)`` arrives (returns it) or the deadline passes."""
        deadline = time.monotonic() + timeout
        bad = None
        last_drain = False
        while True:
            n = self._ser.in_waiting
            chunk = self._ser.read(n) if last_drain else self._ser.read(n if n > 0 else 1)
            t_chunk = time.monotonic()
            found = None
            for ev in self._parser.feed(chunk) if chunk else ():
                if self._report(t_chunk, ev) or found is not None:
                    continue    # a report (kept), or what came after the reply in its chunk (a report kept)
                kind = matches(ev)
                if kind == "ok":
                    found = ev
                    continue
                if kind == "bad":
                    # our reply, corrupted: it will not come again, fail now instead of at the deadline
                    self.stats["checksum_errors"] += 1
                    raise ChecksumError(servo_id, "corrupted reply %s (%s)" % (ev.raw.hex(" "), ev.reason),
                                        command=name)
                if kind == "bad-other":
                    bad = ev
                else:
                    self.stats["stray_replies"] += 1
            if found is not None:
                return found
            if last_drain:
                break
            if time.monotonic() >= deadline:
                # a starved process can wake after the deadline with the reply already buffered: read what
                # arrived once more (without waiting) before calling the servo silent
                if self._ser.in_waiting <= 0:
                    break
                last_drain = True
        self.stats["timeouts"] += 1
        if bad is not None:
            self.stats["checksum_errors"] += 1
            raise ChecksumError(servo_id, "no valid reply within %.1f ms; corrupted bytes %s (%s)"
                                % (timeout * 1e3, bad.raw.hex(" "), bad.reason), command=name)
        if self._parser.pending:
            raise ServoTimeout(servo_id, "incomplete reply (%d bytes) within %.1f ms"
                               % (self._parser.pending, timeout * 1e3), command=name)
        raise ServoTimeout(servo_id, "no reply within %.1f ms" % (timeout * 1e3), command=name)

    def _transact(self, request: bytes, matches, servo_id: int, name: str, timeout: Optional[float]):
        timeout = self.reply_timeout if timeout is None else float(timeout)
        with self._lock:
            self._check_open()
            for attempt in range(self.retries + 1):
                try:
                    self._flush_stale()     # late replies of an earlier, timed-out request
                    self.stats["requests"] += 1
                    self._write(request, then_receive=True)
                    return self._await(matches, servo_id, name, timeout)
                except (ServoTimeout, ChecksumError):
                    if attempt == self.retries:
                        raise
                except _PORT_ERRORS as exc:
                    raise BusIOError("servo bus %s: %s (during %s of servo %s)" % (self.port, exc, name, servo_id)) \
                        from exc

    def _send(self, data: bytes) -> None:
        with self._lock:
            self._check_open()
            try:
                self._write(data)
            except _PORT_ERRORS as exc:
                raise BusIOError("servo bus %s: write of %d bytes failed: %s" % (self.port, len(data), exc)) from exc

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._ser.close()
            except _PORT_ERRORS as exc:  # closing must not mask the caller's error
                log.warning("closing %s: %s", self.port, exc)

    @property
    def closed(self) -> bool:
        return self._closed


class DirectUartBus(_SerialBus):
    """The Jetson Nano JetHexa: 0x55 0x55 frames on ``/dev/ttyTHS1`` at 115200 8N1, half duplex.

    ``gpio``: an object with the RPi.GPIO / Jetson.GPIO API (``setmode``, ``setup``, ``output``) that switches
    the bus direction (BCM 17 = RX_CON, BCM 27 = TX_CON: write mode TX=1/RX=0, read mode RX=1/TX=0);
    ``"jetson"`` imports ``Jetson.GPIO``; ``None`` (default) for adapters with automatic direction and the
    emulator. ``turnaround_s``: extra wait after the last request byte left before switching to receive.
    ``sync_start``: group moves as MOVE_TIME_WAIT_WRITE x N + broadcast MOVE_START (simultaneous start,
    6 more bytes) instead of MOVE_TIME_WRITE x N (Hiwonder's choice).
    """

    REQUEST_BYTES = 6
    #: reply bytes of each scheduled read kind ('limits' = VIN_LIMIT_READ 10 + TEMP_MAX_LIMIT_READ 7)
    _READ_REPLY_BYTES = {"position": 8, "voltage": 8, "temperature": 7, "load": 7, "limits": 17}
    _READ_REQUESTS = {"limits": 2}

    def __init__(self, port: str = "/dev/ttyTHS1", baudrate: int = P.BAUDRATE, reply_timeout: float = 0.02,
                 gpio=None, rx_con_pin: int = 17, tx_con_pin: int = 27, turnaround_s: float = 0.0,
                 retries: int = 0, sync_start: bool = False,
                 serial_factory: Optional[Callable[..., serial.SerialBase]] = None):
        if gpio == "jetson":
            try:
                import Jetson.GPIO as gpio  # noqa: N813 (optional dependency, only on the robot)
            except ImportError as exc:
                raise ImportError("gpio='jetson' needs the Jetson.GPIO package (pip install Jetson.GPIO)") from exc
        self._gpio, self._rx_pin, self._tx_pin = gpio, rx_con_pin, tx_con_pin
        self.turnaround_s, self.sync_start = float(turnaround_s), bool(sync_start)
        self._parser = P.FrameParser()
        if gpio is not None:
            gpio.setmode(getattr(gpio, "BCM", 11))
            out = getattr(gpio, "OUT", 0)
            gpio.setup(rx_con_pin, out)
            gpio.setup(tx_con_pin, out)
        super().__init__(port, baudrate, reply_timeout, retries, serial_factory)
        self._direction = None
        self._set_direction("tx")

    def _set_direction(self, mode: str) -> None:
        if self._gpio is None or mode == self._direction:
            return
        tx = mode == "tx"
        self._gpio.output(self._rx_pin, 0 if tx else 1)
        self._gpio.output(self._tx_pin, 1 if tx else 0)
        self._direction = mode

    def _write(self, data: bytes, then_receive: bool = False) -> None:
        self._set_direction("tx")
        self._ser.write(data)
        self.stats["writes"] += 1
        if then_receive and self._gpio is not None:
            self._ser.flush()  # all bytes out of the UART before the line is turned around
            if self.turnaround_s:
                time.sleep(self.turnaround_s)
            self._set_direction("rx")

    def read_time(self, kind: str) -> float:
        n_req = self._READ_REQUESTS.get(kind, 1)
        return (P.frame_wire_time(n_req * self.REQUEST_BYTES + self._READ_REPLY_BYTES[kind], self.baudrate)
                + n_req * self.turnaround_s)

    def move_time(self, n_servos: int) -> float:
        return P.frame_wire_time(10 * n_servos + (6 if self.sync_start else 0), self.baudrate)

    def move_receipts(self, n_servos: int) -> Tuple[float, ...]:
        # MOVE_TIME_WRITE x N: servo j acts on its own frame's last byte (0.868 ms a frame at 115200: the 18th
        # 15.6 ms after the first); with sync_start all on the broadcast MOVE_START's
        if self.sync_start:
            return super().move_receipts(n_servos)
        return tuple(P.frame_wire_time(10 * (j + 1), self.baudrate) for j in range(n_servos))

    def request_time(self, kind: str = "position") -> float:
        return P.frame_wire_time(self._READ_REQUESTS.get(kind, 1) * self.REQUEST_BYTES, self.baudrate)

    # -- generic ----------------------------------------------------------------------------------------
    def request(self, servo_id: int, cmd: P.Cmd, timeout: Optional[float] = None) -> tuple:
        """Send a read command and return its decoded reply values."""
        cmd = P.Cmd(cmd)
        req = P.read_request(servo_id, cmd)

        def matches(ev):
            if isinstance(ev, P.Frame):
                same_id = ev.servo_id == servo_id or servo_id == BROADCAST_ID
                return "ok" if same_id and ev.cmd == cmd else "other"
            if ev.servo_id == servo_id and ev.cmd == cmd:
                return "bad"
            return "bad-other"

        frame = self._transact(req, matches, servo_id, cmd.name, timeout)
        values = P.decode_params(frame.cmd, frame.params, servo_id)
        if cmd == P.Cmd.ID_READ and servo_id == BROADCAST_ID:
            return (frame.servo_id,)
        return values

    def send(self, servo_id: int, cmd: P.Cmd, *values: int) -> None:
        """Send a write command (range-checked; no reply)."""
        self._send(P.encode_command(servo_id, cmd, *values))

    # -- core -------------------------------------------------------------------------------------------
    def _move_frames(self, targets: Targets, time_ms: int, cmd: P.Cmd) -> bytes:
        if not targets:
            raise ParameterError("targets", [], detail="at least one servo")
        return b"".join(P.encode_command(sid, cmd, pos, time_ms) for sid, pos in targets)

    def move(self, targets: Targets, time_ms: int) -> None:
        if self.sync_start:
            data = self._move_frames(targets, time_ms, P.Cmd.MOVE_TIME_WAIT_WRITE) + P.move_start()
        else:
            data = self._move_frames(targets, time_ms, P.Cmd.MOVE_TIME_WRITE)
        self._send(data)

    def move_prepare(self, targets: Targets, time_ms: int) -> None:
        self._send(self._move_frames(targets, time_ms, P.Cmd.MOVE_TIME_WAIT_WRITE))

    def move_start(self, servo_id: int = BROADCAST_ID) -> None:
        self._send(P.move_start(servo_id))

    def stop(self, servo_ids: Sequence[int]) -> None:
        self._send(b"".join(P.move_stop(s) for s in servo_ids))

    def set_torque(self, servo_ids: Sequence[int], enabled: bool) -> None:
        self._send(b"".join(P.encode_command(s, P.Cmd.LOAD_OR_UNLOAD_WRITE, int(bool(enabled)))
                            for s in servo_ids))

    def read_position(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.POS_READ, timeout)[0]

    def read_voltage(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.VIN_READ, timeout)[0]

    def read_temperature(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.TEMP_READ, timeout)[0]

    # -- the rest of the protocol table ---------------------------------------------------------------
    def read_led_alarm(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.LED_ERROR_READ, timeout)[0]

    def write_led_alarm(self, servo_id, bits):
        self.send(servo_id, P.Cmd.LED_ERROR_WRITE, bits)

    def read_torque(self, servo_id, timeout=None):
        return bool(self.request(servo_id, P.Cmd.LOAD_OR_UNLOAD_READ, timeout)[0])

    def read_id(self, servo_id=BROADCAST_ID, timeout=None):
        return self.request(servo_id, P.Cmd.ID_READ, timeout)[0]

    def write_id(self, servo_id, new_id):
        self.send(servo_id, P.Cmd.ID_WRITE, new_id)

    def adjust_offset(self, servo_id, offset_ticks):
        self.send(servo_id, P.Cmd.ANGLE_OFFSET_ADJUST, offset_ticks)

    def save_offset(self, servo_id):
        self.send(servo_id, P.Cmd.ANGLE_OFFSET_WRITE)

    def read_offset(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.ANGLE_OFFSET_READ, timeout)[0]

    def write_angle_limits(self, servo_id, lo, hi):
        self.send(servo_id, P.Cmd.ANGLE_LIMIT_WRITE, lo, hi)

    def read_angle_limits(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.ANGLE_LIMIT_READ, timeout)

    def write_voltage_limits(self, servo_id, lo_mv, hi_mv):
        self.send(servo_id, P.Cmd.VIN_LIMIT_WRITE, lo_mv, hi_mv)

    def read_voltage_limits(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.VIN_LIMIT_READ, timeout)

    def write_temperature_limit(self, servo_id, max_c):
        self.send(servo_id, P.Cmd.TEMP_MAX_LIMIT_WRITE, max_c)

    def read_temperature_limit(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.TEMP_MAX_LIMIT_READ, timeout)[0]

    def set_led(self, servo_id, on):
        self.send(servo_id, P.Cmd.LED_CTRL_WRITE, 0 if on else 1)  # protocol: 0 = LED on

    def read_led(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.LED_CTRL_READ, timeout)[0] == 0

    def set_motor_mode(self, servo_id, motor, speed=0):
        self.send(servo_id, P.Cmd.OR_MOTOR_MODE_WRITE, int(bool(motor)), 0, int(speed))

    def read_motor_mode(self, servo_id, timeout=None):
        mode, _, speed = self.request(servo_id, P.Cmd.OR_MOTOR_MODE_READ, timeout)
        return bool(mode), speed

    def read_move_target(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.MOVE_TIME_READ, timeout)

    def read_prepared_move(self, servo_id, timeout=None):
        return self.request(servo_id, P.Cmd.MOVE_TIME_WAIT_READ, timeout)


class RrcBoardBus(_SerialBus):
    """The Orin-era JetHexa: bus servos behind Hiwonder's STM32 board (0xAA 0x55 + CRC-8, 1 Mbaud, USB).

    A move of all servos is one packet. A read whose servo does not answer comes back with a non-zero status byte
    (-> :class:`ServoTimeout`). ``torque_off_sub``/``torque_on_sub``: the board document says 0x0B = off, 0x0C =
    on; Hiwonder's SDK uses them the other way round, so they are parameters (VERIFY on the robot).
    LED_ERROR, MOVE_START and motor mode are not carried by the board.

    The board also sends, unasked, IMU and battery reports (and keys, gamepad) in the same byte stream as the
    servo replies. Every byte read -- while a read waits for its reply, before a request, or by
    :meth:`poll_reports` (non-blocking: only what has arrived) -- goes through one parser; packets are sorted by
    function: servo replies to the read waiting for them, the rest to :class:`~.board_reports.BoardReports`
    (checked, counted in ``board.counts``), whose IMU and battery reports wait, stamped with the monotonic time
    their bytes were read, until :meth:`take_reports`. Nothing is ever waited for on their account.
    """

    #: reports kept between two :meth:`take_reports` (the oldest dropped beyond: counted in ``reports_dropped``)
    MAX_REPORTS = 1000

    def __init__(self, port: str = "/dev/rrc", baudrate: int = R.BAUDRATE, reply_timeout: float = 0.05,
                 retries: int = 0, torque_off_sub: int = R.Sub.TORQUE_OFF, torque_on_sub: int = R.Sub.TORQUE_ON,
                 serial_factory: Optional[Callable[..., serial.SerialBase]] = None):
        from .board_reports import BoardReports

        self._parser = R.PacketParser()
        self.torque_off_sub, self.torque_on_sub = int(torque_off_sub), int(torque_on_sub)
        self.board = BoardReports()
        self._reports: deque = deque()
        self.reports_dropped = 0
        super().__init__(port, baudrate, reply_timeout, retries, serial_factory)

    # -- the board's unasked reports ----------------------------------------------------------------------
    def _report(self, t: float, event) -> bool:
        if event.func == R.Func.BUS_SERVO:
            return False
        report = self.board.feed(t, event)
        if report is not None:
            if len(self._reports) >= self.MAX_REPORTS:
                self._reports.popleft()
                self.reports_dropped += 1
            self._reports.append(report)
        return True

    def _flush_stale(self) -> None:
        # read what has arrived (the reports in it are kept) instead of discarding it; a servo packet left
        # incomplete is an earlier read's late reply: dropped, a report's beginning is kept
        self._drain(stale=True)
        if self._parser.pending_func == R.Func.BUS_SERVO:
            self._parser.reset()

    def _drain(self, stale: bool) -> None:
        n = self._ser.in_waiting
        if n <= 0:
            return
        chunk = self._ser.read(n)
        t = time.monotonic()
        for ev in self._parser.feed(chunk):
            if not self._report(t, ev) and stale:
                self.stats["stray_replies"] += 1

    def poll_reports(self) -> list:
        """Read whatever the board has sent (never waits), then :meth:`take_reports`."""
        with self._lock:
            self._check_open()
            try:
                self._drain(stale=True)
            except _PORT_ERRORS as exc:
                raise BusIOError("servo bus %s: reading the board's reports failed: %s" % (self.port, exc)) from exc
        return self.take_reports()

    def take_reports(self) -> list:
        """The reports received since the last call, oldest first (:class:`~.board_reports.ImuReport`,
        :class:`~.board_reports.BatteryReport`)."""
        out = []
        while self._reports:
            out.append(self._reports.popleft())
        return out

    def report_counts(self) -> dict:
        """What the board sent besides the servo replies, by kind (``board_reports.COUNTERS``; unknown functions
        from the parser), and the reports dropped unread."""
        counts = dict(self.board.counts, unknown_function=self._parser.unknown_functions)
        counts["dropped"] = self.reports_dropped
        return counts

    def fileno(self) -> Optional[int]:
        """The port's file descriptor (readable when the board has sent something), None if it has none."""
        try:
            return self._ser.fileno()
        except (AttributeError, *_PORT_ERRORS):
            return None

    def read_time(self, kind: str) -> float:
        if kind == "limits":   # READ_VIN_LIMIT (4 value bytes) + READ_TEMP_LIMIT (1)
            return P.frame_wire_time(2 * (7 + 8) + 5, self.baudrate)
        n_value = {"position": 2, "voltage": 2, "temperature": 1, "load": 1}[kind]
        return P.frame_wire_time(7 + 8 + n_value, self.baudrate)

    def move_time(self, n_servos: int) -> float:
        return P.frame_wire_time(9 + 3 * n_servos, self.baudrate)

    def request_time(self, kind: str = "position") -> float:
        return P.frame_wire_time(7 * (2 if kind == "limits" else 1), self.baudrate)

    def _read(self, sub: R.Sub, servo_id: int, timeout: Optional[float]) -> tuple:
        fmt = R.READ_REPLY_FMT[sub]
        name = sub.name

        def matches(ev):
            if isinstance(ev, R.Packet):
                if ev.func == R.Func.BUS_SERVO and len(ev.data) >= 3 and ev.data[1] == sub and (
                        ev.data[0] == servo_id or servo_id == BROADCAST_ID):
                    return "ok"
                return "other"
            return "bad-other" if ev.func == R.Func.BUS_SERVO else "other"

        pkt = self._transact(R.bus_simple(sub, servo_id), matches, servo_id, name, timeout)
        sid, _, status = struct.unpack_from("<BBb", pkt.data)
        if status != 0:
            raise ServoTimeout(servo_id, "board reports no reply from the servo (status %d)" % status, command=name)
        size = struct.calcsize(fmt)
        if len(pkt.data) != 3 + size:
            raise FrameError(servo_id, "reply has %d value bytes, expected %d" % (len(pkt.data) - 3, size),
                             command=name)
        values = struct.unpack_from(fmt, pkt.data, 3)
        return (sid,) if sub == R.Sub.READ_ID and servo_id == BROADCAST_ID else values

    def move(self, targets: Targets, time_ms: int) -> None:
        if not targets:
            raise ParameterError("targets", [], detail="at least one servo")
        self._send(R.bus_move(list(targets), time_ms))

    def stop(self, servo_ids: Sequence[int]) -> None:
        self._send(R.bus_stop(list(servo_ids)))

    def set_torque(self, servo_ids: Sequence[int], enabled: bool) -> None:
        sub = self.torque_on_sub if enabled else self.torque_off_sub
        self._send(b"".join(R.bus_simple(sub, s) for s in servo_ids))

    def read_position(self, servo_id, timeout=None):
        return self._read(R.Sub.READ_POSITION, servo_id, timeout)[0]

    def read_voltage(self, servo_id, timeout=None):
        return self._read(R.Sub.READ_VIN, servo_id, timeout)[0]

    def read_temperature(self, servo_id, timeout=None):
        return self._read(R.Sub.READ_TEMP, servo_id, timeout)[0]

    def read_torque(self, servo_id, timeout=None):
        return bool(self._read(R.Sub.READ_TORQUE, servo_id, timeout)[0])

    def read_id(self, servo_id=BROADCAST_ID, timeout=None):
        return self._read(R.Sub.READ_ID, servo_id, timeout)[0]

    def write_id(self, servo_id, new_id):
        P.check_values(P.Cmd.ID_WRITE, (new_id,))
        self._send(R.bus_simple(R.Sub.WRITE_ID, servo_id, bytes((new_id,))))

    def adjust_offset(self, servo_id, offset_ticks):
        P.check_values(P.Cmd.ANGLE_OFFSET_ADJUST, (offset_ticks,))
        self._send(R.bus_simple(R.Sub.ADJUST_OFFSET, servo_id, struct.pack("<b", offset_ticks)))

    def save_offset(self, servo_id):
        self._send(R.bus_simple(R.Sub.SAVE_OFFSET, servo_id))

    def read_offset(self, servo_id, timeout=None):
        return self._read(R.Sub.READ_OFFSET, servo_id, timeout)[0]

    def write_angle_limits(self, servo_id, lo, hi):
        P.check_values(P.Cmd.ANGLE_LIMIT_WRITE, (lo, hi))
        self._send(R.bus_simple(R.Sub.WRITE_ANGLE_LIMIT, servo_id, struct.pack("<HH", lo, hi)))

    def read_angle_limits(self, servo_id, timeout=None):
        return self._read(R.Sub.READ_ANGLE_LIMIT, servo_id, timeout)

    def write_voltage_limits(self, servo_id, lo_mv, hi_mv):
        P.check_values(P.Cmd.VIN_LIMIT_WRITE, (lo_mv, hi_mv))
        self._send(R.bus_simple(R.Sub.WRITE_VIN_LIMIT, servo_id, struct.pack("<HH", lo_mv, hi_mv)))

    def read_voltage_limits(self, servo_id, timeout=None):
        return self._read(R.Sub.READ_VIN_LIMIT, servo_id, timeout)

    def write_temperature_limit(self, servo_id, max_c):
        P.check_values(P.Cmd.TEMP_MAX_LIMIT_WRITE, (max_c,))
        self._send(R.bus_simple(R.Sub.WRITE_TEMP_LIMIT, servo_id, struct.pack("<B", max_c)))

    def read_temperature_limit(self, servo_id, timeout=None):
        return self._read(R.Sub.READ_TEMP_LIMIT, servo_id, timeout)[0]


def open_bus(transport: str, port: str, **kwargs) -> ServoBus:
    """``transport`` 'uart' -> :class:`DirectUartBus`, 'rrc' -> :class:`RrcBoardBus` (kwargs passed on)."""
    if transport == "uart":
        return DirectUartBus(port, **kwargs)
    if transport == "rrc":
        return RrcBoardBus(port, **kwargs)
    raise ParameterError("transport", transport, detail="expected 'uart' or 'rrc'")
