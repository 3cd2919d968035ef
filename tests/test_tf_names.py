"""The names TensorFlow users try (`nf.math`, `nf.gather`, `nf.nn.*` ...): present, with
TensorFlow's documented semantics (computed here with NumPy: TensorFlow is not installed),
differentiable, the same compiled; and a missing name's error says where to look."""
import math

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp

# Names people porting TensorFlow code try first (tf.X, tf.math.X, tf.nn.X): each must exist
TF_NAMES = {
    "": """abs acos acosh add add_n argmax argmin argsort asin asinh atan atan2 atanh
        boolean_mask broadcast_to cast clip_by_global_norm clip_by_norm clip_by_value concat
        cond constant convert_to_tensor cos cosh cumsum custom_gradient divide einsum equal
        executing_eagerly exp expand_dims eye fill floor floordiv function gather gather_nd
        global_norm GradientTape greater greater_equal identity is_tensor less less_equal
        linspace logical_and logical_not logical_or map_fn matmul maximum meshgrid minimum
        Module multiply negative newaxis norm not_equal one_hot ones ones_like pad pow
        print py_function range rank reduce_all reduce_any reduce_logsumexp reduce_max
        reduce_mean reduce_min reduce_prod reduce_sum repeat reshape reverse roll round
        scalar_mul scan scatter_nd sequence_mask shape sigmoid sign sin sinh slice sort
        split sqrt square squeeze stack stop_gradient subtract tan tanh tensor_scatter_nd_add
        tensor_scatter_nd_sub tensor_scatter_nd_update tile transpose truediv truncatemod
        unique unstack Variable vectorized_map where while_loop zeros zeros_like""",
    "math": """abs accumulate_n acos acosh add add_n angle argmax argmin asin asinh atan
        atan2 atanh bessel_i0e bessel_i1e betainc ceil confusion_matrix conj cos cosh
        count_nonzero cumprod cumsum cumulative_logsumexp digamma divide divide_no_nan equal
        erf erfc erfinv exp expm1 floor floordiv floormod greater greater_equal igamma igammac
        imag is_finite is_inf is_nan is_non_decreasing is_strictly_increasing l2_normalize
        lbeta less less_equal lgamma log log1p log_sigmoid log_softmax logical_and logical_not
        logical_or logical_xor maximum minimum mod multiply multiply_no_nan ndtri negative
        nextafter not_equal polygamma polyval pow real reciprocal reciprocal_no_nan
        reduce_all reduce_any reduce_euclidean_norm reduce_logsumexp reduce_max reduce_mean
        reduce_min reduce_prod reduce_std reduce_sum reduce_variance rint round rsqrt
        scalar_mul segment_mean segment_sum sigmoid sign sin sinh softmax softplus softsign
        sqrt square squared_difference subtract tan tanh top_k truediv truncatemod
        unsorted_segment_mean unsorted_segment_sum xdivy xlog1py xlogy zeta""",
    "nn": """batch_normalization bias_add compute_average_loss dropout elu embedding_lookup
        gelu l2_loss l2_normalize leaky_relu log_softmax moments one_hot relu relu6 selu
        sigmoid sigmoid_cross_entropy_with_logits silu softmax
        softmax_cross_entropy_with_logits softplus softsign
        sparse_softmax_cross_entropy_with_logits swish tanh top_k
        weighted_cross_entropy_with_logits""",
}


@pytest.mark.parametrize("ns", sorted(TF_NAMES))
def test_the_names_tensorflow_users_try_exist(ns):
    mod = getattr(nf, ns) if ns else nf
    missing = [n for n in TF_NAMES[ns].split() if not hasattr(mod, n)]
    assert not missing, f"nf.{ns + '.' if ns else ''}: {missing}"
    for n in TF_NAMES[ns].split():
        obj = getattr(mod, n)
        assert obj is None or (getattr(obj, "__doc__", None) or "").strip(), (ns, n)


def test_nf_math_lists_what_it_has():
    for n in nf.math.__all__:
        assert callable(getattr(nf.math, n)), n
    assert set(TF_NAMES["math"].split()) <= set(nf.math.__all__)


def _f(*values, dtype=np.float32):
    return np.asarray(values, dtype=dtype)


