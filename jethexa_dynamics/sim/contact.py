"""Foot-ground contact (paper Table III): penalty spring-damper normal force + tangential friction.

Flat ground ``z = ground_z`` (world frame, z up). For a foot at world position p with velocity pdot and
penetration ``d = ground_z - p_z > 0``:

    f_z  = max(0, k_z d - d_z pdot_z)                       (spring-damper, never pulling)
    f_xy = -d_t pdot_xy                                     ('viscous', the paper's default)
    f_xy = -pdot_xy * min(d_t, mu f_z / |pdot_xy|)          ('coulomb': viscous near rest, capped at mu f_z)

The Coulomb option is regularised by the viscous slope d_t: slow feet stick viscously (as in the paper),
fast ones slide with |f_xy| = mu f_z. Table III: k_z = 10000 N/m, d_z = 150 N·s/m, d_t = 50 N·s/m.
Forces are world-frame point forces at the foot (N). ``contact_forces`` is a numba function.
"""
import math

import numpy as np
from numba import njit

# parameter layout
C_KZ, C_DZ, C_DT, C_MU, C_COULOMB, C_GROUND = range(6)
N_CONTACT_PARAMS = 6
FRICTION_MODELS = ("viscous", "coulomb")


@njit(cache=True)
def contact_forces(cprm, pos, vel, has_tip, f_out, depth_out):
    """World-frame foot forces f_out (n, 3) and penetration depths depth_out (n,) (m, > 0 in contact).

    ``has_tip[i] == 0`` marks legs whose foot is gone (no force). Returns the number of feet in contact.
    """
    n_contact = 0
    for i in range(pos.shape[0]):
        f_out[i, 0] = 0.0
        f_out[i, 1] = 0.0
        f_out[i, 2] = 0.0
        depth_out[i] = 0.0
        if has_tip[i] == 0.0:
            continue
        d = cprm[C_GROUND] - pos[i, 2]
        if d <= 0.0:
            continue
        depth_out[i] = d
        fz = cprm[C_KZ] * d - cprm[C_DZ] * vel[i, 2]
        if fz < 0.0:
            fz = 0.0   # a separating foot is not pulled back down
        f_out[i, 2] = fz
        n_contact += 1
        c = cprm[C_DT]
        if cprm[C_COULOMB] != 0.0:
            sp = math.sqrt(vel[i, 0] * vel[i, 0] + vel[i, 1] * vel[i, 1])
            cap = cprm[C_MU] * fz
            if c * sp > cap:
                c = cap / sp
        f_out[i, 0] = -c * vel[i, 0]
        f_out[i, 1] = -c * vel[i, 1]
    return n_contact


class ContactModel:
    """Contact parameters: ``k_z`` (N/m), ``d_z`` (N·s/m), ``d_t`` (N·s/m), ``friction`` 'viscous' (paper) or
    'coulomb' with coefficient ``mu``, ground height ``ground_z`` (m, world)."""

    def __init__(self, k_z=10000.0, d_z=150.0, d_t=50.0, friction="viscous", mu=0.8, ground_z=0.0):
        vals = {}
        for name, v, lo, hi, unit in (("k_z", k_z, 1.0, 1e7, "N/m"), ("d_z", d_z, 0.0, 1e5, "N·s/m"),
                                      ("d_t", d_t, 0.0, 1e5, "N·s/m"), ("mu", mu, 0.0, 10.0, ""),
                                      ("ground_z", ground_z, -100.0, 100.0, "m")):
            v = float(v)
            if not (math.isfinite(v) and lo <= v <= hi):
                raise ValueError("%s=%r outside the allowed range [%g, %g] %s" % (name, v, lo, hi, unit))
            vals[name] = v
        if friction not in FRICTION_MODELS:
            raise ValueError("friction must be one of %s, got %r" % (FRICTION_MODELS, friction))
        self.__dict__.update(vals)
        self.friction = friction

    @property
    def params(self):
        """Packed parameter array for ``contact_forces``."""
        return np.array([self.k_z, self.d_z, self.d_t, self.mu,
                         1.0 if self.friction == "coulomb" else 0.0, self.ground_z])

    def forces(self, pos, vel, has_tip=None):
        """(forces (n,3) N world, depths (n,) m) for foot positions/velocities (n,3) in the world frame."""
        pos = np.ascontiguousarray(pos, dtype=np.float64)
        vel = np.ascontiguousarray(vel, dtype=np.float64)
        if pos.ndim != 2 or pos.shape[1] != 3 or vel.shape != pos.shape:
            raise ValueError("pos and vel must both be (n, 3), got %s and %s" % (pos.shape, vel.shape))
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(vel))):
            raise ValueError("pos and vel must be finite")
        tips = np.ones(len(pos)) if has_tip is None else np.asarray(has_tip, dtype=np.float64)
        f = np.empty_like(pos)
        d = np.empty(len(pos))
        contact_forces(self.params, pos, vel, tips, f, d)
        return f, d
