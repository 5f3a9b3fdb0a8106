"""The simulation engine (paper Sec. VI-A): fixed-step gait -> IK -> PID -> contact -> dynamics -> SE(3).

One step of length dt (s), all compiled (numba) and run in chunks of many steps per Python call:

1. joint targets: the gait generator + closed-form IK (``control.gait``), or external servo commands
   (goal + move time, linear interpolation from the current set-point, like a Hiwonder bus servo);
2. joint torques: PID with saturation and anti-windup (``control.pid``);
3. foot forces: world-frame foot positions/velocities (closed-form leg kinematics, ``world_foot_states``; equal to
   ``model.kernels.tip_state``, which the tests check) -> Table III contact law (``sim.contact``);
4. dynamics: v̇ from the modular Boltzmann-Hamel equations on the FULL state with the link mask
   (``model.kernels``; missing joints get zero acceleration), the PID's D-term taken implicitly through
   ``joint_diag`` = dt K_D: (M + dt K_D) v̇ = τ(v_n) + 𝒥ᵀF - Cv - 𝒩 (explicit K_D = 1 is unstable at
   dt = 1 ms: the smallest joint-space inertia of the free-floating JetHexa is ~2.3e-4 kg m^2);
5. integration, semi-implicit (symplectic) Euler on the Lie group: v <- v + v̇ dt, θ <- θ + θ̇ dt,
   g_sb <- g_sb exp(V^ dt) (``model.kernels.se3_step``).

State: ``g_sb`` (base_link pose in the world, z up), θ (rad, full healthy size, leg-major), v = [V_b (base
twist in base_link, [v; w]), θ̇]. The morphology (the paper's link/leg existence vectors) can change between
any two steps: the mask changes, rates of removed joints are zeroed, their PID integrators reset, and feet
that are gone leave the contact set.

The compiled loop ``_run`` works on the engine's arrays in place, grouped by the NamedTuples ``StepArrays``
(``StepState``, ``GaitArrays``, ``ServoMoves``, ``JointControl``, ``MorphologyArrays``, ``StepScratch``). Recorded
rows and the CSV: ``sim.trajectory``, ``sim.csv_writer``.
"""
import math
import threading
import time
from typing import NamedTuple, Tuple

import numpy as np
from numba import njit
from transforms3d.euler import euler2mat, mat2euler

from jethexa_dynamics.control.gait import Gait, gait_joint_targets
from jethexa_dynamics.control.ik import LegGeometry, leg_fk_vel
from jethexa_dynamics.control.pid import JointPID, pid_torques
from jethexa_dynamics.hardware.protocol import MAX_MOVE_TIME_S
from jethexa_dynamics.model import LeggedRobot, Morphology, kernels
from jethexa_dynamics.model.se3 import cross3
from jethexa_dynamics.model.com import center_of_mass

from .contact import ContactModel, contact_forces
from .trajectory import R_P, R_R, R_T, R_V, Trajectory, record_layout, record_row

# clock layout: [step index, dt (s), gait start time (s), mode]
K_STEP, K_DT, K_GAIT_T0, K_MODE = range(4)
MODE_GAIT, MODE_EXTERNAL = 0, 1


class StepState(NamedTuple):
    """What a step changes: base_link rotation R (3, 3) and position p (m) in the world, joint angles theta
    (rad), v = [base twist in base_link; joint rates], the PID integrals, the previous gait targets (rad, for
    their rates), the joint set-points qdes (rad) and the clock (``K_STEP``, ``K_DT``, ``K_GAIT_T0``, ``K_MODE``)."""
    R: np.ndarray
    p: np.ndarray
    theta: np.ndarray
    v: np.ndarray
    pid_integral: np.ndarray
    qprev: np.ndarray
    qdes: np.ndarray
    clock: np.ndarray


class GaitArrays(NamedTuple):
    """The gait generator's and the IK's arrays (``control.gait.gait_joint_targets``' inputs)."""
    prm: np.ndarray
    offsets: np.ndarray
    neutral: np.ndarray
    stride: np.ndarray
    geom: np.ndarray
    limits: np.ndarray


