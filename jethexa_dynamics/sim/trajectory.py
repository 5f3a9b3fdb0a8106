"""An engine run's record (``Trajectory``): its row layout, ZYX Euler angles with the yaw unwrapped, CSV text.

A record row holds the state after a step and the inputs used during it, world frame (z up), SI units:
``t`` (s), base position ``p`` (m), rotation matrix ``R`` (row-major), base twist ``[v; w]`` in base_link
(m/s, rad/s), then per joint the angles, rates (rad, rad/s), set-points (rad) and torques (N·m), per foot the
world force (N), penetration depth (m, > 0 in contact) and position (m), and the base acceleration (6).
``record_layout`` names the column groups; the compiled ``record_row`` writes a row in that layout.

The CSV (``jethexa-sim``'s trajectory.csv): ``Trajectory.csv_header`` and ``csv_rows``, each value as
Python's ``"%.9g"`` (``sim.csv_format``). Euler angles: R = Rz(yaw) Ry(pitch) Rx(roll), as (roll, pitch, yaw)
rad, transforms3d's ``mat2euler(R, "sxyz")`` bit for bit, the yaw unwrapped as ``np.unwrap`` does.
"""
import math
import os

import numpy as np
from numba import njit

from .csv_format import format_rows

# the fixed columns of a record row; the per-joint and per-foot groups follow (``record_layout``)
R_T = 0
R_P = slice(1, 4)
R_R = slice(4, 13)       # rotation matrix, row-major
R_V = slice(13, 19)      # base twist [v; w] in base_link
N_FIXED = 19


def record_layout(nj, n_legs):
    """({group name: column slice}, number of columns) of a record row for nj joints and n_legs feet."""
    o = N_FIXED
    lay = {}
    for name, width in (("theta", nj), ("thetadot", nj), ("qdes", nj), ("tau", nj), ("force", 3 * n_legs),
                        ("depth", n_legs), ("foot", 3 * n_legs), ("vdot", 6)):
        lay[name] = slice(o, o + width)
        o += width
    return lay, o


# inlined into the engine's loop (numba IR): a call would pass a dozen arrays
@njit(cache=True, nogil=True, inline="always")
def record_row(row, t, R, p, v, theta, qdes, tau, force, depth, foot_pos, vdot):
    """Write one record row (``record_layout``'s groups in its order): ``v`` = [base twist, joint rates],
    ``tau`` the generalized forces (base 6, then joints), ``force``/``foot_pos`` (n_legs, 3)."""
    nj = theta.shape[0]
    nl = depth.shape[0]
    row[R_T] = t
    for r in range(3):
        row[1 + r] = p[r]
        for c in range(3):
            row[4 + 3 * r + c] = R[r, c]
    for r in range(6):
        row[13 + r] = v[r]
    o = N_FIXED
    for j in range(nj):                                  # theta, thetadot, qdes, tau
        row[o + j] = theta[j]
        row[o + nj + j] = v[6 + j]
        row[o + 2 * nj + j] = qdes[j]
        row[o + 3 * nj + j] = tau[6 + j]
    o += 4 * nj
    for i in range(nl):                                  # force, depth, foot
        for c in range(3):
            row[o + 3 * i + c] = force[i, c]
            row[o + 4 * nl + 3 * i + c] = foot_pos[i, c]
        row[o + 3 * nl + i] = depth[i]
    o += 7 * nl
    for r in range(6):                                   # vdot (base)
        row[o + r] = vdot[r]


