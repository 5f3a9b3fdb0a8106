"""``TrajectoryCsvWriter``: writes an engine run's trajectory.csv on a worker thread while the engine steps.

The rows are the engine's record rows (``sim.trajectory``); the file is ``Trajectory.to_csv``'s, byte for byte.
"""
import os

import numpy as np

from jethexa_dynamics.worker import Worker

from .trajectory import Trajectory, _euler_angles, open_new


class TrajectoryCsvWriter(Worker):
    """Write ``Trajectory.to_csv``'s file while the engine runs.

    ``add(rows)`` takes each block of record rows as the engine records it (``Engine.run(on_rows=...)``); every
    ``batch_rows`` rows the worker thread converts them (Euler angles, columns, text) and appends them to ``path``
    while the next chunks step (a compiled chunk releases the GIL: with a free core the CSV costs little wall
    time, its CPU time stays the same). ``close()`` waits for the thread and returns the (n, 3) Euler angles it
    computed (``Trajectory.euler`` of the same rows, to the rounding of an unwrapped yaw); ``abort()`` stops it
    and removes the file. Same header, columns and ``%.9g`` digits. A write error (e.g. a full disk) stops the
    writer and is re-raised by ``close()`` (``worker.Worker``'s policy).
    """

    def __init__(self, path, engine, batch_rows=50):
        self.path = path
        self._meta = (engine._layout, list(engine.robot.joint_names), list(engine.robot.leg_names))
        self._file = open_new(path)
        self._file.write(Trajectory(np.zeros((0, 1)), *self._meta).csv_header() + "\n")
        # blocks are handed over in batches of >= batch_rows rows: fewer thread wake-ups and per-batch costs
        self._batch_rows = int(batch_rows)
        self._pending, self._n_pending = [], 0
        self._euler = []
        self._yaw = None
        super().__init__("trajectory-csv")

    def add(self, rows):
        """Queue a block of record rows (n, ncols) for writing (rows in time order, after those before)."""
        self._pending.append(rows)
        self._n_pending += len(rows)
        if self._n_pending >= self._batch_rows:
            self._flush()

    def _flush(self):
        if self._pending:
            self.submit(self._pending)       # a list of blocks: the thread stacks them
            self._pending, self._n_pending = [], 0

    def _handle(self, blocks):
        part = Trajectory(blocks[0] if len(blocks) == 1 else np.vstack(blocks), *self._meta)
        if len(part):
            e = _euler_angles(part.rot, self._yaw)
            self._yaw = e[-1, 2]
            self._file.write(part.csv_rows(e))
            self._euler.append(e)

    def close(self, timeout=None):
        """Wait until every queued block is written, close the file; returns the Euler angles (n, 3) of all
        rows written. Re-raises an error the writing thread met (e.g. a full disk)."""
        self._flush()
        self.wait_idle(None)
        super().close(timeout)
        self._file.close()
        self.check()
        return np.vstack(self._euler) if self._euler else np.zeros((0, 3))

    def abort(self):
        """Stop writing and remove the partial file (the run failed)."""
        super().close()
        self._file.close()
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
