"""dtypes and promotion.

ndflow's dtypes are NumPy's (so `x.dtype == np.float32` and `astype(np.float32)` just work);
bfloat16 comes from ml_dtypes. Promotion follows NumPy 2 (NEP 50: Python scalars are weak) in
'legacy' mode, and the JAX-style lattice in 'all' / 'safe' modes.
"""
import functools
import sys as _sys

import numpy as np

from .state import STATE

bool_ = np.bool_
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
float16, float32, float64 = np.float16, np.float32, np.float64
complex64, complex128 = np.complex64, np.complex128

# bfloat16 is ml_dtypes', whose import is a sixth of `import ndflow`: it is imported on first
# use of the name (`bfloat16` here, `nf.bfloat16`, `tnp.bfloat16`, canonical('bfloat16')), or
# bound as soon as anyone else imports it (_Watch). Until then no bfloat16 dtype exists in the
# process, and BFLOAT16 is a stand-in dtype that no array has, so every `d == BFLOAT16` is False
# exactly as it would be with the real one.


class _NotImported:
    def __repr__(self):
        return "<ndflow: ml_dtypes not imported, no bfloat16 exists yet>"


# (a variable-width string dtype whose missing-value marker is private to this module: no array
# can have it, and comparing a dtype with it costs what comparing with bfloat16 does, where a
# structured stand-in costs 3.7x on eager paths that check for bfloat16)
BFLOAT16 = np.dtypes.StringDType(na_object=_NotImported())
_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
_SUPPORTED_SET = frozenset(np.dtype(t) for t in (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, float32, float64, complex64, complex128))
_ON_BFLOAT16 = []      # callbacks(bfloat16 dtype) of modules keeping it in a global of their own


def _bind_bfloat16(ml_dtypes):
    global BFLOAT16, bfloat16, SUPPORTED, _SUPPORTED_SET
    if "bfloat16" in globals():
        return
    d = np.dtype(ml_dtypes.bfloat16)
    SUPPORTED = tuple(np.dtype(t) if t != "bfloat16" else d for t in _NAMES)
    _SUPPORTED_SET = frozenset(SUPPORTED)
    BFLOAT16 = d
    bfloat16 = ml_dtypes.bfloat16           # last: its presence says "bound"
    for f in _ON_BFLOAT16:
        f(d)
    try:
        _sys.meta_path.remove(_Watch)
    except ValueError:
        pass


def _load_bfloat16():
    if "bfloat16" not in globals():
        import ml_dtypes
        _bind_bfloat16(ml_dtypes)
    return BFLOAT16


