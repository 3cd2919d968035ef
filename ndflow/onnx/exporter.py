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
against eager ndflow on special values (NaN, infinities, signed zeros, subnormals, integer
extremes, empty and 0-d arrays, every dtype), tests/test_onnx_optable.py every op-table sample.

Guarded (extra nodes give NumPy's answer):
- the sign of zero through every select (onnxruntime's Where gives +0.0 for a selected -0.0);
- maximum/minimum: NaN from either operand, and of two equal operands (zeros of opposite
  signs) the one NumPy's own loop returns; max/min/argmax/argmin: NaN first; any/all over an
  empty axis (False/True);
- sums start from +0.0 as NumPy's; integer sums, products and einsums wrap around exactly
  (onnxruntime's go through double and saturate);
- integer floor_divide/remainder/fmod: a divisor of 0 gives 0 and MIN // -1 gives MIN, as
  NumPy's, and neither reaches a division unit (which kills the process with SIGFPE);
- integer power by exact binary powering; float power with a 0-d exponent 0.5 is NumPy's
  sqrt; shifts of signed integers and by counts past the width; float64 to float16 casts
  rounded once;
- NumPy's errors: a reduction without identity over an empty axis raises ValueError at export
  when the size is known then, else the run fails with NumPy's message, as do NumPy's value
  checks (`runtime_error`), a boolean mask or a broadcast whose sizes do not fit, an index out
  of range and an integer raised to a negative power;
- functions ONNX lacks (log1p, expm1, cbrt, logaddexp) and those onnxruntime lacks a float64
  kernel for (atan, asin, acos, sinh, cosh, tan, asinh, acosh, atanh) are written with other
  operators, to a few ulp; kernels onnxruntime lacks for narrow or unsigned integers and
  bfloat16 are replaced by exact computations in a wider type.

Refused (`UnsupportedOperationError`): complex numbers; assigning a Variable; argsort other
than kind='stable' (NumPy's order of equal elements is then its own); random draws other
than normal and uniform with constant parameters and a static shape; gradients of while
loops and scans; a slice whose step is known only at run time; advanced indexing mixed with
slices or newaxis, and scatters with index arrays mixed with other indices; an integer
einsum with an ellipsis or a repeated label; and every primitive without a converter
(`supported_primitives()` lists those with one), for example cumprod, the linear algebra
decompositions and the FFT.

Left as the runtime does it (the README's ONNX section says so too): the rounding of
transcendental functions and of float sums (a few ulp); the sign of a zero max/min over a
slice holding both zeros, and the order of -0.0 and +0.0 in an unstable sort (NumPy's own
depends on its loops' layout). onnxruntime has no float64 Det kernel (the file is valid ONNX,
onnxruntime refuses to load it), and its Python API takes no bfloat16 arrays.

Unknown (None) sizes of the input signature become symbolic ONNX dimensions; operations whose
parameters depend on sizes read them from the tensor at run time (Shape), so the file runs for
every size.
"""
import numpy as np

from ..core.settings import settings
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
    """The traced graph with the algebraic passes, without fusion and buffer reuse, under
    NumPy's contract whatever `settings.fast_math` says: the fast one's rewrites are for
    ndflow's own kernels (an ONNX runtime rounds its own way), and one of them writes
    `signbit`, which ONNX cannot express for NaN."""
    with settings.override(fast_math=False):
        return P.optimize(g, [p for p in P.PASSES
                              if p not in (elementwise_fusion, reuse_buffers)])


def export(fn, input_signature, path=None, opset=None, input_names=None, output_names=None):
    """Trace `fn` for `input_signature` and write its graph as an ONNX model to `path`.

    fn: an `nf.function` or a plain Python function (it is wrapped in `nf.function`).
    input_signature: a list of `nf.TensorSpec`, one per positional argument; a `None` size
    becomes a symbolic dimension (named after the input and axis), so the file accepts any size
    there. Input names come from the specs' names (or `input_names`), else x0, x1, ...; outputs
    are the flattened results, named `output_names` or out0, out1, ...
    opset: the ONNX opset (default 18; 14 at least).

    Variables read by `fn` are stored with their current values (as initializers). Returns the
    `onnx.ModelProto` (also written to `path` when given). The file gives NumPy's answers,
    special values included (see this module's docstring for the guards that make it so).
    Unlike tf2onnx, an operation that has no exact ONNX translation is an error at export
    (`UnsupportedOperationError`, a NotImplementedError naming the primitive, why, and the
    line of your code that made it), never an approximation; NumPy's errors that depend on
    sizes known at export (a max over an empty axis) raise NumPy's ValueError now, and those
    that depend on values or run-time sizes fail the run with NumPy's message.

    >>> import ndflow as nf, ndflow.numpy as tnp
    >>> m = nf.onnx.export(lambda x: tnp.maximum(x, 0.0), [nf.TensorSpec([None], tnp.float32)])
    >>> [n.op_type for n in m.graph.node][-1]
    'Identity'
    """
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
