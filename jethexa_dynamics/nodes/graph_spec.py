"""The node graph of ``bringup.launch.py`` (robot) and ``sim.launch.py`` (emulated robot), as plain data.

The launch files turn this into a ``LaunchDescription`` (:func:`launch_description`, imports ``launch`` and
``launch_ros`` lazily); ``jethexa-demo`` builds the same graph in one process from the same data
(:func:`node_parameters`), and the launch tests check it statically without a ROS install. The topics and
services each node creates (:data:`ENDPOINTS`, :func:`node_endpoints`, :func:`graph_endpoints`) are what the
SROS2 policy ``policy/<graph>.policy.xml`` is generated from (``nodes/security.py``, docs/security.md); a test
starts the nodes and compares what they create with this table.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from jethexa_dynamics.nodes import params as node_params
from jethexa_dynamics.nodes.param_spec import config_dir, load_node_yaml, package_share_dir
from jethexa_dynamics.validation.topics import DEFAULT_RECORD_TOPICS

PACKAGE = "jethexa_dynamics"
#: SROS2 enclaves: node ``<node>`` of a launch graph runs in enclave ``<enclave_root>/<node>`` (launch argument)
ENCLAVE_ROOT = "/jethexa"


@dataclass(frozen=True)
class Argument:
    name: str
    default: str
    description: str
    targets: Tuple[Tuple[str, str], ...]  # (node, parameter) pairs the argument sets


@dataclass(frozen=True)
class NodeEntry:
    executable: str
    name: str
    fixed: Dict[str, Any] = field(default_factory=dict)  # parameters this graph sets regardless of YAML
    #: (launch argument, its values) under which the graph has this node (None: always)
    only_if: Optional[Tuple[str, Tuple[str, ...]]] = None

    def launched(self, arguments: Dict[str, str]) -> bool:
        """Whether a launch with these argument values (every argument given) starts this node."""
        return self.only_if is None or str(arguments[self.only_if[0]]).strip() in self.only_if[1]


BUS_LINK = "/tmp/jethexa_emulated_bus"


@dataclass(frozen=True)
class Kit:
    """One JetHexa kit (launch argument ``kit``): the devices the robot's nodes open (each with what it is, for
    the one line that names a missing one), the parameters it sets per node, and the nodes it has not (its IMU
    is read by another)."""
    description: str
    devices: Tuple[Tuple[str, str], ...]
    params: Dict[str, Dict[str, Any]]
    sim_params: Dict[str, Dict[str, Any]]
    without: Tuple[str, ...] = ()


#: The kits, by the names of launch argument ``kit`` (bringup, sim) and ``jethexa-demo --kit``.
#: ``orin``: today's JetHexa (Jetson Orin Nano/NX, Ubuntu 22.04 with Humble preinstalled): the servos and the IMU
#: (a QMI8658) behind Hiwonder's STM32 board on USB, ``/dev/rrc``; servo_driver reads the board's IMU reports
#: and publishes imu/data itself (no imu node). ``nano``: the first JetHexa (Jetson Nano): the servos on the
#: Jetson's UART ``/dev/ttyTHS1`` with the direction on GPIO 17/27, an MPU6050 on I2C bus 1 (the imu node).
KITS: Dict[str, Kit] = {
    "orin": Kit("today's kit: Jetson Orin, the STM32 board on USB with the servos and the IMU",
                (("/dev/rrc", "the STM32 board's udev link"),),
                {"servo_driver": {"transport": "rrc", "port": "/dev/rrc", "baudrate": 1000000}},
                {"servo_driver": {"transport": "rrc", "baudrate": 1000000}, "robot_emulator": {"transport": "rrc"}},
                without=("imu",)),
    "nano": Kit("the Jetson Nano kit: servos on the Jetson's UART with GPIO 17/27, an MPU6050 on I2C",
                (("/dev/ttyTHS1", "the Jetson Nano's servo UART"), ("/dev/i2c-1", "the MPU6050's I2C bus"),
                 ("/dev/gpiochip0", "the GPIO controller of the bus's direction lines")),
                {"servo_driver": {"transport": "uart", "port": "/dev/ttyTHS1", "baudrate": 115200, "gpio": "jetson"},
                 "imu": {"source": "i2c", "i2c_bus": 1}},
                {"servo_driver": {"transport": "uart", "baudrate": 115200}, "robot_emulator": {"transport": "uart"}}),
}
#: the robot's default: today's kit is the one sold (the Nano kit is no longer); the sim's: the Nano kit, the
#: profile every published figure was measured with (kit:=orin runs the board profile)
KIT_DEFAULT = {"bringup": "orin", "sim": "nano"}


def kit_argument(graph: str) -> "Argument":
    return Argument("kit", KIT_DEFAULT[graph], "which JetHexa: orin (today's kit: the STM32 board on /dev/rrc "
                    "drives the servos and carries the IMU) or nano (the Jetson Nano kit: servos on /dev/ttyTHS1 with "
                    "GPIO 17/27, MPU6050 on I2C)%s" % (" -- emulated" if graph == "sim" else ""), ())


def launch_kit(text: str) -> Kit:
    """Launch argument ``kit`` -> its :class:`Kit`; anything else is a ValueError naming the argument."""
    kit = KITS.get(str(text).strip().lower())
    if kit is None:
        raise ValueError("launch argument kit:=%r: must be %s" % (text, " or ".join(KITS)))
    return kit


def missing_device(kit_name: str, exists=os.path.exists) -> Optional[str]:
    """One line naming the first device of the kit that is not there (None: all are): what a wrong ``kit`` says
    before any node starts."""
    kit = launch_kit(kit_name)
    for path, what in kit.devices:
        if not exists(path):
            other = [k for k in KITS if k != kit_name.strip().lower()][0]
            return "kit:=%s: %s not found (%s); on %s use kit:=%s" % (
                kit_name, path, what, KITS[other].description.split(":")[0], other)
    return None
#: the nodes that run on the robot's computer (``robot_emulator`` stands in for the hardware)
ROBOT_NODES = ("servo_driver", "imu", "gait_controller", "predictor", "damage_monitor")
#: How the robot's nodes are split into processes (launch argument ``composed``): {value: ((process, nodes), ...)}.
#: A process's Python (serialised by its GIL) runs on one core; each numba process maps LLVM (~130 MB of RSS).
#: ``split`` (default): the control path (bus, IMU, gait: kept on time by a process of its own, away from the
#: model's bursts) and the model (predictor and identifier: one copy of the compiled kernels) -- two processes,
#: the memory of the one-process layout plus one interpreter; the model's is at the edge of one Jetson Nano core
#: (capped at one A57 core, its predictor lowers its rate on purpose);
#: ``true``: the five in one process (least CPU and memory in all, but on one A57 core it lost half its gait and
#: prediction rates); ``false``: a process per node (three numba processes: 812 MB of RSS).
#: Measured side by side: benchmarks/results/nano_budget.md.
LAYOUTS: Dict[str, Tuple[Tuple[str, Tuple[str, ...]], ...]] = {
    "split": (("robot_control", ("servo_driver", "imu", "gait_controller")),
              ("robot_model", ("predictor", "damage_monitor"))),
    "true": (("robot", ROBOT_NODES),),
    "false": tuple((n, (n,)) for n in ROBOT_NODES),
}
COMPOSED_DEFAULT = "split"
#: CPU niceness of the nodes that may degrade on purpose (the launch files start their process with ``nice -n``):
#: on a CPU short of time the control path (bus, IMU, gait) keeps its rate and the model's nodes lower theirs
#: (``nodes/degrade.py``). A process's niceness is its nodes' lowest: the control path's 0 where it hosts one.
NICE = {"predictor": 5, "damage_monitor": 5}

_COMMON_ARGS = [
    Argument("predictor", "boltzmann_hamel", "dynamics model of the predictor (boltzmann_hamel, slip, newton_euler)",
             (("predictor", "predictor"),)),
    Argument("horizon", "2.0", "predictor re-anchoring horizon [s]", (("predictor", "horizon"),)),
    Argument("predictor_rate", "100.0", "predictor rate [Hz]", (("predictor", "rate"),)),
    Argument("publish_slip", "false", "also run the slip model (second opinion) and publish slip/pose, slip/odom "
             "(true/false; a third of the predictor's CPU)", (("predictor", "publish_slip"),)),
    Argument("body_estimate", "false", "estimate the body's mass and CoM online (damage_monitor, from the servos' "
             "load; the servo driver's reads dithered for it; on the robot with control_rate:=25.0) and give it to the "
             "predictor's models (true/false)",
             (("damage_monitor", "body_estimate"), ("predictor", "body_estimate"), ("servo_driver", "read_dither"))),
    Argument("control_rate", "50.0", "gait controller rate [Hz] (the 115200-baud bus carries 50 Hz)",
             (("gait_controller", "control_rate"),)),
    Argument("gait", "tripod", "gait of the healthy robot (tripod, ripple, wave)", (("gait_controller", "gait"),)),
    Argument("cmd_vel_timeout", "0.5", "stop walking when cmd_vel is older than this [s]",
             (("gait_controller", "cmd_vel_timeout"),)),
    Argument("recovery", "false", "damage recovery: re-planned statically stable gait + heading hold (true/false)",
             (("gait_controller", "recovery"),)),
    Argument("composed", COMPOSED_DEFAULT, "how the robot's five nodes share processes: split (default): two, "
             "robot_control (servo_driver, imu, gait_controller) and robot_model (predictor, damage_monitor), "
             "460 MB of RSS (on one Nano core the model's predictor may lower its rate); true: all five in one "
             "process robot (least CPU and memory, but one Nano core cannot keep its rates); false: a process per "
             "node (every rate on a Nano, 812 MB of RSS)", ()),
    Argument("enclave_root", ENCLAVE_ROOT, "SROS2 enclave root: each process runs with --enclave <enclave_root>/<name> "
             "(a process of several robot nodes: <enclave_root>/<process>, e.g. /jethexa/robot_model; inert unless "
             "ROS_SECURITY_ENABLE=true; policy/<graph>.policy.xml, docs/security.md)", ()),
]

#: the companion graph's arguments: the model's (no gait, bus or kit: Hiwonder's stack keeps those)
_COMPANION_ARGS = [a for a in _COMMON_ARGS if a.name in ("predictor", "horizon", "predictor_rate", "publish_slip",
                                                         "composed", "enclave_root")]

#: a graph's optional keys: ``namespace`` (every node in it), ``robot_state_publisher`` (False: none, the stock
#: software publishes the robot's TF)
GRAPHS: Dict[str, Dict[str, Any]] = {
    "bringup": {
        "nodes": [NodeEntry("servo_driver", "servo_driver"), NodeEntry("imu", "imu"),
                  NodeEntry("gait_controller", "gait_controller"), NodeEntry("predictor", "predictor"),
                  NodeEntry("damage_monitor", "damage_monitor")],
        "arguments": [kit_argument("bringup")] + _COMMON_ARGS,
    },
    "sim": {
        "nodes": [NodeEntry("robot_emulator", "robot_emulator"),
                  # the emulated servos answer from a thread that shares the CPU (and, in one process, the
                  # GIL) with the whole graph: on a loaded machine a reply can be 0.1 s late, which the
                  # default confirm_timeout would take for a silent servo (false LR:0 in a loaded CI run)
                  # (reads_per_cycle stays the robot's 3: at 115200 baud a read takes ~6 ms of the 20 ms cycle;
                  # the pty would allow more, but the robot's computer would then be measured doing work the
                  # robot cannot do)
                  NodeEntry("servo_driver", "servo_driver", {"open_timeout": 30.0, "reply_timeout": 0.03,
                                                              "confirm_timeout": 0.3}, ("interface", ("bus",))),
                  NodeEntry("imu", "imu", {"source": "emulator"}, ("interface", ("bus",))),
                  NodeEntry("gait_controller", "gait_controller"), NodeEntry("predictor", "predictor"),
                  NodeEntry("damage_monitor", "damage_monitor")],
        "arguments": [
            kit_argument("sim"),
            Argument("port_link", BUS_LINK, "where the emulator links its pty (servo_driver opens it)",
                     (("robot_emulator", "port_link"), ("servo_driver", "port"))),
            Argument("damage", "", "damage in the emulated world at start ('' healthy, scenario1, scenario2, "
                     "'RM,LM', 'LM:1,RR:1'); change it later with ros2 param set /robot_emulator damage ...",
                     (("robot_emulator", "damage"),)),
            Argument("record", "", "record the run to this rosbag2 directory ('' = off)",
                     (("robot_emulator", "record"),)),
            Argument("record_storage", "mcap", "storage of the recording: mcap or sqlite3",
                     (("robot_emulator", "record_storage"),)),
            Argument("servo_timing", "tick", "how the emulated world follows the servos: tick or exact (the "
                     "commanded trajectories as they were, reads at their own time: what body_estimate needs)",
                     (("robot_emulator", "servo_timing"),)),
            Argument("bus_line", "false", "emulate the robot's 115200-baud bus line (true/false): moves reach the "
                     "servos frame by frame, 15.6 ms for 18, and reads wait behind them, as on the robot; the servo "
                     "driver's line_model follows it",
                     (("robot_emulator", "bus_line"), ("servo_driver", "line_model"))),
            Argument("interface", "bus", "how the robot's nodes reach the emulated world: bus (servo_driver on the "
                     "emulated servo bus, imu on the MPU6050 model) or topics (no servo_driver and no imu: the "
                     "emulator takes joint_commands and publishes joint_states and imu/data, as a robot whose "
                     "joints come from another driver)", (("robot_emulator", "interface"),)),
            Argument("plant", "engine", "the emulated world's physics: engine (the package's) or mujoco "
                     "(independent contact model; needs the mujoco package)", (("robot_emulator", "plant"),)),
        ] + _COMMON_ARGS,
    },
    # beside Hiwonder's own ROS 2 stack, which keeps /dev/rrc, the gait and the TF: the model's nodes read its topics
    # through stock_adapter, in a namespace of their own (the stock stack's /joint_states are commands in its names)
    "companion": {
        "namespace": "companion",
        "robot_state_publisher": False,
        "nodes": [NodeEntry("stock_adapter", "stock_adapter"), NodeEntry("predictor", "predictor"),
                  # no joint_states here to wake it (its default wake_on): the adapter's IMU samples do, or
                  # the commands it polls would wait for its 1 Hz check and every window close a second late
                  NodeEntry("damage_monitor", "damage_monitor", {"joints_from_commands": True,
                                                                 "wake_on": "imu/data"})],
        "arguments": [
            Argument("joint_map", "", "the stock joint names and angles -> this package's ('' = Hiwonder's ROS 2 "
                     "map; 'stock=ours:sign:zero, ...', docs/companion.md)", (("stock_adapter", "joint_map"),)),
            Argument("commands_topic", "/controller_manager/joint_states", "the stock stack's commanded joint "
                     "positions (sensor_msgs/JointState)", (("stock_adapter", "commands_topic"),)),
            Argument("imu_topic", "/imu", "the stock stack's filtered IMU (sensor_msgs/Imu in imu_link)",
                     (("stock_adapter", "imu_topic"),)),
        ] + _COMPANION_ARGS,
    },
}


# ---------------------------------------------------------------------------------------------- endpoints
@dataclass(frozen=True)
class When:
    """The condition under which a node creates an endpoint: parameter ``param`` has one of ``values``, or (with
    ``nonempty``) is a non-empty string, and every condition of ``also`` holds too. Only read-only parameters
    (fixed at start-up) may be conditions."""
    param: str
    values: Tuple[Any, ...] = ()
    nonempty: bool = False
    also: Tuple["When", ...] = ()

    def holds(self, value: Any) -> bool:
        """This condition alone (not ``also``) for its parameter's ``value``."""
        return bool(value) if self.nonempty else value in self.values

    def conditions(self) -> Tuple["When", ...]:
        """This condition and those of ``also``, each on one parameter."""
        return (self,) + tuple(c for a in self.also for c in a.conditions())

    def applies(self, params: Dict[str, Any]) -> bool:
        """Every condition holds for these (validated) parameters."""
        return all(c.holds(params[c.param]) for c in self.conditions())


