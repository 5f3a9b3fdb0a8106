"""First start on a fresh robot (issue 14): the numba cache keyed on the installed sources, jethexa-warmup,
nodes that say whether they compile, and nodes that stop cleanly on SIGINT/SIGTERM at any moment."""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from jethexa_dynamics import kernel_cache, warmup

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "jethexa_dynamics")
HANG_GUARD = 60.0  # s: only a guard against a hang, not a speed requirement


def _env(**extra):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def _py(code, env, timeout=HANG_GUARD):
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


# ------------------------------------------------------------------ cache directory
def test_a_changed_source_gives_a_different_cache_directory(tmp_path):
    copy = tmp_path / "jethexa_dynamics"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    before = kernel_cache.default_cache_dir(str(copy), env)
    assert before == kernel_cache.default_cache_dir(PKG, env)  # same sources, same key
    assert os.path.dirname(before) == os.path.join(str(tmp_path / "xdg"), "jethexa_dynamics", "numba")
    kernels = copy / "model" / "kernels.py"
    kernels.write_text(kernels.read_text().replace("return", "return  ", 1))  # one changed kernel line
    after = kernel_cache.default_cache_dir(str(copy), env)
    assert after != before
    (copy / "model" / "kernels.py").rename(copy / "model" / "kernels2.py")  # a move changes it too
    assert kernel_cache.default_cache_dir(str(copy), env) not in (before, after)


@pytest.mark.parametrize("numba_first", [False, True])
def test_every_installation_gets_the_keyed_cache_when_numba_cache_dir_is_unset(tmp_path, numba_first):
    code = ("import sys\n" + ("import numba\n" if numba_first else "") +
            "import jethexa_dynamics, numba.core.config as c, os\n"
            "print(os.environ['NUMBA_CACHE_DIR']); print(c.CACHE_DIR)")
    r = _py(code, _env(NUMBA_CACHE_DIR=None, XDG_CACHE_HOME=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    want = kernel_cache.default_cache_dir(PKG, {"XDG_CACHE_HOME": str(tmp_path)})
    assert r.stdout.split() == [want, want]


def test_a_cache_directory_set_by_the_user_is_kept(tmp_path):
    r = _py("import jethexa_dynamics, numba.core.config as c; print(c.CACHE_DIR)",
            _env(NUMBA_CACHE_DIR=str(tmp_path / "mine")))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "mine")


TINY = '''
from numba import njit

@njit(cache=True)
def twice(x):
    return 2.0 * x

def run():
    assert twice(1.5) == 3.0
'''


def test_warmup_says_compiling_only_when_it_compiles(tmp_path):
    """numba's own compile events are the oracle: cold cache -> compiled; the next process -> loaded."""
    (tmp_path / "tiny_kernels.py").write_text(TINY)
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "from jethexa_dynamics import warmup; import tiny_kernels\n"
            "warmup.GROUPS['tiny'] = tiny_kernels.run\n"
            "print(warmup.ensure_kernels(['tiny']))")
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=env, capture_output=True, text=True,
                           timeout=HANG_GUARD, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        runs.append(r.stdout)
    assert "compiling the numba kernels (tiny)" in runs[0] and "compiled and cached (1 functions)" in runs[0]
    assert runs[0].strip().endswith(")") and "(True," in runs[0]
    assert "compiling the numba" not in runs[1] and "loading the compiled numba kernels (tiny)" in runs[1]
    assert "loaded from the cache" in runs[1] and "(False," in runs[1]


def test_processes_starting_together_compile_once(tmp_path):
    """Two processes on one cold cache: the second waits for the first's lock, then loads what it compiled
    (numba's compile events of the second: none)."""
    (tmp_path / "tiny_kernels.py").write_text(TINY + "    import time; time.sleep(2.0)  # hold the lock\n")
    code = ("import sys; sys.path.insert(0, sys.argv[1])\n"
            "from jethexa_dynamics import warmup; import tiny_kernels\n"
            "warmup.GROUPS['tiny'] = tiny_kernels.run\n"
            "print(warmup.ensure_kernels(['tiny']), flush=True)")
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    cmd = [sys.executable, "-c", code, str(tmp_path)]
    first = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert "compiling the numba kernels (tiny)" in first.stdout.readline()
        second = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD)
        rest = first.communicate(timeout=HANG_GUARD)[0]
    finally:
        first.kill()
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert "compiled and cached (1 functions)" in rest
    assert "waiting for another process" in second.stdout
    assert "loaded from the cache" in second.stdout and "(False," in second.stdout, second.stdout


def test_unknown_kernel_group_is_one_clear_error():
    with pytest.raises(ValueError,
                       match="unknown kernel group.*allowed: dynamics, engine, control, replan, predictors"):
        warmup.ensure_kernels(["nope"])


