"""Learning-rate schedules (`nf.optimizers.schedules`), as `keras.optimizers.schedules`:
callables of the step that compute with ndflow.numpy, so inside `nf.function` the step (the
optimizer's `iterations` Variable) is read at every call and the rate follows it without
retracing. A Python float rate is float32, as in Keras; pass an array to choose the dtype."""
import math

from .. import numpy as tnp
from ..compat import _tensor

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay", "CosineDecay",
           "InverseTimeDecay"]


class LearningRateSchedule:
    """Base class: `schedule(step)` gives the learning rate at `step`."""

    def __call__(self, step):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(step)")

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} must implement get_config()")

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % kv for kv in self.get_config().items()))


def _check_steps(name, value):
    if value <= 0:
        raise ValueError(f"Argument `{name}` must be > 0, got {name}={value}")


def _rate_and_step(rate, step):
    """The initial rate as an array (float32 for Python floats) and the step in its dtype."""
    lr = _tensor(rate)
    if lr.dtype.kind != "f":
        lr = lr.astype(tnp.float32)
    return lr, tnp.asarray(step).astype(lr.dtype)


class _StepDecay(LearningRateSchedule):
    """Decays driven by `step / decay_steps` (floored with `staircase`)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name=None):
        _check_steps("decay_steps", decay_steps)
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps, self.decay_rate, self.staircase = decay_steps, decay_rate, staircase
        self.name = name or type(self).__name__

    def _progress(self, step):
        lr, step = _rate_and_step(self.initial_learning_rate, step)
        p = step / tnp.asarray(self.decay_steps, lr.dtype)
        return lr, (tnp.floor(p) if self.staircase else p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_StepDecay):
    """`initial_learning_rate * decay_rate ** (step / decay_steps)`; with `staircase` the
    exponent is floored (the rate drops every `decay_steps` steps)."""

    def __call__(self, step):
        lr, p = self._progress(step)
        return lr * tnp.power(tnp.asarray(self.decay_rate, lr.dtype), p)


class PiecewiseConstantDecay(LearningRateSchedule):
    """`values[0]` while `step <= boundaries[0]`, `values[i]` while
    `boundaries[i-1] < step <= boundaries[i]`, `values[-1]` after the last boundary."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        boundaries, values = list(boundaries), list(values)
        if len(boundaries) != len(values) - 1:
            raise ValueError(f"The length of boundaries should be 1 less than the length of "
                             f"values; got {len(boundaries)} boundaries and {len(values)} "
                             f"values")
        self.boundaries, self.values, self.name = boundaries, values, name

    def __call__(self, step):
        vals = [_tensor(v) for v in self.values]
        dtype = tnp.result_type(*vals)
        step = tnp.asarray(step)
        out = vals[-1].astype(dtype)
        for b, v in zip(reversed(self.boundaries), reversed(vals[:-1])):
            out = tnp.where(step <= b, v.astype(dtype), out)
        return out

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Cosine decay (Loshchilov & Hutter, SGDR) with optional linear warmup, as Keras:
    without warmup, `lr0 * ((1 - alpha) * 0.5 (1 + cos(pi min(step, decay_steps) /
    decay_steps)) + alpha)`. With `warmup_target`, the rate first rises linearly from
    `initial_learning_rate` to `warmup_target` over `warmup_steps`, then decays from
    `warmup_target` over `decay_steps`."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay",
                 warmup_target=None, warmup_steps=0):
        _check_steps("decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps, self.alpha = (initial_learning_rate,
                                                                    decay_steps, alpha)
        self.name, self.warmup_target, self.warmup_steps = name, warmup_target, warmup_steps

    def _decay(self, step, lr_from, dtype):
        frac = step / tnp.asarray(self.decay_steps, dtype)
        cosine = 0.5 * (1.0 + tnp.cos(math.pi * frac))
        return lr_from * ((1 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        lr, step = _rate_and_step(self.initial_learning_rate, step)
        if self.warmup_target is None:
            return self._decay(tnp.minimum(step, float(self.decay_steps)), lr, lr.dtype)
        target = tnp.asarray(self.warmup_target, lr.dtype)
        step = tnp.minimum(step, float(self.decay_steps + self.warmup_steps))
        decayed = self._decay(step - self.warmup_steps, target, lr.dtype)
        if not self.warmup_steps:
            return decayed
        warm = lr + (target - lr) * (step / float(self.warmup_steps))
        return tnp.where(step < self.warmup_steps, warm, decayed)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


class InverseTimeDecay(_StepDecay):
    """`initial_learning_rate / (1 + decay_rate * step / decay_steps)`; with `staircase`
    `step / decay_steps` is floored."""

    def __call__(self, step):
        lr, p = self._progress(step)
        return lr / (1 + tnp.asarray(self.decay_rate, lr.dtype) * p)