X = np.array([-2.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0])
UNARY = [("abs", np.abs, X), ("acos", np.arccos, X / 4), ("acosh", np.arccosh, 1 + np.abs(X)),
         ("asin", np.arcsin, X / 4), ("asinh", np.arcsinh, X), ("atan", np.arctan, X),
         ("atanh", np.arctanh, X / 4), ("ceil", np.ceil, X), ("cos", np.cos, X),
         ("cosh", np.cosh, X), ("exp", np.exp, X), ("expm1", np.expm1, X),
         ("floor", np.floor, X), ("log", np.log, np.abs(X) + 0.5),
         ("log1p", np.log1p, np.abs(X)), ("negative", np.negative, X),
         ("reciprocal", np.reciprocal, X + 0.25), ("rint", np.rint, X), ("round", np.round, X),
         ("rsqrt", lambda v: 1 / np.sqrt(v), np.abs(X) + 0.5), ("sign", np.sign, X),
         ("sin", np.sin, X), ("sinh", np.sinh, X), ("sqrt", np.sqrt, np.abs(X)),
         ("square", np.square, X), ("tan", np.tan, X), ("tanh", np.tanh, X),
         ("sigmoid", lambda v: 1 / (1 + np.exp(-v)), X),
         ("softplus", lambda v: np.logaddexp(v, 0), X),
         ("softsign", lambda v: v / (1 + np.abs(v)), X),
         ("log_sigmoid", lambda v: -np.logaddexp(-v, 0), X),
         ("is_finite", np.isfinite, np.array([1.0, np.inf, np.nan])),
         ("is_inf", np.isinf, np.array([1.0, -np.inf, np.nan])),
         ("is_nan", np.isnan, np.array([1.0, np.inf, np.nan]))]


@pytest.mark.parametrize("name,ref,x", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary_math_matches_numpy(name, ref, x, dtype):
    xs = x.astype(dtype)
    got = getattr(nf.math, name)(tnp.asarray(xs))
    want = ref(xs)
    assert got.dtype == want.dtype
    rtol = 2e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=0)
    # signed zeros survive where NumPy keeps them
    if name in ("negative", "ceil", "floor", "round", "rint", "sin", "tanh", "sqrt"):
        np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want))


def test_python_data_becomes_tensorflow_dtypes():
    assert nf.math.sin([0.5]).dtype == np.float32          # TF: float32 for Python floats
    assert nf.math.add([1, 2], 1).dtype == np.int32         # TF: int32 for Python ints
    assert nf.math.multiply(tnp.ones(2, dtype=tnp.float64), 2.0).dtype == np.float64
    assert nf.math.cumsum([1, 2, 3]).dtype == np.int32      # TF keeps the dtype; NumPy: int64


A = np.array([[-2.0, 0.5, 3.0], [1.5, -0.25, 4.0]])
B = np.array([[1.0, -2.0, 0.5], [3.0, 2.0, -1.5]])
BINARY = [("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
          ("divide", np.true_divide), ("truediv", np.true_divide),
          ("floordiv", np.floor_divide), ("floormod", np.remainder), ("mod", np.remainder),
          ("truncatemod", np.fmod), ("pow", lambda a, b: np.power(np.abs(a), b)),
          ("maximum", np.maximum), ("minimum", np.minimum), ("atan2", np.arctan2),
          ("squared_difference", lambda a, b: (a - b) ** 2), ("equal", np.equal),
          ("not_equal", np.not_equal), ("less", np.less), ("less_equal", np.less_equal),
          ("greater", np.greater), ("greater_equal", np.greater_equal),
          ("nextafter", np.nextafter)]


@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_math_matches_numpy_with_broadcasting(name, ref):
    a = np.abs(A) if name == "pow" else A
    got = getattr(nf.math, name)(tnp.asarray(a), tnp.asarray(B[0]))
    want = ref(a, B[0])
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-14)


def test_tensorflow_remainders_follow_the_documented_signs():
    # tf.math.floormod: the sign of the divisor (Python's %); truncatemod: of the dividend
    np.testing.assert_array_equal(nf.math.floormod([-7, 7], [3, -3]).numpy(), [2, -2])
    np.testing.assert_array_equal(nf.math.truncatemod([-7, 7], [3, -3]).numpy(), [-1, 1])
    np.testing.assert_array_equal(nf.math.floordiv([-7, 7], [2, 2]).numpy(), [-4, 3])
    np.testing.assert_array_equal(nf.math.round([0.5, 1.5, 2.5, -2.5]).numpy(),
                                  [0, 2, 2, -2])           # halves to even (banker's)


def test_no_nan_functions():
    # tf.math.divide_no_nan / multiply_no_nan / xlogy / xdivy / xlog1py / reciprocal_no_nan
    np.testing.assert_array_equal(nf.math.divide_no_nan([0., 1., np.inf, 6.],
                                                        [0., 0., 0., 3.]).numpy(), [0, 0, 0, 2])
    got = nf.math.multiply_no_nan([np.inf, np.nan, -1., 2.], [0., 0., 0., 3.]).numpy()
    np.testing.assert_array_equal(got, [0, 0, 0, 6])
    assert not np.signbit(got[2])                       # 0, not -1 * 0 = -0
    assert np.signbit(nf.math.multiply_no_nan([-0.], [2.]).numpy()[0])   # x * y elsewhere
    np.testing.assert_array_equal(nf.math.xlogy([0., 0., 2.], [0., np.nan, 1.]).numpy(), [0, 0, 0])
    np.testing.assert_allclose(nf.math.xlogy([2.], [3.]).numpy(), [2 * np.log(3)], rtol=1e-6)
    np.testing.assert_array_equal(nf.math.xdivy([0., 4.], [0., 2.]).numpy(), [0, 2])
    np.testing.assert_allclose(nf.math.xlog1py([0., 2.], [-1., 1.]).numpy(), [0, 2 * np.log(2)],
                               rtol=1e-6)
    np.testing.assert_array_equal(nf.math.reciprocal_no_nan([0., 4.]).numpy(), [0, 0.25])
    # a Python number beside an array takes its dtype (TF converts it; NEP 50 keeps it weak)
    half = tnp.asarray([0.0, 2.0], dtype=tnp.float16)
    for f in (nf.math.xlogy, nf.math.xdivy, nf.math.xlog1py, nf.math.multiply_no_nan,
              nf.math.divide_no_nan):
        with np.errstate(all="ignore"):
            assert f(half, 3.0).dtype == np.float16 and f(3.0, half).dtype == np.float16, f
            assert f([1.0], 3.0).dtype == np.float32, f