@dataclass(frozen=True)
class Endpoint:
    """A topic or service of a node, named as the node names it: relative names resolve in the node's namespace,
    ``~/name`` under the node's own name. ``kind``: ``publish`` or ``subscribe`` (a topic), ``reply`` (a service
    the node serves) or ``request`` (a service it calls). ``since``: a ROS 2 distro before which the node does
    not create it (e.g. ``iron``: Humble has no such endpoint). ``qos``: a topic's QoS profile, a key of
    :data:`QOS` (test/test_security.py compares it with the running node's)."""
    kind: str
    name: str
    type: str
    when: Optional[When] = None
    since: str = ""
    qos: str = ""


@dataclass(frozen=True)
class Qos:
    """A QoS profile as the nodes create it (``nodes/_common.py``): history keep last ``depth``."""
    reliability: str      # reliable | best_effort
    durability: str       # volatile | transient_local
    depth: int
    meaning: str


#: the QoS profiles of the package's topics, by the name an :class:`Endpoint` gives
QOS: Dict[str, Qos] = {
    "sensor": Qos("best_effort", "volatile", 5, "sensor stream (rclpy's qos_profile_sensor_data)"),
    "polled_sensor": Qos("best_effort", "volatile", 50, "sensor stream taken at the node's other wake-ups: "
                         "every sample since the last one waits"),
    "reliable": Qos("reliable", "volatile", 10, "commands and computed outputs"),
    "latched": Qos("reliable", "transient_local", 10, "state: a late joiner gets the current value"),
    "recorder": Qos("best_effort", "volatile", 100, "the recorder's: matches reliable and best-effort publishers"),
    "recorder_latched": Qos("reliable", "transient_local", 1, "the recorder's for a latched topic: gets the value "
                            "published before recording started"),
}


