"""The sim.launch.py graph as separate processes of the console scripts, with the YAML parameter files
passed the way ``ros2 launch`` passes them (``--ros-args --params-file ... -p ...``), so rcl itself parses
config/*.yaml. Walks, then Ctrl-C: every node exits 0 and the servo driver unloads the servos."""
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("rclpy")

from geometry_msgs.msg import PoseStamped  # noqa: E402

from jethexa_dynamics.nodes import graph_spec  # noqa: E402
from jethexa_dynamics.nodes._common import SENSOR_QOS  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, stop_processes, wait_for  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(300)]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _ros_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v if v else "''"
    return repr(v)


def command_line(entry, arguments):
    """What launch_ros runs for one node of graph_spec."""
    exe = shutil.which(entry.executable, path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("console script %s not installed (pip install -e .)" % entry.executable)
    cmd = [exe, "--ros-args", "-r", "__node:=" + entry.name,
           "--params-file", os.path.join(ROOT, "config", entry.executable + ".yaml")]
    overrides = dict(entry.fixed)
    for a in graph_spec.GRAPHS["sim"]["arguments"]:
        for node, param in a.targets:
            if node == entry.name and a.name in arguments:
                overrides[param] = graph_spec._convert(node, param, arguments[a.name])
    for k, v in overrides.items():
        cmd += ["-p", "%s:=%s" % (k, _ros_value(v))]
    return cmd


def test_sim_graph_as_processes_walks_and_shuts_down_cleanly(tmp_path):
    args = {"port_link": "/tmp/jethexa_proc_bus_%d" % os.getpid()}
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("NUMBA_CACHE_DIR", os.path.join(ROOT, ".venv", "numba-cache"))
    procs = {}
    logs = {}
    g = Graph()
    try:
        for entry in graph_spec.GRAPHS["sim"]["nodes"]:
            logs[entry.name] = open(tmp_path / (entry.name + ".log"), "w+")
            procs[entry.name] = subprocess.Popen(command_line(entry, args), env=env, cwd=ROOT,
                                                 stdout=logs[entry.name], stderr=subprocess.STDOUT)
        w = g.add(Watcher)
        w.watch(PoseStamped, "predicted/pose")
        w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
        w.drive(0.05)
        g.start()
        assert wait_for(lambda: w.count("predicted/pose") > 10 and w.count("mocap/pose") > 10, 120.0), {
            n: open(tmp_path / (n + ".log")).read()[-1500:] for n in procs}
        x0 = w.last("mocap/pose").pose.position.x
        assert wait_for(lambda: w.last("mocap/pose").pose.position.x - x0 > 0.04, 20.0)
        assert all(p.poll() is None for p in procs.values()), {n: p.returncode for n, p in procs.items()}
    finally:
        g.close()
        codes, text = stop_processes(procs, logs)
    assert codes == {n: 0 for n in procs}, (codes, {n: t[-1500:] for n, t in text.items()})
    assert "servos unloaded (torque off)" in text["servo_driver"]
    assert "Traceback" not in "".join(text.values()), {n: t[-2000:] for n, t in text.items() if "Traceback" in t}
