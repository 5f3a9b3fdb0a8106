"""Silent break over real DDS (loopback): the whole sim graph walks, ``robot_emulator``'s ``breaks`` parameter
breaks LM's femur and tibia while every servo keeps answering; damage_monitor's identifier names LM from the
body's motion, publishes the morphology, the gait and the predictor reshape, /diagnostics says "model"."""
import contextlib
import os

import pytest

pytest.importorskip("rclpy")

from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from std_msgs.msg import UInt8MultiArray  # noqa: E402

from jethexa_dynamics.nodes._common import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS  # noqa: E402
from jethexa_dynamics.nodes.graph import Graph, Watcher, add_launch_graph, wait_for  # noqa: E402

pytestmark = [pytest.mark.ros, pytest.mark.slow, pytest.mark.timeout(300)]
LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]


def _monitor_status(w):
    for _, arr in reversed(w.since("/diagnostics", 0.0)):
        for st in arr.status:
            if st.name.startswith("damage_monitor"):
                return {kv.key: kv.value for kv in st.values}
    return None


@contextlib.contextmanager
def walking_sim_graph(tag, watch, params=None):
    """The sim launch graph in this process (``params`` {node: {parameter: value}} on top), a Watcher on
    mocap/pose, morphology and the topics ``watch`` (type, topic, QoS), driving cmd_vel at 0.05 m/s: yields
    (graph, nodes by name, watcher)."""
    g = Graph()
    try:
        nodes = add_launch_graph(g, "sim", {"port_link": "/tmp/jethexa_test_bus_%s_%d" % (tag, os.getpid())},
                                 params=params)
        w = g.add(Watcher)
        w.watch(PoseStamped, "mocap/pose", SENSOR_QOS)
        w.watch(UInt8MultiArray, "morphology", LATCHED_QOS)
        for msg_type, topic, qos in watch:
            w.watch(msg_type, topic, qos)
        w.drive(0.05)
        g.start()
        yield g, nodes, w
    finally:
        g.close()


def test_silent_break_identified_over_dds():
    with walking_sim_graph("id", [(DiagnosticArray, "/diagnostics", RELIABLE_QOS)]) as (g, nodes, w):
        mon, emu = nodes["damage_monitor"], nodes["robot_emulator"]
        assert mon.identifier is not None
        assert wait_for(lambda: w.count("mocap/pose") > 10 and mon.identifier.windows > 8, 90.0)
        assert list(w.last("morphology").data) == [3] * 6 and mon.identifier.events == []   # walking healthy

        res = emu.set_parameters([Parameter("breaks", value="LM:1")])[0]
        assert res.successful, res.reason
        assert emu.engine.body_morphology.links_per_leg == (3, 1, 3, 3, 3, 3) and emu.silenced == []
        assert wait_for(lambda: [i for i, n in enumerate(w.last("morphology").data) if n < 3] == [1], 60.0), \
            (list(w.last("morphology").data), mon.identifier.top(3))
        links = list(w.last("morphology").data)
        gc, pr = nodes["gait_controller"], nodes["predictor"]
        assert wait_for(lambda: "LM" not in gc.walker.walking_legs and pr.morphology == links, 5.0)
        assert wait_for(lambda: (_monitor_status(w) or {}).get("evidence") == "model", 10.0), _monitor_status(w)
        st = _monitor_status(w)
        assert st["identifier"] == "on" and "p=" in st["hypothesis 1"] and "LM:" in st["hypothesis 1"]
        bad = emu.set_parameters([Parameter("breaks", value="XX:9")])[0]      # rejected, node keeps going
        assert not bad.successful and "unknown leg" in bad.reason
        bad = mon.set_parameters([Parameter("identify_threshold", value=1.5)])[0]
        assert not bad.successful and "identify_threshold" in bad.reason and "[0.5, 0.999]" in bad.reason
        bad = mon.set_parameters([Parameter("identify_max_gap", value=0.0)])[0]
        assert not bad.successful and "identify_max_gap" in bad.reason and "[0.02, 5] s" in bad.reason
        assert mon.set_parameters([Parameter("identify_window", value=1.0)])[0].successful
        assert mon.identifier.window == 1.0
        assert mon.set_parameters([Parameter("identify_max_gap", value=0.5)])[0].successful
        assert mon.identifier.max_gap == 0.5 and st["identifier_gaps"].isdigit()
        assert mon.worker.thread.is_alive() and not mon.worker.failed     # off the executor, still feeding
        # identifier off: servo evidence only, so the morphology the model found is withdrawn
        assert mon.set_parameters([Parameter("identify", value=False)])[0].successful
        assert mon.identifier is None
        assert wait_for(lambda: list(w.last("morphology").data) == [3] * 6, 5.0)
        assert g.spin_error is None
        assert {name: node.errors for name, node in nodes.items() if node.errors} == {}


