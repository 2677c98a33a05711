"""Repeated layers: results reused by fingerprint (``frontier._memo``) change nothing but
the work."""

import numpy as np
import pytest

import frontier._memo as memo
import frontier._store as store
from frontier import track
from frontier._memo import Memo, fingerprint, table_fingerprint
from frontier._table import Table
from frontier.brute_force import cost_of
from frontier.synthetic import model_graph


def _track(g, monkeypatch, memo_bytes, **kw):
    monkeypatch.setattr(memo, "MEMO_BYTES", memo_bytes)
    return track(g, **kw)


@pytest.mark.parametrize("shape", ["transformer", "residual"])
@pytest.mark.parametrize("kw", [{}, {"epsilon": 0.05}, {"method": "elimination"}],
                         ids=["exact", "eps", "elimination"])
def test_repeated_layers_reuse_results_and_give_the_same_frontier(shape, kw, monkeypatch):
    g = model_graph(shape, n=60, k=8, seed=1)
    off = _track(g, monkeypatch, 0, **kw)
    on = _track(g, monkeypatch, 2 ** 30, **kw)
    assert off.stats.memo_hits == 0
    assert on.stats.memo_hits > 0
    assert on.stats.candidates < off.stats.candidates      # the reused work was skipped
    assert on.points == off.points
    np.testing.assert_array_equal(on.radii, off.radii)
    np.testing.assert_array_equal(on.node_configs, off.node_configs)
    np.testing.assert_array_equal(on.edge_alternatives, off.edge_alternatives)
    assert on.stats.time_error_bound_s == off.stats.time_error_bound_s
    for i, point in enumerate(on.points):               # reused pointers unroll right
        assert cost_of(g, *on.choice(i)) == pytest.approx(point)


def test_shared_results_survive_collection(monkeypatch):
    """Reused back pointers are shared between records; collecting after every table
    keeps every strategy, and shared arrays are counted once."""
    g = model_graph("transformer", n=60, k=8, seed=3)
    ref = _track(g, monkeypatch, 2 ** 30, epsilon=0.1)
    monkeypatch.setattr(store, "COLLECT_MIN_BYTES", 0)
    got = _track(g, monkeypatch, 2 ** 30, epsilon=0.1)
    assert got.stats.memo_hits == ref.stats.memo_hits > 0
    assert got.points == ref.points
    np.testing.assert_array_equal(got.node_configs, ref.node_configs)
    np.testing.assert_array_equal(got.edge_alternatives, ref.edge_alternatives)


def test_fingerprints_tell_apart_what_changes_a_result():
    t = Table(np.array([1.0, 2.0]), np.array([4.0, 3.0]), np.array([0, 1, 2]))
    same = Table(t.mem.copy(), t.time.copy(), t.off.copy())
    assert table_fingerprint(t) == table_fingerprint(same)
    other = Table(t.mem, np.array([4.0, 2.5]), t.off)
    regrouped = Table(t.mem, t.time, np.array([0, 0, 2]))
    radii = Table(t.mem, t.time, t.off, np.zeros(2))
    fps = {table_fingerprint(x) for x in (t, other, regrouped, radii)}
    assert len(fps) == 4
    a = table_fingerprint(t)
    assert fingerprint("product", np.array([0, 1]), 0.5, a) != \
        fingerprint("product", np.array([1, 0]), 0.5, a)
    assert fingerprint("product", np.array([0, 1]), 0.5, a) != \
        fingerprint("product", np.array([0, 1]), 0.25, a)
    assert fingerprint("node", (2, 3), a) != fingerprint("fold", (2, 3), a)
    assert fingerprint(np.array([1], np.int32)) != fingerprint(np.array([1], np.int64))
    with pytest.raises(TypeError, match="cannot fingerprint a list"):
        fingerprint([1, 2])


def _entry(n):
    t = Table(np.zeros(n), np.zeros(n), np.array([0, n]))
    return t, (np.zeros(n, np.uint32),), 0.0


def test_memo_keeps_recent_results_within_its_bytes():
    size = 20 * 8 + 20 * 8 + 2 * 8 + 20 * 4
    m = Memo(max_bytes=2 * size)
    assert not m.put(b"big", _entry(60))           # more than the budget: not kept
    assert m.get(b"big") is None
    assert m.put(b"a", _entry(20))
    m.put(b"b", _entry(20))
    assert m.get(b"a") is not None                 # a is now the most recent
    m.put(b"c", _entry(20))                        # evicts b, the least recent
    assert m.get(b"b") is None
    assert m.get(b"a") is not None and m.get(b"c") is not None
    assert m.bytes == 2 * size


