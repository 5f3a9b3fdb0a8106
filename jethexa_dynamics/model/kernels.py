"""Compiled kernels of the modular Boltzmann-Hamel model (Farghdani et al., Sec. III-V).

Every function works on the FULL (healthy) robot's arrays, ``data = robot.full.kernel_data``:

    (n_joints, joint_offset, xi, mass, com0, Ic0, tip0, body_mass, body_com, body_Ic, gravity)

(``gravity`` is the world-frame gravity vector g_s, (0, 0, -9.81) m/s^2 by default; the public kernels also
take the one buffer ``robot.full.kernel_buffer`` these arrays are views into, see :func:`pack`)

and a link-existence mask ``mask[i, j]`` (the paper's link morphology vector 𝔛, eq. 22-24, reshaped per leg;
a leg exists, 𝔵̄_i = 1, when its first link does, eq. 26). Joints of missing links keep their slots in the
full-size vectors and get zero acceleration: this is Algorithm 1's reshaping done by index, so a morphology
change costs nothing here.

Frames and units: X_b is the main body frame (base_link), twists are [v; w] in X_b, SI units. ``R_sb`` is
the rotation of X_b in the world (3x3; the 4x4 pose g_sb works too: only its upper-left block is read).

Names follow the paper: ``xi`` joint twists ξ_ij, ``xp`` instantaneous twists ξ'_ij (eq. 17), ``Mbb``
M^bb_ij = Ad^-T I_ij Ad^-1 (eq. 8), ``Mbt``/``Mtt`` the leg blocks 𝓜^bθ/𝓜^θθ (eq. 19, 21, 27-28),
``P`` the momentum 𝒫 = M v (eq. 41), and the Coriolis matrix C = 𝒜 - ½[[ℬ,0],[𝒟,ℰ]] (eq. 36-43, with the
corrected derivatives of the extraction's §1.13).

Algorithms: the mass matrix by the composite-rigid-body algorithm (CRBA) and the bias forces C(θ, v) v + 𝒩
by the recursive Newton-Euler algorithm (RNEA), both on the paper's per-leg structure in X_b
(``_legs_crba_rnea``); forward dynamics solves the block-arrow M of eq. 27 by its Schur complement on the base
(``_solve_arrowhead``); the matrix C(θ, v) itself comes from the paper's terms (``_leg_coriolis``).
"""
import math

import numpy as np

from ._numba import HAVE_NUMBA, INLINE, cview, njit, overload

# positions in the ``data`` tuple (module docstring); numba folds these globals to constants
(D_N_JOINTS, D_JOINT_OFFSET, D_XI, D_MASS, D_COM0, D_IC0, D_TIP0, D_BODY_MASS, D_BODY_COM, D_BODY_IC,
 D_GRAVITY) = range(11)


# ----------------------------------------------------------------------------------------------------------
# the model arrays packed in one buffer
#
# numba unboxes every array argument of a call from Python on its own (the 11-array ``data`` tuple cost more per
# call than Pinocchio's whole crba: BENCHMARKS.md, bench_model), and a tuple argument costs more than its arrays
# passed one by one. So the arrays live in one float64 buffer (the two
# integer arrays as int64 bit patterns, read back by ``view``, no conversion); ``data`` is the tuple of views
# into it, and the public kernels also take the buffer itself (``LeggedRobot.kernel_buffer``, one array).

def pack(n_joints, joint_offset, xi, mass, com0, Ic0, tip0, body_mass, body_com, body_Ic, gravity):
    """The model arrays (``D_*`` order) copied into one float64 buffer: returns ``buffer`` and the ``data``
    tuple of views into it (one storage). Layout: ``[L, n_max, n_joints, joint_offset]`` as int64 bits, then
    the float arrays raveled in ``D_*`` order."""
    L, nmax = xi.shape[0], xi.shape[1]
    ints = np.concatenate(([L, nmax], n_joints, joint_offset)).astype(np.int64)
    buf = np.concatenate([ints.view(np.float64)] + [np.ravel(np.asarray(a, dtype=np.float64)) for a in (
        xi, mass, com0, Ic0, tip0, body_mass, body_com, body_Ic, gravity)])
    return buf, getattr(unpack, "py_func", unpack)(buf)


@njit(cache=True, inline=INLINE)
def unpack(buf):
    """The ``data`` tuple of views into the buffer of :func:`pack` (no copies)."""
    head = buf[:2].view(np.int64)
    L, nmax = head[0], head[1]
    ints = buf[:2 + 2 * L].view(np.int64)
    n_joints, joint_offset = ints[2:2 + L], ints[2 + L:2 + 2 * L]
    # (cview, not reshape: numba's reshape checks cost ~25 ns each, a tenth of a mass-matrix call in all)
    a = 2 + 2 * L
    xi = cview(buf, a, (L, nmax, 6))
    a += L * nmax * 6
    mass = cview(buf, a, (L, nmax))
    a += L * nmax
    com0 = cview(buf, a, (L, nmax, 3))
    a += L * nmax * 3
    Ic0 = cview(buf, a, (L, nmax, 3, 3))
    a += L * nmax * 9
    tip0 = cview(buf, a, (L, 4, 4))
    b = a + L * 16
    return (n_joints, joint_offset, xi, mass, com0, Ic0, tip0, buf[b:b + 1], buf[b + 1:b + 4],
            cview(buf, b + 4, (3, 3)), buf[b + 13:b + 16])


def model(data):
    """The ``data`` tuple of either form a public kernel takes: the tuple itself or the packed buffer."""
    return unpack(data) if isinstance(data, np.ndarray) else data


if HAVE_NUMBA:
    from numba import types

    @overload(model, inline="always")
    def _model_typed(data):
        if isinstance(data, types.Array):
            return lambda data: unpack(data)
        return lambda data: data


# ----------------------------------------------------------------------------------------------------------
# small vector algebra (scalar code: numba compiles it to straight-line arithmetic)

@njit(cache=True, inline=INLINE)
def _cross(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0] = x
    out[1] = y
    out[2] = z



@njit(cache=True, inline=INLINE)
def _inertia_apply(m, c, Ic, x, out):
    """out = M^bb x for a body of mass m, CoM c and inertia Ic (about the CoM) in X_b.

    Closed form of Ad^-T I Ad^-1 x (eq. 8): f = m (x_v + x_w x c), out = [f; c x f + Ic x_w].
    """
    c0, c1, c2 = c[0], c[1], c[2]
    b0, b1, b2 = x[3], x[4], x[5]
    f0 = m * (x[0] + b1 * c2 - b2 * c1)
    f1 = m * (x[1] + b2 * c0 - b0 * c2)
    f2 = m * (x[2] + b0 * c1 - b1 * c0)
    out[0] = f0
    out[1] = f1
    out[2] = f2
    out[3] = c1 * f2 - c2 * f1 + Ic[0, 0] * b0 + Ic[0, 1] * b1 + Ic[0, 2] * b2
    out[4] = c2 * f0 - c0 * f2 + Ic[1, 0] * b0 + Ic[1, 1] * b1 + Ic[1, 2] * b2
    out[5] = c0 * f1 - c1 * f0 + Ic[2, 0] * b0 + Ic[2, 1] * b1 + Ic[2, 2] * b2


@njit(cache=True, inline=INLINE)
def _inertia_matrix(m, c, Ic, out):
    """out (6x6) = M^bb = [[m 1, -m ĉ], [m ĉ, Ic - m ĉ ĉ]] (eq. 8 in closed form)."""
    c0, c1, c2 = c[0], c[1], c[2]
    out[:, :] = 0.0
    out[0, 0] = m
    out[1, 1] = m
    out[2, 2] = m
    # m ĉ
    out[3, 1] = -m * c2
    out[3, 2] = m * c1
    out[4, 0] = m * c2
    out[4, 2] = -m * c0
    out[5, 0] = -m * c1
    out[5, 1] = m * c0
    for r in range(3):
        for s in range(3):
            out[s, 3 + r] = out[3 + r, s]
    # Ic - m ĉĉ = Ic + m (|c|^2 1 - c c^T)
    cc = c0 * c0 + c1 * c1 + c2 * c2
    for r in range(3):
        for s in range(3):
            out[3 + r, 3 + s] = Ic[r, s] - m * (c[r] * c[s]) + (m * cc if r == s else 0.0)


