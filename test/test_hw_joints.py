"""Joint layer (radians, limits, group write, read scheduler, safety) against the pty emulator."""
import math
import time

import pytest

from jethexa_dynamics.hardware import protocol as P
from jethexa_dynamics.hardware.bus import open_bus
from jethexa_dynamics.hardware.emulator import BusEmulator
from jethexa_dynamics.hardware.errors import (BusClosedError, ChecksumError, EmergencyStopActive, JointLimitError,
                                              ParameterError, ServoFault, ServoTimeout)
from jethexa_dynamics.hardware.joints import JointServoBus
from jethexa_dynamics.hardware.servo_table import load_servo_table

TIMEOUT = 0.5
HALF_TICK = 0.5 * math.radians(240) / 1000


@pytest.fixture(scope="module")
def table():
    return load_servo_table()


@pytest.fixture(params=["uart", "rrc"])
def transport(request):
    return request.param


@pytest.fixture
def rig(table, transport):
    em = BusEmulator(table, transport=transport).start()
    bus = open_bus(transport, em.port, reply_timeout=TIMEOUT)
    joints = JointServoBus(bus, table, read_timeout=TIMEOUT)
    yield em, joints
    joints.close()
    em.stop()


def pose(table, k=1.0):
    """A pose that uses every joint, distinct per joint, inside all limits."""
    return {s.joint: k * (0.9 if "coxa" in s.joint else 1.5) * ((i % 7) - 3) / 3.0 for i, s in enumerate(table)}


def wait_for(pred, timeout=3.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.005)
    return pred()


def test_move_all_18_joints_and_read_back(rig, table):
    em, joints = rig
    q = pose(table)
    n0, w0 = len(em.rx_log), joints.bus.stats["writes"]
    joints.command(q, 0.0)
    assert joints.bus.stats["writes"] == w0 + 1  # one write() for the 18 servos
    positions, errors = joints.read_all_positions()
    assert errors == {}
    for j, v in q.items():
        assert positions[j] == pytest.approx(v, abs=HALF_TICK + 1e-12)
        assert em.commanded_position(j) == pytest.approx(v, abs=HALF_TICK + 1e-12)
    if em.transport == "uart":
        moves = [e for e in list(em.rx_log)[n0:] if e[2] == P.Cmd.MOVE_TIME_WRITE]
    else:
        moves = [e for e in list(em.rx_log)[n0:] if e[2] == 5 and e[3][0] == 0x01]  # bus-servo MOVE packets
    assert len(moves) == (18 if em.transport == "uart" else 1)  # 18 frames in one write, or one board packet


def test_array_in_joint_order_and_duration(rig, table):
    em, joints = rig
    q = [pose(table)[j] for j in joints.joint_names]
    joints.command(q, 0.4)
    assert wait_for(lambda: em.servo("tibia_joint_RR").move_time_ms == 400)
    assert joints.last_command == dict(zip(joints.joint_names, q)) and joints.last_command_duration == 0.4


@pytest.mark.parametrize("bad,match", [
    ({"femur_joint_LM": float("nan")}, "femur_joint_LM.*not finite"),
    ({"coxa_joint_RR": 1.2}, r"coxa_joint_RR.*allowed -1.0000..1.0000"),
    ({"tibia_joint_LF": -math.inf}, "tibia_joint_LF"),
])
def test_bad_joint_values_rejected_before_any_byte(rig, table, bad, match):
    em, joints = rig
    q = pose(table)
    q.update(bad)
    writes = joints.bus.stats["writes"]
    time.sleep(0.05)
    n_bytes = em.bytes_received
    with pytest.raises(JointLimitError, match=match):
        joints.command(q, 0.5)
    time.sleep(0.1)
    assert joints.bus.stats["writes"] == writes and em.bytes_received == n_bytes


