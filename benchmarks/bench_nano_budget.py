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
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")
os.environ.setdefault("ROS_DOMAIN_ID", str(101 + os.getpid() % 100))

from _machine import CLK, describe, proc_cpu, write_results  # noqa: E402

from jethexa_dynamics import cli_args  # noqa: E402
from jethexa_dynamics.nodes.graph_spec import COMPOSED_DEFAULT, ROBOT_NODES, launch_layout  # noqa: E402

EMULATOR_NODES = ("robot_emulator",)
LAYOUTS = {"split": "split", "composed": "true", "separate": "false"}   # name here -> launch argument composed:=
LAUNCHED = next(k for k, v in LAYOUTS.items() if v == COMPOSED_DEFAULT)   # the launch files' default
NANO_CORES = 4
NANO_RANGE = (4.0, 6.0)     # Jetson Nano (Cortex-A57 at 1.43 GHz) assumed 4-6x slower per core than this machine
NANO_F = 5.0                # the central estimate
PERIOD_US = 10000           # CFS period of the quota group (10 ms)
GAIT_CYCLE = 1.3            # s, gait_controller's cycle_time default
SPEED = 0.05                # m/s forward on cmd_vel, as in the issue
TARGETS = {"cpu": 0.4, "pose_hz": 95.0, "cmd_hz": 49.0, "error_ratio": 1.5, "break_cycles": 3, "rss_mb": 500.0}
MOTION = "emulator/imu_motion"
REGISTERS = "emulated MPU6050"          # inside the imu node's ``sample`` stage (not added to the node's sum)
IMU_EMULATED_STAGES = (MOTION, REGISTERS)
THREAD_KINDS = ("main", "python", "native")


# ---------------------------------------------------------------------------------------------- /proc

def wake_cost(seconds: float = 2.0) -> float:
    """CPU [s] one sleep/wake-up costs this thread in a bare 100 Hz ``time.sleep`` loop (schedstat's run time):
    the floor under every timer tick and every message a process wakes up for; on a virtual machine it holds
    the hypervisor's exit and entry as well, which a Jetson Nano, running on its own hardware, does not pay."""
    path = "/proc/self/task/%d/schedstat" % threading.get_native_id()

    def run_s():
        with open(path) as f:
            return int(f.read().split()[0]) / 1e9

    n, r0 = int(seconds * 100), run_s()
    for _ in range(n):
        time.sleep(0.01)
    return (run_s() - r0) / n


def false_alarms(rec, t0: float, t1: float):
    """What slowed or stopped the healthy robot between t0 and t1 (monotonic s) short of a morphology change, from
    the gait controller's diagnostics: a joint called seized, motion unexplained, a morphology held for want of
    evidence (each once, sorted)."""
    out = set()
    with rec.lock:
        rows = [v for t, v in rec.diag.get("gait_controller", []) if t0 <= t < t1]
    for v in rows:
        if v.get("seized"):
            out.add("seized " + v["seized"])
        if v.get("motion_unexplained") in ("True", "true"):
            out.add("unexplained")
        if v.get("morphology_held", "no") != "no":
            out.add("held " + v["morphology_held"])
    return sorted(out)


