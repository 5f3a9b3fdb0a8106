"""Bus-servo emulator served on a pseudo-terminal: the driver talks to it through pyserial exactly as to
the robot's UART (0x55 0x55 servos) or to the STM32 board (0xAA 0x55 + CRC-8).

Each emulated servo follows its commanded position linearly over the commanded time, answers reads, keeps
its angle/voltage/temperature limits, hardware offset, torque, LED and LED-alarm setting, and can be driven
by the simulation's joint angles (:meth:`BusEmulator.set_measured_positions`). Faults are injected per servo
at start (``faults=``) or at run time (:meth:`BusEmulator.inject`, :meth:`BusEmulator.silence`).

As the protocol says (reference §1.2): LED_ERROR_READ (36) returns the alarm setting written with
LED_ERROR_WRITE (35), not live faults; a read sent to the broadcast ID 0xFE is answered only for ID_READ
(14); a servo whose supply (VIN_READ) is outside its VIN limits, or whose temperature reaches its
TEMP_MAX_LIMIT, unloads (LOAD_OR_UNLOAD_READ reads 0, moves are ignored) until it is back inside, then
holds its requested torque state again.

Fault kinds (``FaultSpec.kind``):

=============  ==========================================================================================
no_reply       the servo executes writes but never answers
vanish         the servo is gone from the bus: no replies, writes ignored (``silence()``); ``@t`` = later
corrupt        replies carry a wrong checksum/CRC (``=p``: probability, default 1)
drop           one byte of each reply is lost (``=p``: probability, default 1)
delay          replies are late by ``=s`` seconds (default 0.05)
garbage        ``=n`` random noise bytes (default 6) precede each reply
stall          locked rotor: the horn stays where it is, torque stays on, moves are accepted but not made
overtemp       temperature reads above its TEMP_MAX_LIMIT: the servo unloads (protection)
overvolt       voltage reads above its VIN limit: the servo unloads (protection)
=============  ==========================================================================================

Time base: ``time_fn`` (default ``time.monotonic``); pass the simulation clock to run in sim time.
"""
from __future__ import annotations

import errno
import fcntl
import heapq
import logging
import os
import random
import select
import struct
import threading
import time
import tty
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from . import protocol as P
from . import rrc as R
from .errors import ParameterError
from .servo_table import ServoTable, load_servo_table

__all__ = ["FaultSpec", "FAULT_KINDS", "EmulatedServo", "BusEmulator", "parse_faults"]

log = logging.getLogger(__name__)

FAULT_KINDS = ("no_reply", "vanish", "corrupt", "drop", "delay", "garbage", "stall", "overtemp", "overvolt")
_DEFAULT_VALUE = {"corrupt": 1.0, "drop": 1.0, "delay": 0.05, "garbage": 6.0}
Key = Union[int, str]


@dataclass(frozen=True)
class FaultSpec:
    """One injected fault: ``servo`` (ID or joint name), ``kind`` (see module doc), ``value`` (probability,
    seconds or byte count depending on the kind), ``at`` (emulator seconds after start; None = at once)."""

    servo: Key
    kind: str
    value: Optional[float] = None
    at: Optional[float] = None

    def __post_init__(self):
        if self.kind not in FAULT_KINDS:
            raise ParameterError("fault kind", self.kind, detail="expected one of %s" % ", ".join(FAULT_KINDS))
        v = self.value
        if v is not None and (v != v or v < 0 or (self.kind in ("corrupt", "drop") and v > 1)):
            raise ParameterError("fault %s value" % self.kind, v, 0, 1 if self.kind in ("corrupt", "drop") else None)

    @classmethod
    def parse(cls, text: str) -> "FaultSpec":
        """``SERVO:KIND[=VALUE][@T]``, e.g. ``5:no_reply``, ``coxa_joint_LF:corrupt=0.5``, ``11:vanish@2.0``."""
        try:
            servo, rest = text.strip().split(":", 1)
            at = None
            if "@" in rest:
                rest, at_s = rest.split("@", 1)
                at = float(at_s)
            value = None
            if "=" in rest:
                rest, v = rest.split("=", 1)
                value = float(v)
            key: Key = int(servo) if servo.strip().isdigit() else servo.strip()
        except ValueError:
            raise ParameterError("fault spec", text, detail="expected SERVO:KIND[=VALUE][@T]") from None
        return cls(key, rest.strip(), value, at)

    @property
    def effective_value(self) -> float:
        return _DEFAULT_VALUE.get(self.kind, 0.0) if self.value is None else float(self.value)


