"""Nested structures (lists, tuples, namedtuples, dicts) as flat leaves plus a definition.

Written with module-level recursive functions, not nested closures: a self-referencing closure
is a reference cycle that would keep the leaves (large buffers) alive until the garbage
collector runs."""


class _Leaf:
    __slots__ = ()

    def __repr__(self):
        return "*"


LEAF = _Leaf()


def _flatten(v, leaves):
    t = type(v)
    if t is list or t is tuple:
        return (t, tuple(_flatten(e, leaves) for e in v))
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return (t, tuple(_flatten(e, leaves) for e in v))
    if t is dict:
        keys = sorted(v, key=repr)
        return (dict, tuple(keys), tuple(_flatten(v[k], leaves) for k in keys))
    leaves.append(v)
    return LEAF


def flatten_with_def(x):
    leaves = []
    d = _flatten(x, leaves)
    return leaves, d


def flatten(x):
    leaves = []
    _flatten(x, leaves)
    return leaves


def _unflatten(d, it):
    if d is LEAF:
        return next(it)
    if d[0] is dict:
        return {k: _unflatten(s, it) for k, s in zip(d[1], d[2])}
    t, subs = d
    vals = [_unflatten(s, it) for s in subs]
    if t is list:
        return vals
    if t is tuple:
        return tuple(vals)
    return t(*vals)


def unflatten(treedef, leaves):
    return _unflatten(treedef, iter(leaves))


def map_structure(f, *xs):
    leaves0, d = flatten_with_def(xs[0])
    others = [flatten(x) for x in xs[1:]]
    return unflatten(d, [f(*vals) for vals in zip(leaves0, *others)])