@njit(cache=True, inline=INLINE)
def _mv3(A, x, out):
    """out = A x for 3x3 A (no BLAS call: these are tiny)."""
    x0, x1, x2 = x[0], x[1], x[2]
    out[0] = A[0, 0] * x0 + A[0, 1] * x1 + A[0, 2] * x2
    out[1] = A[1, 0] * x0 + A[1, 1] * x1 + A[1, 2] * x2
    out[2] = A[2, 0] * x0 + A[2, 1] * x1 + A[2, 2] * x2


@njit(cache=True, inline=INLINE)
def _mtv3(A, x, out):
    """out = A^T x for 3x3 A."""
    x0, x1, x2 = x[0], x[1], x[2]
    out[0] = A[0, 0] * x0 + A[1, 0] * x1 + A[2, 0] * x2
    out[1] = A[0, 1] * x0 + A[1, 1] * x1 + A[2, 1] * x2
    out[2] = A[0, 2] * x0 + A[1, 2] * x1 + A[2, 2] * x2


@njit(cache=True, inline=INLINE)
def _mm3(A, B, out):
    """out = A B for 3x3 matrices (out must not alias A or B)."""
    for r in range(3):
        for s in range(3):
            out[r, s] = A[r, 0] * B[0, s] + A[r, 1] * B[1, s] + A[r, 2] * B[2, s]


# ----------------------------------------------------------------------------------------------------------
# per-leg forward kinematics: product of exponentials (eq. 12) and instantaneous twists (eq. 16-17)

@njit(cache=True, inline=INLINE)
def leg_kinematics(data, i, theta, R, p, xp, c, Ic):
    """Forward kinematics of leg i for all its links.

    Out: ``R[k], p[k]`` the product e^{ξ_i1 θ_i1} ... e^{ξ_ik θ_ik} (so g_{b,l_ik} = (R,p) g_{b,l_ik}(0), eq. 12),
    ``xp[k]`` = ξ'_ik = Ad_{e^{ξ_i1 θ_i1} ... e^{ξ_i(k-1) θ_i(k-1)}} ξ_ik (eq. 17, the columns of J^b, eq. 16),
    ``c[k], Ic[k]`` the link CoM and rotational inertia in X_b.
    (Written with scalar indexing only: array views cost a reference-count round trip each in numba.)
    """
    n_joints, joint_offset, xi = data[D_N_JOINTS], data[D_JOINT_OFFSET], data[D_XI]
    com0, Ic0 = data[D_COM0], data[D_IC0]
    n = n_joints[i]
    off = joint_offset[i]
    for k in range(n):
        v0, v1, v2 = xi[i, k, 0], xi[i, k, 1], xi[i, k, 2]
        w0, w1, w2 = xi[i, k, 3], xi[i, k, 4], xi[i, k, 5]
        # ξ'_k = Ad_{T_{k-1}} ξ_k = [R v + p x (R w); R w]  (T_{-1} = identity)
        if k == 0:
            for r in range(6):
                xp[0, r] = xi[i, 0, r]
        else:
            for r in range(3):
                xp[k, 3 + r] = R[k - 1, r, 0] * w0 + R[k - 1, r, 1] * w1 + R[k - 1, r, 2] * w2
                xp[k, r] = R[k - 1, r, 0] * v0 + R[k - 1, r, 1] * v1 + R[k - 1, r, 2] * v2
            a0, a1, a2 = xp[k, 3], xp[k, 4], xp[k, 5]
            q0, q1, q2 = p[k - 1, 0], p[k - 1, 1], p[k - 1, 2]
            xp[k, 0] += q1 * a2 - q2 * a1
            xp[k, 1] += q2 * a0 - q0 * a2
            xp[k, 2] += q0 * a1 - q1 * a0
        # exp(ξ^ θ) for a unit rotation axis (Rodrigues): R = 1 + s ŵ + (1 - cos) ŵ², p = (1 - R)(w x v) + w (w·v) θ
        th = theta[off + k]
        s = math.sin(th)
        kc = 1.0 - math.cos(th)
        # (scalars, no scratch arrays: an allocation per leg costs more than the arithmetic here)
        e00 = 1.0 + kc * (w0 * w0 - 1.0)
        e01 = -s * w2 + kc * w0 * w1
        e02 = s * w1 + kc * w0 * w2
        e10 = s * w2 + kc * w1 * w0
        e11 = 1.0 + kc * (w1 * w1 - 1.0)
        e12 = -s * w0 + kc * w1 * w2
        e20 = -s * w1 + kc * w2 * w0
        e21 = s * w0 + kc * w2 * w1
        e22 = 1.0 + kc * (w2 * w2 - 1.0)
        a0 = w1 * v2 - w2 * v1
        a1 = w2 * v0 - w0 * v2
        a2 = w0 * v1 - w1 * v0
        wv = (w0 * v0 + w1 * v1 + w2 * v2) * th
        pe0 = a0 - (e00 * a0 + e01 * a1 + e02 * a2) + w0 * wv
        pe1 = a1 - (e10 * a0 + e11 * a1 + e12 * a2) + w1 * wv
        pe2 = a2 - (e20 * a0 + e21 * a1 + e22 * a2) + w2 * wv
        # T_k = T_{k-1} exp(ξ_k θ_k)
        if k == 0:
            R[0, 0, 0], R[0, 0, 1], R[0, 0, 2] = e00, e01, e02
            R[0, 1, 0], R[0, 1, 1], R[0, 1, 2] = e10, e11, e12
            R[0, 2, 0], R[0, 2, 1], R[0, 2, 2] = e20, e21, e22
            p[0, 0] = pe0
            p[0, 1] = pe1
            p[0, 2] = pe2
        else:
            for r in range(3):
                q0, q1, q2 = R[k - 1, r, 0], R[k - 1, r, 1], R[k - 1, r, 2]
                R[k, r, 0] = q0 * e00 + q1 * e10 + q2 * e20
                R[k, r, 1] = q0 * e01 + q1 * e11 + q2 * e21
                R[k, r, 2] = q0 * e02 + q1 * e12 + q2 * e22
                p[k, r] = q0 * pe0 + q1 * pe1 + q2 * pe2 + p[k - 1, r]
        # link CoM and inertia in X_b: c = R c0 + p, Ic = (R Ic0) R^T row by row, kept exactly symmetric
        for r in range(3):
            q0, q1, q2 = R[k, r, 0], R[k, r, 1], R[k, r, 2]
            c[k, r] = q0 * com0[i, k, 0] + q1 * com0[i, k, 1] + q2 * com0[i, k, 2] + p[k, r]
            t0 = q0 * Ic0[i, k, 0, 0] + q1 * Ic0[i, k, 1, 0] + q2 * Ic0[i, k, 2, 0]
            t1 = q0 * Ic0[i, k, 0, 1] + q1 * Ic0[i, k, 1, 1] + q2 * Ic0[i, k, 2, 1]
            t2 = q0 * Ic0[i, k, 0, 2] + q1 * Ic0[i, k, 1, 2] + q2 * Ic0[i, k, 2, 2]
            for t in range(r, 3):
                val = t0 * R[k, t, 0] + t1 * R[k, t, 1] + t2 * R[k, t, 2]
                Ic[k, r, t] = val
                Ic[k, t, r] = val


# ----------------------------------------------------------------------------------------------------------
# per-link algebra on scalars and 6-tuples (no array views: each view costs a reference-count round trip
# in numba). ``xp[k]`` rows are ξ'_k, ``c[j]``/``Ic[j]`` the CoM/inertia of link j, all in X_b.

@njit(cache=True, inline=INLINE)
def _ad6(V, x):
    """ad_V x = V × x = [w × x_v + v × x_w; w × x_w] for twists V = [v; w], x (6-tuples, eq. 4)."""
    v0, v1, v2, w0, w1, w2 = V
    a0, a1, a2, b0, b1, b2 = x
    return (w1 * a2 - w2 * a1 + v1 * b2 - v2 * b1, w2 * a0 - w0 * a2 + v2 * b0 - v0 * b2,
            w0 * a1 - w1 * a0 + v0 * b1 - v1 * b0, w1 * b2 - w2 * b1, w2 * b0 - w0 * b2, w0 * b1 - w1 * b0)


