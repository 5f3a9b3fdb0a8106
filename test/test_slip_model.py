"""The slipping model end to end for any number of legs: JetHexa-sized hexapod, multipods with 6-12 legs,
a quadruped, disks with 3-50 legs, and removed legs.

Oracles: per-frame vertical and planar balance laws recomputed from the outputs, kinematic reversibility
(the connection is linear in the foot velocities), mirror symmetry, and the reduced-list equivalence of a
removed leg.
"""
import numpy as np
import pytest

from jethexa_dynamics.second_opinions.multipod import disk, undulation
from jethexa_dynamics.second_opinions.slip_model import SlipModel
from jethexa_dynamics.second_opinions.spring_support import SupportStatus

S = np.array([[0.0, -1.0], [1.0, 0.0]])


def check_balance(frames, feet, weight):
    ok = ~frames.tipped
    F = frames.loads[ok]
    q = feet[ok]
    np.testing.assert_allclose(F.sum(1), weight, rtol=1e-9)
    np.testing.assert_allclose((F * q[..., 0]).sum(1), 0, atol=1e-9 * weight)
    np.testing.assert_allclose((F * q[..., 1]).sum(1), 0, atol=1e-9 * weight)
    f = frames.forces[ok]
    scale = 1e-12 + np.abs(f).max()
    np.testing.assert_allclose(f.sum(1), 0, atol=1e-10 * scale)
    np.testing.assert_allclose(np.einsum("tni,ij,tnj->t", q[..., :2], S, f), 0, atol=1e-10 * scale)
    assert np.all(frames.loads[~frames.contact] == 0)


@pytest.mark.parametrize("n_legs", [4, 6, 8, 10, 12])
def test_multipods_and_quadruped_walk_and_balance(n_legs):
    t = np.arange(0, 2 / 0.3, 0.01)                 # two gait cycles
    feet, vel = undulation(n_legs, t)
    model = SlipModel(n_legs, stiffness=1000.0, mu=1.0, weight=n_legs)   # paper: Mg = N, K = 1 (per mm)
    tr = model.trajectory(feet, vel, 0.01)
    fr = tr.frames
    assert np.all(fr.status != SupportStatus.TIPPED)
    assert fr.contact.sum(1).min() < n_legs        # legs really lift off: the contact set changes
    check_balance(fr, feet, n_legs)
    assert tr.poses[-1, 0] > 0.05                   # the stance side sweeps back: net forward motion
    # kinematic reversibility: playing the foot motion backwards reverses the body twist
    back = model.evaluate(feet, -vel)
    np.testing.assert_allclose(back.twist, -fr.twist, atol=1e-12)
    # mirror symmetry about the body x axis
    M = np.diag([1.0, -1.0, 1.0])
    mir = model.trajectory(feet @ M, vel @ M, 0.01)
    np.testing.assert_allclose(mir.poses * [1, -1, -1], tr.poses, atol=1e-9)


def test_hexapod_tripod_gait_moves_with_the_feet():
    """JetHexa-sized tripod: the stance tripod sweeps back at 5 cm/s without slipping -> body at 5 cm/s."""
    xy = np.array([(0.16, 0.15), (0, 0.19), (-0.16, 0.15), (-0.16, -0.15), (0, -0.19), (0.16, -0.15)])
    tripod = np.array([1, 0, 1, 0, 1, 0], bool)
    z = np.where(tripod, -0.07, -0.055)
    vel = np.zeros((6, 3))
    vel[tripod, 0] = -0.05
    vel[~tripod, 0] = 0.1                          # swing feet move forward in the air: no effect
    fr = SlipModel(6, 3000.0, 1.0, weight=25.0).evaluate(np.column_stack([xy, z]), vel)
    np.testing.assert_array_equal(fr.contact[0], tripod)
    np.testing.assert_allclose(fr.velocity[0], [0.05, 0.0], atol=1e-14)
    np.testing.assert_allclose(fr.forces, 0, atol=1e-14)


def test_disks_with_3_to_50_legs():
    rng = np.random.default_rng(11)
    for n in (3, 5, 12, 25, 50):
        feet, vel = disk(n, 50, rng)
        fr = SlipModel(n, stiffness=1000.0, weight=n).evaluate(feet, vel)
        assert np.all(fr.status == SupportStatus.OK)
        check_balance(fr, feet, n)


def test_removed_leg_simply_leaves_the_list():
    feet, vel = undulation(8, np.arange(0, 3, 0.05))
    K = np.linspace(800, 1200, 8)
    mu = np.linspace(0.5, 1.5, 8)
    w = np.random.default_rng(2).normal(size=(8, 2))
    present = np.ones(8, bool)
    present[3] = False
    full = SlipModel(8, K, mu, w, weight=8.0)
    a = full.evaluate(feet, vel, present=present)
    b = SlipModel(7, K[present], mu[present], w[present], weight=8.0).evaluate(feet[:, present], vel[:, present])
    np.testing.assert_allclose(a.twist, b.twist, atol=1e-15)
    np.testing.assert_allclose(a.loads[:, present], b.loads, atol=1e-15)
    assert np.all(a.loads[:, 3] == 0) and not a.contact[:, 3].any() and np.all(a.forces[:, 3] == 0)
    np.testing.assert_allclose(a.pitch, b.pitch, atol=1e-15)


def test_single_leg_and_tip_over_frames_do_not_crash():
    feet = np.array([[[0.05, 0.05, -0.1]], [[0.0, 0.0, -0.1]]])
    fr = SlipModel(1, 100.0).evaluate(feet, np.ones((2, 1, 3)) * 0.1)
    np.testing.assert_array_equal(fr.status, [SupportStatus.TIPPED, SupportStatus.DEGENERATE])
    assert fr.single_contact.all() and np.all(np.isfinite(fr.twist))


@pytest.mark.parametrize("call, field", [
    (lambda: SlipModel(0), "n_legs"),
    (lambda: SlipModel(3, stiffness=[1, 2]), "stiffness"),
    (lambda: SlipModel(3, mu=-1), "mu"),
    (lambda: SlipModel(3, weight=-2), "weight"),
    (lambda: SlipModel(3).evaluate(np.zeros((4, 3)), np.zeros((4, 3))), "feet"),
    (lambda: SlipModel(3).evaluate(np.zeros((3, 3)), np.zeros((2, 3))), "feet_velocity"),
    (lambda: SlipModel(3).evaluate(np.zeros((3, 3)), np.zeros((3, 3)), present=[1, 0]), "present"),
    (lambda: SlipModel(3).evaluate(np.zeros((3, 3)), np.zeros((3, 3)), present=[0, 0, 0]), "present"),
    (lambda: undulation(5, [0.0]), "n_legs"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ValueError, match=field):
        call()