class ServoMoves(NamedTuple):
    """Per joint, the servo move of external-target mode: from ``start`` to ``goal`` (rad), starting at ``t0``
    (s) and lasting ``duration`` (s; 0: at the goal)."""
    start: np.ndarray
    goal: np.ndarray
    t0: np.ndarray
    duration: np.ndarray


class JointControl(NamedTuple):
    """The joint PID (gains, torque limits, servos powered) and ``follow``: 1 where a joint is silently broken
    (its servo answers, its link is out of the dynamics; the joint tracks its set-point unloaded)."""
    kp: np.ndarray
    ki: np.ndarray
    kd: np.ndarray
    tau_max: np.ndarray
    active: np.ndarray
    follow: np.ndarray


class MorphologyArrays(NamedTuple):
    """The morphology as the loop uses it: the link mask of the dynamics (n_legs, n_max), the legs the gait
    moves and the feet that touch the ground (1.0 / 0.0 per leg)."""
    mask: np.ndarray
    legs_on: np.ndarray
    has_tip: np.ndarray


class StepScratch(NamedTuple):
    """Work arrays of a step, holding the last step's values after it: gait foot targets (n_legs, 3), joint
    rate targets, generalized forces tau (base 6 + joints, N·m), world foot forces (N), penetration depths
    (m), world foot positions and velocities, v̇, the implicit D-term's diagonal, and two 3-vectors of leg
    kinematics."""
    feet: np.ndarray
    qd_des: np.ndarray
    tau: np.ndarray
    force: np.ndarray
    depth: np.ndarray
    foot_pos: np.ndarray
    foot_vel: np.ndarray
    vdot: np.ndarray
    joint_diag: np.ndarray
    rel: np.ndarray


class StepArrays(NamedTuple):
    """Everything ``_run`` reads and writes: the model arrays (``LeggedRobot.kernel_data``), the groups above
    and the contact law's parameters (``ContactModel.params``)."""
    data: tuple
    state: StepState
    gait: GaitArrays
    moves: ServoMoves
    control: JointControl
    contact: np.ndarray
    morphology: MorphologyArrays
    scratch: StepScratch


@njit(cache=True)
def world_foot_states(geom, R, p, theta, v, rel_p, rel_v, pos_out, vel_out):
    """World-frame foot positions/velocities (n_legs, 3) from the closed-form leg kinematics:
    p_w = p + R p_b,  v_w = R (V_v + V_w x p_b + ṗ_b)  (same values as ``kernels.tip_state``)."""
    for i in range(geom.shape[0]):
        leg_fk_vel(geom[i], theta[3 * i:3 * i + 3], v[6 + 3 * i:9 + 3 * i], rel_p, rel_v)
        wx = v[4] * rel_p[2] - v[5] * rel_p[1]
        wy = v[5] * rel_p[0] - v[3] * rel_p[2]
        wz = v[3] * rel_p[1] - v[4] * rel_p[0]
        bx = v[0] + wx + rel_v[0]
        by = v[1] + wy + rel_v[1]
        bz = v[2] + wz + rel_v[2]
        for r in range(3):
            pos_out[i, r] = p[r] + R[r, 0] * rel_p[0] + R[r, 1] * rel_p[1] + R[r, 2] * rel_p[2]
            vel_out[i, r] = R[r, 0] * bx + R[r, 1] * by + R[r, 2] * bz


class KernelCpu:
    """CPU time [s] the threads of this process spent inside ``_run`` (every Engine's, summed; ``time.thread_time``
    of the calling thread around each call). ``_run`` holds no interpreter lock, so on a multi-core computer (the
    Jetson Nano's four cores) it runs beside the process's Python: the benchmarks credit it, with the native
    threads' CPU, to a process capped at the one core its Python can use (``benchmarks/bench_nano_budget.py``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0.0

    def add(self, seconds: float) -> None:
        with self._lock:           # several threads step engines (the predictor's, the identifier's bank)
            self.total += seconds

    def status_values(self):
        """The node status's ``process_kernel_cpu_s`` (a ``ThinNode.status_sources`` entry)."""
        return [("process_kernel_cpu_s", self.total)]


#: this process's CPU time inside the compiled stepping kernel (``KernelCpu``)
KERNEL_CPU = KernelCpu()


