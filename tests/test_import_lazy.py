"""`import ndflow` stays close to `import numpy`: the rarely used parts load on first use, and
reaching them through `nf.<name>` (or `tnp.random`, `nf.train.Checkpoint`) loads them."""
import os
import subprocess
import sys
import textwrap

import ndflow as nf

LAZY = ["numpy.random", "ndflow.numpy.random", "ndflow.summary", "ndflow.saved_model",
        "ndflow.onnx", "ndflow.distribute", "ndflow.train.checkpoint", "ndflow.scipy",
        # the transformations and training above the NumPy layer (graph/static.py, run-time
        # shapes without the compiler, sits below it and loads with it)
        "ndflow.autodiff", "ndflow.graph.trace", "ndflow.graph.ir", "ndflow.graph.function",
        "ndflow.graph.control",
        "ndflow.vectorize", "ndflow.autograph", "ndflow.train", "ndflow.compat", "ndflow.nn",
        "ndflow.losses", "ndflow.random", "ndflow.debugging", "ndflow.config", "ndflow.test",
        # the less used parts of the NumPy layer
        "ndflow.numpy.statistics", "ndflow.numpy.differences", "ndflow.numpy.quantiles",
        "ndflow.numpy.histograms", "ndflow.numpy.sorting", "ndflow.numpy.padding",
        "ndflow.numpy.sets", "ndflow.numpy.linalg", "ndflow.numpy.fft", "ndflow.numpy.poly_ops",
        "ndflow.numpy.windows", "ndflow.numpy.npyio", "ndflow.numpy.functional",
        "ndflow.numpy.special", "ndflow.numpy.shaping", "ndflow.numpy.routines",
        "ndflow.numpy.logic", "ndflow.numpy.conversion", "ndflow.numpy.index_tricks",
        "ndflow.numpy.lib",
        # bfloat16's package, and standard modules NumPy does not import either
        "ml_dtypes", "threading", "string", "difflib"]


def _run(code, **kw):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(nf.__file__)))
    env.pop("NDFLOW_DEBUG", None)
    subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True, env=env,
                   timeout=120, **kw)


def test_import_ndflow_leaves_them_unloaded_until_used():
    _run(f"""
        import sys
        import ndflow as nf, ndflow.numpy as tnp
        loaded = [m for m in {LAZY!r} if m in sys.modules]
        assert not loaded, loaded
        assert {{"summary", "saved_model", "onnx", "distribute", "scipy"}} <= set(dir(nf))
        assert {{"function", "GradientTape", "Variable", "nn", "bfloat16", "print"}} <= set(dir(nf))
        assert {{"median", "sort", "linalg", "fft", "bfloat16"}} <= set(dir(tnp))
        tnp.random.seed(5)
        import numpy as np
        np.random.seed(5)
        assert tnp.random.normal(size=3).tolist() == np.random.normal(size=3).tolist()
        assert nf.summary.create_file_writer and nf.distribute.MirroredStrategy
        assert nf.train.Checkpoint is sys.modules["ndflow.train.checkpoint"].Checkpoint
        assert nf.saved_model.save and nf.onnx.export
        for mod, name in ((nf, "no_such_thing"), (tnp, "no_such_thing")):
            try:
                getattr(mod, name)
            except AttributeError as e:
                assert "no_such_thing" in str(e)
            else:
                raise AssertionError("no AttributeError")
    """)


def test_first_use_loads_and_works():
    _run("""
        import sys
        import numpy as np
        import ndflow as nf, ndflow.numpy as tnp
        x = tnp.asarray([3.0, 1.0, 2.0])
        # the NumPy layer's lazy modules: through tnp, through array methods, as modules
        assert "ndflow.numpy.sorting" not in sys.modules
        y = x.copy()
        y.sort()
        assert y.tolist() == [1.0, 2.0, 3.0] and "ndflow.numpy.sorting" in sys.modules
        assert float(tnp.median(x)) == 2.0 and tnp.median is sys.modules[
            "ndflow.numpy.statistics"].median
        assert np.isclose(float(tnp.linalg.norm(x)), np.linalg.norm([3.0, 1.0, 2.0]))
        assert np.allclose(tnp.fft.fft(x).numpy(), np.fft.fft([3.0, 1.0, 2.0]))
        assert x.repeat(2).tolist() == [3.0, 3.0, 1.0, 1.0, 2.0, 2.0]
        assert tnp.allclose(tnp.diag(tnp.r_[1.0, 2.0]), [[1.0, 0.0], [0.0, 2.0]])
        from ndflow.numpy import polyval, isin
        assert float(polyval(tnp.asarray([1.0, 2.0]), 3.0)) == 5.0
        assert isin(x, [1.0]).tolist() == [False, True, False]
        # the layers above
        assert "ndflow.graph.function" not in sys.modules
        f = nf.function(lambda a: tnp.sin(a) * 2)
        assert np.allclose(f(x).numpy(), np.sin([3.0, 1.0, 2.0]) * 2)
        with nf.GradientTape() as t:
            t.watch(x)
            s = tnp.sum(x * x)
        assert t.gradient(s, x).tolist() == [6.0, 2.0, 4.0]
        assert nf.vectorized_map(lambda r: r * 2, x).tolist() == [6.0, 2.0, 4.0]
        assert int(nf.cond(x[0] > 0, lambda: 1, lambda: 2)) == 1
        v = nf.Variable(1.0)
        v.assign_add(1.0)
        assert float(v) == 2.0 and nf.reduce_sum(x).numpy() == 6.0
        assert nf.function is sys.modules["ndflow.graph.function"].function
        from ndflow import GradientTape, print as nf_print
        assert GradientTape is nf.GradientTape and nf_print is nf.debugging.print_
        # `from ... import *` gives every public name, the lazy ones included
        ns = {}
        exec("from ndflow import *", ns)
        assert ns["function"] is nf.function and ns["bfloat16"] is nf.bfloat16
        ns = {}
        exec("from ndflow.numpy import *", ns)
        assert ns["median"] is tnp.median and ns["linalg"] is tnp.linalg
    """)