def _params_services() -> Tuple[Endpoint, ...]:
    names = ("describe_parameters", "get_parameter_types", "get_parameters", "list_parameters", "set_parameters",
             "set_parameters_atomically")
    return tuple(Endpoint("reply", "~/" + n, "rcl_interfaces/srv/" + "".join(w.title() for w in n.split("_")))
                 for n in names)


#: what the ROS client library creates for every node: its log and parameter-event publishers, its parameter
#: services and (Iron and later) its type-description service
ROS_NODE: Tuple[Endpoint, ...] = (
    Endpoint("publish", "/rosout", "rcl_interfaces/msg/Log"),
    Endpoint("publish", "/parameter_events", "rcl_interfaces/msg/ParameterEvent"),
) + _params_services() + (
    Endpoint("reply", "~/get_type_description", "type_description_interfaces/srv/GetTypeDescription", since="iron"),
)
#: and every node of this package (``ThinNode``): its own status on /diagnostics
THIN_NODE: Tuple[Endpoint, ...] = ROS_NODE + (
    Endpoint("publish", "/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", qos="reliable"),)

_IMU, _JS, _TRAJ = "sensor_msgs/msg/Imu", "sensor_msgs/msg/JointState", "trajectory_msgs/msg/JointTrajectory"
_POSE, _ODOM, _MORPH = "geometry_msgs/msg/PoseStamped", "nav_msgs/msg/Odometry", "std_msgs/msg/UInt8MultiArray"
_EVIDENCE = "diagnostic_msgs/msg/DiagnosticStatus"
_RECOVERY = When("recovery", (True,))
_BOARD = When("transport", ("rrc",))