def test_a_seized_servo_is_reported_as_seized_over_dds_and_the_robot_crawls_upright():
    """The whole sim graph walks; ``robot_emulator``'s ``seize`` locks femur_joint_LM in the world while its servo
    keeps answering. damage_monitor reports it as seized (joint_states: the angle stays while the commands sweep
    it; the servo driver's statuses: a stall), the morphology stays healthy, the gait crawls and the robot stays
    upright; freed, the seizure clears and the gait walks at full speed again."""
    import math

    from diagnostic_msgs.msg import DiagnosticStatus

    from jethexa_dynamics.damage.evidence import evidence_from_values

    with walking_sim_graph("seize", [(DiagnosticStatus, "morphology/evidence", LATCHED_QOS)]) as (g, nodes, w):
        mon, emu, gc = nodes["damage_monitor"], nodes["robot_emulator"], nodes["gait_controller"]
        assert wait_for(lambda: w.count("mocap/pose") > 10 and gc.state == "walking", 90.0)
        assert mon.seized == {} and list(w.last("morphology").data) == [3] * 6

        def evidence():
            return evidence_from_values({kv.key: kv.value for kv in w.last("morphology/evidence").values}, LEGS)
        res = emu.set_parameters([Parameter("seize", value="femur_joint_LM")])[0]
        assert res.successful, res.reason
        assert wait_for(lambda: evidence().seized == ("femur_joint_LM",), 20.0), (mon.seized, evidence())
        assert "femur_joint_LM" in mon.seized and list(w.last("morphology").data) == [3] * 6
        assert wait_for(lambda: gc.state == "crawl", 5.0) and gc.seized == ("femur_joint_LM",)
        t0 = w.count("mocap/pose")
        assert wait_for(lambda: w.count("mocap/pose") > t0 + 200, 30.0)           # ~2 s of crawling
        for _, pose in w.since("mocap/pose", 0.0)[-200:]:
            q = pose.pose.orientation
            roll = math.degrees(math.atan2(2 * (q.w * q.x + q.y * q.z), 1 - 2 * (q.x * q.x + q.y * q.y)))
            pitch = math.degrees(math.asin(max(-1.0, min(1.0, 2 * (q.w * q.y - q.z * q.x)))))
            assert abs(roll) <= 10.0 and abs(pitch) <= 10.0, (roll, pitch)
        assert list(w.last("morphology").data) == [3] * 6 and not mon.changes[1:]
        bad = emu.set_parameters([Parameter("seize", value="elbow_joint_XX")])[0]
        assert not bad.successful and "unknown joint" in bad.reason
        assert emu.set_parameters([Parameter("seize", value="")])[0].successful
        assert wait_for(lambda: evidence().seized == () and gc.state == "walking", 30.0), (mon.seized, gc.state)
        assert g.spin_error is None
        assert {name: node.errors for name, node in nodes.items() if node.errors} == {}



def test_the_predictor_runs_on_the_calibrated_body_of_a_heavier_robot():
    """Issue 23 point 2 over DDS: the emulated robot's body is 25 % heavier than the URDF's with its CoM 1 cm
    forward (``body_mass_scale``, ``body_com_shift``); the predictor started with the body a calibration file
    gives (``body_mass``, ``body_com_offset``) runs its model on that body and says so on /diagnostics; a body
    mass it cannot use is refused with one line naming the parameter and its range, the model kept."""
    scale, shift = 1.25, [0.01, 0.0, 0.0]
    mass = 1.35 * scale
    with walking_sim_graph("body", [(DiagnosticArray, "/diagnostics", RELIABLE_QOS)],
                           params={"robot_emulator": {"body_mass_scale": scale, "body_com_shift": shift},
                                   "predictor": {"body_mass": mass, "body_com_offset": shift}}) as (g, nodes, w):
        emu, pr = nodes["robot_emulator"], nodes["predictor"]
        world = emu.engine.robot.description
        assert abs(world.body_mass - mass) < 1e-9 and list(world.body_com) == shift
        model = pr.models[pr.p["predictor"]].robot.description
        assert pr.body_source == "parameters" and abs(model.body_mass - mass) < 1e-9
        assert list(model.body_com) == shift

        def predictor_status():
            for _, arr in reversed(w.since("/diagnostics", 0.0)):
                for st in arr.status:
                    if st.name.startswith("predictor"):
                        return {kv.key: kv.value for kv in st.values}
            return {}
        assert wait_for(lambda: predictor_status().get("body") == "parameters", 30.0), predictor_status()
        assert predictor_status()["body_mass"] == "%.4f" % mass
        bad = pr.set_parameters([Parameter("body_mass", value=0.05)])[0]
        assert not bad.successful and "body_mass" in bad.reason and "[0.1, 20] kg" in bad.reason
        assert pr.p["body_mass"] == mass and pr.models[pr.p["predictor"]].robot.description.body_mass == mass
        assert wait_for(lambda: w.count("mocap/pose") > 20, 30.0)
        assert list(w.last("morphology").data) == [3] * 6


