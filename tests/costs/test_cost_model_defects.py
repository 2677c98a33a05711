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


class ByKind:
    """allreduce 3 ms, reducescatter 1 ms, anything else 2 ms."""

    def time_s(self, collective, nbytes, group_size, stride):
        return {"allreduce": 3e-3, "reducescatter": 1e-3}.get(collective, 2e-3)


def test_partial_output_reduce_scatters_straight_into_the_consumer_split():
    from tensoropt.configs import Config, op_collectives, output_layout
    x = to.placeholder(to.float32, [B, C], name="x")
    w = to.get_variable("w", [C, H])
    h = to.matmul(x, w, name="mm")                      # k = C, split 2 ways below
    out = to.nn.relu(h, name="act")
    to.train.GradientDescentOptimizer(0.1).minimize(to.reduce_sum(out))
    graph = to.get_default_graph()
    model = CostModel(graph, N, ByKind(), PEAK)
    space, _ = build_space(graph, model)
    mm, act = graph.get_operation_by_name("mm"), graph.get_operation_by_name("act")
    reduce_k = [c for c in space.configs[mm] if c.axis_dims == ("k",)]
    assert {c.partial_out for c in reduce_k} == {False, True}, "both ways to finish the k split"
    summed, partial = sorted(reduce_k, key=lambda c: c.partial_out)
    # the op's own all-reduce of its output is gone; its output is partial on axis 0
    assert [c.kind for c in op_collectives(mm, summed, (True, True)) if c.phase == "forward"] == ["allreduce"]
    assert [c for c in op_collectives(mm, partial, (True, True)) if c.phase == "forward"] == []
    assert model.op_cost(mm, summed).sync_s - model.op_cost(mm, partial).sync_s == pytest.approx(3e-3)
    assert output_layout(mm, partial, 0) == Layout((N,), (-1, -1), frozenset({0}))
    # into relu split by rows: one reduce-scatter (1 ms) forward, an all-gather (2 ms) back
    rows = Config((N,), ("d0",))
    table = _table(space, "mm", "act")
    u = int(table.src_ids[space.config_index(mm, partial)])
    v = int(table.dst_ids[space.config_index(act, rows)])
    (alt,) = table.alternatives[(u, v)]
    conv = model.conversions(h, alt)
    assert [s.kind for s in conv["forward"].steps] == ["reducescatter"]
    assert [s.kind for s in conv["backward"].steps] == ["allgather"]
    assert alt.time_s == pytest.approx(1e-3 + 2e-3)
    # the same split with the op's own all-reduce: 3 ms in the op, then a free slice
    u2 = int(table.src_ids[space.config_index(mm, summed)])
    (alt2,) = table.alternatives[(u2, v)]
    assert alt2.time_s == pytest.approx(2e-3)       # slice forward, all-gather back
    assert partial in space.configs[mm] and str(partial).endswith("partial-out")
    # and a plan file carries it
    from tensoropt.configs import config_of, op_config
    from tensoropt.plan import OpConfig
    oc = op_config(partial)
    assert oc.to_dict()["partial_out"] is True and OpConfig.from_dict(oc.to_dict()) == oc
    assert "partial_out" not in op_config(summed).to_dict()


def test_a_loss_never_stays_partial():
    x = to.placeholder(to.float32, [B, C], name="x")
    w = to.get_variable("w", [C, H])
    loss = to.reduce_sum(to.matmul(x, w), name="loss")
    to.train.GradientDescentOptimizer(0.1).minimize(loss)
    graph = to.get_default_graph()
    space, _ = build_space(graph, CostModel(graph, N, ByKind(), PEAK))
    assert not any(c.partial_out for c in space.configs[graph.get_operation_by_name("loss")])
    assert any(c.partial_out for c in space.configs[graph.get_operation_by_name("MatMul")])
