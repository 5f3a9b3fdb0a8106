"""The parameters of every node: name, type, default, description and allowed range (no rclpy).

``config/<node>.yaml`` holds the defaults a launch file passes; these specs are what the nodes declare and
validate against (the launch tests check that each YAML only names parameters declared here).
"""
from __future__ import annotations

import dataclasses
import math

from jethexa_dynamics.control.servo_law import PAPER_GAINS, SERVO_DAMPING, SERVO_GAINS
from jethexa_dynamics.hardware.joint_map import IMU_MOUNT_HIWONDER_ROS2
from jethexa_dynamics.hardware.protocol import MAX_MOVE_TIME_S

from .param_spec import ParamError, ParamSet, ParamSpec, config_dir, load_node_yaml  # noqa: F401 (re-exported)

P = ParamSpec

LEGS = 6

#: a ROS node name: relative (``damage_monitor``, resolved in the node's own namespace) or absolute
#: (``/damage_monitor``, ``/robot1/damage_monitor``)
NODE_NAME = r"/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*"
NODE_NAMES = r"\s*(%s(\s*,\s*%s)*)?\s*" % (NODE_NAME, NODE_NAME)


def _morphology_authority() -> list:
    """Who may tell the node that the robot's body changed (``nodes/authority.py``,
    docs/security.md): the gait controller and the predictor declare the same two parameters."""
    return [
        P("morphology_authority", "string", "damage_monitor", "the node whose morphology messages are acted on; "
          "each message's sender is identified by its publisher endpoint in the ROS graph (not by a field of the "
          "message); a relative name resolves in this node's namespace", read_only=True, pattern=NODE_NAME,
          pattern_text="a ROS node name"),
        P("morphology_publishers_allowed", "string", "", "other nodes whose morphology messages are accepted too, "
          "comma separated (e.g. a second monitor or a test harness); empty = the authority only; messages of "
          "any other publisher are ignored and counted on /diagnostics by sender", read_only=True,
          pattern=NODE_NAMES, pattern_text="comma-separated ROS node names"),
    ]


def _imu_publishing(prefix: str = "", read_only: bool = False, note: str = "") -> list:
    """The parameters of the IMU publishing path (``nodes/imu.py`` ``ImuPublisher``: filter, covariances, frame),
    declared by the imu node (no prefix) and by servo_driver for the STM32 board's IMU (prefix ``imu_``, fixed at
    start-up there)."""
    specs = [
        P("frame_id", "string", "imu_link", "frame_id of the published messages (REP-145)"),
        P("linear_acceleration_stddev", "double", 0.04, "accelerometer noise std dev (covariance diagonal = its "
          "square)", lo=0.0, hi=10.0, unit="m/s^2"),
        P("angular_velocity_stddev", "double", 0.005, "gyroscope noise std dev", lo=0.0, hi=10.0, unit="rad/s"),
        P("orientation_stddev", "double", 0.02, "filtered orientation std dev (roll/pitch; yaw drifts without a "
          "magnetometer)", lo=0.0, hi=math.pi, unit="rad"),
        P("filter_beta", "double", 0.033, "Madgwick filter gain (gyro error, rad/s); larger trusts the "
          "accelerometer tilt more", lo=0.0, hi=1.0, unit="rad/s"),
        P("filter_init_time", "double", 2.0, "the filter's initialisation: its gain falls from 1 rad/s to "
          "filter_beta over this many seconds of samples after a (re)start, and imu/data is published only after "
          "it (a wrong first tilt is corrected instead of read by the models)", lo=0.0, hi=30.0, unit="s",
          read_only=True),
    ]
    return [dataclasses.replace(s, name=prefix + s.name, description=note + s.description,
                                read_only=s.read_only or read_only) for s in specs]


