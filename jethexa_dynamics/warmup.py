"""Compile (and cache) the numba kernels once, so the nodes, the demo and the tests start quickly.

``jethexa-warmup`` (``ros2 run jethexa_dynamics jethexa-warmup``, ``python -m jethexa_dynamics.warmup``):
run it once after installing or building; safe to run any time (it only calls the kernels on small inputs).
The cache directory is keyed on the installed sources (:mod:`jethexa_dynamics.kernel_cache`), so after an
update the first start compiles again instead of running stale machine code.

The nodes that use kernels (``predictor``, ``robot_emulator``, ``gait_controller``) call
:func:`ensure_kernels` before ``rclpy.init``: they log whether they compile or load from the cache and how
long it took. Processes starting together on a cold cache take turns through a lock file in the cache
directory: the first compiles, the others then load what it cached instead of compiling the same code at
the same time.

The last line names what the kernels run with and where the cache is, e.g. ``numba kernels loaded from the
cache in 4.6 s (Python 3.10.12, numpy 1.26.4, numba 0.60.0; cache /root/.cache/jethexa_dynamics/numba/<hash>)``.
A warm-up records that Python/numpy/numba in its marker files; a later process that runs another one says
so first (two installations on the paths: see README, "On the robot").
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from jethexa_dynamics import kernel_cache, stack

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no lock, each process compiles for itself
    fcntl = None


def _dynamics() -> None:
    import numpy as np

    from jethexa_dynamics.model import LeggedRobot, Morphology
    from jethexa_dynamics.model.integrators import rkmk4_step

    robot = LeggedRobot.jethexa()
    q, v, g = np.zeros(18), np.zeros(24), np.eye(4)
    robot.mass_matrix(q)
    robot.bias_forces(g, q, v)
    robot.gravity_forces(g, q)
    robot.forward_dynamics(g, q, v, v, tip_forces=np.zeros((6, 3)))
    robot.coriolis_matrix(q, v)
    robot.tip_jacobian(q)
    robot.tip_poses(q)
    robot.forward_dynamics_bank(g, q, v, v, [Morphology.healthy(robot)])
    rkmk4_step(robot, g, q, v, 1e-3)


def _engine() -> None:
    from jethexa_dynamics.model import LeggedRobot
    from jethexa_dynamics.sim.engine import Engine

    Engine().run(0.002).csv_rows()                                     # jethexa-sim: steps + CSV text
    Engine(LeggedRobot.jethexa(), gait=None, record_every=0).step(1)  # robot_emulator's engine


def _control() -> None:
    import numpy as np

    from jethexa_dynamics.control.gait import Gait
    from jethexa_dynamics.control.ik import LegGeometry
    from jethexa_dynamics.control.support import support_margin
    from jethexa_dynamics.model import LeggedRobot

    gait = Gait(LegGeometry.from_robot(LeggedRobot.jethexa()))
    gait.set_command((0.02, 0.0, 0.0))
    gait.joint_targets(0.1)
    gait.foot_targets(0.1)
    gait.swing_mask(0.1)
    gait.geometry.fk(gait.geometry.names[0], gait.joint_targets(0.2)[:3])
    # the active probe's planner (damage.active_probe.probe_margin): compiled here, not on damage_monitor's worker
    # at the robot's first probe (~2 s of CPU here, holding the interpreter while the probe runs)
    support_margin(np.array([[0.1, 0.1], [-0.1, 0.1], [0.0, -0.1]]), (0.0, 0.0))


def _replan() -> None:
    """The re-planner's kernels (control.cycle), used first when a leg is lost: compiled there they cost seconds
    of CPU while the robot stands on its interim stance (a demo's crawl started 6.3 s after the loss). A group of
    its own: the gait controller with ``recovery`` plans the likely morphologies ahead at start (in its worker),
    which loads them there; without it the controller never plans, and loading them at start (scipy.optimize's
    LP with them) cost its process ~28 MB of RSS (BENCHMARKS.md, #21 memory)."""
    from jethexa_dynamics.control.ik import LegGeometry
    from jethexa_dynamics.control.replan import GaitPlanner
    from jethexa_dynamics.model import LeggedRobot

    robot = LeggedRobot.jethexa()
    planner = GaitPlanner(robot, LegGeometry.from_robot(robot))
    planner.interim_stance([3, 0, 3, 3, 3, 3])
    plan = planner.plan([3, 0, 3, 3, 3, 3], (0.02, 0.0, 0.0))
    plan.foot_targets(0.1)        # what the gait then calls at every tick of the re-planned crawl
    plan.body_shift(0.1)


def _predictors() -> None:
    """The first calls the predictor node makes on each registered model (as in its ``_build_models``)."""
    import numpy as np

    from jethexa_dynamics.model import LeggedRobot
    from jethexa_dynamics.predictors.registry import make_predictor, predictor_names

    robot = LeggedRobot.jethexa()
    joints = list(robot.joint_names)
    for name in predictor_names():
        m = make_predictor(name)
        m.reset(0.0, joints)
        m.on_morphology(0.0, np.full(len(robot.leg_names), 3))
        m.on_command(0.0, np.zeros(len(joints)), 0.0)
        m.pose(0.05)
    # the compiled end of the slipping model's energy-minimisation fallback for a frame its path search gives up
    # on (rare, called from Python: it would otherwise compile in the middle of a run); the minimisation itself is
    # scipy's (not compiled): importing scipy.optimize here would cost the predictor's process ~20 MB for a path
    # that the default configuration (publish_slip false) never takes
    from jethexa_dynamics.second_opinions.spring_support import settle_frame, solve_support

    feet = np.array([[0.1, 0.1, -0.1], [-0.1, 0.1, -0.1], [0.0, -0.1, -0.1]])
    r = solve_support(feet[None], 1000.0, 10.0)         # (T, ...) arrays: the fallback writes rows of them
    settle_frame(feet, np.full(3, 1000.0), 10.0, r.state[0], r.contact[0], r.heights[0], r.loads[0], r.residual[0])


#: name -> what it compiles; the nodes name the groups they need
GROUPS: Dict[str, Callable[[], None]] = {
    "dynamics": _dynamics, "engine": _engine, "control": _control, "replan": _replan, "predictors": _predictors,
}
#: the kernels each node uses (the others use none)
NODE_KERNELS: Dict[str, Tuple[str, ...]] = {
    "predictor": ("dynamics", "predictors"),
    "robot_emulator": ("dynamics", "engine"),
    "gait_controller": ("control",),
}


def _marker(directory: str, group: str) -> str:
    return os.path.join(directory, ".warm-" + group)


def _read_marker(directory: str, group: str) -> Tuple[str, str]:
    """(source hash, Python/numpy/numba description) a warm-up of ``group`` wrote; the second is empty in a
    marker written before it was recorded."""
    with open(_marker(directory, group)) as f:
        lines = f.read().splitlines()
    return (lines[0].strip() if lines else ""), (lines[1].strip() if len(lines) > 1 else "")


def cache_state(groups: Iterable[str], directory: Optional[str] = None) -> str:
    """``warm``: a warm-up of these groups finished into the cache directory for the current sources;
    ``stale``: it finished for other sources (a directory not keyed on them, e.g. a development cache);
    ``cold``: never."""
    directory = directory or kernel_cache.cache_dir()
    want, state = kernel_cache.source_hash(), "warm"
    for g in groups:
        try:
            if _read_marker(directory, g)[0] != want:
                state = "stale"
        except (OSError, TypeError):
            return "cold"
    return state


def cached_with(groups: Iterable[str], directory: Optional[str] = None) -> List[str]:
    """The Python/numpy/numba descriptions (:func:`stack.describe`) the cached kernels of ``groups`` were
    compiled with, as their warm-ups recorded them (distinct, sorted; empty when none is recorded)."""
    directory = directory or kernel_cache.cache_dir()
    found = set()
    for g in groups:
        try:
            found.add(_read_marker(directory, g)[1])
        except (OSError, TypeError):
            continue
    return sorted(found - {""})


@contextlib.contextmanager
def _compile_lock(directory: Optional[str], on_wait: Callable[[], None]):
    """Exclusive lock on ``<cache dir>/.compile.lock`` (released by the OS if the process dies)."""
    if fcntl is None or directory is None:
        yield
        return
    try:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(os.path.join(directory, ".compile.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:  # read-only cache location: numba falls back to its own; compile without the lock
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def _count_compiles():
    """A list that fills with one entry per function numba compiles (not loads from the cache)."""
    try:
        from numba.core import event
    except ImportError:  # pragma: no cover - numba missing: plain Python, nothing compiles
        yield []
        return
    with event.install_recorder("numba:compile") as rec:
        yield rec.buffer


def _compile(groups: Sequence[str]) -> int:
    """Run the warm-up calls of ``groups`` here; returns the number of functions numba compiled."""
    with _count_compiles() as compiles:
        for g in groups:
            GROUPS[g]()
    return sum(1 for _, e in compiles if e.is_start)


def _write_markers(directory: Optional[str], groups: Sequence[str], running: str) -> None:
    """Record that ``groups`` are warm in ``directory`` for these sources and this Python/numpy/numba."""
    if directory is None:
        return
    for g in groups:
        try:
            with open(_marker(directory, g), "w") as f:
                f.write(kernel_cache.source_hash() + "\n" + running + "\n")
        except OSError:       # a read-only cache: the marker only saves the next warm-up's check
            pass


def _say_other_stack(groups: Sequence[str], directory: Optional[str], where: str, running: str,
                     log: Callable[[str], None]) -> str:
    """The cache's state for ``groups``; says so if its kernels were compiled by another Python/numpy/numba."""
    state = cache_state(groups, directory)
    other = [w for w in cached_with(groups, directory) if w != running]
    if state != "cold" and other:
        log("the numba kernels (%s) in %s were compiled with %s; this process runs %s: two installations "
            "on the paths? (README, On the robot)" % (", ".join(groups), where, " / ".join(other), running))
    return state


def ensure_kernels(groups: Sequence[str], log: Callable[[str], None] = print) -> Tuple[bool, float]:
    """Compile (cold cache) or load (warm cache) the kernels of ``groups``; log what happens and how long
    it took. Returns (compiled, seconds): ``compiled`` is True if numba compiled anything (cold or stale
    cache), False when everything came from the cache."""
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ValueError("unknown kernel group(s) %s; allowed: %s" % (", ".join(unknown), ", ".join(GROUPS)))
    directory = kernel_cache.cache_dir()
    where = directory or "numba's default cache"
    running = stack.describe()
    t0 = time.monotonic()
    waited = []

    def on_wait():
        waited.append(True)
        log("waiting for another process that is compiling the numba kernels into %s ..." % where)

    with _compile_lock(directory, on_wait):
        state = _say_other_stack(groups, directory, where, running, log)
        if state == "warm":
            log("loading the compiled numba kernels (%s) from %s ..." % (", ".join(groups), where))
        elif waited:
            log("loading the numba kernels (%s) the other process cached, compiling what is still missing ..."
                % ", ".join(groups))
        elif state == "stale":
            log("the sources changed since the numba kernels (%s) were cached in %s: compiling what changed, "
                "loading the rest ..." % (", ".join(groups), where))
        else:
            log("compiling the numba kernels (%s) into %s: the first start after installing takes a few "
                "minutes (1-2 on a desktop, several on a Jetson Nano); later starts load them from there"
                % (", ".join(groups), where))
        t1 = time.monotonic()
        n = _compile(groups)
        _write_markers(directory, groups, running)
    dt = time.monotonic() - t1
    log("numba kernels %s in %.1f s%s (%s; cache %s)" % (
        "compiled and cached (%d functions)" % n if n else "loaded from the cache", dt,
        " (after waiting %.1f s for another process)" % (t1 - t0) if waited else "", running, where))
    return n > 0, dt


#: the warm-up's lanes on a cold cache: groups compiled in parallel processes (``--jobs``), the model's kernels
#: alone in one (they take about as long as all the others together)
LANES: Tuple[Tuple[str, ...], ...] = (("dynamics",), ("predictors", "engine", "control", "replan"))


def _guard_index_saves(directory: Optional[str]) -> bool:
    """Serialise numba's cache-index updates across processes: its save is load index, pick a free data file,
    write both -- two processes saving overloads of one function at the same moment could pick the same file
    (one signature's index entry then names another's code). An exclusive lock on ``<cache dir>/.index.lock``
    around each save. False (nothing changed) where that cannot be done: the caller then compiles in one process."""
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover - numba missing: nothing compiles
        return False
    cls = getattr(caching, "IndexDataCacheFile", None)
    save = getattr(cls, "save", None)
    if fcntl is None or directory is None or save is None:
        return False
    if getattr(save, "jethexa_locked", False):
        return True
    path = os.path.join(directory, ".index.lock")

    def save_locked(self, key, data):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return save(self, key, data)
        finally:
            os.close(fd)

    save_locked.jethexa_locked = True
    cls.save = save_locked
    return True


def _lane(groups: Sequence[str]) -> int:
    """Compile ``groups`` in this process with the index saves locked; returns the number of functions compiled."""
    if not _guard_index_saves(kernel_cache.cache_dir()):
        raise RuntimeError("a warm-up lane needs the index lock (fcntl, a cache directory, numba's index class)")
    return _compile(groups)


def compile_in_lanes(jobs: int, log: Callable[[str], None] = print) -> int:
    """Compile every group: each of :data:`LANES` in a process of its own, at once, when ``jobs`` >= 2, the
    cache is cold or stale and the index saves can be locked (:func:`_guard_index_saves`); else all here
    (:func:`ensure_kernels`). The markers are written as :func:`ensure_kernels` writes them, under the same
    compile lock (nodes starting meanwhile wait). Returns the number of functions compiled. A lane that fails
    shows its traceback and raises here; an interrupted warm-up stops its other lanes."""
    import subprocess

    directory = kernel_cache.cache_dir()
    lanes = [[g for g in lane if g in GROUPS] for lane in LANES]
    lanes[0] += [g for g in GROUPS if not any(g in lane for lane in LANES)]
    lanes = [lane for lane in lanes if lane]
    if (jobs < 2 or len(lanes) < 2 or cache_state(GROUPS, directory) == "warm" or directory is None
            or not _guard_index_saves(directory)):
        return int(ensure_kernels(tuple(GROUPS), log=log)[0])
    t0, running = time.monotonic(), stack.describe()
    with _compile_lock(directory, lambda: log("waiting for another process that is compiling into %s ..." % directory)):
        _say_other_stack(tuple(GROUPS), directory, directory, running, log)
        log("compiling the numba kernels (%s) into %s in %d processes: the first start after installing takes a few "
            "minutes (1-2 on a desktop, several on a Jetson Nano); later starts load them from there"
            % (", ".join(GROUPS), directory, len(lanes)))
        others = [subprocess.Popen([sys.executable, "-c", "import sys; from jethexa_dynamics import warmup; "
                                    "print(warmup._lane(sys.argv[1].split(',')))", ",".join(lane)],
                                   stdout=subprocess.PIPE, text=True) for lane in lanes[1:]]
        try:
            n = _lane(lanes[0])
            for p in others:
                out, _ = p.communicate()
                if p.returncode != 0:
                    raise RuntimeError("a warm-up lane (%s) ended with status %d (its traceback above)"
                                       % (" ".join(p.args[-1:]), p.returncode))
                n += int(out.split()[-1])
        finally:
            for p in others:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        _write_markers(directory, tuple(GROUPS), running)
    log("numba kernels compiled and cached (%d functions) in %.1f s (%s; cache %s)"
        % (n, time.monotonic() - t0, running, directory))
    return n


def build_parser() -> argparse.ArgumentParser:
    from jethexa_dynamics.cli_args import ArgumentParser, number

    ap = ArgumentParser(prog="jethexa-warmup", description=(
        "Compile the numba kernels into the cache once (after installing or colcon build), so the nodes "
        "start in seconds. Cache directory: NUMBA_CACHE_DIR, or $XDG_CACHE_HOME/jethexa_dynamics/numba/"
        "<hash of the installed sources>."))
    ap.add_argument("--print-cache-dir", action="store_true", help="print the cache directory and exit")
    ap.add_argument("--jobs", type=number(1, 8, integer=True), metavar="N", default=min(2, os.cpu_count() or 1),
                    help="processes compiling at once on a cold cache, 1-8 (default: 2, or 1 on one core; each "
                    "needs ~0.5 GB; more than %d changes nothing)" % len(LANES))
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # a bad option (one line already printed) or --help
        return exc.code
    if args.print_cache_dir:
        print(kernel_cache.cache_dir() or "")
        return 0
    compile_in_lanes(args.jobs, log=lambda s: print("jethexa-warmup: " + s, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
