"""The benchmark scripts run end to end in their smoke mode (short runs, nothing written). Timings are not
checked here (benchmarks are not timed tests); bench_model still compares every row against Pinocchio."""
import os
import re
import subprocess
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks")


def _refusal(script, argv):
    """``script argv`` exits 2 with nothing on stdout (refused before any work): its stderr's lines."""
    r = subprocess.run([sys.executable, script] + argv, cwd=BENCH, capture_output=True, text=True,
                       timeout=300)      # guard against a hang only
    assert r.returncode == 2 and r.stdout == "", r.stdout[-2000:] + r.stderr[-2000:]
    return r.stderr.strip().splitlines()


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
    lines = _refusal("bench_slip.py", ["--smoke", "--reference", "0123456789abcdef"])
    assert lines[-1] == ("bench_slip.py: error: --reference: '0123456789abcdef' is not a "
                         "commit of this checkout ('' = no reference)")


@pytest.mark.parametrize("argv, option", [(["--repeats", "0"], "--repeats"), (["--seconds", "0"], "--seconds")])
def test_bench_predictor_node_refuses_bad_counts_before_any_work(argv, option):
    lines = _refusal("bench_predictor_node.py", argv)
    assert lines[-1].startswith("bench_predictor_node.py: error: %s must be" % option), lines


def _table(text, heading):
    """Rows (lists of cells) of the first markdown table under ``heading``, header row first."""
    lines = text.split(heading, 1)[1].splitlines()
    rows = [ln for ln in lines[lines.index(next(ln for ln in lines if ln.startswith("|"))):]]
    rows = rows[:next((i for i, ln in enumerate(rows) if not ln.startswith("|")), len(rows))]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in rows if not ln.startswith("|---")]


def _smoke_results(script, tmp_path):
    """The results file ``script --smoke --out ...`` wrote (it must exit 0), with its machine and load lines."""
    pytest.importorskip("rclpy")
    out = tmp_path / "results.md"
    r = subprocess.run([sys.executable, script, "--smoke", "--out", str(out)], cwd=BENCH,
                       capture_output=True, text=True, timeout=540)  # a hang guard, inside pytest's 600 s
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "smoke run" in r.stdout
    text = out.read_text()
    assert "- CPU quota: " in text and "- date: " in text and "load average" in text
    return text


def _refuses(script, argv, option):
    """``script argv`` exits 2 before any work, with one line naming ``option``."""
    lines = _refusal(script, argv)
    assert len(lines) == 1 and lines[0].startswith("%s: error: argument %s: " % (script, option)), lines


@pytest.mark.slow
@pytest.mark.ros
def test_bench_nano_budget_smoke_writes_every_table(tmp_path):
    text = _smoke_results("bench_nano_budget.py", tmp_path)
    # one table of targets per layout, the launched layout's (two processes) first
    headings = ["## Targets (issue 21; split runs, as launched)", "## Targets (issue 21; composed runs)",
                "## Targets (issue 21; separate runs)"]
    assert [text.index(h) for h in headings] == sorted(text.index(h) for h in headings)
    for heading in headings:
        targets = _table(text, heading)
        assert targets[0] == ["target", "measured", "status"]
        assert any(row[0].startswith("robot's nodes together <= 0.4 CPU-s/s") for row in targets[1:])
        assert any(row[0].startswith("memory: the robot's process(es) together <= 500 MB RSS") for row in targets[1:])
        assert all(row[2] in ("met", "**not met**") for row in targets[1:])
    pair = _table(text, "## The layouts side by side (split as launched)")
    assert pair[0][1:] == ["split unconstrained", "composed unconstrained", "separate unconstrained"]
    assert pair[1] == ["robot's processes", "2 (robot_control, robot_model)", "1 (robot)",
                       "5 (servo_driver, imu, gait_controller, predictor, damage_monitor)"]
    runs = _table(text, "## Runs")
    head = runs[0]
    for col in ("run", "robot CPU-s/s (its processes)", "without the emulated MPU6050", "predicted/pose [Hz]",
                "joint_commands [Hz]", "imu/data [Hz]", "joint_states [Hz]", "error roll/pitch [deg]",
                "silent break named after", "false damage", "RSS / PSS [MB]"):
        assert col in head, col
    labels = [row[0] for row in runs[1:]]
    assert all(len(row) == len(head) for row in runs[1:])
    # the wake-ups' floor: scheduled-in per second times the bare wake-up measured at the start (printed in µs)
    col = head.index("robot's threads scheduled in [1/s] / × a bare wake-up [CPU-s/s]")
    wake_us = float(re.search(r"a wake-up's cost on this machine: (\d+) µs", text).group(1))
    for row in runs[1:]:
        n, floor = (float(v) for v in row[col].split(" / "))
        assert n > 0 and abs(floor - n * wake_us * 1e-6) <= 0.001 + n * 0.5e-6, row[col]
    quota = "cgroup v1" in text.split("- CPU quota: ", 1)[1].splitlines()[0] or \
        "cgroup v2" in text.split("- CPU quota: ", 1)[1].splitlines()[0]
    assert labels == (["split unconstrained", "split 5x", "composed unconstrained", "separate unconstrained"] if quota
                      else ["split unconstrained", "composed unconstrained", "separate unconstrained"])
    for row in runs[1:]:
        cpu = float(row[head.index("robot CPU-s/s (its processes)")])
        assert 0.0 < cpu < 2.5                                        # two cores at most
        assert float(row[head.index("predicted/pose [Hz]")]) > 0.0
    by_node = _table(text, "## CPU by node")
    assert [row[0] for row in by_node[1:6]] == ["servo_driver", "imu", "gait_controller", "predictor",
                                                "damage_monitor"]
    for row in by_node[1:6]:      # the node's stages; separate: stages / its process
        assert float(row[1]) > 0.0 and all(float(x) > 0.0 for x in row[len(labels)].split(" / "))
    assert by_node[6][0].startswith("rest of the robot's process(es)")
    split = _table(text, "## Emulated hardware")
    assert split[0][:4] == ["run", "imu", "motion callback", "register model"]
    assert [row[0] for row in split[1:]] == labels
    assert all(float(row[3]) > 0.0 for row in split[1:])   # the register model counted apart in every layout
    memory = _table(text, "## Memory")
    assert memory[0] == ["run", "process", "RSS [MB]", "of which file-backed (RssFile) [MB]", "PSS [MB]",
                         "peak RSS (VmHWM) [MB]"]
    # the file-backed part (RssFile) is a part of each process's RSS, and of the robot's total
    assert all(0.0 < float(row[3]) <= float(row[2].strip("*")) for row in memory[1:]), memory
    totals = [row[1] for row in memory[1:] if row[1].startswith("**robot")]
    assert totals == ["**robot, 2 processes**", "**robot, 1 process**", "**robot, 5 processes**"]


