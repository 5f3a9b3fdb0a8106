"""Who may tell the robot that its body changed: the morphology authority.

Any process in the same DDS domain can publish on ``morphology``. The gait controller and the predictor act on a
message only if its sender is the configured authority (parameter ``morphology_authority``, default the
``damage_monitor`` of their own namespace) or one of ``morphology_publishers_allowed``. The sender is the
*publisher endpoint* the message came from, looked up in the ROS graph, never a field of the message:

* **per message** (rclpy of Kilted and later, the rclpy of the test machine): a subscription callback with two
  parameters gets the message info, whose ``publisher_gid`` is the GID of the publisher that sent it; the
  publishers on the topic in the ROS graph (``Node.get_publishers_info_by_topic``) carry their ``endpoint_gid``
  with their node's name and namespace: the GID names the sending node.
* **by the graph** (Humble -- the robot --, Iron and Jazzy give no GID per message: Humble's executor hands a
  subscription callback the message alone, Iron and Jazzy add timestamps and sequence numbers): a message is
  accepted only while *every* publisher on the topic in the ROS graph is allowed. While another publisher is on
  the topic nothing is accepted, the authority's messages included (which of them sent a message cannot be
  told); when it has left, the subscription is re-created, so the authority's current morphology, kept by its
  transient-local publisher, arrives again.

A sender the graph does not name yet (discovery brings a remote node's name separately from its endpoints,
possibly after its first message) is looked up again every :data:`POLL` s; after :data:`IDENTIFY_TIMEOUT` s it is
rejected as unidentified. A rejected message changes nothing; it is counted on the node's /diagnostics status
under ``rejected morphology from <sender>`` and logged once per sender.

What the check cannot tell apart: ROS node names are not authenticated, so a process that names its own node
``/damage_monitor`` is the authority to it (two publishers of that name on the topic both pass); only DDS
security binds a name to a key (SROS2, docs/security.md). By the graph, moreover: a foreign publisher that sends
and leaves the graph before its message is handled (milliseconds) is not seen.

The rules (:func:`judge`) and their bookkeeping (:class:`MorphologyGate`) import no rclpy; the node side is
:func:`subscribe_morphology`.
"""
from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

#: seconds between two looks at the ROS graph while a message waits for its sender to be named, or (by the graph)
#: while a foreign publisher is on the topic
POLL = 0.2
#: a message whose sender the ROS graph has not named after this long [s] is rejected as unidentified
IDENTIFY_TIMEOUT = 3.0
#: messages kept while their sender is looked up (the depth of the morphology QoS); the oldest go first
MAX_PENDING = 10
#: publisher GIDs whose node is remembered at most
MAX_NAMES = 256
#: what the rmw graph cache reports for an endpoint whose node it has not learnt yet
UNKNOWN_NAMES = ("_NODE_NAME_UNKNOWN_", "_NODE_NAMESPACE_UNKNOWN_")
#: None: use the message info's publisher GID wherever this rclpy passes it; False: the graph only (what Humble
#: can do -- the tests run that mode with this rclpy)
PER_MESSAGE_GID: Optional[bool] = None

UNIDENTIFIED = "an unidentified sender"


def resolve_node_name(name: str, namespace: str) -> str:
    """The fully qualified name of ``name``: absolute names stay, relative ones resolve in ``namespace``."""
    name = name.strip()
    if name.startswith("/"):
        return name
    return namespace.rstrip("/") + "/" + name


def allowed_senders(authority: str, others: str, namespace: str) -> Tuple[str, ...]:
    """The nodes whose morphology is accepted: the authority and the comma-separated ``others`` (parameters
    ``morphology_authority`` and ``morphology_publishers_allowed``), resolved in ``namespace``."""
    names = [authority] + [n for n in others.split(",") if n.strip()]
    return tuple(sorted({resolve_node_name(n, namespace) for n in names}))


def gid_bytes(gid: Any) -> bytes:
    """A GID as bytes, whatever form it comes in (the message info's ``{'data': bytes}``, ``endpoint_gid``'s list
    of ints), without the zero padding (Humble's rmw pads GIDs to 24 bytes, later ones to 16)."""
    if isinstance(gid, dict):
        gid = gid.get("data", b"")
    return bytes(bytearray(gid)).rstrip(b"\0")


@dataclass(frozen=True)
class Publisher:
    """A publisher on the topic as the ROS graph has it: its node (fully qualified; "" while unknown), its GID."""
    node: str
    gid: bytes


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    sender: str = ""     # the node that sent it, or "one of /a, /b" (by the graph); "" = not identified (yet)
    why: str = ""

    @property
    def unidentified(self) -> bool:
        return not self.accepted and not self.sender


