"""Hiwonder serial bus-servo protocol (LX-16A / LX-224 / HTS-35H family), pure bytes, no I/O.

Frame (reference anchors_hardware_ros.md §1.1)::

    0x55 0x55 | ID | LEN | CMD | P1 .. Pn | CHK
    LEN = n + 3, CHK = ~(ID + LEN + CMD + P1 + .. + Pn) & 0xFF, 16-bit values little-endian.

Units: position 0..1000 ticks (0.24 deg/tick, 500 = centre), time ms, voltage mV, temperature deg C,
offset -125..125 ticks. :class:`FrameParser` is a streaming parser that never raises on input bytes:
it resynchronises on garbage, keeps partial frames until they complete and reports bad checksums as
:class:`BadFrame` events naming the servo.
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Iterable, NamedTuple, Optional, Sequence, Tuple, Union

from .errors import FrameError, ParameterError

#: the longest move a servo takes: MOVE_TIME_WRITE's time parameter is 0-30000 ms (the protocol's one limit on
#: move times; the RRC board, the joint layer, the nodes, the predictors and the engine all use it)
MAX_MOVE_TIME_MS = 30000
MAX_MOVE_TIME_S = MAX_MOVE_TIME_MS / 1000.0

__all__ = [
    "HEADER", "BROADCAST_ID", "MAX_LEN", "Cmd", "CommandSpec", "COMMANDS", "checksum", "encode_frame",
    "encode_command", "check_values", "decode_params", "Frame", "BadFrame", "StreamParser", "FrameParser",
    "frame_wire_time",
    "move_time_write", "move_time_wait_write", "move_start", "move_stop", "read_request",
]

HEADER = b"\x55\x55"
#: the bus servos' line rate [baud, 8N1] (the Jetson Nano's UART to them: reference §1.4)
BAUDRATE = 115200
BROADCAST_ID = 0xFE
#: Longest LEN of any command in the table (3 + 4 parameter bytes); bounds the resync look-ahead.
MAX_LEN = 7


class Cmd(enum.IntEnum):
    """Command numbers (reference §1.2)."""

    MOVE_TIME_WRITE = 1
    MOVE_TIME_READ = 2
    MOVE_TIME_WAIT_WRITE = 7
    MOVE_TIME_WAIT_READ = 8
    MOVE_START = 11
    MOVE_STOP = 12
    ID_WRITE = 13
    ID_READ = 14
    ANGLE_OFFSET_ADJUST = 17
    ANGLE_OFFSET_WRITE = 18
    ANGLE_OFFSET_READ = 19
    ANGLE_LIMIT_WRITE = 20
    ANGLE_LIMIT_READ = 21
    VIN_LIMIT_WRITE = 22
    VIN_LIMIT_READ = 23
    TEMP_MAX_LIMIT_WRITE = 24
    TEMP_MAX_LIMIT_READ = 25
    TEMP_READ = 26
    VIN_READ = 27
    POS_READ = 28
    OR_MOTOR_MODE_WRITE = 29
    OR_MOTOR_MODE_READ = 30
    LOAD_OR_UNLOAD_WRITE = 31
    LOAD_OR_UNLOAD_READ = 32
    LED_CTRL_WRITE = 33
    LED_CTRL_READ = 34
    LED_ERROR_WRITE = 35
    LED_ERROR_READ = 36


@dataclass(frozen=True)
class CommandSpec:
    """Parameter layout of one command.

    ``fmt``: struct format of the parameters sent with the command (empty for reads).
    ``fields``: (name, lo, hi) per parameter, checked before encoding.
    ``reply_fmt``: struct format of the reply parameters, or ``None`` if the servo does not answer.
    """

    cmd: Cmd
    fmt: str = ""
    fields: Tuple[Tuple[str, int, int], ...] = ()
    reply_fmt: Optional[str] = None
    reply_fields: Tuple[str, ...] = ()


_POS = ("position", 0, 1000)
_TIME = ("time_ms", 0, MAX_MOVE_TIME_MS)
COMMANDS = {s.cmd: s for s in (
    CommandSpec(Cmd.MOVE_TIME_WRITE, "<HH", (_POS, _TIME)),
    CommandSpec(Cmd.MOVE_TIME_READ, reply_fmt="<hH", reply_fields=("position", "time_ms")),
    CommandSpec(Cmd.MOVE_TIME_WAIT_WRITE, "<HH", (_POS, _TIME)),
    CommandSpec(Cmd.MOVE_TIME_WAIT_READ, reply_fmt="<hH", reply_fields=("position", "time_ms")),
    CommandSpec(Cmd.MOVE_START),
    CommandSpec(Cmd.MOVE_STOP),
    CommandSpec(Cmd.ID_WRITE, "<B", (("new_id", 0, 253),)),
    CommandSpec(Cmd.ID_READ, reply_fmt="<B", reply_fields=("id",)),
    CommandSpec(Cmd.ANGLE_OFFSET_ADJUST, "<b", (("offset", -125, 125),)),
    CommandSpec(Cmd.ANGLE_OFFSET_WRITE),
    CommandSpec(Cmd.ANGLE_OFFSET_READ, reply_fmt="<b", reply_fields=("offset",)),
    CommandSpec(Cmd.ANGLE_LIMIT_WRITE, "<HH", (("min_position", 0, 1000), ("max_position", 0, 1000))),
    CommandSpec(Cmd.ANGLE_LIMIT_READ, reply_fmt="<HH", reply_fields=("min_position", "max_position")),
    # 4500..14500 mV: LX-16A allows up to 12000, the HV servos of the JetHexa up to 14500 (reference §1.2).
    CommandSpec(Cmd.VIN_LIMIT_WRITE, "<HH", (("min_mv", 4500, 14500), ("max_mv", 4500, 14500))),
    CommandSpec(Cmd.VIN_LIMIT_READ, reply_fmt="<HH", reply_fields=("min_mv", "max_mv")),
    CommandSpec(Cmd.TEMP_MAX_LIMIT_WRITE, "<B", (("max_temp_c", 50, 100),)),
    CommandSpec(Cmd.TEMP_MAX_LIMIT_READ, reply_fmt="<B", reply_fields=("max_temp_c",)),
    CommandSpec(Cmd.TEMP_READ, reply_fmt="<B", reply_fields=("temp_c",)),
    CommandSpec(Cmd.VIN_READ, reply_fmt="<H", reply_fields=("vin_mv",)),
    CommandSpec(Cmd.POS_READ, reply_fmt="<h", reply_fields=("position",)),
    CommandSpec(Cmd.OR_MOTOR_MODE_WRITE, "<BBh", (("mode", 0, 1), ("reserved", 0, 0), ("speed", -1000, 1000))),
    CommandSpec(Cmd.OR_MOTOR_MODE_READ, reply_fmt="<BBh", reply_fields=("mode", "reserved", "speed")),
    CommandSpec(Cmd.LOAD_OR_UNLOAD_WRITE, "<B", (("load", 0, 1),)),
    CommandSpec(Cmd.LOAD_OR_UNLOAD_READ, reply_fmt="<B", reply_fields=("load",)),
    CommandSpec(Cmd.LED_CTRL_WRITE, "<B", (("led_off", 0, 1),)),
    CommandSpec(Cmd.LED_CTRL_READ, reply_fmt="<B", reply_fields=("led_off",)),
    CommandSpec(Cmd.LED_ERROR_WRITE, "<B", (("alarm_bits", 0, 7),)),
    CommandSpec(Cmd.LED_ERROR_READ, reply_fmt="<B", reply_fields=("alarm_bits",)),
)}


def checksum(body: Union[bytes, bytearray, Sequence[int]]) -> int:
    """CHK of a frame body ``ID LEN CMD P1..Pn`` (header excluded)."""
    return (~sum(body)) & 0xFF


def _check_id(servo_id: int, allow_broadcast: bool = True) -> int:
    hi = BROADCAST_ID if allow_broadcast else 253
    if not isinstance(servo_id, (int,)) or isinstance(servo_id, bool) or not 0 <= servo_id <= hi:
        raise ParameterError("servo_id", servo_id, 0, hi)
    return int(servo_id)


def encode_frame(servo_id: int, cmd: int, params: bytes = b"") -> bytes:
    """Raw frame for ``cmd`` with already-packed ``params`` (no range checks beyond byte values)."""
    _check_id(servo_id)
    if len(params) > MAX_LEN - 3:
        raise ParameterError("params length", len(params), 0, MAX_LEN - 3)
    body = bytes((servo_id, len(params) + 3, int(cmd) & 0xFF)) + bytes(params)
    return HEADER + body + bytes((checksum(body),))


def encode_command(servo_id: int, cmd: Cmd, *values: int) -> bytes:
    """Frame for a command of the table with its parameter values range-checked.

    Raises :class:`ParameterError` naming the command's field and its allowed range.
    """
    spec = check_values(cmd, values)
    return encode_frame(servo_id, spec.cmd, struct.pack(spec.fmt, *values) if spec.fmt else b"")


def check_values(cmd: Cmd, values: Sequence[int]) -> CommandSpec:
    """Range-check the parameter values of a write command (also used for the RRC board's sub-commands)."""
    spec = COMMANDS[Cmd(cmd)]
    if len(values) != len(spec.fields):
        raise ParameterError("%s parameter count" % spec.cmd.name, len(values), len(spec.fields),
                             len(spec.fields))
    for (name, lo, hi), v in zip(spec.fields, values):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise ParameterError("%s.%s" % (spec.cmd.name, name), v, lo, hi)
    if spec.cmd in (Cmd.ANGLE_LIMIT_WRITE, Cmd.VIN_LIMIT_WRITE) and not values[0] < values[1]:
        raise ParameterError("%s min < max" % spec.cmd.name, tuple(values), detail="min must be below max")
    return spec


def read_request(servo_id: int, cmd: Cmd) -> bytes:
    """Request frame for a read command (no parameters)."""
    if COMMANDS[Cmd(cmd)].reply_fmt is None:
        raise ParameterError("command", Cmd(cmd).name, detail="not a read command")
    return encode_frame(servo_id, cmd)


def move_time_write(servo_id: int, position: int, time_ms: int) -> bytes:
    """MOVE_TIME_WRITE: go to ``position`` ticks in ``time_ms`` (starts at once)."""
    return encode_command(servo_id, Cmd.MOVE_TIME_WRITE, position, time_ms)


def move_time_wait_write(servo_id: int, position: int, time_ms: int) -> bytes:
    """MOVE_TIME_WAIT_WRITE: preload a move, executed on MOVE_START."""
    return encode_command(servo_id, Cmd.MOVE_TIME_WAIT_WRITE, position, time_ms)


def move_start(servo_id: int = BROADCAST_ID) -> bytes:
    """MOVE_START (broadcast by default: synchronous start of preloaded moves)."""
    return encode_frame(servo_id, Cmd.MOVE_START)


def move_stop(servo_id: int = BROADCAST_ID) -> bytes:
    """MOVE_STOP: stop where the servo is."""
    return encode_frame(servo_id, Cmd.MOVE_STOP)


def decode_params(cmd: int, params: bytes, servo_id: Optional[int] = None) -> tuple:
    """Unpack reply parameters of a read command; :class:`FrameError` if the length is wrong."""
    try:
        spec = COMMANDS[Cmd(cmd)]
    except ValueError:
        raise FrameError(servo_id, "unknown command %d in reply" % cmd) from None
    if spec.reply_fmt is None:
        raise FrameError(servo_id, "command %s has no reply" % spec.cmd.name)
    size = struct.calcsize(spec.reply_fmt)
    if len(params) != size:
        raise FrameError(servo_id, "reply has %d parameter bytes, expected %d" % (len(params), size),
                         command=spec.cmd.name)
    return struct.unpack(spec.reply_fmt, bytes(params))


def frame_wire_time(n_bytes: int, baudrate: int, bits_per_byte: int = 10) -> float:
    """Seconds on the wire for ``n_bytes`` at ``baudrate`` (8N1 = 10 bits per byte)."""
    return n_bytes * bits_per_byte / float(baudrate)


class Frame(NamedTuple):
    """A frame with a valid checksum."""

    servo_id: int
    cmd: int
    params: bytes

    def encode(self) -> bytes:
        return encode_frame(self.servo_id, self.cmd, self.params)


class BadFrame(NamedTuple):
    """A header-delimited frame that failed its checksum (``raw`` includes the header)."""

    servo_id: int
    cmd: int
    raw: bytes
    reason: str


class StreamParser:
    """Resynchronising parser of header-delimited frames; never raises on input (base of both protocols).

    ``feed(data)`` returns the frames and checksum failures completed by ``data``. Bytes that cannot start
    a frame are skipped (counted in ``garbage_bytes``). After a bad checksum only the first header byte is
    dropped, so a real frame hidden behind a false header is still found. ``pending`` is the number of
    buffered bytes of an incomplete frame. Subclasses set ``header`` and implement :meth:`_total` and
    :meth:`_decode`.
    """

    header = b""

    def __init__(self):
        self._buf = bytearray()
        self.garbage_bytes = 0
        self.checksum_errors = 0
        self.frames = 0

    def _total(self, buf: bytearray) -> Optional[int]:
        """Length of the frame starting at ``buf[0]`` (``buf`` holds >= 4 bytes), None if impossible."""
        raise NotImplementedError

    def _decode(self, raw: bytes):
        """(event, ok) for the complete candidate frame ``raw``."""
        raise NotImplementedError

    @property
    def pending(self) -> int:
        return len(self._buf)

    def reset(self) -> None:
        """Forget a partial frame (e.g. before a new request)."""
        self._buf.clear()

    def feed(self, data: Union[bytes, bytearray, Iterable[int]]) -> list:
        self._buf.extend(data)
        out = []
        buf, head = self._buf, self.header
        while True:
            start = buf.find(head)
            if start < 0:
                # keep a trailing first header byte: the next chunk may complete the header
                keep = 1 if buf.endswith(head[:1]) else 0
                self.garbage_bytes += len(buf) - keep
                del buf[:len(buf) - keep]
                break
            if start:
                self.garbage_bytes += start
                del buf[:start]
            if len(buf) < 4:
                break
            total = self._total(buf)
            if total is None:
                # impossible length/function: the header was noise (e.g. 0x55 0x55 0x55: the next byte starts it)
                self.garbage_bytes += 1
                del buf[:1]
                continue
            if len(buf) < total:
                break
            event, ok = self._decode(bytes(buf[:total]))
            out.append(event)
            if ok:
                self.frames += 1
                del buf[:total]
            else:
                self.checksum_errors += 1
                self.garbage_bytes += 1
                del buf[:1]
        return out


class FrameParser(StreamParser):
    """Streaming parser for 0x55 0x55 servo frames: :class:`Frame` events, :class:`BadFrame` on a bad checksum."""

    header = HEADER

    def __init__(self, max_len: int = MAX_LEN):
        super().__init__()
        self.max_len = max_len

    def _total(self, buf):
        return buf[3] + 3 if 3 <= buf[3] <= self.max_len else None

    def _decode(self, raw):
        body = raw[2:-1]
        if checksum(body) == raw[-1]:
            return Frame(body[0], body[2], body[3:]), True
        return BadFrame(body[0], body[2], raw, "checksum 0x%02X != 0x%02X" % (raw[-1], checksum(body))), False
