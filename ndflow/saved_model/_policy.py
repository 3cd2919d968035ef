"""What a loaded graph may ask for: the loader's rules for the primitives whose parameters name
something outside the graph.

A saved model is data, so a file could be written by anyone. Computations (primitives without
an effect) only transform their inputs; their parameters are numbers, shapes and dtypes. Effects
are where a file could give itself powers, so each effect primitive has a rule here, looked up
by the primitive itself (not its name), and an effect without a rule is refused:

* `print` writes to stdout, stderr or Python's logging; a `file://` stream (appending to any
  file the process may write) is refused unless the caller passes `allow_file_writes=True`.
* `random_draw` calls a sampling method of the global NumPy stream: the method must be a
  sampler (not `seed`, `set_state`, `shuffle` or anything private), no array may be passed as
  `out=`, and the stream must be the global one (a file cannot name another).
* Variable reads and writes must name one of the file's own Variables.
* Checks (`check_numerics`, `assert`, `assert_equal`) only raise; control flow runs sub-graphs
  whose nodes are checked like any other.
* Summary writes, `numpy_function` and the collective all-reduce need a live Python object (a
  writer, a function, a group of replicas) that no file can hold: refused.

Every refusal is a `FormatError` (a ValueError) naming the file, the graph and the node.
"""
import numpy as np

from ..core import dtypes as _dt
from ..primitives.host import print_p, _LOG_LEVELS
from ..primitives.misc import check_numerics_p
from ..primitives.random import random_draw_p
from ..train.variable import Variable, read_var_p, assign_var_p
# the modules that own the primitives _rules names (the loader's primitive table imports them too)
from .. import summary, debugging
from ..graph import control
from ..autodiff import functional
from ..distribute import collective

# RandomState/Generator methods a graph may never call: they change or expose the stream's
# state, or permute an array in place
_NOT_SAMPLERS = frozenset({"seed", "set_state", "get_state", "shuffle", "bit_generator",
                           "spawn", "jumped", "advance", "bytes"})


def _samplers():
    out = set()
    for cls in (np.random.RandomState, np.random.Generator):
        out.update(n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n)))
    return frozenset(out - _NOT_SAMPLERS)


class Refused(Exception):
    """A node the loader will not build (the message says why); `load` adds where."""


def _print_rule(params, n_inputs, allow_file_writes):
    stream, parts = params.get("stream"), params.get("parts")
    if not isinstance(parts, (list, tuple)) or len(parts) != n_inputs + 1 or \
            not all(isinstance(p, str) for p in parts):
        raise Refused(f"its 'parts' must be {n_inputs + 1} strings, got {parts!r:.80}")
    if not isinstance(params.get("summarize"), (int, type(None))):
        raise Refused(f"its 'summarize' must be an integer, got {params.get('summarize')!r:.40}")
    if stream in ("stdout", "stderr"):
        return
    if isinstance(stream, str) and stream.startswith("log:") and stream[4:] in _LOG_LEVELS:
        return
    if isinstance(stream, str) and stream.startswith("file://"):
        if allow_file_writes:
            return
        raise Refused(f"it appends to the file {stream[len('file://'):]!r:.200} each time the "
                      f"function runs; a loaded file may not write elsewhere unless you pass "
                      f"allow_file_writes=True to nf.saved_model.load")
    raise Refused(f"its output stream {stream!r:.80} is not stdout, stderr, log:<level> or "
                  f"file://<path>")


def _draw_rule(params, n_inputs, allow_file_writes):
    method = params.get("method")
    if not isinstance(method, str) or method not in _SAMPLERS:
        raise Refused(f"its method {method!r:.80} is not a sampling method of NumPy's random "
                      f"stream")
    if params.get("rs") is not None or params.get("xp") is not None:
        raise Refused("a loaded draw uses the global random stream; the file names another")
    names, static = params.get("names"), params.get("static")
    if not isinstance(names, (list, tuple)) or len(names) != n_inputs or \
            not all(isinstance(n, str) and n != "out" for n in names):
        raise Refused(f"its array arguments {names!r:.80} are not {n_inputs} names (other "
                      f"than 'out')")
    if not isinstance(static, (list, tuple)) or not all(
            isinstance(kv, (list, tuple)) and len(kv) == 2 and isinstance(kv[0], str)
            and kv[0] != "out" for kv in static):
        raise Refused(f"its static arguments {static!r:.80} are not (name, value) pairs")
    try:
        _dt.canonical(params.get("dtype"))
    except TypeError as e:
        raise Refused(str(e)) from None


def _variable_rule(params, n_inputs, allow_file_writes):
    if not isinstance(params.get("var"), Variable):
        raise Refused(f"its 'var' is {params.get('var')!r:.60}, not one of the file's "
                      f"Variables")


def _harmless(params, n_inputs, allow_file_writes):
    pass


def _live_object(what):
    def rule(params, n_inputs, allow_file_writes):
        raise Refused(f"it needs {what}, a live Python object no file can hold")
    return rule


_RULES = None


def _rules():
    global _RULES
    if _RULES is None:
        global _SAMPLERS
        _SAMPLERS = _samplers()
        _RULES = {
            print_p: _print_rule, random_draw_p: _draw_rule,
            read_var_p: _variable_rule, assign_var_p: _variable_rule,
            check_numerics_p: _harmless, debugging._assert_equal_p: _harmless,
            summary.write_summary_p: _live_object("a summary writer"),
            summary.flush_summary_p: _live_object("a summary writer"),
            functional.numpy_function_p: _live_object("a Python function"),
            functional.numpy_function_multi_p: _live_object("a Python function"),
            collective.all_reduce_sum_p: _live_object("a group of replicas"),
        }
        # control flow and `assert`: effects only through their sub-graphs, whose nodes the
        # loader checks one by one
        for p in (control.cond_effect_p, control.while_effect_p, control.scan_effect_p,
                  control.assert_p):
            _RULES[p] = _harmless
    return _RULES


_SAMPLERS = frozenset()


def check_node(prim, params, n_inputs, allow_file_writes):
    """Raise `Refused` unless a loaded graph may hold this node."""
    if prim.fused:
        raise Refused("it is a compiled kernel, which a saved graph never holds")
    if not prim.effect:
        return
    rule = _rules().get(prim)
    if rule is None:
        raise Refused(f"'{prim.name}' is an effect this ndflow has no loading rule for")
    rule(params, n_inputs, allow_file_writes)
