"""Which functions are converted, and how a converted function is built and cached.

A function is converted once per code object (parse, rewrite, compile); each function object
then gets a twin made from that code with the original's globals (the live module dict, so later
global assignments are seen), closure cells (shared, so `nonlocal` works both ways), defaults
and name. Library code (ndflow, the standard library, installed packages) is never converted.
"""
import ast
import copy
import functools
import inspect
import os
import sys
import sysconfig
import textwrap
import types
import warnings
import weakref

from . import transformer as T
from ..core.state import AST_LOCK

_CODE_CACHE = {}                        # original code object -> (factory code, source) | None
# A function's converted twin is kept on the function itself, not in a table keyed by it: the
# twin shares the function's closure cells, which can hold the function (a nested function that
# calls itself), so a table's entry would keep every converted function, and what its closure
# holds, alive for good. On the function it is a cycle the collector frees with it.
_TWIN = "__ndflow_autograph_twin__"
_GENERATED = set()        # code objects we compiled (never converted again)
_TWIN_CODE = {}           # original code object -> the twin's code (named as the original)
_WARNED = set()
_NOT_CONVERTED = "__ndflow_do_not_convert__"


class _Twin:
    """`fn`, the converted twin of `owner` (held weakly: functools.wraps copies a function's
    __dict__ to its wrapper, whose twin this is not). Pickled as nothing: a function shipped
    by value to another process (cloudpickle, Dask) carries its __dict__, and is converted
    again there."""
    __slots__ = ("owner", "fn")

    def __init__(self, owner, fn):
        self.owner, self.fn = weakref.ref(owner), fn

    def __reduce__(self):
        return (_no_twin, ())


def _no_twin():
    return None


def _library_roots():
    roots = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            roots.add(os.path.abspath(paths[key]))
    for p in sys.path:
        if p and ("site-packages" in p or "dist-packages" in p):
            roots.add(os.path.abspath(p))
    return tuple(sorted(roots))


_ROOTS = None


_LIBRARY_FILES = {}        # file name -> whether it is library code


def is_library_code(code):
    """Whether the code object belongs to ndflow, the standard library or an installed package."""
    global _ROOTS
    fn = code.co_filename
    hit = _LIBRARY_FILES.get(fn)
    if hit is None:
        if fn.startswith("<"):
            # exec'd code has no source; an interactive cell's (IPython) is in linecache
            import linecache
            return not linecache.getlines(fn)
        if _ROOTS is None:
            _ROOTS = _library_roots()
        path = os.path.abspath(fn)
        hit = _LIBRARY_FILES[fn] = any(path.startswith(r + os.sep) for r in _ROOTS)
    return hit


def do_not_convert(func=None):
    """Mark `func` so that AutoGraph runs it as written (as
    `tf.autograph.experimental.do_not_convert`); usable as a decorator."""
    def mark(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            return f(*args, **kwargs)
        setattr(wrapper, _NOT_CONVERTED, True)
        return wrapper
    return mark(func) if func is not None else mark


def should_convert(f):
    if getattr(f, _NOT_CONVERTED, False):
        return False
    code = getattr(f, "__code__", None)
    if code is None or code in _GENERATED:
        return False
    return not is_library_code(code)


# ------------------------------------------------------------------ source -> factory code
def _lambdas_at(tree, line):
    return ast.Module(body=[ast.Expr(value=n) for n in ast.walk(tree)
                            if isinstance(n, ast.Lambda) and n.lineno == line], type_ignores=[])


def _lambda_node(tree, code):
    """The lambda of `code` in the parsed source of its line(s), or None if ambiguous."""
    found = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Lambda):
            names = [a.arg for a in n.args.posonlyargs + n.args.args]
            if names == list(code.co_varnames[:code.co_argcount]):
                found.append(n)
    return found[0] if len(found) == 1 else None


_FILE_TREES = {}


def _file_tree(filename):
    """The parsed source file (a lambda's own lines need not parse on their own)."""
    import linecache
    hit = _FILE_TREES.get(filename)
    if hit is None:
        lines = linecache.getlines(filename)
        if not lines:
            raise T.Unsupported("its source is not available")
        try:
            with AST_LOCK:   # (one thread at a time: core.state.AST_LOCK)
                hit = ast.parse("".join(lines))
        except SyntaxError:
            raise T.Unsupported("its source file does not parse")
        _FILE_TREES[filename] = hit
    return hit


def _parse(f):
    code = f.__code__
    is_lambda = code.co_name == "<lambda>"
    if is_lambda:
        tree = copy.deepcopy(_lambdas_at(_file_tree(code.co_filename), code.co_firstlineno))
    else:
        try:
            src = inspect.getsource(f)
        except (OSError, TypeError) as e:
            raise T.Unsupported(f"its source is not available ({e})")
        src = textwrap.dedent(src)
        try:
            with AST_LOCK:
                tree = ast.parse(src)
        except SyntaxError:
            raise T.Unsupported("its source does not parse on its own")
        ast.increment_lineno(tree, code.co_firstlineno - 1)
    if is_lambda:
        lam = _lambda_node(tree, code)
        if lam is None:
            raise T.Unsupported("its source line holds several lambdas of the same arguments")
        fdef = ast.FunctionDef(name="_nfag_lambda", args=lam.args,
                               body=[ast.Return(value=lam.body)], decorator_list=[],
                               returns=None, type_comment=None)
        T._at(fdef, lam)
        return fdef
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == code.co_name:
            return n
    raise T.Unsupported("its definition was not found in its source")


