"""Export compiled ndflow functions to ONNX, so their graphs run without Python (onnxruntime,
mobile and server runtimes).

    import ndflow as nf, ndflow.numpy as tnp
    f = nf.function(lambda x: 1.0 / (1.0 + tnp.exp(-x)))
    nf.onnx.export(f, [nf.TensorSpec([None], tnp.float32, name="x")], "sigmoid.onnx")

Needs the optional `onnx` package (`pip install ndflow[onnx]`, which also brings onnxruntime to
run the files); it is imported only when `export` runs. `import ndflow` does not load this
package: `nf.onnx` does, on first use.
"""
from .exporter import DEFAULT_OPSET, UnsupportedOperationError, export, supported_primitives

__all__ = ["export", "supported_primitives", "UnsupportedOperationError", "DEFAULT_OPSET"]