@pytest.mark.parametrize("positions,duration,exc,match", [
    ([0.0] * 17, 0.5, ParameterError, "positions length"),
    ({"coxa_joint_XX": 0.0}, 0.5, ParameterError, "unknown joint"),
    ({"coxa_joint_LF": 0.0}, -0.1, ParameterError, "duration_s"),
    ({"coxa_joint_LF": 0.0}, 31.0, ParameterError, "duration_s"),
    ({"coxa_joint_LF": 0.0}, float("nan"), ParameterError, "duration_s"),
    (42, 0.5, ParameterError, "positions"),
])
def test_bad_command_arguments(rig, positions, duration, exc, match):
    _, joints = rig
    with pytest.raises(exc, match=match):
        joints.command(positions, duration)


def test_limits_from_node_are_enforced(table, transport):
    with BusEmulator(table, transport=transport).start() as em:
        joints = JointServoBus(open_bus(transport, em.port, reply_timeout=TIMEOUT), table,
                               limits={"femur_joint_RF": (-0.2, 0.3)})
        assert joints.limits("femur_joint_RF") == (-0.2, 0.3)
        with pytest.raises(JointLimitError, match="femur_joint_RF"):
            joints.command({"femur_joint_RF": 0.31}, 0.1)
        joints.close()


def test_scheduler_spreads_reads_round_robin(rig, table):
    em, joints = rig
    joints.aux_every = 6
    seen = []
    for _ in range(21):
        r = joints.poll(budget_s=1.0, max_reads=1)
        assert r.reads == 1 and not r.errors
        seen.append((list(r.positions) + list(r.voltages) + list(r.temperatures) + list(r.loads)
                     + list(r.limits))[0])
    names = table.joint_names
    # 6 positions, then one aux read, and so on; positions cycle through the joints in order
    pos_reads = [n for i, n in enumerate(seen) if i % 7 != 6]
    assert pos_reads == [names[i % 18] for i in range(18)]
    aux = joints.poll(budget_s=1.0, max_reads=1)  # 22nd read is a position again
    assert list(aux.positions) == [names[0]]


def test_poll_budget_gives_values_in_si(rig, table):
    em, joints = rig
    em.set_voltage(11500)
    em.set_temperature(41)
    em.set_measured_positions({"femur_joint_LF": 0.7})
    got = {}
    volts, temps = {}, {}
    # until every joint and both aux values were read (each poll does at least one read: a starved process
    # does fewer per 50 ms budget, so a fixed number of polls would make the outcome depend on the machine)
    for _ in range(1000):
        r = joints.poll(budget_s=0.05)
        got.update(r.positions)
        volts.update(r.voltages)
        temps.update(r.temperatures)
        if set(got) == set(table.joint_names) and volts and temps:
            break
    assert set(got) == set(table.joint_names)
    assert got["femur_joint_LF"] == pytest.approx(0.7, abs=HALF_TICK + 1e-12)
    assert volts and all(v == pytest.approx(11.5) for v in volts.values())
    assert temps and all(t == 41.0 for t in temps.values())


def test_silenced_servo_goes_offline_without_starving_the_others(table, transport):
    with BusEmulator(table, transport=transport).start() as em:
        joints = JointServoBus(open_bus(transport, em.port, reply_timeout=0.3), table, aux_every=1000,
                               offline_after=2, offline_retry_every=4)
        lost = "coxa_joint_LM"
        em.silence(lost)
        errors, reads_of_lost, ok = [], 0, {}
        for _ in range(18 * 6):
            r = joints.poll(budget_s=10.0, max_reads=1)
            errors += list(r.errors.items())
            ok.update(r.positions)
            reads_of_lost += lost in r.errors
        assert all(j == lost and isinstance(e, ServoTimeout) and "coxa_joint_LM" in str(e) for j, e in errors)
        assert not joints.health[lost].online and joints.health["coxa_joint_LF"].online
        assert set(ok) == set(table.joint_names) - {lost}
        # 6 rounds: failures in rounds 0 and 1 mark it offline; then only every 4th round is retried
        assert 2 <= reads_of_lost <= 4
        # commands still reach every healthy servo
        joints.command(pose(table, 0.5), 0.0)
        assert wait_for(lambda: all(em.commanded_position(j) == pytest.approx(v, abs=HALF_TICK + 1e-12)
                                    for j, v in pose(table, 0.5).items() if j != lost))
        em.clear_faults(lost)
        for _ in range(18 * 5):
            joints.poll(budget_s=10.0, max_reads=1)
        assert joints.health[lost].online
        joints.close()


