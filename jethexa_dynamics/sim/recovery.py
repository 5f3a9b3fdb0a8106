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
from jethexa_dynamics.control.support import support_margin
from jethexa_dynamics.model.se3 import wrap_angle

from .closed_loop import GaitLoop
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
    events: List[tuple] = field(default_factory=list)


def measured_margin(engine: Engine) -> float:
    """Static margin (m) of the engine's present state: CoM (world xy) vs the hull of the feet in contact."""
    down, _ = engine.contact_state()
    pos, _ = engine.foot_states()
    if down.sum() == 0:
        return -math.inf
    return support_margin(pos[down, :2], engine.center_of_mass()[:2])


def segment_metrics(t, pos, rpy, margin, command, t_ref, t0, t1, cycle: float = 2.0) -> dict:
    """Metrics of one segment. Reference: the pose at ``t_ref`` (the segment start: the damage moment), i.e.
    the straight path the user commanded from there. Speed: mean forward speed along the reference heading
    over [t0, t1] (t0 = t_ref + a settling time: the gait switch and blend). Heading drift: change of the
    last cycle's mean yaw from t_ref minus the commanded one, per 10 s. Lateral drift: cross-track distance
    from the reference line of the mean position over the last ``cycle`` s (one gait cycle: the body sway
    averages out) per metre walked along it. Min margin over [t0, t1] (the new gait) and over [t_ref, t0)
    (the damage itself and the switch), max |roll| and |pitch| over [t_ref, t1]."""
    iref = int(np.searchsorted(t, t_ref))
    sel = (t >= t0) & (t <= t1)
    whole = (t >= t_ref) & (t <= t1)
    T = float(t[sel][-1] - t[sel][0])
    p, e = pos[sel], rpy[sel]
    yaw0 = rpy[iref, 2]
    u = np.array([math.cos(yaw0), math.sin(yaw0)])
    fwd = float((p[-1, :2] - p[0, :2]) @ u)
    # the end point is the mean over the last ``cycle`` s: the body shift sways base_link by design (+/- 4 cm
    # for damage 1); drift is what remains over whole cycles
    last = whole & (t >= t1 - cycle)
    d = pos[last, :2].mean(axis=0) - pos[iref, :2]
    along = float(d @ u)
    lat = float(u[0] * d[1] - u[1] * d[0])
    wz = float(np.mean(command[sel, 2]))
    Tw = float(t[last].mean() - t[iref])         # the last cycle's mean yaw, like its mean position
    yaw_rate = float((e[-1, 2] - e[0, 2]) / T) if T > 0 else 0.0
    drift = (rpy[last, 2].mean() - yaw0 - wz * Tw) / Tw if Tw > 0 else 0.0
    return {
        "duration_s": T,
        "speed_mps": fwd / T if T > 0 else 0.0,
        "command_mps": float(np.mean(command[sel, 0])),
        "yaw_rate_radps": yaw_rate,
        "command_yaw_rate_radps": wz,
        "heading_drift_deg_per_10s": math.degrees(drift) * 10.0,
        "lateral_m": lat,
        "lateral_per_m": abs(lat) / abs(along) if abs(along) > 0.05 else float("nan"),   # nan: walked < 5 cm
        "min_margin_m": float(np.min(margin[sel])),
        "min_margin_switch_m": float(np.min(margin[whole & ~sel])) if np.any(whole & ~sel) else float("nan"),
        "max_roll_deg": float(np.degrees(np.abs(rpy[whole, 0]).max())),
        "max_pitch_deg": float(np.degrees(np.abs(rpy[whole, 1]).max())),
    }