def test_bfloat16_whoever_imports_ml_dtypes():
    # bfloat16 is ml_dtypes': ndflow imports it on first use of the name, and recognises its
    # dtype as soon as anyone else imports it (before any bfloat16 array can reach ndflow)
    _run("""
        import sys
        import numpy as np
        import ndflow as nf, ndflow.numpy as tnp
        from ndflow.core import dtypes
        assert "ml_dtypes" not in sys.modules
        import ml_dtypes
        a = np.array([1.5, -0.0, np.inf], ml_dtypes.bfloat16)
        x = tnp.asarray(a)
        assert x.dtype == dtypes.BFLOAT16 and dtypes.is_float(x.dtype)
        assert (x * 2.5).dtype == a.dtype and (x + x).dtype == a.dtype   # NEP 50 keeps bf16
        assert tnp.result_type(x, 1.0) == a.dtype
        assert tnp.sqrt(x).dtype == a.dtype
        assert nf.bfloat16 is ml_dtypes.bfloat16 and tnp.bfloat16 is ml_dtypes.bfloat16
        assert dtypes.SUPPORTED[10] == a.dtype and len(dtypes.SUPPORTED) == 15
    """)
    _run("""
        import sys
        import numpy as np
        import ndflow as nf, ndflow.numpy as tnp
        assert "ml_dtypes" not in sys.modules
        x = tnp.ones(3, dtype="bfloat16")          # by name: imports ml_dtypes
        import ml_dtypes
        assert x.dtype == np.dtype(ml_dtypes.bfloat16) and (x * 2.5).dtype == x.dtype
        try:
            tnp.ones(2, dtype="U3")
        except TypeError as e:
            assert "bfloat16" in str(e)
        else:
            raise AssertionError("no TypeError")
    """)
    _run("""
        import ml_dtypes                 # imported before ndflow
        import numpy as np
        import ndflow.numpy as tnp
        x = tnp.asarray(np.ones(2, ml_dtypes.bfloat16))
        assert (x * 2.5).dtype == np.dtype(ml_dtypes.bfloat16)
    """)


def test_saved_graph_loads_primitives_of_lazy_modules(tmp_path):
    # a saved function holding primitives of modules `import ndflow` leaves for first use
    # (control flow, custom gradients, shape, Variables, sorting, decompositions) loads in a process
    # that never touched them
    _run("""
        import sys
        import numpy as np
        import ndflow as nf, ndflow.numpy as tnp

        @nf.custom_gradient
        def twice(a):
            return a * 2, lambda g: g * 2

        class M(nf.Module):
            def __init__(self):
                super().__init__()
                self.v = nf.Variable(np.array([1.0, 2.0, 3.0]))

            @nf.function(input_signature=[nf.TensorSpec([3], "float64")])
            def __call__(self, x):
                n = nf.shape(x)[0]
                y = nf.cond(tnp.sum(x) > 0, lambda: twice(x), lambda: -x)
                s = tnp.sort(y) + tnp.linalg.inv(tnp.diag(x) + 4.0)[0]
                return s * self.v + nf.cast(n, "float64")

        m = M()
        nf.saved_model.save(m, sys.argv[1])
        np.save(sys.argv[2], m(np.array([1.0, -0.5, 2.0])).numpy())
    """.replace("sys.argv[1]", repr(str(tmp_path / "m"))).replace(
        "sys.argv[2]", repr(str(tmp_path / "want.npy"))))
    _run("""
        import sys
        import numpy as np
        import ndflow as nf
        loaded = nf.saved_model.load(%r)
        got = loaded(np.array([1.0, -0.5, 2.0])).numpy()
        np.testing.assert_array_equal(got, np.load(%r))
    """ % (str(tmp_path / "m"), str(tmp_path / "want.npy")))
