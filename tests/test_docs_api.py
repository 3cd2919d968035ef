"""The API reference covers every public name, each with a docstring; the version is one.

The reference's list of names comes from the package (docs/_ext/ndflow_api.py, which needs no
Sphinx); these tests hold it to the package and hold the docstrings to the names.
"""
import os
import re
import sys
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "docs", "_ext"))
import ndflow_api as api  # noqa: E402

import ndflow as nf  # noqa: E402

# Public names without a docstring of their own when the reference was made. The list can
# only shrink: a name that gets a docstring must leave it (the test below fails until it does),
# and a name missing from it must have a docstring.
MISSING_DOCSTRINGS = {
    'ndflow.numpy.asanyarray',
    'ndflow.numpy.astype',
    'ndflow.numpy.atleast_1d',
    'ndflow.numpy.atleast_2d',
    'ndflow.numpy.broadcast_arrays',
    'ndflow.numpy.broadcast_shapes',
    'ndflow.numpy.broadcast_to',
    'ndflow.numpy.count_nonzero',
    'ndflow.numpy.empty',
    'ndflow.numpy.empty_like',
    'ndflow.numpy.eye',
    'ndflow.numpy.flatnonzero',
    'ndflow.numpy.full_like',
    'ndflow.numpy.hstack',
    'ndflow.numpy.identity',
    'ndflow.numpy.inner',
    'ndflow.numpy.matrix_transpose',
    'ndflow.numpy.moveaxis',
    'ndflow.numpy.ndim',
    'ndflow.numpy.nonzero',
    'ndflow.numpy.ones',
    'ndflow.numpy.ones_like',
    'ndflow.numpy.outer',
    'ndflow.numpy.ravel',
    'ndflow.numpy.shape',
    'ndflow.numpy.size',
    'ndflow.numpy.squeeze',
    'ndflow.numpy.swapaxes',
    'ndflow.numpy.tensordot',
    'ndflow.numpy.vdot',
    'ndflow.numpy.vstack',
    'ndflow.numpy.zeros_like',
    'ndflow.Module',
    'ndflow.UnconnectedGradients',
    'ndflow.abs',
    'ndflow.argmin',
    'ndflow.concat',
    'ndflow.exp',
    'ndflow.expand_dims',
    'ndflow.fill',
    'ndflow.log',
    'ndflow.maximum',
    'ndflow.minimum',
    'ndflow.ones_like',
    'ndflow.rank',
    'ndflow.reduce_all',
    'ndflow.reduce_any',
    'ndflow.reduce_max',
    'ndflow.reduce_min',
    'ndflow.size',
    'ndflow.sqrt',
    'ndflow.square',
    'ndflow.squeeze',
    'ndflow.stack',
    'ndflow.transpose',
    'ndflow.zeros_like',
    'ndflow.config.experimental',
    'ndflow.config.get_debug',
    'ndflow.config.get_function_cache_size',
    'ndflow.config.get_logical_device_configuration',
    'ndflow.config.list_logical_devices',
    'ndflow.config.list_physical_devices',
    'ndflow.nn.leaky_relu',
    'ndflow.nn.relu6',
    'ndflow.nn.tanh',
    'ndflow.losses.MAE',
    'ndflow.initializers.deserialize',
}


@pytest.fixture(scope="module")
def found():
    return api.entries()


def test_every_submodule_is_a_namespace_or_declared_internal(found):
    _, unclassified = found
    assert not unclassified, (
        "public modules neither documented nor declared internal: add each to NAMESPACES "
        "(with a title) or INTERNAL (with the reason) in docs/_ext/ndflow_api.py: %s"
        % unclassified)


def test_every_public_name_has_a_reference_entry(found):
    entries, _ = found
    documented = {p for p, _, _ in api.namespaces()}
    expected = set()
    for ns_path in documented:
        ns = api.resolve(ns_path)
        for name in api.public_names(ns):
            obj = getattr(ns, name)
            path = ns_path + "." + name
            if path in documented or isinstance(obj, types.ModuleType):
                continue
            expected.add(path)
    assert {e.path for e in entries} == expected
    pages = api.pages()
    for e in entries:
        page = pages[e.namespace + ".rst"]
        assert api.entry_rst(e) in page, e.path
        assert f":py:obj:`~{e.path}`" in page, e.path
    # the roots and the namespaces the docs promise
    for ns in ("ndflow", "ndflow.numpy", "ndflow.numpy.linalg", "ndflow.numpy.fft",
               "ndflow.numpy.random", "ndflow.train", "ndflow.optimizers",
               "ndflow.saved_model", "ndflow.onnx", "ndflow.summary", "ndflow.distribute",
               "ndflow.scipy.special", "ndflow.scipy.stats"):
        assert ns + ".rst" in pages
    assert len(entries) > 800


