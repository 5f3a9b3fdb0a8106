"""``LeggedRobot`` and ``Morphology``: the public face of the modular Boltzmann-Hamel model.

Data/model split as in Pinocchio: the healthy robot's description (per-leg twists, home poses, inertias) is
built once from a URDF; a morphology (the paper's link and leg existence vectors, eq. 22-26) selects which
links exist. ``robot.with_morphology(m)`` returns a reduced model that shares every array with the healthy
one (Algorithm 1 without re-deriving or re-parsing anything): only index maps change.

All public methods take and return vectors of the (possibly reduced) robot:
``q`` joint angles (rad) in ``joint_names`` order; ``v = [base linear, base angular, joint rates]`` with the
base twist in base_link (Pinocchio's free-flyer LOCAL convention, the paper's quasi-velocities);
``g_sb`` the 4x4 pose of base_link in the world; gravity -9.81 m/s^2 along world z; ``tip_forces``
(n_tips, 3) world-frame forces applied at the foot points, in ``tip_names`` order.
"""
import dataclasses
import functools
import math
import os
from functools import cached_property

import numpy as np

from . import kernels, urdf_cache
from .description import describe
from .morphology import Morphology


def _bundled_urdf():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.join(here, "data", "urdf", "jethexa.urdf")


def _vec(x, n, name, check_finite=True):
    """Float array of shape (n,), finite, or a ValueError naming the field."""
    a = np.asarray(x, dtype=float)
    if a.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {a.shape}")
    if check_finite and not np.isfinite(a.sum()):
        raise ValueError(f"{name}: contains NaN or inf")
    return _one_signature(a)


def _one_signature(a):
    """``a`` C-contiguous and writable (a copy if not): a strided or read-only array is another numba signature,
    every kernel it reaches compiled again (~15-20 s of CPU here, minutes on a Nano, in the middle of a run)."""
    return a if a.flags.c_contiguous and a.flags.writeable else a.copy()


def _pose(g, check_finite=True):
    a = np.asarray(g, dtype=float)
    if a.shape != (4, 4):
        raise ValueError(f"g_sb: expected a 4x4 homogeneous transform, got shape {a.shape}")
    if check_finite and not np.isfinite(a.sum()):
        raise ValueError("g_sb: contains NaN or inf")
    return a


_F64 = np.dtype(np.float64)
_NO_DIAG = np.empty(0)  # forward_dynamics without a joint diagonal (see kernels.forward_dynamics)
# the hot paths' kernels bound once (a module attribute lookup per call is ~20 ns of a ~2-5 µs call)
_mass_matrix, _bias_forces, _forward_dynamics = kernels.mass_matrix, kernels.bias_forces, kernels.forward_dynamics


def _out_array(out, shape):
    """``out`` if it is a writable C-contiguous float64 ndarray of ``shape`` (numpy's ``out=`` convention),
    else a ValueError naming it."""
    if not (isinstance(out, np.ndarray) and out.shape == shape and out.dtype == _F64 and out.flags.carray):
        got = (type(out).__name__ if not isinstance(out, np.ndarray) else f"{out.dtype} array of shape {out.shape}"
               + ("" if out.flags.writeable else ", read-only") + ("" if out.flags.c_contiguous else ", strided"))
        raise ValueError(f"out: expected a writable C-contiguous float64 array of shape {shape}, got {got}")
    return out


def scaled_body_inertia(desc, mass: float) -> np.ndarray:
    """The main body's inertia about its CoM (base_link axes) for a body of ``mass`` [kg] instead of ``desc``'s:
    scaled with the mass (a uniformly heavier body: the choice where nothing else is known)."""
    return np.asarray(desc.body_Ic, dtype=float) * (mass / desc.body_mass)