def judge(allowed: Sequence[str], publishers: Sequence[Publisher], gid: Optional[bytes] = None) -> Verdict:
    """Accept or reject one message: by the publisher ``gid`` it came with, else by every publisher on the topic."""
    allowed_text = "allowed: %s" % ", ".join(allowed)
    if gid is not None:
        node = next((p.node for p in publishers if p.gid == gid), None)
        if not node:
            return Verdict(False, "", "its publisher (GID %s) is not %s the ROS graph yet" % (
                gid.hex(), "named in" if node == "" else "in"))
        if node in allowed:
            return Verdict(True, node)
        return Verdict(False, node, "%s is not the morphology authority (%s); ignored, nothing changed"
                       % (node, allowed_text))
    if not publishers:
        return Verdict(False, "", "no publisher on the topic in the ROS graph yet")
    if any(not p.node for p in publishers):
        return Verdict(False, "", "a publisher on the topic is not named in the ROS graph yet")
    nodes = sorted({p.node for p in publishers})
    sender = nodes[0] if len(nodes) == 1 else "one of " + ", ".join(nodes)
    foreign = [n for n in nodes if n not in allowed]
    if not foreign:
        return Verdict(True, sender)
    return Verdict(False, sender, "%s on the topic %s not allowed (%s) and this rclpy does not say which publisher "
                   "sent a message: nothing is accepted while %s there; ignored, nothing changed"
                   % (", ".join(foreign), "is" if len(foreign) == 1 else "are", allowed_text,
                      "it is" if len(foreign) == 1 else "they are"))


class MorphologyGate:
    """Bookkeeping around :func:`judge` for one subscription (no rclpy: the node side passes the graph in).

    ``on_message(msg, gid)`` delivers an accepted message, rejects a foreign one (``reject(sender, why)``) and
    keeps one whose sender the graph does not name yet; ``poll()`` (while ``needs_poll``) looks again, in order of
    arrival, and -- by the graph -- calls ``on_clear()`` once no foreign publisher is left after a rejection (the
    node re-subscribes there). A newer accepted message drops the older ones still waiting. A GID, once named,
    is remembered: an endpoint's GID never changes owner.
    """

    def __init__(self, allowed: Sequence[str], publishers: Callable[[], Sequence[Publisher]],
                 deliver: Callable[[Any], None], reject: Callable[[str, str], None],
                 on_clear: Callable[[], None] = lambda: None, clock: Callable[[], float] = time.monotonic,
                 timeout: float = IDENTIFY_TIMEOUT, max_pending: int = MAX_PENDING):
        self.allowed = tuple(allowed)
        self._publishers, self._deliver, self._reject, self._on_clear = publishers, deliver, reject, on_clear
        self.clock, self.timeout = clock, timeout
        self.pending: Deque[Tuple[float, Any, Optional[bytes]]] = deque(maxlen=max_pending)
        self.blocked = False           # by the graph: something was rejected while a foreign publisher was there
        self.accepted = 0
        self.mode = ""                 # "publisher gid" or "ros graph": how the last message was judged
        self._names: Dict[bytes, str] = {}

    @property
    def needs_poll(self) -> bool:
        return bool(self.pending) or self.blocked

    def judge(self, gid: Optional[bytes]) -> Verdict:
        self.mode = "publisher gid" if gid is not None else "ros graph"
        if gid is not None and gid in self._names:
            return judge(self.allowed, [Publisher(self._names[gid], gid)], gid)
        verdict = judge(self.allowed, self._publishers(), gid)
        if gid is not None and verdict.sender:
            if len(self._names) >= MAX_NAMES:   # many short-lived publishers: start over rather than grow
                self._names.clear()
            self._names[gid] = verdict.sender
        return verdict

    def on_message(self, msg: Any, gid: Optional[bytes] = None) -> Verdict:
        verdict = self.judge(gid)
        if verdict.accepted:
            self._accept(msg)
        elif verdict.unidentified:
            if len(self.pending) == self.pending.maxlen:
                self._reject(UNIDENTIFIED, "more than %d messages waiting for their sender to be named in the ROS "
                             "graph; the oldest is dropped" % self.pending.maxlen)
            self.pending.append((self.clock(), msg, gid))
        else:
            self._refuse(verdict, gid)
        return verdict

    def poll(self) -> None:
        while self.pending:
            t, msg, gid = self.pending[0]
            verdict = self.judge(gid)
            if verdict.unidentified and self.clock() - t < self.timeout:
                break                                  # keep the order: the next ones wait behind this one
            self.pending.popleft()
            if verdict.accepted:
                self._accept(msg, newest=False)
            elif verdict.unidentified:
                self._reject(UNIDENTIFIED, "%s after %.1f s; ignored, nothing changed" % (verdict.why, self.timeout))
            else:
                self._refuse(verdict, gid)
        if self.blocked and not self.pending:
            publishers = self._publishers()
            if all(p.node and p.node in self.allowed for p in publishers):
                self.blocked = False
                self._on_clear()

    def _accept(self, msg: Any, newest: bool = True) -> None:
        if newest:                 # newer than every message still waiting: those must not overwrite it later
            self.pending.clear()
        self.accepted += 1
        self._deliver(msg)

    def _refuse(self, verdict: Verdict, gid: Optional[bytes]) -> None:
        if gid is None:
            self.blocked = True
        self._reject(verdict.sender, verdict.why)


