"""``jethexa-model-report``: what the model says about a robot, per morphology.

Prints DoF, mass, the number of feet, the condition number of M and the standing load per foot for the
healthy robot and the paper's damage scenarios (or any morphology given with ``--morphology``).
"""
import argparse
import sys

import numpy as np

from jethexa_dynamics.model.scenarios import SCENARIOS, scenario_morphology

from .robot import LeggedRobot, Morphology



def morphology_rows(robot, morphologies, q=None):
    """One dict per morphology: name, nv, n_tips, mass, cond(M), min/max eigenvalue of M at ``q``."""
    rows = []
    for name, m in morphologies:
        r = robot.with_morphology(m)
        qq = np.zeros(r.nv - 6) if q is None else np.asarray(q)[r.joint_index_in_full]
        w = np.linalg.eigvalsh(r.mass_matrix(qq))
        rows.append(dict(name=name, nv=r.nv, tips=len(r.tip_names), mass=r.total_mass,
                         cond=float(w[-1] / w[0]), eig_min=float(w[0]), eig_max=float(w[-1]),
                         morphology=str(m)))
    return rows


def build_parser():
    """The options, each checked while parsing (--morphology against the robot, in ``main``, before any
    work): one line naming the option, exit status 2."""
    from jethexa_dynamics.cli_args import ArgumentParser, existing_file

    ap = ArgumentParser(prog="jethexa-model-report", description=__doc__.split("\n\n")[0])
    ap.add_argument("--urdf", type=existing_file, help="robot URDF (default: the bundled JetHexa)")
    ap.add_argument("--morphology", action="append", default=[], metavar="SPEC",
                    help="a morphology: intact links per leg in URDF leg order (3,3,0,0,3,3), LEG:N items "
                    "(LM:1 RR:0) or a scenario (damage1|damage2); repeatable")
    return ap


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a bad option (one line printed) or --help
        return exc.code
    try:
        robot = LeggedRobot.from_urdf(args.urdf) if args.urdf else LeggedRobot.jethexa()
        healthy = Morphology.healthy(robot)
        cases = []
        if not args.urdf:
            for name, (_, about) in SCENARIOS.items():
                cases.append((name if name == "healthy" else f"{name}: {about}", scenario_morphology(robot, name)))
        else:
            cases.append(("healthy", healthy))
        for text in args.morphology:
            try:
                cases.append((text, Morphology.parse(robot, text)))
            except ValueError as exc:
                raise ValueError(f"--morphology: {exc}") from None
        rows = morphology_rows(robot, cases)
    except (ValueError, OSError) as e:
        print(f"jethexa-model-report: error: {e}", file=sys.stderr)
        return 2
    print(f"robot: {robot.urdf_path}")
    print(f"legs: {', '.join(robot.leg_names)}; joints: {len(robot.joint_names)}; "
          f"mass {robot.total_mass:.3f} kg")
    print(f"{'morphology':52s} {'DoF':>4s} {'feet':>4s} {'mass kg':>8s} {'cond(M)':>10s}")
    for r in rows:
        print(f"{r['name']:52s} {r['nv']:4d} {r['tips']:4d} {r['mass']:8.3f} {r['cond']:10.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
