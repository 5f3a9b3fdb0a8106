"""Prediction-error metrics: orientation (roll/pitch/yaw), position, drift per metre walked, per segment.

Definitions (also in docs/validation.md):

- Orientation error at a sample = predicted minus measured roll, pitch, yaw (ZYX Euler angles of the
  body orientation in the world frame), each wrapped to [-180, 180) deg (``predictors.error_metric``, the same
  definition the predictor node publishes live). RMSE and maximum |error| per axis.
- Position error = |p_predicted - p_ground_truth| (3-D norm, m): RMSE, maximum, and value at the last sample;
  also the RMSE and the mean (bias) of each world axis (x, y, z: z is the body height error).
- Drift per metre walked = sum over re-anchoring intervals k of |e_xy(end_k) - e_xy(start_k)| divided by
  the ground-truth horizontal path length walked in those intervals (m of error per m walked). The error
  *growth* inside an interval is used, so an offset carried in from an earlier interval is not counted twice.
- Segments = the pieces of the window between morphology changes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from jethexa_dynamics.predictors.error_metric import orientation_errors, quat_to_rpy  # noqa: F401 (re-exported)

AXES = ("roll", "pitch", "yaw")


def _rmse(x) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.sqrt(np.mean(x * x))) if x.size else float("nan")


def _maxabs(x) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.max(np.abs(x))) if x.size else float("nan")


@dataclass
class Segment:
    """Part of the window with one morphology (``links`` per leg; None = unknown, assumed intact)."""

    index: int
    t_start: float
    t_end: float
    links: Optional[Sequence[int]]


def segments(window, morph_t=None, morph_links=None) -> List[Segment]:
    """Split ``window`` at every morphology *change* (repeated identical messages do not split)."""
    w0, w1 = float(window[0]), float(window[1])
    if morph_t is None or len(morph_t) == 0:
        return [Segment(0, w0, w1, None)]
    t = np.asarray(morph_t, dtype=float)
    links = np.asarray(morph_links)
    cuts, cur = [], None
    for k in range(len(t)):
        row = tuple(int(v) for v in links[k])
        if row != cur:
            cuts.append((max(t[k], w0), row))
            cur = row
    out = []
    for i, (ts, row) in enumerate(cuts):
        te = cuts[i + 1][0] if i + 1 < len(cuts) else w1
        if te > ts or (not out and i + 1 == len(cuts)):
            out.append(Segment(len(out), float(ts), float(min(te, w1)), list(row)))
    if out and out[0].t_start > w0:          # window starts before the first morphology message
        out[0].t_start = w0
    return out


def path_length_xy(pos) -> float:
    p = np.asarray(pos, dtype=float)
    if len(p) < 2:
        return 0.0
    return float(np.sum(np.linalg.norm(np.diff(p[:, :2], axis=0), axis=1)))


def drift_per_metre(t, p_pred, p_gt, anchors, t_start, t_end, min_walk=0.01):
    """(drift [m/m] or None, distance walked [m]) over the samples with ``t_start <= t < t_end``."""
    t = np.asarray(t, dtype=float)
    edges = np.concatenate([[t_start], [a for a in anchors if t_start < a < t_end], [t_end]])
    grow, walked = 0.0, 0.0
    e = np.asarray(p_pred, dtype=float)[:, :2] - np.asarray(p_gt, dtype=float)[:, :2]
    for a, b in zip(edges[:-1], edges[1:]):
        m = (t >= a) & (t < b) if b < t_end else (t >= a) & (t <= b)
        idx = np.flatnonzero(m)
        if idx.size < 2:
            continue
        grow += float(np.linalg.norm(e[idx[-1]] - e[idx[0]]))
        walked += path_length_xy(np.asarray(p_gt)[idx])
    return (grow / walked if walked >= min_walk else None), walked


def _window_mask(t, a, b, last):
    t = np.asarray(t, dtype=float)
    return (t >= a) & ((t <= b) if last else (t < b))


def evaluate_part(res, t_start, t_end, last=True) -> dict:
    """Metrics of a :class:`~jethexa_dynamics.validation.replay.ReplayResult` over ``[t_start, t_end)``."""
    mo = _window_mask(res.t_orient, t_start, t_end, last)
    err = orientation_errors(res.q_pred[mo], res.q_meas[mo])
    out = {
        "t_start": float(t_start),
        "t_end": float(t_end),
        "orientation_samples": int(mo.sum()),
        "orientation": {ax: {"rmse_deg": float(np.degrees(_rmse(err[:, i]))),
                             "max_deg": float(np.degrees(_maxabs(err[:, i])))}
                        for i, ax in enumerate(AXES)},
        "position": None,
        "horizon_s": float(res.horizon),
        "max_time_since_anchor_s": _max_since_anchor(res.t_orient[mo], res.anchors),
    }
    if res.t_pos is not None and len(res.t_pos):
        mp = _window_mask(res.t_pos, t_start, t_end, last)
        if mp.sum() >= 1:
            e = res.p_pred[mp] - res.p_meas[mp]
            d = np.linalg.norm(e, axis=1)
            drift, walked = drift_per_metre(res.t_pos[mp], res.p_pred[mp], res.p_meas[mp], res.anchors,
                                            t_start, t_end)
            out["position"] = {"samples": int(mp.sum()), "rmse_m": _rmse(d), "max_m": _maxabs(d),
                               "final_m": float(d[-1]), "rmse_xyz_m": [_rmse(e[:, i]) for i in range(3)],
                               "mean_xyz_m": [float(np.mean(e[:, i])) for i in range(3)],
                               "distance_walked_m": walked,
                               "drift_per_metre": drift}
    return out


def _max_since_anchor(t, anchors) -> Optional[float]:
    t = np.asarray(t, dtype=float)
    a = np.sort(np.asarray(anchors, dtype=float))
    if t.size == 0 or a.size == 0:
        return None
    k = np.searchsorted(a, t, side="right") - 1
    ok = k >= 0
    if not ok.any():
        return None
    return float(np.max(t[ok] - a[k[ok]]))


def evaluate(res, segs: List[Segment]) -> dict:
    """``{"overall": {...}, "segments": [...]}`` for a replay result and its morphology segments."""
    w0, w1 = segs[0].t_start, segs[-1].t_end
    overall = evaluate_part(res, w0, w1, last=True)
    parts = []
    for s in segs:
        m = evaluate_part(res, s.t_start, s.t_end, last=(s.index == segs[-1].index))
        m["index"] = s.index
        m["morphology"] = None if s.links is None else list(s.links)
        parts.append(m)
    return {"overall": overall, "segments": parts}
