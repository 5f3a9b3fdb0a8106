"""``jethexa-sim``: run the paper's experiments (healthy / damage 1 / damage 2) and write CSV + plots.

Example::

    jethexa-sim --scenario damage2 --duration 5 --out out/damage2
    jethexa-sim --scenario damage1 --damage-at 2.0 --gait tripod --out out/d1_mid

Writes ``trajectory.csv`` (t, x, y, z, roll, pitch, yaw, ... SI units, world frame, ZYX Euler angles),
``orientation.png`` and ``position.png`` (like the paper's Figs. 3-4, 6-7) and ``summary.txt``.
"""
import functools
import math
import os
import sys
import time

import numpy as np

from jethexa_dynamics.model.scenarios import ALIASES, SCENARIOS, canonical_scenario


def summarize(traj, wall_time=None):
    """Key numbers of a run: distance walked (net horizontal displacement, m), mean forward speed (m/s),
    lateral drift (m), peak |roll|/|pitch| (deg), final yaw (deg), height range (m), real-time factor."""
    t, p, e = traj.t, traj.pos, np.rad2deg(traj.euler)
    T = float(t[-1] - t[0]) if len(t) > 1 else 0.0
    d = p[-1] - p[0]
    out = {
        "duration_s": T,
        "distance_m": float(math.hypot(d[0], d[1])),
        "forward_m": float(d[0]),
        "lateral_m": float(d[1]),
        "mean_speed_mps": float(d[0] / T) if T > 0 else 0.0,
        "peak_roll_deg": float(np.abs(e[:, 0]).max()),
        "peak_pitch_deg": float(np.abs(e[:, 1]).max()),
        "final_yaw_deg": float(e[-1, 2]),
        "z_min_m": float(p[:, 2].min()),
        "z_max_m": float(p[:, 2].max()),
    }
    if wall_time:
        out["wall_time_s"] = float(wall_time)
        out["real_time_factor"] = T / wall_time if wall_time > 0 else float("inf")
    return out


def summary_paragraph(scenario, gait, s, dt, damage_at=None):
    when = " (healthy until t = %.2f s)" % damage_at if damage_at is not None else ""
    text = ("Scenario %s%s, %s gait, %.2f s at dt = %g s: the body moved %.3f m forward and %.3f m sideways "
            "(distance %.3f m, mean forward speed %.4f m/s), peak |roll| %.2f deg, peak |pitch| %.2f deg, "
            "final yaw %.2f deg, body height %.4f-%.4f m."
            % (scenario, when, gait, s["duration_s"], dt, s["forward_m"], s["lateral_m"], s["distance_m"],
               s["mean_speed_mps"], s["peak_roll_deg"], s["peak_pitch_deg"], s["final_yaw_deg"], s["z_min_m"],
               s["z_max_m"]))
    if "real_time_factor" in s:
        text += " Simulated in %.3f s of wall time: %.1fx faster than real time." % (s["wall_time_s"],
                                                                                      s["real_time_factor"])
    return text


class Progress:
    """A plain text progress bar on stderr (no dependency); one line per 10 % when not on a terminal."""

    def __init__(self, total, enabled=True, width=30, stream=None):
        self.total, self.enabled, self.width = total, enabled, width
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = -1

    def __call__(self, engine):
        if not self.enabled:
            return
        frac = min(1.0, engine.time / self.total) if self.total > 0 else 1.0
        pct = int(frac * 100) if self.tty else 10 * int(frac * 10)
        if pct == self._last:
            return
        self._last = pct
        n = int(frac * self.width)
        self.stream.write("%s[%s%s] %3d%%  t = %.2f / %.2f s" % ("\r" if self.tty else "", "#" * n,
                                                                 "." * (self.width - n), pct, engine.time,
                                                                 self.total))
        if pct == 100 or not self.tty:
            self.stream.write("\n")
        self.stream.flush()


def _break_spec(text, robot=None):
    """A --break spec must parse (against ``robot()``, default the bundled JetHexa) and break something."""
    from jethexa_dynamics.model import LeggedRobot, Morphology
    links = Morphology.parse(robot() if robot is not None else LeggedRobot.jethexa(), text).links_per_leg
    if all(n == 3 for n in links):
        raise ValueError("%r breaks nothing (give a leg and its intact links, e.g. LM:1)" % text)
    return links


