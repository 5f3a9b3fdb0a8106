"""imu node over real DDS with the MPU6050 register model: conventions, filter, bad input, missing chip."""
import math
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import Imu  # noqa: E402
from transforms3d.euler import euler2quat, quat2euler  # noqa: E402

from jethexa_dynamics.nodes._common import SENSOR_QOS, level_of  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, wait_for  # noqa: E402
from jethexa_dynamics.nodes.imu import ImuNode  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(90)]


def motion(roll=0.0, pitch=0.0, w=(0.0, 0.0, 0.0), a=(0.0, 0.0, 0.0)):
    m = Imu()
    qw, qx, qy, qz = euler2quat(roll, pitch, 0.0, "sxyz")
    m.orientation.w, m.orientation.x, m.orientation.y, m.orientation.z = qw, qx, qy, qz
    m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = w
    m.linear_acceleration.x, m.linear_acceleration.y, m.linear_acceleration.z = a
    return m


def start_rig(g, params):
    """An emulated-source imu node with ``params`` and a watcher of imu/data_raw, imu/data and /diagnostics that
    publishes the emulated motion; the graph started. Returns (node, watcher, motion publisher)."""
    node = g.add(ImuNode, dict({"source": "emulator", "rate": 100.0}, **params))
    w = g.add(Watcher)
    for t in ("imu/data_raw", "imu/data"):
        w.watch(Imu, t, SENSOR_QOS)
    w.watch(DiagnosticArray, "/diagnostics")
    pub = w.create_publisher(Imu, "emulator/imu_motion", SENSOR_QOS)
    g.start()
    return node, w, pub


@pytest.fixture
def rig():
    g = Graph()
    try:
        node, w, pub = start_rig(g, {"angular_velocity_stddev": 0.01})
        assert wait_for(lambda: pub.get_subscription_count() > 0, 10.0)
        yield g, node, w, pub
    finally:
        g.close()


def test_conventions_and_filtered_orientation(rig):
    g, node, w, pub = rig
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        pub.publish(motion(roll=0.2))
        time.sleep(0.02)
    assert wait_for(lambda: w.count("imu/data") > 20, 5.0)
    raw, data = w.last("imu/data_raw"), w.last("imu/data")
    assert raw.header.frame_id == data.header.frame_id == "imu_link"
    assert raw.orientation_covariance[0] == -1.0
    assert raw.angular_velocity_covariance[0] == pytest.approx(1e-4)
    # specific force at rest tilted by roll 0.2: g * (0, sin, cos) in body axes (+g up on z, REP-145)
    acc = np.array([raw.linear_acceleration.x, raw.linear_acceleration.y, raw.linear_acceleration.z])
    assert np.allclose(acc, 9.81 * np.array([0.0, math.sin(0.2), math.cos(0.2)]), atol=0.1)
    roll, pitch, _ = quat2euler((data.orientation.w, data.orientation.x, data.orientation.y, data.orientation.z))
    assert roll == pytest.approx(0.2, abs=0.03) and pitch == pytest.approx(0.0, abs=0.03)
    assert data.orientation_covariance[0] > 0


def test_bad_motion_and_parameters_rejected_node_keeps_publishing(rig):
    g, node, w, pub = rig
    pub.publish(motion(w=(math.nan, 0.0, 0.0)))
    bad = motion()
    bad.orientation.w = 0.0  # zero quaternion
    pub.publish(bad)
    assert wait_for(lambda: node.rejected.get("emulator/imu_motion", 0) >= 2, 5.0), node.rejected
    for name, value in (("rate", 0.0), ("filter_beta", -1.0), ("frame_id", 3), ("accel_range_g", 3)):
        res = node.set_parameters([Parameter(name, value=value)])[0]
        assert not res.successful and name in res.reason
    assert node.set_parameters([Parameter("rate", value=50.0)])[0].successful
    assert w.count("imu/data") == 0  # no valid motion yet: the emulated chip has no robot to sense
    end = time.monotonic() + 1.0
    while time.monotonic() < end:
        pub.publish(motion())
        time.sleep(0.02)
    assert wait_for(lambda: w.count("imu/data") > 10, 5.0)
    assert g.spin_error is None


def test_missing_chip_reports_error_and_keeps_running():
    g = Graph()
    try:
        node = g.add(ImuNode, {"source": "i2c", "i2c_bus": 31, "rate": 20.0})
        w = g.add(Watcher)
        w.watch(DiagnosticArray, "/diagnostics")
        g.start()

        def error_status():
            arr = w.last("/diagnostics")
            return arr is not None and any(s.name.startswith("imu") and level_of(s) == 2 for s in arr.status)

        assert wait_for(error_status, 5.0)
        assert node.chip is None and "i2c" in node.init_error.lower() or "No such file" in node.init_error
        assert g.spin_error is None
    finally:
        g.close()


