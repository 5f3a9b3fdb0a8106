"""Transports against the pty emulator: every command, motion over time, GPIO direction, injected faults.

The emulator speaks the published frame format (checked byte for byte in test_hw_protocol.py), so these
tests exercise pyserial, timing, matching and error reporting of the real driver code paths.
"""
import struct
import time

import pytest

from jethexa_dynamics.hardware import protocol as P
from jethexa_dynamics.hardware.bus import BROADCAST_ID, DirectUartBus, RrcBoardBus, open_bus
from jethexa_dynamics.hardware.emulator import BusEmulator
from jethexa_dynamics.hardware.errors import (BusClosedError, BusIOError, ChecksumError, ParameterError, ServoTimeout,
                                              UnsupportedCommand)
from jethexa_dynamics.hardware.servo_faults import FaultSpec, parse_faults
from jethexa_dynamics.hardware.servo_table import load_servo_table

TIMEOUT = 0.5      # generous: the test box is loaded
FAULT_TIMEOUT = 0.15  # for reads that are expected to time out


class FakeClock:
    def __init__(self, t=100.0):
        self.t = t

    def __call__(self):
        return self.t


@pytest.fixture(scope="module")
def table():
    return load_servo_table(urdf=False)


@pytest.fixture(params=["uart", "rrc"])
def transport(request):
    return request.param


@pytest.fixture
def em(table, transport):
    e = BusEmulator(table, transport=transport).start()
    yield e
    e.stop()


@pytest.fixture
def bus(em, transport):
    b = open_bus(transport, em.port, reply_timeout=TIMEOUT)
    yield b
    b.close()


def wait_for(pred, timeout=3.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.005)
    return pred()


def test_group_move_and_read_back_all_18(em, bus, table):
    targets = [(s.servo_id, 300 + 20 * i) for i, s in enumerate(table)]
    bus.move(targets, 0)
    for sid, pos in targets:
        assert bus.read_position(sid) == pos
    assert all(em.torque_enabled(s.servo_id) for s in table)


def test_torque_voltage_temperature_and_config_roundtrip(em, bus):
    em.set_voltage(11870, 5)
    em.set_temperature(47, 5)
    assert bus.read_voltage(5) == 11870 and bus.read_temperature(5) == 47
    bus.set_torque([5], True)
    assert wait_for(lambda: em.torque_enabled(5)) and bus.read_torque(5) is True
    bus.set_torque([BROADCAST_ID], False)
    assert wait_for(lambda: not any(em.torque_enabled(s) for s in em.servo_ids))
    bus.adjust_offset(5, -10)
    assert bus.read_offset(5) == -10
    bus.save_offset(5)
    assert wait_for(lambda: em.servo(5).saved_offset == -10)
    bus.write_angle_limits(5, 100, 900)
    assert bus.read_angle_limits(5) == (100, 900)
    bus.write_voltage_limits(5, 6000, 13000)
    assert bus.read_voltage_limits(5) == (6000, 13000)
    bus.write_temperature_limit(5, 70)
    assert bus.read_temperature_limit(5) == 70
    bus.write_id(5, 40)
    assert bus.read_id(40) == 40
    with pytest.raises(ServoTimeout):
        bus.read_position(5, timeout=FAULT_TIMEOUT)


def test_uart_only_commands(table):
    with BusEmulator(table).start() as em, DirectUartBus(em.port, reply_timeout=TIMEOUT) as bus:
        bus.move_prepare([(3, 700), (4, 200)], 0)
        assert bus.read_prepared_move(3) == (700, 0)
        assert bus.read_position(3) == 500  # not started yet
        bus.move_start()
        assert bus.read_position(3) == 700 and bus.read_position(4) == 200
        bus.move([(3, 640)], 1500)
        assert bus.read_move_target(3) == (640, 1500)
        bus.stop([3])
        bus.set_led(3, False)
        assert bus.read_led(3) is False
        bus.set_motor_mode(3, True, -300)
        assert bus.read_motor_mode(3) == (True, -300)
        assert bus.read_led_alarm(3) == 7            # factory setting: every condition flashes the LED
        bus.write_led_alarm(3, 5)
        assert wait_for(lambda: em.servo(3).alarm_mask == 5)
        assert bus.read_led_alarm(3) == 5            # 36 reads back the setting written with 35


