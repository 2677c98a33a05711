"""The buffers TensorFlow's lowering holds for a conversion's steps (closed forms by
hand), and the simulated peak of a conversion that moves a weight's columns."""

import importlib.util
import pathlib

import numpy as np
import pytest

import tensoropt as to
from reschedule import Layout, Step
from tensoropt import models
from tensoropt.costs.collective_times import AnalyticalCollectives
from tensoropt.costs.model import CostModel
from tensoropt.search.driver import sample_plan, sampling_space
from tensoropt.simulator import PlanSimulator, SimOptions
from tensoropt.simulator.memory import _held_ends, _lifetimes
from tensoropt.simulator.step_buffers import (StepBuffers, conversion_step_buffers, split_copies,
                                              transpose_copies)

_HELPERS = importlib.util.spec_from_file_location(
    "sim_plan_models", pathlib.Path(__file__).with_name("plan_models.py"))
plan_models = importlib.util.module_from_spec(_HELPERS)
_HELPERS.loader.exec_module(plan_models)

L = Layout.parse
SHAPE, F32 = (64, 32), 4                 # a [64, 32] float32 tensor: 8192 B in all
FULL, HALF = 64 * 32 * 4, 64 * 32 * 2


def test_transpose_and_split_copy_only_when_tensorflow_moves_data():
    assert not transpose_copies((64, 32), 0)         # already in front
    assert transpose_copies((64, 16), 1)
    assert not transpose_copies((1, 16), 1)          # only a size-1 dim moves: a reshape
    assert not split_copies((64, 32), 0, 2, 4)       # 128 B rows: views
    assert split_copies((64, 32), 1, 2, 4)
    assert split_copies((512,), 0, 2, 4)             # 4 B inner block: not aligned, copies
    assert not split_copies((64, 32), 1, 1, 4)       # one piece: the input itself


def test_allgather_of_columns_holds_the_moved_input_the_gathered_and_the_moved_back():
    step = Step.make_allgather(L("[2] R,S0"), 0)
    held = conversion_step_buffers([step], SHAPE, F32)
    # copies: the columns moved to the front (HALF), the gathered moved back (FULL)
    assert held.steps == (StepBuffers(moved_in=HALF, scratch=FULL, out=FULL, copied=HALF + FULL),)
    assert not held.view_of_input
    rows = conversion_step_buffers([Step.make_allgather(L("[2] S0,R"), 0)], SHAPE, F32)
    assert rows.steps == (StepBuffers(0, 0, FULL),)  # dim 0: no transpose, no copy


def test_a_split_after_a_gather_copies_unless_it_splits_rows():
    gather = Step.make_allgather(L("[2] S0,R"), 0)                   # -> R,R
    by_cols = conversion_step_buffers([gather, Step.make_slice(L("[2] R,R"), 0, 1)], SHAPE, F32)
    # the split writes both halves (FULL), keeps one; the gathered input dies with it
    assert by_cols.steps == (StepBuffers(0, FULL + HALF, HALF, copied=FULL),)
    by_rows = conversion_step_buffers([gather, Step.make_slice(L("[2] R,R"), 0, 0)], SHAPE, F32)
    assert by_rows.steps == (StepBuffers(0, 0, FULL),)               # a view of the gathered


def test_a_conversion_of_slices_only_is_a_view_or_one_copy():
    rows = conversion_step_buffers([Step.make_slice(L("[2] R,R"), 0, 0)], SHAPE, F32)
    assert rows.view_of_input and rows.steps == (StepBuffers(0, 0, 0),)
    cols = conversion_step_buffers([Step.make_slice(L("[2] R,R"), 0, 1)], SHAPE, F32)
    assert not cols.view_of_input and cols.steps == (StepBuffers(0, 0, HALF, copied=FULL),)


def test_alltoall_holds_the_received_buffer_and_moved_pieces_besides_its_result():
    step = Step.make_alltoall(L("[2] S0,R"), 0, 1)                   # rows -> columns
    held = conversion_step_buffers([step], SHAPE, F32)
    # moves dim 1 to the front (a copy of the rows block), receives HALF, moves the
    # pieces back (HALF) and concatenates them (HALF)
    assert held.steps == (StepBuffers(moved_in=HALF, scratch=2 * HALF, out=HALF, copied=3 * HALF),)


