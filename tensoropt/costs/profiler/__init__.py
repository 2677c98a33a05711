"""Compute-time providers for the cost model: analytical (roofline) and profiled.

Both answer ``compute_s(op, config)``, the forward + backward seconds of ``op``'s local
shard under ``config`` (``t_c`` of Eq. (1) of the paper):

- ``AnalyticalCompute(peak_flops)``: FLOPs of the shard at peak FLOP/s; for clusters
  you do not have (the presets).
- ``ComputeProfiler(cache_path=...)``: the shard run in TensorFlow on this machine's
  CPU, timed, and cached on disk by (op kind, local shapes, split dims, attributes,
  TensorFlow version, CPU model, threads). Importing this package does not import
  TensorFlow; measuring does.

Usage::

    from tensoropt.costs.profiler import AnalyticalCompute, ComputeProfiler, profile_graph
    profiler = ComputeProfiler()                 # ~/.cache/tensoropt/compute-profile.json
    profiler.compute_s(op, config)
    profile_graph(graph, num_devices=4, profiler=profiler)   # every op x every config
    CostModel(graph, 4, collectives, peak_flops, compute=profiler)

Modules: ``_analytical`` (the interface and the roofline; no TensorFlow), ``_shard``
(what one device computes, and the cache key), ``_cache`` (the versioned JSON file),
``_measure`` (timing in TensorFlow; the method is in its docstring), ``_update`` (a
trained variable's optimizer update, ``ComputeProfiler.update_s``), ``__main__`` (CLI).

Command line: ``python -m tensoropt.costs.profiler --help``.
"""

from tensoropt.costs.profiler._analytical import SOURCE_KINDS, AnalyticalCompute, ComputeProvider
from tensoropt.costs.profiler._measure import (ComputeProfiler, GraphProfile, Measurement,
                                          machine_description, profile_graph, workspace_of_trace)
from tensoropt.costs.profiler._cache import FORMAT, VERSION, ProfileCache, default_cache_path
from tensoropt.costs.profiler._shard import (LocalShard, fit_shard, int_input_ranges, local_shard,
                                      shard_bytes, subdivide)

__all__ = ["ComputeProvider", "AnalyticalCompute", "ComputeProfiler", "Measurement", "GraphProfile",
           "profile_graph", "machine_description", "ProfileCache", "default_cache_path", "FORMAT",
           "VERSION", "LocalShard", "local_shard", "int_input_ranges", "shard_bytes", "subdivide",
           "fit_shard", "SOURCE_KINDS", "workspace_of_trace"]

