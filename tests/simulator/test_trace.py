"""The Chrome trace loads, has one event per task at the timeline's times, and its
memory counter peaks at the simulated peak."""

import json

import pytest

from tensoropt.simulator import (TaskGraph, chrome_trace, memory_timelines, simulate,
                                 summarize)

US = 1e-6


def _graph():
    g = TaskGraph(["compute:0", "compute:1", "chain:0", "nic:m0"])
    for r in (0, 1):
        g.add_task(f"r{r}/fwd", "compute", f"compute:{r}", 3 * US, rank=r, op="fc",
                   configuration="[2] S0", step="forward", additive_cost_s=3 * US)
        g.add_task(f"r{r}/join", "join", [], 0.0, rank=r)
        g.add_task(f"r{r}/wait", "delay", [], 2 * US, rank=r)
        g.add_task(f"r{r}/wait2", "delay", [], 2 * US, rank=r)     # overlaps wait
        g.add_dependency(f"r{r}/fwd", f"r{r}/join")
    g.add_task("ar", "collective", ["chain:0", "nic:m0"], 4 * US, rank=0, bytes=1 << 20)
    g.add_buffer("r0/act", 100, "activation", alloc="r0/fwd", free_after=["ar"])
    g.add_buffer("r1/act", 200, "activation", alloc="r1/fwd", free_after=["r1/join"])
    g.add_dependency("r0/join", "ar")
    g.add_dependency("r1/join", "ar")
    g.add_buffer("ar:buf", 1000, "transient", alloc="ar", free_after=["ar"])
    return g


def test_trace_has_one_event_per_task_at_the_timeline_times(tmp_path):
    t = simulate(_graph())
    path = tmp_path / "trace.json"
    chrome_trace(summarize(t), path)
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    xs = {e["name"]: e for e in events if e["ph"] == "X"}
    assert len([e for e in events if e["ph"] == "X"]) == t.graph.num_tasks == len(xs)
    for i, name in enumerate(t.graph.names):
        assert xs[name]["ts"] == pytest.approx(t.start_ps[i] / 1e6)
        assert xs[name]["dur"] == pytest.approx((t.end_ps[i] - t.start_ps[i]) / 1e6)
        assert xs[name]["pid"] == int(t.graph.rank[i])
    assert xs["r0/fwd"]["args"]["configuration"] == "[2] S0"
    assert xs["r0/fwd"]["args"]["additive_cost_s"] == pytest.approx(3 * US)
    assert xs["ar"]["args"]["bytes"] == 1 << 20 and xs["ar"]["cat"] == "collective"
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert processes == {0: "rank 0", 1: "rank 1"}
    threads = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "thread_name"}
    assert {(0, "compute:0"), (0, "chain:0"), (1, "compute:1")} <= threads
    # Events on one thread never overlap (the no-resource tasks get separate lanes).
    by_thread = {}
    for e in xs.values():
        by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))
    assert xs["r0/wait"]["tid"] != xs["r0/wait2"]["tid"]
    # The memory counter's maximum is each rank's peak.
    for m in memory_timelines(t):
        values = [e["args"]["bytes"] for e in events if e["ph"] == "C" and e["pid"] == m.rank]
        assert max(values) == m.peak_bytes
    assert [m.peak_bytes for m in memory_timelines(t)] == [1100, 200]


def test_an_unwritable_trace_path_is_named(tmp_path):
    t = simulate(_graph())
    for bad in (tmp_path / "no" / "such" / "dir" / "t.json", tmp_path):
        with pytest.raises(ValueError, match=str(bad).replace("\\", "\\\\")):
            chrome_trace(t, bad)
    assert not (tmp_path / "no").exists()
