"""`ros2 launch jethexa_dynamics companion.launch.py [arg:=value ...]`: the predictor and the damage monitor beside
Hiwonder's own ROS 2 stack (which keeps /dev/rrc, its gait and its TF): stock_adapter reads the stock topics
(/controller_manager/joint_states: the commanded joints; /imu: imu_filter_madgwick's output in imu_link) and gives
them to the two nodes in this package's joint names, angles and axes. Every node runs in the namespace
``companion`` (its topics: /companion/predicted/pose, /companion/morphology, ...); nothing opens a device.

Without measured joint positions there is no servo-health evidence and no seizure detection, and the morphology
verdict is reported, not acted on (the stock gait does not read it): /diagnostics says so (``mode: companion``).
The graph is defined once in ``jethexa_dynamics.nodes.graph_spec``; docs/companion.md is the user's page.
"""
from jethexa_dynamics.nodes.graph_spec import launch_description


def generate_launch_description():
    return launch_description("companion")