def test_measurements_outside_the_servos_own_limits_become_servo_fault(table):
    """Over-temperature from TEMP_READ against the servo's TEMP_MAX_LIMIT (read from it, here lowered to 60),
    under-voltage from VIN_READ against its VIN limits; the LED alarm setting (7 on every emulated servo,
    as shipped) makes no fault."""
    with BusEmulator(table).start() as em:
        bus = open_bus("uart", em.port, reply_timeout=TIMEOUT)
        joints = JointServoBus(bus, table, aux_every=1)
        rm, lf = table.by_joint("tibia_joint_RM").servo_id, table.by_joint("coxa_joint_LF").servo_id
        bus.write_temperature_limit(rm, 60)
        assert bus.read_led_alarm(rm) == 7 and bus.read_led_alarm(lf) == 7
        em.set_temperature(61, "tibia_joint_RM")      # above its own limit (60), below the default 85
        em.set_temperature(59, "femur_joint_RM")      # below its limit
        em.set_voltage(6000, "coxa_joint_LF")         # inside [4500, 14500]: no fault ...
        faults = {}
        for _ in range(3 * 18 * 4):                   # limits, voltage, temperature, load of every servo
            r = joints.poll(budget_s=10.0, max_reads=1)
            assert not r.errors
            faults.update(r.faults)
        assert list(faults) == ["tibia_joint_RM"]
        f = faults["tibia_joint_RM"]
        assert isinstance(f, ServoFault) and f.faults == ["over-temperature"] and f.servo_id == rm
        assert "tibia_joint_RM" in str(f) and "61 degC, max 60" in str(f)
        assert joints.health["tibia_joint_RM"].temp_limit_c == 60.0
        assert joints.health["tibia_joint_RM"].faults == ["over-temperature"]
        bus.write_voltage_limits(lf, 6500, 12600)     # ... until its own lower limit is above the supply
        joints.health["coxa_joint_LF"].temp_limit_c = math.nan  # read the limits again
        faults = {}
        for _ in range(3 * 18 * 4):
            faults.update(joints.poll(budget_s=10.0, max_reads=1).faults)
        assert set(faults) == {"tibia_joint_RM", "coxa_joint_LF"}
        assert faults["coxa_joint_LF"].faults == ["under-voltage"]
        joints.close()


def test_emergency_stop_unloads_and_latches(rig, table):
    em, joints = rig
    joints.command(pose(table), 0.0)
    assert wait_for(lambda: all(em.torque_enabled(s.servo_id) for s in table))
    em.silence("femur_joint_RR")  # e-stop must not fail because one servo is gone
    assert joints.emergency_stop() == []
    assert wait_for(lambda: not any(em.torque_enabled(s.servo_id) for s in table if s.joint != "femur_joint_RR"))
    with pytest.raises(EmergencyStopActive):
        joints.command(pose(table), 0.5)
    with pytest.raises(EmergencyStopActive):
        joints.load_all()
    joints.reset_emergency_stop()
    joints.command(pose(table), 0.0)
    assert wait_for(lambda: em.torque_enabled("coxa_joint_LF"))


