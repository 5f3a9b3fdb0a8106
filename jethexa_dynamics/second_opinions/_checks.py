"""Input checks shared by the second-opinion models: every error names the offending field."""
import numpy as np


def finite_array(value, field, ndim_choices, last_dim=None):
    """``value`` as a float array with one of ``ndim_choices`` dimensions and finite entries."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim not in ndim_choices:
        raise ValueError(f"{field}: expected {' or '.join(str(n) for n in ndim_choices)} dimensions, "
                         f"got shape {arr.shape}")
    if last_dim is not None and arr.shape[-1] != last_dim:
        raise ValueError(f"{field}: last dimension must be {last_dim}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{field}: contains NaN or inf")
    return arr


def leg_frames(value, field, last_dim):
    """Per-leg vectors of one frame (N, d) or of T frames (T, N, d), N >= 1, as (T, N, d) and a flag that
    the input was a single frame."""
    arr = finite_array(value, field, (2, 3), last_dim=last_dim)
    single = arr.ndim == 2
    if single:
        arr = arr[None]
    if arr.shape[1] < 1:
        raise ValueError(f"{field}: need at least 1 foot")
    return arr, single


def per_leg(value, field, shape, positive=False, nonnegative=False):
    """Broadcast a scalar / per-leg / per-frame-and-leg parameter to ``shape`` (frames, legs)."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 1 and len(shape) == 2 and arr.shape[0] != shape[1]:
        raise ValueError(f"{field}: {arr.shape[0]} values for {shape[1]} legs")
    try:
        arr = np.broadcast_to(arr, shape)
    except ValueError:
        raise ValueError(f"{field}: shape {np.shape(value)} does not match (frames, legs) = {shape}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{field}: contains NaN or inf")
    if positive and np.any(arr <= 0):
        raise ValueError(f"{field}: must be > 0")
    if nonnegative and np.any(arr < 0):
        raise ValueError(f"{field}: must be >= 0")
    return arr


def positive_scalar(value, field):
    v = float(value)
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"{field}: must be a finite number > 0, got {value!r}")
    return v


def kernel_array(value):
    """A writeable C-contiguous float64 copy: the one array type the compiled kernels are built for (a read-only
    or strided view, e.g. from ``np.broadcast_to``, would compile another signature on first use)."""
    return np.array(value, dtype=float, order="C")
