"""The servo driver's set-point at each reading (``hardware.setpoints``, ``JointServoBus.setpoints_at``), the
emulated servo's reads at the read's time, the pairing of joint_states with joint_states/setpoint and the body
estimate fed those pairs (``damage.body_load``). Oracles: the emulated servo's own commanded trajectory, the
engine's set-points (``ServoMoves``, checked against ``Engine.setpoints`` in test_damage_body_load)."""
import math

import numpy as np
import pytest

from jethexa_dynamics.damage.body_load import BodyLoadEstimator, ReadingPairs, ServoMoves
from jethexa_dynamics.hardware import protocol as P
from jethexa_dynamics.hardware.bus import open_bus
from jethexa_dynamics.hardware.emulator import BusEmulator
from jethexa_dynamics.hardware.joints import JointServoBus
from jethexa_dynamics.hardware.servo_model import MAX_EXTRAPOLATION_S
from jethexa_dynamics.hardware.servo_table import load_servo_table
from jethexa_dynamics.hardware.setpoints import ServoSetpoints

TICK = math.radians(240) / 1000


class Clock:
    """A clock the test moves (the driver's and the emulator's): nothing happens between two of its values."""

    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _handled(em, n_frames, timeout=10.0):
    """Wait until the emulator's pty thread has executed ``n_frames`` frames in all (the driver's write returns
    before that; the test's clock must not move on until then)."""
    import time
    t_end = time.monotonic() + timeout
    while em.frames_executed < n_frames:
        assert time.monotonic() < t_end, "the emulator did not get the frames"
        time.sleep(0.0005)


def _rig(line: bool):
    table = load_servo_table()
    clock = Clock()
    em = BusEmulator(table, time_fn=clock, line_rate="auto" if line else None).start()
    joints = JointServoBus(open_bus("uart", em.port, reply_timeout=0.5), table, read_timeout=0.5, time_fn=clock,
                           line_model=line)
    return clock, em, joints, table


@pytest.fixture(params=[False, True], ids=["no line", "line"])
def rig(request):
    """The driver's joint layer on the emulated bus, on the test's clock: without a line (the sim graph's) and
    with the robot's 115200 baud line modelled on both sides."""
    clock, em, joints, table = r = _rig(request.param)
    yield r
    joints.close()
    em.stop()


@pytest.fixture
def line_rig():
    clock, em, joints, table = r = _rig(True)
    yield r
    joints.close()
    em.stop()


def test_set_points_at_each_read_are_the_emulated_servos_commanded_trajectory(rig):
    """Random group moves of random subsets, overlapping (a move sent while the last one runs), and scheduled
    reads in between, some while a move's bytes are still on the line: each read's time as the driver gives it is
    the instant its request was through the emulated line (the emulator's own line clock, ``rx_log``), and its
    set-point as the driver replays it is the servo's own commanded trajectory at that instant (the moves' goals
    as sent: whole ticks; each servo's move from its frame's last byte)."""
    clock, em, joints, table = rig
    rng = np.random.default_rng(5)
    names = list(table.joint_names)
    ids = {s.joint: s.servo_id for s in table}
    joints.command({n: 0.0 for n in names}, 0.0)
    # its frames executed before the first count is taken: else the next move's wait could be met by these
    # (on a loaded machine the emulator's thread is behind) and the reads run before the move is there
    _handled(em, len(names))
    checked = queued = 0
    for k in range(30):
        sub = sorted(rng.choice(len(names), size=int(rng.integers(1, len(names) + 1)), replace=False))
        goal = {names[i]: float(rng.uniform(-0.4, 0.4)) for i in sub}
        n = em.frames_executed + len(goal)
        joints.command(goal, float(rng.choice([0.0, 0.02, 0.05, 0.3])))
        _handled(em, n)                                   # arrived at the clock's value, as the driver wrote it
        for _ in range(int(rng.integers(1, 5))):
            clock.t += float(rng.uniform(0.0, 0.03))
            queued += clock.t < joints.line_free        # the line still carries the move (line only)
            readings = joints.poll(1.0, max_reads=3)       # the emulator answers at the clock's value
            sp = joints.setpoints_at(readings)
            assert set(sp) == set(readings.positions) == set(readings.read_times)
            for j, s in sp.items():
                t_emu = next(t for t, sid, cmd, _ in reversed(em.rx_log) if sid == ids[j] and cmd == P.Cmd.POS_READ)
                assert em.now(readings.read_times[j]) == pytest.approx(t_emu, abs=1e-9)
                assert s == pytest.approx(em.commanded_position(j, t_emu), abs=1e-9)
                checked += 1
    assert checked > 50 and (queued > 5 or not joints.line_model)


