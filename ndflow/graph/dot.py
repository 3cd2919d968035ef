"""Pictures of graphs: the IR as Graphviz DOT text (no dependency), rendered by Graphviz's
`dot` program when it is installed.

    cf = f.get_concrete_function(nf.TensorSpec([None, 3]))
    cf.to_dot(optimized=False)      # the traced graph
    cf.to_dot()                     # after the passes: fused regions outlined as clusters
    cf.render("f.svg")              # needs Graphviz (apt-get install graphviz)

Nodes are labelled with their primitive, their parameters and their results' shapes and dtypes
(`?` = a size unknown while tracing); arguments are ellipses, constants notes, results
double octagons. A fused node is drawn as a cluster holding the operations it computes in one
kernel; a control-flow node (cond, while, scan) as a cluster per branch or body. Edges carry
no labels (the value's shape is on its producer); an edge drawn dashed hands a dead buffer to
the node for its result (buffer reuse).
"""
import os
import shutil
import subprocess

import numpy as np
from .ir import _param


def _esc(s):
    return str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _aval(shape, dtype):
    name = getattr(dtype, "name", str(dtype))
    return "%s[%s]" % (name, ",".join("?" if d is None else str(d) for d in shape))


def _short_param(v):
    s = _param(v)
    return s if len(s) <= 40 else s[:37] + "..."


def _program(impl):
    """The kernel Program of a fused node's impl (also when buffer reuse wrapped it)."""
    prog = getattr(impl, "prog", None)
    if prog is None:
        prog = getattr(getattr(impl, "kernel", None), "prog", None)
    return prog


def _const_text(c):
    try:
        a = np.asarray(c.const)
    except Exception:
        return "constant"
    if a.size == 1:
        return np.array2string(a.reshape(()), precision=4)
    return "constant"


class _Writer:
    def __init__(self):
        self.lines = []
        self._n = 0

    def fresh(self, prefix):
        self._n += 1
        return "%s%d" % (prefix, self._n)

    def emit(self, indent, text):
        self.lines.append("  " * indent + text)

    def graph(self, g, indent, src, prefix, show_io=True):
        """Write `g`'s nodes; `src`: var id -> DOT id of the value's producer (filled here).
        Returns the DOT ids of `g`'s outputs' producers."""
        if show_io:
            for v in g.inputs:
                nid = self.fresh(prefix + "in")
                src[v.id] = nid
                self.emit(indent, '%s [label="%s: %s", shape=ellipse, style=filled, '
                                  'fillcolor="#dbeafe"];' % (nid, v, _aval(v.shape, v.dtype)))
        for c in g.consts:
            nid = self.fresh(prefix + "c")
            src[c.id] = nid
            self.emit(indent, '%s [label="%s = %s\\n%s", shape=note, fontsize=9];' % (
                nid, c, _esc(_const_text(c)), _aval(c.shape, c.dtype)))
        for n in g.nodes:
            prog = _program(n.prim.impl) if n.prim.fused else None
            if prog is not None:
                self.fused(n, prog, indent, src, prefix)
            elif any(True for _ in n.subgraphs()):
                self.control(n, indent, src, prefix)
            else:
                self.plain(n, indent, src, prefix)
        return [src.get(o.id) for o in g.outputs]

    def _edges(self, n, nid, indent, src, inputs=None):
        donated = getattr(n.prim.impl, "donated", None) or {}
        donors = {id(v) for v in donated.values()}
        for k, v in enumerate(n.inputs if inputs is None else inputs):
            s = src.get(v.id)
            if s is None:
                continue
            style = ' [style=dashed, color="#888888"]' if id(v) in donors and \
                k >= len(n.inputs) - len(donors) else ""
            self.emit(indent, "%s -> %s%s;" % (s, nid, style))

    def _label(self, name, params, outs, loc=None):
        ps = "\\n".join("%s=%s" % (k, _esc(_short_param(v))) for k, v in sorted(params.items()))
        res = "\\n".join("%s: %s" % (o, _aval(o.shape, o.dtype)) for o in outs)
        return "%s%s\\n%s" % (_esc(name), "\\n" + ps if ps else "", res)

    def plain(self, n, indent, src, prefix):
        nid = self.fresh(prefix + "n")
        params = {k: v for k, v in n.params.items() if k not in ("out",)}
        tip = ', tooltip="%s"' % _esc(n.loc) if n.loc else ""
        self.emit(indent, '%s [label="%s"%s];' % (nid, self._label(n.prim.name, params, n.outputs),
                                                  tip))
        self._edges(n, nid, indent, src)
        for o in n.outputs:
            src[o.id] = nid

    def fused(self, n, prog, indent, src, prefix):
        cid = self.fresh("cluster_fused")
        self.emit(indent, "subgraph %s {" % cid)
        self.emit(indent + 1, 'label="fused kernel (%d ops)"; style="rounded,filled"; '
                              'fillcolor="#fef3c7"; color="#d97706";' % len(prog.ops))
        ext = list(n.inputs[:prog.n_in])
        ids = []
        for k, op in enumerate(prog.ops):
            nid = self.fresh(prefix + "f")
            ids.append(nid)
            ps = "\\n".join("%s=%s" % (a, _esc(_short_param(b)))
                            for a, b in sorted(op.params.items()))
            self.emit(indent + 1, '%s [label="%s%s\\n%s"];' % (
                nid, op.prim.name, "\\n" + ps if ps else "", _aval(op.shape, op.dtype)))
        self.emit(indent, "}")
        for k, op in enumerate(prog.ops):
            for a in op.args:
                s = src.get(ext[a].id) if a < prog.n_in else ids[a - prog.n_in]
                if s is not None:
                    self.emit(indent, "%s -> %s;" % (s, ids[k]))
        for o, a in zip(n.outputs, prog.outputs):
            src[o.id] = src.get(ext[a].id) if a < prog.n_in else ids[a - prog.n_in]
        # buffers handed to the kernel for its results
        for v in n.inputs[prog.n_in:]:
            s = src.get(v.id)
            if s is not None and ids:
                self.emit(indent, '%s -> %s [style=dashed, color="#888888"];' % (s, ids[-1]))

    def control(self, n, indent, src, prefix):
        nid = self.fresh(prefix + "n")
        params = {k: v for k, v in n.params.items()}
        tip = ', tooltip="%s"' % _esc(n.loc) if n.loc else ""
        self.emit(indent, '%s [label="%s", shape=component%s];' % (
            nid, self._label(n.prim.name, params, n.outputs), tip))
        self._edges(n, nid, indent, src)
        for o in n.outputs:
            src[o.id] = nid
        for s in n.subgraphs():
            cid = self.fresh("cluster_body")
            self.emit(indent, "subgraph %s {" % cid)
            self.emit(indent + 1, 'label="%s"; style=dashed; color="#6b7280";' % _esc(s.name))
            inner = {}
            outs = self.graph(s.graph, indent + 1, inner, cid + "_")
            self.emit(indent, "}")
            for o in outs:
                if o is not None:
                    self.emit(indent, '%s -> %s [style=dotted, arrowhead=empty];' % (o, nid))


