"""The stock joint map (hardware/joint_map.py) against Hiwonder's own tables, a standing pose, and bad maps.

Oracle: the two tables the map is derived from, restated here as data (not code): Hiwonder's kinematics table
(servo ``direction`` per joint, the one config/servos.yaml copies) and their ROS 2 servo table (``min``/``max`` per
joint: ``min > max`` = flipped). The stock gait sends ``500 + direction * q / tick`` and the stock
controller_manager publishes ``(pulse - 500) * tick``, negated when flipped; the map must invert exactly that."""
import math

import numpy as np
import pytest
import yaml

from jethexa_dynamics.hardware import joint_map as jm

TICK = math.radians(240.0) / 1000.0
#: Hiwonder's ROS 2 servo_controller.yaml: joint -> (id, init, min, max)
STOCK_SERVO_TABLE = {
    "coxa_LF_joint": (5, 500, 1000, 0), "femur_LF_joint": (3, 500, 1000, 0), "tibla_LF_joint": (1, 500, 1000, 0),
    "coxa_LM_joint": (11, 500, 1000, 0), "femur_LM_joint": (9, 500, 1000, 0), "tibla_LM_joint": (7, 500, 1000, 0),
    "coxa_LR_joint": (17, 500, 1000, 0), "femur_LR_joint": (15, 500, 1000, 0), "tibla_LR_joint": (13, 500, 1000, 0),
    "coxa_RF_joint": (6, 500, 1000, 0), "femur_RF_joint": (4, 500, 0, 1000), "tibla_RF_joint": (2, 500, 0, 1000),
    "coxa_RM_joint": (12, 500, 0, 1000), "femur_RM_joint": (10, 500, 0, 1000), "tibla_RM_joint": (8, 500, 0, 1000),
    "coxa_RR_joint": (18, 500, 1000, 0), "femur_RR_joint": (16, 500, 0, 1000), "tibla_RR_joint": (14, 500, 0, 1000),
}
#: Hiwonder's ROS 2 controller_manager wake (standing) pose, in their convention, by servo id
STOCK_WAKE_POSE = dict(zip([5, 3, 1, 11, 9, 7, 17, 15, 13, 18, 16, 14, 12, 10, 8, 6, 4, 2],
                           [0.2471, 0.816, -0.552, 0.0, 0.904, -0.678, -0.251, 0.821, -0.4733, 0.255, 0.808, -0.485,
                            0.0, 0.90, -0.678, -0.263, 0.8, -0.477]))


def _servos_yaml():
    import os

    import jethexa_dynamics
    path = os.path.join(os.path.dirname(os.path.dirname(jethexa_dynamics.__file__)), "config", "servos.yaml")
    with open(path, encoding="utf-8") as f:
        return {s["joint"]: s for s in yaml.safe_load(f)["servos"]}


def _our_name(stock):
    part, leg, _ = stock.split("_")
    return "%s_joint_%s" % ("tibia" if part == "tibla" else part, leg)


def test_the_stock_map_inverts_the_stock_gait_and_controller_manager_pulse_for_pulse():
    servos = _servos_yaml()
    rng = np.random.default_rng(3)
    for stock, (sid, init, lo, hi) in STOCK_SERVO_TABLE.items():
        ours = _our_name(stock)
        assert servos[ours]["id"] == sid and servos[ours]["center"] == init == 500
        for q in rng.uniform(-1.0, 1.0, 5):
            pulse = 500 + servos[ours]["direction"] * q / TICK            # the stock gait (x_joint_control)
            published = ((init - pulse) if lo > hi else (pulse - init)) * TICK   # their controller_manager
            n, v = jm.HIWONDER_ROS2.to_ours([stock], [published])
            assert n == [ours] and v[0] == pytest.approx(q, abs=1e-12)
            assert jm.HIWONDER_ROS2.to_stock([ours], [q])[1][0] == pytest.approx(published, abs=1e-12)
    signs = {e.joint: e.sign for e in jm.HIWONDER_ROS2.entries}
    assert [j for j, s in signs.items() if s < 0] == ["coxa_joint_RM"]
    assert all(e.zero == 0.0 for e in jm.HIWONDER_ROS2.entries)