@njit(cache=True, inline=INLINE)
def _ad6T(V, h):
    """-ad_V^T h = V ×* h = [w × h_v; v × h_v + w × h_w] for a twist V = [v; w] and a wrench h (6-tuples)."""
    v0, v1, v2, w0, w1, w2 = V
    a0, a1, a2, b0, b1, b2 = h
    return (w1 * a2 - w2 * a1, w2 * a0 - w0 * a2, w0 * a1 - w1 * a0,
            v1 * a2 - v2 * a1 + w1 * b2 - w2 * b1, v2 * a0 - v0 * a2 + w2 * b0 - w0 * b2,
            v0 * a1 - v1 * a0 + w0 * b1 - w1 * b0)


@njit(cache=True, inline=INLINE)
def _ad_xp(xp, k, a0, a1, a2, b0, b1, b2):
    """ad_{ξ'_k} x (eq. 4) as a 6-tuple."""
    return _ad6((xp[k, 0], xp[k, 1], xp[k, 2], xp[k, 3], xp[k, 4], xp[k, 5]), (a0, a1, a2, b0, b1, b2))


@njit(cache=True, inline=INLINE)
def _adT_xp(xp, k, a0, a1, a2, b0, b1, b2):
    """ad_{ξ'_k}^T h = [-w x h_v; -v x h_v - w x h_w] as a 6-tuple."""
    t = _ad6T((xp[k, 0], xp[k, 1], xp[k, 2], xp[k, 3], xp[k, 4], xp[k, 5]), (a0, a1, a2, b0, b1, b2))
    return (-t[0], -t[1], -t[2], -t[3], -t[4], -t[5])
@njit(cache=True, inline=INLINE)
def _M_link(m, c, Ic, j, x0, x1, x2, x3, x4, x5):
    """M^bb_ij x (eq. 8 in closed form) for link j: f = m (x_v + x_w x c), [f; c x f + Ic x_w]."""
    c0, c1, c2 = c[j, 0], c[j, 1], c[j, 2]
    f0 = m * (x0 + x4 * c2 - x5 * c1)
    f1 = m * (x1 + x5 * c0 - x3 * c2)
    f2 = m * (x2 + x3 * c1 - x4 * c0)
    return (f0, f1, f2,
            c1 * f2 - c2 * f1 + Ic[j, 0, 0] * x3 + Ic[j, 0, 1] * x4 + Ic[j, 0, 2] * x5,
            c2 * f0 - c0 * f2 + Ic[j, 1, 0] * x3 + Ic[j, 1, 1] * x4 + Ic[j, 1, 2] * x5,
            c0 * f1 - c1 * f0 + Ic[j, 2, 0] * x3 + Ic[j, 2, 1] * x4 + Ic[j, 2, 2] * x5)


@njit(cache=True, inline=INLINE)
def _xp_dot(xp, b, t):
    return xp[b, 0] * t[0] + xp[b, 1] * t[1] + xp[b, 2] * t[2] + xp[b, 3] * t[3] + xp[b, 4] * t[4] + xp[b, 5] * t[5]


@njit(cache=True, inline=INLINE)
def _dM_apply(xp, k, j, m, c, Ic, u, h, l_out):
    """Directional derivative (∂M_ij/∂θ_ik) x for link j, k <= j (Lemma 3, corrected in §1.13):
    ∂M^bb/∂θ_k = -ad_k^T M^bb - M^bb ad_k with ad_k = ad_{ξ'_k}, and ∂ξ'_β/∂θ_k = ad_k ξ'_β for β > k.

    ``u`` = X_b + Σ_{β<=k} ξ'_β x_β, ``h`` = M^bb (X_b + Σ_{β<=j} ξ'_β x_β) (6-tuples). Returns the base rows
    (6-tuple) and writes the leg rows β <= j into ``l_out``."""
    a = _ad_xp(xp, k, u[0], u[1], u[2], u[3], u[4], u[5])
    b = _M_link(m, c, Ic, j, a[0], a[1], a[2], a[3], a[4], a[5])
    t = _adT_xp(xp, k, h[0], h[1], h[2], h[3], h[4], h[5])
    g = (-t[0] - b[0], -t[1] - b[1], -t[2] - b[2], -t[3] - b[3], -t[4] - b[4], -t[5] - b[5])
    for beta in range(j + 1):
        val = _xp_dot(xp, beta, g)
        if beta > k:
            e = _ad_xp(xp, k, xp[beta, 0], xp[beta, 1], xp[beta, 2], xp[beta, 3], xp[beta, 4], xp[beta, 5])
            val += e[0] * h[0] + e[1] * h[1] + e[2] * h[2] + e[3] * h[3] + e[4] * h[4] + e[5] * h[5]
        l_out[beta] = val
    return g


@njit(cache=True, inline=INLINE)
def _base_B_term(P, Wb, out_b, wb):
    """-½ ℬ w_b with ℬ = 2[[0, P̂_v], [P̂_v, P̂_w]] (eq. 38): the Euler-Poincaré term -ad_V^T 𝒫 for w = v."""
    p0, p1, p2, p3, p4, p5 = P[0], P[1], P[2], P[3], P[4], P[5]
    a0, a1, a2, b0, b1, b2 = Wb[0], Wb[1], Wb[2], Wb[3], Wb[4], Wb[5]
    out_b[0] -= wb * (p1 * b2 - p2 * b1)
    out_b[1] -= wb * (p2 * b0 - p0 * b2)
    out_b[2] -= wb * (p0 * b1 - p1 * b0)
    out_b[3] -= wb * ((p1 * a2 - p2 * a1) + (p4 * b2 - p5 * b1))
    out_b[4] -= wb * ((p2 * a0 - p0 * a2) + (p5 * b0 - p3 * b2))
    out_b[5] -= wb * ((p0 * a1 - p1 * a0) + (p3 * b1 - p4 * b0))


# ----------------------------------------------------------------------------------------------------------
# CRBA and RNEA on the legs, in X_b: the mass-matrix blocks, bias forces and 𝒥^T F of eq. 6-11, 27-28

#: float64 entries of ``_legs_crba_rnea``'s scratch per link slot: R 9, p 3, ξ' 6, c 3, Ic 9, f 6
LEG_SCRATCH = 36


