"""A TensorFlow 1.x name TensorOpt does not mirror fails with an error that says so, what to
write instead where there is a usual way, and the closest names."""

import pytest

import tensoropt as to


@pytest.mark.parametrize("get, says", [
    (lambda: to.metrics, ["tf.metrics is not in it", "to.reduce_mean(to.cast(to.equal(", "needs an OpDef"]),
    (lambda: to.layers.batch_normalization, ["tf.layers.batch_normalization", "to.nn.moments then "
                                             "to.nn.batch_normalization"]),
    (lambda: to.Session, ["tf.Session", "to.build_execution_graph(plan=...)"]),
    (lambda: to.reduce_prod, ["tf.reduce_prod", "did you mean reduce_sum or reduce_min or reduce_max?"]),
    (lambda: to.summary, ["tf.summary", "fetch the value with to.run and log it yourself"]),
    (lambda: to.nn.sofmax, ["module 'tensoropt.nn'", "tf.nn.sofmax", "did you mean softmax"]),
    (lambda: to.nn.xw_plus_b, ["to.nn.bias_add(to.matmul(x, w), b)"]),
    (lambda: to.train.AdadeltaOptimizer, ["tf.train.AdadeltaOptimizer", "AdagradOptimizer", "AdamOptimizer"]),
])
def test_a_missing_name_is_named_with_what_to_write_instead(get, says):
    with pytest.raises(AttributeError) as err:
        get()
    for text in says:
        assert text in str(err.value)


def test_present_and_dunder_names_are_untouched():
    assert to.train.Saver is to.checkpoint.Saver and to.nn.softmax is not None
    assert not hasattr(to, "metrics") and getattr(to.nn, "nope", 7) == 7
    with pytest.raises(AttributeError, match="has no attribute '__wrapped__'$"):
        to.__wrapped__
