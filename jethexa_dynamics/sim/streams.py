"""The simulated robot's sensor streams: an independent plant walking on a schedule, with silent breaks, sensor
noise, gyro bias and a body-mass error -- what a damage identifier or a predictor sees (no rclpy).

The plant is the simulation engine at 1 ms driven like the real robot: the gait controller's logic
(``WalkingGait``, tripod + IK, through :class:`~jethexa_dynamics.sim.closed_loop.GaitLoop`) issues servo commands
(goal [rad], move time [s]) at ``command_rate``; the servos report joint angles [rad] at ``joint_rate``; the IMU
reports orientation (w, x, y, z, level frame <- base_link) and body rates [rad/s, base_link axes] at ``imu_rate``. Its
body mass may differ from the model's (``mass_scale``) so a consumer's model is never exactly the plant. Times are
the engine's [s].

:func:`feed` and :func:`feed_predictor` replay the streams into any object with an identifier's or a predictor's
methods (duck typing: this layer imports neither).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import numpy as np
from transforms3d.euler import euler2mat

from jethexa_dynamics.model import LeggedRobot, kernels
from jethexa_dynamics.model.se3 import rot_to_quat

from .closed_loop import GaitLoop
from .contact import ContactModel


def scaled_body_robot(scale: float, com_offset=(0.0, 0.0, 0.0)) -> LeggedRobot:
    """The bundled JetHexa with base_link's mass and inertia multiplied by ``scale`` (0.5-2) and its CoM moved
    by ``com_offset`` (m, base_link, each within +-5 cm): a robot of its own (``LeggedRobot.with_body``)."""
    if not (math.isfinite(scale) and 0.5 <= scale <= 2.0):
        raise ValueError("mass_scale=%r outside the allowed range [0.5, 2]" % (scale,))
    off = np.asarray(com_offset, dtype=float).reshape(-1)
    if off.shape != (3,) or not np.all(np.isfinite(off)) or np.abs(off).max() > MAX_COM_OFFSET:
        raise ValueError("body_com_offset=%r: three finite lengths within +-%g m" % (com_offset, MAX_COM_OFFSET))
    robot = LeggedRobot.jethexa()
    d = robot.description
    return robot.with_body(d.body_mass * scale, np.asarray(d.body_com) + off)


@dataclass
class Segment:
    """From ``t`` (s, after the settle time) on: ``walk`` with body command (vx, vy, yaw rate), or ``stand``
    (the walking legs go to their neutral stance, like the gait controller on a stale command); ``gait``
    (tripod, wave, ripple) switches the controller's gait there (``WalkingGait.configure``: it re-phases)."""
    t: float
    mode: str = "walk"
    command: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    gait: Optional[str] = None


#: rad: the steepest ground the plant is built on (the gait is not made for steeper)
MAX_PLANT_SLOPE = math.radians(20.0)
#: m: the largest shift of the plant's body CoM from the URDF's, per axis
MAX_COM_OFFSET = 0.05


#: the kinds of WalkConfig.gaps: what stops during one
GAP_KINDS = ("stall", "sensors", "commands")


