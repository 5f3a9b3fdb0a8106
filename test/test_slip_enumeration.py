"""The compiled slipping model (Stage A + B per frame) against a brute-force oracle, over random frames.

Oracle, independent of the path search and of the Schur-complement solve:
- Stage A: the balanced state is the minimum of the convex support energy, i.e. the contact set S whose
  3x3 balance solve (sum_{j in S} K_j h_j a_j = Mg e_z) has every foot of S below the ground and every other
  foot above it (KKT). All 2^N - 1 contact sets are enumerated; the COM outside the convex hull of the feet
  (no balanced state) must be reported TIPPED. A single foot exactly under the COM carries Mg.
- Stage B: weighted least squares on stacked Cholesky-weighted rows (numpy lstsq) and the friction law at that
  twist for the forces; a single contact does not slip (v = -qdot of that foot, omega = 0).
Each frame is evaluated one at a time (the predictor's call) and all frames at once: same answers. Removed
legs (``present``) read 0 / not in contact and leave the others as if the leg had never been in the list.
"""
import itertools

import numpy as np
from scipy.spatial import Delaunay

from jethexa_dynamics.second_opinions.slip_model import SlipModel
from jethexa_dynamics.second_opinions.spring_support import SupportStatus

S90 = np.array([[0.0, -1.0], [1.0, 0.0]])


def enumerate_support(q, K, weight):
    """(state, loads) of the contact set satisfying the KKT conditions, or None (no rank-3 set does)."""
    a = np.column_stack([-q[:, 0], q[:, 1], np.ones(len(q))])
    found = []
    for n in range(3, len(q) + 1):
        for S in itertools.combinations(range(len(q)), n):
            S = list(S)
            H = (K[S, None, None] * a[S, :, None] * a[S, None, :]).sum(0)
            if np.linalg.matrix_rank(H) < 3:
                continue
            # sum_S K_j (a_j s + z_j) a_j + Mg e_z = 0  (gradient of the energy on S)
            s = np.linalg.solve(H, -(K[S, None] * q[S, 2:3] * a[S]).sum(0) - weight * np.eye(3)[2])
            h = a @ s + q[:, 2]
            inside = np.zeros(len(q), bool)
            inside[S] = True
            if np.all(h[inside] <= 1e-12) and np.all(h[~inside] >= -1e-12):
                found.append((s, K * np.maximum(-h, 0.0)))
    assert len(found) <= 1 or all(np.allclose(f[1], found[0][1], atol=1e-9) for f in found)
    return found[0] if found else None


def com_inside(xy):
    return len(xy) >= 3 and Delaunay(xy).find_simplex(np.zeros(2)) >= 0


def lstsq_twist(q, qd, c, w):
    rows, rhs = [], []
    for k in np.nonzero(c > 0)[0]:
        L = np.linalg.cholesky(c[k] * (np.eye(2) + np.outer(w[k], w[k]))).T
        rows.append(L @ np.column_stack([np.eye(2), S90 @ q[k]]))
        rhs.append(-L @ qd[k])
    return np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=None)[0]


def random_frames(rng, n_legs, T):
    """Feet on a ring of radius 0.1-0.3 m (some frames pushed off-centre so the COM falls outside: tip-over),
    heights -0.1 m +- 1 cm, velocities ~0.1 m/s."""
    r, th = rng.uniform(0.1, 0.3, (T, n_legs)), rng.uniform(0, 2 * np.pi, (T, n_legs))
    xy = np.stack([r * np.cos(th), r * np.sin(th)], -1)
    xy[::5] += rng.uniform(-0.4, 0.4, (len(xy[::5]), 1, 2))
    q = np.concatenate([xy, -0.1 + 0.01 * rng.standard_normal((T, n_legs, 1))], -1)
    return q, 0.1 * rng.standard_normal((T, n_legs, 3))