def window_metrics(t, pos, rpy, t_damage: float, after: float = 17.0, last: float = 8.0, cycle: float = 1.3,
                   command: float = 0.05) -> dict:
    """The recovered walk after a damage at ``t_damage`` (s), from poses sampled at ``t`` (s; ``pos`` (n, 3) m world,
    ``rpy`` (n, 3) rad, yaw unwrapped): the reference line is the mean pose over the ``cycle`` s before the damage
    (its mean position and mean yaw: the gait's sway averages out). ``speed_fraction``: forward distance along that
    heading over the last ``last`` s of the ``after`` s window, per second, over ``command`` (m/s); ``yaw_deg``: the
    window's last cycle's mean yaw minus the reference's; ``lateral_m``: cross-track distance of the last cycle's mean
    position from the reference line; ``max_roll_deg``/``max_pitch_deg`` over the window; ``covered_s``: the poses'
    span within the window (short of ``after``: the run ended early). ValueError if no pose is before the damage
    or in the last ``last`` s."""
    t, pos, rpy = np.asarray(t, float), np.asarray(pos, float), np.asarray(rpy, float)
    ref = (t >= t_damage - cycle) & (t < t_damage)
    end = t_damage + after
    tail = (t >= end - last) & (t <= end)
    win = (t >= t_damage) & (t <= end)
    if not ref.any() or tail.sum() < 2:
        raise ValueError("poses: none in the cycle before the damage or fewer than 2 in the last %g s" % last)
    yaw0 = float(rpy[ref, 2].mean())
    u = np.array([math.cos(yaw0), math.sin(yaw0)])
    p0 = pos[ref, :2].mean(axis=0)
    pt, tt = pos[tail, :2], t[tail]
    speed = float((pt[-1] - pt[0]) @ u) / float(tt[-1] - tt[0])
    lastc = win & (t >= end - cycle)
    d = pos[lastc, :2].mean(axis=0) - p0
    return {"speed_mps": speed, "speed_fraction": speed / command if command else float("nan"),
            "yaw_deg": math.degrees(float(rpy[lastc, 2].mean()) - yaw0),
            "lateral_m": float(u[0] * d[1] - u[1] * d[0]),
            "max_roll_deg": float(np.degrees(np.abs(rpy[win, 0]).max())),
            "max_pitch_deg": float(np.degrees(np.abs(rpy[win, 1]).max())),
            "covered_s": float(t[win][-1] - t_damage)}


def _checked_command(command, before, after, dt_cmd) -> np.ndarray:
    """The command (vx m/s, vy m/s, yaw rate rad/s) as an array; ValueError naming a bad argument."""
    cmd = np.asarray(command, dtype=float)
    if cmd.shape != (3,) or not np.all(np.isfinite(cmd)):
        raise ValueError("command must be 3 finite values (vx m/s, vy m/s, yaw_rate rad/s), got %r" % (command,))
    for name, v, lo, hi in (("before", before, 0.0, 600.0), ("after", after, 1.0, 600.0),
                            ("dt_cmd", dt_cmd, 0.005, 0.2)):
        if not (math.isfinite(v) and lo <= v <= hi):
            raise ValueError("%s=%r outside the allowed range [%g, %g] s" % (name, v, lo, hi))
    return cmd


def _stand_in_the_gaits_stance(eng: Engine, loop: GaitLoop):
    """Put the engine at rest in the gait's own first stance, held by the servos (no initial jump); returns the
    gait's first (joint names, targets)."""
    names, q = loop.walker.step(0.0, False)
    tgt = eng.setpoints()
    tgt[loop.joints(names)] = q
    eng.theta[:] = tgt
    eng.reset_standing()
    eng.set_joint_targets(tgt)
    eng.theta[:] = tgt
    return names, q


def _damage_event(loop: GaitLoop, hold: HeadingHold, damage, t: float):
    """Apply ``damage`` to the engine and the controller at time t (s) (the heading hold starts over with the
    new gait); returns the event (t, text) naming the gait planned for it."""
    loop.set_morphology(damage)
    hold.new_gait()
    st = loop.walker.status()
    return (t, "morphology %s: gait %s, planned margin %.4f m%s" % (
        list(loop.engine.morphology.links_per_leg), st["gait"], st["stability_margin"],
        (" (" + st["reason"] + ")") if st["reason"] else ""))


def _largest_target_step(max_step: float, last: dict, names, q) -> float:
    """``max_step`` raised to the largest change of a joint's target from ``last`` ({name: target}) to ``q``."""
    for n, v in zip(names, q):
        if n in last:
            max_step = max(max_step, abs(v - last[n]))
    return max_step