def test_only_announced_namespaces_may_be_absent():
    present = {p for p, _, _ in api.namespaces()}
    absent = {p for p, _, _ in api.NAMESPACES} - present
    assert absent <= api.ANNOUNCED
    assert "ndflow" in present and "ndflow.numpy" in present


def test_aliases_point_at_a_described_entry(found):
    entries, _ = found
    described = {e.path for e in entries if e.alias_of is None}
    for e in entries:
        assert e.alias_of is None or e.alias_of in described, e.path
        if e.alias_of is not None:
            assert api.resolve(e.alias_of) is e.obj


def test_every_public_name_has_a_docstring(found):
    entries, _ = found
    needing = {e.path: e for e in entries
               if e.alias_of is None and e.kind in ("class", "exception", "function", "object")}
    missing = {p for p, e in needing.items() if not api.own_docstring(e.obj)}
    assert not (missing - MISSING_DOCSTRINGS), "public names without a docstring"
    fixed = MISSING_DOCSTRINGS - missing
    assert not fixed, ("these names have a docstring or are gone now: remove them from "
                       "MISSING_DOCSTRINGS in tests/test_docs_api.py: %s" % sorted(fixed))


def test_the_unknown_submodule_stops_the_reference(monkeypatch):
    import ndflow.scipy as nfs
    fake = types.ModuleType("ndflow.scipy.brand_new")
    monkeypatch.setattr(nfs, "brand_new", fake, raising=False)
    monkeypatch.setattr(nfs, "__all__", list(nfs.__all__) + ["brand_new"])
    _, unclassified = api.entries()
    assert unclassified == ["ndflow.scipy.brand_new"]
    with pytest.raises(RuntimeError, match="ndflow.scipy.brand_new"):
        api.pages()


def test_the_reference_does_not_depend_on_what_was_imported_before():
    """A package without `__all__` gains an attribute for each submodule something imports:
    the reference's names must not change with it."""
    import importlib
    before = [e.path for e in api.entries()[0]]
    importlib.import_module("ndflow.autograph.operators")
    importlib.import_module("ndflow.train.schedules")
    after, unclassified = api.entries()
    assert [e.path for e in after] == before and not unclassified


def test_docstrings_read_as_written_in_the_reference():
    from ndflow_docstrings import convert, escape_prose
    assert escape_prose("f(*args) and `x*y` and print_ here") == \
        "f(\\*args) and `x*y` and print\\_ here"
    assert escape_prose("**bold** stays") == "**bold** stays"
    lines = ["Example:", "", "    y = f(x)", "", "Text after."]
    assert convert(lines) == ["Example::", "", "    y = f(x)", "", "Text after."]
    doctest = [">>> f(*a)", "1", "", "- a list item", "  continued"]
    assert convert(doctest) == doctest


def test_version_is_one():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as fh:
        version = re.search(r'^version = "([^"]+)"', fh.read(), re.M).group(1)
    assert nf.__version__ == version
    with open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8") as fh:
        latest = re.search(r"^## \[([^\]]+)\]", fh.read(), re.M).group(1)
    assert latest == version


def _user_pages():
    pages = ["README.md", "CHANGELOG.md"]
    for d, _, files in os.walk(os.path.join(ROOT, "docs")):
        if "_build" in d or "reference" in d:
            continue
        pages += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f.endswith(".md")]
    # the architecture page is for people who change ndflow, and others write it
    return [p for p in pages if not p.endswith("architecture.md")]


def test_the_readme_is_a_front_door():
    size = os.path.getsize(os.path.join(ROOT, "README.md"))
    assert size <= 20 * 1024, f"README.md is {size} bytes; long sections belong on the site"
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    for heading in ("## Set up", "## A taste", "## Where to go next"):
        assert heading in text
    assert "make demo" in text and "make test" in text


@pytest.mark.parametrize("page", _user_pages())
def test_user_facing_text_holds_no_development_history(page):
    with open(os.path.join(ROOT, page), encoding="utf-8") as fh:
        text = fh.read()
    found = re.findall(r"(?i)\b(?:stop \d+|issue \d+|issues? #\d+|after (?:the )?merge)\b", text)
    assert not found, f"{page}: {found}"


@pytest.mark.parametrize("page", _user_pages())
def test_local_links_lead_somewhere(page):
    """Links of the README (which the site does not build) and of the pages name files that
    exist (`make docs` checks the pages' links and anchors again, warnings as errors)."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as fh:
        text = re.sub(r"```.*?```", "", fh.read(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#")[0]
        if path.startswith("reference/"):        # generated when the site is built
            continue
        full = os.path.normpath(os.path.join(ROOT, os.path.dirname(page), path))
        assert os.path.exists(full), f"{page}: {target}"