# ------------------------------------------------------------------ the documented robot commands exist
def _console_scripts():
    """console_scripts of setup.py, from running it with ``setuptools.setup`` captured (no install)."""
    import runpy
    import setuptools

    captured = {}
    real = setuptools.setup
    setuptools.setup = lambda **kw: captured.update(kw)
    try:
        runpy.run_path(os.path.join(ROOT, "setup.py"), run_name="__main__")
    finally:
        setuptools.setup = real
    lines = captured["entry_points"]["console_scripts"]
    return dict(line.replace(" ", "").split("=") for line in lines)


def test_readme_robot_steps_name_commands_that_exist():
    readme = open(os.path.join(ROOT, "README.md")).read()
    for cmd in ("colcon build", "ros2 run jethexa_dynamics jethexa-warmup",
                "ros2 launch jethexa_dynamics bringup.launch.py"):
        assert cmd in readme, cmd
    scripts = _console_scripts()
    assert scripts["jethexa-warmup"] == "jethexa_dynamics.warmup:main"
    assert os.path.isfile(os.path.join(ROOT, "launch", "bringup.launch.py"))
    assert os.path.isfile(os.path.join(ROOT, "launch", "sim.launch.py"))


def test_warmup_module_runs():
    """``python -m jethexa_dynamics.warmup`` (what jethexa-warmup runs) ends 0 and reports what it did."""
    r = subprocess.run([sys.executable, "-m", "jethexa_dynamics.warmup"], env=_env(), capture_output=True,
                       text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "jethexa-warmup: numba kernels " in r.stdout
    r = subprocess.run([sys.executable, "-m", "jethexa_dynamics.warmup", "--print-cache-dir"], env=_env(),
                       capture_output=True, text=True, timeout=HANG_GUARD, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == os.environ.get("NUMBA_CACHE_DIR", r.stdout.strip())


def test_the_control_group_compiles_the_active_probes_planner_and_the_replan_group_the_re_planners_kernels():
    """The probe's static-margin plan (``control.support``) is compiled by the warm-up, not at the robot's first
    probe on damage_monitor's worker (measured there: 1.8 s of CPU in the plan, the in-process graph starved and
    the probe's verdict wrong); so is every kernel of the re-planner's cycle (``control.cycle``), not at the first
    lost leg (a demo's crawl then started 6.3 s after the loss): by the ``replan`` group, which the gait
    controller's process does not load at start (without ``recovery`` it never plans; with it, its plan-ahead
    does), nor scipy.optimize with it (~28 MB of that process's RSS). A fresh interpreter: nothing else has called
    them."""
    r = _py("import sys\n"
            "from jethexa_dynamics import warmup\n"
            "from jethexa_dynamics.control import cycle, support\n"
            "kernels = [support._margin] + [getattr(cycle, k) for k in ('_body_shift', '_plan_feet', "
            "'_cycle_margins', '_peak_rate', '_swing_polygons')]\n"
            "print(*[len(k.signatures) for k in kernels])\n"
            "warmup.GROUPS['control']()\n"
            "print(*[len(k.signatures) for k in kernels], 'scipy.optimize' in sys.modules)\n"
            "warmup.GROUPS['replan']()\n"
            "print(*[len(k.signatures) for k in kernels])", _env())
    assert r.returncode == 0, r.stderr[-3000:]
    before, control, replan = r.stdout.strip().splitlines()[-3:]
    assert before.split() == ["0"] * 6, before
    assert int(control.split()[0]) >= 1 and control.split()[1:] == ["0"] * 5 + ["False"], control
    assert all(int(n) >= 1 for n in replan.split()), replan
    assert warmup.NODE_KERNELS["gait_controller"] == ("control",)


ONE_SIGNATURE = """
import re, sys
from numba.core.registry import CPUDispatcher
from jethexa_dynamics import warmup
for g in warmup.GROUPS:
    warmup.GROUPS[g]()
seen = {}
for name, mod in list(sys.modules.items()):
    if name.startswith("jethexa_dynamics"):
        for attr, f in vars(mod).items():
            if isinstance(f, CPUDispatcher) and getattr(f, "__module__", "") == name:
                seen[name + "." + attr] = [str(s) for s in f.signatures]
dup = []
for k, sigs in seen.items():
    # numba's Array(dtype, ndim, layout, readonly, ...): the same kind of argument whatever its layout and flag
    kinds = [re.sub(r"Array\\((\\w+), (\\d+), '[CAF]', (True|False)", r"Array(\\1, \\2", s) for s in sigs]
    if len(set(kinds)) < len(kinds):
        dup.append((k, sigs))
print(len(seen), sum(len(v) for v in seen.values()))
print(dup)
"""


def test_the_warm_up_compiles_each_kernel_once_per_kind_of_argument():
    """The package calls each kernel with C-contiguous, writable arrays: a read-only or strided array of the same
    kind is another numba signature, the kernel compiled again (the API's read-only zero tip forces once cost a
    second ``forward_dynamics`` and ``forward_dynamics_bank``, ~16-20 s of CPU each here; in a node that is a
    pause of minutes on a Nano). Oracle: numba's own list of compiled signatures, after the warm-up's calls."""
    r = _py(ONE_SIGNATURE, _env())
    assert r.returncode == 0, r.stderr[-3000:]
    counts, dup = r.stdout.strip().splitlines()[-2:]
    n_kernels, n_sigs = map(int, counts.split())
    assert n_kernels > 50 and n_sigs > 20      # (a kernel called only by other kernels lists none of its own)
    assert dup == "[]", dup


def test_the_predictors_warm_up_imports_no_scipy_optimize_and_leaves_the_slip_fallback_nothing_to_compile():
    """The model's process (predictor, damage_monitor) loads the ``predictors`` group at start. It compiles the
    slipping model's rare energy-minimisation fallback (its compiled end, ``settle_frame``) without running scipy's
    minimiser: importing ``scipy.optimize`` there cost that process ~20 MB of RSS (BENCHMARKS.md, #21 memory) for a
    path the default configuration never takes. Oracles: ``sys.modules``; numba's compile events when the real
    fallback (``max_iter=0``: every frame falls back) then runs."""
    r = _py("import sys\n"
            "import numpy as np\n"
            "from numba.core import event\n"
            "from jethexa_dynamics import warmup\n"
            "warmup.GROUPS['predictors']()\n"
            "print('optimize', 'scipy.optimize' in sys.modules)\n"
            "from jethexa_dynamics.second_opinions.spring_support import SupportStatus, solve_support\n"
            "feet = np.array([[0.1, 0.1, -0.1], [-0.1, 0.1, -0.1], [0.0, -0.1, -0.1]])\n"
            "with event.install_recorder('numba:compile') as rec:\n"
            "    out = solve_support(feet, 1000.0, 10.0, max_iter=0)\n"
            "print('fallback', int(out.status) == int(SupportStatus.FALLBACK))\n"
            "print('compiled', sum(1 for _, e in rec.buffer if e.is_start))\n", _env())
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert "optimize False" in lines and "fallback True" in lines, r.stdout
    assert lines[-1] == "compiled 0", r.stdout


@pytest.mark.slow
def test_the_warm_up_compiles_its_lanes_in_parallel_processes_into_one_cache_every_kernel_then_loads(tmp_path):
    """``jethexa-warmup --jobs 2`` on a cold cache: one lane here, the other in a second process, both into the
    same directory (the index saves under a lock); the markers written; a second warm-up loads; a fresh process
    then compiles nothing. Two lanes of the same group: both processes save the same functions at once, the
    case the lock is there for. (The real lanes: 84 s instead of 130-146 s here, 221 functions compiled.)"""
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "cold"))
    r = _py("from jethexa_dynamics import warmup\n"
            "warmup.GROUPS = {'control': warmup.GROUPS['control']}\n"
            "warmup.LANES = (('control',), ('control',))\n"
            "print('n', warmup.compile_in_lanes(2))\n"
            "print('n', warmup.compile_in_lanes(2))\n", env)
    assert r.returncode == 0, r.stderr[-3000:]
    counts = [int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("n ")]
    assert counts[0] > 5 and counts[1] == 0, r.stdout
    assert "into %s in 2 processes" % (tmp_path / "cold") in r.stdout and "loaded from the cache" in r.stdout
    assert (tmp_path / "cold" / ".warm-control").exists()
    r = _py("from numba.core import event\n"
            "from jethexa_dynamics import warmup\n"
            "with event.install_recorder('numba:compile') as rec:\n"
            "    warmup.GROUPS['control']()\n"
            "print('compiled', sum(1 for _, e in rec.buffer if e.is_start))\n", env)
    assert r.returncode == 0 and r.stdout.split()[-1] == "0", r.stdout + r.stderr[-3000:]