@njit(cache=True, inline=INLINE)
def _legs_crba_rnea(data, counts, theta, v, gb, R_sb, f_world, with_crba, with_rnea, with_tip, Mb_l, Mbt, Mtt, hb_l,
                    h_l, scratch):
    """Mass-matrix blocks (CRBA) and bias forces (RNEA) of every leg i with its first ``counts[i]`` links.

    Both run in the frame X_b frozen at this instant: there the base's body twist V_b is also its spatial
    twist, and at v̇_b = 0 its acceleration is [-g_b; 0] with g_b = R_sb^T g_s (gravity as a base
    acceleration). ``xp[k]`` = ξ'_k, the joint twists in X_b (eq. 17), M^bb_k the link's spatial inertia in
    X_b (eq. 8).

    CRBA (``with_crba``), eq. 27-28 summed from the foot: the composite inertia Ĩ_k = Σ_{j>=k} M^bb_j gives
    𝓜^bθ[:, k] = Ĩ_k ξ'_k and 𝓜^θθ[l, k] = 𝓜^θθ[k, l] = ξ'_l · Ĩ_k ξ'_k (l <= k); the leg's share of M_bb is
    Ĩ_0 (into ``Mb_l[i]``).
    RNEA (``with_rnea``): V_k = V_{k-1} + ξ'_k θ̇_k, A_k = A_{k-1} + V_k × ξ'_k θ̇_k, link wrench
    f_k = M^bb_k A_k + V_k ×* M^bb_k V_k; the wrench through joint k, F_k = Σ_{j>=k} f_j - W_t, gives
    ``h_l[i, k]`` = ξ'_k · F_k and the leg's share of the base rows F_0 (into ``hb_l[i]``). So
    h = C(θ, v) v + 𝒩 - 𝒥^T F_t (eq. 6, 9, 11), W_t = [f; p_t × f] being the foot force ``f_world[i]`` (world
    axes, rotated to X_b) at the foot point, when the tip link is present and ``with_tip``.
    Only the slots of present links are written. All legs in one call: each array argument of a compiled
    call costs a reference-count round trip (see benchmarks/results/model.md). ``scratch``: float64 work space
    of ``LEG_SCRATCH * nmax`` entries (the caller's one allocation, see ``_work``)."""
    n_joints, joint_offset, mass, tip0 = data[D_N_JOINTS], data[D_JOINT_OFFSET], data[D_MASS], data[D_TIP0]
    nmax = data[D_XI].shape[1]
    R, p, xp = (cview(scratch, 0, (nmax, 3, 3)), cview(scratch, 9 * nmax, (nmax, 3)),
                cview(scratch, 12 * nmax, (nmax, 6)))
    c, Ic, f = (cview(scratch, 18 * nmax, (nmax, 3)), cview(scratch, 21 * nmax, (nmax, 3, 3)),
                cview(scratch, 30 * nmax, (nmax, 6)))
    for i in range(counts.shape[0]):
        m_i = counts[i]
        if m_i == 0:
            continue
        n = n_joints[i]
        off = 6 + joint_offset[i]
        leg_kinematics(data, i, theta, R, p, xp, c, Ic)
        F = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        if with_rnea:
            # ---- RNEA, outward: link twists, bias accelerations and wrenches
            V = (v[0], v[1], v[2], v[3], v[4], v[5])
            A = (-gb[0], -gb[1], -gb[2], 0.0, 0.0, 0.0)
            for k in range(m_i):
                qd = v[off + k]
                s = (xp[k, 0] * qd, xp[k, 1] * qd, xp[k, 2] * qd, xp[k, 3] * qd, xp[k, 4] * qd, xp[k, 5] * qd)
                V = (V[0] + s[0], V[1] + s[1], V[2] + s[2], V[3] + s[3], V[4] + s[4], V[5] + s[5])
                a = _ad6(V, s)
                A = (A[0] + a[0], A[1] + a[1], A[2] + a[2], A[3] + a[3], A[4] + a[4], A[5] + a[5])
                m = mass[i, k]
                IA = _M_link(m, c, Ic, k, A[0], A[1], A[2], A[3], A[4], A[5])
                IV = _M_link(m, c, Ic, k, V[0], V[1], V[2], V[3], V[4], V[5])
                e = _ad6T(V, IV)
                for r in range(6):
                    f[k, r] = IA[r] + e[r]
            if with_tip and m_i == n:
                # -𝒥_i^T F_i (eq. 11) for a pure force at the foot: W_t = [f; p_t × f], f in X_b axes
                q = n - 1
                pt0 = R[q, 0, 0] * tip0[i, 0, 3] + R[q, 0, 1] * tip0[i, 1, 3] + R[q, 0, 2] * tip0[i, 2, 3] + p[q, 0]
                pt1 = R[q, 1, 0] * tip0[i, 0, 3] + R[q, 1, 1] * tip0[i, 1, 3] + R[q, 1, 2] * tip0[i, 2, 3] + p[q, 1]
                pt2 = R[q, 2, 0] * tip0[i, 0, 3] + R[q, 2, 1] * tip0[i, 1, 3] + R[q, 2, 2] * tip0[i, 2, 3] + p[q, 2]
                g0 = R_sb[0, 0] * f_world[i, 0] + R_sb[1, 0] * f_world[i, 1] + R_sb[2, 0] * f_world[i, 2]
                g1 = R_sb[0, 1] * f_world[i, 0] + R_sb[1, 1] * f_world[i, 1] + R_sb[2, 1] * f_world[i, 2]
                g2 = R_sb[0, 2] * f_world[i, 0] + R_sb[1, 2] * f_world[i, 1] + R_sb[2, 2] * f_world[i, 2]
                F = (-g0, -g1, -g2, -(pt1 * g2 - pt2 * g1), -(pt2 * g0 - pt0 * g2), -(pt0 * g1 - pt1 * g0))
        # ---- inward: composite inertia Ĩ_k as mass, first moment h = Σ m c and inertia J about X_b's origin
        cm, h0, h1, h2 = 0.0, 0.0, 0.0, 0.0
        J00, J01, J02, J11, J12, J22 = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
        for k in range(m_i - 1, -1, -1):
            if with_rnea:
                F = (F[0] + f[k, 0], F[1] + f[k, 1], F[2] + f[k, 2], F[3] + f[k, 3], F[4] + f[k, 4], F[5] + f[k, 5])
                h_l[i, k] = _xp_dot(xp, k, F)
            if not with_crba:
                continue
            m = mass[i, k]
            c0, c1, c2 = c[k, 0], c[k, 1], c[k, 2]
            cc = c0 * c0 + c1 * c1 + c2 * c2
            cm += m
            h0 += m * c0
            h1 += m * c1
            h2 += m * c2
            J00 += Ic[k, 0, 0] + m * (cc - c0 * c0)      # J = Ic + m (|c|^2 1 - c c^T)
            J01 += Ic[k, 0, 1] - m * c0 * c1
            J02 += Ic[k, 0, 2] - m * c0 * c2
            J11 += Ic[k, 1, 1] + m * (cc - c1 * c1)
            J12 += Ic[k, 1, 2] - m * c1 * c2
            J22 += Ic[k, 2, 2] + m * (cc - c2 * c2)
            # Ĩ_k ξ'_k = [m x_v + x_w × h; h × x_v + J x_w]
            x0, x1, x2, x3, x4, x5 = xp[k, 0], xp[k, 1], xp[k, 2], xp[k, 3], xp[k, 4], xp[k, 5]
            col = (cm * x0 + x4 * h2 - x5 * h1, cm * x1 + x5 * h0 - x3 * h2, cm * x2 + x3 * h1 - x4 * h0,
                   h1 * x2 - h2 * x1 + J00 * x3 + J01 * x4 + J02 * x5,
                   h2 * x0 - h0 * x2 + J01 * x3 + J11 * x4 + J12 * x5,
                   h0 * x1 - h1 * x0 + J02 * x3 + J12 * x4 + J22 * x5)
            for r in range(6):
                Mbt[i, r, k] = col[r]
            for l in range(k + 1):
                val = _xp_dot(xp, l, col)
                Mtt[i, l, k] = val
                Mtt[i, k, l] = val
        for r in range(6):
            hb_l[i, r] = F[r]
        if not with_crba:
            continue
        # the leg's share of M_bb: Ĩ_0 = [[m 1, -ĥ], [ĥ, J]]
        Mb = Mb_l[i]
        Mb[0, 0], Mb[0, 1], Mb[0, 2], Mb[0, 3], Mb[0, 4], Mb[0, 5] = cm, 0.0, 0.0, 0.0, h2, -h1
        Mb[1, 0], Mb[1, 1], Mb[1, 2], Mb[1, 3], Mb[1, 4], Mb[1, 5] = 0.0, cm, 0.0, -h2, 0.0, h0
        Mb[2, 0], Mb[2, 1], Mb[2, 2], Mb[2, 3], Mb[2, 4], Mb[2, 5] = 0.0, 0.0, cm, h1, -h0, 0.0
        Mb[3, 0], Mb[3, 1], Mb[3, 2], Mb[3, 3], Mb[3, 4], Mb[3, 5] = 0.0, -h2, h1, J00, J01, J02
        Mb[4, 0], Mb[4, 1], Mb[4, 2], Mb[4, 3], Mb[4, 4], Mb[4, 5] = h2, 0.0, -h0, J01, J11, J12
        Mb[5, 0], Mb[5, 1], Mb[5, 2], Mb[5, 3], Mb[5, 4], Mb[5, 5] = -h1, h0, 0.0, J02, J12, J22


# ----------------------------------------------------------------------------------------------------------
# the paper's Coriolis terms (eq. 36-43), for the matrix C(θ, v)

