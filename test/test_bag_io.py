"""Bag writing (Humble-readable metadata) and the checked bag reader, including every bad-bag case."""
import shutil

import numpy as np
import pytest
import yaml
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from jethexa_dynamics.validation import bag_io, bag_messages as M, synthetic as S
from jethexa_dynamics.validation.errors import (BagError, CorruptBagError, EmptyWindowError, MissingTopicsError,
                                                NotABagError, TimeJumpError, UnknownMessageTypeError)
from jethexa_dynamics.validation.topics import TopicNames


# ------------------------------------------------------------------ Humble's metadata decoder, as an oracle
def humble_decode(meta: dict) -> None:
    """Re-statement of ROS 2 Humble's rosbag2_storage ``convert<BagMetadata>::decode`` (0.15.x):
    every field Humble reads must be present with the type yaml-cpp converts it to, version-gated as there.
    Raises AssertionError where Humble's ``ros2 bag info`` would throw "bad conversion"."""
    info = meta["rosbag2_bagfile_information"]
    v = info["version"]
    assert isinstance(v, int)
    assert isinstance(info["storage_identifier"], str)
    assert isinstance(info["duration"]["nanoseconds"], int)
    assert isinstance(info["starting_time"]["nanoseconds_since_epoch"], int)
    assert isinstance(info["message_count"], int)
    for tw in info["topics_with_message_count"]:
        tm = tw["topic_metadata"]
        for k in ("name", "type", "serialization_format"):
            assert isinstance(tm[k], str)
        if v >= 4:  # Humble: node["offered_qos_profiles"].as<std::string>()
            assert isinstance(tm["offered_qos_profiles"], str), "Humble reads offered_qos_profiles as a string"
        assert isinstance(tw["message_count"], int)
    assert all(isinstance(p, str) for p in info["relative_file_paths"])
    if v >= 3:
        assert isinstance(info["compression_format"], str) and isinstance(info["compression_mode"], str)
    if v >= 5:
        for f in info["files"]:
            assert isinstance(f["path"], str) and isinstance(f["message_count"], int)
            assert isinstance(f["duration"]["nanoseconds"], int)
            assert isinstance(f["starting_time"]["nanoseconds_since_epoch"], int)


def _write_small(path, storage="mcap", version=bag_io.HUMBLE_METADATA_VERSION):
    w = bag_io.BagWriter(path, storage=storage, version=version)
    w.add_topic("morphology", "std_msgs/msg/UInt8MultiArray", latched=True)
    w.write("morphology", 10, M.morphology(S.INTACT))
    w.write("/imu/data", 20, M.imu(20, (1, 0, 0, 0)))
    w.close()
    return path


@pytest.mark.parametrize("storage,suffix", [("mcap", ".mcap"), ("sqlite3", ".db3")])
def test_written_metadata_is_the_humble_version(tmp_path, storage, suffix):
    p = _write_small(tmp_path / "b", storage)
    meta = yaml.safe_load((p / "metadata.yaml").read_text())
    info = meta["rosbag2_bagfile_information"]
    assert bag_io.HUMBLE_METADATA_VERSION == 8
    assert info["version"] == 8
    assert info["storage_identifier"] == storage
    assert info["relative_file_paths"] == ["b" + suffix] and (p / ("b" + suffix)).is_file()
    humble_decode(meta)
    qos = {t["topic_metadata"]["name"]: t["topic_metadata"]["offered_qos_profiles"]
           for t in info["topics_with_message_count"]}
    assert "durability: 1" in qos["/morphology"]                          # latched stays latched
    assert "reliability: 2" in qos["/imu/data"] and "durability: 2" in qos["/imu/data"]  # sensor data: best effort


def test_humble_oracle_rejects_version_9(tmp_path):
    """The oracle is able to fail: rosbags' v9 writes QoS as a YAML list, which Humble cannot read."""
    p = _write_small(tmp_path / "b9", version=9)
    with pytest.raises(AssertionError, match="string"):
        humble_decode(yaml.safe_load((p / "metadata.yaml").read_text()))