def test_node_entry_points_resolve_to_each_nodes_main():
    from jethexa_dynamics.nodes import entry

    scripts = _console_scripts()
    for name in ("servo_driver", "imu", "gait_controller", "predictor", "damage_monitor", "robot_emulator"):
        assert scripts[name] == "jethexa_dynamics.nodes.entry:" + name
        assert callable(getattr(entry, name))
    with pytest.raises(AttributeError):
        entry.not_a_node


# ------------------------------------------------------------------ signals (real node processes)
def _start_node(node, *ros_args, env=None):
    """A node process whose SIGINT is ignored at start, as in a background job of a shell."""
    return subprocess.Popen([sys.executable, "-m", "jethexa_dynamics.nodes.entry", node, "--ros-args", *ros_args],
                            env=env or _env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))


def _wait_for_line(proc, text, timeout=HANG_GUARD):
    """Read stderr until a line containing ``text`` (returns the lines read)."""
    lines, t_end = [], time.monotonic() + timeout
    while time.monotonic() < t_end:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return lines
    proc.kill()
    raise AssertionError("no %r from the node; stderr so far:\n%s" % (text, "".join(lines)))


def _wait_for_handler(proc, sig=signal.SIGINT, timeout=HANG_GUARD):
    """Until the process catches ``sig`` (Linux /proc SigCgt): before that, a SIGINT inherited as ignored
    is discarded by the kernel, which no program can change."""
    bit = 1 << (sig - 1)
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end and proc.poll() is None:
        with open("/proc/%d/status" % proc.pid) as f:
            caught = next(int(ln.split()[1], 16) for ln in f if ln.startswith("SigCgt:"))
        if caught & bit:
            return
        time.sleep(0.005)
    raise AssertionError("the node never installed a handler for signal %d" % sig)


