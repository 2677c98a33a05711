"""Graphs, cost models and plans the plan-simulator tests share (no TensorFlow)."""

import importlib.util
import pathlib

import numpy as np

import tensoropt as to
from tensoropt.cluster import Cluster, Link
from tensoropt.costs.model import CostModel
from tensoropt.search.driver import sample_plan, search_frontier

_DRIVER = pathlib.Path(__file__).resolve().parents[1] / "parallel" / "parity_driver.py"


def _parity_module():
    spec = importlib.util.spec_from_file_location("parity_driver_sim", _DRIVER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PARITY = _parity_module()


def cluster(devices: int, per_machine: int | None = None) -> Cluster:
    """A cluster of ``devices`` (``per_machine`` per machine, default all on one)."""
    per = per_machine or devices
    return Cluster("test", devices // per, per, 16e9, 1e13, Link(1e10, 1e-6), Link(1e9, 5e-6))


def parity_graph(name: str):
    """A parity model of the execution tests, with an Adam training step."""
    to.reset_default_graph()
    loss, _, *extra = PARITY.MODELS[name]()
    PARITY.training_step(loss, extra)
    return to.get_default_graph()


def parity_search(name: str, devices: int = 4):
    graph = parity_graph(name)
    model = CostModel(graph, devices, PARITY.AlphaBeta(), 1e10)
    return graph, model, search_frontier(graph, model)


def parity_plans(result, count: int = 8, seed: int = 123):
    """The parity test's plans: the frontier's ends, data parallel and random plans."""
    rng = np.random.default_rng(seed)
    plans = [result.plans[0], result.plans[-1], result.data_parallel_plan()]
    return plans + [sample_plan(result.space, rng) for _ in range(count)]
