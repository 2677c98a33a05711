"""Idioms of TensorFlow 1.x training scripts beyond the ops: ``tf.Variable`` with random or
constant initial values, ``get_shape()[i].value``, int64 labels and ids, collections and
``get_variable``'s regularizer, ``stack``/``unstack``, ``zeros_like``, scalar ``constant``
(one process; values against ``tf.compat.v1`` where TensorFlow computes them)."""

import numpy as np
import pytest

import tensoropt as to

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 5.0


def _values(build, feed_value=X):
    x = to.placeholder(to.float32, feed_value.shape, name="x")
    outs = build(to, x)
    to.get_variable("something_to_plan", [1])
    to.build_execution_graph(plan=to.find_strategy())
    return to.run(list(outs), {x: feed_value})


CASES = {
    "stack axis 0": lambda m, x: (m.stack([x, x * 2.0], axis=0),),
    "stack axis -1": lambda m, x: (m.stack([x, x * 2.0, x * 3.0], axis=-1),),
    "unstack axis 1": lambda m, x: tuple(m.unstack(x, axis=1)),
    "unstack axis -1": lambda m, x: tuple(m.unstack(x, axis=-1)),
    "zeros_like": lambda m, x: (m.zeros_like(x) + x,),
    "ones_like": lambda m, x: (m.ones_like(x) * 3.0,),
    "constant": lambda m, x: (x * m.constant(0.5),),
    "constant shape": lambda m, x: (m.constant(0.25, shape=[2, 3, 4]) + x,),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_array_idioms_give_tensorflows_values(case):
    tf = pytest.importorskip("tensorflow")
    expected = [t.numpy() for t in CASES[case](tf.compat.v1, tf.constant(X))]
    got = _values(CASES[case])
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_shape_dimensions_have_tf1_value():
    x = to.placeholder(to.float32, [16, 32, 3], name="x")
    assert x.get_shape()[1].value == 32 and x.shape[-1].value == 3
    assert x.get_shape()[1:].as_list() == [32, 3]
    flat = to.reshape(x, [16, -1])
    assert flat.get_shape()[1].value == 96 and int(flat.shape[1]) == 96


def test_int64_labels_and_ids_train_as_int32_ones_do():
    def run(dtype):
        to.reset_default_graph()
        ids = to.placeholder(dtype, [4, 3], name="ids")
        labels = to.placeholder(dtype, [4], name="labels")
        table = to.get_variable("table", [10, 5], initializer=to.constant_initializer(
            np.linspace(-1, 1, 50).reshape(10, 5)))
        w = to.get_variable("w", [5, 6], initializer=to.constant_initializer(np.linspace(-1, 1, 30).reshape(5, 6)))
        logits = to.matmul(to.reduce_mean(to.nn.embedding_lookup(table, ids), axis=1), w)
        loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        step = to.train.GradientDescentOptimizer(0.5).minimize(loss)
        to.build_execution_graph(plan=to.find_strategy())
        feed = {ids: np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9], [0, 1, 2]]), labels: np.array([0, 5, 2, 1])}
        return [to.run([loss, step], feed)[0] for _ in range(3)]

    assert run(to.int64) == run(to.int32)


def test_collections_and_regularizers():
    w = to.get_variable("w", [3, 2], initializer=to.constant_initializer(np.ones((3, 2))),
                        regularizer=to.contrib.layers.l2_regularizer(0.1))
    with to.variable_scope("head"):
        v = to.get_variable("v", [2], initializer=to.constant_initializer([3.0, 4.0]),
                            regularizer=lambda t: to.reduce_sum(t))
        to.get_variable("frozen", [2], trainable=False, regularizer=to.contrib.layers.l2_regularizer(0.0))
    x = to.placeholder(to.float32, [1, 3], name="x")
    to.add_to_collection("losses", to.reduce_sum(to.matmul(x, w)))
    assert [t.name for t in to.trainable_variables()] == ["w:0", "head/v:0"]
    assert [t.name for t in to.global_variables()] == ["w:0", "head/v:0", "head/frozen:0"]
    assert [t.name for t in to.get_collection(to.GraphKeys.TRAINABLE_VARIABLES, scope="head")] == ["head/v:0"]
    assert len(to.losses.get_regularization_losses()) == 2, "a zero scale adds no loss"
    total = to.add_n(to.get_collection("losses")) + to.losses.get_regularization_loss()
    to.build_execution_graph(plan=to.find_strategy())
    # 2 (x . w, x = ones) + 0.1 * sum(w^2) / 2 + sum(v)
    assert to.run(total, {x: np.ones((1, 3), np.float32)}) == pytest.approx(6.0 + 0.3 + 7.0)


def test_regularization_loss_of_none_is_zero():
    to.get_variable("w", [2])
    zero = to.losses.get_regularization_loss()
    to.build_execution_graph(plan=to.find_strategy())
    assert to.run(zero) == 0.0


