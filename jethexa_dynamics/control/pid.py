"""Joint-space PID with torque saturation and anti-windup (paper: K_P = 50, K_D = 1, K_I = 10).

    tau = kp e + kd (qd_des - qd) + ki int(e dt),   e = q_des - q,   |tau| <= tau_max

Anti-windup by conditional integration: the integral only accumulates while the output is unsaturated
or the error pulls it back out of saturation, and |ki * integral| is clamped to tau_max. Units: rad,
rad/s, N·m; gains per joint (N·m/rad, N·m·s/rad, N·m/(rad·s)).

``pid_torques`` is a numba function used by the compiled loop; ``JointPID`` wraps it for Python use.
"""
import numpy as np
from numba import njit

from .servo_law import PAPER_GAINS  # noqa: F401 (the paper's gains: this module's defaults, re-exported)


@njit(cache=True)
def pid_torques(kp, ki, kd, tau_max, q_des, qd_des, q, qd, integ, active, dt, tau_out):
    """One PID update for every joint; updates ``integ`` in place, writes ``tau_out``.

    Joints with ``active[j] == 0`` (missing after damage) get zero torque and a reset integral.
    """
    for j in range(q.shape[0]):
        if active[j] == 0.0:
            tau_out[j] = 0.0
            integ[j] = 0.0
            continue
        e = q_des[j] - q[j]
        pd = kp[j] * e + kd[j] * (qd_des[j] - qd[j])
        trial = integ[j] + e * dt
        u = pd + ki[j] * trial
        lim = tau_max[j]
        # integrate only when unsaturated or when the error drives the output back inside
        if (u <= lim and u >= -lim) or (u > lim and e < 0.0) or (u < -lim and e > 0.0):
            integ[j] = trial
        if ki[j] > 0.0:
            cap = lim / ki[j]
            if integ[j] > cap:
                integ[j] = cap
            elif integ[j] < -cap:
                integ[j] = -cap
        u = pd + ki[j] * integ[j]
        if u > lim:
            u = lim
        elif u < -lim:
            u = -lim
        tau_out[j] = u


def _per_joint(name, value, n, lo, hi, unit):
    a = np.broadcast_to(np.asarray(value, dtype=np.float64), (n,)).copy() if np.ndim(value) == 0 \
        else np.asarray(value, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError("%s must be a scalar or %d values, got shape %s" % (name, n, a.shape))
    if not np.all(np.isfinite(a)) or np.any(a < lo) or np.any(a > hi):
        raise ValueError("%s must be finite and in [%g, %g] %s, got %s" % (name, lo, hi, unit, a))
    return a


class JointPID:
    """PID for ``n`` joints; ``kp``, ``ki``, ``kd``, ``tau_max`` are scalars or per-joint arrays."""

    def __init__(self, n, kp=PAPER_GAINS[0], ki=PAPER_GAINS[1], kd=PAPER_GAINS[2], tau_max=3.4):
        self.n = int(n)
        self.kp = _per_joint("kp", kp, self.n, 0.0, 1e5, "N·m/rad")
        self.ki = _per_joint("ki", ki, self.n, 0.0, 1e5, "N·m/(rad·s)")
        self.kd = _per_joint("kd", kd, self.n, 0.0, 1e4, "N·m·s/rad")
        self.tau_max = _per_joint("tau_max", tau_max, self.n, 0.0, 1e4, "N·m")
        self.integral = np.zeros(self.n)
        self.active = np.ones(self.n)

    def reset(self):
        self.integral[:] = 0.0

    def __call__(self, q_des, qd_des, q, qd, dt):
        """Joint torques (N·m) for targets/measurements (rad, rad/s) and time step dt (s)."""
        arrs = [np.asarray(x, dtype=np.float64) for x in (q_des, qd_des, q, qd)]
        for name, a in zip(("q_des", "qd_des", "q", "qd"), arrs):
            if a.shape != (self.n,) or not np.all(np.isfinite(a)):
                raise ValueError("%s must be %d finite values, got %r" % (name, self.n, a))
        if not (dt > 0.0 and np.isfinite(dt)):
            raise ValueError("dt must be > 0 s, got %r" % (dt,))
        tau = np.empty(self.n)
        pid_torques(self.kp, self.ki, self.kd, self.tau_max, arrs[0], arrs[1], arrs[2], arrs[3],
                    self.integral, self.active, float(dt), tau)
        return tau
