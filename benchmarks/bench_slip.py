"""Slipping model (paper 001) timings, with MuJoCo side by side in the same run.

1. Time per frame for 3..50 legs on the paper's disk robot (N legs equally spaced on the rim, two rotations
   and a vertical slide each; 1000 random states per N, paper §2.3): the slipping model (Stage A + B on
   one frame, as the predictor calls it, and vectorised over the 1000 frames) against one MuJoCo ``mj_step``
   of the same disk robot (feet as spheres on a plane) from the same kind of random state. Times are also
   normalised by each method's 3-leg median (the paper: < 3x at 50 legs for the model, 13x for MuJoCo 2.2.1).
2. SE(2) integration of a long trajectory: sequential (one composition per step) against the parallel
   prefix (tree) product, same increments, max difference printed.
3. The JetHexa slip predictor's cost per 50 Hz joint command.

Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_slip.py [--quick]
Writes its section of benchmarks/results/second_opinions.md.
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from _machine import describe  # noqa: E402
from jethexa_dynamics.second_opinions import se2  # noqa: E402
from jethexa_dynamics.second_opinions.multipod import disk  # noqa: E402
from jethexa_dynamics.second_opinions.slip import SlipModel  # noqa: E402

RADIUS, REACH, HEIGHT, SLIDE = 0.2, (0.05, 0.12), 0.08, 0.01


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


def leg_scaling(counts, n_states, rng):
    import mujoco

    rows = []
    for n in counts:
        feet, vel = disk(n, n_states, rng, RADIUS, REACH, HEIGHT, SLIDE)
        model = SlipModel(n, stiffness=1000.0, mu=1.0, weight=n)
        slip = time_each(lambda k: model.evaluate(feet[k], vel[k]), range(n_states))
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
        rows.append(dict(n=n, slip=slip, batch=t_batch, mj=mj, contacts=batch.contact.sum(1).mean(),
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


def predictor_cost(n_commands):
    from jethexa_dynamics.control.gait import Gait
    from jethexa_dynamics.control.ik import LegGeometry
    from jethexa_dynamics.model import LeggedRobot
    from jethexa_dynamics.predictors.slip import SlipPredictor

    robot = LeggedRobot.jethexa()
    gait = Gait.paper_tripod(LegGeometry.from_robot(robot))
    t = np.arange(n_commands) * 0.02
    q = np.array([gait.joint_targets(tk) for tk in t])
    pred = SlipPredictor(robot)
    for k in range(5):
        pred.push_joint_command(t[k], q[k])
    pred.reset()
    per = time_each(lambda k: pred.push_joint_command(t[k], q[k]), range(n_commands), warm_up=False)
    pred2 = SlipPredictor(robot)
    t_batch = _timed(lambda: pred2.evaluate_commands(t, q)) / n_commands
    print(f"JetHexa slip predictor: {np.median(per) * 1e3:.3f} ms per command (median), batch "
          f"{t_batch * 1e3:.3f} ms per command", flush=True)
    return per, t_batch


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer states and shorter trajectories")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "second_opinions.md"))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(2024)
    n_states = 200 if args.quick else 1000
    counts = [3, 6, 12, 25, 50] if args.quick else [3, 4, 6, 8, 10, 12, 16, 20, 25, 30, 40, 50]
    lengths = [1000, 10000, 100000] if args.quick else [1000, 10000, 100000, 1000000]
    scaling = leg_scaling(counts, n_states, rng)
    integ = integration(lengths, rng)
    per_cmd, batch_cmd = predictor_cost(100 if args.quick else 500)

    base = scaling[0]
    lines = [
        "## Slipping model (paper 001): `benchmarks/bench_slip.py`",
        "",
        f"- command: `OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} .venv/bin/python "
        f"benchmarks/bench_slip.py{' --quick' if args.quick else ''}`",
        *describe("scipy", "mujoco"),
        "",
        f"### Time per frame against the number of legs ({n_states} random disk states per N, same run)",
        "",
        "Slip model = Stage A + Stage B on one frame (what the predictor calls per command; pure numpy, so the",
        "per-call cost is dominated by numpy dispatch, not by N); batched = the same 1000 frames in one call.",
        "MuJoCo = one `mj_step` (dt 2 ms, soft contacts, sphere feet on a plane) from a random state of the",
        "same disk robot. Normalised = median / the same method's 3-leg median (paper: < 3x vs 13x at 50 legs).",
        "",
        "| legs | slip median us (p25-p75) | slip norm. | slip batched us/frame | batched norm. | "
        "MuJoCo median us (p25-p75) | MuJoCo norm. | contacts slip / MuJoCo |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in scaling:
        s, m = r["slip"] * 1e6, r["mj"] * 1e6
        lines.append(
            f"| {r['n']} | {np.median(s):.0f} ({np.percentile(s, 25):.0f}-{np.percentile(s, 75):.0f}) | "
            f"{np.median(r['slip']) / np.median(base['slip']):.2f} | {r['batch'] * 1e6:.1f} | "
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
        f"- per 50 Hz joint command (tip poses + COM + Stage A + Stage B + SE(2) step): median "
        f"{np.median(per_cmd) * 1e3:.3f} ms (p95 {np.percentile(per_cmd, 95) * 1e3:.3f} ms); the same commands "
        f"evaluated as one batch: {batch_cmd * 1e3:.3f} ms per command.",
    ]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    write_section(args.out, "bench_slip", lines)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