@njit(cache=True)
def _leg_coriolis(data, counts, theta, v, w, same, wa, wde, bias_b, bias_l, P):
    """The paper's Coriolis terms without the ℬ term, wa·𝒜 w - ½ wde·(𝒟 w_b + ℰ w_θ) (eq. 36-43), and the
    momentum 𝒫 (eq. 41) of every leg i with its first ``counts[i]`` links, into that leg's slot [i]
    (``bias_b``, ``P``: (L, 6), zeroed by the caller). ``same`` means w is v.
    (Used for the matrix C(θ, v) itself; the bias forces C v + 𝒩 come from the RNEA, ``_legs_crba_rnea``,
    which gives the same vector: test_model_physics checks C v + 𝒩 against it.)"""
    n_joints, joint_offset, mass = data[D_N_JOINTS], data[D_JOINT_OFFSET], data[D_MASS]
    nmax = data[D_XI].shape[1]
    R, p, xp, c, Ic = (np.empty((nmax, 3, 3)), np.empty((nmax, 3)), np.empty((nmax, 6)), np.empty((nmax, 3)),
                       np.empty((nmax, 3, 3)))
    Sv, Sw, lv, lw = np.empty((nmax, 6)), np.empty((nmax, 6)), np.empty(nmax), np.empty(nmax)
    for i in range(counts.shape[0]):
        m_i = counts[i]
        if m_i == 0:
            continue
        off = 6 + joint_offset[i]
        leg_kinematics(data, i, theta, R, p, xp, c, Ic)
        for j in range(m_i):
            m = mass[i, j]
            # link velocities V + Σ_{β<=b} ξ'_β θ̇_β (prefix sums Sv[b]; Sw[b] the same for w)
            for b in range(j + 1):
                for r in range(6):
                    Sv[b, r] = (Sv[b - 1, r] if b > 0 else v[r]) + xp[b, r] * v[off + b]
                    Sw[b, r] = (Sw[b - 1, r] if b > 0 else w[r]) + xp[b, r] * w[off + b]
            hv = _M_link(m, c, Ic, j, Sv[j, 0], Sv[j, 1], Sv[j, 2], Sv[j, 3], Sv[j, 4], Sv[j, 5])
            for r in range(6):
                P[i, r] += hv[r]
            hw = hv
            if not same:
                hw = _M_link(m, c, Ic, j, Sw[j, 0], Sw[j, 1], Sw[j, 2], Sw[j, 3], Sw[j, 4], Sw[j, 5])
            for k in range(j + 1):
                gv = _dM_apply(xp, k, j, m, c, Ic, (Sv[k, 0], Sv[k, 1], Sv[k, 2], Sv[k, 3], Sv[k, 4], Sv[k, 5]),
                               hv, lv)
                tk = v[off + k] * wa
                if same:
                    gw = gv
                    for beta in range(j + 1):
                        bias_l[i, beta] += lv[beta] * tk
                else:
                    gw = _dM_apply(xp, k, j, m, c, Ic, (Sw[k, 0], Sw[k, 1], Sw[k, 2], Sw[k, 3], Sw[k, 4], Sw[k, 5]),
                                   hw, lw)
                    for beta in range(j + 1):
                        bias_l[i, beta] += lw[beta] * tk
                # 𝒜 w = Σ_k (∂M_ij/∂θ_k w) θ̇_k      (eq. 37)
                for r in range(6):
                    bias_b[i, r] += gw[r] * tk
                # -½ (𝒟 w_b + ℰ w_θ)_k = -½ w^T (∂M_ij/∂θ_k) v      (eq. 39-40, 42-43)
                sdot = w[0] * gv[0] + w[1] * gv[1] + w[2] * gv[2] + w[3] * gv[3] + w[4] * gv[4] + w[5] * gv[5]
                for beta in range(j + 1):
                    sdot += w[off + beta] * lv[beta]
                bias_l[i, k] -= 0.5 * wde * sdot


# ----------------------------------------------------------------------------------------------------------
# small dense Cholesky for the arrowhead solve

@njit(cache=True, inline=INLINE)
def _chol(A, i, n):
    """In-place lower Cholesky of A[i, :n, :n]; returns False if it is not positive definite."""
    for j in range(n):
        s = A[i, j, j]
        for k in range(j):
            s -= A[i, j, k] * A[i, j, k]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        A[i, j, j] = d
        for r in range(j + 1, n):
            s = A[i, r, j]
            for k in range(j):
                s -= A[i, r, k] * A[i, j, k]
            A[i, r, j] = s / d
    return True


@njit(cache=True, inline=INLINE)
def _chol_solve(Lm, i, n, b, bi):
    """Solve (L L^T) x = b in place, L = Lm[i, :n, :n], x = b[bi, :n]."""
    for r in range(n):
        s = b[bi, r]
        for k in range(r):
            s -= Lm[i, r, k] * b[bi, k]
        b[bi, r] = s / Lm[i, r, r]
    for r in range(n - 1, -1, -1):
        s = b[bi, r]
        for k in range(r + 1, n):
            s -= Lm[i, k, r] * b[bi, k]
        b[bi, r] = s / Lm[i, r, r]


@njit(cache=True, inline=INLINE)
def _solve_arrowhead(data, counts, Mbb, Mbt, Mtt, rb, rl, out):
    """Solve the block-arrow system of eq. 27 (θθ block-diagonal per leg) by the Schur complement on the
    6x6 base block; write the full-size v̇ into ``out``. Per leg A_i = 𝓜^θθ = L_i L_i^T, B_i = 𝓜^bθ,
    Z_i = L_i^-1 B_i^T, z_i = L_i^-1 r_i: S = M_bb - Σ Z_i^T Z_i, S v̇_b = r_b - Σ Z_i^T z_i, then
    v̇_i = L_i^-T (z_i - Z_i v̇_b) (forward substitutions only for the 6 columns; S built on its lower triangle).
    In place, no scratch arrays: Mtt's lower triangles become L_i, Mbt[i] becomes Z_i^T, rl[i] z_i, Mbb S's
    Cholesky factor and rb v̇_b. Returns False if a block is not positive definite."""
    L = counts.shape[0]
    joint_offset = data[D_JOINT_OFFSET]
    S = cview(Mbb, 0, (1, 6, 6))
    r = cview(rb, 0, (1, 6))
    for i in range(L):
        m = counts[i]
        if m == 0:
            continue
        if not _chol(Mtt, i, m):
            return False
        # forward substitution L_i [Z_i | z_i] = [B_i^T | r_i]
        for a in range(m):
            d = Mtt[i, a, a]
            for q in range(6):
                t = Mbt[i, q, a]
                for k in range(a):
                    t -= Mtt[i, a, k] * Mbt[i, q, k]
                Mbt[i, q, a] = t / d
            t = rl[i, a]
            for k in range(a):
                t -= Mtt[i, a, k] * rl[i, k]
            rl[i, a] = t / d
        for q in range(6):
            t = 0.0
            for a in range(m):
                t += Mbt[i, q, a] * rl[i, a]
            r[0, q] -= t
            for q2 in range(q + 1):
                t = 0.0
                for a in range(m):
                    t += Mbt[i, q, a] * Mbt[i, q2, a]
                S[0, q, q2] -= t
    if not _chol(S, 0, 6):
        return False
    _chol_solve(S, 0, 6, r, 0)
    out[:] = 0.0
    for q in range(6):
        out[q] = rb[q]
    for i in range(L):
        m = counts[i]
        off = 6 + joint_offset[i]
        # back substitution L_i^T v̇_i = z_i - Z_i v̇_b
        for a in range(m - 1, -1, -1):
            t = rl[i, a]
            for q in range(6):
                t -= Mbt[i, q, a] * rb[q]
            for k in range(a + 1, m):
                t -= Mtt[i, k, a] * out[off + k]
            out[off + a] = t / Mtt[i, a, a]
    return True


# ----------------------------------------------------------------------------------------------------------
# public kernels (full-size vectors + mask)

@njit(cache=True, inline=INLINE)
def link_counts(data, mask, out):
    """out[i] = number of present links of leg i (the morphology is valid: present links form a prefix);
    returns ``out`` (int64, (L,))."""
    n_joints = data[D_N_JOINTS]
    L = n_joints.shape[0]
    for i in range(L):
        k = 0
        while k < n_joints[i] and mask[i, k] > 0.5:
            k += 1
        out[i] = k
    return out