def test_data_raw_is_published_only_while_subscribed_with_the_same_fields():
    """imu/data_raw costs a publish per sample: without a subscriber it is not published (imu/data is); a late
    subscriber gets it, with the sample's rates and accelerations, imu/data's stamp and frame, no orientation."""
    g = Graph()
    try:
        node = g.add(ImuNode, {"source": "emulator", "rate": 100.0})
        w = g.add(Watcher)
        w.watch(Imu, "imu/data", SENSOR_QOS)
        pub = w.create_publisher(Imu, "emulator/imu_motion", SENSOR_QOS)
        raw_published = []
        publish = node.raw_pub.publish
        node.raw_pub.publish = lambda msg: (raw_published.append(msg.header.stamp.sec), publish(msg))
        g.start()
        assert wait_for(lambda: pub.get_subscription_count() > 0, 10.0)

        def feed(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                pub.publish(motion(roll=0.1, w=(0.0, 0.0, 0.2)))
                time.sleep(0.02)
        feed(1.0)
        assert wait_for(lambda: w.count("imu/data") > 20, 5.0) and raw_published == []
        late = g.add(Watcher, name="late")
        late.watch(Imu, "imu/data_raw", SENSOR_QOS)
        w.watch(Imu, "imu/data_raw", SENSOR_QOS)
        assert wait_for(lambda: node.raw_pub.get_subscription_count() >= 2, 10.0)
        feed(1.0)
        assert wait_for(lambda: late.count("imu/data_raw") > 10, 5.0) and len(raw_published) > 10
        raw = w.last("imu/data_raw")
        data = [m for _, m in w.since("imu/data", 0.0) if m.header.stamp == raw.header.stamp]
        assert data and raw.header.frame_id == data[0].header.frame_id == "imu_link"
        assert raw.orientation_covariance[0] == -1.0 and data[0].orientation_covariance[0] > 0
        for field in ("angular_velocity", "linear_acceleration"):
            assert [getattr(getattr(raw, field), a) for a in "xyz"] == [getattr(getattr(data[0], field), a)
                                                                       for a in "xyz"]
        assert (raw.orientation.x, raw.orientation.y, raw.orientation.z, raw.orientation.w) == (0.0, 0.0, 0.0, 1.0)
    finally:
        g.close()


def test_imu_data_waits_for_the_filter_initialisation_and_a_jolted_first_sample_is_corrected():
    """The filter starts from the first sample's accelerometer tilt; a jolt there (the robot jerking into its
    stance: 6 m/s^2 sideways, a 31 deg tilt read) used to be the published attitude, corrected at 1.9 deg/s. Now
    imu/data starts only after ``filter_init_time`` (2) s of samples, whose high initial gain has corrected it:
    the first published roll is the true 0.2 rad (the old filter's was off by ~27 deg at that time)."""
    g = Graph()
    try:
        node, w, pub = start_rig(g, {"filter_init_time": 2.0})
        assert wait_for(lambda: pub.get_subscription_count() > 0 and node.raw_pub.get_subscription_count() > 0, 10.0)
        pub.publish(motion(roll=0.2, a=(0.0, -6.0, 0.0)))
        assert wait_for(lambda: w.count("imu/data_raw") >= 3, 5.0)      # a few samples of the jolt
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            pub.publish(motion(roll=0.2))
            time.sleep(0.02)
        assert wait_for(lambda: w.count("imu/data") > 20, 5.0)
        raw = [m for _, m in w.since("imu/data_raw", 0.0)]
        data = [m for _, m in w.since("imu/data", 0.0)]

        def sec(m):
            return m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec

        # nothing of imu/data during the initialisation: 2 s of samples came before its first message (the filter
        # counts the samples' own intervals, so on a slow machine there are fewer samples, never less time)
        assert sec(data[0]) - sec(raw[0]) >= 1.9 and sum(sec(m) < sec(data[0]) for m in raw) >= 20
        acc = np.array([raw[0].linear_acceleration.x, raw[0].linear_acceleration.y, raw[0].linear_acceleration.z])
        assert abs(math.degrees(math.atan2(acc[1], acc[2])) - math.degrees(0.2)) > 20     # the first tilt read
        roll = quat2euler((data[0].orientation.w, data[0].orientation.x, data[0].orientation.y,
                           data[0].orientation.z))[0]
        assert roll == pytest.approx(0.2, abs=0.03)
        states = [s.message for _, arr in w.since("/diagnostics", 0.0) for s in arr.status if s.name.startswith("imu")]
        assert "initialising the attitude" in states and states[-1] == "publishing"
        assert g.spin_error is None
    finally:
        g.close()
