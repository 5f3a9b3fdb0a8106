"""BagRecorder: live rclpy topics -> rosbag2 (MCAP / sqlite3) that read_bag and rosbags read back unchanged."""
import time

import numpy as np
import pytest
import yaml

rclpy = pytest.importorskip("rclpy")
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import Imu, JointState  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402

from jethexa_dynamics.nodes.bag_recorder import (LATCHED_QOS, BagRecorder, declare_record_parameters,  # noqa: E402
                                                 message_class)
from jethexa_dynamics.validation import bag_io, synthetic as S  # noqa: E402

pytestmark = pytest.mark.ros
N = 30
STREAMS = ("/imu/data", "/joint_states", "/joint_commands", "/mocap/pose")


@pytest.fixture()
def ctx():
    rclpy.init()
    yield
    if rclpy.ok():
        rclpy.shutdown()


def _publish_and_record(tmp_path, storage, use_params):
    pub = Node("rec_test_pub")
    morph = pub.create_publisher(UInt8MultiArray, "morphology", LATCHED_QOS)
    morph.publish(UInt8MultiArray(data=list(S.DAMAGE_1)))          # before the recorder exists: latched
    imu = pub.create_publisher(Imu, "imu/data", qos_profile_sensor_data)
    js = pub.create_publisher(JointState, "joint_states", qos_profile_sensor_data)
    cmd = pub.create_publisher(JointTrajectory, "joint_commands", 10)
    mocap = pub.create_publisher(PoseStamped, "mocap/pose", qos_profile_sensor_data)
    node = Node("rec_test_recorder", namespace="/")
    path = tmp_path / "rec"
    if use_params:
        declare_record_parameters(node)
        node.set_parameters([Parameter("record", value=str(path)), Parameter("record_storage", value=storage),
                             Parameter("record_topics", value="joint_commands, joint_states,imu/data,morphology,"
                                                              "mocap/pose")])
        rec = BagRecorder.from_parameters(node)
    else:
        rec = BagRecorder(node, path, storage=storage)
    ex = SingleThreadedExecutor()
    ex.add_node(pub)
    ex.add_node(node)
    sent = {"imu": [], "js": [], "cmd": [], "mocap": []}
    k = 0
    deadline = time.monotonic() + 60.0                       # guard against a hang only; no timing asserted
    while time.monotonic() < deadline:
        c = rec.counts
        if all(c.get(t, 0) >= N for t in STREAMS) and c.get("/morphology", 0) >= 1:
            break
        q = S.rpy_to_quat(S.body_rpy(0.01 * k))[0]
        m = Imu()
        m.orientation.w, m.orientation.x, m.orientation.y, m.orientation.z = (float(v) for v in q)
        m.angular_velocity.z = float(k)
        imu.publish(m)
        sent["imu"].append((k, q))
        js.publish(JointState(name=list(S.JOINT_NAMES), position=[float(k + j) for j in range(18)]))
        cmd.publish(JointTrajectory(joint_names=list(S.JOINT_NAMES), points=[JointTrajectoryPoint(
            positions=[float(-k - j) for j in range(18)])]))
        p = PoseStamped()
        p.pose.position.x = float(k)
        p.pose.orientation.w = 1.0
        mocap.publish(p)
        k += 1
        # drain: spin_once serves one callback, so spin until every stream got this round (or a short guard)
        guard = time.monotonic() + 2.0
        while time.monotonic() < guard and min(rec.counts.get(t, 0) for t in STREAMS) < k:
            ex.spin_once(timeout_sec=0.01)
    counts = rec.counts
    return rec, path, counts, sent


