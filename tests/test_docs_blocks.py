"""Every ```python block of the documentation site (docs/**/*.md) and of README.md runs.

A page's blocks run in order in one fresh process (a page reads as one session: a block may use
what an earlier one defined), in a temporary directory, so files a block writes never land in
the checkout. A ```text block right after a python block (blank lines between allowed) is what
that block prints (stdout and stderr together) and is checked: `...` in a line matches any text,
a line holding only `...` any number of lines. A block is left out only under a comment on the
line before its fence that gives the reason:

    <!-- docs-test: skip (needs mpiexec: one process per worker) -->

Needs no Sphinx: CI runs this without the docs extra.
"""
import glob
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)[^\n]*$")
SKIP = re.compile(r"^<!--\s*docs-test:\s*skip\s*\((.+)\)\s*-->\s*$")
# packages of ndflow's optional extras: a page that imports one the environment lacks is
# skipped from that block on (the test extra installs them all), as the feature tests are
OPTIONAL = {"onnx", "onnxruntime", "dask", "distributed", "mpi4py", "matplotlib", "tensorboard",
            "scipy", "cupy", "tqdm"}


def pages():
    found = sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    found = [p for p in found if os.sep + "_build" + os.sep not in p
             and os.sep + "reference" + os.sep not in p]
    return [os.path.relpath(p, ROOT) for p in [os.path.join(ROOT, "README.md")] + found]


