"""Export compiled ndflow functions to ONNX, so their graphs run without Python (onnxruntime,
mobile and server runtimes).

    import ndflow as nf, ndflow.numpy as tnp
    f = nf.function(lambda x: 1.0 / (1.0 + tnp.exp(-x)))
    nf.onnx.export(f, [nf.TensorSpec([None], tnp.float32, name="x")], "sigmoid.onnx")

Needs the optional `onnx` package (`pip install ndflow[onnx]`, which also brings onnxruntime to
run the files); it is imported only when `export` runs.
"""
__all__ = ["export", "supported_primitives", "UnsupportedOperationError", "DEFAULT_OPSET"]


def __getattr__(name):
    # the exporter (a thousand lines of converters) loads on first use, not with `import ndflow`
    if name in __all__:
        from . import exporter
        return getattr(exporter, name)
    raise AttributeError(f"module 'ndflow.onnx' has no attribute {name!r}")