#: the topics and services each node of the package creates, besides ``THIN_NODE``'s (test/test_security_policy.py
#: starts every node and compares)
ENDPOINTS: Dict[str, Tuple[Endpoint, ...]] = {
    "servo_driver": (
        Endpoint("publish", "joint_states", _JS, qos="sensor"),
        Endpoint("publish", "joint_states/setpoint", _JS, qos="sensor"),
        Endpoint("publish", "imu/data_raw", _IMU, _BOARD, qos="sensor"),
        Endpoint("publish", "imu/data", _IMU, _BOARD, qos="sensor"),
        Endpoint("publish", "battery", "sensor_msgs/msg/BatteryState", _BOARD, qos="sensor"),
        Endpoint("subscribe", "joint_commands", _TRAJ, qos="reliable"),
        Endpoint("reply", "~/emergency_stop", "std_srvs/srv/Trigger"),
        Endpoint("reply", "~/set_torque", "std_srvs/srv/SetBool"),
    ),
    "imu": (
        Endpoint("publish", "imu/data_raw", _IMU, qos="sensor"),
        Endpoint("publish", "imu/data", _IMU, qos="sensor"),
        Endpoint("subscribe", "emulator/imu_motion", _IMU, When("source", ("emulator",)), qos="sensor"),
    ),
    "gait_controller": (
        Endpoint("publish", "joint_commands", _TRAJ, qos="reliable"),
        Endpoint("subscribe", "cmd_vel", "geometry_msgs/msg/Twist", qos="reliable"),
        Endpoint("subscribe", "morphology", _MORPH, qos="latched"),
        Endpoint("subscribe", "morphology/evidence", _EVIDENCE, qos="latched"),
        Endpoint("subscribe", "damage/probe", _EVIDENCE, qos="latched"),
        Endpoint("subscribe", "imu/data", _IMU, _RECOVERY, qos="sensor"),
        Endpoint("subscribe", "predicted/odom", _ODOM, _RECOVERY, qos="reliable"),
    ),
    "predictor": (
        Endpoint("publish", "predicted/pose", _POSE, qos="reliable"),
        Endpoint("publish", "predicted/odom", _ODOM, qos="reliable"),
        Endpoint("publish", "measured/pose", _POSE, qos="reliable"),
        Endpoint("publish", "prediction/error", "std_msgs/msg/Float64MultiArray", qos="reliable"),
        Endpoint("publish", "slip/pose", _POSE, qos="reliable"),
        Endpoint("publish", "slip/odom", _ODOM, qos="reliable"),
        Endpoint("subscribe", "joint_commands", _TRAJ, qos="reliable"),
        Endpoint("subscribe", "joint_states", _JS, qos="sensor"),
        Endpoint("subscribe", "imu/data", _IMU, qos="sensor"),
        Endpoint("subscribe", "mocap/pose", _POSE, qos="sensor"),
        Endpoint("subscribe", "morphology", _MORPH, qos="latched"),
        Endpoint("subscribe", "body/inertia", "geometry_msgs/msg/InertiaStamped", When("body_estimate", (True,)),
                 qos="reliable"),
    ),
    "damage_monitor": (
        Endpoint("publish", "morphology", _MORPH, qos="latched"),
        Endpoint("publish", "morphology/evidence", _EVIDENCE, qos="latched"),
        Endpoint("publish", "damage/probe", _EVIDENCE, qos="latched"),
        Endpoint("publish", "body/inertia", "geometry_msgs/msg/InertiaStamped", When("body_estimate", (True,)),
                 qos="reliable"),
        Endpoint("subscribe", "joint_states/setpoint", _JS, When("body_estimate", (True,)), qos="sensor"),
        Endpoint("subscribe", "/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", qos="reliable"),
        Endpoint("subscribe", "joint_states", _JS, When("wake_on", ("joint_states",)), qos="sensor"),
        Endpoint("subscribe", "joint_states", _JS, When("wake_on", ("imu/data",)), qos="polled_sensor"),
        Endpoint("subscribe", "joint_commands", _TRAJ, qos="reliable"),
        Endpoint("subscribe", "imu/data", _IMU, qos="polled_sensor"),
        Endpoint("reply", "~/reset", "std_srvs/srv/Trigger"),
    ),
    "stock_adapter": (
        Endpoint("publish", "joint_commands", _TRAJ, qos="reliable"),
        Endpoint("publish", "imu/data", _IMU, qos="sensor"),
        Endpoint("subscribe", "/controller_manager/joint_states", _JS, qos="sensor"),
        Endpoint("subscribe", "/imu", _IMU, qos="sensor"),
    ),
    "robot_emulator": (
        Endpoint("publish", "mocap/pose", _POSE, qos="sensor"),
        Endpoint("publish", "emulator/imu_motion", _IMU, When("transport", ("uart",),
                                                               also=(When("interface", ("bus",)),)), qos="sensor"),
        Endpoint("publish", "joint_states", _JS, When("interface", ("topics",)), qos="sensor"),
        Endpoint("publish", "imu/data", _IMU, When("interface", ("topics",)), qos="sensor"),
        Endpoint("publish", "imu/data_raw", _IMU, When("interface", ("topics",)), qos="sensor"),
        Endpoint("subscribe", "joint_commands", _TRAJ, When("interface", ("topics",)), qos="reliable"),
    ) + tuple(Endpoint("subscribe", t, ty, When("record", nonempty=True),
                       qos="recorder_latched" if t == "morphology" else "recorder")   # bag_recorder.DEFAULT_LATCHED
              for t, ty in DEFAULT_RECORD_TOPICS.items()),
}

