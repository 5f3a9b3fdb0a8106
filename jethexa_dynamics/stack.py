"""What this installation runs: the Python, numpy and numba versions the numba kernels are compiled with, and
whether the numpy that imports fits the ROS 2 packages that would be imported beside it.

On the robot two copies of a package can sit on the paths (Humble's numpy 1.21 from apt, the pip step's 1.26
in /usr/local; a ``pip install --user`` in ``~/.local``), and which one imports depends on the user and the
environment. ``jethexa-warmup`` and the nodes name the versions in their kernel lines (:func:`describe`), so
a mixed installation shows at once; :func:`check_ros_numpy` stops a node before it imports rclpy when numpy 2
would run beside a ROS build made for numpy 1 (README, "On the robot").

Only the standard library is imported at module level: numpy and numba are imported by the functions that
report them, and rclpy and the message packages are only located (``importlib.util.find_spec``), never
imported, so the check runs before the import that would fail.
"""
from __future__ import annotations

import importlib.util
import os
import platform
import re
from typing import Dict, Mapping, Optional

#: ROS 2 distributions whose /opt/ros binaries are built against numpy 1 (Ubuntu 20.04-24.04's numpy, per
#: REP 2000: Humble's is 1.21); rolling is left out (it moves to newer Ubuntu releases)
NUMPY1_DISTROS = ("foxy", "galactic", "humble", "iron", "jazzy", "kilted")
#: the ROS packages the nodes import (rclpy, then the message packages of nodes/_common.py and the nodes)
ROS_PACKAGES = ("rclpy", "std_msgs", "sensor_msgs", "geometry_msgs", "nav_msgs", "diagnostic_msgs",
                "trajectory_msgs")
_OPT_ROS = re.compile(r"/opt/ros/([^/]+)/")


def versions() -> Dict[str, str]:
    """{'python': '3.10.12', 'numpy': '1.26.4', 'numba': '0.60.0'} of this process ('missing' for a package
    that does not import)."""
    out = {"python": platform.python_version()}
    for name in ("numpy", "numba"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = "missing"
    return out


def describe(vers: Optional[Mapping[str, str]] = None) -> str:
    """``Python 3.10.12, numpy 1.26.4, numba 0.60.0``: what the kernel lines name (``vers``: this
    process's :func:`versions` when None)."""
    v = versions() if vers is None else vers
    return "Python %s, numpy %s, numba %s" % (v["python"], v["numpy"], v["numba"])


def _major(version: str) -> int:
    m = re.match(r"\s*(\d+)", version)
    if m is None:
        raise ValueError("numpy version %r does not start with a number" % (version,))
    return int(m.group(1))


def ros_numpy_problem(numpy_version: str, origins: Mapping[str, Optional[str]],
                      numpy_path: str = "") -> Optional[str]:
    """One line saying why the nodes cannot run, or None if they can.

    ``numpy_version``: the numpy that imports (e.g. ``'2.1.3'``); ``origins``: {ROS package: the path it
    would be imported from, None if not found}; ``numpy_path``: where that numpy lives (named in the line).
    A package under ``/opt/ros/<distro>/`` with ``<distro>`` in :data:`NUMPY1_DISTROS` was built against
    numpy 1 (the apt binaries, and the source builds installed there); with numpy >= 2 that is the problem.
    Packages elsewhere (the PyPI builds of rclpy and the messages in a venv, a workspace's own) were built for
    the numpy their build named, and pass."""
    if _major(numpy_version) < 2:
        return None
    for package, path in origins.items():
        m = _OPT_ROS.search(path or "")
        if m is not None and m.group(1) in NUMPY1_DISTROS:
            return ("numpy %s imports%s, but %s comes from ROS 2 %s (%s), whose packages are built against "
                    "numpy 1; install numpy 1.x for this Python (README, On the robot: \"numpy==1.26.4\") "
                    "or remove numpy %s" % (numpy_version, " from " + numpy_path if numpy_path else "", package,
                                            m.group(1), m.group(0).rstrip("/"), numpy_version))
    return None


def check_ros_numpy() -> Optional[str]:
    """:func:`ros_numpy_problem` for this process: the numpy that imports, and where rclpy and the message
    packages the nodes use would be imported from (located, not imported). None also when numpy does not
    import at all (the node's own import then says so)."""
    try:
        import numpy
    except ImportError:
        return None
    origins = {}
    for name in ROS_PACKAGES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):  # a broken or half-installed package: not this check's business
            spec = None
        origins[name] = spec.origin if spec is not None else None
    return ros_numpy_problem(numpy.__version__, origins, os.path.dirname(os.path.dirname(numpy.__file__)))