def _grads(f, *xs):
    theo, num = nf.test.compute_gradient(f, [np.asarray(x, np.float64) for x in xs])
    for t, n in zip(theo, num):
        np.testing.assert_allclose(t, n, rtol=1e-5, atol=1e-6)


def test_no_nan_gradients_are_tensorflows():
    x = nf.Variable([2.0, 3.0], dtype=np.float64)
    y = nf.Variable([0.0, 4.0], dtype=np.float64)
    with nf.GradientTape(persistent=True) as tape:
        s = nf.reduce_sum(nf.math.multiply_no_nan(x, y))
        d = nf.reduce_sum(nf.math.divide_no_nan(x, y))
    # multiply_no_nan: d/dy = x (also where y == 0), d/dx = y; divide_no_nan: 0 where y == 0
    np.testing.assert_array_equal(tape.gradient(s, y).numpy(), [2.0, 3.0])
    np.testing.assert_array_equal(tape.gradient(s, x).numpy(), [0.0, 4.0])
    np.testing.assert_allclose(tape.gradient(d, x).numpy(), [0.0, 0.25])
    np.testing.assert_allclose(tape.gradient(d, y).numpy(), [0.0, -3 / 16])


REDUCE = [("reduce_sum", np.sum), ("reduce_mean", np.mean), ("reduce_max", np.max),
          ("reduce_min", np.min), ("reduce_prod", np.prod), ("reduce_std", np.std),
          ("reduce_variance", np.var),
          ("reduce_logsumexp", lambda a, axis, keepdims: np.log(np.sum(
              np.exp(a), axis=axis, keepdims=keepdims))),
          ("reduce_euclidean_norm", lambda a, axis, keepdims: np.sqrt(np.sum(
              a * a, axis=axis, keepdims=keepdims)))]