@dataclass
class WalkConfig:
    """What the plant does (``duration`` s, ``segments``, silent ``breaks``, executor/sensor ``gaps``) and how its
    sensors err (noise, gyro bias, body-mass scale); rates in Hz."""
    duration: float = 10.0
    segments: List[Segment] = field(default_factory=lambda: [Segment(0.0, "walk", (0.04, 0.0, 0.0))])
    breaks: List[Tuple[float, str]] = field(default_factory=list)    # (t s, spec like "LM:1")
    seed: int = 0
    mass_scale: float = 1.0
    body_com_offset: Tuple[float, float, float] = (0.0, 0.0, 0.0)    # m, base_link: the plant's body CoM shift
    # (t s, kg, (x, y, z) m in base_link): a point mass fixed to the body from t on (a payload put on mid-run)
    payload: Optional[Tuple[float, float, Tuple[float, float, float]]] = None
    gyro_bias: Tuple[float, float, float] = (0.0, 0.0, 0.0)        # rad/s
    gyro_noise: float = 0.005                                       # rad/s (1 sigma per sample)
    tilt_noise: float = math.radians(0.1)                           # rad (orientation, per sample)
    joint_noise: float = math.radians(0.24)                         # rad (servo resolution)
    command_rate: float = 50.0
    joint_rate: float = 50.0
    imu_rate: float = 100.0
    settle: float = 0.5                                             # s standing before the first command
    # (t s, duration s, "stall" | "sensors" | "commands"): "stall" = the controller's executor stalls (no
    # command, no joint state, no IMU sample; the plant holds its last targets), "sensors" = only joints and IMU
    # drop out, "commands" = only the gait's ticks stop (a gait controller starved in a process of its own)
    gaps: List[Tuple[float, float, str]] = field(default_factory=list)
    recovery: bool = False           # the gait controller's damage recovery: a re-planned gait per morphology
    stall_on_switch: float = 0.0     # s the executor stalls when the gait follows a new morphology (a re-plan
    #                                  in the callback, as it was in the one-process graph): a "stall" gap
    # (t s, mu): from t on the ground has Coulomb friction with coefficient mu (patches of floor); none: the
    # engine's default contact (viscous tangential damping, paper 003)
    friction: List[Tuple[float, float]] = field(default_factory=list)
    # (roll, pitch) [rad] of the ground plane in the level (gravity-aligned) frame, 'sxyz': a slope. The plant's
    # world is the ground's frame, so its gravity is tilted; the IMU reports attitude in the level frame
    ground_tilt: Tuple[float, float] = (0.0, 0.0)

    def __post_init__(self):
        tilt = tuple(self.ground_tilt)
        if len(tilt) != 2 or not all(math.isfinite(a) and abs(a) <= MAX_PLANT_SLOPE for a in tilt):
            raise ValueError("ground_tilt=%r: two finite angles within +-%g rad (%g deg)" % (
                self.ground_tilt, MAX_PLANT_SLOPE, math.degrees(MAX_PLANT_SLOPE)))
        for t, mu in self.friction:
            if not (math.isfinite(t) and t >= 0.0):
                raise ValueError("friction patch at t=%r: the time must be finite and >= 0 s" % (t,))
            ContactModel(friction="coulomb", mu=mu)      # its own check names mu and the allowed range
        for gap in self.gaps:
            if len(gap) != 3 or gap[2] not in GAP_KINDS or not all(math.isfinite(v) and v >= 0.0 for v in gap[:2]):
                raise ValueError("gaps: %r: (t >= 0 s, duration >= 0 s, one of %s)" % (gap, ", ".join(GAP_KINDS)))


