"""PNG plots of a validation run (matplotlib object API + Agg canvas: no display, no pyplot global state)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from jethexa_dynamics.predictors.error_metric import orientation_errors, quat_to_rpy

from .metrics import AXES
from .report import morphology_text

#: one style per predictor: colour, line style AND marker differ, so that a line drawn over another (two
#: predictors that agree) still shows both -- and the plots read in greyscale
_STYLES = [("tab:blue", "-", "o"), ("tab:orange", "--", "s"), ("tab:green", "-.", "^"), ("tab:purple", ":", "D"),
           ("tab:brown", (0, (5, 1, 1, 1, 1, 1)), "v")]


def predictor_style(j: int, n_points: int = 0) -> dict:
    """Line keywords of the ``j``-th predictor (markers every ~1/12 of the series, offset per predictor so they
    do not sit on each other)."""
    color, ls, marker = _STYLES[j % len(_STYLES)]
    every = max(1, n_points // 12)
    return dict(color=color, ls=ls, marker=marker, markersize=4, markevery=(j * every // len(_STYLES), every), lw=1.0)


def _mark_segments(ax, segs, label=False):
    for i, s in enumerate(segs[1:]):
        ax.axvline(s.t_start, color="tab:red", ls="--", lw=1.0)
        if label:   # staggered so that changes close in time stay readable
            ax.annotate("morphology " + morphology_text(s.links),
                        xy=(s.t_start, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -3 - 9 * (i % 3)),
                        textcoords="offset points", va="top", fontsize=7, color="tab:red")


def _save(fig, path):
    FigureCanvasAgg(fig)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return Path(path)


def plot_all(results, segs, out_dir, title="") -> list:
    """Write orientation.png, position.png, errors.png into ``out_dir``; returns their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [_save(fig, out_dir / (name + ".png")) for name, fig in figures(results, segs, title).items()]


def figures(results, segs, title="") -> dict:
    """The figures of :func:`plot_all` (name -> matplotlib ``Figure``), not yet saved."""
    figs = {}

    # predicted vs measured orientation
    fig = Figure(figsize=(10, 7))
    axs = fig.subplots(3, 1, sharex=True)
    meas = np.degrees(quat_to_rpy(results[0].q_meas))
    for i, ax in enumerate(axs):
        ax.plot(results[0].t_orient, meas[:, i], color="k", lw=1.2, label="measured (IMU)")
        for j, r in enumerate(results):
            ax.plot(r.t_orient, np.degrees(quat_to_rpy(r.q_pred))[:, i], **predictor_style(j, len(r.t_orient)),
                    label="predicted: " + r.predictor)
        ax.set_ylabel(AXES[i] + " [deg]")
        _mark_segments(ax, segs, label=(i == 0))
    axs[0].legend(loc="lower left", fontsize=8)
    axs[0].set_title((title + ": " if title else "") + "body orientation (red dashes: morphology changes)")
    axs[-1].set_xlabel("time from bag start [s]")
    figs["orientation"] = fig

    # predicted vs measured position
    fig = Figure(figsize=(10, 7))
    axs = fig.subplots(3, 1, sharex=True)
    for i, ax in enumerate(axs):
        gt = next((r for r in results if r.t_pos is not None and len(r.t_pos)), None)
        if gt is not None:
            ax.plot(gt.t_pos, gt.p_meas[:, i], color="k", lw=1.2, label="ground truth")
        for j, r in enumerate(results):
            ax.plot(r.t_orient, r.p_pred_orient[:, i], **predictor_style(j, len(r.t_orient)),
                    label="predicted: " + r.predictor)
        ax.set_ylabel("xyz"[i] + " [m]")
        _mark_segments(ax, segs, label=(i == 0))
    axs[0].legend(loc="best", fontsize=8)
    axs[0].set_title((title + ": " if title else "") + "body position in the world frame"
                     + ("" if gt is not None else " (no ground truth in the bag)"))
    axs[-1].set_xlabel("time from bag start [s]")
    figs["position"] = fig

    # errors against time
    has_pos = any(r.t_pos is not None and len(r.t_pos) for r in results)
    fig = Figure(figsize=(10, 8 if has_pos else 6.5))
    axs = fig.subplots(4 if has_pos else 3, 1, sharex=True)
    for j, r in enumerate(results):
        e = np.degrees(orientation_errors(r.q_pred, r.q_meas))
        for i in range(3):
            axs[i].plot(r.t_orient, e[:, i], **predictor_style(j, len(r.t_orient)), label=r.predictor)
        if has_pos and r.t_pos is not None and len(r.t_pos):
            axs[3].plot(r.t_pos, np.linalg.norm(r.p_pred - r.p_meas, axis=1), **predictor_style(j, len(r.t_pos)),
                        label=r.predictor)
    for i in range(3):
        axs[i].set_ylabel(AXES[i] + " error [deg]")
    if has_pos:
        axs[3].set_ylabel("position error [m]")
    for i, ax in enumerate(axs):
        ax.axhline(0.0, color="0.6", lw=0.6)
        for a in results[0].anchors:
            ax.axvline(a, color="0.6", ls=":", lw=0.8, zorder=0)
        _mark_segments(ax, segs, label=(i == 0))
    axs[0].legend(loc="best", fontsize=8)
    axs[0].set_title((title + ": " if title else "") + "prediction error (grey: re-anchoring, red: morphology)")
    axs[-1].set_xlabel("time from bag start [s]")
    figs["errors"] = fig
    return figs