class _Samples:
    """The run's samples, one per command period (``RecoveryRun``'s columns), the yaw unwrapped as they come."""

    def __init__(self):
        self.t, self.pos, self.rpy, self.margin, self.command, self.gait = [], [], [], [], [], []
        self._yaw, self._prev_yaw = 0.0, None

    def add(self, eng: Engine, cmd: np.ndarray, gait: str) -> None:
        self.add_state(eng.time, eng.p.copy(), eng.euler, measured_margin(eng), cmd, gait)

    def add_state(self, t: float, pos: np.ndarray, e, margin: float, cmd: np.ndarray, gait: str) -> None:
        """One sample: time (s), base position (m, world), (roll, pitch, yaw) rad, static margin (m)."""
        if self._prev_yaw is not None:
            self._yaw += wrap_angle(e[2] - self._prev_yaw)
        else:
            self._yaw = e[2]
        self._prev_yaw = e[2]
        self.t.append(t)
        self.pos.append(pos)
        self.rpy.append([e[0], e[1], self._yaw])
        self.margin.append(margin)
        self.command.append(cmd.copy())
        self.gait.append(gait)

    def run(self, max_step: float, damage_at: Optional[float], events) -> RecoveryRun:
        return RecoveryRun(np.array(self.t), np.array(self.pos), np.array(self.rpy), np.array(self.margin),
                           np.array(self.command), self.gait, max_step, damage_at, events=events)


def run_recovery(damage, recovery: bool = True, command: Sequence[float] = (0.05, 0.0, 0.0), before: float = 3.0,
                 after: float = 20.0, dt_cmd: float = 0.02, heading: Optional[HeadingHold] = None,
                 engine: Optional[Engine] = None, skip: float = 2.0, imu_stops_at: Optional[float] = None):
    """Walk healthy for ``before`` s, apply ``damage`` (anything ``Engine.set_morphology`` takes), walk
    ``after`` s more, with the controller at ``recovery`` on/off (off: the old wave over the remaining legs,
    no heading hold). ``skip`` s after each segment start are left out of the speed figure. ``imu_stops_at`` (s)
    stops the gyro feed (the controller must hold a safe stance). Returns a ``RecoveryRun``."""
    cmd = _checked_command(command, before, after, dt_cmd)
    eng = engine or Engine(gait=None)
    eng.step(0)
    loop = GaitLoop.build(engine=eng, recovery=recovery, robot=eng.robot, design_command=command, step_height=0.012)
    walker = loop.walker
    hold = heading if heading is not None else HeadingHold(enabled=recovery)
    walker.set_command(cmd)
    events = []
    names, q = _stand_in_the_gaits_stance(eng, loop)
    samples = _Samples()
    total = before + after
    damaged = False
    max_step = 0.0
    last = dict(zip(names, q))
    k = 0
    while eng.time < total - 1e-9:
        t = eng.time
        if not damaged and damage is not None and t >= before - 1e-9:
            events.append(_damage_event(loop, hold, damage, t))
            damaged = True
        gyro, _ = eng.imu()
        gz = None if (imu_stops_at is not None and t >= imu_stops_at) else float(gyro[2])
        stale = hold.enabled and hold.imu_stale(t) and k > 0 and gz is None
        if stale and not (events and events[-1][1].startswith("IMU")):
            events.append((t, "IMU silent for more than imu_timeout = %g s: heading hold off, holding the stance"
                           % hold.imu_timeout))
        # yaw from the attitude (the engine's, standing in for the IMU filter's) so the heading and the
        # odometry share the world frame
        trimmed = hold.update(cmd, t, dt_cmd, gyro_z=gz, yaw=None if gz is None else float(eng.euler[2]),
                              odom_xy=eng.p[:2])
        if recovery:
            walker.set_trim(trimmed)
        names, q = loop.step(dt_cmd, walking=not stale, move_time=dt_cmd)
        max_step = _largest_target_step(max_step, last, names, q)
        last = dict(zip(names, q))
        eng.advance(t + dt_cmd)
        k += 1
        samples.add(eng, cmd, walker.status()["gait"])
    run = samples.run(max_step, before if damage is not None else None, events)
    t_dmg = before if damage is not None else 0.0
    if damage is not None and before > skip:
        run.segments["before"] = segment_metrics(run.t, run.pos, run.rpy, run.margin, run.command, 0.5, skip,
                                                 before)
    run.segments["after"] = segment_metrics(run.t, run.pos, run.rpy, run.margin, run.command, t_dmg, t_dmg + skip,
                                            total)
    return run


