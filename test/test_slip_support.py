"""Stage A of the slipping model (paper 001): spring support and contact search.

Oracles: the checked values of the extraction (shared/reference/seed_revzen_quadruped.md §3.2, A-T1..A-T6),
force/moment balance, the lever rule and barycentric coordinates, and an independent direct minimisation of
the convex support energy.
"""
import numpy as np
import pytest
from scipy.spatial import Delaunay

from jethexa_dynamics.second_opinions.spring_support import (SupportStatus, minimize_support_energy,
                                                    solve_support, support_energy)

# rectangular hexapod of the extraction: FL, ML, HL, FR, MR, HR
XY = np.array([(0.3, 0.2), (0.0, 0.2), (-0.3, 0.2), (0.3, -0.2), (0.0, -0.2), (-0.3, -0.2)])
# JetHexa default stance (A-T6), LF, LM, LR, RR, RM, RF
JETHEXA_XY = np.array([(0.1636, 0.150805), (0, 0.193535), (-0.1636, 0.150805), (-0.1636, -0.150805),
                       (0, -0.193535), (0.1636, -0.150805)])


def feet(z, xy=XY):
    return np.column_stack([xy, np.broadcast_to(z, (len(xy),))])


def balance(res, q, weight):
    """(F_z - Mg, sum y F, sum x F) recomputed from the loads: all zero at equilibrium."""
    F = res.loads
    return np.array([F.sum() - weight, (q[:, 1] * F).sum(), (q[:, 0] * F).sum()])


def test_level_hexapod_equal_loads_one_iteration():
    r = solve_support(feet(-0.1), 100.0, 1.0)
    np.testing.assert_allclose(r.loads, np.full(6, 1 / 6), atol=1e-12)
    np.testing.assert_allclose(r.state, [0, 0, 0.1 - 1 / 600], atol=1e-12)
    assert r.iterations == 1 and r.status == SupportStatus.OK


def test_unequal_stiffness_tilts_but_keeps_equal_loads():
    K = np.array([100, 100, 100, 200, 200, 200.0])
    r = solve_support(feet(-0.1), K, 1.0)
    np.testing.assert_allclose(r.loads, np.full(6, 1 / 6), atol=1e-12)
    assert r.roll < 0          # the stiffer right side sinks less: left side (+y) goes down -> roll < 0


def test_tripod_loads_state_and_heights():
    z = np.array([-0.11, -0.1, -0.11, -0.1, -0.11, -0.1])
    r = solve_support(feet(z), 100.0, 1.0)
    np.testing.assert_allclose(r.loads, [0.25, 0, 0.25, 0, 0.5, 0], atol=1e-12)
    np.testing.assert_allclose(r.state, [0, 0.00625, 0.10625], atol=1e-12)
    np.testing.assert_allclose(r.heights[[1, 3]], [0.0075, 0.005], atol=1e-12)
    np.testing.assert_array_equal(r.contact, [1, 0, 1, 0, 1, 0])
    # three contacts: loads are K-independent (barycentric coordinates of the COM)
    r2 = solve_support(feet(z), np.array([5, 10, 30, 10, 20, 10]) * 1e3, 1.0)
    np.testing.assert_allclose(r2.loads, r.loads, atol=1e-12)


def test_pitch_sign_front_legs_longer_lift_the_nose():
    xy = np.array([(0.2, 0.1), (0.2, -0.1), (-0.2, 0.1), (-0.2, -0.1)])
    delta = 0.01
    r = solve_support(feet(np.array([-0.1 - delta, -0.1 - delta, -0.1, -0.1]), xy), 1000.0, 1.0)
    np.testing.assert_allclose(r.pitch, -delta / (2 * 0.2), atol=1e-12)   # nose up = negative pitch
    np.testing.assert_allclose(r.loads, 0.25, atol=1e-12)


def test_degenerate_diagonal_support_does_not_crash():
    """A-T3: FL lowered 5 cm; the body tilts onto the FL-HR diagonal, which passes through the COM."""
    z = np.full(6, -0.1)
    z[0] = -0.15
    r = solve_support(feet(z), 100.0, 1.0)
    np.testing.assert_allclose(r.loads, [0.5, 0, 0, 0, 0, 0.5], atol=1e-12)
    assert r.status == SupportStatus.DEGENERATE
    np.testing.assert_allclose(balance(r, feet(z), 1.0), 0, atol=1e-12)
    assert np.all(r.heights[~r.contact] >= -1e-12) and np.all(r.heights[r.contact] <= 1e-12)


def test_jethexa_default_stance():
    z = np.array([-0.07, -0.055, -0.07, -0.055, -0.07, -0.055])     # tripod LF, LR, RM down
    for K in (1e3, np.array([1, 2, 3, 4, 5, 6]) * 1e3):
        r = solve_support(feet(z, JETHEXA_XY), K, 1.0)
        np.testing.assert_allclose(r.loads, [0.281023, 0, 0.281023, 0, 0.437954, 0], atol=5e-7)
    np.testing.assert_allclose(solve_support(feet(-0.07, JETHEXA_XY), 1e3, 1.0).loads, 1 / 6, atol=1e-12)
    # with the 2.59 kg estimate: 7.140 N, 11.127 N
    r = solve_support(feet(z, JETHEXA_XY), 1e4, 2.59 * 9.81)
    np.testing.assert_allclose(r.loads[[0, 4]], [7.140, 11.127], atol=1e-3)