SERVO_DRIVER = ParamSet("servo_driver", [
    P("transport", "string", "uart", "bus transport (hardware.open_bus, as jethexa-bus-emulator --transport): "
      "uart (direct Jetson UART, 0x55 0x55 frames) or rrc (STM32 robot controller board, 0xAA 0x55 + CRC8)",
      choices=("uart", "rrc"), read_only=True),
    P("port", "string", "/dev/ttyTHS1", "serial device of the servo bus (the emulator's pty link in simulation)",
      read_only=True),
    P("baudrate", "int", 115200, "serial baud rate (115200 direct UART, 1000000 RRC board)", lo=9600, hi=3000000,
      unit="baud", read_only=True),
    P("gpio", "string", "", "transport uart: who switches the half-duplex bus's direction lines (BCM 17 RX_CON, "
      "27 TX_CON): jetson (Jetson.GPIO, the Jetson Nano kit's expansion board) or '' (nobody: an adapter with "
      "automatic direction, the emulator)", choices=("", "jetson"), read_only=True),
    P("servo_table", "string", "", "servo table YAML (IDs, directions, offsets, limits); empty = the packaged "
      "config/servos.yaml", read_only=True),
    P("open_timeout", "double", 10.0, "log a warning (repeated every 30 s, with the attempt count) when the "
      "port is still not open after this long (the driver keeps retrying: the emulator's pty may appear after "
      "the driver starts)", lo=0.0, hi=600.0, unit="s",
      read_only=True),
    P("publish_rate", "double", 50.0, "joint_states publication rate", lo=1.0, hi=200.0, unit="Hz"),
    P("reads_per_cycle", "int", 3, "servo reads (position, then voltage/temperature/load in turn) per "
      "publish cycle, round-robin over the servos; each read costs ~6 ms of bus time on the real robot",
      lo=0, hi=18),
    P("read_dither", "bool", False, "each cycle's reads start later in the publish period by the golden-ratio "
      "sequence (from a random start): reads spread evenly over the phase of the gait controller's commands at "
      "the same rate instead of locked to one. The body "
      "estimate (damage_monitor body_estimate) needs it: locked, it sees one phase of every 20 ms move and foot "
      "impact and its CoM is off by up to 9 mm. false: reads at the cycle's start", read_only=True),
    P("sync_start", "bool", False, "group moves as MOVE_TIME_WAIT_WRITE per servo + one broadcast MOVE_START (uart transport): every servo starts its move at once, when the write is through (15.6 ms + 0.5 ms for 18 at 115200 baud), instead of each on its own frame (Hiwonder's MOVE_TIME_WRITE). Not needed by the body estimate (with every move started at the write's end its reads fall in phase with the moves at 50 Hz; damage/body_load.py)", read_only=True),
    P("line_model", "bool", True, "the driver's set-points and read times follow the bytes through the bus line (each servo acts on its frame's last byte: the 18th of a group move 15.6 ms after the first at 115200 baud; a read written behind a move goes out after it): true for the robot's UART; false for a bus with no line time (robot_emulator without bus_line, the sim graph's default)", read_only=True),
    P("reply_timeout", "double", 0.012, "wait for a servo reply before counting a miss", lo=0.001, hi=0.5,
      unit="s", read_only=True),
    P("confirm_timeout", "double", 0.1, "a servo that missed a read while others answered is read once more with "
      "this longer timeout; only if that read, too, gets no reply (and was not itself held up) is it reported "
      "silent -- a loaded machine makes replies late, not absent", lo=0.01, hi=2.0, unit="s"),
    P("default_move_time", "double", 0.02, "servo move time when a joint_commands point has time_from_start 0",
      lo=0.0, hi=MAX_MOVE_TIME_S, unit="s"),
    P("diagnostics_rate", "double", 1.0, "rate of the full /diagnostics report (every servo)", lo=0.1, hi=50.0,
      unit="Hz"),
    P("fault_report_rate", "double", 10.0, "rate at which servos that miss replies or read outside their own "
      "voltage/temperature limits are re-reported on /diagnostics (what damage_monitor reacts to)", lo=0.5,
      hi=50.0, unit="Hz"),
    P("torque_on_start", "bool", True, "load the servos (torque on) when the driver starts"),
    P("led_alarm", "int", 7, "LED alarm setting written to every servo at start-up (LED_ERROR_WRITE, cmd 35): "
      "which conditions flash the servo's LED, bits 1 over-temperature, 2 over-voltage, 4 locked rotor; -1 = "
      "leave the servos' setting. Reported on /diagnostics, never read as a fault (direct UART transport only: the RRC "
      "board does not carry cmd 35/36)", lo=-1, hi=7, read_only=True),
    P("stamp_tolerance", "double", 2.0, "joint_commands stamped more than this far from the node's clock are "
      "rejected (all-zero stamps pass as 'not stamped')", lo=0.01, hi=1.0e9, unit="s"),
    # the STM32 board (transport rrc): its IMU and battery reports, read from the same byte stream
    P("imu_rate", "double", 100.0, "transport rrc: the rate the board sends its IMU reports at (the emulated "
      "board's; the real board's is not documented: check `ros2 topic hz imu/data`); a report later than 5 of "
      "its periods after the one before follows a gap (the filter steps one period, not across the gap)",
      lo=1.0, hi=1000.0, unit="Hz", read_only=True),
    P("imu_mount_rpy", "double_array", list(IMU_MOUNT_HIWONDER_ROS2), "transport rrc: the board IMU's axes in "
      "base_link (roll, pitch, yaw as a URDF origin); its reports are turned into the URDF's imu_link with it. "
      "Default: Hiwonder's description of its Orin-kit hexapod mounts imu_link at yaw -90 deg (verify on your "
      "robot: at rest imu/data's linear_acceleration reads +9.8 on z, and walking forward turns no yaw)",
      lo=-math.pi, hi=math.pi, length=3, unit="rad", read_only=True),
    P("imu_timeout", "double", 1.0, "transport rrc: no valid IMU report from the board for this long is an "
      "error (one line, /diagnostics ERROR): imu/data stops and the predictor and the damage monitor lose "
      "the body's motion", lo=0.1, hi=60.0, unit="s", read_only=True),
    *_imu_publishing("imu_", read_only=True, note="transport rrc, imu/data of the board's IMU: "),
    P("battery_warn_voltage", "double", 10.5, "transport rrc: battery below this is a warning on /diagnostics "
      "(0.5 V above the manual's 10 V stop: time to stop walking and charge)", lo=0.0, hi=30.0, unit="V",
      read_only=True),
    P("battery_error_voltage", "double", 10.0, "transport rrc: battery below this is an error on /diagnostics "
      "(Hiwonder's manual: stop operating below 10 V)", lo=0.0, hi=30.0, unit="V", read_only=True),
])