def _factory_module(f, fdef):
    """`def _nfag_factory(_nfag, <free vars>): <converted def>; return <name>`."""
    code = f.__code__
    free = list(code.co_freevars)
    # the twin is defined inside the factory under a name of its own: under the user's name it
    # would be a local of the factory, and a recursive call (a global or closure name in the
    # original) would find the factory's cell instead of the function the user's name holds
    fdef.name = T.AG + "_fn"
    fdef.decorator_list = []
    # the twin gets the original's default values (evaluating them again here could not see
    # the names they were made from)
    fdef.args.defaults = []
    fdef.args.kw_defaults = [None] * len(fdef.args.kwonlyargs)
    T.convert_scope(fdef, code.co_filename)
    if "__class__" in free:
        # zero-argument super() needs the class cell, which the compiler gives only to a
        # function that names `__class__`
        fdef.body.insert(0, T._at(ast.Expr(value=T._name("__class__")), fdef.body[0]))
    params = [T.AG] + [n for n in free if n != T.AG]
    factory = ast.FunctionDef(name="_nfag_factory", args=T._args(params),
                              body=[fdef, ast.Return(value=T._name(fdef.name))],
                              decorator_list=[], returns=None, type_comment=None)
    T._at(factory, fdef)
    factory.body[-1] = T._at(factory.body[-1], fdef)
    mod = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(mod)
    return mod, params


def _collect_codes(code):
    _GENERATED.add(code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _collect_codes(c)


def _converted_code(f):
    code = f.__code__
    hit = _CODE_CACHE.get(code)
    if hit is None:
        fdef = _parse(f)
        mod, params = _factory_module(f, fdef)
        inner = fdef.name
        fdef.name = code.co_name if code.co_name.isidentifier() else "_nfag_lambda"
        source = ast.unparse(fdef)           # (to_code shows the user's name)
        fdef.name = inner
        with AST_LOCK:
            compiled = compile(mod, code.co_filename, "exec")
        _collect_codes(compiled)
        hit = _CODE_CACHE[code] = (compiled, params, source)
    return hit


def _build(f):
    from . import operators
    compiled, params, _ = _converted_code(f)
    ns = {}
    exec(compiled, f.__globals__, ns)
    inner = ns["_nfag_factory"](operators, *([None] * (len(params) - 1)))
    cells = dict(zip(f.__code__.co_freevars, f.__closure__ or ()))
    cells[T.AG] = types.CellType(operators)
    closure = tuple(cells[n] for n in inner.__code__.co_freevars)
    code = _TWIN_CODE.get(f.__code__)
    if code is None:
        # the user's name in tracebacks (the twin is compiled as _nfag_fn)
        code = _TWIN_CODE[f.__code__] = inner.__code__.replace(
            co_name=f.__code__.co_name, co_qualname=f.__code__.co_qualname)
        _GENERATED.add(code)
    g = types.FunctionType(code, f.__globals__, f.__name__, f.__defaults__, closure)
    g.__kwdefaults__ = f.__kwdefaults__
    g.__qualname__ = f.__qualname__
    g.__doc__ = f.__doc__
    g.__module__ = f.__module__
    g.__dict__.update(f.__dict__)
    return g


CONVERTS = "__ndflow_converts__"


def converts_arguments(*positions):
    """Decorator: the function arguments at `positions` of the decorated higher-order function
    are user code, converted by AutoGraph when converted code calls it (as `cond`'s branches)."""
    def mark(f):
        setattr(f, CONVERTS, positions)
        return f
    return mark


def convert(f, warn=True):
    """The converted twin of the Python function `f` (cached), or `f` itself when it is library
    code, marked `do_not_convert`, or its source cannot be converted (then with a warning)."""
    if isinstance(f, functools.partial):
        g = convert(f.func, warn)
        return f if g is f.func else functools.partial(g, *f.args, **f.keywords)
    if inspect.ismethod(f):
        g = convert(f.__func__, warn)
        return f if g is f.__func__ else types.MethodType(g, f.__self__)
    if not inspect.isfunction(f) and not isinstance(f, type) and callable(f):
        # an object of a user class: its __call__, bound to it
        m = getattr(type(f), "__call__", None)
        if inspect.isfunction(m) and should_convert(m):
            g = convert(m, warn)
            return f if g is m else types.MethodType(g, f)
        return f
    if not inspect.isfunction(f) or not should_convert(f):
        return f
    hit = f.__dict__.get(_TWIN)
    if hit is not None and hit.owner() is f:
        return hit.fn
    try:
        g = _build(f)
    except (T.Unsupported, SyntaxError) as e:
        _CODE_CACHE.setdefault(f.__code__, None)
        if warn and f.__code__ not in _WARNED:
            _WARNED.add(f.__code__)
            warnings.warn(f"AutoGraph could not convert {f.__qualname__} "
                          f"({f.__code__.co_filename}:{f.__code__.co_firstlineno}): {e}; it runs "
                          f"as written (Python control flow on traced values raises "
                          f"nf.TracingError)", stacklevel=3)
        g = f
    setattr(f, _TWIN, _Twin(f, g))
    return g


def to_code(f):
    """The source of `f` as AutoGraph converts it (a string), as `tf.autograph.to_code`."""
    f = getattr(f, "python_function", f)      # an nf.function: the function it wraps
    if inspect.ismethod(f):
        f = f.__func__
    if isinstance(f, functools.partial):
        f = f.func
    if not inspect.isfunction(f):
        raise TypeError(f"to_code: expected a Python function, got {type(f).__name__}")
    return _converted_code(f)[2] + "\n"
