"""`nf.onnx.export`: a concrete function's optimized graph, written as an ONNX model.

What is exported is the traced graph after the algebraic passes (constant folding,
simplification, CSE, dead code) but before elementwise fusion and buffer reuse: fused regions
are compiler artefacts of our own code generator, while the unfused nodes each have an ONNX
operator, and an ONNX runtime does its own fusion.

Each primitive is translated by one converter (`TABLE`, assembled from the tables of `_math`,
`_arrays`, `_indexing` and `_control`). A converter emits ONNX nodes that compute exactly
NumPy's answer; where ONNX's operator differs from NumPy on special values the converter adds
the few nodes that make it agree (a guard), and a primitive with no faithful translation
raises `UnsupportedOperationError` at export, naming it, why, and the line of the user's code
that created it. tests/test_onnx_primitives.py runs every entry of the table in onnxruntime
against eager ndflow on special values.

Unknown (None) sizes of the input signature become symbolic ONNX dimensions; operations whose
parameters depend on sizes read them from the tensor at run time (Shape), so the file runs for
every size.
"""
import numpy as np

from ..graph import passes as P
from ..graph.fusion import elementwise_fusion
from ..graph.function import Function, TensorSpec, function
from ..graph.memory import reuse_buffers
from ..primitives import indexing as I
from ._arrays import REDUCTIONS
from ._control import CONTROL
from ._emit import Ctx, UnsupportedOperationError, emit_graph, tensor_type, with_bfloat16
from ._indexing import INDEXING
from ._math import ELEMENTWISE

__all__ = ["export", "supported_primitives", "UnsupportedOperationError", "DEFAULT_OPSET"]

DEFAULT_OPSET = 18
MIN_OPSET = 14      # Reshape's allowzero: a run-time size 0 is a size, not "copy"

# primitive -> converter(ctx, node, onnx input names) -> onnx output name(s)
TABLE = with_bfloat16({**ELEMENTWISE, **REDUCTIONS, **INDEXING, **CONTROL},
                      float16_too={I.index_add_p})
_REFUSED_ALWAYS = {p for p in TABLE if p.name == "assign_variable"}


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("nf.onnx.export needs the 'onnx' package: pip install 'ndflow[onnx]' "
                          "(or pip install onnx onnxruntime)") from None
    return onnx


def supported_primitives():
    """The names of the primitives `export` translates (some only for some dtypes or
    parameters: the error then says which)."""
    return sorted({p.name for p in TABLE if p not in _REFUSED_ALWAYS})


def export_graph(g):
    """The traced graph with the algebraic passes, without fusion and buffer reuse."""
    return P.optimize(g, [p for p in P.PASSES if p not in (elementwise_fusion, reuse_buffers)])


def export(fn, input_signature, path=None, opset=None, input_names=None, output_names=None):
    """Trace `fn` for `input_signature` and write its graph as an ONNX model to `path`.

    fn: an `nf.function` or a plain Python function (it is wrapped in `nf.function`).
    input_signature: a list of `nf.TensorSpec`, one per positional argument; a `None` size
    becomes a symbolic dimension (named after the input and axis), so the file accepts any size
    there. Input names come from the specs' names (or `input_names`), else x0, x1, ...; outputs
    are the flattened results, named `output_names` or out0, out1, ...
    opset: the ONNX opset (default 18; 13 at least).

    Variables read by `fn` are stored with their current values (as initializers). Returns the
    `onnx.ModelProto` (also written to `path` when given). Unlike tf2onnx, an operation that
    has no exact ONNX translation is an error (`UnsupportedOperationError`, naming the
    primitive and the line of your code that made it), never an approximation."""
    onnx = _onnx()
    opset = DEFAULT_OPSET if opset is None else int(opset)
    if opset < MIN_OPSET:
        raise ValueError(f"nf.onnx.export: opset must be at least {MIN_OPSET}, got {opset}")
    specs = list(input_signature)
    for s in specs:
        if not isinstance(s, TensorSpec):
            raise TypeError(f"nf.onnx.export: input_signature must hold nf.TensorSpec, got "
                            f"{type(s).__name__}")
        if s.shape is None:
            raise ValueError(f"nf.onnx.export: {s} needs a shape (its rank), with None for "
                             f"sizes that may vary")
    f = fn if isinstance(fn, Function) else function(fn)
    cf = f.get_concrete_function(*specs)
    g = export_graph(cf.traced_graph)
    h = onnx.helper
    ctx = Ctx(onnx, opset, TABLE)
    names = list(input_names) if input_names is not None else [
        s.name or "x%d" % i for i, s in enumerate(specs)]
    if len(names) != len(g.inputs) or len(set(names)) != len(names):
        raise ValueError(f"nf.onnx.export: need {len(g.inputs)} distinct input names, got "
                         f"{names}")
    env, inputs = {}, []
    for nm, v in zip(names, g.inputs):
        env[v.id] = nm
        if np.dtype(v.dtype).kind == "c":
            raise UnsupportedOperationError(
                f"nf.onnx.export: input '{nm}' of dtype {v.dtype} cannot be exported (ONNX "
                f"runtimes have no complex kernels)")
        dims = [("%s_dim%d" % (nm, i)) if d is None else d for i, d in enumerate(v.shape)]
        inputs.append(h.make_tensor_value_info(nm, tensor_type(onnx, v.dtype), dims))
    emit_graph(ctx, g, env)
    # outputs: every result leaf, graph values and constants alike
    leaves, it = [], iter(g.outputs)
    for kind, c in zip(cf.out_kinds, cf.out_consts):
        if kind == "v":
            v = next(it)
            leaves.append((env[v.id], v.dtype, v.shape))
        else:
            if c is None or isinstance(c, (str, bytes)):
                raise ValueError(f"nf.onnx.export: the function returns {c!r}, which is not "
                                 f"an array")
            a = np.asarray(c)
            leaves.append((ctx.const(a), a.dtype, a.shape))
    onames = list(output_names) if output_names is not None else [
        "out%d" % i for i in range(len(leaves))]
    if len(onames) != len(leaves):
        raise ValueError(f"nf.onnx.export: {len(leaves)} outputs, {len(onames)} output names")
    outputs = []
    for nm, (src, dt, shape) in zip(onames, leaves):
        ctx.nodes.append(h.make_node("Identity", [src], [nm], name=ctx.fresh("n_out")))
        outputs.append(h.make_tensor_value_info(nm, tensor_type(onnx, dt), list(shape)))
    graph = h.make_graph(ctx.nodes, cf.name if cf.name.isidentifier() else "ndflow_function",
                         inputs, outputs, initializer=ctx.inits)
    ops = [h.make_opsetid("", opset)]
    model = h.make_model(graph, opset_imports=ops, producer_name="ndflow",
                         ir_version=h.find_min_ir_version_for(ops))
    if path is not None:
        onnx.save(model, str(path))
    return model
