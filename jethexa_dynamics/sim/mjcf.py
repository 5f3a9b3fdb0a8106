"""MJCF of the same robot for MuJoCo (benchmark peer and cross-check; ``mujoco`` is a bench dependency).

Built from the URDF (``model.urdf.parse_urdf``): a free-floating ``base_link``, one MuJoCo body per URDF link
with explicit inertials (``inertiafromgeom="false"``), fixed joints as welded child bodies, a sphere of radius
``foot_radius`` at each foot frame as the only colliding geoms, a plane at ``ground_z``, and per-joint
``position`` actuators (kp, kv = the PID's P and D gains, force limited to the URDF effort; MuJoCo has no
integral term). Removed legs/links (a morphology) are left out of the tree.

Contact: MuJoCo solves soft constraints, not a penalty spring. With a negative ``solref`` the reference
acceleration is -b v - k r in the contact's mass-normalised space, so the Table III spring (k_z, d_z in N/m,
N·s/m) is mapped with the supported mass per foot in a tripod stance (m / 3): k = k_z / (m/3),
b = d_z / (m/3), and impedance close to 1 (``solimp`` 0.95-0.99). Friction is Coulomb (mu) with a pyramidal
cone; the paper's viscous friction has no MuJoCo equivalent. Statics (weight balance, sinkage) are
comparable; transients are not expected to match.
"""
import numpy as np
from transforms3d.euler import euler2quat

from jethexa_dynamics.model.urdf import parse_urdf


def _f(x):
    return " ".join("%.17g" % v for v in np.atleast_1d(x))


def build_mjcf(urdf_path, links_per_leg=None, leg_joint_names=None, dt=1e-3, k_z=10000.0, d_z=150.0, mu=1.0,
               kp=50.0, kv=1.0, ground_z=0.0, foot_radius=0.002, integrator="implicitfast"):
    """MJCF XML string. ``links_per_leg`` with ``leg_joint_names`` (per leg, proximal->distal) drops links."""
    urdf = parse_urdf(urdf_path)
    children = {}
    for j in urdf.joints:
        children.setdefault(j.parent, []).append(j)
    child_links = {j.child for j in urdf.joints}
    roots = [name for name in urdf.links if name not in child_links]
    if len(roots) != 1:
        raise ValueError("URDF must have exactly one root link, got %s" % roots)
    dropped = set()
    if links_per_leg is not None:
        for names, k in zip(leg_joint_names, links_per_leg):
            dropped.update(names[int(k):])
    total = sum(l.inertial.mass for l in urdf.links.values() if l.inertial is not None)
    m_foot = total / 3.0
    actuators = []

    def inertial(link):
        ine = urdf.links[link].inertial
        if ine is None or ine.mass <= 0.0:
            return ""          # massless frame (foot, IMU): welded, no inertial needed
        from jethexa_dynamics.model.urdf import origin_to_matrix
        T = origin_to_matrix(ine.origin_xyz, ine.origin_rpy)
        I = T[:3, :3] @ ine.inertia @ T[:3, :3].T
        return ('<inertial pos="%s" mass="%.9g" fullinertia="%s"/>'
                % (_f(T[:3, 3]), ine.mass, _f([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])))

    def body(joint, indent):
        pad = " " * indent
        link = joint.child
        q = euler2quat(*joint.origin_rpy, axes="sxyz")
        out = ['%s<body name="%s" pos="%s" quat="%s">' % (pad, link, _f(joint.origin_xyz), _f(q))]
        if joint.type in ("revolute", "continuous"):
            out.append('%s  <joint name="%s" type="hinge" axis="%s"/>' % (pad, joint.name, _f(joint.axis)))
            actuators.append('<position name="act_%s" joint="%s" kp="%.9g" kv="%.9g" forcelimited="true" '
                             'forcerange="%.9g %.9g"/>' % (joint.name, joint.name, kp, kv, -joint.effort,
                                                           joint.effort))
        elif joint.type != "fixed":
            raise ValueError("joint %s: unsupported type %r" % (joint.name, joint.type))
        if inertial(link):
            out.append(pad + "  " + inertial(link))
        if link.startswith("foot"):
            out.append('%s  <geom name="%s_geom" type="sphere" size="%.9g" contype="1" conaffinity="0" '
                       'condim="3" friction="%.9g 0.005 0.0001" solref="%.9g %.9g" solimp="0.95 0.99 0.001"/>'
                       % (pad, link, foot_radius, mu, -k_z / m_foot, -d_z / m_foot))
        if link == "imu_link":
            out.append('%s  <site name="imu"/>' % pad)
        for cj in children.get(link, []):
            if cj.name not in dropped:
                out += body(cj, indent + 2)
        out.append(pad + "</body>")
        return out

    root = roots[0]
    tree = ['    <body name="%s" pos="0 0 0.2">' % root, '      <freejoint name="root"/>',
            "      " + inertial(root)]
    for cj in children.get(root, []):
        if cj.name not in dropped:
            tree += body(cj, 6)
    tree.append("    </body>")
    xml = ['<mujoco model="%s">' % (urdf.name or "robot"),
           '  <compiler angle="radian" inertiafromgeom="false"/>',
           '  <option timestep="%.9g" integrator="%s" cone="pyramidal"/>' % (dt, integrator),
           "  <worldbody>",
           '    <geom name="floor" type="plane" size="50 50 0.1" pos="0 0 %.9g" contype="0" conaffinity="1"/>'
           % ground_z] + tree + ["  </worldbody>", "  <actuator>"] + ["    " + a for a in actuators] + \
          ["  </actuator>", "</mujoco>"]
    return "\n".join(xml)


