"""Control (no rclpy): what the robot is told to do.

- :mod:`.gait` -- periodic gait generator (the paper's tripod, ripple, wave); :mod:`.ik` -- the leg's closed-form
  kinematics; :mod:`.pid` -- joint PID with saturation (the paper's gains).
- :mod:`.walking` -- the gait controller's logic: a gait that follows the morphology, a safe stance.
- :mod:`.replan` -- gait re-planning for a damaged robot from static stability; :mod:`.heading` -- heading and
  speed hold on the IMU and odometry (damage recovery).
"""