def build_parser(robot=None):
    """The options, each checked while parsing (one line naming the option, exit status 2, before any work).

    The numeric ranges are those the engine, gait and contact model accept (``Engine``, ``Gait``,
    ``ContactModel``); the --out directory is created/probed here, so a bad path fails before simulating.
    ``robot``: a callable returning the ``LeggedRobot`` that --break specs are parsed against (``main`` passes
    the one ``run`` then simulates, so the URDF is parsed once); default the bundled JetHexa.
    """
    from jethexa_dynamics.cli_args import ArgumentParser, checked, number, output_dir
    from jethexa_dynamics.control.gait import GAIT_KINDS

    from .contact import FRICTION_MODELS

    def break_spec(text):
        return _break_spec(text, robot)

    ap = ArgumentParser(prog="jethexa-sim", description="Simulate the JetHexa (paper 003 Sec. VI): "
                        "gait, IK, PID, contact and the modular whole-body dynamics.")
    ap.add_argument("--scenario", default="healthy", choices=tuple(SCENARIOS) + tuple(ALIASES),
                    help="|".join(SCENARIOS) + " (paper Sec. VI-B; aliases " + "|".join(ALIASES) + ")")
    ap.add_argument("--gait", default="tripod", choices=GAIT_KINDS, help="|".join(GAIT_KINDS))
    ap.add_argument("--duration", type=number(0.0, 3600.0, lo_open=True, unit="s"), default=5.0,
                    help="simulated time [s] (default 5)")
    ap.add_argument("--dt", type=number(1e-5, 0.005, unit="s"), default=1e-3, help="time step [s] (default 0.001)")
    ap.add_argument("--break", dest="breaks", default=None, metavar="SPEC", type=checked(break_spec),
                    help="silent break (links lost, servos keep answering): LM:1, RR:0, 'LM:1 RR:1', scenario2; "
                         "from --damage-at on (default from the start)")
    ap.add_argument("--damage-at", type=number(0.0, 3600.0, unit="s"), default=None, metavar="SECONDS",
                    help="walk healthy, then switch to --scenario (and/or --break) at this time [s]")
    ap.add_argument("--out", default=None, type=output_dir,
                    help="output directory (trajectory.csv, PNG plots, summary.txt)")
    ap.add_argument("--step-length", type=number(0.0, 0.2, unit="m"), default=0.05,
                    help="stride [m] (Table IV: 0.05)")
    ap.add_argument("--step-height", type=number(0.0, 0.15, unit="m"), default=0.012,
                    help="swing apex [m] (default 0.012)")
    ap.add_argument("--cycle-time", type=number(0.1, 20.0, unit="s"), default=1.3,
                    help="gait cycle [s] (Table IV: 1.3)")
    ap.add_argument("--body-height", type=number(0.02, 0.24, unit="m"), default=0.12,
                    help="hip height H_0 [m] (Table IV: 0.12)")
    ap.add_argument("--yaw-rate", type=number(-5.0, 5.0, unit="rad/s"), default=0.0,
                    help="commanded yaw rate [rad/s]")
    ap.add_argument("--friction", default="viscous", choices=FRICTION_MODELS, help="viscous (paper) | coulomb")
    ap.add_argument("--mu", type=number(0.0, 10.0), default=0.8, help="friction coefficient for --friction coulomb")
    ap.add_argument("--settle", type=number(0.0, 60.0, unit="s"), default=0.0,
                    help="stand still this long before walking [s]")
    ap.add_argument("--recovery", default=None, choices=("on", "off"),
                    help="closed-loop damage recovery run: the gait controller's logic drives the "
                    "servos at 50 Hz, re-planned gait + heading hold (on) or the plain wave (off); walks --damage-at "
                    "s healthy (default 3) then --duration s damaged at 0.05 m/s and prints the per-segment figures")
    ap.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    ap.add_argument("--record-rate", type=number(0.0, 1e6, lo_open=True, unit="Hz"), default=None, metavar="HZ",
                    help="rows per simulated second in trajectory.csv (default 100 or 1/dt if lower: 130 points per "
                         "1.3 s gait cycle, enough for the plots; at most 1/dt = every step)")
    return ap


def _checked_record_rate(args):
    """Refuse a bad --scenario, --gait, --duration or --record-rate (ValueError naming it; the scenario's alias
    is replaced by its name); returns the CSV's rows per simulated second (Hz)."""
    from jethexa_dynamics.control.gait import GAIT_KINDS

    scenario = canonical_scenario(args.scenario)
    if scenario is None:
        raise ValueError("--scenario must be one of %s (aliases %s), got %r"
                         % ("|".join(SCENARIOS), "|".join(ALIASES), args.scenario))
    args.scenario = scenario
    if args.gait not in GAIT_KINDS:
        raise ValueError("--gait must be one of %s, got %r" % ("|".join(GAIT_KINDS), args.gait))
    if not (math.isfinite(args.duration) and 0.0 < args.duration <= 3600.0):
        raise ValueError("--duration=%r outside the allowed range (0, 3600] s" % (args.duration,))
    rate = args.record_rate
    if rate is None:
        rate = min(100.0, 1.0 / args.dt) if args.dt > 0.0 else 100.0    # a bad --dt is reported by the engine
    elif not (math.isfinite(rate) and 0.0 < rate * args.dt <= 1.0 + 1e-9):
        raise ValueError("--record-rate=%r outside the allowed range (0, 1/dt = %g] Hz" % (rate, 1.0 / args.dt))
    return rate