class _Watch:
    """A meta path finder that finds nothing itself: when ml_dtypes is imported (by a user,
    another library or a checkpoint reader) it binds BFLOAT16 right after ml_dtypes runs, before
    any bfloat16 array can reach ndflow."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "ml_dtypes":
            return None
        for finder in _sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not cls else None
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _bind_bfloat16(module)
        loader.exec_module = exec_module
        return spec


if "ml_dtypes" in _sys.modules:
    _bind_bfloat16(_sys.modules["ml_dtypes"])
else:
    _sys.meta_path.insert(0, _Watch)


def __getattr__(name):
    if name in ("bfloat16", "SUPPORTED"):
        _load_bfloat16()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


F32, F64, I64, BOOL = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.bool_)
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)

PY_SCALARS = (bool, int, float, complex)


def canonical(dtype):
    """A NumPy dtype object from anything NumPy accepts as a dtype (and ml_dtypes' names)."""
    if dtype is None:
        return None
    if isinstance(dtype, np.dtype):
        d = dtype
    elif dtype == "bfloat16":
        d = _load_bfloat16()
    else:
        d = getattr(dtype, "as_numpy_dtype", None)  # TensorFlow-style dtype objects
        d = np.dtype(d if d is not None else dtype)
    if d not in _SUPPORTED_SET:
        raise TypeError(f"ndflow does not support dtype {d!r}; supported: " + ", ".join(_NAMES))
    return d


def is_float(d):
    return d.kind == "f" or d == BFLOAT16


def is_inexact(d):
    return d.kind in "fc" or d == BFLOAT16


def is_differentiable(d):
    return d.kind in "fc" or d == BFLOAT16


def default_float():
    return F32 if STATE.prefer_float32 else F64


def weak_dtype(v):
    """dtype a Python scalar gets on its own (np.asarray(v)), honouring prefer_float32."""
    t = type(v)
    if t is bool:
        return BOOL
    if t is int:
        return I64
    if t is float:
        return default_float()
    if t is complex:
        return C64 if STATE.prefer_float32 else C128
    raise TypeError(f"not a Python scalar: {v!r}")


# ---------------------------------------------------------------- JAX-style lattice ('all'/'safe')
def _kind_rank(d):
    if d == BOOL:
        return 0
    if d.kind in "ui":
        return 1
    if is_float(d):
        return 2
    return 3


def _lattice_pair(a, b, safe):
    if a == b:
        return a
    ka, kb = _kind_rank(a), _kind_rank(b)
    if ka == 0:
        return b
    if kb == 0:
        return a
    if ka == kb == 1:
        if a.kind == b.kind:
            return a if a.itemsize >= b.itemsize else b
        u, s = (a, b) if a.kind == "u" else (b, a)
        if s.itemsize > u.itemsize:
            return s
        if u.itemsize < 8:
            return np.dtype("int%d" % (u.itemsize * 16))
        if safe:
            raise TypeError(f"promoting {a} and {b} loses precision ('safe' mode)")
        return F64
    if ka != kb:
        lo, hi = (a, b) if ka < kb else (b, a)
        if safe and lo.kind in "ui" and hi != F64 and hi != C128 and lo.itemsize >= (hi.itemsize // (2 if hi.kind == "c" else 1)):
            raise TypeError(f"promoting {a} and {b} loses precision ('safe' mode); cast explicitly")
        if hi.kind == "c" and lo.kind != "c" and is_float(lo) and lo.itemsize > hi.itemsize // 2:
            return C128
        return hi
    if ka == 2:
        if {a, b} == {np.dtype(np.float16), BFLOAT16}:
            return F32
        return a if a.itemsize >= b.itemsize else b
    return a if a.itemsize >= b.itemsize else b


def result_type(*args):
    """Result dtype of combining arrays/dtypes/Python scalars, in the current promotion mode.

    Python scalars are weak (NEP 50): they take the array's dtype when their kind fits.
    """
    strong = []
    weak = []
    for a in args:
        if type(a) in PY_SCALARS:
            weak.append(a)
        elif isinstance(a, np.dtype):
            strong.append(a)
        else:
            d = getattr(a, "dtype", None)
            strong.append(np.dtype(d) if d is not None else canonical(a))
    if STATE.promotion == "legacy":
        if not strong:
            r = np.result_type(*[weak_dtype(w) for w in weak]) if len(weak) > 1 else weak_dtype(weak[0])
            if STATE.prefer_float32 and r == F64:
                r = F32
            return r
        if BFLOAT16 in strong or any(d.kind == "V" for d in strong):
            r = _bf16_result(strong, weak)
        else:
            r = np.result_type(*strong, *weak)
        if STATE.prefer_float32 and r == F64 and F64 not in strong:
            r = F32
        elif STATE.prefer_float32 and r == C128 and C128 not in strong and F64 not in strong:
            r = C64
        return r
    safe = STATE.promotion == "safe"
    r = None
    for d in strong:
        r = d if r is None else _lattice_pair(r, d, safe)
    for w in weak:
        wk = _kind_rank(weak_dtype(w))
        if r is None:
            r = np.dtype(np.int32) if type(w) is int else (F32 if type(w) is float else (C64 if type(w) is complex else BOOL))
        elif wk > _kind_rank(r):
            r = {2: F32, 3: C64}[wk] if _kind_rank(r) < 2 or wk == 3 and _kind_rank(r) == 2 and r.itemsize <= 4 else (C128 if wk == 3 else F32)
    return r


def _bf16_result(strong, weak):
    # NumPy's promotion with ml_dtypes' bfloat16: bf16 with itself or weak scalars stays bf16;
    # with int8/uint8/bool it stays bf16; otherwise float32 or wider, as ml_dtypes registers.
    if all(d == BFLOAT16 for d in strong) and not any(type(w) is complex for w in weak):
        return BFLOAT16   # NEP 50 (np.result_type(bf16, 2.0) says float64: it ignores weakness)
    try:
        return np.result_type(*strong, *weak)
    except TypeError:
        others = [d for d in strong if d != BFLOAT16]
        if not others:
            return BFLOAT16
        return np.result_type(F32, *others)


# ------------------------------------------------------------------ NumPy's ufunc loops
@functools.lru_cache(maxsize=4096)
def ufunc_loop(ufunc, types, mode, prefer32):
    """(input dtypes, output dtypes) of NumPy's loop for `ufunc` on operands of `types` (dtypes,
    or the Python scalar types, weak as NEP 50 has them); with `prefer32`, float64/complex128
    that no operand asked for become float32/complex64 (TensorFlow's switch). TypeError naming
    the types where NumPy has no loop."""
    try:
        loop = ufunc.resolve_dtypes(types + (None,) * ufunc.nout)
    except TypeError as e:
        raise TypeError(f"ufunc {ufunc.__name__!r} not supported for the input types "
                        f"{', '.join(getattr(t, 'name', getattr(t, '__name__', str(t))) for t in types)}"
                        f" ({e})") from None
    ins, outs = loop[:ufunc.nin], loop[ufunc.nin:]
    if prefer32:
        strong64 = any(isinstance(t, np.dtype) and t in (F64, C128) for t in types)
        if not strong64:
            swap = {F64: F32, C128: C64}
            ins = tuple(swap.get(d, d) for d in ins)
            outs = tuple(swap.get(d, d) for d in outs)
    return ins, outs


# (NumPy ufunc, id(dtype), partner type or None, partner first) -> (dtype, bool): same_loop
_SAME_LOOP = {}


def same_loop(ufunc, d, partner=None, partner_first=False):
    """Whether NumPy's loop for `ufunc` takes operands of dtype `d` as they are — all of them
    `d`, or with a Python int or float `partner` (before the array where `partner_first`), that
    partner as a `d` scalar — under NumPy's own promotion ('legacy', no float32 preference):
    the eager door's tape lane then binds the ufunc's primitive with no resolution per call.
    bfloat16 keeps the general path (NEP 50's rule)."""
    # keyed by the dtype's identity (hashing a NumPy dtype costs more than this whole check);
    # the entry holds the dtype, so the id names the same object while it lives
    key = (ufunc, id(d), partner, partner_first)
    e = _SAME_LOOP.get(key)
    if e is not None and e[0] is d:
        return e[1]
    ok = False
    if d != BFLOAT16 and type(d) is not type(BFLOAT16):
        if partner is None:
            types = (d,) * ufunc.nin
        else:
            types = (partner, d) if partner_first else (d, partner)
        try:
            ins, _ = ufunc_loop(ufunc, types, "legacy", False)
        except TypeError:
            pass
        else:
            ok = all(i == d for i in ins)
    if len(_SAME_LOOP) > 4096:
        _SAME_LOOP.clear()
    _SAME_LOOP[key] = (d, ok)
    return ok