#: the launch files' robot_state_publisher (added when that package is installed; C++, rclcpp), from its Humble
#: source: /tf, /tf_static, robot_description out, joint_states and the parameter events in. Not checked against a
#: running node here (it is not installable from PyPI).
ROBOT_STATE_PUBLISHER = NodeEntry("robot_state_publisher", "robot_state_publisher")
EXTERNAL_ENDPOINTS: Dict[str, Tuple[Endpoint, ...]] = {
    "robot_state_publisher": ROS_NODE + (
        Endpoint("publish", "/tf", "tf2_msgs/msg/TFMessage"),
        Endpoint("publish", "/tf_static", "tf2_msgs/msg/TFMessage"),
        Endpoint("publish", "robot_description", "std_msgs/msg/String"),
        Endpoint("subscribe", "joint_states", _JS),
        Endpoint("subscribe", "/parameter_events", "rcl_interfaces/msg/ParameterEvent"),
    ),
}


def enclave(node: str, root: str = ENCLAVE_ROOT) -> str:
    """The SROS2 enclave of ``node`` under ``root``."""
    return root.rstrip("/") + "/" + node


def node_endpoints(executable: str, params: Dict[str, Any]) -> Tuple[Endpoint, ...]:
    """Every endpoint a node of the package creates with these (validated) parameters."""
    return THIN_NODE + tuple(e for e in ENDPOINTS[executable] if e.when is None or e.when.applies(params))


