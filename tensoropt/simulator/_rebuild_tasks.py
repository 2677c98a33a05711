"""A plan's backward rebuild tasks: the part of ``plan_tasks.PlanContext`` that builds
each op's ``("rebuild", k)`` fragment (``RebuildChoice`` says which mode).

``PlanContext`` inherits ``rebuild_fragment`` from ``RebuildTasks``, which uses its
helpers (``_compute``, ``_collectives``, ``_conversion_buffers``, ``_join``) and tables
(``ops``, ``edges``, ``ranks``, ``has_bwd``, ``grad_inputs``).

Usage::

    ctx = PlanContext(graph, model, devices_per_machine, SimOptions())
    ctx.rebuild_fragment(fragment, k, RebuildChoice(config, "inside", None, frozenset()))
"""

from __future__ import annotations

from tensoropt.configs import op_collectives, reruns_forward
from tensoropt.execution.schedule import own_calls, step_calls
from dataclasses import dataclass
from typing import Optional

from tensoropt.configs import Config
from tensoropt.simulator.graph import Fragment
from tensoropt.simulator.step_buffers import conversion_step_buffers

__all__ = ["RebuildChoice", "RebuildTasks"]


@dataclass(frozen=True)
class RebuildChoice:
    """An op's backward rebuild state.

    Attributes:
        config: the op's configuration.
        mode: ``"inside"`` (the op converts an input itself: it re-runs its inside
            collectives, tagged ``/rebuild``), ``"keep_consumer"`` (it rebuilds output 0
            from ``edge``'s consumer copy) or ``"none"``.
        edge: the first keep_consumer edge of its outputs (its index and plan), or None.
        dropped: outputs whose producer copy a keep_consumer edge drops.
    """

    config: Config
    mode: str
    edge: Optional[tuple]
    dropped: frozenset


class RebuildTasks:
    """Mixin of ``PlanContext``: the rebuild fragment of an op."""

    def rebuild_fragment(self, f: Fragment, k: int, choice: RebuildChoice) -> None:
        """Op ``k``'s backward rebuild (see ``RebuildChoice``), its own inside backward
        collectives, and the joins that say how long its outputs are kept."""
        op, c, config = self.ops[k], self.ops[k].name, choice.config
        n = len(op.inputs)
        calls, sec, rebuild_count, rb_steps = [], [], 0, ()
        if self.has_bwd[k]:
            gi = self.grad_inputs[k]
            own = op_collectives(op, config, gi, tag="/rebuild" if choice.mode == "inside" else "")
            if choice.mode == "inside":
                items = [x for x in own if x.inside and x.phase == "forward"]
                calls, sec = own_calls(op, config, items, "rebuild"), self._own_seconds(config, items)
            elif choice.mode == "keep_consumer":
                rb_steps = choice.edge[1].rebuild_steps
                calls = step_calls(rb_steps, f"{c}/out0/rebuild", op.outputs[0], "rebuild")
                sec = self._step_seconds(rb_steps, op.outputs[0])
            rebuild_count = len(calls)
            items = [x for x in own if x.inside and x.phase == "backward"]
            calls = calls + own_calls(op, config, items)
            sec = sec + self._own_seconds(config, items)
        rerun_ps = (self.compute_ps(k, config)[0]
                    if choice.mode == "inside" and self.has_bwd[k] and reruns_forward(op) else 0)
        rb_buffers = rb_copies = None       # keep_consumer: the rebuild's buffers and copies
        if choice.mode == "keep_consumer":
            out = op.outputs[0]
            rb_buffers = conversion_step_buffers(rb_steps, tuple(out.shape), out.dtype.itemsize)
            rb_copies = self.copy_seconds(rb_buffers.steps, out.dtype.itemsize) if rebuild_count else None
        for r in self.ranks:
            s = self.sfx(r)
            bwd = f"{c}/bwd{s}"
            if rerun_ps:   # differentiating on rebuilt inputs runs the forward again
                rerun = self._compute(f, f"{c}/rerun", k, r, rerun_ps, "rerun", config)
                for a in [f"{c}/fwd{s}"] + [f"{c}/in{i}/rebuilt{s}" for i in range(n)]:
                    f.add_dependency(a, rerun)
                f.add_dependency(rerun, bwd)
            data = []
            if choice.mode == "keep_consumer" and rebuild_count:
                ek, ei = self.edges[choice.edge[0]][:2]
                data = [f"{self.ops[ek].name}/in{ei}/data{s}"]
            elif rebuild_count:
                data = [f"{c}/fwd{s}"]
            start = f"{c}/in{n - 1}/R{s}" if n else f"{c}/bchain_in{s}"
            rb, end, rb_ready = self._collectives(
                f, calls[:rebuild_count], sec[:rebuild_count], r, start, data, c, "rebuild", rb_copies)
            if choice.mode == "keep_consumer":
                self._conversion_buffers(f, rb, rb_buffers, f"{c}:out0:rebuilt", [bwd], r,
                                         "rebuilt activation")
            else:
                for task, call in zip(rb, calls):
                    f.add_buffer(f"{task}:buf", call.nbytes, "gather in flight", alloc=task,
                                 free_after=[task], rank=r)
            self._join(f, f"{c}/out/rebuilt", r, rb_ready[-1:])
            names, end, _ = self._collectives(f, calls[rebuild_count:], sec[rebuild_count:], r,
                                              end, [bwd], c, "backward")
            for task, call in zip(names, calls[rebuild_count:]):
                f.add_buffer(f"{task}:buf", call.nbytes, "gradient in flight", alloc=task,
                             free_after=[task], rank=r)
            self._join(f, f"{c}/rebuild_out", r, [end])
            for j in range(len(op.outputs)):
                keep = self.has_bwd[k] and j in op.space.saved_outputs and j not in choice.dropped
                self._join(f, f"{c}/out{j}/keep", r, [bwd] if keep else [])

