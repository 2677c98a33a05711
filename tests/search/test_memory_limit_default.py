"""The default memory limit is the device's memory / 1.1, reached through ``find_strategy``
and ``search_summary`` with no ``memory_limit``; a profiling row where nothing fits says so."""

from __future__ import annotations

import dataclasses

import pytest

import tensoropt as to
from tensoropt.cluster import get_cluster
from tensoropt.search.strategy import NoPlanFitsError, SearchSettings, frontier_for, search_summary

N = 4


def _mlp():
    x = to.placeholder(to.float32, [64, 32], name="x")
    y = to.placeholder(to.int32, [64], name="y")
    h = to.nn.relu(to.matmul(x, to.get_variable("w1", [32, 256])))
    logits = to.matmul(h, to.get_variable("w2", [256, 8]))
    to.train.AdamOptimizer().minimize(to.reduce_mean(
        to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)))
    return to.get_default_graph()


def _straddling_cluster(graph):
    """A cluster whose memory M is one frontier point's memory, with the one before
    it at or below M / 1.1: the default limit chooses the earlier point."""
    base = get_cluster("paper-v100x16", devices=N)
    mems = [p.memory_bytes for p in frontier_for(graph, base, N).plans]
    for lower, upper in zip(mems, mems[1:]):
        memory = upper
        if lower <= memory / 1.1:
            return dataclasses.replace(base, memory_bytes=memory), lower, upper
    raise AssertionError(f"no two frontier points 10% apart: {mems}")


def test_default_limit_is_device_memory_over_1_1():
    graph = _mlp()
    cluster, lower, upper = _straddling_cluster(graph)
    settings = SearchSettings(cluster=cluster, option="mini_time", parallelism=N)
    assert settings.limit_bytes == cluster.memory_bytes / 1.1
    assert search_summary(graph, settings).chosen.memory_bytes == lower
    # check_peak=False: the limit is compared with the additive estimates the frontier holds
    plan = to.find_strategy("mini_time", parallelism=N, cluster=cluster, graph=graph, check_peak=False)
    assert plan.memory_bytes == lower        # with memory / 1.0 it would be `upper`
    given = to.find_strategy("mini_time", memory_limit=cluster.memory_bytes, parallelism=N,
                             cluster=cluster, graph=graph, check_peak=False)
    assert given.memory_bytes == upper


def test_a_profiling_row_where_nothing_fits_has_no_plan_but_its_least_memory():
    graph = _mlp()
    cluster, _, _ = _straddling_cluster(graph)
    least = {n: frontier_for(graph, cluster, n).plans[0].memory_bytes for n in (1, 2)}
    tight = dataclasses.replace(cluster, memory_bytes=least[2] * 1.05)   # /1.1: below both
    rows = to.find_strategy("profiling", parallelisms=[1, 2], cluster=tight, graph=graph)
    assert [r.parallelism for r in rows] == [1, 2]
    assert all(r.plan is None for r in rows)
    assert [r.least_memory_bytes for r in rows] == [least[1], least[2]]
    with pytest.raises(NoPlanFitsError, match="Raise memory_limit"):
        to.find_strategy("mini_time", parallelism=2, cluster=tight, graph=graph)