@pytest.mark.parametrize("name,ref", REDUCE, ids=[r[0] for r in REDUCE])
@pytest.mark.parametrize("axis", [None, 0, 1, [0, 1], -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_match_numpy(name, ref, axis, keepdims):
    a = A.astype(np.float32)
    got = getattr(nf.math, name)(tnp.asarray(a), axis=axis, keepdims=keepdims)
    ax = tuple(axis) if isinstance(axis, list) else axis
    want = ref(a.astype(np.float64), axis=ax, keepdims=keepdims)
    assert got.dtype == np.float32 and got.shape == np.shape(want)
    np.testing.assert_allclose(got.numpy(), want, rtol=3e-6)


def test_reduce_logsumexp_at_the_edges():
    # no overflow; an all -inf row gives -inf (not NaN); +inf gives +inf
    got = nf.math.reduce_logsumexp([[1000., 1000.], [-np.inf, -np.inf], [np.inf, 0.]], axis=1)
    np.testing.assert_allclose(got.numpy(), [1000 + np.log(2), -np.inf, np.inf], rtol=1e-6)
    assert nf.reduce_logsumexp is nf.math.reduce_logsumexp


def test_reduce_euclidean_norm_keeps_integer_dtype():
    # TensorFlow's documented example: sqrt(17) truncated to 4 for int32 input
    got = nf.math.reduce_euclidean_norm([[1, 2, 3], [1, 1, 1]])
    assert got.dtype == np.int32 and got.numpy() == 4


def test_count_nonzero_and_argminmax():
    got = nf.math.count_nonzero([[0, 1.5], [2, 0]], axis=1)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got.numpy(), [1, 1])
    np.testing.assert_array_equal(nf.math.argmax([[1, 5], [7, 2]]).numpy(), [1, 0])  # axis 0


def test_scans_exclusive_and_reverse():
    x = np.array([[1., 2., 3.], [4., 5., 6.]], np.float32)
    for axis in (0, 1, -1):
        ex = np.cumsum(x, axis=axis) - x
        rev = np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
        np.testing.assert_allclose(nf.math.cumsum(x, axis).numpy(), np.cumsum(x, axis=axis))
        np.testing.assert_allclose(nf.math.cumsum(x, axis, exclusive=True).numpy(), ex)
        np.testing.assert_allclose(nf.math.cumsum(x, axis, reverse=True).numpy(), rev)
        np.testing.assert_allclose(nf.math.cumsum(x, axis, True, True).numpy(), rev - x)
    np.testing.assert_allclose(nf.math.cumprod([1., 2., 3.], exclusive=True, reverse=True)
                               .numpy(), [6, 3, 1])
    got = nf.math.cumulative_logsumexp([0., 0., 1000.], exclusive=True)
    np.testing.assert_allclose(got.numpy(), [-np.inf, 0, np.log(2)], rtol=1e-6)


def test_top_k_orders_ties_by_index_and_nan_first():
    v, i = nf.math.top_k([[1., 3., 3., 2.], [np.nan, 0., 5., 5.]], k=3)
    np.testing.assert_array_equal(i.numpy(), [[1, 2, 3], [0, 2, 3]])
    assert i.dtype == np.int32
    np.testing.assert_array_equal(v.numpy()[0], [3, 3, 2])
    assert np.isnan(v.numpy()[1, 0])
    assert nf.nn.top_k is nf.math.top_k
    with pytest.raises(ValueError, match="k=5"):
        nf.math.top_k([1., 2.], k=5)


def test_segment_sums_and_means():
    data = np.array([[1., 2.], [3., 4.], [5., 6.], [7., 8.]], np.float32)
    ids = np.array([2, 0, 2, -1])            # TF drops rows with a negative id
    want = np.zeros((4, 2), np.float32)
    for row, i in zip(data, ids):
        if i >= 0:
            want[i] += row
    got = nf.math.unsorted_segment_sum(data, ids, 4)
    np.testing.assert_array_equal(got.numpy(), want)
    mean = nf.math.unsorted_segment_mean(data, ids, 4).numpy()
    np.testing.assert_array_equal(mean, [[3, 4], [0, 0], [3, 4], [0, 0]])
    np.testing.assert_array_equal(nf.math.segment_sum(data, [0, 0, 1, 1]).numpy(),
                                  [[4, 6], [12, 14]])
    np.testing.assert_array_equal(nf.math.segment_mean(data, [0, 0, 0, 1]).numpy(),
                                  [[3, 4], [7, 8]])
    with pytest.raises(ValueError, match="sorted"):
        nf.math.segment_sum(data, [1, 0, 0, 0])
    with pytest.raises(nf.errors.InvalidArgumentError, match=r"not in \[0, 2\)"):
        nf.math.unsorted_segment_sum(data, [0, 1, 2, 0], 2)
    _grads(lambda d: nf.math.unsorted_segment_sum(d, ids, 3), data)


def test_small_math_functions():
    np.testing.assert_allclose(nf.math.polyval([2., -1., 3.], [0., 1., 2.]).numpy(),
                               np.polyval([2, -1, 3], [0, 1, 2]))
    # lbeta([a, b]) = log B(a, b) = lgamma(a) + lgamma(b) - lgamma(a + b)
    want = math.lgamma(2.5) + math.lgamma(4.0) - math.lgamma(6.5)
    np.testing.assert_allclose(nf.math.lbeta([[2.5, 4.0]]).numpy(), [want], rtol=1e-6)
    assert nf.math.lbeta(tnp.zeros((2, 0))).numpy().tolist() == [-np.inf, -np.inf]
    assert bool(nf.math.is_non_decreasing([1, 1, 2])) and not bool(
        nf.math.is_strictly_increasing([1, 1, 2]))
    assert bool(nf.math.is_strictly_increasing([])) and bool(nf.math.is_non_decreasing([[3]]))
    np.testing.assert_allclose(nf.math.l2_normalize([[3., 4.], [0., 0.]], axis=1).numpy(),
                               [[0.6, 0.8], [0, 0]])
    cm = nf.math.confusion_matrix([0, 2, 1, 2], [0, 1, 1, 2], weights=[1, 2, 3, 4])
    np.testing.assert_array_equal(cm.numpy(), [[1, 0, 0], [0, 3, 0], [0, 2, 4]])
    np.testing.assert_allclose(nf.math.scalar_mul(2, [1., 2.]).numpy(), [2, 4])
    np.testing.assert_allclose(nf.math.lgamma([0.5]).numpy(), [math.lgamma(0.5)], rtol=1e-6)
    np.testing.assert_allclose(nf.math.erf([0.5]).numpy(), [math.erf(0.5)], rtol=1e-6)


# ------------------------------------------------------------------ gather and scatter
P = np.arange(24.0).reshape(2, 3, 4)


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_gather_is_take_along_axis(axis):
    idx = np.array([[1, 0], [1, 1]])
    idx = np.minimum(idx, P.shape[axis] - 1)
    got = nf.gather(P, idx, axis=axis)
    np.testing.assert_array_equal(got.numpy(), np.take(P, idx, axis=axis))


@pytest.mark.parametrize("axis", [1, 2])
def test_gather_batch_dims_gathers_each_batch_entry_with_its_indices(axis):
    idx = np.array([[2, 0], [1, 1]]) if axis == 2 else np.array([[2, 0], [1, 1]]) % 3
    got = nf.gather(P, idx, axis=axis, batch_dims=1)
    # TF's definition: out[b, ..., i, ...] = params[b, ..., idx[b, i], ...]
    want = np.stack([np.take(P[b], idx[b], axis=axis - 1) for b in range(2)])
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    compiled = nf.function(lambda p, i: nf.gather(p, i, axis=axis, batch_dims=1))
    np.testing.assert_array_equal(compiled(tnp.asarray(P), tnp.asarray(idx)).numpy(), want)


def test_gather_refuses_what_tensorflow_refuses():
    with pytest.raises(nf.errors.InvalidArgumentError, match=r"indices\[1\] = -1 is not in"):
        nf.gather([1., 2., 3.], [0, -1])          # NumPy would take the last element
    with pytest.raises(ValueError):
        nf.gather([1., 2., 3.], [3])
    with pytest.raises(TypeError, match="integers"):
        nf.gather([1., 2.], [0.5])
    with pytest.raises(ValueError, match="at least one axis"):
        nf.gather(1.0, [0])
    f = nf.function(lambda p, i: nf.gather(p, i))
    assert f(tnp.asarray([1., 2.]), tnp.asarray([1])).numpy().tolist() == [2.0]
    with pytest.raises(nf.errors.InvalidArgumentError):
        f(tnp.asarray([1., 2.]), tnp.asarray([-1]))   # checked at every call of the graph


def test_gather_nd_and_its_gradient():
    idx = np.array([[1, 2], [0, 0], [1, 2]])
    got = nf.gather_nd(P, idx)
    np.testing.assert_array_equal(got.numpy(), P[idx[:, 0], idx[:, 1]])
    bd = nf.gather_nd(P, np.array([[[2]], [[0]]]), batch_dims=1)
    np.testing.assert_array_equal(bd.numpy(), np.stack([P[0, 2][None], P[1, 0][None]]))
    with pytest.raises(nf.errors.InvalidArgumentError):
        nf.gather_nd(P, [[0, 3]])
    _grads(lambda p: nf.gather_nd(p, idx), P[:, :, 0])
    _grads(lambda p: nf.gather(p, [[2, 0], [1, 1]], axis=1, batch_dims=1), P[:, :, 0])


def test_scatter_nd_adds_repeated_indices():
    got = nf.scatter_nd([[0, 1], [2, 0], [0, 1]], [1., 2., 3.], [3, 2])
    np.testing.assert_array_equal(got.numpy(), [[0, 4], [0, 0], [2, 0]])
    rows = nf.scatter_nd([[1]], [[5, 6]], nf.constant([2, 2]))
    np.testing.assert_array_equal(rows.numpy(), [[0, 0], [5, 6]])
    t = nf.constant([1, 2, 3, 4])
    np.testing.assert_array_equal(nf.tensor_scatter_nd_update(t, [[1], [3]], [7, 8]).numpy(),
                                  [1, 7, 3, 8])
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3, 4])        # a copy, as TF
    np.testing.assert_array_equal(nf.tensor_scatter_nd_sub(t, [[0], [0]], [1, 1]).numpy(),
                                  [-1, 2, 3, 4])
    with pytest.raises(nf.errors.InvalidArgumentError):
        nf.scatter_nd([[-1]], [1.], [3])
    _grads(lambda u: nf.scatter_nd([[0], [2], [0]], u, [4]), [1., 2., 3.])
    _grads(lambda t: nf.tensor_scatter_nd_update(t, [[1]], [9.]), [1., 2., 3.])


