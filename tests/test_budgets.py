"""Budgets that only go down (issue 21 item 8), measured by tools/metrics.py.

Each allowlist names today's exceptions with their size. The test fails when a listed one
grows, when a new one appears, and also when a listed one shrank below its limit or is gone:
then its entry must be deleted here (or its number lowered), so the list only shrinks. A
listed exception that got shorter but is still over the limit fails too, asking for its
number to be lowered to the new length.
"""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_spec = importlib.util.spec_from_file_location("metrics", os.path.join(ROOT, "tools",
                                                                       "metrics.py"))
metrics = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(metrics)

# functions over metrics.FUNCTION_LIMIT (100) lines: "path:qualname" -> lines today
LONG_FUNCTIONS = {}

# modules over metrics.FILE_LIMIT (800) lines: path -> lines today
LONG_FILES = {}

# nf.config.settings fields + NDFLOW_* environment variables the package names
SETTINGS = 14 + 6

# imports of ndflow's own modules inside function bodies (issue 21 item 5 lowers it: set it to
# the new count when a change removes some)
FUNCTION_LEVEL_IMPORTS = 17


def _over_budget(measured, allow, limit, what):
    """The complaints about `measured` ({name: lines}) against the allowlist `allow`."""
    bad = []
    for name, n in sorted(measured.items()):
        if n <= limit:
            continue
        if name not in allow:
            bad.append("%s: %d lines (a new %s over %d: split it)" % (name, n, what, limit))
        elif n > allow[name]:
            bad.append("%s: %d lines, the allowlist says %d (it grew: shorten it)" % (
                name, n, allow[name]))
        elif n < allow[name]:
            bad.append("%s: %d lines, the allowlist says %d (it shrank: lower its entry "
                       "to %d)" % (name, n, allow[name], n))
    for name, n in sorted(allow.items()):
        if measured.get(name, 0) <= limit:
            bad.append("%s: %s (no longer over %d: delete its allowlist entry)" % (
                name, "gone" if name not in measured else "%d lines" % measured[name], limit))
    return bad


def test_no_function_over_100_lines_but_the_shrinking_allowlist():
    bad = _over_budget(metrics.function_lengths(ROOT), LONG_FUNCTIONS,
                       metrics.FUNCTION_LIMIT, "function")
    assert not bad, "\n".join(bad)


def test_no_file_over_800_lines_but_the_shrinking_allowlist():
    bad = _over_budget(metrics.file_lengths(ROOT), LONG_FILES, metrics.FILE_LIMIT, "module")
    assert not bad, "\n".join(bad)


def test_settings_do_not_grow():
    fields, env = metrics.settings_fields(ROOT), metrics.settings(ROOT)
    n = len(fields) + len(env)
    assert n <= SETTINGS, "%d settings (%d fields of nf.config.settings: %s; %d NDFLOW_* " \
        "variables: %s), the budget is %d" % (n, len(fields), " ".join(fields), len(env),
                                             " ".join(env), SETTINGS)
    # the fields are what `nf.config.settings` really has (the static reading is not stale)
    import ndflow as nf
    assert fields == list(type(nf.config.settings).fields())


def test_function_level_imports_do_not_grow():
    found = metrics.function_level_imports(ROOT)
    assert len(found) <= FUNCTION_LEVEL_IMPORTS, \
        "%d function-level imports of ndflow modules, the budget is %d (import at the top; " \
        "a function-level import is right only for an optional heavy third-party package); " \
        "python tools/metrics.py -v lists them" % (len(found), FUNCTION_LEVEL_IMPORTS)


def test_the_budget_check_catches_growth_shrinkage_and_newcomers():
    allow = {"a": 120, "b": 130, "c": 110}
    measured = {"a": 120, "b": 131, "c": 90, "d": 101, "e": 100}
    bad = _over_budget(measured, allow, 100, "function")
    assert len(bad) == 3 and "b: 131" in bad[0] and "d: 101" in bad[1] and "c: 90" in bad[2]
    assert _over_budget({"a": 119}, {"a": 120}, 100, "function")[0].startswith("a: 119")
    assert "gone" in _over_budget({}, {"a": 120}, 100, "function")[0]
