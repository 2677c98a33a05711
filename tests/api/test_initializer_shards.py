"""Variables are drawn shard by shard: any shard equals that part of the value one process
draws, for every initializer kind and for shard boundaries that cut blocks anywhere; the
distributions stay TensorFlow's (fans of the logical shape); and the graph of a shard
never holds the whole variable."""

import itertools
import math

import numpy as np
import pytest

import tensoropt as to
from tensoropt import initializers
from tensoropt.execution.lowering import whole_tensor_context
from tensoropt.ops.registry import LoweringContext

tf = pytest.importorskip("tensorflow")

INITIALIZERS = {
    "zeros": to.zeros_initializer(),
    "ones": to.ones_initializer(),
    "constant": to.constant_initializer(0.25),
    "random_normal": to.random_normal_initializer(0.5, 2.0, seed=3),
    "truncated_normal": to.truncated_normal_initializer(-1.0, 0.5),
    "random_uniform": to.random_uniform_initializer(-2.0, 3.0, seed=1),
    "glorot_uniform": to.glorot_uniform_initializer(),
    "glorot_normal": to.glorot_normal_initializer(seed=9),
    "he_normal": to.he_normal(),
    "he_uniform": to.he_uniform(seed=4),
    **{f"variance_scaling_{mode}_{dist}": to.variance_scaling_initializer(1.5, mode, dist)
       for mode, dist in [("fan_in", "normal"), ("fan_out", "untruncated_normal"),
                          ("fan_avg", "uniform"), ("fan_in", "truncated_normal")]},
}


def _boxes(shape, cuts):
    """Every box of the grid cut at ``cuts`` (per axis, the inner boundaries)."""
    per_axis = [list(zip([0, *c], [*c, n])) for n, c in zip(shape, cuts)]
    for box in itertools.product(*per_axis):
        yield tuple(a for a, _ in box), tuple(b - a for a, b in box)


# Shapes and cuts that split unevenly and cut blocks in the middle (blocks of at most 5
# elements below): 6 cut as 1+4+1 and 3+3, 10 as 3+4+3, 7 as 2+5, 3 over 3.
CASES = [((6, 10), [(1, 5), (3, 7)]), ((6, 10), [(3,), ()]), ((3, 2, 7), [(1, 2), (), (2,)]),
         ((7,), [(2, 3, 6)]), ((), [])]


@pytest.mark.parametrize("kind", sorted(INITIALIZERS))
def test_every_shard_equals_the_single_process_values(kind, monkeypatch):
    monkeypatch.setattr(initializers, "BLOCK_ELEMENTS", 5)
    init = INITIALIZERS[kind]
    for shape, cuts in CASES:
        whole = init.shard(tf, shape, tf.float32, key=77).numpy()
        assert whole.shape == shape
        assembled = np.full(shape, np.nan, np.float32)
        for offsets, local in _boxes(shape, cuts):
            part = init.shard(tf, shape, tf.float32, 77, offsets, local).numpy()
            assert part.shape == local
            assembled[tuple(slice(o, o + n) for o, n in zip(offsets, local))] = part
        np.testing.assert_array_equal(assembled, whole, err_msg=f"{kind} {shape} cut at {cuts}")


def test_blocks_change_the_values_so_shards_really_come_from_blocks(monkeypatch):
    """With one block per tensor the values differ from many small blocks: the test above
    does compare block-assembled shards, not one draw sliced."""
    init = to.glorot_uniform_initializer()
    one_block = init.shard(tf, (6, 10), tf.float32, 77).numpy()
    monkeypatch.setattr(initializers, "BLOCK_ELEMENTS", 5)
    many = init.shard(tf, (6, 10), tf.float32, 77).numpy()
    assert not np.array_equal(one_block, many)


def _variable_value(name, shape, init, offsets=None, local=None, seed=None):
    to.reset_default_graph()
    var = to.get_variable(name, shape, initializer=init)
    op = var.op
    with tf.Graph().as_default():
        if offsets is None:
            ctx = whole_tensor_context(op, seed)
        else:
            ctx = LoweringContext(output_shapes=[local], dim_sizes=dict(op.space.dims),
                                  local_dim_sizes=dict(op.space.dims), seed=seed,
                                  extra={"shard_offsets": list(offsets)})
        v = op.op_def.lower(tf, op, [], ctx)[0]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return session.run(v)


def test_lowered_variable_shards_equal_the_whole_lowered_variable():
    """The path a plan takes: VariableDef.lower with the builder's shard offsets."""
    init = to.he_normal()
    whole = _variable_value("layer/kernel", (8, 6), init, seed=5)
    for offsets, local in _boxes((8, 6), [(4,), (2, 4)]):
        part = _variable_value("layer/kernel", (8, 6), init, offsets, local, seed=5)
        np.testing.assert_array_equal(part, whole[offsets[0]:offsets[0] + local[0],
                                                   offsets[1]:offsets[1] + local[1]])
    assert not np.array_equal(whole, _variable_value("layer/kernel", (8, 6), init, seed=6)), \
        "the graph seed must change the values"
    assert not np.array_equal(whole, _variable_value("other/kernel", (8, 6), init, seed=5)), \
        "each variable must get its own values"


