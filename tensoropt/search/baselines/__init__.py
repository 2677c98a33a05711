"""The other systems' search methods as baselines, on our configurations and cost model.

Each searches the same priced ``SearchSpace`` as Frontier-Tracking and returns an ordinary
``Plan`` (priced by the same cost model, executable by the same builder):

- ``mesh_tf``: Mesh-TensorFlow's space (one mesh, one layout of named dims), exhaustive;
- ``optcnn``: OptCNN's layer-wise space, by its node and edge eliminations;
- ``tofu``: ToFu's recursive partition-n-reduce, a DP per halving;
- ``pase_dp``: PaSE's DP with GenerateSeq ordering (exact minimum time);
- ``mcmc``: FlexFlow's Metropolis-Hastings search under a hard memory limit;
- ``compare``: all of them beside FT and data parallelism (``tensoropt compare``).

Usage::

    from tensoropt.search.baselines import MinTimeTables, pase_search, compare
    tables = MinTimeTables(search_result.space)
    plan = pase_search(tables).plan
    comparison = compare(graph, "paper-v100x16", devices=16)
"""

from tensoropt.search.baselines._result import BaselineError, BaselineResult
from tensoropt.search.baselines._tables import MinTimeTables
from tensoropt.search.baselines.compare import (METHODS, Comparison, MethodRow, compare, comparison_json,
                                         comparison_table, plot_comparison)
from tensoropt.search.baselines.mcmc import AdditiveCost, StrategyCost, mcmc_search
from tensoropt.search.baselines.mesh_tf import dim_classes, mesh_tf_search
from tensoropt.search.baselines.optcnn import eliminate_min_time, optcnn_configs, optcnn_search
from tensoropt.search.baselines.pase_dp import generate_seq, min_time_choice, pase_search
from tensoropt.search.baselines.tofu import tofu_config, tofu_search

__all__ = ["BaselineError", "BaselineResult", "MinTimeTables", "METHODS", "Comparison", "MethodRow",
           "compare", "comparison_json", "comparison_table", "plot_comparison", "AdditiveCost",
           "StrategyCost", "mcmc_search", "dim_classes", "mesh_tf_search", "eliminate_min_time",
           "optcnn_configs", "optcnn_search", "generate_seq", "min_time_choice", "pase_search",
           "tofu_config", "tofu_search"]
