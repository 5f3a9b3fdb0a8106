"""Servo faults read the way the protocol defines them (reference anchors_hardware_ros.md §1.2).

* The emulator answers as the protocol says, checked with hand-written frames (bytes and checksums from the
  protocol document's formula CHK = ~(ID + LEN + CMD + P1..Pn) & 0xFF, typed here, not built by our encoder):
  LED_ERROR_READ (36) returns the setting written with LED_ERROR_WRITE (35); a broadcast (0xFE) read other
  than ID_READ gets no reply; a servo whose supply is outside its VIN limits unloads until back inside and
  LOAD_OR_UNLOAD_READ (32) reports it.
* Regression: a servo reporting its LED alarm setting 7 (every condition flashes the LED, as shipped) makes
  no fault and removes no leg (before the fix 36's reply was read as active bits 1|2|4 = stall).
"""
import time

import pytest
import serial

from jethexa_dynamics.hardware.bus import DirectUartBus
from jethexa_dynamics.hardware.emulator import BusEmulator
from jethexa_dynamics.hardware.joints import JointServoBus
from jethexa_dynamics.hardware.servo_table import ServoTable, load_servo_table
from jethexa_dynamics.damage.detection import (DamageDetector, ServoStatusTracker, decode_servo_status,
                                             encode_servo_status)

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
QUIET = 0.3   # s to wait for a reply that must not come (a hang guard, no timing asserted)

# ID 1, hand-written (header 55 55 | ID | LEN | CMD | params | CHK)
LED_ERROR_WRITE_5 = bytes.fromhex("55 55 01 04 23 05 D2")   # 35: alarm setting 5 (over-temp | stall)
LED_ERROR_READ = bytes.fromhex("55 55 01 03 24 D7")         # 36
LED_ERROR_REPLY_7 = bytes.fromhex("55 55 01 04 24 07 CF")   # setting 7 (the shipped value)
LED_ERROR_REPLY_5 = bytes.fromhex("55 55 01 04 24 05 D1")
POS_READ = bytes.fromhex("55 55 01 03 1C DF")               # reference worked example
POS_REPLY_500 = bytes.fromhex("55 55 01 05 1C F4 01 E8")    # reference worked example
VIN_READ = bytes.fromhex("55 55 01 03 1B E0")               # reference worked example
VIN_REPLY_6000 = bytes.fromhex("55 55 01 05 1B 70 17 57")   # 6000 mV
VIN_LIMIT_WRITE_6500_12600 = bytes.fromhex("55 55 01 07 16 64 19 38 31 FB")  # 22: 6500..12600 mV
LOAD = bytes.fromhex("55 55 01 04 1F 01 DA")                # reference worked example (31, torque on)
LOAD_READ = bytes.fromhex("55 55 01 03 20 DB")              # 32
LOAD_REPLY_0 = bytes.fromhex("55 55 01 04 20 00 DA")
LOAD_REPLY_1 = bytes.fromhex("55 55 01 04 20 01 D9")
# broadcast (ID 0xFE)
B_POS_READ = bytes.fromhex("55 55 FE 03 1C E2")
B_VIN_READ = bytes.fromhex("55 55 FE 03 1B E3")
B_LED_ERROR_READ = bytes.fromhex("55 55 FE 03 24 DA")
B_ID_READ = bytes.fromhex("55 55 FE 03 0E F0")              # reference worked example
ID_REPLY_1 = bytes.fromhex("55 55 01 04 0E 01 EB")


def checksum_of_document(frame: bytes) -> int:
    return (~sum(frame[2:-1])) & 0xFF


def test_hand_written_frames_carry_the_documents_checksum():
    for f in (LED_ERROR_WRITE_5, LED_ERROR_READ, LED_ERROR_REPLY_7, LED_ERROR_REPLY_5, POS_READ, POS_REPLY_500,
              VIN_READ, VIN_REPLY_6000, VIN_LIMIT_WRITE_6500_12600, LOAD, LOAD_READ, LOAD_REPLY_0, LOAD_REPLY_1,
              B_POS_READ, B_VIN_READ, B_LED_ERROR_READ, B_ID_READ, ID_REPLY_1):
        assert f[-1] == checksum_of_document(f) and f[3] == len(f) - 3, f.hex(" ")


