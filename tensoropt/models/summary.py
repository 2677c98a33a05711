"""Statistics of zoo models, for ``tensoropt models [--json]`` and reports.

Usage::

    from tensoropt.models.summary import summarize
    rows = summarize(size="paper")   # one dict per model; resets the default graph
    rows[0]["param_gib"], rows[0]["ops"], rows[0]["saved_activation_bytes"]
"""

from __future__ import annotations

import time
from typing import Any, Iterable

import tensoropt as to
from tensoropt.models._registry import build, get_entry, names
from tensoropt.stats import graph_stats

__all__ = ["summarize", "model_stats"]


def model_stats(name: str, size: str = "paper", **overrides: Any) -> dict[str, Any]:
    """Builds ``name`` into a fresh default graph and returns its statistics.

    Resets the default graph before building; the model stays recorded afterwards.

    Returns:
        A dict: model, size, batch, ops, compute_ops, param_count, param_bytes, param_gib,
        param_gb, saved_activation_bytes, saved_activation_gib, flops, record_seconds,
        and target_param_gib / param_error for the Table 1 models.
    """
    from tensoropt.models import TABLE1_PARAM_GIB  # noqa: PLC0415 - avoids an import cycle

    to.reset_default_graph()
    start = time.perf_counter()
    spec = build(name, size=size, **overrides)
    seconds = time.perf_counter() - start
    s = graph_stats(to.get_default_graph())
    row = {
        "model": name, "size": size, "batch": spec.params.get("batch"),
        "ops": s.ops, "compute_ops": s.compute_ops, "param_count": s.param_count,
        "param_bytes": s.param_bytes, "param_gib": s.param_bytes / 2**30,
        "param_gb": s.param_bytes / 1e9, "saved_activation_bytes": s.saved_activation_bytes,
        "saved_activation_gib": s.saved_activation_bytes / 2**30, "flops": s.flops,
        "record_seconds": seconds,
    }
    if size == "paper" and name in TABLE1_PARAM_GIB:
        target = TABLE1_PARAM_GIB[name]
        row["target_param_gib"] = target
        row["param_error"] = row["param_gib"] / target - 1.0
    return row


def summarize(model_names: Iterable[str] | None = None, size: str = "paper") -> list[dict[str, Any]]:
    """:func:`model_stats` for each model (all registered ones by default) that has ``size``.

    Resets the default graph for each model.
    """
    rows = []
    for name in (model_names or names()):
        if size in get_entry(name).presets:
            rows.append(model_stats(name, size))
    to.reset_default_graph()
    return rows