class LeggedRobot:
    """Floating-base legged robot: one main body with serial revolute legs (paper Sec. III-B)."""

    # ---- construction -------------------------------------------------------------------------------------
    @classmethod
    def from_urdf(cls, path):
        """Load any URDF of one floating root body with serial chains of revolute joints (fixed joints are
        merged into their parent; meshes are ignored)."""
        urdf, desc = urdf_cache.load(path)          # parse_urdf + describe, or their result of an earlier run
        self = cls._from_description(desc, os.path.abspath(path))
        self._urdf_model = urdf
        return self

    @classmethod
    def from_urdf_string(cls, text):
        from .urdf import parse_urdf_string
        urdf = parse_urdf_string(text)
        self = cls._from_description(describe(urdf), None)
        self._urdf_model = urdf
        return self

    @classmethod
    def jethexa(cls):
        """The bundled Hiwonder JetHexa (urdf/jethexa.urdf)."""
        return cls.from_urdf(_bundled_urdf())

    @classmethod
    def _from_description(cls, desc, path):
        self = cls.__new__(cls)
        self._desc = desc
        self.urdf_path = path
        self._urdf_model = None
        self._all_leg_names = tuple(leg.name for leg in desc.legs)
        off = np.concatenate([[0], np.cumsum(desc.n_joints)[:-1]]).astype(np.int64)
        # ``kernel_data``: the model arrays of :mod:`.kernels`, views into the one ``kernel_buffer`` that the
        # Python API passes to the compiled kernels (one array to unbox per call instead of eleven)
        self.kernel_buffer, self.kernel_data = kernels.pack(
            desc.n_joints, off, desc.xi, desc.mass, desc.com0, desc.Ic0, desc.tip0,
            np.array([desc.body_mass]), desc.body_com, desc.body_Ic, np.array([0.0, 0.0, -9.81]))
        self._full = self
        self._cache = {}
        nj = int(desc.n_joints.sum())
        self._n_list = [int(n) for n in desc.n_joints]
        self._leg_start = [int(o) for o in off]
        self._all_jidx = np.arange(nj, dtype=np.int64)
        self._all_vidx = np.arange(6 + nj, dtype=np.int64)
        self._all_tip_idx = np.arange(len(desc.legs), dtype=np.int64)
        self._all_joint_names = [jn for leg in desc.legs for jn in leg.joint_names]
        self._nj_full = nj
        self._q_shape, self._v_shape, self._M_shape = (nj,), (6 + nj,), (6 + nj, 6 + nj)
        # writable like a caller's tip forces (the kernels only read it): a read-only array is another numba
        # signature, compiled again (~16-20 s of CPU here per kernel, minutes on a Nano)
        self._zero_f = np.zeros((len(desc.legs), 3))
        self._set_morphology(Morphology(self._all_leg_names, desc.n_joints, desc.n_joints))
        return self

    def _set_morphology(self, m):
        """Index maps of a morphology (Algorithm 1's reshaping). Names and limits are derived lazily, so a
        morphology change costs only a few small integer arrays."""
        full = self._full
        self.morphology = m
        self._mask = m.link_mask
        counts = m.links_per_leg
        self._healthy = m.is_healthy
        if self._healthy:
            self.joint_index_in_full = full._all_jidx
            self._vidx = full._all_vidx
            self._tip_idx = full._all_tip_idx
        else:
            starts = full._leg_start
            jidx = np.array([s + k for s, c in zip(starts, counts) for k in range(c)], dtype=np.int64)
            self.joint_index_in_full = jidx
            self._vidx = np.concatenate((full._all_vidx[:6], jidx + 6))
            self._tip_idx = np.array([i for i, (c, n) in enumerate(zip(counts, full._n_list)) if c == n],
                                     dtype=np.int64)
        self.nv = 6 + len(self.joint_index_in_full)

    @cached_property
    def joint_names(self):
        """Joint names of the present links, leg-major, proximal to distal."""
        names = self._full._all_joint_names
        return [names[k] for k in self.joint_index_in_full]

    @cached_property
    def leg_names(self):
        """Names of the present legs (URDF order)."""
        return [n for n, k in zip(self._all_leg_names, self.morphology.links_per_leg) if k > 0]

    @cached_property
    def tip_names(self):
        """Foot frames of the legs whose tip link is present."""
        return [self._desc.legs[i].tip_frame for i in self._tip_idx]

    @cached_property
    def tip_legs(self):
        return [self._desc.legs[i].name for i in self._tip_idx]

    @cached_property
    def joint_lower(self):
        return self._desc.lower[self.joint_index_in_full]

    @cached_property
    def joint_upper(self):
        return self._desc.upper[self.joint_index_in_full]

    @cached_property
    def joint_effort(self):
        return self._desc.effort[self.joint_index_in_full]

    @cached_property
    def joint_velocity(self):
        return self._desc.velocity[self.joint_index_in_full]

    # ---- morphology ---------------------------------------------------------------------------------------
    @property
    def full(self):
        """The healthy robot this model was reduced from (itself if healthy)."""
        return self._full

    def with_morphology(self, m):
        """Reduced model for morphology ``m`` (Algorithm 1): shares all arrays, costs microseconds."""
        if isinstance(m, Morphology):
            key = m.links_per_leg
        else:
            m = Morphology.from_vector(self._full, m)
            key = m.links_per_leg
        full = self._full
        r = full._cache.get(key)
        if r is None:
            if m.leg_names != full._all_leg_names:
                raise ValueError(f"morphology legs {m.leg_names} do not match the robot's {full._all_leg_names}")
            r = LeggedRobot.__new__(LeggedRobot)
            r._desc = full._desc
            r.urdf_path = full.urdf_path
            r._urdf_model = full._urdf_model
            r._all_leg_names = full._all_leg_names
            r.kernel_data = full.kernel_data
            r.kernel_buffer = full.kernel_buffer
            r._full = full
            r._cache = None
            r._nj_full = full._nj_full
            r._q_shape, r._v_shape, r._M_shape = full._q_shape, full._v_shape, full._M_shape
            r._zero_f = full._zero_f
            r._set_morphology(m)
            full._cache[key] = r
        return r

    @property
    def urdf_model(self):
        """The parsed URDF (``model.urdf.UrdfModel``) the robot was built from (file or string), parsed once
        and shared by its morphologies and gravity variants (read it, do not modify it)."""
        return self._urdf_model

    @property
    def gravity(self):
        """World-frame gravity vector g_s (m/s^2)."""
        return self.kernel_data[kernels.D_GRAVITY].copy()

    def set_gravity(self, g_s):
        """Change the world gravity vector g_s (m/s^2) in place: this robot, its morphologies and the engines built
        on them all see it. Only for a robot of one's own (:meth:`with_gravity`), never the shared ``jethexa()``."""
        self.kernel_data[kernels.D_GRAVITY][:] = _vec(g_s, 3, "gravity")

    def with_gravity(self, g_s):
        """A copy of this (healthy) robot with another world gravity vector, e.g. zeros for free flight."""
        g = _vec(g_s, 3, "gravity")
        full = self._full
        r = LeggedRobot._from_description(full._desc, full.urdf_path)
        r._urdf_model = full._urdf_model
        r.kernel_buffer, r.kernel_data = kernels.pack(*full.kernel_data[:kernels.D_GRAVITY], g)
        return r.with_morphology(self.morphology)

    def with_body(self, mass, com=None):
        """A copy of this robot (its morphology kept) whose main body X_b has mass ``mass`` [kg] and its CoM at
        ``com`` [m, base_link; default the URDF's]: a payload or a heavier robot as one rigid body. The inertia
        about the CoM scales with the mass (a uniformly heavier body: the choice where nothing else is known).
        Legs, gravity and the URDF path are this robot's. ``damage.body_load`` estimates (mass, com)."""
        mass = float(mass)
        if not (math.isfinite(mass) and 0.1 <= mass <= 20.0):
            raise ValueError("body mass=%r outside the allowed range [0.1, 20] kg" % (mass,))
        full = self._full
        d = full._desc
        c = np.array(d.body_com, dtype=float) if com is None else _vec(com, 3, "body com")
        if np.abs(c).max() > 0.2:
            raise ValueError("body com=%r: each coordinate within +-0.2 m of base_link" % (c.tolist(),))
        desc = dataclasses.replace(d, body_mass=mass, body_com=c, body_Ic=scaled_body_inertia(d, mass))
        r = LeggedRobot._from_description(desc, full.urdf_path)
        r._urdf_model = full._urdf_model
        r.set_gravity(full.gravity)
        return r.with_morphology(self.morphology)

    # ---- helpers ------------------------------------------------------------------------------------------
    @property
    def total_mass(self):
        d = self._desc
        return float(d.body_mass + sum(d.mass[i, :k].sum() for i, k in enumerate(self.morphology.links_per_leg)))

    @property
    def description(self):
        return self._desc

    def leg_joint_index(self, leg):
        """Indices of ``leg``'s joints in this robot's joint vector."""
        if leg not in self.leg_names:
            raise ValueError(f"unknown or removed leg {leg!r}; legs are {self.leg_names}")
        suffix = [k for k, n in enumerate(self.joint_names) if n in self._desc.legs[
            self._all_leg_names.index(leg)].joint_names]
        return np.array(suffix, dtype=np.int64)

    def hip_poses(self):
        """leg -> 4x4 pose of the leg's first joint frame in base_link at zero angles."""
        return {leg.name: leg.hip_pose.copy() for leg in self._desc.legs if leg.name in self.leg_names}

    def _q_full(self, q, check_finite=True):
        q = _vec(q, self.nv - 6, "q", check_finite)
        if self._healthy:
            return q
        qf = np.zeros(self._nj_full)
        qf[self.joint_index_in_full] = q
        return qf

    def _v_full(self, v, name="v", check_finite=True):
        v = _vec(v, self.nv, name, check_finite)
        if self._healthy:
            return v
        vf = np.zeros(6 + self._nj_full)
        vf[self._vidx] = v
        return vf

    def _f_full(self, tip_forces, check_finite=True):
        if tip_forces is None:
            return self._zero_f
        tf = np.asarray(tip_forces, dtype=float)
        if tf.shape != (len(self._tip_idx), 3):
            raise ValueError(f"tip_forces: expected shape ({len(self._tip_idx)}, 3) for tips {self.tip_names}, "
                             f"got {tf.shape}")
        if check_finite and not np.isfinite(tf.sum()):
            raise ValueError("tip_forces: contains NaN or inf")
        if self._healthy:
            return _one_signature(tf)
        f = np.zeros((len(self._all_leg_names), 3))
        f[self._tip_idx] = tf
        return f

    def _out(self, x):
        return x if self._healthy else x[self._vidx]

    # ---- the paper's structural matrices ------------------------------------------------------------------
    # mass_matrix, bias_forces and forward_dynamics have a hot path for the healthy robot, written out: one
    # np.asarray (to the float64 dtype object: ~7 ns less than dtype=float) and one shape comparison per
    # argument, finiteness checked in the kernel (each Python call layer costs ~0.05-0.1 µs here,
    # Pinocchio's whole crba ~1.9 µs). Anything else takes the checked path, which names the bad input.
    # ``out=`` follows numpy: a writable C-contiguous float64 array of the result's shape that receives the
    # result and is returned (on the hot path its check costs what np.empty does).
    def _deliver(self, full, out, reduce):
        """Checked path's result: ``full`` (full-size, from the kernel) reduced to this morphology by
        ``reduce``, written into ``out`` if given."""
        r = full if self._healthy else reduce(full)
        if out is None or r is out:
            return r
        out[...] = r
        return out

    def mass_matrix(self, q, out=None):
        """M(θ) (eq. 7-8, 27-28), nv x nv, symmetric positive definite (``out``: optional (nv, nv) result array)."""
        if self._healthy:
            qf = np.asarray(q, _F64)
            M = np.empty(self._M_shape) if out is None else out
            if (qf.shape == self._q_shape and (out is None or (type(out) is np.ndarray and out.shape == self._M_shape
                                                               and out.dtype is _F64 and out.flags.carray))
                    and _mass_matrix(self.kernel_buffer, qf, self._mask, M)):
                return M
        qf = self._q_full(q)
        if out is not None:
            _out_array(out, (self.nv, self.nv))
        M = out if self._healthy and out is not None else np.empty(self._M_shape)
        kernels.mass_matrix(self.kernel_buffer, qf, self._mask, M)
        return self._deliver(M, out, lambda M: M[np.ix_(self._vidx, self._vidx)])

    def coriolis_matrix(self, q, v, factorization="paper"):
        """C(θ, v) with C v + 𝒩 the bias forces.

        ``factorization="paper"``: eq. 10 / 36-43, C = 𝒜 - ½[[ℬ, 0], [𝒟, ℰ]]; passive along v
        (v^T (Ṁ - 2C) v = 0) but Ṁ - 2C is not a skew-symmetric matrix.
        ``factorization="skew"``: the same terms rearranged so that Ṁ - 2C is skew-symmetric (what
        passivity-based controllers need); it differs from the paper's C by a matrix that annihilates v.
        """
        if factorization not in ("paper", "skew"):
            raise ValueError(f"factorization must be 'paper' or 'skew', got {factorization!r}")
        n = 6 + self._nj_full
        C = np.empty((n, n))
        kernels.coriolis_matrix(self.kernel_buffer, self._q_full(q), self._v_full(v), self._mask,
                                factorization == "skew", C)
        return C if self._healthy else C[np.ix_(self._vidx, self._vidx)]

    def gravity_forces(self, g_sb, q):
        """𝒩(Q) (eq. 9) for uniform gravity -9.81 m/s^2 along world z."""
        return self.bias_forces(g_sb, q, np.zeros(self.nv))

    def bias_forces(self, g_sb, q, v, out=None):
        """C(θ, v) v + 𝒩(Q) (Pinocchio's nonLinearEffects), (nv,) (``out``: optional (nv,) result array)."""
        if self._healthy:
            g, qf, vf = np.asarray(g_sb, _F64), np.asarray(q, _F64), np.asarray(v, _F64)
            vs = self._v_shape
            h = np.empty(vs) if out is None else out
            if (g.shape == (4, 4) and qf.shape == self._q_shape and vf.shape == vs
                    and (out is None or (type(out) is np.ndarray and out.shape == vs and out.dtype is _F64
                                         and out.flags.carray))
                    and _bias_forces(self.kernel_buffer, g, qf, vf, self._mask, True, h)):
                return h
        g, qf, vf = _pose(g_sb), self._q_full(q), self._v_full(v)
        if out is not None:
            _out_array(out, (self.nv,))
        h = out if self._healthy and out is not None else np.empty(self._v_shape)
        kernels.bias_forces(self.kernel_buffer, g, qf, vf, self._mask, True, h)
        return self._deliver(h, out, self._out)

    def forward_dynamics(self, g_sb, q, v, tau, tip_forces=None, out=None):
        """v̇ from M v̇ + C v + 𝒩 = τ + 𝒥^T F_t (eq. 6), (nv,). ``tau`` has nv entries (base rows are normally
        0); ``out``: optional (nv,) result array."""
        if self._healthy and tip_forces is None:
            g, qf, vf, tf = np.asarray(g_sb, _F64), np.asarray(q, _F64), np.asarray(v, _F64), np.asarray(tau, _F64)
            vs = self._v_shape
            a = np.empty(vs) if out is None else out
            if (g.shape == (4, 4) and qf.shape == self._q_shape and vf.shape == vs and tf.shape == vs
                    and (out is None or (type(out) is np.ndarray and out.shape == vs and out.dtype is _F64
                                         and out.flags.carray))
                    and _forward_dynamics(self.kernel_buffer, g, qf, vf, tf, self._zero_f, self._mask, a, _NO_DIAG)):
                return a
        args = (_pose(g_sb, check_finite=False), self._q_full(q, False), self._v_full(v, "v", False),
                self._v_full(tau, "tau", False), self._f_full(tip_forces, False))
        if out is not None:
            _out_array(out, (self.nv,))
        a = out if self._healthy and out is not None else np.empty(self._v_shape)
        if not kernels.forward_dynamics(self.kernel_buffer, *args, self._mask, a, _NO_DIAG):
            # find the bad input only on the failure path, so the good path pays one check
            _pose(g_sb)
            self._q_full(q)
            self._v_full(v)
            self._v_full(tau, "tau")
            self._f_full(tip_forces)
            raise np.linalg.LinAlgError("forward dynamics failed: mass matrix not positive definite "
                                        "(massless links?)")
        return self._deliver(a, out, self._out)

    def forward_dynamics_bank(self, g_sb, q, v, tau, morphologies, tip_forces=None):
        """Forward dynamics of this (healthy) state under K morphology hypotheses at once.

        ``q, v, tau, tip_forces`` are of this robot (normally the healthy one); returns (K, nv) with zeros at
        the DoFs a hypothesis removes (the paper's reshaping by index)."""
        if not self._healthy:
            raise ValueError("forward_dynamics_bank: call it on the healthy robot (robot.full)")
        masks = np.array([m.link_mask if isinstance(m, Morphology) else
                          Morphology.from_vector(self, m).link_mask for m in morphologies])
        out = np.empty((len(masks), self.nv))
        kernels.forward_dynamics_bank(self.kernel_buffer, _pose(g_sb), self._q_full(q), self._v_full(v),
                                      self._v_full(tau, "tau"), self._f_full(tip_forces), masks, out)
        return out

    def tip_poses(self, q):
        """(n_tips, 4, 4) poses g_{b,it} of the present foot frames in base_link."""
        out = np.empty((len(self._all_leg_names), 4, 4))
        kernels.tip_poses(self.kernel_buffer, self._q_full(q), out)
        return out[self._tip_idx]

    def tip_jacobian(self, q):
        """𝒥 (eq. 11), (6 n_tips, nv): rows of tip i map v to its body twist in its own (LOCAL) frame."""
        L = len(self._all_leg_names)
        out = np.empty((L, 6, 6 + self._nj_full))
        kernels.tip_jacobians(self.kernel_buffer, self._q_full(q), out)
        J = out[self._tip_idx][:, :, self._vidx]
        return J.reshape(6 * len(self._tip_idx), self.nv)

    def kinetic_energy(self, q, v):
        v = _vec(v, self.nv, "v")
        return 0.5 * v @ self.mass_matrix(q) @ v

    def __repr__(self):
        return (f"LeggedRobot(legs={self.leg_names}, nv={self.nv}, mass={self.total_mass:.3f} kg, "
                f"morphology={self.morphology})")


@functools.lru_cache(maxsize=None)
def jethexa() -> LeggedRobot:
    """The bundled JetHexa (``LeggedRobot.jethexa()``), built once per process and shared: the source of the
    leg and joint names everywhere (URDF order). Nothing may change it; ``with_morphology`` gives a copy."""
    return LeggedRobot.jethexa()
