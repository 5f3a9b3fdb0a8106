"""Damage identification (issue 11): live cost, offline speed, and the 18 single-leg silent breaks.

1. Live cost at the IMU rate: the identifier (19 hypotheses, window 0.5 s, models at 2 ms) fed 60 s of
   streams of the plant walking (tripod 0.04 m/s, IMU 100 Hz, commands and joint states 50 Hz, gyro bias,
   body mass +5 %), with a silent LM:1 break at 30 s; wall time of the feeding / 60 s = share of one core.
   Beside it, in the same run: the predictor (``predictors.boltzmann_hamel.BoltzmannHamelPredictor``, the model the ``predictor`` node
   runs, one pose per IMU sample) on the same streams, the identifier without the pre-screen, and with all
   19 models every window (no pre-screen, no pruning: the worst case).
2. Offline: ``jethexa-identify`` end to end on a 60 s bag (``validation.simbag``, silent LM:1 at 30 s), and
   ``read_bag`` alone (the I/O share), real-time factor = bag seconds per wall second.
3. The 18 single-leg silent breaks (LEG:2, LEG:1, LEG:0 at t = 3 s, tripod walk, closed loop: the identified
   morphology re-phases the gait), delay and identified morphology -> the confusion table of the README.

``--probe`` instead: the 18 breaks with the active probe in the loop (``damage.active_probe``, issue 23 point 1,
its ``ProbeConfig`` defaults: every named leg probed, ``always``; the gyro's lag fitted within ``max_lag``):
plant body +10 % mass and its CoM 5 mm forward, a gyro bias on every axis, the identifier's and the probe's models
unaware; per break the leg named, the probe's probabilities, the final count and the delay break -> final, the
static margins (the model's planned and watched, the plant's own as the oracle) and the scoring's CPU; ``--seeds
N`` repeats the 18 with N noise seeds (the table shows the first) -> ``results/identify_probe.md``. ``--probe
--plant mujoco``: the same loop on MuJoCo (``sim.mjcf.MujocoServoPlant``), again with the other policy (only the
events with alternatives probed), and the probe alone on MuJoCo standing broken (the models' misfit there) ->
``identify_probe_mujoco.md``. ``--only-ambiguous`` (``always=False``) and a ``--max-lag`` other than the default
write ``..._ambiguous.md`` and ``..._lag<ms>ms.md``.

    .venv/bin/python benchmarks/bench_identify.py [--repeat 3] [--out benchmarks/results/identify.md]
    .venv/bin/python benchmarks/bench_identify.py --probe [--seeds 5] [--plant engine|mujoco] [--only-ambiguous]
        [--max-lag S] [--out ...]
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from _machine import describe
from bench_replay import _best
from jethexa_dynamics.damage.active_probe import ProbeConfig as ActiveProbeConfig
from jethexa_dynamics.damage.identification import DamageIdentifier
from jethexa_dynamics.sim.streams import Segment, WalkConfig, feed, feed_predictor, walk_streams

LEGS = ["LF", "LM", "LR", "RF", "RM", "RR"]
NANO = (4.0, 6.0)   # Jetson Nano (Cortex-A57 @ 1.43 GHz) assumed 4-6x slower per core than this machine


def live(repeat):
    cfg = WalkConfig(duration=60.0, segments=[Segment(0.0, "walk", (0.04, 0.0, 0.0))], breaks=[(30.0, "LM:1")],
                     gyro_bias=(0.0, 0.0, 0.02), mass_scale=1.05)
    streams, _ = walk_streams(cfg)
    T = cfg.duration

    def ident(screen, prune=1e-6):
        def go():
            idf = DamageIdentifier(screen=screen, prune=prune)
            feed(idf, streams)
            return idf
        return go

    def predictor():
        from jethexa_dynamics.predictors.boltzmann_hamel import BoltzmannHamelPredictor as Predictor
        pr = Predictor(reanchor_horizon=1.0)
        feed_predictor(pr, streams)
        return pr

    ident(True)()   # compile / load the caches outside the timing
    rows = []
    w_pred, _ = _best(predictor, repeat)
    rows.append(("predictor (peer: the `predictor` node's model, 1 pose per IMU sample)", w_pred, None))
    w_id, idf = _best(ident(True), repeat)
    rows.append(("identifier, 19 hypotheses, pre-screen on (default)", w_id, idf))
    w_np, idf_np = _best(ident(False), repeat)
    rows.append(("identifier, no pre-screen (bank every window, ruled-out hypotheses pruned)", w_np, idf_np))
    w_all, idf_all = _best(ident(False, prune=0.0), repeat)
    rows.append(("identifier, all 19 models every window (worst case)", w_all, idf_all))

    def body():
        from jethexa_dynamics.damage.body_load import BodyLoadEstimator
        est = BodyLoadEstimator()
        feed(est, streams)
        return est
    w_body, _ = _best(body, repeat)
    rows.append(("body mass and CoM from the servos' load (`damage.body_load`; offline: jethexa-calibrate, "
                 "jethexa-identify)", w_body, None))
    return T, rows


def offline(tmp, repeat):
    from jethexa_dynamics.damage import identify_cli
    from jethexa_dynamics.validation import bag_io
    from jethexa_dynamics.validation.simbag import write_sim_bag

    bag = tmp / "lm_break"
    t = time.perf_counter()
    write_sim_bag(bag, duration=60.0, breaks="LM:1", break_at=30.0, imu_noise_deg=0.1)
    gen = time.perf_counter() - t
    w_read, data = _best(lambda: bag_io.read_bag(bag), repeat)
    w_cli, _ = _best(lambda: identify_cli.main([str(bag), "--out", str(tmp / "o"), "--quiet"]), repeat)
    import json
    rep = json.loads((tmp / "o" / "identify.json").read_text())
    return data.window[1] - data.window[0], gen, w_read, w_cli, rep


def confusion():
    rows = []
    for leg in LEGS:
        for links in (2, 1, 0):
            idf = DamageIdentifier()
            walk_streams(WalkConfig(duration=3.0 + 3 * 1.3 + 2.0, breaks=[(3.0, "%s:%d" % (leg, links))],
                                    gyro_bias=(0.0, 0.0, 0.02), mass_scale=1.05, seed=links), identifier=idf)
            first = idf.events[0] if idf.events else None
            final = idf.morphology
            model = [e for e in idf.events if e["source"] == "model"]
            alternatives = [idf.describe(m) for m, _ in model[-1]["alternatives"]] if model else []
            rows.append((leg, links, None if first is None else first["t"] - 3.0,
                         None if first is None else idf.describe(first["morphology"]), idf.describe(final),
                         alternatives))
    return rows


#: the probe runs' plant: body mass x1.1, CoM 5 mm forward (base_link), gyro bias [rad/s] on every axis
PROBE_PLANT = dict(mass_scale=1.1, body_com_offset=(0.005, 0.0, 0.0), gyro_bias=(0.01, -0.01, 0.02))
BREAK_AT, PROBE_RUN = 3.0, 9.0      # s: the break, then walking/probing this long after it (final count read then)


def probe_break(leg, links, seed, enabled=True, plant="engine", always=True, contact=None, max_lag=None):
    """One break LEG:links at ``BREAK_AT`` with the active probe in the loop (``plant`` engine or mujoco): the
    identifier's events, the probe's results and the plant's own static margin [m] of its CoM over its other five
    feet while the probe runs."""
    from jethexa_dynamics.control.support import support_margin
    from jethexa_dynamics.damage.active_probe import ActiveProbe

    idf = DamageIdentifier()
    probe = ActiveProbe(idf, enabled=enabled, always=always, contact=contact,
                        max_lag=ActiveProbeConfig().max_lag if max_lag is None else max_lag)
    plant_margin = []
    cfg = dict(PROBE_PLANT)
    mj = None
    if plant == "mujoco":
        from jethexa_dynamics.model import LeggedRobot
        from jethexa_dynamics.sim.mjcf import MujocoServoPlant
        from jethexa_dynamics.sim.recovery import mujoco_margin
        mj = MujocoServoPlant(LeggedRobot.jethexa(), body_scale=cfg.pop("mass_scale"),
                              body_com_offset=cfg.pop("body_com_offset"), settle=0.0)

    def oracle(t, eng):
        if probe.active and probe._run["phase"] == "probe":
            if mj is not None:
                plant_margin.append(mujoco_margin(eng.mj))      # the feet on its floor: the lost one is not there
                return
            feet, _ = eng.foot_states()
            others = [k for k in range(6) if k != probe._run["leg"]]
            plant_margin.append(support_margin(feet[others, :2], eng.center_of_mass()[:2]))

    walk_streams(WalkConfig(duration=BREAK_AT + PROBE_RUN, breaks=[(BREAK_AT, "%s:%d" % (leg, links))], seed=seed,
                            **cfg), identifier=idf, probe=probe, on_tick=oracle, plant=mj)
    return idf, probe, (min(plant_margin) if plant_margin else float("nan"))


def probe_table(seeds, plant="engine", always=True, contact=None, max_lag=None):
    """The 18 breaks with the probe, ``seeds`` noise seeds each: (rows of the first seed, all runs)."""
    rows, runs = [], []
    for k in range(seeds):
        for leg in LEGS:
            for links in (2, 1, 0):
                idf, probe, plant_m = probe_break(leg, links, seed=100 * k + links, plant=plant,
                                                     always=always, contact=contact, max_lag=max_lag)
                i = LEGS.index(leg)
                final = idf.morphology
                exact = final[i] == links and all(m == 3 for j, m in enumerate(final) if j != i)
                on_leg = [e for e in idf.events if e["morphology"][i] != 3]
                model = next((e for e in idf.events if e["source"] == "model"), None)
                last = idf.events[-1]["t"] if idf.events else None
                res = probe.results[0] if probe.results else {}
                if "t_end" in res:          # a count the probe confirmed is final at its verdict, not before
                    last = max(last, res["t_end"])
                runs.append(dict(leg=leg, links=links, seed=k, exact=exact, final=idf.describe(final),
                                 named=None if model is None else idf.describe(model["morphology"]),
                                 t_named=None if model is None else model["t"] - BREAK_AT,
                                 t_final=None if last is None else last - BREAK_AT, res=res,
                                 plant_margin=plant_m, changes=len(on_leg)))
        if k == 0:
            rows = list(runs)
    return rows, runs


def _prob(p):
    """A probability near 1 as 1 - its complement (0.99998 is "1 - 2.0e-05"), else to 2 digits."""
    return "1 - %.1e" % (1.0 - p) if p > 0.99 else "%.2g" % p


def probe_lines(seeds, plant="engine", always=True, contact=None, max_lag=None):
    rows, runs = probe_table(seeds, plant, always, contact, max_lag)
    lines = ["## The 18 breaks with the active probe in the loop on the %s%s (t = %g s; plant body +10 %% mass, "
             "CoM +5 mm x, gyro bias %s rad/s; models unaware%s)" % (
                 "engine" if plant == "engine" else "MuJoCo plant (`sim/mjcf.py`)",
                 ", every named leg probed (`always`)" if always else
                 ", only the events with alternatives probed (`always=False`)", BREAK_AT, PROBE_PLANT["gyro_bias"],
                 _contact_note(contact, max_lag)), "",
             "Named = the identifier's model event (its alternatives: the counts walking could not rule out). The "
             "probe: stand %.1f s, then %.1f s of probe (`ProbeSpec` defaults), scored over the leg's counts 0, 1, 2. "
             "Delay = break -> the final count: the probe's verdict, or the last morphology event if later (read %g s "
             "after the break). Margins [m]: "
             "the model's planned minimum over the probe and the minimum it watched during it (IMU attitude), the "
             "plant's own (the oracle: its CoM over its five feet). CPU: the scoring (three models) here."
             % (ActiveProbeConfig().settle, ActiveProbeConfig().spec.duration, PROBE_RUN), "",
             "| true | named (alternatives) | p(0) / p(1) / p(2) | final | delay [s] | margin planned / watched / "
             "plant | CPU [ms] |", "|---|---|---|---|---:|---|---:|"]
    for r in rows:
        res = r["res"]
        p = res.get("probabilities")
        alt = ", ".join("%d %.2f" % (c, s) for c, s in res.get("alternatives", []))
        lines.append("| %s:%d | %s (%s) | %s | %s%s | %s | %s | %s |" % (
            r["leg"], r["links"], r["named"] or "not found", alt or "-",
            " / ".join("%.3g" % p[c] for c in sorted(p)) if p else res.get("reason", "no probe"),
            r["final"], ("" if r["exact"] else " (wrong)") + (" (no count named)" if res.get("probed") and
                                                             res.get("count") is None else ""),
            "-" if r["t_final"] is None else "%.2f" % r["t_final"],
            "%.3f / %.3f / %.3f" % (res["margin_planned"], res["margin_min"], r["plant_margin"])
            if "margin_min" in res else "-", "%.0f" % (1e3 * res["cpu_score_s"]) if "cpu_score_s" in res else "-"))
    probed = [r for r in runs if r["res"].get("probed")]
    unsure = [r for r in runs if r["res"].get("probed") and r["res"].get("count") is None]
    truth_p = [r["res"]["probabilities"][r["links"]] for r in probed]
    delays = [r["t_final"] for r in rows if r["t_final"] is not None]
    cpu = [r["res"]["cpu_score_s"] for r in probed]
    plan = [r["res"]["cpu_plan_s"] for r in probed]
    watch = [r["res"]["cpu_watch_s"] for r in probed]
    exact = sum(r["exact"] for r in rows)
    lines += ["", "- exact link count at the end, no other leg touched: %d/18; break -> final %.2f-%.2f s (median "
              "%.2f s); within 6 s: %d/18" % (exact, min(delays), max(delays), float(np.median(delays)),
                                              sum(1 for r in rows if r["exact"] and r["t_final"] <= 6.0)),
              "- verdicts below p = %.2g (no count named, every probability reported): %d/18; of them the count "
              "taken (the walk's was ruled out) is the true one in %d" % (
                  ActiveProbeConfig().decide, sum(1 for r in rows if r["res"].get("probed") and
                                                  r["res"].get("count") is None),
                  sum(1 for r in rows if r["res"].get("probed") and r["res"].get("count") is None and r["exact"])),
              "- confident and wrong (p >= %.2g on another count than the plant's): %d/18" % (
                  ActiveProbeConfig().decide, sum(1 for r in rows if r["res"].get("count") not in (None, r["links"]))),
              "- probed: %d/18 (the others: not named by the model, or%s)"
              % (sum(1 for r in rows if r["res"].get("probed")), " refused" if always else
                 " the count walking named had no alternative left"),
              "- static margin during the probe: model planned >= %.3f m, watched >= %.3f m, plant >= %.3f m"
              % (min(r["res"]["margin_planned"] for r in probed), min(r["res"]["margin_min"] for r in probed),
                 min(r["plant_margin"] for r in probed)),
              "- CPU per probe, this machine: scoring (3 models, each 2 s standing + 2 s probe at 1 ms) median %.0f ms "
              "(max %.0f), the margin plan %.0f ms, the margin watched over the probe %.0f ms; a Jetson Nano core "
              "at x5: ~%.2f s, once per probed break" % (
                  1e3 * np.median(cpu), 1e3 * max(cpu), 1e3 * np.median(plan), 1e3 * np.median(watch),
                  5 * (np.median(cpu) + np.median(plan) + np.median(watch)))]
    if len(runs) > len(rows):
        ex = sum(r["exact"] for r in runs)
        lines += ["- over %d noise seeds (%d runs): exact %d/%d; within 6 s %d/%d; no count named (p < %.2g) %d; "
                  "confident and wrong %d; the true count's probability: min %s, median %s (%d probes)" % (
                      len(runs) // 18, len(runs), ex, len(runs),
                      sum(1 for r in runs if r["exact"] and r["t_final"] <= 6.0), len(runs),
                      ActiveProbeConfig().decide, len(unsure),
                      sum(1 for r in runs if r["res"].get("count") not in (None, r["links"])),
                      _prob(min(truth_p)), _prob(float(np.median(truth_p))), len(probed))]
    return lines + [""]


def probe_mujoco_lines(seeds, contact=None, max_lag=None):
    """The probe alone on the MuJoCo plant (``sim.mjcf.MujocoServoPlant``): each leg standing broken to 0, 1, 2
    links, the same body error and gyro bias, ``seeds`` noise seeds; the engine's models score it."""
    from jethexa_dynamics.damage.active_probe import ActiveProbe, verdict
    from jethexa_dynamics.damage.probe import LinkProbe
    from jethexa_dynamics.model import LeggedRobot
    from jethexa_dynamics.sim.mjcf import MujocoServoPlant
    from jethexa_dynamics.sim.recovery import mujoco_margin

    robot = LeggedRobot.jethexa()
    stance = ActiveProbe(DamageIdentifier()).stance
    cfg = ActiveProbeConfig()
    max_lag = cfg.max_lag if max_lag is None else max_lag
    bias = np.asarray(PROBE_PLANT["gyro_bias"])
    lines = ["## The probe alone on the MuJoCo plant (`sim/mjcf.py`; plant body +10 %% mass, CoM +5 mm x, gyro "
             "bias %s rad/s; the engine's models%s)" % (PROBE_PLANT["gyro_bias"], _contact_note(contact, max_lag)), "",
             "Not the loop: MuJoCo stands broken from the start (its tree is built without the lost links; the "
             "identifier does not walk it), in the walking gait's stance, and runs the same probe; scored by the "
             "engine's models from that stance. chi^2 = the noise-free MuJoCo series against each count's "
             "prediction (bias fitted; 0 = the model is the plant); %d noise seeds: named right / ambiguous "
             "(p < %.2g, both probabilities reported) / named wrong. Margin: MuJoCo's own CoM over its feet on the "
             "floor, the minimum during the probe." % (seeds, cfg.decide), "",
             "| true | chi^2 to 0 / 1 / 2 | p(0) / p(1) / p(2), first seed | right / ambiguous / wrong | margin [m] |",
             "|---|---|---|---|---:|"]
    tally = np.zeros(3, dtype=int)
    for leg in LEGS:
        i = LEGS.index(leg)
        probe = LinkProbe(robot, leg, stance=stance, gyro_noise=cfg.gyro_noise, settle=cfg.model_settle,
                          contact=contact)
        for links in (2, 1, 0):
            lpl = [links if j == i else 3 for j in range(6)]
            margins = []

            def plant():
                return MujocoServoPlant(robot, lpl, body_scale=PROBE_PLANT["mass_scale"],
                                        body_com_offset=PROBE_PLANT["body_com_offset"], stance=stance)
            clean = probe.run(plant(), on_sample=lambda k, e: margins.append(mujoco_margin(e.mj)) if k % 10 == 0
                              else None)
            lag = int(round(max_lag / cfg.spec.imu_period))
            chi = [probe.misfit(clean, c, lag) for c in (0, 1, 2)]
            counts, first = np.zeros(3, dtype=int), None
            for k in range(seeds):
                rng = np.random.default_rng(1000 * k + 10 * i + links)
                g = clean + bias + rng.normal(0.0, cfg.gyro_noise, clean.shape)
                p = probe.likelihoods(g, max_lag=lag)
                first = first or p
                best, _ = verdict(leg, p, cfg.decide)
                counts[0 if best == links else (1 if best is None else 2)] += 1
            tally += counts
            lines.append("| %s:%d | %s | %s | %d / %d / %d | %.3f |" % (
                leg, links, " / ".join("%.0f" % x for x in chi), " / ".join("%.3g" % first[c] for c in (0, 1, 2)),
                counts[0], counts[1], counts[2], min(margins)))
    n = 18 * seeds
    lines += ["", "- named right %d/%d, ambiguous (both probabilities reported) %d/%d, named wrong %d/%d"
              % (tally[0], n, tally[1], n, tally[2], n), ""]
    return lines


