"""The emulated servos' side of the Hiwonder bus-servo protocol (0x55 0x55 frames, :mod:`.protocol`).

A frame is executed by the servo it names, or by every servo for the broadcast ID 0xFE. Parameters of the wrong
length or out of the protocol's ranges are ignored, as a real servo ignores them. Writes are not answered; of the
reads sent to the broadcast ID only ID_READ is (reference §1.2), and several servos answering it collide on the
wire. Replies carry the servo's reply faults (:class:`~.servo_faults.ReplyFaults`). Times: the emulator's clock
``time_fn`` [s].
"""
from __future__ import annotations

import struct
from typing import Callable, Dict, List, Optional

from . import protocol as P
from .errors import ParameterError
from .pty_transport import Replies
from .servo_faults import ReplyFaults
from .servo_model import EmulatedServo

__all__ = ["ServoFrameDispatcher"]


class ServoFrameDispatcher:
    """Executes frames on ``servos`` ({ID: servo}, the emulator's own dict: ID_WRITE renumbers a servo in it) at
    ``time_fn()``; replies through ``reply_faults``."""

    def __init__(self, servos: Dict[int, EmulatedServo], time_fn: Callable[[], float], reply_faults: ReplyFaults):
        self.servos = servos
        self.time_fn = time_fn
        self.reply_faults = reply_faults

    def targets(self, servo_id: int) -> List[EmulatedServo]:
        """Servos that execute a frame sent to ``servo_id`` (every servo for the broadcast ID)."""
        if servo_id == P.BROADCAST_ID:
            servos = list(self.servos.values())
        else:
            servos = [self.servos[servo_id]] if servo_id in self.servos else []
        return [s for s in servos if "vanish" not in s.faults]

    def handle(self, fr: P.Frame) -> Replies:
        """Execute one frame; the replies as (delay [s], bytes)."""
        servos = self.targets(fr.servo_id)
        t = self.time_fn()
        replies = []
        for s in servos:
            values = self.execute(s, fr.cmd, fr.params, t)
            if values is None or (fr.servo_id == P.BROADCAST_ID and fr.cmd != P.Cmd.ID_READ):
                continue  # writes are not answered; of the reads, a broadcast is answered for ID_READ only
            spec = P.COMMANDS[P.Cmd(fr.cmd)]
            reply = P.encode_frame(s.servo_id, fr.cmd, struct.pack(spec.reply_fmt, *values))
            r = self.reply_faults.apply(s.faults, reply)
            if r is not None:
                replies.append(r)
        return _collide(replies) if len(replies) > 1 else replies

    def execute(self, s: EmulatedServo, cmd: int, params: bytes, t: float) -> Optional[tuple]:
        """Apply one command (number ``cmd``, parameter bytes ``params``) to servo ``s`` at ``t``; the reply
        values for a read, else None (also for an unknown command or bad parameters, which a servo ignores)."""
        try:
            cmd = P.Cmd(cmd)
        except ValueError:
            return None
        spec = P.COMMANDS[cmd]
        vals: tuple = ()
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
        s.update_protection(t)
        if cmd == P.Cmd.ID_WRITE:
            self._renumber(s, vals[0])
        else:
            s.write(cmd, vals, t)
        return s.read(cmd, t)

    def _renumber(self, s: EmulatedServo, new_id: int) -> None:
        """ID_WRITE: the servo takes ``new_id`` unless another servo has it."""
        if new_id not in self.servos:
            del self.servos[s.servo_id]
            s.servo_id = new_id
            self.servos[s.servo_id] = s


def _collide(replies: Replies) -> Replies:
    """Several servos answering a broadcast read at once: one reply, the OR of their bytes (open drain), as late
    as the latest."""
    n = max(len(r[1]) for r in replies)
    merged = bytearray(n)
    for _, r in replies:
        for i, x in enumerate(r):
            merged[i] |= x
    return [(max(d for d, _ in replies), bytes(merged))]