def _stop(proc, sig):
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=HANG_GUARD)  # TimeoutExpired = the node ignored the signal
    except subprocess.TimeoutExpired:
        proc.kill()  # leave nothing running on the test's DDS domain
        proc.communicate()
        raise
    return proc.returncode, err


@pytest.mark.ros
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_node_stops_on_signal_even_when_started_with_sigint_ignored(sig):
    pytest.importorskip("rclpy")
    p = _start_node("damage_monitor")
    _wait_for_line(p, "morphology healthy")  # spinning
    code, err = _stop(p, sig)
    assert code == 0, err
    assert "Traceback" not in err


@pytest.mark.ros
@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads SigCgt from /proc")
def test_predictor_start_and_sigint_cycles_all_exit_cleanly_under_traffic():
    """Ten start/SIGINT cycles at different moments (importing, loading kernels, spinning) while joint_states
    arrive at ~200 Hz: every exit is 0 with no traceback (the take_message race exited 1)."""
    pytest.importorskip("rclpy")
    from sensor_msgs.msg import JointState

    from jethexa_dynamics.nodes._common import SENSOR_QOS
    from jethexa_dynamics.nodes._robot import robot_names
    from jethexa_dynamics.nodes.graph import Graph, Watcher

    joints = robot_names()[1]
    g = Graph()
    try:
        w = g.add(Watcher, name="flood")
        pub = w.create_publisher(JointState, "joint_states", SENSOR_QOS)

        def flood():
            msg = JointState(name=joints, position=[0.0] * len(joints))
            msg.header.stamp = w.get_clock().now().to_msg()
            pub.publish(msg)

        w.create_timer(0.005, flood)
        g.start()
        delays = [0.0, 0.05, 0.3, 0.8, 1.5]  # after the first handler: importing, loading, building
        for i in range(10):
            p = _start_node("predictor")
            _wait_for_handler(p)
            if i % 2:
                _wait_for_line(p, "numba kernels loaded from the cache")  # then let it spin a little
                time.sleep(0.2 * i)
            else:
                time.sleep(delays[i // 2])
            code, err = _stop(p, signal.SIGINT)
            assert code == 0 and "Traceback" not in err, (i, code, err[-3000:])
    finally:
        g.close()


@pytest.mark.ros
def test_sigint_while_compiling_exits_at_once(tmp_path):
    """A cold cache (an empty directory): SIGINT during the compile ends the node with status 0."""
    pytest.importorskip("rclpy")
    p = _start_node("robot_emulator", env=_env(NUMBA_CACHE_DIR=str(tmp_path / "cold")))
    _wait_for_line(p, "compiling the numba kernels (dynamics, engine)")
    time.sleep(1.0)  # inside the compiler
    code, err = _stop(p, signal.SIGINT)
    assert code == 0, err
    assert "stopped by signal 2 while preparing the numba kernels" in err
    assert "Traceback" not in err


@pytest.mark.ros
def test_servo_driver_waiting_for_the_bus_is_a_warning_with_a_count():
    pytest.importorskip("rclpy")
    p = _start_node("servo_driver", "-p", "port:=/nonexistent/ttyJETHEXA", "-p", "open_timeout:=0.0")
    lines = _wait_for_line(p, "waiting for the servo bus")
    code, err = _stop(p, signal.SIGINT)
    text = "".join(lines) + err
    assert code == 0, text
    assert "[ERROR]" not in text
    line = next(ln for ln in lines if "waiting for the servo bus" in ln)
    assert "[WARN]" in line and "attempts" in line and "/nonexistent/ttyJETHEXA" in line
