"""Degrading on purpose when the CPU runs short, and recovering (no rclpy).

On the Jetson Nano the robot's nodes share four slow cores with everything else: when they fall behind, a node
that silently runs late (a predictor publishing stale poses at irregular times, an identifier scoring windows
seconds after the data) is worse than one that does less, on time, and says so. Two governors, each a pure
class fed with times (any monotonic clock, seconds) so that they are tested in simulated time:

* :class:`RateGovernor` (predictor): over each ``window`` it compares the cycles that ran with those due at the
  effective rate (late cycles, and the slots a timer skipped, make the difference: ``1 - n / (window * rate)``).
  When that shortfall exceeds ``late_fraction`` while the cycles themselves took at least ``min_cpu`` of a
  core over the window (``add_cpu``: lowering the rate of a cheap cycle frees nothing, it only loses output),
  the effective rate is halved (``rate / 2``, ``/ 4``, ..., never below ``min_rate``); after ``recover_s`` with every window under a quarter of that fraction it is
  doubled again, up to ``rate``. A step down soon after a step up (within two recovery periods) doubles the
  next recovery wait (up to 16x): a CPU that is short for good does not make the rate flap.
* :class:`LagGovernor` (the damage identifier's worker): at each finished window it is told how long the sample
  that closed the window waited in the worker's queue (the window's lateness against the data). Above
  ``max_lag`` it doubles ``bank_every`` (the model bank runs at most every k-th window, the confirmed model
  every window: ``DamageIdentifier.bank_every``) up to ``max_every``; after ``recover_s`` with every window
  under a quarter of ``max_lag`` it halves it again, down to 1.

Both share the ladder and its hysteresis (:class:`Ladder`): ``level`` 0 is the normal mode, each level halves
the work; ``reason`` says why the current level was entered; ``steps_down``/``steps_up`` count the changes.
"""
from __future__ import annotations

import math
from typing import Optional

#: a step down within this many recovery periods of the last step up is a flap (the recovery wait doubles)
FLAP_SPAN = 2.0
#: the recovery wait grows at most to this many times ``recover_s``
MAX_BACKOFF = 16


def _check(name: str, value: float, lo: float, hi: float = math.inf) -> float:
    if not (isinstance(value, (int, float)) and math.isfinite(value) and lo <= value <= hi):
        raise ValueError("%s=%r outside the allowed range [%g, %g]" % (name, value, lo, hi))
    return float(value)


class Ladder:
    """Levels 0 (normal) .. ``max_level``, one step at a time: down (``level + 1``) on a bad evaluation, up after
    ``recover_s`` of good ones (``recover_s * backoff`` after a flap)."""

    def __init__(self, max_level: int, recover_s: float):
        self.max_level = int(max_level)
        self.recover_s = _check("recover_s", recover_s, 0.0)
        self.level = 0
        self.reason = ""
        self.steps_down = self.steps_up = 0
        self.backoff = 1
        self._good_since: Optional[float] = None
        self._last_up = -math.inf

    @property
    def degraded(self) -> bool:
        return self.level > 0

    def judge(self, now: float, bad: bool, good: bool, why: str) -> Optional[str]:
        """One evaluation at ``now``: ``bad`` steps down (``why`` becomes the reason), ``good`` counts toward
        stepping up; neither (in between) restarts the recovery wait. Returns 'down', 'up' or None."""
        if bad:
            self._good_since = None
            if self.level >= self.max_level:
                if self.level:
                    self.reason = why           # at the floor: the newest reason
                return None
            if now - self._last_up <= FLAP_SPAN * self.recover_s * self.backoff:
                self.backoff = min(MAX_BACKOFF, 2 * self.backoff)
            self.level += 1
            self.steps_down += 1
            self.reason = why
            return "down"
        if not good:
            self._good_since = None
            return None
        if self.level == 0:
            if now - self._last_up > FLAP_SPAN * self.recover_s * self.backoff:
                self.backoff = 1                # long enough without a flap: forgotten
            return None
        if self._good_since is None:
            self._good_since = now
        if now - self._good_since < self.recover_s * self.backoff:
            return None
        self.level -= 1
        self.steps_up += 1
        self._last_up = self._good_since = now
        if self.level == 0:
            self.reason = ""
        return "up"


class _Governor:
    """What both governors report: ``degraded`` and ``reason``, their ladder's."""

    ladder: Ladder

    @property
    def degraded(self) -> bool:
        return self.ladder.degraded

    @property
    def reason(self) -> str:
        return self.ladder.reason