def test_writer_refuses_existing_path_and_bad_storage(tmp_path):
    with pytest.raises(ValueError, match="exists"):
        bag_io.BagWriter(tmp_path)
    with pytest.raises(ValueError, match="storage"):
        bag_io.BagWriter(tmp_path / "x", storage="rosbag1")
    w = bag_io.BagWriter(tmp_path / "y")
    with pytest.raises(ValueError, match="not registered"):
        w.write_cdr("/nope", 1, b"")
    with pytest.raises(ValueError, match="unknown message type"):
        w.add_topic("/a", "foo_msgs/msg/Bar")
    w.close()
    w.close()  # idempotent


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_round_trip_against_rosbags_reader(tmp_path, storage):
    """Values read by read_bag equal the messages as decoded directly with rosbags' AnyReader."""
    p = S.write_synthetic_bag(tmp_path / "b", duration=3.0, storage=storage, damage_at=1.5)
    d = bag_io.read_bag(p)
    assert d.storage == storage and d.metadata_version == 8
    assert d.topics == {"commands": "/joint_commands", "joint_states": "/joint_states", "setpoints": None,
                        "imu": "/imu/data", "morphology": "/morphology", "ground_truth": "/mocap/pose"}
    assert d.setpoints is None
    with AnyReader([p], default_typestore=M.typestore()) as r:
        t0 = r.start_time
        imu, gt, cmd = [], [], []
        for c, t, raw in r.messages():
            m = r.deserialize(raw, c.msgtype)
            if c.topic == "/imu/data":
                q = m.orientation
                imu.append(((t - t0) * 1e-9, q.w, q.x, q.y, q.z))
            elif c.topic == "/mocap/pose":
                gt.append(((t - t0) * 1e-9, m.pose.position.x, m.pose.position.y, m.pose.position.z))
            elif c.topic == "/joint_commands":
                cmd.append(((t - t0) * 1e-9, *m.points[0].positions))
    imu, gt, cmd = np.array(imu), np.array(gt), np.array(cmd)
    np.testing.assert_allclose(d.imu.t, imu[:, 0], atol=1e-9)
    np.testing.assert_allclose(d.imu.quat, imu[:, 1:], atol=1e-12)
    np.testing.assert_allclose(d.ground_truth.pos, gt[:, 1:], atol=1e-12)
    np.testing.assert_allclose(d.commands.q, cmd[:, 1:], atol=1e-12)
    np.testing.assert_allclose(d.commands.t_target - d.commands.t, 1 / 50.0, atol=1e-9)
    assert d.commands.names == S.JOINT_NAMES
    np.testing.assert_allclose(d.morphology.t, [0.0, 1.5], atol=1e-9)
    assert d.morphology.links.tolist() == [list(S.INTACT), list(S.DAMAGE_1)]
    assert d.n_messages == len(imu) + len(gt) + len(cmd) + len(d.joint_states) + 2


def test_joint_names_reordered_and_forward_filled(tmp_path):
    names = list(S.JOINT_NAMES)
    with bag_io.BagWriter(tmp_path / "b") as w:
        w.write("joint_commands", 1, M.joint_trajectory(1, names, np.arange(18.0)))
        w.write("joint_commands", 2, M.joint_trajectory(2, names[::-1], -np.arange(18.0)[::-1]))
        w.write("joint_commands", 3, M.joint_trajectory(3, names[:3], [7, 8, 9]))
        for k in range(3):
            w.write("imu/data", 1 + k, M.imu(1 + k, (1, 0, 0, 0)))
    d = bag_io.read_bag(tmp_path / "b", max_gap=1.0)
    assert d.commands.names == S.JOINT_NAMES
    np.testing.assert_array_equal(d.commands.q[0], np.arange(18.0))
    np.testing.assert_array_equal(d.commands.q[1], -np.arange(18.0))
    np.testing.assert_array_equal(d.commands.q[2], np.r_[7, 8, 9, -np.arange(3, 18.0)])


