"""Regularized incomplete gamma and beta primitives (gammainc, gammaincc, betainc), each
with its kernel, shape rule, VJP and batching rule; split from special.py, whose helpers
(log-gamma, erfc, Hurwitz zeta) they use.

Kernels: the power series of P below x = a + 1 and the continued fraction of Q above
(modified Lentz), Temme's uniform asymptotic expansion for large a near x = a, the small-a
form of Q; the continued fraction of I_x(a, b) on its fast side, with Stirling-combined
prefactors for large parameters and the gamma and normal limits where the parameters are
extreme. Differentiable in x only (a parameter's gradient raises NotImplementedError).
"""
import math

import numpy as np

from ..core.primitive import Primitive, Aval, bind
from ._util import broadcast_shapes, elementwise
from .sums import unbroadcast
from .elementwise import exp_p, log_p, select_p, ne_p, zeros_like_p, log1p_p
from .special import (_pointwise, _lgamma, _lgamma_true_vec, _erfc_vec, _hurwitz,
                      _binary_batch, gammaln_p)

__all__ = ["gammainc_p", "gammaincc_p", "betainc_p"]


# ------------------------------------------------------------------ incomplete gamma and beta
# Regularized: P(a, x) = gammainc, Q = 1 - P = gammaincc, I_x(a, b) = betainc. Kernels: the
# power series of P below x = a + 1 and the continued fraction of Q above (modified Lentz); the
# continued fraction of I_x(a, b) on the side of (a + 1)/(a + b + 2) where it converges fast.
# The prefactor exp(a log x - x - lgamma(a)) carries a relative error of about a * eps, so
# accuracy is ~1e-14 for a up to ~100 and degrades slowly beyond.
_TINY = 1e-300
_lgamma_vec = _pointwise(_lgamma)

_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
             -3617 / 122400)


def _log1pmx(num, den):
    """log(r) - (r - 1) for r = num/den, without cancellation near r = 1 (the series in
    mu = r - 1 below |mu| = 0.1), and with log(num) - log(den) elsewhere (r may underflow)."""
    mu = num / den - 1
    small = np.abs(mu) < 0.1
    m = np.where(small, mu, 0.0)
    term, s = -m * m, np.zeros_like(m)
    for k in range(2, 20):
        s = s + term / k
        term = -term * m
    return np.where(small, s, np.log(num) - np.log(den) - mu)


def _log_prefactor(a, x):
    """log(x^a e^-x / Gamma(a)). For a >= 10 from Stirling's series with the large parts
    combined analytically, a log1p(mu) - a mu (mu = x/a - 1): the direct difference of
    numbers near a log a would lose a * eps of it."""
    big = a >= 10
    ab = np.where(big, a, 10.0)
    asym = ab * _log1pmx(x, ab) + 0.5 * np.log(ab / (2 * np.pi)) - \
        _stirling_corr_np(ab)
    direct = a * np.log(x) - x - _lgamma_true_vec(np.where(big, 1.0, a))
    return np.where(big, asym, direct)