def test_the_stock_standing_pose_mapped_stands_feet_below_the_hips_left_right_mirrored():
    """Hiwonder's wake pose through the map: every foot 5-15 cm below its hip and out beyond the coxa, each right
    leg the mirror of its left twin (same reach and height, coxa angle negated) -- a femur or tibia sign wrong
    would put feet above the hips or tuck them under; this is the check docs/companion.md gives for the robot."""
    by_id = {v[0]: k for k, v in STOCK_SERVO_TABLE.items()}
    names = [by_id[i] for i in STOCK_WAKE_POSE]
    ours, q = jm.HIWONDER_ROS2.to_ours(names, list(STOCK_WAKE_POSE.values()))
    q = dict(zip(ours, q))
    L1, L2, L3, bend = 0.04505032, 0.07703, 0.123, math.radians(85.0)   # urdf/jethexa.urdf
    feet = {}
    for leg in jm.LEGS:
        t2, t3 = q["femur_joint_" + leg], q["tibia_joint_" + leg]
        r = L1 + L2 * math.cos(t2) + L3 * math.cos(t2 + t3 - bend)
        z = L2 * math.sin(t2) + L3 * math.sin(t2 + t3 - bend)
        feet[leg] = (r, z, q["coxa_joint_" + leg])
        assert -0.15 < z < -0.05 and r > L1 + 0.05, (leg, r, z)
    for left, right in (("LF", "RF"), ("LM", "RM"), ("LR", "RR")):
        assert feet[left][0] == pytest.approx(feet[right][0], abs=0.01)
        assert feet[left][1] == pytest.approx(feet[right][1], abs=0.01)
        assert feet[left][2] == pytest.approx(-feet[right][2], abs=0.02)


def test_text_form_round_trips_and_the_nano_map_is_the_identity():
    again = jm.JointMap.parse(jm.HIWONDER_ROS2.text())
    assert again.entries == jm.HIWONDER_ROS2.entries
    n, v = jm.NANO_ROS1.to_ours(list(jm.JOINTS), [0.1] * 18)
    assert n == list(jm.JOINTS) and v == [0.1] * 18
    custom = jm.JointMap.parse(jm.HIWONDER_ROS2.text().replace("coxa_RM_joint=coxa_joint_RM:-1",
                                                                "coxa_RM_joint=coxa_joint_RM:+1"))
    assert custom.entry("coxa_RM_joint").sign == 1.0


@pytest.mark.parametrize("text, needle", [
    ("coxa_LF_joint=coxa_joint_XX", "is not a joint of this package"),
    ("coxa_LF_joint=coxa_joint_LF:2", "sign 2.0 must be +1 or -1"),
    ("coxa_LF_joint=coxa_joint_LF:1:9", "zero 9.0 rad outside"),
    ("coxa_LF_joint", "expected stock_name=our_name"),
    ("coxa_LF_joint=coxa_joint_LF:x", "sign must be +1 or -1"),
    ("coxa_LF_joint=coxa_joint_LF", "no entry for femur_joint_LF"),
])
def test_a_bad_map_is_one_line_naming_the_entry(text, needle):
    with pytest.raises(jm.ForeignJointError) as e:
        jm.JointMap.parse(text)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_a_foreign_joint_name_is_one_line_naming_it_and_the_known_ones():
    with pytest.raises(jm.ForeignJointError) as e:
        jm.HIWONDER_ROS2.to_ours(["coxa_LF_joint", "head_pan_joint"], [0.0, 0.1])
    msg = str(e.value)
    assert "'head_pan_joint'" in msg and "tibla_RR_joint" in msg and "\n" not in msg
    assert jm.HIWONDER_ROS2.to_ours(["coxa_LF_joint", "head_pan_joint"], [0.0, 0.1], strict=False) == (
        ["coxa_joint_LF"], [0.0])
    assert jm.HIWONDER_ROS2.foreign(["coxa_joint_LF"]) == ["coxa_joint_LF"]


def test_imu_mount_turns_a_yawed_sample_back_into_base_link_axes():
    """imu_link yawed -90 deg: the body's forward (base +x) is imu_link's +y; a pitch of the body reads as a roll
    about imu_link's y... the conversion and its inverse are checked against rotation matrices built directly."""
    from transforms3d.euler import euler2quat, quat2euler
    from transforms3d.quaternions import quat2mat

    rpy = jm.IMU_MOUNT_HIWONDER_ROS2
    R_bi = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])   # base <- imu for yaw -90 deg
    assert np.allclose(jm.mount_rotation(rpy), R_bi)
    q_wb = euler2quat(0.1, -0.2, 0.3)                  # body: roll 0.1, pitch -0.2, yaw 0.3 (sxyz)
    w_b, a_b = np.array([0.5, -0.1, 0.2]), np.array([0.3, 0.0, 9.8])
    q_wi, w_i, a_i = jm.imu_from_base(rpy, q_wb, w_b, a_b)
    assert np.allclose(quat2mat(q_wi), quat2mat(q_wb) @ R_bi)              # world <- imu = world <- base <- imu
    assert np.allclose(R_bi @ w_i, w_b) and np.allclose(R_bi @ a_i, a_b)
    q2, w2, a2 = jm.imu_to_base(rpy, q_wi, w_i, a_i)
    assert np.allclose(quat2euler(q2), (0.1, -0.2, 0.3)) and np.allclose(w2, w_b) and np.allclose(a2, a_b)
    qs, ws, as_ = jm.imu_to_base(rpy, np.tile(q_wi, (3, 1)), np.tile(w_i, (3, 1)), np.tile(a_i, (3, 1)))
    assert qs.shape == (3, 4) and np.allclose(ws, w_b)