IMU = ParamSet("imu", [
    P("source", "string", "i2c", "i2c: MPU6050 on an I2C bus; emulator: the MPU6050 model driven by the emulated "
      "robot's motion (topic emulator/imu_motion)", choices=("i2c", "emulator"), read_only=True),
    P("i2c_bus", "int", 1, "I2C bus number (/dev/i2c-N)", lo=0, hi=32, read_only=True),
    P("address", "int", 0x68, "MPU6050 I2C address (0x68, or 0x69 with AD0 high)", lo=0x68, hi=0x69,
      read_only=True),
    P("rate", "double", 100.0, "sampling and publication rate", lo=1.0, hi=1000.0, unit="Hz"),
    *_imu_publishing(),
    P("accel_range_g", "int", 4, "accelerometer full scale (2, 4, 8 or 16 g)", lo=2, hi=16, unit="g",
      choices=(2, 4, 8, 16), read_only=True),
    P("gyro_range_dps", "int", 500, "gyro full scale (250, 500, 1000 or 2000 deg/s)", lo=250, hi=2000,
      unit="deg/s", choices=(250, 500, 1000, 2000), read_only=True),
    P("dlpf_cfg", "int", 3, "digital low-pass filter setting (0 = 260 Hz ... 3 = 44 Hz ... 6 = 5 Hz)", lo=0, hi=6,
      read_only=True),
    P("calibrate_gyro", "bool", False, "average the gyro at start-up (robot at rest, ~1 s) and remove that bias",
      read_only=True),
    P("stamp_tolerance", "double", 2.0, "emulator/imu_motion stamped more than this far from the node's clock is "
      "rejected (all-zero stamps pass as 'not stamped')", lo=0.01, hi=1.0e9, unit="s"),
])