def test_a_group_moves_servos_start_on_their_frames_last_byte_in_the_driver_and_the_emulator(line_rig):
    """An 18-servo MOVE_TIME_WRITE group write at 115200 8N1: servo j (in the write's order) has its move when its
    10-byte frame is through, (j + 1) x 0.868 ms after the first byte (reference §1: 15.6 ms for 18). The
    emulator executes each frame then (its ``rx_log``), the driver's set-points start each move then, and a read
    written meanwhile goes out after the move (its time: the line free plus its 6-byte request), its reply
    timeout counted from then (the emulator answers when the reply is through the line: 16.8 ms after the write)."""
    clock, em, joints, table = line_rig
    names = list(table.joint_names)
    joints.command({n: 0.0 for n in names}, 0.0)
    _handled(em, 18)
    clock.t += 1.0
    n0, t_write = len(em.rx_log), clock.t
    joints.command({n: 0.2 for n in names}, 0.1)
    _handled(em, n0 + 18)
    assert joints.bus.move_receipts(18)[-1] == pytest.approx(0.0156, abs=1e-4)
    frames = list(em.rx_log)[n0:n0 + 18]
    for j, (t, sid, cmd, _) in enumerate(frames):
        assert cmd == P.Cmd.MOVE_TIME_WRITE and sid == table[j].servo_id
        assert t == pytest.approx(em.now(t_write) + (j + 1) * 100 / 115200, abs=1e-9)
        s = joints.setpoints
        assert s.at(names[j], t_write + (j + 1) * 100 / 115200 - 1e-6) == pytest.approx(0.0, abs=1e-3)
        assert s.at(names[j], t_write + (j + 1) * 100 / 115200 + 0.05) == pytest.approx(0.1, abs=3e-3)
    joints.read_timeout = 0.004        # shorter than the wait for the line: the reply timeout starts after it
    readings = joints.poll(1.0, max_reads=1)
    (j, t_read), = readings.read_times.items()
    assert t_read == pytest.approx(t_write + 18 * 100 / 115200 + 60 / 115200, abs=1e-9)


def test_servo_setpoints_model_a_move_a_stop_and_a_joint_never_moved():
    sp = ServoSetpoints(["a", "b"])
    assert math.isnan(sp.at("a", 0.0))
    sp.move(1.0, {"a": 1.0}, 0.5)                  # first move: from its goal (where it was is unknown)
    assert sp.at("a", 1.2) == 1.0 and math.isnan(sp.at("b", 1.2))
    sp.move(2.0, {"a": 3.0}, 1.0)
    assert sp.at("a", 1.9) == 1.0 and sp.at("a", 2.5) == pytest.approx(2.0) and sp.at("a", 9.0) == 3.0
    sp.move(2.5, {"a": 0.0}, 0.5)                  # sent mid-move: from the set-point then
    assert sp.at("a", 2.75) == pytest.approx(1.0)
    sp.stop(2.6)
    assert sp.at("a", 5.0) == pytest.approx(1.6)
    assert sp.at_times({"a": 5.0}) == {"a": pytest.approx(1.6)}


def test_emulated_reads_carry_the_world_angle_forward_to_the_read_time():
    """With its rate and time a world angle is read where it is at the read (capped), without them as it was."""
    table = load_servo_table()
    clock = Clock()
    em = BusEmulator(table, time_fn=clock)
    j, spec = table[4].joint, table[4]
    s = em.servo(j)
    em.set_measured_positions({j: 0.2}, {j: 1.5}, t=em.now())
    for dt in (0.0, 0.004, 0.01, 1.0):
        want = 0.2 + 1.5 * min(dt, MAX_EXTRAPOLATION_S)
        assert spec.to_rad(s.physical(clock.t + dt)) == pytest.approx(want, abs=1e-9)
    em.set_measured_positions({j: 0.2})
    assert spec.to_rad(s.physical(clock.t + 0.01)) == pytest.approx(0.2, abs=1e-9)


