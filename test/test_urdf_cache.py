"""model.urdf_cache: the cached URDF model and description are those of a fresh parse (oracle: parse_urdf +
describe), an edited URDF never gets a stale entry, a corrupt entry is rebuilt."""
import dataclasses
import os
import pickle

import numpy as np
import pytest

from jethexa_dynamics.model import LeggedRobot, urdf_cache
from jethexa_dynamics.model.description import describe
from jethexa_dynamics.model.robot import _bundled_urdf
from jethexa_dynamics.model.urdf import parse_urdf


def _same(a, b):
    """Equal to the bit: arrays (dtype, shape, bytes), dataclasses field by field, containers, scalars."""
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes())
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and (a == b or a != a and b != b)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "urdf"


def test_cached_load_is_a_fresh_parse(cache_dir, monkeypatch):
    path = _bundled_urdf()
    fresh = parse_urdf(path)
    fresh = (fresh, describe(fresh))
    first = urdf_cache.load(path)
    assert len(os.listdir(cache_dir)) == 1 and _same(first, fresh)
    monkeypatch.setattr(urdf_cache.urdf, "parse_urdf", lambda p: pytest.fail("parsed again"))
    again = urdf_cache.load(path)
    assert _same(again, fresh) and again[1] is not first[1]          # a new object each time
    assert _same(LeggedRobot.from_urdf(path).kernel_buffer, LeggedRobot.jethexa().kernel_buffer)


def test_edited_urdf_gets_its_own_entry_and_a_corrupt_one_is_rebuilt(cache_dir, tmp_path):
    text = open(_bundled_urdf()).read()
    heavy = tmp_path / "heavy.urdf"
    heavy.write_text(text.replace('<mass value="1.35"/>', '<mass value="2.35"/>', 1))
    assert urdf_cache.load(_bundled_urdf())[1].body_mass == pytest.approx(1.35)
    assert urdf_cache.load(str(heavy))[1].body_mass == pytest.approx(2.35)
    assert len(list(cache_dir.iterdir())) == 2
    entry = cache_dir / (urdf_cache._key(heavy.read_bytes()) + ".pickle")
    entry.write_bytes(b"not a pickle")
    assert urdf_cache.load(str(heavy))[1].body_mass == pytest.approx(2.35)
    assert pickle.loads(entry.read_bytes())[1].body_mass == pytest.approx(2.35)      # rebuilt and stored