GAIT_CONTROLLER = ParamSet("gait_controller", [
    P("control_rate", "double", 50.0, "joint_commands rate (50 Hz is what the 115200-baud bus carries)",
      lo=1.0, hi=200.0, unit="Hz"),
    P("cmd_vel_timeout", "double", 0.5, "stop the gait and hold the stance when cmd_vel is older than this",
      lo=0.05, hi=10.0, unit="s"),
    P("gait", "string", "tripod", "gait of the healthy robot (a damaged robot walks a wave over its remaining "
      "legs)", choices=("tripod", "ripple", "wave")),
    P("cycle_time", "double", 1.3, "gait cycle time", lo=0.3, hi=10.0, unit="s"),
    P("step_height", "double", 0.02, "swing apex height", lo=0.0, hi=0.05, unit="m"),
    P("body_height", "double", 0.12, "hip height above the ground", lo=0.04, hi=0.2, unit="m"),
    P("stance_radius", "double", 0.13, "horizontal distance from the hip to the neutral foot", lo=0.06, hi=0.2,
      unit="m"),
    P("max_linear_speed", "double", 0.1, "cmd_vel linear speed is clamped to this", lo=0.0, hi=0.3, unit="m/s"),
    P("max_angular_speed", "double", 0.6, "cmd_vel yaw rate is clamped to this", lo=0.0, hi=3.0, unit="rad/s"),
    P("unexplained_speed_scale", "double", 0.3, "cmd_vel is scaled by this while morphology/evidence says the "
      "motion is unexplained (no morphology explains it: a seized joint, an obstacle): a safe crawl until it is "
      "explained again", lo=0.0, hi=1.0),
    P("recovery", "bool", False, "damage recovery: re-plan a statically stable gait from the model for "
      "each morphology, fold footless legs, blend gait switches", read_only=True),
    P("heading_hold", "bool", True, "with recovery: close the loop on imu/data (gyro yaw rate) and predicted/odom; "
      "holds the stance when the IMU goes silent for heading_imu_timeout"),
    P("heading_k_yaw", "double", 3.0, "heading hold: yaw error gain", lo=0.0, hi=10.0, unit="1/s"),
    P("heading_k_lat", "double", 2.0, "heading hold: lateral offset -> heading gain", lo=0.0, hi=50.0,
      unit="rad/m"),
    P("heading_max_correction", "double", 0.1, "heading hold: largest yaw-rate trim (the re-planner verifies "
      "the margin over 0.1 rad/s)", lo=0.0, hi=0.1, unit="rad/s"),
    P("heading_imu_timeout", "double", 0.5, "heading hold: the IMU is silent after this long", lo=0.05, hi=10.0,
      unit="s"),
    P("stamp_tolerance", "double", 2.0, "with recovery: imu/data and predicted/odom stamped more than this far from "
      "the node's clock are rejected, never read by the heading hold (all-zero stamps pass as 'not stamped')",
      lo=0.01, hi=1.0e9, unit="s"),
] + _morphology_authority())

PREDICTOR = ParamSet("predictor", [
    P("predictor", "string", "boltzmann_hamel", "dynamics model: boltzmann_hamel (the modular whole-body model) or "
      "a second-opinion model of the PREDICTORS registry", choices=("boltzmann_hamel", "slip", "newton_euler")),
    P("rate", "double", 100.0, "prediction/publication rate", lo=1.0, hi=1000.0, unit="Hz"),
    P("pace_on_imu", "bool", True, "run each cycle right after an imu/data sample while the IMU publishes at rate "
      "(within 10 %): one executor wake-up per period instead of two; the timer takes over when the IMU is silent "
      "for two periods"),
    P("horizon", "double", 2.0, "re-anchor the prediction on the measurements every horizon", lo=0.05, hi=600.0,
      unit="s"),
    P("joint_source", "string", "commands", "joint input: commands (joint_commands, what the servos are told) or "
      "joint_states (the measured positions, as the servos read them, stand in for the commands)",
      choices=("commands", "joint_states")),
    P("mocap_timeout", "double", 0.5, "mocap/pose older than this is not used as the measured position", lo=0.01,
      hi=60.0, unit="s"),
    P("publish_slip", "bool", False, "also run the slip model and publish slip/pose and slip/odom (off by default: "
      "a third of the predictor's CPU, on the robot's budget)"),
    P("odom_frame", "string", "odom", "frame of predicted/odom and of the poses (REP-105)"),
    P("base_frame", "string", "base_link", "child frame of predicted/odom (REP-105)"),
    P("diagnostics_rate", "double", 1.0, "cycle-time /diagnostics rate", lo=0.1, hi=10.0, unit="Hz"),
    P("body_mass", "double", 0.0, "the model's main body mass (0 = the URDF's): a payload, a robot weighed; "
      "jethexa-calibrate's parameters file sets it", lo=0.0, hi=20.0, unit="kg"),
    P("body_com_offset", "double_array", [0.0, 0.0, 0.0], "the model's body CoM offset from the URDF's (x, y, z "
      "in base_link); jethexa-calibrate's parameters file sets it", lo=-0.1, hi=0.1, length=3, unit="m"),
    P("body_estimate", "bool", False, "take the models' body from damage_monitor's estimate (body/inertia: its "
      "body_estimate): each estimate sets the body's mass and CoM in place, the models' state kept; until the "
      "first, body_mass and body_com_offset", read_only=True),
    P("stats_window", "int", 2000, "cycles kept for the p50/p99 cycle-time figures", lo=10, hi=100000),
    P("stamp_tolerance", "double", 2.0, "a stamped input (joint_commands, joint_states, imu/data, mocap/pose) "
      "more than this far from the node's clock is rejected (all-zero stamps pass as 'not stamped'); raise it "
      "to replay old bags without use_sim_time", lo=0.01, hi=1.0e9, unit="s"),
    P("degrade", "bool", True, "when the cycles run late (CPU short), halve the cycle rate in steps (rate/2, "
      "rate/4, ... not below degrade_min_rate), say so on /diagnostics (WARN, degraded), and step back up when "
      "on time again"),
    P("degrade_min_rate", "double", 12.5, "the lowest cycle rate degrade goes down to", lo=1.0, hi=1000.0,
      unit="Hz"),
    P("degrade_late_fraction", "double", 0.2, "fraction of the cycles due over 2 s that ran late or not at all "
      "which halves the cycle rate (a quarter of it or less counts as on time)", lo=0.01, hi=1.0),
    P("degrade_min_cpu", "double", 0.1, "late cycles lower the rate only while the cycles themselves take at "
      "least this fraction of a core (lowering a cheap cycle's rate frees nothing)", lo=0.0, hi=1.0),
    P("degrade_recover", "double", 5.0, "on time this long before the cycle rate is doubled again (twice as "
      "long after each step down that follows a step up closely, up to 16 times)", lo=0.5, hi=600.0, unit="s"),
] + _morphology_authority())

