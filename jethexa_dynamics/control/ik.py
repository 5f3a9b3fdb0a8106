"""Closed-form forward/inverse kinematics of the 3-DoF JetHexa leg (coxa yaw, femur and tibia pitch).

Frames and units: positions in metres in ``base_link`` (REP-103, x forward, y left, z up), angles in rad.
Joint conventions (docs/development.md): the coxa turns about +z of its mount (positive = CCW from above);
femur and tibia turn about -y of the leg frame (positive lifts the link). At zero the coxa is radial, the
femur horizontal and the tibia ``bend`` (85 deg) below the femur line. In the vertical plane of the leg,
with ``r`` the horizontal distance from the coxa axis and ``z`` the height above the hip:

    r = L1 + L2 cos(t2) + L3 cos(t2 + t3 - bend),     z = L2 sin(t2) + L3 sin(t2 + t3 - bend)

The IK picks the knee-up branch (tibia steeper than the femur, the usual hexapod stance).

``leg_fk`` / ``leg_ik`` are numba functions: the simulation loop calls them compiled, Python calls them
directly (through ``LegGeometry.fk`` / ``LegGeometry.ik``, which turn status codes into ValueErrors).
Geometry rows (one per leg): ``[hip_x, hip_y, hip_z, hip_yaw, L1, L2, L3, bend, cos(yaw), sin(yaw)]``
(the last two cached because the IK runs 6000 times per simulated second).
"""
import math
import weakref

import numpy as np
from numba import njit

# geometry row layout
G_HX, G_HY, G_HZ, G_YAW, G_L1, G_L2, G_L3, G_BEND, G_CY, G_SY = range(10)
N_GEOM = 10
# the leg layout the closed form assumes, as stacked by ``LegGeometry.from_urdf``: coxa axis +z, femur and tibia
# axes -y, femur origin (y, z) and rpy zero, tibia origin (y, z) zero and no roll/yaw, foot origin (y, z) zero
_LEG_LAYOUT = np.array([0, 0, 1, 0, -1, 0, 0, -1, 0] + [0] * 11, dtype=np.float64)

# leg_ik status codes
IK_OK = 0
IK_TOO_FAR = 1      # beyond the femur+tibia reach
IK_TOO_CLOSE = 2    # inside the femur/tibia minimum reach (or on the coxa axis)
IK_LIMIT = 3        # 3 + j: joint j (0 coxa, 1 femur, 2 tibia) outside its limits
JOINT_KIND = ("coxa", "femur", "tibia")


@njit(cache=True)
def leg_fk(geom, theta, out):
    """Foot position (m, base_link) of one leg for joint angles ``theta[0:3]`` (rad); written to out[0:3]."""
    c1 = math.cos(theta[0])
    s1 = math.sin(theta[0])
    tib = theta[1] + theta[2] - geom[G_BEND]
    r = geom[G_L1] + geom[G_L2] * math.cos(theta[1]) + geom[G_L3] * math.cos(tib)
    out[0] = geom[G_HX] + r * (geom[G_CY] * c1 - geom[G_SY] * s1)     # r (cos, sin)(yaw + theta1)
    out[1] = geom[G_HY] + r * (geom[G_SY] * c1 + geom[G_CY] * s1)
    out[2] = geom[G_HZ] + geom[G_L2] * math.sin(theta[1]) + geom[G_L3] * math.sin(tib)


@njit(cache=True)
def leg_fk_vel(geom, theta, thetadot, pos_out, vel_out):
    """Foot position (m) and its velocity relative to base_link (m/s), in base_link axes, for one leg.

    The time derivative of ``leg_fk`` (closed form; the simulation loop's foot states use it because it is
    ~6x cheaper than the general product-of-exponentials ``model.kernels.tip_state``, which it equals).
    """
    c1 = math.cos(theta[0])
    s1 = math.sin(theta[0])
    ca = geom[G_CY] * c1 - geom[G_SY] * s1       # cos(yaw + theta1)
    sa = geom[G_SY] * c1 + geom[G_CY] * s1
    c2 = math.cos(theta[1])
    s2 = math.sin(theta[1])
    tib = theta[1] + theta[2] - geom[G_BEND]
    c3 = math.cos(tib)
    s3 = math.sin(tib)
    r = geom[G_L1] + geom[G_L2] * c2 + geom[G_L3] * c3
    w23 = thetadot[1] + thetadot[2]
    rdot = -geom[G_L2] * s2 * thetadot[1] - geom[G_L3] * s3 * w23
    pos_out[0] = geom[G_HX] + r * ca
    pos_out[1] = geom[G_HY] + r * sa
    pos_out[2] = geom[G_HZ] + geom[G_L2] * s2 + geom[G_L3] * s3
    vel_out[0] = rdot * ca - r * sa * thetadot[0]
    vel_out[1] = rdot * sa + r * ca * thetadot[0]
    vel_out[2] = geom[G_L2] * c2 * thetadot[1] + geom[G_L3] * c3 * w23


