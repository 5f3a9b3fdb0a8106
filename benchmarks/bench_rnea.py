"""Recursive Newton-Euler (paper 004) on the JetHexa: cost per call next to Pinocchio and the project's
Boltzmann-Hamel model, with the max relative difference to Pinocchio printed next to every row.

Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_rnea.py [--quick]
Writes its section of benchmarks/results/second_opinions.md (shared with bench_slip.py).
"""
import argparse
import os
import sys
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "test"))

from _machine import describe  # noqa: E402
from bench_slip import write_section  # noqa: E402
from jethexa_dynamics.model import LeggedRobot  # noqa: E402
from jethexa_dynamics.second_opinions.rnea import NewtonEulerRobot  # noqa: E402


def per_call_us(fn, repeat):
    n = max(1, int(0.05 / max(min(timeit.repeat(fn, number=1, repeat=3)), 1e-7)))
    times = np.array(timeit.repeat(fn, number=n, repeat=repeat)) / n * 1e6
    return float(np.median(times)), float(times.min())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "second_opinions.md"))
    args = ap.parse_args(argv)
    import pinocchio as pin
    from pin_oracle import PinOracle, random_state, rel_err

    bh = LeggedRobot.jethexa()
    ne = NewtonEulerRobot.from_urdf(bh.urdf_path)
    with open(bh.urdf_path) as f:
        orc = PinOracle(f.read(), bh)
    rng = np.random.default_rng(1)
    g, q, v, tau = random_state(rng, bh)
    a = rng.normal(size=bh.nv)
    fw = rng.normal(size=(6, 3))
    qp, vp, ap_, tp = orc.config(g, q), orc.vel(v), orc.vel(a), orc.vel(tau)
    m, d = orc.model, orc.data
    repeat = 5 if args.quick else 11
    rows = [
        ("inverse dynamics", lambda: ne.inverse_dynamics(g, q, v, a), lambda: pin.rnea(m, d, qp, vp, ap_),
         lambda: bh.mass_matrix(q) @ a + bh.bias_forces(g, q, v), "pin.rnea; BH: M a + bias",
         lambda: rel_err(ne.inverse_dynamics(g, q, v, a), orc.back(pin.rnea(m, d, qp, vp, ap_)))),
        ("mass matrix", lambda: ne.mass_matrix(q), lambda: pin.crba(m, d, qp), lambda: bh.mass_matrix(q),
         "pin.crba", lambda: rel_err(ne.mass_matrix(q), orc.M(g, q))),
        ("bias forces C v + G", lambda: ne.bias_forces(g, q, v), lambda: pin.nonLinearEffects(m, d, qp, vp),
         lambda: bh.bias_forces(g, q, v), "pin.nonLinearEffects",
         lambda: rel_err(ne.bias_forces(g, q, v), orc.nle(g, q, v))),
        ("forward dynamics", lambda: ne.forward_dynamics(g, q, v, tau), lambda: pin.aba(m, d, qp, vp, tp),
         lambda: bh.forward_dynamics(g, q, v, tau), "pin.aba",
         lambda: rel_err(ne.forward_dynamics(g, q, v, tau), orc.aba(g, q, v, tau))),
        ("forward dynamics, 6 foot forces", lambda: ne.forward_dynamics(g, q, v, tau, fw), None,
         lambda: bh.forward_dynamics(g, q, v, tau, fw), "-",
         lambda: rel_err(ne.forward_dynamics(g, q, v, tau, fw), bh.forward_dynamics(g, q, v, tau, fw))),
    ]
    lines = [
        "## Recursive Newton-Euler (paper 004): `benchmarks/bench_rnea.py`",
        "",
        f"- command: `OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} .venv/bin/python "
        f"benchmarks/bench_rnea.py{' --quick' if args.quick else ''}`",
        *describe("pinocchio"),
        "- JetHexa (nv = 24), one random state, median (min) us per call over "
        f"{repeat} repeats, all in the same process; error = max relative difference of the RNEA result "
        "to the Pinocchio call of the row (last row: to the Boltzmann-Hamel model).",
        "",
        "| quantity | RNEA (numpy) us | Pinocchio us | Boltzmann-Hamel (numba) us | Pinocchio call | RNEA rel. error |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for name, f_ne, f_pin, f_bh, pin_name, err in rows:
        t_ne = per_call_us(f_ne, repeat)
        t_pin = per_call_us(f_pin, repeat) if f_pin else None
        t_bh = per_call_us(f_bh, repeat)
        e = err()
        pin_txt = f"{t_pin[0]:.1f} ({t_pin[1]:.1f})" if t_pin else "-"
        print(f"{name:32s} RNEA {t_ne[0]:9.1f} us  pin {pin_txt:>16s}  BH {t_bh[0]:8.1f} us  err {e:.1e}",
              flush=True)
        lines.append(f"| {name} | {t_ne[0]:.0f} ({t_ne[1]:.0f}) | {pin_txt} | {t_bh[0]:.1f} ({t_bh[1]:.1f}) | "
                     f"{pin_name} | {e:.1e} |")
    lines += ["", "The RNEA is the independent cross-check, not the fast path: M takes nv = 24 inverse-dynamics",
              "columns (Walker-Orin, one batched pass), forward dynamics one batch of nv + 1 columns and a solve."]
    write_section(args.out, "bench_rnea", lines)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