def _contact_note(contact, max_lag=None):
    max_lag = ActiveProbeConfig().max_lag if max_lag is None else max_lag
    return ("" if contact is None else "; the models' contact d_t = %.1f N s/m" % contact.d_t) + (
        "; the gyro taken on the schedule (`max_lag` 0)" if not max_lag else
        "; the gyro's lag fitted within +-%g ms (`max_lag`)" % (1e3 * max_lag))


#: the leg the start-up calibration lifts (a middle leg: the largest static margin on the other five)
CALIBRATION_LEG = "LM"


def calibrate_lines(plant, seed=0, max_lag=0.0):
    """The contact calibration (``damage.contact_calibration``) on the healthy plant (the probe runs' body error,
    gyro bias and noise), each leg lifted in turn; beside each fit, whether it carries over: the noise-free
    LEG:1 break's misfit to counts 1 and 0 with the default and the fitted contact. Returns (lines, the fit of
    ``CALIBRATION_LEG``: the contact the probe runs then use)."""
    from jethexa_dynamics.damage.active_probe import ActiveProbe
    from jethexa_dynamics.damage.contact_calibration import ContactCalibration
    from jethexa_dynamics.damage.probe import LinkProbe
    from jethexa_dynamics.model import LeggedRobot
    from jethexa_dynamics.sim.streams import scaled_body_robot

    robot = LeggedRobot.jethexa()
    plant_robot = scaled_body_robot(PROBE_PLANT["mass_scale"], PROBE_PLANT["body_com_offset"])
    stance = ActiveProbe(DamageIdentifier()).stance
    cfg = ActiveProbeConfig()
    max_lag = cfg.max_lag if max_lag is None else max_lag
    bias = np.asarray(PROBE_PLANT["gyro_bias"])

    def make(links_per_leg, st, probe, links=3):
        if plant == "mujoco":
            from jethexa_dynamics.sim.mjcf import MujocoServoPlant
            return MujocoServoPlant(robot, links_per_leg, body_scale=PROBE_PLANT["mass_scale"],
                                    body_com_offset=PROBE_PLANT["body_com_offset"], stance=st)
        return probe.standing_engine(robot=plant_robot, links=links)

    lines = ["## Contact calibration on the healthy %s (`damage.contact_calibration`; plant body +10 %% mass, CoM "
             "+5 mm x, gyro bias and noise)" % ("MuJoCo plant" if plant == "mujoco" else "engine plant (d_t = 50)"),
             "", "Each leg in turn lifted (femur +%.1f rad), the probe's motion (`ProbeSpec` defaults) in the air; "
             "d_t fitted over the healthy model's gyro misfit (grid 10-200 N s/m in log, then golden section). "
             "Carry-over: the noise-free LEG:1 break standing on the same plant, its misfit to the model's count "
             "1 and count 0 (chi^2; the 1-vs-0 verdict needs the first well below the second), with the default "
             "contact (d_t = 50) and with the fitted one. CPU: the fit here." % cal_lift(), "",
             "| leg | fitted d_t [N s/m] | healthy chi^2 default / fitted | LEG:1 to 1 / to 0, default | "
             "LEG:1 to 1 / to 0, fitted | CPU [ms] |", "|---|---:|---|---|---|---:|"]
    fits, cpus = {}, []
    for i, leg in enumerate(LEGS):
        cal = ContactCalibration(robot, leg, stance=stance, gyro_noise=cfg.gyro_noise, settle=cfg.model_settle)
        rng = np.random.default_rng(1000 * seed + i)
        g = cal.run(make(None, cal.stance, cal.probe()), noise=(rng, cfg.gyro_noise)) + bias
        c0 = time.thread_time()
        lag = int(round(max_lag / cfg.spec.imu_period))
        fit = cal.fit(g, lag)
        cpus.append(time.thread_time() - c0)
        fits[leg] = fit
        chi = []
        for contact in (None, fit.contact):
            lp = LinkProbe(robot, leg, stance=stance, gyro_noise=cfg.gyro_noise, settle=cfg.model_settle,
                           contact=contact)
            clean = lp.run(make([1 if j == i else 3 for j in range(6)], stance, lp, links=1))
            chi.append((lp.misfit(clean, 1, lag), lp.misfit(clean, 0, lag)))
        lines.append("| %s | %.1f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.0f |" % (
            leg, fit.d_t, fit.chi2_base, fit.chi2, chi[0][0], chi[0][1], chi[1][0], chi[1][1], 1e3 * cpus[-1]))
    lines += ["", "- the probe runs below use %s's fit, d_t = %.1f N s/m (one calibration, e.g. at start-up)"
              % (CALIBRATION_LEG, fits[CALIBRATION_LEG].d_t),
              "- CPU of one fit (%d model runs of %.0f s standing + %.0f s probe at 1 ms): median %.0f ms here; a "
              "Jetson Nano core at x5: ~%.1f s, once" % (len(fits[CALIBRATION_LEG].grid) + 1, cfg.model_settle,
                                                        cfg.spec.duration, 1e3 * np.median(cpus),
                                                        5 * np.median(cpus)), ""]
    return lines, fits[CALIBRATION_LEG]


