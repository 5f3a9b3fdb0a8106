"""Starvation is not damage (issue 21): a paused node, a burst of CPU hogs, late replies -- none of them may
change the morphology. The sim graph runs as the processes the launch file starts; the emulated robot walks;
each of the robot's nodes is paused in turn for 1 s (SIGSTOP, then SIGCONT), then four busy loops take the
machine for 3 s. The oracle is the emulated world itself: it is healthy, so every morphology published must be
the healthy one, and the robot must still walk afterwards."""
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402

from jethexa_dynamics.nodes import graph_spec  # noqa: E402
from jethexa_dynamics.nodes._common import LATCHED_QOS, SENSOR_QOS  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, wait_for  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(400),
              pytest.mark.serial]      # its CPU hogs would starve the other workers' graphs too

HOG = "import time\nend = time.monotonic() + float(__import__('sys').argv[1])\nwhile time.monotonic() < end: pass\n"


def _x(w):
    return w.last("mocap/pose").pose.position.x


@pytest.mark.parametrize("composed", ["false", "split", "true"])
def test_paused_nodes_and_cpu_hogs_change_no_morphology(tmp_path, composed):
    args = {"port_link": "/tmp/jethexa_starve_%d_%s" % (os.getpid(), composed), "composed": composed}
    g = Graph()
    try:
        procs = {p.label: g.start_process(p, str(tmp_path))
                 for p in graph_spec.processes("sim", args)}
        w = g.add(Watcher)
        w.watch(UInt8MultiArray, "morphology", LATCHED_QOS)
        w.watch(PoseStamped, "predicted/pose")
        w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
        w.watch(DiagnosticArray, "/diagnostics")
        w.drive(0.05)
        g.start()

        def logs():
            return {n: open(tmp_path / (n + ".log")).read()[-1500:] for n in procs}
        assert wait_for(lambda: w.count("predicted/pose") > 20 and w.count("mocap/pose") > 20, 180.0), logs()
        x0 = _x(w)
        assert wait_for(lambda: _x(w) - x0 > 0.02, 30.0), logs()            # walking
        if os.geteuid() == 0:     # the hardware's stand-in runs at a higher priority where that is allowed
            assert os.getpriority(os.PRIO_PROCESS, procs["robot_emulator"].pid) == os.getpriority(
                os.PRIO_PROCESS, 0) - 10
        base = os.getpriority(os.PRIO_PROCESS, 0)
        for p in graph_spec.processes("sim", args):     # the model's nodes below the control path (NICE)
            if p.label != "robot_emulator":
                assert os.getpriority(os.PRIO_PROCESS, procs[p.label].pid) == base + p.nice, p.label
        paused = [n for n in procs if n != "robot_emulator"]
        assert len(paused) == len(graph_spec.LAYOUTS[composed])
        for name in paused:
            print("%.3f pause %s" % (time.time(), name))
            os.kill(procs[name].pid, signal.SIGSTOP)
            time.sleep(1.0)
            os.kill(procs[name].pid, signal.SIGCONT)
            time.sleep(2.5)                     # what a late reader now sees: a backlog, stale stamps, gaps
        print("%.3f hogs" % time.time())
        hogs = [subprocess.Popen([sys.executable, "-c", HOG, "3.0"]) for _ in range(4)]
        for h in hogs:
            h.wait(timeout=60)
        time.sleep(2.0)
        x1 = _x(w)
        assert wait_for(lambda: _x(w) - x1 > 0.02, 30.0), logs()            # still walking
        assert all(p.poll() is None for p in procs.values()), {n: p.returncode for n, p in procs.items()}
        published = [list(m.data) for _, m in w.since("morphology", 0.0)]
        if not all(m == [3] * 6 for m in published):     # the story of the false damage, for the reader
            for n in procs:
                print("==== %s\n%s" % (n, open(tmp_path / (n + ".log")).read()[-8000:]))
        assert published and all(m == [3] * 6 for m in published), published
        faults = {kv.key for _, arr in w.since("/diagnostics", 0.0) for st in arr.status
                  if st.name == "damage_monitor: node" for kv in st.values if kv.key.startswith("fault ")}
        assert not faults, faults
    finally:
        g.close()
    assert all(code == 0 for code in g.exit_codes.values()), (g.exit_codes, {n: t[-1500:] for n, t in g.logs.items()})