def test_sync_start_moves_all_at_once(table):
    with BusEmulator(table).start() as em, DirectUartBus(em.port, reply_timeout=TIMEOUT, sync_start=True) as bus:
        bus.move([(1, 100), (2, 900)], 0)
        assert bus.read_position(1) == 100 and bus.read_position(2) == 900
        cmds = [c for _, _, c, _ in em.rx_log]
        assert cmds[:3] == [P.Cmd.MOVE_TIME_WAIT_WRITE, P.Cmd.MOVE_TIME_WAIT_WRITE, P.Cmd.MOVE_START]


def test_servo_follows_commanded_position_over_time(table, transport):
    clock = FakeClock()
    with BusEmulator(table, transport=transport, time_fn=clock).start() as em, \
            open_bus(transport, em.port, reply_timeout=TIMEOUT) as bus:
        bus.move([(7, 740)], 1000)
        assert wait_for(lambda: em.servo(7).target == 740)
        for frac in (0.0, 0.25, 0.5, 1.0, 1.5):
            clock.t = em.servo(7).t0 + frac
            expected = 500 + 240 * min(frac, 1.0)  # linear over the commanded time
            assert bus.read_position(7) == round(expected)
            spec = table.by_id(7)
            assert em.commanded_position(7) == pytest.approx(spec.to_rad(expected))


def test_angle_limits_clamp_and_offset_shifts_physical_angle(em, bus, table):
    bus.write_angle_limits(9, 200, 800)
    bus.move([(9, 1000)], 0)
    assert bus.read_position(9) == 800
    bus.adjust_offset(9, 25)
    assert wait_for(lambda: em.servo(9).offset == 25)
    assert bus.read_position(9) == 800  # the servo reports in its own (offset) frame
    assert em.commanded_position(9) == pytest.approx(table.by_id(9).to_rad(825))  # the horn is 25 ticks on


def test_measured_positions_from_simulation(em, bus, table):
    em.set_measured_positions({"femur_joint_RF": 0.4, 12: -0.3})
    assert bus.read_position(4) == table.by_joint("femur_joint_RF").to_ticks(0.4)
    assert bus.read_position(12) == table.by_id(12).to_ticks(-0.3)
    em.clear_measured_positions()
    assert bus.read_position(4) == 500


class FakeGpio:
    BCM, OUT = 11, 0

    def __init__(self):
        self.calls = []
        self.level = {}

    def setmode(self, mode):
        self.calls.append(("setmode", mode))

    def setup(self, pin, mode):
        self.calls.append(("setup", pin, mode))

    def output(self, pin, value):
        self.level[pin] = value
        self.calls.append(("output", pin, value))


def test_half_duplex_direction_lines(table):
    gpio = FakeGpio()
    with BusEmulator(table).start() as em:
        bus = DirectUartBus(em.port, reply_timeout=TIMEOUT, gpio=gpio)
        assert ("setmode", 11) in gpio.calls and ("setup", 17, 0) in gpio.calls and ("setup", 27, 0) in gpio.calls
        assert gpio.level == {17: 0, 27: 1}  # idle in write mode: TX_CON=1, RX_CON=0
        gpio.calls.clear()
        bus.move([(1, 400)], 0)
        assert gpio.calls == []  # already in write mode: no turnaround, no drain
        assert bus.read_position(1) == 400
        # the read switched to receive mode (RX_CON=1, TX_CON=0) after sending the request
        assert gpio.calls == [("output", 17, 1), ("output", 27, 0)]
        bus.move([(1, 450)], 0)
        assert gpio.level == {17: 0, 27: 1}
        bus.close()


def test_gpio_jetson_missing_gives_clear_error(table):
    with pytest.raises(ImportError, match="Jetson.GPIO"):
        DirectUartBus("loop://", gpio="jetson")


# -- faults -------------------------------------------------------------------------------------------------
def test_fault_spec_parsing():
    fs = parse_faults("5:no_reply, coxa_joint_LF:corrupt=0.5,11:vanish@2.5")
    assert fs == [FaultSpec(5, "no_reply"), FaultSpec("coxa_joint_LF", "corrupt", 0.5),
                  FaultSpec(11, "vanish", None, 2.5)]
    for bad in ("5:explode", "5", "x:drop=2", "5:delay=abc"):
        with pytest.raises(ParameterError):
            parse_faults(bad)


