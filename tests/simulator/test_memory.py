"""Memory by liveness, on graphs worked out by hand."""

import numpy as np
import pytest

from tensoropt.simulator import (LiveBuffer, TaskGraph, memory_timelines, peak_memory_bytes,
                                 simulate)

US = 1e-6


def _chain(sizes, keep_all: bool):
    g = TaskGraph(["compute:0"])
    for i, size in enumerate(sizes):
        g.add_task(f"op{i}", "compute", "compute:0", (i + 1) * US)
        if i:
            g.add_dependency(f"op{i - 1}", f"op{i}")
    for i, size in enumerate(sizes):
        frees = [] if keep_all else [f"op{min(i + 1, len(sizes) - 1)}"]
        g.add_buffer(f"out{i}", size, "activation", alloc=f"op{i}", free_after=frees)
    g.add_buffer("w", 1000, "parameter")
    return g


def test_chain_keeping_every_output_peaks_at_the_sum():
    sizes = [300, 50, 700, 20, 10]
    (m,) = memory_timelines(simulate(_chain(sizes, keep_all=True)))
    assert m.resident_bytes == 1000
    assert m.peak_bytes == 1000 + sum(sizes)
    assert m.peak_time_s == pytest.approx(sum(range(1, 5)) * US)   # when op4 starts
    assert {b.name for b in m.live_at_peak} == {"w"} | {f"out{i}" for i in range(5)}
    assert m.live_at_peak[0].name == "w" and m.live_at_peak[1] .name == "out2"


def test_chain_freeing_after_the_next_op_peaks_at_the_largest_neighbours():
    sizes = [300, 50, 700, 20, 10]
    t = simulate(_chain(sizes, keep_all=False))
    (m,) = memory_timelines(t)
    # out_i lives from op_i's start to op_{i+1}'s end: two neighbours coexist.
    assert m.peak_bytes == 1000 + max(a + b for a, b in zip(sizes, sizes[1:]))
    assert [(b.name, b.size_bytes, b.why) for b in m.live_at_peak] == \
        [("w", 1000, "parameter"), ("out2", 700, "activation"), ("out1", 50, "activation")]
    assert m.peak_time_s == pytest.approx(t.start_s[t.graph.index["op2"]])
    assert peak_memory_bytes(t) == m.peak_bytes


def test_a_buffer_freed_at_an_instant_does_not_meet_one_allocated_then():
    g = TaskGraph(["compute:0"])
    g.add_task("a", "compute", "compute:0", 2 * US)
    g.add_task("b", "compute", "compute:0", 2 * US)
    g.add_dependency("a", "b")
    g.add_buffer("x", 100, "activation", alloc="a", free_after=["a"])
    g.add_buffer("y", 100, "activation", alloc="b", free_after=["b"])
    (m,) = memory_timelines(simulate(g))
    assert m.peak_bytes == 100
    assert m.peak_time_s == 0


def test_a_zero_duration_task_transient_buffer_counts():
    g = TaskGraph(["compute:0"])
    g.add_task("a", "compute", "compute:0", 2 * US)
    g.add_task("flash", "compute", "compute:0", 0.0)
    g.add_dependency("a", "flash")
    g.add_buffer("big", 5000, "transient", alloc="flash", free_after=["flash"])
    (m,) = memory_timelines(simulate(g))
    assert m.peak_bytes == 5000
    assert m.peak_time_s == pytest.approx(2 * US)
    assert m.live_at_peak[0].name == "big"
    assert m.live_bytes.max() == 5000


def test_a_buffer_lives_until_the_last_of_its_users_ends():
    g = TaskGraph(["compute:0", "compute:1"])
    g.add_task("p", "compute", "compute:0", 1 * US)
    g.add_task("u1", "compute", "compute:0", 1 * US)
    g.add_task("u2", "compute", "compute:1", 5 * US)
    g.add_task("later", "compute", "compute:0", 1 * US)
    for a, b in (("p", "u1"), ("p", "u2"), ("u1", "later")):
        g.add_dependency(a, b)
    g.add_buffer("act", 10, "activation", alloc="p", free_after=["u1", "u2"])
    g.add_buffer("tmp", 7, "transient", alloc="later", free_after=["later"])
    (m,) = memory_timelines(simulate(g))
    assert m.peak_bytes == 17                      # act lives to 6 us, tmp from 2 us
    i = np.searchsorted(m.times_s, 6 * US + 1e-12) - 1
    assert m.live_bytes[i] == 0


