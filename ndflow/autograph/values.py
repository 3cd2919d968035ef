"""What the operators of converted code share: undefined variables, which values are traced,
conditions, arrays a body changes in place, and how errors name variables.

A value is *traced* when it is symbolic (inside `nf.function`) or batched (inside
`vectorized_map`); eager arrays decide in Python, as they would without conversion.
"""
import numpy as np

from ..core.ndarray import ndarray, symbolic, static_size as _static_size
from ..core import tree
from ..core.state import STATE
from ..core.variable import VariableBase
from .. import numpy as tnp

_PY_NUMBERS = (bool, int, float, complex)


# ------------------------------------------------------------------ undefined variables
class Undefined:
    """The value of a variable that has none yet (assigned in a branch or loop not run)."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "<undefined %s>" % self.name

    def _fail(self, *args, **kwargs):
        raise UnboundLocalError(f"local variable '{self.name}' referenced before assignment")

    __getattr__ = __call__ = __bool__ = __iter__ = __len__ = __getitem__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __rtruediv__ = __matmul__ = __rmatmul__ = __neg__ = __lt__ = __le__ = __gt__ = _fail
    __ge__ = __index__ = __int__ = __float__ = __array__ = _fail


def undefined(name):
    return Undefined(name)


def ld(scope, name):
    """`name`'s value in `scope` (a `locals()`), or an `Undefined` marker."""
    try:
        return scope[name]
    except KeyError:
        return Undefined(name)


# ------------------------------------------------------------------ predicates
def _value(x):
    return x.value() if isinstance(x, VariableBase) else x


def _is_variable(x):
    return isinstance(x, VariableBase)


def is_traced(x):
    x = _value(x)
    return isinstance(x, ndarray) and x._t is not None


def _pred(x, what, loc):
    """A traced condition as a boolean scalar (a number is true when nonzero, as `bool()`)."""
    x = _value(x)
    if _static_size(x) != 1:
        raise ValueError(f"the condition of {what} at {loc} must be a scalar (one element) to "
                         f"decide; got shape {tuple(x.shape)} (use tnp.any / tnp.all)")
    if x.ndim:
        x = tnp.reshape(x, ())
    if x.dtype != np.bool_:
        x = x != 0
    return x


# ------------------------------------------------------------------ arrays changed in place
# A traced branch or loop body gets its own array object for each variable it changes, so that
# `x[i] = v` or `x += y` there change that object (NumPy: in place) without touching the
# enclosing code's object while the body is traced. When the body gives that same object back
# changed, the enclosing object takes the result afterwards: every name bound to it sees the
# change, as in NumPy.
def _own(x):
    """`x` as an array object of the innermost trace (the same value), for a body to change."""
    if not isinstance(x, ndarray):
        return x
    t = STATE.traces[-1] if STATE.traces else None
    if t is None or not getattr(t, "is_graph", False) or x._t is t:
        return x
    return symbolic(t, t.to_var(x))


def _changed_in_place(own, start):
    return isinstance(own, ndarray) and own._v is not start


def _write_back(originals, results, positions):
    """The enclosing arrays at `positions` take the results (their bodies changed them in
    place); the results returned are those same objects."""
    results = list(results)
    for k in positions:
        orig = originals[k]
        orig._rebind(results[k])
        results[k] = orig
    return results


def _tensorlike(v):
    return isinstance(v, (ndarray, np.ndarray, np.generic)) or type(v) in _PY_NUMBERS


def _same_static(a, b):
    if a is b:
        return True
    if type(a) in _PY_NUMBERS and type(b) is type(a):
        return a == b
    return False


class _NeedValue(Exception):
    """An internal variable (a return value set in a loop) has no value in one branch yet."""

    def __init__(self, k, other):
        self.k, self.other = k, other


def _placeholder(leaves, d, arrays=False):
    """A value of the structure `(leaves, d)` (another path's value) for an internal variable
    that a path leaves undefined: the return value before any `return` ran. It is never read
    (the return flag says whether a return happened), only carried: zeros for arrays, the
    same Python values otherwise (as arrays too with `arrays`, for a loop to carry)."""
    out = []
    for x in leaves:
        if isinstance(x, ndarray):
            out.append(tnp.zeros(tuple(0 if n is None else n for n in x.shape), x.dtype))
        elif arrays and _tensorlike(x):
            out.append(tnp.asarray(x))
        else:
            out.append(x)
    return tree.unflatten(d, out)


def _shown(name):
    """How an error names a variable of the converted code."""
    if not name.isidentifier():
        return name                     # ("the return value", "the loop counter")
    if name.startswith(_INTERNAL):
        return _INTERNAL_NAMES.get(name.split("_")[2], "an internal variable")
    return "variable '%s'" % name


_INTERNAL = "_nfag_"
_RETVAL = "the return value"        # the Undefined of a return value (transformer.py)
_INTERNAL_NAMES = {"retval": "the return value", "ret": "the flag of a `return` in a loop",
                   "brk": "the flag of a `break`", "cnt": "the flag of a `continue`",
                   "wtest": "the test of a `while`", "bool": "the value of an `and`/`or`",
                   "ifexp": "the value of a conditional expression",
                   "arg": "an operand evaluated before an assignment expression"}
