"""``costs.cpu_workspaces``: TensorFlow's CPU kernels' transient buffers by formula,
hand-priced, and the analytical cost model using them on this machine's cluster only.
(``test_workspace_memory`` checks the convolution formula against a measured trace.)"""

from __future__ import annotations

import pytest

import tensoropt as to
from tensoropt.cluster.presets import get_cluster, is_local, local_cluster
from tensoropt.configs import Config
from tensoropt.costs.cpu_workspaces import (CpuKernelWorkspaces, conv2d_backprop_filter_buffer_bytes,
                                            conv2d_backprop_input_buffer_bytes)
from tensoropt.search.strategy import make_cost_model


def test_the_im2col_buffer_fills_the_30_mib_working_set_whatever_the_batch():
    # the tiny CNN's first layer, 8 images: work unit 256*8 + 27*8 + 256*27 = 9,176
    # floats; ceil(7,864,320 / 9,176) = 858 images of 256 x 27 floats (the profiler
    # measured 23,721,136 bytes for this shard)
    assert conv2d_backprop_input_buffer_bytes(8, 256, 27, 8, 4, threads=1) == 858 * 256 * 27 * 4
    assert conv2d_backprop_input_buffer_bytes(2, 256, 27, 8, 4, threads=1) == 858 * 256 * 27 * 4


def test_one_image_or_a_large_one_is_contracted_one_image_at_a_time():
    assert conv2d_backprop_input_buffer_bytes(1, 256, 27, 8, 4, threads=1) == 256 * 27 * 4
    # 32x32 outputs, 3x3x64 filter: 1024*64 + 576*64 + 1024*576 floats >= 65,536 per thread
    assert conv2d_backprop_input_buffer_bytes(16, 1024, 576, 64, 4, threads=1) == 1024 * 576 * 4


