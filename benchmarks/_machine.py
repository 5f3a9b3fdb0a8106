"""Date, machine and versions of a benchmark run: the header lines every ``bench_*.py`` writes to its results;
and a process's CPU time (``proc_cpu``), which the node-graph benchmarks read.

    from _machine import describe           # benchmarks/ is on sys.path when a bench script runs
    lines += describe("mujoco", "pinocchio")  # extra packages by import or distribution name
"""
import datetime
import importlib
import importlib.metadata
import os
import platform


def cpu_model():
    """CPU model name from /proc/cpuinfo ('model name'); elsewhere platform's processor or machine string."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def package_version(name):
    """``__version__`` of the module ``name`` if it imports, else the installed distribution's version
    (so 'pinocchio' and 'pyserial' both work); 'not installed' if neither."""
    try:
        version = getattr(importlib.import_module(name), "__version__", None)
        if version:
            return str(version)
    except ImportError:
        pass
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def machine():
    """'<CPU model>, <n> cores, <OS> <release>'."""
    return "%s, %d cores, %s %s" % (cpu_model(), os.cpu_count() or 0, platform.system(), platform.release())


def versions(*packages):
    """'Python x, numpy y, numba z' followed by '<name> <version>' of each extra package."""
    names = ("numpy", "numba") + tuple(p for p in packages if p not in ("numpy", "numba"))
    return ", ".join(["Python " + platform.python_version()] + ["%s %s" % (n, package_version(n)) for n in names])


def describe(*packages):
    """Markdown bullet lines: date (local, to the minute), machine, and versions (``versions(*packages)``)."""
    return ["- date: " + datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
            "- machine: " + machine(),
            "- " + versions(*packages)]


def front_matter(date, machine, command, current=()):
    """The YAML block a results file begins with (benchmarks/HEADER.md gives the format; collect.py reads it):
    ``current`` is a list of dicts with ``area``, ``figure``, ``value`` and optionally ``nano``, ``target``."""
    import yaml
    meta = {"date": date, "machine": machine, "command": command, "current": [dict(row) for row in current]}
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000) + "---\n"


def write_results(text, path, front=None):
    """Print a benchmark's markdown and write it to ``path`` (benchmarks/results/<topic>.md), after the front
    matter ``front`` (:func:`front_matter`). Without ``front`` the file's existing front matter is kept: its date
    then no longer matches the run's, and collect.py says so until the current figures are brought up to date."""
    print(text)
    if front is None and os.path.exists(path):
        with open(path) as f:
            old = f.read()
        end = old.find("\n---\n", 4) if old.startswith("---\n") else -1
        front = old[:end + 5] if end > 0 else ""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write((front or "") + text)


CLK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    """utime + stime + cutime + cstime of ``pid`` [s] (every thread; waited-for children), NaN if gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / CLK
