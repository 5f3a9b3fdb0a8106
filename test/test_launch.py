"""Static checks of launch/*.launch.py and config/*.yaml (``ros2 launch`` is not installable here).

Every node executable is a console script of the package whose module has ``main``; every parameter file
exists and names only declared parameters with valid values; every launch argument sets declared parameters;
the files are picked up by setup.py's data_files globs; ``generate_launch_description()`` runs when
``launch``/``launch_ros`` are importable.
"""
import ast
import glob
import importlib
import importlib.util
import os
import sys

import pytest

from jethexa_dynamics.nodes import params as node_params
from jethexa_dynamics.nodes.param_spec import load_node_yaml
from jethexa_dynamics.nodes import graph_spec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import launch_stub  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
GRAPHS = sorted(graph_spec.GRAPHS)


def console_scripts():
    """console_scripts of setup.py (read from its AST: no install needed)."""
    tree = ast.parse(open(os.path.join(ROOT, "setup.py")).read())
    nodes = next(n for n in ast.walk(tree) if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "NODES")
    names = ast.literal_eval(nodes.value)
    return {n: "jethexa_dynamics.nodes.%s:main" % n for n in names}


@pytest.mark.parametrize("graph", GRAPHS)
def test_every_executable_is_a_console_script_with_a_main(graph):
    scripts = console_scripts()
    for entry in graph_spec.GRAPHS[graph]["nodes"]:
        assert entry.executable in scripts, entry.executable
        module, func = scripts[entry.executable].split(":")
        assert callable(getattr(importlib.import_module(module), func))
        assert entry.executable in node_params.ALL


@pytest.mark.parametrize("graph", GRAPHS)
def test_parameter_files_exist_and_name_only_declared_parameters(graph):
    for entry, values in graph_spec.node_parameters(graph):
        path = os.path.join(ROOT, "config", entry.executable + ".yaml")
        assert os.path.exists(path)
        declared = node_params.ALL[entry.executable]
        raw = load_node_yaml(path, entry.name)
        assert set(raw) <= set(declared.specs), set(raw) - set(declared.specs)
        declared.validate(raw)
        assert set(entry.fixed) <= set(declared.specs)
    for arg in graph_spec.GRAPHS[graph]["arguments"]:
        for node, param in arg.targets:
            assert param in node_params.ALL[node], (arg.name, node, param)
            node_params.ALL[node][param].validate(graph_spec._convert(arg.name, node, param, arg.default))


def test_arguments_reach_the_parameters_and_bad_arguments_are_rejected():
    params = dict((e.name, v) for e, v in graph_spec.node_parameters(
        "sim", {"port_link": "/tmp/x_bus", "horizon": "0.5", "damage": "scenario2"}))
    assert params["servo_driver"]["port"] == "/tmp/x_bus" == params["robot_emulator"]["port_link"]
    assert params["predictor"]["horizon"] == 0.5 and params["robot_emulator"]["damage"] == "scenario2"
    assert params["imu"]["source"] == "emulator"
    with pytest.raises(ValueError, match="horizon"):
        graph_spec.node_parameters("sim", {"horizon": "-1"})
    with pytest.raises(ValueError, match="unknown sim.launch.py arguments"):
        graph_spec.node_parameters("sim", {"speed": "1"})
    # a typo names the argument instead of silently reading as false (or as a Python parse error)
    with pytest.raises(ValueError, match=r"launch argument publish_slip:='maybe': must be true or false"):
        graph_spec.node_parameters("bringup", {"publish_slip": "maybe"})
    with pytest.raises(ValueError, match=r"launch argument composed:='ture': must be split, true or false"):
        graph_spec.processes("bringup", {"composed": "ture"})
    with pytest.raises(ValueError, match=r"launch argument predictor_rate:='fast': must be a number"):
        graph_spec.node_parameters("bringup", {"predictor_rate": "fast"})
    on = dict((e.name, v) for e, v in graph_spec.node_parameters("bringup", {"publish_slip": "On", "recovery": "1"}))
    assert on["predictor"]["publish_slip"] is True and on["gait_controller"]["recovery"] is True


def test_launch_and_config_files_match_setup_py_globs():
    launch_files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "launch", "*.launch.py")))
    assert launch_files == ["bringup.launch.py", "companion.launch.py", "sim.launch.py"]
    configs = {os.path.basename(p)[:-5] for p in glob.glob(os.path.join(ROOT, "config", "*.yaml"))}
    assert set(node_params.ALL) <= configs
    setup = open(os.path.join(ROOT, "setup.py")).read()
    assert 'glob("launch/*.launch.py")' in setup and 'glob("config/*.yaml")' in setup


