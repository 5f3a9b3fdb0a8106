"""Compile (and cache) the numba kernels once, so the first demo or test run does not pay for it.

Run by ``scripts/setup_env.sh`` after installing, with ``NUMBA_CACHE_DIR`` pointing at the venv's cache:
``python -m jethexa_dynamics.warmup``. Safe to run any time; it only calls the kernels on small inputs.
"""
import time

import numpy as np


def main():
    t0 = time.perf_counter()
    from jethexa_dynamics.model import LeggedRobot, Morphology
    from jethexa_dynamics.model.integrators import rkmk4_step
    robot = LeggedRobot.jethexa()
    q = np.zeros(18)
    v = np.zeros(24)
    g = np.eye(4)
    robot.mass_matrix(q)
    robot.bias_forces(g, q, v)
    robot.gravity_forces(g, q)
    robot.forward_dynamics(g, q, v, v, tip_forces=np.zeros((6, 3)))
    robot.coriolis_matrix(q, v)
    robot.tip_jacobian(q)
    robot.tip_poses(q)
    robot.forward_dynamics_bank(g, q, v, v, [Morphology.healthy(robot)])
    rkmk4_step(robot, g, q, v, 1e-3)
    from jethexa_dynamics.sim.engine import Engine
    Engine().step(1)
    Engine(gait=None).step(1)
    print(f"numba kernels compiled and cached in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