@pytest.mark.parametrize("call, named", [
    (lambda: to.get_variable("w", [2], regularizer=0.1), "regularizer 0.1 is not callable"),
    (lambda: to.get_variable("w", [2], partitioner=object()), "partitioner=.* is not supported; leave it None"),
    (lambda: to.get_variable("w", [2], shapes=[2]), "unknown argument shapes=\\[2\\]"),
    (lambda: to.add_to_collection(to.GraphKeys.TRAINABLE_VARIABLES, 1), "the graph's own list of variables"),
    (lambda: to.constant(np.ones(3)), "records scalar constants only"),
    (lambda: to.unstack(to.placeholder(to.float32, [2, 3]), num=2, axis=1), "num=2, but .* has 3 slices"),
    (lambda: to.stack([to.placeholder(to.float32, [2]), to.placeholder(to.float32, [3])]), "shapes differ"),
])
def test_misuse_is_refused_by_name(call, named):
    with pytest.raises(ValueError, match=named):
        call()


def test_tf1_variable_takes_random_constant_and_array_initial_values():
    w = to.Variable(to.truncated_normal([200, 50], stddev=0.1))
    b = to.Variable(to.constant(0.1, shape=[50]))
    with to.variable_scope("block"):
        z = to.Variable(to.zeros([3]), name="z", trainable=False)
    e = to.Variable(np.eye(3, dtype=np.float32))
    assert [v.op.name for v in (w, b, z, e)] == ["Variable", "Variable_1", "block/z", "Variable_2"]
    assert isinstance(w, to.Variable) and w.trainable and not z.trainable
    assert [op.kind for op in to.get_default_graph().operations] == ["variable"] * 4, "the fills are dropped"
    to.build_execution_graph(plan=to.find_strategy())
    wv, bv, zv, ev = to.run([w, b, z, e])
    assert np.abs(wv).max() <= 0.2 + 1e-6 and 0.07 < wv.std() < 0.1   # truncated at two stddevs
    np.testing.assert_array_equal(bv, np.full(50, 0.1, np.float32))
    np.testing.assert_array_equal(zv, np.zeros(3))
    np.testing.assert_array_equal(ev, np.eye(3))


def test_tf1_variable_of_a_computed_tensor_says_what_to_pass():
    x = to.placeholder(to.float32, [3], name="x")
    with pytest.raises(ValueError, match=r"initial value multiply:0 is computed by the graph \(multiply\).*give a numpy array"):
        to.Variable(x * 2.0)
    with pytest.raises(ValueError, match="give an initial value"):
        to.Variable()


def test_get_variable_takes_a_value_as_its_initializer_and_its_shape_from_it():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    with to.variable_scope("emb"):
        e = to.get_variable("table", initializer=table)
        c = to.get_variable("c", initializer=to.constant(0.5, shape=[2]))
        n = to.get_variable("n", initializer=[1.0, 2.0], trainable=False)
        i = to.get_variable("i", initializer=np.array([3, 4], np.int32), trainable=False)
    assert [tuple(v.shape) for v in (e, c, n, i)] == [(4, 3), (2,), (2,), (2,)]
    assert [v.dtype for v in (e, c, n, i)] == [to.float32, to.float32, to.float32, to.int32]
    with pytest.raises(ValueError, match=r"get_variable 'emb/bad': initializer is a value.*leave shape=\[4, 3\] out"):
        with to.variable_scope("emb"):
            to.get_variable("bad", [4, 3], initializer=table)
    with pytest.raises(ValueError, match="get_variable 'words': initial value .* is not numeric"):
        to.get_variable("words", initializer=["a", "b"])
    to.build_execution_graph(plan=to.find_strategy())
    ev, cv, nv, iv = to.run([e, c, n, i])
    np.testing.assert_array_equal(ev, table)
    np.testing.assert_array_equal(cv, [0.5, 0.5])
    np.testing.assert_array_equal(nv, [1.0, 2.0])
    np.testing.assert_array_equal(iv, [3, 4])


def test_the_launcher_says_how_many_ranks_started_this_process():
    from tensoropt.runtime import launched_ranks

    assert launched_ranks({}) == 1
    assert launched_ranks({"OMPI_COMM_WORLD_SIZE": "4"}) == 4
    assert launched_ranks({"PMI_SIZE": "2"}) == 2
    assert launched_ranks({"OMPI_COMM_WORLD_SIZE": "", "PMI_SIZE": "x"}) == 1


def test_variable_scope_gives_a_scope_object_as_tensorflow_does():
    with to.variable_scope("block"):
        with to.variable_scope("conv1") as scope:
            assert (scope.name, scope.original_name_scope, scope.reuse) == ("block/conv1", "block/conv1/", None)
            w = to.get_variable("w", [2])
            h = to.nn.relu(w, name=scope.name.split("/")[-1])
            scope.reuse_variables()
            assert to.get_variable("w", [2]) is w and to.get_variable_scope().reuse
    assert h.op.name == "block/conv1/conv1"
    with to.variable_scope("elsewhere"):
        with to.variable_scope(scope) as again:        # entered again where it was, reusing
            assert again.name == "block/conv1" and to.get_variable("w", [2]) is w
    assert to.get_variable_scope().name == "" and not to.get_variable_scope().reuse
    to.get_variable("v", [3])
    to.get_variable_scope().reuse_variables()           # the top level: every scope reuses
    assert to.get_variable("v", [3]) is to.get_default_graph().variables["v"]
    with pytest.raises(ValueError, match="does not exist"):
        to.get_variable("new", [3])