def _checked_breaks(args, robot):
    """--break as a ``Morphology`` of ``robot`` (None without it), and --damage-at checked against the damage it
    times (ValueError naming the option)."""
    breaks = None
    if args.breaks is not None:
        from jethexa_dynamics.model import Morphology
        try:
            breaks = Morphology.parse(robot, args.breaks)
        except ValueError as e:
            raise ValueError("--break: %s" % e) from None
    if args.damage_at is not None:
        if args.scenario == "healthy" and breaks is None:
            raise ValueError("--damage-at needs a damage scenario (--scenario damage1|damage2) or --break SPEC")
        if not (math.isfinite(args.damage_at) and 0.0 <= args.damage_at <= args.duration):
            raise ValueError("--damage-at=%r outside the allowed range [0, %g] s (the duration)"
                             % (args.damage_at, args.duration))
    return breaks


def _experiment(args, robot, rate, breaks):
    """The engine of the experiment (gait, contact, damage from the start) and the damage it switches to later:
    (engine, morphology_at, breaks_at) as ``Engine.run`` takes them."""
    from jethexa_dynamics.control.gait import Gait
    from jethexa_dynamics.control.ik import LegGeometry
    from jethexa_dynamics.model.scenarios import scenario_morphology

    from .contact import ContactModel
    from .engine import Engine

    contact = ContactModel(friction=args.friction, mu=args.mu)
    gait = Gait(LegGeometry.from_robot(robot), kind=args.gait, cycle_time=args.cycle_time, step_height=args.step_height,
                body_height=args.body_height, step_length=args.step_length)
    if args.yaw_rate:
        gait.set_command((gait.command[0], 0.0, args.yaw_rate))
    damaged = scenario_morphology(robot, args.scenario)
    engine = Engine(robot, gait=gait, dt=args.dt, contact=contact, settle=args.settle,
                    morphology=damaged if args.damage_at is None else None,
                    record_every=max(1, int(round(1.0 / (rate * args.dt)))))
    switch = None if args.damage_at is None or args.scenario == "healthy" else (args.damage_at, damaged)
    breaks_at = None
    if breaks is not None:
        if args.damage_at is None:
            engine.set_breaks(breaks)
        else:
            breaks_at = (args.damage_at, breaks)
    return engine, switch, breaks_at


def _simulate(engine, args, csv_path, switch, breaks_at):
    """Run ``engine`` for --duration with the progress bar, the CSV written to ``csv_path`` (if given) while it
    steps; returns (trajectory, wall time of the run in s)."""
    from .csv_writer import TrajectoryCsvWriter

    engine.step(0)                      # compile (or load the numba cache) outside the timing
    progress = Progress(args.duration, enabled=not args.quiet)
    writer = None
    if csv_path is not None:
        os.makedirs(os.path.dirname(csv_path) or ".", exist_ok=True)
        writer = TrajectoryCsvWriter(csv_path, engine)
    w0 = time.perf_counter()
    # 1 s chunks, one compiled call each: the rows of a chunk go to the CSV writer's thread, which formats them
    # while the next chunk steps. Longer chunks mean fewer Python round trips and thread wake-ups (0.25 s chunks
    # cost ~0.05x of the stepping more CPU under load, benchmarks/results/sim.md), shorter ones a shorter CSV tail
    # after the last step; at ~200x real time the progress bar still updates every ~5 ms
    try:
        traj = engine.run(args.duration, chunk=1.0, callback=progress, morphology_at=switch, breaks_at=breaks_at,
                          on_rows=None if writer is None else writer.add)
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    wall = time.perf_counter() - w0
    if writer is not None:
        traj.use_euler(writer.close())
    return traj, wall