@njit(cache=True, inline=INLINE)
def _finite(x):
    """No NaN or inf in the vector x."""
    total = 0.0
    for r in range(x.shape[0]):
        total += x[r] * 0.0
    return total == 0.0


@njit(cache=True, inline=INLINE)
def _gravity_in_base(data, R_sb, gravity_on):
    """g_b = R_sb^T g_s as a 3-tuple (zeros without gravity)."""
    if not gravity_on:
        return (0.0, 0.0, 0.0)
    g = data[D_GRAVITY]
    return (R_sb[0, 0] * g[0] + R_sb[1, 0] * g[1] + R_sb[2, 0] * g[2],
            R_sb[0, 1] * g[0] + R_sb[1, 1] * g[1] + R_sb[2, 1] * g[2],
            R_sb[0, 2] * g[0] + R_sb[1, 2] * g[1] + R_sb[2, 2] * g[2])


@njit(cache=True, inline=INLINE)
def _body_crba_rnea(data, v, gb, with_rnea, Mbb, h_b):
    """The main body's own terms: Mbb = M^bb_b (eq. 8) and h_b = M^bb_b A_b + V_b ×* M^bb_b V_b with
    A_b = [-g_b; 0] (its RNEA wrench: gravity, eq. 9, and the Euler-Poincaré term -ad_V^T 𝒫, eq. 38)."""
    body_mass, body_com, body_Ic = data[D_BODY_MASS][0], cview(data[D_BODY_COM], 0, (1, 3)), data[D_BODY_IC]
    _inertia_matrix(body_mass, body_com[0], body_Ic, Mbb)
    if not with_rnea:
        h_b[:] = 0.0
        return
    Ic = cview(body_Ic, 0, (1, 3, 3))
    V = (v[0], v[1], v[2], v[3], v[4], v[5])
    IA = _M_link(body_mass, body_com, Ic, 0, -gb[0], -gb[1], -gb[2], 0.0, 0.0, 0.0)
    IV = _M_link(body_mass, body_com, Ic, 0, V[0], V[1], V[2], V[3], V[4], V[5])
    e = _ad6T(V, IV)
    for r in range(6):
        h_b[r] = IA[r] + e[r]


@njit(cache=True, inline=INLINE)
def _work(data):
    """The work arrays of one ``_crba_rnea`` call, carved from ONE allocation: M_bb, 𝓜^bθ and 𝓜^θθ per leg,
    h base and per leg (its outputs), each leg's share of M_bb and h_b, the link counts (int64) and the legs'
    scratch (``_legs_crba_rnea``). One np.empty instead of 14: each costs ~50 ns on numba 0.55 and ~20 ns on
    0.68, together a fifth of a mass-matrix call on the older one (bench_model, 2026-11-23)."""
    L = data[D_N_JOINTS].shape[0]
    nmax = data[D_XI].shape[1]
    w = np.empty(36 + L * 6 * nmax + L * nmax * nmax + 6 + L * nmax + L * 36 + L * 6 + L + LEG_SCRATCH * nmax)
    Mbb = cview(w, 0, (6, 6))
    a = 36
    Mbt = cview(w, a, (L, 6, nmax))
    a += L * 6 * nmax
    Mtt = cview(w, a, (L, nmax, nmax))
    a += L * nmax * nmax
    h_b = cview(w, a, (6,))
    a += 6
    h_l = cview(w, a, (L, nmax))
    a += L * nmax
    Mb_l = cview(w, a, (L, 6, 6))
    a += L * 36
    hb_l = cview(w, a, (L, 6))
    a += L * 6
    counts = w[a:a + L].view(np.int64)
    return Mbb, Mbt, Mtt, h_b, h_l, Mb_l, hb_l, counts, w[a + L:]


@njit(cache=True, inline=INLINE)
def _crba_rnea(data, R_sb, theta, v, f_world, mask, gravity_on, with_crba, with_rnea, with_tip, work):
    """Mass-matrix blocks (eq. 27) and h = C(θ, v) v + 𝒩 - 𝒥^T F_t of the whole robot: the main body's own
    terms plus every leg's share (``_legs_crba_rnea``), into the arrays of ``work`` (``_work``: M_bb, 𝓜^bθ,
    𝓜^θθ, h_b, h_l, ...). Returns the link counts of ``mask``."""
    Mbb, Mbt, Mtt, h_b, h_l, Mb_l, hb_l, counts, scratch = work
    L = data[D_N_JOINTS].shape[0]
    link_counts(data, mask, counts)
    gb = _gravity_in_base(data, R_sb, gravity_on)
    _body_crba_rnea(data, v, gb, with_rnea, Mbb, h_b)
    _legs_crba_rnea(data, counts, theta, v, gb, R_sb, f_world, with_crba, with_rnea, with_tip, Mb_l, Mbt, Mtt, hb_l,
                    h_l, scratch)
    for i in range(L):
        if counts[i] == 0:
            continue
        for r in range(6):
            h_b[r] += hb_l[i, r]
            if with_crba:
                for t in range(6):
                    Mbb[r, t] += Mb_l[i, r, t]
    return counts


@njit(cache=True)
def forward_dynamics(data, R_sb, theta, v, tau, f_world, mask, vdot_out, joint_diag):
    """v̇ = M^-1 (τ + 𝒥^T F - C v - 𝒩)   (eq. 6), full-size vectors, morphology by ``mask``: M by CRBA, the
    rest by RNEA (``_legs_crba_rnea``), then the block-arrow solve of eq. 27 (``_solve_arrowhead``).

    ``f_world[i]`` is the world-frame force at leg i's foot (ignored when the tip link is missing);
    ``tau`` base rows are applied as given (0 for an unactuated base).
    ``joint_diag`` (full joint order) is added to M's joint diagonal: (M + diag) v̇ = ..., which is how a
    simulator treats joint damping implicitly (D-term at v_{n+1}, as MuJoCo's implicitfast); an empty array
    adds nothing. (Not an optional argument: numba 0.55 spends ~0.4 µs per call folding an omitted default,
    a tenth of the call; and one signature compiles once.)
    Returns False if M is not positive definite or the result is not finite (NaN/inf in the inputs)."""
    data = model(data)
    L = data[D_N_JOINTS].shape[0]
    work = _work(data)
    Mbb, Mbt, Mtt, h_b, h_l = work[0], work[1], work[2], work[3], work[4]
    counts = _crba_rnea(data, R_sb, theta, v, f_world, mask, True, True, True, True, work)
    joint_offset = data[D_JOINT_OFFSET]
    # right-hand side τ - h in place
    for r in range(6):
        h_b[r] = tau[r] - h_b[r]
    for i in range(L):
        off = 6 + joint_offset[i]
        for a in range(counts[i]):
            h_l[i, a] = tau[off + a] - h_l[i, a]
            if joint_diag.shape[0] > 0:
                Mtt[i, a, a] += joint_diag[off - 6 + a]
    ok = _solve_arrowhead(data, counts, Mbb, Mbt, Mtt, h_b, h_l, vdot_out)
    return ok and _finite(vdot_out)


@njit(cache=True)
def mass_matrix(data, theta, mask, out):
    """Dense M(θ) (eq. 27, by CRBA: ``_legs_crba_rnea``) of size nv_full; rows/columns of missing joints are
    zero. Returns False if ``theta`` is not finite."""
    data = model(data)
    L = data[D_N_JOINTS].shape[0]
    work = _work(data)
    Mbb, Mbt, Mtt = work[0], work[1], work[2]
    # (R_sb and f_world are not read without gravity and tip forces)
    counts = _crba_rnea(data, Mbb, theta, theta, Mbb, mask, False, True, False, False, work)
    nvf = out.shape[0]
    for r in range(nvf):
        for t in range(nvf):
            out[r, t] = 0.0
    for r in range(6):
        for t in range(6):
            out[r, t] = Mbb[r, t]
    joint_offset = data[D_JOINT_OFFSET]
    for i in range(L):
        off = 6 + joint_offset[i]
        m = counts[i]
        for a in range(m):
            for q in range(6):
                out[q, off + a] = Mbt[i, q, a]
                out[off + a, q] = Mbt[i, q, a]
            for b in range(m):
                out[off + a, off + b] = Mtt[i, a, b]
    return _finite(theta)