def test_allreduce_holds_its_result_only():
    step = Step.make_allreduce(Layout((2,), (-1, -1), frozenset({0})), 0)
    assert conversion_step_buffers([step], SHAPE, F32).steps == (StepBuffers(0, 0, FULL),)


# -- in the simulated step ----------------------------------------------------------------------

def _column_gathers_of_weights(options=None, **model_options):
    """``(timeline, edge, block bytes, gathered bytes, gather task)`` wherever a sampled
    plan of the tiny MLP on 2 devices gathers a weight split by columns for its matmul."""
    models.build("mlp", size="tiny")
    graph = to.get_default_graph()
    cl = plan_models.cluster(2)
    model = CostModel(graph, 2, AnalyticalCollectives(cl), cl.peak_flops, **model_options)
    space, sim = sampling_space(graph, model), PlanSimulator(graph, model, cl, options)
    rng = np.random.default_rng(3)
    ops = {op.name: op for op in graph.operations}
    for _ in range(12):
        plan = sample_plan(space, rng)
        t = sim.simulate_full(sim.versions_for_plan(plan))
        for e in plan.edges:
            steps = e.forward_steps or ()
            if ops[e.producer].kind != "variable" or len(steps) != 1 or steps[0].kind != "allgather" \
                    or steps[0].src_dim != 1:
                continue
            tensor = ops[e.producer].outputs[0]
            yield (t, e, e.src_layout.local_bytes(tensor.shape, 4), steps[0].dst.local_bytes(tensor.shape, 4),
                   f"allgather/{e.consumer}/in{e.input}/0")


@pytest.mark.parametrize("holds", [False, True])
def test_a_gather_of_a_weight_by_columns_holds_its_moved_block_from_the_step_start_until_the_gather_ends(holds):
    # Wherever a weight split by columns is gathered for its matmul, TensorFlow transposes
    # the weight's block as soon as the step starts (nothing orders the transpose after
    # the collective chain) and horovod holds it until the gather ends; the gathered block
    # and the one moved back are both live during the gather. With late_release (the
    # fit check's bound), the moved block and the gathered one live until the matmul
    # that reads the gather's value ends.
    checked = 0
    for t, e, block, gathered, gather in _column_gathers_of_weights(SimOptions(late_release=holds)):
        b = t.graph.buffers
        alloc, free = _lifetimes(t)
        start = dict(zip(t.graph.names, t.start_ps.tolist()))
        end = dict(zip(t.graph.names, t.end_ps.tolist()))
        size = dict(zip(b.names, b.size_bytes.tolist()))
        moved = b.names.index(f"{gather}:moved in")
        assert size[f"{gather}:moved in"] == block
        assert alloc[moved] == end[f"{e.producer}/out0"] < start[gather]
        # with late_release, horovod may also keep them until its next collective ends
        held_to = max(end[f"{e.consumer}/fwd"], int(_held_ends(t)[t.graph.index[gather]])) if holds \
            else end[gather]
        assert end[gather] < end[f"{e.consumer}/fwd"]
        assert free[moved] == held_to
        assert size[f"{gather}:scratch"] == gathered          # before it moves back
        assert free[b.names.index(f"{gather}:scratch")] == held_to
        assert size[f"{e.consumer}/in{e.input}:copy"] == gathered
        checked += 1
    assert checked >= 2


def _first_forward_reader(t, e) -> str:
    """The task that first reads edge ``e``'s source in the forward: its first forward
    conversion step, its slicing copy, else the consumer's forward."""
    g = t.graph
    steps = sorted((t.start_ps[k], n) for k, n in enumerate(g.names) if g.kind(k) == "collective"
                   and f"/{e.consumer}/in{e.input}/" in n and "/grad/" not in n and "/rebuild" not in n)
    if steps:
        return steps[0][1]
    sliced = f"{e.consumer}/in{e.input}/slice"
    return sliced if sliced in g.names else f"{e.consumer}/fwd"


