"""Pinocchio as the independent oracle: the same URDF, joints mapped by name, conventions aligned.

Pinocchio's free-flyer velocity [v_local, w_local, qdot] is exactly the paper's quasi-velocity, so M, the
bias forces, gravity and ABA compare entry by entry after a joint permutation.
"""
import numpy as np
import pinocchio as pin


class PinOracle:
    def __init__(self, urdf_text, robot):
        self.model = pin.buildModelFromXML(urdf_text, pin.JointModelFreeFlyer())
        self.data = self.model.createData()
        names = [self.model.names[i] for i in range(2, self.model.njoints)]
        self.perm = np.array([names.index(n) for n in robot.joint_names], dtype=int)
        self.vperm = np.r_[np.arange(6), 6 + self.perm]

    def config(self, g_sb, q):
        qp = np.zeros(self.model.nq)
        qp[:3] = g_sb[:3, 3]
        qp[3:7] = pin.Quaternion(g_sb[:3, :3]).coeffs()
        qp[7 + self.perm] = q
        return qp

    def vel(self, v):
        vp = np.zeros(self.model.nv)
        vp[self.vperm] = v
        return vp

    def back(self, x):
        return np.asarray(x)[self.vperm]

    def M(self, g, q):
        M = pin.crba(self.model, self.data, self.config(g, q))
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.vperm, self.vperm)]

    def nle(self, g, q, v):
        return self.back(pin.nonLinearEffects(self.model, self.data, self.config(g, q), self.vel(v)))

    def gravity(self, g, q):
        return self.back(pin.computeGeneralizedGravity(self.model, self.data, self.config(g, q)))

    def aba(self, g, q, v, tau):
        return self.back(pin.aba(self.model, self.data, self.config(g, q), self.vel(v), self.vel(tau)))

    def _fid(self, frame):
        if not self.model.existFrame(frame):   # an unknown id would make Pinocchio read out of bounds
            raise KeyError(f"Pinocchio model has no frame {frame!r}")
        return self.model.getFrameId(frame)

    def frame_jacobian_local(self, g, q, frame):
        qp = self.config(g, q)
        fid = self._fid(frame)
        J = pin.computeFrameJacobian(self.model, self.data, qp, fid, pin.LOCAL)
        return J[:, self.vperm]

    def frame_pose(self, g, q, frame):
        qp = self.config(g, q)
        pin.framesForwardKinematics(self.model, self.data, qp)
        return self.data.oMf[self._fid(frame)].homogeneous


def rel_err(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def random_state(rng, robot, joint_range=1.0):
    R = pin.Quaternion(*rng.normal(size=4)).normalized().toRotationMatrix()
    g = np.eye(4)
    g[:3, :3] = R
    g[:3, 3] = rng.normal(size=3)
    q = rng.uniform(-joint_range, joint_range, robot.nv - 6)
    v = rng.normal(size=robot.nv)
    tau = np.r_[np.zeros(6), rng.normal(size=robot.nv - 6)]
    return g, q, v, tau
