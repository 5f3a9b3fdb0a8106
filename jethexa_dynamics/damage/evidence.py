"""What a morphology change rests on, and when the gait may act on it (no rclpy).

A wrong morphology is how a false alarm becomes a fall: the re-planned gait folds or lifts a leg that still
carries the body. So the damage monitor says, per leg, what its verdict rests on, and the gait controller stops
supporting on a leg only when that evidence says the leg carries nothing:

================  =========================================================================  ========
kind              what it means                                                              strength
================  =========================================================================  ========
``servo``         a servo of the leg confirmed silent (missed reads, then a long-timeout     strong
                  confirmation read, made on time, without a reply: ``damage.detection``)
``model``         the model-based identifier (``damage.identification``): the body moves as  strong
                  if the links were gone
``override``      the user's manual override (damage_monitor parameter ``morphology``)       strong
``stall``         a servo far from its command under load, from a monitor that counts it as  weak
                  a lost link (this package's monitor reports it as a seized joint)
``joint_states``  a joint its publisher stopped carrying (another driver's bus)              weak
``none``          nothing known (a message without evidence, e.g. from another publisher)    weak
================  =========================================================================  ========

On weak evidence the gait stands still on every foot it has and says why; it walks again when the evidence
comes (the monitor publishes it just before the morphology; either may arrive first) or when the morphology is
corrected. This package's monitor does not leave it there: a loss on ``joint_states`` alone is first checked by the
active probe and published only on its verdict (strong, ``model``) or, when the probe cannot settle it, on its weak
evidence (``nodes/damage_monitor.py``; docs/identification.md). Links that come back (a reset, a corrected false
alarm) need no evidence: adding support never drops the body.

Motion that no morphology explains (an obstacle, a shortened foot; the identifier's ``unexplained``) is said on
the same message, key ``unexplained`` = ``true``; a seized joint (its servo answers, the joint follows no
command: ``damage.seizure``) is not a lost link either, key ``seized`` = the joint names. In both cases the
morphology stays, and the gait walks at a safe crawl (gait_controller ``unexplained_speed_scale``) until the
monitor clears it.

Wire format (``morphology/evidence``, ``diagnostic_msgs/DiagnosticStatus``, latched like ``morphology``):
``name`` = ``morphology evidence``, ``message`` = a human summary, ``values`` = ``morphology`` -> the links per
leg as in ``morphology`` (``3,3,3,1,3,3``), ``legs`` -> the leg names in that order, then one key per leg
whose links are below the full count -> its kind, ``unexplained`` -> ``true`` or ``false`` (absent: false), and
``seized`` -> the seized joints' names joined by commas (empty or absent: none) (:func:`evidence_to_values` /
:func:`evidence_from_values`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from jethexa_dynamics.model.morphology import format_morphology

#: kinds of evidence, strongest first; the first three say the leg carries nothing
KINDS = ("servo", "model", "override", "stall", "joint_states", "none")
STRONG = frozenset(("servo", "model", "override"))
NAME = "morphology evidence"


@dataclass(frozen=True)
class Evidence:
    """Per-leg evidence of one morphology: ``links`` intact links per leg, ``kinds[leg]`` for legs below full."""

    links: Tuple[int, ...]
    kinds: Dict[str, str]
    unexplained: bool = False     # the body moves as no morphology of the bank explains
    seized: Tuple[str, ...] = ()  # joints that follow no command while their servo answers

    def kind(self, leg: str) -> str:
        return self.kinds.get(leg, "none")


def evidence_to_values(links: Sequence[int], kinds: Dict[str, str], leg_names: Sequence[str],
                       full: int = 3, unexplained: bool = False,
                       seized: Sequence[str] = ()) -> Tuple[str, List[Tuple[str, str]]]:
    """(message, key/value pairs) of the evidence message for ``links`` per leg with ``kinds`` by leg name,
    whether the motion is ``unexplained``, and the ``seized`` joints."""
    if len(links) != len(leg_names):
        raise ValueError("morphology evidence: %d link counts for %d legs" % (len(links), len(leg_names)))
    values = [("morphology", ",".join(str(int(n)) for n in links)), ("legs", ",".join(leg_names))]
    parts = []
    for leg, n in zip(leg_names, links):
        if int(n) < full:
            kind = kinds.get(leg, "none")
            if kind not in KINDS:
                raise ValueError("morphology evidence for %s: kind %r not one of %s" % (leg, kind, KINDS))
            values.append((leg, kind))
            parts.append("%s:%d %s" % (leg, int(n), kind))
    values.append(("unexplained", "true" if unexplained else "false"))
    values.append(("seized", ",".join(seized)))
    message = "; ".join(parts) or "healthy"
    if seized:
        message += "; seized: " + ", ".join(seized)
    return (message + "; motion unexplained" if unexplained else message), values


def evidence_from_values(values: Dict[str, str], leg_names: Sequence[str], full: int = 3) -> Evidence:
    """Inverse of :func:`evidence_to_values` (``leg_names`` order); ``ValueError`` naming the bad key."""
    try:
        order = [s.strip() for s in values["legs"].split(",")]
        counts = [int(s) for s in values["morphology"].split(",")]
    except KeyError as exc:
        raise ValueError("morphology evidence: key %s missing" % exc) from None
    except ValueError:
        raise ValueError("morphology evidence: 'morphology' = %r is not a list of link counts"
                         % values.get("morphology")) from None
    if sorted(order) != sorted(leg_names) or len(counts) != len(order):
        raise ValueError("morphology evidence: 'legs' = %r and 'morphology' = %r must list the legs %s once each"
                         % (values["legs"], values["morphology"], ",".join(leg_names)))
    by_leg = dict(zip(order, counts))
    if any(not 0 <= n <= full for n in counts):
        raise ValueError("morphology evidence: 'morphology' = %r: link counts must be in [0, %d]"
                         % (values["morphology"], full))
    kinds = {}
    for leg in leg_names:
        if by_leg[leg] < full:
            kind = values.get(leg, "none")
            if kind not in KINDS:
                raise ValueError("morphology evidence: %r = %r must be one of %s" % (leg, kind, ", ".join(KINDS)))
            kinds[leg] = kind
    flag = values.get("unexplained", "false")
    if flag not in ("true", "false"):
        raise ValueError("morphology evidence: 'unexplained' = %r must be true or false" % flag)
    seized = tuple(n.strip() for n in values.get("seized", "").split(",") if n.strip())
    legs = set(leg_names)
    for name in seized:
        if name.rpartition("_")[2] not in legs:
            raise ValueError("morphology evidence: 'seized' = %r: %r is no joint of the legs %s"
                             % (values["seized"], name, ",".join(leg_names)))
    return Evidence(tuple(by_leg[leg] for leg in leg_names), kinds, flag == "true", seized)


class SupportGate:
    """Decides whether the gait may follow a morphology (pure; the gait controller feeds it).

    ``request(links)`` with every morphology received, ``set_evidence(ev)`` with every evidence message;
    after either, ``accepted`` is the morphology the gait should use and ``held`` the reason it stands still
    instead ('' when it follows ``requested``). A request that takes links from a leg is followed only when
    the evidence of that same morphology is strong for every such leg; otherwise the gait keeps the last
    accepted morphology and stands on all its feet.
    """

    def __init__(self, leg_names: Sequence[str], full: int = 3):
        self.leg_names = list(leg_names)
        self.full = full
        self.accepted: List[int] = [full] * len(self.leg_names)
        self.requested: List[int] = list(self.accepted)
        self.evidence: Optional[Evidence] = None
        self.held = ""
        self.holds = 0           # requests held so far (diagnostics)

    def request(self, links: Sequence[int]) -> bool:
        """A new morphology; True if ``accepted`` changed."""
        self.requested = [int(n) for n in links]
        return self._decide()

    def set_evidence(self, evidence: Evidence) -> bool:
        """New evidence; True if ``accepted`` changed (a held request it supports goes through)."""
        self.evidence = evidence
        return self._decide()

    def why_not(self, links: Sequence[int]) -> str:
        """'' if the gait may follow ``links`` from the accepted morphology, else the reason it may not."""
        lost = [leg for leg, new, old in zip(self.leg_names, links, self.accepted) if new < old]
        if not lost:
            return ""
        ev = self.evidence
        if ev is None or list(ev.links) != list(links):
            return "no evidence for morphology %s that %s carr%s nothing" % (
                format_morphology(links, self.leg_names, self.full), ",".join(lost),
                "ies" if len(lost) == 1 else "y")
        weak = ["%s (%s)" % (leg, ev.kind(leg)) for leg in lost if ev.kind(leg) not in STRONG]
        if weak:
            return "evidence too weak to stop supporting on %s: needs a servo confirmed silent or the model" % (
                ", ".join(weak))
        return ""

    def _decide(self) -> bool:
        reason = self.why_not(self.requested)
        before = list(self.accepted)
        if reason:
            if reason != self.held:
                self.holds += 1
            self.held = reason
        else:
            self.held = ""
            self.accepted = list(self.requested)
        return self.accepted != before