@njit(cache=True)
def leg_ik(geom, limits, foot, out):
    """Joint angles (rad) placing the foot at ``foot`` (m, base_link); returns a status code.

    ``limits`` is (3, 2) [lower, upper] per joint. On failure ``out`` is left unchanged and the status is
    IK_TOO_FAR, IK_TOO_CLOSE or IK_LIMIT + joint index.
    """
    dx = foot[0] - geom[G_HX]
    dy = foot[1] - geom[G_HY]
    c = geom[G_CY]
    s = geom[G_SY]
    px = c * dx + s * dy          # foot in the mount frame (x radial at coxa zero)
    py = -s * dx + c * dy
    rho = math.sqrt(px * px + py * py)
    if rho < 1e-9:
        return IK_TOO_CLOSE
    t1 = math.atan2(py, px)
    r = rho - geom[G_L1]
    z = foot[2] - geom[G_HZ]
    l2 = geom[G_L2]
    l3 = geom[G_L3]
    cphi = (r * r + z * z - l2 * l2 - l3 * l3) / (2.0 * l2 * l3)
    if cphi > 1.0:
        return IK_TOO_FAR
    if cphi < -1.0:
        return IK_TOO_CLOSE
    phi = -math.acos(cphi)        # knee up: tibia below the femur line
    sphi = -math.sqrt(1.0 - cphi * cphi)
    # t2 = atan2(z, r) - atan2(l3 sin(phi), l2 + l3 cos(phi)), as one atan2 (angle difference)
    a = l2 + l3 * cphi
    b = l3 * sphi
    t2 = math.atan2(z * a - r * b, r * a + z * b)
    t3 = phi + geom[G_BEND]
    # wrap to [-pi, pi) (the package's one convention, model.se3.wrap_angle) so the limit check sees the
    # principal angle; |t2|, |t3| < 2 pi here, so one step does it in compiled code
    if t2 >= math.pi:
        t2 -= 2.0 * math.pi
    elif t2 < -math.pi:
        t2 += 2.0 * math.pi
    if t3 >= math.pi:
        t3 -= 2.0 * math.pi
    elif t3 < -math.pi:
        t3 += 2.0 * math.pi
    if t1 < limits[0, 0] or t1 > limits[0, 1]:
        return IK_LIMIT + 0
    if t2 < limits[1, 0] or t2 > limits[1, 1]:
        return IK_LIMIT + 1
    if t3 < limits[2, 0] or t3 > limits[2, 1]:
        return IK_LIMIT + 2
    out[0] = t1
    out[1] = t2
    out[2] = t3
    return IK_OK


def _yaw_of(R):
    return math.atan2(R[1, 0], R[0, 0])


# robot (its healthy form) -> LegGeometry.from_robot's result
_FROM_ROBOT = weakref.WeakKeyDictionary()


