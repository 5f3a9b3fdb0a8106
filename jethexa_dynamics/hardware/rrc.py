"""Hiwonder "RRC" STM32 controller-board protocol (new Orin-based JetHexa), pure bytes, no I/O.

Packet (reference anchors_hardware_ros.md §1.5)::

    0xAA 0x55 | func | len(data) | data .. | CRC8(func, len, data)

CRC-8/MAXIM (polynomial 0x31 reflected = 0x8C, init 0, no final xor). Bus servos are function 5; their
sub-commands carry the same units as the 0x55 protocol (ticks, ms, mV, deg C). Board replies to servo reads
are ``[id, sub, status(int8, 0 = ok), value...]``.
"""
from __future__ import annotations

import enum
import struct
from typing import Iterable, NamedTuple, Optional, Sequence, Tuple, Union

from .errors import ParameterError
from .protocol import MAX_MOVE_TIME_MS, StreamParser

__all__ = [
    "RRC_HEADER", "Func", "Sub", "crc8", "encode_packet", "Packet", "BadPacket", "PacketParser",
    "bus_move", "bus_stop", "bus_simple", "READ_REPLY_FMT",
]

RRC_HEADER = b"\xAA\x55"
#: the board's line rate [baud] (reference §1.5)
BAUDRATE = 1_000_000


class Func(enum.IntEnum):
    """Board functions."""

    SYS = 0
    LED = 1
    BUZZER = 2
    MOTOR = 3
    PWM_SERVO = 4
    BUS_SERVO = 5
    KEY = 6
    IMU = 7
    GAMEPAD = 8
    SBUS = 9
    OLED = 10
    RGB = 11


class Sub(enum.IntEnum):
    """Bus-servo sub-commands (first data byte of a function-5 packet)."""

    MOVE = 0x01
    STOP = 0x03
    READ_POSITION = 0x05
    READ_VIN = 0x07
    READ_TEMP = 0x09
    # Protocol document: 0x0B = torque off, 0x0C = torque on. Hiwonder's Python SDK sends them the other way
    # round (reference §1.5/§7, VERIFY on hardware); RrcBoardBus lets the caller swap them.
    TORQUE_OFF = 0x0B
    TORQUE_ON = 0x0C
    READ_TORQUE = 0x0D
    WRITE_ID = 0x10
    READ_ID = 0x12
    ADJUST_OFFSET = 0x20
    READ_OFFSET = 0x22
    SAVE_OFFSET = 0x24
    WRITE_ANGLE_LIMIT = 0x30
    READ_ANGLE_LIMIT = 0x32
    WRITE_VIN_LIMIT = 0x34
    READ_VIN_LIMIT = 0x36
    WRITE_TEMP_LIMIT = 0x38
    READ_TEMP_LIMIT = 0x3A


#: struct format of the value part of each read reply (after id, sub, status), from Hiwonder's SDK.
READ_REPLY_FMT = {
    Sub.READ_POSITION: "<h",
    Sub.READ_VIN: "<H",
    Sub.READ_TEMP: "<B",
    Sub.READ_TORQUE: "<b",
    Sub.READ_ID: "<B",
    Sub.READ_OFFSET: "<b",
    Sub.READ_ANGLE_LIMIT: "<HH",
    Sub.READ_VIN_LIMIT: "<HH",
    Sub.READ_TEMP_LIMIT: "<B",
}


def _make_table() -> Tuple[int, ...]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x8C if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC8_TABLE = _make_table()


def crc8(data: Union[bytes, bytearray, Iterable[int]]) -> int:
    """CRC-8/MAXIM of ``data`` (check value of b"123456789" is 0xA1)."""
    c = 0
    for b in data:
        c = _CRC8_TABLE[c ^ b]
    return c


def encode_packet(func: int, data: bytes) -> bytes:
    """Full packet for board function ``func`` with payload ``data`` (at most 255 bytes)."""
    if len(data) > 255:
        raise ParameterError("RRC data length", len(data), 0, 255)
    body = bytes((int(func), len(data))) + bytes(data)
    return RRC_HEADER + body + bytes((crc8(body),))


def bus_move(targets: Sequence[Tuple[int, int]], time_ms: int) -> bytes:
    """Group move: all ``(servo_id, position)`` pairs start together and arrive after ``time_ms``."""
    if not 0 <= time_ms <= MAX_MOVE_TIME_MS:
        raise ParameterError("time_ms", time_ms, 0, MAX_MOVE_TIME_MS)
    if not 1 <= len(targets) <= 80:
        raise ParameterError("number of servos in one move", len(targets), 1, 80)
    data = bytearray((Sub.MOVE, time_ms & 0xFF, time_ms >> 8, len(targets)))
    for sid, pos in targets:
        if not 0 <= sid <= 253:
            raise ParameterError("servo_id", sid, 0, 253)
        if not 0 <= pos <= 1000:
            raise ParameterError("servo %d position" % sid, pos, 0, 1000)
        data += struct.pack("<BH", sid, pos)
    return encode_packet(Func.BUS_SERVO, bytes(data))


def bus_stop(servo_ids: Sequence[int]) -> bytes:
    """Stop the listed servos."""
    if not 1 <= len(servo_ids) <= 80:
        raise ParameterError("number of servos to stop", len(servo_ids), 1, 80)
    return encode_packet(Func.BUS_SERVO, bytes((Sub.STOP, len(servo_ids))) + bytes(servo_ids))


def bus_simple(sub: int, servo_id: int, payload: bytes = b"") -> bytes:
    """A per-servo sub-command ``[sub, id, payload...]`` (reads, torque, id/offset/limit writes)."""
    if not 0 <= servo_id <= 254:
        raise ParameterError("servo_id", servo_id, 0, 254)
    return encode_packet(Func.BUS_SERVO, bytes((int(sub), servo_id)) + bytes(payload))


class Packet(NamedTuple):
    func: int
    data: bytes


class BadPacket(NamedTuple):
    func: int
    raw: bytes
    reason: str


class PacketParser(StreamParser):
    """Streaming parser for RRC packets: :class:`Packet` events, :class:`BadPacket` on a CRC mismatch.

    ``max_func`` rejects headers with an unknown function byte early (the board streams IMU/key packets
    too, so a false header must not swallow much of the stream); ``unknown_functions`` counts them.
    """

    header = RRC_HEADER

    def __init__(self, max_func: int = max(Func)):
        super().__init__()
        self.max_func = max_func
        self.unknown_functions = 0

    def _total(self, buf):
        if buf[2] <= self.max_func:
            return buf[3] + 5
        self.unknown_functions += 1
        return None

    @property
    def pending_func(self) -> Optional[int]:
        """The function byte of the incomplete packet buffered, None if there is none (or not that far)."""
        return self._buf[2] if len(self._buf) >= 3 else None

    def _decode(self, raw):
        body = raw[2:-1]
        if crc8(body) == raw[-1]:
            return Packet(body[0], body[2:]), True
        return BadPacket(body[0], raw, "CRC-8 0x%02X != 0x%02X" % (raw[-1], crc8(body))), False