@njit(cache=True)
def bias_forces(data, R_sb, theta, v, mask, gravity_on, out):
    """out = C(θ, v) v + 𝒩(Q) (with gravity_on) — Pinocchio's nonLinearEffects — by RNEA
    (``_legs_crba_rnea``). Returns False if an input is not finite."""
    data = model(data)
    L = data[D_N_JOINTS].shape[0]
    work = _work(data)
    h_b, h_l = work[3], work[4]
    counts = _crba_rnea(data, R_sb, theta, v, h_l, mask, gravity_on, False, True, False, work)
    _scatter(data, counts, h_b, h_l, out)
    return _finite(theta) and _finite(v) and math.isfinite(R_sb[0, 0] + R_sb[0, 1] + R_sb[0, 2] + R_sb[1, 0] + R_sb[1, 1]
                                                           + R_sb[1, 2] + R_sb[2, 0] + R_sb[2, 1] + R_sb[2, 2])


@njit(cache=True)
def coriolis_apply(data, theta, v, w, mask, out, wa=1.0, wb=1.0, wde=1.0):
    """out = C(θ, v) w = (wa 𝒜 - ½ [[wb ℬ, 0], [wde 𝒟, wde ℰ]]) w  (eq. 36-43), full size.

    With the default weights this is the paper's C; C(θ,v) v + 𝒩 are the bias forces."""
    data = model(data)
    n_joints = data[D_N_JOINTS]
    L = n_joints.shape[0]
    nmax = data[D_XI].shape[1]
    counts = link_counts(data, mask, np.empty(L, dtype=np.int64))
    same = False
    base_l = np.zeros((2, L, 6))       # per-leg slots of the base rows and of 𝒫, summed below
    bias_l = np.zeros((L, nmax))
    _leg_coriolis(data, counts, theta, v, w, same, wa, wde, base_l[0], bias_l, base_l[1])
    body_mass, body_com, body_Ic = data[D_BODY_MASS][0], data[D_BODY_COM], data[D_BODY_IC]
    P = np.empty(6)
    _inertia_apply(body_mass, body_com, body_Ic, v[0:6], P)      # 𝒫 of the main body (eq. 41)
    bias_b = np.zeros(6)
    for i in range(L):
        for r in range(6):
            bias_b[r] += base_l[0, i, r]
            P[r] += base_l[1, i, r]
    _base_B_term(P, w[0:6], bias_b, wb)
    _scatter(data, counts, bias_b, bias_l, out)


@njit(cache=True)
def _scatter(data, counts, xb, xl, out):
    out[:] = 0.0
    out[0:6] = xb
    joint_offset = data[D_JOINT_OFFSET]
    for i in range(counts.shape[0]):
        off = 6 + joint_offset[i]
        for a in range(counts[i]):
            out[off + a] = xl[i, a]


@njit(cache=True)
def coriolis_matrix(data, theta, v, mask, skew, out):
    """Dense C(θ, v), column by column as C(θ, v) e_m.

    ``skew=False``: the paper's C = 𝒜 - ½[[ℬ, 0], [𝒟, ℰ]] (eq. 36). It gives the right C v and
    v^T (Ṁ - 2C) v = 0, but Ṁ - 2C is not skew-symmetric as a matrix.
    ``skew=True``: C* = ½𝒜 - ½[[ℬ, 0], [0, 0]] + ½(K^T - K) with K = [[0, 0], [𝒟, ℰ]], built from the same
    paper terms. C* v = C v (because K^T v = 𝒜 v = Ṁ v) and Ṁ - 2C* is skew-symmetric (ℬ is skew)."""
    data = model(data)
    nvf = out.shape[0]
    e = np.zeros(nvf)
    col = np.empty(nvf)
    K = np.empty((nvf, nvf))
    for mcol in range(nvf):
        e[:] = 0.0
        e[mcol] = 1.0
        if skew:
            coriolis_apply(data, theta, v, e, mask, col, 0.5, 1.0, 0.0)
            out[:, mcol] = col
            coriolis_apply(data, theta, v, e, mask, col, 0.0, 0.0, 1.0)   # -½ K e_m
            K[:, mcol] = -2.0 * col
        else:
            coriolis_apply(data, theta, v, e, mask, col, 1.0, 1.0, 1.0)   # the defaults, typed as above: one compile
            out[:, mcol] = col
    if skew:
        for r in range(nvf):
            for c in range(nvf):
                out[r, c] += 0.5 * (K[c, r] - K[r, c])



@njit(cache=True)
def tip_poses(data, theta, out):
    """out[i] = g_{b,it}(θ) = e^{ξ_i1 θ_i1} ... e^{ξ_in θ_in} g_{b,it}(0), 4x4, for every leg."""
    data = model(data)
    n_joints, tip0 = data[D_N_JOINTS], data[D_TIP0]
    L = n_joints.shape[0]
    nmax = data[D_XI].shape[1]
    R = np.empty((nmax, 3, 3))
    p = np.empty((nmax, 3))
    xp = np.empty((nmax, 6))
    c = np.empty((nmax, 3))
    Ic = np.empty((nmax, 3, 3))
    for i in range(L):
        n = n_joints[i]
        leg_kinematics(data, i, theta, R, p, xp, c, Ic)
        out[i, :, :] = 0.0
        _mm3(R[n - 1], tip0[i, 0:3, 0:3], out[i, 0:3, 0:3])
        _mv3(R[n - 1], tip0[i, 0:3, 3], out[i, 0:3, 3])
        for r in range(3):
            out[i, r, 3] += p[n - 1, r]
        out[i, 3, 3] = 1.0


@njit(cache=True)
def tip_jacobians(data, theta, out):
    """out[i] (6 x nv_full) = Ad^-1_{g_b,it} [1_6, J_it] (eq. 11): maps v to the body velocity of leg i's tip
    frame, in the tip frame (Pinocchio's LOCAL frame Jacobian)."""
    data = model(data)
    n_joints, joint_offset, tip0 = data[D_N_JOINTS], data[D_JOINT_OFFSET], data[D_TIP0]
    L = n_joints.shape[0]
    nmax = data[D_XI].shape[1]
    R = np.empty((nmax, 3, 3))
    p = np.empty((nmax, 3))
    xp = np.empty((nmax, 6))
    c = np.empty((nmax, 3))
    Ic = np.empty((nmax, 3, 3))
    col = np.empty(6)
    t = np.empty(3)
    Rt = np.empty((3, 3))
    pt = np.empty(3)
    u = np.empty(3)
    out[:, :, :] = 0.0
    for i in range(L):
        n = n_joints[i]
        leg_kinematics(data, i, theta, R, p, xp, c, Ic)
        _mm3(R[n - 1], tip0[i, 0:3, 0:3], Rt)
        _mv3(R[n - 1], tip0[i, 0:3, 3], pt)
        for r in range(3):
            pt[r] += p[n - 1, r]
        off = 6 + joint_offset[i]
        for m in range(6 + n):
            col[:] = 0.0
            if m < 6:
                col[m] = 1.0
            else:
                col[:] = xp[m - 6]
            # Ad^-1_{(Rt,pt)} [v; w] = [Rt^T (v - pt x w); Rt^T w]
            _cross(pt, col[3:6], t)
            for r in range(3):
                u[r] = col[r] - t[r]
            dst = m if m < 6 else off + (m - 6)
            _mtv3(Rt, u, out[i, 0:3, dst])
            _mtv3(Rt, col[3:6], out[i, 3:6, dst])


