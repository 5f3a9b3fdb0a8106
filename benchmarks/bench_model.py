#!/usr/bin/env python3
"""Dynamics core vs Pinocchio, side by side in one process on one thread (issue #2 benchmark).

Rows: mass matrix (crba), bias forces (nonLinearEffects), forward dynamics (aba), morphology change
(pin.buildReducedModel + createData), and a bank of K = 64 morphology hypotheses at one state (vs 64 aba
calls on prebuilt models of the damaged robots). Every timing row prints the max relative error against
Pinocchio next to it, so a fast-but-wrong variant cannot pass.

Run:  OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_model.py [--tag py310] [--out FILE]
(writes benchmarks/results/model.md, or model_<tag>.md with ``--tag``: e.g. the robot's stack, Python 3.10 +
numpy 1.21 + numba 0.55, in the environment of scripts/compat_py310.sh with Pinocchio added, see --pin-note)
"""
import argparse
import os
import sys
import time
import timeit

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import pinocchio as pin  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))
from pin_oracle import PinOracle, rel_err  # noqa: E402
from robot_factory import urdf_without_links  # noqa: E402

from _machine import describe  # noqa: E402
from jethexa_dynamics.model import LeggedRobot, Morphology, kernels  # noqa: E402
from numba import njit  # noqa: E402

# The profile behind the kernels (2026-11-23, issue #13; compiled loops per stage, CPU time of the thread):
# - call boundaries: every non-inlined compiled call passing the 11-array ``data`` tuple pays an atomic
#   reference-count round trip per array; with the CRBA/RNEA helpers inlined (``inline="always"``) the forward
#   dynamics loop went from 8.9 to 2.9 µs with the same arithmetic (the earlier layout had cut ~1500 such
#   operations per call to ~570, kernel 15.1 -> 7.4 µs);
# - unboxing from Python: numba unboxes each array argument on its own (~50-80 ns; the ``data`` tuple ~0.9 µs
#   per call, half of Pinocchio's whole crba), and a tuple argument costs ~0.1 µs more than its arrays passed
#   one by one. The model lives in one float64 buffer (``kernel_buffer``; two int/float buffers before: a
#   no-op compiled function with mass_matrix's arguments went 0.33 -> 0.24 µs), and the public API checks
#   shapes with one comparison per argument on the hot path (finiteness in the kernel);
# - the API layer over the kernel (measured below in every run): np.empty of the result, np.asarray + shape
#   comparison, the method call; an ``out=`` array needs its own check (type, shape, dtype, flags), which
#   costs about what np.empty does, so ``out=`` is a convenience, not a speed-up. Calling a compiled
#   overload's entry point directly would skip the dispatcher's type resolution (~0.1-0.2 µs) but also its
#   type checks (a wrong layout would read out of bounds): not done;
# - views: numba's ``reshape`` spends ~25 ns per call in checks; unpacking the buffer and the solvers made 7-11
#   of them per kernel call. ``cview`` (model/_numba.py: an array header over a C-contiguous buffer, no
#   checks) took the compiled mass-matrix loop from 2.03 to 1.63 µs;
# - algorithms: the mass matrix by CRBA (composite inertias, O(n) blocks per leg) and the bias by RNEA (O(n)
#   per leg) replaced the per-link accumulation of the mass blocks and of C v through ∂M/∂θ (O(n^3) per leg).
PROFILE_NOTE = (
    "Profile (2026-11-23, compiled loops per stage, CPU time of the thread): (1) call boundaries — each "
    "non-inlined compiled call passing the 11-array `data` tuple pays a reference-count round trip per array; "
    "inlining the CRBA/RNEA helpers took the forward-dynamics loop from 8.9 to 2.9 µs, same arithmetic; "
    "(2) unboxing from Python — numba unboxes each array argument on its own (~50-80 ns; the `data` tuple "
    "~0.9 µs per call, half of Pinocchio's crba) and a tuple argument costs ~0.1 µs more than its arrays one by "
    "one: the API passes the model as one float64 buffer (`kernel_buffer`; with the earlier pair of buffers a "
    "no-op compiled call with mass_matrix's arguments took 0.33 µs, now 0.24) and checks only shapes on the hot "
    "path (finiteness in the kernel); (3) the API layer (table below): what the Python API adds to the compiled "
    "call is the result's np.empty, one np.asarray + shape comparison per argument and the method call; an "
    "`out=` array must be checked (type, shape, dtype, flags), which costs about what np.empty does, so `out=` "
    "saves little (the rows with `out=` are labelled); calling the compiled entry point directly would skip the "
    "dispatcher's type resolution (~0.1-0.2 µs) and its type checks with it (not done); (4) views — numba's "
    "`reshape` spends ~25 ns per call in checks, and unpacking the buffer plus the solvers made 7-11 of them per "
    "kernel call: `cview` (an array header over the C-contiguous buffer) took the mass-matrix loop from 2.03 to "
    "1.63 µs and the API from 1.53x to ~1.3x crba; (5) algorithms — mass "
    "matrix by CRBA (composite inertias) and bias forces by RNEA, O(n) per leg, instead of the per-link mass "
    "blocks and C v through ∂M/∂θ (O(n³) per leg); (6) allocations — each np.empty in compiled code costs "
    "~50 ns on numba 0.55 and ~20 ns on 0.68, and a kernel call made 14 (the blocks, the legs' scratch, the "
    "link counts): one allocation carved by `cview` (`kernels._work`) took the compiled loops, new against old "
    "in one process, on numba 0.55.2 mass 3.30 -> 2.54, bias 3.10 -> 2.15, forward dynamics 4.53 -> 3.84 µs, on "
    "0.68.1 1.61 -> 1.47, 1.85 -> 1.73, 2.75 -> 2.50 µs; `se3_step` (every engine step) in scalars 0.53 -> 0.05 "
    "µs on 0.55, 0.27 -> 0.05 on 0.68; (7) numba < 0.60, where the helpers are not IR-inlined (`INLINE`): "
    "folding an omitted default argument costs ~0.4 µs per call there (0.08 on 0.68), so forward_dynamics "
    "takes its joint diagonal always (an empty array for none); IR-inlining `leg_kinematics` alone there took "
    "the mass-matrix loop 2.6 -> 2.2 µs for +34 CPU-s and +0.3 GB of compile for three kernels, the leaf "
    "helpers alone moved it by +-5 % for twice the compile, and everything inlined ran out of 5 GB. Stages of "
    "one call, measured in this run (compiled loops, best µs):")


