"""`nf.Module`: collects the Variables of an object tree, as `tf.Module`."""
from .variable import Variable


class Module:
    """A container that finds the Variables of an object tree, as `tf.Module`: subclass it and
    keep Variables (and other Modules, in attributes, lists, tuples and dicts) as attributes;
    `variables`, `trainable_variables` and `submodules` collect them (each once, in attribute
    order), for optimizers and `nf.train.Checkpoint`.

    Examples
    --------
    >>> import ndflow as nf
    >>> class Dense(nf.Module):
    ...     def __init__(self, n_in, n_out):
    ...         super().__init__()
    ...         self.w = nf.Variable(nf.ones([n_in, n_out]))
    ...         self.b = nf.Variable(nf.zeros([n_out]), trainable=False)
    ...     def __call__(self, x):
    ...         return nf.matmul(x, self.w) + self.b
    >>> layer = Dense(2, 3)
    >>> layer(nf.constant([[1., 2.]]))
    array([[3., 3., 3.]], dtype=float32)
    >>> len(layer.variables), len(layer.trainable_variables)
    (2, 1)
    """
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
