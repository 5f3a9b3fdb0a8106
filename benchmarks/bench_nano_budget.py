#!/usr/bin/env python3
"""Does the robot fit the Jetson Nano? The sim graph as the launch file starts it, walking, unconstrained and with
the robot's nodes inside a CPU cgroup quota that stands for the Nano (issue 21), in each process layout of the launch
files (``graph_spec.LAYOUTS``) side by side: **split** (``composed:=split``, as launched: the control path and the
model in two processes), **composed** (``composed:=true``: the five in one process) and **separate**
(``composed:=false``: a process per node).

Run (as root for the quota runs; about 20 minutes for the three layouts):

    cd <repo> && export PYTHONPATH=$PWD && source scripts/ros_env.sh && source scripts/numba_env.sh
    .venv/bin/python benchmarks/bench_nano_budget.py [--composed split|true|false | --separate] [--seconds 30]
        [--break-at 15] [--factors 4,5,6] [--half-factor 5] [--other-factors 5] [--core-factor 5] [--repeat 3]
        [--cgroup auto]
        [--out benchmarks/results/nano_budget.md]
    .venv/bin/python benchmarks/bench_nano_budget.py --smoke   (6 s walks: split unconstrained + 5x, composed
                                                                and separate unconstrained; CI)

The processes are those of ``sim.launch.py`` (``graph_spec.processes``, parameter files from
``graph_spec.write_parameters``, started by ``graph.start_process`` as ``ros2 launch`` starts them): a process of
several robot nodes is the ``robot`` executable hosting them (split: robot_control with servo_driver, imu and
gait_controller, robot_model with predictor and damage_monitor; composed: one with all five), robot_emulator runs in
its own. The process that hosts the imu node runs through ``_imu_split.py``, which takes the
same arguments and counts the imu node's emulated MPU6050 register model apart. This process drives ``cmd_vel``
(0.05 m/s forward, like a teleop) and records ``predicted/pose``, ``mocap/pose`` (the emulated world's truth),
``joint_commands``, ``imu/data``, ``joint_states``, ``morphology`` and ``/diagnostics``; it stays outside any quota
and its CPU is not counted.

Per run, after the graph is up (first predicted pose) and ``--warmup`` seconds of walking, a ``--seconds`` window:
CPU-seconds per second of every process (/proc utime + stime), per node from the nodes' own accounting (the
``cpu_s <stage>`` totals of every callback and worker stage on /diagnostics, summed per node; in a process of
several nodes the only per-node figure), the rest of each process (executor, rclpy, DDS: process total minus its
stages) split by /proc per-thread stats (the DDS/rmw threads name themselves), memory (VmRSS and its file-backed
part, PSS from smaps_rollup, VmHWM), the rates of the four topics, the identifier's windows per second, the
prediction error against the truth (``predictors.error_metric``: predicted/pose minus mocap/pose interpolated at the
predicted stamp; healthy part of the window), the walking speed (truth), and a silent break (``robot_emulator``'s
``breaks`` parameter, ``--break-spec`` at ``--break-at`` s into the window): seconds until ``morphology`` names it,
what it names, and whether any damage was named before it.

Runs per layout: unconstrained (up to the machine's 2 cores), then the robot's process(es) (the emulator stays
outside) in one CPU cgroup whose quota stands for the Nano's 4 cores at a per-core slowdown F: 4/F of one core
here (``--factors``; 5x -> 0.8 core, ``cpu.cfs_quota_us`` 8000 per 10000), and the half-busy Nano, 2/F core
(``--half-factor``); then every robot process in a cgroup of its own with 1/F core (``--core-factor``, every
layout): one A57 core, all a process's GIL-bound Python can use however many cores the Nano has, plus what the
process's native threads (DDS/rmw: they hold no interpreter lock and run on the Nano's other cores) and its
compiled stepping kernel (``sim.engine.KERNEL_CPU``, ``process_kernel_cpu_s`` on /diagnostics: numba ``nogil``, so
the Nano runs it on another core too) took in the layout's unconstrained run (``--no-credit``: not). With several
layouts, the launched one runs first and in full, the others unconstrained, ``--other-factors`` and the
per-process run only. cgroup
v1 (``cpu.cfs_quota_us``) or v2 (``cpu.max``), whichever is writable; with neither, the quota runs are left out and
only CPU is reported.

On a shared machine the other load would starve the runs below their quota: by default the robot's group and a
second group (robot_emulator and this process, no quota) get the CPU weight of 100 processes (``--shares``; 0 = none,
and then the unconstrained run is not put in a group at all).

Emulated hardware does not count against the robot: the servo bus emulator runs in robot_emulator's process
(outside the quota); the MPU6050 register model runs inside the imu node's process, so its cost is measured
apart (the ``emulated MPU6050`` and ``emulator/imu_motion`` stages on /diagnostics, and the delivery of
``emulator/imu_motion`` from an A/B of the imu node alone: ``--imu-seconds``) and, by default, added to the
quota (``--no-credit``: not).

The script is split along its concerns: ``_nano_graph.py`` (the graph runner: processes, the recording node, one
run, the imu A/B), ``_nano_cgroup.py`` (the CPU quota), ``_nano_proc.py`` (/proc: threads, memory, load, a
wake-up's cost), ``_nano_measure.py`` (the figures from what a run recorded) and ``_nano_report.py`` (the results
file); this file holds the command line and the plan of runs.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
os.environ.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))

from _machine import describe, write_results  # noqa: E402
from _nano_cgroup import cfs_slice, find_cgroup  # noqa: E402
from _nano_graph import LAUNCHED, LAYOUTS, SPEED, _links, imu_ab, run_case  # noqa: E402
from _nano_measure import imu_split, native_credit  # noqa: E402
from _nano_proc import load_text, wake_cost  # noqa: E402
from _nano_report import NANO_CORES, per_process_label, report  # noqa: E402

from jethexa_dynamics import cli_args  # noqa: E402
from jethexa_dynamics.nodes.graph_spec import launch_layout  # noqa: E402


def _factors(text):
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a comma-separated list of numbers (allowed: "
                                         "slowdowns in [1, 20], e.g. 4,5,6)" % text) from None
    if any(not (1.0 <= v <= 20.0) for v in vals):
        raise argparse.ArgumentTypeError("%r: every slowdown must be in [1, 20]" % text)
    return vals


def _break_spec(text):
    try:
        links = _links(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if links == [3] * len(links):
        raise argparse.ArgumentTypeError("%r breaks nothing (allowed: a morphology spec that breaks a "
                                         "link, e.g. LM:1)" % text)
    return text


def _layout(text):
    """--composed split|true|false (the launch argument's values, read as the launch files read them) -> a key of
    LAYOUTS."""
    try:
        value = launch_layout(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not split, true or false" % text) from None
    return next(k for k, v in LAYOUTS.items() if v == value)


def parse_args(argv):
    num = cli_args.number
    ap = cli_args.ArgumentParser(prog="bench_nano_budget.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="short: --seconds 6 --break-at 3 --warmup 1.5 --factors 5 "
                    "--half-factor 0 --other-factors '' --imu-seconds 1 --name-timeout 5 (unless given); nothing "
                    "written unless --out")
    ap.add_argument("--composed", type=_layout, help="only this layout (the launch argument's value): split (as "
                    "launched: two processes), true (one process) or false (a process per node); default: all three, "
                    "side by side")
    ap.add_argument("--separate", action="store_true", help="the same as --composed false")
    ap.add_argument("--seconds", type=num(0.0, 3600.0, lo_open=True, unit="s"), help="window per run (default 30)")
    ap.add_argument("--break-at", type=num(0.0, 3600.0, unit="s"),
                    help="silent break this long into the window (default 15; 0 = no break)")
    ap.add_argument("--break-spec", type=_break_spec, default="LM:1", help="the silent break (default LM:1)")
    ap.add_argument("--warmup", type=num(0.0, 600.0, unit="s"), help="walking before the window (default 6)")
    ap.add_argument("--factors", type=_factors, help="Nano per-core slowdowns of the quota runs, quota 4/F core "
                    "(default 4,5,6; '' = none)")
    ap.add_argument("--core-factor", type=num(0.0, 20.0), help="per-process runs: each robot process inside 1/F core, "
                    "one A57 core at slowdown F for its GIL-bound Python (default 5, every layout; smoke 0; 0 = none)")
    ap.add_argument("--half-factor", type=num(0.0, 20.0), help="half-busy Nano run: quota 2/F core (default 5; 0 = "
                    "none)")
    ap.add_argument("--other-factors", type=_factors, help="with several layouts: the quota runs of those after the "
                    "first (default 5; smoke ''); --factors and --half-factor are then the first's (the launched "
                    "one). With one layout, it runs --factors and --half-factor")
    ap.add_argument("--slice-us", type=num(0, 100000, integer=True), default=1000,
                    help="kernel CFS bandwidth slice during the runs, µs (default 1000: the quota shared between the "
                    "robot's processes at a 1 ms grain, not 5 ms; 0 = the machine's)")
    ap.add_argument("--cgroup", choices=("auto", "v1", "v2", "none"), default="auto", help="CPU controller "
                    "(default auto: v1 cpu.cfs_quota_us, else v2 cpu.max)")
    ap.add_argument("--shares", type=num(0.0, 262144.0, integer=True), default=102400,
                    help="CPU weight of the robot's group and of the emulator's (cgroup v1 cpu.shares; a process "
                    "weighs 1024) so that other load on a shared machine does not starve a run below its quota "
                    "(default 102400: a hundred processes; 0 = no weight, as the machine comes)")
    ap.add_argument("--no-credit", action="store_true", help="do not add the emulated MPU6050's measured cost to "
                    "the quota, nor (per process) the native threads' CPU")
    ap.add_argument("--imu-seconds", type=num(0.0, 600.0, unit="s"), help="A/B of the imu node alone, seconds per "
                    "side (default 12; 0 = skip)")
    ap.add_argument("--name-timeout", type=num(0.0, 600.0, lo_open=True, unit="s"),
                    help="wait this long after the break for the morphology naming it (default 30; smoke 8)")
    ap.add_argument("--timeout", type=num(1.0, 3600.0, unit="s"), default=600.0,
                    help="give up on a start of the graph after this long (default 600: a cold numba cache)")
    ap.add_argument("--speed", type=num(0.0, 0.1, unit="m/s"), default=SPEED, help="cmd_vel forward speed (default "
                    "0.05)")
    ap.add_argument("--repeat", type=num(1, 20, integer=True), help="unconstrained runs of the first layout (the "
                    "CPU target is judged on their median: this shared machine's speed moves a run's CPU-s/s by "
                    "+-20 %%; default 3; smoke 1)")
    ap.add_argument("--kit", choices=("orin", "nano"), help="the emulated JetHexa (sim.launch.py kit:=): nano (the "
                    "sim's default: the MPU6050 on the imu node) or orin (the STM32 board: servo_driver reads its IMU "
                    "reports; no imu node, no emulated MPU6050 to count apart: pass --imu-seconds 0 --no-credit)")
    ap.add_argument("--body-estimate", action="store_true", help="launch with body_estimate:=true "
                    "servo_timing:=exact: issue 23's online body estimate on (damage_monitor's body stage, the "
                    "servo driver's set-points and dithered reads), its CPU inside the budget")
    ap.add_argument("--out", type=cli_args.output_file, help="results file (default benchmarks/results/"
                    "nano_budget.md; with --smoke nothing is written unless given)")
    args = ap.parse_args(argv)
    if args.separate:
        if args.composed not in (None, "separate"):
            ap.error("argument --separate: not with --composed %s" % LAYOUTS[args.composed])
        args.composed = "separate"
    smoke = {"seconds": 6.0, "break_at": 3.0, "warmup": 1.5, "factors": [5.0], "half_factor": 0.0, "imu_seconds": 1.0,
             "name_timeout": 5.0, "other_factors": [], "repeat": 1, "core_factor": 0.0}
    full = {"seconds": 30.0, "break_at": 15.0, "warmup": 6.0, "factors": [4.0, 5.0, 6.0], "half_factor": 5.0,
            "imu_seconds": 12.0, "name_timeout": 30.0, "other_factors": [5.0], "repeat": 3, "core_factor": 5.0}
    for k, v in (smoke if args.smoke else full).items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    if args.break_at >= args.seconds:
        ap.error("argument --break-at: %g s is not inside the %g s window (allowed: [0, --seconds))"
                 % (args.break_at, args.seconds))
    return args


def plan_runs(opts, quotas):
    """[(label, layout, quota cores or None, per process)] in order: each layout's unconstrained run first (its
    emulated MPU6050 cost is the credit of its quota runs). ``quotas`` False: no cgroup, unconstrained runs only."""
    layouts = sorted(LAYOUTS, key=lambda lay: lay != LAUNCHED) if opts.composed is None else [opts.composed]
    plan = []
    for layout in layouts:
        full = layout == layouts[0]
        plan.append(("unconstrained", layout, None, False))
        if full:
            plan += [("unconstrained %d" % k, layout, None, False) for k in range(2, opts.repeat + 1)]
        if not quotas:
            continue
        plan += [("%gx" % f, layout, NANO_CORES / f, False)
                 for f in (opts.factors if full else opts.other_factors)]
        if full and opts.half_factor:
            plan.append(("half-Nano %gx" % opts.half_factor, layout, NANO_CORES / 2.0 / opts.half_factor, False))
        if opts.core_factor:
            plan.append((per_process_label(opts.core_factor), layout, 1.0 / opts.core_factor, True))
    return plan


class Interrupted(Exception):
    pass


def _on_term(signum, frame):
    raise Interrupted("signal %d" % signum)


def interruptible(work):
    """``work()``; on SIGTERM or Ctrl-C one line and status 130 (the runs' ``finally`` blocks have removed their
    cgroups and stopped their processes by then)."""
    signal.signal(signal.SIGTERM, _on_term)
    try:
        return work()
    except (Interrupted, KeyboardInterrupt) as exc:
        print("interrupted (%s): the cgroups and the processes were cleaned up" % (exc or "Ctrl-C"), file=sys.stderr)
        return 130


def finish(opts, text, name, workdir):
    """The results: printed (``--smoke`` without ``--out``) or written to ``--out`` or results/<name>.md; the work
    directory (the processes' logs) removed. Returns 0."""
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)
    if opts.smoke and opts.out is None:
        print(text)
        print("smoke run: every case ran; results not written")
        return 0
    write_results(text, opts.out or os.path.join(HERE, "results", name + ".md"))
    if opts.smoke:
        print("smoke run: every case ran")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    opts = parse_args(argv)
    kind, mount, note = find_cgroup(opts.cgroup)
    print("CPU quota: " + note, flush=True)
    info = describe("rclpy") + ["- %s at the start; %s; NUMBA_CACHE_DIR %s" % (
        load_text(), os.environ.get("RMW_IMPLEMENTATION", "default rmw"),
        "set" if os.environ.get("NUMBA_CACHE_DIR") else "not set (the nodes compile at every start)")]
    wake_s = wake_cost()
    info.append("- a wake-up's cost on this machine: %.0f µs of CPU per iteration of a bare 100 Hz `time.sleep` "
                "loop (schedstat; before any node started)" % (wake_s * 1e6))
    workdir = tempfile.mkdtemp(prefix="jethexa_nano_budget_")

    def work():
        runs = []
        ab = imu_ab(opts.imu_seconds, workdir, (kind, mount), opts.shares) if opts.imu_seconds > 0 else None
        credit, native = 0.0, {}
        with cfs_slice(opts.slice_us if kind else 0) as slice_note:
            info.append("- " + slice_note)
            for label, layout, quota, per_process in plan_runs(opts, bool(kind)):
                res = run_case(label, layout, quota, opts, workdir, (kind, mount), credit, per_process, native)
                runs.append(res)
                if quota is None and not opts.no_credit:
                    credit = imu_split(res, ab)[1]
                    native = native_credit(res)
        info.append("- %s at the end" % load_text())
        return finish(opts, report(opts, info, note, runs, ab, " ".join(argv) or "(defaults)", wake_s), "nano_budget",
                      workdir)

    return interruptible(work)


if __name__ == "__main__":
    sys.exit(main())