#: damage_monitor parameters -> the ``DamageIdentifier`` attributes they set (its constructor's keywords)
IDENTIFIER_PARAMS = (("identify_window", "window"), ("identify_threshold", "threshold"),
                     ("identify_confirm", "confirm"), ("identify_max_gap", "max_gap"))

DAMAGE_MONITOR = ParamSet("damage_monitor", [
    P("joints_from_commands", "bool", False, "no measured joint positions (the companion graph beside the stock "
      "software, docs/companion.md): the identifier's windows start from the commanded joint angles of "
      "joint_commands instead of joint_states; servo-health and seizure evidence need measured joints and stay "
      "silent (none arrives)", read_only=True),
    P("morphology", "int_array", [-1] * LEGS, "manual override, one entry per leg (LF LM LR RF RM RR) = intact "
      "links; -1 = automatic detection for that leg", lo=-1, hi=3, length=LEGS),
    P("no_reply_timeout", "double", 0.4, "a servo without a valid reply this long (and min_missed_reads misses "
      "in a row) is lost", lo=0.02, hi=30.0, unit="s"),
    P("min_missed_reads", "int", 2, "consecutive missed reads (the driver's confirmation read included) before a "
      "servo can be declared lost", lo=1, hi=100),
    P("position_error_threshold", "double", 0.6, "|measured - commanded| beyond this while the servo is loaded "
      "counts as a stall: the joint is reported seized (links kept, the gait crawls)", lo=0.05, hi=math.pi,
      unit="rad"),
    P("position_error_hold", "double", 0.5, "a stall (position error under load) must persist this long", lo=0.0,
      hi=30.0, unit="s"),
    P("seizure_window", "double", 0.6, "a joint is seized when, over this long, its commands moved at least "
      "seizure_min_travel while its measured angle (joint_states, on time) stayed within seizure_max_motion",
      lo=0.1, hi=10.0, unit="s"),
    P("seizure_min_travel", "double", 0.1, "commanded travel within seizure_window that a following joint shows",
      lo=0.01, hi=3.0, unit="rad"),
    P("seizure_max_motion", "double", 0.035, "measured motion within seizure_window at most, for a seized joint "
      "(below seizure_min_travel)", lo=0.0, hi=1.0, unit="rad"),
    P("latch", "bool", True, "detected faults stay until the reset service is called"),
    P("check_rate", "double", 1.0, "rate of the node's status on /diagnostics, and of the check for missing servo "
      "diagnostics (a morphology, fault, seizure or 'unexplained' change is published at once; detection runs on "
      "every message)", lo=0.5, hi=100.0, unit="Hz"),
    P("wake_on", "string", "joint_states", "the input whose samples wake the node; the others are taken at those "
      "wake-ups (polled). joint_states (50 Hz): half the wake-ups of imu/data for a node alone in its process; "
      "imu/data where the predictor shares the process and wakes on it (the launch files set it so): one wake-up "
      "then serves both nodes", choices=("joint_states", "imu/data"), read_only=True),
    P("servo_diagnostics_timeout", "double", 2.0, "warn when no servo diagnostics arrived for this long; "
      "joint_states evidence (a joint left out) is judged only this long after start",
      lo=0.1, hi=600.0, unit="s"),
    P("identify", "bool", True, "run the model-based identifier (damage.identification: a bank of modular-model "
      "predictions, one per morphology hypothesis) on joint_commands, joint_states and imu/data, to find breaks "
      "the servos cannot see; false = servo evidence only"),
    P("identify_window", "double", 0.5, "identifier: seconds between re-anchors of its models (one likelihood "
      "per window)", lo=0.2, hi=3.0, unit="s"),
    P("identify_threshold", "double", 0.9, "identifier: posterior probability a leg change needs", lo=0.5,
      hi=0.999),
    P("identify_confirm", "int", 3, "identifier: consecutive windows above the threshold before the morphology "
      "changes (hysteresis)", lo=1, hi=10),
    P("identify_max_gap", "double", 0.2, "identifier: imu/data or joint_states silent this long is a data gap "
      "(a stall, a dropped link): the windows it touches are not scored", lo=0.02, hi=5.0, unit="s"),
    P("stamp_tolerance", "double", 2.0, "a stamped input of the identifier (joint_commands, joint_states, "
      "imu/data) more than this far from the node's clock is rejected (all-zero stamps pass as 'not stamped')",
      lo=0.01, hi=1.0e9, unit="s"),
    P("identify_degrade", "bool", True, "identifier: when its worker falls behind the data (a window closed "
      "more than identify_max_lag after its data arrived), start a bank episode at most every 2nd, 4th, ... "
      "window (an episode under way goes on every window; nothing is decided on a deferred window), say so on "
      "/diagnostics (WARN, identifier_degraded), and step back when on time again"),
    P("identify_max_lag", "double", 1.0, "identifier: a window closing this long after the sample that closed it "
      "arrived degrades the identifier one step", lo=0.1, hi=60.0, unit="s"),
    P("identify_max_bank_every", "int", 8, "identifier: the sparsest degraded mode, a bank episode at most every "
      "n-th window (rounded down to a power of 2)", lo=2, hi=64),
    P("identify_recover", "double", 10.0, "identifier: on time (windows closing within a quarter of "
      "identify_max_lag) this long before a degraded step is undone", lo=1.0, hi=600.0, unit="s"),
    P("body_estimate", "bool", False, "estimate the body's mass and CoM from the servos' load (joint_states with "
      "the driver's joint_states/setpoint, imu/data) on a healthy morphology: body/inertia and /diagnostics",
      read_only=True),
    P("body_window", "double", 30.0, "body estimate: forgetting time constant", lo=1.0, hi=600.0, unit="s",
      read_only=True),
    *[P("body_servo_" + name, "double", default, "body estimate: the servo law's " + what, lo=lo, hi=hi,
        unit=unit, read_only=True)
      for (name, lo, hi, unit), default, what in zip(SERVO_GAINS, PAPER_GAINS, (
          "stiffness kp (its tracking error times kp is the torque it holds; the emulated servo's, the paper's; "
          "a real servo's is found once against a known body, docs/identification.md)",
          "integral gain ki (0: a servo without one, MuJoCo's position actuator)",
          "derivative gain kd (see body_servo_damping)"))],
    P("body_servo_damping", "string", "error", "body estimate: where the servo's kd acts: error (kd on the "
      "tracking error's rate: the paper's PID, the emulated servo; averages out) or rate (kd on the joint's own "
      "rate, a position actuator's damping: modelled from the moves; damage/body_load.py SERVO_DAMPING)",
      choices=SERVO_DAMPING, read_only=True),
    P("probe", "bool", True, "active probe (damage.active_probe): when the identifier names a broken leg (with "
      "probe_always false: only when its event lists alternatives, other link counts the walk could not rule "
      "out), stand on the other legs, have the gait controller move the leg for 2 s (damage/probe) and score its "
      "link counts by the gyro's reaction; a refused (static margin) or ambiguous probe is said, never guessed. "
      "On by default (the robot stops ~3 s on its own per probed leg; false: the walk's count stands); takes effect "
      "at the next event"),
    P("probe_always", "bool", True, "active probe: probe every leg the identifier names, not only one whose event "
      "lists alternatives (the walk can be sure and wrong on a robot its models do not match); false: the "
      "ambiguous events only", read_only=True),
    P("probe_min_margin", "double", 0.01, "active probe: the smallest static stability margin allowed at any "
      "instant of the probe (refused, or aborted while it runs, otherwise)", lo=0.0, hi=0.1, unit="m",
      read_only=True),
    P("probe_decide", "double", 0.9, "active probe: probability the best link count needs to be taken (below: "
      "every count's probability reported, the identifier's count kept unless ruled out)", lo=0.5, hi=0.9999,
      read_only=True),
    P("probe_max_lag", "double", 0.03, "active probe: the gyro may lag or lead the probe's schedule by up to this "
      "(bus, IMU filter, queues); each link count is scored at its best shift within it", lo=0.0, hi=0.1,
      unit="s", read_only=True),
])

