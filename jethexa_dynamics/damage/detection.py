"""Damage detection from servo health, and the servo-health wire format (no rclpy).

The servo driver keeps one :class:`ServoStatus` per joint (:class:`ServoStatusTracker`) and publishes it on
``/diagnostics`` (:func:`encode_servo_status`); the damage monitor decodes it (:func:`decode_servo_status`)
and feeds :class:`DamageDetector`, which decides the morphology: one entry per leg = number of intact links.

A joint whose servo is lost (no reply, stall, persistent position error) takes the link it drives and every
link after it out of the model: a dead tibia servo leaves 2 links, a dead femur 1, a dead coxa 0.

"No reply" must survive CPU starvation (a loaded machine makes replies late, not absent): a missed read only
counts while other servos answer, and a servo is reported silent only after a *confirmation read* with a
long timeout, attempted within its deadline, got no reply either (:meth:`ServoStatusTracker.pending_confirmation`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

LINK_TYPES = ("coxa", "femur", "tibia")

#: Hiwonder LED_ERROR bits (cmd 35/36): 1 over-temperature, 2 over-voltage, 4 locked rotor (stall).
ERR_OVER_TEMP, ERR_OVER_VOLTAGE, ERR_STALL = 1, 2, 4


def joint_leg_link(joint_names: Sequence[str], leg_names: Sequence[str]) -> List[Tuple[int, int]]:
    """(leg index, link index) of every joint, from names like ``femur_joint_LF``."""
    out = []
    for name in joint_names:
        kind, _, leg = name.partition("_joint_")
        if kind not in LINK_TYPES or leg not in leg_names:
            raise ValueError("joint name %r: expected <coxa|femur|tibia>_joint_<leg> with leg in %s"
                             % (name, list(leg_names)))
        out.append((list(leg_names).index(leg), LINK_TYPES.index(kind)))
    return out


# ---------------------------------------------------------------------------------------------- health
@dataclass
class ServoStatus:
    """What the servo driver knows about one servo."""

    joint: str
    servo_id: int
    reads: int = 0                  # read attempts
    misses: int = 0                 # read attempts without a (valid) reply
    consecutive_misses: int = 0
    last_reply_age: float = math.inf  # s since the last valid reply (inf = never)
    voltage_mv: float = math.nan
    temperature_c: float = math.nan
    error_bits: int = 0
    commanded: float = math.nan     # rad
    measured: float = math.nan      # rad (last position read)
    measured_age: float = math.inf  # s since that position read
    torque: bool = True
    silent_confirmations: int = 0   # confirmation reads (long timeout, within their deadline) without a reply
    #                                 since the last valid reply

    @property
    def position_error(self) -> float:
        if math.isnan(self.commanded) or math.isnan(self.measured):
            return math.nan
        return self.measured - self.commanded


_INT_FIELDS = {"servo_id", "reads", "misses", "consecutive_misses", "error_bits", "silent_confirmations"}


def encode_servo_status(h: ServoStatus) -> Tuple[int, str, List[Tuple[str, str]]]:
    """(level 0/1/2, message, key/value pairs) of one servo for ``diagnostic_msgs/DiagnosticStatus``."""
    level, msg = 0, "ok"
    if h.reads and h.consecutive_misses:
        level, msg = (2, "no reply") if h.consecutive_misses >= 2 else (1, "missed reply")
        if h.silent_confirmations:
            msg += " (confirmed)"
    if h.error_bits & ERR_STALL:
        level, msg = 2, "stall (locked rotor)"
    elif h.error_bits & (ERR_OVER_TEMP | ERR_OVER_VOLTAGE):
        level = max(level, 1)
        msg = "over-temperature" if h.error_bits & ERR_OVER_TEMP else "over-voltage"
    if not h.torque:
        msg += ", torque off"
    values = []
    for f in fields(h):
        v = getattr(h, f.name)
        if isinstance(v, bool):
            values.append((f.name, "true" if v else "false"))
        elif isinstance(v, float):
            values.append((f.name, "%.6g" % v))
        else:
            values.append((f.name, str(v)))
    return level, msg, values


def decode_servo_status(values: Dict[str, str]) -> ServoStatus:
    """Inverse of :func:`encode_servo_status` (raises ``ValueError`` naming a malformed key)."""
    kw = {}
    for f in fields(ServoStatus):
        if f.name not in values:
            if f.name in ("joint", "servo_id"):
                raise ValueError("servo status: key %r missing" % f.name)
            continue
        raw = values[f.name]
        try:
            if f.name == "joint":
                kw[f.name] = raw
            elif f.name == "torque":
                kw[f.name] = raw.strip().lower() == "true"
            elif f.name in _INT_FIELDS:
                kw[f.name] = int(raw)
            else:
                kw[f.name] = float(raw)
        except ValueError:
            raise ValueError("servo status: key %r = %r is not a number" % (f.name, raw)) from None
    return ServoStatus(**kw)


def read_deadline(timeout: float) -> float:
    """Longest wall time [s] a read with ``timeout`` may take and still prove silence: the timeout, plus the
    serial polling granularity and a margin. A read that took longer was not attempted within its deadline
    (the reading thread was starved): it proves nothing about the servo."""
    return 1.25 * float(timeout) + 0.005


class ServoStatusTracker:
    """Book-keeping of read results per servo (the driver calls ``record_*`` as reads complete).

    ``consecutive_misses`` only grows while the bus is alive: a miss counts if some servo has replied since
    this servo's previous miss. When the whole bus goes quiet (a stalled emulator, a bus or power fault)
    nobody accumulates misses, so a dead bus is not mistaken for six torn-off legs; :attr:`bus_silent_for`
    reports it instead.

    A counted miss also asks for a confirmation read (:meth:`pending_confirmation`): the driver reads that
    servo once with a long timeout and reports the outcome (:meth:`record_confirmation`). A reply, however
    late, ends the streak; only a confirmation without a reply, attempted within its deadline
    (:func:`read_deadline`), raises ``silent_confirmations`` -- the evidence the detector requires.
    """

    def __init__(self, joints: Sequence[Tuple[str, int]]):
        self.health: Dict[str, ServoStatus] = {j: ServoStatus(j, sid) for j, sid in joints}
        self._last_reply: Dict[str, float] = {}
        self._last_position: Dict[str, float] = {}
        self._replies = 0
        self._replies_at_miss: Dict[str, int] = {}
        self._to_confirm: Dict[str, float] = {}  # joint -> time of the miss that asks for a confirmation

    def record_reply(self, joint: str, now: float, **values) -> None:
        """A valid reply: ``values`` may hold ``measured``, ``voltage_mv``, ``temperature_c``, ``error_bits``."""
        if joint not in self.health:
            return
        h = self.health[joint]
        h.reads += 1
        h.consecutive_misses = h.silent_confirmations = 0
        self._to_confirm.pop(joint, None)
        self._replies += 1
        self._last_reply[joint] = now
        for k, v in values.items():
            setattr(h, k, v)
        if "measured" in values:
            self._last_position[joint] = now

    def record_miss(self, joint: str, now: float) -> None:
        h = self.health[joint]
        h.reads += 1
        h.misses += 1
        if self._replies > self._replies_at_miss.get(joint, -1):  # the bus answered since our last miss
            h.consecutive_misses += 1
            if not h.silent_confirmations:
                self._to_confirm.setdefault(joint, now)
        self._replies_at_miss[joint] = self._replies

    def pending_confirmation(self) -> Optional[str]:
        """The servo whose confirmation read is due (oldest counted miss first), or None. Due once some other
        servo has answered since that miss (on a bus that went quiet as a whole nobody is confirmed)."""
        due = [j for j in self._to_confirm if self._replies > self._replies_at_miss[j]]
        return min(due, key=self._to_confirm.get) if due else None

    def record_confirmation(self, joint: str, now: float, elapsed: float, timeout: float,
                            timed_out: bool, **values) -> None:
        """Outcome of a confirmation read of ``joint`` that took ``elapsed`` s with ``timeout``: a reply
        (``values``, e.g. ``measured``) ends the streak; a timeout within :func:`read_deadline` confirms the
        silence (and is a miss); anything else (a starved read, a corrupted reply) proves nothing and waits
        for the next counted miss."""
        if joint not in self.health:
            return
        self._to_confirm.pop(joint, None)
        if not timed_out:
            if values:
                self.record_reply(joint, now, **values)
            return
        if elapsed <= read_deadline(timeout):
            h = self.health[joint]
            before = h.consecutive_misses
            self.record_miss(joint, now)
            if h.consecutive_misses > before:   # counted: other servos answered since the miss before
                h.silent_confirmations += 1
            self._to_confirm.pop(joint, None)  # confirmed once per streak

    def bus_silent_for(self, now: float) -> float:
        """Seconds since ANY servo replied (inf if none ever did)."""
        return now - max(self._last_reply.values()) if self._last_reply else math.inf

    def ingest(self, now: float, readings) -> None:
        """Book one poll of the joint layer (``hardware.joints.JointReadings``-like: ``positions`` [rad],
        ``voltages`` [V], ``temperatures``, ``fault_bits`` and ``errors`` dicts keyed by joint). A read that
        failed without any value (timeout, bad checksum) counts as a miss; a fault-bit reply is a reply."""
        for j, q in readings.positions.items():
            self.record_reply(j, now, measured=float(q))
        for j, v in readings.voltages.items():
            self.record_reply(j, now, voltage_mv=1000.0 * float(v))
        for j, c in readings.temperatures.items():
            self.record_reply(j, now, temperature_c=float(c))
        for j, bits in readings.fault_bits.items():
            self.record_reply(j, now, error_bits=int(bits))
        answered = set(readings.positions) | set(readings.voltages) | set(readings.temperatures) | set(
            readings.fault_bits)
        for j in readings.errors:
            if j not in answered and j in self.health:
                self.record_miss(j, now)

    def set_commanded(self, positions: Dict[str, float]) -> None:
        for j, v in positions.items():
            if j in self.health:
                self.health[j].commanded = float(v)

    def set_torque(self, on: bool) -> None:
        for h in self.health.values():
            h.torque = on

    def snapshot(self, now: float) -> List[ServoStatus]:
        """Copies with ages computed at ``now``."""
        out = []
        for j, h in self.health.items():
            c = ServoStatus(**{f.name: getattr(h, f.name) for f in fields(h)})
            if j in self._last_reply:
                c.last_reply_age = max(0.0, now - self._last_reply[j])
            if j in self._last_position:
                c.measured_age = max(0.0, now - self._last_position[j])
            out.append(c)
        return out


# ---------------------------------------------------------------------------------------------- detector
@dataclass
class DetectorConfig:
    """Thresholds of :class:`DamageDetector` (the damage monitor's parameters)."""

    no_reply_timeout: float = 0.4        # s without a valid reply ...
    min_missed_reads: int = 2            # ... and at least this many consecutive misses ...
    min_silent_confirmations: int = 1    # ... of which this many long-timeout confirmation reads -> lost
    stall_hold: float = 0.5              # s the stall bit must persist
    position_error_threshold: float = 0.6  # rad |measured - commanded|
    position_error_hold: float = 0.5     # s it must persist (with fresh measurements)
    measurement_max_age: float = 0.5     # s: older position reads are not compared
    latch: bool = True                   # faults stay until reset()


@dataclass
class JointFault:
    joint: str
    reason: str
    since: float


@dataclass
class _Pending:
    stall_since: Optional[float] = None
    perr_since: Optional[float] = None


class DamageDetector:
    """Decide the morphology (intact links per leg) from servo health over time."""

    def __init__(self, joint_names: Sequence[str], leg_names: Sequence[str], config: Optional[DetectorConfig] = None,
                 links: int = 3):
        self.joint_names = list(joint_names)
        self.leg_names = list(leg_names)
        self.links = links
        self.config = config or DetectorConfig()
        self._leg_link = dict(zip(self.joint_names, joint_leg_link(self.joint_names, self.leg_names)))
        self._pending: Dict[str, _Pending] = {j: _Pending() for j in self.joint_names}
        self.faults: Dict[str, JointFault] = {}
        self.last_update: Optional[float] = None

    def reset(self) -> None:
        self.faults.clear()
        self._pending = {j: _Pending() for j in self.joint_names}

    def _fault_reason(self, h: ServoStatus, now: float) -> Optional[str]:
        c = self.config
        p = self._pending[h.joint]
        if (h.consecutive_misses >= c.min_missed_reads and h.last_reply_age >= c.no_reply_timeout
                and h.silent_confirmations >= c.min_silent_confirmations):
            return "no reply for %s (%d reads missed, %d confirmed)" % (
                "ever" if math.isinf(h.last_reply_age) else "%.2f s" % h.last_reply_age, h.consecutive_misses,
                h.silent_confirmations)
        if h.error_bits & ERR_STALL:
            p.stall_since = now if p.stall_since is None else p.stall_since
            if now - p.stall_since >= c.stall_hold:
                return "stall bit set for %.2f s" % (now - p.stall_since)
        else:
            p.stall_since = None
        err = h.position_error
        if not math.isnan(err) and h.measured_age <= c.measurement_max_age and h.torque:
            if abs(err) > c.position_error_threshold:
                p.perr_since = now if p.perr_since is None else p.perr_since
                if now - p.perr_since >= c.position_error_hold:
                    return "position error %.2f rad > %.2f rad for %.2f s" % (
                        err, c.position_error_threshold, now - p.perr_since)
            else:
                p.perr_since = None
        return None

    def update(self, now: float, health: Iterable[ServoStatus]) -> List[JointFault]:
        """Feed a health snapshot; returns the faults that are NEW in this update."""
        new = []
        self.last_update = now
        for h in health:
            if h.joint not in self._pending:
                continue  # not one of our joints (e.g. another robot's diagnostics)
            reason = self._fault_reason(h, now)
            if reason is not None and h.joint not in self.faults:
                f = JointFault(h.joint, reason, now)
                self.faults[h.joint] = f
                new.append(f)
            elif reason is None and h.joint in self.faults and not self.config.latch:
                del self.faults[h.joint]
        return new

    def detected(self) -> List[int]:
        """Intact links per leg implied by the current faults."""
        out = [self.links] * len(self.leg_names)
        for j in self.faults:
            leg, link = self._leg_link[j]
            out[leg] = min(out[leg], link)
        return out

    def morphology(self, override: Optional[Sequence[int]] = None) -> List[int]:
        """Detected morphology with a per-leg manual override (entries -1 = automatic)."""
        det = self.detected()
        if override is None:
            return det
        return [d if o < 0 else int(o) for d, o in zip(det, override)]


@dataclass
class MorphologyChange:
    """A morphology swap as seen by the damage monitor (for logs and the demo summary)."""

    time: float
    old: List[int]
    new: List[int]
    reasons: List[str] = field(default_factory=list)