@pytest.mark.parametrize("holds", [False, True])
def test_an_ops_own_partial_sum_all_reduce_writes_its_sum_to_a_new_buffer(holds):
    # An op whose reduction dim is split all-reduces its output itself. Horovod's
    # all-reduce writes its result to a new buffer: the partial sum and the sum are both
    # live during it. With late_release (the fit check's bound), the partial sum lives
    # until the sum's readers have run.
    models.build("mlp", size="tiny")
    graph = to.get_default_graph()
    cl = plan_models.cluster(2)
    model = CostModel(graph, 2, AnalyticalCollectives(cl), cl.peak_flops)
    space = sampling_space(graph, model)
    sim = PlanSimulator(graph, model, cl, SimOptions(late_release=holds))
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(16):
        plan = sample_plan(space, rng)
        t = sim.simulate_full(sim.versions_for_plan(plan))
        b, names = t.graph.buffers, list(t.graph.names)
        alloc, free = _lifetimes(t)
        start, end = dict(zip(names, t.start_ps.tolist())), dict(zip(names, t.end_ps.tolist()))
        for op in graph.operations:
            task = f"allreduce/{op.name}/out0/axis0"
            if task not in names:
                continue
            partial, out = b.names.index(f"{task}:partial sum"), b.names.index(f"{op.name}:out0")
            assert b.size_bytes[partial] == b.size_bytes[out] > 0
            assert alloc[partial] == start[f"{op.name}/fwd"]
            assert alloc[out] == start[task] >= end[f"{op.name}/fwd"]
            readers = [_first_forward_reader(t, e) for e in plan.edges if e.producer == op.name]
            if holds:   # until the readers ran, and horovod's next collective after each ended
                held = dict(zip(names, _held_ends(t).tolist()))
                assert free[partial] == max([held[task]] + [held[n] for n in readers])
            else:
                assert free[partial] == end[task]
            checked += 1
    assert checked >= 3


def test_a_gather_of_columns_takes_the_time_of_its_copies_before_its_consumer_runs():
    # With a calibrated copy speed, the transposes around such a gather (the block moved
    # in, the gathered moved back) run as a compute task after the gather, and the
    # matmul that reads the gathered weight waits for it.
    speed = 1e8                                          # 100 MB/s: copies show
    checked = 0
    for t, e, block, gathered, gather in _column_gathers_of_weights(copy_bytes_per_s=speed):
        start = dict(zip(t.graph.names, t.start_ps.tolist()))
        end = dict(zip(t.graph.names, t.end_ps.tolist()))
        copies = f"{gather}/copies"
        assert end[copies] - start[copies] == round((block + gathered) / speed * 1e12)
        assert start[copies] >= end[gather]
        assert start[f"{e.consumer}/fwd"] >= end[copies]
        checked += 1
    assert checked >= 2


def _embedding_model(optimizer):
    to.reset_default_graph()
    ids = to.placeholder(to.int32, [8], name="ids")
    table = to.get_variable("table", [100, 16])
    h = to.nn.embedding_lookup(table, ids)
    loss = to.reduce_mean(h * h)
    optimizer.minimize(loss)
    return to.get_default_graph(), table


@pytest.mark.parametrize("optimizer, copies", [(to.train.AdamOptimizer(0.1), 2),
                                               (to.train.MomentumOptimizer(0.1, 0.9), 0)])
def test_adams_sparse_update_of_an_embedding_holds_two_scaled_slot_copies_from_the_step_start(
        optimizer, copies):
    # TensorFlow's Adam updates an embedding's rows sparsely: it first assigns m * beta1 and
    # v * beta2 into new slot buffers, needing no gradient, so as the step starts; the
    # step's allocation records then hold both copies to its end. Momentum updates in place.
    graph, table = _embedding_model(optimizer)
    cl = plan_models.cluster(1)
    model = CostModel(graph, 1, AnalyticalCollectives(cl), cl.peak_flops)
    sim = PlanSimulator(graph, model, cl)
    plan = sample_plan(sampling_space(graph, model), np.random.default_rng(0))
    t = sim.simulate_full(sim.versions_for_plan(plan))
    b = t.graph.buffers
    alloc, free = _lifetimes(t)
    names = list(b.names)
    if not copies:
        assert "table:rescaled slots" not in names
        return
    j = names.index("table:rescaled slots")
    assert b.size_bytes[j] == copies * table.nbytes == 2 * 100 * 16 * 4
    assert alloc[j] == 0 and free[j] == -1                 # from the start, never freed

