"""Per-rank input in one process: ``input_slice`` names the block of a fed value that each
rank's execution graph holds, and ``run``'s feed rule takes the whole value or that block.

Each rank's graph is built with a ``RecordingHorovod`` (no mpirun); its placeholder's
TensorFlow shape must be the shape of the slice ``input_slice`` names, under plans that
split the batch, split a feature dim or replicate the input.
"""

import numpy as np
import pytest

import tensoropt as to
from tensoropt._tf import import_tensorflow
from tensoropt.costs.model import CostModel
from tensoropt.execution import PlanSharding
from tensoropt.execution.input_slices import input_slice, local_feed, local_shape
from tensoropt.execution.lowering import lower_graph
from tensoropt.execution.recording_hvd import RecordingHorovod
from tensoropt.search.driver import sample_plan, search_frontier

N = 4


class _AlphaBeta:
    def time_s(self, collective, nbytes, group_size, stride):
        return (group_size - 1) * (1e-5 + nbytes / group_size / 1e9)


def _mlp(batch=8):
    x = to.placeholder(to.float32, [batch, 12], name="x")
    y = to.placeholder(to.int32, [batch], name="y")
    w = to.get_variable("w", [12, 16], initializer=to.glorot_uniform_initializer(seed=1))
    h = to.nn.relu(to.matmul(x, w))
    wo = to.get_variable("wo", [16, 4], initializer=to.glorot_uniform_initializer(seed=2))
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=to.matmul(h, wo)))
    to.train.GradientDescentOptimizer(0.1).minimize(loss)
    return x, y, to.get_default_graph()


def _plans(graph):
    search = search_frontier(graph, CostModel(graph, N, _AlphaBeta(), 1e10))
    rng = np.random.default_rng(7)
    return [search.data_parallel_plan(), search.plans[0], search.plans[-1]] + \
        [sample_plan(search.space, rng) for _ in range(3)]


def _covers(slices_by_rank, shape):
    """How many ranks hold each element of a value of ``shape``."""
    count = np.zeros(shape, np.int64)
    for sl in slices_by_rank:
        count[sl] += 1
    return count


@pytest.mark.parametrize("batch, holders", [(8, 1), (6, N)])
def test_each_ranks_slice_is_the_shape_its_graph_holds(batch, holders):
    """Batch 8 splits over 4 ranks (each element held once); batch 6 does not, and every
    rank holds the whole input."""
    x, y, graph = _mlp(batch)
    tf = import_tensorflow()
    for plan in _plans(graph):
        slices = {x: [], y: []}
        for rank in range(N):
            hvd = RecordingHorovod(tf, N)
            sharding = PlanSharding(graph, plan, rank, hvd, hvd.process_sets())
            lowered = lower_graph(graph, tf, sharding)
            for tensor in (x, y):
                held = tuple(lowered.tensors[tensor].shape.as_list())
                sl = input_slice(sharding, tensor, rank)
                assert tuple(s.stop - s.start for s in sl) == held == local_shape(sharding, tensor, rank)
                slices[tensor].append(sl)
        for tensor in (x, y):
            count = _covers(slices[tensor], tensor.shape)
            assert count.min() == count.max() == holders, (tensor, plan.ops[tensor.op.name])


def test_data_parallel_gives_each_rank_its_rows():
    x, y, graph = _mlp()
    plan = _plans(graph)[0]
    for rank in range(N):
        sharding = PlanSharding(graph, plan, rank, None, {})
        assert input_slice(sharding, x, rank) == (slice(2 * rank, 2 * rank + 2), slice(0, 12))
        assert input_slice(sharding, y, rank) == (slice(2 * rank, 2 * rank + 2),)


def test_local_feed_takes_the_whole_value_or_the_ranks_slice_and_names_both_otherwise():
    x, y, graph = _mlp()
    plan = _plans(graph)[0]
    sharding = PlanSharding(graph, plan, 1, None, {})
    whole = np.arange(96, dtype=np.float32).reshape(8, 12)
    np.testing.assert_array_equal(local_feed(x, whole, sharding, 1), whole[2:4])
    part = whole[2:4] + 1
    assert local_feed(x, part, sharding, 1) is part
    with pytest.raises(ValueError) as e:
        local_feed(x, whole[:3], sharding, 1)
    assert str(e.value) == ("run: fed x a value of shape (3, 12); the placeholder has shape (8, 12) and "
                            "rank 1's slice of it, [2:4, 0:12] (tensoropt.input_slice), has shape (2, 12); "
                            "feed a value of either shape")
    # one process: the whole value only
    assert local_feed(x, whole, None, 0) is whole
    with pytest.raises(ValueError, match=r"fed x a value of shape \(2, 12\); the placeholder has shape \(8, 12\)$"):
        local_feed(x, whole[2:4], None, 0)


def test_to_input_slice_in_one_process_is_the_whole_value():
    x, y, graph = _mlp()
    to.build_execution_graph(plan=to.find_strategy())
    assert to.input_slice(x) == (slice(0, 8), slice(0, 12))
    assert to.input_slice(y) == (slice(0, 8),)
    other = to.Graph()
    with other.as_default():
        z = to.placeholder(to.float32, [8, 12], name="x")
    with pytest.raises(ValueError, match="is not a placeholder of the built graph"):
        to.input_slice(z)
