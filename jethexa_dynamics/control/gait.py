"""Periodic gait generator: foot targets in ``base_link`` from per-leg phase offsets and a duty factor.

The paper's tripod (Farghdani et al., eq. 56, Table IV) is one instance. For leg i with phase
``s = frac(t / T + offset_i)`` the swing takes ``s in [0, 1 - duty)`` and the stance the rest::

    swing  (u = s / (1 - duty)):        a = -cos(pi u) / 2,   dz = step_height (1 - cos(2 pi u)) / 2
    stance (w = (s - 1 + duty) / duty): a = +cos(pi w) / 2    ('cosine', eq. 56)
                                        a = 1/2 - w           ('linear', constant foot speed)
                                        dz = -step_depth (1 - cos(2 pi w)) / 2
    foot_i = neutral_i + a * stride_i (horizontal),  z = neutral_z + dz

With duty = 1/2 and the cosine stance this is eq. 56 (the paper's foot moves along its y = our x).
``stride_i = duty * T * (v + w x p_i)`` is the foot's travel relative to the body during one stance for
the body-velocity command (vx, vy, yaw rate) in base_link, so the commanded body velocity is the mean
velocity over a stance. Choices where the paper is silent are in docs/sim.md: the neutral foot sits
``stance_radius`` out along the coxa's zero direction at ``body_height`` below the hips; "step depth"
presses the stance foot *down* (eq. 56 prints +L_sd, i.e. up; the effect is 1 mm either way); the
default step height is 0.012 m (Table IV's 0.12 m equals the hip height: read as 1.2 cm).

``gait_targets`` and ``stride_vectors`` are numba functions used by the compiled simulation loop and from
Python through ``Gait``.
"""
import math

import numpy as np
from numba import njit

from .ik import IK_OK, LegGeometry, leg_ik

# scalar parameter layout for gait_targets
P_T, P_DUTY, P_HEIGHT, P_DEPTH, P_PROFILE = range(5)
N_GAIT_PARAMS = 5
PROFILES = ("cosine", "linear")

#: the wave gait's swing order: one leg at a time, back to front, right side then left (OpenSHC 'wave');
#: a damaged robot's wave over its remaining legs keeps this order (``control.walking``)
WAVE_ORDER = ("RR", "RM", "RF", "LR", "LM", "LF")
#: feet a statically stable gait needs: it lifts one and keeps at least three down (the walking gait and the
#: re-planner alike)
MIN_FEET = 4


def _swing_starts(kind):
    """Fraction of the cycle at which each leg's swing starts, and the duty factor, per gait kind."""
    if kind == "tripod":      # paper: group 1 = {1,4,5} = {RF, LM, RR} swings first, group 2 half a cycle later
        return {"RF": 0.0, "LM": 0.0, "RR": 0.0, "LF": 0.5, "RM": 0.5, "LR": 0.5}, 0.5
    if kind == "wave":        # one leg at a time in WAVE_ORDER
        return {leg: k / 6.0 for k, leg in enumerate(WAVE_ORDER)}, 5.0 / 6.0
    if kind == "ripple":      # a back-to-front wave on each side, the two sides half a cycle apart
        return {"LR": 0.0, "LM": 1 / 3, "LF": 2 / 3, "RR": 0.5, "RM": 5 / 6, "RF": 1 / 6}, 2.0 / 3.0
    raise ValueError("gait must be one of tripod, wave, ripple, got %r" % (kind,))


GAIT_KINDS = ("tripod", "wave", "ripple")


@njit(cache=True)
def stride_vectors(neutral, duty, cycle_time, vx, vy, wz, out):
    """Foot travel (m, base_link xy) over one stance for a body velocity command (m/s, m/s, rad/s)."""
    ts = duty * cycle_time
    for i in range(neutral.shape[0]):
        out[i, 0] = ts * (vx - wz * neutral[i, 1])
        out[i, 1] = ts * (vy + wz * neutral[i, 0])


