"""Configurations of an op: meshes, injective axis assignments, divisibility, layouts."""

import pytest

import tensoropt as to
from tensoropt.configs import Config, enumerate_configs, input_layout, output_layout


def test_matmul_configs_on_four_devices():
    y = to.matmul(to.placeholder(to.float32, [8, 6]), to.get_variable("w", [6, 4]))
    configs = enumerate_configs(y.op, 4)
    # [4]: replicated or one of m, k, n (6 is not divisible by 4: k excluded)
    # [2,2]: injective maps of 2 axes to {None, m, k, n} minus both-None (kept once)
    assert Config((4,), (None,)) in configs
    assert Config((4,), ("k",)) not in configs
    assert Config((2, 2), ("m", "k")) in configs and Config((2, 2), ("k", "m")) in configs
    assert Config((2, 2), ("m", "m")) not in configs
    assert sum(c.axis_dims == (None,) or c.axis_dims == (None, None) for c in configs) == 1
    assert len(configs) == 1 + 2 + (4 * 4 - 3 - 1)
    assert len(configs) == len(set(configs))


def test_unsplittable_dims_are_never_split():
    logits = to.placeholder(to.float32, [8, 10])
    soft = to.nn.softmax(logits)
    assert all("d1" not in c.axis_dims for c in enumerate_configs(soft.op, 2))


def test_placeholders_load_data_parallel():
    x = to.placeholder(to.float32, [8, 3])
    assert enumerate_configs(x.op, 4) == [Config((4,), ("d0",))]
    odd = to.placeholder(to.float32, [6, 3])
    assert enumerate_configs(odd.op, 4) == [Config((4,), (None,))]


def test_layouts_follow_the_config():
    y = to.matmul(to.placeholder(to.float32, [8, 6]), to.get_variable("w", [6, 4]))
    c = Config((2, 2), ("k", "n"))
    assert str(input_layout(y.op, c, 0)) == "[2,2] R,S0"
    assert str(input_layout(y.op, c, 1)) == "[2,2] S0,S1"
    # k is a reduction: the op all-reduces it, so the output is replicated along axis 0
    assert str(output_layout(y.op, c, 0)) == "[2,2] R,S1"
    assert str(c) == "[2,2] k:0,n:1" and c.split_factor() == 4


def test_redundant_axes_do_not_divide_the_work():
    assert Config((2, 4), (None, "m")).split_factor() == 4
    assert Config((8,), (None,)).split_factor() == 1


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_every_config_divides_its_dims(n):
    x = to.placeholder(to.float32, [16, 12, 10, 3])
    w = to.get_variable("w", [3, 3, 3, 8])
    y = to.nn.conv2d(x, w, strides=1, padding="SAME")
    for c in enumerate_configs(y.op, n):
        for size, d in zip(c.mesh, c.axis_dims):
            assert d is None or y.op.space.dims[d] % size == 0
            assert d not in y.op.space.unsplittable
