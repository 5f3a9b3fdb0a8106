"""SE(2) integration of the slipping model: exponential, sequential and parallel prefix (tree) products.

Oracles: the closed-form constant-twist arc (I-T1), scipy's matrix exponential, a plain product of 3x3
homogeneous matrices (I-T2), and the slipping model's pose invariance (I-T3).
"""
from functools import reduce

import numpy as np
import pytest
from scipy.linalg import expm

from jethexa_dynamics.second_opinions import se2
from jethexa_dynamics.second_opinions.multipod import undulation
from jethexa_dynamics.second_opinions.slip_model import SlipModel


def test_constant_twist_reaches_the_closed_form_arc():
    inc = se2.se2_exp(np.tile([0.1, 0.0, 0.5], (100, 1)), 0.01)
    for poses in (se2.integrate_sequential(inc), se2.integrate_prefix(inc)):
        np.testing.assert_allclose(poses[-1], [0.2 * np.sin(0.5), 0.2 * (1 - np.cos(0.5)), 0.5], atol=1e-15)
        np.testing.assert_allclose(poses[-1], [0.0958851, 0.0244835, 0.5], atol=1e-7)


def test_exponential_matches_matrix_exponential():
    rng = np.random.default_rng(0)
    tw = np.vstack([rng.normal(size=(20, 3)), [[0.3, -0.2, 0.0], [0.3, -0.2, 1e-9]]])
    dt = rng.uniform(0.001, 0.5, len(tw))
    g = se2.to_matrix(se2.se2_exp(tw, dt))
    for k in range(len(tw)):
        xi = np.array([[0, -tw[k, 2], tw[k, 0]], [tw[k, 2], 0, tw[k, 1]], [0, 0, 0]]) * dt[k]
        np.testing.assert_allclose(g[k], expm(xi), atol=1e-14)


@pytest.mark.parametrize("T", [1, 2, 3, 7, 8, 9, 100, 1023, 1024, 1025])
def test_prefix_tree_product_equals_sequential(T):
    rng = np.random.default_rng(T)
    inc = np.column_stack([rng.normal(size=(T, 2)) * 0.1, rng.uniform(-np.pi, np.pi, T)])
    start = np.array([1.0, -2.0, 0.3])
    a = se2.integrate_sequential(inc, start)
    b = se2.integrate_prefix(inc, start)
    np.testing.assert_allclose(b, a, atol=1e-12)
    np.testing.assert_allclose(se2.to_matrix(a[-1]), reduce(np.matmul, se2.to_matrix(np.vstack([start, inc]))),
                               atol=1e-12)


def test_compose_inverse_roundtrip():
    rng = np.random.default_rng(4)
    g = np.column_stack([rng.normal(size=(10, 2)), rng.uniform(-3, 3, 10)])
    np.testing.assert_allclose(se2.compose(g, se2.inverse(g)), 0, atol=1e-14)


def test_frame_twists_do_not_depend_on_pose_or_order():
    """I-T3: shuffling the frames shuffles the twists and nothing else (no hidden state)."""
    feet, vel = undulation(8, np.arange(0, 3, 0.02))
    model = SlipModel(8, 1000.0, 1.0, weight=8.0)
    perm = np.random.default_rng(5).permutation(len(feet))
    a = model.evaluate(feet, vel).twist
    b = model.evaluate(feet[perm], vel[perm]).twist
    np.testing.assert_allclose(b, a[perm], atol=1e-15)
    tr_p = model.trajectory(feet, vel, 0.02, method="prefix")
    tr_s = model.trajectory(feet, vel, 0.02, method="sequential")
    np.testing.assert_allclose(tr_p.poses, tr_s.poses, atol=1e-12)


def test_bad_input():
    with pytest.raises(ValueError, match="twist"):
        se2.se2_exp(np.zeros((3, 2)), 0.1)
    with pytest.raises(ValueError, match="increments"):
        se2.integrate_prefix(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="start"):
        se2.integrate_sequential(np.zeros((3, 3)), start=[0, 0])
    with pytest.raises(ValueError, match="dt"):
        se2.se2_exp(np.zeros((3, 3)), np.nan)
    with pytest.raises(ValueError, match="method"):
        SlipModel(2).trajectory(np.zeros((2, 2, 3)) - 0.1, np.zeros((2, 2, 3)), 0.1, method="rk4")
