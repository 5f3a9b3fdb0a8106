"""Damage detection from servo health, and the servo-health wire format (no rclpy).

The servo driver keeps one :class:`ServoStatus` per joint (:class:`ServoStatusTracker`) and publishes it on
``/diagnostics`` (:func:`encode_servo_status`); the damage monitor decodes it (:func:`decode_servo_status`)
and feeds :class:`DamageDetector`, which decides the morphology: one entry per leg = number of intact links.

A joint whose servo is lost (no reply, confirmed) takes the link it drives and every link after it out of the
model: a dead tibia servo leaves 2 links, a dead femur 1, a dead coxa 0. A stalled servo (a persistent position
error while loaded) answers and keeps its link: it is a seized joint (``stalled``; ``damage.seizure``), not a
lost link. Faults come only from what the servo measures (reference §1.2): over-temperature from TEMP_READ
against its TEMP_MAX_LIMIT, over-/under-voltage from VIN_READ against its VIN limits (both reported, not a
lost link), stall from the position error. The LED alarm setting (cmd 35/36, ``led_alarm``) is reported
only; it says which conditions flash the LED, not which are active.

A joint that stops appearing in ``joint_states`` (a driver other than servo_driver, a bus behind another
board) is evidence too (:class:`JointPresenceTracker`), under the same no-false-alarm rules.

"No reply" must survive CPU starvation (a loaded machine makes replies late, not absent): a missed read only
counts while other servos answer, and a servo is reported silent only after a *confirmation read* with a
long timeout, attempted within its deadline, got no reply either (:meth:`ServoStatusTracker.pending_confirmation`),
while another servo read right before and right after it answered within its normal timeout (the witness).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from jethexa_dynamics.damage.evidence import KINDS
from jethexa_dynamics.hardware.errors import measured_faults

LINK_TYPES = ("coxa", "femur", "tibia")



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
    voltage_mv: float = math.nan    # VIN_READ
    temperature_c: float = math.nan  # TEMP_READ
    vin_min_mv: float = math.nan    # the servo's own limits (VIN_LIMIT_READ, TEMP_MAX_LIMIT_READ); NaN = not read
    vin_max_mv: float = math.nan
    temp_limit_c: float = math.nan
    led_alarm: int = -1             # LED alarm setting read back with cmd 36 (-1 = not read); never a fault
    commanded: float = math.nan     # rad
    measured: float = math.nan      # rad (last position read)
    measured_age: float = math.inf  # s since that position read
    torque: bool = True             # LOAD_OR_UNLOAD_READ when read, else what the driver last sent
    silent_confirmations: int = 0   # confirmation reads (long timeout, within their deadline) without a reply
    #                                 since the last valid reply

    @property
    def position_error(self) -> float:
        if math.isnan(self.commanded) or math.isnan(self.measured):
            return math.nan
        return self.measured - self.commanded

    @property
    def measured_faults(self) -> List[str]:
        """``over-temperature`` / ``over-voltage`` / ``under-voltage`` from the readings against the limits."""
        return measured_faults(self.temperature_c, self.temp_limit_c, self.voltage_mv, self.vin_min_mv,
                               self.vin_max_mv)


_INT_FIELDS = {"servo_id", "reads", "misses", "consecutive_misses", "led_alarm", "silent_confirmations"}


def encode_servo_status(h: ServoStatus) -> Tuple[int, str, List[Tuple[str, str]]]:
    """(level 0/1/2, message, key/value pairs) of one servo for ``diagnostic_msgs/DiagnosticStatus``."""
    level, msg = 0, "ok"
    if h.reads and h.consecutive_misses:
        level, msg = (2, "no reply") if h.consecutive_misses >= 2 else (1, "missed reply")
        if h.silent_confirmations:
            msg += " (confirmed)"
    faults = h.measured_faults
    if faults:
        level = max(level, 1)
        msg = ", ".join(faults) if msg == "ok" else msg + ", " + ", ".join(faults)
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
        self.unwitnessed = 0                     # timed-out confirmations without a prompt witness (no evidence)

    def witness_for(self, joint: str) -> Optional[str]:
        """The servo to read right after ``joint``'s confirmation: the one that replied last, other than it."""
        others = [(t, j) for j, t in self._last_reply.items() if j != joint]
        return max(others)[1] if others else None

    def record_reply(self, joint: str, now: float, **values) -> None:
        """A valid reply: ``values`` may hold ``measured``, ``voltage_mv``, ``temperature_c``, ``torque``,
        ``vin_min_mv``/``vin_max_mv``/``temp_limit_c``, ``led_alarm``."""
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
                            timed_out: bool, witness: bool = False, **values) -> None:
        """Outcome of a confirmation read of ``joint`` that took ``elapsed`` s with ``timeout``: a reply
        (``values``, e.g. ``measured``) ends the streak; a timeout within :func:`read_deadline` confirms the
        silence (and is a miss) if ``witness``: another servo, read right before and right after it, answered
        within its normal timeout -- the bus and whatever answers on it were on time (an emulated bus
        starved with the machine let a healthy servo time out once). Anything else (a starved read, a corrupted
        reply, a late witness) proves nothing and waits for the next counted miss."""
        if joint not in self.health:
            return
        self._to_confirm.pop(joint, None)
        if not timed_out:
            if values:
                self.record_reply(joint, now, **values)
            return
        self.unwitnessed += not witness
        if witness and elapsed <= read_deadline(timeout):
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
        ``voltages`` [V], ``temperatures``, ``loads``, ``limits`` and ``errors`` dicts keyed by joint). A read
        that failed without any value (timeout, bad checksum) counts as a miss."""
        for j, q in readings.positions.items():
            self.record_reply(j, now, measured=float(q))
        for j, v in readings.voltages.items():
            self.record_reply(j, now, voltage_mv=1000.0 * float(v))
        for j, c in readings.temperatures.items():
            self.record_reply(j, now, temperature_c=float(c))
        for j, on in readings.loads.items():
            self.record_reply(j, now, torque=bool(on))
        for j, (tmax, vmin, vmax) in readings.limits.items():
            self.record_reply(j, now, temp_limit_c=float(tmax), vin_min_mv=float(vmin), vin_max_mv=float(vmax))
        answered = (set(readings.positions) | set(readings.voltages) | set(readings.temperatures)
                    | set(readings.loads) | set(readings.limits))
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
    position_error_threshold: float = 0.6  # rad |measured - commanded| while loaded: stalled (seized) ...
    position_error_hold: float = 0.5     # s ... when it persists this long (with fresh measurements)
    measurement_max_age: float = 0.5     # s: older position reads are not compared
    latch: bool = True                   # faults stay until reset()


@dataclass
class JointFault:
    """``source``: 'diagnostics' (servo_driver's statuses) or 'joint_states' (the joint stopped appearing)."""

    joint: str
    reason: str
    since: float
    source: str = "diagnostics"


@dataclass
class _Pending:
    perr_since: Optional[float] = None


class JointPresenceTracker:
    """Which joints stopped appearing in ``joint_states`` (pure book-keeping; the detector judges).

    A message is a *miss* of joint ``j`` only if it carries more than half of the other joints that came with
    ``j`` the last time ``j`` was seen (the same publisher is alive and left ``j`` out): several drivers may
    each publish a subset (or a driver a rotating subset of what it read), and a publisher that goes quiet as
    a whole (a starved process, a stopped node) makes nobody miss anything -- the analogue of the servo
    tracker's rule that misses count only while the bus answers. Joints never seen are no evidence.

    Starvation is not absence: a miss counts only from a message that shows both ends on time --
    stamped at most ``max_interval`` [s] after the previous message of the same stream (a publisher starved
    into 2 messages in 0.5 s leaves joints out because it had no time to read them), and received at most
    ``max_latency`` [s] after its stamp (a reader working through a backlog knows it is late). Any other
    message breaks the streak: it proves nothing either way. Spans are measured on the publisher's stamps
    (``observe(..., stamp=...)``), not on when the reader got to the messages.
    """

    def __init__(self, joint_names: Sequence[str], max_interval: float = 0.12, max_latency: float = 0.2):
        self.joints = frozenset(joint_names)
        self.max_interval = float(max_interval)
        self.max_latency = float(max_latency)
        self.last_seen: Dict[str, float] = {}           # stamp of the last message carrying the joint
        self.consecutive_misses: Dict[str, int] = {}
        self.streak_start: Dict[str, float] = {}        # stamp the current on-time miss streak counts from
        self.streak_last: Dict[str, float] = {}         # stamp of its last miss
        self._siblings: Dict[str, FrozenSet[str]] = {}
        self._stream_last: Dict[str, float] = {}        # per joint: stamp of the last message of its stream
        self.messages = 0
        self.late_messages = 0                          # messages that proved nothing (late or sparse)

    def observe(self, now: float, names: Iterable[str], stamp: Optional[float] = None) -> None:
        """One ``joint_states`` message received at ``now`` [s] carrying ``names`` (unknown names ignored),
        stamped ``stamp`` [s, same clock; None = ``now``: the reader vouches for its own timeliness]."""
        t = now if stamp is None else float(stamp)
        on_time = now - t <= self.max_latency
        present = self.joints.intersection(names)
        self.messages += 1
        if not present:
            return
        for j in present:
            self.last_seen[j] = t
            self.consecutive_misses[j] = 0
            self._siblings[j] = present
            self._stream_last[j] = t
        late = False
        for j, sib in self._siblings.items():
            if j in present or not 2 * len(sib & present) > len(sib) - 1:
                continue                                # not j's stream, or j came with it
            prev, self._stream_last[j] = self._stream_last[j], t
            if on_time and 0.0 <= t - prev <= self.max_interval:
                if self.consecutive_misses[j] == 0:
                    self.streak_start[j] = prev
                self.consecutive_misses[j] += 1
                self.streak_last[j] = t
            else:
                late = True
                self.consecutive_misses[j] = 0          # the streak is broken: start again from here
        self.late_messages += late

    def absent(self, now: float, min_misses: int, timeout: float) -> List[Tuple[str, int, float]]:
        """(joint, consecutive on-time misses, seconds of the streak) of joints missing from at least
        ``min_misses`` on-time messages in a row of their publisher, the streak spanning at least ``timeout``
        [s] of the publisher's stamps."""
        out = []
        for j, n in sorted(self.consecutive_misses.items()):
            if n >= min_misses:
                span = self.streak_last[j] - self.streak_start[j]
                if span >= timeout:
                    out.append((j, n, span))
        return out


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
        #: joints whose servo reports a persistent position error under load: seized, links kept (not latched)
        self.stalled: Dict[str, str] = {}
        self.last_update: Optional[float] = None
        #: joints servo statuses have been received for: joint_states evidence is not used for them (the
        #: driver's confirmation reads are the better evidence, and it keeps publishing silent joints)
        self.diagnosed: set = set()
        #: joints whose joint_states absence is not judged until they appear there again (:meth:`clear`):
        #: joint -> the stamp they were last seen at when held (None: never)
        self.held: Dict[str, Optional[float]] = {}

    def reset(self) -> None:
        self.faults.clear()
        self.stalled.clear()
        self.held.clear()
        self._pending = {j: _Pending() for j in self.joint_names}

    def clear(self, joints: Iterable[str], hold: Optional["JointPresenceTracker"] = None) -> List[str]:
        """Withdraw the joint_states faults of ``joints`` (their evidence is gone: the joints are back in
        joint_states, or an active probe found the leg there); with ``hold`` (the presence tracker) the absence of
        the joints cleared is not judged again until they appear in joint_states again (a driver that still leaves
        them out says nothing new). A servo's fault (``diagnostics``) stays: it is withdrawn by :meth:`reset` only.
        Returns the joints cleared."""
        out = []
        for j in joints:
            f = self.faults.get(j)
            if f is not None and f.source == "joint_states":
                del self.faults[j]
                out.append(j)
                if hold is not None:
                    self.held[j] = hold.last_seen.get(j)
        return out

    def _fault_reason(self, h: ServoStatus) -> Optional[str]:
        c = self.config
        if (h.consecutive_misses >= c.min_missed_reads and h.last_reply_age >= c.no_reply_timeout
                and h.silent_confirmations >= c.min_silent_confirmations):
            return "no reply for %s (%d reads missed, %d confirmed)" % (
                "ever" if math.isinf(h.last_reply_age) else "%.2f s" % h.last_reply_age, h.consecutive_misses,
                h.silent_confirmations)
        return None

    def _stall_reason(self, h: ServoStatus, now: float) -> Optional[str]:
        c = self.config
        p = self._pending[h.joint]
        err = h.position_error
        if not math.isnan(err) and h.measured_age <= c.measurement_max_age and h.torque:
            if abs(err) > c.position_error_threshold:
                p.perr_since = now if p.perr_since is None else p.perr_since
                if now - p.perr_since >= c.position_error_hold:
                    return "stall: position error %.2f rad > %.2f rad under load for %.2f s" % (
                        err, c.position_error_threshold, now - p.perr_since)
                return None
            p.perr_since = None
        elif not h.torque:
            p.perr_since = None  # unloaded (protection, e-stop): a limp joint is not a stall
        return None

    def update(self, now: float, health: Iterable[ServoStatus]) -> List[JointFault]:
        """Feed a health snapshot; returns the faults that are NEW in this update."""
        new = []
        self.last_update = now
        for h in health:
            if h.joint not in self._pending:
                continue  # not one of our joints (e.g. another robot's diagnostics)
            self.diagnosed.add(h.joint)
            new += self._set(h.joint, self._fault_reason(h), now, "diagnostics")
            stall = None if h.joint in self.faults else self._stall_reason(h, now)
            if stall is None:
                self.stalled.pop(h.joint, None)
            else:
                self.stalled[h.joint] = stall
        return new

    def update_presence(self, now: float, presence: JointPresenceTracker) -> List[JointFault]:
        """Judge ``joint_states`` evidence (joints without servo statuses only); returns NEW faults. A joint
        is lost when missing from ``min_missed_reads`` messages in a row of its publisher and unseen for
        ``no_reply_timeout`` -- the rule of a silent servo, with the publisher's other joints arriving
        without it as the confirmation that the stream itself is alive."""
        c = self.config
        self.last_update = now
        absent = {j: (n, age) for j, n, age in presence.absent(now, c.min_missed_reads, c.no_reply_timeout)}
        new = []
        for j in presence.last_seen:
            if j in self.diagnosed or j not in self._pending:
                continue
            if j in self.held:
                if presence.last_seen.get(j) == self.held[j]:
                    continue
                del self.held[j]              # back in joint_states: judged by the rule again
            reason = None
            if j in absent:
                reason = "absent from joint_states for %.2f s (%d messages of its publisher)" % (absent[j][1],
                                                                                                  absent[j][0])
            new += self._set(j, reason, now, "joint_states")
        return new

    def _set(self, joint: str, reason: Optional[str], now: float, source: str) -> List[JointFault]:
        old = self.faults.get(joint)
        if reason is not None and old is None:
            self.faults[joint] = JointFault(joint, reason, now, source)
            return [self.faults[joint]]
        if reason is None and old is not None and old.source == source and not self.config.latch:
            del self.faults[joint]
        return []

    def detected(self, strong: bool = False) -> List[int]:
        """Intact links per leg implied by the current faults (``strong``: a servo's faults only, not a joint left
        out of joint_states)."""
        out = [self.links] * len(self.leg_names)
        for j, f in self.faults.items():
            if strong and f.source == "joint_states":
                continue
            leg, link = self._leg_link[j]
            out[leg] = min(out[leg], link)
        return out

    def leg_evidence(self) -> Dict[str, str]:
        """Per damaged leg, the strongest kind of evidence among its faults (``damage.evidence.KINDS``): a
        servo confirmed silent (``servo``), a joint left out of joint_states (``joint_states``)."""
        out: Dict[str, str] = {}
        for j, f in self.faults.items():
            leg = self.leg_names[self._leg_link[j][0]]
            kind = "joint_states" if f.source == "joint_states" else "servo"
            if leg not in out or KINDS.index(kind) < KINDS.index(out[leg]):
                out[leg] = kind
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
