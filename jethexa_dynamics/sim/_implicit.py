"""Forward dynamics with an added joint-space diagonal, for implicit joint damping.

The paper's PID (K_D = 1 N·m·s/rad) on the JetHexa's light links (smallest joint-space inertia with a free
base ~2.3e-4 kg·m^2) makes the explicit D-term unstable at dt = 1 ms (dt K_D / I ~ 4 > 2). Treating the
damping implicitly, as MuJoCo's ``implicitfast`` does for actuator damping, solves

    (M + dt diag(K_D)) v̇ = τ(v_n) + 𝒥^T F - C v - 𝒩

i.e. the D-term evaluated at v_{n+1}. Only the diagonal of the per-leg θθ blocks changes, so the same
arrowhead solve of the modular model (eq. 27) is used. TODO(lead): an optional ``joint_diag`` argument of
``model.kernels.forward_dynamics`` would make this module unnecessary.
"""
import numpy as np
from numba import njit

from jethexa_dynamics.model import kernels


@njit(cache=True)
def forward_dynamics_diag(data, R_sb, theta, v, tau, f_world, mask, diag, vdot_out):
    """As ``kernels.forward_dynamics`` with ``diag[j]`` (full joint order) added to M's joint diagonal."""
    L = data[0].shape[0]
    nmax = data[2].shape[1]
    Mbb = np.empty((6, 6))
    Mbt = np.empty((L, 6, nmax))
    Mtt = np.empty((L, nmax, nmax))
    bias_b = np.empty(6)
    bias_l = np.empty((L, nmax))
    gen_b = np.empty(6)
    gen_l = np.empty((L, nmax))
    counts = kernels._dynamics_terms(data, R_sb, theta, v, v, True, True, f_world, mask,
                                     Mbb, Mbt, Mtt, bias_b, bias_l, gen_b, gen_l)
    joint_offset = data[1]
    rb = np.empty(6)
    for r in range(6):
        rb[r] = tau[r] + gen_b[r] - bias_b[r]
    rl = np.zeros((L, nmax))
    for i in range(L):
        off = joint_offset[i]
        for a in range(counts[i]):
            Mtt[i, a, a] += diag[off + a]
            rl[i, a] = tau[6 + off + a] + gen_l[i, a] - bias_l[i, a]
    ab = np.empty(6)
    al = np.empty((L, nmax))
    ok = kernels._solve_arrowhead(counts, Mbb, Mbt, Mtt, rb, rl, ab, al)
    vdot_out[:] = 0.0
    vdot_out[0:6] = ab
    for i in range(L):
        off = 6 + joint_offset[i]
        for a in range(counts[i]):
            vdot_out[off + a] = al[i, a]
    return ok