def test_a_buffer_lives_at_least_while_its_producer_runs():
    g = TaskGraph(["compute:0"])
    g.add_task("early", "compute", "compute:0", 1 * US)
    g.add_task("long", "compute", "compute:0", 10 * US)
    g.add_task("tail", "compute", "compute:0", 1 * US)
    g.add_buffer("out", 50, "activation", alloc="long", free_after=["early"])
    g.add_buffer("t", 7, "transient", alloc="tail", free_after=["tail"])
    (m,) = memory_timelines(simulate(g))
    assert m.peak_bytes == 50                  # out lives 1-11 us, t from 11 us: apart
    assert m.live_at_peak == (LiveBuffer("out", 50, "activation"),)


def test_memory_is_per_rank():
    g = TaskGraph(["compute:0", "compute:1"])
    g.add_task("a", "compute", "compute:0", US, rank=0)
    g.add_task("b", "compute", "compute:1", US, rank=1)
    g.add_buffer("xa", 10, "activation", alloc="a")
    g.add_buffer("xb", 30, "activation", alloc="b")
    g.add_buffer("w1", 5, "parameter", rank=1)
    ms = memory_timelines(simulate(g))
    assert [(m.rank, m.peak_bytes) for m in ms] == [(0, 10), (1, 35)]
    assert peak_memory_bytes(simulate(g)) == 35


def test_bad_buffers_are_named():
    g = TaskGraph(["compute:0"])
    g.add_task("a", "compute", "compute:0", US)
    with pytest.raises(ValueError, match="unknown alloc task 'zz'"):
        g.add_buffer("x", 1, "activation", alloc="zz")
    with pytest.raises(ValueError, match="unknown task 'zz'"):
        g.add_buffer("x", 1, "activation", alloc="a", free_after=["zz"])
    with pytest.raises(ValueError, match="resident.*give the task that allocates it"):
        g.add_buffer("x", 1, "parameter", free_after=["a"])
    with pytest.raises(ValueError, match="size_bytes"):
        g.add_buffer("x", -1, "activation", alloc="a")
    g.add_buffer("x", 1, "activation", alloc="a")
    with pytest.raises(ValueError, match="'x'"):
        g.add_buffer("x", 1, "activation", alloc="a")


@pytest.mark.parametrize("held", [False, True])
def test_a_collective_held_to_the_next_frees_what_it_touches_when_the_next_collective_ends(held):
    # horovod's thread drops a collective's tensors before it performs the next one: with
    # ``held_to_next`` (the fit check's bound) its input and result, and what waits for
    # it through a join, live until the rank's next collective ends; the last one's, to
    # the step's end
    g = TaskGraph(["compute:0", "chain:0"])
    mark = {"held_to_next": True} if held else {}
    g.add_task("ar1", "collective", "chain:0", 2 * US, **mark)
    g.add_task("work", "compute", "compute:0", 5 * US)
    g.add_task("ar2", "collective", "chain:0", 3 * US, **mark)
    g.add_task("tail", "compute", "compute:0", 4 * US)
    g.add_task("read", "join", [], 0.0)
    g.add_dependency("ar1", "work")
    g.add_dependency("ar1", "read")
    g.add_dependency("work", "ar2")
    g.add_dependency("ar2", "tail")
    g.add_buffer("ar1:in", 100, "activation", alloc="ar1", free_after=["ar1"])
    g.add_buffer("ar1:out", 200, "activation", alloc="ar1", free_after=["read"])
    g.add_buffer("ar2:out", 400, "activation", alloc="ar2", free_after=["ar2"])
    g.add_buffer("tail:out", 800, "activation", alloc="tail", free_after=["tail"])
    (m,) = memory_timelines(simulate(g))
    # ar1 0-2 us, work 2-7, ar2 7-10, tail 10-14
    if held:
        assert m.peak_bytes == 400 + 800                     # ar2's result, to the step's end
        live = dict(zip(m.times_s.round(12).tolist(), m.live_bytes.tolist()))
        assert live[round(7 * US, 12)] == 100 + 200 + 400     # ar1's, until ar2 ends
        assert live[round(10 * US, 12)] == 400 + 800
    else:
        assert m.peak_bytes == 800
        assert max(m.live_bytes[m.times_s < 10 * US - 1e-12]) == 400