def test_masks_splits_and_slices():
    x = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(nf.boolean_mask(x, [True, False, True]).numpy(), x[[0, 2]])
    m = np.array([True, False, True, True])
    np.testing.assert_array_equal(nf.boolean_mask(x, m, axis=1).numpy(), x[:, m])
    with pytest.raises(ValueError, match="does not match"):
        nf.boolean_mask(x, [True, False])
    np.testing.assert_array_equal(nf.sequence_mask([2, 0], 3, dtype=np.float32).numpy(),
                                  [[1, 1, 0], [0, 0, 0]])
    assert nf.sequence_mask([1, 3]).shape == (2, 3)
    parts = nf.split(x, [1, -1, 1], axis=1)
    np.testing.assert_array_equal(parts[1].numpy(), x[:, 1:3])
    assert [p.shape for p in nf.split(x, 2, axis=1)] == [(3, 2), (3, 2)]
    with pytest.raises(ValueError):
        nf.split(x, 3, axis=1)
    with pytest.raises(ValueError):
        nf.split(x, [1, 1], axis=1)
    np.testing.assert_array_equal(nf.slice(x, [1, 1], [2, -1]).numpy(), x[1:3, 1:])
    with pytest.raises(ValueError, match="do not fit"):
        nf.slice(x, [2, 0], [2, 1])               # Python slicing would cut it silently
    np.testing.assert_array_equal(nf.reverse(x, [0, 1]).numpy(), x[::-1, ::-1])


@pytest.mark.parametrize("mode", ["CONSTANT", "reflect", "Symmetric"])
def test_pad_modes(mode):
    x = np.arange(6.0).reshape(2, 3)
    pads = [[1, 1], [2, 2]]
    kw = {"constant_values": 7.0} if mode == "CONSTANT" else {}
    got = nf.pad(x, pads, mode, **kw)
    np.testing.assert_array_equal(got.numpy(), np.pad(x, pads, mode=mode.lower(), **kw))
    with pytest.raises(ValueError, match="mode"):
        nf.pad(x, pads, "EDGE")


