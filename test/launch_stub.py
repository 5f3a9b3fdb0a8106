"""A stand-in for ``launch`` / ``launch_ros`` (not installable from PyPI) with the API the launch files use, enough
to run ``generate_launch_description()`` and the OpaqueFunction that builds the processes. Every action records
its arguments (``.args``, ``.kwargs``); ``LaunchConfiguration(name).perform(context)`` reads
``context.launch_configurations[name]``."""
import sys
import types


class Action:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class LaunchConfiguration(Action):
    def perform(self, context):
        return context.launch_configurations[self.args[0]]


def install(monkeypatch, packages=("robot_state_publisher",)):
    """Put the stand-in modules in ``sys.modules`` (``monkeypatch`` undoes it); ament's package index knows only
    ``packages`` (under /opt/ros/humble/share). Returns the module ``launch.actions`` etc. by name."""
    def share(pkg):
        if pkg in packages:
            return "/opt/ros/humble/share/" + pkg
        raise LookupError(pkg)

    mods = {name: types.ModuleType(name) for name in (
        "launch", "launch.actions", "launch.substitutions", "launch_ros", "launch_ros.actions",
        "ament_index_python", "ament_index_python.packages")}
    mods["launch"].LaunchDescription = type("LaunchDescription", (Action,), {})
    for action in ("DeclareLaunchArgument", "LogInfo", "OpaqueFunction"):
        setattr(mods["launch.actions"], action, type(action, (Action,), {}))
    mods["launch.substitutions"].LaunchConfiguration = LaunchConfiguration
    mods["launch_ros.actions"].Node = type("Node", (Action,), {})
    mods["ament_index_python.packages"].get_package_share_directory = share
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)
    return mods


def evaluate(description, values):
    """The launch description's actions, its OpaqueFunctions run with the launch arguments ``values``: (declared
    {name: default}, [every action, the OpaqueFunctions replaced by what they return])."""
    context = types.SimpleNamespace(launch_configurations=dict(values))
    declared, out = {}, []
    for a in description.args[0]:
        kind = type(a).__name__
        if kind == "DeclareLaunchArgument":
            declared[a.args[0]] = a.kwargs["default_value"]
        if kind == "OpaqueFunction":
            context.launch_configurations = dict(declared, **values)
            out += a.kwargs["function"](context)
        else:
            out.append(a)
    return declared, out
