"""A plan's training step as task-graph fragments: one per op, per data edge, per op's
backward rebuild (the keys of a ``DeltaSimulator``).

Usage (``plan_sim.PlanSimulator`` drives this; the states come from a plan or from
Frontier-Tracking's choice arrays)::

    ctx = PlanContext(graph, model, devices_per_machine, SimOptions())
    f = ctx.op_fragment(k, config)                   # Config of op k
    f = ctx.edge_fragment(e, EdgeChoice(edge_plan, consumer_config))
    f = ctx.rebuild_fragment(k, RebuildChoice(config, "none", None, frozenset()))

Tasks, per simulated rank (suffix ``#r{rank}`` with ``ranks="all"``):

- ``{op}/fwd`` and ``{op}/bwd``: the op's forward and backward compute; ``{op}/rerun``
  its forward again in backward when it converts an input itself (keep_producer) and
  its gradient reads its forward results (``CostModel.rerun_cost``). They split the
  cost model's ``compute_s`` by ``CostModel.compute_split`` in integer picoseconds, so
  they add up to it exactly; an op no gradient flows through has no backward. A trained
  variable has ``{op}/update`` (the optimizer's local update: its ``compute_s``, which
  ``CostModel.update_s`` prices, measured by the profiler, 0 under the roofline) after
  its gradients arrive.
- Collectives, named exactly as ``execution.schedule.collective_schedule`` names them,
  made by its own rules (``step_calls``, ``own_calls``, ``configs.op_collectives``):
  the edge conversions (forward, backward, keep_producer rebuild) belong to the edge's
  fragment, the op's own collectives to the op's (forward) or its rebuild fragment
  (the LSTM's inside gathers and their gradients, and a keep_consumer rebuild of its
  output). A conversion step lasts what the cost model prices it (``StepCostFn``); an
  op's own collective what ``CostModel.op_cost`` sums for it. Each holds ``chain:r`` and
  its link: ``nic:r`` (a share of the machine's network card) when its group spans
  machines, else ``link:r``. With a calibrated cycle, ``chain:r`` runs on horovod's cycle
  and a collective lasts its transfer alone (``SimOptions.horovod_cycle``).
- What a transfer costs the rank's compute, ``CostModel.transfer_compute_share`` (``s``,
  measured by ``tensoropt calibrate``): from ``s = TAKE_TURNS_FROM`` (1/2) the transfer
  also holds ``compute:r``
  (CPU ranks: the cores that compute make MPI's copies, so the two take turns; measured on
  2 ranks x 2 cores, 16 plans per model, 2026-11-26, this took the simulated time's mean
  error from 13.1% to 7.3% (CNN) and 13.2% to 10.3% (LSTM), 6.6% to 7.7% (transformer)).
  At ``0 < s < 1`` a compute task ``{collective}/cpu`` of ``s`` times the transfer's time
  runs beside it from when horovod's loop issues it (the join ``{collective}/issue``,
  which waits for the chain's cycle as the transfer does), and what reads the value
  waits for both (the join ``{collective}/moved``). At 0 they overlap freely. Why a
  share of one half or more is taken as 1: where the cores do most of a transfer's
  work, they also run horovod's loop, and taking turns delays its cycle until the core
  is free (the transfer starts a cycle after the compute before it), which a task beside
  the transfer does not. On this machine (2 ranks x 2 cores, 2026-11-27) six
  calibrations measured 0.93-1.0 (a matmul chain and a 16 MiB all-reduce of about 20 ms
  each took 38-43 ms together), 0.91 on 4 ranks beside another job; re-simulating the
  accuracy bench's plans (run of 16:00) against their measured times, taking turns gave
  7.1% / 4.3% / 4.5% / 4.3% mean error (mlp / cnn / transformer / lstm), a share of
  0.99 beside the transfer 7.0% / 10.5% / 5.9% / 4.3%, the CNN's plans 10.5% too fast.
- ``{collective}/copies``: a conversion step's local copies (``StepBuffers.copy_ops``: the
  transposes around it, moved pieces and their concatenation, a copying split), as
  ``CostModel.copies_s`` prices them (the profiler times them; else their bytes at the
  calibrated copy speed), on the compute resource after the collective; what reads the
  step's value waits for it.
- Zero-duration joins on no resource (``{op}/out0``, ``{op}/in1/grad``, ...) through
  which fragments depend on each other; every join exists in every version.

Order. In ``"chained"`` order, collectives follow the schedule's chain through joins:
forward, op by op, the slot ``{op}/in{i}/A`` of each input converted before the op (input
order), then ``/B`` of inputs a keep_producer op converts itself, then the op's own; in
backward, op by op in reverse, ``/R`` (keep_producer rebuilds), the rebuild fragment,
``/P`` (partial gradients and backward conversion of the inputs the op converts itself)
and ``/Q`` (the other inputs). In ``"free"`` order only data dependencies order them.
Data: a conversion reads its producer's ``/out{j}`` (after the producer's own partial-sum
all-reduces); an op's forward waits for each input's ``/in{i}/data``; its backward for
the gradients of its outputs (each out-edge's ``/in{i}/grad``) and for the copies
rebuilt for it; partial-gradient all-reduces follow the backward compute. An LSTM's
hidden gathers are placed after its forward compute (the model prices them apart).

Memory buffers (rules of ``memory``):

- parameters and optimizer slots are resident (``OpCost.param_bytes`` less one gradient);
- a variable read by an ``embedding_lookup`` and trained by Adam takes TensorFlow's sparse
  update, which first scales both slots (``m * beta1``, ``v * beta2``) into new buffers:
  it needs no gradient, so it runs as the step starts; the step's allocation records
  hold these two copies to the step's end (the old slots were allocated before it);
- a parameter's gradient is allocated by the backward of each consumer that computes
  it, in the consumer's layout of the parameter, and freed after its first reader ends:
  the edge's first backward collective (or the transpose that moves it for one), else
  the variable's update (TensorFlow frees a tensor when its last reader is done); when
  its backward conversion only slices it locally, after the rank's backward ends
  (``backward/end``): TensorFlow's executor, on one inter-op thread, defers a kernel it
  counts as expensive (the ``tf.split``) while other ops are queued inline, and the
  backward's own chain of ops keeps that queue full. With ``SimOptions.late_release``
  (the bound), a gradient its update reads directly lives until then too: the executor
  deferred the tiny CNN's ``fc0`` kernel update (``ResourceApplyAdam``) the same way on
  3 ranks (2026-11-27), where the estimate frees it after the update;
- a collective's input (the buffer it reads, or the transposed copy of it) and its
  result are freed when it ends; with ``late_release`` (the bound a plan's
  fit is checked against), only once the collective's value has been read (``held_until``:
  the next step of the conversion, else the first task that uses it). Horovod's
  background thread drops them after the op's callback, racing the reader: traces of the
  tiny models caught it holding them through the reader (or to the step's end), while
  the small models' peaks, the same from run to run, show them gone before the reader
  allocates (holding them there over-estimated the accuracy bench's peaks by 5-10%);
- an op's output is allocated by its forward and freed after the last of: its own
  partial-sum all-reduces, each consumer's forward use (the first conversion step, or
  the consumer's forward when no conversion), a consumer's backward that keeps that very
  copy (same layout, consumer saves the input), and the op's own backward when it saves
  the output -- unless a keep_consumer edge drops the producer's copy. An op that
  all-reduces its partial output itself writes each sum to a new buffer (allocated when
  the all-reduce starts; the output is the last one): the partial sum before it lives
  from the forward until the all-reduce ends (``late_release``: until the sum has been
  read, ``{op}/in{i}/read``: each consumer's first forward use);
- a converted copy lives from its last conversion step until the consumer's forward,
  or its backward when the consumer keeps it (keep_producer drops it and rebuilds it in
  backward: the rebuilt copy lives from the rebuild's last step to the consumer's
  backward; keep_consumer rebuilds the producer's copy the same way);
- a conversion step holds what TensorFlow's lowering of it holds (``step_buffers``):
  the transposed copy of its input when it gathers, scatters or exchanges along a dim
  that is not the first (made as soon as the input exists: for a variable's forward
  conversion, at the step's start, as TensorFlow runs it outside the collective chain),
  the collective's result before it is moved back and a copying split's pieces (during
  the step; with ``late_release``, until the step's value has been read), and its result; a
  dim-0 split is a view, so a conversion of such slices only keeps the producer's buffer
  alive instead;
- an intermediate conversion result lives from its step until the next step ends (with
  ``late_release``, and has been read, when that step's collective reads it itself);
  the buffer of a backward-conversion step, partial-gradient all-reduce or gather lives
  until the next step ends, the last one of a gradient until its reader ends: the
  producer's backward, or a parameter's update;
- what backward keeps inside an op (``space.saved_internal``) lives from the op's forward
  to its backward;
- an activation gradient (the gradient an op's backward computes for an input that is
  not a parameter, of the input's local size in the consumer's layout) lives from that
  backward's start until its first reader ends, as a parameter's gradient: the edge's
  first backward collective (their own step buffers are counted apart), else the
  producer's backward. The additive estimate does not count these;
- an op's workspace (``CostModel.workspace_bytes``: what the profiler measured its
  forward and backward passes allocate beyond their outputs) lives during that task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from tensoropt.configs import (Config, gradient_inputs, gradient_tensors, input_layout,
                               op_collectives, output_layout)
from tensoropt.execution.schedule import own_calls, step_calls
from tensoropt.simulator.graph import PS_PER_S, Fragment, seconds_to_ps
from tensoropt.simulator.plan_options import SimOptions
from tensoropt.simulator.step_buffers import ConversionBuffers, StepBuffers, conversion_step_buffers
from tensoropt.simulator._rebuild_tasks import RebuildChoice, RebuildTasks

__all__ = ["PlanContext", "EdgeChoice", "RebuildChoice", "TAKE_TURNS_FROM"]

#: the share of a transfer's time it takes from the rank's compute from which the two take
#: turns (see the module doc)
TAKE_TURNS_FROM = 0.5


@dataclass(frozen=True)
class EdgeChoice:
    """An edge's state: its plan and its consumer's configuration (for the partial
    gradients of the input it carries)."""

    plan: object
    consumer: Config


class PlanContext(RebuildTasks):
    """What the fragments of one graph share (see module doc)."""

    def __init__(self, graph, model, devices_per_machine: int, options: SimOptions) -> None:
        self.graph, self.model, self.options = graph, model, options
        self.dpm = int(devices_per_machine)
        self.ops = list(graph.operations)
        self.index = {op: k for k, op in enumerate(self.ops)}
        grads = gradient_tensors(graph)
        self.grad_inputs = [gradient_inputs(op, grads) for op in self.ops]
        self.has_bwd = [any(g) for g in self.grad_inputs]
        self.edges = []                               # (consumer k, input, producer k, output)
        self.out_edges: list[dict[int, list[int]]] = [{} for _ in self.ops]
        for k, op in enumerate(self.ops):
            for i, t in enumerate(op.inputs):
                p = self.index[t.op]
                self.out_edges[p].setdefault(t.value_index, []).append(len(self.edges))
                self.edges.append((k, i, p, t.value_index))
        self.updates = [op.kind == "variable" and op.outputs[0] in model.trained and
                        any(self.edge_grad(e) for e in self.out_edges[k].get(0, ()))
                        for k, op in enumerate(self.ops)]
        # Adam's sparse update (an embedding's gradient) scales the slots before it adds
        # the gradient; see the module doc
        adam = {v.op for v, optimizer in model.optimizers.items() if optimizer.tf_name == "AdamOptimizer"}
        self.sparse_adam = [self.updates[k] and op in adam and any(
            self.ops[self.edges[e][0]].kind == "embedding_lookup" and self.edges[e][1] == 0
            for e in self.out_edges[k].get(0, ())) for k, op in enumerate(self.ops)]
        n = model.num_devices
        self.ranks = [0] if options.ranks == "representative" else list(range(n))
        self.resources = [f"{kind}:{r}" for r in self.ranks
                          for kind in ("compute", "chain", "link", "nic")]
        # horovod's cycle: on each rank's chain (its background loop), when the model has one
        self.cycle_s = model.collective_overhead_s if options.horovod_cycle else 0.0
        self.cycles = {f"chain:{r}": self.cycle_s for r in self.ranks} if self.cycle_s else {}
        self.collective_s = model.transfers if self.cycle_s else model.collectives
        self.step_s = model.step_transfer if self.cycle_s else model.step_cost
        self._split: dict = {}

    # -- names and helpers -----------------------------------------------------------------
    def sfx(self, r: int) -> str:
        return "" if self.options.ranks == "representative" else f"#r{r}"

    def edge_grad(self, e: int) -> bool:
        k, i, _, _ = self.edges[e]
        return self.grad_inputs[k][i]

    def _ps(self, seconds: float) -> int:
        return seconds_to_ps(max(0.0, float(seconds)))

    def compute_ps(self, k: int, config: Config) -> tuple[int, int]:
        """Forward and backward picoseconds of op ``k``, adding up to its ``compute_s``."""
        op = self.ops[k]
        key = (op, config)
        if key not in self._split:
            forward, _ = self.model.compute_split(op, config)
            total = self._ps(self.model.op_cost(op, config).compute_s)
            fwd = min(total, self._ps(forward))
            self._split[key] = (fwd, total - fwd)
        return self._split[key]

    def _compute(self, f: Fragment, name: str, k: int, r: int, ps: int, step: str,
                 config: Config) -> str:
        task = name + self.sfx(r)
        f.add_task(task, "compute", [f"compute:{r}"], ps / PS_PER_S, rank=r,
                   op=self.ops[k].name, config=str(config), step=step)
        return task

    def _join(self, f: Fragment, name: str, r: int, after=()) -> str:
        task = name + self.sfx(r)
        f.add_task(task, "join", [], 0.0, rank=r)
        for a in after:
            f.add_dependency(a, task)
        return task

    def copy_seconds(self, held, itemsize: int) -> list[float]:
        """Per ``StepBuffers``, the seconds its local copies take (``CostModel.copies_s``)."""
        copies_s = getattr(self.model, "copies_s", None)
        return [copies_s(h, itemsize) if copies_s and (h.copied or h.copy_ops) else 0.0 for h in held]

    def transfer_share(self) -> float:
        """What a transfer costs the rank's compute, as a share of its time
        (``CostModel.transfer_compute_share``; 0 for a model without one), 1 (they take
        turns) from ``TAKE_TURNS_FROM``."""
        share = float(getattr(self.model, "transfer_compute_share", 0.0))
        return 1.0 if share >= TAKE_TURNS_FROM else share

    def _collectives(self, f: Fragment, calls: list, seconds: list, r: int, chain_from: str,
                     data_from: list[str], op_name: str, step: str,
                     copies: Optional[list[float]] = None) -> tuple[list[str], str, list[str]]:
        """Adds ``calls`` in order, each followed by a compute task for its local copies
        (``{call}/copies``) when ``copies`` gives it seconds; returns their task names, the
        chain's last name, and per call the task after which its value exists."""
        names, prev, ready = [], chain_from, []
        copies = copies or [0.0] * len(calls)
        share = self.transfer_share()
        takes_turns = [f"compute:{r}"] if share == 1 else []
        for call, sec, copy in zip(calls, seconds, copies):
            group = call.group(r)
            spans = len({g // self.dpm for g in group}) > 1
            task = call.name + self.sfx(r)
            if 0 < share < 1:
                # when horovod's loop issues the transfer (added first: on a tie, it is
                # taken before the transfer, so both wait for the same cycle)
                issue = call.name + "/issue" + self.sfx(r)
                f.add_task(issue, "join", [], 0.0, rank=r,
                           waits_for_cycle_of=f"chain:{r}" if self.cycle_s else None)
            f.add_task(task, "collective", [f"chain:{r}", f"{'nic' if spans else 'link'}:{r}"] + takes_turns,
                       self._ps(sec) / PS_PER_S, rank=r, op=op_name, step=step,
                       collective=call.kind, bytes=call.nbytes, group=list(group),
                       **({"held_to_next": True} if self.options.late_release else {}))
            preds = list(data_from) + ([prev] if self.options.chained else [])
            if self.options.ranks == "all" and len(group) > 1:
                sync = f"{call.name}/sync#g{group[0]}"
                if sync not in f:
                    f.add_task(sync, "join", [], 0.0, rank=group[0])
                for p in preds:
                    f.add_dependency(p, sync)
                preds = [sync]
            for p in preds:
                f.add_dependency(p, task)
            names.append(task)
            prev = task
            done = task
            if 0 < share < 1:
                # the compute the transfer takes, from when it is issued; its value exists
                # after both
                for p in preds:
                    f.add_dependency(p, issue)
                cpu = call.name + "/cpu" + self.sfx(r)
                f.add_task(cpu, "compute", [f"compute:{r}"], self._ps(sec * share) / PS_PER_S, rank=r,
                           op=op_name, step=step, share_of=call.name)
                f.add_dependency(issue, cpu)
                done = self._join(f, call.name + "/moved", r, after=[task, cpu])
            if copy:
                done = call.name + "/copies" + self.sfx(r)
                f.add_task(done, "compute", [f"compute:{r}"], self._ps(copy) / PS_PER_S, rank=r,
                           op=op_name, step=step, copied_after=call.name)
                f.add_dependency(task, done)
            ready.append(done)
            data_from = [done]
        return names, prev, ready

    def _step_seconds(self, steps, tensor) -> list[float]:
        shape, itemsize = tuple(tensor.shape), tensor.dtype.itemsize
        return [self.step_s(s, shape, itemsize) for s in steps or () if s.kind != "slice"]

    def _own_seconds(self, config: Config, items) -> list[float]:
        """Each own collective's seconds, priced as ``CostModel.op_cost`` prices it (its
        transfer alone when the simulator waits for horovod's cycle)."""
        return [self.collective_s.time_s(c.kind, c.nbytes, config.mesh[c.mesh_axis],
                                         math.prod(config.mesh[c.mesh_axis + 1:]))
                for c in items]

    def held_until(self, names: list[str], m: int, final: list[str]) -> list[str]:
        """With ``SimOptions.late_release``, what reads the value of collective step
        ``m`` of ``names``: the next step, else ``final`` (the first task that uses the
        converted value), until whose end horovod may hold the step's input and result;
        else nothing (they are freed when the step ends)."""
        if not self.options.late_release:
            return []
        return names[m + 1:m + 2] or list(final[:1])

    def direct_input_held(self, names: list[str], steps, m: int, final: list[str]) -> list[str]:
        """``held_until`` for the value collective step ``m`` of ``names`` reads itself
        (the step before's, or the producer's buffer for the first): nothing when the
        step reads a moved copy of it instead (``steps[m].moved_in``, counted apart), or
        there is no step ``m``."""
        if m >= len(names) or steps[m].moved_in:
            return []
        return self.held_until(names, m, final)

    def _conversion_buffers(self, f: Fragment, names: list[str], held: ConversionBuffers,
                            last_name: str, last_free: list[str], r: int, why: str,
                            ready: list[str] | None = None) -> bool:
        """A conversion's buffers as TensorFlow holds them (``held``, from
        ``step_buffers.conversion_step_buffers``): per step,
        the moved copy of its input (from ``ready``, the tasks after which the first
        step's input exists, else from the step's start) and its scratch, until the
        step ends (or, with ``late_release``, until its value has been read; a
        conversion of local slices has neither), its value (until the next step ends,
        or has been read when that step reads it directly and horovod holds it); the
        last value (``last_name``) until ``last_free``. Returns whether the
        converted value is a view of the producer's buffer (which must then live as
        long)."""
        assert not names or len(names) == len(held.steps), (names, held)
        for m, (task, b) in enumerate(zip(names, held.steps)):
            held_to = [task] + self.held_until(names, m, last_free)
            if b.moved_in:
                alloc = self._join(f, f"{last_name}/ready", r, ready) if m == 0 and ready \
                    else task
                f.add_buffer(f"{task}:moved in", b.moved_in, "conversion", alloc=alloc,
                             free_after=held_to, rank=r)
            if b.scratch:
                f.add_buffer(f"{task}:scratch", b.scratch, "conversion", alloc=task,
                             free_after=held_to, rank=r)
            if m + 1 < len(names):
                f.add_buffer(f"{task}:out", b.out, "conversion", alloc=task, rank=r,
                             free_after=[names[m + 1]] + self.direct_input_held(
                                 names, held.steps, m + 1, last_free))
        if names:
            f.add_buffer(last_name + self.sfx(r), held.steps[-1].out, why,
                         alloc=names[-1], free_after=last_free, rank=r)
        return held.view_of_input and bool(names)

    # -- fragments -------------------------------------------------------------------------
    def op_fragment(self, f: Fragment, k: int, config: Config) -> None:
        """Op ``k``'s compute, own forward collectives, chain joins and buffers."""
        op, c = self.ops[k], self.ops[k].name
        n, last = len(op.inputs), len(self.ops) - 1
        fwd_ps, bwd_ps = self.compute_ps(k, config)
        own = op_collectives(op, config, self.grad_inputs[k])
        items = [x for x in own if x.phase == "forward"]
        calls = own_calls(op, config, items)
        cost = self.model.op_cost(op, config)
        for r in self.ranks:
            s = self.sfx(r)
            fin = self._join(f, f"{c}/fchain_in", r,
                             [f"{self.ops[k - 1].name}/fchain_out{s}"] if k else [])
            if k == 0:   # after every backward compute of the rank
                self._join(f, "backward/end", r)
            fwd = self._compute(f, f"{c}/fwd", k, r, fwd_ps, "forward", config)
            for i in range(n):
                f.add_dependency(f"{c}/in{i}/data{s}", fwd)
            start = f"{c}/in{n - 1}/B{s}" if n else fin
            names, end, ready = self._collectives(f, calls, self._own_seconds(config, items), r,
                                                  start, [fwd], c, "forward")
            self._join(f, f"{c}/fchain_out", r, [end])
            for j in range(len(op.outputs)):
                self._join(f, f"{c}/out{j}", r, [fwd] + ready)
            self._join(f, f"{c}/bchain_in", r,
                       [f"{c}/fchain_out{s}" if k == last else f"{self.ops[k + 1].name}/bchain_out{s}"])
            self._join(f, f"{c}/bchain_out", r,
                       [f"{c}/in{n - 1}/Q{s}" if n else f"{c}/rebuild_out{s}"])
            grads_in = self.output_gradients(k, r)
            bwd = None
            if self.has_bwd[k]:
                bwd = self._compute(f, f"{c}/bwd", k, r, bwd_ps, "backward", config)
                for a in [fwd, f"{c}/out/rebuilt{s}"] + grads_in + \
                        [f"{c}/in{i}/rebuilt{s}" for i in range(n)]:
                    f.add_dependency(a, bwd)
                f.add_dependency(bwd, f"backward/end{s}")
            elif self.updates[k]:
                upd = self._compute(f, f"{c}/update", k, r, bwd_ps, "update", config)
                for a in [fwd] + grads_in:
                    f.add_dependency(a, upd)
            if op.kind == "variable":
                nbytes = output_layout(op, config, 0).local_bytes(op.outputs[0].shape,
                                                                  op.outputs[0].dtype.itemsize)
                # its gradients are allocated by the backward of each consumer that
                # computes one (``_gradient_buffers``), not resident
                trained = cost.param_bytes > nbytes
                parts = [("parameter", nbytes)]
                if trained:
                    parts += [("optimizer slots", int(cost.param_bytes) - 2 * nbytes)]
                for why, size in parts:
                    f.add_buffer(f"{c}:{why}{s}", int(size), why, rank=r)
                if self.sparse_adam[k]:
                    f.add_buffer(f"{c}:rescaled slots{s}", 2 * nbytes, "optimizer slots",
                                 alloc=fwd, rank=r)
                continue
            for j, t in enumerate(op.outputs):
                consumers = [f"{self.ops[self.edges[e][0]].name}/in{self.edges[e][1]}"
                             for e in self.out_edges[k].get(j, ())]
                frees = [f"{c}/out{j}{s}", f"{c}/out{j}/keep{s}"] + \
                    [f"{n}/release{s}" for n in consumers]
                nbytes = output_layout(op, config, j).local_bytes(t.shape, t.dtype.itemsize)
                reduce = [names[m] for m, x in enumerate(items) if x.output == j]
                # each partial-sum all-reduce writes a new buffer and frees its input when
                # it ends (with ``late_release``, when the result has been read: the next
                # all-reduce, else the consumers' first uses)
                readers = [f"{n}/read{s}" for n in consumers] or [f"{c}/out{j}{s}"]
                for m, task in enumerate(reduce):
                    f.add_buffer(f"{task}:partial sum", nbytes, "activation",
                                 alloc=reduce[m - 1] if m else fwd,
                                 free_after=[task] + self.held_until(reduce, m, readers))
                f.add_buffer(f"{c}:out{j}{s}", nbytes, "activation", alloc=reduce[-1] if reduce else fwd,
                             free_after=frees)
            internal = cost.saved_bytes - _saved_io_bytes(op, config)
            if internal > 0:
                f.add_buffer(f"{c}:saved_internal{s}", int(internal), "saved for backward",
                             alloc=fwd, free_after=[bwd or fwd])
            if bwd is not None:
                self._gradient_buffers(f, k, config, bwd, r)
            for task, size, phase in zip((fwd, bwd), self.model.workspace_bytes(op, config),
                                         ("forward", "backward")):
                if task is not None and size > 0:
                    f.add_buffer(f"{c}:{phase} workspace{s}", int(size), "workspace",
                                 alloc=task, free_after=[task])

    def _gradient_buffers(self, f: Fragment, k: int, config: Config, bwd: str, r: int) -> None:
        """The gradients op ``k``'s backward computes: one per input a gradient flows to,
        of the input's local size, from this backward's start until its first reader
        ends (``/in{i}/grad_read``): the edge's first backward collective (or the
        transpose before it), else the producer's backward for an activation or the
        variable's update for a parameter."""
        op, c, s = self.ops[k], self.ops[k].name, self.sfx(r)
        for i, t in enumerate(op.inputs):
            if not self.grad_inputs[k][i]:
                continue
            f.add_buffer(f"{c}:in{i}/grad{s}",
                         input_layout(op, config, i).local_bytes(t.shape, t.dtype.itemsize),
                         "parameter gradient" if t.op.kind == "variable" else
                         "activation gradient", alloc=bwd, free_after=[f"{c}/in{i}/grad_read{s}"])

    def output_gradients(self, k: int, r: int) -> list[str]:
        """The joins after which the gradients of op ``k``'s outputs exist on rank ``r``
        (one per consumer edge a gradient flows back through)."""
        s = self.sfx(r)
        return [f"{self.ops[self.edges[e][0]].name}/in{self.edges[e][1]}/grad{s}"
                for outs in self.out_edges[k].values() for e in outs if self.edge_grad(e)]

    def _gradient_reader(self, p: int, r: int) -> list[str]:
        """The task that reads the gradients of op ``p``'s outputs: its backward, or a
        trained variable's update (none: no task reads them)."""
        if self.ops[p].kind == "variable":
            return [f"{self.ops[p].name}/update{self.sfx(r)}"] if self.updates[p] else []
        return [f"{self.ops[p].name}/bwd{self.sfx(r)}"] if self.has_bwd[p] else []

    def edge_fragment(self, f: Fragment, e: int, choice: EdgeChoice) -> None:
        """Edge ``e``'s conversions (forward, keep_producer rebuild, backward), the
        consumer's partial gradients of that input, and its joins and copies."""
        k, i, p, j = self.edges[e]
        op, c, prod = self.ops[k], self.ops[k].name, self.ops[p].name
        ep, config = choice.plan, choice.consumer
        tensor, n = op.inputs[i], len(op.inputs)
        inside = ep.reuse == "keep_producer" and bool(ep.forward_steps)
        saves = i in op.space.saved_inputs and self.has_bwd[k]
        fwd_calls = step_calls(ep.forward_steps, f"{c}/in{i}", tensor, "forward")
        fwd_sec = self._step_seconds(ep.forward_steps, tensor)
        fwd_buffers = conversion_step_buffers(ep.forward_steps, tuple(tensor.shape),
                                              tensor.dtype.itemsize)
        fwd_copy = self.copy_seconds(fwd_buffers.steps, tensor.dtype.itemsize)
        rebuild = inside and self.has_bwd[k]
        grad = self.grad_inputs[k][i]
        bwd_calls, bwd_sec, bwd_held = [], [], []
        if grad:
            items = [x for x in op_collectives(op, config, self.grad_inputs[k]) if x.input == i]
            bwd_calls, bwd_sec = own_calls(op, config, items), self._own_seconds(config, items)
            bwd_held = [StepBuffers(0, 0, call.nbytes) for call in bwd_calls]
            if ep.forward_steps:
                calls = step_calls(ep.backward_steps, f"{c}/in{i}/grad", tensor, "backward")
                bwd_calls += calls
                bwd_sec += self._step_seconds(ep.backward_steps, tensor)
                if calls:
                    bwd_held += conversion_step_buffers(ep.backward_steps, tuple(tensor.shape),
                                                        tensor.dtype.itemsize).steps
        for r in self.ranks:
            s = self.sfx(r)
            src, fwd, bwd = f"{prod}/out{j}{s}", f"{c}/fwd{s}", f"{c}/bwd{s}"
            # forward: slot A (converted before the op) or B (converted by the op itself)
            prev_a = f"{c}/fchain_in{s}" if i == 0 else f"{c}/in{i - 1}/A{s}"
            prev_b = f"{c}/in{n - 1}/A{s}" if i == 0 else f"{c}/in{i - 1}/B{s}"
            names, end, ready = self._collectives(f, fwd_calls, fwd_sec, r,
                                                  prev_b if inside else prev_a, [src], c,
                                                  "forward", fwd_copy if fwd_calls else None)
            self._join(f, f"{c}/in{i}/A", r, [prev_a] if inside else [end])
            self._join(f, f"{c}/in{i}/B", r, [end] if inside else [prev_b])
            converted = ep.src_layout != ep.dst_layout
            if converted and not names:           # local slices only: one local copy (or view)
                copy_ps = self._ps(fwd_copy[0]) if fwd_copy else 0
                names = ready = [self._compute(f, f"{c}/in{i}/slice", k, r, copy_ps, "slice", config)]
                f.add_dependency(src, names[0])
            self._join(f, f"{c}/in{i}/data", r, ready[-1:] or [src])
            self._join(f, f"{c}/in{i}/read", r, names[:1] or [fwd])
            keep_copy = saves and ep.reuse != "keep_producer"
            if converted:
                uses = [fwd] + ([bwd] if keep_copy else [])
                view = self._conversion_buffers(f, names, fwd_buffers, f"{c}/in{i}:copy", uses, r,
                                                "activation", [src])
                # a collective (not a local slice) that reads the producer's buffer itself
                # may hold it until its value has been read (``late_release``)
                kept = self.direct_input_held(names, fwd_buffers.steps, 0, uses) if fwd_calls else []
                self._join(f, f"{c}/in{i}/release", r, uses if view else names[:1] + kept)
            else:
                self._join(f, f"{c}/in{i}/release", r, [fwd] + ([bwd] if saves else []))
            # backward: slot R (keep_producer rebuild), then P (inputs the op converts
            # itself) or Q (the others)
            prev_r = f"{c}/bchain_in{s}" if i == 0 else f"{c}/in{i - 1}/R{s}"
            rb_names, end = [], prev_r
            if rebuild:
                # TensorFlow rebuilds inside the consumer's gradient function, which runs
                # once the gradients of its outputs exist (not as soon as the source does)
                calls = step_calls(ep.forward_steps, f"{c}/in{i}/rebuild", tensor, "rebuild")
                rb_names, end, rb_ready = self._collectives(
                    f, calls, fwd_sec, r, prev_r, [src] + self.output_gradients(k, r), c,
                    "rebuild", fwd_copy)
                self._conversion_buffers(f, rb_names, fwd_buffers, f"{c}/in{i}:rebuilt", [bwd], r,
                                         "rebuilt activation")
            self._join(f, f"{c}/in{i}/R", r, [end])
            self._join(f, f"{c}/in{i}/rebuilt", r, rb_ready[-1:] if rebuild else [])
            prev_p = f"{c}/rebuild_out{s}" if i == 0 else f"{c}/in{i - 1}/P{s}"
            prev_q = f"{c}/in{n - 1}/P{s}" if i == 0 else f"{c}/in{i - 1}/Q{s}"
            names, end, grad_done = self._collectives(f, bwd_calls, bwd_sec, r,
                                                      prev_p if inside else prev_q,
                                                      [bwd] if grad else [], c, "backward",
                                                      self.copy_seconds(bwd_held, tensor.dtype.itemsize))
            reader = self._gradient_reader(p, r)
            why = "parameter gradient" if self.ops[p].kind == "variable" else "activation gradient"
            # with ``late_release``, each step's input and result live until the step's
            # value has been read: the next step, else the gradient's reader
            for m, (task, call, held) in enumerate(zip(names, bwd_calls, bwd_held)):
                last = m + 1 == len(names) and reader
                held_to = [task] + self.held_until(names, m, reader)
                if held.moved_in:     # moved as soon as its input exists
                    ready = self._join(f, f"{call.name}/ready", r, [names[m - 1] if m else bwd])
                    f.add_buffer(f"{task}:moved in", held.moved_in, "gradient in flight",
                                 alloc=ready, free_after=held_to, rank=r)
                if held.scratch:
                    f.add_buffer(f"{task}:scratch", held.scratch, "gradient in flight",
                                 alloc=task, free_after=held_to, rank=r)
                after = (reader if last else names[m + 1:m + 2]) + \
                    self.direct_input_held(names, bwd_held, m + 1, reader)
                f.add_buffer(f"{task}:buf", held.out, why if last else "gradient in flight",
                             alloc=task, free_after=[task] + after, rank=r)
            # the gradient the consumer computed is read by the first backward collective
            # (or the transpose before it; with ``late_release``, until its value has
            # been read), else by the reader itself
            if not names:
                first = reader if grad else []
            elif bwd_held[0].moved_in:
                first = [f"{bwd_calls[0].name}/ready{s}"]
            else:
                first = names[:1] + self.direct_input_held(names, bwd_held, 0, reader)
            if grad and not names and self.ops[p].kind == "variable" and \
                    (ep.backward_steps or self.options.late_release):
                # a parameter's gradient sliced locally: TensorFlow's executor (one
                # inter-op thread) defers the split behind the backward's own chain of
                # ops, so the whole gradient lives until the backward ends; with
                # ``late_release``, so may the update that reads it directly
                first = first + [f"backward/end{s}"]
            self._join(f, f"{c}/in{i}/grad_read", r, first)
            self._join(f, f"{c}/in{i}/P", r, [end] if inside else [prev_p])
            self._join(f, f"{c}/in{i}/Q", r, [prev_q] if inside else [end])
            self._join(f, f"{c}/in{i}/grad", r, grad_done[-1:] or ([bwd] if grad else []))


def _saved_io_bytes(op, config: Config) -> int:
    """The saved inputs' and outputs' bytes that ``configs.saved_bytes`` counts (the rest
    of it is what backward keeps inside the op)."""
    total = sum(input_layout(op, config, i).local_bytes(op.inputs[i].shape,
                                                        op.inputs[i].dtype.itemsize)
                for i in op.space.saved_inputs)
    return total + sum(output_layout(op, config, i).local_bytes(op.outputs[i].shape,
                                                                 op.outputs[i].dtype.itemsize)
                       for i in op.space.saved_outputs)
