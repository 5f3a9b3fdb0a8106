"""Simulation engine: statics (weight balance, CoM over the centre of pressure), energy, IMU signals,
servo-target mode, morphology changes mid-run, and time-step convergence (the implicit PID D-term makes
dt = 1 ms agree with 0.25 ms). Durations are short (0.5-2 s): the checked quantities settle within them."""
import sys

import numpy as np
import pytest

from jethexa_dynamics.control.pid import JointPID
from jethexa_dynamics.model import LeggedRobot
from jethexa_dynamics.sim.engine import Engine, SimulationError

G = 9.81


@pytest.fixture(scope="module")
def robot():
    return LeggedRobot.jethexa()


def _standing(robot, **kw):
    return Engine(robot, gait=None, record_every=10, **kw)


def test_standing_weight_balance_and_settling(robot):
    e = _standing(robot)
    tr = e.run(1.5)
    fz = tr.foot_forces[:, :, 2]
    late = tr.t > 1.0
    assert fz[late].sum(axis=1) == pytest.approx(robot.total_mass * G, rel=2e-3)   # sum of normal forces = weight
    assert np.abs(tr.twist[late]).max() < 2e-3                                     # settled
    assert tr.contact[late].all()
    # moment balance: the whole-body CoM lies above the centre of pressure
    in_c, f = e.contact_state()
    feet, _ = e.foot_states()
    cop = (f[:, 2:3] * feet[:, :2]).sum(axis=0) / f[:, 2].sum()
    assert cop == pytest.approx(e.center_of_mass()[:2], abs=2e-4)
    # tangential forces cancel (no horizontal acceleration)
    assert np.abs(f[:, :2].sum(axis=0)).max() < 0.02
    # feet sink by weight / k_z on average (Table III spring), hips at the commanded height above them
    assert tr.col("depth")[-1].mean() == pytest.approx(robot.total_mass * G / 6 / 10000.0, rel=0.05)


def test_imu_at_rest_and_in_free_fall(robot):
    e = _standing(robot)
    e.run(1.0)
    gyro, acc = e.imu()
    assert gyro == pytest.approx(np.zeros(3), abs=2e-3)
    assert acc == pytest.approx(e.R.T @ [0, 0, G], abs=2e-2)           # specific force = -g at rest
    # rigid free fall (no contact, no torques, at rest): the accelerometer reads zero
    f = Engine(robot, gait=None, pid=JointPID(18, 0, 0, 0, 3.4))
    f.p[2] += 10.0                                                   # feet 10 m above the ground
    f.step(20)
    gyro, acc = f.imu()
    assert acc == pytest.approx(np.zeros(3), abs=1e-9) and gyro == pytest.approx(np.zeros(3), abs=1e-12)


def _energy_run(robot, lift, seconds, seed=0, dt=1e-3, every=0.01):
    """Total and internal (CoM-frame) energy every ``every`` s, PID off, random initial velocities."""
    e = Engine(robot, gait=None, dt=dt, pid=JointPID(18, 0.0, 0.0, 0.0, 3.4), record_every=0)
    e.p[2] += lift
    rng = np.random.default_rng(seed)
    e.v[:6] = rng.normal(0, 0.3, 6)
    e.v[6:] = rng.normal(0, 1.0, 18)
    m = robot.total_mass
    E, Eint = [], []
    for k in range(int(round(seconds / every)) + 1):
        if k:
            e.advance(e.time + every)
        ke, pe = e.energy()
        P = robot.mass_matrix(e.theta)[:3] @ e.v          # linear momentum (base_link axes)
        E.append(ke + pe)
        Eint.append(ke - P @ P / (2 * m))
    return np.array(E), np.array(Eint), e


def test_no_energy_gain_feet_in_the_air_pid_off(robot):
    seconds = 0.5
    E, Eint, e = _energy_run(robot, lift=10.0, seconds=seconds, every=seconds)
    # the relative motion of a free-falling robot conserves its internal (CoM-frame) energy; the only change
    # is the first-order integration error, which halves with dt (no energy source in the model)
    gain = Eint[-1] / Eint[0] - 1
    assert abs(gain) < 1e-3
    _, Eint2, _ = _energy_run(robot, lift=10.0, seconds=seconds, every=seconds, dt=5e-4)
    assert gain / (Eint2[-1] / Eint2[0] - 1) == pytest.approx(2.0, rel=0.15)
    # the total drifts only by semi-implicit Euler's known free-fall term -1/2 m g^2 dt t (a loss)
    drift = -0.5 * robot.total_mass * G ** 2 * e.dt * seconds
    assert E[-1] - E[0] == pytest.approx(drift, rel=0.05)


