"""The parsed URDF and its description (``parse_urdf`` + ``describe``), kept between runs for ``from_urdf``.

Building them is Python work of ~2 ms inside ``jethexa-sim`` (cold caches after the stepping of the run
before), 0.08x of the 5 s walk's stepping; loading them back from a pickle takes about half that
(benchmarks/results/sim.md). Entries live in the numba cache directory (:mod:`jethexa_dynamics.kernel_cache`),
under a key of the URDF file's bytes and of everything the result depends on: the sources of ``urdf.py``,
``description.py`` and ``se3.py`` and the numpy, transforms3d and Python versions. An edit of any of them
gives a new entry, never a stale one; an entry that cannot be read is rebuilt.
"""
import hashlib
import os
import pickle
import sys
import tempfile

import numpy as np
import transforms3d

from . import description, se3, urdf


def _key(urdf_bytes):
    h = hashlib.sha256(urdf_bytes)
    for module in (urdf, description, se3):
        with open(module.__file__, "rb") as f:
            h.update(b"\0" + f.read())
    h.update(("\0%s\0%s\0%s" % (np.__version__, transforms3d.__version__, sys.version)).encode())
    return h.hexdigest()[:32]


def _cache_dir():
    from jethexa_dynamics import kernel_cache
    return os.path.join(kernel_cache.configure(), "urdf")


def load(path):
    """(``UrdfModel``, ``RobotDescription``) of the URDF file ``path``: from the cache when this file (and
    the code describing it) was seen before, else parsed, described and stored. Errors of the URDF are
    ``parse_urdf``'s and ``describe``'s (``ValueError``, ``FileNotFoundError``); nothing is stored for them."""
    with open(path, "rb") as f:
        entry = os.path.join(_cache_dir(), _key(f.read()) + ".pickle")
    try:
        with open(entry, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):     # not stored yet, or a torn/corrupt file
        pass
    model = urdf.parse_urdf(path)
    result = model, description.describe(model)
    tmp = None
    try:                                                     # write-then-rename: readers never see half a file
        os.makedirs(os.path.dirname(entry), exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=os.path.dirname(entry), suffix=".tmp", delete=False) as f:
            tmp = f.name
            pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)
    except OSError:                                          # a read-only or full cache: parse every time
        if tmp is not None and os.path.exists(tmp):
            os.remove(tmp)
    return result