# Temme's uniform asymptotic expansion (DLMF 8.12): with mu = x/a - 1 and
# eta = sign(mu) sqrt(2 (mu - log1p(mu))),
#   Q(a, x) = erfc(eta sqrt(a/2)) / 2 + exp(-a eta^2/2) / sqrt(2 pi a) sum_k c_k(eta) a^-k,
# c_0 = 1/mu - 1/eta, c_k = (1/eta) c_(k-1)' + (-1)^k gamma_k / mu (gamma_k: Stirling's
# coefficients of Gamma*(a)). Row k holds c_k's Taylor coefficients in eta, derived with exact
# rational arithmetic (tests/test_scipy.py derives them again and compares). Used where the
# series and the continued fraction need O(sqrt(a)) terms: a > 1000 and |mu| < 0.3.
_TEMME = (
    (-0.3333333333333333, 0.08333333333333333, -0.014814814814814815, 0.0011574074074074073,
     0.0003527336860670194, -0.0001787551440329218, 3.919263178522438e-05,
     -2.185448510679992e-06, -1.85406221071516e-06, 8.296711340953087e-07,
     -1.7665952736826078e-07, 6.707853543401498e-09, 1.0261809784240309e-08,
     -4.382036018453353e-09, 9.14769958223679e-10, -2.5514193994946248e-11,
     -5.830772132550426e-11, 2.4361948020667415e-11, -5.0276692801141755e-12,
     1.1004392031956135e-13, 3.371763262400985e-13, -1.392388722418162e-13,
     2.8534893807047445e-14, -5.139111834242572e-16, -1.9752288294349442e-15),
    (-0.001851851851851852, -0.003472222222222222, 0.0026455026455026454,
     -0.0009902263374485596, 0.00020576131687242798, -4.018775720164609e-07,
     -1.8098550334489977e-05, 7.64916091608111e-06, -1.6120900894563446e-06,
     4.647127802807434e-09, 1.378633446915721e-07, -5.752545603517705e-08,
     1.1951628599778148e-08, -1.7543241719747647e-11, -1.0091543710600413e-09,
     4.162792991842583e-10, -8.56390702649298e-11, 6.067215101604758e-14,
     7.1624989648114856e-12, -2.933186643771437e-12, 5.996696365683689e-13,
     -2.1671786527323313e-16, -4.978339972369262e-14),
    (0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049,
     2.0093878600823047e-06, -0.0001073665322636516, 5.2923448829120125e-05,
     -1.2760635188618728e-05, 3.423578734096138e-08, 1.3721957309062934e-06,
     -6.298992138380055e-07, 1.4280614206064242e-07, -2.0477098421990866e-10,
     -1.409252991086752e-08, 6.228974084922022e-09, -1.3670488396617114e-09,
     9.428356159014678e-13, 1.2872252400089318e-10, -5.5645956134363323e-11,
     1.197593554636698e-11, -4.1689782251838634e-15, -1.0940640427884595e-12),
    (0.0006494341563786008, 0.00022947209362139917, -0.0004691894943952557,
     0.00026772063206283885, -7.561801671883977e-05, -2.396505113867297e-07,
     1.1082654115347302e-05, -5.6749528269915965e-06, 1.4230900732435883e-06,
     -2.7861080291528143e-11, -1.6958404091930278e-07, 8.099464905388083e-08,
     -1.9111168485973655e-08, 2.3928620439808118e-12, 2.0620131815488797e-09,
     -9.460496661855133e-10, 2.1541049775774907e-10, -1.388823336813903e-14,
     -2.1894761681963938e-11),
    (-0.0008618882909167117, 0.0007840392217200666, -0.0002990724803031902,
     -1.4638452578843418e-06, 6.641498215465122e-05, -3.968365047179435e-05,
     1.1375726970678419e-05, 2.507497226237533e-10, -1.6954149536558305e-06,
     8.907507532205309e-07, -2.292934834000805e-07, 2.956794137544049e-11,
     2.8865829742708783e-08, -1.4189739437803219e-08, 3.4463580499464896e-09,
     -2.3024517174528067e-13, -3.9409233028046403e-10),
    (-0.00033679855336635813, -6.972813758365857e-05, 0.0002772753244959392,
     -0.00019932570516188847, 6.797780477937208e-05, 1.419062920643967e-07,
     -1.3594048189768693e-05, 8.018470256334202e-06, -2.291481176508095e-06,
     -3.252473551298454e-10, 3.4652846491085265e-07, -1.8447187191171344e-07,
     4.8240967037894184e-08, -1.7989466721743514e-14, -6.306194500013523e-09),
    (0.0005313079364639922, -0.0005921664373536939, 0.0002708782096718045,
     7.902353232660328e-07, -8.153969367561969e-05, 5.61168275310625e-05,
     -1.8329116582843375e-05, -3.0796134506033047e-09, 3.465155368803609e-06,
     -2.0291327396058603e-06, 5.788792863149004e-07, 2.338630673826657e-13,
     -8.828600746330484e-08),
    (0.00034436760689237765, 5.171790908260592e-05, -0.00033493161081142234,
     0.0002812695154763237, -0.00010976582244684731, -1.2741009095484485e-07,
     2.7744451511563645e-05, -1.8263488805711332e-05, 5.7876949497350525e-06,
     4.93875893393627e-10, -1.0595367014026043e-06),
    (-0.0006526239185953094, 0.0008394987206720873, -0.000438297098541721,
     -6.969091458420552e-07, 0.00016644846642067547, -0.00012783517679769218,
     4.629953263691304e-05, 4.557909867922708e-09, -1.0595271125805195e-05),
    (-0.0005967612901927463, -7.204895416020011e-05, 0.0006782308837667328,
     -0.0006401475260262758, 0.00027750107634328704, 1.819700838046515e-07,
     -8.479507117068503e-05),
)

