"""Nested structures (lists, tuples, namedtuples, dicts) as flat leaves plus a definition."""


class _Leaf:
    __slots__ = ()

    def __repr__(self):
        return "*"


LEAF = _Leaf()


def flatten_with_def(x):
    leaves = []

    def go(v):
        t = type(v)
        if t is list or t is tuple:
            return (t, tuple(go(e) for e in v))
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return (t, tuple(go(e) for e in v))
        if t is dict:
            keys = sorted(v, key=repr)
            return (dict, tuple(keys), tuple(go(v[k]) for k in keys))
        leaves.append(v)
        return LEAF

    return leaves, go(x)


def flatten(x):
    return flatten_with_def(x)[0]


def unflatten(treedef, leaves):
    it = iter(leaves)

    def go(d):
        if d is LEAF:
            return next(it)
        if d[0] is dict:
            return {k: go(s) for k, s in zip(d[1], d[2])}
        t, subs = d
        vals = [go(s) for s in subs]
        if t is list:
            return vals
        if t is tuple:
            return tuple(vals)
        return t(*vals)

    return go(treedef)


def map_structure(f, *xs):
    leaves0, d = flatten_with_def(xs[0])
    others = [flatten(x) for x in xs[1:]]
    return unflatten(d, [f(*vals) for vals in zip(leaves0, *others)])