def _huge_entry(npoints):
    """An entry whose arrays report ``npoints`` points' bytes without holding them
    (broadcast views): for budgets of gigabytes."""
    zeros = np.broadcast_to(np.float64(0.0), (npoints,))
    t = Table(zeros, zeros, np.array([0, npoints]), zeros)        # with radii
    return t, (np.broadcast_to(np.uint32(0), (npoints,)),), 0.0


def test_memo_budget_is_a_share_of_available_memory(monkeypatch):
    """On a machine with 16 GiB available the budget is 4 GiB, so a 3.3 GB result (PaSE's
    Transformer's self-attention on 64 devices: over the old fixed 3 GiB) is kept."""
    monkeypatch.setattr(memo, "available_bytes", lambda: 16 * 2 ** 30, raising=False)
    m = Memo()
    assert m.max_bytes == 4 * 2 ** 30
    big = _huge_entry(118_000_000)                  # 118M * 28 bytes: 3.3 GB
    assert 3 * 2 ** 30 < memo.entry_bytes(big) < 4 * 2 ** 30
    assert m.put(b"attention", big, seconds=120.0)
    assert m.get(b"attention") is big
    monkeypatch.setattr(memo, "available_bytes", lambda: None, raising=False)
    assert Memo().max_bytes == 3 * 2 ** 30          # no /proc/meminfo: the old budget
    assert not Memo().put(b"attention", big)
    monkeypatch.setattr(memo, "MEMO_BYTES", 123)
    assert Memo().max_bytes == 123                  # a fixed budget wins


def test_available_bytes_reads_meminfo(tmp_path):
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n")
    assert memo.available_bytes(str(info)) == 20000000 * 1024
    info.write_text("MemTotal:       24000000 kB\n")
    assert memo.available_bytes(str(info)) is None
    assert memo.available_bytes(str(tmp_path / "absent")) is None


def test_memo_drops_quick_results_before_slow_ones_and_ages_them_out():
    """GreedyDual: the least credit (seconds it took times its uses, plus the aging L)
    goes first, not the least recent; a new result is always kept; a slow result no
    longer used still leaves in the end."""
    size = memo.entry_bytes(_entry(20))
    m = Memo(max_bytes=2 * size)
    assert m.put(b"slow", _entry(20), seconds=3.0)   # credit 3
    assert m.put(b"quick1", _entry(20), seconds=1.0)     # credit 1
    assert m.put(b"quick2", _entry(20), seconds=1.0)     # drops quick1 (1): L 1; credit 2
    assert m.get(b"quick1") is None
    assert m.get(b"slow") is not None                     # LRU would have dropped slow
    assert m.aging == 1.0                     # slow renewed, used twice: 1 + 3 * 2 = 7
    kept = []
    for i in range(3, 9):                                 # each new one: credit L + 1
        assert m.put(b"quick%d" % i, _entry(20), seconds=1.0)
        kept.append(b"slow" in m)                         # a look, not a reuse
    # quick3 drops quick2 (2; L 2, credit 3), ..., quick7 drops quick6 (6; L 6, credit
    # 7), quick8 finds slow and quick7 both at 7: the older, slow, goes.
    assert kept == [True, True, True, True, True, False]
    assert m.bytes == 2 * size and m.evictions == 7


def test_memo_keeps_a_result_reused_every_layer_over_quicker_ones_recomputed():
    """A slow result reused once a layer, between which quick results that took more
    seconds in all are put and dropped: its credit grows with its reuses, so it stays
    (by seconds alone it went in the third layer and every later one computed it
    again)."""
    size = memo.entry_bytes(_entry(20))
    m = Memo(max_bytes=3 * size)
    assert m.put(b"slow", _entry(20), seconds=4.0)
    for layer in range(8):
        for i in range(3):                               # 6 s of quick results a layer
            m.put(b"quick%d.%d" % (layer, i), _entry(20), seconds=2.0)
        assert m.get(b"slow") is not None, f"dropped before layer {layer + 1} used it"
    assert m.evictions > 20


