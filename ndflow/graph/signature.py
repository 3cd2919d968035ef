"""`input_signature` and `TensorSpec`: which arguments a compiled function takes, and how a
call's arguments are matched against them (as `tf.function` binds and converts them)."""
import inspect

import numpy as np

from ..core.ndarray import ndarray
from ..core import tree, dtypes as _dt
from .. import numpy as tnp


class TensorSpec:
    """Shape (None = any size) and dtype of an `nf.function` argument."""

    def __init__(self, shape=None, dtype=np.float32, name=None):
        self.shape = None if shape is None else tuple(None if d is None else int(d) for d in shape)
        self.dtype = _dt.canonical(dtype)
        self.name = name

    def is_compatible_with(self, x):
        s = tuple(x.shape)
        if np.dtype(x.dtype) != self.dtype:
            return False
        if self.shape is None:
            return True
        return len(s) == len(self.shape) and all(a is None or a == b for a, b in zip(self.shape, s))

    def __repr__(self):
        return "TensorSpec(shape=%s, dtype=%s, name=%r)" % (self.shape, self.dtype.name, self.name)

    def __eq__(self, o):
        return isinstance(o, TensorSpec) and (self.shape, self.dtype) == (o.shape, o.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))


class Signature:
    """An `input_signature` (a sequence with one entry per argument: TensorSpecs in lists,
    tuples, namedtuples and dicts) of the Python function `fn`."""

    def __init__(self, sig, fn, name):
        if isinstance(sig, (TensorSpec, dict)) or not isinstance(sig, (list, tuple)):
            raise TypeError(f"nf.function {name!r}: input_signature must be a list or tuple "
                            f"with one entry per argument, got {type(sig).__name__}")
        for leaf in tree.flatten(list(sig)):
            if not isinstance(leaf, TensorSpec):
                raise TypeError(f"nf.function {name!r}: input_signature holds "
                                f"{type(leaf).__name__} {leaf!r}; it must be made of "
                                f"TensorSpecs (in lists, tuples and dicts)")
        self.specs, self.fn, self.name = list(sig), fn, name
        self._params_cache = None     # the parameters the signature describes (see _params)

    def canonical(self, args, kwargs=None):
        """The call's arguments as the input_signature describes them: one per spec at the top
        of the signature, bound to the function's parameters as Python binds them (by position
        or by name; a parameter left out takes its default), each matched against its spec's
        structure (a TensorSpec takes the whole value: a list of numbers is one array)."""
        n = len(self.specs)
        args = list(args)
        if kwargs or len(args) < n:
            args = self._bind(args, dict(kwargs or {}))
        if len(args) != n:
            raise TypeError(f"{self.name}: the input_signature describes {n} argument"
                            f"{'s' if n != 1 else ''}, got {len(args)} (when input_signature "
                            f"is given, only arguments it covers can be passed)")
        return tuple(self._tree(a, s, self._param_name(i))
                     for i, (a, s) in enumerate(zip(args, self.specs)))

    def _params(self):
        """[(name, default, by_keyword)] of the Python function's positional parameters (the
        ones an input_signature describes, in order); None for what *args takes."""
        if self._params_cache is None:
            params = []
            try:
                sig = inspect.signature(self.fn)
            except (TypeError, ValueError):
                sig = None
            for p in (sig.parameters.values() if sig is not None else ()):
                if p.kind is p.VAR_POSITIONAL:
                    params.append(None)
                    break
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                    params.append((p.name, p.default, p.kind is p.POSITIONAL_OR_KEYWORD))
            self._params_cache = params
        return self._params_cache

    def _param_name(self, i):
        params = self._params()
        p = params[i] if i < len(params) else None
        return "argument %d" % i if p is None else "argument %r" % p[0]

    def _bind(self, args, kwargs):
        """Positional arguments for the signature's parameters, from `args` and `kwargs`."""
        params = self._params()
        for i in range(len(args), len(self.specs)):
            p = params[i] if i < len(params) else None
            if p is None:
                break                       # (*args: only positional arguments reach it)
            name, default, by_keyword = p
            if name in kwargs and by_keyword:
                args.append(kwargs.pop(name))
            elif default is not inspect.Parameter.empty:
                args.append(default)
            else:
                raise TypeError(f"{self.name}() missing required argument {name!r}")
        for name in kwargs:
            if any(p is not None and p[0] == name for p in params[:len(args)]):
                raise TypeError(f"{self.name}() got multiple values for argument {name!r}")
        if kwargs:
            raise TypeError(f"{self.name}: argument{'s' if len(kwargs) > 1 else ''} "
                            f"{', '.join(map(repr, sorted(kwargs)))} not described by the "
                            f"input_signature (when input_signature is given, only arguments "
                            f"it covers can be passed, as in tf.function)")
        return args

    def _tree(self, x, s, where):
        """`x` matched against the signature structure `s` (TensorSpecs in lists, tuples,
        namedtuples and dicts): the signature's structure with an array for each spec."""
        if isinstance(s, TensorSpec):
            x = conform(x, s, self.name)
            if not s.is_compatible_with(x):
                raise TypeError(f"{self.name}: {where} of shape {tuple(x.shape)} and dtype "
                                f"{x.dtype.name} does not match the input_signature {s}")
            return x
        if isinstance(s, dict):
            if not isinstance(x, dict) or set(x) != set(s):
                raise TypeError(f"{self.name}: {where} should be a dict with the keys "
                                f"{sorted(s, key=repr)} of the input_signature, got "
                                f"{_describe_value(x)}")
            return {k: self._tree(x[k], v, f"{where}[{k!r}]") for k, v in s.items()}
        if not isinstance(x, (list, tuple)) or len(x) != len(s):
            raise TypeError(f"{self.name}: {where} should be a sequence of {len(s)} values as "
                            f"the input_signature's {_describe_spec(s)}, got "
                            f"{_describe_value(x)}")
        items = [self._tree(a, b, f"{where}[{i}]") for i, (a, b) in enumerate(zip(x, s))]
        return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)

    def key(self, key, leaves):
        """The cache key of a call under the input_signature: the dtypes (not the sizes: None
        sizes share one graph), and the rank where a spec has none (one graph per rank)."""
        specs = tree.flatten(self.specs)
        parts = []
        for x, s in zip(leaves, specs):
            parts.append(("T", np.dtype(x.dtype)) if s.shape is not None else
                         ("T", np.dtype(x.dtype), len(x.shape)))
        return ("sig",) + key[2:] + (tuple(parts),)


