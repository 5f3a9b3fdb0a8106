"""``jethexa-identify BAG``: replay a bag through the damage identifier; which morphology, and when?

Reads joint commands, joint states, the IMU (orientation, rates) and, if present, the ``morphology`` topic
(taken as servo evidence) from a rosbag2 bag (the topic options of ``jethexa-validate``), feeds them to
:class:`~jethexa_dynamics.damage.identification.DamageIdentifier` and prints a table of the morphology
changes; writes ``identify.json`` (format ``jethexa-identify/1``, below) and ``probabilities.png`` (the
hypotheses' probabilities over time)::

    {"format": "jethexa-identify/1", "leg_names": ["LF", ...],
     "events": [{"t_s": 0.0, "morphology": {"LF": 3, ...}, "source": "initial"},
                {"t_s": 9.6, "morphology": {"LF": 3, "LM": 1, ...}, "source": "model", "probability": 0.97,
                 "alternatives": [{"morphology": {"LF": 3, "LM": 0, ...}, "share": 0.31}]}],
     "final_morphology": {"LF": 3, ...},
     "body": {"mass_kg": 1.69, "com_m": [0.0102, -0.0005, 0.0], "seconds": 30.0, "urdf_mass_kg": 1.35, ...}}

``t_s``: seconds from the bag start; every morphology maps each leg to its intact link count (3 = healthy).
``alternatives`` (model events, only when there are some): the changed leg's other link counts whose share of
that leg's probability is at least ``AMBIGUOUS_SHARE`` (0.2): the motion did not tell them apart.
``body`` (null with less than 5 s of usable walking, when joint_states messages carry only some joints, or for an
estimate no body can have): the main body's mass and CoM (base_link; z the URDF's) from the servos' load
(:mod:`~jethexa_dynamics.damage.body_load`, the servo law of ``--servo-kp/-ki/-kd/-damping``: by default
the emulated servo's), beside the URDF's.
Exit status 0 done, 2 bad bag or option (one line on stderr, before any work).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from jethexa_dynamics.model import format_morphology
from jethexa_dynamics.validation.cli import add_window_and_topic_arguments, read_args_bag
from jethexa_dynamics.validation.errors import BagError
from jethexa_dynamics.validation.replay import carried_matrix

from .body_load import BodyLoadEstimator, implausible, partial_reads
from .identification import FORMAT, DamageIdentifier, IdentifierConfig


def _initial_spec(text: str):
    from jethexa_dynamics.model import LeggedRobot, Morphology
    return Morphology.parse(LeggedRobot.jethexa(), text)


def add_servo_law_arguments(p: argparse.ArgumentParser) -> None:
    """The servo law the body estimate reads the load with (``control.servo_law``; damage_monitor's
    ``body_servo_*`` parameters): ``--servo-kp``, ``--servo-ki``, ``--servo-kd``, ``--servo-damping``."""
    from jethexa_dynamics.cli_args import number
    from jethexa_dynamics.control.servo_law import PAPER_GAINS, SERVO_DAMPING, SERVO_GAINS

    g = p.add_argument_group("servo law (the body estimate)")
    for (name, lo, hi, unit), default in zip(SERVO_GAINS, PAPER_GAINS):
        g.add_argument("--servo-" + name, type=number(lo, hi, unit=unit), default=default, metavar="X",
                       help="the servos' %s, [%g, %g] %s (default %g, the emulated servo's)" % (
                           name, lo, hi, unit, default))
    g.add_argument("--servo-damping", choices=SERVO_DAMPING, default=SERVO_DAMPING[0],
                   help="where the servos' kd acts: error (the tracking error's rate, the emulated servo) or rate "
                        "(the joint's own rate, a position actuator) (default error)")


def servo_law(args):
    """The servo law of ``args`` (``add_servo_law_arguments``): ((kp, ki, kd), damping)."""
    return (args.servo_kp, args.servo_ki, args.servo_kd), args.servo_damping


def build_parser() -> argparse.ArgumentParser:
    """The options, each checked while parsing (one line naming the option, exit status 2, before any work)."""
    from jethexa_dynamics.cli_args import ArgumentParser, checked, existing_path, number, output_dir, output_file

    p = ArgumentParser(
        prog="jethexa-identify",
        description="Replay a JetHexa rosbag2 bag through the damage identifier (a bank of modular-model "
                    "predictions, one per morphology hypothesis) and report the morphology changes it finds.",
        epilog="Exit status 0 on success, 2 for a bad bag or option. See docs/identification.md.")
    p.add_argument("bag", type=existing_path,
                   help="rosbag2 directory (MCAP or sqlite3), or its metadata.yaml / storage file, or a ROS 1 .bag "
                        "(--layout nano-ros1)")
    g = p.add_argument_group("identifier")

    def tuning(name, what, **kind):
        """An option of the identifier's tuning: its range and default are IdentifierConfig's."""
        lo, hi = IdentifierConfig.allowed_range(name)
        default = getattr(IdentifierConfig(), name)
        g.add_argument("--" + name, type=number(lo, hi, **kind), default=default,
                       help="%s, [%g, %g] (default %g)" % (what, lo, hi, default))

    tuning("window", "seconds between re-anchors", unit="s")
    tuning("threshold", "probability a change needs")
    tuning("confirm", "consecutive windows above it", integer=True)
    g.add_argument("--initial", default="healthy", metavar="SPEC", type=checked(_initial_spec),
                   help="morphology at the bag start: healthy, LM:1, 'LM:1 RR:1', scenario2 ... (default healthy)")
    add_window_and_topic_arguments(p, layouts=True)   # as jethexa-validate (the morphology topic: servo evidence)
    add_servo_law_arguments(p)
    g = p.add_argument_group("output")
    g.add_argument("--out", metavar="DIR", default=None, type=output_dir,
                   help="output directory (default: <bag>_identify)")
    g.add_argument("--json", metavar="FILE", default=None, type=output_file,
                   help="JSON report path (default: OUT/identify.json)")
    g.add_argument("--no-plots", action="store_true", help="skip the PNG plot")
    g.add_argument("--quiet", action="store_true", help="no table on stdout")
    return p


def identify(bag, idf, initial, *bodies):
    """Feed ``bag`` (``BagData``) through ``idf`` (and ``bodies``, ``BodyLoadEstimator`` objects, each told the
    identifier's morphology); returns the wall time (s)."""
    from jethexa_dynamics.validation.replay import COMMAND, IMU, JOINT_STATES, MORPHOLOGY, bag_events, joint_matrix

    index = {n: k for k, n in enumerate(idf.joint_names)}
    unknown = [n for n in bag.commands.names if n not in index]
    if unknown:
        raise ValueError("commands name joints the robot does not have: %s" % ", ".join(unknown))
    cols = np.array([index[n] for n in bag.commands.names], dtype=np.int64)
    js = None if bag.joint_states is None else joint_matrix(bag.joint_states, idf.joint_names)
    # the body estimator takes only the joints each message read (a bus reads a few servos per cycle), with each
    # one's set-point at its reading where the bag has servo_driver's (joint_states/setpoint)
    read = None if js is None or not bodies else np.where(carried_matrix(bag.joint_states, idf.joint_names),
                                                         js, np.nan)
    sp = None if read is None or bag.setpoints is None else joint_matrix(bag.setpoints, idf.joint_names)
    cmd, imu, mo = bag.commands, bag.imu, bag.morphology
    # a stock bag has the commanded joints only: the identifier anchors its windows on them (servos track their
    # commands within a move time; no measured joint, so no servo evidence from them)
    anchor_on_commands = js is None and bag.layout != "native"
    if anchor_on_commands:
        cmd_full = np.full((len(cmd), len(idf.joint_names)), np.nan)
        cmd_full[:, cols] = cmd.q
    tic = time.perf_counter()
    sinks = (idf,) + bodies
    for t, kind, i in bag_events(bag):
        i, kind = int(i), int(kind)
        if kind == COMMAND:
            for s in sinks:
                s.on_command(t, cmd.q[i], cmd.t_target[i], joints=cols)
            if anchor_on_commands:
                idf.on_joints(t, cmd_full[i])
        elif kind == IMU:
            for s in sinks:
                s.on_imu(t, imu.quat[i], imu.gyro[i], imu.accel[i])
        elif kind == JOINT_STATES:
            idf.on_joints(t, js[i])
            for body in bodies:
                body.on_joints(t, read[i], None if sp is None else sp[i])
        elif kind == MORPHOLOGY:
            idf.on_servo_morphology(t, [min(int(a), b) for a, b in zip(mo.links[i], initial)])
        for body in bodies:
            body.on_morphology(idf.morphology)
    return time.perf_counter() - tic


def report(idf, t0, initial, wall, bag, body=None):
    legs = idf.leg_names

    def named(links):
        return {leg: int(n) for leg, n in zip(legs, links)}
    events = [{"t_s": float(t0), "morphology": named(initial), "source": "initial"}]
    for e in idf.events:
        ev = {"t_s": round(float(e["t"]), 4), "morphology": named(e["morphology"]), "source": e["source"],
              "probability": round(float(e["probability"]), 4)}
        if e.get("alternatives"):
            ev["alternatives"] = [{"morphology": named(links), "share": round(s, 4)} for links, s in e["alternatives"]]
        events.append(ev)
    top = [{"morphology": named(links), "probability": round(p, 4)} for links, p in idf.top(3)]
    return {"format": FORMAT, "leg_names": legs, "events": events, "final_morphology": named(idf.morphology),
            "bag": str(bag.path), "window_s": list(bag.window), "duration_s": bag.window[1] - bag.window[0],
            "wall_time_s": wall, "real_time_factor": (bag.window[1] - bag.window[0]) / wall if wall > 0 else None,
            "windows": idf.windows, "bank_windows": idf.bank_windows, "final_top": top,
            "rejected_samples": dict(idf.rejections), "gyro_bias_z_rad_s": idf.gyro_bias,
            "body": _body(body), "layout": bag.layout, "unavailable": list(bag.unavailable),
            "notes": list(bag.notes)}


def body_unreadable(bag, robot) -> str:
    """Why ``bag`` cannot give the body from the servos' load ('' if it can): no joint_states, or joint_states
    carrying a few joints per message (each reading's time only the message's) without the servo driver's
    set-point at each reading (``joint_states/setpoint``, which gives the body estimate what it needs)."""
    if bag.joint_states is None:
        return "no joint_states (the servos' readings) in the window"
    if bag.setpoints is not None and bag.setpoints.carried.any():
        return ""
    why = partial_reads(carried_matrix(bag.joint_states, robot.joint_names))
    return why and why + ", and the bag has no set-point at each reading (servo_driver's joint_states/setpoint, " \
        "--setpoints-topic)"


def _body(body):
    """The body's mass and CoM from the servos' load (``damage.body_load``), or None (too little walking, or an
    estimate no body can have: the recording's timing, ``body_load.TIMING_NOTE``)."""
    est = body.estimate() if body is not None else None
    if est is None or implausible(est, body.robot):
        return None
    return {"mass_kg": round(est.mass, 4), "com_m": [round(float(c), 5) for c in est.com],
            "seconds": round(est.seconds, 2), "servo_lag_s": round(est.lag, 5), "urdf_mass_kg": body.body_mass_model,
            "urdf_com_m": [float(c) for c in body.body_com_model]}


def format_table(rep) -> str:
    legs = rep["leg_names"]
    lines = ["%8s  %-22s  %-8s  %s" % ("t [s]", "morphology", "source", "probability"), "-" * 54]
    for e in rep["events"]:
        m = e["morphology"]
        dmg = format_morphology([m[leg] for leg in legs], legs)
        p = e.get("probability")
        alt = "".join("; or %s (%.0f %% of the leg)" % (format_morphology([a["morphology"][leg] for leg in legs], legs),
                                                      100 * a["share"]) for a in e.get("alternatives", ()))
        lines.append("%8.2f  %-22s  %-8s  %s%s" % (e["t_s"], dmg, e["source"], "-" if p is None else "%.3f" % p, alt))
    lines.append("%d windows (%d with the whole bank), %.1f s of bag in %.2f s (%.1fx real time)"
                 % (rep["windows"], rep["bank_windows"], rep["duration_s"], rep["wall_time_s"],
                    rep["real_time_factor"] or float("inf")))
    b = rep.get("body")
    if b is not None:
        lines.append("body (from the servos' load, %.0f s): %.3f kg (URDF %.3f), CoM (%.1f, %.1f, %.1f) mm "
                     "(URDF (%s) mm)"
                     % ((b["seconds"], b["mass_kg"], b["urdf_mass_kg"]) + tuple(1e3 * c for c in b["com_m"])
                        + (", ".join("%.1f" % (1e3 * c) for c in b["urdf_com_m"]),)))
    if rep.get("unavailable"):
        lines.append("%s bag, commanded joints only: no %s" % (rep["layout"], ", no ".join(rep["unavailable"][1:])))
    if rep["rejected_samples"]:
        lines.append("rejected samples: " + ", ".join("%s %d" % kv for kv in rep["rejected_samples"].items()))
    return "\n".join(lines)


def plot_probabilities(idf, path, title=""):
    """PNG of each hypothesis' probability per window (the hypotheses that ever exceed 5 %)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = {}
    for k, (t, lst) in enumerate(idf.history):
        for links, p in lst:
            series.setdefault(links, np.full(len(idf.history), np.nan))[k] = p
    t = np.array([h[0] for h in idf.history])
    fig, ax = plt.subplots(figsize=(9, 4))
    for links, p in series.items():
        if np.nanmax(p) > 0.05:
            ax.plot(t, p, drawstyle="steps-pre", label=idf.describe(links))
    for e in idf.events:
        ax.axvline(e["t"], color="k", lw=0.8, ls="--")
    ax.set_xlabel("t [s] from the bag start")
    ax.set_ylabel("probability")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title or "morphology hypotheses")
    ax.legend(loc="center left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def run(args) -> dict:
    from jethexa_dynamics.model import LeggedRobot, Morphology

    robot = LeggedRobot.jethexa()
    # the options were checked while parsing (build_parser): --initial parses, ranges hold
    initial = list(Morphology.parse(robot, args.initial).links_per_leg)
    bag = read_args_bag(args)
    idf = DamageIdentifier(robot, window=args.window, threshold=args.threshold, confirm=args.confirm,
                           morphology=initial)
    gains, damping = servo_law(args)
    body = None if body_unreadable(bag, robot) else BodyLoadEstimator(robot, gains=gains, damping=damping)
    wall = identify(bag, idf, initial, *(() if body is None else (body,)))
    out = Path(args.out) if args.out else bag.path.parent / (bag.path.name + "_identify")
    out.mkdir(parents=True, exist_ok=True)
    rep = report(idf, bag.window[0], initial, wall, bag, body)
    if bag.joint_states is None and bag.layout != "native":
        rep["notes"].append("the identifier's windows start from the commanded joint angles (none measured)")
    files = {"json": str(args.json or out / "identify.json")}
    if not args.no_plots:
        files["plot"] = str(plot_probabilities(idf, out / "probabilities.png", title=bag.path.name))
    rep["files"] = files
    Path(files["json"]).parent.mkdir(parents=True, exist_ok=True)
    with open(files["json"], "w") as f:
        json.dump(rep, f, indent=1)
    return rep


def main(argv=None) -> int:
    from jethexa_dynamics.cli_args import parse_and_run

    status, args, rep = parse_and_run("jethexa-identify", build_parser(), run, argv, (BagError, ValueError, OSError))
    if rep is None:
        return status
    if not args.quiet:
        print(format_table(rep))
        print("\nreport: {}\nplot:   {}".format(rep["files"]["json"], rep["files"].get("plot", "-")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