class MujocoHexapod:
    """The MJCF robot in MuJoCo, driven by joint targets (rad) in ``joint_names`` order."""

    def __init__(self, robot, links_per_leg=None, **kw):
        import mujoco

        self.mujoco = mujoco
        full = robot.full
        leg_joints = [[full.joint_names[k] for k in full.leg_joint_index(leg)] for leg in full.leg_names]
        self.xml = build_mjcf(full.urdf_path, links_per_leg, leg_joints, **kw)
        self.model = mujoco.MjModel.from_xml_string(self.xml)
        self.data = mujoco.MjData(self.model)
        present = [n for n in full.joint_names if mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, n) >= 0]
        self.joint_index = np.array([full.joint_names.index(n) for n in present], dtype=np.int64)
        self.qadr = np.array([self.model.jnt_qposadr[mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, n)]
                              for n in present], dtype=np.int64)
        self.act = np.array([mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_ACTUATOR, "act_" + n)
                             for n in present], dtype=np.int64)
        self.floor = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, "floor")
        #: the feet: the colliding geoms other than the floor (spheres at the foot frames)
        self.feet = [g for g in range(self.model.ngeom) if g != self.floor and self.model.geom_contype[g]]

    def reset(self, base_pos, base_R, theta):
        """Base pose (m, rotation) and full-size joint angles (rad); velocities zero, targets = angles."""
        from transforms3d.quaternions import mat2quat
        d = self.data
        self.mujoco.mj_resetData(self.model, d)
        d.qpos[0:3] = base_pos
        d.qpos[3:7] = mat2quat(base_R)
        d.qpos[self.qadr] = np.asarray(theta)[self.joint_index]
        d.ctrl[self.act] = np.asarray(theta)[self.joint_index]
        self.mujoco.mj_forward(self.model, d)

    def set_targets(self, theta):
        self.data.ctrl[self.act] = np.asarray(theta)[self.joint_index]

    def step(self, n=1):
        self.mujoco.mj_step(self.model, self.data, n)

    @property
    def base_pos(self):
        return self.data.qpos[0:3].copy()

    def normal_force_sum(self):
        """Sum of the floor contact normal forces (N)."""
        f6 = np.zeros(6)
        tot = 0.0
        for i in range(self.data.ncon):
            c = self.data.contact[i]
            if self.floor in (c.geom1, c.geom2):
                self.mujoco.mj_contactForce(self.model, self.data, i, f6)
                tot += f6[0]
        return tot


