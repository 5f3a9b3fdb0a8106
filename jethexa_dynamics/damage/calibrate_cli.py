"""``jethexa-calibrate BAG``: the body's mass and CoM from a bag of walking, as a parameters file.

Replays the bag's joint commands, joint states and IMU (the topic options of ``jethexa-validate``) through
:class:`~jethexa_dynamics.damage.body_load.BodyLoadEstimator` -- the servos' load read as a force plate -- with
the damage identifier beside it (samples count only while the morphology is the healthy one), and writes the
estimate as a ROS 2 parameters file (:mod:`jethexa_dynamics.model.body_params`) that the predictor node takes
(``--params-file``) and ``jethexa-validate --params FILE`` replays on. Prints one line per figure.
Exit status 0 done, 2 bad bag, option or too little walking in it (one line on stderr, before writing anything).
"""
from __future__ import annotations

import sys
from pathlib import Path

from jethexa_dynamics.control.servo_law import SERVO_GAINS
from jethexa_dynamics.model import body_params
from jethexa_dynamics.validation import bag_io
from jethexa_dynamics.validation.cli import add_window_and_topic_arguments, topics_from_args
from jethexa_dynamics.validation.errors import BagError

from .body_load import TIMING_NOTE, BodyLoadEstimator, fit_servo_law, implausible
from .identification import DamageIdentifier
from .identify_cli import add_servo_law_arguments, body_unreadable, identify, servo_law


def build_parser():
    from jethexa_dynamics.cli_args import ArgumentParser, existing_path, number, output_file

    p = ArgumentParser(
        prog="jethexa-calibrate",
        description="Estimate the JetHexa's body mass and centre of mass from a rosbag2 bag of walking (the "
                    "servos' tracking errors under load) and write them as a ROS 2 parameters file for the "
                    "predictor node and jethexa-validate --params.",
        epilog="Exit status 0 on success, 2 for a bad bag or option or too little walking. "
               "See docs/identification.md.")
    p.add_argument("bag", type=existing_path,
                   help="rosbag2 directory (MCAP or sqlite3), or its metadata.yaml / storage file")
    p.add_argument("--out", metavar="FILE", default=None, type=output_file,
                   help="parameters file to write (default: <bag>_body.yaml beside the bag)")
    p.add_argument("--min-seconds", type=number(5.0, 3600.0, unit="s"), default=20.0, metavar="S",
                   help="healthy walking the estimate must rest on, [5, 3600] s (default 20)")
    p.add_argument("--known-body-mass", type=number(0.1, 10.0, unit="kg"), default=None, metavar="KG",
                   help="the bag's body is known (the URDF's 1.35, or the robot weighed less its legs' 1.20), [0.1, "
                        "10] kg: find the servos' law instead (both --servo-damping values are tried from the "
                        "--servo-k* gains, the nearer kept and its gains scaled to read this mass) and write it "
                        "with the body (damage_monitor's body_servo_* parameters)")
    add_window_and_topic_arguments(p)
    add_servo_law_arguments(p)
    return p


def run(args) -> dict:
    from jethexa_dynamics.model import LeggedRobot

    robot = LeggedRobot.jethexa()
    bag = bag_io.read_bag(args.bag, topics=topics_from_args(args), start=args.start, end=args.end,
                          max_gap=args.max_gap)
    why = body_unreadable(bag, robot)
    if why:
        raise ValueError("%s: %s; not written" % (bag.path, why))
    seconds = [0.0]

    def estimate_with(laws):
        """The bag read through each servo law of ``laws`` ((gains, damping) pairs), in one replay."""
        bodies = [BodyLoadEstimator(robot, gains=g, damping=dmp) for g, dmp in laws]
        identify(bag, DamageIdentifier(robot), [3] * len(robot.leg_names), *bodies)
        seconds[0] = bodies[0].seconds
        return [b.estimate(min_seconds=args.min_seconds) for b in bodies]

    gains, damping = servo_law(args)
    law = None
    if args.known_body_mass is None:
        est = estimate_with([(gains, damping)])[0]
    else:
        legs = float(robot.total_mass) - float(robot.description.body_mass)
        law = fit_servo_law(estimate_with, args.known_body_mass, legs, gains)
        est = None if law is None else law.body
    if est is None:
        raise ValueError("%s: %.1f s of healthy walking with a swing phase on every leg; --min-seconds asks for "
                         "at least %g s" % (bag.path, seconds[0], args.min_seconds))
    why = implausible(est, robot)
    if why:
        raise ValueError("%s: %s; not written: %s" % (bag.path, why, TIMING_NOTE))
    extra, rep = [], {}
    if law is not None:
        for (name, lo, hi, unit), g in zip(SERVO_GAINS, law.gains):
            if not lo <= g <= hi:
                raise ValueError("%s: the servo law found has %s %.4g %s, outside [%g, %g]; not written" % (
                    bag.path, name, g, unit, lo, hi))
        extra = [("body_servo_" + n[0], g) for n, g in zip(SERVO_GAINS, law.gains)]
        extra.append(("body_servo_damping", law.damping))
        rep["servo_law"] = {"damping": law.damping, "gains": list(law.gains), "scale": law.scale,
                            "tried": {d: None if e is None else e.mass for d, e in law.tried.items()}}
    d = robot.description
    params = body_params.BodyParams(round(est.mass, 4), tuple(round(float(c - u), 5)
                                                             for c, u in zip(est.com, d.body_com)))
    out = Path(args.out) if args.out else bag.path.parent / (bag.path.name + "_body.yaml")
    body_params.write(out, params, extra=extra, comment=[
        "jethexa-calibrate: the body's mass and CoM from the servos' load (jethexa_dynamics.damage.body_load)",
        "bag: %s, %.1f s of healthy walking used; URDF body %.4f kg" % (bag.path, est.seconds, d.body_mass)]
        + (["the servos' law found against the known body %.4f kg (jethexa-calibrate --known-body-mass)"
            % args.known_body_mass] if law is not None else []))
    rep.update({"file": str(out), "body_mass": params.mass, "body_com_offset": list(params.com_offset),
                "urdf_body_mass": float(d.body_mass), "seconds": est.seconds})
    return rep


def main(argv=None) -> int:
    from jethexa_dynamics.cli_args import parse_and_run

    status, _, rep = parse_and_run("jethexa-calibrate", build_parser(), run, argv, (BagError, ValueError, OSError))
    if rep is not None and "servo_law" in rep:
        law = rep["servo_law"]
        print("servo law: damping %s, gains kp %.4g ki %.4g kd %.4g (x%.3f); with the given gains the body read %s"
              % ((law["damping"],) + tuple(law["gains"]) + (law["scale"], ", ".join(
                  "%s %s" % (dmp, "-" if m is None else "%.3f kg" % m) for dmp, m in law["tried"].items()))))
    if rep is not None:
        print("body mass %.3f kg (URDF %.3f), CoM offset (%s) mm, from %.0f s of walking\nparameters: %s" % (
            rep["body_mass"], rep["urdf_body_mass"], ", ".join("%.1f" % (1e3 * v) for v in rep["body_com_offset"]),
            rep["seconds"], rep["file"]))
    return status


if __name__ == "__main__":
    sys.exit(main())