def walk_streams(cfg: WalkConfig, identifier=None, truth: Optional[list] = None, probe=None, on_tick=None,
                 plant=None):
    """Run the plant; returns a time-ordered list of (t, kind, payload): ``cmd`` (q, move_time, joint indices),
    ``joints`` q, ``imu`` (quat, gyro, accel); and the plant ``Engine`` at the end. ``truth``: a list that gets
    the plant's (t, position [m], R world<-base_link) at every IMU sample (the oracle of a predictor's error).

    The commands come from the gait controller's logic (``WalkingGait``: tripod; a wave over the legs left
    after a damage; the stance when standing). With an ``identifier`` the streams are also fed to it as they
    happen and the loop is closed like on the robot: each morphology it reports re-phases the gait.

    ``probe``: an active probe (duck typing, ``damage.active_probe.ActiveProbe``): at each command tick
    ``probe.command(t, setpoints)`` with the joint set-points sent so far [rad, NaN: never] returns None (the
    schedule goes on) or (joint indices, targets, move time): the gait holds its stance and these are sent too;
    ``probe.on_imu(t, quat, gyro)`` gets every IMU sample as the identifier does. ``on_tick(t, engine)`` after
    each command tick (an oracle's look at the plant). ``plant``: another plant than the engine, built by the
    caller with the body and gravity it wants (``sim.mjcf.MujocoServoPlant``; what the loop uses of an
    ``Engine``: ``dt``, ``time``, ``robot``, ``geometry``, ``nj``, ``set_breaks``, ``set_joint_targets``, ``step``,
    ``joint_angles``, ``imu``, ``R``, ``p``); no payload, friction patch or ground tilt then.
    """
    custom = cfg.mass_scale != 1.0 or any(cfg.body_com_offset) or cfg.payload is not None
    robot = scaled_body_robot(cfg.mass_scale, cfg.body_com_offset) if custom else LeggedRobot.jethexa()
    level = euler2mat(cfg.ground_tilt[0], cfg.ground_tilt[1], 0.0, "sxyz")      # ground frame -> level frame
    if any(cfg.ground_tilt):
        robot = robot.with_gravity(level.T @ np.array([0.0, 0.0, -np.linalg.norm(robot.gravity)]))
    if plant is not None and (cfg.payload is not None or cfg.friction or any(cfg.ground_tilt)):
        raise ValueError("plant: an engine's WalkConfig (payload, friction, ground_tilt) on another plant")
    loop = GaitLoop.build(robot, engine=plant, dt=1e-3, recovery=cfg.recovery,
                          robot=LeggedRobot.jethexa() if cfg.recovery else None)
    eng, walker = loop.engine, loop.walker
    rng = np.random.default_rng(cfg.seed)
    dt_c, dt_j, dt_i = 1.0 / cfg.command_rate, 1.0 / cfg.joint_rate, 1.0 / cfg.imu_rate
    out = []
    segs = sorted(cfg.segments, key=lambda s: s.t)
    breaks = sorted(cfg.breaks)
    seg_i = -1
    walking = False
    links = tuple(walker.links_per_leg)
    t_next = {"cmd": cfg.settle, "joints": dt_j, "imu": dt_i}
    n = int(round(cfg.duration / eng.dt))
    step_ms = int(round(min(dt_c, dt_j, dt_i) / eng.dt)) or 1
    bias = np.asarray(cfg.gyro_bias, dtype=float)
    sent = np.full(eng.nj, np.nan)          # the joint set-points commanded so far (what the robot knows it holds)
    friction = sorted(cfg.friction)
    payload = cfg.payload

    def emit(t, kind, payload):
        out.append((t, kind, payload))
        if identifier is not None:
            feed(identifier, out[-1:])
        if kind == "cmd":
            sent[payload[2]] = payload[0]
        elif kind == "imu" and probe is not None:
            probe.on_imu(t, payload[0], payload[1])

    gaps = list(cfg.gaps)

    def silent(t, kinds):
        return any(g[0] <= t < g[0] + g[1] and g[2] in kinds for g in gaps)

    k = 0
    while k < n:
        t = eng.time
        while breaks and breaks[0][0] <= t + 1e-9:
            eng.set_breaks(breaks.pop(0)[1])
        if payload is not None and payload[0] <= t + 1e-9:
            add_payload(eng.robot, payload[1], payload[2])
            payload = None
        while friction and friction[0][0] <= t + 1e-9:
            eng.contact = ContactModel(friction="coulomb", mu=friction.pop(0)[1])
        if identifier is not None and tuple(identifier.morphology) != links:
            links = tuple(identifier.morphology)
            walker.set_morphology(links)          # what gait_controller does on `morphology`
            if cfg.stall_on_switch > 0.0:
                gaps.append((t, cfg.stall_on_switch, "stall"))
        if t >= t_next["cmd"] - 1e-9 and silent(t, ("stall", "commands")):
            t_next["cmd"] += dt_c                 # the gait controller's timer does not run
        if t >= t_next["cmd"] - 1e-9:
            tw = t - cfg.settle
            while seg_i + 1 < len(segs) and segs[seg_i + 1].t <= tw + 1e-9:
                seg_i += 1
                walking = segs[seg_i].mode == "walk"
                if segs[seg_i].gait is not None:
                    walker.configure(kind=segs[seg_i].gait)
                if walking:
                    walker.set_command(segs[seg_i].command)
            held = None if probe is None else probe.command(t, sent.copy())
            cmd_names, q, mt = loop.command(dt_c, walking and held is None, stand=held is not None)
            if cmd_names:
                loop.send(cmd_names, q, mt)
                emit(t, "cmd", (q, mt, loop.joints(cmd_names)))
            if held is not None and len(held[0]):
                eng.set_joint_targets(held[1], move_time=held[2], joints=held[0])
                emit(t, "cmd", (np.asarray(held[1], dtype=float), held[2], np.asarray(held[0])))
            if on_tick is not None:
                on_tick(t, eng)
            t_next["cmd"] += dt_c
        for kind in ("joints", "imu"):
            if t >= t_next[kind] - 1e-9 and silent(t, ("stall", "sensors")):
                t_next[kind] += dt_j if kind == "joints" else dt_i
        if t >= t_next["joints"] - 1e-9:
            emit(t, "joints", eng.joint_angles + rng.normal(0.0, cfg.joint_noise, eng.nj))
            t_next["joints"] += dt_j
        if t >= t_next["imu"] - 1e-9:
            if truth is not None:
                truth.append((t, eng.p.copy(), eng.R.copy()))
            gyro, acc = eng.imu()
            R = level @ eng.R @ euler2mat(*rng.normal(0.0, cfg.tilt_noise, 3), "sxyz")
            emit(t, "imu", (rot_to_quat(R), gyro + bias + rng.normal(0.0, cfg.gyro_noise, 3), acc))
            t_next["imu"] += dt_i
        eng.step(step_ms)
        k += step_ms
    return out, eng


