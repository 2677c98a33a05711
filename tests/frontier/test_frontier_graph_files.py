"""CostGraph.save / load, flat edges, and the hard synthetic graphs."""

import numpy as np
import pytest

from frontier import CostGraph, track
from frontier.synthetic import hard_graph, model_graph, random_graph


def test_save_load_keeps_costs_names_and_sharing(tmp_path):
    rng = np.random.default_rng(2)
    g = random_graph(rng, "multi")
    frozen = rng.random((g.num_configs(0), g.num_configs(2), 2, 2))
    frozen.flags.writeable = False
    g.add_edge(0, 2, frozen)
    g.add_edge(0, 2, frozen)
    path = str(tmp_path / "g.npz")
    g.save(path)
    h = CostGraph.load(path)
    assert [h.node_name(v) for v in range(h.num_nodes)] == [
        g.node_name(v) for v in range(g.num_nodes)]
    for v in range(g.num_nodes):
        assert np.array_equal(h.node_costs(v), g.node_costs(v))
    for e in range(g.num_edges):
        a, b = g.edge(e), h.edge(e)
        assert (a.src, a.dst, a.shape) == (b.src, b.dst, b.shape)
        assert all(np.array_equal(x, y) for x, y in ((a.mem, b.mem), (a.time, b.time),
                                                   (a.off, b.off)))
    last = h.num_edges - 1
    assert np.shares_memory(h.edge(last).mem, h.edge(last - 1).mem)
    assert track(h).points == track(g).points


def test_load_names_a_bad_file(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a graph")
    with pytest.raises(ValueError, match="not a cost graph written by CostGraph.save"):
        CostGraph.load(str(bad))
    np.savez(tmp_path / "partial.npz", names=np.array(["a"]))
    with pytest.raises(ValueError, match="missing arrays .*edge_ends"):
        CostGraph.load(str(tmp_path / "partial.npz"))
    g = model_graph("chain", 3, 2)
    g.save(str(tmp_path / "g.npz"))
    with np.load(tmp_path / "g.npz") as f:
        data = dict(f)
    data["table_off"] = data["table_off"] + 1      # offsets no longer start at 0
    np.savez(tmp_path / "damaged.npz", **data)
    with pytest.raises(ValueError, match="damaged.npz: edge 0 .*flat costs need off"):
        CostGraph.load(str(tmp_path / "damaged.npz"))


def test_flat_edge_equals_the_list_form():
    lists, flat = CostGraph(), CostGraph()
    for g in (lists, flat):
        g.add_node("a", [(1.0, 4.0), (2.0, 1.0)])
        g.add_node("b", [(1.0, 2.0)])
    lists.add_edge(0, 1, [[[(0.0, 1.0), (1.0, 0.5)]], [[(0.5, 0.5)]]])
    flat.add_edge_flat(0, 1, [0.0, 1.0, 0.5], [1.0, 0.5, 0.5], [0, 2, 3])
    assert track(flat).points == track(lists).points
    assert track(flat).choice(0) == track(lists).choice(0)
    with pytest.raises(ValueError, match="flat costs need off of length 3"):
        flat.add_edge_flat(0, 1, [0.0], [1.0], [0, 1])
    with pytest.raises(ValueError, match="flat costs need off"):
        flat.add_edge_flat(0, 1, [0.0, 1.0], [1.0, 1.0], [0, 2, 2])   # pair 1 is empty
    with pytest.raises(ValueError, match="NaN or infinite"):
        flat.add_edge_flat(0, 1, [0.0, np.nan], [1.0, 1.0], [0, 1, 2])
    with pytest.raises(ValueError, match="unknown destination node 5"):
        flat.add_edge_flat(0, 5, [0.0, 1.0], [1.0, 1.0], [0, 1, 2])
    assert flat.num_edges == 1


def test_hard_graph_shapes_and_reuse_share():
    g = hard_graph("shortcut", 13, 6, seed=1, reuse_fraction=0.5)
    ends = sorted((g.edge(e).src, g.edge(e).dst) for e in range(g.num_edges))
    assert ends == sorted([(v, v + 1) for v in range(12)] + [(0, 4), (4, 8), (8, 12)])
    counts = np.concatenate([np.diff(g.edge(e).off) for e in range(g.num_edges)])
    assert set(counts) == {1, 2} and 0.35 < np.mean(counts == 2) < 0.65
    for e in range(g.num_edges):          # the reuse alternative: more memory, less time
        ec = g.edge(e)
        two = np.flatnonzero(np.diff(ec.off) == 2)
        first = ec.off[two]
        assert np.all(ec.mem[first + 1] >= ec.mem[first])
        assert np.all(ec.time[first + 1] <= ec.time[first])
    chain = hard_graph("chain", 5, 3, reuse_fraction=0.0)
    assert chain.num_edges == 4 and all(np.all(np.diff(chain.edge(e).off) == 1)
                                        for e in range(4))
    with pytest.raises(ValueError, match="unknown hard shape 'ring'"):
        hard_graph("ring", 5, 3)
    with pytest.raises(ValueError, match="reuse_fraction in"):
        hard_graph("chain", 5, 3, reuse_fraction=2.0)