@njit(cache=True)
def tip_state(data, R_sb, p_sb, theta, v, pos_out, vel_out):
    """World-frame foot positions and velocities of every leg (L,3): p = p_sb + R_sb p_t,
    ṗ = R_sb (V_v + V_w x p_t + Σ_k (ξ'_k,v + ξ'_k,w x p_t) θ̇_k)."""
    data = model(data)
    n_joints, joint_offset, tip0 = data[D_N_JOINTS], data[D_JOINT_OFFSET], data[D_TIP0]
    L = n_joints.shape[0]
    nmax = data[D_XI].shape[1]
    R = np.empty((nmax, 3, 3))
    p = np.empty((nmax, 3))
    xp = np.empty((nmax, 6))
    c = np.empty((nmax, 3))
    Ic = np.empty((nmax, 3, 3))
    t = np.empty(3)
    pt = np.empty(3)
    tw = np.empty(6)
    for i in range(L):
        n = n_joints[i]
        off = 6 + joint_offset[i]
        leg_kinematics(data, i, theta, R, p, xp, c, Ic)
        _mv3(R[n - 1], tip0[i, 0:3, 3], pt)
        for r in range(3):
            pt[r] += p[n - 1, r]
        for r in range(6):
            tw[r] = v[r]
        for k in range(n):
            for r in range(6):
                tw[r] += xp[k, r] * v[off + k]
        _cross(tw[3:6], pt, t)
        for r in range(3):
            t[r] += tw[r]
        _mv3(R_sb, pt, pos_out[i])
        _mv3(R_sb, t, vel_out[i])
        for r in range(3):
            pos_out[i, r] += p_sb[r]


@njit(cache=True)
def se3_step(R, p, V, dt):
    """In place: g <- g exp(V^ dt) for the body twist V = [v; w] (exact exponential on SE(3)).

    exp([ρ; φ]^) = (R_e, V_m ρ) with R_e = 1 + A φ̂ + B φ̂², V_m = 1 + B φ̂ + C φ̂², A = sin a / a,
    B = (1 - cos a) / a², C = (a - sin a) / a³, a = |φ| (Modern Robotics eq. 3.51, 3.88). Scalar code: the
    engine calls this every step, and each temporary array cost ~20-50 ns (there were 11)."""
    r0, r1, r2 = V[0] * dt, V[1] * dt, V[2] * dt
    f0, f1, f2 = V[3] * dt, V[4] * dt, V[5] * dt
    a2 = f0 * f0 + f1 * f1 + f2 * f2
    a = math.sqrt(a2)
    if a < 1e-6:   # series: sin(a)/a, (1-cos a)/a^2, (a - sin a)/a^3
        A = 1.0 - a2 / 6.0
        B = 0.5 - a2 / 24.0
        Cc = 1.0 / 6.0 - a2 / 120.0
    else:
        A = math.sin(a) / a
        B = (1.0 - math.cos(a)) / a2
        Cc = (a - math.sin(a)) / (a2 * a)
    # φ̂ φ̂ = φ φ^T - a² 1 (symmetric)
    k00, k11, k22 = f0 * f0 - a2, f1 * f1 - a2, f2 * f2 - a2
    k01, k02, k12 = f0 * f1, f0 * f2, f1 * f2
    # R_e = 1 + A φ̂ + B φ̂²
    e00, e01, e02 = 1.0 + B * k00, -A * f2 + B * k01, A * f1 + B * k02
    e10, e11, e12 = A * f2 + B * k01, 1.0 + B * k11, -A * f0 + B * k12
    e20, e21, e22 = -A * f1 + B * k02, A * f0 + B * k12, 1.0 + B * k22
    # t = V_m ρ
    t0 = r0 + B * (f1 * r2 - f2 * r1) + Cc * (k00 * r0 + k01 * r1 + k02 * r2)
    t1 = r1 + B * (f2 * r0 - f0 * r2) + Cc * (k01 * r0 + k11 * r1 + k12 * r2)
    t2 = r2 + B * (f0 * r1 - f1 * r0) + Cc * (k02 * r0 + k12 * r1 + k22 * r2)
    # p += R t, then R <- R R_e in place (row r of R R_e needs only row r of R)
    for r in range(3):
        q0, q1, q2 = R[r, 0], R[r, 1], R[r, 2]
        p[r] += q0 * t0 + q1 * t1 + q2 * t2
        R[r, 0] = q0 * e00 + q1 * e10 + q2 * e20
        R[r, 1] = q0 * e01 + q1 * e11 + q2 * e21
        R[r, 2] = q0 * e02 + q1 * e12 + q2 * e22
    # re-orthonormalise (one Newton step toward the polar factor, R <- 1.5 R - 0.5 R (R^T R)) so round-off
    # cannot accumulate; G = R^T R is symmetric
    g00 = R[0, 0] * R[0, 0] + R[1, 0] * R[1, 0] + R[2, 0] * R[2, 0]
    g01 = R[0, 0] * R[0, 1] + R[1, 0] * R[1, 1] + R[2, 0] * R[2, 1]
    g02 = R[0, 0] * R[0, 2] + R[1, 0] * R[1, 2] + R[2, 0] * R[2, 2]
    g11 = R[0, 1] * R[0, 1] + R[1, 1] * R[1, 1] + R[2, 1] * R[2, 1]
    g12 = R[0, 1] * R[0, 2] + R[1, 1] * R[1, 2] + R[2, 1] * R[2, 2]
    g22 = R[0, 2] * R[0, 2] + R[1, 2] * R[1, 2] + R[2, 2] * R[2, 2]
    for r in range(3):
        q0, q1, q2 = R[r, 0], R[r, 1], R[r, 2]
        R[r, 0] = 1.5 * q0 - 0.5 * (q0 * g00 + q1 * g01 + q2 * g02)
        R[r, 1] = 1.5 * q1 - 0.5 * (q0 * g01 + q1 * g11 + q2 * g12)
        R[r, 2] = 1.5 * q2 - 0.5 * (q0 * g02 + q1 * g12 + q2 * g22)


@njit(cache=True)
def forward_dynamics_bank(data, R_sb, theta, v, tau, f_world, masks, out):
    """Forward dynamics for K morphology hypotheses at one state (``masks`` (K,L,nmax), ``out`` (K,nv)).

    The paper's modularity makes this cheap: a leg's blocks (its share of M_bb, 𝓜^bθ, 𝓜^θθ, its bias
    forces and 𝒥^T F) depend on that leg alone, so they are computed once for every prefix m = 0..n of every
    leg (the leg with its first m links) and each hypothesis only picks its legs' prefixes and solves one
    arrowhead system (6x6 Schur complement)."""
    data = model(data)
    n_joints, joint_offset = data[D_N_JOINTS], data[D_JOINT_OFFSET]
    L = n_joints.shape[0]
    nmax = data[D_XI].shape[1]
    K = masks.shape[0]
    gb = _gravity_in_base(data, R_sb, True)
    pMb = np.empty((nmax + 1, L, 6, 6))
    pMbt = np.empty((nmax + 1, L, 6, nmax))
    pMtt = np.empty((nmax + 1, L, nmax, nmax))
    phb = np.empty((nmax + 1, L, 6))
    phl = np.empty((nmax + 1, L, nmax))
    prefix = np.empty(L, dtype=np.int64)
    scratch = np.empty(LEG_SCRATCH * nmax)
    for m in range(nmax + 1):
        for i in range(L):
            prefix[i] = min(m, n_joints[i])
        _legs_crba_rnea(data, prefix, theta, v, gb, R_sb, f_world, True, True, True, pMb[m], pMbt[m], pMtt[m], phb[m],
                        phl[m], scratch)
    Mb0 = np.empty((6, 6))
    hb0 = np.empty(6)
    _body_crba_rnea(data, v, gb, True, Mb0, hb0)
    Mbb = np.empty((6, 6))
    rb = np.empty(6)
    hMbt = np.empty((L, 6, nmax))
    hMtt = np.empty((L, nmax, nmax))
    rl = np.empty((L, nmax))
    counts = np.empty(L, dtype=np.int64)
    for kk in range(K):
        link_counts(data, masks[kk], counts)
        for r in range(6):
            rb[r] = tau[r] - hb0[r]
            for t in range(6):
                Mbb[r, t] = Mb0[r, t]
        for i in range(L):
            m = counts[i]
            if m == 0:
                continue
            for r in range(6):
                rb[r] -= phb[m, i, r]
                for t in range(6):
                    Mbb[r, t] += pMb[m, i, r, t]
            hMbt[i] = pMbt[m, i]
            hMtt[i] = pMtt[m, i]
            off = 6 + joint_offset[i]
            for a in range(m):
                rl[i, a] = tau[off + a] - phl[m, i, a]
        _solve_arrowhead(data, counts, Mbb, hMbt, hMtt, rb, rl, out[kk])
