"""Plain screw-theory functions on SE(3) (Murray-Li-Sastry / Modern Robotics style), for readers and tests.

Twists are ordered ``[v; w]`` (linear first, as in the paper eq. 2 and in Pinocchio), wrenches ``[f; n]``.
These are the readable reference versions; the compiled hot path in :mod:`.kernels` evaluates the same
expressions in closed form and is tested against these functions.
"""
import math

import numpy as np

#: how far from 1 the norm of a quaternion given as an orientation may be before it is rejected; the one
#: tolerance of every quaternion check in the package (messages, predictors, bags). Float32 rounding (1e-7) and
#: 4-decimal printing (~1e-4) pass; anything further from unit is not a rotation someone meant and is
#: rejected, never renormalised into one (looser bounds, "above 0.5" or +-0.1, let a flood of garbage through).
QUAT_NORM_TOL = 1e-3


def unit_quat(q, field="quat", error=ValueError):
    """Quaternion (4 components; (w, x, y, z) in the core) normalised, or ``error`` (a ``ValueError`` type)
    naming ``field`` unless it is 4 finite numbers with norm in [1 - QUAT_NORM_TOL, 1 + QUAT_NORM_TOL]."""
    a = np.asarray(q, dtype=float).reshape(-1)
    n = math.nan
    # the checks on Python floats, the norm as ``np.linalg.norm`` computes it (sqrt of the vector's dot with
    # itself: the same bits), without its ~10 µs of numpy dispatch on 4 numbers
    if a.shape == (4,) and all(map(math.isfinite, a.tolist())):
        v = a.ravel(order="K")
        n = math.sqrt(v.dot(v))
    if not abs(n - 1.0) <= QUAT_NORM_TOL:
        raise error("%s must be a finite unit quaternion (w, x, y, z) with norm in [%g, %g], got %r"
                         % (field, 1.0 - QUAT_NORM_TOL, 1.0 + QUAT_NORM_TOL, np.asarray(q).tolist()))
    return a / n


def cross3(a, b):
    """a x b of two length-3 sequences of Python floats, as a tuple: the operations and order of ``np.cross``
    (the same bits), without its ~20 us of array handling per call."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def wrap_angle(a):
    """Angle(s) [rad] wrapped to [-pi, pi): a float stays a float, an array an array (the one wrap of the package).

    >>> wrap_angle(3.5 * math.pi) == -0.5 * math.pi
    True
    """
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def hat3(w):
    """3-vector -> 3x3 skew matrix, so that ``hat3(w) @ x == cross(w, x)``."""
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def hat6(xi):
    """Twist ``[v; w]`` -> 4x4 element of se(3) ``[[hat(w), v], [0, 0]]`` (paper eq. 2)."""
    X = np.zeros((4, 4))
    X[:3, :3] = hat3(xi[3:])
    X[:3, 3] = xi[:3]
    return X


def rot_exp(w, theta=1.0):
    """Rodrigues' formula: rotation by ``theta`` about ``w`` (``w`` need not be unit; angle = theta*|w|)."""
    phi = np.asarray(w, float) * theta
    a = np.linalg.norm(phi)
    if a < 1e-12:
        return np.eye(3) + hat3(phi)
    K = hat3(phi / a)
    return np.eye(3) + np.sin(a) * K + (1.0 - np.cos(a)) * K @ K


def exp6(xi, theta=1.0):
    """Exponential map se(3) -> SE(3) of the twist ``xi * theta`` (closed form, any twist)."""
    xi = np.asarray(xi, float) * theta
    v, w = xi[:3], xi[3:]
    a = np.linalg.norm(w)
    g = np.eye(4)
    if a < 1e-12:
        g[:3, :3] = np.eye(3) + hat3(w)
        g[:3, 3] = v
        return g
    K = hat3(w / a)
    R = np.eye(3) + np.sin(a) * K + (1.0 - np.cos(a)) * K @ K
    V = np.eye(3) + (1.0 - np.cos(a)) / a * K + (a - np.sin(a)) / a * K @ K
    g[:3, :3] = R
    g[:3, 3] = V @ v
    return g