class RateGovernor(_Governor):
    """The predictor's cycle rate (module docstring). ``on_cycle(now)`` at the start of every cycle; it returns
    'down' or 'up' when :attr:`effective_rate` changed (the node then re-times its cycle), else None.

    Example (simulated time: the CPU runs a cycle every 25 ms at most, the configured rate is 100 Hz)::

        >>> g = RateGovernor(rate=100.0, min_rate=12.5)
        >>> changes = []
        >>> for k in range(82):
        ...     changes.append(g.on_cycle(0.025 * k))
        ...     g.add_cpu(0.005)                       # each cycle took 5 ms of CPU: 20 % of a core
        >>> changes.count("down"), g.effective_rate
        (1, 50.0)
    """

    def __init__(self, rate: float, min_rate: float, late_fraction: float = 0.2, recover_s: float = 5.0,
                 window_s: float = 2.0, min_cpu: float = 0.1):
        self.late_fraction = _check("late_fraction", late_fraction, 0.01, 1.0)
        self.min_cpu = _check("min_cpu", min_cpu, 0.0, 1.0)
        self.window_s = _check("window_s", window_s, 1e-3)
        self._recover_s = recover_s
        self.reset(rate, min_rate)

    def reset(self, rate: Optional[float] = None, min_rate: Optional[float] = None) -> None:
        """The configured rate (and floor) changed, or the cycle restarted: normal mode, a fresh window."""
        if rate is not None:
            self.rate = _check("rate", rate, 1e-6)
        if min_rate is not None:
            self.min_rate = _check("min_rate", min_rate, 1e-6)
        levels = 0
        while self.rate / 2 ** (levels + 1) >= self.min_rate * (1.0 - 1e-9):
            levels += 1
        self.ladder = Ladder(levels, self._recover_s)
        self._window_start: Optional[float] = None
        self._cycles = 0
        self._cpu = 0.0
        self.last_late_fraction = self.last_cpu = 0.0

    @property
    def factor(self) -> int:
        """The configured rate over the effective one (1, 2, 4, ...)."""
        return 2 ** self.ladder.level

    @property
    def effective_rate(self) -> float:
        return self.rate / self.factor

    def add_cpu(self, seconds: float) -> None:
        """The CPU time [s] of the cycle that ran after the last ``on_cycle``."""
        self._cpu += seconds

    def on_cycle(self, now: float) -> Optional[str]:
        if self._window_start is None:
            self._window_start, self._cycles, self._cpu = now, 0, 0.0
            return None
        self._cycles += 1
        elapsed = now - self._window_start
        if elapsed < self.window_s:
            return None
        frac = max(0.0, 1.0 - self._cycles / (elapsed * self.effective_rate))
        cpu = self._cpu / elapsed
        self.last_late_fraction, self.last_cpu = frac, cpu
        why = "%.0f %% of the cycles at %g Hz late or missed over %.1f s, the cycles taking %.0f %% of a core" % (
            100.0 * frac, self.effective_rate, elapsed, 100.0 * cpu)
        change = self.ladder.judge(now, frac > self.late_fraction and cpu >= self.min_cpu,
                                   frac <= 0.25 * self.late_fraction, why)
        self._window_start, self._cycles, self._cpu = now, 0, 0.0   # (after a change: a window at the new rate)
        return change


class LagGovernor(_Governor):
    """The damage identifier's bank spacing (module docstring): ``on_window(now, lag)`` after each finished
    window, ``lag`` [s] = how long its closing sample waited in the queue; returns 'down'/'up' when
    :attr:`bank_every` changed, else None."""

    def __init__(self, max_lag: float = 1.0, max_every: int = 8, recover_s: float = 10.0):
        self.max_lag = _check("max_lag", max_lag, 1e-3)
        max_every = int(_check("max_every", max_every, 1, 1024))
        levels = 0
        while 2 ** (levels + 1) <= max_every:
            levels += 1
        self.max_every = 2 ** levels
        self.ladder = Ladder(levels, recover_s)
        self.last_lag = 0.0

    @property
    def bank_every(self) -> int:
        return 2 ** self.ladder.level

    def on_window(self, now: float, lag: float) -> Optional[str]:
        self.last_lag = float(lag)
        why = "a window closed %.2f s after its data (limit %.2f s)" % (lag, self.max_lag)
        return self.ladder.judge(now, lag > self.max_lag, lag <= 0.25 * self.max_lag, why)