def _reachable(graph: str, entry: NodeEntry, param: str) -> Optional[List[Any]]:
    """The values ``param`` of ``entry`` can have in ``graph`` as launched: None = any (a launch argument sets
    it), else the one value of the graph's fixed parameters or of config/<node>.yaml."""
    if param in entry.fixed:
        return [entry.fixed[param]]
    if any((entry.name, param) in a.targets for a in GRAPHS[graph]["arguments"]):
        return None
    by_kit = [kit_params(graph, k).get(entry.name, {}) for k in KITS]
    if any(param in p for p in by_kit):
        return [p[param] for p in by_kit if param in p]
    values = load_node_yaml(config_file(entry.executable), entry.executable)
    return [values.get(param, node_params.ALL[entry.executable][param].default)]


def _can_hold(graph: str, entry: NodeEntry, when: When) -> bool:
    """Some launch of ``graph`` gives ``entry`` a value of ``when.param`` for which ``when`` (alone) holds."""
    values = _reachable(graph, entry, when.param)
    return values is None or any(when.holds(v) for v in values)


def graph_endpoints(graph: str) -> Dict[str, Tuple[Endpoint, ...]]:
    """{node name: endpoints} of ``<graph>.launch.py``: for each node every endpoint it creates in some launch of
    the graph (conditional endpoints whose parameter a launch argument sets are included), and the
    robot_state_publisher's."""
    out: Dict[str, Tuple[Endpoint, ...]] = {}
    for entry in GRAPHS[graph]["nodes"]:
        eps = list(THIN_NODE)
        for e in ENDPOINTS[entry.executable]:
            if e.when is None or all(_can_hold(graph, entry, c) for c in e.when.conditions()):
                eps.append(e)
        out[entry.name] = tuple(eps)
    if GRAPHS[graph].get("robot_state_publisher", True):
        out[ROBOT_STATE_PUBLISHER.name] = EXTERNAL_ENDPOINTS[ROBOT_STATE_PUBLISHER.executable]
    return out


def _convert(argument: str, node: str, param: str, text: str) -> Any:
    """Launch argument ``argument:=text`` -> the type of the parameter it sets; a ValueError naming the argument
    and what it takes otherwise (its range is the parameter's, checked after)."""
    kind = node_params.ALL[node][param].kind
    if kind == "bool":
        return launch_bool(argument, text)
    try:
        return int(text) if kind == "int" else float(text) if kind == "double" else text
    except ValueError:
        raise ValueError("launch argument %s:=%r: must be %s" % (
            argument, text, "an integer" if kind == "int" else "a number")) from None


def kit_params(graph: str, kit: str) -> Dict[str, Dict[str, Any]]:
    """{node: {parameter: value}} the kit sets in ``graph`` (the robot's devices in bringup, the emulated bus in
    sim)."""
    k = launch_kit(kit)
    return k.params if graph == "bringup" else k.sim_params


