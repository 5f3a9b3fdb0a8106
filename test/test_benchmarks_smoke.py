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


def _table(text, heading):
    """Rows (lists of cells) of the first markdown table under ``heading``, header row first."""
    lines = text.split(heading, 1)[1].splitlines()
    rows = [ln for ln in lines[lines.index(next(ln for ln in lines if ln.startswith("|"))):]]
    rows = rows[:next((i for i, ln in enumerate(rows) if not ln.startswith("|")), len(rows))]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in rows if not ln.startswith("|---")]


@pytest.mark.slow
@pytest.mark.ros
def test_bench_nano_budget_smoke_writes_every_table(tmp_path):
    pytest.importorskip("rclpy")
    out = tmp_path / "nano_budget.md"
    r = subprocess.run([sys.executable, "bench_nano_budget.py", "--smoke", "--out", str(out)], cwd=BENCH,
                       capture_output=True, text=True, timeout=900)      # guard against a hang only
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "smoke run" in r.stdout
    text = out.read_text()
    assert "- CPU quota: " in text and "- date: " in text and "load average" in text
    targets = _table(text, "## Targets (issue 21)")
    assert targets[0] == ["target", "measured", "status"]
    assert any(row[0].startswith("robot's nodes together <= 0.4 CPU-s/s") for row in targets[1:])
    assert any(row[0].startswith("memory: the robot's processes together <= 500 MB RSS") for row in targets[1:])
    assert all(row[2] in ("met", "**not met**") for row in targets[1:])
    runs = _table(text, "## Runs")
    head = runs[0]
    for col in ("run", "robot CPU-s/s (5 processes)", "without the emulated MPU6050", "predicted/pose [Hz]",
                "joint_commands [Hz]", "imu/data [Hz]", "joint_states [Hz]", "error roll/pitch [deg]",
                "silent break named after", "false damage", "RSS / PSS [MB]"):
        assert col in head, col
    labels = [row[0] for row in runs[1:]]
    assert labels[0] == "unconstrained" and all(len(row) == len(head) for row in runs[1:])
    quota = "cgroup v1" in text.split("- CPU quota: ", 1)[1].splitlines()[0] or \
        "cgroup v2" in text.split("- CPU quota: ", 1)[1].splitlines()[0]
    assert labels == (["unconstrained", "5x"] if quota else ["unconstrained"])
    for row in runs[1:]:
        cpu = float(row[head.index("robot CPU-s/s (5 processes)")])
        assert 0.0 < cpu < 2.5                                        # two cores at most
        assert float(row[head.index("predicted/pose [Hz]")]) > 0.0
    by_node = _table(text, "## CPU by node")
    assert [row[0] for row in by_node[1:6]] == ["servo_driver", "imu", "gait_controller", "predictor",
                                                "damage_monitor"]
    split = _table(text, "## Emulated hardware")
    assert split[0][:4] == ["run", "imu process", "motion callback", "register model"]
    assert float(split[1][3]) > 0.0           # the register model's CPU was counted apart
    memory = _table(text, "## Memory")
    assert memory[0] == ["process", "RSS [MB]", "PSS [MB]", "peak RSS (VmHWM) [MB]"]
    assert [row[0] for row in memory[1:]][-1] == "**robot, 5 processes**"


@pytest.mark.parametrize("argv, option", [(["--seconds", "0"], "--seconds"), (["--factors", "4,x"], "--factors"),
                                          (["--break-at", "40"], "--break-at"), (["--cgroup", "v3"], "--cgroup"),
                                          (["--break-spec", "XX:1"], "--break-spec")])
def test_bench_nano_budget_refuses_bad_arguments_before_any_work(argv, option):
    r = subprocess.run([sys.executable, "bench_nano_budget.py"] + argv, cwd=BENCH, capture_output=True, text=True,
                       timeout=300)      # guard against a hang only
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench_nano_budget.py: error: argument %s: " % option), r.stderr
