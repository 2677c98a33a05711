"""Hand-priced cases for the cost-model fixes of issue 16: a keep_producer consumer's
forward re-run is charged, and a keep_consumer saving is counted once. Every collective costs ``STEP_S`` (a flat provider), so a conversion
costs ``STEP_S`` per non-slice step and compute is FLOPs / ``PEAK``."""

import pytest

import tensoropt as to
from reschedule import Layout, plan_conversion
from tensoropt.configs import input_layout
from tensoropt.costs.model import FORWARD_SHARE, CostModel, StepCostFn
from tensoropt.search.space import build_space

B, C, H, N = 8, 6, 4, 2
STEP_S = 1e-3
PEAK = 1e9


class Flat:
    """Every collective costs STEP_S."""

    def time_s(self, collective, nbytes, group_size, stride):
        return STEP_S


def _steps_s(src, dst, shape):
    steps = plan_conversion(src, dst, shape, 4, StepCostFn(Flat())).steps
    return STEP_S * sum(s.kind != "slice" for s in steps)


def _table(space, producer, consumer):
    return next(t for t in space.edges if t.producer.name == producer and t.consumer.name == consumer)


def _alts(table, src, dst_config_pred):
    """{reuse: EdgeAlternative} of the pair (src, a dst whose consumer config passes)."""
    out = []
    for (u, v), alts in table.alternatives.items():
        if table.src_layouts[u] == src and dst_config_pred(v):
            out.append({a.reuse: a for a in alts})
    return out


def test_keep_producer_charges_the_cross_entropy_forward_rerun():
    x = to.placeholder(to.float32, [B, C], name="x")
    y = to.placeholder(to.int32, [B], name="y")
    w = to.get_variable("w", [C, C])
    logits = to.nn.relu(to.matmul(x, w), name="act")       # relu keeps its output
    ce = to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits, name="ce")
    to.train.GradientDescentOptimizer(0.1).minimize(to.reduce_mean(ce))
    graph = to.get_default_graph()
    model = CostModel(graph, N, Flat(), PEAK)
    space, _ = build_space(graph, model)
    table = _table(space, "act", "ce")
    op_ce = graph.get_operation_by_name("ce")
    # the cross-entropy split by rows (2 ways) reads its input split by rows; relu split by classes
    by_rows = Layout((N,), (0, -1))
    by_cols = Layout((N,), (-1, 0))
    row_configs = [c for c in space.configs[op_ce] if input_layout(op_ce, c, 1) == by_rows]
    assert row_configs, "the cross-entropy has a row-split configuration"
    rows_ids = {int(table.dst_ids[space.config_index(op_ce, c)]) for c in row_configs}
    pairs = _alts(table, by_cols, lambda v: v in rows_ids)
    assert pairs
    forward_rerun = 8.0 * B * C / N / PEAK * FORWARD_SHARE      # CE: 8 FLOPs per logit
    conv = _steps_s(by_cols, by_rows, (B, C))
    back = _steps_s(by_rows, by_cols, (B, C))
    for alts in pairs:
        assert alts["keep_both"].time_s == pytest.approx(conv + back, rel=1e-12)
        # keep_producer: the conversion again in backward, and the CE's forward again
        assert alts["keep_producer"].time_s == pytest.approx(2 * conv + back + forward_rerun, rel=1e-12)
        assert alts["keep_producer"].compute_s == pytest.approx(forward_rerun, rel=1e-12)


def test_keep_producer_of_an_op_whose_gradient_reads_no_output_costs_no_rerun():
    x = to.placeholder(to.float32, [B, C], name="x")
    w = to.get_variable("w", [C, H])
    h = to.nn.relu(x, name="act")
    out = to.matmul(h, w, name="mm")                        # matmul's gradient reads only inputs
    to.train.GradientDescentOptimizer(0.1).minimize(to.reduce_sum(out))
    graph = to.get_default_graph()
    model = CostModel(graph, N, Flat(), PEAK)
    space, _ = build_space(graph, model)
    table = _table(space, "act", "mm")
    for alts in table.alternatives.values():
        for a in alts:
            assert a.compute_s == 0.0
            if a.reuse == "keep_producer":
                keep_both = next(b for b in alts if b.reuse == "keep_both")
                assert a.time_s == pytest.approx(keep_both.time_s + _steps_s(a.src, a.dst, (B, C)))


def _softmax_graph(consumers: int):
    x = to.placeholder(to.float32, [B, C], name="x")
    s = to.nn.softmax(x, name="sm")                          # keeps its output; rebuildable from it
    loss = 0.0
    for k in range(consumers):
        w = to.get_variable(f"w{k}", [C, H])
        loss = loss + to.reduce_sum(to.matmul(s, w, name=f"mm{k}"))  # matmul keeps its input
    to.train.GradientDescentOptimizer(0.1).minimize(loss)
    return to.get_default_graph()


def test_keep_consumer_saving_is_the_producer_copy_when_one_consumer_keeps_it():
    graph = _softmax_graph(1)
    space, _ = build_space(graph, CostModel(graph, N, Flat(), PEAK))
    table = _table(space, "sm", "mm0")
    seen = 0
    for alts in table.alternatives.values():
        for a in alts:
            if a.reuse == "keep_consumer":
                assert a.memory_bytes == -a.src.local_bytes((B, C), 4)
                seen += 1
    assert seen, "keep_consumer is offered to a sole keeper"


def test_keep_consumer_is_not_offered_when_two_consumers_keep_the_tensor():
    graph = _softmax_graph(2)
    model = CostModel(graph, N, Flat(), PEAK)
    space, _ = build_space(graph, model)
    # each edge alone would save the producer's one copy: two edges would save it twice
    for name in ("mm0", "mm1"):
        table = _table(space, "sm", name)
        reuses = {a.reuse for alts in table.alternatives.values() for a in alts}
        assert "keep_both" in reuses and "keep_consumer" not in reuses, reuses
