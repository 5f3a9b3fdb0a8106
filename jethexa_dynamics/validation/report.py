"""Validation report: JSON document, terminal table, per-sample CSV."""
from __future__ import annotations

import datetime
import json
import math
import platform
from pathlib import Path

import numpy as np

from jethexa_dynamics.predictors.error_metric import orientation_errors, quat_to_rpy

from .metrics import AXES

REPORT_FORMAT = "jethexa-validate/1"


def build_report(bag, results, evaluations, options) -> dict:
    """Assemble the JSON-serialisable report.

    ``bag``: :class:`~.bag_io.BagData`; ``results``: list of :class:`~.replay.ReplayResult`;
    ``evaluations``: matching list of :func:`~.metrics.evaluate` dicts; ``options``: what the user chose.
    """
    return {
        "format": REPORT_FORMAT,
        "created": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": "{} {} ({}), Python {}".format(platform.system(), platform.release(), platform.machine(),
                                                  platform.python_version()),
        "bag": {
            "path": str(bag.path),
            "storage": bag.storage,
            "metadata_version": bag.metadata_version,
            "duration_s": bag.duration,
            "window_s": list(bag.window),
            "topics": bag.topics,
            "messages_replayed": bag.n_messages,
            "layout": bag.layout,
            "unavailable": list(bag.unavailable),
        },
        "options": options,
        "notes": list(bag.notes),
        "results": [
            dict({"predictor": r.predictor,
                  "reanchor_horizon_s": r.horizon,
                  "replay": {"messages": r.n_messages, "wall_time_s": r.wall_time, "bag_time_s": r.duration,
                             "real_time_factor": r.real_time_factor, "messages_per_s": r.messages_per_s},
                  "anchors_s": [float(a) for a in r.anchors],
                  "notes": list(r.notes)}, **ev)
            for r, ev in zip(results, evaluations)
        ],
    }


def _clean(o):
    """NaN/inf -> None so that the JSON is strict."""
    if isinstance(o, dict):
        return {k: _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    if isinstance(o, (float, np.floating)):
        return float(o) if math.isfinite(o) else None
    if isinstance(o, np.integer):
        return int(o)
    return o


def write_json(report, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_clean(report), indent=2) + "\n", encoding="utf8")
    return path


def write_csv(result, path) -> Path:
    """Per-sample time series of one replay: orientation at IMU times, position at ground-truth times."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rp, rm = np.degrees(quat_to_rpy(result.q_pred)), np.degrees(quat_to_rpy(result.q_meas))
    err = np.degrees(orientation_errors(result.q_pred, result.q_meas))
    lines = ["kind,t_s," + ",".join("pred_{0}_deg,meas_{0}_deg,err_{0}_deg".format(a) for a in AXES)
             + ",pred_x_m,pred_y_m,pred_z_m,meas_x_m,meas_y_m,meas_z_m"]
    for k in range(len(result.t_orient)):
        vals = [v for i in range(3) for v in (rp[k, i], rm[k, i], err[k, i])]
        pp = result.p_pred_orient[k]
        lines.append("orientation,{:.6f},".format(result.t_orient[k]) + ",".join("{:.6f}".format(v) for v in vals)
                     + ",{:.6f},{:.6f},{:.6f},,,".format(*pp))
    if result.t_pos is not None:
        for k in range(len(result.t_pos)):
            lines.append("position,{:.6f},".format(result.t_pos[k]) + "," * 9
                         + ",".join("{:.6f}".format(v) for v in (*result.p_pred[k], *result.p_meas[k])))
    path.write_text("\n".join(lines) + "\n", encoding="utf8")
    return path


def _fmt(v, spec="{:.2f}"):
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else spec.format(v)


def morphology_text(links) -> str:
    """A morphology as the demo and the nodes print it (``healthy``, ``LM:1 RR:1``: the damaged legs by name,
    URDF leg order); ``unknown`` for None; a link list of another length (another robot) as plain numbers."""
    from jethexa_dynamics.model import format_morphology, jethexa

    if links is None:
        return "unknown"
    links = [int(x) for x in links]
    legs = jethexa().leg_names
    if len(links) != len(legs):
        return " ".join(map(str, links))
    return format_morphology(links, legs)



def format_table(report) -> str:
    """Readable terminal table (one row per segment and predictor, then overall)."""
    b = report["bag"]
    out = ["bag {}  ({}, metadata v{})  window {:.2f}-{:.2f} s of {:.2f} s".format(
        b["path"], b["storage"], b["metadata_version"], b["window_s"][0], b["window_s"][1], b["duration_s"])]
    for r in report["results"]:
        rp = r["replay"]
        out.append("predictor {:<14} horizon {:.2f} s   replay {:.2f} s wall for {:.2f} s of bag: real-time factor "
                   "{}x, {} msg/s".format(r["predictor"], r["reanchor_horizon_s"], rp["wall_time_s"],
                                          rp["bag_time_s"], _fmt(rp["real_time_factor"], "{:.1f}"),
                                          _fmt(rp["messages_per_s"], "{:.0f}")))
    head = ["segment", "time [s]", "morphology", "predictor", "roll rmse/max", "pitch rmse/max", "yaw rmse/max",
            "pos rmse/max [m]", "drift [m/m]", "walked [m]"]
    rows = []

    def row(label, part, name):
        o = part["orientation"]
        p = part["position"]
        rows.append([label, "{:.2f}-{:.2f}".format(part["t_start"], part["t_end"]),
                     morphology_text(part.get("morphology")) if label != "overall" else "",
                     name] + ["{} / {}".format(_fmt(o[a]["rmse_deg"]), _fmt(o[a]["max_deg"])) for a in AXES]
                    + (["{} / {}".format(_fmt(p["rmse_m"], "{:.3f}"), _fmt(p["max_m"], "{:.3f}")),
                        _fmt(p["drift_per_metre"], "{:.3f}"), _fmt(p["distance_walked_m"], "{:.2f}")]
                       if p else ["-", "-", "-"]))

    nseg = len(report["results"][0]["segments"]) if report["results"] else 0
    for i in range(nseg):
        for r in report["results"]:
            row(str(i), r["segments"][i], r["predictor"])
    for r in report["results"]:
        row("overall", r["overall"], r["predictor"])
    widths = [max(len(h), *(len(x[i]) for x in rows)) if rows else len(h) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    out += ["", "orientation errors in deg (predicted - measured IMU); position vs ground truth", line(head),
            line(["-" * w for w in widths])] + [line(x) for x in rows]
    notes = list(report.get("notes", [])) + [n for r in report["results"] for n in r.get("notes", [])]
    out += ["note: " + n for n in notes]
    return "\n".join(out)