def test_servo_set_point_rates_are_the_moves_slopes():
    """``ServoMoves.rate`` against a central difference of ``ServoMoves.at`` (the oracle), away from a move's
    start and end: the slope while a move runs, 0 once it is over or for a jump, NaN for a joint never moved."""
    rng = np.random.default_rng(11)
    moves = ServoMoves(4)
    t, h = 0.0, 1e-6
    for _ in range(40):
        idx = np.sort(rng.choice(3, size=int(rng.integers(1, 4)), replace=False))   # joint 3 never moves
        moves.command(t, idx, rng.uniform(-0.5, 0.5, idx.size), float(rng.choice([0.0, 0.02, 0.05])))
        for tt in t + rng.uniform(0.0, 0.06, 5):
            r = moves.rate(tt)
            assert np.isnan(r[3])
            near_kink = np.abs(tt - moves.t0) < 2 * h
            near_kink |= np.abs(tt - moves.t0 - moves.duration) < 2 * h
            fd = (moves.at(tt + h) - moves.at(tt - h)) / (2 * h)
            known = ~np.isnan(fd) & ~near_kink
            np.testing.assert_allclose(r[known], fd[known], atol=1e-6)
        t += float(rng.uniform(0.01, 0.06))


def test_reading_pairs_match_by_stamp_in_either_order_and_drop_the_unmatched():
    names = ["a", "b", "c"]
    rp = ReadingPairs(names, keep=2)
    assert rp.add(True, (1, 0), 1.0, ["a"], [0.5]) is None
    t, q, s = rp.add(False, (1, 0), 1.25, ["a", "c"], [0.4, 0.1])
    assert t == 1.25 and np.allclose(q[[0, 2]], [0.4, 0.1]) and np.isnan(q[1])
    assert s[0] == 0.5 and np.isnan(s[1:]).all()
    assert rp.add(False, (2, 0), 2.0, ["b"], [0.3]) is None
    t, q, s = rp.add(True, (2, 0), 2.1, ["b"], [0.35])
    assert t == 2.0 and q[1] == 0.3 and s[1] == 0.35
    for k in range(3, 6):
        rp.add(False, (k, 0), float(k), ["a"], [0.0])
    assert rp.unpaired == 1 and rp.pairs == 2
    assert rp.add(True, (3, 0), 3.0, ["a"], [0.0]) is None       # its twin was dropped: waits, never paired


def _streams_with_partial_reads(cfg, per_message=3, lag=0.0):
    """The plant's streams as the running graph has them: each joints sample carries ``per_message`` joints in
    turn (the bus reads a few servos per cycle), read in whole ticks (0.24 deg, the servo's resolution: give
    ``cfg`` no joint noise of its own), with each one's set-point at that reading (the oracle: the commands
    replayed at their true times, the engine's own interpolation). ``lag`` [s]: the set-points given are the
    servos' own shifted by it, as if the servos ran every move that long after the time the driver gave it (a
    starved emulator or driver thread; negative: before)."""
    from jethexa_dynamics.sim.streams import walk_streams

    streams, eng = walk_streams(cfg)
    moves = ServoMoves(eng.nj)
    k, out = 0, []
    for t, kind, payload in streams:
        if kind == "cmd":
            moves.command(t - lag, payload[2], payload[0], payload[1])
            out.append((t, kind, payload))
        elif kind == "joints":
            q = np.full(eng.nj, np.nan)
            s = np.full(eng.nj, np.nan)
            idx = [(k + i) % eng.nj for i in range(per_message)]
            k += per_message
            q[idx] = np.round(payload[idx] / TICK) * TICK
            s[idx] = moves.at(t)[idx]
            out.append((t, kind, (q, s)))
        else:
            out.append((t, kind, payload))
    return out


