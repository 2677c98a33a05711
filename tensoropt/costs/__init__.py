"""The costs stage: what a plan costs in seconds and bytes.

- ``model``: :class:`CostModel`, per-op compute/memory and per-edge re-scheduling costs;
- ``collective_times``: collective pricing (one protocol, analytical and calibrated);
- ``profiler``: compute-time providers (analytical roofline, measured on this machine).

Usage::

    from tensoropt.costs.model import CostModel
    from tensoropt.costs.collective_times import AnalyticalCollectives
"""
