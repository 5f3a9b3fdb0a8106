"""Replay the inputs of a bag through a predictor, faster than real time, and collect its predictions.

The replay walks through every message of the window in time order. Inputs (joint commands, joint
states, morphology) are handed to the predictor as they were received. At each IMU message the
predicted pose is queried *before* the measurement is handed over, and likewise at each ground-truth
message, so a prediction never sees the measurement it is compared with.

A predictor is anything with the :class:`jethexa_dynamics.predictors.base.Predictor` methods;
:func:`jethexa_dynamics.predictors.registry.make_predictor` builds one by name.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

from jethexa_dynamics.predictors.base import Predictor

from .bag_io import BagData


@dataclass
class ReplayResult:
    predictor: str
    horizon: float
    t_orient: np.ndarray          # IMU sample times
    q_pred: np.ndarray            # (N, 4) predicted orientation at t_orient
    q_meas: np.ndarray            # (N, 4) IMU orientation
    p_pred_orient: np.ndarray     # (N, 3) predicted position at t_orient
    t_pos: Optional[np.ndarray]   # ground-truth sample times (None: no ground truth)
    p_pred: Optional[np.ndarray]
    p_meas: Optional[np.ndarray]
    anchors: np.ndarray
    n_messages: int
    wall_time: float
    duration: float               # replayed bag time (s)
    notes: List[str] = field(default_factory=list)

    @property
    def real_time_factor(self) -> float:
        """Bag seconds replayed per wall-clock second (> 1: faster than real time)."""
        return self.duration / self.wall_time if self.wall_time > 0 else float("inf")

    @property
    def messages_per_s(self) -> float:
        return self.n_messages / self.wall_time if self.wall_time > 0 else float("inf")


#: event kinds of :func:`bag_events`, in the order they are handled at equal time stamps (inputs first, then
#: measurements)
MORPHOLOGY, COMMAND, JOINT_STATES, IMU, GROUND_TRUTH = range(5)


def bag_events(bag: BagData) -> np.ndarray:
    """Every message of the bag's window in the order a replay hands them over: (n, 3) rows (t [s], kind, index
    into that kind's series); commands and morphologies stamped before the window start at its start (the
    command in force), equal stamps in the order of the kinds (:data:`MORPHOLOGY` ... :data:`GROUND_TRUTH`)."""
    w0 = bag.window[0]
    parts = []

    def add(t, kind):
        t = np.asarray(t, dtype=float)
        parts.append(np.stack([np.maximum(t, w0) if kind in (MORPHOLOGY, COMMAND) else t,
                               np.full(t.shape, kind, float), np.arange(t.size, dtype=float)], axis=1))
    if bag.morphology is not None:
        add(bag.morphology.t, MORPHOLOGY)
    add(bag.commands.t, COMMAND)
    if bag.joint_states is not None:
        add(bag.joint_states.t, JOINT_STATES)
    add(bag.imu.t, IMU)
    if bag.ground_truth is not None:
        add(bag.ground_truth.t, GROUND_TRUTH)
    ev = np.concatenate(parts)
    order = np.lexsort((ev[:, 2], ev[:, 1], ev[:, 0]))
    return ev[order]


def replay(bag: BagData, predictor: Predictor) -> ReplayResult:
    """Feed ``bag`` through ``predictor``; returns predictions next to the measurements."""
    ev = bag_events(bag)
    n_imu = len(bag.imu)
    n_gt = 0 if bag.ground_truth is None else len(bag.ground_truth)
    q_pred = np.zeros((n_imu, 4))
    p_orient = np.zeros((n_imu, 3))
    p_pred = np.zeros((n_gt, 3))
    cmd, js, imu, gt, mo = bag.commands, bag.joint_states, bag.imu, bag.ground_truth, bag.morphology
    w0 = bag.window[0]
    cmd_q = cmd.q
    never = [n for n, ok in zip(cmd.names, np.isfinite(cmd_q).all(axis=0)) if not ok]
    if never:   # e.g. a recording that starts with legs already removed: their joints were never commanded
        cmd_q = np.where(np.isfinite(cmd_q), cmd_q, 0.0)
    tic = time.perf_counter()
    predictor.reset(w0, cmd.names)
    for t, kind, i in ev:
        i = int(i)
        kind = int(kind)
        if kind == COMMAND:
            predictor.on_command(t, cmd_q[i], max(cmd.t_target[i], t))
        elif kind == IMU:
            p, q = predictor.pose(t)
            p_orient[i], q_pred[i] = p, q
            predictor.on_imu(t, imu.quat[i], imu.gyro[i], imu.accel[i])
        elif kind == JOINT_STATES:
            predictor.on_joints(t, joint_matrix(js, cmd.names)[i])
        elif kind == GROUND_TRUTH:
            p, _ = predictor.pose(t)
            p_pred[i] = p
            predictor.on_ground_truth(t, gt.pos[i], gt.quat[i])
        else:
            predictor.on_morphology(t, mo.links[i])
    wall = time.perf_counter() - tic
    q_pred /= np.linalg.norm(q_pred, axis=1, keepdims=True)
    return ReplayResult(
        predictor=predictor.name, horizon=float(predictor.horizon), t_orient=imu.t.copy(), q_pred=q_pred,
        q_meas=imu.quat.copy(), p_pred_orient=p_orient,
        t_pos=None if gt is None else gt.t.copy(), p_pred=None if gt is None else p_pred,
        p_meas=None if gt is None else gt.pos.copy(), anchors=np.asarray(predictor.anchors, dtype=float),
        n_messages=bag.n_messages, wall_time=wall, duration=bag.window[1] - w0,
        notes=["joints without a command until later in the bag were held at 0 rad: " + ", ".join(never)]
        if never else [])


def carried_matrix(series, names):
    """(len, len(names)) bool, columns in ``names`` order: the message carried the joint (all True when the series
    does not say)."""
    out = np.zeros((len(series), len(names)), dtype=bool)
    idx = {n: k for k, n in enumerate(series.names)}
    for j, n in enumerate(names):
        if n in idx:
            out[:, j] = True if series.carried is None else series.carried[:, idx[n]]
    return out


def joint_matrix(series, names):
    """Joint-state matrix (rad) with columns in ``names`` order, NaN where the series lacks a joint (cached on the
    series)."""
    cached = getattr(series, "_reordered", None)
    if cached is not None and cached[0] == tuple(names):
        return cached[1]
    idx = {n: k for k, n in enumerate(series.names)}
    q = np.full((len(series), len(names)), np.nan)
    for j, n in enumerate(names):
        if n in idx:
            q[:, j] = series.q[:, idx[n]]
    series._reordered = (tuple(names), q)
    return q