def test_sorting_unique_and_friends():
    v = np.array([3, 1, 3, 2, 1])
    np.testing.assert_array_equal(nf.sort(v, direction="DESCENDING").numpy(), [3, 3, 2, 1, 1])
    np.testing.assert_array_equal(nf.argsort(v).numpy(), [1, 4, 3, 0, 2])
    np.testing.assert_array_equal(nf.argsort(v, direction="DESCENDING").numpy(), [0, 2, 3, 1, 4])
    assert nf.argsort(v).dtype == np.int32
    y, idx = nf.unique([3, 1, 3, 2, 1])
    np.testing.assert_array_equal(y.numpy(), [3, 1, 2])           # first-appearance order
    np.testing.assert_array_equal(idx.numpy(), [0, 1, 0, 2, 1])
    np.testing.assert_array_equal(nf.roll([1, 2, 3], 1, 0).numpy(), [3, 1, 2])
    np.testing.assert_array_equal(nf.repeat([1, 2], 2).numpy(), [1, 1, 2, 2])
    e = nf.eye(2, 3, batch_shape=[4])
    assert e.shape == (4, 2, 3) and e.dtype == np.float32
    np.testing.assert_array_equal(e.numpy()[3], np.eye(2, 3))
    assert nf.linspace(0., 1., 3).dtype == np.float32
    np.testing.assert_allclose(nf.einsum("ij,j->i", [[1., 2.]], [3., 4.]).numpy(), [11.])


def test_norms_and_clipping():
    x = np.array([[3., 4.], [0., 0.]], np.float32)
    assert float(nf.norm(x)) == 5.0
    np.testing.assert_allclose(nf.norm(x, axis=1).numpy(), [5, 0])
    np.testing.assert_allclose(nf.norm(x, ord=1, axis=[0, 1]).numpy(), np.linalg.norm(x, 1))
    np.testing.assert_allclose(nf.norm(x, ord=np.inf).numpy(), 4.0)
    with pytest.raises(ValueError, match="fro"):
        nf.norm([1., 2.], ord="fro")
    np.testing.assert_allclose(nf.clip_by_norm([3., 4.], 10.).numpy(), [3, 4])
    np.testing.assert_allclose(nf.clip_by_norm(x, 1., axes=[1]).numpy(), [[0.6, 0.8], [0, 0]])
    clipped, n = nf.clip_by_global_norm([[3.], None, np.array([4.], np.float32)], 2.5)
    assert clipped[1] is None and float(n) == 5.0
    np.testing.assert_allclose(clipped[0].numpy(), [1.5])
    np.testing.assert_allclose(clipped[2].numpy(), [2.0])
    same, _ = nf.clip_by_global_norm([[0.3], [0.4]], 1.0)      # within the norm: unchanged
    np.testing.assert_allclose(same[1].numpy(), [0.4])
    bad, n = nf.clip_by_global_norm([[np.inf], [1.]], 1.0)   # TF: NaN entries signal the error
    assert np.isinf(float(n)) and all(np.isnan(b.numpy()).all() for b in bad)
    zero, _ = nf.clip_by_global_norm([[0.], [0.]], 1.0)
    assert np.array_equal(zero[0].numpy(), [0.0])
    # a zero tensor has a finite gradient (no sqrt(0) in the backward pass)
    z = nf.Variable([0.0, 0.0])
    with nf.GradientTape() as tape:
        s = nf.reduce_sum(nf.clip_by_norm(z, 1.0))
    assert np.isfinite(tape.gradient(s, z).numpy()).all()
    _grads(lambda a, b: nf.clip_by_global_norm([a, b], 1.0)[0][0], [3.0, 1.0], [4.0])


def test_executing_eagerly_and_is_tensor():
    assert nf.executing_eagerly()
    seen = []
    nf.function(lambda x: seen.append(nf.executing_eagerly()) or x)(tnp.ones(1))
    assert seen == [False]
    assert nf.is_tensor(tnp.ones(1)) and nf.is_tensor(nf.Variable(1.0))
    assert not nf.is_tensor(np.ones(1)) and not nf.is_tensor([1.0])


