"""Faults injected into the emulated servo bus: their spec (``SERVO:KIND[=VALUE][@T]``), its parsing, and what the
reply faults do to the bytes a servo sends.

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

``at``: seconds of emulator time after its start (None = at once). The state faults (stall, overtemp, overvolt)
act in :mod:`.servo_model`; the reply faults here (:class:`ReplyFaults`).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Iterable, List, Mapping, Optional, Tuple, Union

from .errors import ParameterError

__all__ = ["FAULT_KINDS", "FaultSpec", "Key", "ReplyFaults", "parse_faults"]

FAULT_KINDS = ("no_reply", "vanish", "corrupt", "drop", "delay", "garbage", "stall", "overtemp", "overvolt")
_DEFAULT_VALUE = {"corrupt": 1.0, "drop": 1.0, "delay": 0.05, "garbage": 6.0}
_PROBABILITIES = ("corrupt", "drop")     # kinds whose value is a probability, at most 1
#: a servo by ID or by joint name
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
        if v is not None and (v != v or v < 0 or (self.kind in _PROBABILITIES and v > 1)):
            raise ParameterError("fault %s value" % self.kind, v, 0, 1 if self.kind in _PROBABILITIES else None)

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


class ReplyFaults:
    """What the active faults of a servo do to one of its replies, with the emulator's random source (``seed``)
    and the delay every reply has (``delay_s`` [s], the line and the servo's turnaround)."""

    def __init__(self, seed: Optional[int] = 0, delay_s: float = 0.0):
        self.rng = random.Random(seed)
        self.delay_s = float(delay_s)

    def apply(self, faults: Mapping[str, FaultSpec], reply: bytes) -> Optional[Tuple[float, bytes]]:
        """(delay [s], bytes) of ``reply`` as the bus carries it; None = no reply."""
        f = faults
        if "no_reply" in f or "vanish" in f:
            return None
        b = bytearray(reply)
        if "corrupt" in f and self.rng.random() < f["corrupt"].effective_value:
            b[-1] ^= 0x5A
        if "drop" in f and self.rng.random() < f["drop"].effective_value and len(b) > 2:
            del b[self.rng.randrange(2, len(b))]   # the two header bytes stay: a frame short of a byte
        if "garbage" in f:
            n = int(f["garbage"].effective_value)
            # noise without header bytes (0x55 servo frames, 0xAA board packets), so it never starts a frame
            b[0:0] = bytes(self.rng.choice([x for x in range(256) if x not in (0x55, 0xAA)]) for _ in range(n))
        delay = self.delay_s + (f["delay"].effective_value if "delay" in f else 0.0)
        return delay, bytes(b)