class Line:
    """A raw client on the emulator's pty: bytes in, bytes out, nothing of ours in between."""

    def __init__(self, port):
        self.ser = serial.Serial(port, 115200, timeout=QUIET)

    def ask(self, frame: bytes, n: int) -> bytes:
        self.ser.reset_input_buffer()
        self.ser.write(frame)
        return self.ser.read(n)

    def send(self, frame: bytes) -> None:
        self.ser.write(frame)
        self.ser.flush()

    def close(self):
        self.ser.close()


@pytest.fixture
def one_servo():
    """The emulator with servo 1 alone (a broadcast ID_READ then has exactly one answer)."""
    table = load_servo_table(urdf=False)
    em = BusEmulator(ServoTable([table.by_id(1)])).start()
    line = Line(em.port)
    yield em, line
    line.close()
    em.stop()


def settle(em, pred, guard=3.0):
    end = time.monotonic() + guard   # hang guard only
    while time.monotonic() < end and not pred():
        time.sleep(0.005)
    return pred()


def test_led_error_read_returns_the_setting_written_with_35(one_servo):
    em, line = one_servo
    assert line.ask(LED_ERROR_READ, 7) == LED_ERROR_REPLY_7
    line.send(LED_ERROR_WRITE_5)
    assert line.ask(LED_ERROR_READ, 7) == LED_ERROR_REPLY_5
    # an over-temperature servo still answers its setting, not the condition
    em.inject(1, "overtemp")
    assert line.ask(LED_ERROR_READ, 7) == LED_ERROR_REPLY_5


def test_broadcast_reads_get_no_reply_except_id_read(one_servo):
    em, line = one_servo
    for frame in (B_POS_READ, B_VIN_READ, B_LED_ERROR_READ):
        assert line.ask(frame, 8) == b"", frame.hex(" ")
    assert line.ask(B_ID_READ, 7) == ID_REPLY_1
    assert line.ask(POS_READ, 8) == POS_REPLY_500          # the servo was there all along


def test_broadcast_position_read_on_the_full_bus_is_silent():
    """With 18 servos a broadcast POS_READ used to be answered by all of them at once (colliding replies)."""
    with BusEmulator().start() as em:
        line = Line(em.port)
        try:
            assert line.ask(B_POS_READ, 8) == b""
            assert em.bytes_sent == 0
        finally:
            line.close()


def test_supply_outside_the_vin_limits_unloads_until_back_inside(one_servo):
    em, line = one_servo
    line.send(LOAD)
    assert line.ask(LOAD_READ, 7) == LOAD_REPLY_1
    em.set_voltage(6000)
    assert line.ask(VIN_READ, 8) == VIN_REPLY_6000
    assert line.ask(LOAD_READ, 7) == LOAD_REPLY_1           # 6000 mV is inside the default 4500..14500
    line.send(VIN_LIMIT_WRITE_6500_12600)                    # now the supply is below the servo's minimum
    assert settle(em, lambda: em.servo(1).vin_limits == (6500, 12600))
    assert line.ask(LOAD_READ, 7) == LOAD_REPLY_0
    assert not em.torque_enabled(1)
    line.send(LOAD)                                          # a load request does not override the protection
    assert line.ask(LOAD_READ, 7) == LOAD_REPLY_0
    em.set_voltage(11100)                                    # back inside: holds its requested torque again
    assert line.ask(LOAD_READ, 7) == LOAD_REPLY_1


def test_over_voltage_unloads_through_the_joint_layer_and_is_a_measured_fault():
    table = load_servo_table()
    with BusEmulator(table).start() as em:
        joints = JointServoBus(DirectUartBus(em.port, reply_timeout=0.5), table, aux_every=1)
        joints.load_all()
        em.set_voltage(15000, "femur_joint_RR")   # above 14500
        faults, loads = {}, {}
        for _ in range(2 * 18 * 7):
            r = joints.poll(budget_s=10.0, max_reads=1)
            faults.update(r.faults)
            loads.update(r.loads)
        assert {j: f.faults for j, f in faults.items()} == {"femur_joint_RR": ["over-voltage"]}
        assert loads["femur_joint_RR"] is False and all(v for j, v in loads.items() if j != "femur_joint_RR")
        joints.close()