def test_contact_only_dissipates(robot):
    E, _, _ = _energy_run(robot, lift=0.0, seconds=0.5, seed=1)
    assert E.max() - E[0] < 1e-3          # the spring-damper and viscous friction never add energy
    assert E[-1] < E[0] - 0.01


def test_servo_targets_move_linearly_and_are_tracked(robot):
    e = _standing(robot)
    q0 = e.joint_angles
    goal = q0 + 0.1
    e.set_joint_targets(goal, move_time=0.5)
    e.advance(0.25)
    assert e.setpoints() == pytest.approx(q0 + 0.05, abs=1e-9)
    e.advance(1.2)
    assert e.setpoints() == pytest.approx(goal)
    assert e.joint_angles == pytest.approx(goal, abs=0.01)
    e.set_joint_targets([0.3], move_time=0.0, joints=[4])
    assert e.setpoints()[4] == 0.3 and e.setpoints()[5] == pytest.approx(goal[5])
    with pytest.raises(ValueError, match="targets must be finite"):
        e.set_joint_targets(np.full(18, np.nan))
    with pytest.raises(ValueError, match=r"move_time=-1 outside the allowed range \[0, 30\] s"):
        e.set_joint_targets(goal, move_time=-1)
    with pytest.raises(ValueError, match="scenario must be one of healthy, damage1, damage2"):
        e.set_morphology("damage3")
    with pytest.raises(ValueError, match="dt="):
        Engine(robot, dt=0.1)


def test_snapshot_restores_the_whole_dynamic_state_into_another_engine(robot):
    """What the damage identifier relies on: an engine restored from another's snapshot, mid-move and
    mid-walk (PID integrals, servo moves, clock), continues exactly as the original does, bit for bit; a
    state field the snapshot missed would make the two differ."""
    a, b = _standing(robot), _standing(robot)
    q0 = a.joint_angles
    a.set_joint_targets(q0 + 0.08, move_time=0.4)
    a.advance(0.23)
    b.advance(0.11)                     # b elsewhere in time and state
    snap = a.snapshot()
    b.restore(snap)
    a.set_joint_targets([0.2], move_time=0.1, joints=[7])
    b.set_joint_targets([0.2], move_time=0.1, joints=[7])
    ra, rb = a.advance(0.6), b.advance(0.6)
    assert a.time == b.time and np.array_equal(ra, rb) and np.array_equal(a.pid.integral, b.pid.integral)
    a.restore(snap)                     # the snapshot is a copy: running on did not change it
    assert a.time == pytest.approx(0.23) and np.array_equal(a.snapshot().state[2], snap.state[2])


def test_morphology_change_mid_walk(robot):
    e = Engine(robot, record_every=5)
    tr = e.run(1.6, morphology_at=(0.8, "damage1"))
    after = tr.t > 0.8 + 1e-9
    gone = np.r_[robot.leg_joint_index("LM"), robot.leg_joint_index("RM")]
    th = tr.col("theta")[after][:, gone]
    assert np.ptp(th, axis=0).max() == 0.0                       # removed joints frozen
    assert tr.col("thetadot")[after][:, gone].max() == 0.0 and tr.col("tau")[after][:, gone].max() == 0.0
    ff = tr.foot_forces[after][:, [robot.leg_names.index("LM"), robot.leg_names.index("RM")]]
    assert not ff.any()                                          # their feet left the contact set
    assert tr.events[-1][1:] == ("morphology", (3, 0, 3, 3, 0, 3))
    assert np.isfinite(tr.data).all()
    e.set_morphology({"RR": 1})
    assert e.morphology.links_per_leg == (3, 3, 3, 3, 3, 1)
    with pytest.raises(ValueError, match="unknown legs"):
        e.set_morphology({"XX": 1})