def test_no_reply_and_corrupt_are_typed_and_name_the_servo(em, bus, table):
    em.inject(5, "no_reply")
    em.inject(3, "corrupt")
    with pytest.raises(ServoTimeout, match=r"servo 5\b"):
        bus.read_position(5, timeout=FAULT_TIMEOUT)
    with pytest.raises(ChecksumError, match=r"servo 3\b"):
        bus.read_position(3, timeout=FAULT_TIMEOUT)
    # healthy servos: nothing lost, the group write reaches them
    targets = [(s.servo_id, 600) for s in table]
    bus.move(targets, 0)
    for s in table:
        if s.servo_id not in (3, 5):
            assert bus.read_position(s.servo_id) == 600
    assert wait_for(lambda: em.servo(5).target == 600)  # no_reply: still executes writes
    em.clear_faults()
    assert bus.read_position(5) == 600 and bus.read_position(3) == 600  # usable again


def test_dropped_byte_and_delayed_reply(em, bus):
    em.inject(7, "drop")
    with pytest.raises((ServoTimeout, ChecksumError), match=r"servo 7\b"):
        bus.read_position(7, timeout=FAULT_TIMEOUT)
    em.clear_faults(7)
    em.inject(8, "delay", 0.3)
    with pytest.raises(ServoTimeout, match=r"servo 8\b.*no reply"):
        bus.read_position(8, timeout=0.1)
    # the late reply of servo 8 must not be taken for servo 9's
    bus.move([(9, 321)], 0)
    assert bus.read_position(9) == 321
    em.clear_faults(8)
    assert bus.read_position(8) == 500


def test_garbage_on_the_line_is_skipped(em, bus):
    em.inject(2, "garbage", 9)
    for _ in range(5):
        assert bus.read_position(2) == 500


@pytest.mark.parametrize("kind", ["overtemp", "overvolt"])
def test_protection_shows_in_the_measurements_and_unloads(table, transport, kind):
    with BusEmulator(table, transport=transport).start() as em, \
            open_bus(transport, em.port, reply_timeout=TIMEOUT) as bus:
        bus.move([(4, 700)], 0)
        assert bus.read_position(4) == 700  # also makes sure the move was processed
        em.inject(4, kind)
        bus.move([(4, 100)], 0)
        assert bus.read_position(4) == 700  # protected servo does not move
        assert not em.torque_enabled(4) and bus.read_torque(4) is False
        if kind == "overtemp":
            assert bus.read_temperature(4) > bus.read_temperature_limit(4)
        if kind == "overvolt":
            assert bus.read_voltage(4) > bus.read_voltage_limits(4)[1]
        if transport == "uart":
            assert bus.read_led_alarm(4) == 7  # the setting, unchanged by the fault
        em.clear_faults(4)
        bus.move([(4, 100)], 0)
        assert bus.read_position(4) == 100 and bus.read_torque(4) is True


def test_stall_keeps_torque_and_position(table):
    """Locked rotor: the horn stays, the motor stays loaded; only the position error shows it."""
    with BusEmulator(table).start() as em, DirectUartBus(em.port, reply_timeout=TIMEOUT) as bus:
        bus.move([(4, 700)], 0)
        assert bus.read_position(4) == 700
        em.inject(4, "stall")
        bus.move([(4, 100)], 0)
        assert bus.read_move_target(4) == (100, 0) and bus.read_position(4) == 700
        assert bus.read_torque(4) is True
        em.clear_faults(4)
        assert bus.read_position(4) == 100


def test_servo_vanishes_mid_run(table, transport):
    clock = FakeClock()
    with BusEmulator(table, transport=transport, time_fn=clock, faults="11:vanish@2.0").start() as em, \
            open_bus(transport, em.port, reply_timeout=TIMEOUT) as bus:
        assert bus.read_position(11) == 500
        clock.t += 2.5
        with pytest.raises(ServoTimeout, match=r"servo 11\b"):
            bus.read_position(11, timeout=FAULT_TIMEOUT)
        bus.move([(11, 800), (12, 800)], 0)
        assert bus.read_position(12) == 800
        assert em.servo(11).target == 500  # gone: the move never reached it
        em.clear_faults(11)
        assert bus.read_position(11) == 500


def test_broadcast_id_read(table):
    one = load_servo_table(urdf=False)
    from jethexa_dynamics.hardware.servo_table import ServoTable
    with BusEmulator(ServoTable([one.by_id(6)])).start() as em, DirectUartBus(em.port, reply_timeout=TIMEOUT) as b:
        assert b.read_id() == 6
    with BusEmulator(table).start() as em, DirectUartBus(em.port, reply_timeout=FAULT_TIMEOUT) as b:
        with pytest.raises((ChecksumError, ServoTimeout)):  # 18 servos answer at once: collision
            b.read_id()