def add_payload(robot: LeggedRobot, mass: float, at) -> None:
    """Fix a point mass ``mass`` [kg] at ``at`` [m, base_link] to the body of ``robot``, in place (its own kernel
    data: a plant built by ``scaled_body_robot``): the body's mass, CoM and inertia about the new CoM
    (parallel-axis theorem)."""
    if not (math.isfinite(mass) and 0.0 < mass <= 2.0):
        raise ValueError("payload mass=%r outside the allowed range (0, 2] kg" % (mass,))
    d = robot.kernel_data
    m0, c0 = d[kernels.D_BODY_MASS][0], d[kernels.D_BODY_COM].reshape(3).copy()
    at = np.asarray(at, dtype=float).reshape(3)
    m1 = m0 + mass
    c1 = (m0 * c0 + mass * at) / m1

    def shift(m, r):
        return m * (r @ r * np.eye(3) - np.outer(r, r))
    ic = d[kernels.D_BODY_IC].reshape(3, 3) + shift(m0, c0 - c1) + shift(mass, at - c1)
    d[kernels.D_BODY_MASS][0] = m1
    d[kernels.D_BODY_COM][...] = c1.reshape(d[kernels.D_BODY_COM].shape)
    d[kernels.D_BODY_IC][...] = ic.reshape(d[kernels.D_BODY_IC].shape)


def feed(identifier, streams, until=None):
    """Feed recorded streams to an identifier (``on_command``/``on_joints``/``on_imu``) up to ``until`` s."""
    for t, kind, payload in streams:
        if until is not None and t > until:
            break
        if kind == "cmd":
            identifier.on_command(t, payload[0], t + payload[1], joints=payload[2])
        elif kind == "joints":
            identifier.on_joints(t, payload)
        else:
            identifier.on_imu(t, *payload)


def feed_predictor(predictor, streams, on_pose=None):
    """Feed recorded streams to a predictor (``command``/``measure_joints``/``pose``/``measure_imu``, e.g. a
    ``BoltzmannHamelPredictor``) as the ``predictor`` node does (one pose per IMU sample, taken before that sample
    anchors it); ``on_pose(t, (position, quaternion), imu_payload)``."""
    for t, kind, p in streams:
        if kind == "cmd":
            predictor.command(t, p[0], move_time=p[1], joints=p[2])
        elif kind == "joints":
            predictor.measure_joints(t, p)
        else:
            pose = predictor.pose(t)
            if on_pose is not None:
                on_pose(t, pose, p)
            predictor.measure_imu(t, p[0])
