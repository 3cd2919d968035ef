"""The graph IR as JSON data and back: primitives by registered name, parameters through a
small typed encoder, sub-graphs nested, tensors (constants, array parameters) set aside for the
tensor file. Nothing here evaluates text from a file: decoding is a lookup per tag.

Parameter encoding (JSON values stand for themselves where JSON has them):

    None, bool, int, str, finite float, list    as JSON
    {"$": "float", "v": "nan" | "inf" | "-inf"}  non-finite floats
    {"$": "complex", "v": [re, im]}              (each part encoded as a float)
    {"$": "tuple", "v": [...]}                   {"$": "dict", "v": [[key, value], ...]}
    {"$": "slice", "v": [start, stop, step]}     {"$": "ellipsis"}
    {"$": "dtype", "v": "float32"}               a NumPy dtype (also scalar types: "type": true)
    {"$": "scalar", "dtype": "int64", "v": ...}  a NumPy scalar
    {"$": "tensor", "v": "<key in the tensor file>"}   an array
    {"$": "variable", "v": <index into the variables>}  a Variable (reads, writes)
    {"$": "graph", "v": {...}}                   a sub-graph (a branch, a loop body)

A graph is {"name", "inputs": [[id, shape, dtype]], "consts": [[id, shape, dtype, key]],
"nodes": [{"prim", "effect", "in": [ids], "out": [[id, shape, dtype]], "params", "loc"}],
"outputs": [ids]}; `None` sizes are JSON nulls. Anything else in a parameter (a Python function,
a random stream object) cannot be saved: a TypeError naming the primitive, the parameter and the
line that created it.
"""
import math

import numpy as np

from ..core import dtypes as _dt
from ..core.ndarray import ndarray, _wrap
from ..core.primitive import REGISTRY
from ..graph.ir import Graph, Node, Var, SubGraph
from ..train.variable import Variable
from . import _policy
# modules that `import ndflow` leaves for first use but whose primitives a saved graph may hold
# (summary writes, all-reduces, control flow, shape, custom gradients and numpy_function,
# Variable reads and writes, sorting, matrix decompositions, checks): imported for REGISTRY
from .. import summary, distribute, debugging  # noqa: F401
from ..primitives import sorting, linalg_decomp  # noqa: F401
from ..graph import control, function  # noqa: F401
from ..autodiff import functional  # noqa: F401


FORMAT = "ndflow.saved_model"
VERSION = 1
GRAPH_FILE = "saved_model.json"


class FormatError(ValueError):
    """A saved model that cannot be read (names the path and the reason)."""


def _dtype_name(d):
    return np.dtype(d).name


def _dtype(name, where):
    try:
        return _dt.canonical(name)
    except TypeError:
        raise FormatError(f"{where}: unknown dtype {name!r}") from None


def _shape(s):
    return [None if d is None else int(d) for d in s]


class Encoder:
    """Collects tensors ({key: NumPy array}) and Variables while encoding graphs."""

    def __init__(self):
        self.tensors = {}
        self.variables = []          # Variables in first-use order
        self._var_index = {}
        self._n = 0

    def tensor(self, a, prefix="t"):
        key = "%s/%d" % (prefix, self._n)
        self._n += 1
        self.tensors[key] = np.asarray(a.numpy() if isinstance(a, ndarray) else a)
        return key

    def variable(self, v):
        i = self._var_index.get(id(v))
        if i is None:
            i = self._var_index[id(v)] = len(self.variables)
            self.variables.append(v)
        return i

    def value(self, v, where):
        """Encode a parameter (or a constant output) value; `where` names it for errors."""
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            if math.isfinite(v):
                return v
            return {"$": "float", "v": repr(v)}
        if isinstance(v, complex):
            return {"$": "complex", "v": [self.value(v.real, where), self.value(v.imag, where)]}
        if isinstance(v, list):
            return [self.value(e, where) for e in v]
        if isinstance(v, tuple):
            return {"$": "tuple", "v": [self.value(e, where) for e in v]}
        if isinstance(v, dict):
            return {"$": "dict", "v": [[self.value(k, where), self.value(e, where)]
                                       for k, e in v.items()]}
        if isinstance(v, slice):
            return {"$": "slice", "v": [self.value(v.start, where), self.value(v.stop, where),
                                        self.value(v.step, where)]}
        if v is Ellipsis:
            return {"$": "ellipsis"}
        if isinstance(v, np.dtype):
            return {"$": "dtype", "v": _dtype_name(_dt.canonical(v))}
        if isinstance(v, type) and issubclass(v, np.generic):
            return {"$": "dtype", "v": _dtype_name(_dt.canonical(v)), "type": True}
        if isinstance(v, np.generic):
            return {"$": "scalar", "dtype": _dtype_name(_dt.canonical(v.dtype)),
                    "v": self.value(v.item(), where)}
        if isinstance(v, (np.ndarray, ndarray)):
            if isinstance(v, ndarray) and v._t is not None:
                raise TypeError(f"{where}: a symbolic array cannot be saved")
            return {"$": "tensor", "v": self.tensor(v, "p")}
        if isinstance(v, Variable):
            return {"$": "variable", "v": self.variable(v)}
        if isinstance(v, SubGraph):
            return {"$": "graph", "v": self.graph(v.graph)}
        raise TypeError(f"{where} is a {type(v).__module__}.{type(v).__qualname__}, which a "
                        f"saved model cannot hold (only numbers, strings, dtypes, slices, "
                        f"tuples, arrays, Variables and sub-graphs are data; a Python function "
                        f"or a random stream object is code or live state)")

    def graph(self, g):
        consts = []
        for c in g.consts:
            consts.append([c.id, _shape(c.shape), _dtype_name(c.dtype), self.tensor(c.const, "c")])
        nodes = []
        for n in g.nodes:
            params = {}
            for k, v in sorted(n.params.items()):
                where = f"parameter {k!r} of primitive '{n.prim.name}' (created at {n.loc})"
                params[k] = self.value(v, where)
            nodes.append({"prim": n.prim.name, "effect": bool(n.prim.effect),
                          "in": [v.id for v in n.inputs],
                          "out": [[o.id, _shape(o.shape), _dtype_name(o.dtype)] for o in n.outputs],
                          "params": params, "loc": str(n.loc)})
        return {"name": g.name,
                "inputs": [[v.id, _shape(v.shape), _dtype_name(v.dtype)] for v in g.inputs],
                "consts": consts, "nodes": nodes, "outputs": [v.id for v in g.outputs]}