def node_parameters(graph: str, arguments: Optional[Dict[str, str]] = None) -> List[Tuple[NodeEntry, Dict[str, Any]]]:
    """(node, parameters) of a graph: config/<node>.yaml, then the kit's values, then the graph's fixed values, then
    the arguments; a node the kit has not (the imu node on today's kit) is left out."""
    spec = GRAPHS[graph]
    args = {a.name: a.default for a in spec["arguments"]}
    unknown = set(arguments or {}) - set(args)
    if unknown:
        raise ValueError("unknown %s.launch.py arguments: %s (known: %s)" % (graph, sorted(unknown), sorted(args)))
    args.update(arguments or {})
    kit = launch_kit(args["kit"]) if "kit" in args else None        # the companion graph has no kit of its own
    by_kit = kit_params(graph, args["kit"]) if kit is not None else {}
    out = []
    for entry in spec["nodes"]:
        if (kit is not None and entry.name in kit.without) or not entry.launched(args):
            continue
        values = load_node_yaml(config_file(entry.executable), entry.executable)
        values.update(by_kit.get(entry.name, {}))
        values.update(entry.fixed)
        for a in spec["arguments"]:
            for node, param in a.targets:
                if node == entry.name:
                    values[param] = _convert(a.name, node, param, args[a.name])
        out.append((entry, node_params.ALL[entry.executable].validate(values)))
    return out


@dataclass(frozen=True)
class Process:
    """One process of a launched graph: ``executable`` (a console script of the package) with ``arguments``
    before ``--ros-args``, named ``name`` (None: its nodes keep their own names), hosting ``nodes`` =
    ((entry, resolved parameters), ...); ``group``: its name in :data:`LAYOUTS` when it hosts several."""

    executable: str
    name: Optional[str]
    arguments: Tuple[str, ...]
    nodes: Tuple[Tuple[NodeEntry, Dict[str, Any]], ...]
    group: Optional[str] = None       # the process's name in :data:`LAYOUTS` (a process of several nodes)
    namespace: str = ""               # the graph's namespace (its nodes' ``/<namespace>/<node>``), '' = none

    @property
    def nice(self) -> int:
        """The process's CPU niceness: its nodes' lowest in :data:`NICE` (0 for a node not in it)."""
        return min(NICE.get(e.name, 0) for e, _ in self.nodes)

    @property
    def label(self) -> str:
        """What names the process: its log and parameter files, its SROS2 enclave."""
        return self.group or self.name or self.executable


def processes(graph: str, arguments: Optional[Dict[str, str]] = None) -> List[Process]:
    """The processes ``<graph>.launch.py`` starts for the launch ``arguments``: the robot's nodes
    (``ROBOT_NODES``) as launch argument ``composed`` splits them (:data:`LAYOUTS`; a process of several nodes is
    the ``robot`` executable, named for its group), every other node (the emulator) in its own. Parameters as
    :func:`node_parameters` resolves them (the demo's, too)."""
    layout = LAYOUTS[launch_layout(dict(arguments or {}).get("composed", COMPOSED_DEFAULT))]
    resolved = node_parameters(graph, arguments)
    ns = GRAPHS[graph].get("namespace", "")
    by_name = {e.name: (e, p) for e, p in resolved}
    groups = {n: (label, tuple(m for m in nodes if m in by_name)) for label, nodes in layout for n in nodes}
    out: List[Process] = []
    for e, p in resolved:
        label, members = groups.get(e.name, (e.name, (e.name,)))     # a node of no group: a process of its own
        if len(members) == 1:
            out.append(Process(e.executable, e.name, (), ((e, p),), namespace=ns))
        elif e.name == members[0]:                # the group's process where its first node stood
            out.append(Process("robot", None, members, tuple(_shared_rhythm(by_name, m, members) for m in members),
                               label, namespace=ns))
    return out


def _shared_rhythm(by_name: Dict[str, Tuple[NodeEntry, Dict[str, Any]]], name: str, members: Tuple[str, ...]):
    """(entry, parameters) of node ``name`` in a process of ``members``: the damage monitor beside a predictor
    paced by the IMU wakes on the same IMU samples (``wake_on: imu/data``: one wake-up of the process serves
    both nodes, instead of one per IMU sample and one per joint sample)."""
    entry, params = by_name[name]
    if name == "damage_monitor" and "predictor" in members and by_name["predictor"][1].get("pace_on_imu"):
        params = dict(params, wake_on="imu/data")
    return entry, params


def write_parameters(process: Process, directory: str) -> str:
    """The process's parameter file (one ``<node>: ros__parameters:`` section per node, ``/<namespace>/<node>`` in
    a graph with a namespace: a file's node names are matched fully qualified) in ``directory``."""
    import yaml

    path = os.path.join(directory, "%s.params.yaml" % process.label)
    prefix = "/%s/" % process.namespace.strip("/") if process.namespace else ""
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump({prefix + e.name: {"ros__parameters": dict(p)} for e, p in process.nodes}, f)
    return path


_BOOL_TEXT = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False, "off": False}


def launch_bool(argument: str, text: str) -> bool:
    """A true/false launch argument (also 1/0, yes/no, on/off); anything else is a ValueError naming it (a typo
    must not silently read as false)."""
    try:
        return _BOOL_TEXT[str(text).strip().lower()]
    except KeyError:
        raise ValueError("launch argument %s:=%r: must be true or false" % (argument, text)) from None