# nogil: a chunk of steps releases the GIL, so other threads (the bus emulator's) answer while the world steps
@njit(cache=True, nogil=True)
def _run(n_steps, arrays, rec, rec_every):
    """Advance the engine by n_steps fixed steps: ``arrays`` is ``Engine._step_arrays()``, changed in place;
    a row into ``rec`` (``sim.trajectory.record_layout``) every ``rec_every`` steps of the clock. Returns (steps
    done, rows recorded, status).

    status: 0 ok, 1 the mass matrix was not positive definite, 2 the state became non-finite.
    """
    a = StepArrays(*arrays)
    st, gait, moves = StepState(*a.state), GaitArrays(*a.gait), ServoMoves(*a.moves)
    ctl, morph, scr = JointControl(*a.control), MorphologyArrays(*a.morphology), StepScratch(*a.scratch)
    # every array a local, bound once, and the step written out here: an array taken out of a tuple in the loop,
    # or handed to an inlined helper there, costs reference counting at each step (~1-2 % of the step)
    R, p, th, v, clk = st.R, st.p, st.theta, st.v, st.clock
    integral, qprev, qdes = st.pid_integral, st.qprev, st.qdes
    prm, offsets, neutral, stride, geom, limits = gait.prm, gait.offsets, gait.neutral, gait.stride, gait.geom, \
        gait.limits
    start, goal, t0, duration = moves.start, moves.goal, moves.t0, moves.duration
    kp, ki, kd, tau_max, active, follow = ctl.kp, ctl.ki, ctl.kd, ctl.tau_max, ctl.active, ctl.follow
    data, cprm, mask, legs_on, has_tip = a.data, a.contact, morph.mask, morph.legs_on, morph.has_tip
    feet, qd_des, tau, force, depth = scr.feet, scr.qd_des, scr.tau, scr.force, scr.depth
    foot_pos, foot_vel, vdot, joint_diag, rel = scr.foot_pos, scr.foot_vel, scr.vdot, scr.joint_diag, scr.rel
    nj, dt, mode = th.shape[0], clk[K_DT], clk[K_MODE]
    any_follow = False
    for j in range(nj):
        if follow[j] != 0.0:
            any_follow = True
    nrec = 0
    for k in range(n_steps):
        t = clk[K_STEP] * dt
        # 1. joint targets
        if mode == MODE_GAIT:
            tg = t - clk[K_GAIT_T0]
            if tg < 0.0:
                tg = 0.0
            gait_joint_targets(prm, offsets, neutral, stride, geom, limits, legs_on, tg, feet, qdes)
            for j in range(nj):
                qd_des[j] = (qdes[j] - qprev[j]) / dt if tg > 0.0 else 0.0
                qprev[j] = qdes[j]
        else:                                   # the servo moves: linear from start to goal over the duration
            for j in range(nj):
                if duration[j] > 0.0 and t < t0[j] + duration[j]:
                    s = (t - t0[j]) / duration[j]
                    if s < 0.0:
                        s = 0.0
                    qdes[j] = start[j] + s * (goal[j] - start[j])
                    qd_des[j] = (goal[j] - start[j]) / duration[j]
                else:
                    qdes[j] = goal[j]
                    qd_des[j] = 0.0
        # 2. PID on the joint rates v[6:]
        pid_torques(kp, ki, kd, tau_max, qdes, qd_des, th, v[6:], integral, active, dt, tau[6:])
        # implicit D-term (module docstring); a saturated joint has no damping to make implicit
        for j in range(nj):
            joint_diag[j] = dt * kd[j] if (tau[6 + j] < tau_max[j] and tau[6 + j] > -tau_max[j]) else 0.0
        # 3. contact
        world_foot_states(geom, R, p, th, v, rel[0], rel[1], foot_pos, foot_vel)
        contact_forces(cprm, foot_pos, foot_vel, has_tip, force, depth)
        # 4. dynamics
        if not kernels.forward_dynamics(data, R, th, v, tau, force, mask, vdot, joint_diag):
            return k, nrec, 1
        # 5. semi-implicit Euler on SE(3) x R^n
        for r in range(v.shape[0]):
            v[r] += vdot[r] * dt
        for j in range(nj):
            th[j] += v[6 + j] * dt
        # silently broken joints: the unloaded servo tracks its set-point (the link is out of the dynamics)
        if any_follow:
            for j in range(nj):
                if follow[j] != 0.0:
                    th[j] = qdes[j]
                    v[6 + j] = qd_des[j]
        kernels.se3_step(R, p, v[0:6], dt)
        clk[K_STEP] += 1.0
        if not (math.isfinite(p[0] + p[1] + p[2]) and math.isfinite(v[0] + v[3] + v[4] + v[5])):
            return k + 1, nrec, 2
        if rec.shape[0] > 0 and int(clk[K_STEP]) % rec_every == 0 and nrec < rec.shape[0]:
            record_row(rec[nrec], clk[K_STEP] * dt, R, p, v, th, qdes, tau, force, depth, foot_pos, vdot)
            nrec += 1
    return n_steps, nrec, 0