@njit(cache=True)
def gait_targets(prm, offsets, neutral, stride, t, out):
    """Foot targets (m, base_link) of every leg at gait time ``t`` (s) into out (n_legs, 3).

    Returns nothing; ``prm`` = [cycle_time, duty, step_height, step_depth, profile(0 cosine, 1 linear)].
    """
    T = prm[P_T]
    duty = prm[P_DUTY]
    sw = 1.0 - duty
    for i in range(neutral.shape[0]):
        s = t / T + offsets[i]
        s = s - math.floor(s)
        # (1 - cos 2x) / 2 = 1 - cos^2 x: one cosine per leg
        if s < sw:
            c = math.cos(math.pi * s / sw)
            a = -0.5 * c
            dz = prm[P_HEIGHT] * (1.0 - c * c)
        else:
            w = (s - sw) / duty
            c = math.cos(math.pi * w)
            a = 0.5 * c if prm[P_PROFILE] == 0.0 else 0.5 - w
            dz = -prm[P_DEPTH] * (1.0 - c * c)
        out[i, 0] = neutral[i, 0] + a * stride[i, 0]
        out[i, 1] = neutral[i, 1] + a * stride[i, 1]
        out[i, 2] = neutral[i, 2] + dz


@njit(cache=True)
def in_swing(prm, offsets, t, i):
    """True while leg i is in its swing phase at gait time t (s)."""
    s = t / prm[P_T] + offsets[i]
    s = s - math.floor(s)
    return s < 1.0 - prm[P_DUTY]


@njit(cache=True)
def gait_joint_targets(prm, offsets, neutral, stride, geom, limits, legs_on, t, feet, theta_out):
    """Gait foot targets at time t, then IK into theta_out (n_legs*3, leg-major). Returns #unreachable legs.

    Legs with ``legs_on[i] == 0`` (removed) are skipped. A leg whose target is unreachable keeps its previous
    joint targets (the gait is validated beforehand, so this only happens if a caller bypasses ``Gait``).
    """
    gait_targets(prm, offsets, neutral, stride, t, feet)
    bad = 0
    for i in range(neutral.shape[0]):
        if legs_on[i] == 0.0:
            continue
        if leg_ik(geom[i], limits[i], feet[i], theta_out[3 * i:3 * i + 3]) != IK_OK:
            bad += 1
    return bad


@njit(cache=True)
def first_unreachable(prm, offsets, neutral, stride, geom, limits, samples, foot):
    """Index of the first leg whose foot target is unreachable over a cycle (``samples`` times k T / samples,
    then the stance extremes neutral +/- stride/2, where reach fails first), or -1; the foot (m, base_link)
    into ``foot`` (3,). Returns (leg index, IK status)."""
    n = neutral.shape[0]
    feet = np.empty_like(neutral)
    th = np.empty(3)
    for k in range(samples):
        gait_targets(prm, offsets, neutral, stride, prm[P_T] * k / samples, feet)
        for i in range(n):
            st = leg_ik(geom[i], limits[i], feet[i], th)
            if st != IK_OK:
                foot[:] = feet[i]
                return i, st
    for sgn in (-0.5, 0.5):
        for i in range(n):
            foot[0] = neutral[i, 0] + sgn * stride[i, 0]
            foot[1] = neutral[i, 1] + sgn * stride[i, 1]
            foot[2] = neutral[i, 2]
            st = leg_ik(geom[i], limits[i], foot, th)
            if st != IK_OK:
                return i, st
    return -1, IK_OK


def _check_range(name, value, lo, hi, unit, lo_open=False):
    v = float(value)
    ok = math.isfinite(v) and (v > lo if lo_open else v >= lo) and v <= hi
    if not ok:
        raise ValueError("%s=%r outside the allowed range %s%g, %g] %s"
                         % (name, value, "(" if lo_open else "[", lo, hi, unit))
    return v