def test_time_step_convergence(robot):
    """The healthy walk at dt = 1 ms and 0.25 ms ends within a few mm / tenths of a degree."""
    ends = []
    for dt in (1e-3, 2.5e-4):
        e = Engine(robot, dt=dt, record_every=0)
        e.advance(1.3)
        ends.append((e.p.copy(), e.euler))
    assert ends[0][0] == pytest.approx(ends[1][0], abs=3e-3)
    assert np.rad2deg(ends[0][1]) == pytest.approx(np.rad2deg(ends[1][1]), abs=0.5)


def test_divergence_is_reported(robot):
    e = Engine(robot, gait=None, dt=5e-3, pid=JointPID(18, 1e5, 0.0, 0.0, 1e4), record_every=0)
    e.set_joint_targets(e.joint_angles + 0.1)      # explicit P-term with omega*dt >> 2 blows up
    with pytest.raises(SimulationError, match="simulation failed at t="):
        e.advance(1.0)


def test_closed_form_foot_states_equal_the_model_kernel(robot):
    """The loop's closed-form foot kinematics = the general POE ``kernels.tip_state`` (random states)."""
    from jethexa_dynamics.model import kernels
    from jethexa_dynamics.sim.engine import world_foot_states

    e = Engine(robot, gait=None, record_every=0)
    rng = np.random.default_rng(7)
    for _ in range(20):
        R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        R *= np.linalg.det(R)
        p, th, v = rng.normal(size=3), rng.uniform(-1.0, 1.0, 18), rng.normal(size=24)
        ref_p, ref_v = np.zeros((6, 3)), np.zeros((6, 3))
        kernels.tip_state(robot.kernel_data, R, p, th, v, ref_p, ref_v)
        pos, vel = np.zeros((6, 3)), np.zeros((6, 3))
        world_foot_states(e.geometry.geom, R, p, th, v, np.zeros(3), np.zeros(3), pos, vel)
        assert pos == pytest.approx(ref_p, abs=1e-12) and vel == pytest.approx(ref_v, abs=1e-12)


def test_the_compiled_loop_names_the_engines_own_arrays(robot):
    """``Engine._step_arrays`` hands the loop plain tuples in the order of the NamedTuples ``_run`` names them
    with: each name is the engine's array of that name (same-shaped arrays swapped would type-check)."""
    from jethexa_dynamics.sim.engine import (GaitArrays, JointControl, MorphologyArrays, ServoMoves, StepArrays,
                                             StepScratch, StepState)

    e = Engine(robot, gait="tripod", record_every=0)
    a = StepArrays(*e._step_arrays())
    st, g, moves = StepState(*a.state), GaitArrays(*a.gait), ServoMoves(*a.moves)
    ctl, morph, scr = JointControl(*a.control), MorphologyArrays(*a.morphology), StepScratch(*a.scratch)
    pid, gait = e.pid, e.gait
    pairs = [(a.data, robot.kernel_data),
             (st.R, e.R), (st.p, e.p), (st.theta, e.theta), (st.v, e.v), (st.pid_integral, pid.integral),
             (st.qprev, e.qprev), (st.qdes, e.qdes), (st.clock, e.clock),
             (g.prm, gait.prm), (g.offsets, gait.offsets), (g.neutral, gait.neutral), (g.stride, gait.stride),
             (g.geom, e.geometry.geom), (g.limits, e.geometry.limits),
             (ctl.kp, pid.kp), (ctl.ki, pid.ki), (ctl.kd, pid.kd), (ctl.tau_max, pid.tau_max),
             (ctl.active, pid.active), (ctl.follow, e.follow),
             (morph.mask, e.mask), (morph.legs_on, e.legs_on), (morph.has_tip, e.has_tip)]
    pairs += [(getattr(moves, f), getattr(e._moves, f)) for f in ServoMoves._fields]
    pairs += [(getattr(scr, f), getattr(e._scr, f)) for f in StepScratch._fields]
    assert [i for i, (x, y) in enumerate(pairs) if x is not y] == []
    np.testing.assert_array_equal(a.contact, e.contact.params)     # a property: a new array each time
    assert len(pairs) + 1 == len(StepArrays._fields) - 6 + sum(len(t._fields) for t in (
        StepState, GaitArrays, ServoMoves, JointControl, MorphologyArrays, StepScratch))


