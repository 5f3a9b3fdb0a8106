"""Numba kernels over one cycle of a re-planned gait (pure core; ``replan.GaitPlan`` and ``replan.GaitPlanner``
call them).

A plan's crawl has one slot of length 1/n of the cycle per walking leg; in the first ``shift_fraction`` of
slot k all feet are down and the body moves (cosine blend) to the shift ``shifts[k]`` (m, base_link xy),
then slot k's leg swings while the body holds it. Units: m in ``base_link``, gait time t in s, phase in
cycles, joint angles in rad, joint rates in rad/s. ``prm``, ``offsets``, ``neutral``, ``stride`` are a
``gait.Gait``'s arrays (see ``gait.gait_targets``).

* ``_body_shift``: the body shift at a phase; ``_plan_feet``: the plan's foot targets (gait feet minus the
  shift).
* ``_cycle_margins``: the static margin at evenly spaced phases (leg IK, the model's CoM, hull of the stance
  feet); ``_peak_rate``: the fastest joint target of the cycle. Both release the GIL (the gait controller
  plans in a worker thread).
* ``_swing_polygons``: the support polygons seen during each slot's swing (the LP's input, ``support``).
"""
from __future__ import annotations

import math

import numpy as np

from jethexa_dynamics.model import kernels
from jethexa_dynamics.model.com import com_kernel
from jethexa_dynamics.model._numba import njit

from .gait import gait_targets, in_swing
from .ik import IK_OK, leg_ik
from .support import _margin


@njit(cache=True)
def _body_shift(shifts, shift_fraction, phase, out):
    """Body shift b (m, xy) at cycle phase ``phase`` into out (2,): slot k = floor(frac(phase) n) holds
    shifts[k] after a cosine move from shifts[k-1] over the first ``shift_fraction`` of the slot."""
    n = shifts.shape[0]
    out[0] = 0.0
    out[1] = 0.0
    if n == 0:
        return
    s = (phase - math.floor(phase)) * n
    k = min(int(s), n - 1)
    u = (s - k) / shift_fraction if shift_fraction > 0.0 else 1.0
    if u >= 1.0:
        out[0] = shifts[k, 0]
        out[1] = shifts[k, 1]
        return
    w = 0.5 - 0.5 * math.cos(math.pi * u)
    km = k - 1 if k > 0 else n - 1
    out[0] = (1.0 - w) * shifts[km, 0] + w * shifts[k, 0]
    out[1] = (1.0 - w) * shifts[km, 1] + w * shifts[k, 1]


@njit(cache=True)
def _plan_feet(prm, offsets, neutral, stride, shifts, shift_fraction, t, b, out):
    """Foot targets (n_walking, 3) m, base_link, of a plan at gait time t (s): gait feet minus the body shift."""
    gait_targets(prm, offsets, neutral, stride, t, out)
    _body_shift(shifts, shift_fraction, t / prm[0], b)
    for j in range(out.shape[0]):
        out[j, 0] -= b[0]
        out[j, 1] -= b[1]


@njit(cache=True, nogil=True)
def _cycle_margins(prm, offsets, neutral, stride, shifts, shift_fraction, geom, limits, idx, theta, mask, data,
                   n, out):
    """Static margin (m) at the n phases (k + 1/2)/n of one cycle into out (n,): feet of the plan, leg IK
    into the full joint vector ``theta`` (folded legs preset), CoM of the existing links, hull of the stance
    feet; -inf where a foot is unreachable. Releases the GIL (the gait controller plans in a thread)."""
    nw = neutral.shape[0]
    nmax = data[kernels.D_XI].shape[1]
    R, p, xp = np.empty((nmax, 3, 3)), np.empty((nmax, 3)), np.empty((nmax, 6))
    c, Ic, com = np.empty((nmax, 3)), np.empty((nmax, 3, 3)), np.empty(3)
    feet, b, down = np.empty((nw, 3)), np.empty(2), np.empty((nw, 2))
    T = prm[0]
    for k in range(n):
        t = T * (k + 0.5) / n
        _plan_feet(prm, offsets, neutral, stride, shifts, shift_fraction, t, b, feet)
        ok = True
        for j in range(nw):
            i = idx[j]
            if leg_ik(geom[i], limits[i], feet[j], theta[3 * i:3 * i + 3]) != IK_OK:
                ok = False
                break
        if not ok:
            out[k] = -np.inf
            continue
        com_kernel(data, theta, mask, R, p, xp, c, Ic, com)
        m = 0
        for j in range(nw):
            if not in_swing(prm, offsets, t, j):
                down[m, 0] = feet[j, 0]
                down[m, 1] = feet[j, 1]
                m += 1
        out[k] = _margin(down[:m].copy(), com[0], com[1])


@njit(cache=True, nogil=True)
def _peak_rate(prm, offsets, neutral, stride, shifts, shift_fraction, geom, limits, idx, samples):
    """Largest |d theta/dt| (rad/s) of the plan's joint targets: finite differences of the leg IK at
    ``samples`` + 1 equally spaced times over one cycle; inf if a target is unreachable."""
    nw = neutral.shape[0]
    feet, b = np.empty((nw, 3)), np.empty(2)
    prev, cur = np.empty(3 * nw), np.empty(3 * nw)
    dt = prm[0] / samples
    peak = 0.0
    for k in range(samples + 1):
        _plan_feet(prm, offsets, neutral, stride, shifts, shift_fraction, k * dt, b, feet)
        for j in range(nw):
            if leg_ik(geom[idx[j]], limits[idx[j]], feet[j], cur[3 * j:3 * j + 3]) != IK_OK:
                return np.inf
        if k > 0:
            for q in range(3 * nw):
                r = abs(cur[q] - prev[q]) / dt
                if r > peak:
                    peak = r
        prev[:] = cur
    return peak


@njit(cache=True)
def _swing_polygons(prm, offsets, neutral, strides, slots, shift_fraction, n_u):
    """Support polygons (n_slots, n_u * n_strides, n - 1, 2) seen while slot k's leg ``slots[k]`` swings: the
    other feet at ``n_u`` times evenly over the swing window of slot k, for each stride (n_strides, n, 2)."""
    n = neutral.shape[0]
    ns = slots.shape[0]
    out = np.empty((ns, n_u * strides.shape[0], n - 1, 2))
    feet = np.empty((n, 3))
    T = prm[0]
    for k in range(ns):
        q = 0
        for a in range(n_u):
            u = a / (n_u - 1.0)
            t = T * (k + shift_fraction + u * (1.0 - shift_fraction)) / ns
            for s in range(strides.shape[0]):
                gait_targets(prm, offsets, neutral, strides[s], t, feet)
                m = 0
                for j in range(n):
                    if j != slots[k]:
                        out[k, q, m, 0] = feet[j, 0]
                        out[k, q, m, 1] = feet[j, 1]
                        m += 1
                q += 1
    return out