def parse_faults(spec: Union[None, str, Iterable[Union[str, FaultSpec]]]) -> List[FaultSpec]:
    """Comma-separated fault specs (or a list of strings/FaultSpec) -> list of :class:`FaultSpec`."""
    if not spec:
        return []
    items = spec.split(",") if isinstance(spec, str) else spec
    return [f if isinstance(f, FaultSpec) else FaultSpec.parse(f) for f in items if not isinstance(f, str) or f.strip()]


@dataclass
class EmulatedServo:
    """State of one emulated servo. Positions in ticks; ``offset`` is the servo's own angle offset
    (ANGLE_OFFSET_ADJUST): physical position = logical (commanded/reported) position + offset."""

    servo_id: int
    joint: Optional[str] = None
    start: float = 500.0
    target: float = 500.0
    t0: float = 0.0
    duration: float = 0.0
    move_time_ms: int = 0
    prepared: Optional[Tuple[int, int]] = None
    offset: int = 0
    saved_offset: int = 0
    angle_limits: Tuple[int, int] = (0, 1000)
    vin_limits: Tuple[int, int] = (4500, 14500)
    temp_limit: int = 85
    torque: bool = False            # requested load state (LOAD_OR_UNLOAD_WRITE, moves)
    protected: bool = False         # supply or temperature outside the limits: unloaded until back inside
    led_off: int = 0
    alarm_mask: int = 7             # LED alarm setting (35/36); 7 = every condition flashes the LED
    motor_mode: int = 0
    motor_speed: int = 0
    vin_mv: int = 11100
    temp_c: int = 35
    stuck_at: Optional[float] = None  # locked rotor: horn position [ticks]
    measured: Optional[float] = None
    faults: Dict[str, FaultSpec] = field(default_factory=dict)

    def logical(self, t: float) -> float:
        """Commanded trajectory at time ``t`` [ticks, servo frame]."""
        if self.duration <= 0 or t >= self.t0 + self.duration:
            return self.target
        if t <= self.t0:
            return self.start
        return self.start + (self.target - self.start) * (t - self.t0) / self.duration

    def physical(self, t: float) -> float:
        """Where the horn is [ticks]: locked (stall) if so, else the simulation's angle if set, else the
        commanded trajectory + offset."""
        if self.stuck_at is not None:
            return self.stuck_at
        return self.measured if self.measured is not None else self.logical(t) + self.offset

    @property
    def loaded(self) -> bool:
        """Torque actually on: requested and not cut by the supply/temperature protection."""
        return self.torque and not self.protected

    def freeze(self, t: float) -> None:
        self.start = self.target = self.logical(t)
        self.duration = 0.0

    def move(self, pos: int, time_ms: int, t: float) -> None:
        lo, hi = self.angle_limits
        self.start = self.logical(t)
        self.target = float(min(max(pos, lo), hi))  # a real servo clamps to its angle limits
        self.t0, self.duration, self.move_time_ms = t, time_ms / 1000.0, time_ms
        self.torque = True  # a move command loads the motor (Hiwonder's stack never sends LOAD; VERIFY)


