"""Console-script entry points of the nodes (setup.py: ``predictor = jethexa_dynamics.nodes.entry:predictor``).

Before the node's module (rclpy, messages, numpy: about a second) is imported, SIGINT and SIGTERM are set
to end the process at once with status 0: nothing has started yet, so there is nothing to shut down, and a
Ctrl-C in that second gives neither a traceback nor a process left behind (a shell that ignores SIGINT,
a background job, would otherwise pass SIG_IGN on). ``_common.run`` then installs the handlers that stop
the spin loop in order. ``python -m jethexa_dynamics.nodes.entry <node> [--ros-args ...]`` does the same.

Before that import, :func:`jethexa_dynamics.stack.check_ros_numpy`: when numpy 2 would be imported beside a
ROS 2 build made for numpy 1 (Humble's, from /opt/ros/humble), the node prints one line naming both and
ends with status 1 instead of failing somewhere inside that import.
"""
import importlib
import os
import signal
import sys
import threading

from jethexa_dynamics import stack


def _exit_now(signum, frame):
    os._exit(0)


def start(node: str, args=None) -> int:
    """Run ``jethexa_dynamics.nodes.<node>.main(args)`` with exit-at-once signal handlers during its import;
    1 without importing it if this numpy cannot run beside the ROS packages found (one line on stderr)."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _exit_now)
    problem = stack.check_ros_numpy()
    if problem:
        print("%s: cannot start: %s" % (node, problem), file=sys.stderr, flush=True)
        return 1
    return importlib.import_module("jethexa_dynamics.nodes." + node).main(args)


def __getattr__(name: str):
    """``entry.<node>`` is that node's console-script ``main`` (PEP 562), for every module in nodes/."""
    if name.startswith("_") or not os.path.isfile(os.path.join(os.path.dirname(__file__), name + ".py")):
        raise AttributeError(name)

    def main(args=None):
        return start(name, args)

    main.__name__ = name
    return main


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: python -m jethexa_dynamics.nodes.entry NODE [--ros-args ...]", file=sys.stderr)
        sys.exit(2)
    sys.exit(start(sys.argv[1], [sys.argv[0]] + sys.argv[2:]))
