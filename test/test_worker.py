"""The package's worker thread (``jethexa_dynamics.worker``): items in order, and its one error policy -- the
first exception stops the worker, is reported once with its traceback and re-raised in the owner's thread."""
import threading
from collections import deque

import pytest

from jethexa_dynamics.worker import IDLE, Worker


class Squares(Worker):
    def __init__(self, on_error=None, gate=None):
        self.items, self.out, self.gate = deque(), [], gate
        self.started = threading.Event()
        super().__init__("squares", on_error=on_error)

    def put(self, x):
        with self._cv:
            self.items.append(x)
            self.wake()

    def _next(self):
        return self.items.popleft() if self.items else IDLE

    def _next_is_idle(self):
        return not self.items

    def _handle(self, x):
        self.started.set()
        if self.gate is not None:
            self.gate.wait()
        if x < 0:
            raise ValueError("negative item %r" % x)
        self.out.append(x * x)


def test_items_are_handled_in_order_and_wait_idle_sees_the_end():
    w = Squares()
    try:
        for x in range(100):
            w.put(x)
        assert w.wait_idle(30.0)
        assert w.out == [x * x for x in range(100)] and not w.busy
        w.check()                      # no error: nothing raised
    finally:
        w.close()
    assert not w.thread.is_alive() and w.stopped


def test_the_first_error_stops_the_worker_is_reported_once_and_re_raised_by_check():
    reports = []
    gate = threading.Event()
    w = Squares(on_error=lambda exc, text: reports.append((exc, text)), gate=gate)
    for x in (1, 2, -3, 4, -5):
        w.put(x)
    gate.set()
    assert w.wait_idle(30.0)
    w.thread.join(30.0)
    assert not w.thread.is_alive() and w.stopped
    assert w.out == [1, 4]                                   # nothing after the failing item
    assert len(reports) == 1 and isinstance(reports[0][0], ValueError)
    assert "Traceback" in reports[0][1] and "negative item -3" in reports[0][1] and "_handle" in reports[0][1]
    with pytest.raises(ValueError, match="negative item -3"):
        w.check()
    w.check()                                                # re-raised once
    w.put(6)                                                 # a stopped worker handles nothing more
    assert w.wait_idle(1.0) and w.out == [1, 4]


def test_close_without_waiting_returns_while_an_item_runs():
    gate = threading.Event()
    w = Squares(gate=gate)
    w.put(7)
    assert w.started.wait(30.0)
    w.close(timeout=0)              # e.g. from a callback: returns at once
    assert w.stopped
    gate.set()
    w.thread.join(30.0)
    assert not w.thread.is_alive() and w.out == [49]


def test_submitted_items_are_handled_first_in_first_out_and_a_stopped_worker_takes_none():
    """The default queue (``submit``; no ``_next`` of one's own)."""
    class Collect(Worker):
        def __init__(self):
            self.out = []
            super().__init__("collect")

        def _handle(self, x):
            self.out.append(x)

    w = Collect()
    for x in range(50):
        w.submit(x)
    assert w.wait_idle(30.0) and w.out == list(range(50))
    w.close()
    w.submit(99)
    assert w.out == list(range(50)) and not w._queue and not w.thread.is_alive()


def test_items_queued_without_waking_the_thread_are_handled_by_wait_idle():
    """A subclass may queue items without ``wake()`` (the identifier batches IMU samples until a joint sample):
    ``wait_idle`` wakes the thread itself, so nothing queued is left behind."""
    class Quiet(Worker):
        def __init__(self):
            self.out = []
            super().__init__("quiet")

        def put_quietly(self, x):
            with self._cv:
                self._queue.append(x)

        def _handle(self, x):
            self.out.append(x)

    w = Quiet()
    assert w.wait_idle(30.0)             # the thread is waiting now: nothing will wake it but wait_idle
    for x in range(5):
        w.put_quietly(x)
    assert w.wait_idle(30.0) and w.out == list(range(5))
    w.close()
