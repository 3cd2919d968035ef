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
    # modules that `import ndflow` leaves for first use but whose primitives a saved graph
    # may hold (summary writes, all-reduces, control flow, shape, custom gradients and
    # numpy_function, Variable reads and writes, sorting, matrix decompositions)
    from .. import summary, distribute  # noqa: F401
    from ..primitives import sorting, linalg_decomp  # noqa: F401
    from ..graph import control, function  # noqa: F401
    from ..autodiff import functional  # noqa: F401
    from ..train import variable  # noqa: F401
    table = {}
    for p in REGISTRY:
        table.setdefault(p.name, {})[bool(p.effect)] = p
    return table


class Decoder:
    """Rebuilds graphs from `Encoder` data, given the tensors and the new Variables."""

    def __init__(self, where, tensors, variables):
        self.where = where
        self.tensors = tensors
        self.variables = variables
        self.prims = _primitive_table()

    def fail(self, why):
        raise FormatError(f"{self.where}: {why}")

    def tensor(self, key):
        a = self.tensors.get(key) if isinstance(key, str) else None
        if a is None:
            self.fail(f"the graph refers to tensor {key!r}, which the tensor file lacks")
        return a

    def value(self, v):
        if v is None or isinstance(v, (bool, str, int, float)):
            return v
        if isinstance(v, list):
            return [self.value(e) for e in v]
        if not isinstance(v, dict) or "$" not in v:
            self.fail(f"unreadable parameter value {v!r:.100}")
        tag = v["$"]
        try:
            if tag == "float":
                if v["v"] not in ("nan", "inf", "-inf"):
                    self.fail(f"unreadable float {v['v']!r}")
                return float(v["v"])
            if tag == "complex":
                return complex(self.value(v["v"][0]), self.value(v["v"][1]))
            if tag == "tuple":
                return tuple(self.value(e) for e in v["v"])
            if tag == "dict":
                return {self.value(k): self.value(e) for k, e in v["v"]}
            if tag == "slice":
                return slice(*(self.value(e) for e in v["v"]))
            if tag == "ellipsis":
                return Ellipsis
            if tag == "dtype":
                d = _dtype(v["v"], self.where)
                return d.type if v.get("type") else d
            if tag == "scalar":
                return _dtype(v["dtype"], self.where).type(self.value(v["v"]))
            if tag == "tensor":
                return self.tensor(v["v"])
            if tag == "variable":
                i = v["v"]
                if not isinstance(i, int) or not 0 <= i < len(self.variables):
                    self.fail(f"the graph refers to variable {i!r} of {len(self.variables)}")
                return self.variables[i]
            if tag == "graph":
                return SubGraph(self.graph(v["v"]))
        except (KeyError, IndexError, TypeError) as e:
            self.fail(f"malformed {tag!r} value {v!r:.100} ({e})")
        self.fail(f"unknown value tag {tag!r}")

    def _var(self, entry, kind, env, const=None):
        try:
            vid, shape, dtype = entry[0], entry[1], entry[2]
            shape = tuple(None if d is None else int(d) for d in shape)
        except (TypeError, ValueError, IndexError):
            self.fail(f"malformed value entry {entry!r:.100}")
        v = Var(shape, _dtype(dtype, self.where), kind=kind, const=const)
        if vid in env:
            self.fail(f"value {vid!r} is defined twice")
        env[vid] = v
        return v

    def graph(self, d, env=None):
        env = {} if env is None else env
        try:
            g = Graph(d["name"])
            g.inputs = [self._var(e, "a", env) for e in d["inputs"]]
            for e in d["consts"]:
                a = self.tensor(e[3])
                c = self._var(e, "c", env, const=_wrap(a))
                if tuple(a.shape) != c.shape or a.dtype != c.dtype:
                    self.fail(f"constant {e[0]} is declared {c.dtype}{list(c.shape)} but the "
                              f"tensor file holds {a.dtype}{list(a.shape)}")
                g.consts.append(c)
            for n in d["nodes"]:
                name = n["prim"]
                twins = self.prims.get(name)
                if twins is None:
                    self.fail(f"the graph {d['name']!r} uses the primitive {name!r}, which this "
                              f"ndflow does not have (saved by a newer or extended ndflow?)")
                prim = twins.get(bool(n.get("effect")), next(iter(twins.values())))
                try:
                    ins = [env[i] for i in n["in"]]
                except KeyError as e:
                    self.fail(f"node {name!r} uses value {e.args[0]!r} before it is defined")
                params = {k: self.value(v) for k, v in n["params"].items()}
                outs = [self._var(e, "v", env) for e in n["out"]]
                g.nodes.append(Node(prim, ins, params, outs, n.get("loc", "<saved model>")))
            g.outputs = [env[i] for i in d["outputs"]]
        except FormatError:
            raise
        except (KeyError, TypeError, IndexError) as e:
            self.fail(f"malformed graph data ({type(e).__name__}: {e})")
        return g