def test_two_feet_lever_rule_and_one_foot_cases():
    q = np.array([[0.1, 0.0, -0.1], [-0.3, 0.0, -0.1]])
    r = solve_support(q, 100.0, 1.0)
    np.testing.assert_allclose(r.loads, [0.75, 0.25], atol=1e-12)
    assert r.status == SupportStatus.DEGENERATE
    one = solve_support(np.array([[0.0, 0.0, -0.1]]), 100.0, 2.0)
    assert one.status == SupportStatus.DEGENERATE and one.loads[0] == pytest.approx(2.0)
    off = solve_support(np.array([[0.05, 0.02, -0.1]]), 100.0, 1.0)
    assert off.status == SupportStatus.TIPPED and np.all(np.isfinite(off.state))


def test_collinear_three_feet_through_com():
    q = np.array([[0.2, 0.1, -0.1], [0.0, 0.0, -0.1], [-0.2, -0.1, -0.1]])
    r = solve_support(q, 50.0, 1.0)
    assert r.status == SupportStatus.DEGENERATE
    np.testing.assert_allclose(balance(r, q, 1.0), 0, atol=1e-12)


@pytest.mark.parametrize("q", [
    np.array([[0.1, 0.1, -0.1], [0.2, 0.1, -0.1], [0.2, 0.3, -0.1]]),      # COM outside the triangle
    np.array([[0.1, 0.0, -0.1], [0.3, 0.0, -0.1]]),                       # on the line, beyond both feet
    np.column_stack([XY[:3], np.full(3, -0.1)]),                          # all feet on the left side
])
def test_tip_over_is_reported_not_raised(q):
    r = solve_support(q, 100.0, 1.0)
    assert r.status == SupportStatus.TIPPED and r.tipped
    assert np.all(np.isfinite(r.loads)) and np.all(r.loads >= 0)


def _random_feasible(rng, n):
    while True:
        r, th = rng.uniform(0.1, 0.4, n), rng.uniform(0, 2 * np.pi, n)
        q = np.column_stack([r * np.cos(th), r * np.sin(th), -0.1 + 0.01 * rng.standard_normal(n)])
        if Delaunay(q[:, :2]).find_simplex(np.zeros(2)) >= 0:
            return q, rng.uniform(20, 200, n)


def test_random_configurations_balance_and_match_energy_minimum():
    """A-T5: COM inside the hull, N = 3..12: balanced to 1e-8, bounded iterations, same loads as a direct
    BFGS minimisation of the support energy (unique loads: the energy is convex)."""
    rng = np.random.default_rng(7)
    batch_q, batch_K = [], []
    for n in list(range(3, 13)) * 12:
        q, K = _random_feasible(rng, n)
        r = solve_support(q, K, 1.0)
        assert r.status in (SupportStatus.OK, SupportStatus.DEGENERATE)
        assert np.abs(balance(r, q, 1.0)).max() < 1e-8
        assert np.abs(r.residual).max() < 1e-8 and r.iterations <= 4 * n + 10
        ref = minimize_support_energy(q, K, 1.0)
        h = -ref.x[0] * q[:, 0] + ref.x[1] * q[:, 1] + q[:, 2] + ref.x[2]
        np.testing.assert_allclose(r.loads, K * np.maximum(-h, 0), atol=1e-6)
        if n == 6:
            batch_q.append(q)
            batch_K.append(K)
    # the batched path gives the per-frame answers
    rb = solve_support(np.array(batch_q), np.array(batch_K), 1.0)
    for t, (q, K) in enumerate(zip(batch_q, batch_K)):
        np.testing.assert_allclose(rb.loads[t], solve_support(q, K, 1.0).loads, atol=1e-12)


def test_energy_gradient_matches_finite_differences():
    q, K = _random_feasible(np.random.default_rng(3), 7)
    s = np.array([0.01, -0.02, 0.09])
    _, g = support_energy(s, q, K, 1.0)
    fd = [(support_energy(s + e, q, K, 1.0)[0] - support_energy(s - e, q, K, 1.0)[0]) / 2e-7
          for e in np.eye(3) * 1e-7]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-9)


def test_fallback_when_the_search_is_capped():
    z = np.array([-0.11, -0.1, -0.11, -0.1, -0.11, -0.1])
    r = solve_support(feet(z), 100.0, 1.0, max_iter=0)
    assert r.status == SupportStatus.FALLBACK
    np.testing.assert_allclose(r.loads, [0.25, 0, 0.25, 0, 0.5, 0], atol=1e-6)


@pytest.mark.parametrize("kwargs, field", [
    (dict(feet=np.zeros((0, 3))), "feet"),
    (dict(feet=np.array([[0.1, np.nan, -0.1]])), "feet"),
    (dict(feet=np.zeros((3, 2))), "feet"),
    (dict(feet=feet(-0.1), stiffness=np.ones(5)), "stiffness"),
    (dict(feet=feet(-0.1), stiffness=-1.0), "stiffness"),
    (dict(feet=feet(-0.1), weight=0.0), "weight"),
])
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        solve_support(**kwargs)
