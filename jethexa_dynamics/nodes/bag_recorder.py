"""Record topics of a running node graph to a rosbag2 bag (written with ``rosbags``; no rosbag2 install).

The bag is what ``jethexa-validate`` reads, and ROS 2 Humble's ``ros2 bag info/play`` accepts it (metadata
version 8, see :mod:`jethexa_dynamics.validation.bag_io`). MCAP by default, sqlite3 on request.

API for node authors (``jethexa-demo --record PATH``, ``robot_emulator`` parameter ``record``)::

    from jethexa_dynamics.nodes.bag_recorder import BagRecorder

    rec = BagRecorder(node, "runs/walk1")               # default topics, MCAP
    rec = BagRecorder(node, "runs/walk1.db", storage="sqlite3",
                      topics={"imu/data": "sensor_msgs/msg/Imu"})   # or a list of names of DEFAULT_RECORD_TOPICS
    ...spin...
    rec.close()                                         # writes metadata.yaml; also runs on rclpy shutdown

    # parameters of a node: declare_record_parameters(node) then BagRecorder.from_parameters(node)
    #   record          (string, '' = off)   bag directory to create
    #   record_storage  (string, 'mcap')     'mcap' or 'sqlite3'
    #   record_topics   (string, '')         comma-separated topic names; '' = DEFAULT_RECORD_TOPICS

Subscriptions are raw (``raw=True``): the serialized CDR bytes go to the bag without deserialisation.
One writer thread of the recorder owns the bag (creates, writes, closes it): the executor's callbacks only
queue the bytes, so disk I/O never stalls them, and the sqlite3 storage (whose connection may only be used
by the thread that opened it) works whichever thread spins the node.
Time stamp of each message = the node clock at reception (sim time if ``use_sim_time``). Topic names are
resolved in the node's namespace. QoS: best effort + volatile (matches reliable and best-effort
publishers); topics in ``latched`` (default: ``morphology``) are taken reliable + transient local so the
current value published before recording started is recorded too. The bag stores each topic's *offered* QoS
the way ``ros2 bag record`` does (the publishers' profiles, looked up when the topic's first message
arrives), so ``ros2 bag play`` offers sensor data best effort and ``morphology`` latched again; a topic that
never got a message gets the project's QoS of that topic (``validation.topics.TOPIC_QOS``).
If the process is killed without ``close()``, the bag has no metadata.yaml (``ros2 bag reindex`` repairs it).
"""
from __future__ import annotations

import functools
import importlib
import queue
import threading
from typing import Dict, Iterable, Optional, Union

from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

from jethexa_dynamics.validation.bag_io import STORAGES, BagWriter
from jethexa_dynamics.validation.topics import DEFAULT_RECORD_TOPICS

STREAM_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=100, reliability=ReliabilityPolicy.BEST_EFFORT,
                        durability=DurabilityPolicy.VOLATILE)
LATCHED_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
DEFAULT_LATCHED = ("morphology",)


def message_class(msgtype: str):
    """``'sensor_msgs/msg/Imu'`` -> the rclpy message class."""
    try:
        pkg, kind, name = msgtype.split("/")
        return getattr(importlib.import_module("{}.{}".format(pkg, kind)), name)
    except (ValueError, ImportError, AttributeError):
        raise ValueError("unknown message type {!r} (expected 'pkg/msg/Name' of an installed package)".format(
            msgtype)) from None


def _topic_table(topics) -> Dict[str, str]:
    if topics is None:
        return dict(DEFAULT_RECORD_TOPICS)
    if isinstance(topics, dict):
        return {str(k): str(v) for k, v in topics.items()}
    table = {}
    known = {k.strip("/"): v for k, v in DEFAULT_RECORD_TOPICS.items()}
    for t in topics:
        if t.strip("/") not in known:
            raise ValueError("record topic {!r} has no known type; give topics as a {{name: type}} dict "
                             "(known: {})".format(t, ", ".join(sorted(known))))
        table[t] = known[t.strip("/")]
    return table


def _qos_time(duration) -> QosTime:
    sec, nsec = divmod(int(duration.nanoseconds), 1_000_000_000)
    return QosTime(sec, nsec)


def offered_qos(profile) -> Qos:
    """An rclpy ``QoSProfile`` (a publisher's, from ``get_publishers_info_by_topic``) as a rosbags ``Qos``:
    the same numbers ``ros2 bag record`` writes to metadata.yaml (the rmw enums share their values)."""
    return Qos(QosHistory(int(profile.history)), int(profile.depth), QosReliability(int(profile.reliability)),
               QosDurability(int(profile.durability)), _qos_time(profile.deadline), _qos_time(profile.lifespan),
               QosLiveliness(int(profile.liveliness)), _qos_time(profile.liveliness_lease_duration),
               bool(profile.avoid_ros_namespace_conventions))