@pytest.mark.parametrize("argv, option", [(["--seconds", "0"], "--seconds"), (["--factors", "4,x"], "--factors"),
                                          (["--break-at", "40"], "--break-at"), (["--cgroup", "v3"], "--cgroup"),
                                          (["--break-spec", "XX:1"], "--break-spec"),
                                          (["--composed", "maybe"], "--composed"),
                                          (["--separate", "--composed", "true"], "--separate"),
                                          (["--other-factors", "0"], "--other-factors"),
                                          (["--composed", "false", "--separate", "--composed", "split"],
                                           "--separate"),
                                          (["--core-factor", "-1"], "--core-factor"),
                                          (["--slice-us", "-1"], "--slice-us"),
                                          (["--repeat", "0"], "--repeat")])
def test_bench_nano_budget_refuses_bad_arguments_before_any_work(argv, option):
    _refuses("bench_nano_budget.py", argv, option)


@pytest.mark.slow
@pytest.mark.ros
@pytest.mark.serial          # its demo runs beside busy loops, which would starve the other workers' tests
def test_bench_false_damage_smoke_writes_both_parts(tmp_path):
    text = _smoke_results("bench_false_damage.py", tmp_path)
    checks = _table(text, "## Acceptance")
    assert checks[0] == ["check", "measured", "status"] and len(checks) == 4
    assert all(row[2] in ("met", "**not met**") for row in checks[1:])
    demos = _table(text, "## (a) jethexa-demo --no-damage")
    assert demos[0][:5] == ["run", "exit", "morphology changes", "named", "predictor poses/s (configured)"]
    assert [row[0] for row in demos[1:]] == ["1"]
    assert demos[1][4].endswith("(50 Hz)") and int(demos[1][4].split()[0]) > 0    # the summary line was read
    walk = _table(text, "## (b) the launch graph")
    assert walk[0][:3] == ["quota", "minutes", "morphology changes"] and len(walk) == 2
    assert int(walk[1][2]) >= 0 and float(walk[1][walk[0].index("predicted/pose [Hz]")]) > 0.0


def test_bench_false_damage_parses_the_demo_output():
    sys.path.insert(0, BENCH)
    try:
        from bench_false_damage import parse_demo
    finally:
        sys.path.remove(BENCH)
    text = ("[WARN] [1.5] [damage_monitor]: morphology healthy -> RR:1 (femur_joint_RR: no reply for 0.93 s)\n"
            "  >> 5.2 s: damage_monitor publishes morphology RR:1 (1.0 s after the damage)\n"
            "  predictor boltzmann_hamel: 48 poses/s (configured 50 Hz), cycle p50 1.00 ms\n"
            "  NOT CLEAN: unexpected morphology sequence ['healthy', 'RR:1']\n")
    got = parse_demo(text)
    assert got["changes"] == 1 and got["named"] == ["RR:1"] and got["rate"] == 48 and got["configured"] == 50
    assert got["verdict"] == "unexpected morphology sequence"
    assert got["reasons"] == ["morphology healthy -> RR:1 (femur_joint_RR: no reply for 0.93 s)"]
    assert parse_demo("  predictor slip: 50 poses/s (configured 50 Hz)\n  clean run\n")["changes"] == 0