def _feed(est, streams, command_delay=0.0, with_setpoints=True):
    """The streams in time order, the commands ``command_delay`` s late."""
    late = sorted(((t + command_delay if kind == "cmd" else t), n, kind, p) for n, (t, kind, p) in enumerate(streams))
    for t, _, kind, p in late:
        if kind == "cmd":
            est.on_command(t, p[0], t + p[1], joints=p[2])
        elif kind == "joints":
            est.on_joints(t, p[0], p[1] if with_setpoints else None)
        else:
            est.on_imu(t, *p)
    return est.estimate()


def test_set_points_at_the_readings_give_the_body_despite_late_commands_and_partial_reads():
    """Body +25 %, CoM +1 cm; 3 of 18 joints per joint_states message, in whole ticks; the commands timed 5 ms
    late (received by another node than the one that sent them). With each reading's set-point the body settles
    within 10 % and 5 mm after 30 s; from the late commands alone it does not (the failure this input removes)."""
    from jethexa_dynamics.sim.streams import Segment, WalkConfig

    cfg = WalkConfig(duration=31.0, segments=[Segment(0.0, "walk", (0.05, 0.0, 0.0))], mass_scale=1.25,
                     body_com_offset=(0.01, 0.0, 0.0), seed=1, joint_noise=0.0)
    streams = _streams_with_partial_reads(cfg)
    truth = BodyLoadEstimator().body_mass_model * 1.25
    good = _feed(BodyLoadEstimator(), streams, command_delay=0.005)
    bad = _feed(BodyLoadEstimator(), streams, command_delay=0.005, with_setpoints=False)
    assert abs(good.mass - truth) <= 0.10 * truth and np.linalg.norm(good.com[:2] - [0.01, 0.0]) <= 0.005, good
    assert abs(bad.mass - truth) > 0.10 * truth or np.linalg.norm(bad.com[:2] - [0.01, 0.0]) > 0.005, bad


@pytest.mark.parametrize("lag", [-0.003, 0.0, 0.004])
def test_moves_run_off_the_given_set_points_are_fitted_from_the_horizontal_force_balance(lag):
    """Body +25 %, CoM +1 cm; the servos ran their moves ``lag`` s off the set-points given (the graph's moves on
    a loaded machine: the emulated servo acts when its thread reads the frame). The feet's horizontal forces
    must sum to zero over the window; the lag that makes them do so is found to within 1.5 ms and the body
    settles within 10 % and 5 mm. Without the fit (``fit_lag=False``) the estimate misses those bounds (the
    oracle: the plant's body); on time, the fit stays near 0 and the estimate as good. Reads at 250 Hz: every
    phase of the 20 ms moves is read."""
    from jethexa_dynamics.sim.streams import Segment, WalkConfig

    cfg = WalkConfig(duration=31.0, segments=[Segment(0.0, "walk", (0.05, 0.0, 0.0))], mass_scale=1.25,
                     body_com_offset=(0.01, 0.0, 0.0), seed=1, joint_noise=0.0, joint_rate=250.0)
    streams = _streams_with_partial_reads(cfg, lag=lag)
    fitted = _feed(BodyLoadEstimator(), streams)
    blind = _feed(BodyLoadEstimator(fit_lag=False), streams)
    truth = BodyLoadEstimator().body_mass_model * 1.25
    assert abs(fitted.lag - lag) <= 0.0015, fitted
    assert abs(fitted.mass - truth) <= 0.10 * truth and np.linalg.norm(fitted.com[:2] - [0.01, 0.0]) <= 0.005, fitted
    blind_ok = abs(blind.mass - truth) <= 0.10 * truth and np.linalg.norm(blind.com[:2] - [0.01, 0.0]) <= 0.005
    assert blind.lag == 0.0 and blind_ok == (lag == 0.0), blind


def _commanded_by_hand(moves, t, rest):
    """The servo's commanded trajectory [ticks] at ``t`` from the moves sent to it, ``[(t0, target, duration)]``
    in the order sent, from ``rest``: each runs linearly from where the one before was at its ``t0``."""
    t0, start, target, duration = -math.inf, rest, rest, 0.0

    def at(t, t0, start, target, duration):
        return target if duration <= 0 or t >= t0 + duration else start + (target - start) * (t - t0) / duration
    for m0, m_target, m_duration in moves:
        if m0 > t:
            break
        t0, start, target, duration = m0, at(m0, t0, start, target, duration), m_target, m_duration
    return at(t, t0, start, target, duration) if t >= t0 else start