def _primitive_table():
    table = {}
    for p in REGISTRY:
        table.setdefault(p.name, {})[bool(p.effect)] = p
    return table


_MAX_DIM = (1 << 63) - 1


def _is_int(v):
    return type(v) is int


class Decoder:
    """Rebuilds graphs from `Encoder` data, given the tensors and the new Variables. Every
    field is checked (a FormatError names the file and the field), and every node is checked
    against the loading rules (`_policy`): `allow_file_writes` is `load`'s opt-in."""

    def __init__(self, where, tensors, variables, allow_file_writes=False):
        self.where = where
        self.tensors = tensors
        self.variables = variables
        self.allow_file_writes = allow_file_writes
        self.prims = _primitive_table()

    def fail(self, why):
        raise FormatError(f"{self.where}: {why}")

    def tensor(self, key):
        a = self.tensors.get(key) if isinstance(key, str) else None
        if a is None:
            self.fail(f"the graph refers to tensor {key!r:.80}, which the tensor file lacks")
        return a

    def dtype(self, name, what):
        if not isinstance(name, str):
            self.fail(f"{what}: the dtype {name!r:.60} is not a dtype name")
        return _dtype(name, f"{self.where}: {what}")

    def shape(self, s, what):
        """A shape: a list of sizes, each a non-negative integer below 2**63 or null."""
        if not isinstance(s, list) or len(s) > 64:
            self.fail(f"{what}: the shape {s!r:.80} is not a list of at most 64 sizes")
        for d in s:
            if d is not None and not (_is_int(d) and 0 <= d <= _MAX_DIM):
                self.fail(f"{what}: the shape {s!r:.80} has the size {d!r:.40}, not a "
                          f"non-negative integer or null")
        return tuple(s)

    def value(self, v):
        if v is None or isinstance(v, (bool, str, int, float)):
            return v
        if isinstance(v, list):
            return [self.value(e) for e in v]
        if not isinstance(v, dict) or "$" not in v:
            self.fail(f"unreadable parameter value {v!r:.100}")
        tag = v["$"]
        try:
            return self._tagged(tag, v)
        except FormatError:
            raise
        except (KeyError, IndexError, TypeError, ValueError, OverflowError) as e:
            self.fail(f"malformed {tag!r:.40} value {v!r:.100} ({type(e).__name__}: {e})")

    def _tagged(self, tag, v):
        if tag == "float":
            if v["v"] not in ("nan", "inf", "-inf"):
                self.fail(f"unreadable float {v['v']!r:.40}")
            return float(v["v"])
        if tag == "complex":
            re, im = v["v"]
            re, im = self.value(re), self.value(im)
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (re, im)):
                self.fail(f"unreadable complex number {v['v']!r:.80}")
            return complex(re, im)
        if tag == "tuple":
            return tuple(self.value(e) for e in v["v"])
        if tag == "dict":
            return {self.value(k): self.value(e) for k, e in v["v"]}
        if tag == "slice":
            start, stop, step = (self.value(e) for e in v["v"])
            return slice(start, stop, step)
        if tag == "ellipsis":
            return Ellipsis
        if tag == "dtype":
            d = self.dtype(v["v"], "a dtype parameter")
            return d.type if v.get("type") else d
        if tag == "scalar":
            x = self.value(v["v"])
            if not isinstance(x, (int, float, complex)):
                self.fail(f"unreadable scalar {v!r:.80}")
            return self.dtype(v["dtype"], "a scalar parameter").type(x)
        if tag == "tensor":
            return self.tensor(v["v"])
        if tag == "variable":
            i = v["v"]
            if not _is_int(i) or not 0 <= i < len(self.variables):
                self.fail(f"the graph refers to variable {i!r:.40} of {len(self.variables)}")
            return self.variables[i]
        if tag == "graph":
            return SubGraph(self.graph(v["v"]))
        self.fail(f"unknown value tag {tag!r:.40}")

    def _var(self, entry, kind, env, const=None):
        if not isinstance(entry, list) or len(entry) < 3:
            self.fail(f"malformed value entry {entry!r:.100}")
        vid = entry[0]
        if not isinstance(vid, (int, str)) or isinstance(vid, bool):
            self.fail(f"malformed value id {vid!r:.40}")
        v = Var(self.shape(entry[1], f"value {vid!r}"), self.dtype(entry[2], f"value {vid!r}"),
                kind=kind, const=const)
        if vid in env:
            self.fail(f"value {vid!r} is defined twice")
        env[vid] = v
        return v

    def _node(self, n, gname, env):
        if not isinstance(n, dict) or not isinstance(n.get("prim"), str):
            self.fail(f"graph {gname!r:.80}: malformed node {n!r:.100}")
        name = n["prim"]
        twins = self.prims.get(name)
        if twins is None:
            self.fail(f"the graph {gname!r:.80} uses the primitive {name!r:.80}, which this "
                      f"ndflow does not have (saved by a newer or extended ndflow?)")
        if not isinstance(n.get("in"), list) or not isinstance(n.get("out"), list) or \
                not isinstance(n.get("params"), dict):
            self.fail(f"graph {gname!r:.80}: node {name!r} lacks its inputs, outputs or "
                      f"parameters")
        ins = []
        for i in n["in"]:
            if not isinstance(i, (int, str)) or i not in env:
                self.fail(f"node {name!r} uses value {i!r:.40} before it is defined")
            ins.append(env[i])
        params = {k: self.value(v) for k, v in n["params"].items()}
        # a control-flow primitive's twin follows its bodies, not the file's word for it
        subs = [e for v in params.values() for e in (v if isinstance(v, tuple) else (v,))
                if isinstance(e, SubGraph)]
        effect = any(s.effect for s in subs) if subs else bool(n.get("effect"))
        prim = twins.get(effect, next(iter(twins.values())))
        try:
            _policy.check_node(prim, params, len(ins), self.allow_file_writes)
        except _policy.Refused as e:
            self.fail(f"graph {gname!r:.80}: the node '{name}' (created at "
                      f"{str(n.get('loc', '?'))[:200]}) cannot be loaded: {e}")
        outs = [self._var(e, "v", env) for e in n["out"]]
        loc = n.get("loc", "<saved model>")
        return Node(prim, ins, params, outs, loc if isinstance(loc, str) else "<saved model>")

    def graph(self, d, env=None):
        env = {} if env is None else env
        if not isinstance(d, dict) or not all(
                isinstance(d.get(k), list) for k in ("inputs", "consts", "nodes", "outputs")):
            self.fail(f"malformed graph {d!r:.100}")
        gname = d.get("name")
        if not isinstance(gname, str):
            self.fail(f"graph name {gname!r:.80} is not a string")
        g = Graph(gname)
        g.inputs = [self._var(e, "a", env) for e in d["inputs"]]
        for e in d["consts"]:
            if not isinstance(e, list) or len(e) != 4:
                self.fail(f"graph {gname!r:.80}: malformed constant {e!r:.100}")
            a = self.tensor(e[3])
            c = self._var(e, "c", env, const=_wrap(a))
            if tuple(a.shape) != c.shape or a.dtype != c.dtype:
                self.fail(f"constant {e[0]} is declared {c.dtype}{list(c.shape)} but the "
                          f"tensor file holds {a.dtype}{list(a.shape)}")
            g.consts.append(c)
        for n in d["nodes"]:
            g.nodes.append(self._node(n, gname, env))
        for i in d["outputs"]:
            if not isinstance(i, (int, str)) or i not in env:
                self.fail(f"graph {gname!r:.80}: output {i!r:.40} is not a value of the graph")
        g.outputs = [env[i] for i in d["outputs"]]
        return g
