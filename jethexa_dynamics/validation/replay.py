"""Replay the inputs of a bag through a predictor, faster than real time, and collect its predictions.

The replay walks through every message of the window in time order. Inputs (joint commands, joint
states, morphology) are handed to the predictor as they were received. At each IMU message the
predicted pose is queried *before* the measurement is handed over, and likewise at each ground-truth
message, so a prediction never sees the measurement it is compared with.

A predictor is an object with the :class:`PredictorAdapter` methods; :func:`make_predictor` builds one
by name (:func:`predictor_names` lists them).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import numpy as np

from .bag_io import BagData


class PredictorAdapter:
    """What the replay needs from a predictor (all times in s from the bag start, quaternions w, x, y, z)."""

    name = "predictor"
    horizon = float("nan")        #: re-anchoring horizon (s)

    def reset(self, t: float, joint_names) -> None:
        """Start at ``t``; joint vectors given later are in the order of ``joint_names``."""

    def on_command(self, t: float, q: np.ndarray, t_target: float) -> None:
        """Joint command received at ``t`` (target ``q`` to be reached at ``t_target``)."""

    def on_joints(self, t: float, q: np.ndarray) -> None:
        """Measured joint positions."""

    def on_imu(self, t: float, quat: np.ndarray, gyro: np.ndarray, accel: np.ndarray) -> None:
        """IMU sample (orientation from the IMU filter)."""

    def on_ground_truth(self, t: float, pos: np.ndarray, quat: np.ndarray) -> None:
        """Motion-capture pose (if the bag has one)."""

    def on_morphology(self, t: float, links: np.ndarray) -> None:
        """Intact links per leg changed (or repeated)."""

    def pose(self, t: float):
        """Advance to ``t`` and return the predicted ``(position (3,), quaternion (4,))``."""
        raise NotImplementedError

    @property
    def anchors(self) -> List[float]:
        """Times at which the prediction was re-anchored to measurements."""
        return []

    @property
    def notes(self) -> List[str]:
        return []


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


# event kinds, in the order they are handled at equal time stamps (inputs first, then measurements)
_MORPH, _CMD, _JS, _IMU, _GT = range(5)


def _events(bag: BagData):
    w0 = bag.window[0]
    parts = []

    def add(t, kind):
        t = np.asarray(t, dtype=float)
        parts.append(np.stack([np.maximum(t, w0) if kind in (_MORPH, _CMD) else t,
                               np.full(t.shape, kind, float), np.arange(t.size, dtype=float)], axis=1))
    if bag.morphology is not None:
        add(bag.morphology.t, _MORPH)
    add(bag.commands.t, _CMD)
    if bag.joint_states is not None:
        add(bag.joint_states.t, _JS)
    add(bag.imu.t, _IMU)
    if bag.ground_truth is not None:
        add(bag.ground_truth.t, _GT)
    ev = np.concatenate(parts)
    order = np.lexsort((ev[:, 2], ev[:, 1], ev[:, 0]))
    return ev[order]


def replay(bag: BagData, predictor: PredictorAdapter) -> ReplayResult:
    """Feed ``bag`` through ``predictor``; returns predictions next to the measurements."""
    ev = _events(bag)
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
        if kind == _CMD:
            predictor.on_command(t, cmd_q[i], max(cmd.t_target[i], t))
        elif kind == _IMU:
            p, q = predictor.pose(t)
            p_orient[i], q_pred[i] = p, q
            predictor.on_imu(t, imu.quat[i], imu.gyro[i], imu.accel[i])
        elif kind == _JS:
            predictor.on_joints(t, _reorder(js, cmd.names)[i])
        elif kind == _GT:
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
        notes=list(predictor.notes) + (["joints without a command until later in the bag were held at 0 rad: "
                                        + ", ".join(never)] if never else []))


def _reorder(series, names):
    """Joint-state matrix with columns in ``names`` order (cached on the series)."""
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


# ------------------------------------------------------------------------------------------- registry
_FACTORIES: Dict[str, Callable] = {}


def register_predictor(name: str, factory: Callable) -> None:
    """Make ``factory(model=None, horizon=None) -> PredictorAdapter`` available as ``--predictor name``."""
    _FACTORIES[name] = factory


#: re-anchoring horizon when neither the user nor the predictor chooses one (the predictor node's default)
DEFAULT_HORIZON = 2.0


def _robot(model):
    """The ``LeggedRobot`` of a model parameters file (URDF), or the packaged JetHexa."""
    from jethexa_dynamics.model import LeggedRobot

    return LeggedRobot.jethexa() if model is None else LeggedRobot.from_urdf(str(model))


def _horizon(horizon):
    return DEFAULT_HORIZON if horizon is None else float(horizon)


def _boltzmann_hamel(model=None, horizon=None):
    from jethexa_dynamics.sim.predictor import Predictor

    return Predictor(robot=_robot(model), reanchor_horizon=_horizon(horizon))


def _second_opinion(name):
    """A ``models.PREDICTORS`` model: it speaks the replay protocol itself and re-anchors its planar pose on
    motion capture every horizon (keeping its support state)."""
    def factory(model=None, horizon=None):
        from jethexa_dynamics.models import PREDICTORS

        return PREDICTORS[name](_robot(model), reanchor_horizon=_horizon(horizon))
    return factory


def _optional_module(name):
    """``import name``, or None if that module (not one it imports) does not exist yet."""
    import importlib

    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        if err.name == name:
            return None
        raise


def _load_builtins():
    if _optional_module("jethexa_dynamics.sim.predictor") is not None:
        _FACTORIES.setdefault("boltzmann_hamel", _boltzmann_hamel)
    models = _optional_module("jethexa_dynamics.models")
    if models is not None:
        for name in getattr(models, "PREDICTORS", {}):
            _FACTORIES.setdefault(name, _second_opinion(name))


def predictor_names() -> List[str]:
    _load_builtins()
    return sorted(_FACTORIES)


def make_predictor(name: str, model: Optional[str] = None, horizon: Optional[float] = None) -> PredictorAdapter:
    """The predictor called ``name`` with an optional model parameters file and re-anchoring horizon."""
    _load_builtins()
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise ValueError("unknown predictor {!r}; available: {}".format(name, ", ".join(predictor_names()))) from None
    if horizon is not None and not horizon > 0:
        raise ValueError("re-anchoring horizon must be > 0 s, got {}".format(horizon))
    return factory(model=model, horizon=horizon)