def test_set_points_are_paired_with_joint_states_by_header_stamp_in_either_order(tmp_path):
    """servo_driver's joint_states/setpoint twin has its joint_states message's header stamp and may be recorded
    before or after it: each joint_states row gets its twin's values in its own columns; a row without a twin,
    a joint its twin does not carry and a set-point message with no joint_states of its stamp leave NaN."""
    names = list(S.JOINT_NAMES)
    with bag_io.BagWriter(tmp_path / "b") as w:
        w.write("joint_commands", 1, M.joint_trajectory(1, names, np.zeros(18)))
        for k in range(4):
            w.write("imu/data", 1 + k, M.imu(1 + k, (1, 0, 0, 0)))
        w.write("joint_states/setpoint", 10, M.joint_state(100, names[3:5], [0.3, 0.4]))   # before its twin
        w.write("joint_states", 11, M.joint_state(100, names[3:6], [1.3, 1.4, 1.5]))
        w.write("joint_states", 12, M.joint_state(200, names[:2], [1.0, 1.1]))             # no twin
        w.write("joint_states", 13, M.joint_state(300, names[6:7], [1.6]))
        w.write("joint_states/setpoint", 14, M.joint_state(300, names[6:7], [0.6]))        # after it
        w.write("joint_states/setpoint", 15, M.joint_state(400, names[:1], [9.9]))         # nobody's
    d = bag_io.read_bag(tmp_path / "b", max_gap=1.0)
    assert d.topics["setpoints"] == "/joint_states/setpoint"
    col = {n: k for k, n in enumerate(d.setpoints.names)}
    assert d.setpoints.names == d.joint_states.names and d.setpoints.q.shape == d.joint_states.q.shape
    expect = np.full(d.setpoints.q.shape, np.nan)
    expect[0, [col[names[3]], col[names[4]]]] = [0.3, 0.4]
    expect[2, col[names[6]]] = 0.6
    np.testing.assert_array_equal(d.setpoints.q, expect)
    np.testing.assert_array_equal(d.setpoints.carried, ~np.isnan(expect))


def test_bad_set_point_messages_are_named(tmp_path):
    """A set-point message naming more joints than it gives positions is a corrupt bag, as a joint_states one is;
    another message type on the set-point topic is named with the type it should have."""
    names = list(S.JOINT_NAMES)
    for kind, msg, error, match in (
            ("short", M.joint_state(100, names[:2], []), CorruptBagError, "joint message with 2 names but 0 positions"),
            ("imu", M.imu(100, (1, 0, 0, 0)), UnknownMessageTypeError,
             "/joint_states/setpoint .*sensor_msgs/msg/Imu.*JointState")):
        with bag_io.BagWriter(tmp_path / kind) as w:
            w.write("joint_commands", 1, M.joint_trajectory(1, names, np.zeros(18)))
            for k in range(4):
                w.write("imu/data", 1 + k, M.imu(1 + k, (1, 0, 0, 0)))
            w.write("joint_states", 2, M.joint_state(100, names[:2], [0.1, 0.2]))
            w.write("joint_states/setpoint", 3, msg)
        with pytest.raises(error, match=match):
            bag_io.read_bag(tmp_path / kind, max_gap=1.0)


def test_window_keeps_last_command_and_morphology_before_it(tmp_path):
    p = S.write_synthetic_bag(tmp_path / "b", duration=4.0, damage_at=1.0)
    d = bag_io.read_bag(p, start=2.0, end=3.0)
    assert d.window == (2.0, 3.0)
    assert d.imu.t[0] >= 2.0 and d.imu.t[-1] <= 3.0 + 1e-9
    assert d.commands.t[0] <= 2.0 < d.commands.t[1]
    assert d.morphology.links.tolist() == [list(S.DAMAGE_1)] and d.morphology.t[0] == pytest.approx(1.0)
    assert d.ground_truth.t[0] >= 2.0


