# Source me from the repository root: a numba cache keyed on the package sources. numba's own cache
# does not notice when a called kernel (model/kernels.py) changes under a cached caller (sim/engine.py),
# so a new source tree gets a fresh cache directory instead of stale machine code.
# (the key is jethexa_dynamics.kernel_cache.source_hash, the one every other installation uses; stdlib only)
_jh_src_hash=$(PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} python3 -c \
  'from jethexa_dynamics.kernel_cache import source_hash; print(source_hash())')
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$PWD/.venv/numba-cache/$_jh_src_hash}
unset _jh_src_hash
