"""The figures of ``bench_nano_budget.py`` from what a run recorded: CPU per stage and calls per second from the
nodes' /diagnostics, the prediction error against the truth, the walking speed, false alarms, and the robot's
totals (its process(es), its nodes, the emulated MPU6050's part, the native threads' credit).

Imported by ``bench_nano_budget.py`` (which puts the checkout on ``sys.path``)."""
import math

from jethexa_dynamics.nodes.graph_spec import ROBOT_NODES

MOTION = "emulator/imu_motion"
REGISTERS = "emulated MPU6050"          # inside the imu node's ``sample`` stage (not added to the node's sum)
IMU_EMULATED_STAGES = (MOTION, REGISTERS)


def false_alarms(rec, t0: float, t1: float):
    """What slowed or stopped the healthy robot between t0 and t1 (monotonic s) short of a morphology change, from
    the gait controller's diagnostics: a joint called seized, motion unexplained, a morphology held for want of
    evidence (each once, sorted)."""
    out = set()
    with rec.lock:
        rows = [v for t, v in rec.diag.get("gait_controller", []) if t0 <= t < t1]
    for v in rows:
        if v.get("seized"):
            out.add("seized " + v["seized"])
        if v.get("motion_unexplained") in ("True", "true"):
            out.add("unexplained")
        if v.get("morphology_held", "no") != "no":
            out.add("held " + v["morphology_held"])
    return sorted(out)


def _per_second(a, b, prefix):
    """Per second, the growth of every ``<prefix><stage>`` counter between two (arrival, values) statuses of one
    node, by stage."""
    if not a or not b or b[0] <= a[0]:
        return {}
    dt = b[0] - a[0]
    return {k[len(prefix):]: (float(v) - float(a[1].get(k, 0.0))) / dt for k, v in b[1].items() if k.startswith(prefix)}


def stage_rates(a, b):
    """CPU-s/s of every ``cpu_s <stage>`` between two (arrival, values) statuses of one node."""
    return _per_second(a, b, "cpu_s ")


def call_rates(a, b):
    """Calls per second of every stage (``calls <stage>``) between two (arrival, values) statuses of one node."""
    return _per_second(a, b, "calls ")


def counter_rate(a, b, key):
    """Per-second increase of the integer /diagnostics value ``key`` between two statuses (NaN if missing)."""
    try:
        return (float(b[1][key]) - float(a[1][key])) / (b[0] - a[0])
    except (TypeError, KeyError, ValueError, ZeroDivisionError):
        return float("nan")


def prediction_error(pred, truth, t_from, t_to):
    """Predicted minus true pose for the predicted poses received in [t_from, t_to): the truth (mocap/pose, 50 Hz)
    interpolated at each predicted stamp (positions linearly, quaternions normalised-linearly), the difference as
    ``predictors.error_metric`` defines it. {n, roll_pitch_deg (mean |roll| and |pitch|), yaw_deg (mean |yaw|),
    pos_mm (mean 3-D distance), pos_p95_mm}; n = 0 when nothing matched."""
    import numpy as np

    from jethexa_dynamics.predictors.error_metric import orientation_errors

    p = np.array([r for r in pred if t_from <= r[0] < t_to]).reshape(-1, 9)
    m = np.array(truth).reshape(-1, 9)
    nan = {"n": 0, "roll_pitch_deg": float("nan"), "yaw_deg": float("nan"), "pos_mm": float("nan"),
           "pos_p95_mm": float("nan")}
    if len(p) == 0 or len(m) < 2:
        return nan
    m = m[np.argsort(m[:, 1])]
    ts = m[:, 1]
    i = np.searchsorted(ts, p[:, 1])
    ok = (i > 0) & (i < len(ts))
    i = np.clip(i, 1, len(ts) - 1)
    t0, t1 = ts[i - 1], ts[i]
    ok &= (t1 - t0) < 0.1            # a gap in the truth: not compared
    if not ok.any():
        return nan
    p, i, t0, t1 = p[ok], i[ok], t0[ok], t1[ok]
    w = ((p[:, 1] - t0) / np.maximum(t1 - t0, 1e-9))[:, None]
    a, b = m[i - 1], m[i]
    pos = a[:, 2:5] + w * (b[:, 2:5] - a[:, 2:5])
    qb = b[:, 5:9] * np.sign(np.sum(a[:, 5:9] * b[:, 5:9], axis=1))[:, None]
    q = a[:, 5:9] + w * (qb - a[:, 5:9])
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    e_rpy = np.degrees(np.abs(orientation_errors(p[:, 5:9], q)))
    e_pos = 1e3 * np.linalg.norm(p[:, 2:5] - pos, axis=1)
    return {"n": int(len(p)), "roll_pitch_deg": float(e_rpy[:, :2].mean()), "yaw_deg": float(e_rpy[:, 2].mean()),
            "pos_mm": float(e_pos.mean()), "pos_p95_mm": float(np.percentile(e_pos, 95))}


