"""``jethexa-validate BAG``: how well does the model predict the robot recorded in a rosbag2 bag?

Reads joint commands/states, IMU orientation, morphology and (optionally) a ground-truth pose from the
bag, replays the inputs through a predictor faster than real time and compares its predicted body
orientation/position with the measurements. Prints a table, writes ``report.json``, ``timeseries_*.csv``
and PNG plots. Exit status: 0 = done, 2 = bad bag or bad option (message on stderr, no traceback).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jethexa_dynamics.model import body_params
from jethexa_dynamics.predictors import registry

from . import bag_io, metrics, replay as replay_mod
from .errors import EXIT_BAD_INPUT, BagError
from .topics import TopicNames

#: the modular whole-body model (the names match the predictor node's `predictor` parameter)
DEFAULT_PREDICTOR = "boltzmann_hamel"


def _predictor(name: str) -> str:
    names = registry.predictor_names()
    if name not in names:
        raise argparse.ArgumentTypeError("unknown predictor {!r}; available: {}".format(name, ", ".join(names)))
    return name


def build_parser() -> argparse.ArgumentParser:
    """The options, each checked while parsing: one line naming the option, exit status 2, before any work."""
    from jethexa_dynamics.cli_args import (ArgumentParser, checked, existing_file, existing_path, number, output_dir,
                                           output_file, topic_name)

    p = ArgumentParser(
        prog="jethexa-validate",
        description="Replay a JetHexa rosbag2 bag through the dynamics predictor and report how well it predicts "
                    "the measured body orientation (IMU) and position (motion capture).",
        epilog="Exit status 0 on success, 2 for a bad bag or option. See docs/validation.md.")
    p.add_argument("bag", type=existing_path,
                   help="rosbag2 directory (MCAP or sqlite3), or its metadata.yaml / storage file, or a ROS 1 .bag "
                        "(--layout nano-ros1)")
    g = p.add_argument_group("predictor")
    g.add_argument("--predictor", default=None, type=_predictor,
                   help="which predictor (default: %s); see --list-predictors" % DEFAULT_PREDICTOR)
    g.add_argument("--compare-all", action="store_true",
                   help="run every available predictor; one report, table and plots side by side "
                        "(default output: <bag>_compare)")
    g.add_argument("--list-predictors", action="store_true", help="print the available predictors and exit")
    g.add_argument("--model", metavar="FILE", default=None, type=existing_file,
                   help="model parameters file (a URDF, e.g. with measured masses); default: the packaged JetHexa")
    g.add_argument("--params", metavar="FILE", default=None, type=checked(body_params.read),
                   help="a parameters file with the body's mass and CoM offset (body_mass, body_com_offset: what "
                        "jethexa-calibrate writes), applied to the model")
    g.add_argument("--reanchor-horizon", type=number(0.0, None, lo_open=True, unit="s"), metavar="S", default=None,
                   help="re-anchor the prediction on the measurements every S seconds (default: predictor's own)")
    add_window_and_topic_arguments(p, layouts=True)
    g = p.add_argument_group("output")
    g.add_argument("--out", metavar="DIR", default=None, type=output_dir,
                   help="output directory (default: <bag>_validation next to the bag; <bag>_compare with "
                        "--compare-all)")
    g.add_argument("--json", metavar="FILE", default=None, type=output_file,
                   help="JSON report path (default: OUT/report.json)")
    g.add_argument("--force", action="store_true",
                   help="overwrite an earlier report in OUT (without it an existing report is never replaced)")
    g.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    g.add_argument("--quiet", action="store_true", help="no table on stdout")
    return p


def add_window_and_topic_arguments(p: argparse.ArgumentParser, layouts: bool = False) -> None:
    """The bag window and topic options (shared with ``jethexa-identify``), checked while parsing; with
    ``layouts`` also ``--layout`` and ``--joint-map`` (the stock software's bags, ``validation/layouts.py``)."""
    from jethexa_dynamics.cli_args import checked, number, topic_name
    from jethexa_dynamics.hardware.joint_map import JointMap

    from .layouts import CHOICES

    g = p.add_argument_group("window and topics")
    if layouts:
        g.add_argument("--layout", choices=CHOICES, default="auto",
                       help="which software recorded the bag: native (this package's nodes), hiwonder-ros2 "
                            "(Hiwonder's ROS 2 stack: /controller_manager/joint_states + /imu), nano-ros1 (the "
                            "Nano kit's ROS 1 stack, a .bag: /joint_states + /imu/filtered); auto (default): from "
                            "the bag's topics. The stock layouts have commanded joints only: the report says what "
                            "cannot be scored without measured ones")
        g.add_argument("--joint-map", metavar="MAP", default=None, type=checked(JointMap.parse),
                       help="the stock joint names and angles -> this package's, 'stock=ours[:sign[:zero]], ...' "
                            "for all 18 joints (default: the layout's; docs/companion.md)")
    g.add_argument("--start", type=number(0.0, None, unit="s"), metavar="S", default=None,
                   help="window start, s from the bag start")
    g.add_argument("--end", type=number(0.0, None, lo_open=True, unit="s"), metavar="S", default=None,
                   help="window end, s from the bag start")
    d = TopicNames()
    g.add_argument("--commands-topic", default=None, type=topic_name,
                   help="trajectory_msgs/JointTrajectory (required; default %s, or the layout's commanded "
                        "sensor_msgs/JointState)" % d.commands)
    g.add_argument("--joint-states-topic", default=None, type=topic_name,
                   help="sensor_msgs/JointState, measured (optional; default %s, none in the stock layouts)"
                        % d.joint_states)
    g.add_argument("--setpoints-topic", default=None, type=topic_name,
                   help="sensor_msgs/JointState, each read servo's set-point at its reading, paired with "
                        "joint_states by header stamp (optional; the body estimate needs it when joint_states "
                        "carries a few joints per message)")
    g.add_argument("--imu-topic", default=None, type=topic_name,
                   help="sensor_msgs/Imu with orientation (required; default %s, or the layout's)" % d.imu)
    g.add_argument("--morphology-topic", default=None, type=topic_name,
                   help="std_msgs/UInt8MultiArray, intact links per leg (optional: absent = intact; default %s)"
                        % d.morphology)
    g.add_argument("--ground-truth-topic", default=None, type=topic_name,
                   help="geometry_msgs/PoseStamped ground truth, e.g. motion capture (optional)")
    g.add_argument("--max-gap", type=number(0.0, None, lo_open=True, unit="s"), metavar="S",
                   default=bag_io.DEFAULT_MAX_GAP,
                   help="largest allowed gap between IMU messages before it counts as a time jump (default %(default)s)")


def topic_overrides(args) -> dict:
    """{role: topic} of the topic options given (None: not given)."""
    return {"commands": args.commands_topic, "joint_states": args.joint_states_topic,
            "setpoints": args.setpoints_topic, "imu": args.imu_topic, "morphology": args.morphology_topic,
            "ground_truth": args.ground_truth_topic}


def topics_from_args(args) -> TopicNames:
    """The topics of this package's own layout, with the topic options given."""
    return TopicNames(**{k: v for k, v in topic_overrides(args).items() if v is not None})


def read_args_bag(args) -> bag_io.BagData:
    """The bag of parsed ``args`` read in its layout (``--layout``, ``--joint-map``, the topic options)."""
    from jethexa_dynamics.hardware.joint_map import JointMap

    joint_map = None if getattr(args, "joint_map", None) is None else JointMap.parse(args.joint_map)
    return bag_io.read_bag(args.bag, start=args.start, end=args.end, max_gap=args.max_gap,
                           layout=getattr(args, "layout", "auto"), overrides=topic_overrides(args),
                           joint_map=joint_map)


def output_paths(args) -> "tuple[Path, Path]":
    """(output directory, JSON report path) of parsed ``args``; the default directory depends on the mode so
    that a --compare-all run never lands on (and never overwrites) a single-predictor report."""
    if args.out:
        out = Path(args.out)
    else:
        bag = bag_io.resolve_bag_path(args.bag)
        out = bag.parent / (bag.name + ("_compare" if args.compare_all else "_validation"))
    return out, Path(args.json) if args.json else out / "report.json"


def _fail(msg: str) -> int:
    print("jethexa-validate: error: " + msg.replace("\n", "\n  "), file=sys.stderr)
    return EXIT_BAD_INPUT


def run(args) -> dict:
    """Do the validation for parsed ``args``; returns the report (raises BagError/ValueError on bad input)."""
    from . import plots, report as report_mod

    if args.compare_all and args.predictor:
        raise ValueError("--predictor and --compare-all exclude each other")
    names = registry.predictor_names() if args.compare_all else [args.predictor or DEFAULT_PREDICTOR]
    out, json_path = output_paths(args)
    if json_path.exists() and not getattr(args, "force", False):
        raise ValueError("--out: {} already holds a report ({}); pass --force to overwrite it or choose "
                         "another --out".format(out, json_path))
    if args.model is not None and not Path(args.model).is_file():
        raise ValueError("model parameters file {} does not exist".format(args.model))
    for opt in ("max_gap", "reanchor_horizon"):
        v = getattr(args, opt)
        if v is not None and not v > 0:
            raise ValueError("--{} must be > 0, got {}".format(opt.replace("_", "-"), v))
    unknown = [n for n in names if n not in registry.predictor_names()]
    if unknown or not names:
        raise ValueError("unknown predictor {!r}; available: {}".format(
            unknown[0] if unknown else "", ", ".join(registry.predictor_names()) or "none"))

    bag = read_args_bag(args)
    model = args.model
    if getattr(args, "params", None) is not None:   # the calibrated body on the URDF (--model's or the packaged)
        from jethexa_dynamics.model import LeggedRobot

        base = LeggedRobot.jethexa() if args.model is None else LeggedRobot.from_urdf(str(args.model))
        model = body_params.read(args.params).robot(base)
    predictors = [registry.make_predictor(n, model=model, horizon=args.reanchor_horizon) for n in names]
    segs = metrics.segments(bag.window, None if bag.morphology is None else bag.morphology.t,
                            None if bag.morphology is None else bag.morphology.links)
    results = [replay_mod.replay(bag, pr) for pr in predictors]
    evaluations = [metrics.evaluate(r, segs) for r in results]

    options = {"predictors": names, "model": args.model, "params": getattr(args, "params", None),
               "reanchor_horizon_s": args.reanchor_horizon,
               "start_s": args.start, "end_s": args.end, "max_gap_s": args.max_gap,
               "layout": bag.layout, "topics": dict(bag.topics), "out": str(out)}
    rep = report_mod.build_report(bag, results, evaluations, options)
    files = {"json": str(report_mod.write_json(rep, json_path))}
    files["csv"] = [str(report_mod.write_csv(r, out / "timeseries_{}.csv".format(r.predictor))) for r in results]
    if not args.no_plots:
        files["plots"] = [str(p) for p in plots.plot_all(results, segs, out, title=bag.path.name)]
    rep["files"] = files
    report_mod.write_json(rep, files["json"])
    return rep


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a bad option (its one line is printed) or --help
        return exc.code
    if args.list_predictors:
        print("\n".join(registry.predictor_names()))
        return 0
    try:
        rep = run(args)
    except (BagError, ValueError, OSError) as err:
        return _fail(str(err))
    if not args.quiet:
        from .report import format_table

        print(format_table(rep))
        print("\nreport: {}\nplots:  {}".format(rep["files"]["json"], ", ".join(rep["files"].get("plots", [])) or "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
