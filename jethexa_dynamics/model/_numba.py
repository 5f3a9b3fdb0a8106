"""numba when available (it is a dependency, also on the robot's aarch64); otherwise plain Python, so the
same single implementation still runs (slowly) where numba cannot be installed."""
try:  # pragma: no cover - exercised implicitly
    from numba import njit
    from numba.extending import overload
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda f: f

    def overload(*args, **kwargs):
        return lambda f: f