_TEMME_A = 1000.0


def _temme_pq(a, x):
    mu = (x - a) / a
    lm = _log1pmx(x, a)                       # = -eta^2 / 2
    eta = np.sign(mu) * np.sqrt(-2 * lm)
    total, ia = np.zeros_like(a), 1 / a
    for row in _TEMME[::-1]:
        ck = np.zeros_like(a)
        for c in row[::-1]:
            ck = ck * eta + c
        total = total * ia + ck
    r = np.exp(a * lm) / np.sqrt(2 * np.pi * a) * total
    z = eta * np.sqrt(a / 2)
    return 0.5 * _erfc_vec(-z) - r, 0.5 * _erfc_vec(z) + r


def _gamma_series(a, x):
    """sum_n x^n / ((a+1) ... (a+n)) (P = x^a e^-x / Gamma(a+1) times this)."""
    term = np.ones_like(a)
    total = term.copy()
    done = np.zeros(a.shape, bool)
    for n in range(1, 5000):
        # a converged lane stops changing, so an element's value does not depend on which
        # other elements share the call (vectorized_map against a loop)
        term = np.where(done, 0.0, term * x / (a + n))
        total = total + term
        # a NaN or inf lane never converges: it must not keep the others iterating
        done |= (np.abs(term) <= np.abs(total) * 1e-17) | ~np.isfinite(total)
        if done.all():
            break
    return total


def _lentz(an, bn, c, d):
    """One step of the modified Lentz method for a continued fraction with partial numerator
    an and denominator bn: (c, d, the factor the value is multiplied by)."""
    d = bn + an * d
    d = 1 / np.where(np.abs(d) < _TINY, _TINY, d)
    c = bn + an / c
    c = np.where(np.abs(c) < _TINY, _TINY, c)
    return c, d, c * d


def _gamma_cf(a, x):
    """The continued fraction of Q (Q = x^a e^-x / Gamma(a) times this; modified Lentz)."""
    b = x + 1 - a
    c = np.full_like(b, 1 / _TINY)
    d = 1 / b
    h = d.copy()
    done = np.zeros(h.shape, bool)
    for i in range(1, 5000):
        b = b + 2
        c, d, delta = _lentz(-i * (i - a), b, c, d)
        h = np.where(done, h, h * delta)      # (converged lanes stay: see _gamma_series)
        done |= (np.abs(delta - 1) <= 1e-16) | ~np.isfinite(h)
        if done.all():
            break
    return h


_ZETA_INT = []       # zeta(2), zeta(3), ... for lgamma(1 + a) near 0 (filled on first use)


def _lgamma1p(a):
    """lgamma(1 + a) with a's digits kept for small a: -euler a + sum_k (-1)^k zeta(k) a^k / k
    below |a| = 0.2 (1 + a would round a away)."""
    if not _ZETA_INT:
        _ZETA_INT.extend(float(v) for v in _hurwitz(np.arange(2.0, 27.0), 1.0))
    small = np.abs(a) < 0.2
    m = np.where(small, a, 0.0)
    acc, pw = -0.5772156649015329 * m, m
    for k, z in enumerate(_ZETA_INT, 2):
        pw = pw * m
        acc = acc + (-1) ** k * z / k * pw
    return np.where(small, acc, _lgamma_true_vec(1 + np.where(small, 0.0, a)))


