"""Wall-time statistics shared by the predictors (``predictors``)."""
import math

import numpy as np


def cycle_stats(wall):
    """Percentiles of wall times ``wall`` (s, any sequence): {'n', 'p50', 'p99', 'mean', 'max'}
    (NaN statistics and n = 0 when empty)."""
    if not len(wall):
        return {"n": 0, "p50": math.nan, "p99": math.nan, "mean": math.nan, "max": math.nan}
    a = np.asarray(wall, dtype=float)
    return {"n": len(a), "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99)),
            "mean": float(a.mean()), "max": float(a.max())}