class SimulationError(RuntimeError):
    """The integration failed (diverged or singular mass matrix); the message names the time and cause."""


def _finite_vec(x, n, name):
    a = np.asarray(x, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError("%s must have %d values, got shape %s" % (name, n, a.shape))
    if not np.all(np.isfinite(a)):
        raise ValueError("%s must be finite (no NaN/inf), got %s" % (name, a))
    return a


class EngineState(NamedTuple):
    """:meth:`Engine.snapshot`: copies of ``Engine._state()`` (``StepState``: R, p, theta, v, PID integral, qprev,
    qdes, clock) and of the servo moves ``Engine._moves`` (``ServoMoves``: start, goal, start time, duration per
    joint)."""
    state: Tuple[np.ndarray, ...]
    ext: Tuple[np.ndarray, ...]


class Engine:
    """Fixed-step whole-body simulation of a hexapod with contact, gait/IK or servo targets, and PID.

    Parameters: ``robot`` healthy ``LeggedRobot`` (default: the bundled JetHexa); ``gait`` a ``Gait`` (default:
    the paper's tripod) or None for external joint targets (the emulated robot / predictor); ``dt`` step (s,
    default 1 ms); ``contact`` ``ContactModel``; ``pid`` ``JointPID`` (default paper gains, URDF effort as
    torque limit); ``morphology`` initial ``Morphology`` (or links-per-leg vector); ``settle`` seconds of
    standing before the gait starts; ``yaw0`` initial heading (rad); ``record_every`` record one row every
    this many steps (0: no recording).
    """

    def __init__(self, robot=None, gait="tripod", dt=1e-3, contact=None, pid=None, morphology=None, settle=0.0,
                 yaw0=0.0, record_every=1):
        self.robot = (robot or LeggedRobot.jethexa()).full
        r = self.robot
        if not (isinstance(dt, (int, float)) and math.isfinite(dt) and 1e-5 <= dt <= 5e-3):
            raise ValueError("dt=%r outside the allowed range [1e-05, 0.005] s" % (dt,))
        if not (math.isfinite(settle) and 0.0 <= settle <= 60.0):
            raise ValueError("settle=%r outside the allowed range [0, 60] s" % (settle,))
        if not (isinstance(record_every, int) and record_every >= 0):
            raise ValueError("record_every must be an integer >= 0, got %r" % (record_every,))
        self.dt = float(dt)
        self.geometry = LegGeometry.from_robot(r)
        if isinstance(gait, str):
            gait = Gait.paper_tripod(self.geometry) if gait == "tripod" else Gait(self.geometry, kind=gait,
                                                                                     step_length=0.05)
        if gait is not None and not isinstance(gait, Gait):
            raise ValueError("gait must be a Gait, a gait name (tripod, wave, ripple) or None, got %r" % (gait,))
        self.gait = gait
        self.contact = contact or ContactModel()
        nj = len(r.joint_names)
        self.nj = nj
        self.n_legs = len(r.leg_names)
        self.pid = pid or JointPID(nj, tau_max=np.asarray(r.joint_effort, dtype=np.float64))
        if self.pid.n != nj:
            raise ValueError("pid must control %d joints, got %d" % (nj, self.pid.n))
        self.record_every = record_every
        self._layout, self._ncols = record_layout(nj, self.n_legs)
        # world gravity of the model (m/s^2)
        self.gravity = np.asarray(r.kernel_data[kernels.D_GRAVITY], dtype=np.float64)
        # IMU mount (base_link -> imu_link), for the accelerometer's lever arm
        self.imu_offset = np.zeros(3)
        if r.urdf_model is not None:
            for j in r.urdf_model.joints:
                if j.child == "imu_link" and j.parent == "base_link":
                    self.imu_offset = np.asarray(j.origin_xyz, dtype=np.float64)
        # state
        self.R = euler2mat(0.0, 0.0, float(yaw0), "sxyz")
        self.p = np.zeros(3)
        self.theta = np.zeros(nj)
        self.v = np.zeros(6 + nj)
        self.qprev = np.zeros(nj)
        self.qdes = np.zeros(nj)
        self.clock = np.array([0.0, self.dt, float(settle), float(MODE_GAIT if gait is not None else MODE_EXTERNAL)])
        self._moves = ServoMoves(np.zeros(nj), np.zeros(nj), np.zeros(nj), np.zeros(nj))
        L = self.n_legs
        self._scr = StepScratch(feet=np.zeros((L, 3)), qd_des=np.zeros(nj), tau=np.zeros(6 + nj),
                                force=np.zeros((L, 3)), depth=np.zeros(L), foot_pos=np.zeros((L, 3)),
                                foot_vel=np.zeros((L, 3)), vdot=np.zeros(6 + nj), joint_diag=np.zeros(nj),
                                rel=np.zeros((2, 3)))
        # the same arrays as plain tuples for ``_step_arrays`` (never rebound, only changed in place)
        self._plain_moves, self._plain_scr = tuple(self._moves), tuple(self._scr)
        self._zero_gait = None
        self.events = []
        self.follow = np.zeros(nj)
        self.morphology = Morphology.healthy(r)
        self.breaks = Morphology.healthy(r)
        self._apply_morphology_arrays()
        self.reset_standing()
        if morphology is not None:
            self.set_morphology(morphology)
            self.events = []          # the initial morphology is not an event
        self.wall_time = 0.0

    # ---- set-up -------------------------------------------------------------------------------------------
    def _standing_gait(self):
        """The gait (or a zero-speed paper tripod stance when running on external targets)."""
        if self.gait is not None:
            return self.gait
        if self._zero_gait is None:
            self._zero_gait = Gait.paper_tripod(self.geometry, step_length=0.0)
        return self._zero_gait

    def reset_standing(self, height=None, time=None):
        """Put the robot at rest, upright (heading kept), with every foot on the ground in the gait's t = 0
        pose, hips ``height`` above the ground (default the gait's body height), targets held there. The
        clock keeps running unless ``time`` (s) is given."""
        g = self._standing_gait()
        th = g.joint_targets(0.0)
        self.theta[:] = th
        self.qprev[:] = th
        self.qdes[:] = th
        if time is not None:
            self.clock[K_STEP] = round(float(time) / self.dt)
        moves = self._moves
        moves.start[:] = th
        moves.goal[:] = th
        moves.t0[:] = self.time
        moves.duration[:] = 0.0
        self.v[:] = 0.0
        self.pid.reset()
        self.R[:] = euler2mat(0.0, 0.0, mat2euler(self.R, "sxyz")[2], "sxyz")
        feet = g.foot_targets(0.0)
        h = -feet[:, 2].max() if height is None else float(height)
        self.p[:] = (self.p[0], self.p[1], self.contact.ground_z + h)

    def snapshot(self) -> "EngineState":
        """A copy of the dynamic state (pose, joints, velocities, PID integrals, servo setpoints and their
        moves, clock), not the morphology: :meth:`restore` puts it back into this or another engine of the same
        robot (the damage identifier starts each hypothesis' model from the confirmed one's state)."""
        return EngineState(tuple(a.copy() for a in self._state()), tuple(a.copy() for a in self._moves))

    def restore(self, snap: "EngineState") -> None:
        """Set the dynamic state from :meth:`snapshot` (in place: the compiled kernels hold the arrays)."""
        for a, b in zip(self._state() + self._moves, snap.state + snap.ext):
            a[...] = b

    @property
    def body_morphology(self):
        """The links physically present: the servo-visible ``morphology`` minus the silent ``breaks``."""
        return Morphology.from_vector(self.robot, [min(a, b) for a, b in zip(self.morphology.links_per_leg,
                                                                             self.breaks.links_per_leg)])

    def _apply_morphology_arrays(self):
        """Dynamics (mass, contact) follow the body morphology; servos (PID, gait) the servo-visible one."""
        body = self.body_morphology
        self.mask = np.ascontiguousarray(body.link_mask, dtype=np.float64)
        n_joints = self.robot.description.n_joints
        self.has_tip = np.array([1.0 if k == n else 0.0 for k, n in zip(body.links_per_leg, n_joints)])
        # the gait skips removed legs
        self.legs_on = np.array([1.0 if k > 0 else 0.0 for k in self.morphology.links_per_leg])
        servo = self.morphology.link_mask
        self.pid.active[:] = np.concatenate([servo[i, :n] for i, n in enumerate(n_joints)])
        in_body = np.concatenate([self.mask[i, :n] for i, n in enumerate(n_joints)])
        self.follow[:] = (self.pid.active > 0) & (in_body == 0)

    def set_morphology(self, morphology):
        """Change the morphology now (any time, also mid-walk): any spec of ``Morphology.parse`` (a
        ``Morphology``, links per leg, {leg: links}, ``LM:1``, a scenario name). Removed joints stop (rates
        zeroed), their integrators reset, lost feet leave the contact set."""
        self.morphology = Morphology.parse(self.robot, morphology)
        self._apply_morphology_arrays()
        gone = self.pid.active == 0.0
        self.v[6:][gone] = 0.0
        self.pid.integral[gone] = 0.0
        self.events.append((self.time, "morphology", tuple(self.morphology.links_per_leg)))

    def set_breaks(self, breaks):
        """Silent breaks now (same forms as ``set_morphology``; healthy = none): the lost links leave the
        dynamics (their mass and their foot's contact go) while their servos keep answering: the joints are
        still commanded and report positions, each tracking its set-point unloaded."""
        self.breaks = Morphology.parse(self.robot, breaks)
        self._apply_morphology_arrays()
        self.pid.integral[self.follow > 0] = 0.0
        self.events.append((self.time, "breaks", tuple(self.breaks.links_per_leg)))

    # ---- inputs -------------------------------------------------------------------------------------------
    def set_joint_targets(self, targets, move_time=0.0, joints=None):
        """Servo commands (switches to external-target mode): move ``joints`` (indices into ``joint_names``,
        default all) to ``targets`` (rad) linearly over ``move_time`` (s) from their current set-points."""
        if joints is None:
            idx = np.arange(self.nj)
        else:
            idx = np.asarray(joints, dtype=np.int64).reshape(-1)
            if idx.size and (idx.min() < 0 or idx.max() >= self.nj):
                raise ValueError("joints must be indices in [0, %d), got %s" % (self.nj, idx))
        tgt = _finite_vec(targets, len(idx), "targets")
        if not (math.isfinite(move_time) and 0.0 <= move_time <= MAX_MOVE_TIME_S):
            raise ValueError("move_time=%r outside the allowed range [0, %g] s" % (move_time, MAX_MOVE_TIME_S))
        moves = self._moves
        if self.clock[K_MODE] != MODE_EXTERNAL:
            self.clock[K_MODE] = MODE_EXTERNAL
            moves.goal[:] = self.qdes
            moves.duration[:] = 0.0
        now = self.time
        moves.start[idx] = self.setpoints()[idx]
        moves.goal[idx] = tgt
        moves.t0[idx] = now
        moves.duration[idx] = float(move_time)

    def setpoints(self):
        """Current joint set-points (rad) of the servo interpolation (external mode) or of the gait."""
        if self.clock[K_MODE] != MODE_EXTERNAL:
            return self.qdes.copy()
        moves = self._moves
        s = np.ones(self.nj)
        moving = moves.duration > 0
        s[moving] = np.clip((self.time - moves.t0[moving]) / moves.duration[moving], 0.0, 1.0)
        return moves.start + s * (moves.goal - moves.start)

    def set_command(self, command):
        """Body velocity command (vx, vy, yaw rate) for the gait (validated by ``Gait.set_command``)."""
        if self.gait is None:
            raise ValueError("set_command needs a gait; this engine runs on external joint targets")
        self.gait.set_command(command)

    # ---- running ------------------------------------------------------------------------------------------
    @property
    def time(self):
        return float(self.clock[K_STEP] * self.dt)

    def _state(self):
        """The ``StepState`` arrays, a plain tuple in its field order."""
        return (self.R, self.p, self.theta, self.v, self.pid.integral, self.qprev, self.qdes, self.clock)

    def _step_arrays(self):
        """The arrays ``_run`` steps, the engine's own (changed in place): ``StepArrays`` and its groups as plain
        tuples in their field order. numba types a plain tuple at each call ~3x faster than a NamedTuple (a few
        µs of every ``step``); ``_run`` names them again."""
        g, pid = self._standing_gait(), self.pid
        return (self.robot.kernel_data,
                self._state(),                                                                       # StepState
                (g.prm, g.offsets, g.neutral, g.stride, self.geometry.geom, self.geometry.limits),   # GaitArrays
                self._plain_moves,
                (pid.kp, pid.ki, pid.kd, pid.tau_max, pid.active, self.follow),                      # JointControl
                self.contact.params,
                (self.mask, self.legs_on, self.has_tip),                                             # MorphologyArrays
                self._plain_scr)

    def step(self, n=1, record=None):
        """Run ``n`` steps in one compiled call. Returns the recorded rows (array) if ``record``."""
        n = int(n)
        if n < 0:
            raise ValueError("n must be >= 0 steps, got %d" % n)
        every = self.record_every if record is None else record
        nrec = (n // every + 1) if every else 0
        rec = np.empty((nrec, self._ncols))
        w0, c0 = time.perf_counter(), time.thread_time()
        done, got, status = _run(n, self._step_arrays(), rec, max(every, 1))
        self.wall_time += time.perf_counter() - w0
        KERNEL_CPU.add(time.thread_time() - c0)
        if status:
            cause = "the mass matrix is not positive definite" if status == 1 else "the state became non-finite"
            raise SimulationError("simulation failed at t=%.4f s: %s (dt=%g s too large, or an unstable "
                                  "contact/PID setting?)" % (self.time, cause, self.dt))
        return rec[:got]

    def advance(self, t, record=None):
        """Run until simulated time ``t`` (s), rounded to whole steps. Returns the recorded rows."""
        n = int(round((float(t) - self.time) / self.dt))
        return self.step(max(n, 0), record=record)

    def run(self, duration, chunk=0.02, callback=None, morphology_at=None, breaks_at=None, on_rows=None):
        """Simulate ``duration`` s in chunks of ``chunk`` s; ``callback(engine)`` after each chunk (progress
        bars); ``morphology_at`` = (time s, morphology) switches morphology at that time, ``breaks_at`` =
        (time s, breaks) breaks links silently (``set_breaks``); ``on_rows(rows)`` with each block of record
        rows as it is recorded, the current state's row first (``TrajectoryCsvWriter.add``). Returns a
        Trajectory that starts with the current state."""
        if not (math.isfinite(duration) and duration >= 0.0):
            raise ValueError("duration must be >= 0 s, got %r" % (duration,))
        if not (math.isfinite(chunk) and chunk >= self.dt):
            raise ValueError("chunk must be >= dt = %g s, got %r" % (self.dt, chunk))
        t_end = self.time + duration
        rows = [self._current_row()[None, :]]
        if on_rows is not None:
            on_rows(rows[0])
        switches = [(float(at[0]), apply, at[1]) for at, apply in ((morphology_at, self.set_morphology),
                                                                    (breaks_at, self.set_breaks)) if at is not None]
        switches.sort(key=lambda s: s[0])
        while self.time < t_end - 0.5 * self.dt:
            t_next = min(self.time + chunk, t_end)
            if switches and self.time - 0.5 * self.dt < switches[0][0] <= t_next + 0.5 * self.dt:
                t_sw, apply, what = switches.pop(0)
                if t_sw > self.time + 0.5 * self.dt:
                    rows.append(self.advance(t_sw))
                    if on_rows is not None:
                        on_rows(rows[-1])
                apply(what)
                continue
            rows.append(self.advance(t_next))
            if on_rows is not None:
                on_rows(rows[-1])
            if callback is not None:
                callback(self)
        return Trajectory(np.vstack(rows), self._layout, self.robot.joint_names, self.robot.leg_names,
                          self.events)

    def _current_row(self):
        """A record row for the present state (forces/torques from the last step, if any)."""
        row = np.zeros(self._ncols)
        row[R_T] = self.time
        row[R_P] = self.p
        row[R_R] = self.R.reshape(-1)
        row[R_V] = self.v[:6]
        lay = self._layout
        row[lay["theta"]] = self.theta
        row[lay["thetadot"]] = self.v[6:]
        row[lay["qdes"]] = self.qdes
        row[lay["tau"]] = self._scr.tau[6:]
        pos_now, vel_now = self.foot_states()
        f, d = self.contact.forces(pos_now, vel_now, has_tip=self.has_tip)
        row[lay["force"]] = f.reshape(-1)
        row[lay["depth"]] = d
        row[lay["foot"]] = pos_now.reshape(-1)
        row[lay["vdot"]] = self._scr.vdot[:6]
        return row

    # ---- state getters ------------------------------------------------------------------------------------
    @property
    def pose(self):
        """4x4 pose g_sb of base_link in the world."""
        g = np.eye(4)
        g[:3, :3] = self.R
        g[:3, 3] = self.p
        return g

    @property
    def twist(self):
        """Base twist [v; w] (m/s, rad/s) in base_link."""
        return self.v[:6].copy()

    @property
    def joint_angles(self):
        return self.theta.copy()

    @property
    def joint_rates(self):
        return self.v[6:].copy()

    @property
    def joint_torques(self):
        """Joint torques (N·m) applied during the last step."""
        return self._scr.tau[6:].copy()

    def foot_states(self):
        """World-frame foot positions and velocities (n_legs, 3) (rows of lost feet are meaningless)."""
        pos = np.zeros((self.n_legs, 3))
        vel = np.zeros((self.n_legs, 3))
        world_foot_states(self.geometry.geom, self.R, self.p, self.theta, self.v, np.zeros(3), np.zeros(3), pos,
                          vel)
        return pos, vel

    def contact_state(self):
        """(in_contact (n_legs,) bool, world foot forces (n_legs, 3) N) for the present state."""
        f, d = self.contact.forces(*self.foot_states(), has_tip=self.has_tip)
        return d > 0.0, f

    def imu(self):
        """(gyro, accel): body angular velocity (rad/s) and specific force R^T(a - g) (m/s^2) at the IMU,
        both in base_link axes (the IMU is mounted without rotation), from the last step's acceleration."""
        vd = self._scr.vdot.tolist()
        V, W = self.v[0:3].tolist(), self.v[3:6].tolist()
        Wd = vd[3:6]
        r = self.imu_offset.tolist()
        # a = v̇ + W x V + Ẇ x r + W x (W x r), on Python floats (np.cross costs ~10x more on 3-vectors)
        c1, c2, c3 = cross3(W, V), cross3(Wd, r), cross3(W, cross3(W, r))
        a_body = np.array([vd[i] + c1[i] + c2[i] + c3[i] for i in range(3)])
        g_body = self.R.T @ self.gravity
        return np.array(W), a_body - g_body

    def center_of_mass(self):
        """Whole-body CoM (m, world) of the present links (main body + intact links)."""
        return self.p + self.R @ center_of_mass(self.robot, self.theta, self.mask)

    def energy(self):
        """(kinetic, potential) energy (J) of the present links; potential = -m g . com (world origin at 0)."""
        red = self.robot.with_morphology(self.body_morphology)
        q = self.theta[red.joint_index_in_full]
        v = np.concatenate([self.v[:6], self.v[6:][red.joint_index_in_full]])
        return float(red.kinetic_energy(q, v)), float(-red.total_mass * self.gravity @ self.center_of_mass())

    @property
    def euler(self):
        """(roll, pitch, yaw) ZYX Euler angles (rad) of base_link."""
        return np.array(mat2euler(self.R, "sxyz"))