@njit(cache=True)
def _loop_legkin(n, data, th):
    nmax = data[kernels.D_XI].shape[1]
    R, p, xp = np.empty((nmax, 3, 3)), np.empty((nmax, 3)), np.empty((nmax, 6))
    c, Ic = np.empty((nmax, 3)), np.empty((nmax, 3, 3))
    for _ in range(n):
        for i in range(data[kernels.D_N_JOINTS].shape[0]):
            kernels.leg_kinematics(data, i, th, R, p, xp, c, Ic)


@njit(cache=True)
def _noop4(a, b, c, d):
    """A compiled call with mass_matrix's argument types and no work: the dispatcher + unboxing cost."""
    return True


@njit(cache=True)
def _loop_mass(n, data, th, mask, out):
    for _ in range(n):
        kernels.mass_matrix(data, th, mask, out)


@njit(cache=True)
def _loop_bias(n, data, R, th, v, mask, gravity_on, out):
    for _ in range(n):
        kernels.bias_forces(data, R, th, v, mask, gravity_on, out)


@njit(cache=True)
def _loop_fd(n, data, R, th, v, tau, f, mask, out):
    no_diag = np.empty(0)
    for _ in range(n):
        kernels.forward_dynamics(data, R, th, v, tau, f, mask, out, no_diag)


# CPU time of this thread, not wall time: the machine is shared (2 cores, several jobs), and time spent
# descheduled is nobody's cost. Both sides are timed with the same clock.
CLOCK = time.thread_time


def _best_loop(fn, n=20000, repeat=7):
    fn(1)
    best = float("inf")
    for _ in range(repeat):
        t0 = CLOCK()
        fn(n)
        best = min(best, (CLOCK() - t0) / n * 1e6)
    return best


