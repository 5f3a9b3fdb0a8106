"""Servo table and radian <-> tick map.

Oracles: the servo-ID/direction table of the reference (§2.3, Hiwonder's config.py) written out here by
hand; the URDF read with xml.etree; Hiwonder's own formula pos = (real + 2.0944) / 4.18879 * 1000.
"""
import math
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings, strategies as st

from jethexa_dynamics.hardware.errors import JointLimitError, ParameterError
from jethexa_dynamics.hardware.servo_table import (ServoSpec, default_config_path, default_urdf_path,
                                                   load_servo_table)

# leg: (coxa id, dir), (femur id, dir), (tibia id, dir)   -- reference §2.3
REFERENCE = {
    "LF": ((5, -1), (3, -1), (1, -1)), "LM": ((11, -1), (9, -1), (7, -1)), "LR": ((17, -1), (15, -1), (13, -1)),
    "RR": ((18, -1), (16, 1), (14, 1)), "RM": ((12, -1), (10, 1), (8, 1)), "RF": ((6, -1), (4, 1), (2, 1)),
}


def urdf_revolute():
    root = ET.parse(default_urdf_path()).getroot()
    out = []
    for j in root.findall("joint"):
        if j.get("type") == "revolute":
            lim = j.find("limit")
            out.append((j.get("name"), float(lim.get("lower")), float(lim.get("upper"))))
    return out


def hiwonder_pos(direction, offset, rad):
    real = direction * (offset + rad)
    return (real + 2.0944) / 4.18879 * 1000


def test_table_matches_reference_ids_and_directions():
    table = load_servo_table(urdf=False)
    assert len(table) == 18
    for leg, parts in REFERENCE.items():
        for part, (sid, d) in zip(("coxa", "femur", "tibia"), parts):
            spec = table.by_joint("%s_joint_%s" % (part, leg))
            assert (spec.servo_id, spec.direction, spec.center, spec.offset) == (sid, d, 500, 0.0)
    assert sorted(table.servo_ids) == list(range(1, 19))


def test_joint_order_and_limits_match_urdf():
    table = load_servo_table()
    urdf = urdf_revolute()
    assert table.joint_names == tuple(n for n, _, _ in urdf)
    for (name, lo, hi), spec in zip(urdf, table):
        # the URDF limits are inside the +-120 deg servo range, so they are the effective limits
        assert (spec.lower, spec.upper) == (max(lo, -math.radians(120)), min(hi, math.radians(120)))


def test_bundled_config_is_reachable_through_the_package():
    assert default_config_path().endswith("jethexa_dynamics/data/config/servos.yaml")
    assert load_servo_table(default_config_path(), urdf=default_urdf_path())


def test_zero_is_centre_and_direction_signs():
    table = load_servo_table()
    assert all(s.to_ticks(0.0) == 500 for s in table)
    lf, rf = table.by_joint("femur_joint_LF"), table.by_joint("femur_joint_RF")
    assert lf.to_ticks(0.5) == 500 - round(0.5 * 1000 / math.radians(240))   # direction -1
    assert rf.to_ticks(0.5) == 500 + round(0.5 * 1000 / math.radians(240))   # direction +1


TABLE = load_servo_table(urdf=False)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(18)), st.floats(-1.6, 1.6), st.floats(-0.2, 0.2))
def test_ticks_agree_with_hiwonder_formula(i, rad, offset):
    base = TABLE[i]
    spec = ServoSpec(base.joint, base.servo_id, base.direction, 500, offset, base.lower, base.upper)
    rad = min(max(rad, spec.lower), spec.upper)
    ours = spec.to_ticks(rad)
    ref = hiwonder_pos(spec.direction, offset, rad)
    # Hiwonder truncates with int(); we round; their constants are 5-digit approximations
    assert abs(ours - ref) <= 0.51 + 1e-3
    assert abs(spec.to_rad(ours) - rad) <= 0.5 / spec.ticks_per_rad + 1e-12


def test_out_of_range_and_non_finite_commands_name_the_joint():
    spec = load_servo_table().by_joint("coxa_joint_RM")
    for bad in (1.01, -1.2, float("nan"), float("inf"), "abc", None):
        with pytest.raises(JointLimitError) as ei:
            spec.to_ticks(bad)
        assert "coxa_joint_RM" in str(ei.value)
    with pytest.raises(JointLimitError, match=r"allowed -1.0000..1.0000"):
        spec.to_ticks(1.5)


def test_servo_range_intersects_with_offset():
    # |direction*(offset+q)| <= 120 deg -> q <= 120 deg - offset
    spec = ServoSpec("j", 3, -1, 500, 0.6, -3.0, 3.0)
    assert spec.upper == pytest.approx(math.radians(120) - 0.6)
    assert spec.lower == pytest.approx(-math.radians(120) - 0.6)
    with pytest.raises(JointLimitError):
        spec.to_ticks(spec.upper + 1e-6)


def test_extra_limits_only_narrow():
    table = load_servo_table(limits={"tibia_joint_LF": (-0.5, 2.5), "not_a_joint": (0, 1)})
    assert (table.by_joint("tibia_joint_LF").lower, table.by_joint("tibia_joint_LF").upper) == (-0.5, 1.6)


@pytest.mark.parametrize("text,match", [
    ("servos: 3", "servos"),
    ("servos:\n  - {joint: a, id: 1}\n", "missing direction"),
    ("servos:\n  - {joint: a, id: 1, direction: 2}\n", "direction"),
    ("servos:\n  - {joint: a, id: 300, direction: 1}\n", "servo id"),
    ("servos:\n  - {joint: a, id: 1, direction: 1}\n  - {joint: b, id: 1, direction: 1}\n", "duplicate servo IDs"),
    ("servos:\n  - {joint: a, id: 1, direction: 1, lower: 1, upper: 0}\n", "limits"),
])
def test_malformed_yaml_errors_name_the_entry(tmp_path, text, match):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(ParameterError, match=match):
        load_servo_table(str(p), urdf=False)


def test_unknown_joint_and_id_lookups():
    table = load_servo_table(urdf=False)
    with pytest.raises(ParameterError, match="unknown joint"):
        table.by_joint("coxa_joint_XX")
    with pytest.raises(ParameterError, match="servo_id"):
        table.by_id(40)
