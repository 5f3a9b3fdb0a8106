"""The sim.launch.py graph as the processes ``ros2 launch`` starts (``graph_spec.processes``): the console
scripts with the parameter file the launch file writes from the graph spec (``--ros-args --params-file``, so
rcl itself parses it), the robot's five nodes in each layout of ``graph_spec.LAYOUTS``: two processes (the
default), one, or a process each. Walks, then Ctrl-C: every process exits 0 and the servo driver unloads the servos."""
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


def command_line(process, directory):
    """What launch_ros runs for one process of graph_spec.processes."""
    exe = shutil.which(process.executable, path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("console script %s not installed (pip install -e .)" % process.executable)
    nice = ["nice", "-n", str(process.nice)] if process.nice else []      # launch's prefix
    return nice + [exe, *process.arguments, "--ros-args"] + (["-r", "__node:=" + process.name] if process.name else
                                                             []) \
        + ["--params-file", graph_spec.write_parameters(process, str(directory))]


@pytest.mark.parametrize("composed", ["split", "true", "false"])
def test_sim_graph_as_processes_walks_and_shuts_down_cleanly(tmp_path, composed):
    args = {"port_link": "/tmp/jethexa_proc_bus_%d" % os.getpid(), "composed": composed}
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("NUMBA_CACHE_DIR", os.path.join(ROOT, ".venv", "numba-cache"))
    procs = {}
    logs = {}
    g = Graph()
    try:
        launched = graph_spec.processes("sim", args)
        assert len(launched) == {"true": 2, "split": 3, "false": 6}[composed]
        for process in launched:
            name = process.label
            logs[name] = open(tmp_path / (name + ".log"), "w+")
            procs[name] = subprocess.Popen(command_line(process, tmp_path), env=env, cwd=ROOT,
                                           stdout=logs[name], stderr=subprocess.STDOUT)
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
        # the model's nodes run below the control path's priority, as the launch file's ``nice -n`` prefix sets it
        assert {n: os.getpriority(os.PRIO_PROCESS, procs[n].pid) - os.getpriority(os.PRIO_PROCESS, 0)
                for n in procs} == {p.label: p.nice for p in launched}
    finally:
        g.close()
        codes, text = stop_processes(procs, logs)
    assert codes == {n: 0 for n in procs}, (codes, {n: t[-1500:] for n, t in text.items()})
    assert "servos unloaded (torque off)" in text[{"true": "robot", "split": "robot_control",
                                                   "false": "servo_driver"}[composed]]
    assert "Traceback" not in "".join(text.values()), {n: t[-2000:] for n, t in text.items() if "Traceback" in t}
