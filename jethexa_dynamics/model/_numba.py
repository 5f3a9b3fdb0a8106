"""numba when available (it is a dependency, also on the robot's aarch64); otherwise plain Python, so the
same single implementation still runs (slowly) where numba cannot be installed.

``cview(a, start, shape)``: the C-contiguous view of ``shape`` that starts at flat element ``start`` of the
C-contiguous array ``a`` (= ``a.ravel()[start:start + prod(shape)].reshape(shape)``, no copy, no checks: the
caller owns the layout). Compiled, it only fills in an array header; numba's ``reshape`` costs ~20-30 ns per
call in checks (7 of them made ~0.2 µs of every kernel call, bench_model 2026-11-23).
"""
import math

try:  # pragma: no cover - exercised implicitly
    from numba import njit, types
    from numba.core import cgutils
    from numba.extending import intrinsic, overload
    from numba.np.arrayobj import make_array, populate_array
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return lambda f: f

    def overload(*args, **kwargs):
        return lambda f: f


#: How the kernels' helpers are inlined. "always" (numba IR inlining) makes the public kernels ~25 % faster on
#: numba 0.68 (mass matrix 3.45 vs 4.55 µs through the API, forward dynamics 5.9 vs 7.2 µs; jethexa-warmup 85 s,
#: 0.56 GB peak). Older numba spends minutes and gigabytes on it: 0.55.2 took >10 CPU-minutes and ~13 GB for
#: one kernel, 0.57.1 passed 6 GB after 6 CPU-minutes with the warm-up unfinished -- more than the Jetson
#: Nano's 4 GB, so the first start would never end there. Below numba 0.60 the helpers are compiled apart and
#: LLVM decides ("never": jethexa-warmup 47 s, 0.45 GB on numba 0.68). Same arithmetic, same results.
if HAVE_NUMBA:
    import numba

    NUMBA_VERSION = tuple(int(x) for x in numba.__version__.split(".")[:2])
else:  # pragma: no cover
    NUMBA_VERSION = (0, 0)
INLINE = "always" if NUMBA_VERSION >= (0, 60) else "never"


def cview(a, start, shape):
    if not a.flags.c_contiguous:
        raise ValueError("cview: the array must be C-contiguous")
    return a.reshape(-1)[start:start + math.prod(shape)].reshape(shape)


if HAVE_NUMBA:
    @intrinsic
    def _cview(typingctx, a, start, shape):
        ndim = len(shape)
        retty = types.Array(a.dtype, ndim, "C", readonly=not a.mutable)

        def codegen(context, builder, sig, args):
            src = make_array(sig.args[0])(context, builder, args[0])
            dims = cgutils.unpack_tuple(builder, args[2], ndim)
            itemsize = context.get_constant(types.intp, context.get_abi_sizeof(context.get_data_type(a.dtype)))
            strides = [itemsize]
            for d in reversed(dims[1:]):
                strides.insert(0, builder.mul(strides[0], d))
            view = make_array(retty)(context, builder)
            populate_array(view, data=cgutils.gep_inbounds(builder, src.data, args[1]), shape=dims, strides=strides,
                           itemsize=itemsize, meminfo=src.meminfo, parent=src.parent)
            out = view._getvalue()
            context.nrt.incref(builder, retty, out)  # the view shares (and keeps alive) a's memory
            return out

        return retty(a, start, shape), codegen

    @overload(cview, inline="always")
    def _cview_typed(a, start, shape):
        if isinstance(a, types.Array) and a.layout == "C":  # (other layouts: no implementation, a typing error)
            return lambda a, start, shape: _cview(a, start, shape)
