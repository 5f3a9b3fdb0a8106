"""Pure-Python logic behind the ROS 2 nodes (no rclpy): parameter specs and validation, message-field
validation, damage detection from servo health and the morphology wire format."""
