"""`nf.Module`: collects the Variables of an object tree, as `tf.Module`."""
from .variable import Variable


class Module:
    def __init__(self, name=None):
        self._name = name or type(self).__name__

    @property
    def name(self):
        return getattr(self, "_name", type(self).__name__)

    def _walk(self, seen):
        for k, v in sorted(vars(self).items()):
            yield from _collect(v, seen)

    @property
    def variables(self):
        return tuple(self._walk(set()))

    @property
    def trainable_variables(self):
        return tuple(v for v in self.variables if v.trainable)

    @property
    def submodules(self):
        out = []
        for v in vars(self).values():
            if isinstance(v, Module):
                out.append(v)
                out.extend(v.submodules)
        return tuple(out)


def _collect(v, seen):
    if id(v) in seen:
        return
    if isinstance(v, Variable):
        seen.add(id(v))
        yield v
    elif isinstance(v, Module):
        seen.add(id(v))
        yield from v._walk(seen)
    elif isinstance(v, (list, tuple)):
        for e in v:
            yield from _collect(e, seen)
    elif isinstance(v, dict):
        for k in sorted(v, key=repr):
            yield from _collect(v[k], seen)
