"""The simulator: FlexFlow-style task graphs, full and delta simulation, memory by
liveness, Chrome traces, and order statistics for checking a frontier. Numpy only.

Usage::

    from tensoropt.simulator import TaskGraph, simulate, summarize, chrome_trace

    g = TaskGraph(resources=["compute:0", "chain:0", "nic:m0"])
    g.add_task("fc/fwd", "compute", ["compute:0"], 2e-3, op="fc")
    g.add_task("fc/bwd", "compute", ["compute:0"], 4e-3, op="fc")
    g.add_task("fc/grad_allreduce", "collective", ["chain:0", "nic:m0"], 3e-3, bytes=1 << 22)
    g.add_dependency("fc/fwd", "fc/bwd")
    g.add_dependency("fc/bwd", "fc/grad_allreduce")
    g.add_buffer("fc:act", 1 << 20, "activation", alloc="fc/fwd", free_after=["fc/bwd"])
    result = summarize(simulate(g))
    result.makespan_s, result.exposed_network_s, result.peak_memory_bytes
    chrome_trace(result, "step.json")

    # Many related graphs (e.g. the plans of a frontier): versioned fragments + delta.
    sim = DeltaSimulator(keys, build, resources)       # build(key, version) -> Fragment
    timeline = sim.simulate(choice_vector)

Modules: ``graph`` (TaskGraph, Fragment), ``engine`` (the event loop, Timeline),
``delta`` (DeltaSimulator), ``memory`` (liveness), ``result`` (SimResult, critical
path), ``trace`` (Chrome trace), ``order_stats`` (Kendall tau-b, inversions,
dominance), ``synthetic`` (generated graphs), ``bench`` (full vs delta).

This package never imports TensorFlow or horovod.
"""

from tensoropt.simulator.delta import DeltaSimulator
from tensoropt.simulator.engine import SimStats, Timeline, simulate
from tensoropt.simulator.graph import PS_PER_S, CompiledGraph, Fragment, TaskGraph
from tensoropt.simulator.memory import (LiveBuffer, MemoryTimeline, memory_timelines,
                                        peak_memory_bytes)
from tensoropt.simulator.order_stats import adjacent_inversions, dominated, kendall_tau_b
from tensoropt.simulator.result import (CriticalStep, RankSummary, SimResult, critical_path,
                                        summarize)
from tensoropt.simulator.trace import chrome_trace

__all__ = [
    "TaskGraph", "Fragment", "CompiledGraph", "PS_PER_S",
    "simulate", "Timeline", "SimStats",
    "DeltaSimulator",
    "memory_timelines", "peak_memory_bytes", "MemoryTimeline", "LiveBuffer",
    "summarize", "critical_path", "SimResult", "RankSummary", "CriticalStep",
    "chrome_trace",
    "kendall_tau_b", "adjacent_inversions", "dominated",
]