def test_an_ambiguous_silent_break_is_probed_over_dds_and_ends_at_the_exact_count():
    """Issue 23 point 1 over DDS: the emulated robot's body is 10 % heavier than the URDF's, CoM 5 mm forward;
    ``breaks`` LM:1 mid-walk. The identifier names LM but lists other counts; with ``probe`` on, damage_monitor
    plans the probe (the stance's static margin), asks the gait controller on damage/probe; the gait stands,
    moves LM's coxa and femur (joint_commands), and walks on; the monitor scores the gyro's reaction on its
    worker and the morphology ends at LM:1 exactly, evidence "model" (the probe's verdict), said on
    /diagnostics. The oracle is the emulator's own break."""
    from trajectory_msgs.msg import JointTrajectory

    from jethexa_dynamics.damage.probe_request import NAME as PROBE_NAME
    from diagnostic_msgs.msg import DiagnosticStatus

    params = {"robot_emulator": {"body_mass_scale": 1.1, "body_com_shift": [0.005, 0.0, 0.0]},
              "damage_monitor": {"probe": True}}
    watch = [(DiagnosticArray, "/diagnostics", RELIABLE_QOS), (JointTrajectory, "joint_commands", RELIABLE_QOS),
             (DiagnosticStatus, "damage/probe", LATCHED_QOS)]
    with walking_sim_graph("probe", watch, params=params) as (g, nodes, w):
        mon, emu, gc = nodes["damage_monitor"], nodes["robot_emulator"], nodes["gait_controller"]
        assert mon.p["probe"] and mon.active_probe.config.enabled
        assert wait_for(lambda: w.count("mocap/pose") > 10 and mon.identifier.windows > 8, 90.0)
        assert wait_for(lambda: gc.state == "walking", 30.0)
        assert list(w.last("morphology").data) == [3] * 6
        assert emu.set_parameters([Parameter("breaks", value="LM:1")])[0].successful
        probe = mon.active_probe
        # the last probe's end (one the graph starved says so and runs once more)
        assert wait_for(lambda: probe.results and not probe.active and "reason" in probe.results[-1]
                        and not probe.results[-1]["reason"].endswith("probing again"), 120.0), \
            (probe.results, mon.identifier.events)
        res = probe.results[-1]
        model = [e for e in mon.identifier.events if e["source"] == "model"]
        assert model and model[0]["alternatives"], "the walk alone settled it: no probe case"
        assert res["leg"] == "LM" and res["probed"], res
        print("probe result:", {k: v for k, v in res.items() if k != "alternatives"},
              "stage probe CPU s:", mon.cpu.total.get("probe"), "calls:", mon.cpu.calls.get("probe"))
        assert res["count"] == 1 and res["probabilities"][1] >= 0.9, res
        assert wait_for(lambda: list(w.last("morphology").data) == [3, 1, 3, 3, 3, 3], 10.0), \
            (list(w.last("morphology").data), mon.identifier.events)
        # the gait ran it: the request went out, LM's coxa and femur swung, and it walks on
        reqs = [dict((kv.key, kv.value) for kv in m.values) for _, m in w.since("damage/probe", 0.0)]
        assert [r["action"] for r in reqs if r["leg"] == "LM"][:1] == ["probe"] and all(
            m.name == PROBE_NAME for _, m in w.since("damage/probe", 0.0))
        lm = [m.points[0].positions[m.joint_names.index("coxa_joint_LM")]
              for _, m in w.since("joint_commands", 0.0) if "coxa_joint_LM" in m.joint_names]
        assert gc.probes_run == res["attempt"] and max(lm) - min(lm) > 0.2     # a starved probe runs again
        assert wait_for(lambda: gc.state == "walking", 10.0), gc.state
        n = w.count("mocap/pose")
        assert wait_for(lambda: w.count("mocap/pose") > n + 50, 30.0)
        assert wait_for(lambda: "probe: LM:1" in (_monitor_status(w) or {}).get("probe_last", ""), 10.0), \
            _monitor_status(w)
        st = _monitor_status(w)
        assert st["probe"] == "on" and float(st["probe_last_cpu_score_ms"]) > 0.0
        assert g.spin_error is None and not mon.worker.failed
        assert {name: node.errors for name, node in nodes.items() if node.errors} == {}
