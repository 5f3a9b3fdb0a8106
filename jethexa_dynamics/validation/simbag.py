"""Record a bag from the simulated JetHexa without ROS (faster than real time).

The "robot" is the simulation engine on external joint targets, exactly as in ``robot_emulator``; the
gait controller's logic (``control.walking.WalkingGait``: tripod, re-phased wave over the remaining legs
after a damage) produces joint targets at ``cmd_rate``, published as one-point ``JointTrajectory``
messages (reach the target in one control period, like the bus servos' move time) and applied to the
engine the same way. The bag holds what the real robot's stack records: ``joint_commands``, ``joint_states`` (engine
joint angles), ``imu/data`` (orientation world<-base_link, gyro, specific force), ``morphology`` and
``mocap/pose`` (ground truth); optionally with IMU noise. With ``reads_per_message`` the joints are read as the
robot's bus reads them: that many servos per command cycle in turn, at an instant that moves over the cycle (the
servo driver's ``read_dither``: the golden-ratio sequence), in whole servo ticks (0.24 deg), each message with its
``joint_states/setpoint`` twin (the same stamp; each read servo's set-point then, the engine's own moves). Used by
the replay benchmark and tests, and to try ``jethexa-validate`` without a robot::

    python -m jethexa_dynamics.validation.simbag OUT_BAG --duration 60 --damage-at 30 --damage damage1
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from . import bag_messages as M
from .bag_io import BagWriter

T0_NS = 1_700_000_000_000_000_000


def _quat(R):
    from transforms3d.quaternions import mat2quat

    q = mat2quat(R)
    return q if q[0] >= 0 else -q


def write_sim_bag(path, duration=20.0, damage_at=None, damage="damage1", storage="mcap", robot=None,
                  command=(0.06, 0.0, 0.0), cmd_rate=50.0, imu_rate=100.0, mocap_rate=100.0, settle=0.5,
                  imu_noise_deg=0.0, seed=0, dt=1e-3, breaks=None, break_at=None, reads_per_message=None):
    """Simulate ``duration`` s of walking and write the bag at ``path``; returns a summary dict.

    ``damage_at``: time (s) of the morphology change to ``damage`` (scenario name or links per leg).
    ``robot``: the ``LeggedRobot`` that plays the real robot (default: the packaged JetHexa).
    ``break_at``: time (s) of a silent break ``breaks`` (spec like ``LM:1``): links lost, servos answering,
    nothing on ``morphology`` (what the model-based identifier has to find).
    ``reads_per_message``: None (every joint at each command, exact) or [1, 18] servos read per command cycle as
    the bus reads them, with ``joint_states/setpoint`` (see the module's docstring).
    """
    from jethexa_dynamics.model import LeggedRobot, Morphology
    from jethexa_dynamics.sim.closed_loop import GaitLoop

    loop = GaitLoop.build(robot or LeggedRobot.jethexa(), dt=dt)
    eng = loop.engine
    if reads_per_message is not None and not (isinstance(reads_per_message, int) and
                                              1 <= reads_per_message <= eng.nj):
        raise ValueError("reads_per_message=%r outside the allowed range [1, %d] servos"
                         % (reads_per_message, eng.nj))
    if breaks is not None:
        breaks = Morphology.parse(eng.robot, breaks)      # a bad spec fails before anything is written
    names = list(eng.robot.joint_names)
    loop.walker.set_command(tuple(command))
    rng = np.random.default_rng(seed)
    tick = 1.0 / np.lcm.reduce([int(round(r)) for r in (cmd_rate, imu_rate, mocap_rate)])
    n = int(round(duration / tick))
    cmd_every, imu_every, mocap_every = (int(round(1.0 / (r * tick))) for r in (cmd_rate, imu_rate, mocap_rate))
    damaged = False
    broken = breaks is None
    bus = _BusReads(eng, reads_per_message, 1.0 / cmd_rate) if reads_per_message else None
    with BagWriter(path, storage=storage) as w:
        w.add_topic("morphology", "std_msgs/msg/UInt8MultiArray", latched=True)
        w.write("morphology", T0_NS, M.morphology(eng.morphology.links_per_leg, eng.robot.leg_names))
        for k in range(n + 1):
            t = k * tick
            t_ns = T0_NS + int(round(t * 1e9))
            if damage_at is not None and not damaged and t >= damage_at:
                loop.set_morphology(damage)
                damaged = True
                w.write("morphology", t_ns, M.morphology(eng.morphology.links_per_leg, eng.robot.leg_names))
            if not broken and t >= (break_at or 0.0):
                eng.set_breaks(breaks)
                broken = True
            if k % imu_every == 0:
                gyro, acc = eng.imu()
                q = _quat(eng.R)
                if imu_noise_deg > 0:
                    from transforms3d.euler import euler2quat
                    from transforms3d.quaternions import qmult
                    q = qmult(q, euler2quat(*np.radians(rng.normal(0.0, imu_noise_deg, 3)), "sxyz"))
                w.write("imu/data", t_ns, M.imu(t_ns, q, gyro, acc))
            if k % mocap_every == 0:
                w.write("mocap/pose", t_ns, M.pose_stamped(t_ns, eng.p, _quat(eng.R)))
            if k % cmd_every == 0:
                if bus is None:
                    w.write("joint_states", t_ns, M.joint_state(t_ns, names, eng.joint_angles))
                else:
                    bus.schedule(t)
                cmd_names, target = loop.step(1.0 / cmd_rate, walking=t >= settle, move_time=1.0 / cmd_rate)
                if cmd_names:
                    w.write("joint_commands", t_ns, M.joint_trajectory(t_ns, cmd_names, target, 1.0 / cmd_rate))
            if k < n:
                if bus is not None:
                    bus.read_before((k + 1) * tick, w)
                eng.advance((k + 1) * tick)
    return {"path": str(path), "duration": n * tick, "final_position": eng.p.tolist(),
            "morphology": list(eng.morphology.links_per_leg)}


class _BusReads:
    """The robot's bus reads for :func:`write_sim_bag`: ``per_cycle`` servos each command ``period`` [s] in turn,
    at the golden-ratio sequence's instant of the cycle (whole engine steps), in the servos' ticks, each message
    with its ``joint_states/setpoint`` twin."""

    def __init__(self, eng, per_cycle: int, period: float):
        from jethexa_dynamics.hardware.joints import READ_DITHER_STEP
        from jethexa_dynamics.hardware.servo_table import load_servo_table

        self.eng, self.per_cycle, self.period, self.step = eng, per_cycle, period, READ_DITHER_STEP
        self.names = list(eng.robot.joint_names)
        table = load_servo_table()
        self.specs = [table.by_joint(n) for n in self.names]
        self.phase, self.next_joint, self.due = 0.0, 0, None

    def schedule(self, t: float) -> None:
        """A command cycle starts at ``t`` [s]: its reads are due at the sequence's next instant in it."""
        self.phase = (self.phase + self.step) % 1.0
        self.due = t + round(self.phase * self.period / self.eng.dt) * self.eng.dt

    def read_before(self, t_end: float, w) -> None:
        """If the cycle's reads fall before ``t_end`` [s]: run the engine to them and write both messages."""
        if self.due is None or self.due >= t_end - 1e-12:
            return
        eng = self.eng
        eng.advance(self.due)
        idx = [(self.next_joint + i) % len(self.names) for i in range(self.per_cycle)]
        self.next_joint = (self.next_joint + self.per_cycle) % len(self.names)
        q, sp = eng.joint_angles, eng.setpoints()
        read = [self.specs[j].reported(q[j]) for j in idx]
        t_ns = T0_NS + int(round(self.due * 1e9))
        names = [self.names[j] for j in idx]
        w.write("joint_states", t_ns, M.joint_state(t_ns, names, read))
        w.write("joint_states/setpoint", t_ns, M.joint_state(t_ns, names, [float(sp[j]) for j in idx]))
        self.due = None


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m jethexa_dynamics.validation.simbag",
                                description="Record a bag of the simulated JetHexa walking (no ROS needed).")
    p.add_argument("bag", help="bag directory to create")
    p.add_argument("--duration", type=float, default=20.0)
    p.add_argument("--damage-at", type=float, default=None, help="time of the damage (s); default none")
    p.add_argument("--damage", default="damage1", help="scenario (damage1, damage2) or links per leg, e.g. 3,0,3,3,0,3")
    p.add_argument("--break", dest="breaks", default=None, metavar="SPEC",
                   help="silent break (servos keep answering, no morphology message), e.g. LM:1")
    p.add_argument("--break-at", type=float, default=None, help="time of the silent break (s); default 0")
    p.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    p.add_argument("--imu-noise-deg", type=float, default=0.0)
    p.add_argument("--reads-per-message", type=int, default=None, metavar="N",
                   help="servos read per command cycle as the robot's bus reads them, [1, 18], with "
                        "joint_states/setpoint (default: every joint at each command)")
    a = p.parse_args(argv)
    dmg = [int(x) for x in a.damage.split(",")] if "," in a.damage else a.damage
    try:
        info = write_sim_bag(a.bag, a.duration, a.damage_at, dmg, a.storage, imu_noise_deg=a.imu_noise_deg,
                             breaks=a.breaks, break_at=a.break_at, reads_per_message=a.reads_per_message)
    except ValueError as err:
        print("simbag: error: {}".format(err), file=sys.stderr)
        return 2
    print("wrote {path}: {duration:.2f} s, final position {final_position}, morphology {morphology}".format(**info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
