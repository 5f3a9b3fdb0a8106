"""Issue 24: what the kernels are compiled with is named where they are compiled or loaded (jethexa-warmup and
the nodes), a cache compiled by another Python/numpy/numba says so, and a node stops with one line when numpy 2
would run beside a ROS build made for numpy 1 (Humble's apt packages); PyPI ROS builds keep working."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from jethexa_dynamics import stack
from test_startup import TINY, _start_node, _stop, _wait_for_line

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HANG_GUARD = 120.0  # s: only a guard against a hang
HUMBLE_RCLPY = "/opt/ros/humble/lib/python3.10/site-packages/rclpy/__init__.py"
VENV_RCLPY = "/home/u/.venv/lib/python3.10/site-packages/rclpy/__init__.py"


def _env(**extra):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


# ------------------------------------------------------------------ numpy 2 beside a numpy-1 ROS build
def test_numpy_2_beside_humbles_apt_packages_is_one_line_naming_both():
    line = stack.ros_numpy_problem("2.1.3", {"rclpy": VENV_RCLPY, "sensor_msgs": "/opt/ros/humble/local/lib/"
                                             "python3.10/dist-packages/sensor_msgs/__init__.py"},
                                   "/home/u/.local/lib/python3.10/site-packages")
    assert line is not None and "\n" not in line
    assert "numpy 2.1.3 imports from /home/u/.local/lib/python3.10/site-packages" in line
    assert "sensor_msgs comes from ROS 2 humble (/opt/ros/humble)" in line
    assert "numpy==1.26.4" in line


@pytest.mark.parametrize("numpy_version, origin", [
    ("1.26.4", HUMBLE_RCLPY),      # the README's install: numpy 1 beside Humble
    ("1.21.5", HUMBLE_RCLPY),      # Humble's own numpy
    ("2.1.3", VENV_RCLPY),         # PyPI builds of rclpy and the messages (this repository's .venv)
    ("2.1.3", None),               # no ROS found: the node's own import says so
    ("2.1.3", "/opt/ros/rolling/lib/python3.12/site-packages/rclpy/__init__.py"),  # not known to be numpy 1
])
def test_what_runs_as_built_passes(numpy_version, origin):
    assert stack.ros_numpy_problem(numpy_version, {"rclpy": origin}) is None


def test_a_numpy_version_that_is_no_version_is_an_error_not_a_pass():
    with pytest.raises(ValueError, match="numpy version 'dev' does not start with a number"):
        stack.ros_numpy_problem("dev", {"rclpy": HUMBLE_RCLPY})


def test_this_environment_passes_the_check():
    """The development environment (PyPI ROS packages, whatever numpy they were built for) is not stopped."""
    assert stack.check_ros_numpy() is None


@pytest.mark.skipif(int(np.__version__.split(".")[0]) < 2, reason="needs numpy 2 in this environment")
def test_node_stops_with_one_line_and_status_1_when_rclpy_is_humbles(tmp_path):
    """A stand-in for Humble's rclpy under .../opt/ros/humble/ first on the path, and this environment's numpy 2:
    the node ends before importing rclpy (the stand-in would raise if imported)."""
    site = tmp_path / "opt" / "ros" / "humble" / "lib" / "python3.10" / "site-packages"
    (site / "rclpy").mkdir(parents=True)
    (site / "rclpy" / "__init__.py").write_text("raise RuntimeError('imported the stand-in rclpy')\n")
    env = _env(PYTHONPATH=os.pathsep.join([str(site), ROOT, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "jethexa_dynamics.nodes.entry", "predictor"], env=env, cwd=ROOT,
                       capture_output=True, text=True, timeout=HANG_GUARD)
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("predictor: cannot start: numpy %s imports from " % np.__version__), lines[0]
    assert "rclpy comes from ROS 2 humble" in lines[0]


# ------------------------------------------------------------------ the kernel lines name the stack
WARMUP_TINY = ("import sys; sys.path.insert(0, sys.argv[1])\n"
               "from jethexa_dynamics import warmup; import tiny_kernels\n"
               "warmup.GROUPS.clear(); warmup.GROUPS['tiny'] = tiny_kernels.run\n"
               "sys.exit(warmup.main([]))")


def _warmup_tiny(tmp_path, cache):
    if not (tmp_path / "tiny_kernels.py").exists():  # rewritten, its new stamp would void numba's cache
        (tmp_path / "tiny_kernels.py").write_text(TINY)
    r = subprocess.run([sys.executable, "-c", WARMUP_TINY, str(tmp_path)], env=_env(NUMBA_CACHE_DIR=str(cache)),
                       cwd=ROOT, capture_output=True, text=True, timeout=HANG_GUARD)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_warmup_names_python_numpy_numba_and_the_cache_directory(tmp_path):
    cache = tmp_path / "cache"
    running = stack.describe()
    assert running.startswith("Python %d.%d." % sys.version_info[:2]) and "numpy %s" % np.__version__ in running
    first = _warmup_tiny(tmp_path, cache)
    assert "jethexa-warmup: numba kernels compiled and cached (1 functions) in " in first
    assert first.rstrip().endswith("(%s; cache %s)" % (running, cache)), first
    with open(cache / ".warm-tiny") as f:
        assert f.read().splitlines()[1] == running  # recorded beside the source hash
    second = _warmup_tiny(tmp_path, cache)
    assert "numba kernels loaded from the cache in " in second and "(%s; cache %s)" % (running, cache) in second
    assert "were compiled with" not in second


def test_a_cache_compiled_by_another_stack_says_so(tmp_path):
    cache = tmp_path / "cache"
    _warmup_tiny(tmp_path, cache)
    marker = cache / ".warm-tiny"
    source_hash = marker.read_text().splitlines()[0]
    marker.write_text(source_hash + "\nPython 3.10.12, numpy 1.21.5, numba 0.55.2\n")  # e.g. another user's
    out = _warmup_tiny(tmp_path, cache)
    assert ("the numba kernels (tiny) in %s were compiled with Python 3.10.12, numpy 1.21.5, numba 0.55.2; this "
            "process runs %s: two installations on the paths?" % (cache, stack.describe())) in out, out
    assert marker.read_text().splitlines()[1] == stack.describe()  # rewritten by this warm-up


@pytest.mark.ros
def test_a_node_names_the_stack_in_its_kernel_line():
    pytest.importorskip("rclpy")
    p = _start_node("gait_controller")
    lines = _wait_for_line(p, "; cache ")  # the last kernel line, loaded or compiled
    code, err = _stop(p, signal.SIGINT)
    assert code == 0, err
    assert lines[-1].rstrip().endswith("(%s; cache %s)" % (stack.describe(), os.environ["NUMBA_CACHE_DIR"])), lines
