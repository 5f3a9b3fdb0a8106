"""Figures like the paper's Figs. 3-4 / 6-7: body ZYX Euler angles and CoM position against time."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _mark_events(ax, events):
    for t, kind, what in events:
        if kind == "morphology":
            ax.axvline(t, color="tab:red", ls="--", lw=1)


def plot_orientation(traj, path, title=""):
    """Roll, pitch, yaw (deg, ZYX Euler angles of base_link in the world) against time (s) -> PNG."""
    e = np.rad2deg(traj.euler)
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(7, 6))
    for ax, k, name in zip(axes, range(3), ("roll (about x)", "pitch (about y)", "yaw (about z)")):
        ax.plot(traj.t, e[:, k], lw=1.2)
        ax.set_ylabel(name + " [deg]")
        ax.grid(alpha=0.3)
        _mark_events(ax, traj.events)
    axes[-1].set_xlabel("time [s]")
    fig.suptitle(title or "main body orientation (ZYX Euler angles)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_position(traj, path, title=""):
    """x, y, z (m, world frame) of the main body's CoM (base_link origin) against time (s) -> PNG."""
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(7, 6))
    for ax, k, name in zip(axes, range(3), ("x (forward)", "y (left)", "z (up)")):
        ax.plot(traj.t, traj.pos[:, k], lw=1.2)
        ax.set_ylabel(name + " [m]")
        ax.grid(alpha=0.3)
        _mark_events(ax, traj.events)
    axes[-1].set_xlabel("time [s]")
    fig.suptitle(title or "main body CoM position")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
