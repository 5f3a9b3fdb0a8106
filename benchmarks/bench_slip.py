"""Slipping model (paper 001) timings, with MuJoCo side by side in the same run.

1. Time per frame for 3..50 legs on the paper's disk robot (N legs equally spaced on the rim, two rotations
   and a vertical slide each; 1000 random states per N, paper §2.3): the slipping model (Stage A + B on
   one frame, as the predictor calls it, and vectorised over the 1000 frames) against one MuJoCo ``mj_step``
   of the same disk robot (feet as spheres on a plane) from the same kind of random state. Times are also
   normalised by each method's 3-leg median (the paper: < 3x at 50 legs for the model, 13x for MuJoCo 2.2.1).
2. SE(2) integration of a long trajectory: sequential (one composition per step) against the parallel
   prefix (tree) product, same increments, max difference printed.
3. The JetHexa slip predictor's cost per 50 Hz joint command, and its parts.
4. The compiled per-frame model against the numpy implementation it replaced (``--reference``, a git commit,
   imported from a temporary package): per single-frame call on the predictor's own frames, the largest
   output difference, a cProfile of both, and the cold compile time of the kernels (a fresh numba cache in a
   subprocess).

5. With ``--node-seconds S``: the predictor node in its own process over DDS (as ``bench_predictor_node.py``)
   with the reference package and with this tree, alternating.

Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_slip.py [--quick | --smoke]
[--node-seconds 15] (the node part needs the ROS environment, ``scripts/ros_env.sh``)
Writes its section of benchmarks/results/second_opinions.md (not with --smoke).
"""
import argparse
import atexit
import cProfile
import importlib
import io
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from _machine import describe  # noqa: E402
from jethexa_dynamics.second_opinions import se2  # noqa: E402
from jethexa_dynamics.second_opinions.multipod import disk  # noqa: E402
from jethexa_dynamics.second_opinions.slip_model import SlipModel  # noqa: E402

RADIUS, REACH, HEIGHT, SLIDE = 0.2, (0.05, 0.12), 0.08, 0.01
#: the numpy implementation (vectorised over frames, numpy per call) before the compiled per-frame kernels
REFERENCE = "16bf55035be23362f2dd9d412069230abcabccaa"
NANO = (4, 6)                 # Jetson Nano: 4-6x slower per core than this machine (issue #13)


