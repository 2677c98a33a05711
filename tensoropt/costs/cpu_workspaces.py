"""The transient buffers TensorFlow's CPU kernels allocate beyond their outputs, by
formula: what the analytical cost model knows of op workspaces on a CPU job (the
profiler measures them instead, ``ComputeProfiler.workspace_bytes``).

Two are large enough to decide whether a plan fits; both were checked against the
profiler's measurements on TensorFlow 2.21 with oneDNN off (as ``tensoropt._tf`` runs it):

- **conv2d backward.** ``Conv2DCustomBackpropInputOp`` (TensorFlow's CPU kernel for
  ``Conv2DBackpropInput``) allocates an im2col buffer of ``shard`` images x
  ``output_image_size`` x ``filter_total_size`` elements. ``shard`` is 1 when the batch
  is one image, or when one image's matmuls per intra-op thread reach the 256 KiB it takes
  for an L2 cache; otherwise it fills the 30 MiB it takes for an L3 cache, whatever the
  batch: ``ceil((30 MiB / itemsize) / work_unit)``, with
  ``work_unit = out_image x out_depth + filter_total x out_depth + out_image x filter_total``.
  On the tiny CNN (8 x 16 x 16 x 3 images, 3 x 3 x 3 x 8 filter) this is 858 images:
  23.7 MB for a layer whose activations are 32 KiB. The gradient of the convolution's
  input is computed (TensorFlow's gated gradients group both), and the buffer is held
  while it is.
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

from tensoropt.configs import Config, input_layout, output_layout

__all__ = ["CpuKernelWorkspaces", "conv2d_backprop_input_buffer_bytes",
           "TARGET_WORKING_SET_BYTES", "MIN_THREAD_WORK_BYTES"]

#: ``Conv2DCustomBackpropInputOp``'s target working set (its "L3 cache size").
TARGET_WORKING_SET_BYTES = 30 << 20
#: ... and the per-thread work above which it contracts one image at a time ("L2").
MIN_THREAD_WORK_BYTES = 256 << 10


def conv2d_backprop_input_buffer_bytes(batch: int, output_image_size: int,
                                       filter_total_size: int, out_depth: int,
                                       itemsize: int, threads: int) -> int:
    """Bytes of the im2col buffer of TensorFlow's CPU ``Conv2DBackpropInput`` on a local
    shard (see the module doc): ``batch`` images whose output has ``output_image_size``
    positions and ``out_depth`` channels, a filter of ``filter_total_size`` = height x
    width x input depth, on ``threads`` intra-op threads."""
    work_unit = (output_image_size * out_depth + filter_total_size * out_depth
                 + output_image_size * filter_total_size)
    parallel = batch == 1 or work_unit // max(1, threads) >= MIN_THREAD_WORK_BYTES // itemsize
    shard = 1 if parallel else -(-(TARGET_WORKING_SET_BYTES // itemsize) // work_unit)
    return shard * output_image_size * filter_total_size * itemsize


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
        return 0, 0

    def _conv2d_backward(self, op, config: Config) -> int:
        x, w, y = op.inputs[0], op.inputs[1], op.outputs[0]
        kh, kw, cin, cout = input_layout(op, config, 1).local_shape(w.shape)
        batch, oh, ow, _ = output_layout(op, config, 0).local_shape(y.shape)
        return conv2d_backprop_input_buffer_bytes(batch, oh * ow, kh * kw * cin, cout,
                                                  x.dtype.itemsize, self.threads)

    def _lstm_backward(self, op, config: Config) -> int:
        x, kernel, bias = op.inputs
        seq = x.shape[1]
        per_step = (input_layout(op, config, 1).local_bytes(kernel.shape, kernel.dtype.itemsize)
                    + input_layout(op, config, 2).local_bytes(bias.shape, bias.dtype.itemsize))
        return (seq - 1) * per_step

    def __repr__(self) -> str:
        return f"CpuKernelWorkspaces(threads={self.threads})"