def acceptance_cases():
    """(label, links per leg): the 18 single-leg losses (2, 1, 0 links kept) and the paper's damage 1 and 2."""
    from jethexa_dynamics.model import format_morphology, jethexa
    from jethexa_dynamics.model.scenarios import scenario_vectors, single_leg_losses

    robot = jethexa()
    legs, n = robot.leg_names, list(robot.description.n_joints)
    return ([(format_morphology(v, legs, n), list(v)) for v in single_leg_losses(n, n)]
            + scenario_vectors(legs, n))


def format_row(label, on, off):
    def cells(s, gait):
        lat = "%.3f" % s["lateral_per_m"] if math.isfinite(s["lateral_per_m"]) else "n/a (stands)"
        return ("%.4f | %+.2f | %s | %+.4f | %.2f/%.2f | %s"
                % (s["speed_mps"], s["heading_drift_deg_per_10s"], lat, s["min_margin_m"],
                   s["max_roll_deg"], s["max_pitch_deg"], gait))
    return "| %s | %s | %s |" % (label, cells(on.segments["after"], on.gait[-1]),
                                 cells(off.segments["after"], off.gait[-1]))


#: a MuJoCo foot whose sphere is within this of the floor [m] counts as support (a 50 Hz sample of MuJoCo's soft
#: contact can catch a loaded foot a fraction of a millimetre up, between two contact solutions)
SUPPORT_GAP = 1e-3


def mujoco_margin(mj) -> float:
    """Static margin (m) of a ``MujocoHexapod``'s present state: the whole robot's CoM (world xy) vs the hull of
    the feet on the floor (their spheres within ``SUPPORT_GAP``); -inf with none."""
    d, m = mj.data, mj.model
    floor_z = m.geom_pos[mj.floor][2]
    pts = [d.geom_xpos[g][:2].copy() for g in mj.feet if d.geom_xpos[g][2] - m.geom_size[g][0] - floor_z <= SUPPORT_GAP]
    if not pts:
        return -math.inf
    return support_margin(np.array(pts), d.subtree_com[m.body_rootid[1]][:2])


def run_recovery_mujoco(damage, command: Sequence[float] = (0.05, 0.0, 0.0), seconds: float = 20.0,
                        dt_cmd: float = 0.02, skip: float = 2.0, robot=None, **mjcf) -> RecoveryRun:
    """The damaged robot walked in MuJoCo (``sim.mjcf``, the independent plant) by the gait controller's logic
    with recovery on, run as MuJoCo's users run a controller: joint targets at the command rate (``dt_cmd`` s),
    ``mj_step`` in between. ``damage``: links per leg (or anything ``Engine.set_morphology`` takes). The robot
    starts at rest in the re-planned gait's stance (the damage noticed and the gait switched: ``run_recovery``
    covers the switch on the engine); the heading hold reads MuJoCo's body rate and yaw, the odometry its base
    position. ``mjcf``: keyword arguments of ``build_mjcf`` (contact, gains). Returns the ``RecoveryRun`` with
    one segment, ``after`` (t from 0; the speed from ``skip`` s). Needs ``mujoco``."""
    from transforms3d.euler import quat2euler

    from jethexa_dynamics.model import jethexa

    from .mjcf import MujocoHexapod

    cmd = _checked_command(command, 0.0, seconds, dt_cmd)
    eng = Engine(robot or jethexa(), gait=None, record_every=0)
    eng.step(0)
    loop = GaitLoop.build(engine=eng, recovery=True, robot=eng.robot, design_command=command, step_height=0.012)
    loop.set_morphology(damage)
    loop.walker.set_command(cmd)
    names, q = _stand_in_the_gaits_stance(eng, loop)
    lpl = list(eng.morphology.links_per_leg)
    dt = float(mjcf.pop("dt", 1e-3))
    mj = MujocoHexapod(eng.robot, links_per_leg=lpl, dt=dt, **mjcf)
    targets = np.array(eng.setpoints(), dtype=float)
    base = eng.p.copy()
    base[2] += float(mjcf.get("foot_radius", 0.002))     # MuJoCo's feet are spheres: the base stands that higher
    mj.reset(base, eng.R, targets)
    hold = HeadingHold(enabled=True)
    samples = _Samples()
    n_sub = max(1, int(round(dt_cmd / dt)))
    for k in range(int(round(seconds / dt_cmd))):
        t = k * n_sub * dt
        qw = mj.data.qpos[3:7]
        yaw = quat2euler(qw)[2]
        trimmed = hold.update(cmd, t, dt_cmd, gyro_z=float(mj.data.qvel[5]), yaw=yaw, odom_xy=mj.data.qpos[0:2])
        loop.walker.set_trim(trimmed)
        names, q, _ = loop.command(dt_cmd, walking=True)
        targets[loop.joints(names)] = q
        mj.set_targets(targets)
        mj.step(n_sub)
        samples.add_state((k + 1) * n_sub * dt, mj.data.qpos[0:3].copy(), quat2euler(mj.data.qpos[3:7]),
                          mujoco_margin(mj), cmd, loop.walker.status()["gait"])   # MuJoCo's quaternion is (w, x, y, z)
    run = samples.run(0.0, None, [])
    run.segments["after"] = segment_metrics(run.t, run.pos, run.rpy, run.margin, run.command, 0.0, skip, seconds)
    return run


