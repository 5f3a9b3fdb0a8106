# Source me from the repository root: a numba cache keyed on the package sources. numba's own cache
# does not notice when a called kernel (model/kernels.py) changes under a cached caller (sim/engine.py),
# so a new source tree gets a fresh cache directory instead of stale machine code.
_jh_src_hash=$(find jethexa_dynamics -name '*.py' -print0 | LC_ALL=C sort -z | xargs -0 cat | sha256sum | cut -c1-12)
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-$PWD/.venv/numba-cache/$_jh_src_hash}
unset _jh_src_hash