def test_memo_keeps_the_slower_result_whatever_its_bytes():
    """The credit is seconds, not seconds per byte: a large result that took 3 s stays
    over a small one that took 2 s (per byte the large one would go first)."""
    big, small = memo.entry_bytes(_entry(40)), memo.entry_bytes(_entry(20))
    m = Memo(max_bytes=big + small)
    assert m.put(b"big", _entry(40), seconds=3.0)
    assert m.put(b"small", _entry(20), seconds=2.0)
    assert m.put(b"new", _entry(20), seconds=1.0)
    assert b"big" in m and b"new" in m and b"small" not in m


def test_memo_without_seconds_is_least_recently_used():
    size = memo.entry_bytes(_entry(20))
    m = Memo(max_bytes=2 * size)
    m.put(b"a", _entry(20)); m.put(b"b", _entry(20))
    m.get(b"a")
    assert m.put(b"c", _entry(20))
    assert m.get(b"b") is None and m.get(b"a") is not None


def test_memo_reports_results_dropped_unused():
    m = Memo(max_bytes=2 * memo.entry_bytes(_entry(20)))
    m.put(b"a", _entry(20)); m.put(b"b", _entry(20))
    m.get(b"a")
    m.put(b"c", _entry(20))                           # drops b, never reused
    assert m.take_unused() == [b"b"] and m.take_unused() == []
    m.put(b"d", _entry(20))                           # drops a, reused once: still shared
    assert b"a" not in m and m.take_unused() == []


def test_results_dropped_unused_give_their_pointers_back(monkeypatch):
    """A small budget drops results before and after their reuse; the records of those
    never reused are unshared (collectable) and, collecting after every table, the
    frontier and its plans are those without the memo."""
    g = model_graph("transformer", n=60, k=8, seed=3)
    ref = _track(g, monkeypatch, 0, epsilon=0.1)
    made = []

    class Spy(Memo):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)
            self.unused = 0

        def take_unused(self):
            keys = super().take_unused()
            self.unused += len(keys)
            return keys

    import frontier._eliminate as eliminate
    monkeypatch.setattr(eliminate, "Memo", Spy)
    monkeypatch.setattr(store, "COLLECT_MIN_BYTES", 0)
    got = _track(g, monkeypatch, 2 ** 15, epsilon=0.1)
    assert got.stats.memo_hits > 0 and made[-1].unused > 0
    assert made[-1].evictions > made[-1].unused        # some were dropped after reuse
    assert got.points == ref.points
    np.testing.assert_array_equal(got.radii, ref.radii)
    np.testing.assert_array_equal(got.node_configs, ref.node_configs)
    np.testing.assert_array_equal(got.edge_alternatives, ref.edge_alternatives)


def test_collect_keeps_shared_pointers_whole_and_uncopied():
    """Two records sharing one pointer array (a result reused by ``_memo``, which still
    holds it), whose parents are leaves (nothing to free there): collecting leaves both
    pointing at that array, and every live point unrolls as before."""
    from frontier._store import Store
    st = Store(num_nodes=2, num_edges=0)
    leaf = lambda v: st.leaf_node(v, Table(np.arange(4.0), -np.arange(4.0),  # noqa: E731
                                           np.arange(5)))
    a, b = leaf(0), leaf(1)
    pick = np.array([3, 1, 2], dtype=np.uint8)
    three = Table(np.zeros(3), np.zeros(3), np.array([0, 3]))
    first = st.derived(three, (a,), (pick,), b"k", shared=True)
    again = st.derived(three, (b,), (pick,), b"k", shared=True)
    top = st.derived(Table(np.zeros(1), np.zeros(1), np.array([0, 1])), (first, again),
                     (np.array([2]), np.array([0])), b"top")
    before = st.unroll(top, np.array([0]))
    for t in (a, b, first, again):
        st.drop(t)
    st.pinned = lambda: {id(pick)}
    st.collect()
    assert st.records[first].bp[0] is pick and st.records[again].bp[0] is pick
    assert st.npoints[first] == st.npoints[again] == 3
    np.testing.assert_array_equal(st.unroll(top, np.array([0]))[0], before[0])
    np.testing.assert_array_equal(before[0], [[2, 3]])