def test_optional_topics_absent_are_noted(tmp_path):
    p = S.write_synthetic_bag(tmp_path / "b", duration=1.0, mocap=False, morphology=False, joint_states=False)
    d = bag_io.read_bag(p)
    assert d.ground_truth is None and d.morphology is None and d.joint_states is None
    assert any("intact" in n for n in d.notes) and any("ground-truth" in n for n in d.notes)


def test_topic_names_with_or_without_slash(tmp_path):
    p = S.write_synthetic_bag(tmp_path / "b", duration=1.0, imu_topic="/robot/imu")
    d = bag_io.read_bag(p, topics=TopicNames(imu="robot/imu/"))
    assert d.topics["imu"] == "/robot/imu"


# ------------------------------------------------------------------------------------------- bad bags
def test_not_a_bag(tmp_path):
    with pytest.raises(NotABagError, match="no such file"):
        bag_io.read_bag(tmp_path / "missing")
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    with pytest.raises(NotABagError, match="is a file"):
        bag_io.read_bag(f)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.bin").write_text("")
    with pytest.raises(NotABagError, match="no metadata.yaml.*x.bin"):
        bag_io.read_bag(tmp_path / "d")
    p = S.write_synthetic_bag(tmp_path / "b", duration=1.0)
    bare = tmp_path / "bare.mcap"
    shutil.copy(p / "b.mcap", bare)
    with pytest.raises(NotABagError, match="reindex"):
        bag_io.read_bag(bare)
    assert bag_io.read_bag(p / "b.mcap").path == p          # a storage file inside a bag is fine


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_truncated_storage_file(tmp_path, storage):
    p = S.write_synthetic_bag(tmp_path / "b", duration=3.0, storage=storage)
    f = next(x for x in p.iterdir() if x.suffix in (".mcap", ".db3"))
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptBagError, match="b"):
        bag_io.read_bag(p)


def test_garbage_storage_and_metadata(tmp_path):
    p = S.write_synthetic_bag(tmp_path / "b", duration=1.0)
    (p / "b.mcap").write_bytes(b"\x00garbage" * 100)
    with pytest.raises(CorruptBagError):
        bag_io.read_bag(p)
    p = S.write_synthetic_bag(tmp_path / "c", duration=1.0)
    (p / "metadata.yaml").write_text("rosbag2_bagfile_information: [1, 2")
    with pytest.raises(CorruptBagError, match="metadata"):
        bag_io.read_bag(p)
    p = S.write_synthetic_bag(tmp_path / "e", duration=1.0)
    (p / "e.mcap").unlink()
    with pytest.raises(CorruptBagError, match="missing"):
        bag_io.read_bag(p)


def test_missing_topics_are_named_with_what_the_bag_has(tmp_path):
    p = S.write_synthetic_bag(tmp_path / "b", duration=1.0, imu_topic="imu/data_filtered")
    with pytest.raises(MissingTopicsError) as ei:
        bag_io.read_bag(p, topics=TopicNames(commands="cmds"))
    e = ei.value
    assert e.missing == ["/cmds (commands)", "/imu/data (imu)"]
    assert e.available["/imu/data_filtered"] == "sensor_msgs/msg/Imu"
    assert "/imu/data_filtered  [sensor_msgs/msg/Imu]" in str(e) and "/joint_commands" in str(e)


def test_unknown_message_types(tmp_path):
    p = S.write_synthetic_bag(tmp_path / "b", duration=1.0, mocap=False,
                              topics_extra={"mocap/pose": M.twist()})
    with pytest.raises(UnknownMessageTypeError, match="/mocap/pose .*geometry_msgs/msg/Twist.*PoseStamped"):
        bag_io.read_bag(p)
    # a custom type (with its definition embedded) on a required topic
    q = tmp_path / "c"
    ts = get_typestore(Stores.ROS2_HUMBLE)
    ts.register(get_types_from_msg("float64 x", "acme_msgs/msg/Imu"))
    with Writer(q, version=8, storage_plugin=StoragePlugin.MCAP) as w:
        c = w.add_connection("/imu/data", "acme_msgs/msg/Imu", typestore=ts)
        w.write(c, 1, bytes(ts.serialize_cdr(ts.types["acme_msgs/msg/Imu"](x=1.0), "acme_msgs/msg/Imu")))
        c2 = w.add_connection("/joint_commands", "trajectory_msgs/msg/JointTrajectory", typestore=ts)
        w.write(c2, 1, M.serialize(M.joint_trajectory(1, S.JOINT_NAMES, np.zeros(18))))
    with pytest.raises(UnknownMessageTypeError, match="/imu/data .*acme_msgs/msg/Imu.*sensor_msgs/msg/Imu"):
        bag_io.read_bag(q)


