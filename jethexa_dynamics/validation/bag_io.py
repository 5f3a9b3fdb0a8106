"""rosbag2 I/O with ``rosbags`` (no ROS install needed): a writer for recording, a checked reader for validation.

Writing -- metadata version
    ``rosbags`` 0.11 writes rosbag2 metadata version 8 or 9. ROS 2 Humble's rosbag2 (0.15.x, its own
    ``BagMetadata.version`` is 5) decodes ``metadata.yaml`` field by field and reads
    ``topic_metadata.offered_qos_profiles`` as a *string*; fields it does not know (``type_description_hash``,
    ``custom_data``, ``ros_distro``) are ignored. Version 9 changed ``offered_qos_profiles`` to a YAML
    sequence, which Humble's yaml-cpp rejects ("bad conversion", ros2/rosbag2#1520 and #1895), so the
    newest version Humble's ``ros2 bag`` accepts is **8**: :data:`HUMBLE_METADATA_VERSION`.
    MCAP is the default storage (on Humble it needs ``ros-humble-rosbag2-storage-mcap``); ``sqlite3``
    on request.

Reading
    :func:`read_bag` returns numpy time series (seconds from the bag start, recording clock) for the
    topics of :class:`~jethexa_dynamics.validation.topics.TopicNames` and turns every problem into a
    :class:`~jethexa_dynamics.validation.errors.BagError` with a message for the user.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
from rosbags.rosbag2 import StoragePlugin, Writer

from jethexa_dynamics.model.wire import morphology_from_wire

from . import bag_messages as messages
from .errors import (CorruptBagError, EmptyWindowError, MissingTopicsError, NotABagError, TimeJumpError,
                     UnknownMessageTypeError, BagError)
from .topics import ROLE_TYPES, TOPIC_QOS, TopicNames, normalize

#: rosbag2 metadata version written by :class:`BagWriter` (the newest one ROS 2 Humble reads, see above)
HUMBLE_METADATA_VERSION = 8

#: rosbag2's "infinite" duration (deadline, lifespan, lease), as ``ros2 bag record`` stores it
INFINITE = QosTime(9223372036, 854775807)


def qos_profile(kind: str) -> Qos:
    """The offered QoS of a :data:`~.topics.TOPIC_QOS` kind (``sensor``, ``reliable``, ``latched``)."""
    rel, dur, depth = {"sensor": (QosReliability.BEST_EFFORT, QosDurability.VOLATILE, 5),
                       "reliable": (QosReliability.RELIABLE, QosDurability.VOLATILE, 10),
                       "latched": (QosReliability.RELIABLE, QosDurability.TRANSIENT_LOCAL, 10)}[kind]
    return Qos(QosHistory.KEEP_LAST, depth, rel, dur, INFINITE, INFINITE, QosLiveliness.AUTOMATIC, INFINITE, False)


#: offered QoS stored for latched topics (reliable, transient local)
LATCHED_QOS = qos_profile("latched")

STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}

#: default largest allowed gap between two IMU messages inside the window (s)
DEFAULT_MAX_GAP = 1.0


# ----------------------------------------------------------------------------------------------- writing
class BagWriter:
    """Write a rosbag2 bag that ROS 2 Humble's ``ros2 bag info/play`` accepts.

    >>> with BagWriter("run1", storage="mcap") as w:          # doctest: +SKIP
    ...     w.add_topic("/imu/data", "sensor_msgs/msg/Imu")
    ...     w.write_cdr("/imu/data", t_ns, cdr_bytes)        # raw CDR, e.g. from rclpy raw=True
    ...     w.write("/imu/data", t_ns, messages.imu(t_ns, q))  # or a typestore message

    Thread-safe (one lock around the storage). ``path`` must not exist yet.
    """

    def __init__(self, path, storage: str = "mcap", version: int = HUMBLE_METADATA_VERSION):
        if storage not in STORAGES:
            raise ValueError("storage must be one of {}, got {!r}".format(sorted(STORAGES), storage))
        self.path = Path(path)
        if self.path.exists():
            raise ValueError("bag path {} exists already; rosbag2 bags are never overwritten".format(self.path))
        self.storage = storage
        self._writer = Writer(self.path, version=version, storage_plugin=STORAGES[storage])
        self._writer.open()
        self._connections = {}
        self._lock = threading.Lock()
        self.counts: Dict[str, int] = {}

    def add_topic(self, topic: str, msgtype: str, latched: bool = False, offered_qos=None):
        """Register ``topic`` with ``msgtype`` (e.g. ``sensor_msgs/msg/Imu``); a repeat is a no-op.

        ``offered_qos``: the publishers' QoS profiles (rosbags ``Qos``), stored as ``ros2 bag record`` does so
        that ``ros2 bag play`` offers the same (best effort for sensor data, latched morphology). Without it:
        ``latched`` -> reliable + transient local, else the topic's kind in :data:`~.topics.TOPIC_QOS`, else
        nothing (play uses its default).
        """
        if offered_qos is None:
            kind = "latched" if latched else TOPIC_QOS.get(normalize(topic).lstrip("/"))
            offered_qos = [qos_profile(kind)] if kind else []
        topic = normalize(topic)
        with self._lock:
            if topic in self._connections:
                if self._connections[topic].msgtype != msgtype:
                    raise ValueError("topic {} already registered with type {}".format(
                        topic, self._connections[topic].msgtype))
                return
            if msgtype not in messages.typestore().fielddefs:
                raise ValueError("unknown message type {!r} (not a ROS 2 Humble type)".format(msgtype))
            self._connections[topic] = self._writer.add_connection(
                topic, msgtype, typestore=messages.typestore(), offered_qos_profiles=list(offered_qos))
            self.counts[topic] = 0

    def write_cdr(self, topic: str, t_ns: int, data) -> None:
        """Append serialized CDR bytes received at ``t_ns`` (ns since the epoch of the recording clock)."""
        topic = normalize(topic)
        with self._lock:
            if self._writer is None:
                raise ValueError("bag {} is closed".format(self.path))
            try:
                conn = self._connections[topic]
            except KeyError:
                raise ValueError("topic {} not registered (add_topic first)".format(topic)) from None
            self._writer.write(conn, int(t_ns), bytes(data))
            self.counts[topic] += 1

    def write(self, topic: str, t_ns: int, msg) -> None:
        """Append a typestore message (see :mod:`.messages`); registers the topic on first use."""
        self.add_topic(topic, msg.__msgtype__)
        self.write_cdr(topic, t_ns, messages.serialize(msg))

    @property
    def closed(self) -> bool:
        return self._writer is None

    def close(self) -> None:
        """Finish the storage file and write ``metadata.yaml`` (idempotent)."""
        with self._lock:
            writer, self._writer = self._writer, None
            if writer is not None:
                writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


# ----------------------------------------------------------------------------------------------- reading
@dataclass
class JointSeries:
    """Joint vectors against time; ``t_target`` is when a commanded point is to be reached."""

    t: np.ndarray
    names: Tuple[str, ...]
    q: np.ndarray
    t_target: Optional[np.ndarray] = None
    #: (len, len(names)) bool: the message carried this joint (``q`` holds each joint's latest value otherwise)
    carried: Optional[np.ndarray] = None

    def __len__(self):
        return len(self.t)


@dataclass
class ImuSeries:
    t: np.ndarray
    quat: np.ndarray    # (N, 4) w, x, y, z
    gyro: np.ndarray    # (N, 3) rad/s
    accel: np.ndarray   # (N, 3) m/s^2

    def __len__(self):
        return len(self.t)


@dataclass
class PoseSeries:
    t: np.ndarray
    pos: np.ndarray     # (N, 3) m
    quat: np.ndarray    # (N, 4) w, x, y, z

    def __len__(self):
        return len(self.t)


@dataclass
class MorphologySeries:
    t: np.ndarray
    links: np.ndarray   # (M, n_legs) intact links per leg

    def __len__(self):
        return len(self.t)


@dataclass
class BagData:
    """What :func:`read_bag` extracted. Times in seconds from the bag start (recording clock)."""

    path: Path
    storage: str
    metadata_version: int
    start_ns: int
    duration: float                     # whole bag, s
    window: Tuple[float, float]         # analysed part, s
    topics: Dict[str, Optional[str]]    # role -> topic found in the bag (None if absent)
    available: Dict[str, str]           # every topic of the bag -> type
    commands: JointSeries               # includes the last command before the window
    imu: ImuSeries
    joint_states: Optional[JointSeries] = None
    #: per ``joint_states`` row, the set-points of the ``setpoints`` message with its header stamp (NaN: none)
    setpoints: Optional[JointSeries] = None
    morphology: Optional[MorphologySeries] = None   # includes the last entry before the window
    ground_truth: Optional[PoseSeries] = None
    n_messages: int = 0                 # messages of the used topics inside the window
    notes: list = field(default_factory=list)
    #: the bag's layout (``validation/layouts.py``): native, hiwonder-ros2 or nano-ros1
    layout: str = "native"
    #: what the layout cannot give (no measured joints: servo health, seizure detection, ...)
    unavailable: tuple = ()


def resolve_bag_path(path) -> Path:
    """The rosbag2 directory for ``path`` (the directory, its metadata.yaml or its storage file), or a ROS 1
    ``.bag`` file."""
    p = Path(path)
    if not p.exists():
        raise NotABagError("{}: no such file or directory".format(p))
    if p.is_file() and p.suffix == ".bag":
        return p
    if p.is_file():
        if (p.parent / "metadata.yaml").is_file() and (p.name == "metadata.yaml"
                                                      or p.suffix in (".mcap", ".db3")):
            return p.parent
        if p.suffix in (".mcap", ".db3"):
            raise NotABagError("{} is a storage file without metadata.yaml next to it; recreate the metadata "
                               "with `ros2 bag reindex {} {}`".format(
                                   p, p.parent, "mcap" if p.suffix == ".mcap" else "sqlite3"))
        raise NotABagError("{} is a file, not a rosbag2 directory (expected a directory with metadata.yaml "
                           "and .mcap/.db3 files)".format(p))
    if not (p / "metadata.yaml").is_file():
        inside = sorted(x.name for x in p.iterdir())[:10]
        raise NotABagError("{} is not a rosbag2 directory: no metadata.yaml (it holds: {})".format(
            p, ", ".join(inside) or "nothing"))
    return p


def _time_s(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def _stamp_ns(stamp) -> int:
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _check_joint_lengths(names, values) -> None:
    """A joint message names each of its positions (CorruptBagError otherwise)."""
    if len(names) != len(values):
        raise CorruptBagError("joint message with {} names but {} positions".format(len(names), len(values)))


class _JointAccumulator:
    """Forward-fills joint vectors by name (messages may carry a subset or another order)."""

    def __init__(self):
        self.index: Dict[str, int] = {}
        self.cur = []
        self.rows, self.t, self.t_target, self.carried = [], [], [], []

    def add(self, t, names, values, t_target=None):
        _check_joint_lengths(names, values)
        for n, v in zip(names, values):
            i = self.index.get(n)
            if i is None:
                i = self.index[n] = len(self.cur)
                self.cur.append(np.nan)
            self.cur[i] = float(v)
        self.carried.append([self.index[n] for n in names])
        self.rows.append(list(self.cur))
        self.t.append(t)
        self.t_target.append(t if t_target is None else t_target)

    def series(self, with_target=False) -> JointSeries:
        n = len(self.cur)
        q = np.full((len(self.rows), n), np.nan)
        carried = np.zeros((len(self.rows), n), dtype=bool)
        for k, (r, c) in enumerate(zip(self.rows, self.carried)):
            q[k, :len(r)] = r
            carried[k, c] = True
        return JointSeries(np.asarray(self.t, float), tuple(self.index), q,
                           np.asarray(self.t_target, float) if with_target else None, carried)


def _unit_quats(topic, t, q) -> np.ndarray:
    """Quaternions (N, 4) of ``topic`` at times ``t`` [s] checked unit within ``model.se3.QUAT_NORM_TOL`` (the
    package's one tolerance) and renormalised; a non-unit one is a bad bag (BagError), not a rotation."""
    from jethexa_dynamics.model.se3 import QUAT_NORM_TOL

    q = np.asarray(q, dtype=float)
    n = np.linalg.norm(q, axis=1)
    bad = np.flatnonzero(~(np.abs(n - 1.0) <= QUAT_NORM_TOL))
    if bad.size:
        k = int(bad[0])
        raise BagError("{}: orientation of the message at {:.3f} s has norm {:.6g} ({} such messages); a unit "
                       "quaternion has norm in [{:g}, {:g}]".format(topic, t[k], n[k], bad.size, 1 - QUAT_NORM_TOL,
                                                                     1 + QUAT_NORM_TOL))
    return q / n[:, None]


def _quat_wxyz(q):
    return (q.w, q.x, q.y, q.z)


def _check_header_order(role, topic, stamps_ns, t_rel):
    """Header stamps of one topic must never go backwards (zero stamps = not set, ignored)."""
    s = np.asarray(stamps_ns, dtype=np.int64)
    ok = s > 0
    if ok.sum() < 2:
        return
    s, t = s[ok], np.asarray(t_rel)[ok]
    d = np.diff(s)
    bad = np.flatnonzero(d < 0)
    if bad.size:
        k = bad[0]
        raise TimeJumpError("time jump in {} ({}): header stamp goes back by {:.3f} s at t={:.3f} s of the bag"
                            .format(topic, role, -d[k] * 1e-9, t[k + 1]))


def _check_gaps(topic, t, max_gap):
    if len(t) < 2:
        return
    d = np.diff(t)
    k = int(np.argmax(d))
    if d[k] > max_gap:
        raise TimeJumpError("time jump in {}: no message for {:.3f} s between t={:.3f} s and t={:.3f} s of the bag "
                            "(largest allowed gap {:.3f} s, see --max-gap)".format(topic, d[k], t[k], t[k + 1],
                                                                                   max_gap))


def read_bag(path, topics: TopicNames = TopicNames(), start: Optional[float] = None,
             end: Optional[float] = None, max_gap: float = DEFAULT_MAX_GAP, layout: Optional[str] = None,
             overrides: Optional[Dict[str, Optional[str]]] = None, joint_map=None) -> BagData:
    """Read and check the validation inputs of a rosbag2 bag (or a ROS 1 ``.bag``).

    ``start``/``end``: window in seconds from the bag start (None = bag start/end). Raises a
    :class:`BagError` subclass for every problem with the bag (see :mod:`jethexa_dynamics.validation.errors`).
    ``layout``: None = ``topics`` as given (this package's own layout); else a name of
    :data:`.layouts.CHOICES` (``auto``: from the bag's topics): its topics (with ``overrides``, role -> topic),
    its joint map (or ``joint_map``) and IMU mount turn the stock software's messages into this package's.
    """
    from rosbags.highlevel import AnyReader

    bag = resolve_bag_path(path)
    if start is not None and end is not None and end <= start:
        raise EmptyWindowError("empty window: --end ({:.3f} s) is not after --start ({:.3f} s)".format(end, start))
    try:
        reader = AnyReader([bag], default_typestore=messages.typestore())
        reader.open()
    except BagError:
        raise
    except Exception as err:  # rosbags/apsw/mcap/yaml raise many types; all mean "cannot read this bag"
        raise CorruptBagError("bag {} is corrupt or truncated (cannot open it): {}".format(bag, _why(err))) from None
    try:
        lay = None
        if layout is not None:
            from . import layouts

            lay = layouts.resolve(layout, {c.topic: c.msgtype for c in reader.connections}, overrides, joint_map)
            topics = lay.topics
        return _read_open(reader, bag, topics, start, end, max_gap, lay)
    finally:
        try:
            reader.close()
        except Exception:  # closing a broken bag may fail again; the first error is the one to report
            pass


def _why(err) -> str:
    text = str(err).strip() or type(err).__name__
    return text if len(text) < 400 else text[:400] + "..."


def _read_open(reader, bag, topics, start, end, max_gap, layout=None) -> BagData:
    """:func:`read_bag` on the opened ``reader`` of ``bag``: the topics found, the window, the messages read
    up to its end, then each series checked and cut to the window (and, with a stock ``layout``, converted to this
    package's joints and IMU axes)."""
    version, storage = _version_and_storage(bag)
    if int(reader.message_count) == 0:
        raise EmptyWindowError("bag {} holds no messages".format(bag))
    available = {c.topic: c.msgtype for c in reader.connections}
    role_types = ROLE_TYPES if layout is None else dict(ROLE_TYPES, commands=(layout.command_type,))
    found, conns = _topic_connections(reader, topics, available, role_types)
    t0_ns = int(reader.start_time)
    duration = max(0.0, (int(reader.end_time) - 1 - t0_ns) * 1e-9)  # rosbags: end_time = last + 1 ns
    w0 = 0.0 if start is None else float(start)
    w1 = duration if end is None else float(end)
    if w0 >= duration or w1 <= 0.0:
        raise EmptyWindowError("empty window [{:.3f}, {:.3f}] s: the bag spans 0 to {:.3f} s".format(
            w0, w1, duration))
    raw = _read_messages(reader, bag, conns, t0_ns, stop_ns=t0_ns + int(round(w1 * 1e9)) + 1)

    notes = []
    imu = _imu_in_window(raw, found["imu"], w0, w1, duration, max_gap)
    commands, n_commands = _commands_in_window(raw, found["commands"], w0, w1)
    unavailable = ()
    if layout is not None and layout.name != "native":
        commands, imu = _from_stock(layout, raw, found, commands, imu)
        unavailable = layout.unavailable()
        if unavailable:
            notes.append("{} layout: the joint positions are the commanded ones, none measured: no {}".format(
                layout.name, ", no ".join(unavailable[1:])))
    n_msgs = len(imu) + n_commands
    joint_states = None
    if found["joint_states"] is not None:
        s = raw.joint_states.series()
        _check_header_order("joint_states", found["joint_states"], raw.stamps["joint_states"],
                            raw.msg_t["joint_states"])
        m = s.t >= w0
        if m.any():
            joint_states = JointSeries(s.t[m], s.names, s.q[m], carried=s.carried[m])
            n_msgs += int(m.sum())
    setpoints = None
    if joint_states is not None and found["setpoints"] is not None:
        setpoints = _setpoints_by_stamp(raw, joint_states, np.asarray(raw.stamps["joint_states"], np.int64)[m])
        n_msgs += int(setpoints.carried.any(axis=1).sum())
    morphology = None
    if found["morphology"] is not None and raw.mo_t:
        morphology, n = _morphology_from_window(raw, found["morphology"], w0)
        n_msgs += n
    if morphology is None:
        notes.append("no morphology message at or before the window: all legs assumed intact")
    ground_truth = None
    if found["ground_truth"] is not None:
        ground_truth = _ground_truth_in_window(raw, found["ground_truth"], w0)
        n_msgs += 0 if ground_truth is None else len(ground_truth)
    if ground_truth is None:
        notes.append("no ground-truth pose ({}) in the window: position metrics not available".format(
            topics.ground_truth))

    return BagData(path=bag, storage=storage, metadata_version=version, start_ns=t0_ns, duration=duration,
                   window=(w0, min(w1, duration)), topics=found, available=available, commands=commands, imu=imu,
                   joint_states=joint_states, setpoints=setpoints, morphology=morphology, ground_truth=ground_truth,
                   n_messages=n_msgs, notes=notes, layout="native" if layout is None else layout.name,
                   unavailable=unavailable)


def _from_stock(layout, raw, found, commands: JointSeries, imu: ImuSeries):
    """The stock software's commands and IMU as this package's: its joint names and angles through the layout's
    joint map (a foreign name: ForeignJointError, one line), the IMU checked in the layout's frame and turned into
    base_link axes by its mount (a foreign frame: LayoutError, one line)."""
    from jethexa_dynamics.hardware.joint_map import imu_to_base

    from .layouts import LayoutError

    frames = sorted(raw.imu_frames)
    if layout.imu_frame and frames != [layout.imu_frame]:
        other = [f for f in frames if f != layout.imu_frame]
        raise LayoutError("{} ({} layout): IMU frame_id {!r} is not {!r}, the frame whose mount the layout knows "
                          "(imu_link yawed as the stock URDF mounts it)".format(
                              found["imu"], layout.name, other[0] if other else "", layout.imu_frame))
    if layout.joint_map is not None:
        try:
            names, q = layout.joint_map.columns(commands.names, commands.q)
        except ValueError as err:
            raise LayoutError("{} ({} layout): {}".format(found["commands"], layout.name, err)) from None
        commands = JointSeries(commands.t, names, q, commands.t_target, commands.carried)
    if any(layout.imu_mount):
        quat, gyro, accel = imu_to_base(layout.imu_mount, imu.quat, imu.gyro, imu.accel)
        imu = ImuSeries(imu.t, quat, gyro, accel)
    return commands, imu


def _setpoints_by_stamp(raw, joint_states: JointSeries, stamps_ns: np.ndarray) -> JointSeries:
    """Each ``joint_states`` row's set-points: the ``setpoints`` message with the same header stamp (servo_driver
    gives both one stamp; they may be recorded in either order), in ``joint_states``' columns; NaN where there is
    none (no twin, an unset stamp, a joint it does not carry)."""
    col = {n: k for k, n in enumerate(joint_states.names)}
    q = np.full(joint_states.q.shape, np.nan)
    for k, st in enumerate(stamps_ns):
        twin = raw.setpoints.get(int(st)) if st > 0 else None
        if twin is not None:
            for n, v in zip(*twin):
                if n in col:
                    q[k, col[n]] = v
    return JointSeries(joint_states.t, joint_states.names, q, carried=~np.isnan(q))


def _version_and_storage(bag):
    """(metadata version, storage identifier) from metadata.yaml; (-1, "unknown") if unreadable (rosbags opened
    the bag, so this is only informative); (2, "rosbag1") for a ROS 1 bag (format 2.0)."""
    if Path(bag).is_file() and Path(bag).suffix == ".bag":
        return 2, "rosbag1"
    try:
        info = read_metadata_yaml(bag)
        return int(info["version"]), str(info["storage_identifier"])
    except Exception:
        return -1, "unknown"


def _topic_connections(reader, topics, available, role_types=ROLE_TYPES):
    """({role: topic found or None}, {role: its connections}): each role's topic, matched after normalisation
    and of a type the role accepts (``role_types``); MissingTopicsError names the required ones that are
    absent."""
    by_norm = {}
    for c in reader.connections:
        by_norm.setdefault(normalize(c.topic), []).append(c)
    found, conns = {}, {}
    missing = []
    for role, topic in topics.items():
        cs = by_norm.get(topic) if topic is not None else None
        if not cs:
            found[role] = None
            if role in TopicNames.REQUIRED:
                missing.append("{} ({})".format(topic, role))
            continue
        types = {c.msgtype for c in cs}
        if len(types) != 1 or next(iter(types)) not in role_types[role]:
            raise UnknownMessageTypeError(
                "topic {} ({}) has message type {}; expected {}".format(
                    topic, role, " and ".join(sorted(types)), " or ".join(role_types[role])))
        found[role] = cs[0].topic
        conns[role] = cs
    if missing:
        raise MissingTopicsError(missing, available)
    return found, conns


@dataclass
class _Messages:
    """The used topics' messages as read (times in s from the bag start, header stamps in ns), by role."""

    commands: _JointAccumulator = field(default_factory=_JointAccumulator)
    joint_states: _JointAccumulator = field(default_factory=_JointAccumulator)
    imu_t: list = field(default_factory=list)
    imu_q: list = field(default_factory=list)
    imu_w: list = field(default_factory=list)
    imu_a: list = field(default_factory=list)
    imu_stamp: list = field(default_factory=list)
    imu_has_q: list = field(default_factory=list)
    imu_frames: set = field(default_factory=set)
    gt_t: list = field(default_factory=list)
    gt_p: list = field(default_factory=list)
    gt_q: list = field(default_factory=list)
    gt_stamp: list = field(default_factory=list)
    mo_t: list = field(default_factory=list)
    mo_l: list = field(default_factory=list)
    setpoints: dict = field(default_factory=dict)      # header stamp [ns] -> (names, positions)
    stamps: dict = field(default_factory=lambda: {"commands": [], "joint_states": []})
    msg_t: dict = field(default_factory=lambda: {"commands": [], "joint_states": []})

    def add(self, role, t, msg) -> None:
        if role == "imu":
            self.imu_t.append(t)
            self.imu_q.append(_quat_wxyz(msg.orientation))
            self.imu_has_q.append(not msg.orientation_covariance[0] == -1.0)
            v, a = msg.angular_velocity, msg.linear_acceleration
            self.imu_w.append((v.x, v.y, v.z))
            self.imu_a.append((a.x, a.y, a.z))
            self.imu_stamp.append(_stamp_ns(msg.header.stamp))
            self.imu_frames.add(str(msg.header.frame_id))
        elif role == "commands" and not hasattr(msg, "points"):   # a stock layout's commanded JointState
            self.stamps["commands"].append(_stamp_ns(msg.header.stamp))
            self.msg_t["commands"].append(t)
            self.commands.add(t, list(msg.name), list(msg.position))
        elif role == "commands":
            self.stamps["commands"].append(_stamp_ns(msg.header.stamp))
            self.msg_t["commands"].append(t)
            for pt in msg.points:
                self.commands.add(t, list(msg.joint_names), list(pt.positions), t + _time_s(pt.time_from_start))
        elif role == "joint_states":
            self.stamps["joint_states"].append(_stamp_ns(msg.header.stamp))
            self.msg_t["joint_states"].append(t)
            self.joint_states.add(t, list(msg.name), list(msg.position))
        elif role == "setpoints":
            _check_joint_lengths(msg.name, msg.position)
            self.setpoints[_stamp_ns(msg.header.stamp)] = (list(msg.name), [float(v) for v in msg.position])
        elif role == "morphology":
            self.mo_t.append(t)
            label = msg.layout.dim[0].label if len(msg.layout.dim) else ""
            self.mo_l.append(np.asarray(morphology_from_wire(msg.data, label), dtype=np.int64))
        elif role == "ground_truth":
            self.gt_t.append(t)
            p = msg.pose.position
            self.gt_p.append((p.x, p.y, p.z))
            self.gt_q.append(_quat_wxyz(msg.pose.orientation))
            self.gt_stamp.append(_stamp_ns(msg.header.stamp))


def _read_messages(reader, bag, conns, t0_ns, stop_ns) -> _Messages:
    """The messages of the roles' connections received before ``stop_ns``; CorruptBagError when the storage
    or a message cannot be read."""
    role_of = {}
    for role, cs in conns.items():
        for c in cs:
            role_of[id(c)] = role
    raw = _Messages()
    all_conns = [c for cs in conns.values() for c in cs]
    try:
        for conn, t_ns, data in reader.messages(connections=all_conns, stop=stop_ns):
            raw.add(role_of[id(conn)], (t_ns - t0_ns) * 1e-9, reader.deserialize(data, conn.msgtype))
    except BagError:
        raise
    except Exception as err:  # truncated chunks, bad CDR, sqlite errors ...
        raise CorruptBagError("bag {} is corrupt or truncated: {}".format(bag, _why(err))) from None
    return raw


def _imu_in_window(raw: _Messages, topic, w0, w1, duration, max_gap) -> ImuSeries:
    """The IMU messages from the window start: at least two, with orientations, stamps in order, no gap over
    ``max_gap`` s, unit quaternions."""
    imu_t = np.asarray(raw.imu_t)
    sel = imu_t >= w0
    n_imu = int(sel.sum())
    if n_imu < 2:
        raise EmptyWindowError("empty window [{:.3f}, {:.3f}] s: {} message(s) of {} in it (need 2; the bag spans "
                               "0 to {:.3f} s)".format(w0, w1, n_imu, topic, duration))
    if not np.all(np.asarray(raw.imu_has_q)[sel]):
        raise BagError("IMU topic {} carries no orientation (orientation_covariance[0] = -1); give the filtered "
                       "topic with --imu-topic (e.g. imu/data)".format(topic))
    _check_header_order("imu", topic, np.asarray(raw.imu_stamp)[sel], imu_t[sel])
    _check_gaps(topic, imu_t[sel], max_gap)
    return ImuSeries(imu_t[sel], _unit_quats(topic, imu_t[sel], np.asarray(raw.imu_q)[sel]),
                     np.asarray(raw.imu_w)[sel], np.asarray(raw.imu_a)[sel])


def _commands_in_window(raw: _Messages, topic, w0, w1):
    """(the commands from the last one before the window start, number of command messages in the window)."""
    commands = raw.commands.series(with_target=True)
    keep = _from_last_before(commands.t, w0)
    if keep is None:
        raise EmptyWindowError("empty window [{:.3f}, {:.3f}] s: no message of {} at or before its end".format(
            w0, w1, topic))
    _check_header_order("commands", topic, raw.stamps["commands"], raw.msg_t["commands"])
    commands = JointSeries(commands.t[keep:], commands.names, commands.q[keep:], commands.t_target[keep:])
    return commands, int(np.count_nonzero(np.asarray(raw.msg_t["commands"]) >= w0))


def _morphology_from_window(raw: _Messages, topic, w0):
    """(the morphology messages from the last one before the window start, or None if there is none; the
    number of them in the window)."""
    lens = {len(x) for x in raw.mo_l}
    if len(lens) != 1:
        raise CorruptBagError("morphology messages on {} have different lengths {}".format(topic, sorted(lens)))
    mt = np.asarray(raw.mo_t)
    k = _from_last_before(mt, w0)
    if k is None:
        return None, 0
    return MorphologySeries(mt[k:], np.vstack(raw.mo_l)[k:]), int(np.count_nonzero(mt >= w0))


def _ground_truth_in_window(raw: _Messages, topic, w0) -> Optional[PoseSeries]:
    """The ground-truth poses from the window start (stamps in order, unit quaternions); None if none."""
    gt_t = np.asarray(raw.gt_t)
    m = gt_t >= w0
    if m.sum() < 1:
        return None
    _check_header_order("ground_truth", topic, np.asarray(raw.gt_stamp)[m], gt_t[m])
    q = _unit_quats(topic, gt_t[m], np.asarray(raw.gt_q)[m])
    return PoseSeries(gt_t[m], np.asarray(raw.gt_p)[m], q)


def _from_last_before(t, t_start):
    """Index of the last sample at or before ``t_start`` (or of the first one after it); None if empty."""
    if len(t) == 0:
        return None
    k = int(np.searchsorted(t, t_start, side="right")) - 1
    return max(k, 0)


def read_metadata_yaml(path) -> dict:
    """The parsed ``metadata.yaml`` of a bag (``rosbag2_bagfile_information`` mapping)."""
    import yaml

    with open(resolve_bag_path(path) / "metadata.yaml", "r", encoding="utf8") as fh:
        return yaml.safe_load(fh)["rosbag2_bagfile_information"]