def _gamma_q_small(a, x):
    """Q(a, x) for a < 1, x < 3/2, where 1 - P would cancel (Q ~ a E1(x) for tiny a):
    Q = -expm1(a log x - lgamma(1 + a)) - a x^a / Gamma(1 + a) sum_n>=1 (-x)^n/(n! (a + n))."""
    lx = np.log(x)
    lg = _lgamma1p(a)
    s, term = np.zeros_like(x), np.ones_like(x)
    for n in range(1, 40):
        term = term * (-x) / n
        s = s + term / (a + n)
    return -np.expm1(a * lx - lg) - a * np.exp(a * lx - lg) * s


def _gamma_pq(a, x):
    """(P, Q) with SciPy's values at the edges: P(0, x > 0) = 1, P(a, 0) = 0, P(inf, x) = 0
    for finite x, P(a, inf) = 1 for finite a; NaN for a < 0, x < 0, NaN, P(inf, inf)."""
    with np.errstate(all="ignore"):
        a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
        fin = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
        temme = fin & (a > _TEMME_A) & (np.abs(x - a) < 0.3 * a)
        work = fin & ~temme
        use_series = x < a + 1
        aw, xw = np.where(work, a, 1.0), np.where(work, x, 1.0)
        logpre = _log_prefactor(aw, xw)
        ser = work & use_series
        p_series = np.exp(logpre - np.log(aw)) * _gamma_series(np.where(ser, a, 1.0),
                                                               np.where(ser, x, 0.0))
        cf = work & ~use_series
        q_cf = np.exp(logpre) * _gamma_cf(np.where(cf, a, 1.0), np.where(cf, x, 2.0))
        P = np.where(use_series, p_series, 1 - q_cf)
        small = ser & (a < 1) & (x < 1.5)
        q_small = _gamma_q_small(np.where(small, a, 0.5), np.where(small, x, 1.0))
        Q = np.where(use_series, np.where(small, q_small, 1 - p_series), q_cf)
        tp, tq = _temme_pq(np.where(temme, a, 2e3), np.where(temme, x, 2e3))
        P, Q = np.where(temme, tp, P), np.where(temme, tq, Q)
        zero_p = (x == 0) & (a > 0) | (a == np.inf) & (x >= 0) & (x < np.inf)
        one_p = (x == np.inf) & (a >= 0) & (a < np.inf) | (a == 0) & (x > 0)
        P = np.where(zero_p, 0.0, np.where(one_p, 1.0, np.where(fin, P, np.nan)))
        Q = np.where(zero_p, 1.0, np.where(one_p, 0.0, np.where(fin, Q, np.nan)))
        return np.clip(P, 0.0, 1.0), np.clip(Q, 0.0, 1.0)


def _param_grad_error(name, arg):
    return NotImplementedError(
        f"ndflow.scipy.special.{name}: the gradient with respect to {arg} is not implemented "
        f"(only the last argument, x, is differentiable); wrap {arg} in nf.stop_gradient if "
        f"it only needs to be a constant")


def _no_param_grad(name, arg, v):
    if getattr(v, "_tid", 0):       # connected to a tape: its gradient would be dropped
        raise _param_grad_error(name, arg)
    return None


def _inc_abstract(a, x):
    return Aval(broadcast_shapes(a.shape, x.shape), x.dtype)


def _finite_exp(t):
    """exp(t), 0 where t is NaN: a density whose logarithm is inf - inf (a parameter so large
    that (a - 1) log x and gammaln(a) overflow) has underflowed to 0 long before."""
    return bind(select_p, bind(ne_p, t, t), bind(zeros_like_p, t), bind(exp_p, t))


def _dgamma_dx(a, x):
    """x^(a-1) exp(-x) / Gamma(a), the derivative of P(a, x) in x."""
    return _finite_exp((a - 1) * bind(log_p, x) - x - bind(gammaln_p, a))


def _gammainc_vjp(ct, a, x):
    return (_no_param_grad("gammainc", "a", a), unbroadcast(ct * _dgamma_dx(a, x), x))


def _gammaincc_vjp(ct, a, x):
    return (_no_param_grad("gammaincc", "a", a), unbroadcast(-ct * _dgamma_dx(a, x), x))