def conform(x, s, name):
    """`x` as an array for TensorSpec `s`, never silently cast (as TensorFlow): an array
    (ndflow, NumPy, a NumPy scalar, a Variable's value) must have the spec's dtype; Python
    data converts only where its values are kept (ints into a float spec, not floats into
    an int spec; an int that does not fit is an error)."""
    conv = getattr(x, "_ndflow_array_", None)
    if conv is not None:
        x = conv()
    if isinstance(x, (ndarray, np.ndarray, np.generic)):
        if np.dtype(x.dtype) != s.dtype:
            raise TypeError(f"{name}: argument of dtype {np.dtype(x.dtype).name} does "
                            f"not match the input_signature {s} (no implicit cast; "
                            f"convert it with nf.cast or .astype)")
        return x if isinstance(x, ndarray) else tnp.asarray(x)
    try:
        probe = np.asarray(x)
    except Exception as e:
        raise TypeError(f"{name}: argument {x!r} cannot be converted for the "
                        f"input_signature {s}: {e}") from None
    src, dst = probe.dtype, s.dtype
    ok = src.kind == dst.kind or (src.kind in "iu" and dst.kind in "iufc") or \
        (src.kind == "f" and dst.kind == "c") or (src.kind == "b" and dst.kind == "b")
    if not ok or src.kind not in "biufc":
        raise TypeError(f"{name}: argument {x!r} (Python data of dtype {src.name}) "
                        f"does not match the input_signature {s}")
    with np.errstate(all="ignore"):
        conv = probe.astype(dst)
    lost = (dst.kind in "iu" and not np.array_equal(conv.astype(src), probe)) or \
        (dst.kind in "fc" and bool(np.any(np.isfinite(probe) & ~np.isfinite(conv))))
    if lost:
        raise ValueError(f"{name}: argument {x!r} does not fit the dtype "
                         f"{dst.name} of the input_signature {s}")
    return tnp.asarray(conv)


def _describe_spec(s):
    return repr(tree.unflatten(tree.flatten_with_def(s)[1],
                               ["TensorSpec"] * len(tree.flatten(s))))


def _describe_value(x):
    if isinstance(x, (ndarray, np.ndarray)):
        return "an array of shape %s" % (tuple(x.shape),)
    if isinstance(x, (list, tuple)):
        return "a %s of %d values" % (type(x).__name__, len(x))
    if isinstance(x, dict):
        return "a dict with the keys %s" % sorted(x, key=repr)
    return "%s %r" % (type(x).__name__, x)
