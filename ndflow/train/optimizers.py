"""Optimizers with `apply_gradients(zip(grads, vars))`, eager or inside `nf.function`.

Slots (momentum, Adam moments) are Variables created on first use, so a compiled training step
reads and updates them by reference like the weights."""
import math

from .variable import Variable


class Optimizer:
    def __init__(self, learning_rate=0.01, name=None):
        self.learning_rate = learning_rate
        self.iterations = Variable(0, trainable=False, name="iter", dtype="int64")
        self._slots = {}

    def _lr(self):
        lr = self.learning_rate
        if callable(lr) and not isinstance(lr, Variable):
            return lr(self.iterations.value())
        return lr

    def _slot(self, var, name):
        key = (id(var), name)
        s = self._slots.get(key)
        if s is None:
            from .. import numpy as tnp
            s = Variable(tnp.zeros(var.shape, dtype=var.dtype), trainable=False, name=name)
            self._slots[key] = (s, var)
            return s
        return s[0]

    def apply_gradients(self, grads_and_vars, name=None):
        pairs = [(g, v) for g, v in grads_and_vars]
        for g, v in pairs:
            if g is None:
                continue
            if not isinstance(v, Variable):
                raise TypeError(f"apply_gradients updates Variables, got {type(v).__name__}")
            self._update(g, v)
        self.iterations.assign_add(1)
        return self.iterations

    def minimize(self, loss, var_list, tape=None):
        from ..autodiff.tape import GradientTape
        var_list = list(var_list() if callable(var_list) else var_list)
        with GradientTape() as t:
            value = loss() if callable(loss) else loss
        grads = t.gradient(value, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def variables(self):
        return [self.iterations] + [s for s, _ in self._slots.values()]


class SGD(Optimizer):
    """Gradient descent with optional (Nesterov) momentum, as `tf.keras.optimizers.SGD`."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD"):
        super().__init__(learning_rate, name)
        self.momentum = momentum
        self.nesterov = nesterov

    def _update(self, g, v):
        lr = self._lr()
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


class Adam(Optimizer):
    """Adam (Kingma & Ba), with TensorFlow's epsilon placement (epsilon added to sqrt(v_hat))."""

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam"):
        super().__init__(learning_rate, name)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon

    def _update(self, g, v):
        from .. import numpy as tnp
        m = self._slot(v, "m")
        s = self._slot(v, "v")
        t = (self.iterations.value() + 1).astype(v.dtype)
        b1, b2 = self.beta_1, self.beta_2
        m_new = m.value() * b1 + g * (1 - b1)
        s_new = s.value() * b2 + tnp.square(g) * (1 - b2)
        m.assign(m_new)
        s.assign(s_new)
        lr = self._lr() * tnp.sqrt(1 - tnp.power(tnp.asarray(b2, v.dtype), t)) / (
            1 - tnp.power(tnp.asarray(b1, v.dtype), t))
        v.assign_sub(m_new * lr / (tnp.sqrt(s_new) + self.epsilon))
