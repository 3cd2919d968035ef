"""Blocked (chunk by chunk, optionally threaded) tier-0 execution of fused regions
(ndflow/graph/kernels/blocks.py, numpy_tier.py): NumPy's bits, warnings and errors.

The thresholds are lowered so that arrays of a few hundred elements run blocked in chunks of
16 to 64 elements; a spy on `blocks.run` checks that the blocked path really ran."""
import warnings

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import fusion
from ndflow.graph.kernels import blocks, numpy_tier

CHUNK_BYTES = 256          # 32 float64, 64 float32 elements per chunk


@pytest.fixture(params=["one-thread", "threads"])
def blocked(request, monkeypatch, nf_settings):
    """Tier 0 only, blocked from 64 elements, with or without threads. Yields the list of
    blocks.run's return values (one per blocked call)."""
    nf_settings(numba="off")
    nf_settings(large_min=1)
    nf_settings(block_min=64)
    nf_settings(block_bytes=CHUNK_BYTES)
    threaded = request.param == "threads"
    nf_settings(block_threads_min=64 if threaded else 1 << 62)
    if threaded:
        nf_settings(threads=3)     # more threads than this machine's cores
        monkeypatch.setattr(blocks, "ADAPT", False)     # always threads, however fast
    runs = []
    real = blocks.run

    def spy(blk, *a):
        r = real(blk, *a)
        runs.append(r)
        return r
    monkeypatch.setattr(blocks, "run", spy)
    yield runs


def _bits(a):
    a = np.asarray(a)
    return a.dtype, a.shape, a.tobytes()


def _same(got, want):
    assert _bits(got) == _bits(want), (np.asarray(got), want)
    if np.ndim(want) >= 2:          # laid out as NumPy's (C order, or the operands')
        g = np.asarray(got)
        assert (g.flags.c_contiguous, g.flags.f_contiguous) == \
            (want.flags.c_contiguous, want.flags.f_contiguous)


