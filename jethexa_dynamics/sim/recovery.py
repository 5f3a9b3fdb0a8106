"""Closed-loop damage-recovery runs on the engine: the Python gait controller drives the servos.

The engine runs on external joint targets (servo mode); every command period ``dt_cmd`` (s, default 20 ms)
the gait controller's logic (``WalkingGait``, with ``recovery`` on or off) produces joint targets from the
command, trimmed by the heading hold (``control.heading``) on the engine's gyro and on odometry (here the
engine's base position stands in for the predictor's odometry), and the engine advances one period.

Per segment (before / after the damage) ``segment_metrics`` reports: forward speed along the segment's
initial heading vs the command (m/s), heading drift (deg per 10 s, yaw change minus the commanded one),
lateral drift (m per m walked), minimum static stability margin over the segment (m; measured: whole-body
CoM of the engine vs the hull of the feet in contact, world xy), max |roll| and |pitch| (deg).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from jethexa_dynamics.control.heading import HeadingHold
from jethexa_dynamics.control.replan import support_margin
from jethexa_dynamics.monitor.walking import WalkingGait

from .engine import Engine


@dataclass
class RecoveryRun:
    """Samples every command period: t (s), pos (n, 3) m world, rpy (n, 3) rad (yaw unwrapped), margin (n,)
    m, joint targets sent (list of arrays), events [(t, text)], and the metrics per segment."""
    t: np.ndarray
    pos: np.ndarray
    rpy: np.ndarray
    margin: np.ndarray
    command: np.ndarray
    gait: List[str]
    max_target_step: float
    damage_at: Optional[float]
    segments: Dict[str, dict] = field(default_factory=dict)


def measured_margin(engine: Engine) -> float:
    """Static margin (m) of the engine's present state: CoM (world xy) vs the hull of the feet in contact."""
    down, _ = engine.contact_state()
    pos, _ = engine.foot_states()
    if down.sum() == 0:
        return -math.inf
    return support_margin(pos[down, :2], engine.center_of_mass()[:2])


def segment_metrics(t, pos, rpy, margin, command, t0, t1) -> dict:
    """Metrics of the samples with t0 <= t <= t1 (see the module docstring); the first cycle after t0 is
    left out of the speed/drift figures (the gait switch and the blend)."""
    sel = (t >= t0) & (t <= t1)
    T = float(t[sel][-1] - t[sel][0])
    p, e = pos[sel], rpy[sel]
    yaw0 = e[0, 2]
    u = np.array([math.cos(yaw0), math.sin(yaw0)])
    d = p[-1, :2] - p[0, :2]
    fwd = float(d @ u)
    lat = float(u[0] * d[1] - u[1] * d[0])
    wz = float(np.mean(command[sel, 2]))
    yaw_rate = float((e[-1, 2] - e[0, 2]) / T) if T > 0 else 0.0
    return {
        "duration_s": T,
        "speed_mps": fwd / T if T > 0 else 0.0,
        "command_mps": float(np.mean(command[sel, 0])),
        "yaw_rate_radps": yaw_rate,
        "command_yaw_rate_radps": wz,
        "heading_drift_deg_per_10s": math.degrees(yaw_rate - wz) * 10.0,
        "lateral_m": lat,
        "lateral_per_m": abs(lat) / abs(fwd) if abs(fwd) > 1e-3 else float("inf"),
        "min_margin_m": float(np.min(margin[sel])),
        "max_roll_deg": float(np.degrees(np.abs(e[:, 0]).max())),
        "max_pitch_deg": float(np.degrees(np.abs(e[:, 1]).max())),
    }


def run_recovery(damage, recovery: bool = True, command: Sequence[float] = (0.05, 0.0, 0.0), before: float = 3.0,
                 after: float = 20.0, dt_cmd: float = 0.02, heading: Optional[HeadingHold] = None,
                 engine: Optional[Engine] = None, skip: float = 2.0, imu_stops_at: Optional[float] = None):
    """Walk healthy for ``before`` s, apply ``damage`` (anything ``Engine.set_morphology`` takes), walk
    ``after`` s more, with the controller at ``recovery`` on/off (off: the old wave over the remaining legs,
    no heading hold). ``skip`` s after each segment start are left out of the metrics. ``imu_stops_at`` (s)
    stops the gyro feed (the controller must hold a safe stance). Returns a ``RecoveryRun``."""
    eng = engine or Engine(gait=None)
    eng.step(0)
    robot = eng.robot
    walker = WalkingGait(eng.geometry, robot.joint_names, recovery=recovery, robot=robot,
                         design_command=command, step_height=0.012)
    hold = heading if heading is not None else HeadingHold(enabled=recovery)
    jidx = {n: k for k, n in enumerate(robot.joint_names)}
    cmd = np.asarray(command, dtype=float)
    walker.set_command(cmd)
    # start from the gait's own stance (no initial jump)
    names, q = walker.step(0.0, False)
    tgt = eng.setpoints()
    tgt[[jidx[n] for n in names]] = q
    eng.theta[:] = tgt
    eng.reset_standing()
    eng.set_joint_targets(tgt)
    eng.theta[:] = tgt
    rows_t, rows_p, rows_e, rows_m, rows_c, gaits = [], [], [], [], [], []
    total = before + after
    damaged = False
    max_step = 0.0
    last = dict(zip(names, q))
    yaw_unwrap, prev_yaw = 0.0, None
    k = 0
    while eng.time < total - 1e-9:
        t = eng.time
        if not damaged and damage is not None and t >= before - 1e-9:
            eng.set_morphology(damage)
            walker.set_morphology(list(eng.morphology.links_per_leg))
            hold.reset()
            damaged = True
        gyro, _ = eng.imu()
        gz = None if (imu_stops_at is not None and t >= imu_stops_at) else float(gyro[2])
        stale = hold.enabled and hold.imu_stale(t) and k > 0 and gz is None
        trimmed = hold.update(cmd, t, dt_cmd, gyro_z=gz, odom_xy=eng.p[:2])
        if recovery:
            walker.set_trim(trimmed)
        names, q = walker.step(dt_cmd, walking=not stale)
        for n, v in zip(names, q):
            if n in last:
                max_step = max(max_step, abs(v - last[n]))
        last = dict(zip(names, q))
        eng.set_joint_targets(q, move_time=dt_cmd, joints=[jidx[n] for n in names])
        eng.advance(t + dt_cmd)
        k += 1
        e = eng.euler
        if prev_yaw is not None:
            yaw_unwrap += (e[2] - prev_yaw + math.pi) % (2 * math.pi) - math.pi
        else:
            yaw_unwrap = e[2]
        prev_yaw = e[2]
        rows_t.append(eng.time)
        rows_p.append(eng.p.copy())
        rows_e.append([e[0], e[1], yaw_unwrap])
        rows_m.append(measured_margin(eng))
        rows_c.append(cmd.copy())
        gaits.append(walker.status()["gait"])
    run = RecoveryRun(np.array(rows_t), np.array(rows_p), np.array(rows_e), np.array(rows_m), np.array(rows_c),
                      gaits, max_step, before if damage is not None else None)
    if damage is not None and before > skip:
        run.segments["before"] = segment_metrics(run.t, run.pos, run.rpy, run.margin, run.command, skip, before)
    run.segments["after"] = segment_metrics(run.t, run.pos, run.rpy, run.margin, run.command,
                                            (before if damage is not None else 0.0) + skip, total)
    return run