class Gait:
    """A periodic gait for a hexapod described by a ``LegGeometry``.

    Parameters (SI units, base_link): ``kind`` tripod | wave | ripple (sets the phase offsets and the
    default duty factor); ``cycle_time`` T (s); ``duty`` stance fraction; ``step_height`` swing apex
    (m); ``step_depth`` stance dip (m); ``body_height`` hip height above the ground (m, the paper's H_0);
    ``stance_radius`` horizontal distance from the hip to the neutral foot (m); ``command`` body velocity
    (vx, vy, yaw rate) (m/s, m/s, rad/s); ``profile`` 'cosine' (eq. 56) or 'linear' stance.
    ``offsets`` (optional, per leg in geometry order) overrides the phase offsets of ``kind``.
    Everything is validated, including that every foot target over a cycle is reachable.
    """

    MAX_STEP_HEIGHT = 0.15

    def __init__(self, geometry, kind="tripod", cycle_time=1.3, duty=None, step_height=0.012,
                 step_depth=0.001, body_height=0.12, stance_radius=0.13, command=None, profile=None,
                 offsets=None, step_length=None):
        if not isinstance(geometry, LegGeometry):
            raise ValueError("geometry must be a LegGeometry, got %r" % (type(geometry).__name__,))
        self.geometry = geometry
        starts, default_duty = _swing_starts(kind)
        self.kind = kind
        self.cycle_time = _check_range("cycle_time", cycle_time, 0.1, 20.0, "s")
        self.duty = _check_range("duty", default_duty if duty is None else duty, 0.0, 0.95, "", lo_open=True)
        self.step_height = _check_range("step_height", step_height, 0.0, self.MAX_STEP_HEIGHT, "m")
        self.step_depth = _check_range("step_depth", step_depth, 0.0, 0.01, "m")
        self.body_height = _check_range("body_height", body_height, 0.02, 0.24, "m")
        self.stance_radius = _check_range("stance_radius", stance_radius, 0.05, 0.24, "m")
        if profile is None:
            profile = "cosine" if kind == "tripod" else "linear"
        if profile not in PROFILES:
            raise ValueError("profile must be one of %s, got %r" % (PROFILES, profile))
        self.profile = profile
        n = geometry.n_legs
        if offsets is None:
            missing = [leg for leg in geometry.names if leg not in starts]
            if missing:
                raise ValueError("gait %r defines no phase for legs %s; pass offsets" % (kind, missing))
            offsets = [(-starts[leg]) % 1.0 for leg in geometry.names]
        off = np.asarray(offsets, dtype=np.float64)
        if off.shape != (n,) or not np.all(np.isfinite(off)):
            raise ValueError("offsets must be %d finite phase offsets (fractions of a cycle)" % n)
        self.offsets = np.mod(off, 1.0)
        self.prm = np.array([self.cycle_time, self.duty, self.step_height, self.step_depth,
                             float(PROFILES.index(profile))])
        g = geometry.geom
        yaw = g[:, 3]
        self.neutral = np.column_stack([g[:, 0] + self.stance_radius * np.cos(yaw),
                                        g[:, 1] + self.stance_radius * np.sin(yaw),
                                        g[:, 2] - self.body_height])
        self._check_stance()
        self._check_swing()
        if command is not None and step_length is not None:
            raise ValueError("give either command=(vx, vy, wz) or step_length, not both")
        if step_length is not None:
            sl = _check_range("step_length", step_length, 0.0, 0.2, "m")
            command = (sl / (self.duty * self.cycle_time), 0.0, 0.0)
        self.stride = np.zeros((n, 2))
        self.set_command((0.0, 0.0, 0.0) if command is None else command)

    @classmethod
    def paper_tripod(cls, geometry, **overrides):
        """Table IV: step length 0.05 m, cycle 1.3 s, step depth 0.001 m, H_0 0.12 m, forward (+x)."""
        kw = dict(kind="tripod", cycle_time=1.3, step_length=0.05, step_depth=0.001, body_height=0.12)
        kw.update(overrides)
        return cls(geometry, **kw)

    @property
    def nominal_speed(self):
        """Mean forward speed (m/s) the command asks for (= step length / stance time)."""
        return float(self.command[0])

    @property
    def step_length(self):
        """Longest foot stride (m) over the legs for the current command."""
        return float(np.max(np.hypot(self.stride[:, 0], self.stride[:, 1])))

    def _check_stance(self):
        out = np.empty(3)
        for i in range(self.geometry.n_legs):
            if leg_ik(self.geometry.geom[i], self.geometry.limits[i], self.neutral[i], out) != IK_OK:
                raise ValueError("body_height=%g m / stance_radius=%g m: the neutral stance is unreachable "
                                 "(%s)" % (self.body_height, self.stance_radius,
                                           self.geometry.describe_failure(
                                               i, self.neutral[i], leg_ik(self.geometry.geom[i],
                                                                          self.geometry.limits[i],
                                                                          self.neutral[i], out))))

    def _first_failure(self, stride, prm=None, samples=48):
        """(leg index, foot, status) of the first unreachable target over a cycle, or None."""
        prm = self.prm if prm is None else prm
        foot = np.empty(3)
        i, st = first_unreachable(prm, self.offsets, self.neutral, np.ascontiguousarray(stride, dtype=np.float64),
                                  self.geometry.geom, self.geometry.limits, samples, foot)
        return None if i < 0 else (int(i), foot, st)

    @staticmethod
    def _bisect(ok, hi, n=30):
        """Largest x in [0, hi] with ok(x) (ok monotone, ok(0) true)."""
        lo = 0.0
        for _ in range(n):
            mid = 0.5 * (lo + hi)
            if ok(mid):
                lo = mid
            else:
                hi = mid
        return lo

    def _check_swing(self):
        zero = np.zeros((self.geometry.n_legs, 2))
        fail = self._first_failure(zero)
        if fail is None:
            return
        i, foot, st = fail

        def ok(h):
            prm = self.prm.copy()
            prm[P_HEIGHT] = h
            return self._first_failure(zero, prm, samples=24) is None
        hmax = self._bisect(ok, self.step_height)
        raise ValueError("step_height=%g m outside the allowed range [0, %.4f] m for body_height=%g m, "
                         "stance_radius=%g m: %s" % (self.step_height, hmax, self.body_height,
                                                     self.stance_radius,
                                                     self.geometry.describe_failure(i, foot, st)))

    def set_command(self, command):
        """Set the body velocity command (vx m/s, vy m/s, yaw rate rad/s); ValueError if a leg can't follow."""
        try:
            vx, vy, wz = (float(c) for c in command)
        except (TypeError, ValueError):
            raise ValueError("command must be (vx, vy, yaw_rate) in (m/s, m/s, rad/s), got %r" % (command,))
        if not all(math.isfinite(c) for c in (vx, vy, wz)):
            raise ValueError("command must be finite (vx, vy, yaw_rate), got %r" % (command,))
        stride = np.zeros_like(self.stride)
        stride_vectors(self.neutral, self.duty, self.cycle_time, vx, vy, wz, stride)
        fail = self._first_failure(stride)
        if fail is not None:
            scale = self._bisect(lambda k: self._first_failure(stride * k, samples=24) is None, 1.0)
            i, foot, st = fail
            length = float(np.max(np.hypot(stride[:, 0], stride[:, 1])))
            raise ValueError(
                "command (vx=%.4g m/s, vy=%.4g m/s, yaw_rate=%.4g rad/s) needs a step length of %.4f m "
                "(stance %.3f s), which leg %s cannot reach: %s. Allowed for this stance and direction: "
                "step length in [0, %.4f] m, i.e. at most %.3f x this command"
                % (vx, vy, wz, length, self.duty * self.cycle_time, self.geometry.names[i],
                   self.geometry.describe_failure(i, foot, st), scale * length, scale))
        self.command = np.array([vx, vy, wz])
        self.stride[:] = stride

    def foot_targets(self, t):
        """Foot targets (n_legs, 3) in m, base_link, at gait time t (s)."""
        out = np.empty_like(self.neutral)
        gait_targets(self.prm, self.offsets, self.neutral, self.stride, float(t), out)
        return out

    def joint_targets(self, t):
        """Joint targets (n_legs*3,) in rad, leg-major, at gait time t (s)."""
        feet = np.empty_like(self.neutral)
        th = np.zeros(3 * self.geometry.n_legs)
        bad = gait_joint_targets(self.prm, self.offsets, self.neutral, self.stride, self.geometry.geom,
                                 self.geometry.limits, np.ones(self.geometry.n_legs), float(t), feet, th)
        if bad:
            raise ValueError("gait targets at t=%g s unreachable for %d legs" % (t, bad))
        return th

    def swing_mask(self, t):
        """Boolean per leg: in swing at gait time t (s)."""
        return np.array([in_swing(self.prm, self.offsets, float(t), i) for i in range(self.geometry.n_legs)])