class MujocoServoPlant:
    """A ``MujocoHexapod`` driven as the engine's servo-target mode is: each joint moves its set-point linearly
    from where it is to a goal over a move time (a Hiwonder bus servo), the position actuators follow the
    set-point every MuJoCo step. The subset of ``Engine`` an active probe, its tests and ``robot_emulator``'s
    MuJoCo plant use: ``dt``, ``time``, ``setpoints``, ``set_joint_targets``, ``step``, ``advance``, ``imu``,
    ``pose``, ``joint_angles``, ``joint_rates``, ``set_breaks``, ``set_morphology``.

    ``robot`` the healthy ``LeggedRobot``; ``links_per_leg`` the links present (a silent break: the links are not
    in the tree, the servos of the ones left still answer); ``body_scale`` and ``body_com_offset`` [m, base_link]
    change the main body's mass (its inertia scaled with it) and CoM after the build, so the plant is not the
    model; ``stance`` the joint set-points [rad, ``robot.joint_names`` order] it stands in (default the engine's
    standing pose), reached on the engine and settled ``settle`` s in MuJoCo; ``mjcf`` keywords of
    ``build_mjcf``."""

    def __init__(self, robot, links_per_leg=None, body_scale=1.0, body_com_offset=(0.0, 0.0, 0.0), stance=None,
                 settle=1.0, **mjcf):
        from jethexa_dynamics.control.ik import LegGeometry
        from jethexa_dynamics.model import Morphology

        from .engine import Engine

        if not (np.isfinite(body_scale) and 0.5 <= body_scale <= 2.0):
            raise ValueError("body_scale=%r outside the allowed range [0.5, 2]" % (body_scale,))
        off = np.asarray(body_com_offset, dtype=float).reshape(-1)
        if off.shape != (3,) or not np.all(np.isfinite(off)) or np.abs(off).max() > 0.05:
            raise ValueError("body_com_offset=%r: three finite lengths within +-0.05 m" % (body_com_offset,))
        self.robot = robot.full
        self.geometry = LegGeometry.from_robot(self.robot)
        self._body = (float(body_scale), off)
        self._mjcf = dict(mjcf)
        self.breaks = Morphology.parse(self.robot, links_per_leg if links_per_leg is not None else "healthy")
        self.morphology = Morphology.parse(self.robot, "healthy")     # the servo-visible links (set_morphology)
        self.mj = self._build(self.breaks.links_per_leg)
        self.dt = float(self.mj.model.opt.timestep)
        eng = Engine(robot, gait=None, record_every=0)
        if stance is not None:
            eng.set_joint_targets(stance, move_time=0.3)
        eng.advance(1.0)
        q = eng.setpoints()
        base = eng.p.copy()
        base[2] += float(mjcf.get("foot_radius", 0.002))    # MuJoCo's feet are spheres: the base stands higher
        self.mj.reset(base, eng.R, eng.theta)
        self.nj = len(q)
        self._start, self._goal = q.copy(), q.copy()
        self._t0, self._dur = np.zeros(self.nj), np.zeros(self.nj)
        self.mj.set_targets(q)
        self.mj.step(int(round(settle / self.dt)))

    def _build(self, links_per_leg):
        """A MujocoHexapod of these links with the body's mass, inertia and CoM changed."""
        mj = MujocoHexapod(self.robot, links_per_leg=list(links_per_leg), **self._mjcf)
        m, (scale, off) = mj.model, self._body
        root = 1                                            # body 0 is the world, 1 the free-floating base_link
        m.body_mass[root] *= scale
        m.body_inertia[root] *= scale
        m.body_ipos[root] += off
        mj.mujoco.mj_setConst(m, mj.data)
        return mj

    def set_breaks(self, breaks):
        """Silent breaks now (``Morphology.parse`` forms): the tree is rebuilt without the lost links, the base's
        and the remaining joints' positions and rates carried over; the lost joints' servos still answer (their
        reported angle is their set-point: they move unloaded)."""
        from jethexa_dynamics.model import Morphology

        self.breaks = Morphology.parse(self.robot, breaks)
        self._rebuild()

    def set_morphology(self, morphology):
        """Links removed now, their servos gone with them (the engine's ``set_morphology``; ``Morphology.parse``
        forms): the tree is rebuilt without them as for a break; the servo-visible ``morphology`` says which
        joints still answer."""
        from jethexa_dynamics.model import Morphology

        self.morphology = Morphology.parse(self.robot, morphology)
        self._rebuild()

    @property
    def body_morphology(self):
        """The links physically present: ``morphology`` minus the silent ``breaks`` (as the engine's)."""
        from jethexa_dynamics.model import Morphology

        return Morphology.from_vector(self.robot, [min(a, b) for a, b in zip(self.morphology.links_per_leg,
                                                                             self.breaks.links_per_leg)])

    def _rebuild(self):
        """The tree of ``body_morphology``, the base's and the remaining joints' positions and rates carried
        over."""
        old, d0 = self.mj, self.mj.data
        mj = self._build(self.body_morphology.links_per_leg)
        d = mj.data
        d.time = d0.time
        d.qpos[0:7], d.qvel[0:6] = d0.qpos[0:7], d0.qvel[0:6]
        where = dict(zip(old.joint_index.tolist(), range(len(old.joint_index))))
        for k, j in enumerate(mj.joint_index.tolist()):
            d.qpos[mj.qadr[k]] = d0.qpos[old.qadr[where[j]]]
            d.qvel[mj.model.jnt_dofadr[mj.model.actuator_trnid[mj.act[k], 0]]] = \
                d0.qvel[old.model.jnt_dofadr[old.model.actuator_trnid[old.act[where[j]], 0]]]
        mj.set_targets(self.setpoints())
        mj.mujoco.mj_forward(mj.model, d)
        self.mj = mj

    @property
    def time(self) -> float:
        return float(self.mj.data.time)

    @property
    def joint_angles(self) -> np.ndarray:
        """Joint angles [rad, all joints]: MuJoCo's where the joint is in the tree, the set-point where not."""
        q = self.setpoints()
        q[self.mj.joint_index] = self.mj.data.qpos[self.mj.qadr]
        return q

    @property
    def joint_rates(self) -> np.ndarray:
        """Joint rates [rad/s, all joints]: MuJoCo's where the joint is in the tree, 0 where not."""
        qd = np.zeros(self.nj)
        m = self.mj.model
        qd[self.mj.joint_index] = self.mj.data.qvel[m.jnt_dofadr[m.actuator_trnid[self.mj.act, 0]]]
        return qd

    @property
    def pose(self) -> np.ndarray:
        """4x4 pose of base_link in the world (the engine's ``pose``)."""
        g = np.eye(4)
        g[:3, :3], g[:3, 3] = self.R, self.p
        return g

    @property
    def R(self) -> np.ndarray:
        """base_link's rotation world <- base_link (MuJoCo's quaternion is (w, x, y, z))."""
        from transforms3d.quaternions import quat2mat
        return quat2mat(self.mj.data.qpos[3:7])

    @property
    def p(self) -> np.ndarray:
        return self.mj.data.qpos[0:3].copy()

    def setpoints(self) -> np.ndarray:
        """The servos' set-points [rad] now."""
        s = np.ones(self.nj)
        moving = self._dur > 0
        s[moving] = np.clip((self.time - self._t0[moving]) / self._dur[moving], 0.0, 1.0)
        return self._start + s * (self._goal - self._start)

    def set_joint_targets(self, targets, move_time=0.0, joints=None):
        """Move ``joints`` (indices, default all) to ``targets`` [rad] linearly over ``move_time`` [s]."""
        idx = np.arange(self.nj) if joints is None else np.asarray(joints, dtype=np.int64).reshape(-1)
        self._start[idx] = self.setpoints()[idx]
        self._goal[idx] = np.asarray(targets, dtype=float).reshape(-1)
        self._t0[idx] = self.time
        self._dur[idx] = float(move_time)

    def step(self, n=1):
        """``n`` MuJoCo steps, the actuators' targets the set-points at each."""
        for _ in range(int(n)):
            self.mj.set_targets(self.setpoints())
            self.mj.step(1)

    def advance(self, t):
        """Step up to time ``t`` [s] (the whole steps not after it; the engine's ``advance``)."""
        n = int(np.floor((float(t) - self.time) / self.dt + 1e-9))
        if n > 0:
            self.step(n)

    def imu(self):
        """(gyro [rad/s, base_link axes: MuJoCo's free-joint rate is in the body frame], specific force [m/s^2,
        base_link]: gravity's only, the body's acceleration not modelled)."""
        return self.mj.data.qvel[3:6].copy(), self.R.T @ np.array([0.0, 0.0, 9.81])