class BagRecorder:
    """Subscribe to ``topics`` on ``node`` and write every message to a new bag at ``path``."""

    def __init__(self, node, path, topics: Optional[Union[Dict[str, str], Iterable[str]]] = None,
                 storage: str = "mcap", latched: Iterable[str] = DEFAULT_LATCHED):
        if storage not in STORAGES:
            raise ValueError("record storage must be one of {}, got {!r}".format(sorted(STORAGES), storage))
        table = _topic_table(topics)
        classes = {t: message_class(ty) for t, ty in table.items()}
        latched = {x.strip("/") for x in latched}
        self.node = node
        self.path = path
        self.writer: Optional[BagWriter] = None
        self._subs = []
        self._lock = threading.Lock()
        self._closed = False
        self._counts: Dict[str, int] = {}
        self._queue: "queue.SimpleQueue" = queue.SimpleQueue()
        names = {topic: node.resolve_topic_name(topic) for topic in table}
        self._writer_error: Optional[BaseException] = None
        self._types = {names[t]: ty for t, ty in table.items()}
        self._latched = {names[t] for t in table if t.strip("/") in latched}
        ready = threading.Event()
        self._thread = threading.Thread(target=self._write_loop, name="bag-recorder", daemon=True,
                                        args=(path, storage, ready))
        self._thread.start()
        ready.wait()
        if self._writer_error is not None:   # e.g. the bag path exists: the writer thread has ended
            raise self._writer_error
        try:
            for topic in table:
                self._counts[names[topic]] = 0
                self._subs.append(node.create_subscription(
                    classes[topic], topic, functools.partial(self._on_message, names[topic]),
                    LATCHED_QOS if topic.strip("/") in latched else STREAM_QOS, raw=True))
        except BaseException:
            self.close()
            raise
        try:
            node.context.on_shutdown(self.close)
        except AttributeError:  # very old rclpy: the owner must call close()
            pass

    def _write_loop(self, path, storage, ready: threading.Event) -> None:
        """The writer thread: open the bag, register each topic with its publishers' QoS before its first
        message, write what the callbacks queue, register the topics that got nothing, close."""
        try:
            self.writer = BagWriter(path, storage=storage)
        except BaseException as exc:  # noqa: BLE001 - handed to the constructor
            self._writer_error = exc
            if self.writer is not None:
                self.writer.close()
            ready.set()
            return
        ready.set()
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    break
                if self._writer_error is None:
                    try:
                        if len(item) == 2:  # (topic, offered QoS): registration before its first message
                            self.writer.add_topic(item[0], self._types[item[0]], latched=item[0] in self._latched,
                                                offered_qos=item[1])
                            continue
                        self.writer.write_cdr(*item)
                    except Exception as exc:  # noqa: BLE001 - e.g. disk full: report once, keep draining
                        self._writer_error = exc
                        self.node.get_logger().error("recording to %s stopped: %s" % (self.path, exc))
        finally:
            try:
                for name, msgtype in self._types.items():  # no message: the project's QoS of the topic
                    self.writer.add_topic(name, msgtype, latched=name in self._latched)
            finally:
                self.writer.close()

    @classmethod
    def from_parameters(cls, node) -> Optional["BagRecorder"]:
        """A recorder configured by the node parameters of :func:`declare_record_parameters` (None if off)."""
        path = node.get_parameter("record").value
        if not path:
            return None
        topics = [t.strip() for t in str(node.get_parameter("record_topics").value or "").split(",") if t.strip()]
        topics = topics or None
        return cls(node, path, topics=topics, storage=node.get_parameter("record_storage").value)

    def _publishers_qos(self, topic):
        """The offered QoS of every publisher of ``topic`` (None when the graph does not know any)."""
        try:
            infos = self.node.get_publishers_info_by_topic(topic)
        except RuntimeError:  # rclpy's RCLError/InvalidHandle: context going down -> the topic's known QoS
            return None
        profiles = [offered_qos(i.qos_profile) for i in infos]
        return profiles or None

    def _on_message(self, topic, data):
        with self._lock:
            if self._closed:
                return
            if self._counts[topic] == 0:
                self._queue.put((topic, self._publishers_qos(topic)))
            self._queue.put((topic, self.node.get_clock().now().nanoseconds, bytes(data)))
            self._counts[topic] += 1

    @property
    def counts(self) -> Dict[str, int]:
        """Messages recorded so far, per topic (all of them are in the bag once ``close()`` returns)."""
        with self._lock:
            return dict(self._counts)

    def close(self):
        """Stop recording and finish the bag (idempotent, safe after rclpy shutdown)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for sub in self._subs:
            try:
                self.node.destroy_subscription(sub)
            except Exception:  # node already destroyed / context shut down: nothing left to undo
                pass
        self._subs = []
        self._queue.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join()


def declare_record_parameters(node, default_path: str = "", default_storage: str = "mcap"):
    """Declare ``record``, ``record_storage``, ``record_topics`` on ``node`` (see module docstring)."""
    from rcl_interfaces.msg import ParameterDescriptor

    node.declare_parameter("record", default_path, ParameterDescriptor(
        description="rosbag2 directory to record the node's topics to ('' = no recording); must not exist"))
    node.declare_parameter("record_storage", default_storage, ParameterDescriptor(
        description="bag storage: 'mcap' (default) or 'sqlite3'"))
    node.declare_parameter("record_topics", "", ParameterDescriptor(
        description="comma-separated topics to record ('' = %s)" % ", ".join(DEFAULT_RECORD_TOPICS)))
