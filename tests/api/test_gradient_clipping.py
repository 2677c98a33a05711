"""``compute_gradients`` / clip / ``apply_gradients`` train as ``tf.compat.v1`` does on one
process (losses, weights and the global norm over 3 steps), and a misuse is refused by
name. Under plans: the parity driver's ``activations`` model (threads in
tests/execution, mpirun in tests/parallel) and ``global_norm_calls`` below."""

import numpy as np
import pytest

import tensoropt as to
from tensoropt.execution.schedule import collective_schedule

STEPS = 3


def _data():
    rng = np.random.default_rng(6)
    w0 = rng.normal(size=(6, 5)).astype(np.float32)
    v0 = rng.normal(size=(5, 3)).astype(np.float32)
    batches = [(rng.normal(size=(4, 6)).astype(np.float32), rng.integers(0, 3, 4).astype(np.int32))
               for _ in range(STEPS)]
    return w0, v0, batches


CLIPS = {
    "global_norm": lambda m, grads: m.clip_by_global_norm(grads, 0.4),
    "global_norm inactive": lambda m, grads: m.clip_by_global_norm(grads, 1e3),
    "value": lambda m, grads: ([m.clip_by_value(g, -0.05, 0.05) for g in grads], None),
    "value then global_norm": lambda m, grads: m.clip_by_global_norm(
        [m.clip_by_value(g, -0.1, 0.1) for g in grads], 0.2),
}


def _tensoropt(clip):
    w0, v0, batches = _data()
    x = to.placeholder(to.float32, [4, 6], name="x")
    y = to.placeholder(to.int32, [4], name="y")
    w = to.get_variable("w", [6, 5], initializer=to.constant_initializer(w0))
    v = to.get_variable("v", [5, 3], initializer=to.constant_initializer(v0))
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(
        labels=y, logits=to.matmul(to.tanh(to.matmul(x, w)), v)))
    opt = to.train.MomentumOptimizer(0.3, 0.9)
    grads, variables = zip(*opt.compute_gradients(loss))
    grads, norm = CLIPS[clip](to, list(grads))
    step = opt.apply_gradients(zip(grads, variables))
    to.build_execution_graph(plan=to.find_strategy())
    out = [to.run([loss, step] + ([norm] if norm is not None else []), {x: xs, y: ys}) for xs, ys in batches]
    return np.array([o[0] for o in out]), [o[2] for o in out if len(o) > 2], to.run([w, v])


def _tensorflow(clip):
    tf = pytest.importorskip("tensorflow")
    w0, v0, batches = _data()
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [4, 6])
        y = tf.compat.v1.placeholder(tf.int32, [4])
        w = tf.compat.v1.get_variable("w", initializer=w0)
        v = tf.compat.v1.get_variable("v", initializer=v0)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=tf.matmul(tf.tanh(tf.matmul(x, w)), v)))
        opt = tf.compat.v1.train.MomentumOptimizer(0.3, 0.9)
        grads, variables = zip(*opt.compute_gradients(loss))
        grads, norm = CLIPS[clip](tf.compat.v1, list(grads))
        step = opt.apply_gradients(zip(grads, variables))
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            out = [sess.run([loss, step] + ([norm] if norm is not None else []), {x: xs, y: ys})
                   for xs, ys in batches]
            return np.array([o[0] for o in out]), [o[2] for o in out if len(o) > 2], sess.run([w, v])


@pytest.mark.parametrize("clip", sorted(CLIPS))
def test_clipped_training_matches_tensorflow(clip):
    losses, norms, (w, v) = _tensoropt(clip)
    tf_losses, tf_norms, (tf_w, tf_v) = _tensorflow(clip)
    np.testing.assert_allclose(losses, tf_losses, rtol=1e-5)
    np.testing.assert_allclose(norms, tf_norms, rtol=1e-5)
    np.testing.assert_allclose(w, tf_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v, tf_v, rtol=1e-5, atol=1e-6)
    if clip == "global_norm":
        assert min(norms) > 0.4, "the clip must bite for the test to mean anything"