def run(args, csv_path=None, make_robot=None):
    """Run one experiment from parsed arguments; returns (trajectory, summary dict, paragraph). ``csv_path``:
    write the trajectory CSV there while simulating (``TrajectoryCsvWriter``; its directory is created);
    ``make_robot``: a callable returning the healthy ``LeggedRobot`` to simulate, called once the arguments are
    checked (default ``LeggedRobot.jethexa``)."""
    from jethexa_dynamics.model import LeggedRobot

    rate = _checked_record_rate(args)
    robot = (make_robot or LeggedRobot.jethexa)()
    breaks = _checked_breaks(args, robot)
    engine, switch, breaks_at = _experiment(args, robot, rate, breaks)
    traj, wall = _simulate(engine, args, csv_path, switch, breaks_at)
    s = summarize(traj, wall)
    text = summary_paragraph(args.scenario, args.gait, s, args.dt, args.damage_at)
    if breaks is not None:
        from jethexa_dynamics.model import format_morphology
        text += " Silent break %s (servos keep answering)%s." % (
            format_morphology(breaks.links_per_leg, robot.leg_names),
            "" if args.damage_at is None else " at t = %.2f s" % args.damage_at)
    return traj, s, text


def recovery_report(run):
    """Per-segment lines: forward speed vs command, heading drift, lateral drift, min margin, max roll/pitch."""
    out = []
    for name, s in run.segments.items():
        out.append("%-6s speed %.4f m/s (command %.3f), heading drift %+.2f deg/10 s, lateral drift %.3f m/m, "
                   "min stability margin %+.4f m, max roll %.2f deg, max pitch %.2f deg"
                   % (name, s["speed_mps"], s["command_mps"], s["heading_drift_deg_per_10s"], s["lateral_per_m"],
                      s["min_margin_m"], s["max_roll_deg"], s["max_pitch_deg"]))
    return out


def run_recovery_cli(args):
    from .recovery import run_recovery
    scenario = canonical_scenario(args.scenario)   # the one alias table (scenario1 = damage1, ...)
    if scenario is None:
        raise ValueError("--scenario must be one of %s, got %r" % ("|".join(SCENARIOS), args.scenario))
    if scenario == "healthy":
        raise ValueError("--recovery needs a damage scenario (--scenario damage1|damage2)")
    before = 3.0 if args.damage_at is None else args.damage_at
    if not (math.isfinite(before) and 0.0 <= before <= 600.0):
        raise ValueError("--damage-at=%r outside the allowed range [0, 600] s" % (before,))
    if not (math.isfinite(args.duration) and 3.0 <= args.duration <= 600.0):
        raise ValueError("--duration=%r outside the allowed range [3, 600] s with --recovery" % (args.duration,))
    runs = {}
    for mode in (args.recovery, "off" if args.recovery == "on" else "on"):
        runs["recovery " + mode] = run_recovery(scenario, recovery=(mode == "on"), before=before,
                                                after=args.duration, command=(0.05, 0.0, args.yaw_rate))
    for label, r in runs.items():
        print("%s, %s (gait after the damage: %s):" % (args.scenario, label, r.gait[-1]))
        for line in recovery_report(r):
            print("  " + line)
    if args.out:
        from .trajectory import open_new
        os.makedirs(args.out, exist_ok=True)
        with open_new(os.path.join(args.out, "summary.txt")) as f:
            for label, r in runs.items():
                f.write("%s\n%s\n" % (label, "\n".join(recovery_report(r))))
        if not args.no_plots:
            from .plots import plot_recovery
            plot_recovery(runs, os.path.join(args.out, "recovery.png"), "%s: recovery on/off" % args.scenario)
        print("wrote %s" % args.out)
    return 0


def _jethexa():
    from jethexa_dynamics.model import LeggedRobot
    return LeggedRobot.jethexa()


def main(argv=None):
    # built on first use only (not for --help or a bad option), then shared by --break's check and the run
    robot = functools.lru_cache(maxsize=None)(_jethexa)
    try:
        args = build_parser(robot).parse_args(argv)
    except SystemExit as exc:  # a bad option (one line already printed) or --help
        return exc.code
    if args.recovery is not None:
        try:
            return run_recovery_cli(args)
        except ValueError as e:
            print("jethexa-sim: error: %s" % e, file=sys.stderr)
            return 2
    try:
        traj, s, text = run(args, csv_path=os.path.join(args.out, "trajectory.csv") if args.out else None,
                            make_robot=robot)
    except ValueError as e:
        print("jethexa-sim: error: %s" % e, file=sys.stderr)
        return 2
    print(text)
    if args.out:
        from .trajectory import open_new
        with open_new(os.path.join(args.out, "summary.txt")) as f:
            f.write(text + "\n")
            for k, v in s.items():
                f.write("%s: %.6g\n" % (k, v))
        if not args.no_plots:
            from .plots import plot_orientation, plot_position
            title = "%s, %s gait" % (args.scenario, args.gait)
            plot_orientation(traj, os.path.join(args.out, "orientation.png"), "Body orientation: " + title)
            plot_position(traj, os.path.join(args.out, "position.png"), "Body CoM position: " + title)
        print("wrote %s" % args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
