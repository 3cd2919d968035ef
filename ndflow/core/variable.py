"""What the layers below `train` know of a Variable: that it is one.

`nf.Variable` (ndflow/train/variable.py) subclasses `VariableBase`, so tapes, forward mode,
tracing, AutoGraph and the control-flow primitives recognise a Variable (and read its value
through the methods below) without importing the train layer (docs/architecture.md, "Layers").
"""


class VariableBase:
    """Base class of `nf.Variable`; nothing else subclasses it."""

    __slots__ = ()

    def value(self):
        """The current value (a read that tapes see and `nf.function` traces)."""
        raise NotImplementedError

    def _read_for_tape(self):
        """The current value, read without telling the tapes (they are the ones asking)."""
        raise NotImplementedError