def _stats(init, shape):
    value = init.shard(tf, shape, tf.float32, key=123).numpy()
    return value, float(value.std())


def test_distributions_use_the_fans_of_the_logical_shape():
    shape = (3, 3, 64, 128)   # fan_in 576, fan_out 1152
    fan_in, fan_out = 3 * 3 * 64, 3 * 3 * 128
    value, std = _stats(to.glorot_uniform_initializer(), shape)
    limit = math.sqrt(6 / (fan_in + fan_out))
    assert np.abs(value).max() <= limit and np.abs(value).max() > 0.99 * limit
    assert std == pytest.approx(limit / math.sqrt(3), rel=0.02)
    value, std = _stats(to.he_normal(), shape)        # truncated: |x| <= 2 sigma_raw
    raw = math.sqrt(2 / fan_in) / 0.87962566103423978
    assert np.abs(value).max() <= 2 * raw * 1.0001
    assert std == pytest.approx(math.sqrt(2 / fan_in), rel=0.02)
    _, std = _stats(to.variance_scaling_initializer(3.0, "fan_out", "untruncated_normal"), shape)
    assert std == pytest.approx(math.sqrt(3 / fan_out), rel=0.02)
    _, std = _stats(to.glorot_normal_initializer(), (300, 500))
    assert std == pytest.approx(math.sqrt(2 / 800), rel=0.02)
    value, std = _stats(to.truncated_normal_initializer(1.0, 0.5), (400, 400))
    assert value.min() >= 0.0 and value.max() <= 2.0
    value, _ = _stats(to.random_normal_initializer(0.0, 1.0), (400, 400))
    assert np.abs(value).max() > 3.0, "random_normal is not truncated"
    value, _ = _stats(to.random_uniform_initializer(-2.0, 3.0), (400, 400))
    assert value.min() >= -2.0 and value.max() < 3.0 and value.mean() == pytest.approx(0.5, abs=0.02)


def test_constant_arrays_and_their_errors():
    values = np.arange(12, dtype=np.float32)
    init = to.constant_initializer(values)
    np.testing.assert_array_equal(init.shard(tf, (3, 4), tf.float32, 0).numpy(), values.reshape(3, 4))
    np.testing.assert_array_equal(init.shard(tf, (3, 4), tf.float32, 0, (1, 2), (2, 2)).numpy(),
                                  values.reshape(3, 4)[1:3, 2:4])
    assert init == to.constant_initializer(values.copy()) and hash(init) == hash(to.constant_initializer(values))
    with pytest.raises(ValueError, match="12 values .* shape \\(5,\\)"):
        init.shard(tf, (5,), tf.float32, 0, name="w")
    with pytest.raises(ValueError, match="not numeric"):
        to.constant_initializer("abc")
    with pytest.raises(ValueError, match="int32.*zeros/ones/constant"):
        to.glorot_uniform_initializer().shard(tf, (2, 2), tf.int32, 0, name="ids")
    with pytest.raises(ValueError, match="mode 'fan_sum'"):
        to.variance_scaling_initializer(mode="fan_sum")
    with pytest.raises(ValueError, match="distribution 'cauchy'"):
        to.variance_scaling_initializer(distribution="cauchy")


def test_a_shard_graph_never_holds_the_whole_variable():
    """A quarter of a 4096 x 4096 variable (16M elements, blocks of 1M): no tensor in the
    graph of its initial value is larger than the shard."""
    shape, local = (4096, 4096), (4096, 1024)
    graph = tf.Graph()
    with graph.as_default():
        for init in (to.glorot_uniform_initializer(), to.he_normal(), to.random_normal_initializer()):
            init.shard(tf, shape, tf.float32, 1, (0, 2048), local)
    sizes = [t.shape.num_elements() for op in graph.get_operations() for t in op.outputs
             if t.shape.is_fully_defined()]
    assert max(sizes) == math.prod(local)
    assert math.prod(initializers.block_shape(shape)) <= initializers.BLOCK_ELEMENTS


def test_block_shapes_depend_on_the_shape_only_and_bound_the_block():
    for shape in [(4096, 4096), (16384, 8192), (1000003,), (3, 3, 512, 512), (7, 11, 13, 17, 19)]:
        b = initializers.block_shape(shape)
        assert len(b) == len(shape) and all(1 <= x <= n for x, n in zip(b, shape))
        assert math.prod(b) <= initializers.BLOCK_ELEMENTS
        assert b == initializers.block_shape(shape)
    # power-of-two axes get power-of-two blocks, so even splits cut no block
    assert initializers.block_shape((16384, 8192)) == (1024, 1024)
