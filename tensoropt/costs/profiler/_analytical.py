"""The compute-provider interface and its analytical implementation (no TensorFlow).

A compute provider answers ``compute_s(op, config)``: the forward + backward seconds of
``op``'s local shard under ``config`` on one device (``t_c`` of Eq. (1)).

Usage::

    provider = AnalyticalCompute(peak_flops=15.7e12)
    provider.compute_s(op, config)   # op.space.flops / config.split_factor() / peak_flops
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tensoropt.configs import Config

__all__ = ["ComputeProvider", "AnalyticalCompute", "SOURCE_KINDS"]

#: Op kinds that compute nothing: their compute time is 0 under every configuration.
SOURCE_KINDS = frozenset({"variable", "placeholder", "fill"})


@runtime_checkable
class ComputeProvider(Protocol):
    """Prices the computation of one op under one configuration."""

    def compute_s(self, op, config: Config) -> float:
        """Forward + backward seconds of ``op``'s local shard under ``config``."""
        ...


class AnalyticalCompute:
    """Roofline compute time: the shard's FLOPs at the device's peak FLOP/s.

    Args:
        peak_flops: the device's peak floating-point operations per second (> 0).
        workspaces: what answers ``workspace_bytes(op, config)`` (e.g.
            ``costs.cpu_workspaces.CpuKernelWorkspaces`` for a CPU job); None: the
            roofline knows no workspace.

    Raises:
        ValueError: if ``peak_flops`` is not positive.
    """

    def __init__(self, peak_flops: float, workspaces=None):
        if not peak_flops > 0:
            raise ValueError(f"peak_flops={peak_flops}: give the device's FLOP/s (> 0), "
                             "e.g. 15.7e12 for a V100")
        self.peak_flops = float(peak_flops)
        self.workspaces = workspaces

    def compute_s(self, op, config: Config) -> float:
        """``op.space.flops / config.split_factor() / peak_flops`` (0 for sources)."""
        if op.kind in SOURCE_KINDS:
            return 0.0
        return op.space.flops / config.split_factor() / self.peak_flops

    def workspace_bytes(self, op, config: Config) -> tuple[int, int]:
        """``(forward, backward)`` transient bytes: the ``workspaces``' figures, else 0."""
        if self.workspaces is None or op.kind in SOURCE_KINDS:
            return 0, 0
        return self.workspaces.workspace_bytes(op, config)

    def __repr__(self) -> str:
        extra = f", workspaces={self.workspaces!r}" if self.workspaces is not None else ""
        return f"AnalyticalCompute(peak_flops={self.peak_flops!r}{extra})"