def test_more_threads_share_the_work_unit_below_the_l2_threshold():
    # 16x16 outputs, 3x3x16 filter, 64 channels: 16,384 + 9,216 + 36,864 = 62,464 floats,
    # under 65,536 per thread on 1 thread and on 2: it shards (126 images) on both
    unit = 256 * 64 + 144 * 64 + 256 * 144
    shard = -(-(30 << 20) // 4 // unit)
    for threads in (1, 2):
        assert conv2d_backprop_input_buffer_bytes(4, 256, 144, 64, 4, threads) == shard * 256 * 144 * 4
    # a work unit of 70,000 floats contracts per image on 1 thread, shards on 2
    assert conv2d_backprop_input_buffer_bytes(4, 500, 100, 40, 4, 1) == 500 * 100 * 4
    unit = 500 * 40 + 100 * 40 + 500 * 100
    assert conv2d_backprop_input_buffer_bytes(4, 500, 100, 40, 4, 2) == \
        -(-(30 << 20) // 4 // unit) * 500 * 100 * 4


def test_the_filter_gradients_im2col_buffer_fills_the_working_set_for_any_batch_or_image():
    # the small CNN's second layer: 16x16 outputs, 3x3x32 filter, 64 channels: a work
    # unit of 16,384 + 18,432 + 73,728 = 108,544 floats, ceil(7,864,320 / 108,544) =
    # 73 images of 256 x 288 floats (traced: 21,602,304 bytes, with its 73,728 B output)
    assert conv2d_backprop_filter_buffer_bytes(256, 288, 64, 4) == 73 * 256 * 288 * 4 == 21_528_576
    # where the input's gradient contracts one image at a time, the filter's does not
    unit = 1024 * 64 + 576 * 64 + 1024 * 576
    shard = -(-(30 << 20) // 4 // unit)
    assert conv2d_backprop_filter_buffer_bytes(1024, 576, 64, 4) == shard * 1024 * 576 * 4
    assert conv2d_backprop_input_buffer_bytes(16, 1024, 576, 64, 4, threads=1) == 1024 * 576 * 4


def test_a_conv2d_backward_holds_the_larger_of_its_two_im2col_buffers():
    x = to.placeholder(to.float32, [16, 16, 16, 32], name="x")
    w = to.get_variable("w", [3, 3, 32, 64])
    op = to.nn.conv2d(x, w, strides=1, padding="SAME").op
    # the input's gradient contracts per image here (108,544 floats >= 65,536 per thread)
    assert conv2d_backprop_input_buffer_bytes(16, 256, 288, 64, 4, threads=1) == 256 * 288 * 4
    assert CpuKernelWorkspaces(threads=1).workspace_bytes(op, Config((1,), (None,))) == (0, 21_528_576)


def test_a_broadcast_matmul_holds_one_right_operand_gradient_per_batch_element():
    a = to.placeholder(to.float32, [4, 6, 16], name="a")
    b = to.get_variable("b", [16, 10])
    op = to.matmul(a, b).op
    ws = CpuKernelWorkspaces(threads=1)
    assert ws.workspace_bytes(op, Config((1,), (None,))) == (0, 4 * 16 * 10 * 4)
    assert ws.workspace_bytes(op, Config((2,), ("n",))) == (0, 4 * 16 * 5 * 4)     # half of b
    assert ws.workspace_bytes(op, Config((2,), ("b0",))) == (0, 2 * 16 * 10 * 4)   # half the batch
    # a batch of right operands: one gradient each, no products to sum
    c = to.placeholder(to.float32, [4, 16, 10], name="c")
    assert ws.workspace_bytes(to.matmul(a, c).op, Config((1,), (None,))) == (0, 0)


def _conv():
    x = to.placeholder(to.float32, [8, 16, 16, 3], name="x")
    w = to.get_variable("w", [3, 3, 3, 8])
    return to.nn.conv2d(x, w, strides=1, padding="SAME").op


def test_a_conv2d_shard_prices_its_local_shapes():
    op = _conv()
    ws = CpuKernelWorkspaces(threads=1)
    whole = ws.workspace_bytes(op, Config((1,), (None,)))
    assert whole == (0, 858 * 256 * 27 * 4)
    # split by output channel on 2 devices: 4 channels each, the filter's 27 rows whole
    by_co = Config((2,), ("co",))
    unit = 256 * 4 + 27 * 4 + 256 * 27
    assert ws.workspace_bytes(op, by_co) == (0, -(-(30 << 20) // 4 // unit) * 256 * 27 * 4)


def test_an_lstm_holds_a_kernel_and_bias_gradient_partial_per_step_beyond_the_first():
    x = to.placeholder(to.float32, [4, 6, 16], name="x")
    cell = to.nn.rnn_cell.LSTMCell(16)
    to.nn.dynamic_rnn(cell, x, dtype=to.float32)
    op = next(o for o in to.get_default_graph().operations if o.kind == "lstm")
    kernel, bias = op.inputs[1], op.inputs[2]
    assert tuple(kernel.shape) == (32, 64) and tuple(bias.shape) == (64,)
    ws = CpuKernelWorkspaces(threads=1)
    assert ws.workspace_bytes(op, Config((1,), (None,))) == (0, 5 * (32 * 64 + 64) * 4)
    # the hidden units split 2 ways: half the kernel's and the bias's columns
    by_h = Config((2,), ("h",))
    assert ws.workspace_bytes(op, by_h) == (0, 5 * (32 * 32 + 32) * 4)


def test_other_ops_have_no_workspace():
    a = to.placeholder(to.float32, [8, 8], name="a")
    op = to.matmul(a, a).op
    assert CpuKernelWorkspaces(threads=1).workspace_bytes(op, Config((1,), (None,))) == (0, 0)


def test_threads_must_be_a_positive_int():
    with pytest.raises(ValueError, match="intra-op threads"):
        CpuKernelWorkspaces(threads=0)


def test_the_analytical_model_counts_them_on_this_machine_only(monkeypatch, tmp_path):
    monkeypatch.setenv("TENSOROPT_PROFILE", str(tmp_path / "none.json"))
    op = _conv()
    to.train.GradientDescentOptimizer(0.1).minimize(to.reduce_mean(op.outputs[0]))
    graph = to.get_default_graph()
    here = local_cluster(devices_per_machine=2)
    assert is_local(here) and is_local(here.scaled(1))
    backward = make_cost_model(graph, here, 2, "analytical").workspace_bytes(op, Config((2,), ("b",)))[1]
    assert backward > 20 * 2**20                      # the im2col buffer, 4 images of 8
    paper = get_cluster("paper-v100x16", devices=2)
    assert not is_local(paper)
    assert make_cost_model(graph, paper, 2, "analytical").workspace_bytes(op, Config((2,), ("b",))) == (0, 0)
