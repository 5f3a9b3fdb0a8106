"""Recursive Newton-Euler dynamics of a floating-base legged robot (Sureshkumar et al., paper 004).

An independent derivation of the rigid-body physics the Boltzmann-Hamel model (``jethexa_dynamics.model``)
computes: per-leg serial chains are built here from the URDF (``parse_urdf`` only), and each leg is run
through Craig's outward/inward recursion (extraction §2.3) started from the moving base:

- outward, link i in its own frame:  w_i = R^T w_p + qd e_i,  wd_i = R^T wd_p + (R^T w_p) x qd e_i + qdd e_i,
  vd_i = R^T (wd_p x P + w_p x (w_p x P) + vd_p),  F_i = m (vd_i + wd_i x c + w_i x (w_i x c)),
  N_i = I_c wd_i + w_i x I_c w_i; the base starts with vd_0 = a_lin + w x v_lin - g (gravity trick);
- inward from the foot: f_i = F_i + R f_{i+1} - f_ext,  n_i = N_i + c x F_i + R n_{i+1} + P x R f_{i+1} - p_tip x f_ext,
  tau_i = n_i . e_i; the wrenches the legs draw from the base plus the base's own inertial wrench are the
  base rows (the paper's hip reactions f_1, n_1 summed into its body equations (3)-(4)).

Forward dynamics as in the paper (Walker & Orin): M from nv unit-acceleration calls, C v + G from one call
with the state's velocity, then  vd = M^-1 (tau - C v - G + J^T f).

Conventions as the core model: q joint angles [rad] in ``joint_names`` order; v = [base linear, base
angular (base frame), joint rates] (Pinocchio free-flyer LOCAL); a = dv/dt; g_sb 4x4 base pose in the world;
gravity -9.81 m/s^2 along world z; tip forces (n_tips, 3) world frame, applied at the feet, on the robot.
Every call is vectorised over legs (padded to the longest) and over a batch of states.
"""
import os
from dataclasses import dataclass, replace
from typing import List

import numpy as np

from ..model.urdf import origin_to_matrix, parse_urdf, parse_urdf_string
from ._checks import finite_array

MOVABLE = ("revolute", "continuous")
GRAVITY = np.array([0.0, 0.0, -9.81])


_I1, _I2 = np.array([1, 2, 0]), np.array([2, 0, 1])


def _cross(a, b):
    """a x b over the last axis (np.cross and component-wise stacking are slower on these small arrays)."""
    return a[..., _I1] * b[..., _I2] - a[..., _I2] * b[..., _I1]


def _mv(R, x):
    return (R @ x[..., None])[..., 0]


def _mtv(R, x):
    return (np.swapaxes(R, -1, -2) @ x[..., None])[..., 0]


def _skew(e):
    z = np.zeros(e.shape[:-1])
    return np.stack([np.stack([z, -e[..., 2], e[..., 1]], -1),
                     np.stack([e[..., 2], z, -e[..., 0]], -1),
                     np.stack([-e[..., 1], e[..., 0], z], -1)], -2)


@dataclass
class LegChains:
    """Per-leg serial chains padded to D joints (pad joints: identity origin, zero axis, zero mass).

    R0, p0 (L, D, 3, 3), (L, D, 3): joint frame in the parent link frame at zero angle; axis (L, D, 3) unit
    joint axis in that frame; mass (L, D) [kg], com (L, D, 3) [m] and Ic (L, D, 3, 3) [kg m^2] in the link
    frame (about the CoM); tip_R, tip_p: foot frame in the last link frame; has_tip (L,): False for a
    truncated (damaged) leg; jidx (L, D): joint-vector index, pad entries = n_joints_total.
    """
    leg_names: List[str]
    joint_names: List[str]
    tip_names: List[str]
    n_joints: np.ndarray
    R0: np.ndarray
    p0: np.ndarray
    axis: np.ndarray
    mass: np.ndarray
    com: np.ndarray
    Ic: np.ndarray
    tip_R: np.ndarray
    tip_p: np.ndarray
    has_tip: np.ndarray
    jidx: np.ndarray
    body_mass: float
    body_com: np.ndarray
    body_Ic: np.ndarray


def _inertia(inertial, T):
    """(m, c, Ic) of a URDF inertial in the frame where the link's pose is T."""
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    Tc = T @ origin_to_matrix(inertial.origin_xyz, inertial.origin_rpy)
    R = Tc[:3, :3]
    return inertial.mass, Tc[:3, 3], R @ inertial.inertia @ R.T


