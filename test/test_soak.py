"""The long soak (``benchmarks/bench_soak.py``) in CI: a short version of the 30-minute, three-seed soak of the
README -- healthy walking with turning, stop-and-go, standing, gait changes, gyro bias, +-10 % body mass,
Coulomb friction patches 0.4-1.0, level ground, a 5 deg slope and a 5 deg side slope -- with the identifier and
the seizure tracker in the loop: no morphology change, no seized joint, "unexplained" at most 1 % of the time."""
import os
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks")


@pytest.mark.slow
def test_a_short_soak_on_three_grounds_raises_no_false_alarm(tmp_path):
    out = tmp_path / "soak.md"
    r = subprocess.run([sys.executable, "bench_soak.py", "--minutes", "2", "--seeds", "3", "--out", str(out)],
                       cwd=BENCH, capture_output=True, text=True, timeout=1200)     # guard against a hang only
    assert r.returncode == 0, r.stderr[-2000:]
    summary = [line for line in out.read_text().splitlines() if "simulated minutes in all" in line]
    assert len(summary) == 1 and summary[0].endswith(": met"), out.read_text()
    assert "0 morphology changes" in summary[0] and "0 seized joints" in summary[0]


@pytest.mark.parametrize("argv, option", [(["--minutes", "0"], "--minutes"), (["--seeds", "21"], "--seeds")])
def test_bench_soak_refuses_bad_counts_before_any_work(argv, option):
    r = subprocess.run([sys.executable, "bench_soak.py"] + argv, cwd=BENCH, capture_output=True, text=True,
                       timeout=300)      # guard against a hang only
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines()[-1].startswith("bench_soak.py: error: %s must be in" % option), r.stderr