def launch_layout(text: str) -> str:
    """Launch argument ``composed``: ``split``, or true/false (also 1/0, yes/no, on/off) -> a key of
    :data:`LAYOUTS`; anything else is a ValueError naming the argument and its values."""
    if str(text).strip().lower() == "split":
        return "split"
    try:
        return "true" if _BOOL_TEXT[str(text).strip().lower()] else "false"
    except KeyError:
        raise ValueError("launch argument composed:=%r: must be split, true or false" % (text,)) from None


def config_file(node: str, share_dir: Optional[str] = None) -> str:
    return os.path.join(share_dir or config_dir(), node + ".yaml")


def launch_prefix(process: Process, user_prefix: str = "", prefix_filter: str = "") -> Optional[str]:
    """The command prefix ``process`` starts with under ``ros2 launch``: its ``nice -n`` (:data:`NICE`) wrapping
    the user's ``--launch-prefix`` (gdb, valgrind, perf, ``xterm -e``), so that both apply and the user's tool
    sees the node itself: ``nice -n 5 gdb -ex run --args robot ...``. The user's prefix is left out where
    ``--launch-prefix-filter`` (a regular expression) does not match the executable's name, as ``launch`` applies
    the filter. None for a process without a niceness: ``launch`` then applies the user's prefix (and its filter)
    itself, as to every node that sets no prefix of its own."""
    if not process.nice:
        return None
    user = (user_prefix or "").strip()
    if user and prefix_filter and re.match(prefix_filter, process.executable) is None:
        user = ""
    return " ".join(part for part in ("nice -n %d" % process.nice, user) if part)


def launch_description(graph: str):
    """The ``LaunchDescription`` of ``<graph>.launch.py`` (needs ``launch`` and ``launch_ros``): the arguments
    declared, then (once ``ros2 launch`` has their values) the processes of :func:`processes`, each with a
    parameter file written from the graph spec (``config/*.yaml`` of the installed share directory + the graph's
    fixed values + the arguments: the same values the demo and the tests use), and its prefix from
    :func:`launch_prefix` (``ros2 launch --launch-prefix`` reaches every process, the niced ones too)."""
    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, LogInfo, OpaqueFunction
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    spec = GRAPHS[graph]
    actions: list = [DeclareLaunchArgument(a.name, default_value=a.default, description=a.description)
                     for a in spec["arguments"]]

    def nodes(context):
        import tempfile

        args = {a.name: LaunchConfiguration(a.name).perform(context) for a in spec["arguments"]}
        if graph == "bringup":      # a wrong kit fails here, before any node starts (nothing moves)
            missing = missing_device(args["kit"])
            if missing is not None:
                raise RuntimeError(missing)
        directory = tempfile.mkdtemp(prefix="jethexa_%s_launch_" % graph)
        # ``ros2 launch --launch-prefix P [--launch-prefix-filter F]`` arrives as the launch configurations
        # ``launch-prefix`` and ``launch-prefix-filter``; a node with a prefix of its own no longer gets it from
        # launch, so the niced processes compose it here
        user_prefix = context.launch_configurations.get("launch-prefix", "")
        prefix_filter = context.launch_configurations.get("launch-prefix-filter", "")
        return [Node(package=PACKAGE, executable=p.executable, name=p.name, arguments=list(p.arguments),
                     namespace=p.namespace,
                     parameters=[write_parameters(p, directory)], output="screen", emulate_tty=True,
                     ros_arguments=["--enclave", enclave(p.label, args["enclave_root"])],
                     prefix=launch_prefix(p, user_prefix, prefix_filter))
                for p in processes(graph, args)]

    actions.append(OpaqueFunction(function=nodes))
    share = _share_dir()
    urdf = os.path.join(share, "urdf", "jethexa.urdf")
    if not spec.get("robot_state_publisher", True):
        pass
    elif _has_package("robot_state_publisher") and os.path.exists(urdf):
        with open(urdf, "r", encoding="utf-8") as f:
            actions.append(Node(package="robot_state_publisher", executable=ROBOT_STATE_PUBLISHER.executable,
                                name=ROBOT_STATE_PUBLISHER.name, parameters=[{"robot_description": f.read()}],
                                ros_arguments=_enclave_args(ROBOT_STATE_PUBLISHER.name)))
    else:
        actions.append(LogInfo(msg="robot_state_publisher not installed: no TF from joint_states"))
    return LaunchDescription(actions)


def _share_dir() -> str:
    """The installed share directory, or the source tree when not installed through colcon."""
    return package_share_dir(PACKAGE) or os.path.dirname(config_dir())


def _enclave_args(node: str) -> list:
    """``--enclave <enclave_root>/<node>`` (rcl uses the enclave only with ROS_SECURITY_ENABLE=true)."""
    from launch.substitutions import LaunchConfiguration

    return ["--enclave", [LaunchConfiguration("enclave_root"), "/" + node]]


def _has_package(name: str) -> bool:
    return package_share_dir(name) is not None
