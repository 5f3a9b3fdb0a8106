"""Joint PID: the control law, saturation, anti-windup, and a closed loop on a gravity-loaded joint."""
import numpy as np
import pytest

from jethexa_dynamics.control.pid import PAPER_GAINS, JointPID


def test_paper_gains_and_law_unsaturated():
    pid = JointPID(3, tau_max=100.0)
    assert (pid.kp[0], pid.ki[0], pid.kd[0]) == PAPER_GAINS == (50.0, 10.0, 1.0)
    q_des, qd_des = np.array([0.1, -0.2, 0.0]), np.array([0.5, 0.0, -1.0])
    q, qd = np.array([0.0, 0.0, 0.05]), np.array([0.0, 1.0, 0.0])
    dt = 1e-3
    tau = pid(q_des, qd_des, q, qd, dt)
    e = q_des - q
    assert tau == pytest.approx(50 * e + 1.0 * (qd_des - qd) + 10 * e * dt, rel=1e-12)
    tau2 = pid(q_des, qd_des, q, qd, dt)                 # integral keeps accumulating
    assert tau2 - tau == pytest.approx(10 * e * dt, rel=1e-9)


def test_per_joint_gains_and_inactive_joints():
    pid = JointPID(3, kp=[1.0, 2.0, 3.0], ki=0.0, kd=0.0, tau_max=[10, 10, 10])
    pid.active[1] = 0.0
    tau = pid(np.ones(3), np.zeros(3), np.zeros(3), np.zeros(3), 1e-3)
    assert tau == pytest.approx([1.0, 0.0, 3.0])


def test_saturation_and_anti_windup():
    pid = JointPID(1, tau_max=3.4)
    for _ in range(10000):          # 10 s of a large error: saturated all along
        tau = pid([1.0], [0.0], [0.0], [0.0], 1e-3)
        assert abs(tau[0]) <= 3.4
    assert tau[0] == pytest.approx(3.4)
    # the error reverses: without anti-windup the 10 rad*s integral (100 N·m) would hold +3.4 N·m
    tau = pid([0.0], [0.0], [0.01], [0.0], 1e-3)
    assert tau[0] < 0.0
    assert abs(pid.integral[0]) <= 3.4 / 10.0


def test_closed_loop_removes_gravity_offset():
    """1-DoF link (I = 1.4e-3 kg m^2, m g l = 0.066 N m) held horizontal: the I-term cancels the sag."""
    I, mgl, dt = 1.4e-3, 0.11 * 9.81 * 0.0615, 1e-3
    pid = JointPID(1)
    q, qd, target = np.array([0.3]), np.array([0.0]), np.array([0.3])
    sag = None
    for k in range(int(20.0 / dt)):   # the integral acts on the time scale kp/ki = 5 s
        tau = pid(target, [0.0], q, qd, dt)
        qd = qd + dt * (tau - mgl * np.cos(q)) / I
        q = q + dt * qd
        if k == int(0.5 / dt):
            sag = target[0] - q[0]
    assert sag == pytest.approx(mgl * np.cos(0.3) / 50.0, rel=0.3)   # P-only steady error after 0.5 s
    assert abs(target[0] - q[0]) < 0.05 * sag                         # the integral removed it


def test_bad_input():
    with pytest.raises(ValueError, match=r"kp must be finite and in \[0, 100000\]"):
        JointPID(3, kp=-1.0)
    with pytest.raises(ValueError, match="ki must be a scalar or 3 values"):
        JointPID(3, ki=[1.0, 2.0])
    pid = JointPID(2)
    with pytest.raises(ValueError, match="q_des must be 2 finite values"):
        pid([np.nan, 0.0], [0, 0], [0, 0], [0, 0], 1e-3)
    with pytest.raises(ValueError, match="dt must be > 0"):
        pid([0, 0], [0, 0], [0, 0], [0, 0], 0.0)