def test_imu_rotating_base_matches_the_rigid_body_formula(robot):
    """Spinning base with the IMU off the root: specific force = v̇ + W x V + Ẇ x r + W x (W x r) - R^T g."""
    e = Engine(robot, gait=None, record_every=0)
    e.imu_offset = np.array([0.03, -0.02, 0.05])
    rng = np.random.default_rng(11)
    for _ in range(10):
        e.v[:6] = rng.normal(0.0, 1.0, 6)
        e.step(3)
        vd, V, W, r = e._scr[7][:6], e.v[0:3], e.v[3:6], e.imu_offset
        ref = vd[0:3] + np.cross(W, V) + np.cross(vd[3:6], r) + np.cross(W, np.cross(W, r)) - e.R.T @ e.gravity
        gyro, acc = e.imu()
        assert np.abs(W).max() > 0.1 and gyro == pytest.approx(W, abs=0)
        assert acc == pytest.approx(ref, rel=1e-12, abs=1e-12)


@pytest.mark.serial          # compares a thread's rate with and without the GIL: needs a core of its own
def test_stepping_releases_the_gil(robot, monkeypatch):
    """The compiled loop is nogil: a Python thread keeps counting while one long ``step`` call is in progress.
    The reference is the same compiled work called through a wrapper that holds the GIL, where the counter
    stalls. No wall-time bound: the counter is compared with itself (its rate while the main thread sleeps),
    so the test means the same on a fast and a slow machine."""
    import threading
    import time

    from numba import njit

    from jethexa_dynamics.sim import engine as engine_mod

    nogil_run = engine_mod._run

    @njit(nogil=False)
    def gil_run(n, arrays, rec, every):
        return nogil_run(n, arrays, rec, every)

    e = Engine(robot, gait="tripod", record_every=0)
    e.step(1)                                                       # compile / load the cache first
    count, stop = [0], threading.Event()

    def counter():
        while not stop.is_set():
            count[0] += 1

    th = threading.Thread(target=counter, daemon=True)
    th.start()

    def rate(call):
        """Counter increments per second of wall time during ``call()`` (the clock only normalises)."""
        c0, t0 = count[0], time.perf_counter()
        call()
        return (count[0] - c0) / (time.perf_counter() - t0)

    try:
        free = rate(lambda: time.sleep(0.2))                        # the counter alone
        # size the step so one call lasts many GIL switch intervals on this machine (a measurement, not a bound)
        n = 2000
        while True:
            t0 = time.perf_counter()
            e.step(n)
            if time.perf_counter() - t0 > 40 * sys.getswitchinterval() or n >= 512000:
                break
            n *= 2
        released = rate(lambda: e.step(n))
        monkeypatch.setattr(engine_mod, "_run", gil_run)
        e.step(1)                                                   # compile the wrapper outside the measurement
        held = rate(lambda: e.step(n))
    finally:
        stop.set()
        th.join()
    # with the GIL released the counter keeps running (two cores: it can have one to itself);
    # with the GIL held it only runs at the call's edges (at most a switch interval each)
    # (loose bounds: on a loaded machine the counter shares its core; what matters is released >> held)
    assert released > 0.05 * free, (released, free)
    assert held < 0.2 * free, (held, free)
    assert released > 4 * held, (released, held)


def test_kernel_cpu_counts_the_calling_threads_cpu_inside_the_compiled_steps_of_every_engine(robot):
    """KERNEL_CPU (credited to a process capped at one core in bench_nano_budget): the calling thread's CPU time
    of each ``step``, summed over engines and threads; a thread that does not step adds nothing."""
    import threading
    import time

    from jethexa_dynamics.sim.engine import KERNEL_CPU

    a, b = _standing(robot), _standing(robot)
    a.step(10)                                  # compiled and warm
    k0, c0 = KERNEL_CPU.total, time.thread_time()
    a.step(300)
    b.step(300)
    k1, c1 = KERNEL_CPU.total, time.thread_time()
    assert 0.0 < k1 - k0 <= c1 - c0             # inside this thread's CPU over the calls
    other = threading.Thread(target=lambda: b.step(200))
    other.start()
    other.join()
    k2 = KERNEL_CPU.total
    assert k2 > k1                              # another thread's steps count too
    assert KERNEL_CPU.status_values() == [("process_kernel_cpu_s", k2)]
