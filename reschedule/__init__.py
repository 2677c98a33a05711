"""reschedule: tensor layouts and the cheapest collective sequence between two layouts.

Numpy only; knows nothing of TensorFlow. Usage::

    from reschedule import Layout, plan_conversion, run_numpy, reuse_options
    src = Layout(mesh=(2, 4), tensor_map=(0, -1, 1), partial=frozenset())
    dst = Layout.parse("[8] R,S0,R")
    conv = plan_conversion(src, dst, (4, 8, 4), itemsize=4)   # Dijkstra over one-collective steps
    str(conv), conv.time_s, conv.steps
    out = run_numpy(conv, {r: block for r, block in ...})     # {rank: block} in dst's layout
    conv.backward()                                           # gradient's conversion dst -> src
    reuse_options(src, dst, (4, 8, 4))                        # keep_both / keep_producer / keep_consumer

Modules: ``_layout`` (Layout), ``_steps`` (Step, transition table, alltoallv exchange),
``_step_data`` (steps as JSON data), ``_cost`` (alpha-beta cost), ``_planner`` (Dijkstra, Conversion, backward),
``_numpy_exec`` (run_numpy), ``_reuse`` (reuse_options), ``_times`` (conversion_times,
conversion_time_matrix: one or many sources to many destinations, for cost tables), ``_tables``
(the all-pairs conversion seconds per mesh and pair of meshes those read, in numpy), ``_recv``
(an alltoallv's largest receive between two meshes, from one table per tensor rank).
"""

from ._cost import DEFAULT_COST, AlphaBetaCost, CostFn, alpha_beta_cost
from ._layout import Layout, mesh_coords, mesh_rank
from ._numpy_exec import group_collective_numpy, run_numpy, run_step_numpy
from ._planner import (Conversion, NoConversionError, StepCost, conversion_time, enumerate_layouts,
                       plan_conversion)
from ._reuse import ReuseOption, reuse_options
from ._times import conversion_time_matrix, conversion_times
from ._steps import STEP_KINDS, Exchange, Piece, Step, axis_groups

__all__ = [
    "Layout", "mesh_coords", "mesh_rank",
    "Step", "STEP_KINDS", "Exchange", "Piece", "axis_groups",
    "CostFn", "AlphaBetaCost", "alpha_beta_cost", "DEFAULT_COST",
    "Conversion", "StepCost", "NoConversionError", "plan_conversion", "conversion_time", "conversion_times",
    "conversion_time_matrix",
    "enumerate_layouts",
    "run_numpy", "run_step_numpy", "group_collective_numpy",
    "ReuseOption", "reuse_options",
]