def _specials(dtype, n, rng):
    dt = np.dtype(dtype)
    x = rng.standard_normal(n) * rng.choice([1e-3, 1.0, 20.0, 800.0], n)
    if dt.kind == "c":
        x = x + 1j * rng.standard_normal(n) * rng.choice([1e-3, 1.0, 20.0, 800.0], n)
    x = x.astype(dt)
    sp = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0], dtype=dt)
    x[rng.integers(0, n, n // 7)] = sp[rng.integers(0, len(sp), n // 7)]
    return x


def sigmoid(m):
    return lambda y: 1 / (1 + m.exp(-y))


def chain(m):
    # several temporaries alive at once, a select, a comparison and two results
    def f(x, b):
        e = m.exp(-m.abs(x))
        t = m.tanh(x * b) + m.log1p(e)
        s = m.where(x > b, t, e * 0.5)
        return s - m.sqrt(m.abs(t)), e
    return f


def _check(f_np, args, runs, expect_blocked=True):
    f_nf = nf.function(f_np(tnp))
    with np.errstate(all="ignore"):
        want = f_np(np)(*args)
        before = len(runs)
        got = f_nf(*[tnp.asarray(a) for a in args])
        got = f_nf(*[tnp.asarray(a) for a in args])       # again: pooled buffers reused
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            _same(g, w)
    else:
        _same(got, want)
    assert runs[before:] == ([True, True] if expect_blocked else [])
    return got


@pytest.mark.parametrize("n", [64, 65, 127, 128, 129, 1000, 1031])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
def test_sigmoid_bits_at_sizes_and_dtypes(blocked, n, dtype):
    rng = np.random.default_rng(n)
    _check(sigmoid, (_specials(dtype, n, rng),), blocked)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_chain_with_select_and_two_results(blocked, dtype):
    rng = np.random.default_rng(1)
    x = _specials(dtype, 700, rng)
    b = _specials(dtype, 700, rng)
    _check(chain, (x, b), blocked)


@pytest.mark.parametrize("xshape,bshape", [
    ((37, 53), (53,)),          # a bias row: split along rows of the trailing dim
    ((37, 53), (37, 1)),        # a column
    ((3, 500), (1, 500)),       # rows longer than a chunk: split inside each row
    ((500, 3), ()),             # a 0-d operand
    ((4, 5, 60), (5, 1)),       # outer index with a broadcast outer dim
    ((2, 3, 4, 50), (3, 1, 50)),
])
def test_broadcast_operands(blocked, xshape, bshape):
    rng = np.random.default_rng(2)
    x = _specials("float64", int(np.prod(xshape)), rng).reshape(xshape)
    b = _specials("float64", max(1, int(np.prod(bshape))), rng).reshape(bshape)
    _check(chain, (x, b), blocked)


@pytest.mark.parametrize("view", ["transposed", "strided", "reversed", "offset", "fortran"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_non_contiguous_inputs(blocked, view, dtype):
    rng = np.random.default_rng(3)
    base = _specials(dtype, 4 * 60 * 70 + 1, rng)
    x = {"transposed": base[:4200].reshape(60, 70).T,
         "strided": base[::3][:1400].reshape(20, 70),
         "reversed": base[::-1][:4200].reshape(60, 70)[::-1, ::-1],
         "offset": base[1:4201].reshape(60, 70),
         "fortran": np.asfortranarray(base[:4200].reshape(60, 70))}[view]
    # NumPy lays the results of a transposed or Fortran-ordered operand out in its order,
    # which C-ordered chunks cannot give: those calls run the plain path (NumPy's calls)
    permuted = view in ("transposed", "fortran")
    _check(sigmoid, (x,), blocked, expect_blocked=not permuted)
    _check(chain, (x, x[0]), blocked, expect_blocked=not permuted)


def test_small_zero_d_and_empty_are_not_blocked(blocked):
    for x in (np.float64(0.5), np.array(-0.0), np.zeros((0, 5)), np.ones(63)):
        _check(sigmoid, (x,), blocked, expect_blocked=False)


def test_every_ufunc_gives_the_same_bits_by_chunks():
    """What blocking relies on: a NumPy loop gives an element the same bits whatever the
    call's length, the element's position and alignment, the stride, or in place."""
    rng = np.random.default_rng(4)
    ufuncs = sorted({u for u in vars(np).values() if isinstance(u, np.ufunc)
                     and u.nout == 1 and u.signature is None and u.nin in (1, 2)},
                    key=lambda u: u.__name__)
    n = 1000
    for dt in ("float16", "float32", "float64", "complex64", "complex128"):
        a, b = _specials(dt, 2 * n + 1, rng), _specials(dt, 2 * n + 1, rng)
        for u in ufuncs:
            for views in ([a[:n], b[:n]], [a[1:n + 1], b[:n]], [a[::2][:n], b[::-1][:n]]):
                args = views[:u.nin]
                with np.errstate(all="ignore"):
                    try:
                        whole = u(*args)
                    except TypeError:
                        break
                    out = np.empty_like(whole)
                    for lo, hi in ((0, 7), (7, 300), (300, 301), (301, 999), (999, n)):
                        u(*[v[lo:hi] for v in args], out=out[lo:hi])
                assert _bits(out) == _bits(whole), (u.__name__, dt)


# ------------------------------------------------------------------ errors and warnings
def _overflowing(dtype="float32"):
    y = np.linspace(-200, 5, 1000).astype(dtype)     # exp(-y) overflows for y < -88
    y[500] = np.nan
    return y


def test_warnings_are_numpy_s(blocked):
    y = _overflowing()
    f = nf.function(sigmoid(tnp))
    for mode in ("always", "default"):
        with warnings.catch_warnings(record=True) as eager:
            warnings.simplefilter(mode)
            want = sigmoid(np)(y)
        with warnings.catch_warnings(record=True) as comp:
            warnings.simplefilter(mode)
            got = f(tnp.asarray(y))
        _same(got, want)
        assert [(w.category, str(w.message)) for w in comp] == \
            [(w.category, str(w.message)) for w in eager] != []
    assert blocked[-1] is False          # met an error: the call ran again unblocked


def test_errstate_raise_is_numpy_s(blocked):
    y = _overflowing()
    f = nf.function(sigmoid(tnp))
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError) as eager:
            sigmoid(np)(y)
        with pytest.raises(FloatingPointError) as comp:
            f(tnp.asarray(y))
    assert str(comp.value).startswith(str(eager.value) + "\n")   # plus the node and line
    # errors that are ignored keep the call blocked
    with np.errstate(over="ignore", invalid="raise"):
        _same(f(tnp.asarray(y)), sigmoid(np)(y))
    assert blocked[-1] is True


def test_errstate_call_is_numpy_s(blocked):
    y = _overflowing("float64")
    y[::3] = 800.0
    f = nf.function(lambda x: tnp.log(tnp.exp(x) - 1) * x)
    g = lambda x: np.log(np.exp(x) - 1) * x          # noqa: E731
    seen = {"eager": [], "compiled": []}
    for k, run in (("eager", lambda: g(y)), ("compiled", lambda: f(tnp.asarray(y)))):
        with np.errstate(all="call", call=lambda kind, flag, k=k: seen[k].append(kind)):
            r = run()
        with np.errstate(all="ignore"):
            _same(r, g(y))
    assert seen["compiled"] == seen["eager"] != []


def test_errstate_is_per_thread(blocked):
    """A call from a thread under 'raise' raises while the main thread ignores, and the pool's
    threads follow the calling thread's state, not their own."""
    import threading
    y = _overflowing()
    f = nf.function(sigmoid(tnp))
    out = {}

    def worker():
        with np.errstate(over="raise"):
            try:
                f(tnp.asarray(y))
                out["t"] = "no error"
            except FloatingPointError as e:
                out["t"] = str(e)
    with np.errstate(all="ignore"):
        t = threading.Thread(target=worker)
        t.start()
        got = f(tnp.asarray(y))
        t.join()
        _same(got, sigmoid(np)(y))
    assert out["t"].startswith("overflow encountered in exp\n")


# ------------------------------------------------------------------ threads, buffers
def test_threads_give_the_same_bits(monkeypatch, nf_settings):
    nf_settings(numba="off")
    nf_settings(large_min=1)
    nf_settings(block_min=64)
    nf_settings(block_bytes=CHUNK_BYTES)
    monkeypatch.setattr(blocks, "ADAPT", False)
    rng = np.random.default_rng(5)
    x, b = _specials("float32", 5000, rng), _specials("float32", 5000, rng)
    res = []
    for tmin, nt in ((1 << 62, 1), (64, 2), (64, 4)):
        nf_settings(block_threads_min=tmin)
        nf_settings(threads=nt)
        f = nf.function(chain(tnp))
        with np.errstate(all="ignore"):
            res.append([_bits(r) for r in f(tnp.asarray(x), tnp.asarray(b))])
    assert res[0] == res[1] == res[2]


@pytest.mark.parametrize("adapt", [False, True])
def test_four_threads_calling_at_once_get_numpy_s_bits(monkeypatch, adapt, nf_settings):
    """Four caller threads run the same compiled functions at once (blocked, their chunks
    shared out between helper threads, the thread choice timing itself concurrently): every
    result is NumPy's, bit for bit, for float16/32/64 and non-contiguous operands."""
    import threading
    nf_settings(numba="off")
    nf_settings(large_min=1)
    nf_settings(block_min=64)
    nf_settings(block_bytes=CHUNK_BYTES)
    nf_settings(block_threads_min=64)
    nf_settings(threads=3)
    monkeypatch.setattr(blocks, "ADAPT", adapt)
    monkeypatch.setattr(blocks, "EXPLORE", 2)
    rng = np.random.default_rng(9)
    cases = []
    for dt in ("float16", "float32", "float64"):
        base = _specials(dt, 2 * 2100 + 1, rng)
        # (contiguous, strided, offset with reversed rows: NumPy's results are C-ordered)
        for x in (base[:2100], base[::2][:2100].reshape(30, 70),
                  base[1:2101].reshape(70, 30)[::-1]):
            b = _specials(dt, x.size, rng).reshape(x.shape)
            with np.errstate(all="ignore"):
                cases.append((nf.function(sigmoid(tnp)), (x,), [_bits(sigmoid(np)(x))]))
                cases.append((nf.function(chain(tnp)), (x, b),
                              [_bits(r) for r in chain(np)(x, b)]))
    with np.errstate(all="ignore"):
        for f, args, _ in cases:       # traced here: the threads run the compiled calls
            f(*[tnp.asarray(a) for a in args])
    errors, start = [], threading.Barrier(4)
    runs, lock, real = [], threading.Lock(), blocks.run

    def spy(*a):
        r = real(*a)
        with lock:
            runs.append(r)
        return r
    monkeypatch.setattr(blocks, "run", spy)

    def caller(k):
        try:
            start.wait()
            with np.errstate(all="ignore"):
                for r in range(6):
                    for i, (f, args, want) in enumerate(cases[k::2] if r % 2 else cases[::-1]):
                        got = f(*[tnp.asarray(a) for a in args])
                        got = got if isinstance(got, tuple) else (got,)
                        if [_bits(g) for g in got] != want:
                            errors.append((k, i, r))
        except BaseException as e:          # reported below, with the thread's name
            errors.append((k, repr(e)))

    ts = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []
    per_thread = [3 * len(cases) + 3 * len(cases[k::2]) for k in range(4)]
    assert runs == [True] * sum(per_thread)      # every call ran blocked, without a re-run


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_default_thresholds_and_chunks(monkeypatch, dtype, nf_settings):
    """At the shipped thresholds and chunk size: one element below settings.block_threads_min
    runs unblocked, from it on blocked (over two threads once there are two chunks, the last
    one short); both give
    NumPy's bits, special values included."""
    nf_settings(numba="off")
    nf_settings(threads=2)
    monkeypatch.setattr(blocks, "ADAPT", False)
    runs, real = [], blocks.run

    def spy(blk, *a):
        runs.append((blk.nthreads, blk.nchunks, blk.m))
        return real(blk, *a)
    monkeypatch.setattr(blocks, "run", spy)
    t = nf.config.settings.block_threads_min
    width = np.dtype(dtype).itemsize
    per_chunk = nf.config.settings.block_bytes // width
    x = _specials(dtype, t + per_chunk // 2, np.random.default_rng(11))
    for n, blocked_ in ((t - 1, False), (t, True), (t + per_chunk // 2, True)):
        del runs[:]
        with np.errstate(all="ignore"):
            _same(nf.function(sigmoid(tnp))(tnp.asarray(x[:n])), sigmoid(np)(x[:n]))
        chunks = -(-n // per_chunk)
        assert runs == ([(min(2, chunks), chunks, per_chunk)] if blocked_ else []), n


def test_results_never_share_memory_with_inputs(blocked):
    """A donated buffer that is an operand of the region is not written chunk by chunk (an
    error would leave nothing to run again from); inputs are untouched."""
    @nf.function
    def f(x, w):
        h = tnp.matmul(x, w)                 # dead after the fused region: donated to it
        return 1 / (1 + tnp.exp(-h))
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((40, 8)), rng.standard_normal((8, 30))
    x0 = x.copy()
    with np.errstate(all="ignore"):
        _same(f(tnp.asarray(x), tnp.asarray(w)), sigmoid(np)(x @ w))
    assert np.array_equal(x, x0)


def test_blocked_runs_in_the_chunk_body(blocked):
    f = nf.function(sigmoid(tnp))
    cf = f.get_concrete_function(tnp.ones(1000))
    src = fusion.fused_kernels(cf.graph)[0].source()
    assert "_blocks.run(plan.block" in src


@pytest.mark.parametrize("red", ["sum", "max", "min"])
@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_trailing_reduction_runs_whole_after_the_chunks(blocked, red, axis, keepdims):
    """The elementwise ops run blocked into a whole buffer; the reduction then runs over it
    (NumPy's pairwise order for sums, its NaN and -0.0 rules for max/min)."""
    def f(m):
        return lambda y, b: getattr(m, red)(m.exp(y) * b - 1.5, axis=axis, keepdims=keepdims)
    rng = np.random.default_rng(7)
    y = _specials("float32", 3000, rng).reshape(60, 50)
    b = _specials("float32", 50, rng)
    _check(f, (y, b), blocked)


def test_a_reduction_that_is_not_last_stays_unblocked(blocked):
    def f(m):
        def g(y):
            e = m.exp(y)
            return m.sum(e), m.tanh(e) * 2
        return g
    y = _specials("float64", 3000, np.random.default_rng(8))
    _check(f, (y,), blocked, expect_blocked=False)


def test_exception_in_a_chunk_propagates(blocked, monkeypatch):
    """Anything raised inside the chunks makes the call run unblocked, which raises it as the
    eager ops do."""
    f = nf.function(sigmoid(tnp))
    y = tnp.asarray(np.linspace(-3, 3, 1000))
    f(y)
    calls = []
    real = numpy_tier.blocks.run

    def failing(blk, body, *a):
        def bad(*args):
            calls.append(1)
            raise MemoryError("chunk")
        return real(blk, bad, *a)
    monkeypatch.setattr(blocks, "run", failing)
    g = nf.function(sigmoid(tnp))
    _same(g(y), sigmoid(np)(y.numpy()))         # fell back to the whole-array path
    assert calls


def _tries_of_one(monkeypatch, per_call, slower=2.0, ncalls=300):
    """Calls of a choice where a call on threads takes `per_call` s and one on one thread
    `slower` times that (on `blocks.clock`, standing still where `per_call` is 0): the
    threads of each call, and the calls (1-based) that ran on one thread after the warm-up."""
    blk = blocks.Blocks((1000,), [(1000,)], 10, nthreads=2)
    monkeypatch.setattr(blocks, "ADAPT", True)
    now = [1000.0]
    monkeypatch.setattr(blocks, "clock", lambda: now[0])
    picks = []
    for _ in range(ncalls):
        nt = blk.choose()
        picks.append(nt)
        t = (per_call or 1.0) * (1.0 if nt == 2 else slower)
        now[0] += t if per_call else 0.0
        blk.record(nt, t)
    ones = [i + 1 for i, t in enumerate(picks) if t == 1]
    return blk, picks, ones[blocks.WARM:]


def test_threads_are_chosen_by_timing(monkeypatch):
    """One thread or several: each is timed (after a first call that is not counted, WARM
    calls of each, alternately, before the first choice), the faster runs, the slower is
    retried now and then (so a busy spell does not switch threads off for good): on a clock
    that stands still, after EXPLORE calls, then (losing each time) 2x, 4x ... apart, never
    more than EXPLORE_MAX apart."""
    blk, picks, tries = _tries_of_one(monkeypatch, 0.0)
    w, e = blocks.WARM, blocks.EXPLORE
    assert picks[:1 + 2 * w] == [2] + [2, 1] * w
    gaps = [b - a for a, b in zip([1 + 2 * w + 1] + tries, tries)]
    assert gaps[:3] == [e, 2 * e, 4 * e]
    assert max(gaps) == blocks.EXPLORE_MAX and len(tries) >= 3
    for _ in range(blocks.KEEP):
        blk.record(2, 10.0)                              # threads got slow for KEEP calls
    assert blk.choose() == 1


def test_the_way_not_chosen_is_retried_after_retry_seconds(monkeypatch):
    """Long calls (a 2^24 sigmoid) retry the slower way RETRY_SECONDS after its last try,
    not only every EXPLORE..EXPLORE_MAX calls, but no sooner than TRY_SHARE times its call's
    time after it (so that its tries cost at most ~1/TRY_SHARE of the time)."""
    # (times that binary fractions hold exactly; the gaps are in calls, between the calls
    # that chose one thread: k calls after a try, the clock has moved k - 1 calls' time)
    # RETRY_SECONDS is 96 calls on threads; TRY_SHARE calls on one thread, 64
    monkeypatch.setattr(blocks, "RETRY_SECONDS", 0.75)
    monkeypatch.setattr(blocks, "TRY_SHARE", 32)
    _, _, tries = _tries_of_one(monkeypatch, 1 / 128)
    gaps = [b - a for a, b in zip(tries, tries[1:])]
    e = blocks.EXPLORE
    assert blocks.EXPLORE_MAX == 8 * e == 128
    # by the call count after the first two lost tries (32, 64 calls), then by the clock
    assert gaps[:3] == [2 * e, 4 * e, 96 + 1] and set(gaps[2:]) == {97}, gaps
    # calls of RETRY_SECONDS each, one thread 1.5x slower: TRY_SHARE x 1.5 = 48 calls
    _, _, tries = _tries_of_one(monkeypatch, 0.75, slower=1.5)
    gaps = [b - a for a, b in zip(tries, tries[1:])]
    assert gaps[0] == 2 * e and set(gaps[1:]) == {48 + 1}, gaps


def test_the_first_call_is_not_a_sample(monkeypatch):
    """The first call of a choice pays once for what later calls reuse (a new result buffer,
    the helper threads starting): its time is no sample of the way it ran on, so each way
    has WARM real samples when the first choice is made."""
    blk = blocks.Blocks((1000,), [(1000,)], 10, nthreads=2)
    monkeypatch.setattr(blocks, "ADAPT", True)
    nt = blk.choose()
    blk.record(nt, 50.0)
    assert blk.samples == {}
    # threads 1.0 and 0.8, one thread 0.9 and 1.2 (a noisy spell): had the first call been
    # a sample, threads would have had one real one (1.0) against one thread's best of two
    # (0.9), and lost
    times = {2: [1.0, 0.8], 1: [0.9, 1.2]}
    for _ in range(2 * blocks.WARM):
        nt = blk.choose()
        blk.record(nt, times[nt].pop(0))
    assert blk.estimate(2) == 0.8 and blk.choose() == 2


def test_a_slow_first_call_does_not_decide(monkeypatch):
    """The first call of a way may fault in a new result buffer or start the pool: its time
    alone does not choose one thread for good."""
    blk = blocks.Blocks((1000,), [(1000,)], 10, nthreads=2)
    monkeypatch.setattr(blocks, "ADAPT", True)
    picks = []
    for _ in range(40):
        nt = blk.choose()
        # threads' first call slow (5x one thread's), then twice as fast as one thread
        blk.record(nt, 2.0 if nt == 1 else (5.0 if 2 not in picks else 1.0))
        picks.append(nt)
    assert picks[1 + 2 * blocks.WARM:].count(1) <= 1     # after the first call and the warm-up


def test_a_busy_spell_in_a_try_does_not_lock_threads_out(monkeypatch):
    """A try of the way not chosen that meets a busy moment backs off, but a later try that is
    faster switches back at once, and tries are never further apart than EXPLORE_MAX calls."""
    blk = blocks.Blocks((1000,), [(1000,)], 10, nthreads=2)
    monkeypatch.setattr(blocks, "ADAPT", True)
    busy = True
    picks = []
    for i in range(600):
        nt = blk.choose()
        picks.append(nt)
        if i == 300:
            busy = False
        # busy: two threads are slow; then quiet: twice as fast as one
        blk.record(nt, 2.0 if nt == 1 else (5.0 if busy else 1.0))
    assert picks[300 + blocks.EXPLORE_MAX + 1:].count(1) <= 2