def test_the_exact_world_follows_the_servos_commanded_trajectories_as_they_were():
    """``follow_commanded``: moves land on the emulated servos between two world updates, each servo on its own
    instant (as the frames of a group write on the robot's line, up to 15.6 ms ahead of the world) and mid-move
    too; after every stretch the engine ran (cut at each kink), its set-points are the servos' commanded
    trajectories at that time. The oracle is the moves sent, by hand (``_commanded_by_hand``): a servo that kept
    only its last move held that move's start over the stretches before it began (the world then jumped, up to
    83 mrad a step)."""
    from jethexa_dynamics.hardware.emulator import follow_commanded
    from jethexa_dynamics.model import LeggedRobot
    from jethexa_dynamics.sim.engine import Engine

    eng = Engine(LeggedRobot.jethexa(), gait=None, record_every=0)
    eng.step(0)
    names = list(eng.robot.joint_names)
    clock = Clock()
    table = load_servo_table()
    em = BusEmulator(table, time_fn=clock)
    q0 = eng.joint_angles
    em.set_positions(dict(zip(names, map(float, q0))))
    rest = [float(em.servo(n).target) for n in names]
    offset = em.now() - eng.time
    seen, sent = [], [[] for _ in names]

    class Spy:
        """The engine, its set-points noted after every advance."""
        time = property(lambda self: eng.time)
        dt = eng.dt

        def setpoints(self):
            return eng.setpoints()

        def set_joint_targets(self, *a, **kw):
            eng.set_joint_targets(*a, **kw)

        def advance(self, t):
            eng.advance(t)
            seen.append((eng.time, eng.setpoints()))

    rng = np.random.default_rng(2)
    checked = 0
    for k in range(60):
        target = eng.time + 0.016 * (1 + int(rng.integers(0, 2)))
        n_writes = int(rng.integers(0, 4))
        first = eng.time + rng.uniform(0.0, target - eng.time - 0.004 * n_writes)
        for t_write in first + 0.004 * np.arange(n_writes):   # group writes ahead of the world, in order,
            ms = int(rng.choice([0, 20, 30, 50]))                 # each servo's frame on its own instant
            for j, i in enumerate(rng.choice(len(names), size=6, replace=False)):
                t_move = t_write + 0.0005 * j
                ticks = table.by_joint(names[i]).to_ticks(float(q0[i] + rng.uniform(-0.1, 0.1)))
                em.servo(names[i]).move(ticks, ms, em._abs(t_move + offset))
                sent[i].append((t_move, float(em.servo(names[i]).target), ms / 1000.0))
        clock.t = em._abs(target + offset)
        del seen[:]
        follow_commanded(em, Spy(), dict(enumerate(names)), target, offset)
        for t, s in seen:
            want = [table.by_joint(n).to_rad(_commanded_by_hand(sorted(sent[i]), t, rest[i]))
                    for i, n in enumerate(names)]
            np.testing.assert_allclose(s, want, rtol=0, atol=1e-7, err_msg="update %d at %.4f s" % (k, t))
            checked += 1
    assert checked >= 400


def test_standing_before_the_walk_does_not_bias_the_body():
    """The graph's estimate runs from start-up: 15 s standing (the servos' integral takes up the load there, unseen
    by the estimator), then 30 s of walking. Body +25 %, CoM +1 cm, 3 of 18 joints per message in whole ticks:
    within 10 % and 5 mm of the plant's body. The samples of the standing are not between two swings of their
    leg, so they are not used (with them, the swings' baseline measured while walking was taken for theirs)."""
    from jethexa_dynamics.sim.streams import Segment, WalkConfig

    cfg = WalkConfig(duration=45.5, segments=[Segment(0.0, "stand"), Segment(15.0, "walk", (0.05, 0.0, 0.0))],
                     mass_scale=1.25, body_com_offset=(0.01, 0.0, 0.0), seed=1, joint_noise=0.0)
    est = BodyLoadEstimator()
    e = _feed(est, _streams_with_partial_reads(cfg))
    truth = est.body_mass_model * 1.25
    assert abs(e.mass - truth) <= 0.10 * truth and np.linalg.norm(e.com[:2] - [0.01, 0.0]) <= 0.005, e