def _two_reused_layers(pinned: bool):
    """Two layers, each a private 2,500-point product of two 50-configuration nodes,
    then a 2,000-point result of it that the second layer took from ``_memo`` (one
    pointer array, shared by both records and, when ``pinned``, by the memo), and a
    live table that reaches three points of each layer."""
    from frontier._store import Store
    st = Store(num_nodes=4, num_edges=0)
    leaf = lambda v: st.leaf_node(v, Table(np.arange(50.0), -np.arange(50.0),  # noqa: E731
                                           np.arange(51)))
    rng = np.random.default_rng(0)
    pick = rng.permutation(2500)[:2000].astype(np.uint16)
    ia, ib = np.divmod(np.arange(2500), 50)
    grid = Table(np.zeros(2500), np.zeros(2500), np.array([0, 2500]))
    kept = Table(np.zeros(2000), np.zeros(2000), np.array([0, 2000]))
    layers = []
    for v in (0, 2):
        a, b = leaf(v), leaf(v + 1)
        prod = st.derived(grid, (a, b), (ia, ib), b"prod")
        # The first computes it (and ``Work.remembered`` marks it shared once the memo
        # keeps it); the second reuses it.
        layers.append(st.derived(kept, (prod,), (pick,), b"kept", shared=bool(layers)))
        st.records[layers[-1]].shared = True
        for t in (a, b, prod):
            st.drop(t)
    if pinned:
        st.pinned = lambda: {id(pick)}
    top = st.derived(Table(np.zeros(3), np.zeros(3), np.array([0, 3])), tuple(layers),
                     (np.array([5, 1999, 700]), np.array([0, 3, 1234])), b"top")
    for t in layers:
        st.drop(t)
    return st, top, layers, pick


@pytest.mark.parametrize("pinned", [True, False], ids=["memo-holds-it", "records-only"])
def test_collect_renumbers_shared_pointers_when_it_pays(pinned):
    """Dead records that share a reused result's pointers, whose private parents hold
    far more points than the live table reaches: collecting renumbers them into private
    copies (the shared array untouched), frees their parents' points, and every live
    point unrolls as before. Before, the shared records and all their parents' points
    were kept whole (``bytes`` unchanged by the collection)."""
    st, top, layers, pick = _two_reused_layers(pinned)
    original = pick.copy()
    before = st.unroll(top, np.arange(3))
    held = st.bytes
    assert held == st.pointer_bytes() == 2 * 2 * 2500 + 2 * 2000 + 2 * 3 * 2
    st.collect()
    cfg, alt = st.unroll(top, np.arange(3))
    np.testing.assert_array_equal(cfg, before[0])
    np.testing.assert_array_equal(alt, before[1])
    assert (cfg >= 0).all()
    assert st.bytes == st.pointer_bytes() < held // 50
    np.testing.assert_array_equal(pick, original)           # never changed in place
    for t in layers:
        rec = st.records[t]
        assert not rec.shared and rec.bp[0] is not pick and st.npoints[t] == 3
        assert st.npoints[rec.parents[0]] == 3              # the product's points freed
    st.collect()                                            # again: the same plans
    np.testing.assert_array_equal(st.unroll(top, np.arange(3))[0], before[0])


def test_collect_keeps_a_shared_record_whole_when_copying_does_not_pay():
    """A live table that reaches almost every point of a result the memo still holds,
    whose parent frees little: the copy would cost more than it frees, so the record
    keeps the shared array (and its numbers) and the unroll is unchanged."""
    from frontier._store import Store
    st = Store(num_nodes=2, num_edges=0)
    a = st.leaf_node(0, Table(np.arange(40.0), -np.arange(40.0), np.arange(41)))
    b = st.leaf_node(1, Table(np.arange(40.0), -np.arange(40.0), np.arange(41)))
    ia, ib = np.divmod(np.arange(1600), 40)
    prod = st.derived(Table(np.zeros(1600), np.zeros(1600), np.array([0, 1600])), (a, b),
                      (ia, ib), b"prod")
    pick = np.arange(1500, dtype=np.uint16)
    kept = st.derived(Table(np.zeros(1500), np.zeros(1500), np.array([0, 1500])), (prod,),
                      (pick,), b"kept", shared=True)
    st.pinned = lambda: {id(pick)}
    top = st.derived(Table(np.zeros(1400), np.zeros(1400), np.array([0, 1400])), (kept,),
                     (np.arange(1400),), b"top")
    for t in (a, b, prod, kept):
        st.drop(t)
    before = st.unroll(top, np.arange(1400))
    st.collect()
    assert st.records[kept].shared and st.records[kept].bp[0] is pick
    assert st.npoints[kept] == 1500 and st.npoints[prod] == 1600
    np.testing.assert_array_equal(st.unroll(top, np.arange(1400))[0], before[0])
    assert st.bytes == st.pointer_bytes()