@pytest.mark.parametrize("storage,use_params", [("mcap", False), ("sqlite3", True)])
def test_recorded_bag_reads_back(tmp_path, ctx, storage, use_params):
    rec, path, counts, sent = _publish_and_record(tmp_path, storage, use_params)
    assert counts["/morphology"] == 1
    rec.close()
    rec.close()                                                        # idempotent
    meta = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["version"] == bag_io.HUMBLE_METADATA_VERSION and meta["storage_identifier"] == storage
    recorded = {t["topic_metadata"]["name"]: t["message_count"] for t in meta["topics_with_message_count"]}
    assert recorded == counts
    d = bag_io.read_bag(path, max_gap=60.0)
    assert d.morphology.links.tolist() == [list(S.DAMAGE_1)]
    # every message arrived intact: the k carried in the IMU gyro selects what was sent
    ks = d.imu.gyro[:, 2].astype(int)
    assert len(ks) >= N and np.all(np.diff(ks) > 0)
    np.testing.assert_allclose(d.imu.quat, np.array([sent["imu"][k][1] for k in ks]), atol=1e-12)
    assert d.commands.names == S.JOINT_NAMES and d.joint_states.names == S.JOINT_NAMES
    kc = -d.commands.q[:, 0]
    np.testing.assert_array_equal(d.commands.q, -(kc[:, None] + np.arange(18)))
    kj = d.joint_states.q[:, 0]
    np.testing.assert_array_equal(d.joint_states.q, kj[:, None] + np.arange(18))
    assert np.all(np.diff(d.imu.t) >= 0) and d.ground_truth.pos[:, 0].tolist() == sorted(d.ground_truth.pos[:, 0])


def test_recorder_closes_on_shutdown(tmp_path, ctx):
    node = Node("rec_test_shutdown")
    rec = BagRecorder(node, tmp_path / "b", topics={"imu/data": "sensor_msgs/msg/Imu"})
    rclpy.shutdown()
    assert rec.writer.closed and (tmp_path / "b" / "metadata.yaml").is_file()


def test_recorder_rejects_bad_config(tmp_path, ctx):
    node = Node("rec_test_bad")
    with pytest.raises(ValueError, match="storage"):
        BagRecorder(node, tmp_path / "a", storage="bag")
    with pytest.raises(ValueError, match="no known type"):
        BagRecorder(node, tmp_path / "b", topics=["not_a_topic"])
    with pytest.raises(ValueError, match="unknown message type"):
        message_class("nope_msgs/msg/Nope")
    with pytest.raises(ValueError, match="exists"):
        BagRecorder(node, tmp_path)
    declare_record_parameters(node)
    assert BagRecorder.from_parameters(node) is None                 # record = '' -> off


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_each_topic_keeps_its_offered_qos(tmp_path, ctx, storage):
    """Like ``ros2 bag record``: every connection carries its publishers' offered QoS (metadata.yaml v8: a YAML
    string), so ``ros2 bag play`` offers sensor data best effort/volatile and morphology reliable/transient
    local again; topics without a message carry the project's QoS of that topic (TOPIC_QOS)."""
    from rosbags.interfaces import QosDurability as D, QosReliability as R
    from rosbags.rosbag2 import Reader

    from jethexa_dynamics.validation.topics import DEFAULT_RECORD_TOPICS, TOPIC_QOS

    rec, path, counts, _ = _publish_and_record(tmp_path, storage, False)
    rec.close()
    published = {"/imu/data": (R.BEST_EFFORT, D.VOLATILE), "/joint_states": (R.BEST_EFFORT, D.VOLATILE),
                 "/mocap/pose": (R.BEST_EFFORT, D.VOLATILE), "/joint_commands": (R.RELIABLE, D.VOLATILE),
                 "/morphology": (R.RELIABLE, D.TRANSIENT_LOCAL)}
    kinds = {"sensor": (R.BEST_EFFORT, D.VOLATILE), "reliable": (R.RELIABLE, D.VOLATILE),
             "latched": (R.RELIABLE, D.TRANSIENT_LOCAL)}
    with Reader(path) as reader:
        conns = {c.topic: c for c in reader.connections}
    assert set(conns) == {"/" + t for t in DEFAULT_RECORD_TOPICS}
    for topic, conn in conns.items():
        profiles = conn.ext.offered_qos_profiles
        assert len(profiles) == 1, (topic, profiles)
        want = published.get(topic, kinds[TOPIC_QOS[topic.lstrip("/")]])
        assert (profiles[0].reliability, profiles[0].durability) == want, topic
    meta = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    for t in meta["topics_with_message_count"]:
        text = t["topic_metadata"]["offered_qos_profiles"]
        assert isinstance(text, str) and yaml.safe_load(text)[0]["reliability"] in (1, 2)
