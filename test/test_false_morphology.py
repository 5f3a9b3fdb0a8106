"""A wrong morphology must not make the robot fall (issue 21, point 4).

On the emulated robot (the sim graph: the robot's five nodes here, the emulator in its own process, damage
recovery on, as in the demo), walking healthy, false morphologies arrive without evidence or on weak evidence:
one leg (RF:1), two legs (RM:0 RR:1), both front legs (LF:1 RF:1 -- the one that made the robot fall on its
nose). The oracle is the emulated world's own attitude (mocap/pose): |roll| and |pitch| stay within 10 deg the
whole time, and after each correction (the healthy morphology again) the robot walks on."""
import math
import os
import tempfile
import time

import pytest

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticStatus  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402

from jethexa_dynamics.nodes._common import LATCHED_QOS, SENSOR_QOS  # noqa: E402
from jethexa_dynamics.nodes.damage_monitor import evidence_msg, morphology_msg  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, add_launch_graph, wait_for  # noqa: E402
from jethexa_dynamics.nodes.graph_spec import processes  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(400)]
LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
FALSE = [([3, 3, 3, 1, 3, 3], None), ([3, 3, 3, 3, 0, 1], "stall"), ([1, 3, 3, 1, 3, 3], "joint_states")]


def _roll_pitch(msg):
    o = msg.pose.orientation
    roll = math.atan2(2 * (o.w * o.x + o.y * o.z), 1 - 2 * (o.x * o.x + o.y * o.y))
    pitch = math.asin(max(-1.0, min(1.0, 2 * (o.w * o.y - o.z * o.x))))
    return math.degrees(roll), math.degrees(pitch)


def test_false_morphologies_keep_the_robot_upright_and_it_walks_on_when_corrected():
    args = {"port_link": "/tmp/jethexa_false_%d" % os.getpid(), "recovery": "true", "predictor_rate": "50"}
    g = Graph()
    try:
        g.start_process([p for p in processes("sim", args) if p.name == "robot_emulator"][0], tempfile.mkdtemp())
        nodes = add_launch_graph(g, "sim", args, exclude=("robot_emulator",))
        gc = nodes["gait_controller"]
        w = g.add(Watcher, name="false_alarm")
        w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
        morph = w.create_publisher(UInt8MultiArray, "morphology", LATCHED_QOS)
        evidence = w.create_publisher(DiagnosticStatus, "morphology/evidence", LATCHED_QOS)
        w.drive(0.05)
        g.start()
        assert wait_for(lambda: w.count("mocap/pose") > 20 and gc.state == "walking", 180.0)

        def walked(seconds):
            """Forward progress [m] over ``seconds`` of walking (a guard of 60 s on a slow machine)."""
            x0, end = w.last("mocap/pose").pose.position.x, time.monotonic() + 60.0
            wait_for(lambda: gc.state == "walking", 60.0)
            time.sleep(seconds)
            assert time.monotonic() < end
            return w.last("mocap/pose").pose.position.x - x0

        assert walked(2.0) > 0.03
        for links, kind in FALSE:
            if kind is not None:
                evidence.publish(evidence_msg(links, {leg: kind for leg, n in zip(LEGS, links) if n < 3}, LEGS))
            morph.publish(morphology_msg(links, LEGS))
            assert wait_for(lambda: gc.gate.requested == links and gc.state == "unconfirmed", 30.0), gc.state
            time.sleep(2.0)                                   # cmd_vel keeps coming: the robot stands
            assert gc.walker.links_per_leg == [3] * 6 and gc.walker.walking_legs == LEGS
            morph.publish(morphology_msg([3] * 6, LEGS))      # corrected
            assert walked(2.5) > 0.03, links
        attitude = [_roll_pitch(m) for _, m in w.since("mocap/pose", 0.0)]
        worst = max(max(abs(r), abs(p)) for r, p in attitude)
        assert worst <= 10.0, worst
        assert nodes["damage_monitor"].current == [3] * 6 and not any(n.errors for n in nodes.values())
    finally:
        g.close()