def test_reused_result_counts_again_once_no_record_holds_it():
    """A result whose records were all renumbered into private copies is held by the
    memo alone; a later layer that reuses it brings its pointers back into ``bytes``."""
    st, top, layers, pick = _two_reused_layers(pinned=True)
    st.collect()
    assert all(b is not pick for rec in st.records for b in rec.bp)
    assert st.bytes == st.pointer_bytes()
    prod = st.derived(Table(np.zeros(2500), np.zeros(2500), np.array([0, 2500])),
                      (top,), (np.zeros(2500, dtype=np.uint8),), b"prod")
    again = st.derived(Table(np.zeros(2000), np.zeros(2000), np.array([0, 2000])),
                       (prod,), (pick,), b"kept", shared=True)
    assert st.records[again].bp[0] is pick
    assert st.bytes == st.pointer_bytes()


def test_collect_frees_a_result_the_memo_dropped_after_reuse():
    """A result reused by a second layer, then dropped by the memo: its pointer array
    is held by both layers' records alone. Each needs three of its 2,000 points, so
    both are renumbered into private copies and the array leaves the Store (before, it
    stayed whole to the end, with every later layer's copy of the same story)."""
    from frontier._store import Store
    st = Store(num_nodes=2, num_edges=0)
    leaves = [st.leaf_node(v, Table(np.arange(2500.0), -np.arange(2500.0),
                                    np.arange(2501))) for v in (0, 1)]
    pick = np.random.default_rng(1).permutation(2500)[:2000].astype(np.uint16)
    kept = Table(np.zeros(2000), np.zeros(2000), np.array([0, 2000]))
    layers = [st.derived(kept, (leaves[0],), (pick,), b"k")]
    st.records[layers[0]].shared = True
    layers.append(st.derived(kept, (leaves[1],), (pick,), b"k", shared=True))
    top = st.derived(Table(np.zeros(3), np.zeros(3), np.array([0, 3])), tuple(layers),
                     (np.array([5, 1999, 700]), np.array([0, 3, 1234])), b"top")
    for t in (*leaves, *layers):
        st.drop(t)
    before = st.unroll(top, np.arange(3))
    held = st.bytes
    st.collect()
    assert st.bytes == st.pointer_bytes() < held - 3900
    assert all(b is not pick for rec in st.records for b in rec.bp)
    np.testing.assert_array_equal(st.unroll(top, np.arange(3))[0], before[0])
    np.testing.assert_array_equal(before[0][:, 0], pick[[5, 1999, 700]])


def test_store_tells_which_reductions_can_be_asked_for_again():
    """Two layers with the same leaves (the same fingerprints): a reduction of layer 0's
    leaves can come again while layer 1's are live, or while a live table has the
    fingerprint of its inputs; not once nothing live can make them."""
    from frontier._store import Store
    st = Store(num_nodes=4, num_edges=0)
    leaf = lambda v: st.leaf_node(v, Table(np.arange(3.0) + v, -np.arange(3.0),  # noqa: E731
                                           np.arange(4)))
    a0, b0, a1, b1 = leaf(0), leaf(1), leaf(0), leaf(1)
    assert st.fp[a0] == st.fp[a1] != st.fp[b0]
    one = Table(np.zeros(1), np.zeros(1), np.array([0, 1]))
    ix = (np.zeros(1, np.uint8),)
    p0 = st.derived(one, (a0, b0), ix * 2, b"prod")
    q0 = st.derived(one, (p0,), ix, b"fold")
    for t in (a0, b0, p0, q0):
        st.drop(t)
    st.drop(a0)                                  # twice: nothing more is counted off
    assert st.can_recur(b"prod") and st.can_recur(b"fold")    # from layer 1's leaves
    assert st.obtainable(b"prod") and not st.can_recur(b"other")
    p1 = st.derived(one, (a1, b1), ix * 2, b"prod")
    st.drop(a1)
    assert not st.can_recur(b"prod")             # b0's twin b1 is live, a's are gone
    assert st.can_recur(b"fold")                 # p1 has the fingerprint it needs
    st.drop(p1)
    cache: dict = {}
    assert not st.can_recur(b"fold", cache) and not st.can_recur(b"prod", cache)
    assert st.obtainable(st.fp[b1]) and not st.obtainable(st.fp[a0])


