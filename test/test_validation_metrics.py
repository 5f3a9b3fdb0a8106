"""Metrics, replay ordering, report and CLI plumbing, on synthetic bags with test predictors of known error.

The model is not involved here (see test_validation_e2e.py); predictions are made from the analytic pose
of the synthetic bag with a known perturbation, and every expected number is recomputed here.
"""
import csv
import json

import numpy as np
import pytest
from transforms3d.euler import quat2euler

from jethexa_dynamics.predictors import registry
from jethexa_dynamics.predictors.base import Predictor
from jethexa_dynamics.validation import bag_io, cli, metrics, replay, synthetic as S


class Perturbed(Predictor):
    """Truth + roll offset; position error grows at ``drift_rate`` m/s along x since the last anchor."""

    def __init__(self, roll_offset=0.0, drift_rate=0.0, horizon=1.0, name="perturbed"):
        self.roll_offset, self.drift_rate, self.horizon, self.name = roll_offset, drift_rate, horizon, name
        self._anchors = []

    def reset(self, t, joint_names):
        assert tuple(joint_names) == S.JOINT_NAMES
        self._anchors = [t]

    def pose(self, t):
        while t >= self._anchors[-1] + self.horizon:
            self._anchors.append(self._anchors[-1] + self.horizon)
        rpy = S.body_rpy(t) + [self.roll_offset, 0.0, 0.0]
        p = S.body_pos(t) + [self.drift_rate * (t - self._anchors[-1]), 0.0, 0.0]
        return p, S.rpy_to_quat(rpy)[0]

    @property
    def anchors(self):
        return list(self._anchors)


class EchoLast(Predictor):
    """Predicts the last IMU orientation it was given: zero error only if the replay leaked the measurement."""

    name, horizon = "echo", 0.0

    def reset(self, t, joint_names):
        self.q = np.array([1.0, 0, 0, 0])
        self.seen = []

    def on_imu(self, t, quat, gyro, accel):
        self.q = quat
        self.seen.append(t)

    def on_command(self, t, q, t_target):
        assert not self.seen or t >= self.seen[-1] - 1e-12      # inputs arrive in time order
        assert t_target >= t

    def pose(self, t):
        return np.zeros(3), self.q


@pytest.fixture(scope="module")
def walk_bag(tmp_path_factory):
    return S.write_synthetic_bag(tmp_path_factory.mktemp("walk") / "walk", duration=8.0, damage_at=5.0)