def _pipeline(phase_of, duration=30.5, settle=3.0, line=False, period=20, sync_start=False):
    """The graph's data path on a clock the test moves (1 ms steps): the gait's commands at 50 Hz through the
    joint layer and the pty to the emulated servos, the emulator's exact world (``follow_commanded``, brought up
    to each transaction's arrival by ``before_bytes``) on a plant with its body +25 % and CoM +1 cm, 3 reads per
    cycle at ``phase_of(rng)`` ms into it with each read's set-point (``setpoints_at``), the commands (the swing
    phase's commanded feet) and the IMU's attitude at 100 Hz: into ``BodyLoadEstimator``, as damage_monitor feeds
    it, each sample at its reads' mean instant (servo_driver's stamp). ``line``: the robot's 115200 baud line
    modelled on both sides (``line_rate``, ``line_model``); ``period`` [ms] the commands' (each a move of that
    long); ``sync_start`` the moves started together (MOVE_START). Returns its estimate and the plant's body mass."""
    import threading

    from jethexa_dynamics.hardware.emulator import follow_commanded
    from jethexa_dynamics.model.se3 import rot_to_quat
    from jethexa_dynamics.sim.closed_loop import GaitLoop
    from jethexa_dynamics.sim.engine import Engine
    from jethexa_dynamics.sim.streams import scaled_body_robot

    plant = scaled_body_robot(1.25, (0.01, 0.0, 0.0))
    eng = Engine(plant, gait=None, record_every=0)
    eng.step(0)
    loop = GaitLoop.build(engine=eng)
    names = list(eng.robot.joint_names)
    index = {n: i for i, n in enumerate(names)}
    table, clock = load_servo_table(), Clock()
    em = BusEmulator(table, time_fn=clock, line_rate="auto" if line else None).start()
    em.set_positions(dict(zip(names, map(float, eng.joint_angles))))
    joints = JointServoBus(open_bus("uart", em.port, reply_timeout=0.5, sync_start=sync_start), table,
                           read_timeout=0.5, time_fn=clock, line_model=line)
    offset, lock = em.now() - eng.time, threading.Lock()

    def world(t=None):                 # the robot_emulator's world: up to the arrival, reads carried from there
        with lock:
            if em.now(t) - offset - eng.time >= eng.dt:
                follow_commanded(em, eng, dict(enumerate(names)), em.now(t) - offset, offset)
            em.set_measured_positions(dict(zip(names, map(float, eng.joint_angles))),
                                      dict(zip(names, map(float, eng.joint_rates))), eng.time + offset)
    em.before_bytes = world
    est, rng = BodyLoadEstimator(), np.random.default_rng(1)
    loop.walker.set_command((0.05, 0.0, 0.0))
    try:
        joints.command(dict(zip(names, map(float, eng.joint_angles))), 0.0)
        phase = 0
        for ms in range(int(round((duration + settle) * 1000))):
            clock.t = 100.0 + 1e-3 * ms
            if ms % period == 0:
                cmd, q, move_time = loop.command(period / 1000.0, ms >= 1000 * settle)
                if len(cmd):
                    n = em.frames_executed + len(cmd) + int(sync_start)
                    joints.command(dict(zip(cmd, map(float, q))), move_time)
                    _handled(em, n)                                     # executed before the clock moves on
                    est.on_command(clock.t, np.asarray(q, float), clock.t + move_time, [index[j] for j in cmd])
            if ms % 20 == 0:
                phase = phase_of(rng)
            if ms % 10 == 0:
                world()
                est.on_imu(clock.t, rot_to_quat(eng.R))
            if ms % 20 == phase:
                readings = joints.poll(1.0, max_reads=3)
                sp = joints.setpoints_at(readings)
                q, s = np.full(len(names), np.nan), np.full(len(names), np.nan)
                for j, v in readings.positions.items():
                    q[index[j]], s[index[j]] = v, sp[j]
                # stamped at the reads' mean instant, as servo_driver does (behind a move: after the clock's)
                est.on_joints(float(np.mean(list(readings.read_times.values()))), q, s)
    finally:
        joints.close()
        em.stop()
    return est.estimate(), float(plant.description.body_mass)