def proc_threads(pid):
    """{tid: (kind, CPU s, run-queue wait s, times scheduled in)} of the live threads of ``pid``: kind ``main`` (the
    first thread: the
    executor and every callback), ``python`` (threads named like the process: Python's threading, the nodes'
    workers), ``native`` (threads that name themselves: the DDS/rmw threads, ``dds.*`` in Fast DDS). CPU =
    utime + stime, wait = schedstat run_delay, scheduled in = schedstat's timeslice count (each wake-up and each
    return after a preemption)."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
        with open("/proc/%d/comm" % pid) as f:
            own = f.read().strip()
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                head, tail = f.read().rsplit(")", 1)
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                sched = f.read().split()
            wait, slices = int(sched[1]) / 1e9, int(sched[2])
        except (OSError, IndexError, ValueError):
            continue
        fields = tail.split()
        kind = "main" if int(tid) == pid else "python" if head.split("(", 1)[1] == own else "native"
        out[int(tid)] = (kind, (int(fields[11]) + int(fields[12])) / CLK, wait, slices)
    return out


def thread_delta(a, b, dt):
    """{kind: CPU-s/s} of a process's threads between two ``proc_threads`` snapshots ``dt`` s apart, and the
    run-queue wait of all of them ('wait', s/s) and how often they were scheduled in ('wakes', 1/s); a thread
    started in between counts from 0."""
    out = dict.fromkeys(THREAD_KINDS + ("wait", "wakes"), 0.0)
    for tid, (kind, cpu, wait, slices) in b.items():
        _, cpu0, wait0, slices0 = a.get(tid, (kind, 0.0, 0.0, 0))
        out[kind] += (cpu - cpu0) / dt
        out["wait"] += (wait - wait0) / dt
        out["wakes"] += (slices - slices0) / dt
    return out


def proc_memory(pid):
    """{rss, hwm, pss, file} of ``pid`` in MB (VmRSS, VmHWM, RssFile: its file-backed part, from status; Pss from
    smaps_rollup), NaN if unreadable."""
    out = {"rss": float("nan"), "hwm": float("nan"), "pss": float("nan"), "file": float("nan")}
    keys = {"VmRSS": "rss", "VmHWM": "hwm", "RssFile": "file"}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                name = line.split(":", 1)[0]
                if name in keys:
                    out[keys[name]] = int(line.split()[1]) / 1024.0
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    out["pss"] = int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return out

def load_text():
    """'load average 1.23 0.98 0.70 (1/5/15 min), CPU pressure 12 % (avg60)' of the machine now (the pressure: the
    share of time some runnable task waited for a CPU, /proc/pressure/cpu, where the kernel has it)."""
    a, b, c = os.getloadavg()
    text = "load average %.2f %.2f %.2f (1/5/15 min)" % (a, b, c)
    try:
        with open("/proc/pressure/cpu") as f:
            some = dict(kv.split("=") for kv in f.readline().split()[1:])
        text += ", CPU pressure %.0f %% (avg60)" % float(some["avg60"])
    except (OSError, KeyError, ValueError):
        pass
    return text


# ---------------------------------------------------------------------------------------------- cgroup
def _mounts():
    with open("/proc/mounts") as f:
        return [line.split()[:4] for line in f]


def _probe_dir(parent):
    """Create and remove a child cgroup under ``parent``: '' if that works, else why not."""
    probe = os.path.join(parent, "jethexa_probe_%d" % os.getpid())
    try:
        os.mkdir(probe)
        os.rmdir(probe)
        return ""
    except OSError as exc:
        return "%s: %s" % (parent, exc.strerror or exc)


def find_cgroup(which="auto"):
    """(kind 'v1'/'v2' or None, mount point, note): the first writable CPU controller (``which``: auto, v1, v2,
    none). The note says what was found and why a controller was not used."""
    notes = []
    if which == "none":
        return None, "", "quota runs disabled (--cgroup none)"
    if which in ("auto", "v1"):
        for dev, mnt, fstype, opts in _mounts():
            if fstype == "cgroup" and "cpu" in opts.split(","):
                why = _probe_dir(mnt) or ("" if os.path.exists(os.path.join(mnt, "cpu.cfs_quota_us"))
                                          else "%s has no cpu.cfs_quota_us" % mnt)
                if not why:
                    return "v1", mnt, "cgroup v1 cpu controller at %s (cpu.cfs_quota_us / cpu.cfs_period_us)" % mnt
                notes.append("v1: " + why)
        if not notes:
            notes.append("v1: no cpu controller mounted")
    if which in ("auto", "v2"):
        for dev, mnt, fstype, opts in _mounts():
            if fstype == "cgroup2":
                try:
                    with open(os.path.join(mnt, "cgroup.controllers")) as f:
                        controllers = f.read().split()
                except OSError:
                    controllers = []
                if "cpu" not in controllers:
                    notes.append("v2 at %s: no cpu controller (controllers: %s)" % (mnt, " ".join(controllers) or
                                                                                  "none"))
                    continue
                why = _probe_dir(mnt)
                if not why:
                    return "v2", mnt, "cgroup v2 at %s (cpu.max)" % mnt
                notes.append("v2: " + why)
    return None, "", "no writable CPU cgroup (%s): CPU only, the quota runs are left out" % "; ".join(notes)


class CpuGroup:
    """A CPU cgroup ``jethexa_nano_budget_<pid>_<name>`` under the controller's root: a quota of ``cores`` cores per
    ``PERIOD_US`` (None: no quota) and the weight ``shares`` (v1 cpu.shares, default 1024 a process; v2 cpu.weight
    = shares / 1024 * 100; None: the default). ``add(pid)`` moves a process (all its threads, and every thread it
    starts later); ``close()`` moves them back to the root group and removes the group."""

    def __init__(self, kind, mount, name, cores=None, shares=None):
        self.kind, self.mount, self.cores = kind, mount, cores
        self.path = os.path.join(mount, "jethexa_nano_budget_%d_%s" % (os.getpid(), name))
        self.quota_us = int(round(cores * PERIOD_US)) if cores is not None else None
        os.mkdir(self.path)
        try:
            if kind == "v1":
                if cores is not None:
                    self._write("cpu.cfs_period_us", PERIOD_US)
                    self._write("cpu.cfs_quota_us", self.quota_us)
                if shares:
                    self._write("cpu.shares", int(shares))
            else:
                try:
                    with open(os.path.join(mount, "cgroup.subtree_control")) as f:
                        enabled = f.read().split()
                    if "cpu" not in enabled:
                        self._write_at(os.path.join(mount, "cgroup.subtree_control"), "+cpu")
                except OSError:
                    pass
                if cores is not None:
                    self._write("cpu.max", "%d %d" % (self.quota_us, PERIOD_US))
                if shares:
                    self._write("cpu.weight", max(1, min(10000, int(round(shares / 1024.0 * 100)))))
        except BaseException:
            self.close()
            raise

    def _write_at(self, path, value):
        with open(path, "w") as f:
            f.write("%s\n" % value)

    def _write(self, name, value):
        self._write_at(os.path.join(self.path, name), value)

    def add(self, pid):
        self._write("cgroup.procs", pid)

    def stats(self):
        """{nr_periods, nr_throttled, throttled_s} from cpu.stat."""
        out = {}
        try:
            with open(os.path.join(self.path, "cpu.stat")) as f:
                for line in f:
                    k, v = line.split()[:2]
                    out[k] = int(v)
        except OSError:
            return {}
        thr = out.get("throttled_time", 0) / 1e9 if self.kind == "v1" else out.get("throttled_usec", 0) / 1e6
        return {"nr_periods": out.get("nr_periods", 0), "nr_throttled": out.get("nr_throttled", 0), "throttled_s": thr}

    def close(self):
        """Every process back to the root group, then the group removed (idempotent)."""
        if not os.path.isdir(self.path):
            return
        for _ in range(20):
            try:
                with open(os.path.join(self.path, "cgroup.procs")) as f:
                    pids = [p for p in f.read().split() if p]
            except OSError:
                pids = []
            for p in pids:
                try:
                    self._write_at(os.path.join(self.mount, "cgroup.procs"), p)
                except OSError:
                    pass        # ended meanwhile
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)
        print("warning: could not remove the cgroup %s" % self.path, file=sys.stderr)


class Groups:
    """The groups of one run: ``robot`` (the robot's process or its five node processes; the quota, if any) and
    ``world`` (robot_emulator and this process; no quota), both with the weight ``shares`` (None: as the machine
    comes, no groups at all unless there is a quota). ``kind`` None: no cgroup available, nothing is done.

    ``per_process``: the quota is each robot process's own, one group per process (``add`` makes it): one Nano
    core for the process's GIL-bound Python, where the group quota stands for the Nano's cores together.
    ``credit`` (cores) is added to the quota of the group that holds the emulated MPU6050 (the robot's group, or
    per process the imu's); per process, ``native`` ({process name: cores}) too: the CPU its native threads took
    unconstrained, which a Nano runs on its other cores (they never wait for the interpreter lock)."""

    def __init__(self, cgroup, quota, shares, per_process=False, credit=0.0, native=None):
        kind, mount = cgroup
        self.cgroup, self.shares, self.per_process, self.credit = cgroup, shares, per_process, credit
        self.native = dict(native or {})
        self.quota = quota
        if quota is not None and not per_process:
            quota = quota + credit
        self.robot = self.world = None
        self.own = []             # per_process: the groups of the robot's processes
        if kind is None or (quota is None and not shares):
            return
        try:
            self.robot = CpuGroup(kind, mount, "robot", None if per_process else quota, shares)
            if shares:
                self.world = CpuGroup(kind, mount, "world", None, shares)
                self.world.add(os.getpid())
        except BaseException:
            self.close()
            raise

    @property
    def quota_us(self):
        """The quota (µs per period) of the robot's group, or per process that of one without the imu."""
        if self.quota is None:
            return None
        return int(round((self.quota + (0.0 if self.per_process else self.credit)) * PERIOD_US))

    def add(self, robot, pid, imu=False, name=""):
        """Move ``pid`` into the robot's group (``robot`` true; per process: a group of its own, ``imu``: it hosts
        the emulated MPU6050, ``name``: its key in ``native``) or the world's."""
        if robot and self.per_process and self.robot is not None:
            g = CpuGroup(*self.cgroup, "robot_%d" % pid, self.quota + (self.credit if imu else 0.0)
                         + self.native.get(name, 0.0), self.shares)
            self.own.append(g)
            g.add(pid)
            return
        group = self.robot if robot else self.world
        if group is not None:
            group.add(pid)

    def stats(self):
        """{nr_periods, nr_throttled, throttled_s} of the robot's quota group(s), summed."""
        groups = self.own if self.per_process else [self.robot] if self.robot is not None and \
            self.robot.cores is not None else []
        out = {}
        for g in groups:
            for k, v in g.stats().items():
                out[k] = out.get(k, 0) + v
        return out

    def close(self):
        for g in self.own + [self.robot, self.world]:
            if g is not None:
                g.close()


SLICE_FILE = "/proc/sys/kernel/sched_cfs_bandwidth_slice_us"


@contextlib.contextmanager
def cfs_slice(us):
    """The kernel's CFS bandwidth slice set to ``us`` µs for the quota runs, restored after; yields a note. A CPU
    draws its quota from the group's pool in slices (5000 µs by default): with 4.5 ms of quota per 10 ms period,
    the first of two robot processes to run takes the whole period's quota and the other waits for the next one,
    which no Nano does (its cores run the processes side by side, each slower). 1000 µs shares the quota at a 1 ms
    grain. ``us`` 0, or not writable: left as it is."""
    try:
        with open(SLICE_FILE) as f:
            old = int(f.read())
    except (OSError, ValueError):
        yield "CFS bandwidth slice: %s not readable, left as it is" % SLICE_FILE
        return
    if not us or us == old:
        yield "CFS bandwidth slice %d µs (the machine's)" % old
        return
    try:
        with open(SLICE_FILE, "w") as f:
            f.write(str(int(us)))
    except OSError as exc:
        yield "CFS bandwidth slice %d µs (the machine's; %d not writable: %s)" % (old, us, exc.strerror)
        return
    try:
        yield ("CFS bandwidth slice %d µs during the runs (the machine's %d µs restored after): a CPU draws the "
               "group's quota in slices of this size, so two processes share it at that grain" % (us, old))
    finally:
        with open(SLICE_FILE, "w") as f:
            f.write(str(old))


# ---------------------------------------------------------------------------------------------- recorder
def _stamp(h):
    return h.stamp.sec + 1e-9 * h.stamp.nanosec


def make_recorder(graph, speed, break_target="robot_emulator"):
    """The benchmark's node in ``graph``: publishes cmd_vel (``speed`` forward, 10 Hz) and records the topics
    (arrival times on the monotonic clock; poses with their header stamps)."""
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PoseStamped, Twist
    from rclpy.node import Node
    from rclpy.parameter_client import AsyncParameterClient
    from sensor_msgs.msg import Imu, JointState
    from std_msgs.msg import UInt8MultiArray
    from trajectory_msgs.msg import JointTrajectory

    from jethexa_dynamics.nodes._common import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
    from jethexa_dynamics.nodes._robot import jethexa
    from jethexa_dynamics.model.wire import morphology_from_wire

    legs = list(jethexa().leg_names)

    class Recorder(Node):
        def __init__(self, **kwargs):
            super().__init__("bench_nano_budget", **kwargs)
            self.lock = threading.Lock()
            self.arrivals = {t: [] for t in ("predicted/pose", "mocap/pose", "joint_commands", "imu/data",
                                             "joint_states")}
            self.poses = {"predicted/pose": [], "mocap/pose": []}    # (arrival, stamp, x, y, z, qw, qx, qy, qz)
            self.morphology = []                                     # (arrival, links)
            self.diag = {}                                           # status name -> [(arrival, values)]

            def pose_cb(topic):
                def cb(msg):
                    t = time.monotonic()
                    p, o = msg.pose.position, msg.pose.orientation
                    with self.lock:
                        self.arrivals[topic].append(t)
                        self.poses[topic].append((t, _stamp(msg.header), p.x, p.y, p.z, o.w, o.x, o.y, o.z))
                return cb

            def count_cb(topic):
                def cb(msg):
                    t = time.monotonic()
                    with self.lock:
                        self.arrivals[topic].append(t)
                return cb

            def morph_cb(msg):
                label = msg.layout.dim[0].label if msg.layout.dim else ""
                links = morphology_from_wire(list(msg.data), label, legs)
                with self.lock:
                    self.morphology.append((time.monotonic(), links))

            def diag_cb(arr):
                t = time.monotonic()
                for st in arr.status:
                    if st.name.endswith(": node"):
                        with self.lock:
                            self.diag.setdefault(st.name[:-len(": node")], []).append(
                                (t, {kv.key: kv.value for kv in st.values}))

            self.create_subscription(PoseStamped, "predicted/pose", pose_cb("predicted/pose"), RELIABLE_QOS)
            self.create_subscription(PoseStamped, "mocap/pose", pose_cb("mocap/pose"), SENSOR_QOS)
            self.create_subscription(JointTrajectory, "joint_commands", count_cb("joint_commands"), RELIABLE_QOS)
            self.create_subscription(Imu, "imu/data", count_cb("imu/data"), SENSOR_QOS)
            self.create_subscription(JointState, "joint_states", count_cb("joint_states"), SENSOR_QOS)
            self.create_subscription(UInt8MultiArray, "morphology", morph_cb, LATCHED_QOS)
            self.create_subscription(DiagnosticArray, "/diagnostics", diag_cb, RELIABLE_QOS)
            pub = self.create_publisher(Twist, "cmd_vel", 10)
            twist = Twist()
            twist.linear.x = float(speed)
            self.create_timer(0.1, lambda: pub.publish(twist))
            self.params = AsyncParameterClient(self, break_target)

        def count(self, topic):
            with self.lock:
                return len(self.arrivals[topic])

        def diag_after(self, node, t):
            """(arrival, values) of ``node``'s first status received at or after ``t``, or None."""
            with self.lock:
                for item in self.diag.get(node, []):
                    if item[0] >= t:
                        return item
            return None

    return graph.add(Recorder), legs


def check_domain_free(rec):
    """Exit (status 1) if anything publishes the graph's topics on this ROS domain already (another engineer's
    graph: scripts/ros_env.sh derives the domain from the shell's pid, so two shells can share one)."""
    busy = [t for t in rec.arrivals if rec.count(t)]
    if busy:
        raise SystemExit("another graph publishes %s on ROS_DOMAIN_ID=%s: choose another domain (export "
                         "ROS_DOMAIN_ID=...)" % (", ".join(busy), os.environ["ROS_DOMAIN_ID"]))


def domain_free():
    """``check_domain_free`` from a short-lived recorder of its own (before any process of a run starts)."""
    from jethexa_dynamics.nodes.graph import Graph

    g = Graph()
    rec, _ = make_recorder(g, 0.0)
    g.start()
    time.sleep(1.0)
    try:
        check_domain_free(rec)
    finally:
        g.close()


def wait_diag(rec, nodes, t, timeout):
    """{node: (arrival, values)}: each node's first /diagnostics status at or after ``t`` (waits up to ``timeout``)."""
    end = time.monotonic() + timeout
    while True:
        got = {n: rec.diag_after(n, t) for n in nodes}
        if all(got.values()) or time.monotonic() > end:
            return got
        time.sleep(0.05)


def _per_second(a, b, prefix):
    """Per second, the growth of every ``<prefix><stage>`` counter between two (arrival, values) statuses of one
    node, by stage."""
    if not a or not b or b[0] <= a[0]:
        return {}
    dt = b[0] - a[0]
    return {k[len(prefix):]: (float(v) - float(a[1].get(k, 0.0))) / dt for k, v in b[1].items() if k.startswith(prefix)}


def stage_rates(a, b):
    """CPU-s/s of every ``cpu_s <stage>`` between two (arrival, values) statuses of one node."""
    return _per_second(a, b, "cpu_s ")


def call_rates(a, b):
    """Calls per second of every stage (``calls <stage>``) between two (arrival, values) statuses of one node."""
    return _per_second(a, b, "calls ")


def counter_rate(a, b, key):
    """Per-second increase of the integer /diagnostics value ``key`` between two statuses (NaN if missing)."""
    try:
        return (float(b[1][key]) - float(a[1][key])) / (b[0] - a[0])
    except (TypeError, KeyError, ValueError, ZeroDivisionError):
        return float("nan")


# ---------------------------------------------------------------------------------------------- error
def prediction_error(pred, truth, t_from, t_to):
    """Predicted minus true pose for the predicted poses received in [t_from, t_to): the truth (mocap/pose, 50 Hz)
    interpolated at each predicted stamp (positions linearly, quaternions normalised-linearly), the difference as
    ``predictors.error_metric`` defines it. {n, roll_pitch_deg (mean |roll| and |pitch|), yaw_deg (mean |yaw|),
    pos_mm (mean 3-D distance), pos_p95_mm}; n = 0 when nothing matched."""
    import numpy as np

    from jethexa_dynamics.predictors.error_metric import orientation_errors

    p = np.array([r for r in pred if t_from <= r[0] < t_to]).reshape(-1, 9)
    m = np.array(truth).reshape(-1, 9)
    nan = {"n": 0, "roll_pitch_deg": float("nan"), "yaw_deg": float("nan"), "pos_mm": float("nan"),
           "pos_p95_mm": float("nan")}
    if len(p) == 0 or len(m) < 2:
        return nan
    m = m[np.argsort(m[:, 1])]
    ts = m[:, 1]
    i = np.searchsorted(ts, p[:, 1])
    ok = (i > 0) & (i < len(ts))
    i = np.clip(i, 1, len(ts) - 1)
    t0, t1 = ts[i - 1], ts[i]
    ok &= (t1 - t0) < 0.1            # a gap in the truth: not compared
    if not ok.any():
        return nan
    p, i, t0, t1 = p[ok], i[ok], t0[ok], t1[ok]
    w = ((p[:, 1] - t0) / np.maximum(t1 - t0, 1e-9))[:, None]
    a, b = m[i - 1], m[i]
    pos = a[:, 2:5] + w * (b[:, 2:5] - a[:, 2:5])
    qb = b[:, 5:9] * np.sign(np.sum(a[:, 5:9] * b[:, 5:9], axis=1))[:, None]
    q = a[:, 5:9] + w * (qb - a[:, 5:9])
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    e_rpy = np.degrees(np.abs(orientation_errors(p[:, 5:9], q)))
    e_pos = 1e3 * np.linalg.norm(p[:, 2:5] - pos, axis=1)
    return {"n": int(len(p)), "roll_pitch_deg": float(e_rpy[:, :2].mean()), "yaw_deg": float(e_rpy[:, 2].mean()),
            "pos_mm": float(e_pos.mean()), "pos_p95_mm": float(np.percentile(e_pos, 95))}


def walk_speed(truth, t_from, t_to):
    """Mean horizontal speed of the body [m/s] from the truth received in [t_from, t_to)."""
    rows = [r for r in truth if t_from <= r[0] < t_to]
    if len(rows) < 2:
        return float("nan")
    a, b = rows[0], rows[-1]
    return math.hypot(b[2] - a[2], b[3] - a[3]) / max(b[1] - a[1], 1e-9)


# ---------------------------------------------------------------------------------------------- processes
def launch_processes(layout, port_link, body_estimate=False):
    """The processes ``sim.launch.py`` starts with ``composed:=<LAYOUTS[layout]>`` (and ``body_estimate:=true
    servo_timing:=exact`` with ``body_estimate``): ``graph_spec.processes``, the launch file's own source."""
    from jethexa_dynamics.nodes.graph_spec import processes

    args = {"port_link": port_link, "composed": LAYOUTS[layout]}
    if body_estimate:
        args.update(body_estimate="true", servo_timing="exact")
    return processes("sim", args)


def process_name(process):
    return process.label


def node_names(process):
    return [entry.name for entry, _ in process.nodes]


def is_robot(process):
    return all(n in ROBOT_NODES for n in node_names(process))


def child_env():
    """This environment with the checkout first on PYTHONPATH (the processes run this tree's package)."""
    path = os.environ.get("PYTHONPATH", "")
    return dict(os.environ, PYTHONPATH=ROOT + (os.pathsep + path if path else ""))


def start(process, workdir, local_motion=False):
    """``graph.start_process`` (parameter file, command line and log as ``ros2 launch``); the process that hosts the
    imu node through ``_imu_split.py`` (the same arguments; its emulated MPU6050 counted apart). Returns (Popen,
    log)."""
    from jethexa_dynamics.nodes.graph import start_process

    launcher = None
    if "imu" in node_names(process):
        launcher = [sys.executable, os.path.join(HERE, "_imu_split.py")] + (["--local-motion"] if local_motion else [])
    return start_process(process, workdir, env=child_env(), launcher=launcher)


def stop(procs, logs):
    """SIGINT to every process, the robot's first (the commands stop before the emulated bus closes); returns
    (exit codes, log texts)."""
    from jethexa_dynamics.nodes.graph import stop_processes

    return stop_processes(procs, logs, timeout=20.0)


class Interrupted(Exception):
    pass


def _on_term(signum, frame):
    raise Interrupted("signal %d" % signum)


def run_case(label, layout, quota, opts, workdir, cgroup, credit, per_process=False, native=None):
    """One run of the whole graph in ``layout`` (a key of ``LAYOUTS``); ``quota`` = cores of the robot's group
    (None: unconstrained), or of each robot process with ``per_process`` (plus ``native``, {process: cores}, its
    native threads' credit). Returns a dict of everything measured."""
    from jethexa_dynamics.model import format_morphology
    from jethexa_dynamics.nodes.graph import Graph, wait_for
    from rclpy.parameter import Parameter

    run = "%s %s" % (layout, label)
    native = dict(native or {}) if per_process and quota is not None else {}
    print("== %s: %s" % (run, "unconstrained" if quota is None else "robot's %s inside %.3f core%s%s%s" % (
        "process" if layout == "composed" else "processes", quota, " each" if per_process else "",
        " (+ %.3f credit for the emulated MPU6050)" % credit if credit else "",
        " (+ native threads and kernel: %s)" % ", ".join("%s %.3f" % kv for kv in sorted(native.items()))
        if native else ""
    )), flush=True)
    res = {"label": label, "layout": layout, "run": run, "quota": quota, "per_process": per_process,
           "credit": credit if quota is not None else 0.0, "native_credit": native, "load_start": load_text()}
    g = Graph()
    procs, logs, groups = {}, {}, None
    try:
        rec, legs = make_recorder(g, opts.speed)
        g.start()
        time.sleep(1.0)
        check_domain_free(rec)
        groups = Groups(cgroup, quota, opts.shares, per_process, credit, native)
        if quota is not None:
            res["quota_us"] = groups.quota_us
        t_launch = time.monotonic()
        run_dir = os.path.join(workdir, run.replace(" ", "_"))
        os.makedirs(run_dir, exist_ok=True)
        plan = launch_processes(layout, "/tmp/jethexa_nano_bus_%d" % os.getpid(), opts.body_estimate)
        res["processes"] = {process_name(p): node_names(p) for p in plan}
        res["robot_procs"] = [process_name(p) for p in plan if is_robot(p)]
        for p in plan:
            name = process_name(p)
            procs[name], logs[name] = start(p, run_dir)
            groups.add(is_robot(p), procs[name].pid, "imu" in node_names(p), name)   # at once: start-up inside too

        def up():
            return all(rec.count(t) for t in rec.arrivals) and rec.morphology

        def dead():
            return [n for n, p in procs.items() if p.poll() is not None]

        wait_for(lambda: up() or dead(), opts.timeout, poll=0.1)
        if not up():
            raise RuntimeError("graph not up after %.0f s (ended: %s); see the logs in %s"
                               % (time.monotonic() - t_launch, dead() or "none", run_dir))
        res["startup_s"] = time.monotonic() - t_launch
        print("   graph up after %.1f s (first predicted pose, truth, commands, IMU, joint states, morphology)"
              % res["startup_s"], flush=True)
        if not rec.params.wait_for_services(timeout_sec=30.0):
            raise RuntimeError("robot_emulator's parameter service not available")
        time.sleep(opts.warmup)
        if dead():
            raise RuntimeError("node processes ended: %s" % dead())
        pids = {n: p.pid for n, p in procs.items()}

        def snapshot():
            return time.monotonic(), {n: proc_cpu(pid) for n, pid in pids.items()}, {
                n: proc_threads(pid) for n, pid in pids.items()}

        t_mark = time.monotonic()
        diag0 = wait_diag(rec, ROBOT_NODES, t_mark, 5.0)
        s0 = snapshot()
        g0 = groups.stats()
        t0 = s0[0]
        sb = tb = None
        mem_mid = None
        if opts.break_at > 0:
            time.sleep(max(0.0, t0 + opts.break_at - time.monotonic()))
            mem_mid = {n: proc_memory(pid) for n, pid in pids.items()}
            sb = snapshot()
            tb = time.monotonic()
            fut = rec.params.set_parameters([Parameter("breaks", value=opts.break_spec)])
            wait_for(fut.done, 10.0)
            if not fut.done() or not fut.result().results[0].successful:
                raise RuntimeError("setting breaks=%s on robot_emulator failed: %s" % (
                    opts.break_spec, fut.result().results[0].reason if fut.done() else "no answer"))
            print("   silent break %s at %.1f s into the window" % (opts.break_spec, tb - t0), flush=True)
        time.sleep(max(0.0, t0 + opts.seconds - time.monotonic()))
        s1 = snapshot()
        t1 = s1[0]
        g1 = groups.stats()
        mem = {n: proc_memory(pid) for n, pid in pids.items()}
        if mem_mid:
            for n, m in mem.items():
                if mem_mid[n]["rss"] > m["rss"]:     # the larger RSS, with its file-backed part
                    m["rss"], m["file"] = mem_mid[n]["rss"], mem_mid[n]["file"]
                m["pss"] = max(m["pss"], mem_mid[n]["pss"])
        diag1 = wait_diag(rec, ROBOT_NODES, t1, 5.0)
        if dead():
            raise RuntimeError("node processes ended during the window: %s" % dead())

        # silent break: the first non-healthy morphology after it (waiting on a little past the window)
        healthy = [3] * len(legs)
        if tb is not None:
            def named():
                with rec.lock:
                    return next(((t, m) for t, m in rec.morphology if t >= tb and m != healthy), None)

            wait_for(named, max(0.0, tb + opts.name_timeout - time.monotonic()), poll=0.1)
            first = named()
            with rec.lock:
                before = [m for t, m in rec.morphology if t < tb and m != healthy]
                final = rec.morphology[-1][1] if rec.morphology else None
            expect = _links(opts.break_spec)
            broken = [i for i, n in enumerate(expect) if n < 3]
            res["break"] = {"delay_s": first[0] - tb if first else float("nan"),
                            "named": format_morphology(first[1], legs) if first else "nothing",
                            "legs_right": bool(first and [i for i, n in enumerate(first[1]) if n < 3] == broken),
                            "exact": bool(first and first[1] == expect), "waited_s": opts.name_timeout,
                            "final": format_morphology(final, legs) if final else "-"}
        else:
            with rec.lock:
                before = [m for t, m in rec.morphology if m != healthy]
        res["false_damage"] = [format_morphology(m, legs) for m in before]
        res["false_alarms"] = false_alarms(rec, t0, tb if tb is not None else t1)
        with rec.lock:
            seq = [m for t, m in rec.morphology if tb is None or t < tb]
        res["changes"] = sum(1 for a, b in zip(seq, seq[1:]) if a != b)   # before the break: all false

        dt = t1 - t0
        res["window_s"] = dt
        res["cpu"] = {n: (s1[1][n] - s0[1][n]) / dt for n in pids}
        res["threads"] = {n: thread_delta(s0[2][n], s1[2][n], dt) for n in pids}
        if sb is not None:
            res["cpu_before"] = sum((sb[1][n] - s0[1][n]) for n in res["robot_procs"]) / (sb[0] - s0[0])
            res["cpu_after"] = sum((s1[1][n] - sb[1][n]) for n in res["robot_procs"]) / (t1 - sb[0])
        res["mem"] = mem
        with rec.lock:
            res["rates"] = {t: sum(1 for a in arr if t0 <= a < t1) / dt for t, arr in rec.arrivals.items()}
            pred, truth = list(rec.poses["predicted/pose"]), list(rec.poses["mocap/pose"])
        t_h = tb if tb is not None else t1
        res["error"] = prediction_error(pred, truth, t0, t_h)
        res["error_after"] = prediction_error(pred, truth, t_h, t1) if tb is not None else None
        res["speed"] = walk_speed(truth, t0, t_h)
        res["stages"] = {n: stage_rates(diag0.get(n), diag1.get(n)) for n in ROBOT_NODES}
        res["calls"] = {n: call_rates(diag0.get(n), diag1.get(n)) for n in ROBOT_NODES}
        res["kernel"] = {p: max([0.0] + [k for k in (counter_rate(diag0.get(n), diag1.get(n), "process_kernel_cpu_s")
                                                      for n in res["processes"][p]) if math.isfinite(k)])
                         for p in res["robot_procs"]}
        res["id_windows"] = counter_rate(diag0.get("damage_monitor"), diag1.get("damage_monitor"),
                                         "identifier_windows")
        if g0:
            res["throttle"] = {"periods": g1.get("nr_periods", 0) - g0.get("nr_periods", 0),
                               "throttled": g1.get("nr_throttled", 0) - g0.get("nr_throttled", 0),
                               "throttled_s": g1.get("throttled_s", 0.0) - g0.get("throttled_s", 0.0)}
        res["load_end"] = load_text()
        _print_case(res)
        return res
    finally:
        g.close()
        if groups is not None:
            groups.close()            # the nodes end at full speed
        if procs:
            codes, text = stop(procs, logs)
            bad = {n: c for n, c in codes.items() if c != 0}
            errors = sum(t.count("[ERROR]") + t.count("Traceback") for t in text.values())
            res["exits"] = "all 0" if not bad else str(bad)
            res["error_lines"] = errors
            if bad or errors:
                print("   exits %s, ERROR lines/tracebacks %d (logs in %s)" % (res["exits"], errors, workdir),
                      flush=True)


def _links(spec):
    from jethexa_dynamics.model import Morphology
    from jethexa_dynamics.nodes._robot import jethexa

    return list(Morphology.parse(jethexa(), spec).links_per_leg)


def robot_total(res, key, field=None):
    """Sum over the robot's process(es) of ``res[key][process]`` (or of its ``[field]``)."""
    return sum(res[key][p] if field is None else res[key][p][field] for p in res["robot_procs"])


def robot_cpu(res):
    return robot_total(res, "cpu")


def node_stages(res, node):
    """CPU-s/s of ``node`` by its own accounting: the sum of its ``cpu_s`` stages (callbacks, worker threads; the
    register model is inside the imu's ``sample`` stage, so it is not added again)."""
    return sum(v for k, v in res["stages"].get(node, {}).items() if k != REGISTERS)


def rest_split(res):
    """(CPU-s/s of the robot's process(es) outside every node's stages: executor, rclpy, interpreter, DDS = process
    total minus the stages; of which the DDS/rmw threads, from /proc per-thread stats)."""
    return robot_cpu(res) - sum(node_stages(res, n) for n in ROBOT_NODES), robot_total(res, "threads", "native")


def delivery_in(res, ab):
    """CPU-s/s of the delivery of emulator/imu_motion in a run: the A/B's figure (>= 0) scaled by the motion
    messages the imu node handled per second in the run against the A/B (a throttled node takes fewer); None
    without the A/B."""
    if not ab:
        return None
    ref = ab["topic"]["calls"].get(MOTION, 0.0)
    got = res.get("calls", {}).get("imu", {}).get(MOTION, ref)
    return max(0.0, ab["delivery"]) * (got / ref if ref > 0 else 1.0)


def imu_split(res, ab):
    """(imu CPU-s/s, emulated part, the imu's robot part) of a run. imu = its process (separate) or its stages
    (in a process of several nodes: the delivery of its topic is then in the process's rest); emulated = the
    motion callback + the register model (measured in the run) + the delivery of emulator/imu_motion
    (``delivery_in``: from the A/B ``ab``); robot part = imu minus the emulated part it contains."""
    st = res["stages"].get("imu", {})
    inside = st.get(MOTION, 0.0) + st.get(REGISTERS, 0.0)
    delivery = delivery_in(res, ab) or 0.0
    if "imu" in res["cpu"]:
        total = res["cpu"]["imu"]
        return total, inside + delivery, total - inside - delivery
    total = node_stages(res, "imu")
    return total, inside + delivery, total - inside


def _print_case(res):
    r, e = res["rates"], res["error"]
    rest, dds = rest_split(res)
    line = ("   robot CPU %.3f CPU-s/s (stages: %s; rest %.3f, of which DDS threads %.3f); emulator %.3f; "
            "predicted/pose %.1f Hz, joint_commands %.1f, imu/data %.1f, joint_states %.1f; identifier windows "
            "%.2f/s; error roll/pitch %.3f deg, position %.1f mm; speed %.3f m/s"
            % (robot_cpu(res), ", ".join("%s %.3f" % (n, node_stages(res, n)) for n in ROBOT_NODES), rest, dds,
               res["cpu"]["robot_emulator"], r["predicted/pose"], r["joint_commands"], r["imu/data"],
               r["joint_states"], res["id_windows"], e["roll_pitch_deg"], e["pos_mm"], res["speed"]))
    if "break" in res:
        b = res["break"]
        line += "; break named after %.1f s as %s" % (b["delay_s"], b["named"])
    line += "; morphology changes before it %d" % res["changes"] if "break" in res else \
        "; morphology changes %d" % res["changes"]
    line += "; false alarms %s" % (", ".join(res.get("false_alarms", ())) or "none")
    line += "; waited for a CPU %.2f s/s" % robot_total(res, "threads", "wait")
    line += "; RSS %.0f MB (PSS %.0f)" % (robot_total(res, "mem", "rss"), robot_total(res, "mem", "pss"))
    print(line, flush=True)


# ---------------------------------------------------------------------------------------------- imu A/B
def measure_imu_alone(local, seconds, workdir, cgroup=(None, ""), shares=None):
    """The imu node alone, ``seconds`` measured: ``local`` False = as in the sim graph (source emulator, fed
    emulator/imu_motion at 100 Hz by this process), True = its robot code path (source i2c) on the same register
    model fed in-process (``_imu_split.py --local-motion``). This process subscribes to imu/data in both.
    {cpu (CPU-s/s of the process), stages (from /diagnostics), rate}."""
    from geometry_msgs.msg import Vector3  # noqa: F401  (message package loaded before the node class)
    from sensor_msgs.msg import Imu

    from jethexa_dynamics.nodes import graph_spec
    from jethexa_dynamics.nodes._common import SENSOR_QOS
    from jethexa_dynamics.nodes.graph import Graph, wait_for

    entry, values = next((e, dict(v)) for e, v in graph_spec.node_parameters("sim") if e.name == "imu")
    values["source"] = "i2c" if local else "emulator"
    side_dir = os.path.join(workdir, "imu_alone_%s" % ("local" if local else "topic"))
    os.makedirs(side_dir, exist_ok=True)
    domain_free()
    groups = Groups(cgroup, None, shares)
    proc, log = start(graph_spec.Process("imu", "imu", (), ((entry, values),)), side_dir, local_motion=local)
    g = Graph()
    try:
        groups.add(True, proc.pid)
        rec, _ = make_recorder(g, 0.0)
        if not local:
            pub = rec.create_publisher(Imu, "emulator/imu_motion", SENSOR_QOS)
            msg = Imu()
            msg.orientation.w = 1.0
            msg.angular_velocity.x, msg.angular_velocity.z = 0.05, 0.1

            def feed():
                msg.header.stamp = rec.get_clock().now().to_msg()
                pub.publish(msg)

            rec.create_timer(0.01, feed)
        g.start()
        if not wait_for(lambda: rec.count("imu/data") > 50 or proc.poll() is not None, 120.0, poll=0.1) \
                or proc.poll() is not None:
            raise RuntimeError("imu node alone did not publish (log %s)" % log.name)
        time.sleep(2.0)
        a = wait_diag(rec, ["imu"], time.monotonic(), 5.0)["imu"]
        c0, t0 = proc_cpu(proc.pid), time.monotonic()
        n0 = rec.count("imu/data")
        time.sleep(seconds)
        c1, t1 = proc_cpu(proc.pid), time.monotonic()
        n1 = rec.count("imu/data")
        b = wait_diag(rec, ["imu"], t1, 5.0)["imu"]
        return {"cpu": (c1 - c0) / (t1 - t0), "stages": stage_rates(a, b), "calls": call_rates(a, b),
                "rate": (n1 - n0) / (t1 - t0)}
    finally:
        g.close()
        groups.close()
        stop({"imu": proc}, {"imu": log})


def imu_ab(seconds, workdir, cgroup, shares):
    """The A/B of the imu node alone: {topic, local, delivery}; delivery = CPU-s/s of receiving
    emulator/imu_motion (DDS threads + rclpy executor), i.e. the difference of the two processes' CPU outside
    the emulated stages."""
    topic = measure_imu_alone(False, seconds, workdir, cgroup, shares)
    local = measure_imu_alone(True, seconds, workdir, cgroup, shares)
    rest_topic = topic["cpu"] - sum(topic["stages"].get(k, 0.0) for k in IMU_EMULATED_STAGES)
    rest_local = local["cpu"] - local["stages"].get("emulated MPU6050", 0.0)
    out = {"topic": topic, "local": local, "delivery": rest_topic - rest_local}
    print("== imu node alone (%.0f s each): fed by emulator/imu_motion %.4f CPU-s/s (motion callback %.4f, register "
          "model %.4f), local motion %.4f (register model %.4f); delivery of emulator/imu_motion %.4f CPU-s/s" % (
              seconds, topic["cpu"], topic["stages"].get("emulator/imu_motion", 0.0),
              topic["stages"].get("emulated MPU6050", 0.0), local["cpu"], local["stages"].get("emulated MPU6050", 0.0),
              out["delivery"]), flush=True)
    return out



# ---------------------------------------------------------------------------------------------- report
def _f(x, fmt="%.3f"):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt % x


def _nano(x):
    """'a (b-c)': CPU-s/s here -> Nano cores at 5x (4-6x)."""
    return "%.2f (%.2f-%.2f)" % (x * NANO_F, x * NANO_RANGE[0], x * NANO_RANGE[1])


def _quota_text(res):
    if res["quota"] is None:
        return "none (2 cores shared)"
    q = "%.3f core" % res["quota"]
    if res["credit"]:
        q += " + %.3f" % res["credit"]
    if res.get("native_credit"):
        q += " + native threads' and kernel's (%s)" % ", ".join(
            "%s %.3f" % kv for kv in sorted(res["native_credit"].items()))
    return q + " (%d µs / %d%s)%s" % (res["quota_us"], PERIOD_US, " before the credits" if res.get("per_process") and (
        res["credit"] or res.get("native_credit")) else "", " per process" if res.get("per_process") else "")


def _break_text(res):
    b = res.get("break")
    if not b:
        return "-"
    if math.isnan(b["delay_s"]):
        return "not named within %.0f s" % b["waited_s"]
    return "%.1f s = %.1f cycles, as %s (%s)" % (
        b["delay_s"], b["delay_s"] / GAIT_CYCLE, b["named"], "exact" if b["exact"] else
        "the right leg, another link count" if b["legs_right"] else "the wrong leg")


def _robot_text(res):
    """'1 process' / '5 processes'."""
    n = len(res["robot_procs"])
    return "%d process%s" % (n, "" if n == 1 else "es")


def targets(by_label, opts, ab):
    """Rows (target, measured, status) for the issue's targets, from the runs of one layout by label."""
    rows = []
    free = by_label.get("unconstrained")
    if free is None:
        return rows
    # the median of the repeated unconstrained runs: the same code's CPU-s/s moves +-20 % with this shared
    # machine's speed from one run to the next (every stage alike, the emulator's too)
    repeats = [r for label, r in by_label.items() if label == "unconstrained" or label.startswith("unconstrained ")]
    cpus = sorted(robot_cpu(r) - imu_split(r, ab)[1] for r in repeats)
    cpu, cpu_all = statistics.median(cpus), statistics.median([robot_cpu(r) for r in repeats])
    spread = " (median of %d runs, %.3f-%.3f)" % (len(cpus), cpus[0], cpus[-1]) if len(cpus) > 1 else ""
    rows.append(("robot's nodes together <= %.1f CPU-s/s here (2 Nano cores at 5x)" % TARGETS["cpu"],
                 "%.3f without the emulated MPU6050%s (%.3f as measured, %s); Nano cores %s"
                 % (cpu, spread, cpu_all, _robot_text(free), _nano(cpu)), _met(cpu <= TARGETS["cpu"])))
    rss, pss = robot_total(free, "mem", "rss"), robot_total(free, "mem", "pss")
    rows.append(("memory: the robot's process(es) together <= %.0f MB RSS" % TARGETS["rss_mb"],
                 "%.0f MB RSS (PSS %.0f MB: shared libraries counted once), %s" % (rss, pss, _robot_text(free)),
                 _met(rss <= TARGETS["rss_mb"])))
    main = by_label.get("5x")
    if main is not None:
        r, e, e0 = main["rates"], main["error"], free["error"]
        rows.append(("inside %.1f core: predicted/pose >= %.0f Hz" % (main["quota"], TARGETS["pose_hz"]),
                     "%.1f Hz (unconstrained %.1f)" % (r["predicted/pose"], free["rates"]["predicted/pose"]),
                     _met(r["predicted/pose"] >= TARGETS["pose_hz"])))
        rows.append(("inside %.1f core: joint_commands >= %.0f Hz" % (main["quota"], TARGETS["cmd_hz"]),
                     "%.1f Hz" % r["joint_commands"], _met(r["joint_commands"] >= TARGETS["cmd_hz"])))
        ratio_rp = e["roll_pitch_deg"] / e0["roll_pitch_deg"] if e0["roll_pitch_deg"] else float("nan")
        ratio_pos = e["pos_mm"] / e0["pos_mm"] if e0["pos_mm"] else float("nan")
        rows.append(("inside %.1f core: prediction error <= %.1fx the unconstrained run's" % (
            main["quota"], TARGETS["error_ratio"]),
            "roll/pitch %.3f deg vs %.3f (%.2fx), position %.1f mm vs %.1f (%.2fx)" % (
                e["roll_pitch_deg"], e0["roll_pitch_deg"], ratio_rp, e["pos_mm"], e0["pos_mm"], ratio_pos),
            _met(max(ratio_rp, ratio_pos) <= TARGETS["error_ratio"])))
        if "break" in main:
            b = main["break"]
            limit = TARGETS["break_cycles"] * GAIT_CYCLE
            rows.append(("inside %.1f core: silent %s named within %d gait cycles (%.1f s)" % (
                main["quota"], opts.break_spec, TARGETS["break_cycles"], limit), _break_text(main),
                _met(b["legs_right"] and b["delay_s"] <= limit)))
        rows.append(("inside %.1f core: no false damage (no morphology change before the break)" % main["quota"],
                     ", ".join(main["false_damage"]) or "none", _met(not main["false_damage"])))
    half = next((r for k, r in by_label.items() if k.startswith("half-Nano")), None)
    if half is not None:
        walks = half["speed"] >= 0.8 * free["speed"]
        rows.append(("inside %.1f core (half-busy Nano): the gait keeps its rate and the robot walks" % half["quota"],
                     "joint_commands %.1f Hz, speed %.3f m/s (unconstrained %.3f); predicted/pose %.1f Hz, identifier "
                     "%.2f windows/s" % (half["rates"]["joint_commands"], half["speed"], free["speed"],
                                         half["rates"]["predicted/pose"], half["id_windows"]),
                     _met(half["rates"]["joint_commands"] >= TARGETS["cmd_hz"] and walks)))
    one = by_label.get(per_process_label(opts.core_factor)) if opts.core_factor else None
    if one is not None:
        r, b = one["rates"], one.get("break")
        limit = TARGETS["break_cycles"] * GAIT_CYCLE
        ok = (r["predicted/pose"] >= TARGETS["pose_hz"] and r["joint_commands"] >= TARGETS["cmd_hz"]
              and (b is None or (b["legs_right"] and b["delay_s"] <= limit)) and not one["false_damage"])
        rows.append(("each robot process inside one A57 core (%.2f core each at %gx: a process's GIL-bound Python "
                     "runs on one core; its native threads' and nogil kernel's unconstrained CPU added, as they "
                     "run on the other cores): predicted/pose >= %.0f Hz, joint_commands >= %.0f Hz, the break named "
                     "within %d cycles, no false damage" % (one["quota"], opts.core_factor, TARGETS["pose_hz"],
                                                            TARGETS["cmd_hz"], TARGETS["break_cycles"]),
                     "predicted/pose %.1f Hz, joint_commands %.1f Hz, break %s, false damage %s (%s)" % (
                         r["predicted/pose"], r["joint_commands"], _break_text(one),
                         ", ".join(one["false_damage"]) or "none", _robot_text(one)), _met(ok)))
    return rows


def _met(ok):
    return "met" if ok else "**not met**"


def side_by_side(runs, ab):
    """The layouts side by side: a column per run whose label more than one layout ran (launched layout first)."""
    order = sorted(LAYOUTS, key=lambda lay: lay != LAUNCHED)
    labels = list(dict.fromkeys(r["label"] for r in runs))
    pairs = [r for lab in labels if len({s["layout"] for s in runs if s["label"] == lab}) > 1
             for r in sorted((r for r in runs if r["label"] == lab), key=lambda r: order.index(r["layout"]))]
    if not pairs:
        return []
    rows = [("robot's processes", lambda r: "%d (%s)" % (len(r["robot_procs"]), ", ".join(r["robot_procs"]))),
            ("robot CPU-s/s (/proc)", lambda r: "%.3f" % robot_cpu(r)),
            ("without the emulated MPU6050", lambda r: "%.3f" % (robot_cpu(r) - imu_split(r, ab)[1])),
            ("Nano cores at 5× (4-6×)", lambda r: _nano(robot_cpu(r) - imu_split(r, ab)[1]))]
    rows += [("%s (its stages)" % n, lambda r, n=n: "%.3f" % node_stages(r, n)) for n in ROBOT_NODES]
    rows += [("rest: executor, rclpy, DDS (process − stages)", lambda r: "%.3f" % rest_split(r)[0]),
             ("… of which DDS/rmw threads (/proc per thread)", lambda r: "%.3f" % rest_split(r)[1]),
             ("RSS / PSS [MB]", lambda r: "%.0f / %.0f" % (robot_total(r, "mem", "rss"), robot_total(r, "mem", "pss"))),
             ("predicted/pose [Hz]", lambda r: "%.1f" % r["rates"]["predicted/pose"]),
             ("joint_commands [Hz]", lambda r: "%.1f" % r["rates"]["joint_commands"]),
             ("imu/data / joint_states [Hz]", lambda r: "%.1f / %.1f" % (r["rates"]["imu/data"],
                                                                         r["rates"]["joint_states"])),
             ("error roll/pitch [deg] / position [mm]", lambda r: "%s / %s" % (
                 _f(r["error"]["roll_pitch_deg"]), _f(r["error"]["pos_mm"], "%.1f"))),
             ("silent break named after", _break_text),
             ("false damage", lambda r: ", ".join(r["false_damage"]) or "none"),
             ("false alarms short of a morphology change (gait slowed or held)",
              lambda r: ", ".join(r.get("false_alarms", ())) or "none"),
             ("start-up [s]", lambda r: "%.1f" % r["startup_s"]),
             ("robot waited for a CPU [s/s]", lambda r: "%.2f" % robot_total(r, "threads", "wait")),
             ("robot's threads scheduled in [1/s]", lambda r: "%.0f" % robot_total(r, "threads", "wakes"))]
    md = ["## The layouts side by side (%s as launched)" % LAUNCHED, "",
          "| | " + " | ".join(r["run"] for r in pairs) + " |", "|---|" + "---|" * len(pairs)]
    md += ["| %s | %s |" % (name, " | ".join(fn(r) for r in pairs)) for name, fn in rows]
    return md + [""]


def report(opts, info, cgroup_note, runs, ab, argv_text, wake_s):
    """The results as markdown lines; ``wake_s``: a bare wake-up's CPU [s] on this machine (``wake_cost``)."""
    layouts = [lay for lay in sorted(LAYOUTS, key=lambda lay: lay != LAUNCHED) if any(r["layout"] == lay for r in runs)]
    primary = layouts[0]
    by_label = {r["label"]: r for r in runs if r["layout"] == primary}
    lo, hi = NANO_RANGE
    md = ["# Jetson Nano budget: the robot's nodes in two processes (as launched), in one and a process each, "
          "unconstrained and inside a CPU quota (`benchmarks/bench_nano_budget.py`)", "",
          "`benchmarks/bench_nano_budget.py %s`" % argv_text, ""] + info + [
          "- CPU quota: " + cgroup_note,
          "- CPU weight: " + (("the robot's process(es) in one group, robot_emulator and this process in another, "
                               "both with cpu.shares %d (a process weighs 1024) in every run, so that the other load "
                               "of this shared machine does not starve a run below its quota (the quota runs are "
                               "capped by their quota, the unconstrained run by the 2 cores)" % opts.shares)
                              if opts.shares and cgroup_note.startswith("cgroup") else
                              "none: the processes compete with the machine's other load as they come"),
          "- Jetson Nano: 4 Cortex-A57 cores, assumed %g-%g× slower per core than this machine (%g× central); a "
          "quota of 4/F core here stands for the whole Nano at slowdown F, 2/F for a half-busy Nano; Nano figures "
          "= CPU-s/s here × F (cores of the Nano)" % (lo, hi, NANO_F), "",
          "The sim.launch.py graph started as the launch file starts it (`graph_spec.processes`, "
          "`graph.start_process`): **split** (`composed:=split`, the default) = the `robot` executable twice: "
          "robot_control hosting servo_driver, imu and gait_controller, robot_model hosting predictor and "
          "damage_monitor; **composed** (`composed:=true`) = one `robot` process hosting all five; **separate** "
          "(`composed:=false`) = a process per node; robot_emulator in its own in each. Default parameters "
          "(predictor 100 Hz, no slip second opinion, gait 50 Hz tripod, IMU 100 Hz, identifier on); this process "
          "drives cmd_vel at %.2f m/s and subscribes to the measured topics (one more reader on each; outside the "
          "quota, not counted). "
          "Window: %g s, starting after the graph is up (first predicted pose) and %g s of walking; silent break "
          "`%s` (robot_emulator's `breaks`) at %g s into the window. CPU: /proc utime+stime per process over the "
          "window; per node, the nodes' own accounting (the `cpu_s <stage>` totals on /diagnostics, thread CPU time "
          "of every callback and worker stage, summed per node over the window: in a process of several nodes the "
          "only per-node figure); the rest of a process (process total − its nodes' stages) is the executor, rclpy, the "
          "interpreter and DDS, and /proc per-thread stats give the DDS/rmw threads' part of it (Fast DDS names its "
          "threads `dds.*`; Python's threads keep the process's name). Quota runs: the robot's process(es) in one "
          "CPU cgroup with the quota from their start (robot_emulator and this process outside it); per-process "
          "runs: each robot process in a cgroup of its own with that quota. Error = "
          "predicted/pose minus the truth (mocap/pose interpolated at the predicted stamp; `predictors.error_metric`), "
          "mean over the healthy part of the window. Speed = the truth's horizontal speed over the healthy part."
          % (opts.speed, opts.seconds, opts.warmup, opts.break_spec, opts.break_at), "",
          ]
    for layout in sorted(layouts, key=lambda lay: lay != LAUNCHED):      # the launched layout's first
        rows = targets({r["label"]: r for r in runs if r["layout"] == layout}, opts, ab)
        if rows:
            md += ["## Targets (issue 21; %s runs%s)" % (layout, ", as launched" if layout == LAUNCHED else ""), "",
                   "| target | measured | status |", "|---|---|---|"]
            md += ["| %s | %s | %s |" % row for row in rows] + [""]
    md += side_by_side(runs, ab)
    md += ["## Runs", "",
           "| run | robot's group quota | robot CPU-s/s (its processes) | without the emulated MPU6050 "
           "| Nano cores at 5× (4-6×) | throttled periods | predicted/pose [Hz] | joint_commands [Hz] "
           "| imu/data [Hz] | joint_states [Hz] | identifier windows [1/s] | error roll/pitch [deg] "
           "| error position mean / p95 [mm] | speed [m/s] | silent break named after | false damage "
           "| RSS / PSS [MB] | start-up [s] | robot waited for a CPU [s/s] "
           "| robot's threads scheduled in [1/s] / × a bare wake-up [CPU-s/s] |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        cpu = robot_cpu(r)
        _, emu, _ = imu_split(r, ab)
        rt, e = r["rates"], r["error"]
        thr = r.get("throttle")
        wakes = robot_total(r, "threads", "wakes")
        md.append("| %s | %s | %.3f | %.3f | %s | %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %s / %s | %s | %s | %s "
                  "| %.0f / %.0f | %.1f | %.2f | %.0f / %.3f |" % (
                      r["run"], _quota_text(r), cpu, cpu - emu, _nano(cpu - emu),
                      "%d of %d (%.1f s)" % (thr["throttled"], thr["periods"], thr["throttled_s"]) if thr else "-",
                      rt["predicted/pose"], rt["joint_commands"], rt["imu/data"], rt["joint_states"],
                      _f(r["id_windows"], "%.2f"), _f(e["roll_pitch_deg"], "%.3f"), _f(e["pos_mm"], "%.1f"),
                      _f(e["pos_p95_mm"], "%.1f"), _f(r["speed"], "%.3f"), _break_text(r),
                      ", ".join(r["false_damage"]) or "none", robot_total(r, "mem", "rss"),
                      robot_total(r, "mem", "pss"), r["startup_s"], robot_total(r, "threads", "wait"),
                      wakes, wakes * wake_s))
    md += ["", "Robot waited for a CPU = the run-queue delay of every thread of the robot's process(es) (schedstat "
           "run_delay) per second: in the unconstrained runs the machine's other load (this machine is shared), in "
           "the quota runs that plus the quota's throttling. Throttled periods = the group's CFS periods that ran "
           "out of quota (cpu.stat). Robot's threads scheduled in = how often the robot's threads were put on "
           "a CPU per second (schedstat: every wake-up, every return after a preemption): each costs CPU before "
           "any node code runs; × a bare wake-up = that rate times a wake-up's cost on this machine (above): the "
           "CPU-s/s this machine charges for them alone (for the DDS threads' share, about a third, an upper "
           "bound: a native thread's wake-up costs less than a Python thread's). On this virtual machine that cost "
           "moves from hour to hour (32-109 µs seen on 27-28 Nov), and the robot's CPU-s/s moves with it; a Jetson "
           "Nano on its own hardware pays no hypervisor exit per wake-up, so the Nano figures (× 4-6 of everything) "
           "overstate this part."]
    if any("cpu_before" in r for r in runs):
        md += ["", "Robot CPU before / after the break (CPU-s/s): " + "; ".join(
            "%s %.3f / %.3f" % (r["run"], r["cpu_before"], r["cpu_after"]) for r in runs if "cpu_before" in r) + ".",
            "Error after the break (the model is wrong until the morphology is named): " + "; ".join(
                "%s roll/pitch %s deg, position %s mm" % (r["run"], _f(r["error_after"]["roll_pitch_deg"]),
                                                          _f(r["error_after"]["pos_mm"], "%.1f"))
                for r in runs if r.get("error_after")) + ". Morphology at the end of the run: " + "; ".join(
                "%s %s" % (r["run"], r["break"]["final"]) for r in runs if "break" in r) + "."]
    free = by_label.get("unconstrained", runs[0])
    md += ["", "## CPU by node (CPU-s/s over the window)", "",
           "Per node: the sum of its stages on /diagnostics (every layout alike); separate runs also give "
           "its process's /proc figure (stages / process).", "",
           "| node | " + " | ".join(r["run"] for r in runs) + " | Nano cores at 5× (4-6×), %s |" % free["run"],
           "|---|" + "---|" * len(runs) + "---|"]
    for n in ROBOT_NODES:
        md.append("| %s | %s | %s |" % (n, " | ".join(
            "%.3f" % node_stages(r, n) + (" / %.3f" % r["cpu"][n] if n in r["cpu"] else "") for r in runs),
            _nano(node_stages(free, n))))
    md.append("| rest of the robot's process(es): executor, rclpy, interpreter, DDS (process − stages) | %s | %s |"
              % (" | ".join("%.3f" % rest_split(r)[0] for r in runs), _nano(rest_split(free)[0])))
    md.append("| … of which DDS/rmw threads (/proc per thread) | %s | - |"
              % " | ".join("%.3f" % rest_split(r)[1] for r in runs))
    md.append("| all of the process(es) by thread (/proc): main (executor + callbacks) / other Python threads "
              "(workers, bus reader) / DDS/rmw | %s | - |" % " | ".join("%.3f / %.3f / %.3f" % tuple(
                  robot_total(r, "threads", k) for k in THREAD_KINDS) for r in runs))
    md.append("| **robot, all its processes (/proc)** | %s | %s |" % (
        " | ".join("**%.3f**" % robot_cpu(r) for r in runs), _nano(robot_cpu(free))))
    md.append("| robot_emulator (emulated world + servo bus; outside the quota, not counted) | %s | - |"
              % " | ".join("%.3f" % r["cpu"]["robot_emulator"] for r in runs))
    md += ["", "## Emulated hardware: what runs where, and its cost", "",
           "- Servo bus: the emulated servos (`hardware.emulator.BusEmulator`, its reply thread) run in the "
           "robot_emulator process, outside the robot's group and not counted; servo_driver talks to them over a "
           "pty as it talks to the UART on the robot, so all of servo_driver's CPU counts.",
           "- MPU6050: in the sim graph the imu node (`source: emulator`) runs the register model "
           "(`hardware.mpu6050_emulator`) in the robot's process that hosts it (robot_control, robot or its own), "
           "fed by "
           "`emulator/imu_motion` from robot_emulator at 100 Hz. Measured apart: the register model's CPU (`emulated "
           "MPU6050`, counted inside the node's `sample` tick by `_imu_split.py`, which starts the process that hosts "
           "the imu node -- `robot` or `imu` -- with the same arguments as the launch file), the motion callback "
           "(`emulator/imu_motion`: validation + `set_state`), and the delivery of that topic (DDS threads + rclpy "
           "executor), from an A/B of the imu node alone in its own process: fed by the topic vs its robot code "
           "path (`source: i2c`) on the same register model fed in-process; the same delivery is assumed inside a "
           "process of several nodes. Separating the model into its own process would need it behind a bus of its own (the "
           "node's code unchanged); not done here.", ""]
    if ab:
        t, loc = ab["topic"], ab["local"]
        md += ["Imu node alone, %g s each (CPU-s/s): fed by `emulator/imu_motion`: process %.4f (motion callback "
               "%.4f, register model %.4f, sample tick %.4f), %.1f Hz; robot code path on the local register model: "
               "process %.4f (register model %.4f, sample tick %.4f), %.1f Hz. Delivery of `emulator/imu_motion` = "
               "%.4f CPU-s/s (difference of the two processes outside the emulated stages; noisy, counted as 0 if "
               "negative; in a run, scaled by the motion messages the node handled per second there, %.1f here)."
               % (opts.imu_seconds, t["cpu"], t["stages"].get(MOTION, 0.0), t["stages"].get(REGISTERS, 0.0),
                  t["stages"].get("sample", 0.0), t["rate"], loc["cpu"], loc["stages"].get(REGISTERS, 0.0),
                  loc["stages"].get("sample", 0.0), loc["rate"], ab["delivery"], t["calls"].get(MOTION, float("nan"))),
               ""]
    else:
        md += ["(The A/B of the imu node alone was not run: the delivery of `emulator/imu_motion` is not taken off.)",
               ""]
    md += ["CPU-s/s of the imu in each run (separate: its process; otherwise its stages, the delivery of its topic "
           "being in the process's rest):", "",
           "| run | imu | motion callback | register model | delivery (A/B, scaled) | emulated, total | imu's "
           "robot part | its `sample` tick without the register model | motion messages handled [1/s] |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        total, emu, robot = imu_split(r, ab)
        st = r["stages"].get("imu", {})
        md.append("| %s | %.4f | %.4f | %.4f | %s | %.4f | %.4f | %.4f | %s |" % (
            r["run"], total, st.get(MOTION, float("nan")), st.get(REGISTERS, float("nan")),
            _f(delivery_in(r, ab), "%.4f"), emu, robot, st.get("sample", float("nan")) - st.get(REGISTERS, 0.0),
            _f(r.get("calls", {}).get("imu", {}).get(MOTION), "%.1f")))
    credits = ["%s %.3f" % (lay, next(r["credit"] for r in runs if r["layout"] == lay and r["quota"] is not None))
               for lay in layouts if any(r["layout"] == lay and r["quota"] is not None for r in runs)]
    md += ["", "Quota runs: %s" % (
        "the group's quota is the Nano's share plus the emulated MPU6050's cost measured in the same layout's "
        "unconstrained run of this invocation (%s core; it runs inside the robot's process, so inside the group), "
        "so that the robot's own code gets the Nano's share" % ", ".join(credits)
        if any(r["credit"] for r in runs) else
        "no credit for the emulated MPU6050: it runs inside the robot's process and so spends the group's quota") + "."]
    natives = ["%s: %s" % (r["run"], ", ".join("%s %.3f" % kv for kv in sorted(r["native_credit"].items())))
               for r in runs if r.get("native_credit")]
    if natives:
        md += ["", "Per-process runs: each process's quota also has its native threads' CPU (DDS/rmw) and its "
               "compiled stepping kernel's (numba nogil, `process_kernel_cpu_s`): no interpreter lock, the Nano's "
               "other cores; measured in the layout's unconstrained run (core): %s." % "; ".join(natives)]
    kernels = ["%s: %s" % (r["run"], ", ".join("%s %.3f" % kv for kv in sorted(r["kernel"].items())))
               for r in runs if r.get("kernel") and r["quota"] is None]
    if kernels:
        md += ["", "The engines' compiled steps (numba nogil, `process_kernel_cpu_s`), CPU-s/s of each robot process "
               "in the unconstrained runs: %s." % "; ".join(kernels)]
    md += ["", "## Memory (unconstrained runs: the larger of mid-window and end of the window)", "",
           "| run | process | RSS [MB] | of which file-backed (RssFile) [MB] | PSS [MB] | peak RSS (VmHWM) [MB] |",
           "|---|---|---|---|---|---|"]
    for lay in layouts:
        r = next((x for x in runs if x["layout"] == lay and x["label"] == "unconstrained"), None)
        if r is None:
            continue
        for p in r["robot_procs"] + list(EMULATOR_NODES):
            m = r["mem"][p]
            md.append("| %s | %s%s | %.0f | %.0f | %.0f | %.0f |" % (
                r["run"], p, " (%s)" % ", ".join(r["processes"][p]) if len(r["processes"][p]) > 1 else
                " (not counted)" if p in EMULATOR_NODES else "", m["rss"], m["file"], m["pss"], m["hwm"]))
        md.append("| %s | **robot, %s** | **%.0f** | %.0f | **%.0f** | %.0f |" % (
            r["run"], _robot_text(r), robot_total(r, "mem", "rss"), robot_total(r, "mem", "file"),
            robot_total(r, "mem", "pss"), robot_total(r, "mem", "hwm")))
    md += ["", "RSS sums count the shared libraries (Python, numpy, numba/LLVM, rclpy, DDS) once per process; PSS "
           "shares them out. On the Nano the same processes would map the same libraries (aarch64 builds). "
           "The file-backed part (the libraries' pages a process has mapped) also depends on what the page cache "
           "holds: a fault maps the pages around it that are cached (64 KB, or a whole large folio), so the same "
           "code shows more RSS when its libraries are wholly cached (just installed, or re-read as single pages) "
           "than after a cold start from disk (BENCHMARKS.md, #21); PSS moves with it, the anonymous part does "
           "not.", "",
           "Load: %s" % "; ".join("%s: %s at the start, %s at the end" % (r["run"], r["load_start"], r["load_end"])
                                   for r in runs) + ".",
           "", "Exit status of the processes after SIGINT (the robot's first): " + "; ".join(
               "%s %s (ERROR lines/tracebacks %d)" % (r["run"], r.get("exits", "?"), r.get("error_lines", 0))
               for r in runs) + ".", "",
           "Not covered: the Nano's single-thread speed inside the group quota runs (the group quota caps the "
           "robot's total, but between throttles a thread runs at this machine's speed, so one long computation -- "
           "a predictor cycle, an identifier window -- ends 4-6x sooner than on an A57; the per-process runs cap "
           "each process at one A57 core plus its native threads' and nogil kernel's unconstrained CPU); "
           "per-node CPU in a process of several nodes beyond the nodes' own stages (the executor and DDS work of its "
           "nodes is one shared rest); the Nano's memory bandwidth, caches and thermal throttling (a quota slows "
           "every instruction alike); numba's start-up compile on the Nano (bench_startup); DDS between 4 real "
           "cores vs 2 shared ones; the GPU. The machine is shared: figures move between runs (see the load).", ""]
    return "\n".join(md)


# ---------------------------------------------------------------------------------------------- main
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


def native_credit(res):
    """{robot process: CPU-s/s of its native threads and of its compiled stepping kernel} in an unconstrained run:
    DDS/rmw threads and numba's ``nogil`` kernel hold no interpreter lock, so on the Nano they run on other cores
    than the process's Python (the per-process runs add it)."""
    return {n: res["threads"][n]["native"] + res.get("kernel", {}).get(n, 0.0) for n in res["robot_procs"]}


def per_process_label(factor):
    return "one A57 core per process %gx" % factor


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