def test_rpy_matches_transforms3d():
    rng = np.random.default_rng(1)
    q = rng.normal(size=(200, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    ours = metrics.quat_to_rpy(q)
    ref = np.array([quat2euler(x, "sxyz") for x in q])      # static xyz = R = Rz(yaw) Ry(pitch) Rx(roll)
    np.testing.assert_allclose(ours, ref, atol=1e-9)
    np.testing.assert_allclose(metrics.quat_to_rpy(S.rpy_to_quat(ref)), ref, atol=1e-9)


def test_wrapped_errors_across_pi():
    a = S.rpy_to_quat([[0, 0, np.radians(179.0)]])
    b = S.rpy_to_quat([[0, 0, np.radians(-179.0)]])
    np.testing.assert_allclose(np.degrees(metrics.orientation_errors(a, b)), [[0, 0, -2.0]], atol=1e-9)


def test_segments_split_on_changes_only():
    segs = metrics.segments((1.0, 10.0), [0.0, 2.0, 4.0, 6.0], [S.INTACT, S.INTACT, S.DAMAGE_1, S.DAMAGE_1])
    assert [(s.t_start, s.t_end, tuple(s.links)) for s in segs] == [(1.0, 4.0, S.INTACT), (4.0, 10.0, S.DAMAGE_1)]
    assert [(s.t_start, s.t_end, s.links) for s in metrics.segments((0.0, 3.0))] == [(0.0, 3.0, None)]
    segs = metrics.segments((0.0, 3.0), [0.5], [S.DAMAGE_1])   # first message after the window start
    assert (segs[0].t_start, segs[0].t_end) == (0.0, 3.0)


def test_replay_never_shows_the_measurement_before_the_prediction(walk_bag):
    bag = bag_io.read_bag(walk_bag)
    res = replay.replay(bag, EchoLast())
    err = np.degrees(metrics.orientation_errors(res.q_pred, res.q_meas))
    # the prediction at sample k is the measurement k-1: error = truth(t_k) - truth(t_k-1), recomputed here
    rpy = np.array([quat2euler(q, "sxyz") for q in bag.imu.quat])
    np.testing.assert_allclose(err[1:], np.degrees(rpy[:-1] - rpy[1:]), atol=1e-9)
    assert np.abs(err[1:]).max() > 0.01


def test_metrics_of_a_known_error(walk_bag):
    bag = bag_io.read_bag(walk_bag)
    pr = Perturbed(roll_offset=np.radians(2.0), drift_rate=0.01, horizon=1.0)
    res = replay.replay(bag, pr)
    segs = metrics.segments(bag.window, bag.morphology.t, bag.morphology.links)
    ev = metrics.evaluate(res, segs)
    o = ev["overall"]
    assert o["orientation"]["roll"]["rmse_deg"] == pytest.approx(2.0, abs=1e-9)
    assert o["orientation"]["roll"]["max_deg"] == pytest.approx(2.0, abs=1e-9)
    assert o["orientation"]["pitch"]["max_deg"] < 1e-9 and o["orientation"]["yaw"]["rmse_deg"] < 1e-9
    assert o["horizon_s"] == 1.0 and o["max_time_since_anchor_s"] == pytest.approx(0.99, abs=1e-9)
    # independent recomputation from the bag's ground truth
    t = bag.ground_truth.t
    since = t - np.floor(t + 1e-9)
    e = 0.01 * since
    assert o["position"]["rmse_m"] == pytest.approx(np.sqrt(np.mean(e ** 2)), rel=1e-9)
    assert o["position"]["max_m"] == pytest.approx(e.max(), rel=1e-9)
    gt = bag.ground_truth.pos
    walked, grown = 0.0, 0.0
    for k in range(8):
        m = (t >= k) & (t < k + 1) if k < 7 else (t >= k) & (t <= 8.0)
        seg = gt[m]
        walked += np.hypot(np.diff(seg[:, 0]), np.diff(seg[:, 1])).sum()
        grown += abs(e[m][-1] - e[m][0])
    assert o["position"]["distance_walked_m"] == pytest.approx(walked, rel=1e-9)
    assert o["position"]["drift_per_metre"] == pytest.approx(grown / walked, rel=1e-9)
    # segments split at the damage (t = 5 s)
    assert [s["morphology"] for s in ev["segments"]] == [list(S.INTACT), list(S.DAMAGE_1)]
    assert ev["segments"][0]["t_end"] == pytest.approx(5.0)
    n0 = int(np.sum(bag.imu.t < 5.0))
    assert ev["segments"][0]["orientation_samples"] == n0
    assert ev["segments"][1]["orientation_samples"] == len(bag.imu) - n0


def test_worse_predictor_scores_worse(walk_bag):
    bag = bag_io.read_bag(walk_bag)
    segs = metrics.segments(bag.window, bag.morphology.t, bag.morphology.links)
    good = metrics.evaluate(replay.replay(bag, Perturbed(np.radians(0.5), 0.002)), segs)["overall"]
    bad = metrics.evaluate(replay.replay(bag, Perturbed(np.radians(3.0), 0.02)), segs)["overall"]
    assert bad["orientation"]["roll"]["rmse_deg"] > good["orientation"]["roll"]["rmse_deg"]
    assert bad["position"]["drift_per_metre"] > good["position"]["drift_per_metre"]


# ---------------------------------------------------------------------------------------------- CLI
@pytest.fixture()
def registered():
    registry.register_predictor("t_good", lambda model=None, horizon=None: Perturbed(np.radians(0.5), 0.002,
                                                                                   horizon or 1.0, "t_good"))
    registry.register_predictor("t_bad", lambda model=None, horizon=None: Perturbed(np.radians(3.0), 0.02,
                                                                                  horizon or 1.0, "t_bad"))
    yield
    registry._FACTORIES.pop("t_good")
    registry._FACTORIES.pop("t_bad")


def test_cli_report_table_csv_plots(walk_bag, tmp_path, capsys, registered):
    out = tmp_path / "out"
    assert cli.main([str(walk_bag), "--predictor", "t_bad", "--out", str(out), "--reanchor-horizon", "2"]) == 0
    text = capsys.readouterr().out
    rep = json.loads((out / "report.json").read_text())
    r = rep["results"][0]
    assert r["predictor"] == "t_bad" and r["reanchor_horizon_s"] == 2.0
    assert r["overall"]["orientation"]["roll"]["rmse_deg"] == pytest.approx(3.0, abs=1e-6)
    assert rep["bag"]["metadata_version"] == 8 and rep["bag"]["window_s"] == [0.0, pytest.approx(8.0)]
    assert r["replay"]["real_time_factor"] > 0 and r["replay"]["messages"] == rep["bag"]["messages_replayed"]
    assert [s["morphology"] for s in r["segments"]] == [list(S.INTACT), list(S.DAMAGE_1)]
    assert "3.00 / 3.00" in text and "LM:0 RM:0" in text and "overall" in text
    for f in ("orientation.png", "position.png", "errors.png"):
        assert (out / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = list(csv.DictReader(open(out / "timeseries_t_bad.csv")))
    err_roll = np.array([float(x["err_roll_deg"]) for x in rows if x["kind"] == "orientation"])
    np.testing.assert_allclose(err_roll, 3.0, atol=1e-5)
    pos = [x for x in rows if x["kind"] == "position"]
    t = np.array([float(x["t_s"]) for x in pos])
    ex = np.array([float(x["pred_x_m"]) - float(x["meas_x_m"]) for x in pos])
    np.testing.assert_allclose(ex, 0.02 * (t - 2.0 * np.floor(t / 2.0 + 1e-9)), atol=2e-6)   # horizon 2 s
    np.testing.assert_allclose([float(x["meas_y_m"]) for x in pos], S.body_pos(t)[:, 1], atol=2e-6)


def test_cli_compare_all_one_report(walk_bag, tmp_path, capsys, registered, monkeypatch):
    monkeypatch.setattr(registry, "predictor_names", lambda: ["t_bad", "t_good"])
    out = tmp_path / "cmp"
    assert cli.main([str(walk_bag), "--compare-all", "--out", str(out), "--start", "1", "--end", "6"]) == 0
    rep = json.loads((out / "report.json").read_text())
    assert [r["predictor"] for r in rep["results"]] == ["t_bad", "t_good"]
    assert rep["bag"]["window_s"] == [1.0, 6.0]
    text = capsys.readouterr().out
    assert text.count("t_good") >= 3 and text.count("t_bad") >= 3   # header + per segment + overall


def test_joints_commanded_late_are_held_at_zero_and_noted(tmp_path):
    from jethexa_dynamics.validation import bag_messages as M

    class Recorder(Perturbed):
        def reset(self, t, joint_names):
            self._anchors, self.cmds = [t], []

        def on_command(self, t, q, t_target):
            self.cmds.append(np.array(q))

    names = list(S.JOINT_NAMES)
    with bag_io.BagWriter(tmp_path / "b") as w:
        for k in range(20):
            t = S.T0_NS + k * 10_000_000
            w.write("imu/data", t, M.imu(t, (1, 0, 0, 0)))
            sub = names[3:] if k < 10 else names        # LF commanded only from k = 10 on
            w.write("joint_commands", t, M.joint_trajectory(t, sub, np.full(len(sub), 0.5)))
    bag = bag_io.read_bag(tmp_path / "b")
    pr = Recorder()
    res = replay.replay(bag, pr)
    assert bag.commands.names[-3:] == tuple(names[:3])           # first seen last
    assert all(np.all(np.isfinite(q)) for q in pr.cmds)
    np.testing.assert_array_equal(pr.cmds[0][-3:], 0.0)
    np.testing.assert_array_equal(pr.cmds[-1], 0.5)
    assert any("coxa_joint_LF, femur_joint_LF, tibia_joint_LF" in n for n in res.notes)
