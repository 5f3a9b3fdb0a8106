"""sim.csv_format: the compiled CSV text is Python's ``"%.9g" %`` text, character for character (oracle: Python's
correctly rounded formatter), across magnitudes, at the rounding and decade boundaries, and for the values it
leaves to Python (NaN, infinities, tiny and huge magnitudes)."""
import numpy as np

from jethexa_dynamics.sim.csv_format import _format_block, format_rows


def _python(block):
    fmt = ",".join(["%.9g"] * block.shape[1]) + "\n"
    return "".join(fmt % tuple(row) for row in block.tolist())


def _steps(x, n):
    """x moved n ulps (n < 0: down)."""
    for _ in range(abs(n)):
        x = np.nextafter(x, np.inf if n > 0 else -np.inf)
    return float(x)


def _edge_values():
    v = [0.0, -0.0, np.nan, np.inf, -np.inf, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308]
    for k in range(-20, 35):                      # powers of ten and their neighbours (decade of the exponent)
        v += [_steps(10.0 ** k, u) for u in (-2, -1, 0, 1, 2)]
    for k in range(-16, 32):                      # the 9th digit's rounding carries into the next decade
        for base in (9.999999995, 9.9999999995, 1.000000005, 9.99999999):
            v += [_steps(base * 10.0 ** k, u) for u in (-3, -1, 0, 1, 3)]
    v += [(2 * i + 1) / 2.0 ** 12 for i in range(1000)]          # exact binary values, many exact decimal ties
    v += [i + 0.5 for i in range(123456780, 123457780)]         # ties at the 10th significant digit
    v += [1e-4, 9.99999999e-5, 0.0001234567891, 123456789.0, 1234567890.0, 1e9, 100.0, 1.5, -2.5e-7]
    return np.array(v)


def test_same_text_as_python_percent_format():
    rng = np.random.default_rng(11)
    n = 60000
    values = np.concatenate([
        rng.choice([-1.0, 1.0], n) * 10.0 ** rng.uniform(-18.0, 33.0, n),    # every notation and fallback range
        rng.normal(size=n),                                                  # angles, positions
        rng.normal(size=n) * 10.0 ** rng.integers(-6, 4, n),                 # twists, forces
        _edge_values()])
    values = np.concatenate([values, np.zeros(-len(values) % 40)])
    block = values.reshape(-1, 40)
    assert format_rows(block) == _python(block)
    assert format_rows(block[:1, :7]) == _python(block[:1, :7])


def test_typical_rows_stay_compiled_and_unusual_values_go_to_python():
    """The oracle test above would pass if every row fell back to Python: check the split itself."""
    rng = np.random.default_rng(12)
    block = np.hstack([rng.normal(size=(300, 30)), np.zeros((300, 3)), np.ones((300, 3))])
    block[5, 2], block[7, 0], block[9, 1] = np.nan, 1e-20, -np.inf
    out = np.empty(block.size * 16 + len(block), dtype=np.uint8)
    line_end = np.zeros(len(block), dtype=np.int64)
    python_rows = np.zeros(len(block), dtype=np.bool_)
    _format_block(block, out, line_end, python_rows)
    assert np.flatnonzero(python_rows).tolist() == [5, 7, 9]
    assert format_rows(block) == _python(block)