def check_frame(fr, t, q, qd, K, mu, w, weight, present):
    p = present
    assert np.all(fr.loads[t, ~p] == 0) and not fr.contact[t, ~p].any() and np.all(fr.forces[t, ~p] == 0)
    qp, Kp = q[p], K[p]
    if not com_inside(qp[:, :2]):
        assert fr.status[t] == SupportStatus.TIPPED
        return False
    ref = enumerate_support(qp, Kp, weight)
    assert ref is not None                  # random feet: a rank-3 contact set balances the COM
    assert fr.status[t] == SupportStatus.OK
    np.testing.assert_allclose([fr.pitch[t], fr.roll[t], fr.height[t]], ref[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fr.loads[t, p], ref[1], rtol=1e-9, atol=1e-9 * weight)
    np.testing.assert_array_equal(fr.contact[t, p], ref[1] > 0)
    twist = lstsq_twist(qp[:, :2], qd[p, :2], mu[p] * ref[1], w[p])
    np.testing.assert_allclose(fr.twist[t], twist, rtol=1e-8, atol=1e-12)
    # the friction law at the oracle's twist: f = -mu F (I + w w^T) (v + omega S q + qdot)
    slip = twist[:2] + twist[2] * qp[:, :2] @ S90.T + qd[p, :2]
    W = (mu[p] * ref[1])[:, None, None] * (np.eye(2) + w[p, :, None] * w[p, None, :])
    np.testing.assert_allclose(fr.forces[t, p], -np.einsum("nij,nj->ni", W, slip), rtol=1e-7, atol=1e-9)
    return True


def test_random_frames_match_contact_set_enumeration_one_by_one_and_batched():
    rng = np.random.default_rng(13)
    balanced = tipped = 0
    for n_legs in (3, 4, 6, 7):
        T = 40
        q, qd = random_frames(rng, n_legs, T)
        K, mu = rng.uniform(500, 2000, n_legs), rng.uniform(0.5, 2.0, n_legs)
        w, weight = rng.normal(size=(n_legs, 2)), 9.81 * rng.uniform(1, 3)
        present = np.ones(n_legs, bool)
        if n_legs > 3:
            present[rng.integers(n_legs)] = False         # a removed leg
        model = SlipModel(n_legs, K, mu, w, weight)
        batch = model.evaluate(q, qd, present=present)
        for t in range(T):
            one = model.evaluate(q[t], qd[t], present=present)
            for f in batch.__dataclass_fields__:
                np.testing.assert_array_equal(getattr(one, f)[0], getattr(batch, f)[t])
            if check_frame(batch, t, q[t], qd[t], K, mu, w, weight, present):
                balanced += 1
            else:
                tipped += 1
    assert balanced > 60 and tipped > 20     # both branches exercised


def test_single_contact_and_one_leg_edge_cases():
    # one leg under the COM: carries Mg, the foot does not slip, yaw undetermined -> 0
    m = SlipModel(1, 1000.0, weight=2.0)
    fr = m.evaluate(np.array([[0.0, 0.0, -0.1]]), np.array([[0.05, -0.02, 0.0]]))
    assert fr.status[0] == SupportStatus.DEGENERATE and fr.single_contact[0]
    np.testing.assert_allclose(fr.loads[0], [2.0], rtol=1e-12)
    np.testing.assert_allclose(fr.twist[0], [-0.05, 0.02, 0.0], atol=1e-15)
    # one leg off the COM: tip-over reported, finite outputs
    fr = m.evaluate(np.array([[0.05, 0.02, -0.1]]), np.zeros((1, 3)))
    assert fr.status[0] == SupportStatus.TIPPED and np.all(np.isfinite(fr.twist))
    # three legs, two lifted far above the others' reach: one contact carries Mg only if it is under the COM
    q = np.array([[0.0, 0.0, -0.1], [0.2, 0.1, 0.05], [-0.2, 0.1, 0.05]])
    fr = SlipModel(3, 1000.0).evaluate(q, np.zeros((3, 3)))
    np.testing.assert_allclose(fr.loads[0], [1.0, 0.0, 0.0], atol=1e-12)
    assert fr.single_contact[0] and fr.status[0] == SupportStatus.DEGENERATE
    # the other feet lowered onto the ground: the enumeration's rank-3 answer
    q[1:, 2] = -0.1
    fr = SlipModel(3, 1000.0).evaluate(q, np.zeros((3, 3)))
    ref = enumerate_support(q, np.full(3, 1000.0), 1.0)
    np.testing.assert_allclose(fr.loads[0], ref[1], atol=1e-12)