def _inc_kernel(f):
    def k(*args):
        dt = np.asarray(args[-1]).dtype
        return np.asarray(f(*args), dtype=np.float64).astype(dt, copy=False)
    return k


gammainc_p = Primitive("gammainc", _inc_kernel(lambda a, x: _gamma_pq(a, x)[0]), _inc_abstract)
gammainc_p.def_vjp(_gammainc_vjp)
gammainc_p.batch = _binary_batch(gammainc_p)
elementwise(gammainc_p)
gammaincc_p = Primitive("gammaincc", _inc_kernel(lambda a, x: _gamma_pq(a, x)[1]),
                        _inc_abstract)
gammaincc_p.def_vjp(_gammaincc_vjp)
gammaincc_p.batch = _binary_batch(gammaincc_p)
elementwise(gammaincc_p)


def _betacf(a, b, x):
    """The continued fraction of I_x(a, b) (converges fast for x < (a + 1)/(a + b + 2))."""
    qab, qap, qam = a + b, a + 1, a - 1
    c = np.ones_like(x)
    d = 1 - qab * x / qap
    d = np.where(np.abs(d) < _TINY, _TINY, d)
    d = 1 / d
    h = d.copy()
    done = np.zeros(h.shape, bool)
    for m in range(1, 5000):
        m2 = 2 * m
        # (ratios first: products of two huge parameters would overflow)
        c, d, step = _lentz(m / (qam + m2) * ((b - m) / (a + m2)) * x, 1.0, c, d)
        c, d, delta = _lentz(-((a + m) / (a + m2)) * ((qab + m) / (qap + m2)) * x, 1.0, c, d)
        h = np.where(done, h, h * step * delta)   # (converged lanes stay: see _gamma_series)
        done |= (np.abs(delta - 1) <= 1e-16) | ~np.isfinite(h)
        if done.all():
            break
    return h


def _stirling_corr_np(z):
    """lgamma(z) - ((z - 1/2) log z - z + log(2 pi)/2) for z >= 8."""
    iz2, corr = 1 / (z * z), np.zeros_like(z)
    for c in _STIRLING[::-1]:
        corr = corr * iz2 + c
    return corr / z


def _lbeta_np(a, b):
    """log B(a, b) for a, b > 0 without the cancellation of lgamma(b) - lgamma(a + b) when
    one is large (the same Stirling combination as ndflow.scipy.special.betaln's, which must
    be differentiable and so is written with ndflow operations)."""
    hi, lo = np.maximum(a, b), np.minimum(a, b)
    big = hi >= 8
    h = np.where(big, hi, 8.0)
    s = h + lo
    large = (-(h - 0.5) * np.log1p(lo / h) - lo * np.log(s) + lo
             + _stirling_corr_np(h) - _stirling_corr_np(s))
    direct = _lgamma_true_vec(a) + _lgamma_true_vec(b) - _lgamma_true_vec(a + b)
    return np.where(big, _lgamma_true_vec(lo) + large, direct)


