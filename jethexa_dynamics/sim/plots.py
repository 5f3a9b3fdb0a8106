"""Figures like the paper's Figs. 3-4 / 6-7: body ZYX Euler angles and CoM position against time."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _mark_events(ax, events):
    for t, kind, what in events:
        if kind == "morphology":
            ax.axvline(t, color="tab:red", ls="--", lw=1)


def _three_panels(traj, series, labels, unit, path, title):
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(7, 6))
    for ax, y, name in zip(axes, series.T, labels):
        ax.plot(traj.t, y, lw=1.2)
        ax.set_ylabel("%s [%s]" % (name, unit))
        ax.grid(alpha=0.3)
        _mark_events(ax, traj.events)
    axes[-1].set_xlabel("time [s]")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_orientation(traj, path, title=""):
    """Roll, pitch, yaw (deg, ZYX Euler angles of base_link in the world) against time (s) -> PNG."""
    _three_panels(traj, np.rad2deg(traj.euler), ("roll (about x)", "pitch (about y)", "yaw (about z)"), "deg",
                  path, title or "main body orientation (ZYX Euler angles)")


def plot_position(traj, path, title=""):
    """x, y, z (m, world frame) of the main body's CoM (base_link origin) against time (s) -> PNG."""
    _three_panels(traj, traj.pos, ("x (forward)", "y (left)", "z (up)"), "m", path,
                  title or "main body CoM position")


def plot_recovery(runs, path, title=""):
    """Recovery on/off side by side: x-y path (m), yaw (deg), static margin (m) against time (s) -> PNG.
    ``runs``: {label: RecoveryRun}."""
    fig, axes = plt.subplots(3, 1, figsize=(7, 8))
    for label, r in runs.items():
        axes[0].plot(r.pos[:, 0], r.pos[:, 1], lw=1.2, label=label)
        axes[1].plot(r.t, np.rad2deg(r.rpy[:, 2]), lw=1.2, label=label)
        axes[2].plot(r.t, np.clip(r.margin, -0.1, None), lw=1.0, label=label)
        if r.damage_at is not None:
            for ax in axes[1:]:
                ax.axvline(r.damage_at, color="tab:red", ls="--", lw=1)
    axes[0].set_xlabel("x [m]")
    axes[0].set_ylabel("y [m]")
    axes[0].axis("equal")
    axes[1].set_ylabel("yaw [deg]")
    axes[2].set_ylabel("static margin [m]")
    axes[2].axhline(0.0, color="k", lw=0.8)
    axes[2].set_xlabel("time [s]")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title or "damage recovery")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
