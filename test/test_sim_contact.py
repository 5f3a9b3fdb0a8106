"""Contact law of Table III: spring-damper normal force that never pulls, viscous or Coulomb friction."""
import numpy as np
import pytest

from jethexa_dynamics.sim.contact import ContactModel


def test_paper_defaults_and_formulas():
    c = ContactModel()
    assert (c.k_z, c.d_z, c.d_t, c.friction) == (10000.0, 150.0, 50.0, "viscous")
    pos = np.array([[0.0, 0.0, 0.01], [0.0, 0.0, -0.002], [0.0, 0.0, -0.001], [0.0, 0.0, -0.001]])
    vel = np.array([[0.1, 0.0, -1.0], [0.2, -0.1, -0.01], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    f, d = c.forces(pos, vel)
    assert f[0] == pytest.approx([0, 0, 0]) and d[0] == 0.0               # in the air
    assert f[1] == pytest.approx([-50 * 0.2, 50 * 0.1, 10000 * 0.002 + 150 * 0.01])
    assert f[2, 2] == 0.0                                                 # separating fast: no pull
    assert f[3, 2] == pytest.approx(10.0) and d[3] == pytest.approx(0.001)


def test_ground_height_and_missing_feet():
    c = ContactModel(ground_z=0.05)
    f, d = c.forces([[0, 0, 0.049], [0, 0, 0.049]], np.zeros((2, 3)), has_tip=[1, 0])
    assert f[0, 2] == pytest.approx(10.0) and d[0] == pytest.approx(0.001)
    assert not f[1].any() and d[1] == 0.0


def test_coulomb_option_caps_friction():
    c = ContactModel(friction="coulomb", mu=0.5)
    pos = np.array([[0, 0, -0.001]] * 2)
    vel = np.array([[0.01, 0.0, 0.0], [1.0, 1.0, 0.0]])
    f, _ = c.forces(pos, vel)
    assert f[0, 0] == pytest.approx(-50 * 0.01)                            # slow: viscous (sticks)
    assert np.hypot(f[1, 0], f[1, 1]) == pytest.approx(0.5 * f[1, 2])     # fast: slides at mu f_z
    assert f[1, 0] == pytest.approx(f[1, 1]) and f[1, 0] < 0


def test_bad_parameters():
    with pytest.raises(ValueError, match=r"k_z=-1.0 outside the allowed range \[1, 1e\+07\] N/m"):
        ContactModel(k_z=-1)
    with pytest.raises(ValueError, match="friction must be one of"):
        ContactModel(friction="sticky")
    with pytest.raises(ValueError, match="finite"):
        ContactModel().forces([[0, 0, np.nan]], [[0, 0, 0]])