def cal_lift():
    from jethexa_dynamics.damage.contact_calibration import LIFT
    return LIFT


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--probe", action="store_true", help="the 18 breaks with the active probe in the loop")
    ap.add_argument("--seeds", type=int, default=1, help="--probe: noise seeds per break (>= 1)")
    ap.add_argument("--plant", choices=("engine", "mujoco"), default="engine",
                    help="--probe: the plant of the closed loop, the engine (default) or MuJoCo (then also the "
                    "probe alone on MuJoCo standing broken)")
    ap.add_argument("--calibrate", action="store_true", help="--probe: fit the models' contact on the healthy plant "
                    "first (damage.contact_calibration) and score with it -> ..._calibrated.md")
    ap.add_argument("--contact-dt", type=float, default=None, help="--probe: score with this tangential damper "
                    "[N s/m] instead (a what-if, not a calibration) -> ..._dt<value>.md")
    ap.add_argument("--max-lag", type=float, default=ActiveProbeConfig().max_lag, help="--probe: the scoring fits "
                    "the gyro's shift within +-this many s (ProbeConfig.max_lag, [0, 0.1], default %(default)g); "
                    "another value -> ..._lag<ms>ms.md")
    ap.add_argument("--only-ambiguous", action="store_true", help="--probe: probe only the model events with "
                    "alternatives (ProbeConfig.always False; default: every named leg) -> ..._ambiguous.md")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    if a.seeds < 1:
        ap.error("--seeds must be >= 1, got %d" % a.seeds)
    if a.probe:
        mj = a.plant == "mujoco"
        if a.calibrate and a.contact_dt is not None:
            ap.error("--calibrate and --contact-dt: one or the other")
        if a.contact_dt is not None and not 1.0 <= a.contact_dt <= 200.0:
            ap.error("--contact-dt must be within [1, 200] N s/m, got %g" % a.contact_dt)
        if not 0.0 <= a.max_lag <= 0.1:
            ap.error("--max-lag must be within [0, 0.1] s, got %g" % a.max_lag)
        tag = "_calibrated" if a.calibrate else ("" if a.contact_dt is None else "_dt%g" % a.contact_dt)
        tag += "_lag%gms" % (1e3 * a.max_lag) if a.max_lag != ActiveProbeConfig().max_lag else ""
        tag += "_ambiguous" if a.only_ambiguous else ""
        out = a.out or str(Path(__file__).parent / "results" / ("identify_probe%s%s.md" % ("_mujoco" if mj else "",
                                                                                           tag)))
        lines = ["# The active probe for the link count (`benchmarks/bench_identify.py --probe%s%s%s`)"
                 % (" --plant mujoco" if mj else "", " --calibrate" if a.calibrate else (
                     "" if a.contact_dt is None else " --contact-dt %g" % a.contact_dt),
                    (" --max-lag %g" % a.max_lag if a.max_lag != ActiveProbeConfig().max_lag else "") +
                    (" --only-ambiguous" if a.only_ambiguous else "")), ""]
        lines += describe(*(("transforms3d", "mujoco") if mj else ("transforms3d",))) + [
            "- load average at the start: %.1f" % os.getloadavg()[0], ""]
        contact = None
        if a.calibrate:
            cal, fit = calibrate_lines(a.plant, max_lag=a.max_lag)
            lines += cal
            contact = fit.contact
        elif a.contact_dt is not None:
            from jethexa_dynamics.sim.contact import ContactModel
            contact = ContactModel(d_t=a.contact_dt)
        always = not a.only_ambiguous
        text = "\n".join(lines + probe_lines(a.seeds, a.plant, always, contact=contact, max_lag=a.max_lag) + (
            probe_lines(a.seeds, a.plant, not always, contact=contact, max_lag=a.max_lag) +
            probe_mujoco_lines(a.seeds, contact, a.max_lag) if mj else []))
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text)
        print(text)
        return
    a.out = a.out or str(Path(__file__).parent / "results" / "identify.md")
    lines = ["# Damage identification (`benchmarks/bench_identify.py`)", ""] + describe("transforms3d")
    lines += ["- load average at the start: %.1f (2 shared cores: figures vary by ~2x)" % os.getloadavg()[0],
              "- Jetson Nano assumed %g-%gx slower per core than this machine" % NANO, ""]

    T, rows = live(a.repeat)
    lines += ["## Live cost at the IMU rate (60 s of streams, silent LM:1 at 30 s; best of %d)" % a.repeat, "",
              "| what | wall [s] for 60 s | % of one core here | % of a Nano core (x4-x6) | windows (whole bank) |",
              "|---|---:|---:|---:|---:|"]
    for name, w, idf in rows:
        pct = 100.0 * w / T
        win = "-" if idf is None else "%d (%d)" % (idf.windows, idf.bank_windows)
        lines.append("| %s | %.2f | %.1f | %.0f-%.0f | %s |" % (name, w, pct, pct * NANO[0], pct * NANO[1], win))
    idf = rows[1][2]
    bank_cost = (rows[3][1] / max(rows[3][2].windows, 1))
    lines += ["", "- whole-bank window (19 models over 0.5 s): %.0f ms here, i.e. %.0f %% of a core while it runs"
              % (1e3 * bank_cost, 100 * bank_cost / 0.5),
              "- identified: %s" % ", ".join("%.2f s %s (%s)" % (e["t"], idf.describe(e["morphology"]), e["source"])
                                             for e in idf.events), ""]

    tmp = Path(tempfile.mkdtemp(prefix="bench_identify_"))
    try:
        dur, gen, w_read, w_cli, rep = offline(tmp, a.repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines += ["## Offline: `jethexa-identify` on a 60 s bag (silent LM:1 at 30 s; best of %d)" % a.repeat, "",
              "| stage | wall [s] | real-time factor |", "|---|---:|---:|",
              "| read_bag alone (peer: the I/O share) | %.2f | %.1f |" % (w_read, dur / w_read),
              "| jethexa-identify end to end (read, identify, JSON, PNG) | %.2f | %.1f |" % (w_cli, dur / w_cli),
              "", "- bag generated in %.1f s; events: %s" % (gen, ", ".join(
                  "%.2f s %s" % (e["t_s"], e["source"]) for e in rep["events"])), ""]

    rows = confusion()
    lines += ["## The 18 single-leg silent breaks (t = 3 s, tripod, closed loop, body mass +5 %, gyro bias)", "",
              "Delay = first identification after the break (a gait cycle is 1.3 s; the acceptance bound is 3 "
              "cycles = 3.9 s). Identified = the first and the final morphology (the link count of a leg the "
              "model found may be revised; the coxa weighs 20 g, so 0 and 1 link look alike).", "",
              "| true | delay [s] | identified first | final | reported as not ruled out |", "|---|---:|---|---|---|"]
    for leg, links, d, first, final, alt in rows:
        lines.append("| %s:%d | %s | %s | %s | %s |" % (leg, links, "not found" if d is None else "%.2f" % d,
                                                        first or "-", final, ", ".join(alt) or "-"))
    named = sum(1 for r in rows if r[3] is not None and r[3].split(":")[0] == r[0])
    exact = sum(1 for r in rows if r[4] == "%s:%d" % (r[0], r[1]))
    delays = [r[2] for r in rows if r[2] is not None]
    said = sum(1 for r in rows if r[4] != "%s:%d" % (r[0], r[1]) and "%s:%d" % (r[0], r[1]) in r[5])
    wrong = sum(1 for r in rows if r[4] != "%s:%d" % (r[0], r[1]))
    lines += ["", "- leg named: %d/18; exact link count at the end: %d/18; delay %.2f-%.2f s (median %.2f s)"
              % (named, exact, min(delays), max(delays), float(np.median(delays))),
              "- of the %d breaks whose final link count is another, %d reported the true one as not ruled out "
              "(``alternatives``: its share of the leg's probability >= 20 %%)" % (wrong, said), ""]
    text = "\n".join(lines)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
