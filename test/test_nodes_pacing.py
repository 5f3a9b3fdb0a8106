"""The predictor's cycle paced by the IMU (``nodes/pacing.py``), in simulated time: the node's two timers as
rcl timers behave (periodic; ``cancel``; ``reset`` re-arms from now), the IMU samples at given times.

Oracles: the timer alone gives one cycle per period; with the IMU at the cycle's rate the cycles must keep that
rate (within the pacer's tolerance) and the timer's own wake-ups must vanish; with the IMU silent, at another
rate, or stalled, the cycles must keep running at the timer's period, and no gap may exceed the watchdog's two
periods."""
import math

import numpy as np
import pytest

from jethexa_dynamics.nodes.pacing import CyclePacer, arm_timers


class FakeTimer:
    """An rcl timer in simulated time: fires every ``period`` from its last reset; cancel / reset (re-arms)."""

    def __init__(self, period, clock, active):
        self.period, self.clock = period, clock
        self.next = clock[0] + period if active else math.inf

    def cancel(self):
        self.next = math.inf

    def reset(self):
        self.next = self.clock[0] + self.period

    def fired(self):
        self.next += self.period


def simulate(period, imu_times, t_end, pacing=True):
    """Cycle times and executor wake-ups over [0, t_end] s, wired as ``PredictorNode`` wires the pacer."""
    clock = [0.0]
    pacer = CyclePacer(period)
    cycle = FakeTimer(period, clock, active=True)
    watchdog = FakeTimer(pacer.watchdog_period, clock, active=False)
    imu = iter(sorted(imu_times))
    next_imu = next(imu, math.inf)
    cycles, wakeups = [], 0
    while True:
        t = min(next_imu, cycle.next, watchdog.next)
        if t > t_end:
            return np.array(cycles), wakeups, pacer
        clock[0] = t
        wakeups += 1
        if t == next_imu:
            next_imu = next(imu, math.inf)
            if not pacing:
                continue
            run, arm = pacer.on_input(t)
            arm_timers(arm, cycle, watchdog)
        elif t == cycle.next:
            cycle.fired()
            run, _ = pacer.on_timer(t)
        else:
            watchdog.fired()
            run, arm = pacer.on_silence(t)
            arm_timers(arm, cycle, watchdog)
        if run:
            cycles.append(t)


def jittered(rate, t0, t1, sigma, seed=0):
    """Sample times of a publisher on a ``rate`` Hz timer from t0 to t1 s, delivered with N(0, sigma) s jitter."""
    n = int(round((t1 - t0) * rate))
    base = t0 + np.arange(n) / rate
    return base + np.abs(np.random.default_rng(seed).normal(0.0, sigma, n))


P = 0.01  # the launch files: predictor and IMU at 100 Hz


def test_imu_at_the_cycle_rate_paces_every_cycle_and_the_timer_never_wakes():
    imu = jittered(100.0, 0.003, 10.003, 3e-4)
    cycles, wakeups, pacer = simulate(P, imu, 10.0)
    plain_cycles, plain_wakeups, _ = simulate(P, imu, 10.0, pacing=False)
    assert len(plain_cycles) == 1000 and plain_wakeups == 2000          # the oracle: one timer, one IMU
    assert len(cycles) == pytest.approx(1000, abs=2)
    assert pacer.counts["timer"] <= 1 and pacer.paced                   # only before the 2nd sample
    assert wakeups == len(imu) + pacer.counts["timer"]                  # one wake-up per IMU sample
    gaps = np.diff(cycles)
    assert gaps.max() <= 1.5 * P                 # taking over from the timer: a sample within P/2 of its cycle
    assert gaps[1:].max() < P + 4 * 3e-4        # then the IMU's own intervals


def test_silent_imu_hands_the_cycle_back_to_the_timer_within_two_periods():
    imu = np.concatenate([jittered(100.0, 0.0, 3.0, 2e-4, 1), jittered(100.0, 5.0, 8.0, 2e-4, 2)])
    cycles, _, pacer = simulate(P, imu, 8.0)
    gaps = np.diff(cycles)
    assert gaps.max() <= 2 * P + 1e-12                                  # the watchdog's two periods, once
    silent = cycles[(cycles > 3.05) & (cycles < 5.0)]
    assert np.allclose(np.diff(silent), P)                              # the timer's own rate meanwhile
    assert len(cycles) == pytest.approx(800, abs=3) and pacer.paced     # paced again after the IMU is back
    assert pacer.counts["timer"] == pytest.approx(200, abs=3)


@pytest.mark.parametrize("imu_rate", [40.0, 85.0, 120.0, 200.0])
def test_imu_at_another_rate_leaves_the_cycle_on_the_timer(imu_rate):
    imu = jittered(imu_rate, 0.001, 5.001, 2e-4, 3)
    cycles, _, pacer = simulate(P, imu, 5.0)
    assert pacer.counts["input"] == 0 and not pacer.paced
    assert len(cycles) == 500 and np.allclose(np.diff(cycles), P)


def test_samples_delivered_back_to_back_after_a_stall_run_one_cycle():
    imu = list(0.01 * np.arange(1, 100)) + [1.0 + 0.0001]              # a stall: 0.99, then 1.0 and 1.0001
    imu[-2] = 1.0
    cycles, _, _ = simulate(P, imu, 1.001)
    assert np.sum(cycles >= 1.0) == 1
    assert np.diff(cycles).min() >= 0.5 * P - 1e-12


@pytest.mark.parametrize("kwargs, field", [({"period": 0.0}, "period"), ({"period": math.nan}, "period"),
                                           ({"period": 0.01, "tolerance": 0.5}, "tolerance"),
                                           ({"period": 0.01, "smoothing": 0.0}, "smoothing")])
def test_bad_settings_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        CyclePacer(**kwargs)
