"""`import ndflow` stays close to `import numpy`: the rarely used parts load on first use, and
reaching them through `nf.<name>` (or `tnp.random`, `nf.train.Checkpoint`) loads them."""
import subprocess
import sys

LAZY = ["numpy.random", "ndflow.numpy.random", "ndflow.summary", "ndflow.saved_model",
        "ndflow.onnx", "ndflow.distribute", "ndflow.train.checkpoint", "ndflow.scipy"]


def test_import_ndflow_leaves_them_unloaded_until_used():
    code = f"""if True:
        import sys
        import ndflow as nf, ndflow.numpy as tnp
        loaded = [m for m in {LAZY!r} if m in sys.modules]
        assert not loaded, loaded
        assert {{"summary", "saved_model", "onnx", "distribute", "scipy"}} <= set(dir(nf))
        tnp.random.seed(5)
        import numpy as np
        np.random.seed(5)
        assert tnp.random.normal(size=3).tolist() == np.random.normal(size=3).tolist()
        assert nf.summary.create_file_writer and nf.distribute.MirroredStrategy
        assert nf.train.Checkpoint is sys.modules["ndflow.train.checkpoint"].Checkpoint
        assert nf.saved_model.save and nf.onnx.export
        try:
            nf.no_such_thing
        except AttributeError as e:
            assert "no_such_thing" in str(e)
        else:
            raise AssertionError("no AttributeError")
    """
    subprocess.run([sys.executable, "-c", code], check=True)
