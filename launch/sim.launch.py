"""`ros2 launch jethexa_dynamics sim.launch.py [arg:=value ...]`: the node graph on the emulated JetHexa
(robot_emulator + servo_driver on its pty + imu on the MPU6050 model + gait_controller + predictor +
damage_monitor); the robot's five nodes in two processes by default, robot_control and robot_model
(``composed:=true``: all five in one; ``composed:=false``: a process each), the emulator in its own.

The graph (nodes, parameter files, arguments) is defined once in ``jethexa_dynamics.nodes.graph_spec``;
`ros2 launch jethexa_dynamics sim.launch.py --show-args` lists the arguments. A robot_state_publisher for
urdf/jethexa.urdf is added when that package is installed. DDS discovery is left to your environment
(ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE / ROS_LOCALHOST_ONLY).

`ros2 launch ... --launch-prefix 'gdb -ex run --args'` (valgrind, perf, `xterm -e`) reaches every process; the
model's process, which starts under `nice -n 5`, runs as `nice -n 5 <your prefix> robot ...` (both apply, your
tool sees the node). `--launch-prefix-filter REGEX` keeps the prefix to the executables it matches: `robot`,
`robot_emulator`, or a node's name with `composed:=false`.
"""
from jethexa_dynamics.nodes.graph_spec import launch_description


def generate_launch_description():
    return launch_description("sim")