def test_apply_gradients_unclipped_is_minimize():
    x = to.placeholder(to.float32, [4, 6], name="x")
    w = to.get_variable("w", [6, 5])
    u = to.get_variable("unused", [2])
    loss = to.reduce_sum(to.matmul(x, w))
    opt = to.train.GradientDescentOptimizer(0.1)
    pairs = opt.compute_gradients(loss)
    assert [(g is None, var) for g, var in pairs] == [(False, w), (True, u)]
    step = opt.apply_gradients(pairs)
    assert step.var_list == (w,) and step.clips == () and step.global_norm is None


def _two_losses():
    x = to.placeholder(to.float32, [4, 6], name="x")
    w = to.get_variable("w", [6, 5])
    v = to.get_variable("v", [5, 3])
    h = to.matmul(x, w)
    return to.reduce_sum(to.matmul(h, v)), to.reduce_mean(h), w, v


@pytest.mark.parametrize("misuse, named", [
    (lambda opt, a, b, w, v: opt.apply_gradients([(to.clip_by_value(g, -1, 1), var) for g, var in
                                                  opt.compute_gradients(a)][:1] + opt.compute_gradients(a)[1:]),
     "clipped differently"),
    (lambda opt, a, b, w, v: opt.apply_gradients(opt.compute_gradients(a)[:1] + opt.compute_gradients(b)[:1]),
     "several losses"),
    (lambda opt, a, b, w, v: opt.apply_gradients(
        list(zip(to.clip_by_global_norm([g for g, _ in opt.compute_gradients(a)], 1.0)[0], [w, v]))[:1]),
     "took the norm of 2 gradients, but 1 are applied"),
    (lambda opt, a, b, w, v: opt.apply_gradients([(opt.compute_gradients(a)[0][0], v)]),
     "is paired with 'v'"),
    (lambda opt, a, b, w, v: opt.apply_gradients([(a, w)]), "is not a \\(gradient, variable\\) pair"),
    (lambda opt, a, b, w, v: to.clip_by_global_norm([a], 1.0), "is not a gradient"),
    (lambda opt, a, b, w, v: to.clip_by_global_norm([g for g, _ in opt.compute_gradients(a)], 0.0),
     "clip_norm=0.0; give a finite number > 0"),
    (lambda opt, a, b, w, v: to.clip_by_value(opt.compute_gradients(a)[0][0], 1.0, -1.0),
     "clip_value_min=1.0 is above clip_value_max=-1.0"),
    (lambda opt, a, b, w, v: opt.apply_gradients([(None, w)]), "no gradient is provided"),
])
def test_misuse_is_refused_by_name(misuse, named):
    a, b, w, v = _two_losses()
    with pytest.raises(ValueError, match=named):
        misuse(to.train.AdamOptimizer(), a, b, w, v)


def test_clip_by_value_of_a_tensor_is_elementwise():
    x = to.placeholder(to.float32, [3], name="x")
    y = to.clip_by_value(x, -1, 0.5)
    to.get_variable("w", [1])   # something to plan
    to.build_execution_graph(plan=to.find_strategy())
    got = to.run(y, {x: np.array([-3.0, 0.25, 7.0], np.float32)})
    np.testing.assert_array_equal(got, np.array([-1.0, 0.25, 0.5], np.float32))


def test_the_global_norm_is_one_scalar_all_reduce_after_the_backward_on_several_devices():
    from tensoropt.costs.model import CostModel
    from tensoropt.search.driver import search_frontier

    class Flat:
        def time_s(self, collective, nbytes, group_size, stride):
            return 1e-5 + nbytes / 1e9

    a, _, w, v = _two_losses()
    opt = to.train.AdamOptimizer()
    grads, variables = zip(*opt.compute_gradients(a))
    grads, _ = to.clip_by_global_norm(grads, 1.0)
    step = opt.apply_gradients(zip(grads, variables))
    graph = to.get_default_graph()
    for devices in (1, 2):
        plan = search_frontier(graph, CostModel(graph, devices, Flat(), 1e10)).data_parallel_plan()
        calls = collective_schedule(graph, plan)
        norm_calls = [c for c in calls if c.name.endswith("/global_norm")]
        if devices == 1:
            assert norm_calls == []
        else:
            assert calls[-1] == norm_calls[0]
            assert (norm_calls[0].kind, norm_calls[0].axis, norm_calls[0].nbytes, norm_calls[0].phase) == \
                ("allreduce", None, 4, "backward")
            assert norm_calls[0].name == f"allreduce/{step.name}/global_norm"
