"""robot_emulator: the emulated JetHexa for ``sim.launch.py`` and the demo.

* World: the simulation engine (``jethexa_dynamics.sim.engine.Engine``, external joint targets), advanced in
  real time on a timer at ``rate``.
* Servo bus: ``hardware.emulator.BusEmulator`` on a pseudo-terminal, linked at ``port_link``; ``servo_driver``
  opens it as the robot's UART. The servos' commanded trajectories drive the engine's joint targets and
  position reads report the engine's joint angles.
* IMU: the motion source of the MPU6050 model in the ``imu`` node (``source: emulator``) on
  ``emulator/imu_motion`` (sensor_msgs/Imu): orientation world<-base_link, body angular velocity [rad/s] and
  the IMU point's linear acceleration in the world frame, gravity excluded [m/s^2]. With ``transport: rrc``
  (today's kit) the emulated STM32 board reports the same motion (``BusEmulator.set_imu``) in its own IMU
  reports on the bus, as the board does, and no ``emulator/imu_motion`` is published.
* Ground truth: ``mocap/pose`` (geometry_msgs/PoseStamped, frame ``world``).
* Damage injection: parameter ``damage`` (``ros2 param set /robot_emulator damage scenario1``) removes links
  in the world and silences their servos; the damage monitor has to find out by itself.
* Silent breaks: parameter ``breaks`` (same syntax, e.g. ``LM:1``) breaks links in the world while their
  servos keep answering and following commands (``Engine.set_breaks``); only the body's motion tells.
* Seized servos: parameter ``seize`` (joint names, comma-separated) locks those joints where they are in the
  world; their servos keep answering (reads give the locked angle) and accepting moves they do not make.

``interface: topics`` is a robot whose joints come from another driver (no servo bus, no servo statuses): the
emulator itself takes ``joint_commands`` (each joint moves linearly to the last point in its ``time_from_start``,
as a bus servo does), publishes ``joint_states`` (every joint of the servo-visible morphology at
``joint_states_rate``; a removed link's joints vanish from it; parameter ``hide`` leaves joints out while the world
keeps them, as a starved or faulty driver would) and ``imu/data`` (the world's body rates and specific force with
the MPU6050's noise, through the imu node's publishing path and filter: parameters ``imu_*``), and no
``emulator/imu_motion``: the graph runs without servo_driver and imu (sim launch argument ``interface``).
``plant: mujoco`` makes the world MuJoCo (``sim.mjcf.MujocoServoPlant``, an independent contact model; needs the
``mujoco`` package) instead of the project's engine; ``servo_timing: exact`` needs the engine.
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Dict, List, Optional

import numpy as np
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import Imu, JointState
from trajectory_msgs.msg import JointTrajectory

from jethexa_dynamics.hardware.emulator import BusEmulator, follow_commanded
from jethexa_dynamics.hardware.servo_table import load_servo_table
from jethexa_dynamics.model.se3 import rot_to_quat
from jethexa_dynamics.nodes import params as node_params
from jethexa_dynamics.damage.detection import joint_leg_link
from jethexa_dynamics.model import Morphology, format_morphology
from jethexa_dynamics.nodes import messages as validate
from jethexa_dynamics.nodes._common import RELIABLE_QOS, SENSOR_QOS, ThinNode, run, stamp_to_sec, switch_for_bus
from jethexa_dynamics.nodes._robot import jethexa

GRAVITY = np.array([0.0, 0.0, -9.81])  # the engine's world gravity [m/s^2]
MAX_CATCH_UP = 0.05  # s of simulated time per tick at most (keeps the GIL free for the bus emulator's
#                      replies); beyond, the world falls behind real time (counted in lag_events)
ACCEL_NOISE, GYRO_NOISE = 0.025, 6e-4   # imu/data of interface topics: the MPU6050 model's per-sample noise
#                                         (m/s^2, rad/s: hardware.mpu6050_emulator's defaults)


class RobotEmulator(ThinNode):
    def __init__(self, **kwargs):
        super().__init__(node_params.ROBOT_EMULATOR, **kwargs)
        from jethexa_dynamics.sim.engine import Engine, SimulationError

        self._SimulationError = SimulationError
        robot = jethexa()
        self.leg_names = list(robot.leg_names)
        self.joint_names = list(robot.joint_names)
        self._leg_link = joint_leg_link(self.joint_names, self.leg_names)
        self.lock = threading.RLock()
        self.topics = self.p["interface"] == "topics"
        if self.p["plant"] == "mujoco":
            if self.p["servo_timing"] == "exact":
                raise ValueError("servo_timing: 'exact' needs plant 'engine' (the MuJoCo plant follows the servos "
                                 "on its ticks)")
            from jethexa_dynamics.sim.mjcf import MujocoServoPlant

            self.engine = MujocoServoPlant(robot, body_scale=self.p["body_mass_scale"],
                                           body_com_offset=self.p["body_com_shift"])
        else:
            if self.p["body_mass_scale"] != 1.0 or any(self.p["body_com_shift"]):  # the world's body, not the URDF's
                from jethexa_dynamics.sim.streams import scaled_body_robot

                robot = scaled_body_robot(self.p["body_mass_scale"], self.p["body_com_shift"])
            self.engine = Engine(robot, gait=None, record_every=0)
            self.engine.step(0)  # compile (or load the numba cache) now, not in the first timer callback
        self.bus: Optional[BusEmulator] = None
        self.port = ""
        self.board = not self.topics and self.p["transport"] == "rrc"
        if self.topics:
            self._init_topics()
        else:
            # the emulated servos act on a frame when the pty thread has read it: that thread must get the GIL
            # from the executor's at once (``_common.BUS_SWITCH_INTERVAL``), or a move starts late in the world
            switch_for_bus()
            self.bus = BusEmulator(seed=self.p["seed"], line_rate="auto" if self.p["bus_line"] else None,
                                   transport=self.p["transport"], imu_rate=self.p["imu_rate"]).start()
            self._hold_standing_pose()
            self.port = self.bus.port
            self._link_port()
        self.world_morphology = [3] * len(self.leg_names)
        self.silenced: List[str] = []
        self.sim_failures = 0
        self.lag_events = 0
        self._t0 = time.monotonic()
        self._wall_offset = 0.0  # wall seconds the world skipped (fell behind)
        self.mocap_pub = self.create_publisher(PoseStamped, "mocap/pose", SENSOR_QOS)
        self.imu_pub = (None if self.board or self.topics else
                        self.create_publisher(Imu, "emulator/imu_motion", SENSOR_QOS))
        self.recorder = None
        if self.p["record"]:
            from jethexa_dynamics.nodes.bag_recorder import BagRecorder

            self.recorder = BagRecorder(self, self.p["record"], storage=self.p["record_storage"])
        self.world_breaks = [3] * len(self.leg_names)
        self.seized: Dict[str, float] = {}     # joint -> angle [rad] it is locked at in the world
        self._apply_damage(self.p["damage"])
        self._apply_breaks(self.p["breaks"])
        self._apply_seize(self.p["seize"])
        self._apply_hide(self.p["hide"])
        self._ticks = 0
        # one timer: the world steps at `rate`; IMU motion and mocap go out every k-th tick (one callback
        # instead of three: the rclpy executor's per-callback cost dominates here)
        self.rate_timer("rate", self._on_tick, "world")
        self._diag_timer = self.timer(1.0, self._on_diag, "diagnostics")
        if self.p["servo_timing"] == "exact" and not self.topics:
            # each bus transaction brings the world up to its arrival and is executed there: a read gives the
            # angle at the read to 1 ms (carried forward from the last world update at 100 Hz the readings lag or
            # lead by up to 10 ms, and the body estimate reads that lag as load)
            self.bus.before_bytes = self._on_world
        if self.topics:
            self.get_logger().info("world (%s) on topics: joint_commands in, joint_states and imu/data out"
                                   % self.p["plant"])
        else:
            self.get_logger().info("emulated servo bus on %s (linked at %s)" % (self.port, self.p["port_link"]))

    # ------------------------------------------------------------------ set-up
    def _init_topics(self) -> None:
        """interface topics: the joint limits of the servo table (commands outside are rejected, as
        servo_driver's joint layer does), joint_commands in, joint_states and imu/data out."""
        table = load_servo_table(None)
        by_name = {s.joint: s for s in table}
        self.lower = [by_name[j].lower for j in self.joint_names]
        self.upper = [by_name[j].upper for j in self.joint_names]
        from jethexa_dynamics.nodes.imu import ImuPublisher

        self.imu_out = ImuPublisher(self, prefix="imu_")     # the imu node's filter, gap rule and messages
        self._rng = np.random.default_rng(self.p["seed"])
        self.commands_applied = 0
        self.hidden: List[str] = []
        self.js_pub = self.create_publisher(JointState, "joint_states", SENSOR_QOS)
        self.sub(JointTrajectory, "joint_commands", self._on_commands, RELIABLE_QOS)

    def _on_commands(self, msg: JointTrajectory) -> None:
        """A move of the joints named (the last point, in its time_from_start) from where their set-points are
        now: a seized joint's is ignored, a removed joint's (no servo) too."""
        points = [(p.positions, p.velocities, stamp_to_sec(p.time_from_start)) for p in msg.points]
        idx, pos, t = validate.trajectory(msg.joint_names, points, self.joint_names, self.lower, self.upper)
        with self.lock:
            keep = [(i, float(q)) for i, q in zip(idx, pos)
                    if self.joint_names[i] not in self.seized and self.joint_names[i] not in self.silenced]
            if keep:
                self.engine.set_joint_targets([q for _, q in keep], move_time=max(0.0, t),
                                              joints=[i for i, _ in keep])
            self.commands_applied += 1

    def _hold_standing_pose(self) -> None:
        """The emulated servos start where the engine's robot stands (not at their centre)."""
        self.bus.set_positions(dict(zip(self.joint_names, map(float, self.engine.joint_angles))))

    def _link_port(self) -> None:
        link = self.p["port_link"]
        if not link:
            return
        if os.path.lexists(link):
            if not os.path.islink(link):
                raise ValueError("port_link %r exists and is not a symlink; refusing to replace it" % link)
            os.unlink(link)
        os.symlink(self.port, link)

    def apply_params(self, changed: Dict[str, Any]) -> None:
        if "damage" in changed:
            self._apply_damage(changed["damage"])
        if "breaks" in changed:
            self._apply_breaks(changed["breaks"])
        if "seize" in changed:
            self._apply_seize(changed["seize"])
        if "hide" in changed:
            self._apply_hide(changed["hide"])

    def _joint_list(self, name: str, spec: str) -> List[str]:
        """Joint names (or leg names: their three joints), comma-separated -> joint names; ValueError naming
        ``name`` for an unknown one."""
        out: List[str] = []
        for n in (x.strip() for x in spec.split(",")):
            if not n:
                continue
            if n in self.leg_names:
                out += [j for j, (leg, _) in zip(self.joint_names, self._leg_link) if self.leg_names[leg] == n]
            elif n in self.joint_names:
                out.append(n)
            else:
                raise ValueError("%s: unknown joint or leg %s (joints like femur_joint_LM, legs like RM)" % (name, n))
        return out

    def _apply_hide(self, spec: str) -> None:
        names = self._joint_list("hide", spec)     # ValueError -> parameter rejected
        if names and not self.topics:
            raise ValueError("hide: needs interface 'topics' (the emulated servo bus has no joint_states)")
        with self.lock:
            self.hidden = names
        if names:
            self.get_logger().warning("left out of joint_states (the world keeps them): %s" % ", ".join(names))

    def _apply_breaks(self, spec: str) -> None:
        links = list(Morphology.parse(self.engine.robot, spec).links_per_leg)  # ValueError -> parameter rejected
        with self.lock:
            self.engine.set_breaks(links)
            self.world_breaks = links
        if spec:
            self.get_logger().warning("silent break in the world: %s (servos keep answering)"
                                      % format_morphology(links, self.leg_names))

    def _apply_seize(self, spec: str) -> None:
        names = [n.strip() for n in spec.split(",") if n.strip()]
        unknown = [n for n in names if n not in self.joint_names]
        if unknown:   # ValueError -> parameter rejected
            raise ValueError("seize: unknown joint %s (joints like femur_joint_LM)" % ", ".join(unknown))
        with self.lock:
            q = self.engine.joint_angles
            self.seized = {n: self.seized.get(n, float(q[self.joint_names.index(n)])) for n in names}
            if self.topics and self.seized:     # held where they are; their commands are ignored
                idx = [self.joint_names.index(n) for n in self.seized]
                self.engine.set_joint_targets([self.seized[n] for n in self.seized], move_time=0.0, joints=idx)
        if names:
            self.get_logger().warning("seized in the world: %s (servos keep answering)" % ", ".join(names))

    def _apply_damage(self, spec: str) -> None:
        links = list(Morphology.parse(self.engine.robot, spec).links_per_leg)  # ValueError -> parameter rejected
        with self.lock:
            self.engine.set_morphology(links)
            lost = [j for j, (leg, k) in zip(self.joint_names, self._leg_link) if k >= links[leg]]
            if self.bus is not None:
                self.bus.clear_faults()
                for j in lost:
                    self.bus.silence(j)
            self.world_morphology, self.silenced = links, lost
        if spec:
            self.get_logger().warning("damage injected in the world: %s (%s: %s)" % (
                format_morphology(links, self.leg_names),
                "gone from joint_states" if self.topics else "servos silenced", ", ".join(lost) or "none"))

    # ------------------------------------------------------------------ world
    def sim_target_time(self, now: Optional[float] = None) -> float:
        """The world's time [s] for monotonic time ``now`` (default now)."""
        return (time.monotonic() if now is None else now) - self._t0 - self._wall_offset

    def _on_tick(self) -> None:
        self._on_world()
        self._ticks += 1
        rate = self.p["rate"]
        if self._ticks % max(1, int(round(rate / self.p["imu_rate"]))) == 0:
            self._on_imu_data() if self.topics else self._on_imu()
        if self.topics and self._ticks % max(1, int(round(rate / self.p["joint_states_rate"]))) == 0:
            self._on_joint_states()
        if self._ticks % max(1, int(round(rate / self.p["mocap_rate"]))) == 0:
            self._on_mocap()

    def _reset_world(self, exc: Exception) -> None:
        """The engine failed a step (``SimulationError``): counted, said once, the robot back to standing."""
        self.sim_failures += 1
        self.get_logger().error("world: %s; robot reset to standing" % exc)
        self.engine.reset_standing()

    def _on_world(self, now: Optional[float] = None) -> None:
        """The world up to monotonic time ``now`` (default now: the timer's), the reads' angles set for it."""
        with self.lock:
            e = self.engine
            now = time.monotonic() if now is None else now
            target = self.sim_target_time(now)
            if target - e.time > MAX_CATCH_UP:
                self._wall_offset += target - e.time - MAX_CATCH_UP
                self.lag_events += 1
                target = e.time + MAX_CATCH_UP
            dt = target - e.time
            if dt < e.dt:
                return
            if self.topics:                    # the commands set the targets on arrival (_on_commands)
                try:
                    e.advance(target)
                except self._SimulationError as exc:
                    self._reset_world(exc)
                return
            t_bus = self.bus.now(now)
            idx = [i for i, j in enumerate(self.joint_names) if j not in self.silenced]
            exact = self.p["servo_timing"] == "exact"
            try:
                if exact:
                    names = self.joint_names
                    follow_commanded(self.bus, e, {i: names[i] for i in idx}, target, t_bus - target,
                                     {i: self.seized[names[i]] for i in idx if names[i] in self.seized})
                else:
                    goal = [self.seized.get(self.joint_names[i]) for i in idx]
                    goal = [self.bus.commanded_position(self.joint_names[i], t_bus + dt) if g is None else g
                            for i, g in zip(idx, goal)]
                    e.set_joint_targets(goal, move_time=dt, joints=idx)
                    e.advance(target)
            except self._SimulationError as exc:
                self._reset_world(exc)
                return
            q = e.joint_angles
            if exact:    # reads carry the angles forward to their own time (the engine's time on the bus clock)
                qd, names = e.joint_rates, self.joint_names
                self.bus.set_measured_positions({names[i]: float(q[i]) for i in idx},
                                                {names[i]: float(qd[i]) for i in idx}, e.time + t_bus - target)
            else:
                self.bus.set_measured_positions({self.joint_names[i]: float(q[i]) for i in idx})

    def _stamp(self, msg, frame: str) -> None:
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = frame

    def _on_imu(self) -> None:
        with self.lock:
            gyro, specific_force = self.engine.imu()
            R = self.engine.pose[:3, :3]
        if self.board:     # the board's IMU reports it (its own thread, at imu_rate)
            self.bus.set_imu(gyro, specific_force)
            return
        acc_world = R @ specific_force + GRAVITY  # the IMU point's acceleration, gravity excluded
        msg = Imu()
        self._stamp(msg, "imu_link")
        w, x, y, z = rot_to_quat(R)
        msg.orientation.w, msg.orientation.x, msg.orientation.y, msg.orientation.z = map(float, (w, x, y, z))
        msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = map(float, gyro)
        msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z = map(float, acc_world)
        self.imu_pub.publish(msg)

    def _on_joint_states(self) -> None:
        """interface topics: every joint whose servo is there (not hidden), measured positions only."""
        with self.lock:
            q = self.engine.joint_angles
            gone = set(self.silenced) | set(self.hidden)
        names = [j for j in self.joint_names if j not in gone]
        if not names:
            return
        msg = JointState()
        self._stamp(msg, "")
        msg.name = names
        msg.position = [float(q[self.joint_names.index(j)]) for j in names]
        self.js_pub.publish(msg)

    def _on_imu_data(self) -> None:
        """interface topics: imu/data (and imu/data_raw) as the imu node publishes them -- the body rates and
        specific force with the chip's noise through its publishing path (``nodes.imu.ImuPublisher``: the Madgwick
        filter, published once its initialisation is over)."""
        with self.lock:
            gyro, specific_force = self.engine.imu()
        gyro = np.asarray(gyro, dtype=float) + self._rng.normal(0.0, GYRO_NOISE, 3)
        acc = np.asarray(specific_force, dtype=float) + self._rng.normal(0.0, ACCEL_NOISE, 3)
        self.imu_out.sample(time.monotonic(), gyro, acc, 1.0 / self.p["imu_rate"])

    def _on_mocap(self) -> None:
        with self.lock:
            g = self.engine.pose
        msg = PoseStamped()
        self._stamp(msg, "world")
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, g[:3, 3])
        w, x, y, z = rot_to_quat(g[:3, :3])
        msg.pose.orientation.w, msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z = \
            map(float, (w, x, y, z))
        self.mocap_pub.publish(msg)

    def _on_diag(self) -> None:
        with self.lock:
            sim_t, wall = self.engine.time, getattr(self.engine, "wall_time", 0.0)
        rtf = sim_t / max(1e-9, time.monotonic() - self._t0)
        level = 1 if (self.lag_events or self.sim_failures) else 0
        values = [("interface", self.p["interface"]), ("plant", self.p["plant"]),
                  ("port", self.port), ("port_link", self.p["port_link"]), ("sim_time", sim_t),
                  ("real_time_factor", rtf), ("engine_wall_time", wall), ("lag_events", self.lag_events),
                  ("sim_failures", self.sim_failures),
                  ("world_morphology", format_morphology(self.world_morphology, self.leg_names)),
                  ("silenced_servos", ",".join(self.silenced)),
                  ("world_breaks", format_morphology(self.world_breaks, self.leg_names)),
                  ("world_seized", ",".join(sorted(self.seized)))]
        if self.topics:
            values += [("commands_applied", self.commands_applied), ("hidden_joints", ",".join(self.hidden))]
        self.publish_diagnostics([self.node_status("world running", level, values)])

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.close()
            self.recorder = None
        if self.bus is None:
            return
        self.bus.stop()
        link = self.p["port_link"]
        if link and os.path.islink(link) and os.readlink(link) == self.port:
            os.unlink(link)


NODE = RobotEmulator  # the class graph.node_class() finds


def main(args=None):
    return run(RobotEmulator, args, kernels_of="robot_emulator")


if __name__ == "__main__":
    main()