# ------------------------------------------------------------------ nf.nn
def test_softmax_axis_none_is_the_last_axis():
    x = np.array([[1., 2., 3.], [1., 1., 1.]], np.float32)
    e = np.exp(x - x.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    for f in (nf.nn.softmax, nf.math.softmax):
        np.testing.assert_allclose(f(x, axis=None).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(nf.nn.log_softmax(x, None).numpy(), np.log(want), rtol=1e-6)


def test_cross_entropies_follow_tensorflows_examples():
    # tf.nn.softmax_cross_entropy_with_logits' documented example
    got = nf.nn.softmax_cross_entropy_with_logits(
        labels=[[1.0, 0.0, 0.0], [0.0, 0.8, 0.2]], logits=[[4.0, 2.0, 1.0], [0.0, 5.0, 1.0]])
    np.testing.assert_allclose(got.numpy(), [0.16984604, 0.82474494], rtol=1e-6)
    logits = np.array([[2., -1., 0.5], [0., 0., 0.]], np.float32)
    lab = np.array([2, 0])
    lse = np.log(np.exp(logits).sum(-1))
    np.testing.assert_allclose(
        nf.nn.sparse_softmax_cross_entropy_with_logits(labels=lab, logits=logits).numpy(),
        lse - logits[[0, 1], lab], rtol=1e-6)
    with pytest.raises(nf.errors.InvalidArgumentError, match="not in"):
        nf.nn.sparse_softmax_cross_entropy_with_logits(labels=[-1, 0], logits=logits)
    with pytest.raises(ValueError, match="shape"):
        nf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0], logits=logits)
    with pytest.raises(ValueError, match="same shape"):
        nf.nn.sigmoid_cross_entropy_with_logits(labels=[1.], logits=[1., 2.])
    z, x = np.array([1., 0., 1.]), np.array([-30., 2., 40.])
    sig = 1 / (1 + np.exp(-x))
    w = 3.0
    with np.errstate(all="ignore"):
        want = -w * z * np.log(sig) - (1 - z) * np.log1p(-sig)
    want[2] = 0                                     # log(sigmoid(40)) is -4e-18 in float64
    np.testing.assert_allclose(
        nf.nn.weighted_cross_entropy_with_logits(z, x, w).numpy(), want, atol=1e-12, rtol=1e-12)
    _grads(lambda lg: nf.nn.sparse_softmax_cross_entropy_with_logits(lab, lg), logits)
    _grads(lambda lg: nf.nn.weighted_cross_entropy_with_logits(z, lg, w), x / 10)


def test_moments_batch_norm_bias_add():
    x = np.array([[1., 2.], [3., 6.]], np.float32)
    mean, var = nf.nn.moments(x, axes=[0])
    np.testing.assert_allclose(mean.numpy(), x.mean(0))
    np.testing.assert_allclose(var.numpy(), x.var(0))
    mean, var = nf.nn.moments(x, axes=[0, 1], keepdims=True)
    assert mean.shape == (1, 1) and np.isclose(float(var[0, 0]), x.var())
    y = nf.nn.batch_normalization(x, mean, var, offset=1.0, scale=2.0, variance_epsilon=1e-3)
    np.testing.assert_allclose(y.numpy(), (x - x.mean()) / np.sqrt(x.var() + 1e-3) * 2 + 1,
                               rtol=1e-6)
    np.testing.assert_array_equal(nf.nn.bias_add(x, [10., 20.]).numpy(), x + [10, 20])
    nchw = np.zeros((1, 2, 3, 3), np.float32)
    assert nf.nn.bias_add(nchw, [1., 2.], data_format="NCHW").numpy()[0, 1, 2, 2] == 2
    _grads(lambda v: nf.nn.moments(v, axes=[0])[1], x)


def test_dropout_keeps_the_expected_value():
    x = tnp.ones((200, 200), dtype=tnp.float32)
    y = nf.nn.dropout(x, rate=0.25, seed=1).numpy()
    kept = y != 0
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs(kept.mean() - 0.75) < 0.02
    assert nf.nn.dropout(x, 0.0) is not None
    with pytest.raises(ValueError, match="rate"):
        nf.nn.dropout(x, 1.0)
    col = nf.nn.dropout(x, 0.5, noise_shape=[200, 1]).numpy()
    assert all(len(set(r)) == 1 for r in col)                 # one draw per row


def test_embedding_lookup_and_average_loss():
    table = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(nf.nn.embedding_lookup(table, [2, 0]).numpy(), table[[2, 0]])
    capped = nf.nn.embedding_lookup(table, [2], max_norm=1.0).numpy()
    np.testing.assert_allclose(np.linalg.norm(capped), 1.0)
    assert float(nf.nn.compute_average_loss([1., 2., 3.])) == 2.0
    assert float(nf.nn.compute_average_loss([1., 2.], sample_weight=[1., 0.],
                                            global_batch_size=4)) == 0.25