TABLE_HEADER = ("| damage | speed m/s | heading deg/10 s | lateral m/m | min margin m | max roll/pitch deg | gait "
                "(recovery on) | speed m/s | heading deg/10 s | lateral m/m | min margin m | max roll/pitch deg | gait "
                "(recovery off) |\n|" + "---|" * 13)


MUJOCO_HEADER = ("| damage | speed m/s | % of the command | heading deg/10 s | lateral m/m | min margin m "
                 "| max roll/pitch deg | gait |\n|" + "---|" * 8)


def format_mujoco_row(label, run, command: float = 0.05) -> str:
    s = run.segments["after"]
    return "| %s | %.4f | %.0f | %+.2f | %.3f | %+.4f | %.2f/%.2f | %s |" % (
        label, s["speed_mps"], 100.0 * s["speed_mps"] / command, s["heading_drift_deg_per_10s"], s["lateral_per_m"],
        s["min_margin_m"], s["max_roll_deg"], s["max_pitch_deg"], run.gait[-1])


def main(argv=None):
    """``python -m jethexa_dynamics.sim.recovery [--after S] [--only LABEL] [--plant engine|mujoco]``: the
    acceptance table (markdown) on stdout: on the engine recovery on and off, from the damage mid-walk; on MuJoCo
    recovery on, from the re-planned stance."""
    from jethexa_dynamics.cli_args import ArgumentParser   # one-line errors, exit 2
    ap = ArgumentParser(prog="python -m jethexa_dynamics.sim.recovery")
    ap.add_argument("--after", type=float, default=20.0, help="seconds walked after the damage (default 20)")
    ap.add_argument("--only", default=None, help="one case label, e.g. LM:0 or damage1")
    ap.add_argument("--plant", choices=("engine", "mujoco"), default="engine",
                    help="the plant: the project's engine (default) or MuJoCo (sim.mjcf; needs mujoco)")
    args = ap.parse_args(argv)
    if not (math.isfinite(args.after) and 3.0 <= args.after <= 600.0):
        ap.exit(2, "--after=%r outside the allowed range [3, 600] s\n" % args.after)
    cases = [(label, v) for label, v in acceptance_cases() if not args.only or label == args.only]
    if not cases:
        ap.exit(2, "--only=%r is not a case (the single-leg losses LF:0 .. RR:2, damage1, damage2)\n" % args.only)
    print(TABLE_HEADER if args.plant == "engine" else MUJOCO_HEADER)
    for label, v in cases:
        if args.plant == "mujoco":
            print(format_mujoco_row(label, run_recovery_mujoco(v, seconds=args.after)), flush=True)
            continue
        on = run_recovery(v, recovery=True, after=args.after)
        off = run_recovery(v, recovery=False, after=args.after)
        print(format_row(label, on, off), flush=True)
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main())

