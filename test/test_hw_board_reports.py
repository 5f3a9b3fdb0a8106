"""The STM32 board's unasked IMU and battery reports (``hardware.board_reports``, ``RrcBoardBus``, the emulated
board), against the packet layout of Hiwonder's board SDK (``ros_robot_controller_sdk.py``): every packet here is
built byte by byte as that SDK frames and parses it -- ``0xAA 0x55 func len data crc8``, CRC-8/MAXIM over func,
len and data; IMU func 7 ``struct '<6f'`` (g, deg/s); battery func 0 ``[0x04, u16 mV]`` -- with a CRC computed
bit by bit here, not with the package's table."""
import math
import struct
import time

import numpy as np
import pytest
from transforms3d.euler import euler2mat

from jethexa_dynamics.hardware import board_reports as B
from jethexa_dynamics.hardware import rrc as R
from jethexa_dynamics.hardware.bus import RrcBoardBus
from jethexa_dynamics.hardware.emulator import BusEmulator

G0 = 9.80665          # Hiwonder's node: linear_acceleration = a [g] * 9.80665


def crc8_maxim(data: bytes) -> int:
    """CRC-8/MAXIM bit by bit (reflected polynomial 0x31 = 0x8C, init 0): the SDK's table's definition."""
    c = 0
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ 0x8C if c & 1 else c >> 1
    return c


def vendor_packet(func: int, data: bytes) -> bytes:
    """A packet framed as the SDK's ``Board.buf_write`` frames it (and its ``recv_task`` checks it)."""
    body = bytes([func, len(data)]) + data
    return b"\xAA\x55" + body + bytes([crc8_maxim(body)])


def vendor_imu(ax, ay, az, gx, gy, gz) -> bytes:
    return vendor_packet(7, struct.pack("<6f", ax, ay, az, gx, gy, gz))


def vendor_battery(mv: int) -> bytes:
    return vendor_packet(0, bytes([0x04]) + struct.pack("<H", mv))


def reports_of(stream: bytes):
    """(reports, BoardReports, parser) of a byte stream fed as the bus feeds it."""
    parser, board = R.PacketParser(), B.BoardReports()
    out = [board.feed(1.0, ev) for ev in parser.feed(stream)]
    return [r for r in out if r is not None], board, parser


def test_imu_and_battery_reports_read_as_the_vendor_sdk_reads_them():
    reports, board, _ = reports_of(vendor_imu(0.125, -0.5, 1.0, 10.0, -20.0, 90.0) + vendor_battery(11840))
    imu, battery = reports
    assert isinstance(imu, B.ImuReport) and isinstance(battery, B.BatteryReport)
    # the SDK's struct.unpack('<6f') and the node's x 9.80665 / radians(), in the chip's axes
    assert np.allclose(imu.accel, np.array([0.125, -0.5, 1.0]) * G0)
    assert np.allclose(imu.gyro, [math.radians(10.0), math.radians(-20.0), math.radians(90.0)], rtol=1e-6)
    assert battery.mv == 11840 and imu.t == battery.t == 1.0
    assert board.counts["imu"] == 1 and board.counts["battery"] == 1
    # the package's own framing is the vendor's
    assert B.imu_report((0.125, -0.5, 1.0), (10.0, -20.0, 90.0)) == vendor_imu(0.125, -0.5, 1.0, 10.0, -20.0, 90.0)
    assert B.battery_report(11840) == vendor_battery(11840)