def _lump(parts):
    """One rigid body from several (m, c, Ic) in the same frame (parallel-axis theorem)."""
    m = sum(p[0] for p in parts)
    c = sum(p[0] * p[1] for p in parts) / m if m > 0 else np.zeros(3)
    Ic = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = ci - c
        Ic = Ic + Ii + mi * ((d @ d) * np.eye(3) - np.outer(d, d))
    return m, c, Ic


def _leg_name(joint_names):
    """Common ``_SUFFIX`` of a leg's joint names (``coxa_joint_LF`` -> ``LF``), else its first joint name."""
    suffixes = {n.rsplit("_", 1)[-1] for n in joint_names}
    if len(suffixes) == 1 and all("_" in n for n in joint_names):
        return suffixes.pop()
    return joint_names[0]


def chains_from_urdf(model):
    """Build :class:`LegChains` from a parsed URDF (one floating root, serial revolute legs; fixed joints
    merged into their parent; the tip is a fixed leaf of the last link, preferring 'foot'/'tip' names)."""
    kids, child_of = {}, {}
    for j in model.joints:
        if j.type not in MOVABLE + ("fixed",):
            raise ValueError(f"urdf: joint {j.name!r} has unsupported type {j.type!r}")
        kids.setdefault(j.parent, []).append(j)
        child_of[j.child] = j
    roots = [n for n in model.links if n not in child_of]
    if len(roots) != 1:
        raise ValueError(f"urdf: need exactly one root link, found {roots}")
    body, legs = [], []

    def walk(link, T, owner, depth):
        """Add ``link`` (pose T in the owner's frame) to the base (owner None) or to link ``depth`` of leg
        ``owner``; then descend."""
        parts = body if owner is None else owner["parts"][depth]
        parts.append(_inertia(model.links[link].inertial, T))
        movable = [j for j in kids.get(link, []) if j.type in MOVABLE]
        if owner is not None and len(movable) > 1:
            raise ValueError(f"urdf: link {link!r} has several movable children; legs must be serial")
        for j in kids.get(link, []):
            Tj = T @ origin_to_matrix(j.origin_xyz, j.origin_rpy)
            if j.type == "fixed":
                if owner is not None and not kids.get(j.child):
                    owner["leaves"].append((depth, j.child, Tj))
                walk(j.child, Tj, owner, depth)
                continue
            n = np.linalg.norm(j.axis)
            if n < 1e-12:
                raise ValueError(f"urdf: joint {j.name!r} has a zero axis")
            leg = owner
            if leg is None:
                leg = {"joints": [], "origins": [], "axes": [], "parts": [], "leaves": [], "links": []}
                legs.append(leg)
            leg["joints"].append(j.name)
            leg["origins"].append(Tj)
            leg["axes"].append(j.axis / n)
            leg["parts"].append([])
            leg["links"].append(j.child)
            walk(j.child, np.eye(4), leg, len(leg["joints"]) - 1)

    walk(roots[0], np.eye(4), None, 0)
    if not legs:
        raise ValueError("urdf: no movable joint below the root link")
    L, D = len(legs), max(len(lg["joints"]) for lg in legs)
    n_total = sum(len(lg["joints"]) for lg in legs)
    R0 = np.tile(np.eye(3), (L, D, 1, 1))
    p0, axis, com = np.zeros((L, D, 3)), np.zeros((L, D, 3)), np.zeros((L, D, 3))
    mass, Ic = np.zeros((L, D)), np.zeros((L, D, 3, 3))
    tip_R, tip_p = np.tile(np.eye(3), (L, 1, 1)), np.zeros((L, 3))
    jidx = np.full((L, D), n_total)
    names, joint_names, tips, k0 = [], [], [], 0
    for i, lg in enumerate(legs):
        nj = len(lg["joints"])
        for k in range(nj):
            R0[i, k], p0[i, k] = lg["origins"][k][:3, :3], lg["origins"][k][:3, 3]
            axis[i, k] = lg["axes"][k]
            mass[i, k], com[i, k], Ic[i, k] = _lump(lg["parts"][k])
        jidx[i, :nj] = k0 + np.arange(nj)
        k0 += nj
        leaves = [(name, T) for depth, name, T in lg["leaves"] if depth == nj - 1]
        preferred = [lv for lv in leaves if "foot" in lv[0] or "tip" in lv[0]]
        tip_name, T_tip = (preferred or leaves or [(lg["links"][-1], np.eye(4))])[0]
        tip_R[i], tip_p[i] = T_tip[:3, :3], T_tip[:3, 3]
        name = _leg_name(lg["joints"])
        names.append(name if name not in names else lg["joints"][0])
        joint_names += lg["joints"]
        tips.append(tip_name)
    mb, cb, Ib = _lump(body)
    return LegChains(names, joint_names, tips, np.array([len(lg["joints"]) for lg in legs]), R0, p0, axis,
                     mass, com, Ic, tip_R, tip_p, np.ones(L, bool), jidx, mb, cb, Ib)