@pytest.mark.slow
@pytest.mark.parametrize("start", [0.0, 0.2, 0.4, 0.6, 0.8, None],
                         ids=["dithered from 0.0", "dithered from 0.2", "dithered from 0.4", "dithered from 0.6",
                              "dithered from 0.8", "locked"])
def test_the_graphs_data_path_gives_the_body_with_reads_dithered_not_locked_to_the_commands(start):
    """The whole path from the gait's commands to the estimate, deterministic (``_pipeline``), 3 s standing then
    30 s walking: with each cycle's reads delayed by the servo driver's dither (``read_dither``: the golden-ratio
    sequence, here from 5 starts) the body settles within 10 % and 5 mm of the plant's; with the reads where the
    commands are written (locked in phase: each read sees the same instant of every move) it does not. (One
    case per start, so that parallel workers share them.)"""
    from jethexa_dynamics.hardware.joints import READ_DITHER_STEP

    def dither(start):
        state = [start]

        def phase(rng):
            state[0] = (state[0] + READ_DITHER_STEP) % 1.0
            return int(20 * state[0])
        return phase
    if start is None:
        locked, truth = _pipeline(lambda rng: 0)
        assert abs(locked.mass - truth) > 0.10 * truth or np.linalg.norm(locked.com[:2] - [0.01, 0.0]) > 0.005, \
            locked
        return
    dithered, truth = _pipeline(dither(start))
    assert abs(dithered.mass - truth) <= 0.10 * truth, (start, dithered)
    assert np.linalg.norm(dithered.com[:2] - [0.01, 0.0]) <= 0.005, (start, dithered)


@pytest.mark.slow
@pytest.mark.parametrize("period", [20, 40], ids=["50 Hz", "25 Hz"])
def test_on_the_robots_line_the_body_settles_with_the_servos_own_moves(period):
    """The same data path with the robot's 115200 baud line on both sides (an 18-servo write takes 15.6 ms of the
    20 ms cycle; a read waits behind it), each servo starting its move on its own frame's last byte (Hiwonder's
    MOVE_TIME_WRITE, no ``sync_start``), the commands at 50 and at 25 Hz: the body settles within 10 % and 5 mm.
    The world here runs ahead of nothing: it asks the servos for their trajectories as they were, frames executed
    up to 15.6 ms before it (an emulator that kept only each servo's last move read the mass +40-44 %)."""
    from jethexa_dynamics.hardware.joints import READ_DITHER_STEP

    def dither():
        state = [0.0]

        def phase(rng):
            state[0] = (state[0] + READ_DITHER_STEP) % 1.0
            return int(20 * state[0])
        return phase
    est, truth = _pipeline(dither(), line=True, period=period)
    assert abs(est.mass - truth) <= 0.10 * truth, est
    assert np.linalg.norm(est.com[:2] - [0.01, 0.0]) <= 0.005, est


def test_a_read_whose_instant_is_uncertain_gets_no_set_point_and_is_not_used(rig):
    """A position read whose round trip exceeds its wire time by more than 1 ms (the OS or the servo held it up)
    gets no set-point from the driver; the estimator, given set-points, does not use a reading without one."""
    from jethexa_dynamics.hardware.joints import JointReadings

    clock, em, joints, table = rig
    a, b = table[0].joint, table[1].joint
    joints.command({a: 0.1, b: 0.1}, 0.0)
    wire = joints.bus.read_time("position")
    r = JointReadings(stamp=clock.t, positions={a: 0.1, b: 0.1}, read_times={a: clock.t, b: clock.t},
                      read_spans={a: wire + 0.0009, b: wire + 0.0011})
    assert set(joints.setpoints_at(r)) == {a}
    est = BodyLoadEstimator()
    q, s = np.zeros(18), np.zeros(18)
    s[1] = np.nan
    est.on_imu(0.0, (1.0, 0.0, 0.0, 0.0))
    est.on_joints(0.0, q, s)
    assert np.isnan(est._e[1]) and not np.isnan(est._e[0])
