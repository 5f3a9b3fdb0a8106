"""Control (no rclpy): what the robot is told to do. SI units; feet and shifts in ``base_link``.

- :mod:`.gait` -- periodic gait generator (the paper's tripod, ripple, wave): foot targets from phase offsets
  and a duty factor.
- :mod:`.ik` -- the leg's closed-form kinematics (``LegGeometry``, ``leg_ik``).
- :mod:`.pid` -- joint PID with saturation (the paper's gains).
- :mod:`.walking` -- the gait controller's logic (``WalkingGait``): a gait that follows the morphology, a safe
  stance; a fixed gait (tripod/ripple, a wave over the remaining legs) or the re-planned one (recovery),
  and the worker thread that re-plans off the caller's thread (``PlanWorker``).
- :mod:`.replan` -- gait re-planning for a damaged robot from static stability: the plans (``GaitPlan``,
  ``NoStableGait``) and the planner's candidate search (``GaitPlanner``).
- :mod:`.support` -- support polygons: static stability margin, half-planes and the LP of the Chebyshev body
  shifts.
- :mod:`.cycle` -- numba kernels over one cycle of a re-planned gait: body shift, foot targets, verified
  margins, peak joint rate, the swing polygons the LP sees.
- :mod:`.heading` -- heading and speed hold on the IMU and odometry (damage recovery).
"""
