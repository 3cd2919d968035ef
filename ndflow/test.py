"""`nf.test`: numerical gradient checking, as `tf.test.compute_gradient`."""
import numpy as np
from . import numpy as tnp
from .autodiff.tape import GradientTape


def compute_gradient(f, x, delta=None):
    """(theoretical, numerical) Jacobians of `f` at the list of arrays `x`, each of shape
    (y_size, x_size); numerical ones by central differences in float64."""
    xs = [tnp.asarray(v) for v in x]
    theo, num = [], []
    for i, xi in enumerate(xs):
        dt = xi.dtype
        d = delta if delta is not None else (1e-3 if dt.itemsize <= 4 else 1e-6)
        with GradientTape(persistent=True) as tape:
            tape.watch(xi)
            y = tnp.asarray(f(*xs))
        jac = tape.jacobian(y, xi, unconnected_gradients="zero")
        ysize, xsize = max(y.size, 1), max(xi.size, 1)
        theo.append(np.asarray(jac.numpy(), np.float64).reshape(ysize, xsize))
        base = np.array(xi.numpy(), dtype=np.float64)
        J = np.zeros((ysize, xsize))
        for k in range(xsize):
            xp, xm = base.copy().reshape(-1), base.copy().reshape(-1)
            xp[k] += d
            xm[k] -= d
            args_p = list(xs)
            args_m = list(xs)
            args_p[i] = tnp.asarray(xp.reshape(base.shape).astype(dt))
            args_m[i] = tnp.asarray(xm.reshape(base.shape).astype(dt))
            yp = np.asarray(tnp.asarray(f(*args_p)).numpy(), np.float64).reshape(-1)
            ym = np.asarray(tnp.asarray(f(*args_m)).numpy(), np.float64).reshape(-1)
            J[:, k] = (yp - ym) / (2 * d)
        num.append(J)
    return theo, num


def compute_gradient_error(theoretical, numerical=None):
    """Max absolute difference between theoretical and numerical Jacobians (accepts the pair
    returned by `compute_gradient`, or the function and its inputs)."""
    if callable(theoretical):
        theoretical, numerical = compute_gradient(theoretical, numerical)
    err = 0.0
    for t, n in zip(theoretical, numerical):
        if t.size:
            err = max(err, float(np.max(np.abs(t - n))))
    return err
