"""Pictures of graphs: DOT text with every node and edge, fused regions as clusters; rendering
with Graphviz when its `dot` program is installed, a clear error when it is not."""
import re
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import ndflow as nf
import ndflow.numpy as tnp
from ndflow.graph import dot as dotmod

NODE = re.compile(r'^\s*(\w+) \[label="((?:[^"\\]|\\.)*)"')
EDGE = re.compile(r"^\s*(\w+) -> (\w+)")


def _parse(text):
    nodes, edges = {}, []
    for line in text.splitlines():
        m = NODE.match(line)
        if m and m.group(1) not in ("graph", "node", "edge"):
            nodes[m.group(1)] = m.group(2)
        m = EDGE.match(line)
        if m:
            edges.append((m.group(1), m.group(2)))
    return nodes, edges


def _model(x, y):
    h = tnp.tanh(x @ y)
    return tnp.sum(tnp.exp(-h) * 2.0 + 1.0, axis=1), tnp.max(h)


def _cf():
    f = nf.function(_model)
    return f.get_concrete_function(nf.TensorSpec([None, 3]), nf.TensorSpec([3, 4]))


def test_traced_graph_every_node_and_edge():
    cf = _cf()
    g = cf.traced_graph
    text = cf.to_dot(optimized=False)
    assert text.startswith('digraph "_model (traced)" {') and text.rstrip().endswith("}")
    nodes, edges = _parse(text)
    # one DOT node per argument, constant, operation and result
    assert len(nodes) == len(g.inputs) + len(g.consts) + len(g.nodes) + len(g.outputs)
    labels = list(nodes.values())
    for n in g.nodes:
        want = "%s\\n" % n.prim.name
        shape = "%s: %s[%s]" % (n.outputs[0], n.outputs[0].dtype.name,
                                ",".join("?" if d is None else str(d) for d in n.outputs[0].shape))
        assert any(lab.startswith(want) and shape in lab for lab in labels), (n.prim.name, shape)
    # one edge per operand use and per result
    assert len(edges) == sum(len(n.inputs) for n in g.nodes) + len(g.outputs)
    assert all(a in nodes and b in nodes for a, b in edges)
    assert "cluster" not in text
    assert "a%d: float32[?,3]" % g.inputs[0].id in text


def test_optimized_graph_outlines_fused_regions():
    cf = _cf()
    g = cf.graph
    fused = [n for n in g.nodes if n.prim.name.startswith("fused{")]
    assert fused, "the model should have a fused region"
    text = cf.to_dot()
    assert text.count("subgraph cluster_fused") == len(fused)
    nodes, edges = _parse(text)
    # each cluster holds one node per operation of its kernel, with that operation's name
    blocks = re.findall(r"subgraph cluster_fused\d+ \{\n(.*?)\n\s*\}", text, re.S)
    assert len(blocks) == len(fused)
    for n, block in zip(fused, blocks):
        ops = [o.prim.name for o in dotmod._program(n.prim.impl).ops]
        inner = [NODE.match(line).group(2).split("\\n")[0] for line in block.splitlines()
                 if NODE.match(line)]
        assert inner == ops
    assert all(a in nodes and b in nodes for a, b in edges)
    # the results are reached from the arguments
    reach = {a for a, b in edges} | {b for a, b in edges}
    assert all(nid in reach for nid in nodes)


def test_control_flow_bodies_are_clusters():
    f = nf.function(lambda x: nf.cond(tnp.sum(x) > 0, lambda: x * 2, lambda: -x))
    text = f.get_concrete_function(nf.TensorSpec([3])).to_dot()
    assert text.count("subgraph cluster_body") == 2
    assert "cond_true_fn" in text and "cond_false_fn" in text
    nodes, edges = _parse(text)
    assert any(v.startswith("negative") for v in nodes.values())
    assert any(v.startswith("multiply") for v in nodes.values())


def test_quotes_are_escaped():
    def weird(x):
        return x + 1
    weird.__name__ = 'we"ird'
    text = nf.function(weird).get_concrete_function(nf.TensorSpec([2])).to_dot()
    assert 'digraph "we\\"ird (optimized)"' in text


def test_render_needs_graphviz(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt-get install graphviz"):
        _cf().render(str(tmp_path / "g.svg"))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz (dot) is not installed")
def test_render_svg_and_png(tmp_path):
    cf = _cf()
    svg = cf.render(str(tmp_path / "g.svg"))
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    nodes, _ = _parse(cf.to_dot())
    assert set(nodes) <= set(titles)          # Graphviz drew every node
    png = cf.render(str(tmp_path / "g0.png"), optimized=False)
    with open(png, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(RuntimeError, match="dot"):
        dotmod.render("digraph { a -> }", str(tmp_path / "bad.svg"))


def test_graph_method_and_values_unchanged():
    """Drawing is read-only: the function still computes the same thing."""
    f = nf.function(_model)
    x, y = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    before = [np.asarray(v) for v in f(x, y)]
    f.get_concrete_function(x, y).graph.to_dot()
    after = [np.asarray(v) for v in f(x, y)]
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


def test_buffer_reuse_edges_are_dashed():
    def f(x, w):
        return tnp.exp(tnp.tanh(x @ w) @ w.T) * 2 + 1
    cf = nf.function(f).get_concrete_function(nf.TensorSpec([256, 256]),
                                              nf.TensorSpec([256, 256]))
    donated = sum(len(getattr(n.prim.impl, "donated", None) or {}) for n in cf.graph.nodes)
    assert donated, "large intermediates should be reused"
    text = cf.to_dot()
    assert text.count("style=dashed") == donated
    # the traced graph has no reuse
    assert "style=dashed" not in cf.to_dot(optimized=False)