def blocks(text):
    """The fenced blocks of a Markdown text: dicts of lang, code, line (of the first code
    line, 1-based), skip (the reason, or None) and output (the text block after it, or None)."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        prev = lines[i - 1].strip() if i else ""
        skip = SKIP.match(prev)
        if prev.startswith("<!--") and "docs-test" in prev and not skip:
            raise ValueError(f"line {i}: a docs-test comment must read "
                             "'<!-- docs-test: skip (reason) -->'")
        out.append({"lang": lang, "code": "\n".join(lines[i + 1:j]) + "\n", "line": i + 2,
                    "skip": skip.group(1).strip() if skip else None, "output": None,
                    "end": j})
        i = j + 1
    # a text block that follows a python block with only blank lines between is its output
    for prev, cur in zip(out, out[1:]):
        gap = lines[prev["end"] + 1:cur["line"] - 2]
        if prev["lang"] == "python" and cur["lang"] == "text" and not any(l.strip() for l in gap):
            prev["output"] = cur["code"]
    return [b for b in out if b["lang"] == "python"]


def output_matches(expected, got):
    """`got` is `expected` up to trailing spaces, with `...` matching any text in a line and a
    line of `...` alone any number of lines."""
    def norm(s):
        return "\n".join(l.rstrip() for l in s.rstrip("\n").split("\n"))
    parts = []
    for line in norm(expected).split("\n"):
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.fullmatch("".join(parts), norm(got) + "\n") is not None


def _page_ids():
    return [p for p in pages()
            if any(b["skip"] is None for b in blocks(open(os.path.join(ROOT, p),
                                                          encoding="utf-8").read()))]


@pytest.mark.parametrize("page", _page_ids())
def test_page_code_blocks_run_and_print_what_they_show(page, tmp_path):
    with open(os.path.join(ROOT, page), encoding="utf-8") as fh:
        todo = [b for b in blocks(fh.read()) if b["skip"] is None]
    # NDFLOW_VERIFY: every graph is verified after every pass, as in the rest of the suite
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MPLBACKEND="Agg", NDFLOW_PROGRESS="0", NDFLOW_VERIFY="1")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), page],
                          input=json.dumps(todo), capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(proc.stdout)
    for block, res in zip(todo, results):
        where = f"{page}:{block['line']}"
        if res.get("missing"):
            pytest.skip(f"the block at {where} needs {res['missing']} (an optional extra)")
        assert res["error"] is None, f"the block at {where} raised:\n{res['error']}"
        if block["output"] is not None:
            assert output_matches(block["output"], res["output"]), (
                f"the block at {where} printed\n{res['output']}\nbut the page shows\n"
                f"{block['output']}")
    assert len(results) == len(todo)


def test_a_missing_optional_package_skips_and_any_other_error_fails():
    todo = [{"code": "import onnxruntime_not_here_either\n", "line": 1},
            {"code": "print(1)\n", "line": 3}]
    res = _run("README.md", todo)
    assert res[0]["error"] and res[0]["missing"] is None and len(res) == 1
    res = _run("README.md", [{"code": "raise ModuleNotFoundError('x', name='onnx')\n",
                              "line": 1}])
    assert res[0]["missing"] == "onnx"


def test_every_skipped_block_says_why():
    for page in pages():
        with open(os.path.join(ROOT, page), encoding="utf-8") as fh:
            for b in blocks(fh.read()):
                assert b["skip"] is None or len(b["skip"]) > 10, (page, b["line"])


def test_the_pages_hold_code_that_runs():
    counted = {p: [b for b in blocks(open(os.path.join(ROOT, p), encoding="utf-8").read())
                   if b["skip"] is None] for p in pages()}
    assert counted["README.md"], "the README's taste is not collected"
    assert sum(map(len, counted.values())) >= 40
    assert sum(1 for bs in counted.values() for b in bs if b["output"] is not None) >= 10


def test_the_collector_reads_outputs_and_skips():
    text = ("```python\nprint(1)\n```\n\n```text\n1\n```\n"
            "<!-- docs-test: skip (needs a GPU: none here) -->\n```python\nx\n```\n"
            "```python\ny = 2\n```\n```sh\nmake\n```\n")
    b = blocks(text)
    assert [x["output"] for x in b] == ["1\n", None, None]
    assert [x["skip"] for x in b] == [None, "needs a GPU: none here", None]
    assert [x["line"] for x in b] == [2, 10, 13]
    with pytest.raises(ValueError, match="docs-test"):
        blocks("<!-- docs-test: skip -->\n```python\nx\n```\n")


def test_output_matching_is_exact_but_for_ellipses():
    assert output_matches("a 1\nb\n", "a 1  \nb")
    assert not output_matches("a 1\n", "a 2\n")
    assert not output_matches("a\n", "a\nb\n")
    assert output_matches("took ... ms\n", "took 3.2 ms\n")
    assert output_matches("first\n...\nlast\n", "first\nx\ny\nlast\n")
    assert output_matches("first\n...\nlast\n", "first\nlast\n")
    assert not output_matches("first\n...\nlast\n", "first\nx\n")


# ------------------------------------------------------------------- the runner (a subprocess)

def _run(page, todo):
    """Run the blocks in one namespace; each one's printed text, or its traceback."""
    import io
    import traceback
    namespace = {"__name__": "__main__"}
    results = []
    real = sys.stdout, sys.stderr
    for b in todo:
        buf = io.StringIO()
        sys.stdout = sys.stderr = buf
        error = missing = None
        try:
            # the page itself as the file name: its lines are the code's lines, so tracebacks
            # name them and AutoGraph reads a function's source from them
            code = compile("\n" * (b["line"] - 1) + b["code"], os.path.join(ROOT, page), "exec")
            exec(code, namespace)
        except ModuleNotFoundError as e:
            error = traceback.format_exc()
            if (e.name or "").split(".")[0] in OPTIONAL:
                missing = e.name
        except BaseException:           # noqa: B036 (reported, then the page stops)
            error = traceback.format_exc()
        finally:
            sys.stdout, sys.stderr = real
        results.append({"output": buf.getvalue(), "error": error, "missing": missing})
        if error:
            break
    return results


if __name__ == "__main__":
    import warnings
    # warnings go to the real stderr: they are not what a block shows
    _stderr = sys.stderr
    warnings.showwarning = lambda m, c, f, l, file=None, line=None: _stderr.write(
        warnings.formatwarning(m, c, f, l, line))
    _todo = json.load(sys.stdin)
    _out = sys.stdout
    _results = _run(sys.argv[1], _todo)
    _out.write(json.dumps(_results))