# ------------------------------------------------------------------ gradients, compiled, batched
DIFFERENTIABLE = [
    ("math.sigmoid", lambda x: nf.math.sigmoid(x), [[-3., 0.5, 2.]]),
    ("math.reduce_logsumexp", lambda x: nf.math.reduce_logsumexp(x, axis=0),
     [[[1., 2.], [3., -1.]]]),
    ("math.reduce_std", lambda x: nf.math.reduce_std(x, axis=1), [[[1., 2.], [3., -1.]]]),
    ("math.reduce_euclidean_norm", lambda x: nf.math.reduce_euclidean_norm(x), [[3., -4.]]),
    ("math.cumsum", lambda x: nf.math.cumsum(x, exclusive=True, reverse=True), [[1., 2., 4.]]),
    ("math.cumprod", lambda x: nf.math.cumprod(x, exclusive=True), [[1., 2., 4.]]),
    ("math.cumulative_logsumexp", lambda x: nf.math.cumulative_logsumexp(x), [[1., 2., 4.]]),
    ("math.squared_difference", lambda x, y: nf.math.squared_difference(x, y),
     [[1., 2.], [0.5, -1.]]),
    ("math.xlogy", lambda x, y: nf.math.xlogy(x, y), [[1., 2.], [0.5, 3.]]),
    ("math.rsqrt", lambda x: nf.math.rsqrt(x), [[1., 2.]]),
    ("math.l2_normalize", lambda x: nf.math.l2_normalize(x), [[1., 2., -2.]]),
    ("math.polyval", lambda x: nf.math.polyval([1., -2., 3.], x), [[0.5, 2.]]),
    ("math.top_k", lambda x: nf.math.top_k(x, 2).values, [[1., 5., 3.]]),
    ("math.segment_mean", lambda x: nf.math.unsorted_segment_mean(x, [1, 0, 1], 2),
     [[1., 5., 3.]]),
    ("math.lbeta", lambda x: nf.math.lbeta(x), [[2., 3.5]]),
    ("sort", lambda x: nf.sort(x, direction="DESCENDING"), [[1., 5., 3.]]),
    ("norm", lambda x: nf.norm(x, ord=3), [[1., 5., 3.]]),
    ("clip_by_norm", lambda x: nf.clip_by_norm(x, 1.0), [[1., 5., 3.]]),
    ("boolean_mask", lambda x: nf.boolean_mask(x, [True, False, True]), [[1., 5., 3.]]),
    ("pad", lambda x: nf.pad(x, [[1, 2]], "REFLECT"), [[1., 5., 3.]]),
    ("split", lambda x: nf.split(x, [2, 1])[0], [[1., 5., 3.]]),
    ("nn.softmax", lambda x: nf.nn.softmax(x), [[1., 5., 3.]]),
    ("nn.log_sigmoid", lambda x: nf.nn.log_sigmoid(x), [[1., -5., 3.]]),
    ("nn.batch_normalization",
     lambda x, m: nf.nn.batch_normalization(x, m, 2., 0.5, 3., 1e-3), [[1., 2.], [0.5]]),
]


@pytest.mark.parametrize("name,f,xs", DIFFERENTIABLE, ids=[d[0] for d in DIFFERENTIABLE])
def test_gradients_match_central_differences(name, f, xs):
    _grads(f, *xs)


@pytest.mark.parametrize("name,f,xs", DIFFERENTIABLE, ids=[d[0] for d in DIFFERENTIABLE])
def test_compiled_equals_eager(name, f, xs):
    args = [tnp.asarray(np.asarray(x, np.float64)) for x in xs]
    np.testing.assert_allclose(nf.function(f)(*args).numpy(), f(*args).numpy(), rtol=1e-14)


def test_vectorized_map_equals_a_loop():
    x = np.arange(12.0).reshape(3, 4) - 5
    idx = np.array([[3, 0], [1, 1], [2, 3]])
    for f in (lambda a: nf.math.reduce_logsumexp(a[0]), lambda a: nf.gather(a[0], a[1]),
              lambda a: nf.math.top_k(a[0], 2).values, lambda a: nf.clip_by_norm(a[0], 2.0)):
        got = nf.vectorized_map(f, (tnp.asarray(x), tnp.asarray(idx)))
        want = np.stack([f((tnp.asarray(x[i]), tnp.asarray(idx[i]))).numpy() for i in range(3)])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


# ------------------------------------------------------------------ where to look
@pytest.mark.parametrize("expr,hint", [
    ("nf.arange", "use ndflow.numpy.arange"),
    ("nf.relu", "use ndflow.nn.relu"),
    ("nf.reduce_std", "use ndflow.math.reduce_std"),
    ("nf.keras", "no Keras"),
    ("nf.strided_slice", "x[begin:end:stride]"),
    ("nf.math.segment_max", "maximum.at"),
    ("nf.math.arange", "use ndflow.numpy.arange"),
    ("nf.nn.reduce_sum", "use ndflow.reduce_sum"),
    ("tnp.reduce_sum", "ndflow.numpy.sum; TensorFlow's is ndflow.reduce_sum"),
    ("tnp.gather", "ndflow.numpy.take"),
    ("tnp.sigmoid", "TensorFlow's is ndflow.sigmoid"),
])
def test_a_missing_name_says_where_to_look(expr, hint):
    with pytest.raises(AttributeError) as info:
        eval(expr)
    assert hint in str(info.value)
    assert str(info.value).startswith("module 'ndflow")


def test_a_name_found_nowhere_and_tool_probes_get_the_plain_error():
    for expr in ("nf.no_such_name", "nf.__wrapped__", "tnp._ipython_canary", "nf.math.zzz"):
        with pytest.raises(AttributeError) as info:
            eval(expr)
        assert str(info.value).endswith("attribute '%s'" % expr.rsplit(".", 1)[1])
    assert not hasattr(nf, "no_such_name")
