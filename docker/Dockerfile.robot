# The JetHexa's image: ROS 2 Humble (Ubuntu 22.04, Python 3.10) with jethexa_dynamics built and its numba
# kernels compiled, for the Jetson Nano, whose last JetPack (4.6, L4T R32.7) is Ubuntu 18.04 with no Humble
# binaries. README.md, "On the robot", gives the build and run commands; its install steps are the RUN steps
# between the two "install steps" lines below, in the same order (test/test_robot_install.py compares them).
#
# Build it on the robot, from the repository root (numba's cache is compiled for the CPU it is built on):
#   docker build -f docker/Dockerfile.robot -t jethexa_dynamics:humble .
#
# BASE_IMAGE: an Ubuntu 22.04 image with ROS 2 Humble in /opt/ros/humble, rosdep and colcon. The default, the
# official ros image (arm64 and amd64), runs on L4T R32.7's Docker like any arm64 image: nothing here uses
# the GPU. The Humble images built on L4T R32.x itself (dustynv/ros:humble-*-l4t-r32.7.1) are Ubuntu 18.04
# with Python 3.6, below what this package needs (3.10); a JetPack 6 (Ubuntu 22.04) image fits.
ARG BASE_IMAGE=ros:humble-ros-base-jammy
FROM ${BASE_IMAGE}

SHELL ["/bin/bash", "-c"]
ENV DEBIAN_FRONTEND=noninteractive
ENV ROS_DISTRO=humble
# fail here, with the reason, rather than deep in pip or colcon
RUN source /opt/ros/humble/setup.bash && python3 -c 'import sys; v = sys.version_info[:2]; \
    assert v == (3, 10), "BASE_IMAGE has Python %d.%d: Humble on Ubuntu 22.04 (Python 3.10) is needed" % v'

# the README's "mkdir ... && git clone ... && cd ~/ros2_ws": the workspace, with the sources copied in
# (package.xml first, so a changed source does not repeat the rosdep and pip layers)
WORKDIR /root/ros2_ws
COPY package.xml src/jethexa_dynamics/package.xml

# --- install steps (README.md, "On the robot") ---
RUN source /opt/ros/humble/setup.bash && apt-get update && apt-get install -y python3-pip
RUN rosdep update
RUN rosdep install --from-paths src -y --ignore-src
RUN python3 -m pip install "numba==0.60.0" "numpy==1.26.4" "scipy==1.11.4" "transforms3d>=0.4" \
    "rosbags>=0.9.15" "Jetson.GPIO>=2.1"
COPY . src/jethexa_dynamics
RUN source /opt/ros/humble/setup.bash && colcon build --packages-select jethexa_dynamics
RUN source install/setup.bash && ros2 run jethexa_dynamics jethexa-warmup
# --- end of the install steps ---

# every command runs in the built workspace (the base image's entrypoint sources only /opt/ros/humble)
ENTRYPOINT ["/bin/bash", "-c", "source /root/ros2_ws/install/setup.bash && exec \"$@\"", "--"]
# the container is the Jetson Nano kit's way (today's Orin kit runs Humble natively)
CMD ["ros2", "launch", "jethexa_dynamics", "bringup.launch.py", "kit:=nano"]
