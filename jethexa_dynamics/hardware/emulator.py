"""Bus-servo emulator served on a pseudo-terminal: the driver talks to it through pyserial exactly as to
the robot's UART (0x55 0x55 servos) or to the STM32 board (0xAA 0x55 + CRC-8).

:class:`BusEmulator` puts together one :class:`~.servo_model.EmulatedServo` per entry of the servo table, the
dispatcher of the chosen transport (:mod:`.servo_dispatch` for servo frames, :mod:`.rrc_dispatch` for board
packets), the pty and its thread (:mod:`.pty_transport`), and the faults (:mod:`.servo_faults`, which lists the
kinds). What it adds is the simulation's and the tests' side: the servos driven by the simulation's joint angles
(:meth:`BusEmulator.set_measured_positions`), their commanded trajectories in radians for the simulation
(:meth:`BusEmulator.commanded_position`), supply and temperature, and faults injected per servo at start
(``faults=``) or at run time (:meth:`BusEmulator.inject`, :meth:`BusEmulator.silence`), timed ones armed when due.

Units: joint angles rad (URDF joint convention), servo positions ticks, voltage mV, temperature deg C. Time base:
``time_fn`` (default ``time.monotonic``) [s]; pass the simulation clock to run in sim time; emulator time
(fault ``at``, :meth:`BusEmulator.now`) counts from construction.
"""
from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import protocol as P
from . import rrc as R
from .board_reports import battery_report, imu_report
from .errors import ParameterError
from .joint_map import IMU_MOUNT_HIWONDER_ROS2, mount_rotation
from .mpu6050 import STANDARD_GRAVITY
from .pty_transport import PtyTransport, Replies
from .rrc_dispatch import RrcPacketDispatcher
from .servo_dispatch import ServoFrameDispatcher
from .servo_faults import FaultSpec, Key, ReplyFaults, parse_faults
from .servo_model import EmulatedServo
from .servo_table import ServoTable, load_servo_table

#: the emulated world's gravity [m/s^2] (the simulation engine's): the specific force of a robot at rest
GRAVITY = 9.81
#: the battery voltage [mV] the emulated board reports at start (the emulated servos' supply)
DEFAULT_BATTERY_MV = 11100
#: each transport's line rate [baud] (``BusEmulator`` ``line_rate='auto'``)
LINE_RATES = {"uart": P.BAUDRATE, "rrc": R.BAUDRATE}

__all__ = ["BusEmulator", "follow_commanded"]

log = logging.getLogger(__name__)