class BusEmulator:
    """Emulated servo bus on a pty. ``.port`` is the slave path to open with pyserial (or any terminal client).

    ``servo_table``: a :class:`ServoTable` (default: bundled ``config/servos.yaml``) - one servo per entry,
    at centre, unloaded, 11.1 V, 35 deg C. ``transport``: 'uart' (0x55 frames) or 'rrc' (board packets).
    ``faults``: fault specs applied at start. ``time_fn``: clock for motion and timed faults.
    """

    def __init__(self, servo_table: Optional[ServoTable] = None, faults=None, transport: str = "uart",
                 time_fn: Callable[[], float] = time.monotonic, seed: Optional[int] = 0,
                 reply_delay_s: float = 0.0):
        if transport not in ("uart", "rrc"):
            raise ParameterError("transport", transport, detail="expected 'uart' or 'rrc'")
        self.table = servo_table if servo_table is not None else load_servo_table(urdf=False)
        self.transport = transport
        self.time_fn = time_fn
        self.reply_delay_s = float(reply_delay_s)
        self._rng = random.Random(seed)
        self._lock = threading.RLock()
        self._servos: Dict[int, EmulatedServo] = {
            s.servo_id: EmulatedServo(s.servo_id, s.joint, start=float(s.center), target=float(s.center))
            for s in self.table}
        self._t_start = time_fn()
        self._pending_faults = parse_faults(faults)
        self._parser = P.FrameParser() if transport == "uart" else R.PacketParser()
        self._master = self._slave = None
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self.port: Optional[str] = None
        #: received valid frames/packets: (time, servo_id or None, command, payload); bounded
        self.rx_log: deque = deque(maxlen=20000)
        self.bytes_received = 0
        self.bytes_sent = 0
        for f in self._pending_faults:
            self._servo(f.servo)  # fail early on an unknown servo
        self._arm_faults()

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> "BusEmulator":
        """Open the pty and serve in a background thread. Returns self (``.port`` is set)."""
        if self._thread is not None:
            return self
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no echo, no line discipline: clients other than pyserial work too
        fl = fcntl.fcntl(self._master, fcntl.F_GETFL)
        fcntl.fcntl(self._master, fcntl.F_SETFL, fl | os.O_NONBLOCK)
        self.port = os.ttyname(self._slave)
        self._stop.clear()
        self._thread = threading.Thread(target=self._serve, name="jethexa-bus-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the pty (clients then see a hang-up)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        for fd in (self._master, self._slave):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._master = self._slave = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def now(self) -> float:
        """Emulator time [s] since construction."""
        return self.time_fn() - self._t_start

    # -- simulation / test API --------------------------------------------------------------------------
    def _servo(self, key: Key) -> EmulatedServo:
        if isinstance(key, str):
            for s in self._servos.values():
                if s.joint == key:
                    return s
            raise ParameterError("joint", key, detail="not emulated")
        try:
            return self._servos[int(key)]
        except KeyError:
            raise ParameterError("servo_id", key, detail="not emulated; IDs: %s" % sorted(self._servos)) from None

    def servo(self, key: Key) -> EmulatedServo:
        """Live state of one servo (by ID or joint name); read it under no lock only in tests."""
        return self._servo(key)

    @property
    def servo_ids(self) -> Tuple[int, ...]:
        return tuple(sorted(self._servos))

    def commanded_position(self, key: Key, t: Optional[float] = None) -> float:
        """Joint angle [rad] the servo is driving to at emulator time ``t`` (default now): the commanded
        trajectory interpolated over the commanded time, in the URDF joint convention."""
        with self._lock:
            s = self._servo(key)
            ticks = s.logical(self._abs(t)) + s.offset
            return self.table.lookup(s.joint if s.joint else s.servo_id).to_rad(ticks)

    def commanded_positions(self, t: Optional[float] = None) -> Dict[str, float]:
        """``{joint: rad}`` of :meth:`commanded_position` for every servo of the table."""
        return {s.joint: self.commanded_position(s.joint, t) for s in self.table if self._has(s.joint)}

    def _has(self, joint: str) -> bool:
        return any(s.joint == joint for s in self._servos.values())

    def set_positions(self, positions: Mapping[Key, float], unit: str = "rad") -> None:
        """Place servos (by joint name or ID) at rest where a finished move would leave them: ``unit`` 'rad'
        (URDF joint angle, checked against the joint's limits: :class:`JointLimitError`) or 'ticks' (servo
        position as commanded and read back, 0..1000). Their commanded trajectory and position reads start
        there; all values are checked before any servo is moved. Physics-driven measured positions
        (:meth:`set_measured_positions`) still take precedence for reads."""
        if unit not in ("rad", "ticks"):
            raise ParameterError("unit", unit, detail="expected 'rad' or 'ticks'")
        with self._lock:
            ticks = {}
            for key, value in positions.items():
                s = self._servo(key)
                if unit == "rad":
                    spec = self.table.lookup(s.joint if s.joint else s.servo_id)
                    ticks[s.servo_id] = float(spec.to_ticks(value) - s.offset)
                else:
                    try:
                        v = float(value)
                    except (TypeError, ValueError):
                        raise ParameterError("position of servo %s [ticks]" % key, value, 0, 1000) from None
                    if not 0.0 <= v <= 1000.0:   # also rejects NaN
                        raise ParameterError("position of servo %s [ticks]" % key, value, 0, 1000)
                    ticks[s.servo_id] = v
            t = self.time_fn()
            for sid, v in ticks.items():
                s = self._servos[sid]
                s.start = s.target = v
                s.t0, s.duration = t, 0.0

    def set_measured_positions(self, positions: Mapping[Key, float]) -> None:
        """Physics-driven joint angles [rad] that position reads report from now on (until cleared)."""
        with self._lock:
            for key, q in positions.items():
                s = self._servo(key)
                spec = self.table.lookup(s.joint if s.joint else s.servo_id)
                real = spec.direction * (spec.offset + float(q))
                s.measured = spec.center + real * spec.ticks_per_rad

    def clear_measured_positions(self) -> None:
        with self._lock:
            for s in self._servos.values():
                s.measured = None

    def torque_enabled(self, key: Key) -> bool:
        """True if the servo's motor is loaded (requested and not cut by its protection)."""
        with self._lock:
            return self._servo(key).loaded

    def set_voltage(self, mv: int, key: Optional[Key] = None) -> None:
        """Supply voltage [mV] seen by one servo (or all); outside its VIN limits it unloads."""
        with self._lock:
            t = self.time_fn()
            for s in ([self._servo(key)] if key is not None else self._servos.values()):
                s.vin_mv = int(mv)
                self._update_protection(s, t)

    def set_temperature(self, celsius: int, key: Optional[Key] = None) -> None:
        """Internal temperature [deg C] of one servo (or all); at or above its limit it unloads."""
        with self._lock:
            t = self.time_fn()
            for s in ([self._servo(key)] if key is not None else self._servos.values()):
                s.temp_c = int(celsius)
                self._update_protection(s, t)

    def _update_protection(self, s: EmulatedServo, t: float) -> None:
        """Supply outside [VIN min, VIN max] or temperature >= TEMP_MAX_LIMIT: the servo stops and unloads
        until both are back inside (reference §1.2)."""
        lo, hi = s.vin_limits
        out = not lo <= self._reported_vin(s) <= hi or self._reported_temp(s) >= s.temp_limit
        if out and not s.protected:
            s.freeze(t)
        s.protected = out

    def inject(self, key: Key, kind: str, value: Optional[float] = None, at: Optional[float] = None) -> None:
        """Inject a fault on one servo, now or at emulator time ``at`` [s since start]."""
        f = FaultSpec(key, kind, value, at)
        with self._lock:
            self._servo(key)
            self._pending_faults.append(f)
            self._arm_faults()

    def silence(self, key: Key, at: Optional[float] = None) -> None:
        """The servo disappears from the bus (e.g. a leg is torn off)."""
        self.inject(key, "vanish", at=at)

    def clear_faults(self, key: Optional[Key] = None) -> None:
        """Remove injected faults of one servo or all; the servo answers (and moves) again."""
        with self._lock:
            servos = [self._servo(key)] if key is not None else list(self._servos.values())
            t = self.time_fn()
            for s in servos:
                s.faults.clear()
                s.stuck_at = None
                self._update_protection(s, t)
            ids = {s.servo_id for s in servos}
            self._pending_faults = [f for f in self._pending_faults if self._servo(f.servo).servo_id not in ids]

    restore = clear_faults

    def _abs(self, t: Optional[float]) -> float:
        return self.time_fn() if t is None else self._t_start + float(t)

    def _arm_faults(self) -> None:
        """Activate pending faults whose time has come."""
        now = self.now()
        keep = []
        for f in self._pending_faults:
            if f.at is not None and f.at > now:
                keep.append(f)
                continue
            s = self._servo(f.servo)
            s.faults[f.kind] = f
            t = self.time_fn()
            if f.kind == "stall" and s.stuck_at is None:
                s.stuck_at = s.physical(t)
            self._update_protection(s, t)
        self._pending_faults = keep

    # -- serving ----------------------------------------------------------------------------------------
    def _serve(self) -> None:
        # delayed replies wait in a heap (due time, sequence, bytes) so a late servo does not hold up the others
        outq: List[Tuple[float, int, bytes]] = []
        seq = 0
        while not self._stop.is_set():
            now = time.monotonic()
            while outq and outq[0][0] <= now:
                self._emit(heapq.heappop(outq)[2])
            wait = 0.05 if not outq else min(0.05, max(0.0, outq[0][0] - now))
            try:
                r, _, _ = select.select([self._master], [], [], wait)
            except (OSError, ValueError):
                break
            if not r:
                continue
            try:
                data = os.read(self._master, 4096)
            except BlockingIOError:
                continue
            except OSError as exc:
                if exc.errno == errno.EIO:  # no client has the slave open (we keep ours, so rare)
                    time.sleep(0.01)
                    continue
                break
            self.bytes_received += len(data)
            with self._lock:
                self._arm_faults()
                replies = self._handle_bytes(data)
            t = time.monotonic()
            for delay, out in replies:
                if delay > 0 or outq:
                    seq += 1
                    heapq.heappush(outq, (t + delay, seq, out))
                else:
                    self._emit(out)

    def _emit(self, data: bytes) -> None:
        try:
            n = os.write(self._master, data)
            self.bytes_sent += n
        except (BlockingIOError, OSError):
            pass  # nobody reads: the bytes are lost, as on a real line

    def _handle_bytes(self, data: bytes) -> List[Tuple[float, bytes]]:
        out: List[Tuple[float, bytes]] = []
        for ev in self._parser.feed(data):
            if isinstance(ev, (P.Frame,)):
                self.rx_log.append((self.now(), ev.servo_id, ev.cmd, ev.params))
                out.extend(self._handle_frame(ev))
            elif isinstance(ev, R.Packet):
                self.rx_log.append((self.now(), None, ev.func, ev.data))
                out.extend(self._handle_packet(ev))
            # bad checksums: a real servo ignores the frame
        return out

    def _targets(self, servo_id: int) -> List[EmulatedServo]:
        """Servos that execute a frame sent to ``servo_id`` (every servo for the broadcast ID)."""
        if servo_id == P.BROADCAST_ID:
            servos = list(self._servos.values())
        else:
            servos = [self._servos[servo_id]] if servo_id in self._servos else []
        return [s for s in servos if "vanish" not in s.faults]

    def _finish(self, s: EmulatedServo, reply: bytes, crc_rrc: bool = False) -> Optional[Tuple[float, bytes]]:
        """Apply the servo's reply faults; None = no reply."""
        f = s.faults
        if "no_reply" in f or "vanish" in f:
            return None
        b = bytearray(reply)
        if "corrupt" in f and self._rng.random() < f["corrupt"].effective_value:
            b[-1] ^= 0x5A
        if "drop" in f and self._rng.random() < f["drop"].effective_value and len(b) > 2:
            del b[self._rng.randrange(2, len(b))]
        if "garbage" in f:
            n = int(f["garbage"].effective_value)
            b[0:0] = bytes(self._rng.choice([x for x in range(256) if x not in (0x55, 0xAA)]) for _ in range(n))
        delay = self.reply_delay_s + (f["delay"].effective_value if "delay" in f else 0.0)
        return delay, bytes(b)

    # -- 0x55 0x55 servos -------------------------------------------------------------------------------
    def _handle_frame(self, fr: P.Frame) -> List[Tuple[float, bytes]]:
        servos = self._targets(fr.servo_id)
        t = self.time_fn()
        replies = []
        for s in servos:
            values = self._execute(s, fr.cmd, fr.params, t)
            if values is None or (fr.servo_id == P.BROADCAST_ID and fr.cmd != P.Cmd.ID_READ):
                continue  # writes are not answered; of the reads, a broadcast is answered for ID_READ only
            spec = P.COMMANDS[P.Cmd(fr.cmd)]
            reply = P.encode_frame(s.servo_id, fr.cmd, struct.pack(spec.reply_fmt, *values))
            r = self._finish(s, reply)
            if r is not None:
                replies.append(r)
        if len(replies) > 1:
            # several servos answering a broadcast read collide on the wire: OR of the bytes (open drain)
            n = max(len(r[1]) for r in replies)
            merged = bytearray(n)
            for _, r in replies:
                for i, x in enumerate(r):
                    merged[i] |= x
            return [(max(d for d, _ in replies), bytes(merged))]
        return replies

    def _execute(self, s: EmulatedServo, cmd: int, params: bytes, t: float) -> Optional[tuple]:
        """Apply one command to a servo; return the reply values for reads, else None."""
        C = P.Cmd
        try:
            cmd = C(cmd)
        except ValueError:
            return None
        spec = P.COMMANDS[cmd]
        if spec.fmt:
            if len(params) != struct.calcsize(spec.fmt):
                return None
            vals = struct.unpack(spec.fmt, params)
            try:
                P.check_values(cmd, vals)
            except ParameterError:
                return None  # a real servo ignores out-of-range parameters
        elif params and spec.reply_fmt is None:
            return None
        self._update_protection(s, t)
        protected = s.protected
        if cmd == C.MOVE_TIME_WRITE:
            if not protected:
                s.move(vals[0], vals[1], t)
        elif cmd == C.MOVE_TIME_WAIT_WRITE:
            s.prepared = (vals[0], vals[1])
        elif cmd == C.MOVE_START:
            if s.prepared and not protected:
                s.move(s.prepared[0], s.prepared[1], t)
            s.prepared = None
        elif cmd == C.MOVE_STOP:
            s.freeze(t)
        elif cmd == C.ID_WRITE:
            if vals[0] not in self._servos:
                del self._servos[s.servo_id]
                s.servo_id = vals[0]
                self._servos[s.servo_id] = s
        elif cmd == C.ANGLE_OFFSET_ADJUST:
            s.offset = vals[0]
        elif cmd == C.ANGLE_OFFSET_WRITE:
            s.saved_offset = s.offset
        elif cmd == C.ANGLE_LIMIT_WRITE:
            s.angle_limits = (vals[0], vals[1])
        elif cmd == C.VIN_LIMIT_WRITE:
            s.vin_limits = (vals[0], vals[1])
            self._update_protection(s, t)
        elif cmd == C.TEMP_MAX_LIMIT_WRITE:
            s.temp_limit = vals[0]
            self._update_protection(s, t)
        elif cmd == C.OR_MOTOR_MODE_WRITE:
            s.motor_mode, s.motor_speed = vals[0], vals[2]
        elif cmd == C.LOAD_OR_UNLOAD_WRITE:
            s.torque = bool(vals[0])  # requested; the protection keeps the motor unloaded meanwhile
        elif cmd == C.LED_CTRL_WRITE:
            s.led_off = vals[0]
        elif cmd == C.LED_ERROR_WRITE:
            s.alarm_mask = vals[0]
        return self._read_values(s, cmd, t)

    def _reported_temp(self, s: EmulatedServo) -> int:
        return max(s.temp_c, s.temp_limit + 5) if "overtemp" in s.faults else s.temp_c

    def _reported_vin(self, s: EmulatedServo) -> int:
        return max(s.vin_mv, s.vin_limits[1] + 500) if "overvolt" in s.faults else s.vin_mv

    def _reported_pos(self, s: EmulatedServo, t: float) -> int:
        return int(round(min(max(s.physical(t) - s.offset, -32768), 32767)))

    def _read_values(self, s: EmulatedServo, cmd: P.Cmd, t: float) -> Optional[tuple]:
        C = P.Cmd
        if cmd == C.POS_READ:
            return (self._reported_pos(s, t),)
        if cmd == C.VIN_READ:
            return (self._reported_vin(s),)
        if cmd == C.TEMP_READ:
            return (self._reported_temp(s),)
        if cmd == C.MOVE_TIME_READ:
            return (int(round(s.target)), s.move_time_ms)
        if cmd == C.MOVE_TIME_WAIT_READ:
            return s.prepared or (0, 0)
        if cmd == C.ID_READ:
            return (s.servo_id,)
        if cmd == C.ANGLE_OFFSET_READ:
            return (s.offset,)
        if cmd == C.ANGLE_LIMIT_READ:
            return s.angle_limits
        if cmd == C.VIN_LIMIT_READ:
            return s.vin_limits
        if cmd == C.TEMP_MAX_LIMIT_READ:
            return (s.temp_limit,)
        if cmd == C.OR_MOTOR_MODE_READ:
            return (s.motor_mode, 0, s.motor_speed)
        if cmd == C.LOAD_OR_UNLOAD_READ:
            return (int(s.loaded),)
        if cmd == C.LED_CTRL_READ:
            return (s.led_off,)
        if cmd == C.LED_ERROR_READ:
            return (s.alarm_mask,)  # the setting written with 35, never live faults (reference §1.2)
        return None

    # -- RRC board --------------------------------------------------------------------------------------
    _RRC_READS = {
        R.Sub.READ_POSITION: P.Cmd.POS_READ, R.Sub.READ_VIN: P.Cmd.VIN_READ, R.Sub.READ_TEMP: P.Cmd.TEMP_READ,
        R.Sub.READ_TORQUE: P.Cmd.LOAD_OR_UNLOAD_READ, R.Sub.READ_ID: P.Cmd.ID_READ,
        R.Sub.READ_OFFSET: P.Cmd.ANGLE_OFFSET_READ, R.Sub.READ_ANGLE_LIMIT: P.Cmd.ANGLE_LIMIT_READ,
        R.Sub.READ_VIN_LIMIT: P.Cmd.VIN_LIMIT_READ, R.Sub.READ_TEMP_LIMIT: P.Cmd.TEMP_MAX_LIMIT_READ,
    }
    _RRC_WRITES = {
        R.Sub.WRITE_ID: (P.Cmd.ID_WRITE, "<B"), R.Sub.ADJUST_OFFSET: (P.Cmd.ANGLE_OFFSET_ADJUST, "<b"),
        R.Sub.SAVE_OFFSET: (P.Cmd.ANGLE_OFFSET_WRITE, ""), R.Sub.WRITE_ANGLE_LIMIT: (P.Cmd.ANGLE_LIMIT_WRITE, "<HH"),
        R.Sub.WRITE_VIN_LIMIT: (P.Cmd.VIN_LIMIT_WRITE, "<HH"),
        R.Sub.WRITE_TEMP_LIMIT: (P.Cmd.TEMP_MAX_LIMIT_WRITE, "<B"),
    }

    def _handle_packet(self, pkt: R.Packet) -> List[Tuple[float, bytes]]:
        d = pkt.data
        if pkt.func != R.Func.BUS_SERVO or not d:
            return []
        t = self.time_fn()
        sub = d[0]
        if sub == R.Sub.MOVE and len(d) >= 4:
            time_ms, n = d[1] | d[2] << 8, d[3]
            if len(d) != 4 + 3 * n:
                return []
            for i in range(n):
                sid, pos = struct.unpack_from("<BH", d, 4 + 3 * i)
                for s in self._targets(sid):
                    self._execute(s, P.Cmd.MOVE_TIME_WRITE, struct.pack("<HH", pos, time_ms), t)
            return []
        if sub == R.Sub.STOP and len(d) >= 2 and len(d) == 2 + d[1]:
            for sid in d[2:]:
                for s in self._targets(sid):
                    s.freeze(t)
            return []
        if len(d) < 2:
            return []
        sid = d[1]
        if sub in (R.Sub.TORQUE_OFF, R.Sub.TORQUE_ON) and len(d) == 2:
            for s in self._targets(sid):
                self._execute(s, P.Cmd.LOAD_OR_UNLOAD_WRITE, bytes((int(sub == R.Sub.TORQUE_ON),)), t)
            return []
        if sub in self._RRC_WRITES:
            cmd, fmt = self._RRC_WRITES[sub]
            if len(d) - 2 != struct.calcsize(fmt):
                return []
            params = struct.pack(P.COMMANDS[cmd].fmt, *struct.unpack_from(fmt, d, 2)) if fmt else b""
            for s in self._targets(sid):
                self._execute(s, cmd, params, t)
            return []
        if sub in self._RRC_READS and len(d) == 2:
            servos = self._targets(sid)
            s = servos[0] if len(servos) == 1 else None
            values = self._execute(s, self._RRC_READS[sub], b"", t) if s is not None else None
            if s is None or values is None or "no_reply" in s.faults:
                # the board times out on the servo and says so
                return [(self.reply_delay_s, R.encode_packet(R.Func.BUS_SERVO, struct.pack("<BBb", sid, sub, -1)))]
            payload = struct.pack("<BBb", s.servo_id, sub, 0) + struct.pack(R.READ_REPLY_FMT[R.Sub(sub)], *values)
            r = self._finish(s, R.encode_packet(R.Func.BUS_SERVO, payload))
            return [r] if r is not None else []
        return []
