"""Shared test setup.

DDS stays on loopback (see scripts/ros_env.sh), and every process that runs tests has a ROS domain of its own:
the domain in the environment (``ROS_DOMAIN_ID``) is the base; under pytest-xdist worker ``gwK`` of N takes
base + K, else base + K + N, + 2N, ... if another test process on this machine (another suite started from the
same base) holds it; without xdist the process takes base, base + 1, ... the same way. A domain is held (a lock
file in the temporary directory) while the process lives, so two suites running at once on one machine never
share one. The node processes the tests start inherit it through the environment.

Tests marked ``serial`` (their figures depend on having the machine's cores: CPU hogs, GIL release, rates) run
alone under xdist: the other workers finish the test they are in and wait until it is done.
"""
import fcntl
import os
import sys
import tempfile
import uuid

import pytest

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
os.environ.setdefault("ROS_LOCALHOST_ONLY", "1")

MAX_DOMAIN = 232            # the highest domain id DDS maps to ports
_held = []                  # lock files held while this process lives


def _lock_path(name):
    return os.path.join(tempfile.gettempdir(), "jethexa_test_%s.lock" % name)


def claim_domain(first, step):
    """The first of ``first``, ``first + step``, ... that no other process on this machine holds (held from now
    on, until this process ends)."""
    domain = first
    while domain <= MAX_DOMAIN:
        f = open(_lock_path("ros_domain_%d" % domain), "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            domain += step
            continue
        _held.append(f)
        return domain
    raise pytest.UsageError("no free ROS domain from %d in steps of %d up to %d: export another ROS_DOMAIN_ID"
                            % (first, step, MAX_DOMAIN))


def _worker():
    """(index K of worker gwK, number of workers) under xdist, else None."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not name.startswith("gw"):
        return None
    return int(name[2:]), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def _domain():
    base = os.environ.get("ROS_DOMAIN_ID", "").strip()
    base = int(base) if base.isdigit() else 101 + os.getpid() % 100
    worker = _worker()
    if worker is None:
        return claim_domain(base, 1)
    k, n = worker
    return claim_domain(base + k, n)


def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) and _worker() is None:
        # the xdist controller runs no test: the workers take the domains, and share this run's locks
        os.environ["JETHEXA_TEST_RUN"] = "%d_%s" % (os.getpid(), uuid.uuid4().hex[:8])
        return
    os.environ["ROS_DOMAIN_ID"] = str(_domain())


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and _worker() is None:
        print("\nno test matched the selection: nothing was tested (exit status 5)", file=sys.stderr)


def pytest_unconfigure(config):
    if getattr(config.option, "numprocesses", None) and _worker() is None:
        for name in ("turnstile", "gate"):
            try:
                os.remove(_lock_path("%s_%s" % (os.environ.get("JETHEXA_TEST_RUN", ""), name)))
            except OSError:
                pass


# ---------------------------------------------------------------------------------------------- serial tests
def _run_locks():
    """(turnstile, gate) lock files of this xdist run (one pair per run, shared by its workers), or None."""
    run = os.environ.get("JETHEXA_TEST_RUN")
    if _worker() is None or not run:
        return None
    return tuple(open(_lock_path("%s_%s" % (run, name)), "a") for name in ("turnstile", "gate"))


_LOCKS = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under xdist: a ``serial`` test holds the run's gate alone (setup, call and teardown), every other test
    shares it; the turnstile keeps new tests from slipping in while a serial test waits for the gate."""
    if not _LOCKS:
        _LOCKS.append(_run_locks())
    locks = _LOCKS[0]
    if locks is None:
        yield
        return
    turnstile, gate = locks
    serial = item.get_closest_marker("serial") is not None
    fcntl.flock(turnstile, fcntl.LOCK_EX)
    try:
        fcntl.flock(gate, fcntl.LOCK_EX if serial else fcntl.LOCK_SH)
    finally:
        fcntl.flock(turnstile, fcntl.LOCK_UN)
    try:
        yield
    finally:
        fcntl.flock(gate, fcntl.LOCK_UN)


# ---------------------------------------------------------------------------------------------- CPU per test
def _cpu_s():
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item._cpu_start = _cpu_s()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Each test's CPU time (this process and the processes it started and waited for, setup to teardown) as the
    property ``cpu_s`` of its JUnit XML record (``scripts/test_durations.py`` sums it per file)."""
    yield
    start = getattr(item, "_cpu_start", None)
    if start is not None:
        item.user_properties.append(("cpu_s", "%.2f" % (_cpu_s() - start)))