def test_deep_derivations_are_checked_without_recursion():
    """LDP folds chains thousands of tables deep; ``obtainable`` walks them by a stack."""
    from frontier._store import Store
    st = Store(num_nodes=1, num_edges=0)
    t = st.leaf_node(0, Table(np.zeros(1), np.zeros(1), np.array([0, 1])))
    one = Table(np.zeros(1), np.zeros(1), np.array([0, 1]))
    for i in range(5000):
        nxt = st.derived(one, (t,), (np.zeros(1, np.uint8),), b"fold%d" % i)
        st.drop(t)
        t = nxt
    st.drop(t)
    assert not st.can_recur(b"fold4999")
    st.leaf_node(0, Table(np.zeros(1), np.zeros(1), np.array([0, 1])))  # the leaf again
    assert st.can_recur(b"fold4999")


def test_memo_forgets_what_cannot_come_again():
    size = memo.entry_bytes(_entry(20))
    m = Memo(max_bytes=10 * size)
    for key in (b"a", b"b", b"c"):
        m.put(key, _entry(20), seconds=1.0)
    m.put(b"small", _entry(2), seconds=1.0)
    m.get(b"b")
    aging = m.aging
    dead = {b"a", b"b", b"small"}
    assert m.forget(lambda k: k not in dead, min_bytes=size) == 2 * size
    assert b"a" not in m and b"b" not in m and b"c" in m
    assert b"small" in m                         # below min_bytes: not even asked
    assert m.forgotten == 2 and m.evictions == 0 and m.aging == aging
    assert m.take_unused() == [b"a"]             # b was reused: its pointers stay shared
    assert m.bytes == size + memo.entry_bytes(_entry(2))


@pytest.mark.parametrize("shape", ["transformer", "residual"])
@pytest.mark.parametrize("kw", [{}, {"epsilon": 0.05}, {"method": "elimination"}],
                         ids=["exact", "eps", "elimination"])
def test_results_that_cannot_come_again_are_not_remembered(shape, kw, monkeypatch):
    """With room for everything, forgetting changes neither the frontier nor the hits
    (a forgotten result was never to be asked for) and the memo ends empty; without
    forgetting it ends holding every result."""
    import frontier._eliminate as eliminate
    made = []

    class Spy(Memo):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(eliminate, "Memo", Spy)
    g = model_graph(shape, n=60, k=8, seed=1)
    monkeypatch.setattr(eliminate, "FORGET_MIN_BYTES", None)
    ref = _track(g, monkeypatch, 2 ** 30, **kw)
    kept = made[-1].bytes
    monkeypatch.setattr(eliminate, "FORGET_MIN_BYTES", 0)
    got = _track(g, monkeypatch, 2 ** 30, **kw)
    assert got.stats.memo_hits == ref.stats.memo_hits > 0
    assert kept > 0 and made[-1].bytes == 0 and made[-1].forgotten > 0
    assert got.points == ref.points
    np.testing.assert_array_equal(got.radii, ref.radii)
    np.testing.assert_array_equal(got.node_configs, ref.node_configs)
    np.testing.assert_array_equal(got.edge_alternatives, ref.edge_alternatives)


@pytest.mark.parametrize("shape", ["transformer", "residual"])
def test_a_tight_memo_keeps_what_can_come_again(shape, monkeypatch):
    """A budget smaller than one layer's results: results that cannot come again no
    longer push reusable ones out, so more are reused, and the frontier is the same.
    (A clock that ticks once a call makes GreedyDual's seconds, and so the runs,
    repeatable.)"""
    import itertools
    import types

    import frontier._eliminate as eliminate
    ticks = itertools.count()
    monkeypatch.setattr(eliminate, "time",
                        types.SimpleNamespace(perf_counter=lambda: float(next(ticks))))
    g = model_graph(shape, n=60, k=8, seed=3)
    monkeypatch.setattr(eliminate, "FORGET_MIN_BYTES", None)
    ref = _track(g, monkeypatch, 2 ** 15, epsilon=0.1)
    monkeypatch.setattr(eliminate, "FORGET_MIN_BYTES", 0)
    got = _track(g, monkeypatch, 2 ** 15, epsilon=0.1)
    assert got.stats.memo_hits > ref.stats.memo_hits
    assert got.stats.candidates <= ref.stats.candidates
    assert got.points == ref.points
    np.testing.assert_array_equal(got.radii, ref.radii)
    np.testing.assert_array_equal(got.node_configs, ref.node_configs)
