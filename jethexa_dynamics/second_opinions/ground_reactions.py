"""Ground-reaction resolution of paper 004 (§4, extraction §2.4-2.5) with the rank check it lacks.

The base is unactuated, so the ground forces on the stance feet must supply the wrench the legs-in-air
inverse dynamics asks of the base (the paper's body equations (3)-(4))::

    sum_k f_k = F_req,   sum_k p_k x f_k = N_req        (world-aligned axes, moments about the base origin)

Only 6 equations, so the paper ties the unknowns together ("reduced set of 6"):

- 4 legs: 4 independent F_z, one F_x common to all, one F_y common to all;
- 3 legs: 3 F_z, one common F_x, and F_y split by side: the side with one stance leg gets its own F_y, the
  two legs of the other side share one;
- 2 legs: all 6 components.

As written the 4-leg and 2-leg systems are rank 5 for every geometry (vertical forces give no yaw moment;
the squeeze force along the two-foot line is unobservable), and the 3-leg rule transplanted to a hexapod
tripod is rank 5 when the lone middle leg sits at x = 0. The SVD rank is checked every time; a deficient
system is solved by minimum-norm least squares and the result says so. ``scheme='full'`` keeps all three
components of every stance foot (minimum-norm, i.e. no internal squeeze).
"""
from dataclasses import dataclass

import numpy as np

from ._checks import finite_array


@dataclass
class GroundReactions:
    """forces: (n_stance, 3) ground forces on the feet [N], world axes; unknowns: the reduced unknowns x;
    matrix: (6, n_x) A with A x = wrench; singular_values of A; rank; residual = A x - wrench (non-zero =
    a body motion the assumed force pattern cannot produce); least_squares: True when A was not square and
    full rank (the paper's direct solve did not apply); message: what was done, in words."""
    forces: np.ndarray
    unknowns: np.ndarray
    matrix: np.ndarray
    singular_values: np.ndarray
    rank: int
    residual: np.ndarray
    least_squares: bool
    message: str


def _hat(p):
    return np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])


def selection(feet, scheme="paper"):
    """Selection matrices E (n_stance, 3, n_x) mapping the reduced unknowns to each foot's force, and a
    description. feet: (n_stance, 3) positions relative to the base origin (world-aligned axes)."""
    n = feet.shape[0]
    if scheme == "full" or (scheme == "paper" and n in (1, 2)) or (scheme == "paper" and n > 4):
        E = np.zeros((n, 3, 3 * n))
        for k in range(n):
            E[k, :, 3 * k:3 * k + 3] = np.eye(3)
        what = "all 3 components per foot" + (" (paper's 2-leg case)" if scheme == "paper" and n == 2 else "")
        if scheme == "paper" and n not in (2,):
            what += f"; the paper has no rule for {n} stance legs"
        return E, what
    if scheme != "paper":
        raise ValueError(f"scheme: expected 'paper' or 'full', got {scheme!r}")
    if n == 4:
        E = np.zeros((4, 3, 6))
        for k in range(4):
            E[k, 2, k] = 1.0
            E[k, 0, 4] = 1.0
            E[k, 1, 5] = 1.0
        return E, "paper's 4-leg rule: 4 F_z, common F_x, common F_y"
    if n == 3:
        left = feet[:, 1] > 0
        lone_left = left.sum() == 1
        lone = np.nonzero(left if lone_left else ~left)[0]
        if lone.size != 1:
            raise ValueError("feet: the paper's 3-leg rule needs one stance leg on one side (sign of y) and "
                             "two on the other")
        E = np.zeros((3, 3, 6))
        for k in range(3):
            E[k, 2, k] = 1.0
            E[k, 0, 3] = 1.0
            E[k, 1, 4 if k == lone[0] else 5] = 1.0
        return E, "paper's 3-leg rule: 3 F_z, common F_x, F_y of the lone-side leg, F_y shared by the pair"
    return np.zeros((0, 3, 0)), "no stance leg"


def resolve_ground_reactions(feet, wrench, scheme="paper", rcond=1e-7):
    """Ground forces on the stance feet that supply ``wrench`` = (force, moment about the base origin).

    feet: (n_stance, 3) [m] positions relative to the base origin in world-aligned axes; wrench: (6,) [N, N m]
    in the same axes. Singular values below rcond * the largest count as zero (geometry known to about
    0.1 um on a 1 m scale: a middle foot 1e-9 m off x = 0 is still the singular case, not a 1e9 condition
    number). Never raises for a singular system: see ``rank``, ``residual`` and ``message``.
    """
    P = finite_array(feet, "feet", (2,), last_dim=3)
    b = finite_array(wrench, "wrench", (1,), last_dim=6)
    E, what = selection(P, scheme)
    A = np.vstack([E.sum(0), sum(_hat(p) @ Ek for p, Ek in zip(P, E))]) if len(P) else np.zeros((6, 0))
    if A.shape[1] == 0:
        return GroundReactions(np.zeros((0, 3)), np.zeros(0), A, np.zeros(0), 0, -b, True,
                               "no stance leg: ground forces are zero; the residual is the unmet wrench")
    sv = np.linalg.svd(A, compute_uv=False)
    rank = int(np.sum(sv > rcond * sv[0])) if sv[0] > 0 else 0
    square_ok = A.shape[1] == 6 and rank == 6
    x = np.linalg.solve(A, b) if square_ok else np.linalg.lstsq(A, b, rcond=rcond)[0]
    residual = A @ x - b
    if square_ok:
        msg = f"{what}: rank 6, solved exactly"
    else:
        msg = (f"{what}: {A.shape[0]}x{A.shape[1]} system of rank {rank}"
               + (" (rank-deficient)" if rank < min(A.shape) else "")
               + f"; solved by minimum-norm least squares, residual {np.linalg.norm(residual):.3g}")
    return GroundReactions(np.einsum("kij,j->ki", E, x), x, A, sv, rank, residual, not square_ok, msg)


def contact_inverse_dynamics(robot, g_sb, q, v, a, stance, scheme="paper"):
    """The paper's inverse dynamics with ground contact, on a :class:`NewtonEulerRobot`.

    1. legs-in-air recursion -> the wrench the base needs (paper's f-bar, n-bar plus the body's own terms);
    2. stance ground forces from :func:`resolve_ground_reactions`;
    3. recursion again with those foot forces -> joint torques (= tau-bar - J^T f).

    stance: bool per tip (robot.tip_names order). Returns (generalized forces (nv,), GroundReactions);
    the base rows of the first are the wrench left unbalanced (0 when the residual is 0).
    """
    stance = np.asarray(stance, bool)
    if stance.shape != (len(robot.tip_names),):
        raise ValueError(f"stance: expected {len(robot.tip_names)} booleans (tips {robot.tip_names}), "
                         f"got shape {stance.shape}")
    tau_air = robot.inverse_dynamics(g_sb, q, v, a)
    R = np.asarray(g_sb, float)[:3, :3]
    feet = robot.tip_poses(q)[stance, :3, 3] @ R.T            # world-aligned, relative to the base origin
    grf = resolve_ground_reactions(feet, np.concatenate([R @ tau_air[:3], R @ tau_air[3:6]]), scheme)
    f = np.zeros((len(robot.tip_names), 3))
    f[stance] = grf.forces
    return robot.inverse_dynamics(g_sb, q, v, a, tip_forces=f), grf