class BusEmulator:
    """Emulated servo bus on a pty. ``.port`` is the slave path to open with pyserial (or any terminal client).

    ``servo_table``: a :class:`ServoTable` (default: bundled ``config/servos.yaml``) - one servo per entry,
    at centre, unloaded, 11.1 V, 35 deg C. ``transport``: 'uart' (0x55 frames) or 'rrc' (board packets).
    ``faults``: fault specs applied at start. ``time_fn``: clock for motion and timed faults. ``seed``: random
    source of the probabilistic faults. ``reply_delay_s``: delay of every reply [s].
    ``line_rate``: the bus line's rate [baud, 8N1] ('auto': the transport's, 115200 for 'uart', 1 000 000 for
    'rrc'; None, the default: no line, every frame executed on arrival). With a line a frame is executed when its
    last byte is through it, the frames of a write one after the other and behind the bytes still on it (replies
    included): a servo late in an 18-servo move starts 15.6 ms after the write, as on the robot's UART
    (reference §1: 0.868 ms per 10-byte frame), and ``JointServoBus(line_model=True)`` times its set-points so;
    a reply leaves when its bytes are through the line too (a read written right after an 18-servo move is
    answered 16.8 ms later) and carries the world at its frame's time.

    The board (``transport='rrc'``) also sends, unasked, what Hiwonder's board sends beside the servo replies
    (:mod:`.board_reports`, the layout of Hiwonder's SDK): an IMU report every ``1/imu_rate`` s (default 100 Hz:
    the rate of the Nano kit's MPU6050 sampling, so that both kits feed the models alike; Hiwonder's own node
    reads at most 50 Hz, the firmware's rate is not documented; 0: a board that streams no IMU) from the motion
    the simulation gives (:meth:`set_imu`; at rest, level, until then), turned into the chip's axes by
    ``imu_mount_rpy`` (the chip's axes in base_link, as a URDF origin's rpy), with noise; and a battery report
    every ``1/battery_rate`` s (default 1 Hz: a battery's voltage moves over minutes) of :attr:`battery_mv`.
    They go over the board's USB link, not the servo line: ``line_rate`` does not hold them.
    """

    def __init__(self, servo_table: Optional[ServoTable] = None, faults=None, transport: str = "uart",
                 time_fn: Callable[[], float] = time.monotonic, seed: Optional[int] = 0,
                 reply_delay_s: float = 0.0, line_rate: Union[str, int, None] = None, imu_rate: float = 100.0,
                 battery_rate: float = 1.0, imu_mount_rpy: Sequence[float] = IMU_MOUNT_HIWONDER_ROS2,
                 accel_noise: float = 0.025, gyro_noise: float = 6e-4):
        if transport not in ("uart", "rrc"):
            raise ParameterError("transport", transport, detail="expected 'uart' or 'rrc'")
        for name, v in (("imu_rate [Hz]", imu_rate), ("battery_rate [Hz]", battery_rate)):
            if not (math.isfinite(v) and 0.0 <= v <= 1000.0):
                raise ParameterError(name, v, 0.0, 1000.0)
        self.imu_rate, self.battery_rate = float(imu_rate), float(battery_rate)
        self._to_chip = mount_rotation(imu_mount_rpy).T     # chip = M^T body
        self.accel_noise, self.gyro_noise = float(accel_noise), float(gyro_noise)
        self._imu_rng = np.random.default_rng(seed)
        self._imu_state = (np.zeros(3), np.array([0.0, 0.0, GRAVITY]))   # at rest, level
        #: the battery's voltage [mV] the board reports (:meth:`set_voltage` for all servos sets it too)
        self.battery_mv = DEFAULT_BATTERY_MV
        #: the board's unasked reports sent so far
        self.imu_reports_sent = 0
        self.battery_reports_sent = 0
        if line_rate == "auto":
            line_rate = LINE_RATES[transport]
        if line_rate is not None and not (isinstance(line_rate, (int, float)) and 1200 <= line_rate <= 10_000_000):
            raise ParameterError("line_rate", line_rate, 1200, 10_000_000, "baud, 'auto' or None")
        self.line_rate = None if line_rate is None else float(line_rate)
        self.table = servo_table if servo_table is not None else load_servo_table(urdf=False)
        self.transport = transport
        self.time_fn = time_fn
        self._replies = ReplyFaults(seed, reply_delay_s)
        self._lock = threading.RLock()
        self._servos: Dict[int, EmulatedServo] = {
            s.servo_id: EmulatedServo(s.servo_id, s.joint, start=float(s.center), target=float(s.center))
            for s in self.table}
        self._t_start = time_fn()
        self._pending_faults = parse_faults(faults)
        self._parser = P.FrameParser() if transport == "uart" else R.PacketParser()
        self._frame_t: Optional[float] = None   # the time the frame being executed runs at [time_fn]
        self._line_free = -math.inf             # when the line is through with the bytes on it (line_rate)
        self._frames = ServoFrameDispatcher(self._servos, self._frame_time, self._replies)
        self._packets = RrcPacketDispatcher(self._frames)
        self._pty = PtyTransport(self._on_bytes, name="jethexa-bus-emulator")
        #: called with the arrival time of each batch of received bytes [s, ``time_fn``'s] before it is executed, and
        #: with a read's time when the line held it back (``line_rate``), outside the emulator's lock: a simulation
        #: brings its world up to that time there. The frames are then executed at their time (not after the
        #: world's step): a read gives the angle at its time, a move starts there (None: the simulation's own timer
        #: only)
        self.before_bytes: Optional[Callable[[float], None]] = None
        #: received valid frames/packets: (emulator time of their execution, servo_id or None, command, payload);
        #: bounded
        self.rx_log: deque = deque(maxlen=20000)
        #: valid frames/packets executed since the start
        self.frames_executed = 0
        for f in self._pending_faults:
            self._servo(f.servo)  # fail early on an unknown servo
        self._arm_faults()

    # -- lifecycle --------------------------------------------------------------------------------------
    def start(self) -> "BusEmulator":
        """Open the pty and serve in a background thread. Returns self (``.port`` is set)."""
        if self.transport == "rrc" and not self._pty._streams:
            if self.imu_rate > 0:
                self._pty.stream(1.0 / self.imu_rate, self._imu_packet)
            if self.battery_rate > 0:
                self._pty.stream(1.0 / self.battery_rate, self._battery_packet)
        self._pty.start()
        return self

    # -- the board's unasked reports (transport rrc) ----------------------------------------------------------
    def set_imu(self, gyro_body: Sequence[float], specific_force_body: Sequence[float]) -> None:
        """The motion the board's IMU reports from now on: body rates [rad/s] and specific force [m/s^2] at the
        IMU, in base_link axes (``sim.engine.Engine.imu``)."""
        state = (np.array(gyro_body, dtype=float), np.array(specific_force_body, dtype=float))
        with self._lock:
            self._imu_state = state

    def set_battery(self, mv: int) -> None:
        """The battery voltage [mV] the board reports (the servos' supply is :meth:`set_voltage`)."""
        self.battery_mv = int(mv)

    def send_unasked(self, data: bytes) -> None:
        """Send ``data`` now as if the board had sent it unasked (tests: malformed reports)."""
        self._pty._emit(bytes(data))

    def _imu_packet(self) -> bytes:
        with self._lock:
            gyro, force = self._imu_state
        accel = self._to_chip @ force + self._imu_rng.normal(0.0, self.accel_noise, 3)
        rate = self._to_chip @ gyro + self._imu_rng.normal(0.0, self.gyro_noise, 3)
        self.imu_reports_sent += 1
        return imu_report((accel / STANDARD_GRAVITY).tolist(), np.degrees(rate).tolist())

    def _battery_packet(self) -> bytes:
        self.battery_reports_sent += 1
        return battery_report(min(max(self.battery_mv, 0), 0xFFFF))

    def stop(self) -> None:
        """Stop serving and close the pty (clients then see a hang-up)."""
        self._pty.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def now(self, t: Optional[float] = None) -> float:
        """Emulator time [s] since construction: now, or of ``t`` (a ``time_fn`` value)."""
        return (self.time_fn() if t is None else t) - self._t_start

    @property
    def port(self) -> Optional[str]:
        """The pty's slave path (None before :meth:`start`)."""
        return self._pty.port

    @property
    def bytes_received(self) -> int:
        return self._pty.bytes_received

    @property
    def bytes_sent(self) -> int:
        return self._pty.bytes_sent

    @property
    def reply_delay_s(self) -> float:
        """Delay of every reply [s]."""
        return self._replies.delay_s

    @reply_delay_s.setter
    def reply_delay_s(self, value: float) -> None:
        self._replies.delay_s = float(value)

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
                self._servos[sid].place(v, t)

    def set_measured_positions(self, positions: Mapping[Key, float], rates: Optional[Mapping[Key, float]] = None,
                               t: Optional[float] = None) -> None:
        """Physics-driven joint angles [rad] that position reads report from now on (until cleared). With
        ``rates`` [rad/s] and their emulator time ``t`` [s], a read at another time reports the angle carried
        forward at its rate to the read's time (``servo_model.MAX_EXTRAPOLATION_S`` at most): a world updated
        at 100 Hz then answers with its position at the read, not at its last update."""
        with self._lock:
            t_abs = None if t is None or rates is None else self._abs(t)
            for key, q in positions.items():
                s = self._servo(key)
                spec = self.table.lookup(s.joint if s.joint else s.servo_id)
                s.measured = spec.position(q)
                s.measured_t = t_abs
                s.measured_rate = 0.0 if t_abs is None else spec.direction * float(rates[key]) * spec.ticks_per_rad

    def breakpoints(self, t_from: float, t_to: float) -> Tuple[float, ...]:
        """Emulator times in (``t_from``, ``t_to``) [s] where some servo's commanded trajectory bends (a move
        starts or ends), sorted: between two of them every commanded trajectory is linear."""
        with self._lock:
            a, b = self._abs(t_from), self._abs(t_to)
            cuts = {t for s in self._servos.values() for t in s.kinks() if a < t < b}
            return tuple(sorted(t - self._t_start for t in cuts))

    def clear_measured_positions(self) -> None:
        with self._lock:
            for s in self._servos.values():
                s.measured = s.measured_t = None

    def torque_enabled(self, key: Key) -> bool:
        """True if the servo's motor is loaded (requested and not cut by its protection)."""
        with self._lock:
            return self._servo(key).loaded

    def set_voltage(self, mv: int, key: Optional[Key] = None) -> None:
        """Supply voltage [mV] seen by one servo (or all: the battery's, which the board reports too); outside its
        VIN limits a servo unloads."""
        with self._lock:
            if key is None:
                self.battery_mv = int(mv)
            t = self.time_fn()
            for s in ([self._servo(key)] if key is not None else self._servos.values()):
                s.vin_mv = int(mv)
                s.update_protection(t)

    def set_temperature(self, celsius: int, key: Optional[Key] = None) -> None:
        """Internal temperature [deg C] of one servo (or all); at or above its limit it unloads."""
        with self._lock:
            t = self.time_fn()
            for s in ([self._servo(key)] if key is not None else self._servos.values()):
                s.temp_c = int(celsius)
                s.update_protection(t)

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
                s.update_protection(t)
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
            s.update_protection(t)
        self._pending_faults = keep

    # -- serving (the pty thread) -----------------------------------------------------------------------
    def _on_bytes(self, data: bytes) -> Replies:
        """What the client wrote: due faults armed, then every complete frame/packet executed (under the lock) at its
        time (``_frame_time``), a simulation brought up to it first (``before_bytes``, outside the lock: at the
        batch's arrival, and again for a read the line holds back)."""
        if self.before_bytes is None and self.line_rate is None:
            with self._lock:
                self._arm_faults()
                return self._handle_bytes(data)
        t = self.time_fn()
        out: Replies = []
        world = None            # the time the simulation was brought up to
        for ev in self._parser.feed(data):
            if not isinstance(ev, (P.Frame, R.Packet)):
                continue        # bad checksums: a real servo ignores the frame
            t_ev = t
            if self.line_rate:  # 0x55 0x55 id len cmd params chk / 0xAA 0x55 func len data crc
                size = 6 + len(ev.params) if isinstance(ev, P.Frame) else 5 + len(ev.data)
                t_ev = max(t, self._line_free) + self._wire(size)
            # a read (no parameters; a board packet may be one) gives the world at its time
            if self.before_bytes is not None and (world is None or (
                    t_ev > world and (isinstance(ev, R.Packet) or not ev.params))):
                self.before_bytes(t_ev)
                world = t_ev
            with self._lock:
                self._frame_t = t_ev
                try:
                    self._arm_faults()
                    replies = self._execute(ev)
                finally:
                    self._frame_t = None
            if self.line_rate:  # half duplex: the replies take the line after their frame, and arrive through it
                self._line_free, held = t_ev, []
                for delay, b in replies:
                    self._line_free = t_ev + delay + self._wire(len(b))
                    held.append((max(delay, self._line_free - self.time_fn()), b))
                replies = held
            out.extend(replies)
        return out

    def _frame_time(self) -> float:
        """The time a frame is executed at: its last byte through the line (``line_rate``), else the batch's arrival
        (``before_bytes``), else now."""
        return self.time_fn() if self._frame_t is None else self._frame_t

    def _wire(self, n_bytes: int) -> float:
        return P.frame_wire_time(n_bytes, self.line_rate)

    def _handle_bytes(self, data: bytes) -> Replies:
        out: Replies = []
        for ev in self._parser.feed(data):
            if isinstance(ev, (P.Frame, R.Packet)):   # bad checksums: a real servo ignores the frame
                out.extend(self._execute(ev))
        return out

    def _execute(self, ev) -> Replies:
        """One frame or board packet, at ``_frame_time``."""
        self.frames_executed += 1
        if isinstance(ev, P.Frame):
            self.rx_log.append((self._frame_time() - self._t_start, ev.servo_id, ev.cmd, ev.params))
            return self._frames.handle(ev)
        self.rx_log.append((self._frame_time() - self._t_start, None, ev.func, ev.data))
        return self._packets.handle(ev)


