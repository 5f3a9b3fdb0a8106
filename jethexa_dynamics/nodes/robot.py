"""robot: several of the robot's nodes in one process, on one executor (the launch files' processes of several
nodes, ``graph_spec.LAYOUTS``: by default ``robot servo_driver imu gait_controller`` and ``robot predictor
damage_monitor``; with ``composed:=true`` all five).

``robot [NODE ...] --ros-args --params-file FILE`` hosts the named nodes of ``graph_spec.ROBOT_NODES``
(default: all five: servo_driver, imu, gait_controller, predictor, damage_monitor) with their own names; the
parameter file has one ``<node>: ros__parameters:`` section per node (``ros2 launch`` writes it from the
graph spec, so the values are those of the separate processes). One interpreter, one DDS participant and one
copy of the compiled kernels for the nodes it hosts (BENCHMARKS.md, ``benchmarks/bench_nano_budget.py``: the
layouts side by side), on ``nodes.executor.LeanExecutor`` in the order servo_driver, imu, gait_controller,
predictor, damage_monitor (the order its ready callbacks run in after each wait). Messages between the nodes still go through DDS
(rclpy has no intra-process transport), so every topic, parameter and service is exactly what the separate
processes offer: ``ros2 param set /predictor rate 50`` works the same.

Ctrl-C / SIGTERM: spinning stops, then the nodes close in reverse order (servo_driver last: servos unloaded).
"""
from __future__ import annotations

import sys
from typing import List, Optional, Sequence

from jethexa_dynamics.nodes.graph_spec import ROBOT_NODES


def parse_nodes(argv: Sequence[str]) -> List[str]:
    """The node names given before ``--ros-args`` (all of ``ROBOT_NODES`` if none); ``SystemExit(2)`` with one
    line naming the bad one otherwise."""
    names = []
    for a in argv:
        if a == "--ros-args":
            break
        names.append(a)
    unknown = [n for n in names if n not in ROBOT_NODES]
    if unknown or len(set(names)) != len(names):
        print("robot: error: node %r: must be one of %s, each once" % ((unknown or names)[0], ", ".join(ROBOT_NODES)),
              file=sys.stderr)
        raise SystemExit(2)
    return names or list(ROBOT_NODES)


def main(args: Optional[Sequence[str]] = None) -> int:
    from jethexa_dynamics.nodes._common import run_nodes
    from jethexa_dynamics.nodes.graph import node_class
    from jethexa_dynamics.warmup import NODE_KERNELS

    argv = list(sys.argv if args is None else args)
    names = parse_nodes(argv[1:])
    # ROBOT_NODES' order: servo_driver first, so it closes last (torque off after every other node stopped), and
    # the gait controller before the predictor and damage_monitor (the order of the callbacks of one wait)
    names.sort(key=ROBOT_NODES.index)
    return run_nodes([node_class(n) for n in names], argv, kernels_of=[n for n in names if n in NODE_KERNELS])


if __name__ == "__main__":
    sys.exit(main())