class LegGeometry:
    """Per-leg kinematic parameters of a hexapod (healthy morphology), in ``robot.leg_names`` order.

    Attributes: ``names`` (leg names), ``geom`` (n_legs, 8) rows as in the module docstring,
    ``limits`` (n_legs, 3, 2) joint limits (rad), ``velocity`` (n_legs, 3) joint velocity limits (rad/s; the URDF's
    ``<limit velocity>``, inf where it gives none).
    """

    def __init__(self, names, geom, limits, velocity=None):
        self.names = list(names)
        g = np.asarray(geom, dtype=np.float64)
        if g.ndim == 2 and g.shape[1] == N_GEOM - 2:       # append the cached cos/sin of the hip yaw
            g = np.column_stack([g, np.cos(g[:, G_YAW]), np.sin(g[:, G_YAW])])
        self.geom = np.ascontiguousarray(g)
        self.limits = np.ascontiguousarray(limits, dtype=np.float64)
        self.velocity = np.full((len(self.names), 3), np.inf) if velocity is None else np.asarray(velocity, float)
        if self.geom.shape != (len(self.names), N_GEOM) or self.limits.shape != (len(self.names), 3, 2):
            raise ValueError("geom must be (n_legs, 8) and limits (n_legs, 3, 2), got %s and %s"
                             % (self.geom.shape, self.limits.shape))

    @classmethod
    def from_robot(cls, robot):
        """Hip poses, link lengths, tibia bend and joint limits of a ``LeggedRobot`` (its healthy form). Built
        once per robot and shared (``jethexa-sim``'s gait and engine both ask for it; nothing writes to it)."""
        full = getattr(robot, "full", robot)
        geometry = _FROM_ROBOT.get(full)
        if geometry is None:
            legs = full.description.legs      # the healthy robot's legs, each joint list proximal to distal
            geometry = _FROM_ROBOT[full] = cls.from_urdf(
                full.urdf_model, [leg.name for leg in legs], [leg.joint_names for leg in legs],
                [leg.hip_pose for leg in legs])
        return geometry

    @classmethod
    def from_urdf(cls, urdf, leg_names, joint_triples, hip_poses=None):
        """Build from a parsed URDF (``model.urdf.parse_urdf``) and each leg's (coxa, femur, tibia) joints.

        ``hip_poses`` (4x4 per leg, base_link) default to the coxa joint origins (coxa on the root link).
        Checks the leg has the layout the closed form assumes (docs/development.md, conventions).
        """
        from jethexa_dynamics.model.urdf import origin_to_matrix

        names = list(leg_names)
        geom = np.zeros((len(names), N_GEOM - 2))
        limits = np.zeros((len(names), 3, 2))
        velocity = np.zeros((len(names), 3))
        # name -> joint (the first of a name, as ``urdf.joint``); link -> its fixed child joints
        joints, fixed_below = {}, {}
        for j in urdf.joints:
            joints.setdefault(j.name, j)
            if j.type == "fixed":
                fixed_below.setdefault(j.parent, []).append(j)
        for i, (leg, triple) in enumerate(zip(names, joint_triples)):
            if len(triple) != 3:
                raise ValueError("leg %s has %d joints; the closed-form IK needs 3 (coxa, femur, tibia)"
                                 % (leg, len(triple)))
            coxa, femur, tibia = (joints[n] for n in triple)
            feet = fixed_below.get(tibia.child, [])
            # one np.allclose over the stacked values (same element-wise test as one call per vector, ~10x less
            # Python: jethexa-sim builds the geometry on every run)
            ok = len(feet) == 1 and np.allclose(
                np.concatenate([coxa.axis, femur.axis, tibia.axis, femur.origin_xyz[1:], femur.origin_rpy,
                                tibia.origin_xyz[1:], tibia.origin_rpy[[0, 2]], feet[0].origin_xyz[1:]]),
                _LEG_LAYOUT)
            if not ok:
                raise ValueError("leg %s: the closed-form IK needs a coxa about +z, femur and tibia about -y "
                                 "with in-line links and a fixed foot frame on the tibia x axis" % leg)
            H = np.asarray(hip_poses[i]) if hip_poses is not None else origin_to_matrix(coxa.origin_xyz,
                                                                                         coxa.origin_rpy)
            geom[i] = (H[0, 3], H[1, 3], H[2, 3], _yaw_of(H), femur.origin_xyz[0], tibia.origin_xyz[0],
                       feet[0].origin_xyz[0], tibia.origin_rpy[1])
            limits[i] = [(j.lower, j.upper) for j in (coxa, femur, tibia)]
            velocity[i] = [j.velocity for j in (coxa, femur, tibia)]
        return cls(names, geom, limits, velocity)

    @property
    def n_legs(self):
        return len(self.names)

    def leg_index(self, leg):
        try:
            return self.names.index(leg)
        except ValueError:
            raise ValueError("leg must be one of %s, got %r" % (self.names, leg)) from None

    def fk(self, leg, theta):
        """Foot position (m, base_link) of ``leg`` for its 3 joint angles (rad)."""
        th = np.asarray(theta, dtype=np.float64)
        if th.shape != (3,) or not np.all(np.isfinite(th)):
            raise ValueError("theta must be 3 finite joint angles (rad), got %r" % (theta,))
        out = np.empty(3)
        leg_fk(self.geom[self.leg_index(leg)], th, out)
        return out

    def ik(self, leg, foot):
        """Joint angles (rad) of ``leg`` that put its foot at ``foot`` (m, base_link); ValueError if unreachable."""
        i = self.leg_index(leg)
        p = np.asarray(foot, dtype=np.float64)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise ValueError("foot target must be 3 finite coordinates (m), got %r" % (foot,))
        out = np.empty(3)
        status = leg_ik(self.geom[i], self.limits[i], p, out)
        if status != IK_OK:
            raise ValueError(self.describe_failure(i, p, status))
        return out

    def reach(self, i):
        """(min, max) distance (m) from the femur joint the foot can reach for leg index i."""
        g = self.geom[i]
        return abs(g[G_L2] - g[G_L3]), g[G_L2] + g[G_L3]

    def describe_failure(self, i, foot, status):
        g = self.geom[i]
        leg = self.names[i]
        d = np.asarray(foot) - g[:3]
        c, s = g[G_CY], g[G_SY]
        rho = math.hypot(c * d[0] + s * d[1], -s * d[0] + c * d[1])
        dist = math.hypot(rho - g[G_L1], d[2])
        lo, hi = self.reach(i)
        where = "foot target %s m (base_link)" % np.array2string(np.asarray(foot), precision=4)
        if status == IK_TOO_FAR:
            return ("leg %s cannot reach %s: %.4f m from the femur joint, allowed range [%.4f, %.4f] m"
                    % (leg, where, dist, lo, hi))
        if status == IK_TOO_CLOSE:
            return ("leg %s cannot reach %s: %.4f m from the femur joint (or on the coxa axis), "
                    "allowed range [%.4f, %.4f] m" % (leg, where, dist, lo, hi))
        j = status - IK_LIMIT
        return ("leg %s cannot reach %s: the %s joint would leave its limits [%.3f, %.3f] rad"
                % (leg, where, JOINT_KIND[j], self.limits[i, j, 0], self.limits[i, j, 1]))