ROBOT_EMULATOR = ParamSet("robot_emulator", [
    P("transport", "string", "uart", "the emulated robot's bus (as servo_driver's transport): uart (the Jetson "
      "Nano kit: 0x55 0x55 servo frames; its IMU is the imu node's MPU6050 model, fed on emulator/imu_motion) or "
      "rrc (today's kit: the STM32 board, which also streams its IMU reports at imu_rate and a battery report "
      "every second from the world's motion; no emulator/imu_motion)", choices=("uart", "rrc"), read_only=True),
    P("port_link", "string", "/tmp/jethexa_emulated_bus", "path of a symlink to the emulated bus pty (what "
      "servo_driver's port points at)", read_only=True),
    P("rate", "double", 100.0, "world update rate (the engine substeps inside) and joint-feedback rate",
      lo=10.0, hi=1000.0, unit="Hz"),
    P("imu_rate", "double", 100.0, "emulator/imu_motion publication rate (every round(rate/imu_rate)-th world "
      "tick); with transport rrc the board's IMU report rate (taken at start-up)", lo=1.0, hi=1000.0, unit="Hz"),
    P("mocap_rate", "double", 50.0, "mocap/pose (ground truth) publication rate (every round(rate/mocap_rate)-th "
      "world tick)", lo=1.0, hi=1000.0, unit="Hz"),
    P("damage", "string", "", "damage in the world, any morphology spec: '' (healthy), damage1/damage2 (aliases "
      "scenario1/scenario2), 'LEG' or 'LEG:N' lists (e.g. 'RM,LM' or 'LM:1 RR:1') or one link count per leg; "
      "removes the links and silences their servos"),
    P("breaks", "string", "", "silent breaks in the world, same syntax as damage (e.g. 'LM:1', 'RR:0', "
      "scenario2): the links lose their mass and their foot its contact, the servos keep answering and "
      "following their commands"),
    P("seize", "string", "", "seized servos in the world: joint names, comma-separated (e.g. 'femur_joint_LM'): "
      "the joints stay where they are, the servos keep answering and accepting moves they do not make"),
    P("record", "string", "", "record the run's topics to this rosbag2 directory (empty = off)", read_only=True),
    P("record_storage", "string", "mcap", "storage of the recording: mcap (on Humble, ros2 bag needs "
      "ros-humble-rosbag2-storage-mcap) or sqlite3 (read by every rosbag2)", choices=("mcap", "sqlite3"),
      read_only=True),
    P("seed", "int", 0, "random seed of sensor noise", lo=0, hi=2 ** 31 - 1, read_only=True),
    P("body_mass_scale", "double", 1.0, "the world's robot body: base_link's mass and inertia times this (a robot "
      "heavier than its URDF, a payload; the nodes' models are not told)", lo=0.5, hi=2.0, read_only=True),
    P("body_com_shift", "double_array", [0.0, 0.0, 0.0], "the world's robot body: its CoM moved by this from the "
      "URDF's (x, y, z in base_link)", lo=-0.05, hi=0.05, length=3, unit="m", read_only=True),
    P("bus_line", "bool", False, "the emulated bus has the robot's line: frames executed and replies sent when their bytes are through it at the transport's rate (115200 baud), as on the robot (servo_driver line_model must then be true: sim launch argument bus_line)", read_only=True),
    P("servo_timing", "string", "tick", "how the world follows the servos: 'tick' (each world update drives the "
      "engine toward the servos' commanded positions one update ahead; reads give the last update's angles) or "
      "'exact' (the engine follows the commanded trajectories as they were, cut where a move starts or ends; "
      "each bus transaction brings the world up to its arrival and is executed there: reads give the angle at "
      "their own time; body_estimate needs it)", choices=("tick", "exact"),
      read_only=True),
    P("interface", "string", "bus", "how the nodes reach the world: 'bus' (an emulated servo bus on a pty for "
      "servo_driver, the MPU6050's motion on emulator/imu_motion for the imu node) or 'topics' (no servo driver: "
      "the emulator takes joint_commands and publishes joint_states and imu/data itself, as a robot whose joints "
      "come from another driver; sim launch argument interface)", choices=("bus", "topics"), read_only=True),
    P("plant", "string", "engine", "the world's physics: 'engine' (the package's simulation engine) or 'mujoco' "
      "(MuJoCo, an independent contact model; needs the mujoco package and servo_timing tick)",
      choices=("engine", "mujoco"), read_only=True),
    P("joint_states_rate", "double", 50.0, "joint_states publication rate with interface topics (every "
      "round(rate/joint_states_rate)-th world tick; every joint whose servo is there)", lo=1.0, hi=1000.0,
      unit="Hz"),
    P("hide", "string", "", "interface topics: joints (or legs: their three joints) left out of joint_states "
      "while the world keeps them, comma-separated (e.g. 'RM' or 'tibia_joint_LF'): a driver that cannot read "
      "them (starved, a loose cable); '' none"),
    *_imu_publishing("imu_", read_only=True, note="interface topics, imu/data of the world: "),
])



