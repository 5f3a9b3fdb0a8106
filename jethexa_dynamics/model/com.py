"""Whole-body centre of mass of the modular model (paper 003: main body X_b plus the links that exist).

c = (m_b c_b + sum over existing links m_ik c_ik(theta)) / (m_b + sum m_ik), in base_link (m), the links' CoMs
from the model's leg kinematics (``kernels.leg_kinematics``). Used by the gait planner (static stability),
the engine (statics, potential energy) and the slip model.
"""
import numpy as np

from . import kernels
from ._numba import njit


@njit(cache=True)
def com_kernel(data, theta, mask, R, p, xp, c, Ic, out):
    """sum_i m_i c_i / sum_i m_i over the main body and the existing links (X_b), into out[0:3]."""
    n_joints, mass = data[kernels.D_N_JOINTS], data[kernels.D_MASS]
    m_tot = data[kernels.D_BODY_MASS][0]
    for r in range(3):
        out[r] = m_tot * data[kernels.D_BODY_COM][r]
    for i in range(n_joints.shape[0]):
        if mask[i, 0] < 0.5:
            continue
        kernels.leg_kinematics(data, i, theta, R, p, xp, c, Ic)
        for k in range(n_joints[i]):
            if mask[i, k] > 0.5:
                m_tot += mass[i, k]
                for r in range(3):
                    out[r] += mass[i, k] * c[k, r]
    for r in range(3):
        out[r] /= m_tot


def center_of_mass(robot, theta, mask=None) -> np.ndarray:
    """Whole-body centre of mass (m, base_link) of the links that exist.

    ``robot`` a ``LeggedRobot`` (healthy or reduced; its kernel data is the healthy one); ``theta`` the FULL
    joint vector (rad, leg-major, healthy size); ``mask`` (n_legs, max_links) link existence (default: the
    robot's morphology).
    """
    data = robot.full.kernel_data
    mask = robot.morphology.link_mask if mask is None else mask
    nmax = data[kernels.D_XI].shape[1]
    out = np.empty(3)
    com_kernel(data, np.ascontiguousarray(theta, dtype=np.float64), np.ascontiguousarray(mask, dtype=np.float64),
               np.empty((nmax, 3, 3)), np.empty((nmax, 3)), np.empty((nmax, 6)), np.empty((nmax, 3)),
               np.empty((nmax, 3, 3)), out)
    return out
