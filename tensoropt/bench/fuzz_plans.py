"""Which plans the parity fuzz runs for one model on one device count.

- Frontier points: both ends, the turning point (``tensoropt.cli.report.turning_point``) and
  evenly spaced points, up to ``frontier_cap``.
- The data-parallel plan.
- Sampled plans (``tensoropt.search.driver.sample_plan``) from a pool of candidates, chosen
  greedily for what they add: re-scheduling step kinds (``reschedule.STEP_KINDS``, in
  forward, backward and rebuild conversions), tensor-reuse choices, and meshes not yet in
  the model's plans.

Plans are priced by a fixed alpha-beta model: the fuzz checks execution, so any positive
prices serve, and the same search runs on every machine.

Usage::

    chosen = choose_plans(graph, num_devices=4, count=10, frontier_cap=4, seed=7)
    [(c.label, c.features) for c in chosen]
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from tensoropt.costs.model import CostModel
from tensoropt.plan import Plan
from tensoropt.cli.report import turning_point
from tensoropt.search.driver import sample_plan, search_frontier

__all__ = ["AlphaBeta", "ChosenPlan", "choose_plans", "plan_features", "REUSE_CHOICES"]

#: The tensor-reuse choices of an edge kept by both its producer and its consumer.
REUSE_CHOICES = ("keep_both", "keep_producer", "keep_consumer")


class AlphaBeta:
    """Collective prices for the fuzz's searches: latency plus bytes over bandwidth."""

    def time_s(self, collective: str, nbytes: float, group_size: int, stride: int) -> float:
        factor = 2.0 if collective == "allreduce" else 1.0
        return factor * (group_size - 1) * (1e-5 + nbytes / group_size / 1e9) * (1 + stride / 8)


@dataclass(frozen=True)
class ChosenPlan:
    """One plan to run.

    Attributes:
        label: how it was chosen, e.g. ``"frontier 0/7 (least memory)"``, ``"sampled"``.
        plan_json: the plan, as ``Plan.to_json`` writes it.
        features: what it exercises: ``step:<kind>``, ``reuse:<choice>``, ``mesh:<shape>``.
    """

    label: str
    plan_json: str
    features: frozenset[str]


def plan_features(plan: Plan) -> frozenset[str]:
    """The step kinds, reuse choices and meshes a plan uses (read from its JSON form)."""
    data = plan.to_dict()
    out = {f"mesh:{tuple(c['mesh'])}" for c in data["ops"].values()}
    for edge in data["edges"]:
        out.add(f"reuse:{edge['reuse']}")
        for key in ("forward_steps", "backward_steps", "rebuild_steps"):
            out.update(f"step:{s['kind']}" for s in edge.get(key) or [])
    return frozenset(out)


def _frontier_indices(n: int, knee: int, cap: int) -> list[int]:
    wanted = {0, n - 1, knee}
    for k in range(cap):
        if len(wanted) >= cap:
            break
        wanted.add(round(k * (n - 1) / max(cap - 1, 1)))
    return sorted(i for i in wanted if 0 <= i < n)


def choose_plans(graph, num_devices: int, count: int, frontier_cap: int, seed: int,
                 candidates: int = 24) -> list[ChosenPlan]:
    """Up to ``count`` distinct plans for ``graph`` on ``num_devices`` devices: frontier
    points (at most ``frontier_cap``), data parallel, then sampled plans.

    Raises:
        ValueError: for ``count`` < 1 or ``frontier_cap`` < 1.
    """
    if count < 1 or frontier_cap < 1:
        raise ValueError(f"choose_plans: count {count} and frontier_cap {frontier_cap} must be >= 1")
    result = search_frontier(graph, CostModel(graph, num_devices, AlphaBeta(), 1e10))
    plans = result.plans
    knee = turning_point(plans)
    chosen: list[ChosenPlan] = []
    seen: set[str] = set()

    def add(label: str, plan: Plan) -> bool:
        data = plan.to_dict()
        key = json.dumps([data["ops"], data["edges"]], sort_keys=True)
        if key in seen or len(chosen) >= count:
            return False
        seen.add(key)
        chosen.append(ChosenPlan(label, plan.to_json(), plan_features(plan)))
        return True

    n = len(plans)
    for i in _frontier_indices(n, knee, frontier_cap):
        role = "least memory" if i == 0 else "fastest" if i == n - 1 else "turning point" if i == knee else ""
        add(f"frontier {i}/{n}" + (f" ({role})" if role else ""), plans[i])
    add("data parallel", result.data_parallel_plan())
    rng = np.random.default_rng(seed)
    pool = [sample_plan(result.space, rng) for _ in range(candidates)]
    features = [plan_features(p) for p in pool]
    while len(chosen) < count and pool:
        covered = set().union(*(c.features for c in chosen))
        best = max(range(len(pool)), key=lambda j: (len(features[j] - covered), len(features[j]), -j))
        plan = pool.pop(best)
        features.pop(best)
        add("sampled", plan)
    return chosen