def best_us(stmt, g, repeat=5):
    t = timeit.Timer(stmt, globals=g, timer=CLOCK)
    n, _ = t.autorange()
    n = max(1, int(n * 0.5))
    return min(t.repeat(repeat=repeat, number=n)) / n * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="results file (default benchmarks/results/model[_TAG].md)")
    ap.add_argument("--tag", default=None, help="suffix of the default results file and of its title, e.g. py310")
    ap.add_argument("--only", default="", help="comma list of row groups: mass,bias,fd,morph,bank (default all; "
                    "for a first run on a stack where numba compiles the kernels slowly)")
    ap.add_argument("--note", default="", help="a line under the header (e.g. how Pinocchio was installed)")
    ap.add_argument("--K", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds (ours, Pinocchio) per row")
    ap.add_argument("--smoke", action="store_true", help="K = 2 hypotheses, few repeats, nothing written (CI)")
    args = ap.parse_args(argv)
    if args.out is None:
        args.out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                "model%s.md" % ("_" + args.tag if args.tag else ""))
    if args.smoke:
        args.K, args.out, args.rounds = 2, None, 1
        global best_us
        best_us = lambda stmt, g, repeat=2: min(timeit.repeat(stmt, globals=g, repeat=repeat, number=20)) / 20 * 1e6  # noqa: E731
    robot = LeggedRobot.jethexa()
    with open(robot.urdf_path) as f:
        oracle = PinOracle(f.read(), robot)
    model, data = oracle.model, oracle.data
    rng = np.random.default_rng(0)
    g = pin.SE3.Random().homogeneous
    q = rng.uniform(-1, 1, 18)
    v = rng.normal(size=24)
    tau = np.r_[np.zeros(6), rng.normal(size=18)]
    qp, vp, tp = oracle.config(g, q), oracle.vel(v), oracle.vel(tau)
    R = np.ascontiguousarray(g[:3, :3])
    f0 = np.zeros((6, 3))
    no_diag = np.empty(0)
    out = np.empty(24)
    Mout = np.empty((24, 24))
    mask = robot.morphology.link_mask
    data_k = robot.kernel_data
    buf = robot.kernel_buffer
    env = dict(globals(), **locals())
    rows = []

    def row(name, ours, peer, err, note=""):
        group = {"mass": "mass", "bias": "bias", "forw": "fd", "morp": "morph", "bank": "bank"}[name[:4]]
        if not want(group):
            return
        # rounds of (ours, Pinocchio) back to back: the ratio of each round is taken on the same machine state
        t_o, t_p = [], []
        for _ in range(args.rounds):
            t_o.append(best_us(ours, env))
            t_p.append(best_us(peer, env))
        t_o, t_p = np.array(t_o), np.array(t_p)
        ratio = t_o / t_p
        rows.append((name, float(np.median(t_o)), float(np.median(t_p)), ratio, err, note))
        print(f"{name:44s} ours {np.median(t_o):9.2f} us   pin {np.median(t_p):9.2f} us   ratio {np.median(ratio):6.2f} "
              f"({ratio.min():.2f}-{ratio.max():.2f})   err {err:.1e}", flush=True)

    # warm up (JIT, caches)
    only = set(filter(None, args.only.split(",")))

    def want(group):
        return not only or group in only

    err_M = rel_err(robot.mass_matrix(q), oracle.M(g, q))
    err_b = rel_err(robot.bias_forces(g, q, v), oracle.nle(g, q, v)) if want("bias") else None
    err_fd = rel_err(robot.forward_dynamics(g, q, v, tau), oracle.aba(g, q, v, tau)) if want("fd") else None
    row("mass matrix (kernel)  vs crba", "kernels.mass_matrix(buf, q, mask, Mout)", "pin.crba(model, data, qp)",
        err_M, "preallocated output on both sides")
    row("mass matrix (Python API)  vs crba", "robot.mass_matrix(q)", "pin.crba(model, data, qp)", err_M,
        "ours: input checks + a new 24x24 array; pin: preallocated data")
    row("mass matrix (Python API, out=)  vs crba", "robot.mass_matrix(q, out=Mout)", "pin.crba(model, data, qp)",
        err_M, "ours: input checks + checks of a preallocated `out`; pin: preallocated data")
    row("bias C v + N (kernel)  vs nonLinearEffects", "kernels.bias_forces(buf, g, q, v, mask, True, out)",
        "pin.nonLinearEffects(model, data, qp, vp)", err_b)
    row("bias C v + N (Python API)  vs nonLinearEffects", "robot.bias_forces(g, q, v)",
        "pin.nonLinearEffects(model, data, qp, vp)", err_b, "ours: input checks + allocation included")
    row("bias C v + N (Python API, out=)  vs nonLinearEffects", "robot.bias_forces(g, q, v, out=out)",
        "pin.nonLinearEffects(model, data, qp, vp)", err_b, "ours: input checks + checks of a preallocated `out`")
    row("forward dynamics (kernel)  vs aba", "kernels.forward_dynamics(buf, g, q, v, tau, f0, mask, out, no_diag)",
        "pin.aba(model, data, qp, vp, tp)", err_fd)
    row("forward dynamics (Python API)  vs aba", "robot.forward_dynamics(g, q, v, tau)",
        "pin.aba(model, data, qp, vp, tp)", err_fd, "ours: input checks + allocation included")
    row("forward dynamics (Python API, out=)  vs aba", "robot.forward_dynamics(g, q, v, tau, out=out)",
        "pin.aba(model, data, qp, vp, tp)", err_fd, "ours: input checks + checks of a preallocated `out`")

    # morphology change: ours builds a reduced model (index maps; cache cleared so nothing is reused)
    m_d1 = Morphology.from_vector(robot, [3, 0, 3, 3, 0, 3])
    lock = [model.getJointId(n) for n in robot.joint_names if n.endswith("_LM") or n.endswith("_RM")]
    env.update(m_d1=m_d1, lock=lock, Morphology=Morphology)
    red = robot.with_morphology(m_d1)
    red_pin = pin.buildReducedModel(model, lock, qp)
    rdata = red_pin.createData()
    # correctness of the change: reduced model vs Pinocchio's reduced model at a state with θ̇_locked = 0
    names = [red_pin.names[i] for i in range(2, red_pin.njoints)]
    perm = [names.index(n) for n in red.joint_names]
    vperm = np.r_[np.arange(6), 6 + np.array(perm)]
    qr = q[red.joint_index_in_full]
    qpr = np.r_[qp[:7], np.zeros(len(perm))]
    qpr[7 + np.array(perm)] = qr
    Mr = pin.crba(red_pin, rdata, qpr)
    Mr = (np.triu(Mr) + np.triu(Mr, 1).T)[np.ix_(vperm, vperm)]
    # locking (Pinocchio) keeps the locked legs' mass; removal (ours) drops it: compare against a model
    # built without the legs instead, and report the lock-vs-removal difference in the note
    text = urdf_without_links(robot.urdf_path, robot.leg_names, [3, 0, 3, 3, 0, 3])
    o2 = PinOracle(text, red)
    err = rel_err(red.mass_matrix(qr), o2.M(g, qr))
    row("morphology change (legs RM, LM)  vs buildReducedModel",
        "robot._cache.clear(); robot.with_morphology(m_d1)",
        "pin.buildReducedModel(model, lock, qp).createData()", err,
        "ours: reduced model object from morphology vectors (cache cleared); pin: lock joints + createData")

    # bank of K hypotheses at one state vs K aba calls on prebuilt models of the damaged robots
    K = args.K if want("bank") else 0
    hyps = []
    while len(hyps) < K:
        c = [int(x) for x in rng.integers(0, 4, size=6)]
        if sum(c) > 0:
            hyps.append(Morphology.from_vector(robot, c))
    oracles, states = [], []
    for h in hyps:
        rr = robot.with_morphology(h)
        o = PinOracle(urdf_without_links(robot.urdf_path, robot.leg_names, h.links_per_leg), rr)
        qi = q[rr.joint_index_in_full]
        states.append((o.model, o.data, o.config(g, qi), o.vel(v[rr._vidx]), o.vel(tau[rr._vidx])))
        oracles.append((o, rr))
    masks = np.array([h.link_mask for h in hyps])
    bank_out = np.empty((K, 24))
    env.update(masks=masks, bank_out=bank_out, states=states)
    if K:
        kernels.forward_dynamics_bank(buf, R, q, v, tau, f0, masks, bank_out)
    err = max([0.0] + [rel_err(bank_out[k][rr._vidx], o.aba(g, q[rr.joint_index_in_full], v[rr._vidx], tau[rr._vidx]))
              for k, (o, rr) in enumerate(oracles)])
    row(f"bank of K={K} morphology hypotheses  vs {K} x aba",
        "kernels.forward_dynamics_bank(buf, R, q, v, tau, f0, masks, bank_out)",
        "[pin.aba(m_, d_, a_, b_, c_) for (m_, d_, a_, b_, c_) in states]", err,
        "pin: one prebuilt model per hypothesis (models built from URDFs without the links)")

    # the kernels get the buffer and argument types the package's API passes: their compiled code is the warm-up's
    # (the ``data`` tuple, a read-only or literal argument compiled each kernel again, ~15 s of CPU each)
    stages = {"leg kinematics, 6 legs (`leg_kinematics`)": _best_loop(lambda n: _loop_legkin(n, data_k, q))}
    if want("mass"):
        stages["mass matrix (kinematics + CRBA, dense 24x24 out)"] = _best_loop(
            lambda n: _loop_mass(n, buf, q, mask, Mout))
    if want("bias"):
        stages["bias forces (kinematics + RNEA)"] = _best_loop(lambda n: _loop_bias(n, buf, R, q, v, mask, True, out))
    if want("fd"):
        stages["forward dynamics (kinematics + CRBA + RNEA + 𝒥ᵀF + block-arrow Schur solve)"] = _best_loop(
            lambda n: _loop_fd(n, buf, R, q, v, tau, f0, mask, out))
    _noop4(buf, q, mask, Mout)
    layer = {
        "compiled call, no work, mass_matrix's 4 arguments (dispatch + unboxing)": best_us(
            "_noop4(buf, q, mask, Mout)", env),
        "`np.empty((24, 24))` (the result)": best_us("np.empty((24, 24))", env),
        "`np.asarray(q, dtype=float).shape == (18,)` (one argument's check)": best_us(
            "np.asarray(q, dtype=float).shape == (18,)", env),
        "`out` check: type, shape, dtype, `flags.carray`": best_us(
            "type(Mout) is np.ndarray and Mout.shape == (24, 24) and Mout.dtype is F64 and Mout.flags.carray",
            dict(env, F64=np.dtype(np.float64))),
        "kernel through the dispatcher (`kernels.mass_matrix(buf, q, mask, Mout)`)": best_us(
            "kernels.mass_matrix(buf, q, mask, Mout)", env),
        "public API (`robot.mass_matrix(q)`)": best_us("robot.mass_matrix(q)", env),
    }
    if args.smoke:
        print("smoke ok:", ", ".join("%s %.2f us" % (k, t) for k, t in stages.items()))
        return 0
    title = "# Dynamics core vs Pinocchio (benchmarks/bench_model.py%s)" % (" --tag " + args.tag if args.tag else "")
    lines = [title, "", *describe("pinocchio"), *(["- " + args.note.removeprefix("- ")] if args.note else []), "",
             f"Single thread, same process, same states, Pinocchio called as its users call it "
             f"(`pin.aba(model, data, q, v, tau)` on a preallocated `data`). {args.rounds} interleaved rounds per row "
             "(ours, then Pinocchio); each side's figure in a round is the best of 5 timeit repeats of CPU time of "
             "the thread (µs per call). `ratio` = ours / Pinocchio: median of the rounds' ratios (range)."
             + (f" Rows of this run: {args.only} only." if only else ""),
             "", "| what | ours µs | Pinocchio µs | ratio (range) | max rel. error vs Pinocchio | note |",
             "|---|---:|---:|---:|---:|---|"]
    for name, a, b, ratio, e, note in rows:
        lines.append(f"| {name} | {a:.2f} | {b:.2f} | {np.median(ratio):.2f} ({ratio.min():.2f}-{ratio.max():.2f}) "
                     f"| {e:.1e} | {note} |")
    lines += ["", "Jetson Nano: assume 4-6x these µs per core (Cortex-A57 at 1.43 GHz, against this machine's AMD EPYC "
              "core); the ratios are assumed to carry over (both sides are single-threaded scalar code), not "
              "measured there.", "",
              PROFILE_NOTE, "", "| stage (compiled loop over the kernel, healthy JetHexa, no Python in between) | best µs |", "|---|---:|"]
    lines += ["| %s | %.2f |" % (k, t) for k, t in stages.items()]
    lines += ["", "| API layer of the mass matrix (healthy JetHexa, timeit, best µs) | µs |", "|---|---:|"]
    lines += ["| %s | %.3f |" % (k, t) for k, t in layer.items()]
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
