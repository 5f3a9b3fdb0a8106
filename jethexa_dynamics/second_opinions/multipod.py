"""Foot kinematics of the many-legged robots of paper 001, as inputs for the slipping model.

- ``undulation``: a multipod of N/2 contralateral segment pairs (each a yaw and a roll DoF), driven by the
  paper's undulation gait (0.3 Hz, phase offset 1.35 pi between segments). Dimensions are not in the paper
  (they are in Zhao's thesis), so segment spacing, reach and amplitudes here are stand-ins.
- ``disk``: the paper's timing model: a disk with N legs equally spaced on the rim, each with two rotations
  (yaw, elevation) and a vertical slide, limited so the workspaces do not overlap; random poses and rates.

Positions [m] and velocities [m/s] are in the body frame (x forward, y left, z up), origin at the COM.
"""
import numpy as np


def undulation(n_legs, t, frequency=0.3, phase_offset=1.35 * np.pi, spacing=0.1, reach=0.12, height=0.06,
               yaw_amplitude=0.35, lift=0.015):
    """Feet (T, N, 3) and their velocities (T, N, 3) at times t (T,) [s]; N even, legs ordered pair by pair
    (left, right), front pair first. Yaw swings each pair's feet fore-aft; the roll presses one side's foot
    down while lifting the other, a quarter cycle ahead, so the stance side is the one sweeping back."""
    n = int(n_legs)
    if n < 2 or n % 2:
        raise ValueError(f"n_legs: a multipod has an even number of legs >= 2, got {n_legs!r}")
    t = np.atleast_1d(np.asarray(t, float))
    pairs = n // 2
    x0 = spacing * ((pairs - 1) / 2.0 - np.arange(pairs))              # centred on the COM
    phase = 2 * np.pi * frequency * t[:, None] - phase_offset * np.arange(pairs)
    psi, dpsi = yaw_amplitude * np.sin(phase), yaw_amplitude * 2 * np.pi * frequency * np.cos(phase)
    rho, drho = np.cos(phase), -2 * np.pi * frequency * np.sin(phase)
    side = np.array([1.0, -1.0])                                       # left, right
    s = side[None, None, :]
    feet = np.empty((t.size, pairs, 2, 3))
    vel = np.empty_like(feet)
    feet[..., 0] = x0[None, :, None] - s * reach * np.sin(psi)[..., None]
    feet[..., 1] = s * reach * np.cos(psi)[..., None]
    feet[..., 2] = -height - s * lift * rho[..., None]
    vel[..., 0] = -s * reach * (np.cos(psi) * dpsi)[..., None]
    vel[..., 1] = -s * reach * (np.sin(psi) * dpsi)[..., None]
    vel[..., 2] = -s * lift * drho[..., None]
    return feet.reshape(t.size, n, 3), vel.reshape(t.size, n, 3)


def disk(n_legs, n_samples, rng, radius=0.2, reach=(0.05, 0.12), height=0.08, slide=0.01, speed=0.1):
    """Random feet (S, N, 3) and velocities (S, N, 3) of the disk robot with N >= 1 legs (paper §2.3)."""
    n = int(n_legs)
    if n < 1:
        raise ValueError(f"n_legs: need at least 1 leg, got {n_legs!r}")
    phi = 2 * np.pi * np.arange(n) / n
    yaw = rng.uniform(-0.8, 0.8, (n_samples, n)) * min(np.pi / n, 0.6)    # no overlap between neighbours
    r = rng.uniform(reach[0], reach[1], (n_samples, n))
    ang = phi + yaw
    feet = np.stack([radius * np.cos(phi) + r * np.cos(ang), radius * np.sin(phi) + r * np.sin(ang),
                     -height + rng.uniform(-slide, slide, (n_samples, n))], axis=-1)
    return feet, speed * rng.standard_normal((n_samples, n, 3))
