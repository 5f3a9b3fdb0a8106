"""The emulated STM32 "RRC" board's side of its bus-servo packets (0xAA 0x55 + CRC-8, :mod:`.rrc`).

The board turns each bus-servo sub-command into the servo protocol's command and has the servos execute it
(:class:`~.servo_dispatch.ServoFrameDispatcher`): a group move, a stop, torque on/off, the limit and offset writes
and the reads. A read is answered by the board: the servo's values with status 0, or status -1
when the servo does not answer (no such servo, a broadcast, ``no_reply``, ``vanish``); the servo's reply faults
apply to the board's reply. Packets of other functions and malformed ones are ignored.
"""
from __future__ import annotations

import struct

from . import protocol as P
from . import rrc as R
from .pty_transport import Replies
from .servo_dispatch import ServoFrameDispatcher

__all__ = ["RrcPacketDispatcher"]

#: board read sub-command -> the servo read it makes
RRC_READS = {
    R.Sub.READ_POSITION: P.Cmd.POS_READ, R.Sub.READ_VIN: P.Cmd.VIN_READ, R.Sub.READ_TEMP: P.Cmd.TEMP_READ,
    R.Sub.READ_TORQUE: P.Cmd.LOAD_OR_UNLOAD_READ, R.Sub.READ_ID: P.Cmd.ID_READ,
    R.Sub.READ_OFFSET: P.Cmd.ANGLE_OFFSET_READ, R.Sub.READ_ANGLE_LIMIT: P.Cmd.ANGLE_LIMIT_READ,
    R.Sub.READ_VIN_LIMIT: P.Cmd.VIN_LIMIT_READ, R.Sub.READ_TEMP_LIMIT: P.Cmd.TEMP_MAX_LIMIT_READ,
}
#: board write sub-command -> (the servo write it makes, struct format of its value in the packet)
RRC_WRITES = {
    R.Sub.WRITE_ID: (P.Cmd.ID_WRITE, "<B"), R.Sub.ADJUST_OFFSET: (P.Cmd.ANGLE_OFFSET_ADJUST, "<b"),
    R.Sub.SAVE_OFFSET: (P.Cmd.ANGLE_OFFSET_WRITE, ""), R.Sub.WRITE_ANGLE_LIMIT: (P.Cmd.ANGLE_LIMIT_WRITE, "<HH"),
    R.Sub.WRITE_VIN_LIMIT: (P.Cmd.VIN_LIMIT_WRITE, "<HH"),
    R.Sub.WRITE_TEMP_LIMIT: (P.Cmd.TEMP_MAX_LIMIT_WRITE, "<B"),
}
READ_FAILED = -1     # status byte of a read the servo did not answer


class RrcPacketDispatcher:
    """Executes board packets through ``servos`` (the servo-protocol dispatcher of the same servos)."""

    def __init__(self, servos: ServoFrameDispatcher):
        self.servos = servos

    def handle(self, pkt: R.Packet) -> Replies:
        """Execute one packet; the board's replies as (delay [s], bytes)."""
        d = pkt.data
        if pkt.func != R.Func.BUS_SERVO or not d:
            return []
        t = self.servos.time_fn()
        sub = d[0]
        if sub == R.Sub.MOVE and len(d) >= 4:
            self._move(d, t)
            return []
        if sub == R.Sub.STOP and len(d) >= 2 and len(d) == 2 + d[1]:
            for sid in d[2:]:
                for s in self.servos.targets(sid):
                    s.freeze(t)
            return []
        if len(d) < 2:
            return []
        sid = d[1]
        if sub in (R.Sub.TORQUE_OFF, R.Sub.TORQUE_ON) and len(d) == 2:
            self._execute(sid, P.Cmd.LOAD_OR_UNLOAD_WRITE, bytes((int(sub == R.Sub.TORQUE_ON),)), t)
            return []
        if sub in RRC_WRITES:
            cmd, fmt = RRC_WRITES[sub]
            if len(d) - 2 != struct.calcsize(fmt):
                return []
            params = struct.pack(P.COMMANDS[cmd].fmt, *struct.unpack_from(fmt, d, 2)) if fmt else b""
            self._execute(sid, cmd, params, t)
            return []
        if sub in RRC_READS and len(d) == 2:
            return self._read(sid, sub, t)
        return []

    def _move(self, d: bytes, t: float) -> None:
        """A group move: time [ms], count, then (ID, position [ticks]) per servo."""
        time_ms, n = d[1] | d[2] << 8, d[3]
        if len(d) != 4 + 3 * n:
            return
        for i in range(n):
            sid, pos = struct.unpack_from("<BH", d, 4 + 3 * i)
            self._execute(sid, P.Cmd.MOVE_TIME_WRITE, struct.pack("<HH", pos, time_ms), t)

    def _execute(self, sid: int, cmd: P.Cmd, params: bytes, t: float) -> None:
        for s in self.servos.targets(sid):
            self.servos.execute(s, cmd, params, t)

    def _read(self, sid: int, sub: int, t: float) -> Replies:
        servos = self.servos.targets(sid)
        s = servos[0] if len(servos) == 1 else None
        values = self.servos.execute(s, RRC_READS[sub], b"", t) if s is not None else None
        faults = self.servos.reply_faults
        if s is None or values is None or "no_reply" in s.faults:
            # the board times out on the servo and says so
            failed = struct.pack("<BBb", sid, sub, READ_FAILED)
            return [(faults.delay_s, R.encode_packet(R.Func.BUS_SERVO, failed))]
        payload = struct.pack("<BBb", s.servo_id, sub, 0) + struct.pack(R.READ_REPLY_FMT[R.Sub(sub)], *values)
        r = faults.apply(s.faults, R.encode_packet(R.Func.BUS_SERVO, payload))
        return [r] if r is not None else []
