"""The node graph of ``bringup.launch.py`` (robot) and ``sim.launch.py`` (emulated robot), as plain data.

The launch files turn this into a ``LaunchDescription`` (:func:`launch_description`, imports ``launch`` and
``launch_ros`` lazily); ``jethexa-demo`` builds the same graph in one process from the same data
(:func:`node_parameters`), and the launch tests check it statically without a ROS install.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from jethexa_dynamics.nodes import params as node_params
from jethexa_dynamics.nodes.param_spec import config_dir, load_node_yaml

PACKAGE = "jethexa_dynamics"


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


BUS_LINK = "/tmp/jethexa_emulated_bus"
#: the nodes that run on the robot's computer (``robot_emulator`` stands in for the hardware)
ROBOT_NODES = ("servo_driver", "imu", "gait_controller", "predictor", "damage_monitor")

_COMMON_ARGS = [
    Argument("predictor", "boltzmann_hamel", "dynamics model of the predictor (boltzmann_hamel, slip, newton_euler)",
             (("predictor", "predictor"),)),
    Argument("horizon", "2.0", "predictor re-anchoring horizon [s]", (("predictor", "horizon"),)),
    Argument("predictor_rate", "100.0", "predictor rate [Hz]", (("predictor", "rate"),)),
    Argument("control_rate", "50.0", "gait controller rate [Hz] (the 115200-baud bus carries 50 Hz)",
             (("gait_controller", "control_rate"),)),
    Argument("gait", "tripod", "gait of the healthy robot (tripod, ripple, wave)", (("gait_controller", "gait"),)),
    Argument("cmd_vel_timeout", "0.5", "stop walking when cmd_vel is older than this [s]",
             (("gait_controller", "cmd_vel_timeout"),)),
    Argument("recovery", "false", "damage recovery: re-planned statically stable gait + heading hold (true/false)",
             (("gait_controller", "recovery"),)),
    Argument("composed", "true", "the robot's five nodes in one process (executable robot: one interpreter, one "
             "DDS participant, about a quarter of the memory); false: a process per node", ()),
]

GRAPHS: Dict[str, Dict[str, Any]] = {
    "bringup": {
        "nodes": [NodeEntry("servo_driver", "servo_driver"), NodeEntry("imu", "imu"),
                  NodeEntry("gait_controller", "gait_controller"), NodeEntry("predictor", "predictor"),
                  NodeEntry("damage_monitor", "damage_monitor")],
        "arguments": [
            Argument("port", "/dev/ttyTHS1", "servo bus serial device", (("servo_driver", "port"),)),
            Argument("transport", "uart", "bus transport: uart (Jetson Nano UART) or rrc (STM32 board)",
                     (("servo_driver", "transport"),)),
            Argument("baudrate", "115200", "bus baud rate (1000000 for rrc)", (("servo_driver", "baudrate"),)),
            Argument("i2c_bus", "1", "I2C bus of the MPU6050", (("imu", "i2c_bus"),)),
        ] + _COMMON_ARGS,
    },
    "sim": {
        "nodes": [NodeEntry("robot_emulator", "robot_emulator"),
                  # the emulated servos answer from a thread that shares the CPU (and, in one process, the
                  # GIL) with the whole graph: on a loaded machine a reply can be 0.1 s late, which the
                  # default confirm_timeout would take for a silent servo (false LR:0 in a loaded CI run)
                  NodeEntry("servo_driver", "servo_driver", {"open_timeout": 30.0, "reply_timeout": 0.03,
                                                              "confirm_timeout": 0.3, "reads_per_cycle": 6}),
                  NodeEntry("imu", "imu", {"source": "emulator"}),
                  NodeEntry("gait_controller", "gait_controller"), NodeEntry("predictor", "predictor"),
                  NodeEntry("damage_monitor", "damage_monitor")],
        "arguments": [
            Argument("port_link", BUS_LINK, "where the emulator links its pty (servo_driver opens it)",
                     (("robot_emulator", "port_link"), ("servo_driver", "port"))),
            Argument("damage", "", "damage in the emulated world at start ('' healthy, scenario1, scenario2, "
                     "'RM,LM', 'LM:1,RR:1'); change it later with ros2 param set /robot_emulator damage ...",
                     (("robot_emulator", "damage"),)),
            Argument("record", "", "record the run to this rosbag2 directory ('' = off)",
                     (("robot_emulator", "record"),)),
            Argument("record_storage", "mcap", "storage of the recording: mcap or sqlite3",
                     (("robot_emulator", "record_storage"),)),
        ] + _COMMON_ARGS,
    },
}


def _convert(node: str, param: str, text: str) -> Any:
    """A launch-argument string -> the parameter's type."""
    kind = node_params.ALL[node][param].kind
    if kind == "int":
        return int(text)
    if kind == "double":
        return float(text)
    if kind == "bool":
        return _truthy(text)
    return text