def test_time_jumps(tmp_path):
    p = S.write_synthetic_bag(tmp_path / "gap", duration=6.0, gap=(2.0, 2.5))
    with pytest.raises(TimeJumpError, match=r"no message for 2\.510 s between t=1\.990"):
        bag_io.read_bag(p)
    assert bag_io.read_bag(p, max_gap=3.0).imu.t[-1] == pytest.approx(6.0)   # allowed when asked
    assert len(bag_io.read_bag(p, start=4.5).imu) > 0                         # or outside the window
    q = S.write_synthetic_bag(tmp_path / "back", duration=3.0, stamp_jump=(1.0, -0.5))
    with pytest.raises(TimeJumpError, match=r"back by 0\.490 s at t=1\.000"):
        bag_io.read_bag(q)


def test_empty_windows(tmp_path):
    p = S.write_synthetic_bag(tmp_path / "b", duration=2.0)
    with pytest.raises(EmptyWindowError, match="spans 0 to 2.000"):
        bag_io.read_bag(p, start=5.0)
    with pytest.raises(EmptyWindowError, match="not after"):
        bag_io.read_bag(p, start=1.0, end=1.0)
    with pytest.raises(EmptyWindowError, match="message"):
        bag_io.read_bag(p, start=0.5, end=0.505)
    q = tmp_path / "empty"
    bag_io.BagWriter(q).close()
    with pytest.raises(EmptyWindowError, match="no messages"):
        bag_io.read_bag(q, topics=TopicNames())


def test_imu_without_orientation(tmp_path):
    p = S.write_synthetic_bag(tmp_path / "b", duration=1.0, imu_orientation=False)
    with pytest.raises(BagError, match="no orientation.*--imu-topic"):
        bag_io.read_bag(p)


def test_reads_a_bag_as_humble_ros2_bag_record_writes_it(tmp_path):
    """Humble's recorder: metadata version 5 (no type hashes, custom_data, ros_distro) and sqlite3 storage
    without message definitions -> types come from the Humble typestore."""
    import sqlite3

    p = S.write_synthetic_bag(tmp_path / "h", duration=1.0, storage="sqlite3", damage_at=0.5)
    db = sqlite3.connect(p / "h.db3")
    db.execute("DELETE FROM message_definitions")
    db.commit()
    db.close()
    meta = yaml.safe_load((p / "metadata.yaml").read_text())
    info = meta["rosbag2_bagfile_information"]
    info["version"] = 5
    for key in ("custom_data", "ros_distro"):
        info.pop(key)
    for tw in info["topics_with_message_count"]:
        tw["topic_metadata"].pop("type_description_hash")
    (p / "metadata.yaml").write_text(yaml.safe_dump(meta))
    humble_decode(meta)
    d = bag_io.read_bag(p)
    ref = bag_io.read_bag(S.write_synthetic_bag(tmp_path / "r", duration=1.0, damage_at=0.5))
    assert d.metadata_version == 5
    np.testing.assert_array_equal(d.imu.quat, ref.imu.quat)
    np.testing.assert_array_equal(d.commands.q, ref.commands.q)
    assert d.morphology.links.tolist() == ref.morphology.links.tolist()


def test_synthetic_joint_names_are_the_robots():
    from jethexa_dynamics.model import LeggedRobot

    assert S.JOINT_NAMES == tuple(LeggedRobot.jethexa().joint_names)
