"""A pseudo-terminal served by a background thread: the wire of the emulated devices.

The client opens ``port`` (the slave's path) with pyserial or any terminal program exactly as a UART or a USB
serial device. The thread reads what the client writes, hands it to a handler and writes back the handler's
replies, each after its own delay [s] (a late servo does not hold up the others). Times: ``time.monotonic``.
"""
from __future__ import annotations

import errno
import fcntl
import heapq
import os
import select
import threading
import time
import tty
from typing import Callable, List, Optional, Tuple

__all__ = ["PtyTransport", "Replies"]

#: what the handler returns for the bytes it was given: (delay [s], bytes) per reply
Replies = List[Tuple[float, bytes]]

POLL_S = 0.05        # the thread looks at its stop flag at least this often [s]
READ_SIZE = 4096     # bytes per read of the master side


class PtyTransport:
    """``handle(data) -> [(delay, bytes)]`` served on a pty by a thread named ``name``; ``bytes_received`` and
    ``bytes_sent`` count what crossed the wire."""

    def __init__(self, handle: Callable[[bytes], Replies], name: str):
        self.handle = handle
        self.name = name
        self._master = self._slave = None
        self._thread: Optional[threading.Thread] = None
        self._stop = threading.Event()
        self.port: Optional[str] = None
        self.bytes_received = 0
        self.bytes_sent = 0
        #: unasked output: [next due (monotonic s), period (s), source() -> bytes or None], sent when due
        self._streams: List[list] = []

    def stream(self, period: float, source: Callable[[], Optional[bytes]]) -> None:
        """Send ``source()`` every ``period`` s, unasked (a device's reports), from the serving thread. A stream
        that fell behind (the thread starved) skips what it missed: a gap, never a burst."""
        self._streams.append([time.monotonic() + period, float(period), source])

    def _emit_streams(self, now: float) -> float:
        """Send the streams that are due; the time until the next one [s]."""
        wait = POLL_S
        for s in self._streams:
            if s[0] <= now:
                out = s[2]()
                if out:
                    self._emit(out)
                s[0] += s[1]
                if s[0] <= now:            # behind by more than a period: resume from now
                    s[0] = now + s[1]
            wait = min(wait, max(0.0, s[0] - now))
        return wait

    def start(self) -> None:
        """Open the pty and serve in a background thread (``port`` is set); nothing if already serving."""
        if self._thread is not None:
            return
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no echo, no line discipline: clients other than pyserial work too
        fl = fcntl.fcntl(self._master, fcntl.F_GETFL)
        fcntl.fcntl(self._master, fcntl.F_SETFL, fl | os.O_NONBLOCK)
        self.port = os.ttyname(self._slave)
        self._stop.clear()
        self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the pty (clients then see a hang-up)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        for fd in (self._master, self._slave):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._master = self._slave = None

    def _serve(self) -> None:
        # delayed replies wait in a heap (due time, sequence, bytes) so a late servo does not hold up the others
        outq: List[Tuple[float, int, bytes]] = []
        seq = 0
        while not self._stop.is_set():
            now = time.monotonic()
            while outq and outq[0][0] <= now:
                self._emit(heapq.heappop(outq)[2])
            wait = self._emit_streams(now) if self._streams else POLL_S
            wait = wait if not outq else min(wait, max(0.0, outq[0][0] - now))
            try:
                r, _, _ = select.select([self._master], [], [], wait)
            except (OSError, ValueError):
                break
            if not r:
                continue
            try:
                data = os.read(self._master, READ_SIZE)
            except BlockingIOError:
                continue
            except OSError as exc:
                if exc.errno == errno.EIO:  # no client has the slave open (we keep ours, so rare)
                    time.sleep(0.01)
                    continue
                break
            self.bytes_received += len(data)
            replies = self.handle(data)
            t = time.monotonic()
            for delay, out in replies:
                if delay > 0 or outq:   # with replies queued: in order of due time
                    seq += 1
                    heapq.heappush(outq, (t + delay, seq, out))
                else:
                    self._emit(out)

    def _emit(self, data: bytes) -> None:
        try:
            n = os.write(self._master, data)
            self.bytes_sent += n
        except (BlockingIOError, OSError):
            pass  # nobody reads: the bytes are lost, as on a real line
