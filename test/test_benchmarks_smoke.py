"""The benchmark scripts run end to end in their smoke mode (short runs, nothing written). Timings are not
checked here (benchmarks are not timed tests); bench_model still compares every row against Pinocchio."""
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks")


@pytest.mark.slow
@pytest.mark.parametrize("script", ["bench_sim.py", "bench_model.py", "bench_predictor_node.py", "bench_slip.py"])
def test_benchmark_smoke(script):
    pytest.importorskip({"bench_sim.py": "mujoco", "bench_model.py": "pinocchio", "bench_slip.py": "mujoco"}
                        .get(script, "rclpy"))
    extra = ["--seconds", "2"] if script == "bench_predictor_node.py" else []   # own processes over DDS
    r = subprocess.run([sys.executable, script, "--smoke"] + extra, cwd=BENCH, capture_output=True, text=True,
                       timeout=900)      # guard against a hang only
    assert r.returncode == 0, r.stderr[-2000:]
    assert "smoke" in r.stdout


def test_bench_slip_refuses_an_unknown_reference_commit_before_any_work():
    pytest.importorskip("mujoco")       # the script imports it first
    r = subprocess.run([sys.executable, "bench_slip.py", "--smoke", "--reference", "0123456789abcdef"], cwd=BENCH,
                       capture_output=True, text=True, timeout=300)      # guard against a hang only
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines()[-1] == ("bench_slip.py: error: --reference: '0123456789abcdef' is not a "
                                                 "commit of this checkout ('' = no reference)")


@pytest.mark.parametrize("argv, option", [(["--repeats", "0"], "--repeats"), (["--seconds", "0"], "--seconds")])
def test_bench_predictor_node_refuses_bad_counts_before_any_work(argv, option):
    r = subprocess.run([sys.executable, "bench_predictor_node.py"] + argv, cwd=BENCH, capture_output=True, text=True,
                       timeout=300)      # guard against a hang only
    assert r.returncode == 2 and r.stdout == ""
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("bench_predictor_node.py: error: %s must be" % option), r.stderr