def test_close_unloads_and_is_idempotent(table, transport):
    with BusEmulator(table, transport=transport).start() as em:
        joints = JointServoBus(open_bus(transport, em.port, reply_timeout=TIMEOUT), table)
        joints.load_all()
        assert wait_for(lambda: all(em.torque_enabled(s.servo_id) for s in table))
        joints.close()
        assert wait_for(lambda: not any(em.torque_enabled(s.servo_id) for s in table))
        joints.close()
        for call in (lambda: joints.command({"coxa_joint_LF": 0.0}, 0.1), lambda: joints.poll(0.01),
                     joints.unload_all):
            with pytest.raises(BusClosedError):
                call()
        assert joints.emergency_stop() == []  # still safe to call


@pytest.mark.parametrize("kind,value,expected,measured", [
    ("no_reply", None, (ServoTimeout,), []), ("vanish", None, (ServoTimeout,), []),
    ("corrupt", None, (ChecksumError,), []), ("drop", None, (ServoTimeout, ChecksumError), []),
    ("delay", 0.6, (ServoTimeout,), []), ("garbage", 8, (), []), ("stall", None, (), []),
    ("overtemp", None, (), ["over-temperature"]), ("overvolt", None, (), ["over-voltage"]),
])
def test_each_fault_is_typed_and_healthy_servos_lose_nothing(table, kind, value, expected, measured):
    """Inject one fault on one servo, move all 18 joints, read everything: only the faulty joint reports
    (with the right error type, or the measured fault), every healthy joint reached its command; after
    clearing, all is clean. A stall is no read error (it shows as a position error, judged by the damage
    detector)."""
    bad = "femur_joint_RM"
    with BusEmulator(table).start() as em:
        joints = JointServoBus(open_bus("uart", em.port, reply_timeout=0.25), table, aux_every=1,
                               offline_after=1000)
        em.inject(bad, kind, value)
        q = pose(table, 0.7)
        joints.command(q, 0.0)
        got, errors, faults = {}, {}, {}
        for _ in range(2 * 18 * 7):  # every position; each servo's limits, then each aux kind, at least once
            r = joints.poll(budget_s=10.0, max_reads=1)
            got.update(r.positions)
            errors.update(r.errors)
            faults.update(r.faults)
        assert set(errors) <= {bad} and (bad in errors) == bool(expected)
        assert {j: f.faults for j, f in faults.items()} == ({bad: measured} if measured else {})
        if expected:
            assert isinstance(errors[bad], expected) and bad in str(errors[bad])
        for j, v in q.items():
            if j != bad:
                assert got[j] == pytest.approx(v, abs=HALF_TICK + 1e-12)
        em.clear_faults()
        time.sleep(0.7)  # let a delayed reply drain
        q2 = pose(table, -0.4)
        joints.command(q2, 0.0)
        pos, errs = joints.read_all_positions(timeout=TIMEOUT)
        assert errs == {} and all(pos[j] == pytest.approx(v, abs=HALF_TICK + 1e-12) for j, v in q2.items())
        joints.close()


def test_a_reply_outside_the_scheduler_brings_an_offline_servo_back(table):
    """The driver's confirmation read answers: mark_responsive puts the joint back into every round."""
    with BusEmulator(table).start() as em:
        joints = JointServoBus(open_bus("uart", em.port, reply_timeout=0.3), table, aux_every=1000,
                               offline_after=1, offline_retry_every=1000)
        lost = "tibia_joint_RR"
        em.silence(lost)
        for _ in range(18):
            joints.poll(budget_s=10.0, max_reads=1)
        assert not joints.health[lost].online
        em.clear_faults(lost)
        spec = table.by_joint(lost)
        joints.bus.read_position(spec.servo_id, 0.3)     # what servo_driver's confirmation read does
        joints.mark_responsive(lost)
        assert joints.health[lost].online and joints.health[lost].consecutive_failures == 0
        reads = set()
        for _ in range(18):
            reads |= set(joints.poll(budget_s=10.0, max_reads=1).positions)
        assert lost in reads          # read in the normal round again, not once per 1000 rounds
        with pytest.raises(ValueError, match="unknown joint"):
            joints.mark_responsive("no_such_joint")
        joints.close()
