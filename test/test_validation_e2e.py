"""End to end: a bag recorded from the emulated robot (``jethexa-demo --record``: healthy walk, then a damage
mid-run) validates; the report's numbers are recomputed here from the same data with independent code
(rosbags' reader, transforms3d angles, a plain replay loop); a deliberately wrong model (body mass doubled)
scores measurably worse on the same bag."""
import csv
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore
from transforms3d.euler import quat2euler

from jethexa_dynamics.predictors import registry
from jethexa_dynamics.validation import cli, simbag

pytestmark = [pytest.mark.slow, pytest.mark.ros,
              pytest.mark.xdist_group("validation_e2e")]   # one worker records the demo bag once for all

PRED = "boltzmann_hamel"
LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
DURATION, DAMAGE_AT = 12.0, 6.0
SCENARIO1 = (3, 0, 3, 3, 0, 3)   # legs RM, LM removed


@pytest.fixture(scope="module")
def demo_bag(tmp_path_factory):
    """Record the demo graph (emulated robot, real nodes over loopback DDS) to an MCAP bag."""
    bag = tmp_path_factory.mktemp("demo") / "walk"
    exe = Path(sys.executable).parent / "jethexa-demo"
    env = dict(os.environ, ROS_LOCALHOST_ONLY="1",        # the domain: this test process's own (conftest)
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", MPLBACKEND="Agg")
    # the demo's own live predictor is irrelevant to the bag; the cheap one leaves the CPU to the world
    # one retry: on a loaded 2-core box the live graph occasionally misdetects a damage (servo reads time out);
    # that is the demo's business, not the validation's, so a second recording is taken before failing
    for attempt in range(2):
        shutil.rmtree(bag, ignore_errors=True)
        r = subprocess.run([str(exe), "--record", str(bag), "--duration", str(DURATION), "--damage-at",
                            str(DAMAGE_AT), "--damage", "scenario1", "--predictor", "slip"], capture_output=True,
                           text=True, timeout=900, env=env)
        morph = [c[1] for c in morph_changes(read_bag_independently(bag)["morph"])] if r.returncode == 0 else []
        if morph == [(3,) * 6, (3, 3, 3, 3, 0, 3), SCENARIO1] or morph == [(3,) * 6, SCENARIO1]:
            break
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert morph[0] == (3,) * 6 and morph[-1] == SCENARIO1, (morph, r.stdout[-3000:])
    return bag


def read_bag_independently(bag):
    """Everything the oracle needs, straight from rosbags (no code of ours)."""
    out = {"imu": [], "gt": [], "morph": [], "cmd": [], "js": []}
    with AnyReader([Path(bag)], default_typestore=get_typestore(Stores.ROS2_HUMBLE)) as r:
        t0 = r.start_time
        conns = [c for c in r.connections if c.topic in ("/imu/data", "/mocap/pose", "/morphology",
                                                         "/joint_commands", "/joint_states")]
        for c, t, raw in r.messages(connections=conns):
            m = r.deserialize(raw, c.msgtype)
            s = (t - t0) * 1e-9
            if c.topic == "/imu/data":
                o, w, a = m.orientation, m.angular_velocity, m.linear_acceleration
                out["imu"].append((s, o.w, o.x, o.y, o.z, w.x, w.y, w.z, a.x, a.y, a.z))
            elif c.topic == "/mocap/pose":
                p, o = m.pose.position, m.pose.orientation
                out["gt"].append((s, p.x, p.y, p.z, o.w, o.x, o.y, o.z))
            elif c.topic == "/morphology":
                out["morph"].append((s, tuple(int(v) for v in m.data)))
            elif c.topic == "/joint_commands":
                pt = m.points[0]
                out["cmd"].append((s, list(m.joint_names), list(pt.positions),
                                   pt.time_from_start.sec + 1e-9 * pt.time_from_start.nanosec))
            else:
                out["js"].append((s, list(m.name), list(m.position)))
    out["imu"], out["gt"] = np.array(out["imu"]), np.array(out["gt"])
    return out


def read_csv(path):
    rows = list(csv.DictReader(open(path)))
    o = [r for r in rows if r["kind"] == "orientation"]
    p = [r for r in rows if r["kind"] == "position"]
    t_o = np.array([float(r["t_s"]) for r in o])
    rpy_pred = np.radians([[float(r["pred_%s_deg" % a]) for a in ("roll", "pitch", "yaw")] for r in o])
    t_p = np.array([float(r["t_s"]) for r in p])
    p_pred = np.array([[float(r["pred_%s_m" % a]) for a in "xyz"] for r in p])
    return t_o, rpy_pred, t_p, p_pred


def wrap(a):
    return np.arctan2(np.sin(a), np.cos(a))


def morph_changes(morph):
    """(time, links) of each change, first message included."""
    out = []
    for t, links in morph:
        if not out or out[-1][1] != links:
            out.append((t, links))
    return out


@pytest.fixture(scope="module")
def validated(demo_bag, tmp_path_factory):
    out = tmp_path_factory.mktemp("val")
    assert cli.main([str(demo_bag), "--predictor", PRED, "--out", str(out), "--quiet"]) == 0
    return json.loads((out / "report.json").read_text()), out


def test_demo_bag_validates_and_numbers_match_an_independent_recomputation(demo_bag, validated):
    rep, out = validated
    data = read_bag_independently(demo_bag)
    res = rep["results"][0]
    assert res["predictor"] == PRED and rep["bag"]["metadata_version"] == 8 and rep["bag"]["storage"] == "mcap"

    # healthy first, then the damage the demo injected (scenario1 = RM, LM removed) shows up as segments
    changes = morph_changes(data["morph"])
    assert changes[0][1] == (3,) * 6 and changes[-1][1] == (3, 0, 3, 3, 0, 3)
    assert [tuple(s["morphology"]) for s in res["segments"]] == [c[1] for c in changes]
    assert res["segments"][1]["t_start"] == pytest.approx(changes[1][0], abs=1e-6)
    # the bag starts when the emulator (its own process) starts recording, before the robot's nodes run: the
    # demo's clock starts about when the gait's first command is in the bag
    demo_t0 = data["cmd"][0][0]
    assert DAMAGE_AT < changes[1][0] - demo_t0 < DAMAGE_AT + 3.0, (changes[1][0], demo_t0)

    t_o, rpy_pred, t_p, p_pred = read_csv(out / ("timeseries_%s.csv" % PRED))
    imu = data["imu"]
    np.testing.assert_allclose(t_o, imu[:, 0], atol=2e-6)
    rpy_meas = np.array([quat2euler(q / np.linalg.norm(q), "sxyz") for q in imu[:, 1:5]])
    err = np.degrees(wrap(rpy_pred - rpy_meas))
    gt = data["gt"]
    np.testing.assert_allclose(t_p, gt[:, 0], atol=2e-6)
    d = np.linalg.norm(p_pred - gt[:, 1:4], axis=1)
    anchors = np.array(res["anchors_s"])
    assert len(anchors) >= 3

    bounds = [0.0] + [c[0] for c in changes[1:]] + [rep["bag"]["window_s"][1]]
    parts = [(res["overall"], 0.0, bounds[-1], True)] + [
        (res["segments"][i], bounds[i], bounds[i + 1], i == len(changes) - 1) for i in range(len(changes))]
    # segment membership from the bag's exact stamps (the CSV rounds times to the microsecond, which can move
    # a sample that coincides with a morphology change across the boundary)
    t_o, t_p = imu[:, 0], gt[:, 0]
    for part, a, b, last in parts:
        m = (t_o >= a) & ((t_o <= b) if last else (t_o < b))
        assert part["orientation_samples"] == m.sum()
        for i, ax in enumerate(("roll", "pitch", "yaw")):
            assert part["orientation"][ax]["rmse_deg"] == pytest.approx(np.sqrt(np.mean(err[m, i] ** 2)), abs=2e-5)
            assert part["orientation"][ax]["max_deg"] == pytest.approx(np.abs(err[m, i]).max(), abs=2e-5)
        mp = (t_p >= a) & ((t_p <= b) if last else (t_p < b))
        pos = part["position"]
        assert pos["samples"] == mp.sum()
        assert pos["rmse_m"] == pytest.approx(np.sqrt(np.mean(d[mp] ** 2)), abs=2e-6)
        assert pos["max_m"] == pytest.approx(d[mp].max(), abs=2e-6)
        assert pos["final_m"] == pytest.approx(d[mp][-1], abs=2e-6)
        e_axes = np.sqrt(np.mean((p_pred[mp] - gt[mp, 1:4]) ** 2, axis=0))
        np.testing.assert_allclose(pos["rmse_xyz_m"], e_axes, atol=2e-6)
        np.testing.assert_allclose(pos["mean_xyz_m"], np.mean(p_pred[mp] - gt[mp, 1:4], axis=0), atol=2e-6)
        # drift per metre walked: error growth inside each re-anchoring interval / horizontal distance walked
        edges = np.concatenate([[a], anchors[(anchors > a) & (anchors < b)], [b]])
        grow = walked = 0.0
        e_xy = p_pred[:, :2] - gt[:, 1:3]
        for lo, hi in zip(edges[:-1], edges[1:]):
            k = np.flatnonzero((t_p >= lo) & ((t_p <= hi) if (last and hi == b) else (t_p < hi)))
            if k.size >= 2:
                grow += np.linalg.norm(e_xy[k[-1]] - e_xy[k[0]])
                walked += np.linalg.norm(np.diff(gt[k, 1:3], axis=0), axis=1).sum()
        assert pos["distance_walked_m"] == pytest.approx(walked, abs=1e-5)
        if walked >= 0.01:
            assert pos["drift_per_metre"] == pytest.approx(grow / walked, rel=1e-3, abs=1e-5)
    assert res["overall"]["position"]["distance_walked_m"] > 0.2          # the robot did walk
    assert res["replay"]["real_time_factor"] > 1.0                           # faster than real time


def test_predictions_match_a_plain_replay_loop(demo_bag, validated):
    """The CSV's predictions are what the predictor gives when fed the bag by a loop written here."""
    rep, out = validated
    data = read_bag_independently(demo_bag)
    t_o, rpy_pred, _, _ = read_csv(out / ("timeseries_%s.csv" % PRED))
    names = None
    events = []
    for t, n, q, tfs in data["cmd"]:
        events.append((t, 1, "cmd", (n, q, t + tfs)))
    for t, n, q in data["js"]:
        events.append((t, 2, "js", (n, q)))
    for t, links in data["morph"]:
        events.append((t, 0, "morph", links))
    for row in data["imu"]:
        events.append((row[0], 3, "imu", row[1:]))
    for row in data["gt"]:
        events.append((row[0], 4, "gt", row[1:]))
    events.sort(key=lambda e: (e[0], e[1]))
    names = list(dict.fromkeys(n for _, _, kind, v in events if kind == "cmd" for n in v[0]))
    pr = registry.make_predictor(PRED)
    pr.reset(0.0, names)
    qc = np.full(len(names), np.nan)
    qj = np.full(len(names), np.nan)
    last_gt = None
    got = []
    for t, _, kind, v in events:
        if kind == "cmd":
            for n, x in zip(v[0], v[1]):
                qc[names.index(n)] = x
            pr.on_command(t, qc.copy(), v[2])
        elif kind == "js":
            for n, x in zip(v[0], v[1]):
                if n in names:
                    qj[names.index(n)] = x
            pr.on_joints(t, qj.copy())
        elif kind == "morph":
            pr.on_morphology(t, np.array(v))
        elif kind == "imu":
            _, q = pr.pose(t)
            got.append(quat2euler(q, "sxyz"))
            pr.on_imu(t, v[:4] / np.linalg.norm(v[:4]), v[4:7], v[7:10])
        else:
            pr.pose(t)
            last_gt = v
            pr.on_ground_truth(t, v[:3], v[3:7] / np.linalg.norm(v[3:7]))
    assert last_gt is not None
    np.testing.assert_allclose(np.degrees(wrap(np.array(got) - rpy_pred)), 0.0, atol=1e-4)


@pytest.fixture(scope="module")
def heavy_urdf(tmp_path_factory):
    """The JetHexa URDF with the body (base_link) mass doubled: a deliberately wrong model."""
    tree = ET.parse(registry._robot(None).urdf_path)
    mass = tree.getroot().find("./link[@name='base_link']/inertial/mass")
    mass.set("value", str(2.0 * float(mass.get("value"))))
    path = tmp_path_factory.mktemp("model") / "jethexa_heavy.urdf"
    tree.write(path)
    return path


def _run(bag, out, *extra):
    assert cli.main([str(bag), "--predictor", PRED, "--out", str(out), "--quiet", *extra]) == 0
    return json.loads((out / "report.json").read_text())


def test_wrong_model_scores_worse_on_the_emulator_bag(demo_bag, validated, heavy_urdf, tmp_path):
    """On the emulated robot's bag the input path (gait -> servo driver -> emulated bus) dominates x/y, attitude
    and gait-bounce errors, but the doubled body mass makes the model sag: on the same bag its mean height error
    goes down by most of a millimetre (about 0.8-0.9 mm over repeated recordings). The difference is compared,
    not the two biases' sizes: the right model's own height bias moves with the recording (+0.4 mm on a bag
    recorded on a loaded machine, where the sag then left the wrong model at -0.37 mm, the smaller bias)."""
    rep, _ = validated
    bad_rep = _run(demo_bag, tmp_path / "wrong", "--model", str(heavy_urdf))
    assert bad_rep["options"]["model"] == str(heavy_urdf)
    good, bad = rep["results"][0]["overall"], bad_rep["results"][0]["overall"]
    z_good, z_bad = good["position"]["mean_xyz_m"][2], bad["position"]["mean_xyz_m"][2]
    assert z_bad < z_good - 0.0004, (z_good, z_bad)


def test_wrong_model_scores_worse_on_a_simulated_robot_bag(tmp_path, heavy_urdf):
    """With the robot's exact inputs (bag recorded from the simulation engine itself) the right model is near
    exact and the wrong one is worse by a wide margin on every main metric, in both segments."""
    bag = simbag.write_sim_bag(tmp_path / "sim", duration=8.0, damage_at=4.0)["path"]
    good = _run(bag, tmp_path / "right")["results"][0]
    bad = _run(bag, tmp_path / "wrong", "--model", str(heavy_urdf))["results"][0]
    for g, b in [(good["overall"], bad["overall"])] + list(zip(good["segments"], bad["segments"])):
        for ax in ("roll", "pitch"):
            assert b["orientation"][ax]["rmse_deg"] > 2.0 * g["orientation"][ax]["rmse_deg"], (ax, g, b)
        assert b["position"]["rmse_m"] > 2.0 * g["position"]["rmse_m"]
    assert bad["overall"]["position"]["drift_per_metre"] > 2.0 * good["overall"]["position"]["drift_per_metre"]