def to_dot(graph, title=None):
    """The IR graph `graph` as Graphviz DOT text (see the module docstring)."""
    w = _Writer()
    name = title or graph.name
    w.emit(0, 'digraph "%s" {' % _esc(name))
    w.emit(1, 'graph [rankdir=TB, fontname="Helvetica", label="%s", labelloc=t];' % _esc(name))
    w.emit(1, 'node [shape=box, style=rounded, fontname="Helvetica", fontsize=10];')
    w.emit(1, 'edge [color="#374151"];')
    src = {}
    outs = w.graph(graph, 1, src, "")
    for k, (o, s) in enumerate(zip(graph.outputs, outs)):
        nid = w.fresh("out")
        w.emit(1, '%s [label="result %d\\n%s", shape=doubleoctagon, style=filled, '
                  'fillcolor="#dcfce7"];' % (nid, k, _aval(o.shape, o.dtype)))
        if s is not None:
            w.emit(1, "%s -> %s;" % (s, nid))
    w.emit(0, "}")
    return "\n".join(w.lines) + "\n"


def render(dot_text, path, format=None):
    """Write `dot_text` as an image at `path` with Graphviz's `dot` program; `format` ('svg',
    'png', 'pdf'...) defaults to the path's extension. Returns the path."""
    if format is None:
        format = os.path.splitext(str(path))[1].lstrip(".").lower() or "svg"
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(
            "rendering a graph needs Graphviz's `dot` program, which is not installed: "
            "apt-get install graphviz (Debian/Ubuntu), brew install graphviz (macOS) or "
            "conda install graphviz; to_dot() gives the DOT text without it")
    res = subprocess.run([exe, "-T" + format, "-o", str(path)], input=dot_text.encode(),
                         capture_output=True)
    if res.returncode != 0:
        raise RuntimeError("Graphviz `dot -T%s` failed: %s" % (
            format, res.stderr.decode(errors="replace").strip()))
    return str(path)
