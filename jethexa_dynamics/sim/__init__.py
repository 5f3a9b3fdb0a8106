"""Simulation (no rclpy): the paper's engine and what runs on it.

- :mod:`.engine` -- fixed-step gait -> IK -> PID -> contact -> dynamics -> SE(3), compiled; :mod:`.contact` --
  foot-ground contact (paper Table III).
- :mod:`.cli` -- ``jethexa-sim`` (CSV via :mod:`.csv_format`, figures via :mod:`.plots`); :mod:`.recovery` --
  closed-loop damage-recovery runs; :mod:`.closed_loop` -- the gait controller's logic driving the engine
  (one loop for bag synthesis, recovery runs and the simulated robot's streams); :mod:`.mjcf` -- the same robot
  for MuJoCo (benchmark peer).
- :mod:`.streams` -- the simulated robot's sensor streams (commands, joint states, IMU) from an independent plant
  walking with silent breaks, sensor noise, gyro bias and a body-mass error, and their replay into an identifier
  or a predictor (tests and benchmarks).
"""