# ---------------------------------------------------------------------------------------------- node side
def _message_info_supported() -> bool:
    """Whether this rclpy passes the message info to a two-parameter subscription callback (Iron and later)."""
    from rclpy.subscription import Subscription

    return hasattr(Subscription, "CallbackType")


def _info_gid(info: Any) -> Optional[bytes]:
    gid = info.get("publisher_gid") if isinstance(info, dict) else None
    return None if gid is None else gid_bytes(gid)


def _node_of(info) -> str:
    name, ns = info.node_name, info.node_namespace
    if not name or name in UNKNOWN_NAMES or ns in UNKNOWN_NAMES:
        return ""
    return ns.rstrip("/") + "/" + name


class MorphologySubscription:
    """``morphology`` for ``node`` (a ``ThinNode`` declaring the two authority parameters): ``callback(msg)`` runs
    for the allowed senders' messages only. The subscription, its callback and the look-up timer are guarded
    like the node's other callbacks (under the node's lock, CPU counted under ``morphology``); a malformed message
    of an allowed sender is rejected by ``callback`` as before (``rejected morphology``). The sender is judged
    on the serialized message (after its size, ``ThinNode.intake``): a foreign one is never decoded. The
    subscription is polled (``ThinNode.sub(wake=False)``): its messages are taken at the node's next wake-up (its
    cycle), so a flood on the topic does not wake the node once per message."""

    def __init__(self, node, callback: Callable[[Any], None], qos, topic: str = "morphology", msg_type=None):
        from std_msgs.msg import UInt8MultiArray

        from jethexa_dynamics.nodes._common import INPUT_ERRORS, decoder

        self.node, self.callback, self.qos, self.topic = node, callback, qos, topic
        self.msg_type = msg_type or UInt8MultiArray
        self._decode = decoder(self.msg_type, topic)
        self._input_errors = INPUT_ERRORS
        self.allowed = allowed_senders(node.p["morphology_authority"], node.p["morphology_publishers_allowed"],
                                       node.get_namespace())
        self.with_info = _message_info_supported() if PER_MESSAGE_GID is None else PER_MESSAGE_GID
        self.gate = MorphologyGate(self.allowed, self._publishers, self._deliver, self._reject, self._resubscribe)
        self.resubscriptions = 0
        self.subscription = self._subscribe()
        self.timer = node.timer(POLL, self._poll, topic)
        self.timer.cancel()
        if topic == "morphology":
            node.status_sources.append(self.status)

    def _subscribe(self):
        if self.with_info:     # rclpy passes (msg, info) to a callback with two parameters
            def on_message(raw, info):
                self._on_message(raw, _info_gid(info))
        else:
            def on_message(raw):
                self._on_message(raw, None)
        return self.node.sub(self.msg_type, self.topic, on_message, self.qos, wake=False, decode=False)

    def _on_message(self, msg, gid: Optional[bytes]) -> None:
        self.gate.on_message(msg, gid)
        self._arm()

    def _poll(self) -> None:
        self.gate.poll()
        self._arm()

    def _arm(self) -> None:
        if self.gate.needs_poll:
            if self.timer.is_canceled():
                self.timer.reset()
        elif not self.timer.is_canceled():
            self.timer.cancel()

    def _publishers(self) -> List[Publisher]:
        return [Publisher(_node_of(info), gid_bytes(info.endpoint_gid))
                for info in self.node.get_publishers_info_by_topic(self.subscription.topic_name)]

    def _deliver(self, raw) -> None:
        try:
            self.callback(self._decode(raw))
        except self._input_errors as exc:
            self.node.reject(self.topic, str(exc))

    def _reject(self, sender: str, why: str) -> None:
        self.node.reject("%s from %s" % (self.topic, sender), why, once=True)

    def _resubscribe(self) -> None:
        """By the graph, once the foreign publishers have left: a new subscription gets the allowed publisher's
        history again (transient local), the authority's current morphology last."""
        self.node.destroy_subscription(self.subscription)
        self.subscription = self._subscribe()
        self.resubscriptions += 1

    def status(self) -> List[Tuple[str, Any]]:
        return [("morphology_authority", ", ".join(self.allowed)),
                ("morphology_sender_check", self.gate.mode or ("publisher gid" if self.with_info else "ros graph")),
                ("morphology_accepted", self.gate.accepted)]


def subscribe_morphology(node, callback: Callable[[Any], None], qos, topic: str = "morphology",
                         msg_type=None) -> MorphologySubscription:
    """Subscribe ``callback`` to ``topic`` (``msg_type``, default std_msgs/UInt8MultiArray; ``qos``) for the
    messages of the node's morphology authority only (also ``morphology/evidence``, what a morphology rests on)."""
    return MorphologySubscription(node, callback, qos, topic, msg_type)
