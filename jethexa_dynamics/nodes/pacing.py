"""When a node's fixed-rate cycle runs: on its own timer, or right after an input that arrives at that rate.

No rclpy here; the predictor node wires it to two timers (``nodes/predictor.py``).

Why: every wake-up of rclpy's executor costs tens of µs of Python (building the wait set, dispatching), whatever
the callback does. The predictor's 100 Hz timer and the IMU's 100 Hz samples are two wake-ups per period; an
empty 100 Hz timer alone costs about a fifth of a plain rclpy node's CPU on the robot's traffic
(``benchmarks/bench_predictor_node.py``). When the input already arrives at the cycle's rate, the cycle runs
right after it, one wake-up per period, and the newest IMU sample is in the prediction it publishes.

The choice (not in the papers; tested in ``test/test_nodes_pacing.py``):

* *paced*: the input's interval, smoothed (exponential average, weight ``smoothing`` per sample), is within
  ``tolerance`` of the period. Then each input runs the cycle, unless one ran less than half a period ago (two
  samples delivered back to back after a stall). The cycle runs at the input's rate then, within
  ``tolerance`` of the configured one.
* otherwise the cycle timer runs it, as before.
* while paced, the node's cycle timer is cancelled and a watchdog timer of two periods is reset at every
  input: it fires only when the input has been silent for two periods, and then the cycle timer takes over
  again at once (``on_silence``).
* ``every`` > 1 (a node that lowered its cycle rate on purpose, ``nodes/degrade.py``): the input still paces
  at its own rate, and the cycle runs on every ``every``-th sample (one that comes at least ``every - 1/2``
  periods after the last cycle); the watchdog waits two of those longer cycle periods.
"""
from __future__ import annotations

import math
from typing import Dict, Optional, Tuple


#: what the node arms after a call: ``WATCHDOG`` = cancel the cycle timer, reset the watchdog (the input paces);
#: ``CYCLE_TIMER`` = cancel the watchdog, reset the cycle timer (the timer paces); None = leave both
WATCHDOG, CYCLE_TIMER = "watchdog", "cycle_timer"


class CyclePacer:
    """Decides, per input sample and per timer firing, whether the cycle runs and which timer is armed; times in
    s (any monotonic clock). The node owns two timers: the cycle timer (``period``, running at start) and the
    watchdog (``watchdog_period``, created cancelled); rcl's ``reset`` re-arms a cancelled timer.

    Parameters: ``period`` (s) of the cycle; ``tolerance`` (fraction of the period) within which the smoothed
    input interval counts as the cycle's rate; ``smoothing`` in (0, 1], the weight of the newest interval.

    Example::

        >>> p = CyclePacer(0.01)
        >>> [p.on_input(0.01 * k) for k in range(3)]    # the 2nd sample gives the interval: paced from then
        [(False, None), (True, 'watchdog'), (True, 'watchdog')]
        >>> p.on_silence(0.05), p.paced                 # 2 periods without a sample: the cycle timer's turn
        ((True, 'cycle_timer'), False)
    """

    def __init__(self, period: float, tolerance: float = 0.1, smoothing: float = 0.2):
        if not (0.0 < tolerance < 0.5):
            raise ValueError("tolerance=%r outside the allowed range (0, 0.5)" % (tolerance,))
        if not (0.0 < smoothing <= 1.0):
            raise ValueError("smoothing=%r outside the allowed range (0, 1]" % (smoothing,))
        self.tolerance = float(tolerance)
        self.smoothing = float(smoothing)
        self.counts: Dict[str, int] = {"input": 0, "timer": 0}
        self.every = 1          # the cycle runs on every n-th paced input (a lowered cycle rate)
        self.reset(period)

    def reset(self, period: Optional[float] = None) -> None:
        """Forget the input's rhythm (the cycle timer paces, the watchdog is off); with ``period``, a new cycle
        period (s)."""
        if period is not None:
            if not (math.isfinite(period) and period > 0.0):
                raise ValueError("period=%r outside the allowed range (0, inf) s" % (period,))
            self.period = float(period)
        self.paced = False
        self.interval: Optional[float] = None   # smoothed input interval (s)
        self.last_input: Optional[float] = None
        self.last_cycle = -math.inf

    @property
    def watchdog_period(self) -> float:
        """Silence (s) after which the watchdog fires (``on_silence``)."""
        return 2.0 * self.period * self.every

    def on_input(self, now: float) -> Tuple[bool, Optional[str]]:
        """An input sample arrived at ``now``: (the cycle runs now, what to arm). While paced every sample re-arms
        the watchdog, so that it fires only after two periods of silence."""
        if self.last_input is not None:
            dt = now - self.last_input
            self.interval = dt if self.interval is None else self.interval + self.smoothing * (dt - self.interval)
        self.last_input = now
        was = self.paced
        self.paced = self.interval is not None and abs(self.interval - self.period) <= self.tolerance * self.period
        arm = WATCHDOG if self.paced else (CYCLE_TIMER if was else None)
        if self.paced and now - self.last_cycle >= (self.every - 0.5) * self.period:
            self._ran(now, "input")
            return True, arm
        return False, arm

    def on_timer(self, now: float) -> Tuple[bool, Optional[str]]:
        """The cycle timer fired at ``now`` (it is armed only while not paced): the cycle runs."""
        self._ran(now, "timer")
        return True, None

    def on_silence(self, now: float) -> Tuple[bool, Optional[str]]:
        """The watchdog fired at ``now``: the input has been silent for two periods. The cycle runs now and the
        cycle timer paces from here."""
        self.paced = False
        self.interval = self.last_input = None    # the rhythm starts afresh with the next samples
        self._ran(now, "timer")
        return True, CYCLE_TIMER

    def _ran(self, now: float, source: str) -> None:
        self.last_cycle = now
        self.counts[source] += 1


def arm_timers(which: Optional[str], cycle_timer, watchdog) -> None:
    """Carry out what a ``CyclePacer`` call returned on the node's two timers (objects with ``cancel()`` and
    ``reset()``, rclpy's ``Timer``): ``WATCHDOG`` cancels the cycle timer and resets the watchdog, ``CYCLE_TIMER``
    the other way round, None leaves both."""
    if which == WATCHDOG:
        cycle_timer.cancel()
        watchdog.reset()
    elif which == CYCLE_TIMER:
        watchdog.cancel()
        cycle_timer.reset()