# ---------------------------------------------------------------------------------------------- regression
def test_alarm_setting_7_removes_no_leg():
    """18 servos that read back LED alarm setting 7 (the shipped value), polled by the joint layer, booked by
    the driver's tracker, sent through the /diagnostics wire format and judged by the damage detector for
    longer than every hold time: no fault, no leg removed. Before the fix the reply of 36 was taken for
    active bits (1|2|4: over-temperature, over-voltage, stall) and every leg was removed."""
    table = load_servo_table()
    with BusEmulator(table).start() as em:
        bus = DirectUartBus(em.port, reply_timeout=0.5)
        assert all(bus.read_led_alarm(s.servo_id) == 7 for s in table)
        joints = JointServoBus(bus, table, aux_every=1)
        got = joints.set_led_alarm(7)
        assert got == {s.joint: 7 for s in table}
        joints.load_all()
        tracker = ServoStatusTracker([(s.joint, s.servo_id) for s in table])
        for j, v in got.items():
            tracker.record_reply(j, 0.0, led_alarm=v)
        tracker.set_torque(True)
        det = DamageDetector(table.joint_names, LEGS)
        now = 0.0
        for _ in range(2 * 18 * 7):       # every servo's limits, voltage, temperature and load read
            now += 0.02                   # detector time: 5 s, ten times every hold time
            r = joints.poll(budget_s=10.0, max_reads=1)
            assert not r.errors and not r.faults
            tracker.ingest(now, r)
            wire = [decode_servo_status(dict(encode_servo_status(h)[2])) for h in tracker.snapshot(now)]
            assert det.update(now, wire) == []
        assert det.detected() == [3] * 6 and not det.faults
        statuses = tracker.snapshot(now)
        assert all(h.led_alarm == 7 and encode_servo_status(h)[:2] == (0, "ok") for h in statuses)
        assert all(h.temp_limit_c == 85.0 and h.vin_max_mv == 14500.0 for h in statuses)
        joints.close()


def test_a_status_carrying_the_old_error_bits_key_is_no_fault():
    """A /diagnostics status with the alarm setting in an ``error_bits`` key (what the driver published before
    the fix) decodes without any fault: the key has no meaning the protocol gives it."""
    from jethexa_dynamics.damage.detection import ServoStatus

    h = ServoStatus("femur_joint_LM", 9, reads=10, last_reply_age=0.01, led_alarm=7)
    values = dict(encode_servo_status(h)[2], error_bits="7")
    det = DamageDetector(["%s_joint_%s" % (k, leg) for leg in LEGS for k in ("coxa", "femur", "tibia")], LEGS)
    for t in (0.0, 1.0, 5.0):
        assert det.update(t, [decode_servo_status(values)]) == []
    assert det.detected() == [3] * 6


def test_a_locked_rotor_is_found_from_the_position_error_under_load():
    """Emulated locked rotor on the RR femur: torque stays on, the horn stays; commanded 0.9 rad away, the
    position error under load persists and the detector reports the femur as stalled: a seized joint, its links
    kept (a seized servo is no lost link). The same error on an unloaded servo (its supply below its VIN
    minimum) is no stall."""
    table = load_servo_table()
    with BusEmulator(table).start() as em:
        joints = JointServoBus(DirectUartBus(em.port, reply_timeout=0.5), table, aux_every=3)
        tracker = ServoStatusTracker([(s.joint, s.servo_id) for s in table])
        det = DamageDetector(table.joint_names, LEGS)
        zero = {j: 0.0 for j in table.joint_names}
        joints.command(zero, 0.0)
        tracker.set_commanded(zero)
        tracker.set_torque(True)
        em.inject("femur_joint_RR", "stall")
        em.set_voltage(4000, "femur_joint_LF")         # below 4500: unloaded by its protection
        target = dict(zero, femur_joint_RR=0.9, femur_joint_LF=0.9)   # beyond the 0.6 rad threshold
        joints.command(target, 0.0)
        tracker.set_commanded(target)
        now, new = 0.0, []
        for _ in range(18 * 30):                       # every position, each servo's limits and voltage
            now += 0.02
            tracker.ingest(now, joints.poll(budget_s=10.0, max_reads=1))
            new += det.update(now, tracker.snapshot(now))
        assert new == [] and list(det.stalled) == ["femur_joint_RR"]
        assert det.stalled["femur_joint_RR"].startswith("stall") and det.detected() == [3] * 6
        lf = tracker.health["femur_joint_LF"]
        assert lf.torque is False and abs(lf.position_error) > 0.8 and lf.measured_faults == ["under-voltage"]
        joints.close()
