"""Each baseline searches its own space, returns an ordinary plan re-priced alike, and no
baseline that fits is faster than FT's fastest plan under the same memory limit."""

import numpy as np
import pytest

from tensoropt.search.baselines import (MinTimeTables, dim_classes, eliminate_min_time, mcmc_search, mesh_tf_search,
                                 min_time_choice, optcnn_configs, optcnn_search, pase_search, tofu_config,
                                 tofu_search)
from tensoropt.configs import Config, config_of
from tensoropt.search.driver import price_plan
from tensoropt.search.strategy import fastest_fitting

MODELS = ["mlp", "cnn", "lstm", "transformer"]


def _all(tables, limit):
    return [mesh_tf_search(tables, limit), optcnn_search(tables), tofu_search(tables), pase_search(tables),
            mcmc_search(tables, limit, proposals=3000, seed=1)]


@pytest.mark.parametrize("name", MODELS)
def test_no_baseline_that_fits_beats_ft_and_plans_reprice_alike(space_of, name):
    _, result = space_of(name)
    tables = MinTimeTables(result.space)
    points = result.plans.points
    limits = [None, points[0][0] * 1.02, (points[0][0] + points[-1][0]) / 2]
    for limit in limits:
        ft = fastest_fitting(result.plans, np.inf if limit is None else limit)
        for found in _all(tables, limit):
            plan = found.plan
            again = price_plan(result.space, plan)
            assert again.time_s == pytest.approx(plan.time_s, rel=1e-12), found.method
            assert again.memory_bytes == pytest.approx(plan.memory_bytes, rel=1e-12), found.method
            assert plan.option == found.method
            fits = limit is None or plan.memory_bytes <= limit
            if fits and result.track.exact:
                assert plan.time_s >= ft.time_s * (1 - 1e-9), (found.method, limit, plan.time_s, ft.time_s)


@pytest.mark.parametrize("name", MODELS)
def test_optcnn_eliminations_equal_pase_on_optcnn_space_and_split_no_reduction(space_of, name):
    _, result = space_of(name)
    tables = MinTimeTables(result.space)
    allowed = optcnn_configs(tables)
    choice, stats = eliminate_min_time(tables, allowed)
    reference, _ = min_time_choice(tables, allowed)
    assert tables.price(choice)[1] == pytest.approx(tables.price(reference)[1], rel=1e-9)
    assert stats["leaf_eliminations"] > 0
    plan = optcnn_search(tables).plan
    dp = tables.data_parallel_choice()
    for i, op in enumerate(tables.ops):
        config = config_of(plan, op)
        if tables.space.config_index(op, config) != dp[i]:
            assert not set(config.axis_dims) & set(op.space.reductions), (op.name, config)


def test_optcnn_leaves_a_residual_only_where_the_graph_is_not_series_parallel(space_of):
    for name, residual in (("mlp", False), ("cnn", False), ("transformer", True)):
        tables = MinTimeTables(space_of(name)[1].space)
        stats = eliminate_min_time(tables, optcnn_configs(tables))[1]
        assert (stats["residual_ops"] > 0) == residual, (name, stats)


def test_tofu_config_groups_levels_into_mesh_axes():
    assert tofu_config(("b", "n", "b", None), 4) == Config((4, 2, 2), ("b", "n", None))
    assert tofu_config(("b",), 4) == Config((2, 8), ("b", None))
    assert tofu_config((None, None), 2) == Config((4,), (None,))
    assert tofu_config(("k", "k"), 2) == Config((4,), ("k",))


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_tofu_plan_is_made_of_halvings(space_of, name):
    _, result = space_of(name)
    plan = tofu_search(MinTimeTables(result.space)).plan
    for op in result.space.ops:
        config = config_of(plan, op)
        assert all(size & (size - 1) == 0 for size in config.mesh)   # powers of two


def test_tofu_refuses_a_device_count_that_is_not_a_power_of_two(space_of):
    from tensoropt.search.baselines import BaselineError

    _, result = space_of("mlp", devices=6)
    with pytest.raises(BaselineError, match="power-of-two"):
        tofu_search(MinTimeTables(result.space))


@pytest.mark.parametrize("name", ["cnn", "transformer"])
def test_mesh_tf_uses_one_mesh_and_one_axis_per_named_dim(space_of, name):
    _, result = space_of(name)
    tables = MinTimeTables(result.space)
    found = mesh_tf_search(tables)
    classes, _ = dim_classes(tables)
    mesh = tuple(found.stats["mesh"])
    axis_of_class: dict = {}
    for i, op in enumerate(tables.ops):
        config = config_of(found.plan, op)
        if op.kind == "placeholder" or all(d is None for d in config.axis_dims):
            continue
        assert config.mesh == mesh, (op.name, config)
        for axis, dim in enumerate(config.axis_dims):
            if dim is not None:
                assert axis_of_class.setdefault(classes[i][dim], axis) == axis, (op.name, dim)
    assert found.stats["layouts"] > 10
