"""Optimizers with `apply_gradients(zip(grads, vars))`, eager or inside `nf.function`, with
Keras 3 semantics: SGD (momentum, Nesterov), Adam (AMSGrad), AdamW, RMSprop, Adagrad; decoupled
weight decay, gradient clipping and learning-rate schedules for all of them.

Slots (momentum, moments, accumulators), the step counter `iterations` and a float learning
rate are Variables, so a compiled training step reads and updates them by reference like the
weights (changing `opt.learning_rate` after tracing takes effect without retracing)."""
import inspect
import re

from .variable import Variable
from . import schedules  # noqa: F401  (nf.optimizers.schedules)
from .schedules import LearningRateSchedule
from .. import numpy as tnp
from ..autodiff.tape import GradientTape

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "schedules"]


def _takes_step(fn):
    """Whether a learning-rate callable takes the step (Keras callables take no argument; a
    callable with one required positional parameter gets `iterations`, as schedules do)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               for p in params)


def _aggregate_gradients(grads):
    """The gradients every replica applies. Outside a distribution strategy, `grads` itself;
    `ndflow.distribute` replaces this function with one that all-reduces (sums) them across
    the replicas when called inside `strategy.run` (as TensorFlow's optimizers do)."""
    return grads


class Optimizer:
    """Base class. Subclasses define `_update(grad, var, lr)` for one variable; `lr` is the
    current learning rate in the variable's dtype.

    Each `apply_gradients` step: gradients are clipped (`clipnorm` per gradient,
    `global_clipnorm` over all, or `clipvalue` elementwise), weight decay is applied
    (`var -= var * weight_decay * lr`, decoupled from the gradient, as Keras), the update rule
    runs, and `iterations` is incremented. A schedule sees `iterations` before the increment."""

    def __init__(self, learning_rate=0.01, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{sorted(kwargs)}")
        if sum(c is not None for c in (clipnorm, clipvalue, global_clipnorm)) > 1:
            raise ValueError(f"Only one of clipnorm, clipvalue and global_clipnorm can be set; "
                             f"got clipnorm={clipnorm}, clipvalue={clipvalue}, "
                             f"global_clipnorm={global_clipnorm}")
        self.name = name or type(self).__name__.lower()
        self.iterations = Variable(0, trainable=False, name="iteration", dtype="int64")
        self._learning_rate = None
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        self._slots = {}
        self._deferred_slots = {}     # (id(var), name) -> checkpoint value (_restore.PendingSlot)
        self._exclude_ids = set()
        self._exclude_pattern = None

    # ------------------------------------------------------------------ learning rate
    @property
    def learning_rate(self):
        """The current learning rate (a schedule evaluated at `iterations`)."""
        lr = self._learning_rate
        if isinstance(lr, LearningRateSchedule):
            return lr(self.iterations.value())
        if isinstance(lr, Variable):
            return lr.value()
        if callable(lr):
            return lr(self.iterations.value()) if self._lr_takes_step else lr()
        return lr

    @learning_rate.setter
    def learning_rate(self, value):
        old = self._learning_rate
        if isinstance(value, LearningRateSchedule) or callable(value):
            self._learning_rate = value
            self._lr_takes_step = not isinstance(value, LearningRateSchedule) and \
                _takes_step(value)
            return
        if isinstance(old, LearningRateSchedule):
            raise TypeError("This optimizer was created with a LearningRateSchedule as its "
                            "learning_rate, so its learning rate cannot be set to a number")
        if isinstance(old, Variable):
            old.assign(float(value))
        else:
            self._learning_rate = Variable(float(value), trainable=False, name="learning_rate",
                                           dtype="float64")

    # ------------------------------------------------------------------ weight decay
    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Exclude these Variables, or those whose name contains one of `var_names`, from
        weight decay."""
        self._exclude_ids = {id(v) for v in (var_list or ())}
        self._exclude_pattern = re.compile("|".join(map(re.escape, var_names))) \
            if var_names else None

    def _use_weight_decay(self, var):
        if id(var) in self._exclude_ids:
            return False
        return self._exclude_pattern is None or self._exclude_pattern.search(var.name) is None

    # ------------------------------------------------------------------ slots
    def _slot_specs(self):
        """[(slot name, initial value)] that `_update` creates for every variable."""
        return []

    def _slot(self, var, name, initial=0.0):
        key = (id(var), name)
        s = self._slots.get(key)
        if s is None:
            pending = self._deferred_slots.pop(key, None)
            # a checkpoint restored before this slot existed gave its value (deferred
            # restoration, as TensorFlow): start from it instead of `initial`
            s = Variable(tnp.full(var.shape, initial, dtype=var.dtype) if pending is None
                         else tnp.asarray(pending.taken(), dtype=var.dtype), trainable=False,
                         name=name)
            self._slots[key] = (s, var)
            return s
        return s[0]

    def build(self, var_list):
        """Create the slots of every Variable in `var_list` now, as Keras 3's
        `optimizer.build(variables)`, instead of at the first `apply_gradients`. A checkpoint
        restored before starts them from its values (deferred restoration); one restored
        after restores them at once, so `restore(...).assert_consumed()` can pass before
        training resumes.

        >>> import ndflow as nf
        >>> w = nf.Variable([1.0, 2.0])
        >>> opt = nf.optimizers.Adam()
        >>> opt.build([w])
        >>> len(opt.variables())      # iterations, learning_rate, and Adam's m and v for w
        4
        """
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"build takes Variables, got {type(v).__name__}")
            for name, initial in self._slot_specs():
                self._slot(v, name, initial)

    # ------------------------------------------------------------------ applying
    def _clip(self, grads):
        if self.clipnorm is not None and self.clipnorm > 0:
            return [_clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm is not None and self.global_clipnorm > 0:
            norm = tnp.sqrt(sum(tnp.sum(tnp.square(g)) for g in grads))
            scale = self.global_clipnorm / tnp.maximum(norm, self.global_clipnorm)
            return [g * scale.astype(g.dtype) for g in grads]
        if self.clipvalue is not None and self.clipvalue > 0:
            return [tnp.clip(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def apply_gradients(self, grads_and_vars, name=None):
        """Update each Variable with its gradient; pairs with a None gradient are skipped."""
        pairs = list(grads_and_vars)
        for _, v in pairs:
            if not isinstance(v, Variable):
                raise TypeError(f"apply_gradients updates Variables, got {type(v).__name__}")
        if pairs and all(g is None for g, _ in pairs):
            raise ValueError("No gradients provided for any variable: "
                             + ", ".join(v.name for _, v in pairs))
        pairs = [(g, v) for g, v in pairs if g is not None]
        grads = [tnp.asarray(g, dtype=v.dtype) for g, v in pairs]
        variables = [v for _, v in pairs]
        # inside a distribution strategy's replica the gradients are summed over all replicas
        # first (one bucketed all-reduce), so every replica applies the same update
        grads = _aggregate_gradients(grads)
        grads = self._clip(grads)
        lr = self.learning_rate
        lrs = [tnp.asarray(lr, dtype=v.dtype) for v in variables]
        if self.weight_decay is not None:
            for v, lr_v in zip(variables, lrs):
                if self._use_weight_decay(v):
                    v.assign_sub(v.value() * (lr_v * self.weight_decay))
        for g, v, lr_v in zip(grads, variables, lrs):
            self._update(g, v, lr_v)
        self.iterations.assign_add(1)
        return self.iterations

    def minimize(self, loss, var_list, tape=None):
        """Compute the gradients of `loss` (a callable) and apply them."""
        var_list = list(var_list() if callable(var_list) else var_list)
        with GradientTape() as t:
            value = loss() if callable(loss) else loss
        grads = t.gradient(value, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def variables(self):
        out = [self.iterations]
        if isinstance(self._learning_rate, Variable):
            out.append(self._learning_rate)
        return out + [s for s, _ in self._slots.values()]

    def get_config(self):
        lr = self._learning_rate
        return {"name": self.name,
                "learning_rate": float(lr.numpy()) if isinstance(lr, Variable) else lr,
                "weight_decay": self.weight_decay, "clipnorm": self.clipnorm,
                "clipvalue": self.clipvalue, "global_clipnorm": self.global_clipnorm}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _clip_by_norm(g, clip):
    """g * clip / max(||g||, clip); a zero gradient stays zero (no 0/0)."""
    norm = tnp.sqrt(tnp.sum(tnp.square(g)))
    return g * (clip / tnp.maximum(norm, clip))


class SGD(Optimizer):
    """Gradient descent with optional (Nesterov) momentum, as `keras.optimizers.SGD`:
    `m = momentum * m - lr * g; var += m` (Nesterov: `var += momentum * m - lr * g`).

    Examples
    --------
    >>> import ndflow as nf
    >>> w = nf.Variable([1., 2.])
    >>> opt = nf.optimizers.SGD(learning_rate=0.1)
    >>> with nf.GradientTape() as tape:
    ...     loss = nf.reduce_sum(w * w)
    >>> _ = opt.apply_gradients([(tape.gradient(loss, w), w)])
    >>> w.numpy()
    array([0.8, 1.6], dtype=float32)
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, weight_decay=None,
                 clipnorm=None, clipvalue=None, global_clipnorm=None, name="SGD", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, name,
                         **kwargs)
        if not 0 <= momentum <= 1:
            raise ValueError(f"`momentum` must be a float between [0, 1], got {momentum}")
        self.momentum = momentum
        self.nesterov = nesterov

    def _slot_specs(self):
        return [("momentum", 0.0)] if self.momentum else []

    def _update(self, g, v, lr):
        if not self.momentum:
            v.assign_sub(g * lr)
            return
        m = self._slot(v, "momentum")
        m_new = m.value() * self.momentum - g * lr
        m.assign(m_new)
        if self.nesterov:
            v.assign_add(m_new * self.momentum - g * lr)
        else:
            v.assign_add(m_new)

    def get_config(self):
        return dict(super().get_config(), momentum=self.momentum, nesterov=self.nesterov)


class Adam(Optimizer):
    """Adam (Kingma & Ba), as `keras.optimizers.Adam`: epsilon is added to sqrt(v) and the bias
    corrections go into the step size, `lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)`. With
    `amsgrad`, the running maximum of v is used.

    Examples
    --------
    >>> import ndflow as nf
    >>> w = nf.Variable([1., -1.])
    >>> opt = nf.optimizers.Adam(learning_rate=0.1)
    >>> for _ in range(3):
    ...     with nf.GradientTape() as tape:
    ...         loss = nf.reduce_sum(w * w)
    ...     _ = opt.apply_gradients([(tape.gradient(loss, w), w)])
    >>> w.numpy()                  # each step moves about learning_rate towards 0
    array([ 0.70158863, -0.70158863], dtype=float32)
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="Adam", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, name,
                         **kwargs)
        self.beta_1, self.beta_2, self.epsilon, self.amsgrad = beta_1, beta_2, epsilon, amsgrad

    def _slot_specs(self):
        return [("m", 0.0), ("v", 0.0)] + ([("v_hat", 0.0)] if self.amsgrad else [])

    def _update(self, g, v, lr):
        m = self._slot(v, "m")
        s = self._slot(v, "v")
        t = (self.iterations.value() + 1).astype(v.dtype)
        b1, b2 = self.beta_1, self.beta_2
        # every read first and every write last: in a compiled step no effect then stands
        # between the updates of m, v and the variable, and they fuse into one region
        m_old, s_old = m.value(), s.value()
        s_hat = self._slot(v, "v_hat") if self.amsgrad else None
        s_hat_old = s_hat.value() if s_hat is not None else None
        v_old = v.value()
        m_new = m_old * b1 + g * (1 - b1)
        s_new = s_old * b2 + tnp.square(g) * (1 - b2)
        s_used = tnp.maximum(s_hat_old, s_new) if s_hat is not None else s_new
        alpha = lr * tnp.sqrt(1 - tnp.power(tnp.asarray(b2, v.dtype), t)) / (
            1 - tnp.power(tnp.asarray(b1, v.dtype), t))
        v_new = v_old - m_new * alpha / (tnp.sqrt(s_used) + self.epsilon)
        m.assign(m_new)
        s.assign(s_new)
        if s_hat is not None:
            s_hat.assign(s_used)
        v.assign(v_new)

    def get_config(self):
        return dict(super().get_config(), beta_1=self.beta_1, beta_2=self.beta_2,
                    epsilon=self.epsilon, amsgrad=self.amsgrad)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as `keras.optimizers.AdamW`:
    before each Adam step, `var -= var * weight_decay * lr`."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="AdamW", **kwargs):
        if weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float, got weight_decay=None")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, weight_decay, clipnorm,
                         clipvalue, global_clipnorm, name, **kwargs)


class RMSprop(Optimizer):
    """RMSprop, as `keras.optimizers.RMSprop`: `ms = rho ms + (1 - rho) g^2`; the step is
    `lr g / sqrt(ms + epsilon)` (centered: `ms - mg^2 + epsilon`, mg the running mean of g),
    applied directly or through plain momentum `m = momentum m + step; var -= m`."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="RMSprop", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, name,
                         **kwargs)
        self.rho, self.momentum, self.epsilon, self.centered = rho, momentum, epsilon, centered

    def _slot_specs(self):
        return [("velocity", 0.0)] + ([("average_gradient", 0.0)] if self.centered else []) \
            + ([("momentum", 0.0)] if self.momentum > 0 else [])

    def _update(self, g, v, lr):
        rho = self.rho
        ms = self._slot(v, "velocity")
        ms_new = ms.value() * rho + tnp.square(g) * (1 - rho)
        ms.assign(ms_new)
        if self.centered:
            mg = self._slot(v, "average_gradient")
            mg_new = mg.value() * rho + g * (1 - rho)
            mg.assign(mg_new)
            denom = ms_new - tnp.square(mg_new) + self.epsilon
        else:
            denom = ms_new + self.epsilon
        step = g * lr / tnp.sqrt(denom)
        if self.momentum > 0:
            m = self._slot(v, "momentum")
            m_new = m.value() * self.momentum + step
            m.assign(m_new)
            v.assign_sub(m_new)
        else:
            v.assign_sub(step)

    def get_config(self):
        return dict(super().get_config(), rho=self.rho, momentum=self.momentum,
                    epsilon=self.epsilon, centered=self.centered)


class Adagrad(Optimizer):
    """Adagrad, as `keras.optimizers.Adagrad`: `acc += g^2; var -= lr g / sqrt(acc + epsilon)`,
    the accumulators starting at `initial_accumulator_value`."""

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name="Adagrad", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue, global_clipnorm, name,
                         **kwargs)
        if initial_accumulator_value < 0:
            raise ValueError(f"initial_accumulator_value must be non-negative, got "
                             f"{initial_accumulator_value}")
        self.initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon

    def _slot_specs(self):
        return [("accumulator", self.initial_accumulator_value)]

    def _update(self, g, v, lr):
        acc = self._slot(v, "accumulator", self.initial_accumulator_value)
        acc_new = acc.value() + tnp.square(g)
        acc.assign(acc_new)
        v.assign_sub(g * lr / tnp.sqrt(acc_new + self.epsilon))

    def get_config(self):
        return dict(super().get_config(), initial_accumulator_value=self.initial_accumulator_value,
                    epsilon=self.epsilon)