@pytest.mark.parametrize("bad, kind", [
    (bytearray(vendor_imu(0, 0, 1, 0, 0, 0)), "bad_crc"),                  # last byte flipped below
    (vendor_packet(7, struct.pack("<5f", 0, 0, 1, 0, 0)), "short_imu"),
    (vendor_packet(7, struct.pack("<6f", 0, 0, 1, 0, 0, 0) + b"\x00"), "short_imu"),   # not '<6f' either
    (vendor_imu(0, math.nan, 1, 0, 0, 0), "bad_imu_values"),
    (vendor_imu(0, 0, 1, math.inf, 0, 0), "bad_imu_values"),
    (vendor_imu(0, 0, 16.5, 0, 0, 0), "bad_imu_values"),                 # beyond the QMI8658's +-16 g
    (vendor_imu(0, 0, 1, 0, -2100.0, 0), "bad_imu_values"),              # beyond +-2048 deg/s
    (vendor_packet(0, b"\x04\x10"), "bad_battery"),
    (vendor_packet(0, b"\x05\x10\x27"), "bad_battery"),
])
def test_bad_reports_are_counted_and_skipped(bad, kind):
    if kind == "bad_crc":
        bad[-1] ^= 0x01
    good = vendor_imu(0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    reports, board, _ = reports_of(bytes(bad) + good)
    assert board.counts[kind] == 1, board.counts
    assert len(reports) == 1 and reports[0].raw == (0.0, 0.0, 1.0, 0.0, 0.0, 0.0)   # the good one after it
    assert sum(n for k, n in board.counts.items() if k not in ("imu", kind)) == 0
    assert board.last_skipped


def test_unknown_function_is_counted_by_the_parser_and_skipped():
    reports, board, parser = reports_of(vendor_packet(12, b"\x01\x02") + vendor_imu(0, 0, 1, 0, 0, 0))
    assert parser.unknown_functions == 1 and len(reports) == 1
    reports, board, _ = reports_of(vendor_packet(6, b"\x01\x20"))          # a key report: known, not used
    assert reports == [] and board.counts["ignored"] == 1


def test_mount_turns_the_chip_axes_into_imu_link():
    # our URDF's imu_link is base_link's axes (0 0 0.04, no rotation); Hiwonder's description yaws it -90 deg
    assert np.allclose(B.urdf_imu_rotation(), np.eye(3))
    m = B.chip_to_imu_link((0.0, 0.0, -math.pi / 2))
    assert np.allclose(m @ [1.0, 0.0, 0.0], [0.0, -1.0, 0.0])        # chip x = base_link -y
    assert np.allclose(m @ [0.0, 1.0, 0.0], [1.0, 0.0, 0.0])


def loop_bus():
    """An RrcBoardBus on pyserial's loopback: what is written comes back as the board's bytes."""
    return RrcBoardBus("loop://", reply_timeout=0.05)


def test_bus_keeps_reports_through_a_servo_read_and_gives_them_in_order():
    """Reports between a request and its reply (and before the request) are kept, with their receipt time;
    the read still gets its reply."""
    bus = loop_bus()
    try:
        reply = vendor_packet(5, struct.pack("<BBbh", 3, 0x05, 0, 612))
        before = vendor_imu(0.0, 0.0, 1.0, 1.0, 2.0, 3.0)
        bus._ser.write(before)                       # arrived before the request: read, not flushed
        original = bus._ser.write

        def board(data):                             # the request goes out, IMU + reply + battery come back
            original(vendor_imu(0.0, 0.0, 1.0, 4.0, 5.0, 6.0) + reply + vendor_battery(10900))
            return len(data)
        bus._ser.write = board
        t0 = time.monotonic()
        assert bus.read_position(3) == 612
        reports = bus.poll_reports()
        assert [r.raw[3] for r in reports if isinstance(r, B.ImuReport)] == [1.0, 4.0]
        assert [r.mv for r in reports if isinstance(r, B.BatteryReport)] == [10900]
        assert all(t0 - 1.0 < r.t <= time.monotonic() for r in reports)
        assert bus.report_counts()["imu"] == 2 and bus.poll_reports() == []
    finally:
        bus.close()


def test_bus_counts_what_it_skips():
    bus = loop_bus()
    try:
        bad = bytearray(vendor_imu(0, 0, 1, 0, 0, 0))
        bad[-1] ^= 0xFF
        bus._ser.write(bytes(bad) + vendor_packet(13, b"\x00") + vendor_imu(0, 0, math.nan, 0, 0, 0)
                       + vendor_packet(7, b"\x00" * 20) + vendor_imu(0, 0, 1, 0, 0, 0))
        reports = bus.poll_reports()
        counts = bus.report_counts()
        assert len(reports) == 1 and counts["imu"] == 1
        assert (counts["bad_crc"], counts["unknown_function"], counts["bad_imu_values"], counts["short_imu"]) == \
            (1, 1, 1, 1)
    finally:
        bus.close()


def test_emulated_board_streams_reports_in_the_vendor_layout():
    """The emulated board's IMU report: the world's motion in the chip's axes (its mount), in g and deg/s, framed
    and packed as the SDK unpacks it; its battery report [0x04, u16 mV]."""
    em = BusEmulator(transport="rrc", accel_noise=0.0, gyro_noise=0.0)
    gyro, force = np.array([0.1, -0.2, 0.3]), np.array([1.0, 2.0, 9.81])
    em.set_imu(gyro, force)
    pkt = em._imu_packet()
    assert pkt[:4] == bytes([0xAA, 0x55, 7, 24]) and pkt[-1] == crc8_maxim(pkt[2:-1])
    raw = struct.unpack("<6f", pkt[4:-1])                  # Board.get_imu
    chip = euler2mat(0.0, 0.0, -math.pi / 2, "sxyz").T      # chip = M^T body, Hiwonder's -90 deg yaw
    assert np.allclose(raw[:3], chip @ force / G0, atol=1e-6)
    assert np.allclose(raw[3:], np.degrees(chip @ gyro), atol=1e-4)
    em.set_voltage(10400)
    bat = em._battery_packet()
    assert bat == vendor_battery(10400)
    data = bat[4:-1]
    assert data[0] == 0x04 and struct.unpack("<H", data[1:])[0] == 10400        # Board.get_battery


def test_emulated_board_streams_at_its_rate_and_one_without_imu_sends_none():
    with BusEmulator(transport="rrc").start() as em:
        bus = RrcBoardBus(em.port)
        try:
            got = []
            deadline = time.monotonic() + 10.0
            while time.monotonic() < deadline and len([r for r in got if isinstance(r, B.BatteryReport)]) < 2:
                got += bus.poll_reports()
                time.sleep(0.01)
            imu = [r for r in got if isinstance(r, B.ImuReport)]
            assert len(imu) > 20 and np.allclose(np.mean([r.accel for r in imu], axis=0), [0, 0, 9.81], atol=0.05)
            assert bus.read_position(1) > 0              # servo reads work between the reports
        finally:
            bus.close()
    with BusEmulator(transport="rrc", imu_rate=0.0, battery_rate=20.0).start() as em:
        bus = RrcBoardBus(em.port)
        try:
            time.sleep(0.5)
            got = bus.poll_reports()
            assert got and all(isinstance(r, B.BatteryReport) for r in got)
        finally:
            bus.close()