def test_bench_nano_budget_per_process_quota_adds_the_native_threads_and_kernel_measured_unconstrained(monkeypatch):
    """A per-process run caps each robot process at one A57 core for its GIL-bound Python; its native (DDS/rmw)
    threads' and its nogil kernel's CPU from the unconstrained run are added (the Nano runs them on its other
    cores), the emulated MPU6050's credit only to the process that hosts it."""
    pytest.importorskip("rclpy")
    sys.path.insert(0, BENCH)
    try:
        import bench_nano_budget  # noqa: F401  (puts the checkout on sys.path for the modules it is split into)
        import _nano_cgroup
        import _nano_measure
    finally:
        sys.path.remove(BENCH)
    made = {}

    class Group:                       # stands for a cgroup: records the quota it was made with
        def __init__(self, kind, mount, name, cores=None, shares=None):
            made[name], self.cores = cores, cores

        def add(self, pid):
            pass

    monkeypatch.setattr(_nano_cgroup, "CpuGroup", Group)
    unconstrained = {"robot_procs": ["robot_control", "robot_model"], "threads": {
        "robot_control": {"main": 0.09, "python": 0.01, "native": 0.011},
        "robot_model": {"main": 0.15, "python": 0.02, "native": 0.016},
        "robot_emulator": {"main": 0.08, "python": 0.0, "native": 0.005}},
        "kernel": {"robot_control": 0.0, "robot_model": 0.025}}   # numba nogil steps (process_kernel_cpu_s)
    native = _nano_measure.native_credit(unconstrained)
    assert native == pytest.approx({"robot_control": 0.011, "robot_model": 0.041})   # the robot's processes only
    groups = _nano_cgroup.Groups(("v1", "/nowhere"), 0.2, None, per_process=True, credit=0.03, native=native)
    groups.add(True, 11, imu=True, name="robot_control")
    groups.add(True, 12, imu=False, name="robot_model")
    assert made["robot_11"] == pytest.approx(0.2 + 0.03 + 0.011) and made["robot_12"] == pytest.approx(0.241)
    whole = _nano_cgroup.Groups(("v1", "/nowhere"), 0.8, None, credit=0.03, native=native)   # a group quota: no native
    assert made["robot"] == pytest.approx(0.83) and whole.quota_us == 8300


@pytest.mark.parametrize("argv, option", [(["--runs", "0"], "--runs"), (["--minutes", "0"], "--minutes"),
                                          (["--hogs", "x"], "--hogs"), (["--factor", "0.5"], "--factor"),
                                          (["--cgroup", "v3"], "--cgroup"), (["--slice-us", "x"], "--slice-us")])
def test_bench_false_damage_refuses_bad_arguments_before_any_work(argv, option):
    _refuses("bench_false_damage.py", argv, option)


@pytest.mark.parametrize("argv, option", [(["--max-lag", "0.5"], "--max-lag must be within"),
                                          (["--contact-dt", "0"], "--contact-dt must be within"),
                                          (["--calibrate", "--contact-dt", "50"], "--calibrate and --contact-dt")])
def test_bench_identify_probe_refuses_bad_arguments_before_any_work(argv, option):
    lines = _refusal("bench_identify.py", ["--probe"] + argv)
    assert lines[-1].startswith("bench_identify.py: error: %s" % option), lines


@pytest.mark.parametrize("argv, message", [
    (["--control-rate", "500"], "--control-rate 500 outside [1, 200] Hz"),
    (["--reads-per-cycle", "40"], "--reads-per-cycle 40 outside [1, 18]"),
    (["--reads-per-cycle", "-1"], "--reads-per-cycle -1 outside [1, 18]"),
    (["--record", "."], "--record . exists")])
def test_bench_body_graph_refuses_bad_arguments_before_any_work(argv, message):
    """One line naming the option and its range, exit 2, before the graph starts (nothing printed on stdout)."""
    lines = _refusal("bench_body_graph.py", argv)
    assert lines[-1].startswith("bench_body_graph.py: error: %s" % message), lines


@pytest.mark.parametrize("argv, message", [
    (["--cases", "XX:1"], "--cases: 'XX:1' is not a single-leg case"),
    (["--cases", "LM:3"], "--cases: 'LM:3' is not a single-leg case"),
    (["--after", "2"], "--after 2 outside [5, 120]"),
    (["--window", "30"], "--window 30 outside [1, 17]"),
    (["--mass-scale", "nan"], "--mass-scale nan outside [0.5, 2]"),
    (["--speed", "0.5"], "--speed 0.5 outside [0.001, 0.1]"),
    (["--set", "damage_monitor.probe_max_lag=0.5"], "--set damage_monitor.probe_max_lag=0.5: parameter"),
    (["--set", "nosuch.x=1"], "--set nosuch.x=1: not NODE.PARAM=VALUE")])
def test_bench_graph_damage_refuses_bad_arguments_before_any_work(argv, message):
    """One line naming the option and its range, exit 2, before any graph starts (nothing printed on stdout)."""
    lines = _refusal("bench_graph_damage.py", argv)
    assert lines[-1].startswith("bench_graph_damage.py: error: %s" % message), lines