def _load_launch_module(graph):
    path = os.path.join(ROOT, "launch", graph + ".launch.py")
    spec = importlib.util.spec_from_file_location("launch_" + graph, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, open(path).read()


@pytest.mark.parametrize("graph", GRAPHS)
def test_launch_file_builds_its_own_graph(graph):
    mod, text = _load_launch_module(graph)
    assert callable(mod.generate_launch_description)
    assert 'launch_description("%s")' % graph in text


@pytest.mark.parametrize("graph", GRAPHS)
def test_generate_launch_description_when_launch_is_installed(graph):
    pytest.importorskip("launch_ros")
    launch = pytest.importorskip("launch")
    mod, _ = _load_launch_module(graph)
    ld = mod.generate_launch_description()
    assert isinstance(ld, launch.LaunchDescription)
    from launch_ros.actions import Node

    nodes = [a for a in ld.entities if isinstance(a, Node)]
    assert len(nodes) >= len(graph_spec.GRAPHS[graph]["nodes"])


def test_user_docs_describe_every_parameter_and_launch_argument():
    """The node reference pages (docs/nodes/, generated: test/test_docs.py) list every parameter and argument."""
    for name, params in node_params.ALL.items():
        text = open(os.path.join(ROOT, "docs", "nodes", name + ".md")).read()
        assert "# %s\n" % name in text
        for spec in params:
            assert "| `%s` |" % spec.name in text, (name, spec.name)
    text = open(os.path.join(ROOT, "docs", "nodes", "launch_arguments.md")).read()
    for graph in GRAPHS:
        for arg in graph_spec.GRAPHS[graph]["arguments"]:
            assert "`%s`" % arg.name in text, arg.name


@pytest.mark.parametrize("graph, composed", [("bringup", "true"), ("bringup", "false"), ("sim", "true"),
                                             ("bringup", "split"), ("sim", "split")])
def test_launch_description_starts_the_processes_with_the_resolved_parameters(monkeypatch, graph, composed):
    """The launch file as ``ros2 launch`` evaluates it (against a stand-in of the launch API): every argument
    declared with its default; once the arguments have values, one Node action per process of
    ``graph_spec.processes``, its parameter file holding exactly ``graph_spec.node_parameters``'s values."""
    import yaml

    if importlib.util.find_spec("launch_ros") is not None:
        pytest.skip("the real launch_ros is installed: test_generate_launch_description_when_launch_is_installed")
    launch_stub.install(monkeypatch)
    monkeypatch.setattr(graph_spec, "missing_device", lambda kit, exists=None: None)    # the robot's devices
    mod, _ = _load_launch_module(graph)
    values = {"composed": composed, "predictor_rate": "80.0"}
    declared, actions = launch_stub.evaluate(mod.generate_launch_description(), values)
    assert declared == {a.name: a.default for a in graph_spec.GRAPHS[graph]["arguments"]}
    nodes = [a for a in actions if type(a).__name__ == "Node" and a.kwargs["package"] == graph_spec.PACKAGE]
    values = dict(declared, **values)
    expected = graph_spec.processes(graph, values)
    assert [(n.kwargs["executable"], n.kwargs["name"], n.kwargs["arguments"]) for n in nodes] == [
        (p.executable, p.name, list(p.arguments)) for p in expected]
    # the model's nodes at a lower CPU priority than the control path wherever they have a process of their own
    assert [n.kwargs["prefix"] for n in nodes] == ["nice -n 5" if not {"servo_driver", "imu", "gait_controller"} &
                                                   {e.name for e, _ in p.nodes} and {"predictor", "damage_monitor"} &
                                                   {e.name for e, _ in p.nodes} else None for p in expected]
    hosted = [a for n in nodes for a in (n.kwargs["arguments"] or [n.kwargs["name"]])]
    assert sorted(hosted) == sorted(e.name for e, _ in graph_spec.node_parameters(graph, values))  # each node once
    if composed != "false":
        groups = [n.kwargs["arguments"] for n in nodes if n.kwargs["executable"] == "robot"]
        present = {e.name for e, _ in graph_spec.node_parameters(graph, values)}     # the kit's nodes
        assert groups == [[x for x in m if x in present] for _, m in graph_spec.LAYOUTS[composed]]
    resolved = dict((e.name, p) for e, p in graph_spec.node_parameters(graph, values))
    for n in nodes:
        (path,) = n.kwargs["parameters"]
        sections = yaml.safe_load(open(path))
        for name, section in sections.items():
            expected_values = dict(resolved[name])
            if name == "damage_monitor" and composed != "false":     # beside the predictor: its IMU wakes both
                expected_values["wake_on"] = "imu/data"
            assert section["ros__parameters"] == expected_values
    assert resolved["predictor"]["rate"] == 80.0
    assert resolved["damage_monitor"]["wake_on"] == "joint_states"


@pytest.mark.parametrize("graph, composed", [("sim", "split"), ("bringup", "false"), ("bringup", "true")])
@pytest.mark.parametrize("prefix_filter", ["", "robot", "predictor"])
def test_the_users_launch_prefix_reaches_every_process_the_niced_ones_under_nice(monkeypatch, graph, composed,
                                                                                prefix_filter):
    """``ros2 launch ... --launch-prefix P`` (the launch configuration ``launch-prefix``) reaches every process:
    a process with no prefix of its own gets it from launch (prefix None: launch's default, the configuration);
    the model's niced process gets ``nice -n 5 P``, nice wrapping P so that both apply and P (gdb, valgrind) sees
    the node, not nice. ``--launch-prefix-filter F`` keeps P to the executables F matches, as launch does."""
    import re

    if importlib.util.find_spec("launch_ros") is not None:
        pytest.skip("the real launch_ros is installed: test_generate_launch_description_when_launch_is_installed")
    launch_stub.install(monkeypatch)
    monkeypatch.setattr(graph_spec, "missing_device", lambda kit, exists=None: None)    # the robot's devices
    mod, _ = _load_launch_module(graph)
    user = "gdb -ex run --args"
    values = {"composed": composed, "launch-prefix": user}
    if prefix_filter:
        values["launch-prefix-filter"] = prefix_filter
    _, actions = launch_stub.evaluate(mod.generate_launch_description(), values)
    nodes = [a for a in actions if type(a).__name__ == "Node" and a.kwargs["package"] == graph_spec.PACKAGE]
    expected = graph_spec.processes(graph, {"composed": composed})
    assert len(nodes) == len(expected)
    niced = 0
    for node, process in zip(nodes, expected):
        hosted = {e.name for e, _ in process.nodes}
        model_only = not {"servo_driver", "imu", "gait_controller"} & hosted and {"predictor", "damage_monitor"} & hosted
        if not model_only:
            assert node.kwargs["prefix"] is None, node.kwargs      # launch applies P (and F) itself
            continue
        niced += 1
        reaches = not prefix_filter or re.match(prefix_filter, node.kwargs["executable"]) is not None
        assert node.kwargs["prefix"] == ("nice -n 5 " + user if reaches else "nice -n 5"), node.kwargs
        assert node.kwargs["prefix"].split()[:3] == ["nice", "-n", "5"]
    assert niced == {"split": 1, "true": 0, "false": 2}[composed]
    # without the option: nice alone, as before
    _, actions = launch_stub.evaluate(mod.generate_launch_description(), {"composed": composed})
    assert {a.kwargs["prefix"] for a in actions if type(a).__name__ == "Node"
            and a.kwargs["package"] == graph_spec.PACKAGE} <= {None, "nice -n 5"}


def test_the_damage_monitor_wakes_on_the_predictors_imu_samples_only_where_they_share_a_process():
    """composed:=split and true host the monitor beside the predictor, which wakes on each IMU sample: the
    monitor wakes on the same samples (its joint_states polled); alone, or beside a predictor on its timer, it
    wakes on joint_states (its IMU polled)."""
    from jethexa_dynamics.nodes.graph_spec import _shared_rhythm

    for composed, wake in (("split", "imu/data"), ("true", "imu/data"), ("false", "joint_states")):
        for graph in ("sim", "bringup"):
            params = {e.name: p for proc in graph_spec.processes(graph, {"composed": composed}) for e, p in proc.nodes}
            assert params["damage_monitor"]["wake_on"] == wake, (graph, composed)
    by_name = {e.name: (e, p) for e, p in graph_spec.node_parameters("sim")}
    by_name["predictor"] = (by_name["predictor"][0], dict(by_name["predictor"][1], pace_on_imu=False))
    assert _shared_rhythm(by_name, "damage_monitor", ("predictor", "damage_monitor"))[1]["wake_on"] == "joint_states"


def test_robot_executable_names_a_bad_node_in_one_line_and_exits_2(capsys):
    from jethexa_dynamics.nodes.robot import parse_nodes

    assert parse_nodes(["--ros-args", "-p", "x:=1"]) == list(graph_spec.ROBOT_NODES)
    assert parse_nodes(["imu", "predictor", "--ros-args"]) == ["imu", "predictor"]
    for bad in (["imu", "robot_emulator"], ["imu", "imu"]):
        with pytest.raises(SystemExit) as exc:
            parse_nodes(bad)
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "robot: error: node" in err[0] and "servo_driver" in err[0]


def test_one_kit_argument_selects_the_devices_and_who_reads_the_imu():
    """kit:=orin (the robot's default): servo_driver on the STM32 board (/dev/rrc, rrc at 1 Mbaud), which also
    publishes imu/data, and no imu node; kit:=nano: the Jetson's UART with GPIO 17/27 and the MPU6050 on I2C bus 1
    (the imu node). The sim graph: the same kits, emulated (its default: the Nano kit)."""
    def params(graph, kit=None):
        return {e.name: p for e, p in graph_spec.node_parameters(graph, {"kit": kit} if kit else {})}

    orin, nano = params("bringup"), params("bringup", "nano")
    assert [a.name for a in graph_spec.GRAPHS["bringup"]["arguments"]][0] == "kit"
    assert (orin["servo_driver"]["transport"], orin["servo_driver"]["port"], orin["servo_driver"]["baudrate"]) == \
        ("rrc", "/dev/rrc", 1000000) and "imu" not in orin
    assert orin["servo_driver"]["imu_mount_rpy"] == pytest.approx([0.0, 0.0, -1.5707963])
    assert (nano["servo_driver"]["transport"], nano["servo_driver"]["port"], nano["servo_driver"]["gpio"],
            nano["servo_driver"]["baudrate"]) == ("uart", "/dev/ttyTHS1", "jetson", 115200)
    assert (nano["imu"]["source"], nano["imu"]["i2c_bus"]) == ("i2c", 1)
    sim_orin, sim = params("sim", "orin"), params("sim")
    assert sim_orin["robot_emulator"]["transport"] == sim_orin["servo_driver"]["transport"] == "rrc"
    assert "imu" not in sim_orin and sim_orin["servo_driver"]["port"] == graph_spec.BUS_LINK
    assert sim["robot_emulator"]["transport"] == sim["servo_driver"]["transport"] == "uart"
    assert sim["imu"]["source"] == "emulator"
    # a process layout without the imu node: robot_control hosts the driver and the gait
    control = [p for p in graph_spec.processes("bringup") if p.label == "robot_control"][0]
    assert [e.name for e, _ in control.nodes] == ["servo_driver", "gait_controller"]
    with pytest.raises(ValueError, match=r"launch argument kit:='xavier': must be orin or nano"):
        graph_spec.node_parameters("bringup", {"kit": "xavier"})


def test_a_wrong_kit_fails_in_one_line_naming_the_missing_device_before_any_node(monkeypatch):
    there = {"/dev/ttyTHS1", "/dev/i2c-1", "/dev/gpiochip0"}             # a Jetson Nano kit
    line = graph_spec.missing_device("orin", exists=there.__contains__)
    assert line == ("kit:=orin: /dev/rrc not found (the STM32 board's udev link); on the Jetson Nano kit use "
                    "kit:=nano")
    assert graph_spec.missing_device("nano", exists=there.__contains__) is None
    line = graph_spec.missing_device("nano", exists={"/dev/rrc"}.__contains__)
    assert line.startswith("kit:=nano: /dev/ttyTHS1 not found") and line.endswith("use kit:=orin")
    assert "\n" not in line
    if importlib.util.find_spec("launch_ros") is not None:
        pytest.skip("the real launch_ros is installed")
    launch_stub.install(monkeypatch)
    check = graph_spec.missing_device
    monkeypatch.setattr(graph_spec, "missing_device", lambda kit: check(kit, exists=there.__contains__))
    with pytest.raises(RuntimeError, match=r"^kit:=orin: /dev/rrc not found"):
        launch_stub.evaluate(graph_spec.launch_description("bringup"), {})
    _, actions = launch_stub.evaluate(graph_spec.launch_description("bringup"), {"kit": "nano"})
    assert {n.kwargs["executable"] for n in actions if type(n).__name__ == "Node"} >= {"robot"}