def _temporary_dir(prefix):
    """A temporary directory removed when the script exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


def _has_commit(ref):
    """The git checkout this script is in has commit ``ref`` (False without git or outside a checkout)."""
    try:
        r = subprocess.run(["git", "-C", os.path.dirname(HERE), "cat-file", "-e", f"{ref}^{{commit}}"],
                           capture_output=True)
    except OSError:
        return False
    return r.returncode == 0


def numpy_reference(ref):
    """``SlipModel`` of the slipping model at git commit ``ref``, imported from a temporary package (its
    second_opinions modules, relative imports only), or None when git or the commit is not there."""
    root = os.path.dirname(HERE)
    pkg = os.path.join(_temporary_dir("slip_reference_"), "slip_reference")
    os.makedirs(pkg)
    for name in ("_checks", "se2", "spring_support", "connection", "slip"):
        r = subprocess.run(["git", "-C", root, "show", f"{ref}:jethexa_dynamics/second_opinions/{name}.py"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"reference {ref}: {r.stderr.strip()}", file=sys.stderr)
            return None
        with open(os.path.join(pkg, name + ".py"), "w") as f:
            f.write(r.stdout)
    open(os.path.join(pkg, "__init__.py"), "w").close()
    sys.path.insert(0, os.path.dirname(pkg))
    return importlib.import_module("slip_reference.slip").SlipModel


def disk_mjcf(n):
    """MuJoCo disk robot: N legs with yaw hinge, elevation hinge and vertical slide; sphere feet on a plane.
    Leg geometry as ``multipod.disk`` (yaw range keeps the workspaces apart)."""
    yaw = 0.8 * min(np.pi / n, 0.6)
    legs = []
    for j in range(n):
        phi = 2 * np.pi * j / n
        legs.append(
            f'<body pos="{RADIUS * np.cos(phi)} {RADIUS * np.sin(phi)} 0" euler="0 0 {phi}">'
            f'<joint type="hinge" axis="0 0 1" range="{-yaw} {yaw}" limited="true" damping="0.01"/>'
            f'<joint type="hinge" axis="0 1 0" range="-0.3 0.3" limited="true" damping="0.01"/>'
            f'<geom type="capsule" fromto="0 0 0 {REACH[1]} 0 0" size="0.004" mass="0.02" contype="2" conaffinity="0"/>'
            f'<body pos="{REACH[1]} 0 0"><joint type="slide" axis="0 0 1" range="{-SLIDE} {SLIDE}" limited="true" '
            f'damping="0.1"/><geom type="capsule" fromto="0 0 0 0 0 {-HEIGHT}" size="0.004" mass="0.02" '
            f'contype="2" conaffinity="0"/><geom type="sphere" pos="0 0 {-HEIGHT}" size="0.008" mass="0.01" '
            f'contype="2" conaffinity="0"/></body></body>')
    return (f'<mujoco><option timestep="0.002"/><worldbody>'
            f'<geom type="plane" size="5 5 0.1" contype="1" conaffinity="2"/>'
            f'<body pos="0 0 {HEIGHT}"><freejoint/><geom type="cylinder" size="{RADIUS} 0.01" mass="{0.1 * n}" '
            f'contype="2" conaffinity="0"/>{"".join(legs)}</body></worldbody></mujoco>')


def mujoco_states(m, n_states, rng):
    """Random joint positions within the limits and random velocities; body at the feet's nominal height."""
    qpos = np.tile(m.qpos0, (n_states, 1))
    lo, hi = m.jnt_range[1:, 0], m.jnt_range[1:, 1]
    adr = m.jnt_qposadr[1:]
    qpos[:, adr] = rng.uniform(lo, hi, (n_states, lo.size))
    qpos[:, 2] = HEIGHT - 0.002
    qvel = 0.1 * rng.standard_normal((n_states, m.nv))
    return qpos, qvel


def time_each(fn, states, warm_up=True):
    """Per-call wall times (s) of fn(state) over all states (after a warm-up on the first few)."""
    for s in states[:5] if warm_up else ():
        fn(s)
    out = np.empty(len(states))
    clock = time.perf_counter
    for k, s in enumerate(states):
        t0 = clock()
        fn(s)
        out[k] = clock() - t0
    return out


