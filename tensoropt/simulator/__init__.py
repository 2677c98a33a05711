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

    # Plans: a saved plan, or a whole frontier checked in Frontier-Tracking's order.
    result = simulate_plan(graph, plan, cluster, "analytical", SimOptions())
    check = check_frontier(search_result, cluster, memory_limit=limit)
    check.kendall_tau_time, check.dominated, check.regret, check.to_dict()

    # Many related graphs (e.g. the plans of a frontier): versioned fragments + delta.
    sim = DeltaSimulator(keys, build, resources)       # build(key, version) -> Fragment
    timeline = sim.simulate(choice_vector)

Modules: ``graph`` (TaskGraph, Fragment), ``engine`` (the event loop, Timeline),
``delta`` (DeltaSimulator), ``memory`` (liveness), ``result`` (SimResult, critical
path), ``trace`` (Chrome trace), ``order_stats`` (Kendall tau-b, inversions,
dominance), ``synthetic`` (generated graphs), ``bench`` (full vs delta);
``plan_options`` (SimOptions), ``plan_tasks`` (a plan's fragments: tasks, order,
buffers), ``step_buffers`` (what TensorFlow's lowering of a conversion step holds), ``plan_sim`` (PlanSimulator, simulate_plan), ``check`` (check_frontier).
The plan modules read ``tensoropt``'s graph, configurations, cost model and collective
schedule, none of which imports TensorFlow.

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
from tensoropt.simulator.plan_options import FIT_CHECK, SimOptions
from tensoropt.simulator.plan_sim import PlanSimulator, simulate_plan
from tensoropt.simulator.check import CheckRow, FrontierCheck, check_frontier

__all__ = [
    "TaskGraph", "Fragment", "CompiledGraph", "PS_PER_S",
    "simulate", "Timeline", "SimStats",
    "DeltaSimulator",
    "memory_timelines", "peak_memory_bytes", "MemoryTimeline", "LiveBuffer",
    "summarize", "critical_path", "SimResult", "RankSummary", "CriticalStep",
    "chrome_trace",
    "kendall_tau_b", "adjacent_inversions", "dominated",
    "SimOptions", "FIT_CHECK", "PlanSimulator", "simulate_plan",
    "check_frontier", "FrontierCheck", "CheckRow",
]
