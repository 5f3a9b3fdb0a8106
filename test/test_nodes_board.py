"""servo_driver on today's kit (``transport: rrc``) against the emulated STM32 board over real DDS: the board's
IMU reports -> imu/data through the imu node's publishing path (filter, frame, mount), its battery -> battery and
/diagnostics with the 10 V rule, a board streaming no IMU -> an ERROR, bad reports counted and never published."""
import math
import struct
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from sensor_msgs.msg import BatteryState, Imu  # noqa: E402
from transforms3d.euler import quat2euler  # noqa: E402

from jethexa_dynamics.hardware import board_reports as B  # noqa: E402
from jethexa_dynamics.hardware import rrc as R  # noqa: E402
from jethexa_dynamics.hardware.emulator import BusEmulator  # noqa: E402
from jethexa_dynamics.nodes._common import SENSOR_QOS, level_of  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, wait_for  # noqa: E402
from jethexa_dynamics.nodes.servo_driver import ServoDriver  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.timeout(180)]
G = 9.81


def board_status(w):
    arr = w.last("/diagnostics")
    found = [s for s in (arr.status if arr else []) if s.name.endswith(": board")]
    return found[0] if found else None


def values(st):
    return {kv.key: kv.value for kv in st.values}


@pytest.fixture
def board():
    """(emulator, graph, driver, watcher) with the board's IMU at rest, rolled 0.2 rad."""
    def start(**emulator_kwargs):
        emu = BusEmulator(transport="rrc", **emulator_kwargs).start()
        g = Graph()
        drv = g.add(ServoDriver, {"port": emu.port, "transport": "rrc", "baudrate": 1000000,
                                  "imu_filter_init_time": 0.5, "imu_timeout": 0.5, "diagnostics_rate": 10.0})
        w = g.add(Watcher)
        for topic, typ in (("imu/data", Imu), ("imu/data_raw", Imu), ("battery", BatteryState)):
            w.watch(typ, topic, SENSOR_QOS)
        w.watch(DiagnosticArray, "/diagnostics")
        g.start()
        made.append((emu, g))
        return emu, g, drv, w
    made = []
    yield start
    for emu, g in made:
        g.close()
        emu.stop()


def test_board_imu_and_battery_are_published_like_the_mpu6050s(board):
    roll = 0.2
    emu, g, drv, w = board(battery_rate=20.0)
    emu.set_imu([0.0, 0.0, 0.0], [0.0, G * math.sin(roll), G * math.cos(roll)])
    assert wait_for(lambda: w.count("imu/data") > 30, 60.0)
    m = w.last("imu/data")
    # imu_link = base_link axes (the URDF): the board's -90 deg mount turned back; the filter's roll
    assert m.header.frame_id == "imu_link"
    a = m.linear_acceleration
    assert np.allclose([a.x, a.y, a.z], [0.0, G * math.sin(roll), G * math.cos(roll)], atol=0.1)
    r, p, _ = quat2euler([m.orientation.w, m.orientation.x, m.orientation.y, m.orientation.z])
    assert abs(r - roll) < 0.03 and abs(p) < 0.03
    # stamped with the receipt (within a second of now on this loaded machine), the raw stream has no orientation
    assert abs(m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec - time.time()) < 1.0
    assert wait_for(lambda: w.count("imu/data_raw") > 3, 20.0)
    assert w.last("imu/data_raw").orientation_covariance[0] == -1.0
    assert wait_for(lambda: w.count("battery") > 0, 20.0)
    assert w.last("battery").voltage == pytest.approx(11.1) and w.last("battery").present
    assert wait_for(lambda: board_status(w) is not None and level_of(board_status(w)) == 0, 20.0)
    # the 10 V rule: WARN below 10.5 V, ERROR below 10 V, on /diagnostics
    emu.set_voltage(10300)
    assert wait_for(lambda: level_of(board_status(w)) == 1 and "10.30 V" in board_status(w).message, 20.0)
    emu.set_voltage(9800)
    assert wait_for(lambda: level_of(board_status(w)) == 2 and "9.80 V" in board_status(w).message, 20.0)
    assert drv.errors == 0 and g.spin_error is None


def test_a_board_that_streams_no_imu_is_an_error_never_silence(board):
    emu, g, drv, w = board(imu_rate=0.0)
    assert wait_for(lambda: board_status(w) is not None and level_of(board_status(w)) == 2, 30.0)
    st = board_status(w)
    assert "no IMU report" in st.message and drv.board.imu_missing
    assert w.count("imu/data") == 0
    # the servos are still driven and read meanwhile
    assert wait_for(lambda: drv.joints is not None and drv.joints.bus.stats["requests"] > 5, 10.0)


def test_bad_reports_are_counted_on_diagnostics_and_never_published(board):
    emu, g, drv, w = board()
    assert wait_for(lambda: w.count("imu/data_raw") > 5, 60.0)
    bad_crc = bytearray(B.imu_report((0.0, 0.0, 40.0), (0.0, 0.0, 0.0)))
    bad_crc[-1] ^= 0x5A
    for _ in range(3):
        emu.send_unasked(bytes(bad_crc))
        emu.send_unasked(R.encode_packet(12, b"\x01\x02\x03"))                                 # unknown function
        emu.send_unasked(R.encode_packet(R.Func.IMU, struct.pack("<5f", 0, 0, 40.0, 0, 0)))   # short
        emu.send_unasked(R.encode_packet(R.Func.IMU, struct.pack("<6f", 0, 0, math.nan, 0, 0, 0)))
        emu.send_unasked(B.imu_report((0.0, 0.0, 30.0), (0.0, 0.0, 0.0)))                      # beyond 16 g
        emu.send_unasked(B.imu_report((0.0, 0.0, 1.0), (5000.0, 0.0, 0.0)))                    # beyond 2048 deg/s
        time.sleep(0.05)

    def counted():
        st = board_status(w)
        v = values(st) if st else {}
        return (int(v.get("reports_bad_crc", 0)) >= 3 and int(v.get("reports_unknown_function", 0)) >= 3
                and int(v.get("reports_short_imu", 0)) >= 3 and int(v.get("reports_bad_imu_values", 0)) >= 9)
    assert wait_for(counted, 20.0)
    for _, m in w.since("imu/data_raw", 0.0) + w.since("imu/data", 0.0):
        a, v = m.linear_acceleration, m.angular_velocity
        assert all(math.isfinite(x) for x in (a.x, a.y, a.z, v.x, v.y, v.z))
        assert abs(a.z) < 12.0 and abs(v.x) < 1.0
    assert drv.rejected and drv.errors == 0 and g.spin_error is None
