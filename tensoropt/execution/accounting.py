"""How many collectives of each kind a plan issues per training step, from the plan.

The execution builder counts what it builds (``CollectiveOps.counts``); a test asserts
the two agree, the way DTensor's CommDebugMode checks a sharding's communication.

Rules, per step:
- each edge's forward steps; its backward steps when a gradient flows back through it;
  for ``keep_producer`` the forward steps once more (rebuilt in the consumer's backward,
  when that runs);
- for each op whose saved output is dropped (``keep_consumer``) the rebuild steps of one
  of its consumers' copies, when its input's gradient flows (else backward never runs it);
- each op: one all-reduce per output per mesh axis that splits a reduction dim, and one
  per input whose gradient is partial per mesh axis that splits a dim the input lacks;
- a fused LSTM with its hidden dim split: an all-gather per time step after the first,
  and an all-reduce of its gradient; when the LSTM rebuilds an input (keep_producer) it
  is re-run in backward, all-gathers included.

A reduce-scatter step runs as an all-reduce and a slice; a slice is local.

Usage::

    expected_collectives(graph, plan)     # {'allgather': 4, 'allreduce': 6, ...}
"""

from __future__ import annotations

from collections import Counter

from tensoropt.costs import requires_grad

__all__ = ["expected_collectives"]

_ISSUED_AS = {"slice": None, "reducescatter": "allreduce"}


def _count_steps(counter: Counter, steps) -> None:
    for step in steps or []:
        kind = _ISSUED_AS.get(step["kind"], step["kind"])
        if kind is not None:
            counter[kind] += 1


def expected_collectives(graph, plan) -> dict[str, int]:
    from tensoropt.execution.builder import config_of, rebuilt_producers

    grad = requires_grad(graph)
    ops = {op.name: op for op in graph.operations}
    counter: Counter = Counter()
    dropped = rebuilt_producers(plan)
    rebuild_counted: set[str] = set()
    for edge in plan.edges:
        consumer = ops[edge["consumer"]]
        tensor = consumer.inputs[edge["input"]]
        _count_steps(counter, edge["forward_steps"])
        if tensor in grad:
            _count_steps(counter, edge["backward_steps"])
        backward_runs = any(o in grad for o in consumer.outputs)   # the consumer's backward
        if edge["reuse"] == "keep_producer" and edge["forward_steps"] and backward_runs:
            _count_steps(counter, edge["forward_steps"])
        if edge["reuse"] == "keep_consumer" and edge["producer"] in dropped \
                and edge["producer"] not in rebuild_counted and ops[edge["producer"]].inputs[0] in grad:
            rebuild_counted.add(edge["producer"])
            _count_steps(counter, edge["rebuild_steps"])
    for op in graph.operations:
        config = config_of(plan, op)
        dim_axes = config.dim_axes()
        partial = sum(1 for d in op.space.reductions if d in dim_axes)
        counter["allreduce"] += partial * len(op.outputs)
        for i, t in enumerate(op.inputs):
            if t in grad:
                carried = set(op.space.inputs[i])
                counter["allreduce"] += sum(1 for d in config.axis_dims if d is not None and d not in carried)
        if op.kind == "lstm" and "h" in dim_axes:
            gathers = op.space.dims["t"] - 1
            rerun = any(e["reuse"] == "keep_producer" and e["forward_steps"] for e in plan.edges
                        if e["consumer"] == op.name) and any(o in grad for o in op.outputs)
            counter["allgather"] += gathers * (2 if rerun else 1)
            counter["allreduce"] += gathers
    return {k: v for k, v in counter.items() if v}
