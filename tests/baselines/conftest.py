"""Priced search spaces of small graphs, shared by the baseline tests."""

import pytest

import tensoropt as to
from tensoropt import models
from tensoropt.costs.model import CostModel
from tensoropt.search.driver import search_frontier

N = 4


class AlphaBeta:
    """Collective prices where communication and compute both matter on tiny models."""

    def time_s(self, collective, nbytes, group_size, stride):
        factor = 2.0 if collective == "allreduce" else 1.0
        return factor * (group_size - 1) * (1e-6 + nbytes / group_size / 1e8) * (1 + stride / 8)


def searched(name: str, seed: int | None = None, devices: int = N):
    """(graph, FT's SearchResult) of zoo model ``name`` (tiny) or generated model ``seed``."""
    to.reset_default_graph()
    if seed is None:
        models.build(name, size="tiny")
    else:
        models.generate_model(seed)
    graph = to.get_default_graph()
    return graph, search_frontier(graph, CostModel(graph, devices, AlphaBeta(), 1e9))


_CACHE: dict = {}


@pytest.fixture
def space_of():
    """``space_of(name)`` -> (graph, SearchResult), cached over the session."""

    def get(name: str, seed: int | None = None, devices: int = N):
        key = (name, seed, devices)
        if key not in _CACHE:
            _CACHE[key] = searched(name, seed, devices)
        return _CACHE[key]

    return get
