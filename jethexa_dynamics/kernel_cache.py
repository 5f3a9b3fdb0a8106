"""Where the compiled numba kernels live: one cache directory per version of the installed sources.

numba's own cache checks the stamp of the file a cached function is defined in, but not of the functions
it calls: a changed ``model/kernels.py`` under a cached ``sim/engine.py`` would run stale machine code. So
the directory is keyed on a hash of every ``.py`` source of the installed package; a changed source starts
from an empty directory.

:func:`configure` runs when ``jethexa_dynamics`` is first imported (``__init__``), before any @njit module:
when ``NUMBA_CACHE_DIR`` is not set it sets it to ``$XDG_CACHE_HOME/jethexa_dynamics/numba/<hash>``
(``~/.cache`` when ``XDG_CACHE_HOME`` is unset). A ``NUMBA_CACHE_DIR`` set by the user (the development
scripts set one per source tree) is left alone. Imports only the standard library.
"""
from __future__ import annotations

import hashlib
import os
import sys
from typing import Optional

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_HASH_CACHE = {}


def source_hash(package_dir: str = PACKAGE_DIR, length: int = 16) -> str:
    """Hex digest (``length`` characters) of the package's ``.py`` files: relative paths and contents,
    in sorted path order, so a renamed, added, removed or edited module gives a different digest. The
    digest of the imported package is computed once per process (its modules are loaded by then)."""
    key = (package_dir, length)
    if key not in _HASH_CACHE or package_dir != PACKAGE_DIR:  # remembered for this process's own sources
        h = hashlib.sha256()
        files = []
        for root, dirs, names in os.walk(package_dir):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            files += [os.path.join(root, n) for n in names if n.endswith(".py")]
        for path in sorted(files, key=lambda p: os.path.relpath(p, package_dir)):
            h.update(os.path.relpath(path, package_dir).replace(os.sep, "/").encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read())
            h.update(b"\0")
        _HASH_CACHE[key] = h.hexdigest()[:length]
    return _HASH_CACHE[key]


def default_cache_dir(package_dir: str = PACKAGE_DIR, environ=None) -> str:
    """``$XDG_CACHE_HOME/jethexa_dynamics/numba/<source hash>`` (XDG default ``~/.cache``)."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jethexa_dynamics", "numba", source_hash(package_dir))


def configure(environ=None) -> str:
    """Set ``NUMBA_CACHE_DIR`` to :func:`default_cache_dir` unless it is already set; return the directory
    in use. If numba was imported before this package, its configuration is updated too."""
    env = os.environ if environ is None else environ
    if not env.get("NUMBA_CACHE_DIR"):
        env["NUMBA_CACHE_DIR"] = default_cache_dir(environ=env)
        config = sys.modules.get("numba.core.config")
        if config is not None and environ is None:
            config.CACHE_DIR = env["NUMBA_CACHE_DIR"]  # numba read the environment at its import
    return env["NUMBA_CACHE_DIR"]


def cache_dir() -> Optional[str]:
    """The numba cache directory in use (None if numba caches next to the sources)."""
    return os.environ.get("NUMBA_CACHE_DIR") or None