def _bundled_urdf():
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "urdf",
                        "jethexa.urdf")


class NewtonEulerRobot:
    """Floating-base robot evaluated by recursive Newton-Euler; same public methods as ``LeggedRobot``."""

    def __init__(self, chains, full=None, links_per_leg=None):
        self.chains = chains
        self.full = self if full is None else full
        self.links_per_leg = tuple(int(n) for n in chains.n_joints) if links_per_leg is None else links_per_leg
        self.leg_names = list(chains.leg_names)
        self.joint_names = list(chains.joint_names)
        self.tip_names = [t for t, h in zip(chains.tip_names, chains.has_tip) if h]
        self.tip_legs = [n for n, h in zip(chains.leg_names, chains.has_tip) if h]
        self.nv = 6 + len(self.joint_names)
        self._E = _skew(chains.axis)
        self._E2 = self._E @ self._E

    @classmethod
    def from_urdf(cls, path):
        return cls(chains_from_urdf(parse_urdf(path)))

    @classmethod
    def from_urdf_string(cls, text):
        return cls(chains_from_urdf(parse_urdf_string(text)))

    @classmethod
    def jethexa(cls):
        return cls.from_urdf(_bundled_urdf())

    @property
    def total_mass(self):
        return float(self.chains.body_mass + self.chains.mass.sum())

    def with_morphology(self, m):
        """Reduced robot: ``m`` = number of intact links per leg of the healthy robot (or a core
        ``Morphology``); links beyond it are gone, a leg with 0 links is removed, a truncated leg has no tip."""
        full = self.full
        c = full.chains
        counts = list(getattr(m, "links_per_leg", m))
        if len(counts) != len(c.leg_names):
            raise ValueError(f"morphology: expected {len(c.leg_names)} entries (legs {c.leg_names}), "
                             f"got {len(counts)}")
        for name, k, n in zip(c.leg_names, counts, c.n_joints):
            if not float(k).is_integer() or not 0 <= k <= n:
                raise ValueError(f"morphology: leg {name}: links must be an integer in [0, {n}], got {k!r}")
        counts = [int(k) for k in counts]
        keep = [i for i, k in enumerate(counts) if k > 0]
        if not keep:
            raise ValueError("morphology: every leg removed")
        D = max(counts)
        live = np.zeros((len(keep), D), bool)
        for r, i in enumerate(keep):
            live[r, :counts[i]] = True
        old = np.concatenate([c.jidx[i, :counts[i]] for i in keep])
        jidx = np.full((len(keep), D), old.size)
        jidx[live] = np.arange(old.size)
        sub = lambda a: np.where(live.reshape(live.shape + (1,) * (a.ndim - 2)), a[keep, :D], 0.0)
        R0 = np.where(live[..., None, None], c.R0[keep, :D], np.eye(3))
        ch = replace(c, leg_names=[c.leg_names[i] for i in keep], joint_names=[c.joint_names[k] for k in old],
                     tip_names=[c.tip_names[i] for i in keep], n_joints=np.array([counts[i] for i in keep]),
                     R0=R0, p0=sub(c.p0), axis=sub(c.axis), mass=sub(c.mass), com=sub(c.com), Ic=sub(c.Ic),
                     tip_R=c.tip_R[keep], tip_p=c.tip_p[keep],
                     has_tip=np.array([counts[i] == c.n_joints[i] for i in keep]), jidx=jidx)
        return NewtonEulerRobot(ch, full, tuple(counts))

    # ---- kinematics ------------------------------------------------------------------------------------
    def _rotations(self, th):
        """Joint-to-parent rotations (B, L, D, 3, 3): R0 Rot(axis, theta) by Rodrigues."""
        s, c = np.sin(th)[..., None, None], np.cos(th)[..., None, None]
        return self.chains.R0 @ (np.eye(3) + s * self._E + (1.0 - c) * self._E2)

    def _pad(self, x):
        """(B, n) joint vector -> (B, L, D) per leg and depth (pads read a zero)."""
        return np.concatenate([x, np.zeros((x.shape[0], 1))], axis=1)[:, self.chains.jidx]

    def _q(self, q):
        return finite_array(q, "q", (1,), last_dim=self.nv - 6)

    def _link_frames(self, q):
        """Link frames in the base frame at joint angles q: rotations (L, D, 3, 3), origins (L, D, 3)."""
        R = self._rotations(self._pad(self._q(q)[None]))[0]
        c = self.chains
        L, D = c.jidx.shape
        Rb, pb = np.empty((L, D, 3, 3)), np.empty((L, D, 3))
        Rp, pp = np.broadcast_to(np.eye(3), (L, 3, 3)), np.zeros((L, 3))
        for i in range(D):
            pb[:, i] = pp + _mv(Rp, c.p0[:, i])
            Rb[:, i] = Rp @ R[:, i]
            Rp, pp = Rb[:, i], pb[:, i]
        return Rb, pb

    def tip_poses(self, q):
        """(n_tips, 4, 4) foot frames in the base frame (legs with a tip only)."""
        Rb, pb = self._link_frames(q)
        c = self.chains
        g = np.tile(np.eye(4), (len(c.leg_names), 1, 1))
        g[:, :3, :3] = Rb[:, -1] @ c.tip_R
        g[:, :3, 3] = pb[:, -1] + _mv(Rb[:, -1], c.tip_p)
        return g[c.has_tip]

    def center_of_mass(self, q):
        """Whole-robot centre of mass (3,) [m] in the base frame."""
        Rb, pb = self._link_frames(q)
        c = self.chains
        mc = c.body_mass * c.body_com + np.einsum("ld,ldk->k", c.mass, pb + _mv(Rb, c.com))
        return mc / self.total_mass

    # ---- the recursion ---------------------------------------------------------------------------------
    def rnea(self, q, v, a, gravity_base, tip_forces_base=None):
        """Batched floating-base inverse dynamics: generalized forces (B, nv) = M a + C v + G - J^T f.

        q (B, n), v and a (B, nv), gravity_base (B, 3) gravity in the base frame [m/s^2],
        tip_forces_base (B, n_tips, 3) forces on the feet in base-frame axes [N] or None.
        Base rows: the wrench [force; moment about the base origin] (base frame) the base would need.
        """
        c = self.chains
        B = q.shape[0]
        th, thd, thdd = self._pad(q), self._pad(v[:, 6:]), self._pad(a[:, 6:])
        R = self._rotations(th)
        w0, wd0 = v[:, 3:6], a[:, 3:6]
        acc0 = a[:, :3] + _cross(w0, v[:, :3]) - gravity_base
        Fb = c.body_mass * (acc0 + _cross(wd0, c.body_com) + _cross(w0, _cross(w0, c.body_com)))
        Iw = c.body_Ic @ w0[..., None]
        Nb = (c.body_Ic @ wd0[..., None])[..., 0] + _cross(w0, Iw[..., 0]) + _cross(c.body_com, Fb)

        L, D = c.jidx.shape
        w = np.broadcast_to(w0[:, None], (B, L, 3))
        wd = np.broadcast_to(wd0[:, None], (B, L, 3))
        acc = np.broadcast_to(acc0[:, None], (B, L, 3))
        Rb = np.broadcast_to(np.eye(3), (B, L, 3, 3))
        F, N = [], []
        for i in range(D):
            Ri, P, e, ci = R[:, :, i], c.p0[:, i], c.axis[:, i], c.com[:, i]
            acc = _mtv(Ri, acc + _cross(wd, P) + _cross(w, _cross(w, P)))
            wp = _mtv(Ri, w)
            qd_e = thd[:, :, i, None] * e
            w = wp + qd_e
            wd = _mtv(Ri, wd) + _cross(wp, qd_e) + thdd[:, :, i, None] * e
            F.append(c.mass[:, i, None] * (acc + _cross(wd, ci) + _cross(w, _cross(w, ci))))
            Iw = _mv(c.Ic[:, i], w)
            N.append(_mv(c.Ic[:, i], wd) + _cross(w, Iw))
            Rb = Rb @ Ri

        f = np.zeros((B, L, 3))
        n = np.zeros((B, L, 3))
        if tip_forces_base is not None:
            fb = np.zeros((B, L, 3))
            fb[:, c.has_tip] = tip_forces_base
            f_last = -_mtv(Rb, fb)                          # on the environment, in the last link frame
            f = f_last
            n = _cross(c.tip_p, f_last)
        tau = np.zeros((B, L, D))
        for i in range(D - 1, -1, -1):
            f = f + F[i]
            n = n + N[i] + _cross(c.com[:, i], F[i])
            tau[:, :, i] = np.einsum("bli,li->bl", n, c.axis[:, i])
            f = _mv(R[:, :, i], f)
            n = _mv(R[:, :, i], n) + _cross(c.p0[:, i], f)
        out = np.zeros((B, self.nv + 1))
        out[:, :3] = Fb + f.sum(1)
        out[:, 3:6] = Nb + n.sum(1)
        out[:, 6 + c.jidx] = tau                             # pads land in the extra last column
        return out[:, :-1]

    # ---- the core model's interface -------------------------------------------------------------------
    def _state(self, g_sb, q, v=None, a=None, tip_forces=None):
        g = finite_array(g_sb, "g_sb", (2,))
        if g.shape != (4, 4):
            raise ValueError(f"g_sb: expected a 4x4 homogeneous transform, got shape {g.shape}")
        q = self._q(q)
        v = np.zeros(self.nv) if v is None else finite_array(v, "v", (1,), last_dim=self.nv)
        a = np.zeros(self.nv) if a is None else finite_array(a, "a", (1,), last_dim=self.nv)
        f = None
        if tip_forces is not None:
            f = finite_array(tip_forces, "tip_forces", (2,), last_dim=3)
            if f.shape[0] != len(self.tip_names):
                raise ValueError(f"tip_forces: expected shape ({len(self.tip_names)}, 3) for tips "
                                 f"{self.tip_names}, got {f.shape}")
            f = f @ g[:3, :3]                               # world -> base axes: R^T f per row
        return g[:3, :3].T @ GRAVITY, q, v, a, f

    def inverse_dynamics(self, g_sb, q, v, a, tip_forces=None):
        """Generalized forces (nv,) = M a + C v + G - J^T f; base rows are 0 for a consistent motion."""
        gb, q, v, a, f = self._state(g_sb, q, v, a, tip_forces)
        return self.rnea(q[None], v[None], a[None], gb[None], None if f is None else f[None])[0]

    def mass_matrix(self, q):
        """M (nv, nv) from nv unit-acceleration calls without velocity or gravity (Walker-Orin)."""
        q = self._q(q)
        n = self.nv
        cols = self.rnea(np.broadcast_to(q, (n, n - 6)), np.zeros((n, n)), np.eye(n), np.zeros((n, 3)))
        return cols.T

    def gravity_forces(self, g_sb, q):
        gb, q, v, a, _ = self._state(g_sb, q)
        return self.rnea(q[None], v[None], a[None], gb[None])[0]

    def bias_forces(self, g_sb, q, v):
        """C(q, v) v + G(q) (Pinocchio's nonLinearEffects)."""
        gb, q, v, a, _ = self._state(g_sb, q, v)
        return self.rnea(q[None], v[None], a[None], gb[None])[0]

    def coriolis_forces(self, q, v):
        """C(q, v) v alone (gravity off)."""
        _, q, v, a, _ = self._state(np.eye(4), q, v)
        return self.rnea(q[None], v[None], a[None], np.zeros((1, 3)))[0]

    def forward_dynamics(self, g_sb, q, v, tau, tip_forces=None):
        """dv/dt from M dv/dt + C v + G = tau + J^T f, with M, C v + G and J^T f from one batch of nv + 1
        inverse-dynamics calls. ``tau`` has nv entries (base rows normally 0)."""
        gb, q, v, _, f = self._state(g_sb, q, v, None, tip_forces)
        tau = finite_array(tau, "tau", (1,), last_dim=self.nv)
        n = self.nv
        V = np.zeros((n + 1, n))
        V[n] = v
        A = np.zeros((n + 1, n))
        A[:n] = np.eye(n)
        G = np.zeros((n + 1, 3))
        G[n] = gb
        F = None if f is None else np.concatenate([np.zeros((n,) + f.shape), f[None]])
        out = self.rnea(np.broadcast_to(q, (n + 1, n - 6)), V, A, G, F)
        return np.linalg.solve(out[:n].T, tau - out[n])

    def __repr__(self):
        return f"NewtonEulerRobot(legs={self.leg_names}, nv={self.nv}, mass={self.total_mass:.3f} kg)"