def _joint_map_text(text: str) -> None:
    """A ``joint_map`` value parses ('' = the stock map)."""
    from jethexa_dynamics.hardware.joint_map import JointMap

    if text.strip():
        JointMap.parse(text)


STOCK_ADAPTER = ParamSet("stock_adapter", [
    P("commands_topic", "string", "/controller_manager/joint_states", "the stock software's commanded joint "
      "positions (sensor_msgs/JointState; Hiwonder's ROS 2 stack: its controller_manager's, 50 Hz), republished "
      "as joint_commands in this package's joint names and angles", read_only=True, pattern=r"/?[A-Za-z_~][\w/]*",
      pattern_text="a topic name"),
    P("imu_topic", "string", "/imu", "the stock software's filtered IMU (sensor_msgs/Imu with orientation; "
      "Hiwonder's: imu_filter_madgwick's output), republished as imu/data in base_link axes", read_only=True,
      pattern=r"/?[A-Za-z_~][\w/]*", pattern_text="a topic name"),
    P("joint_map", "string", "", "the stock joint names and angles -> this package's: comma-separated "
      "stock=ours[:sign[:zero]] for all 18 joints (q = sign * (q_stock - zero), rad); empty = Hiwonder's ROS 2 "
      "map (docs/companion.md: where each value comes from). A stock joint it does not name is logged once and "
      "counted on /diagnostics", read_only=True, check=_joint_map_text,
      pattern_text="18 entries stock=ours[:sign[:zero]]"),
    P("imu_frame", "string", "imu_link", "the frame_id the stock IMU messages must carry: the frame imu_mount_rpy "
      "describes; a message in another frame is logged once, counted on /diagnostics and not used",
      read_only=True),
    P("imu_mount_rpy", "double_array", list(IMU_MOUNT_HIWONDER_ROS2), "the stock IMU's frame (imu_frame) in "
      "base_link (roll, pitch, yaw as a URDF origin): its orientation, rates and specific force are turned into "
      "base_link axes with it. Default: Hiwonder's description mounts imu_link at yaw -90 deg (the same "
      "parameter as servo_driver's; verify on your robot: docs/companion.md)", lo=-math.pi, hi=math.pi,
      length=3, unit="rad", read_only=True),
    P("move_time", "double", 0.02, "time_from_start of the republished joint_commands point: the stock gait's "
      "servo move time (Hiwonder's: 20 ms per 50 Hz step)", lo=0.0, hi=MAX_MOVE_TIME_S, unit="s", read_only=True),
    P("stale_after", "double", 1.0, "no stock command or IMU message for this long is an ERROR on /diagnostics "
      "(the stock stack stopped, or publishes elsewhere)", lo=0.1, hi=60.0, unit="s", read_only=True),
])

ALL = {p.node_name: p for p in (SERVO_DRIVER, IMU, GAIT_CONTROLLER, PREDICTOR, DAMAGE_MONITOR, ROBOT_EMULATOR,
                                STOCK_ADAPTER)}
