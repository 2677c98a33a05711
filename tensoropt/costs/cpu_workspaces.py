"""The transient buffers TensorFlow's CPU kernels allocate beyond their outputs, by
formula: what the analytical cost model knows of op workspaces on a CPU job (the
profiler measures them instead, ``ComputeProfiler.workspace_bytes``).

Three are large enough to decide whether a plan fits; all were checked against
measurements on TensorFlow 2.21 with oneDNN off (as ``tensoropt._tf`` runs it):

- **conv2d backward.** ``Conv2DCustomBackpropFilterOp`` and
  ``Conv2DCustomBackpropInputOp`` (TensorFlow's CPU kernels for the two gradients, run
  one after the other) each allocate an im2col buffer of ``shard`` images x
  ``output_image_size`` x ``filter_total_size`` elements. The filter's ``shard`` fills
  the 30 MiB it takes for an L3 cache, whatever the batch:
  ``ceil((30 MiB / itemsize) / work_unit)``, with
  ``work_unit = out_image x out_depth + filter_total x out_depth + out_image x filter_total``;
  the input's is the same, or 1 when the batch is one image or one image's matmuls per
  intra-op thread reach the 256 KiB it takes for an L2 cache. So the backward holds the
  filter's buffer at most. On the tiny CNN (8 x 16 x 16 x 3 images, 3 x 3 x 3 x 8 filter)
  this is 858 images: 23.7 MB for a layer whose activations are 32 KiB; on the small
  CNN's second layer (16 x 16 outputs, 3 x 3 x 32 x 64 filter), 73 images, 21.5 MB
  (traced: 21,602,304 bytes with the 72 KiB gradient it writes). Both gradients are
  computed (TensorFlow's gated gradients group them).
- **broadcast matmul backward.** A batched matmul of a rank > 2 left operand and a
  rank-2 right one (a vocabulary projection of ``[batch, seq, hidden]``) takes the right
  operand's gradient as one product per batch element, ``[b..., k, n]``, summed after:
  the small LSTM model's 16 products of its 10 MB softmax kernel, 164 MB, traced.
- **lstm backward.** The fused ``lstm`` op runs as one matmul per time step; the
  gradients of its kernel and bias are one partial per step, summed by an ``AddN`` when
  the last step's backward is done, which writes the sum into one of them: beyond the
  gradient the op hands on, ``seq - 1`` partials of the local kernel and bias are live
  at once.

Usage::

    workspaces = CpuKernelWorkspaces(threads=1)
    workspaces.workspace_bytes(op, config)      # (forward, backward) bytes
"""

from __future__ import annotations

import math

from tensoropt.configs import Config, input_layout, output_layout

__all__ = ["CpuKernelWorkspaces", "conv2d_backprop_input_buffer_bytes",
           "conv2d_backprop_filter_buffer_bytes", "TARGET_WORKING_SET_BYTES",
           "MIN_THREAD_WORK_BYTES"]

#: the convolution backprop kernels' target working set (their "L3 cache size").
TARGET_WORKING_SET_BYTES = 30 << 20
#: ... and the per-thread work above which it contracts one image at a time ("L2").
MIN_THREAD_WORK_BYTES = 256 << 10


def _work_unit(output_image_size: int, filter_total_size: int, out_depth: int) -> int:
    return (output_image_size * out_depth + filter_total_size * out_depth
            + output_image_size * filter_total_size)


def conv2d_backprop_filter_buffer_bytes(output_image_size: int, filter_total_size: int,
                                        out_depth: int, itemsize: int) -> int:
    """Bytes of the im2col buffer of TensorFlow's CPU ``Conv2DBackpropFilter`` on a local
    shard (see the module doc), whose output has ``output_image_size`` positions and
    ``out_depth`` channels, with a filter of ``filter_total_size`` = height x width x
    input depth; the batch does not change it."""
    work_unit = _work_unit(output_image_size, filter_total_size, out_depth)
    shard = -(-(TARGET_WORKING_SET_BYTES // itemsize) // work_unit)
    return shard * output_image_size * filter_total_size * itemsize


def conv2d_backprop_input_buffer_bytes(batch: int, output_image_size: int,
                                       filter_total_size: int, out_depth: int,
                                       itemsize: int, threads: int) -> int:
    """Bytes of the im2col buffer of TensorFlow's CPU ``Conv2DBackpropInput`` on a local
    shard (see the module doc): ``batch`` images whose output has ``output_image_size``
    positions and ``out_depth`` channels, a filter of ``filter_total_size`` = height x
    width x input depth, on ``threads`` intra-op threads."""
    work_unit = _work_unit(output_image_size, filter_total_size, out_depth)
    parallel = batch == 1 or work_unit // max(1, threads) >= MIN_THREAD_WORK_BYTES // itemsize
    if parallel:
        return output_image_size * filter_total_size * itemsize
    return conv2d_backprop_filter_buffer_bytes(output_image_size, filter_total_size, out_depth,
                                               itemsize)


class CpuKernelWorkspaces:
    """``workspace_bytes(op, config)`` of TensorFlow's CPU kernels, by formula.

    Args:
        threads: the intra-op threads each rank's session runs with
            (``cluster.rank_threads``).
    """

    def __init__(self, threads: int):
        if not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads={threads!r}: give the intra-op threads per rank (an int >= 1)")
        self.threads = threads

    def workspace_bytes(self, op, config: Config) -> tuple[int, int]:
        """``(forward, backward)`` transient bytes of ``op``'s local shard under
        ``config`` (0 for the ops the module doc does not name)."""
        if op.kind == "conv2d":
            return 0, self._conv2d_backward(op, config)
        if op.kind == "lstm":
            return 0, self._lstm_backward(op, config)
        if op.kind == "matmul":
            return 0, self._broadcast_matmul_backward(op, config)
        return 0, 0

    def _conv2d_backward(self, op, config: Config) -> int:
        x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
        kh, kw, cin, cout = input_layout(op, config, 1).local_shape(w.shape)
        batch, oh, ow, _ = output_layout(op, config, 0).local_shape(y.shape)
        return max(conv2d_backprop_filter_buffer_bytes(oh * ow, kh * kw * cin, cout, x.dtype.itemsize),
                   conv2d_backprop_input_buffer_bytes(batch, oh * ow, kh * kw * cin, cout,
                                                      x.dtype.itemsize, self.threads))

    def _broadcast_matmul_backward(self, op, config: Config) -> int:
        a, b = op.inputs
        if a.shape.rank <= 2 or b.shape.rank != 2:
            return 0
        batch = output_layout(op, config, 0).local_shape(op.outputs[0].shape)[:-2]
        return math.prod(batch) * input_layout(op, config, 1).local_bytes(b.shape, b.dtype.itemsize)

    def _lstm_backward(self, op, config: Config) -> int:
        x, kernel, bias = op.inputs
        seq = x.shape[1]
        per_step = (input_layout(op, config, 1).local_bytes(kernel.shape, kernel.dtype.itemsize)
                    + input_layout(op, config, 2).local_bytes(bias.shape, bias.dtype.itemsize))
        return (seq - 1) * per_step

    def __repr__(self) -> str:
        return f"CpuKernelWorkspaces(threads={self.threads})"

