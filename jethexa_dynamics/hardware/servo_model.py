"""One emulated Hiwonder bus servo: its state, its motion and how it executes the protocol's commands.

Units as the protocol's (:mod:`.protocol`): positions in ticks (0..1000, 500 = centre), times in ms on the wire
and s in the state, voltage mV, temperature deg C. The servo follows its commanded position linearly over the
commanded time, keeps its angle/voltage/temperature limits, hardware offset, torque, LED and LED-alarm setting,
and can be driven by the simulation's joint angles (``measured``).

As the protocol says (reference §1.2): LED_ERROR_READ (36) returns the alarm setting written with
LED_ERROR_WRITE (35), not live faults; a servo whose supply (VIN_READ) is outside its VIN limits, or whose
temperature reaches its TEMP_MAX_LIMIT, unloads (LOAD_OR_UNLOAD_READ reads 0, moves are ignored) until it is
back inside, then holds its requested torque state again. The state faults of :mod:`.servo_faults` act here:
``stall`` locks the horn, ``overtemp``/``overvolt`` make the readings (and so the protection) go out of limits.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Dict, Optional, Tuple

from . import protocol as P
from .servo_faults import FaultSpec

__all__ = ["EmulatedServo"]

OVERTEMP_MARGIN_C = 5      # an ``overtemp`` servo reads at least this far above its TEMP_MAX_LIMIT [deg C]
OVERVOLT_MARGIN_MV = 500   # an ``overvolt`` servo reads at least this far above its VIN maximum [mV]
MAX_EXTRAPOLATION_S = 0.03  # a simulation-driven position is carried forward at its rate this long at most [s]
#: superseded moves a servo keeps (see ``EmulatedServo.logical``): on the robot's line a group write's frames are
#: executed at their own times, up to 15.6 ms ahead of a world that is then brought up to them
MOVE_HISTORY = 4


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
    measured_rate: float = 0.0      # [ticks/s] of ``measured``, carried forward from ``measured_t`` (None: held)
    measured_t: Optional[float] = None
    faults: Dict[str, FaultSpec] = field(default_factory=dict)
    #: the moves the current one cut short, newest last: (t0, start, target, duration)
    history: Deque[Tuple[float, float, float, float]] = field(default_factory=lambda: deque(maxlen=MOVE_HISTORY))

    def logical(self, t: float) -> float:
        """Commanded trajectory at time ``t`` [ticks, servo frame]. Before the current move began it is the move
        that was running then (``history``), not the current one's start held: an emulator on the robot's line
        executes a group write's frames at their own times, ahead of the simulation brought up to them after,
        which asks for the trajectory as it was (the servo's last frame 15.6 ms after the first at 115200 baud)."""
        t0, start, target, duration = self.t0, self.start, self.target, self.duration
        if t < t0:
            for move in reversed(self.history):
                t0, start, target, duration = move
                if t >= t0:
                    break
        if duration <= 0 or t >= t0 + duration:
            return target
        if t <= t0:
            return start
        return start + (target - start) * (t - t0) / duration

    def kinks(self) -> Tuple[float, ...]:
        """Times [s] where the commanded trajectory may bend: each kept move's start and end."""
        moves = list(self.history) + [(self.t0, self.start, self.target, self.duration)]
        return tuple(t for t0, _, _, d in moves for t in (t0, t0 + d))

    def place(self, pos: float, t: float) -> None:
        """At rest at ``pos`` [ticks] from ``t`` on, with no past (placed there, not moved)."""
        self.history.clear()
        self.start = self.target = float(pos)
        self.t0, self.duration = t, 0.0

    def _begin(self, t: float, target: float, duration: float) -> None:
        """A new commanded trajectory from ``t``: from where the current one is then to ``target`` over
        ``duration`` s (0: held there); the current one is kept for the times before ``t``."""
        start = self.logical(t)
        self.history.append((self.t0, self.start, self.target, self.duration))
        self.start, self.target, self.t0, self.duration = start, target, t, duration

    def physical(self, t: float) -> float:
        """Where the horn is [ticks]: locked (stall) if so, else the simulation's angle if set (carried forward
        at its rate to ``t`` when given with its time, at most ``MAX_EXTRAPOLATION_S``), else the commanded
        trajectory + offset."""
        if self.stuck_at is not None:
            return self.stuck_at
        if self.measured is None:
            return self.logical(t) + self.offset
        if self.measured_t is None:
            return self.measured
        return self.measured + self.measured_rate * min(max(t - self.measured_t, 0.0), MAX_EXTRAPOLATION_S)

    @property
    def loaded(self) -> bool:
        """Torque actually on: requested and not cut by the supply/temperature protection."""
        return self.torque and not self.protected

    def freeze(self, t: float) -> None:
        self._begin(t, self.logical(t), 0.0)

    def move(self, pos: int, time_ms: int, t: float) -> None:
        lo, hi = self.angle_limits
        self._begin(t, float(min(max(pos, lo), hi)), time_ms / 1000.0)  # a real servo clamps to its angle limits
        self.move_time_ms = time_ms
        self.torque = True  # a move command loads the motor (Hiwonder's stack never sends LOAD; VERIFY)

    # -- readings and protection -------------------------------------------------------------------------
    def reported_temp(self) -> int:
        """TEMP_READ [deg C]."""
        return max(self.temp_c, self.temp_limit + OVERTEMP_MARGIN_C) if "overtemp" in self.faults else self.temp_c

    def reported_vin(self) -> int:
        """VIN_READ [mV]."""
        return max(self.vin_mv, self.vin_limits[1] + OVERVOLT_MARGIN_MV) if "overvolt" in self.faults else self.vin_mv

    def reported_pos(self, t: float) -> int:
        """POS_READ [ticks, signed 16 bit]: the horn's position less the offset."""
        return int(round(min(max(self.physical(t) - self.offset, -32768), 32767)))

    def update_protection(self, t: float) -> None:
        """Supply outside [VIN min, VIN max] or temperature >= TEMP_MAX_LIMIT: the servo stops and unloads
        until both are back inside (reference §1.2)."""
        lo, hi = self.vin_limits
        out = not lo <= self.reported_vin() <= hi or self.reported_temp() >= self.temp_limit
        if out and not self.protected:
            self.freeze(t)
        self.protected = out

    # -- commands ----------------------------------------------------------------------------------------
    def write(self, cmd: P.Cmd, vals: tuple, t: float) -> None:
        """Apply one command's parameters ``vals`` (decoded, in range) at time ``t``; ID_WRITE and the reads
        change nothing here (the servo's ID is the bus's business)."""
        C = P.Cmd
        protected = self.protected
        if cmd == C.MOVE_TIME_WRITE:
            if not protected:
                self.move(vals[0], vals[1], t)
        elif cmd == C.MOVE_TIME_WAIT_WRITE:
            self.prepared = (vals[0], vals[1])
        elif cmd == C.MOVE_START:
            if self.prepared and not protected:
                self.move(self.prepared[0], self.prepared[1], t)
            self.prepared = None
        elif cmd == C.MOVE_STOP:
            self.freeze(t)
        elif cmd == C.ANGLE_OFFSET_ADJUST:
            self.offset = vals[0]
        elif cmd == C.ANGLE_OFFSET_WRITE:
            self.saved_offset = self.offset
        elif cmd == C.ANGLE_LIMIT_WRITE:
            self.angle_limits = (vals[0], vals[1])
        elif cmd == C.VIN_LIMIT_WRITE:
            self.vin_limits = (vals[0], vals[1])
            self.update_protection(t)
        elif cmd == C.TEMP_MAX_LIMIT_WRITE:
            self.temp_limit = vals[0]
            self.update_protection(t)
        elif cmd == C.OR_MOTOR_MODE_WRITE:
            self.motor_mode, self.motor_speed = vals[0], vals[2]
        elif cmd == C.LOAD_OR_UNLOAD_WRITE:
            self.torque = bool(vals[0])  # requested; the protection keeps the motor unloaded meanwhile
        elif cmd == C.LED_CTRL_WRITE:
            self.led_off = vals[0]
        elif cmd == C.LED_ERROR_WRITE:
            self.alarm_mask = vals[0]

    def read(self, cmd: P.Cmd, t: float) -> Optional[tuple]:
        """The reply values of a read command at time ``t``; None for a write (no reply)."""
        C = P.Cmd
        if cmd == C.POS_READ:
            return (self.reported_pos(t),)
        if cmd == C.VIN_READ:
            return (self.reported_vin(),)
        if cmd == C.TEMP_READ:
            return (self.reported_temp(),)
        if cmd == C.MOVE_TIME_READ:
            return (int(round(self.target)), self.move_time_ms)
        if cmd == C.MOVE_TIME_WAIT_READ:
            return self.prepared or (0, 0)
        if cmd == C.ID_READ:
            return (self.servo_id,)
        if cmd == C.ANGLE_OFFSET_READ:
            return (self.offset,)
        if cmd == C.ANGLE_LIMIT_READ:
            return self.angle_limits
        if cmd == C.VIN_LIMIT_READ:
            return self.vin_limits
        if cmd == C.TEMP_MAX_LIMIT_READ:
            return (self.temp_limit,)
        if cmd == C.OR_MOTOR_MODE_READ:
            return (self.motor_mode, 0, self.motor_speed)
        if cmd == C.LOAD_OR_UNLOAD_READ:
            return (int(self.loaded),)
        if cmd == C.LED_CTRL_READ:
            return (self.led_off,)
        if cmd == C.LED_ERROR_READ:
            return (self.alarm_mask,)  # the setting written with 35, never live faults (reference §1.2)
        return None