def test_rrc_board_specifics(table):
    with BusEmulator(table, transport="rrc").start() as em, RrcBoardBus(em.port, reply_timeout=TIMEOUT) as bus:
        with pytest.raises(UnsupportedCommand, match="read_led_alarm"):
            bus.read_led_alarm(1)
        assert not bus.supports("read_led_alarm") and bus.supports("read_offset")
        em.inject(1, "no_reply")
        with pytest.raises(ServoTimeout, match=r"servo 1\b.*status -1"):
            bus.read_position(1)
        em.inject(2, "corrupt")
        with pytest.raises(ChecksumError, match=r"servo 2\b"):
            bus.read_position(2, timeout=FAULT_TIMEOUT)
        # one packet carries the whole group move
        n0 = len(em.rx_log)
        bus.move([(s.servo_id, 450) for s in table], 200)
        assert wait_for(lambda: len(em.rx_log) == n0 + 1)
        _, _, func, data = em.rx_log[-1]
        assert func == 5 and data[:4] == bytes([1, 200, 0, 18])


def test_closed_bus_and_bad_arguments(em, bus):
    with pytest.raises(ParameterError, match="position"):
        bus.move([(1, 1200)], 0)
    with pytest.raises(ParameterError, match="targets"):
        bus.move([], 0)
    bus.close()
    with pytest.raises(BusClosedError):
        bus.read_position(1)
    with pytest.raises(ParameterError, match="transport"):
        open_bus("can", em.port)


def test_emulator_ignores_bad_frames_and_out_of_range_params(table):
    with BusEmulator(table).start() as em, DirectUartBus(em.port, reply_timeout=TIMEOUT) as bus:
        bad = bytearray(P.move_time_write(1, 900, 0))
        bad[-1] ^= 1
        raw = P.encode_frame(1, P.Cmd.MOVE_TIME_WRITE, struct.pack("<HH", 1500, 0))  # position > 1000
        bus._send(bytes(bad) + raw)
        assert bus.read_position(1) == 500


def test_port_failures_are_bus_io_errors(table):
    with pytest.raises(BusIOError, match="/dev/does-not-exist"):
        DirectUartBus("/dev/does-not-exist")
    em = BusEmulator(table).start()
    bus = DirectUartBus(em.port, reply_timeout=TIMEOUT)
    assert bus.read_position(1) == 500
    em.stop()  # the "device" goes away: the pty hangs up
    with pytest.raises((BusIOError, ServoTimeout)):
        bus.read_position(1, timeout=FAULT_TIMEOUT)
    bus.close()


class _StarvedPort:
    """A serial port whose reply lands in the buffer while the reading thread is not scheduled: the first
    read returns nothing, then the clock jumps past the deadline and the whole reply is waiting."""

    def __init__(self, reply, clock):
        self.reply, self.clock, self.reads, self.written = reply, clock, 0, b""

    @property
    def in_waiting(self):
        return len(self.reply) if self.reads >= 1 else 0

    def read(self, n=1):
        self.reads += 1
        if self.reads == 1:
            self.clock[0] += 1.0       # the thread sleeps through the deadline
            return b""
        out, self.reply = self.reply[:n], self.reply[n:]
        return out

    def write(self, data):
        self.written += data
        return len(data)

    def reset_input_buffer(self):
        pass

    def flush(self):
        pass

    def close(self):
        pass


def test_reply_buffered_while_starved_past_the_deadline_is_still_read(monkeypatch):
    """The published POS_READ reply of servo 1 (pos 500) arrives while the reader sleeps past its deadline:
    it is read, not reported as a silent servo."""
    import jethexa_dynamics.hardware.bus as busmod
    clock = [1000.0]
    monkeypatch.setattr(busmod.time, "monotonic", lambda: clock[0])
    reply = bytes.fromhex("55 55 01 05 1C F4 01 E8")
    port = _StarvedPort(reply, clock)
    bus = busmod.DirectUartBus("loop://", reply_timeout=0.02, serial_factory=lambda *a, **k: port)
    assert bus.read_position(1) == 500
    assert port.written == bytes.fromhex("55 55 01 03 1C DF")
    # and a servo that really stays silent still times out, naming the servo
    port2 = _StarvedPort(b"", clock)
    bus2 = busmod.DirectUartBus("loop://", reply_timeout=0.02, serial_factory=lambda *a, **k: port2)
    with pytest.raises(busmod.ServoTimeout, match="1"):
        bus2.read_position(1)