def follow_commanded(bus: BusEmulator, engine, joints: Mapping[int, str], target: float, offset: float,
                     fixed: Optional[Mapping[int, float]] = None) -> None:
    """Advance a simulation ``engine`` (``sim.engine.Engine``: ``time``, ``dt``, ``setpoints``,
    ``set_joint_targets``, ``advance``) to ``target`` [s, its time, the last whole step not after it: a world ahead
    of the bus would have run past a move that is yet to arrive] with its servos'
    set-points the emulated servos' commanded trajectories as they were over that span: cut at the end of each
    step in which a move starts or ends (:meth:`BusEmulator.breakpoints`), linear between (the engine's own move,
    on its steps). A kink inside a step is cut at the step's end, never held or jumped: the 18 moves of a group
    write start 0.87 ms apart (the line), less than a 1 ms step.
    ``joints`` {engine joint index: joint name};
    ``offset`` = emulator time - engine time; ``fixed`` {engine joint index: rad} held there instead (seized)."""
    idx = list(joints)
    fixed = fixed or {}

    def at(t):
        return [fixed[i] if i in fixed else bus.commanded_position(joints[i], t) for i in idx]
    dt, t0 = engine.dt, engine.time
    n_total = int(math.floor((target - t0) / dt + 1e-9))
    if n_total <= 0:
        return
    now = np.asarray(at(t0 + offset))       # a move of no duration steps the set-point: at once
    if np.abs(now - engine.setpoints()[idx]).max(initial=0.0) > 1e-12:
        engine.set_joint_targets(now, move_time=0.0, joints=idx)
    ends = {n_total} | {min(n_total, max(1, math.ceil((b - offset - t0) / dt - 1e-9)))
                        for b in bus.breakpoints(t0 + offset, t0 + n_total * dt + offset)}
    done = 0
    for n in sorted(ends):
        # towards the value just before the step's end (a move that starts there is the next stretch's)
        engine.set_joint_targets(at(t0 + n * dt + offset - 1e-9), move_time=(n - done) * dt, joints=idx)
        engine.advance(t0 + n * dt)
        done = n