def walk_speed(truth, t_from, t_to):
    """Mean horizontal speed of the body [m/s] from the truth received in [t_from, t_to)."""
    rows = [r for r in truth if t_from <= r[0] < t_to]
    if len(rows) < 2:
        return float("nan")
    a, b = rows[0], rows[-1]
    return math.hypot(b[2] - a[2], b[3] - a[3]) / max(b[1] - a[1], 1e-9)


def robot_total(res, key, field=None):
    """Sum over the robot's process(es) of ``res[key][process]`` (or of its ``[field]``)."""
    return sum(res[key][p] if field is None else res[key][p][field] for p in res["robot_procs"])


def robot_cpu(res):
    return robot_total(res, "cpu")


def node_stages(res, node):
    """CPU-s/s of ``node`` by its own accounting: the sum of its ``cpu_s`` stages (callbacks, worker threads; the
    register model is inside the imu's ``sample`` stage, so it is not added again)."""
    return sum(v for k, v in res["stages"].get(node, {}).items() if k != REGISTERS)


def rest_split(res):
    """(CPU-s/s of the robot's process(es) outside every node's stages: executor, rclpy, interpreter, DDS = process
    total minus the stages; of which the DDS/rmw threads, from /proc per-thread stats)."""
    return robot_cpu(res) - sum(node_stages(res, n) for n in ROBOT_NODES), robot_total(res, "threads", "native")


def delivery_in(res, ab):
    """CPU-s/s of the delivery of emulator/imu_motion in a run: the A/B's figure (>= 0) scaled by the motion
    messages the imu node handled per second in the run against the A/B (a throttled node takes fewer); None
    without the A/B."""
    if not ab:
        return None
    ref = ab["topic"]["calls"].get(MOTION, 0.0)
    got = res.get("calls", {}).get("imu", {}).get(MOTION, ref)
    return max(0.0, ab["delivery"]) * (got / ref if ref > 0 else 1.0)


def imu_split(res, ab):
    """(imu CPU-s/s, emulated part, the imu's robot part) of a run. imu = its process (separate) or its stages
    (in a process of several nodes: the delivery of its topic is then in the process's rest); emulated = the
    motion callback + the register model (measured in the run) + the delivery of emulator/imu_motion
    (``delivery_in``: from the A/B ``ab``); robot part = imu minus the emulated part it contains."""
    st = res["stages"].get("imu", {})
    inside = st.get(MOTION, 0.0) + st.get(REGISTERS, 0.0)
    delivery = delivery_in(res, ab) or 0.0
    if "imu" in res["cpu"]:
        total = res["cpu"]["imu"]
        return total, inside + delivery, total - inside - delivery
    total = node_stages(res, "imu")
    return total, inside + delivery, total - inside


def native_credit(res):
    """{robot process: CPU-s/s of its native threads and of its compiled stepping kernel} in an unconstrained run:
    DDS/rmw threads and numba's ``nogil`` kernel hold no interpreter lock, so on the Nano they run on other cores
    than the process's Python (the per-process runs add it)."""
    return {n: res["threads"][n]["native"] + res.get("kernel", {}).get(n, 0.0) for n in res["robot_procs"]}
