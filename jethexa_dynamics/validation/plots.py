"""PNG plots of a validation run (matplotlib object API + Agg canvas: no display, no pyplot global state)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from jethexa_dynamics.predictors.errors import orientation_errors, quat_to_rpy

from .metrics import AXES

_COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown"]


def _mark_segments(ax, segs, label=False):
    for i, s in enumerate(segs[1:]):
        ax.axvline(s.t_start, color="tab:red", ls="--", lw=1.0)
        if label:   # staggered so that changes close in time stay readable
            ax.annotate("morphology " + ("?" if s.links is None else " ".join(map(str, s.links))),
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
    paths = []

    # predicted vs measured orientation
    fig = Figure(figsize=(10, 7))
    axs = fig.subplots(3, 1, sharex=True)
    meas = np.degrees(quat_to_rpy(results[0].q_meas))
    for i, ax in enumerate(axs):
        ax.plot(results[0].t_orient, meas[:, i], color="k", lw=1.2, label="measured (IMU)")
        for j, r in enumerate(results):
            ax.plot(r.t_orient, np.degrees(quat_to_rpy(r.q_pred))[:, i], color=_COLORS[j % 5], lw=1.0,
                    label="predicted: " + r.predictor)
        ax.set_ylabel(AXES[i] + " [deg]")
        _mark_segments(ax, segs, label=(i == 0))
    axs[0].legend(loc="lower left", fontsize=8)
    axs[0].set_title((title + ": " if title else "") + "body orientation (red dashes: morphology changes)")
    axs[-1].set_xlabel("time from bag start [s]")
    paths.append(_save(fig, out_dir / "orientation.png"))

    # predicted vs measured position
    fig = Figure(figsize=(10, 7))
    axs = fig.subplots(3, 1, sharex=True)
    for i, ax in enumerate(axs):
        gt = next((r for r in results if r.t_pos is not None and len(r.t_pos)), None)
        if gt is not None:
            ax.plot(gt.t_pos, gt.p_meas[:, i], color="k", lw=1.2, label="ground truth")
        for j, r in enumerate(results):
            ax.plot(r.t_orient, r.p_pred_orient[:, i], color=_COLORS[j % 5], lw=1.0, label="predicted: " + r.predictor)
        ax.set_ylabel("xyz"[i] + " [m]")
        _mark_segments(ax, segs, label=(i == 0))
    axs[0].legend(loc="best", fontsize=8)
    axs[0].set_title((title + ": " if title else "") + "body position in the world frame"
                     + ("" if gt is not None else " (no ground truth in the bag)"))
    axs[-1].set_xlabel("time from bag start [s]")
    paths.append(_save(fig, out_dir / "position.png"))

    # errors against time
    has_pos = any(r.t_pos is not None and len(r.t_pos) for r in results)
    fig = Figure(figsize=(10, 8 if has_pos else 6.5))
    axs = fig.subplots(4 if has_pos else 3, 1, sharex=True)
    for j, r in enumerate(results):
        e = np.degrees(orientation_errors(r.q_pred, r.q_meas))
        for i in range(3):
            axs[i].plot(r.t_orient, e[:, i], color=_COLORS[j % 5], lw=1.0, label=r.predictor)
        if has_pos and r.t_pos is not None and len(r.t_pos):
            axs[3].plot(r.t_pos, np.linalg.norm(r.p_pred - r.p_meas, axis=1), color=_COLORS[j % 5], lw=1.0,
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
    paths.append(_save(fig, out_dir / "errors.png"))
    return paths
