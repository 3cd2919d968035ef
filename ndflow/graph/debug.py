"""What the compiler shows and checks: `NDFLOW_DEBUG` and `NDFLOW_VERIFY`.

    NDFLOW_DEBUG=graph      the traced graph of every new trace
    NDFLOW_DEBUG=opt        the optimized graph, and what each pass changed (a diff per pass)
    NDFLOW_DEBUG=code       the generated Python source
    NDFLOW_DEBUG=time       trace / optimize / generate times, and the time of every call
    NDFLOW_DEBUG=verify     (or NDFLOW_VERIFY=1) check the graph after every pass
    NDFLOW_DEBUG=kernels    the source of every fused region's kernels
    NDFLOW_DEBUG=plan       each route decision of the kernel planner, as it is made (which
                            tier and path a fused region takes for a signature, and why;
                            `nf.config.explain(f)` prints them all for a function)

Flags combine with commas (`NDFLOW_DEBUG=graph,code`); `all` turns all on. The same switches at
run time: `nf.config.set_debug("opt", "time")`, `nf.config.set_debug()` turns them off.
Everything is printed to stderr.
"""
import os
import sys
import weakref

KNOWN = ("graph", "opt", "code", "time", "verify", "kernels", "plan")
FLAGS = set()
VERIFY = False
_functions = weakref.WeakSet()    # nf.functions whose fast call path 'time' must bypass


def _parse(values):
    out = set()
    for v in values:
        for f in str(v).replace(";", ",").split(","):
            f = f.strip().lower()
            if not f:
                continue
            if f == "all":
                out.update(KNOWN)
            elif f in KNOWN:
                out.add(f)
            else:
                raise ValueError(f"unknown ndflow debug flag {f!r}; known: {', '.join(KNOWN)}, all")
    return out


def set_debug(*flags):
    """Turn on the given debug outputs ('graph', 'opt', 'code', 'time', 'verify', 'all');
    with no argument, turn them all off. Returns the previous flags."""
    global VERIFY
    prev = tuple(sorted(FLAGS))
    FLAGS.clear()
    FLAGS.update(_parse(flags))
    VERIFY = "verify" in FLAGS or bool(os.environ.get("NDFLOW_VERIFY"))
    if "time" in FLAGS:
        for f in list(_functions):
            f._fast.clear()
    return prev


def get_debug():
    """The debug outputs now on (a sorted tuple of 'graph', 'opt', 'code', 'time', 'verify' ...),
    as set by `set_debug` or NDFLOW_DEBUG.

    Examples
    --------
    >>> import ndflow as nf
    >>> previous = nf.config.set_debug("graph")
    >>> nf.config.get_debug()
    ('graph',)
    >>> _ = nf.config.set_debug(*previous)
    """
    return tuple(sorted(FLAGS))


def log(text):
    print(text, file=sys.stderr, flush=True)


try:
    set_debug(os.environ.get("NDFLOW_DEBUG", ""))
except ValueError as e:     # a typo in the environment must not make `import ndflow` fail
    log(f"ndflow: NDFLOW_DEBUG ignored: {e}")
    set_debug()