def node_parameters(graph: str, arguments: Optional[Dict[str, str]] = None) -> List[Tuple[NodeEntry, Dict[str, Any]]]:
    """(node, parameters) of a graph: config/<node>.yaml, then the graph's fixed values, then the arguments."""
    spec = GRAPHS[graph]
    args = {a.name: a.default for a in spec["arguments"]}
    unknown = set(arguments or {}) - set(args)
    if unknown:
        raise ValueError("unknown %s.launch.py arguments: %s (known: %s)" % (graph, sorted(unknown), sorted(args)))
    args.update(arguments or {})
    out = []
    for entry in spec["nodes"]:
        values = load_node_yaml(config_file(entry.executable), entry.executable)
        values.update(entry.fixed)
        for a in spec["arguments"]:
            for node, param in a.targets:
                if node == entry.name:
                    values[param] = _convert(node, param, args[a.name])
        out.append((entry, node_params.ALL[entry.executable].validate(values)))
    return out


@dataclass(frozen=True)
class Process:
    """One process of a launched graph: ``executable`` (a console script of the package) with ``arguments``
    before ``--ros-args``, named ``name`` (None: its nodes keep their own names), hosting ``nodes`` =
    ((entry, resolved parameters), ...)."""

    executable: str
    name: Optional[str]
    arguments: Tuple[str, ...]
    nodes: Tuple[Tuple[NodeEntry, Dict[str, Any]], ...]


def processes(graph: str, arguments: Optional[Dict[str, str]] = None) -> List[Process]:
    """The processes ``<graph>.launch.py`` starts for the launch ``arguments``: with ``composed`` (default) the
    robot's nodes (``ROBOT_NODES``) in one ``robot`` process, every other node (the emulator) in its own; else
    a process per node. Parameters as :func:`node_parameters` resolves them (the demo's, too)."""
    composed = _truthy(dict(arguments or {}).get("composed", "true"))
    resolved = node_parameters(graph, arguments)
    robot = tuple((e, p) for e, p in resolved if composed and e.name in ROBOT_NODES)
    out: List[Process] = []
    for e, p in resolved:
        if not robot or e.name not in ROBOT_NODES:
            out.append(Process(e.executable, e.name, (), ((e, p),)))
        elif e.name == robot[0][0].name:          # the robot process where its first node stood
            out.append(Process("robot", None, tuple(n.name for n, _ in robot), robot))
    return out


def write_parameters(process: Process, directory: str) -> str:
    """The process's parameter file (one ``<node>: ros__parameters:`` section per node) in ``directory``."""
    import yaml

    path = os.path.join(directory, "%s.params.yaml" % (process.name or process.executable))
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump({e.name: {"ros__parameters": dict(p)} for e, p in process.nodes}, f)
    return path


def _truthy(text: str) -> bool:
    return str(text).strip().lower() in ("1", "true", "yes", "on")


def config_file(node: str, share_dir: Optional[str] = None) -> str:
    return os.path.join(share_dir or config_dir(), node + ".yaml")


def launch_description(graph: str):
    """The ``LaunchDescription`` of ``<graph>.launch.py`` (needs ``launch`` and ``launch_ros``): the arguments
    declared, then (once ``ros2 launch`` has their values) the processes of :func:`processes`, each with a
    parameter file written from the graph spec (config/*.yaml of the installed share directory + the graph's
    fixed values + the arguments: the same values the demo and the tests use)."""
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
        directory = tempfile.mkdtemp(prefix="jethexa_%s_launch_" % graph)
        return [Node(package=PACKAGE, executable=p.executable, name=p.name, arguments=list(p.arguments),
                     parameters=[write_parameters(p, directory)], output="screen", emulate_tty=True)
                for p in processes(graph, args)]

    actions.append(OpaqueFunction(function=nodes))
    share = _share_dir()
    urdf = os.path.join(share, "urdf", "jethexa.urdf")
    if _has_package("robot_state_publisher") and os.path.exists(urdf):
        with open(urdf, "r", encoding="utf-8") as f:
            actions.append(Node(package="robot_state_publisher", executable="robot_state_publisher",
                                name="robot_state_publisher", parameters=[{"robot_description": f.read()}]))
    else:
        actions.append(LogInfo(msg="robot_state_publisher not installed: no TF from joint_states"))
    return LaunchDescription(actions)


def _share_dir() -> str:
    try:
        from ament_index_python.packages import get_package_share_directory

        return get_package_share_directory(PACKAGE)
    except Exception:  # noqa: BLE001 - not installed through colcon: use the source tree
        return os.path.dirname(config_dir())


def _has_package(name: str) -> bool:
    try:
        from ament_index_python.packages import get_package_share_directory

        get_package_share_directory(name)
        return True
    except Exception:  # noqa: BLE001
        return False
