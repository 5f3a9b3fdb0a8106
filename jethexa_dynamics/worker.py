"""One background worker thread, with the package's one error policy for work done off the caller's thread.

A ``Worker`` owns a daemon thread that handles items one at a time: the gait's re-planner, the damage monitor's
identifier and the engine's CSV writer are workers. Items are handed over with ``submit`` (a FIFO queue,
``_queue``); a subclass with another order overrides ``_next`` (under the worker's condition ``_cv``). Subclasses
say what to do with an item (``_handle``, without the lock), and set up their own state before calling
``Worker.__init__`` (which starts the thread).

Error policy (the same for every worker): an exception raised while handling an item -- a bug, or an I/O error
such as a full disk -- stops the worker, which handles nothing more. The exception is kept in ``error`` with its
traceback, passed to ``on_error`` on the worker thread if the owner gave one (a node logs it and reports it on
/diagnostics), and re-raised in the owner's thread by ``check()``: every method that hands a result back calls
it, so nothing is swallowed and the traceback shows where the work failed.

Example::

    class Squares(Worker):
        def __init__(self):
            self.out = []
            super().__init__("squares")
        def _handle(self, x):
            self.out.append(x * x)

    w = Squares(); w.submit(3); w.wait_idle(1.0); w.out    # [9]
"""
from __future__ import annotations

import threading
import traceback
from collections import deque
from typing import Callable, Optional

IDLE = object()       # ``_next``'s answer when there is nothing to do: the worker waits for ``wake()``


class Worker:
    """A daemon thread handling the items ``_next`` gives, one at a time, until ``close()`` or an error.

    ``name``: the thread's name. ``on_error(exc, text)``: called on the worker thread with the exception and its
    formatted traceback when handling fails (optional). ``busy`` is True while an item is being handled.
    """

    def __init__(self, name: str, on_error: Optional[Callable[[BaseException, str], None]] = None):
        self.name = name
        self.on_error = on_error
        self._cv = threading.Condition()
        self._closed = False
        self.busy = False
        self.error: Optional[BaseException] = None
        self.error_text = ""
        self._queue: deque = deque()         # items submitted, not handled yet
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)
        self.thread.start()

    # -- subclass interface -------------------------------------------------------------------------------
    def _next(self):
        """The next item to handle, or ``IDLE``; called with ``_cv`` held. Default: the oldest submitted."""
        return self._queue.popleft() if self._queue else IDLE

    def _handle(self, item) -> None:
        """Handle one item on the worker thread (``_cv`` not held)."""
        raise NotImplementedError

    # -- owner's side -------------------------------------------------------------------------------------
    def submit(self, item) -> None:
        """Queue ``item`` for the thread (after those before it); a stopped worker takes nothing."""
        with self._cv:
            if not self._closed:
                self._queue.append(item)
                self.wake()

    def wake(self) -> None:
        """Tell the thread that ``_next`` may have an item; call with ``_cv`` held."""
        self._cv.notify_all()

    def check(self) -> None:
        """Re-raise, in the caller's thread, the exception that stopped the worker (once)."""
        if self.error is not None:
            err, self.error = self.error, None
            raise err

    @property
    def stopped(self) -> bool:
        """The worker takes no more items: closed, or stopped by an error."""
        return self._closed

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is queued or being handled, or the worker stopped; False on time-out."""
        with self._cv:
            self.wake()                  # items queued without waking the thread (a subclass may batch)
            return self._cv.wait_for(lambda: self._closed or (not self.busy and self._next_is_idle()), timeout)

    def _next_is_idle(self) -> bool:
        """Whether ``_next`` has nothing (without taking it); a subclass with its own ``_next`` overrides this."""
        return not self._queue

    def close(self, timeout: Optional[float] = None) -> None:
        """Stop after the item being handled. ``timeout``: wait that long for the thread to end (None: until it
        ends; 0: do not wait, e.g. from a callback holding a lock the worker may be waiting for)."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        if timeout != 0 and self.thread is not threading.current_thread():
            self.thread.join(timeout)

    # -- the thread ---------------------------------------------------------------------------------------
    def _main(self) -> None:
        try:
            while True:
                with self._cv:
                    while True:
                        if self._closed:
                            return
                        item = self._next()
                        if item is not IDLE:
                            break
                        self.busy = False
                        self._cv.notify_all()
                        self._cv.wait()
                    self.busy = True
                try:
                    self._handle(item)
                except BaseException as exc:     # the policy above: kept, reported, re-raised by check()
                    self._fail(exc)
                    return
        finally:
            with self._cv:
                self.busy = False
                self._cv.notify_all()

    def _fail(self, exc: BaseException) -> None:
        self.error, self.error_text = exc, traceback.format_exc()
        try:
            if self.on_error is not None:
                self.on_error(exc, self.error_text)
        finally:                                 # stopped only once reported: ``wait_idle`` sees the report
            with self._cv:
                self._closed = True
                self._cv.notify_all()
