"""Closed-form leg IK/FK: FK against Pinocchio (independent oracle), IK<->FK round trips, errors."""
import os

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from jethexa_dynamics.control.ik import LegGeometry
from jethexa_dynamics.model.urdf import parse_urdf

URDF = os.path.join(os.path.dirname(__file__), "..", "urdf", "jethexa.urdf")
LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]


@pytest.fixture(scope="module")
def geo():
    triples = [["%s_joint_%s" % (k, leg) for k in ("coxa", "femur", "tibia")] for leg in LEGS]
    return LegGeometry.from_urdf(parse_urdf(URDF), LEGS, triples)


@pytest.fixture(scope="module")
def pin_model():
    model = pin.buildModelFromUrdf(URDF)   # fixed base at base_link
    return model, model.createData()


def test_geometry_matches_documented_jethexa(geo):
    assert geo.geom[:, 4:7] == pytest.approx(np.tile([0.04505032, 0.07703, 0.123], (6, 1)))
    assert geo.geom[:, 7] == pytest.approx(np.deg2rad(85.0))
    assert np.rad2deg(geo.geom[:, 3]) == pytest.approx([45, 90, 135, -45, -90, -135])


def test_fk_matches_pinocchio(geo, pin_model):
    model, data = pin_model
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = model.lowerPositionLimit + rng.random(model.nq) * (model.upperPositionLimit - model.lowerPositionLimit)
        pin.framesForwardKinematics(model, data, q)
        for i, leg in enumerate(LEGS):
            th = np.array([q[model.joints[model.getJointId("%s_joint_%s" % (k, leg))].idx_q]
                           for k in ("coxa", "femur", "tibia")])
            foot = data.oMf[model.getFrameId("foot_" + leg)].translation
            assert geo.fk(leg, th) == pytest.approx(foot, abs=1e-12)


def _knee_up_angles(geo, i, u):
    """Joint angles inside the limits on the IK's knee-up branch (tibia below the femur line)."""
    lo, hi = geo.limits[i, :, 0], geo.limits[i, :, 1].copy()
    hi[2] = min(hi[2], geo.geom[i, 7] - 1e-3)   # phi = t3 - bend < 0
    return lo + np.asarray(u) * (hi - lo)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 5), st.lists(st.floats(0.01, 0.99), min_size=3, max_size=3))
def test_ik_inverts_fk(geo, i, u):
    leg = LEGS[i]
    th = _knee_up_angles(geo, i, u)
    g = geo.geom[i]
    # the closed form assumes the foot lies outward of the coxa axis (r > 0 in the leg plane)
    assume(g[4] + g[5] * np.cos(th[1]) + g[6] * np.cos(th[1] + th[2] - g[7]) > 1e-3)
    foot = geo.fk(leg, th)
    th2 = geo.ik(leg, foot)
    assert th2 == pytest.approx(th, abs=1e-9)
    assert geo.fk(leg, th2) == pytest.approx(foot, abs=1e-12)


def test_fk_of_ik_over_workspace_grid(geo):
    # feet on a grid around the neutral stance (0.09-0.15 m out, 0.05-0.13 m down, +-0.04 m along the body)
    n_ok = 0
    for i, leg in enumerate(LEGS):
        g = geo.geom[i]
        radial = np.array([np.cos(g[3]), np.sin(g[3]), 0.0])
        for r in np.linspace(0.09, 0.15, 5):
            for h in np.linspace(0.05, 0.13, 5):
                for s in np.linspace(-0.04, 0.04, 5):
                    p = g[:3] + r * radial + s * np.array([1.0, 0.0, 0.0]) - [0, 0, h]
                    th = geo.ik(leg, p)
                    assert geo.fk(leg, th) == pytest.approx(p, abs=1e-12)
                    n_ok += 1
    assert n_ok == 6 * 125


def test_unreachable_targets_raise_clear_errors(geo):
    g = geo.geom[0]
    radial = np.array([np.cos(g[3]), np.sin(g[3]), 0.0])
    with pytest.raises(ValueError, match=r"leg LF cannot reach .*allowed range \[0\.04.*, 0\.2000\] m"):
        geo.ik("LF", g[:3] + 0.30 * radial)
    with pytest.raises(ValueError, match="LF cannot reach"):
        geo.ik("LF", g[:3] + [0, 0, -0.01])          # on the coxa axis
    with pytest.raises(ValueError, match=r"coxa joint would leave its limits \[-1\.000, 1\.000\]"):
        geo.ik("LF", g[:3] - 0.12 * radial - [0, 0, 0.1])   # behind the hip
    with pytest.raises(ValueError, match="finite"):
        geo.ik("LF", [np.nan, 0, 0])
    with pytest.raises(ValueError, match="leg must be one of"):
        geo.ik("XX", [0.2, 0.2, -0.1])


@pytest.mark.parametrize("old,new", [
    ('<origin xyz="0.093205 0.05098 0" rpy="0 0 0.785398163"/>\n    <axis xyz="0 0 1"/>',   # coxa about x
     '<origin xyz="0.093205 0.05098 0" rpy="0 0 0.785398163"/>\n    <axis xyz="1 0 0"/>'),
    ('<origin xyz="0.04505032 0 0" rpy="0 0 0"/>\n    <axis xyz="0 -1 0"/>',               # femur about +y
     '<origin xyz="0.04505032 0 0" rpy="0 0 0"/>\n    <axis xyz="0 1 0"/>'),
    ('<origin xyz="0.04505032 0 0" rpy="0 0 0"/>', '<origin xyz="0.04505032 0 0.01" rpy="0 0 0"/>'),  # offset
    ('<origin xyz="0.04505032 0 0" rpy="0 0 0"/>', '<origin xyz="0.04505032 0 0" rpy="0.1 0 0"/>'),   # femur roll
    ('<origin xyz="0.07703 0 0" rpy="0 1.48352986 0"/>', '<origin xyz="0.07703 0 0" rpy="0 1.48352986 0.2"/>'),
    ('<origin xyz="0.123 0 0" rpy="0 0 0"/>', '<origin xyz="0.123 0.01 0" rpy="0 0 0"/>'),            # foot off-axis
])
def test_leg_layout_outside_the_closed_form_is_refused(old, new):
    """Each assumption of the closed form (URDF layout documented in docs/development.md) is checked: changing one of
    them on the first leg (LF) is refused with the leg named; the bundled URDF is accepted (fixture ``geo``)."""
    from jethexa_dynamics.model.urdf import parse_urdf_string
    with open(URDF) as f:
        text = f.read()
    assert old in text
    triples = [["%s_joint_%s" % (k, leg) for k in ("coxa", "femur", "tibia")] for leg in LEGS]
    with pytest.raises(ValueError, match="leg LF: the closed-form IK needs"):
        LegGeometry.from_urdf(parse_urdf_string(text.replace(old, new, 1)), LEGS, triples)