class Trajectory:
    """Recorded rows of an engine run. ``data`` (n, ncols); column groups in ``layout``; names from the robot.

    Attributes/properties (world frame, SI): ``t``, ``pos`` (n,3), ``rot`` (n,3,3), ``twist`` (n,6) base
    twist in base_link, ``euler`` (n,3) ZYX angles as (roll, pitch, yaw) rad, yaw unwrapped.
    """

    def __init__(self, data, layout, joint_names, leg_names, events=()):
        self.data = data
        self.layout = layout
        self.joint_names = list(joint_names)
        self.leg_names = list(leg_names)
        self.events = list(events)
        self._euler = None

    def __len__(self):
        return self.data.shape[0]

    def col(self, name):
        return self.data[:, self.layout[name]]

    @property
    def t(self):
        return self.data[:, R_T]

    @property
    def pos(self):
        return self.data[:, R_P]

    @property
    def rot(self):
        return self.data[:, R_R].reshape(-1, 3, 3)

    @property
    def twist(self):
        return self.data[:, R_V]

    @property
    def euler(self):
        if self._euler is None:     # computed once: the summary and the CSV both need it (one call per row)
            self._euler = _euler_angles(self.rot)
        return self._euler.copy()

    def use_euler(self, euler):
        """Adopt Euler angles (n, 3) already computed for these rows (``TrajectoryCsvWriter.close()``)."""
        euler = np.asarray(euler, dtype=np.float64)
        if euler.shape != (len(self), 3):
            raise ValueError("euler must be (%d, 3), got %s" % (len(self), euler.shape))
        self._euler = euler

    @property
    def foot_forces(self):
        return self.col("force").reshape(len(self), -1, 3)

    @property
    def contact(self):
        """(n, n_legs) bool: foot below the ground."""
        return self.col("depth") > 0.0

    def csv_header(self):
        """The CSV's header line (no newline): ``t, x, y, z, roll, pitch, yaw, vx..wz``, the joint names,
        ``fz_<leg>``, ``contact_<leg>``."""
        return ",".join(["t", "x", "y", "z", "roll", "pitch", "yaw", "vx", "vy", "vz", "wx", "wy", "wz"]
                        + self.joint_names + ["fz_" + n for n in self.leg_names]
                        + ["contact_" + n for n in self.leg_names])

    def csv_rows(self, euler=None):
        """The CSV's data lines (each ending in a newline): time (s), base position (m, world), ZYX Euler angles
        (rad; ``euler`` if given, else ``self.euler``), base twist in base_link (m/s, rad/s), joint angles (rad),
        foot normal forces (N, world z) and contact flags (0/1), ``%.9g`` each (9 significant digits)."""
        e = self.euler if euler is None else euler
        n = len(self)
        if n == 0:
            return ""
        block = np.hstack([self.t[:, None], self.pos, e, self.twist, self.col("theta"),
                           self.foot_forces[:, :, 2], self.contact.astype(float)])
        return format_rows(block)       # Python's "%.9g" text, compiled (~4x faster, without the GIL)

    def to_csv(self, path):
        """Write ``t, x, y, z, roll, pitch, yaw`` (SI, world frame, ZYX Euler angles), the base twist, joint
        angles, foot normal forces and contact flags (``csv_header``, ``csv_rows``)."""
        with open_new(path) as f:
            f.write(self.csv_header() + "\n")
            f.write(self.csv_rows())


def open_new(path):
    """``open(path, "w")`` on a new file: an existing file there is removed first instead of truncated. On ext4
    truncating the previous run's output (``jethexa-sim --out`` into the same directory) waits for that file's
    write-back, which its close started (``auto_da_alloc``): 0.4-5 ms per file measured here."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    return open(path, "w")


# transforms3d.euler's gimbal-lock threshold on cos(pitch)
_EPS4 = np.finfo(float).eps * 4.0


@njit(cache=True, nogil=True)
def _zyx_angles(rot, out):
    """``transforms3d.euler.mat2euler(R, "sxyz")`` of each R in ``rot`` (n, 3, 3) into ``out`` (n, 3): its
    operations and libm calls (atan2, sqrt), so the same bits (the tests compare); ~50x less time than one
    mat2euler call per row from Python (1 ms per 500 rows)."""
    for i in range(rot.shape[0]):
        r00, r10 = rot[i, 0, 0], rot[i, 1, 0]
        cy = math.sqrt(r00 * r00 + r10 * r10)
        if cy > _EPS4:
            out[i, 0] = math.atan2(rot[i, 2, 1], rot[i, 2, 2])
            out[i, 2] = math.atan2(r10, r00)
        else:       # pitch at +-90 deg: the yaw is folded into the roll
            out[i, 0] = math.atan2(-rot[i, 1, 2], rot[i, 1, 1])
            out[i, 2] = 0.0
        out[i, 1] = math.atan2(-rot[i, 2, 0], cy)


@njit(cache=True, nogil=True)
def _unwrap(p, before, has_before):
    """In place: ``np.unwrap(p)`` (period 2 pi), or ``np.unwrap([before, *p])[1:]`` with ``has_before``; numpy's
    operations in its order (same bits; the tests compare), without its ~10 array temporaries per call."""
    if p.shape[0] == 0:
        return
    first = 0 if has_before else 1
    raw_prev = before if has_before else p[0]
    total = 0.0
    for i in range(first, p.shape[0]):
        dd = p[i] - raw_prev                   # numpy: diff of the input, not of the unwrapped values
        raw_prev = p[i]
        ddmod = (dd + math.pi) % (2.0 * math.pi) - math.pi
        if ddmod == -math.pi and dd > 0.0:
            ddmod = math.pi
        correction = ddmod - dd if abs(dd) >= math.pi else 0.0
        total = correction if i == first else total + correction     # cumsum (its first term is not 0 + x)
        p[i] += total


def _euler_angles(rot, yaw_before=None):
    """(n, 3) ZYX Euler angles (roll, pitch, yaw) in rad of rotation matrices ``rot`` (n, 3, 3), R = Rz(yaw)
    Ry(pitch) Rx(roll), yaw unwrapped (continuing from ``yaw_before``, the unwrapped yaw of the row before,
    when the rows continue a trajectory)."""
    rot = np.ascontiguousarray(np.asarray(rot, dtype=np.float64).reshape(-1, 3, 3))   # one compiled signature
    e = np.empty((rot.shape[0], 3))
    _zyx_angles(rot, e)
    yaw = np.ascontiguousarray(e[:, 2])
    _unwrap(yaw, 0.0 if yaw_before is None else float(yaw_before), yaw_before is not None)
    e[:, 2] = yaw
    return e