def _betainc(a, b, x):
    """I_x(a, b) with SciPy's limits: a parameter 0 or inf puts all the mass at one end
    (a = 0 or b = inf: 1 for x > 0; b = 0 or a = inf: 0 for x < 1); NaN for a = b = 0,
    a = b = inf, a negative parameter, x outside [0, 1], NaN."""
    with np.errstate(all="ignore"):
        a, b, x = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, x)))
        inner = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b) & (x > 0) & (x < 1)
        xs = np.where(inner, x, 0.5)
        aa, bb = np.where(inner, a, 1.0), np.where(inner, b, 1.0)
        front = np.exp(aa * np.log(xs) + bb * np.log1p(-xs) - _lbeta_np(aa, bb))
        # both parameters 8 or more: x^a (1-x)^b / B(a, b) from Stirling's series, as
        # sqrt(a b / (2 pi (a+b))) exp(a log1pmx(x/m) + b log1pmx((1-x)/(1-m))) with
        # m = a/(a+b) (the linear terms cancel exactly): the direct exponent loses (a+b) eps
        big = (aa >= 8) & (bb >= 8)
        a8, b8 = np.where(big, aa, 8.0), np.where(big, bb, 8.0)
        m = 1 / (1 + b8 / a8)
        expo = (a8 * _log1pmx(xs, m) + b8 * _log1pmx(1 - xs, 1 - m)
                + _stirling_corr_np(a8 + b8) - _stirling_corr_np(a8) - _stirling_corr_np(b8))
        front = np.where(big, np.sqrt(a8 / (2 * np.pi)) * np.sqrt(b8 / (a8 + b8)) *
                         np.exp(expo), front)
        flip = xs > (aa + 1) / (aa + bb + 2)
        xa = np.where(flip, 1 - xs, xs)
        pa, pb = np.where(flip, bb, aa), np.where(flip, aa, bb)
        v = front * _betacf(pa, pb, xa) / pa
        r = np.clip(np.where(flip, 1 - v, v), 0.0, 1.0)
        # both parameters beyond 1e14: the exponent a log x + b log1p(-x) - log B(a, b)
        # cancels to nothing; the normal limit (error ~ 1/sqrt(min(a, b)) < 1e-7)
        mean = 1 / (1 + bb / aa)
        sd = np.sqrt(mean * (1 - mean) / (aa + bb + 1))
        z = (xs - mean) / np.where(sd > 0, sd, 1.0)
        normal = np.where(sd > 0, 0.5 * _erfc_vec(-z / math.sqrt(2)), np.where(
            xs < mean, 0.0, np.where(xs > mean, 1.0, 0.5)))
        r = np.where(np.minimum(aa, bb) > 1e14, normal, r)
        # one parameter beyond 1e5 times the other's square: the gamma limit (Temme),
        # I_x(a, b) = P(a, -(b + (a - 1)/2) log1p(-x)) + O(b^-2), where the flip to
        # 1 - I_(1-x)(b, a) would lose x to the rounding of 1 - x (and b x = O(1) matters)
        ga = bb > 1e5 * np.maximum(aa, 1.0) ** 2
        gb = aa > 1e5 * np.maximum(bb, 1.0) ** 2
        ya = -(bb + (aa - 1) / 2) * np.log1p(-xs)
        yb = -(aa + (bb - 1) / 2) * np.log(xs)
        p_lim = _gamma_pq(np.where(ga, aa, 1.0), np.where(ga, ya, 1.0))[0]
        q_lim = _gamma_pq(np.where(gb, bb, 1.0), np.where(gb, yb, 1.0))[1]
        r = np.where(ga, p_lim, np.where(gb, q_lim, r))
        inrange = (x >= 0) & (x <= 1)
        ok = (a >= 0) & (b >= 0) & inrange & ~((a == 0) & (b == 0)) & \
            ~((a == np.inf) & (b == np.inf))
        low = (a == 0) | (b == np.inf)          # all the mass at 0
        high = (b == 0) | (a == np.inf)         # all the mass at 1
        r = np.where(low, np.where(x > 0, 1.0, 0.0), r)
        r = np.where(high, np.where(x < 1, 0.0, 1.0), r)
        r = np.where(~(low | high) & (x == 0), 0.0, np.where(~(low | high) & (x == 1), 1.0, r))
        return np.where(ok, r, np.nan)


def _betainc_vjp(ct, a, b, x):
    """d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b)."""
    lb = bind(gammaln_p, a) + bind(gammaln_p, b) - bind(gammaln_p, a + b)
    d = _finite_exp((a - 1) * bind(log_p, x) + (b - 1) * bind(log1p_p, -x) - lb)
    return (_no_param_grad("betainc", "a", a), _no_param_grad("betainc", "b", b),
            unbroadcast(ct * d, x))


def _ternary_abstract(a, b, x):
    return Aval(broadcast_shapes(a.shape, b.shape, x.shape), x.dtype)


betainc_p = Primitive("betainc", _inc_kernel(_betainc), _ternary_abstract)
betainc_p.def_vjp(_betainc_vjp)
betainc_p.batch = _binary_batch(betainc_p)
elementwise(betainc_p)
