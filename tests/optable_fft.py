"""Op-table records for `tnp.fft` (every public function of `numpy.fft`).

The generic checks differentiate real outputs of real inputs, so a record of a complex transform
takes a complex input as two real arrays (re, im) and returns its complex result as (real, imag):
the random-direction gradient check then covers the real and imaginary parts of both sides, the
same real-valued losses for which TensorFlow's and JAX's gradients agree with ndflow's. A sample
with a single array passes a real input."""
import numpy as np

from optable import record, Sample, values, noncontig, F32, F64, I32, C128

_TOL = {F32: (1e-4, 2e-5)}      # float32 transforms sum a few dozen terms


def _complex(m, arrays):
    return arrays[0] if len(arrays) == 1 else arrays[0] + 1j * arrays[1]


def _split(m, y):
    return (m.real(y), m.imag(y)) if y.dtype.kind == "c" else y


def _fft_call(name):
    def call(m, *arrays, **kw):
        return _split(m, getattr(m.fft, name)(_complex(m, arrays), **kw))
    return call


def _pair(rng, shape, dt, nc=False):
    make = noncontig if nc else values
    if np.dtype(dt).kind in "iu":
        return (make(rng, shape, dt),)
    return make(rng, shape, dt), make(rng, shape, dt)


def _one_d_samples(complex_input=True, spectrum=False):
    """1-D transforms: lengths even and odd, n= padding and cropping, axis=, every norm, batch
    axes, an empty batch, non-contiguous input, real input where the transform takes complex."""
    def gen(rng, dt):
        a = (lambda s, nc=False: _pair(rng, s, dt, nc)) if complex_input else (
            lambda s, nc=False: ((noncontig if nc else values)(rng, s, dt),))
        out = [Sample(a((8,)), desc="even"), Sample(a((7,)), desc="odd"),
               Sample(a((3, 6)), {"axis": 0}, "axis 0"),
               Sample(a((2, 5)), {"n": 8}, "pad"), Sample(a((2, 9)), {"n": 4}, "crop"),
               Sample(a((2, 3, 4)), {"axis": 1, "n": 5, "norm": "ortho"}, "ortho"),
               Sample(a((6,)), {"norm": "forward"}, "forward"),
               Sample(a((2, 6)), {"norm": "backward"}, "backward"),
               Sample(a((0, 4)), desc="empty batch"),
               Sample(a((4, 6), nc=True), {"axis": -2}, "noncontig")]
        if spectrum:       # irfft/hfft: odd output lengths from n=, and the shortest input
            out += [Sample(a((2, 5)), {"n": 9}, "odd n"), Sample(a((2,)), desc="two bins")]
        if complex_input and np.dtype(dt).kind == "f":
            out.append(Sample((values(rng, (2, 5), dt),), {"axis": -1}, "real input"))
        return out
    return gen


for _name, _cplx, _spec in (("fft", True, False), ("ifft", True, False), ("rfft", False, False),
                            ("irfft", True, True), ("hfft", True, True),
                            ("ihfft", False, False)):
    record("fft." + _name, _one_d_samples(_cplx, _spec), call=_fft_call(_name),
           dtypes=(F32, F64, I32) if _name in ("fft", "rfft") else (F32, F64), tol=_TOL)


def _nd_samples(complex_input=True, default_axes=None):
    """n-D transforms: all axes, chosen axes (negative, unordered, repeated), s= padding and
    cropping and -1, every norm, non-contiguous input."""
    def gen(rng, dt):
        a = (lambda s, nc=False: _pair(rng, s, dt, nc)) if complex_input else (
            lambda s, nc=False: ((noncontig if nc else values)(rng, s, dt),))
        out = [Sample(a((4, 6)), desc="2-D"), Sample(a((2, 3, 5)), desc="3-D"),
               Sample(a((2, 3, 4)), {"axes": (0, 2)}, "axes"),
               Sample(a((2, 3, 4)), {"axes": (-1, 0)}, "unordered axes"),
               Sample(a((3, 5)), {"s": (4, 6), "axes": (0, 1)}, "pad"),
               Sample(a((5, 6)), {"s": (3, -1), "axes": (0, 1), "norm": "ortho"}, "crop, -1"),
               Sample(a((3, 4)), {"norm": "forward"}, "forward"),
               Sample(a((4, 5), nc=True), desc="noncontig")]
        if default_axes is None:   # fftn family: a repeated axis transforms twice, as NumPy
            out.append(Sample(a((3, 4)), {"axes": (1, 1)}, "repeated axis"))
        return out
    return gen


def _whole_last_axis(s):
    if s.kwargs.get("s", (0,))[-1] == -1:
        return ("s[-1] = -1 makes irfftn's output as long as its input, a size that must be "
                "known while tracing")
    return None


for _name, _cplx in (("fftn", True), ("ifftn", True), ("fft2", True), ("ifft2", True),
                     ("rfftn", False), ("rfft2", False), ("irfftn", True), ("irfft2", True)):
    record("fft." + _name, _nd_samples(_cplx, (-2, -1) if _name.endswith("2") else None),
           call=_fft_call(_name), dtypes=(F32, F64), tol=_TOL,
           unknown_dims=_whole_last_axis if _name.startswith("irfft") else None)


def _freq_samples(rng, dt):
    return [Sample((5,)), Sample((8, 0.1)), Sample((1,)), Sample((7, 2)),
            Sample((6, values(rng, (), dt, "positive")), desc="array spacing"),
            Sample((9,), {"d": values(rng, (), dt, "positive")}, "array spacing")]


record("fft.fftfreq", _freq_samples, call=lambda m, *a, **k: m.fft.fftfreq(*a, **k),
       dtypes=(F32, F64))
record("fft.rfftfreq", _freq_samples, call=lambda m, *a, **k: m.fft.rfftfreq(*a, **k),
       dtypes=(F32, F64))


def _shift_samples(rng, dt):
    v = lambda s: values(rng, s, dt)  # noqa: E731
    return [Sample((v((6,)),)), Sample((v((7,)),)), Sample((v((3, 4)),)),
            Sample((v((3, 5)),), {"axes": 1}), Sample((v((2, 3, 5)),), {"axes": (0, -1)}),
            Sample((v((1, 5)),), {"axes": (0, 1)}), Sample((v((0, 3)),), desc="empty"),
            Sample((noncontig(rng, (5, 4), dt),), desc="noncontig")]


for _name in ("fftshift", "ifftshift"):
    record("fft." + _name, _shift_samples,
           call=(lambda n: lambda m, *a, **k: getattr(m.fft, n)(*a, **k))(_name),
           dtypes=(F32, F64, I32, C128))

# `numpy.fft` public names that are not transforms (NumPy's own test runner)
FFT_LEFT_OUT = {"test": "NumPy's test-suite runner, not part of the FFT API"}
