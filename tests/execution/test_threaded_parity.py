"""The in-process layer of the parity tests: every rank of a plan as a thread, collectives
executed with reschedule's numpy semantics (``ThreadedHorovod``), so the builder is
checked against one process in seconds, without mpirun (``tests/parallel/test_parity.py``
is the same check under mpirun and horovod)."""

import importlib.util
import pathlib

import numpy as np
import pytest

import tensoropt as to
from tensoropt.costs.model import CostModel
from tensoropt.execution.accounting import expected_collectives
from tensoropt.execution.threaded_hvd import CollectiveTimeout, Rendezvous, ThreadedJob
from tensoropt.search.driver import sample_plan, search_frontier

_DRIVER = pathlib.Path(__file__).resolve().parents[1] / "parallel" / "parity_driver.py"
_spec = importlib.util.spec_from_file_location("parity_driver_threaded", _DRIVER)
PARITY = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(PARITY)

STEPS = 2


def _model(name):
    to.reset_default_graph()
    loss, make_feed, *extra = PARITY.MODELS[name]()
    train_op = PARITY.training_step(loss, extra)
    graph = to.get_default_graph()
    rng = np.random.default_rng(0)
    return graph, loss, train_op, [make_feed(rng) for _ in range(STEPS)]


def _plans(graph, devices=4):
    search = search_frontier(graph, CostModel(graph, devices, PARITY.AlphaBeta(), 1e10))
    rng = np.random.default_rng(5)
    return ([search.plans[0], search.plans[-1], search.data_parallel_plan()]
            + [sample_plan(search.space, rng) for _ in range(3)] + PARITY.reduce_scatter_plans(search.space))


@pytest.mark.parametrize("name", list(PARITY.MODELS))
def test_every_rank_of_every_plan_trains_like_one_process(name):
    graph, loss, train_op, feeds = _model(name)
    ref_losses, ref_params = PARITY.reference(graph, loss, train_op, feeds)
    variables = graph.trainable_variables
    kinds = set()
    for index, plan in enumerate(_plans(graph)):
        label = f"{name} plan {index} ({plan.option})"
        job = ThreadedJob(graph, plan, timeout_s=30)
        try:
            losses = np.array([job.run([loss, train_op], feed) for feed in feeds])[:, :, 0]  # step, rank
            blocks = job.blocks(variables)
        finally:
            job.close()
        for rank in range(plan.parallelism):
            assert PARITY.rel(losses[:, rank], ref_losses) <= 1e-4, f"{label} rank {rank}: {losses[:, rank]}"
            layouts = job.shardings[rank]
            for v in variables:
                want = ref_params[v.op.name][layouts.layout_of(v).shard_slices(rank, v.shape)]
                assert PARITY.rel(blocks[rank][v.op.name], want) <= 1e-4, f"{label} rank {rank}: {v.op.name}"
        # every collective the plan's schedule names ran once per step on every rank
        built = {}
        for kind, _, _ in job.hvds[0].made:
            built[kind] = built.get(kind, 0) + 1
        assert built == {k: n for k, n in expected_collectives(graph, plan).items() if n}, label
        kinds |= {st.kind for e in plan.edges for st in e.forward_steps}
    assert kinds & {"allgather", "alltoall", "alltoallv", "reducescatter"}, f"{name}: no re-scheduling ran"


def test_a_plan_whose_collective_is_wrong_on_one_rank_differs_from_one_process(monkeypatch):
    """The layer can fail: a wrong sum in one collective shows in the losses."""
    graph, loss, train_op, feeds = _model("mlp")
    ref_losses, _ = PARITY.reference(graph, loss, train_op, feeds)
    import reschedule
    from tensoropt.execution import threaded_hvd

    def halved(kind, blocks, **kw):
        out = reschedule.group_collective_numpy(kind, blocks, **kw)
        return [x * 0.5 for x in out] if kind == "allreduce" else out

    monkeypatch.setattr(threaded_hvd, "group_collective_numpy", halved)
    plan = _plans(graph)[2]   # data parallel: gradients are all-reduced
    job = ThreadedJob(graph, plan, timeout_s=30)
    try:
        losses = [job.run([loss, train_op], feed)[0][0] for feed in feeds]
    finally:
        job.close()
    assert PARITY.rel(losses, ref_losses) > 1e-4


def test_a_collective_one_member_never_issues_times_out_naming_it():
    rendezvous = Rendezvous(timeout_s=0.2)
    with pytest.raises(CollectiveTimeout, match=r"'ar/x'.*rank\(s\) \[1\]"):
        rendezvous.exchange(("ar/x", 1), (0, 1), 0, np.ones(2), lambda xs: xs)


def test_each_rank_gets_its_own_copy_of_a_collective_result():
    """An allreduce's combine gives every member one array; TF may overwrite a tensor a
    numpy_function returned in place, so each rank must get its own buffer, and a rank's
    input must not be kept as a view of TF's memory."""
    import threading
    from types import SimpleNamespace

    from tensoropt.execution.recording_hvd import ProcessSet
    from tensoropt.execution.threaded_hvd import ThreadedHorovod

    bodies = {}

    def numpy_function(fn, inputs, dtype, name=None):
        bodies.setdefault(name, []).append(fn)
        return SimpleNamespace(set_shape=lambda shape: None)

    fake_tf = SimpleNamespace(numpy_function=numpy_function)
    rendezvous = Rendezvous(timeout_s=5)
    hvds = [ThreadedHorovod(fake_tf, 2, r, rendezvous) for r in range(2)]
    group = ProcessSet([0, 1])
    x = SimpleNamespace(dtype="float32", shape=[3])
    for h in hvds:
        h.allreduce(x, process_set=group, name="ar")
    inputs = [np.arange(3, dtype=np.float32) + r for r in range(2)]
    outs = [None, None]

    def one(r):
        outs[r] = bodies["ar"][r](inputs[r])

    threads = [threading.Thread(target=one, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(outs[0], inputs[0] + inputs[1])
    np.testing.assert_array_equal(outs[1], inputs[0] + inputs[1])
    assert not np.shares_memory(outs[0], outs[1]), "two ranks got one buffer"
    assert not any(np.shares_memory(o, i) for o in outs for i in inputs)
