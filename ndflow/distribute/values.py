"""Distributed values: `PerReplica` (one value per local replica) and `MirroredVariable` (one
Variable per replica, kept equal by the updates every replica applies)."""
from ..backends.device import to_device, device_of, device
from ..train.variable import Variable
from .collective import LOCAL
from .. import numpy as tnp


class PerReplica:
    """One value per local replica, as TensorFlow's `PerReplica`: what `strategy.run` returns
    and what a distributed dataset yields. `.values` is the tuple of them, in replica order;
    `strategy.reduce` and `strategy.experimental_local_results` take it apart."""

    __slots__ = ("values",)

    def __init__(self, values):
        self.values = tuple(values)

    def __len__(self):
        return len(self.values)

    def __repr__(self):
        return "PerReplica:{\n%s\n}" % "\n".join("  %d: %r" % (i, v)
                                                 for i, v in enumerate(self.values))


class MirroredVariable(Variable):
    """A Variable created inside `strategy.scope()`: one component Variable on each replica's
    device (`.values`). Inside `strategy.run` each replica reads and assigns its own component;
    outside (cross-replica context) reading gives the first component and assigning writes
    every component. Tapes, optimizers and checkpoints see it as one Variable."""

    def __init__(self, strategy, components, trainable, name):
        self._strategy = strategy
        self._values = tuple(components)
        self.trainable = trainable
        self._name = name or "Variable"
        self._unique = components[0]._unique

    @property
    def values(self):
        """The component Variables, one per local replica."""
        return self._values

    def _component(self):
        ctx = LOCAL.replica
        if ctx is not None and ctx.strategy is self._strategy:
            return self._values[ctx.local_id]
        return self._values[0]

    # reads: the current replica's component (tapes still key the gradient on this object)
    @property
    def _value(self):
        return self._component()._value

    def _current(self):
        return self._component()._current()

    def _read_for_tape(self):
        return self._component()._current()

    def assign(self, value, use_locking=False, name=None, read_value=True):
        ctx = LOCAL.replica
        if ctx is not None and ctx.strategy is self._strategy:
            self._values[ctx.local_id].assign(value)
        else:
            v = tnp.asarray(value, dtype=self.dtype)
            for comp in self._values:
                # each component gets its own buffer on its own device
                d = device_of(comp._value)
                with device(d):
                    comp.assign(v if v._t is not None else to_device(v, d))
        return self if read_value else None

    def __repr__(self):
        return "<nf.distribute.MirroredVariable '%s' shape=%s dtype=%s, %d replicas, numpy=%r>" % (
            self.name, tuple(self.shape), self.dtype.name, len(self._values), self.numpy())
