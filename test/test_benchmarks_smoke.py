"""The benchmark scripts run end to end in their smoke mode (short runs, nothing written). Timings are not
checked here (benchmarks are not timed tests); bench_model still compares every row against Pinocchio."""
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks")


@pytest.mark.slow
@pytest.mark.parametrize("script", ["bench_sim.py", "bench_model.py"])
def test_benchmark_smoke(script):
    pytest.importorskip("mujoco" if script == "bench_sim.py" else "pinocchio")
    r = subprocess.run([sys.executable, script, "--smoke"], cwd=BENCH, capture_output=True, text=True,
                       timeout=900)      # guard against a hang only
    assert r.returncode == 0, r.stderr[-2000:]
    assert "smoke" in r.stdout
