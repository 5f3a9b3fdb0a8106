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