def inv(g):
    """Inverse of a 4x4 rigid transform."""
    R, p = g[:3, :3], g[:3, 3]
    gi = np.eye(4)
    gi[:3, :3] = R.T
    gi[:3, 3] = -R.T @ p
    return gi


def Ad(g):
    """Adjoint ``Ad_g = [[R, hat(p) R], [0, R]]`` (paper eq. 3): maps twists from frame b to frame a."""
    R, p = g[:3, :3], g[:3, 3]
    A = np.zeros((6, 6))
    A[:3, :3] = R
    A[:3, 3:] = hat3(p) @ R
    A[3:, 3:] = R
    return A


def ad(xi):
    """Small adjoint ``ad_xi = [[hat(w), hat(v)], [0, hat(w)]]`` (paper eq. 4): ``ad_xi eta = [xi, eta]``."""
    A = np.zeros((6, 6))
    A[:3, :3] = hat3(xi[3:])
    A[:3, 3:] = hat3(xi[:3])
    A[3:, 3:] = hat3(xi[3:])
    return A


def spatial_inertia(mass, com, I_com):
    """6x6 generalized mass matrix of a rigid body in a frame whose origin is not at the CoM.

    ``com`` is the CoM in that frame and ``I_com`` the rotational inertia about the CoM, in that frame's axes.
    Equals ``Ad_{g}^{-T} diag(m 1, I_com) Ad_{g}^{-1}`` with ``g`` the CoM frame (paper eq. 8 block M^bb).
    """
    C = hat3(com)
    M = np.zeros((6, 6))
    M[:3, :3] = mass * np.eye(3)
    M[:3, 3:] = -mass * C
    M[3:, :3] = mass * C
    M[3:, 3:] = I_com - mass * C @ C
    return M


def revolute_twist(axis, point):
    """Unit twist ``[-w x q; w]`` of a revolute joint with axis ``w`` through point ``q``."""
    w = np.asarray(axis, float)
    w = w / np.linalg.norm(w)
    return np.concatenate([-np.cross(w, point), w])


def _sqrt(x):
    """``np.sqrt`` of a Python float: NaN (not an exception) below 0."""
    return math.sqrt(x) if x >= 0.0 else math.nan


def rot_to_quat(R):
    """Unit quaternion (w, x, y, z), w >= 0, of a rotation matrix (Shepperd's method: no eigenproblem, so
    ~20x cheaper than ``transforms3d.quaternions.mat2quat``; same result for proper rotations). The arithmetic
    runs on Python floats (the same IEEE operations as on numpy scalars, without their overhead) and the norm
    is ``np.linalg.norm``'s (sqrt of the dot product: the same bits)."""
    (m00, m01, m02), (m10, m11, m12), (m20, m21, m22) = np.asarray(R, dtype=float)[:3, :3].tolist()
    tr = m00 + m11 + m22
    if tr > 0.0:
        s = 2.0 * _sqrt(tr + 1.0)
        q = (0.25 * s, (m21 - m12) / s, (m02 - m20) / s, (m10 - m01) / s)
    elif m00 > m11 and m00 > m22:
        s = 2.0 * _sqrt(1.0 + m00 - m11 - m22)
        q = ((m21 - m12) / s, 0.25 * s, (m01 + m10) / s, (m02 + m20) / s)
    elif m11 > m22:
        s = 2.0 * _sqrt(1.0 + m11 - m00 - m22)
        q = ((m02 - m20) / s, (m01 + m10) / s, 0.25 * s, (m12 + m21) / s)
    else:
        s = 2.0 * _sqrt(1.0 + m22 - m00 - m11)
        q = ((m10 - m01) / s, (m02 + m20) / s, (m12 + m21) / s, 0.25 * s)
    q = np.array(q)
    q /= math.sqrt(q.dot(q))
    return q if q[0] >= 0.0 else -q
