"""Run several nodes in one process on one rclpy executor (the demo and the node tests use it).

Every message still goes through DDS (loopback), exactly as between the processes that
``sim.launch.py`` starts. ``Graph`` owns its own rclpy context, so several graphs (or tests) never share
global state; ``Watcher`` is a node that records what arrives on chosen topics.
"""
from __future__ import annotations

import functools
import threading
import time
from collections import defaultdict, deque
from typing import Any, Callable, Dict, List, Optional, Tuple

import rclpy
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from jethexa_dynamics.nodes.executor import LeanExecutor


def overrides(params: Optional[Dict[str, Any]]) -> List[Parameter]:
    return [Parameter(k, value=v) for k, v in (params or {}).items()]


class Graph:
    """Nodes on one executor spinning in a background thread, with an explicit ``close()``."""

    def __init__(self, threads: int = 1, domain_id: Optional[int] = None):
        self.context = Context()
        kw = {} if domain_id is None else {"domain_id": domain_id}
        rclpy.init(context=self.context, **kw)
        self.executor = (MultiThreadedExecutor(num_threads=threads, context=self.context) if threads > 1
                         else LeanExecutor(context=self.context))
        self.nodes: List[Node] = []
        self._thread: Optional[threading.Thread] = None
        self.spin_error: Optional[BaseException] = None
        self.processes: Dict[str, Any] = {}   # name -> (Popen, log file): stopped by close() after the nodes
        self.exit_codes: Dict[str, Any] = {}
        self.logs: Dict[str, str] = {}

    def start_process(self, process, workdir: str):
        """Start a process of ``graph_spec.processes`` beside this graph (:func:`start_process`); ``close()``
        stops it (SIGINT) after closing the graph's own nodes, its exit code and log then in ``exit_codes`` and
        ``logs``. Returns its Popen."""
        name = process.label
        self.processes[name] = start_process(process, workdir)
        return self.processes[name][0]

    def add(self, node_cls: Callable[..., Node], params: Optional[Dict[str, Any]] = None, **kwargs) -> Node:
        node = node_cls(context=self.context, parameter_overrides=overrides(params), **kwargs)
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def remove(self, node: Node) -> None:
        """Take one node out (close it, as on Ctrl-C) while the rest keep running."""
        self.executor.remove_node(node)
        self.nodes.remove(node)
        _close(node)

    def start(self) -> "Graph":
        self._stop = threading.Event()

        def spin():
            try:
                while not self._stop.is_set() and self.context.ok():
                    self.executor.spin_once(timeout_sec=0.05)
            except BaseException as exc:  # noqa: BLE001 - reported to the caller (tests assert on it)
                if not self._stop.is_set() and self.context.ok():
                    self.spin_error = exc

        self._thread = threading.Thread(target=spin, name="rclpy-graph", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop spinning, then close every node (torque off etc.) and shut the context down."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5.0)
        for node in reversed(self.nodes):
            self.executor.remove_node(node)
            _close(node)
        self.nodes.clear()
        self.executor.shutdown(timeout_sec=1.0)
        self.context.try_shutdown()
        if self.processes:   # after the nodes: the servo driver unloads the servos over an emulated bus
            codes, self.logs = stop_processes({n: p for n, (p, _) in self.processes.items()},
                                              {n: f for n, (_, f) in self.processes.items()})
            self.exit_codes.update(codes)
            self.processes.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _close(node: Node) -> None:
    try:
        close = getattr(node, "close", None)
        if close is not None:
            close()
    finally:
        node.destroy_node()


class Watcher(Node):
    """Records messages (arrival time, message) on the topics given to ``watch``."""

    def __init__(self, name: str = "watcher", **kwargs):
        super().__init__(name, **kwargs)
        self.lock = threading.Lock()
        self.msgs: Dict[str, deque] = defaultdict(lambda: deque(maxlen=5000))
        self.rejected: Dict[str, int] = defaultdict(int)

    def watch(self, msg_type, topic: str, qos=10, accept: Optional[Callable[[Any], None]] = None) -> None:
        """Record ``topic``; with ``accept``, only messages for which ``accept(msg)`` does not raise
        ``ValueError`` (the others are counted in ``rejected[topic]``): anyone may publish on a topic. A message
        larger than the nodes' inputs may be (``_common.max_bytes``) is counted there too, before it is decoded (a
        flood of huge messages must not cost this process their decoding), and so is one that does not decode."""
        from rclpy.serialization import deserialize_message

        from jethexa_dynamics.nodes._common import max_bytes

        limit = max_bytes(msg_type)

        def cb(raw, topic=topic):
            if len(raw) > limit:
                self.rejected[topic] += 1
                return
            try:
                msg = deserialize_message(raw, msg_type)
            except RuntimeError:          # rclpy's RMWError: bytes that are no ``msg_type`` (truncated, ...)
                self.rejected[topic] += 1
                return
            if accept is not None:
                try:
                    accept(msg)
                except ValueError:
                    self.rejected[topic] += 1
                    return
            with self.lock:
                self.msgs[topic].append((time.monotonic(), msg))

        self.create_subscription(msg_type, topic, cb, qos, raw=True)

    def drive(self, vx: float, vy: float = 0.0, wz: float = 0.0, period: float = 0.1) -> None:
        """Publish this velocity command on ``cmd_vel`` every ``period`` seconds (like a teleop node)."""
        from geometry_msgs.msg import Twist

        pub = self.create_publisher(Twist, "cmd_vel", 10)
        twist = Twist()
        twist.linear.x, twist.linear.y, twist.angular.z = float(vx), float(vy), float(wz)
        self.create_timer(period, lambda: pub.publish(twist))

    def count(self, topic: str) -> int:
        with self.lock:
            return len(self.msgs[topic])

    def last(self, topic: str) -> Any:
        with self.lock:
            q = self.msgs[topic]
            return q[-1][1] if q else None

    def since(self, topic: str, t0: float) -> List[Tuple[float, Any]]:
        with self.lock:
            return [(t, m) for t, m in self.msgs[topic] if t >= t0]

    def rate(self, topic: str, window: float) -> float:
        """Messages per second over the last ``window`` seconds."""
        now = time.monotonic()
        return len(self.since(topic, now - window)) / window


def wait_for(cond: Callable[[], Any], timeout: float, poll: float = 0.02) -> Any:
    """Poll ``cond()`` until it returns something truthy (returned) or ``timeout`` s pass (returns it falsy)."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v or time.monotonic() > end:
            return v
        time.sleep(poll)


def node_class(executable: str):
    """The node class behind a console script (``jethexa_dynamics.nodes.<executable>.NODE``)."""
    import importlib

    return importlib.import_module("jethexa_dynamics.nodes." + executable).NODE


def add_launch_graph(graph: Graph, name: str, arguments: Optional[Dict[str, str]] = None,
                     exclude: Tuple[str, ...] = (), params: Optional[Dict[str, Dict[str, Any]]] = None
                     ) -> Dict[str, Node]:
    """Add the nodes of ``<name>.launch.py`` (``graph_spec``, in its namespace if it has one) with their YAML
    parameters and the launch ``arguments``, except those named in ``exclude``; ``params`` {node: {parameter: value}} on top (tests);
    returns {node name: node}."""
    from jethexa_dynamics.nodes.graph_spec import GRAPHS, node_parameters

    ns = {"namespace": GRAPHS[name]["namespace"]} if GRAPHS[name].get("namespace") else {}
    return {entry.name: graph.add(node_class(entry.executable), dict(values, **(params or {}).get(entry.name, {})),
                                  **ns)
            for entry, values in node_parameters(name, arguments) if entry.name not in exclude}


#: executables that stand in for hardware (started at a higher priority where allowed)
HARDWARE = ("robot_emulator",)
#: niceness of an emulated-hardware process where allowed (root): the emulator stands in for servos and an IMU,
#: which the robot's computer never starves; without it a loaded machine made the emulated servos answer late
#: enough to read as silent. Unprivileged: nothing changes
HARDWARE_NICE = -10


def _die_with_parent() -> None:
    """In the child: SIGINT (a clean shutdown, servos unloaded) when the process that started it dies, even by
    SIGKILL (a benchmark or a test killed on its time-out): a node graph never outlives its starter and goes on
    publishing on a domain the next run uses. Linux (prctl PR_SET_PDEATHSIG); elsewhere nothing."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGINT), 0, 0, 0)    # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child_setup(nice: int) -> None:
    """In a started child: it dies with its parent, and its niceness moves by ``nice`` where allowed (a robot
    process's ``graph_spec.NICE``, which ``ros2 launch`` sets with ``nice -n``; ``HARDWARE_NICE``: a higher priority
    needs root, so unprivileged nothing changes)."""
    import os

    _die_with_parent()
    if nice:
        try:
            os.nice(nice)
        except OSError:
            pass


def start_process(process, workdir: str, env: Optional[Dict[str, str]] = None,
                  launcher: Optional[List[str]] = None):
    """Start one process of ``graph_spec.processes`` as ``ros2 launch`` would: ``python -m
    jethexa_dynamics.nodes.entry <executable> [arguments] --ros-args [-r __node:=<name>] --params-file <file>``
    with its parameter file written to ``workdir``; stdout and stderr go to ``workdir/<name>.log``. ``launcher``
    stands in for ``python -m jethexa_dynamics.nodes.entry`` (a measuring wrapper that takes the same arguments,
    e.g. ``benchmarks/_imu_split.py``). Returns (Popen, log file opened ``w+``) for :func:`stop_processes`."""
    import os
    import subprocess
    import sys

    from jethexa_dynamics.nodes.graph_spec import write_parameters

    name = process.label
    log = open(os.path.join(workdir, name + ".log"), "w+")
    cmd = (launcher or [sys.executable, "-m", "jethexa_dynamics.nodes.entry"]) + [
        process.executable, *process.arguments, "--ros-args"] + (
        ["-r", "__node:=" + process.name] if process.name else []) + (
        ["-r", "__ns:=/" + process.namespace.strip("/")] if process.namespace else []) + [
        "--params-file", write_parameters(process, workdir)]
    proc = subprocess.Popen(cmd, env=dict(os.environ if env is None else env, PYTHONUNBUFFERED="1"),
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            preexec_fn=functools.partial(_child_setup, HARDWARE_NICE if process.executable in HARDWARE
                                                         else process.nice))
    return proc, log


def stop_processes(procs: Dict[str, Any], logs: Dict[str, Any],
                   first: Tuple[str, ...] = ("robot", "robot_control", "gait_controller", "servo_driver"),
                   timeout: float = 20.0) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """SIGINT to node processes one by one (``first`` first: the commands stop and the servos are unloaded before
    the emulated bus closes; ``robot`` and ``robot_control`` are processes of several robot nodes,
    ``graph_spec.LAYOUTS``), each
    waited for up to ``timeout`` s (then killed: "killed"); their log files (opened ``w+``) read back.
    Returns (exit code per node, log text per node)."""
    import signal
    import subprocess

    codes: Dict[str, Any] = {}
    for name in [n for n in first if n in procs] + [n for n in procs if n not in first]:
        p = procs[name]
        p.send_signal(signal.SIGINT)
        try:
            codes[name] = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            codes[name] = "killed"
    text = {}
    for name, f in logs.items():
        f.seek(0)
        text[name] = f.read()
        f.close()
    return codes, text