def leg_scaling(counts, n_states, rng, Reference):
    import mujoco

    rows = []
    for n in counts:
        feet, vel = disk(n, n_states, rng, RADIUS, REACH, HEIGHT, SLIDE)
        model = SlipModel(n, stiffness=1000.0, mu=1.0, weight=n)
        slip = time_each(lambda k: model.evaluate(feet[k], vel[k]), range(n_states))
        ref = None
        if Reference is not None:
            old = Reference(n, stiffness=1000.0, mu=1.0, weight=n)
            ref = time_each(lambda k: old.evaluate(feet[k], vel[k]), range(n_states))
        t0 = time.perf_counter()
        batch = model.evaluate(feet, vel)
        t_batch = (time.perf_counter() - t0) / n_states
        m = mujoco.MjModel.from_xml_string(disk_mjcf(n))
        d = mujoco.MjData(m)
        qpos, qvel = mujoco_states(m, n_states, rng)

        def step(k):
            d.qpos[:] = qpos[k]
            d.qvel[:] = qvel[k]
            mujoco.mj_step(m, d)
        mj = time_each(step, range(n_states))
        ncon = []
        for k in range(0, n_states, max(1, n_states // 50)):
            step(k)
            ncon.append(d.ncon)
        rows.append(dict(n=n, slip=slip, ref=ref, batch=t_batch, mj=mj, contacts=batch.contact.sum(1).mean(),
                         mj_contacts=float(np.mean(ncon)), status=np.bincount(batch.status, minlength=4)))
        print(f"N={n:3d}  slip median {np.median(slip) * 1e6:8.1f} us  batched {t_batch * 1e6:6.1f} us/frame  "
              f"MuJoCo mj_step median {np.median(mj) * 1e6:7.1f} us  contacts {rows[-1]['contacts']:.1f} / "
              f"{rows[-1]['mj_contacts']:.1f}", flush=True)
    return rows


def integration(lengths, rng):
    rows = []
    for T in lengths:
        inc = np.column_stack([rng.normal(size=(T, 2)) * 1e-3, rng.normal(size=T) * 1e-2])
        t0 = time.perf_counter()
        a = se2.integrate_sequential(inc)
        t_seq = time.perf_counter() - t0
        t_pre = min(_timed(lambda: se2.integrate_prefix(inc)) for _ in range(3))
        b = se2.integrate_prefix(inc)
        rows.append(dict(T=T, seq=t_seq, prefix=t_pre, diff=float(np.abs(a - b).max()),
                         levels=2 * int(np.ceil(np.log2(T + 1)))))
        print(f"T={T:8d}  sequential {t_seq * 1e3:9.2f} ms  prefix {t_pre * 1e3:8.2f} ms  "
              f"speed-up {t_seq / t_pre:5.1f}x  max |diff| {rows[-1]['diff']:.1e}", flush=True)
    return rows


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def jethexa_commands(n_commands):
    """The slip predictor on the JetHexa and n tripod-gait joint commands at 50 Hz (times, angles)."""
    from jethexa_dynamics.control.gait import Gait
    from jethexa_dynamics.control.ik import LegGeometry
    from jethexa_dynamics.model import LeggedRobot

    robot = LeggedRobot.jethexa()
    gait = Gait.paper_tripod(LegGeometry.from_robot(robot))
    t = np.arange(n_commands) * 0.02
    return robot, t, np.array([gait.joint_targets(tk) for tk in t])


def predictor_frames(pred, t, q):
    """The (feet, feet velocity, present) the predictor hands to its SlipModel, one per command."""
    frames, evaluate = [], pred.slip.evaluate

    def spy(feet, vel, present=None):
        frames.append((feet.copy(), vel.copy(), present))
        return evaluate(feet, vel, present=present)
    pred.slip.evaluate = spy
    pred.reset()
    for tk, qk in zip(t, q):
        pred.push_joint_command(tk, qk)
    del pred.slip.evaluate
    return frames


def predictor_cost(n_commands, Reference):
    """Per-command cost of the slip predictor with the compiled model and with the reference model swapped in
    (same predictor and commands, alternating rounds; the rest of the path is this tree's in both), and the parts
    of the per-command path."""
    from jethexa_dynamics.predictors.slip import SlipPredictor
    from jethexa_dynamics.second_opinions.rnea import NewtonEulerRobot
    from jethexa_dynamics.second_opinions.se2 import compose, se2_exp

    robot, t, q = jethexa_commands(n_commands)
    pred = SlipPredictor(robot)
    models = {"compiled": pred.slip}
    if Reference is not None:
        m = pred.slip
        models["numpy (before)"] = Reference(m.n_legs, m.stiffness, m.mu, m.anisotropy, m.weight)
    per = {k: [] for k in models}
    for _ in range(3):                                      # alternate: the load of the machine is shared
        for name, model in models.items():
            pred.slip = model
            pred.reset()
            per[name].append(time_each(lambda k: pred.push_joint_command(t[k], q[k]), range(n_commands),
                                       warm_up=False))
    per = {k: np.concatenate(v) for k, v in per.items()}
    pred.slip = models["compiled"]
    pred2 = SlipPredictor(robot)
    t_batch = _timed(lambda: pred2.evaluate_commands(t, q)) / n_commands
    qm = q[:, pred.robot.joint_index_in_full]
    ne = NewtonEulerRobot.from_urdf(robot.urdf_path)
    feet, vel, present = predictor_frames(pred, t, q)[n_commands // 2]
    frame = pred.slip.evaluate(feet, vel, present=present)
    twist, planar = np.array([0.01, 0.002, 0.1]), np.zeros(3)
    parts = {
        "feet: core `tip_poses` (numba)": lambda: pred.robot.tip_poses(qm[0]),
        "feet: COM (core `model.com.center_of_mass`, numba)": lambda: pred._centre_of_mass(qm[0]),
        "(COM the way it was: `NewtonEulerRobot.center_of_mass`, numpy)": lambda: ne.center_of_mass(qm[0]),
        "slip model `evaluate` (Stage A + B, one frame)": lambda: pred.slip.evaluate(feet, vel, present=present),
        "twist of the frame (`SlipFrames.twist[0]`)": lambda: frame.twist[0],
        "SE(2) step in `advance` (`se2_exp` + `compose`)": lambda: compose(planar, se2_exp(twist[None], 0.02)[0]),
    }
    part_us = {k: min(timeit.repeat(f, number=200, repeat=5)) / 200 * 1e6 for k, f in parts.items()}
    for name, v in per.items():
        print(f"JetHexa slip predictor ({name}): {np.median(v) * 1e3:.3f} ms per command (median)", flush=True)
    print(f"batch {t_batch * 1e3:.3f} ms per command; parts (us): " +
          ", ".join(f"{k.split(' ')[0]} {v:.1f}" for k, v in part_us.items()), flush=True)
    return per, t_batch, part_us


def compare_reference(Reference, n_commands):
    """Single-frame evaluate on the predictor's own frames: compiled vs reference, alternating; the largest
    difference of every output; cProfile of both (top rows by own time)."""
    from jethexa_dynamics.predictors.slip import SlipPredictor

    robot, t, q = jethexa_commands(n_commands)
    pred = SlipPredictor(robot)
    frames = predictor_frames(pred, t, q)
    new, m = pred.slip, pred.slip
    old = Reference(m.n_legs, m.stiffness, m.mu, m.anisotropy, m.weight)
    times = {"compiled": [], "numpy (before)": []}
    for _ in range(3):
        for name, model in (("compiled", new), ("numpy (before)", old)):
            times[name].append(time_each(lambda k: model.evaluate(*frames[k][:2], present=frames[k][2]),
                                         range(len(frames))))
    times = {k: np.concatenate(v) for k, v in times.items()}
    diff = {}
    rng = np.random.default_rng(5)
    cases = list(frames)
    for n in (3, 6, 8):          # random disks too, every third pushed off-centre (tip-over), a leg removed
        feet, vel = disk(n, 100, rng, RADIUS, REACH, HEIGHT, SLIDE)
        feet[::3, :, :2] += rng.uniform(-1.5, 1.5, (34, 1, 2)) * RADIUS
        present = np.arange(n) != n - 1
        cases += [(feet[k], vel[k], present if k % 2 else None) for k in range(100)]
    statuses = np.zeros(4, int)
    for feet, vel, present in cases:
        n = feet.shape[0]
        a = SlipModel(n, 1000.0, weight=n).evaluate(feet, vel, present=present)
        b = Reference(n, 1000.0, weight=n).evaluate(feet, vel, present=present)
        statuses[a.status[0]] += 1
        for f in a.__dataclass_fields__:
            x, y = np.asarray(getattr(a, f), float), np.asarray(getattr(b, f), float)
            diff[f] = max(diff.get(f, 0.0), float(np.abs(x - y).max()))
    profiles = {}
    for name, model in (("compiled", new), ("numpy (before)", old)):
        pr = cProfile.Profile()
        pr.enable()
        for feet, vel, present in frames:
            model.evaluate(feet, vel, present=present)
        pr.disable()
        out = io.StringIO()
        pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(8)
        text = out.getvalue()
        body = text[text.index("ncalls"):].rstrip().splitlines()
        head = [ln.strip() for ln in text.splitlines() if "function calls" in ln]
        ref_dir = os.path.dirname(os.path.dirname(sys.modules[Reference.__module__].__file__))
        profiles[name] = head + [ln.replace(os.path.dirname(HERE) + "/", "").replace(ref_dir + "/", "<reference>/")
                                 .replace(os.path.dirname(os.path.dirname(np.__file__)) + "/", "") for ln in body]
    for name, v in times.items():
        print(f"evaluate, one frame ({name}): median {np.median(v) * 1e6:.1f} us", flush=True)
    print(f"largest output differences over {len(cases)} frames: {diff}; statuses {statuses.tolist()}", flush=True)
    return times, diff, len(cases), statuses, profiles


COMPILE_PROBE = """
import time, numpy as np
from numba.core import event
from jethexa_dynamics.second_opinions.slip_model import SlipModel
q = np.array([[0.1, 0.1, -0.1], [-0.1, 0.1, -0.1], [0.0, -0.1, -0.1]])
with event.install_recorder("numba:compile") as rec:
    t0 = time.perf_counter()
    SlipModel(3).evaluate(q, np.zeros((3, 3)))
    print(time.perf_counter() - t0, sum(1 for _, e in rec.buffer if e.is_start))
"""


def compile_time():
    """Cold compile (fresh numba cache, own process) and warm load of the slip kernels: (seconds, count)."""
    out = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=os.pathsep.join(
            [os.path.dirname(HERE)] + os.environ.get("PYTHONPATH", "").split(os.pathsep)))
        for _ in ("cold", "warm"):
            r = subprocess.run([sys.executable, "-c", COMPILE_PROBE], env=env, capture_output=True, text=True,
                               check=True)
            sec, n = r.stdout.split()
            out.append((float(sec), int(n)))
    print(f"slip kernels: cold compile {out[0][0]:.1f} s ({out[0][1]} functions), warm load {out[1][0]:.2f} s",
          flush=True)
    return out


def node_ab(ref, seconds, rounds):
    """The predictor node as the launch files run it (own process, 100 Hz, boltzmann_hamel + slip, the plant's
    streams over DDS; ``bench_predictor_node.measure_own_process``) with the package at git ``ref`` and with this
    tree, alternating, ``rounds`` each. The reference tree is exported to a temporary directory, its numba
    kernels compiled (a cache of its own) before its first run. Returns {label: [result per round]}."""
    sys.path.insert(0, HERE)
    from bench_predictor_node import measure_own_process, plant_streams

    root = os.path.dirname(HERE)
    tree = _temporary_dir("slip_reference_tree_")
    archive = subprocess.run(["git", "-C", root, "archive", ref], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
    env0, here = dict(os.environ), os.getcwd()
    # each tree first on sys.path, also as the working directory (``python -m`` puts it in front)
    envs = {"numpy (before)": (tree, dict(PYTHONPATH=os.pathsep.join([tree] + env0.get("PYTHONPATH", "").split(
                os.pathsep)), NUMBA_CACHE_DIR=os.path.join(tree, ".numba-cache"))),
            "compiled": (root, dict(PYTHONPATH=os.pathsep.join([root] + env0.get("PYTHONPATH", "").split(
                os.pathsep)), NUMBA_CACHE_DIR=env0.get("NUMBA_CACHE_DIR") or os.path.join(root, ".numba-cache")))}
    probe = "import jethexa_dynamics.second_opinions.slip_model as m; print(m.__file__)"
    warm = "from jethexa_dynamics.warmup import ensure_kernels; ensure_kernels(('dynamics', 'predictors'))"
    for label, (cwd, env) in envs.items():
        where = subprocess.run([sys.executable, "-c", probe], env=dict(env0, **env), cwd=cwd, check=True,
                               capture_output=True, text=True).stdout.strip()
        assert where.startswith(cwd), (label, where)
        print(f"node A/B: compiling or loading the kernels ({label}: {where}) ...", flush=True)
        subprocess.run([sys.executable, "-c", warm], env=dict(env0, **env), cwd=cwd, check=True,
                       capture_output=True)
    streams = plant_streams(seconds + 10.0)
    out = {k: [] for k in envs}
    params = {"predictor": "boltzmann_hamel", "publish_slip": True, "rate": 100.0,
              "stats_window": int(seconds * 100.0)}
    try:
        for _ in range(rounds):
            for label, (cwd, env) in envs.items():
                os.environ.update(env)
                os.chdir(cwd)
                r = measure_own_process("jethexa_dynamics.nodes.predictor", "predictor", params, seconds, streams,
                                        0.0)
                out[label].append(r)
                print(f"node ({label}): joint_commands {r['stages'].get('joint_commands', float('nan')):.1f} ms/s, "
                      f"main thread {r['main_ms_per_s']:.1f} ms/s", flush=True)
    finally:
        os.environ.clear()
        os.environ.update(env0)
        os.chdir(here)
    return out


def write_section(path, name, lines):
    """Replace this script's section of the shared results file (other scripts keep theirs)."""
    begin, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    text = open(path).read() if os.path.exists(path) else "# Second opinions: benchmark figures\n"
    block = "\n".join([begin] + lines + [end])
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)


def _us(v):
    return f"{np.median(v) * 1e6:.1f} ({np.percentile(v, 5) * 1e6:.1f}-{np.percentile(v, 95) * 1e6:.1f})"


def _nano(us):
    return f"{us * NANO[0]:.0f}-{us * NANO[1]:.0f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer states and shorter trajectories")
    ap.add_argument("--smoke", action="store_true", help="a few states of each part, to check the script; "
                    "nothing written")
    ap.add_argument("--reference", default=REFERENCE, help="git commit of the numpy implementation to time "
                    "beside the compiled one (default: the one before the compiled kernels; '' = none)")
    ap.add_argument("--node-seconds", type=float, default=0.0, help="also time the predictor node (own "
                    "process, DDS, needs rclpy) with the reference and with this tree, alternating: measured "
                    "seconds per run (0 = skip)")
    ap.add_argument("--node-rounds", type=int, default=2, help="runs of each tree with --node-seconds")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "second_opinions.md"))
    args = ap.parse_args(argv)
    if args.node_seconds < 0 or args.node_rounds < 1:
        ap.error("--node-seconds must be >= 0 and --node-rounds >= 1")
    if args.reference and not _has_commit(args.reference):
        if args.reference != REFERENCE:     # asked for by name: a typo must not silently time nothing
            ap.error(f"--reference: {args.reference!r} is not a commit of this checkout ('' = no reference)")
        print(f"reference {REFERENCE[:10]}: not in this checkout (no git history?); timed without it",
              file=sys.stderr)
        args.reference = ""
    rng = np.random.default_rng(2024)
    n_states = 20 if args.smoke else 200 if args.quick else 1000
    counts = [3, 6] if args.smoke else [3, 6, 12, 25, 50] if args.quick else [3, 4, 6, 8, 10, 12, 16, 20, 25, 30,
                                                                              40, 50]
    lengths = [1000] if args.smoke else [1000, 10000, 100000] if args.quick else [1000, 10000, 100000, 1000000]
    n_commands = 20 if args.smoke else 100 if args.quick else 500
    Reference = numpy_reference(args.reference) if args.reference else None
    scaling = leg_scaling(counts, n_states, rng, Reference)
    integ = integration(lengths, rng)
    per_cmd, batch_cmd, parts = predictor_cost(n_commands, Reference)
    ref = compare_reference(Reference, n_commands) if Reference is not None else None
    compiled = None if args.smoke else compile_time()
    node = node_ab(args.reference, args.node_seconds, args.node_rounds) if args.node_seconds and Reference else None
    if args.smoke:
        print("smoke run: every part ran; results not written")
        return

    base = scaling[0]
    with_ref = Reference is not None
    lines = [
        "## Slipping model (paper 001): `benchmarks/bench_slip.py`",
        "",
        f"- command: `OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} .venv/bin/python "
        f"benchmarks/bench_slip.py{' --quick' if args.quick else ''}`",
        *describe("scipy", "mujoco", "numba"),
        f"- Jetson Nano estimate: {NANO[0]}-{NANO[1]}x these times (4x Cortex-A57 at 1.43 GHz, one core per call).",
    ]
    if with_ref:
        new, old = ref[0]["compiled"], ref[0]["numpy (before)"]
        lines += [
            "",
            "### One frame per call, as the predictor calls it: compiled per-frame kernels vs numpy (before)",
            "",
            f"Reference = the vectorised numpy implementation at commit `{args.reference[:10]}` (imported from a",
            "temporary package, same process, alternating rounds). Frames = the (feet, feet velocity) the JetHexa",
            f"predictor passes for {n_commands} tripod-gait commands at 50 Hz; median (p5-p95) us per "
            "`SlipModel.evaluate`.",
            "",
            "| implementation | us per call here | Nano estimate us | speed-up |",
            "|---|---:|---:|---:|",
            f"| numpy (before) | {_us(old)} | {_nano(np.median(old) * 1e6)} | 1.0x |",
            f"| compiled (numba, one loop over frames) | {_us(new)} | {_nano(np.median(new) * 1e6)} | "
            f"{np.median(old) / np.median(new):.1f}x |",
            "",
            f"Largest difference of each output between the two implementations over "
            f"{ref[2]} frames (the predictor's and random 3/6/8-leg disks, a third of them pushed off-centre, half "
            f"with a leg removed; statuses OK/DEGENERATE/TIPPED/FALLBACK "
            f"{'/'.join(str(x) for x in ref[3])}): " + ", ".join(f"{k} {v:.0e}" for k, v in ref[1].items()) + ".",
            "",
            "Profile (cProfile, the predictor's frames, top rows by own time). Before: the time is spread over",
            "numpy calls on (1, 6)-sized arrays (einsum, eigh, stack, reductions, input checks run three times);",
            "after: the two compiled calls and the input checks, done once.",
            "",
        ]
        for name in ("numpy (before)", "compiled"):
            lines += [f"{name}:", "", "```", *ref[4][name], "```", ""]
    if compiled is not None:
        (cold, n_cold), (warm, _) = compiled
        lines += [
            f"Compile time of the slip kernels (fresh numba cache, own process): {cold:.1f} s cold ({n_cold} "
            f"functions), {warm:.2f} s loading them from the cache. `jethexa-warmup` (group `predictors`) "
            "compiles them with the other kernels; after it nothing compiles at run time, the energy "
            "fallback included.",
        ]
    lines += [
        "",
        f"### Time per frame against the number of legs ({n_states} random disk states per N, same run)",
        "",
        "Slip model = Stage A + Stage B on one frame (what the predictor calls per command: compiled per-frame",
        "code, numpy only for the input checks); numpy (before) = the reference on the same frames; batched =",
        f"the same {n_states} frames in one call. MuJoCo = one `mj_step` (dt 2 ms, soft contacts, sphere feet on a",
        "plane) from a random state of the same disk robot. Normalised = median / the same method's 3-leg median",
        "(paper: < 3x vs 13x at 50 legs).",
        "",
        "| legs | slip median us (p25-p75) | slip norm. |" + (" numpy (before) median us |" if with_ref else "") +
        " slip batched us/frame | batched norm. | MuJoCo median us (p25-p75) | MuJoCo norm. | contacts slip / MuJoCo |",
        "|---:|---:|---:|" + ("---:|" if with_ref else "") + "---:|---:|---:|---:|---:|",
    ]
    for r in scaling:
        s, m = r["slip"] * 1e6, r["mj"] * 1e6
        lines.append(
            f"| {r['n']} | {np.median(s):.1f} ({np.percentile(s, 25):.1f}-{np.percentile(s, 75):.1f}) | "
            f"{np.median(r['slip']) / np.median(base['slip']):.2f} | " +
            (f"{np.median(r['ref']) * 1e6:.0f} | " if with_ref else "") +
            f"{r['batch'] * 1e6:.1f} | "
            f"{r['batch'] / base['batch']:.2f} | {np.median(m):.1f} ({np.percentile(m, 25):.1f}-"
            f"{np.percentile(m, 75):.1f}) | {np.median(r['mj']) / np.median(base['mj']):.2f} | "
            f"{r['contacts']:.1f} / {r['mj_contacts']:.1f} |")
    last = scaling[-1]
    lines += [
        "",
        f"Slowdown from {base['n']} to {last['n']} legs: slip model "
        f"{np.median(last['slip']) / np.median(base['slip']):.2f}x per call, "
        f"{last['batch'] / base['batch']:.2f}x batched; MuJoCo "
        f"{np.median(last['mj']) / np.median(base['mj']):.2f}x.",
        "",
        "### SE(2) integration of a long trajectory: sequential vs parallel prefix (tree) product",
        "",
        "| steps T | sequential ms | prefix ms | speed-up | tree levels | max abs difference |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in integ:
        lines.append(f"| {r['T']} | {r['seq'] * 1e3:.2f} | {r['prefix'] * 1e3:.2f} | {r['seq'] / r['prefix']:.1f}x | "
                     f"{r['levels']} | {r['diff']:.1e} |")
    lines += [
        "",
        "Sequential = a scalar Python loop, one composition per step (T dependent steps). Prefix = Brent-Kung",
        "scan, 2 log2 T vectorised levels of independent compositions (about 2T compositions in all); on one",
        "core its gain is vectorisation, with P cores each level splits P ways (the paper's O(log T) claim).",
        "",
        "### JetHexa slip predictor",
        "",
        f"Per 50 Hz joint command (`push_joint_command`: tip poses + COM + Stage A + Stage B + SE(2) step), "
        f"{n_commands} tripod-gait commands, 3 alternating rounds, with this tree's predictor and either "
        f"slipping model (the node A/B below swaps the whole package); the same commands evaluated as one batch: "
        f"{batch_cmd * 1e3:.3f} ms per command.",
        "",
        "| slipping model inside the predictor | ms per command, median (p95) | Nano estimate ms |",
        "|---|---:|---:|",
    ]
    for name, v in per_cmd.items():
        med = np.median(v) * 1e3
        lines.append(f"| {name} | {med:.3f} ({np.percentile(v, 95) * 1e3:.3f}) | "
                     f"{med * NANO[0]:.2f}-{med * NANO[1]:.2f} |")
    lines += [
        "",
        "Parts of the per-command path (best of 5 x 200 calls, us; the SE(2) step also runs on every `predict`):",
        "",
        "| part | us here | Nano estimate us |",
        "|---|---:|---:|",
        *[f"| {k} | {v:.1f} | {_nano(v)} |" for k, v in parts.items()],
    ]
    if node is not None:
        lines += [
            "",
            "### The predictor node with either slipping model (own process, DDS, A/B)",
            "",
            "`python -m jethexa_dynamics.nodes.predictor` (boltzmann_hamel + slip, 100 Hz) on the plant's streams, as",
            "in `bench_predictor_node.py`, with the package at the reference commit and with this tree, alternating",
            f"({args.node_rounds} runs of {args.node_seconds:g} s each). joint_commands = the CPU of that subscription "
            "callback (both models' `on_command`: feet, COM, the slipping model, the SE(2) step); main thread",
            "= every callback and rclpy's executor (from /proc). ms of CPU per 10 ms period; Nano = x4-6.",
            "",
            "| slipping model | joint_commands per run | main thread per run | Nano main thread (mean) |",
            "|---|---|---|---:|",
        ]
        for label, runs in node.items():
            jc = [r["stages"].get("joint_commands", float("nan")) / 100.0 for r in runs]
            mt = [r["main_ms_per_s"] / 100.0 for r in runs]
            lines.append(f"| {label} | {', '.join(f'{x:.3f}' for x in jc)} | {', '.join(f'{x:.2f}' for x in mt)} | "
                         f"{np.mean(mt) * NANO[0]:.1f}-{np.mean(mt) * NANO[1]:.1f} |")
        lines.append("")
        lines.append(f"Load average at the end: {os.getloadavg()[0]:.2f} (2 cores shared with other jobs).")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    write_section(args.out, "bench_slip", lines)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
