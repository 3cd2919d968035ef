"""The type stubs of `nf` and `tnp` (written by tools/stubgen.py): up to date with the package,
true to what the functions return, and enough for a type checker to pass over examples/."""
import ast
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import stubgen  # noqa: E402


@pytest.mark.parametrize("ns", sorted(stubgen.STUBS))
def test_stubs_are_up_to_date(ns):
    """A public name added (or a signature changed) without regenerating the stubs fails here."""
    with open(os.path.join(ROOT, stubgen.STUBS[ns]), encoding="utf-8") as fh:
        written = fh.read()
    assert written == stubgen.render(ns), (
        f"{stubgen.STUBS[ns]} is out of date: run `python tools/stubgen.py`")


def _declared(ns):
    """{name: return annotation or the kind of declaration} of a stub."""
    with open(os.path.join(ROOT, stubgen.STUBS[ns]), encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = ast.unparse(node.returns)
        elif isinstance(node, ast.ClassDef):
            out[node.name] = "class"
        elif isinstance(node, ast.AnnAssign):
            out[node.target.id] = "var:" + ast.unparse(node.annotation)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:              # re-exports are `import x as x`
                if a.asname is not None:
                    out[a.asname] = "import"
    return out


@pytest.mark.parametrize("ns", sorted(stubgen.STUBS))
def test_every_public_name_is_declared(ns):
    mod = nf if ns == "ndflow" else tnp
    names = set(mod.__all__) | set(mod._LAZY)
    declared = _declared(ns)
    assert {n for n in names if not n.startswith("_")} <= set(declared)
    # nothing an editor would offer that the package does not have
    for n in declared:
        if not n.startswith("_") and n not in ("ndarray",):
            assert hasattr(mod, n), n


def _matches(value, ann):
    """Whether a returned value fits a stub's return annotation."""
    ann = ann.replace("_b.", "")
    if ann == "Any":
        return True
    if ann == "ndarray":
        return isinstance(value, tnp.ndarray)
    if ann == "None":
        return value is None
    if ann in ("bool", "int", "str", "float", "bytes"):
        return isinstance(value, {"bool": bool, "int": int, "str": str, "float": float,
                                  "bytes": bytes}[ann])
    if ann.startswith("list["):
        inner = ann[5:-1]
        return isinstance(value, list) and all(_matches(v, inner) for v in value)
    if ann.startswith("dict["):
        return isinstance(value, dict)
    if ann == "_np.dtype[Any]":
        return isinstance(value, np.dtype)
    if ann.startswith("tuple["):
        parts = [p.strip() for p in _split_args(ann[6:-1])]
        if not isinstance(value, tuple):
            return False
        if len(parts) == 2 and parts[1] == "...":
            return all(_matches(v, parts[0]) for v in value)
        return len(value) == len(parts) and all(_matches(v, p) for v, p in zip(value, parts))
    raise AssertionError(f"no runtime check for the annotation {ann!r}")


def _split_args(text):
    depth, cur, out = 0, "", []
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    return out + [cur]


def test_tnp_return_types_hold_on_the_op_table():
    """Each function with an op-table record called as itself: its results on the record's
    samples fit the return type its stub declares."""
    import optable
    declared = _declared("ndflow.numpy")
    rng = np.random.default_rng(0)
    checked = 0
    for rec in optable.RECORDS:
        ann = declared.get(rec.name)
        direct = rec.call.__qualname__.startswith("OpRecord.__post_init__")
        if ann is None or not direct or ann in ("import", "class") or ann.startswith("var:"):
            continue
        dt = rec.dtypes[0]
        for s in rec.samples(rng, dt):
            args = [tnp.asarray(a) if isinstance(a, np.ndarray) else a for a in s.args]
            with np.errstate(all="ignore"):
                try:
                    r = rec.call(tnp, *args, **s.kwargs)
                except Exception:         # the op table's error samples: no value to check
                    continue
            assert _matches(r, ann), f"tnp.{rec.name}{s!r} returned {type(r)}, stub: {ann}"
            checked += 1
    assert checked > 1000


# sample calls of the functions of nf whose stub declares a return type
_X = [[1.0, -2.0], [3.0, 4.0]]
NF_CALLS = {
    "add_n": lambda f: f([_X, _X]), "argmax": lambda f: f(_X), "argmin": lambda f: f(_X),
    "argsort": lambda f: f([3, 1, 2]), "boolean_mask": lambda f: f(_X, [True, False]),
    "broadcast_to": lambda f: f([1, 2], [2, 2]), "cast": lambda f: f(_X, nf.int32),
    "clip_by_global_norm": lambda f: f([_X], 1.0), "clip_by_norm": lambda f: f(_X, 1.0),
    "clip_by_value": lambda f: f(_X, 0.0, 1.0), "concat": lambda f: f([_X, _X], 0),
    "constant": lambda f: f(_X), "convert_to_tensor": lambda f: f(_X),
    "cumsum": lambda f: f(_X), "einsum": lambda f: f("ij->j", _X),
    "executing_eagerly": lambda f: f(), "expand_dims": lambda f: f(_X, 0),
    "eye": lambda f: f(2), "fill": lambda f: f([2], 1.0), "gather": lambda f: f(_X, [1]),
    "gather_nd": lambda f: f(_X, [[0, 1]]), "global_norm": lambda f: f([_X]),
    "identity": lambda f: f(_X), "is_tensor": lambda f: f(_X), "linspace": lambda f: f(0., 1., 3),
    "matmul": lambda f: f(_X, _X), "norm": lambda f: f(_X), "one_hot": lambda f: f([0, 1], 2),
    "ones": lambda f: f([2]), "ones_like": lambda f: f(_X), "pad": lambda f: f(_X, [[1, 0], [0, 1]]),
    "range": lambda f: f(3), "rank": lambda f: f(_X), "reduce_logsumexp": lambda f: f(_X),
    "repeat": lambda f: f([1, 2], 2), "reshape": lambda f: f(_X, [-1]),
    "reverse": lambda f: f(_X, [0]), "roll": lambda f: f([1, 2], 1, 0),
    "scatter_nd": lambda f: f([[0]], [1.0], [2]), "sequence_mask": lambda f: f([1, 2]),
    "shape": lambda f: f(_X), "size": lambda f: f(_X), "slice": lambda f: f(_X, [0, 0], [1, 1]),
    "sort": lambda f: f([3, 1]), "split": lambda f: f(_X, 2), "squeeze": lambda f: f([[1.0]]),
    "stack": lambda f: f([_X, _X]), "tensor_scatter_nd_add": lambda f: f([1, 2], [[0]], [5]),
    "tensor_scatter_nd_sub": lambda f: f([1, 2], [[0]], [5]),
    "tensor_scatter_nd_update": lambda f: f([1, 2], [[0]], [5]), "tile": lambda f: f(_X, [1, 2]),
    "transpose": lambda f: f(_X), "unique": lambda f: f([2, 1, 2]), "unstack": lambda f: f(_X),
    "where": lambda f: f([True, False]), "zeros": lambda f: f([2]),
    "zeros_like": lambda f: f(_X), "scalar_mul": lambda f: f(2.0, _X),
}
for _n in ("all", "any", "max", "mean", "min", "prod", "sum"):
    NF_CALLS["reduce_" + _n] = lambda f: f(_X, axis=0)


def test_nf_return_types_hold():
    declared = _declared("ndflow")
    checked = set()
    for name, ann in declared.items():
        if ann in ("import", "class", "Any") or ann.startswith("var:"):
            continue
        f = getattr(nf, name)
        call = NF_CALLS.get(name)
        if call is None:
            import inspect
            params = [p for p in inspect.signature(f).parameters if p != "name"]
            if params == ["x"] or params == ["x", "y"]:        # the tf.math functions
                call = lambda f, n=len(params): f(*[np.array([0.5, -0.25])] * n)  # noqa: E731
        if call is None and ann == "None":
            continue                      # effects (nf.print, ...): nothing returned to check
        assert call is not None, f"give nf.{name} a sample call in NF_CALLS"
        with np.errstate(all="ignore"):
            r = call(f)
        assert _matches(r, ann), f"nf.{name} returned {type(r)}, stub: {ann}"
        checked.add(name)
    assert len(checked) > 80


_NDARRAY = [("shape", lambda a: a.shape), ("dtype", lambda a: a.dtype), ("ndim", lambda a: a.ndim),
            ("T", lambda a: a.T), ("device", lambda a: a.device), ("numpy", lambda a: a.numpy()),
            ("sum", lambda a: a.sum()), ("reshape", lambda a: a.reshape(-1)),
            ("astype", lambda a: a.astype(np.int32)), ("__getitem__", lambda a: a[0]),
            ("__add__", lambda a: a + 1), ("__matmul__", lambda a: a @ a),
            ("__len__", lambda a: len(a)), ("__float__", lambda a: float(a[0, 0])),
            ("__bool__", lambda a: bool(a[0, 0])), ("tobytes", lambda a: a.tobytes()),
            ("nonzero", lambda a: a.nonzero()), ("__divmod__", lambda a: divmod(a, 2)),
            ("__eq__", lambda a: a == a), ("copy", lambda a: a.copy()),
            ("fill", lambda a: a.copy().fill(0)), ("nbytes", lambda a: a.nbytes)]


@pytest.mark.parametrize("name,get", _NDARRAY, ids=[n for n, _ in _NDARRAY])
def test_ndarray_members_are_what_the_stub_says(name, get):
    import re
    with open(os.path.join(ROOT, stubgen.STUBS["ndflow.numpy"]), encoding="utf-8") as fh:
        text = fh.read()
    ann = re.search(rf"    def {re.escape(name)}\(self[^)]*\) -> ([^:]+): \.\.\.", text).group(1)
    value = get(tnp.asarray([[1.0, 2.0], [3.0, 4.0]]))
    if ann == "_np.ndarray[Any, Any]":
        assert isinstance(value, np.ndarray)
    elif ann == "tuple[Any, ...]":
        assert isinstance(value, tuple)
    else:
        assert _matches(value, ann), (name, ann, type(value))


@pytest.mark.skipif(shutil.which("mypy") is None and
                    subprocess.run([sys.executable, "-c", "import mypy"],
                                   capture_output=True).returncode != 0,
                    reason="mypy is not installed (the test extra has it)")
def test_a_type_checker_passes_over_the_examples(tmp_path):
    """mypy over the example programs (examples/, ndflow/examples/) and tests/typing_probe.py (whose `assert_type`s fail when an editor
    would infer another type), with ndflow's own modules analysed but not reported on."""
    cmd = [sys.executable, "-m", "mypy", "--follow-imports=silent", "--cache-dir",
           str(tmp_path / "cache"), "--python-version", "%d.%d" % sys.version_info[:2],
           "examples", os.path.join("ndflow", "examples"), os.path.join("tests", "typing_probe.py")]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success" in r.stdout
