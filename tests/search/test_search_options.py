"""find_strategy's three options, and the error when nothing fits."""

import copy
import pickle

import pytest

import tensoropt as to
from tensoropt import models
from tensoropt.cluster import get_cluster
from tensoropt.search.driver import SearchOptions
from tensoropt.search.strategy import NoPlanFitsError, frontier_for


def _model(batch=64, width=256):
    x = to.placeholder(to.float32, [batch, width], name="x")
    y = to.placeholder(to.int32, [batch], name="y")
    h = x
    for i in range(2):
        h = to.nn.relu(to.matmul(h, to.get_variable(f"w{i}", [width, width])))
    logits = to.matmul(h, to.get_variable("out", [width, 16]))
    loss = to.reduce_mean(to.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    to.train.AdamOptimizer().minimize(loss)


def test_mini_time_is_the_fastest_plan_that_fits():
    _model()
    result = to.search_strategy("mini_time", parallelism=4, cluster="paper-v100x16")
    plan = result.chosen
    assert plan == to.find_strategy("mini_time", parallelism=4, cluster="paper-v100x16")
    assert plan.time_s == min(p.time_s for p in result.frontier)
    limit = sorted(p.memory_bytes for p in result.frontier)[len(result.frontier) // 2]
    tight = to.search_strategy("mini_time", parallelism=4, cluster="paper-v100x16", memory_limit=limit,
                               check_peak=False)
    assert tight.chosen.memory_bytes <= limit
    assert tight.chosen.time_s == min(p.time_s for p in tight.frontier if p.memory_bytes <= limit)
    assert tight.chosen.time_s >= plan.time_s and "paper-v100x16" in tight.chosen.notes


def test_mini_time_checks_the_peak_over_the_step_not_only_the_additive_estimate():
    from tensoropt.simulator import simulate_plan
    _model()
    graph = to.get_default_graph()
    frontier = to.search_strategy("mini_time", parallelism=4, cluster="paper-v100x16").frontier

    def peak(p):
        return simulate_plan(graph, p, "paper-v100x16").peak_memory_bytes

    # a limit that the additive estimate of the fastest plans meets but their peak does not
    limit = next(p.memory_bytes for p in reversed(list(frontier)) if peak(p) > p.memory_bytes)
    additive = to.find_strategy("mini_time", parallelism=4, cluster="paper-v100x16", memory_limit=limit,
                                check_peak=False)
    checked = to.find_strategy("mini_time", parallelism=4, cluster="paper-v100x16", memory_limit=limit)
    assert peak(additive) > limit >= peak(checked)
    assert checked.memory_bytes <= limit and checked.time_s >= additive.time_s
    with pytest.raises(NoPlanFitsError, match="peak over the step"):
        to.find_strategy("mini_time", parallelism=4, cluster="paper-v100x16",
                         memory_limit=frontier[0].memory_bytes)


def test_mini_parallelism_is_the_fewest_devices_that_fit():
    _model()
    one = to.find_strategy("mini_time", parallelism=1, cluster="paper-v100x16")
    limit = one.memory_bytes * 0.6  # one device no longer fits
    plan = to.find_strategy("mini_parallelism", memory_limit=limit, cluster="paper-v100x16")
    assert plan.parallelism == 2 and plan.memory_bytes <= limit


def test_profiling_gives_the_best_time_per_device_count():
    _model()
    rows = to.find_strategy("profiling", parallelisms=[1, 2, 4], cluster="paper-v100x16")
    assert [r.parallelism for r in rows] == [1, 2, 4]
    for r in rows:
        assert r.plan is not None and r.plan.parallelism == r.parallelism
        assert r.plan.time_s == min(p.time_s for p in r.frontier)
        assert r.plan.time_s <= r.data_parallel.time_s
        assert r.least_memory_bytes == min(p.memory_bytes for p in r.frontier)


def test_nothing_fits_names_the_least_memory_without_searching_again(monkeypatch):
    from tensoropt.search import strategy

    _model()
    one = to.find_strategy("mini_time", parallelism=1, cluster="paper-v100x16")
    searched = []
    real = strategy.frontier_for
    monkeypatch.setattr(strategy, "frontier_for", lambda g, c, n, *a, **k: searched.append(n) or real(g, c, n, *a, **k))
    with pytest.raises(NoPlanFitsError) as e:
        to.find_strategy("mini_time", parallelism=1, cluster="paper-v100x16",
                         memory_limit=one.memory_bytes * 0.6)
    msg = str(e.value)
    assert searched == [1]          # the error is written from the frontier already found
    assert f"({one.memory_bytes:.0f} bytes)" in msg
    assert "find_strategy('mini_parallelism'" in msg and "Raise memory_limit" in msg
    searched.clear()
    fits = to.find_strategy("mini_parallelism", parallelism=2, cluster="paper-v100x16",
                            memory_limit=one.memory_bytes * 0.6)
    assert fits.parallelism == 2 and searched == [1, 2]
    with pytest.raises(NoPlanFitsError, match=r"no device count up to 2 fits either \(least memory per count: "
                                              r"1: .* MiB, 2: .* MiB\)"):
        to.find_strategy("mini_parallelism", parallelism=2, cluster="paper-v100x16", memory_limit=100)


def test_epsilon_plans_are_within_their_guarantee():
    models.build("cnn", size="tiny")
    exact = to.search_strategy("mini_time", parallelism=4, cluster="paper-v100x16")
    eps = 0.2
    approx = to.search_strategy("mini_time", parallelism=4, cluster="paper-v100x16", epsilon=eps)
    assert len(approx.frontier) < len(exact.frontier)
    for q in exact.frontier.estimates:   # every exact plan has an approximate one no worse than promised
        assert any(p.memory_bytes <= q.memory_bytes and p.time_s <= (1 + eps) * q.time_s
                   for p in approx.frontier.estimates)
    assert approx.chosen.memory_bytes <= exact.chosen.memory_bytes * (1 + 1e-12)
    assert approx.chosen.time_s <= (1 + eps) * exact.chosen.time_s
    with pytest.raises(ValueError, match="epsilon"):
        to.find_strategy("mini_time", parallelism=4, cluster="paper-v100x16", epsilon=1.5)
    with pytest.raises(ValueError, match=r"got 0\.0 \(for the exact frontier leave it out"):
        to.find_strategy("mini_time", parallelism=4, cluster="paper-v100x16", epsilon=0.0)


def test_max_candidates_thins_the_search_and_the_plan_says_so():
    models.build("cnn", size="tiny")   # no heuristic eliminations: its exact frontier is exact
    exact = to.search_strategy("mini_time", parallelism=4, cluster="paper-v100x16")
    capped = to.search_strategy("mini_time", parallelism=4, cluster="paper-v100x16", max_candidates=20,
                                threads=2)
    assert exact.chosen.notes.endswith("frontier: exact")
    assert "products thinned to about 20 candidates" in capped.chosen.notes
    assert len(capped.frontier) < len(exact.frontier)
    # the same search again, for its statistics: every exact plan keeps the reported bound
    result = frontier_for(to.get_default_graph(), get_cluster("paper-v100x16"), 4,
                          search=SearchOptions(max_candidates=20))
    bound = result.stats["frontier"].time_error_bound_s
    assert result.stats["frontier"].capped_products > 0 and bound > 0
    assert result.plans.points == capped.frontier.points
    for mem, tim in exact.frontier.points:
        assert any(m <= mem and t <= tim + bound + 1e-12 for m, t in capped.frontier.points)
    assert exact.chosen.time_s <= capped.chosen.time_s <= exact.chosen.time_s + bound + 1e-12


@pytest.mark.parametrize("option, named", [({"max_candidates": 0}, "max_candidates"),
                                           ({"threads": 0}, "threads"),
                                           ({"epsilon": 1.5}, "epsilon")])
def test_bad_search_options_are_named_before_anything_is_priced(monkeypatch, option, named):
    from tensoropt.search import strategy

    _model()
    monkeypatch.setattr(strategy, "make_cost_model",
                        lambda *a, **k: pytest.fail("priced the graph before checking the options"))
    with pytest.raises(ValueError, match=f"find_strategy: {named} must be"):
        to.find_strategy("mini_time", parallelism=4, cluster="paper-v100x16", **option)


def test_frontier_plans_are_built_on_use_and_match_their_points():
    from tensoropt.search.strategy import fastest_fitting

    _model()
    plans = frontier_for(to.get_default_graph(), get_cluster("paper-v100x16"), 4).plans
    assert len(plans) == len(plans.points) >= 3 and not plans._built
    last = plans[-1]
    assert set(plans._built) == {len(plans) - 1} and plans[len(plans) - 1] is last
    assert (last.memory_bytes, last.time_s) == pytest.approx(plans.points[-1], rel=1e-9)
    assert [p.time_s for p in plans[:2]] == pytest.approx([t for _, t in plans.points[:2]])
    with pytest.raises(IndexError, match="out of range"):
        plans[len(plans)]
    limit = plans.points[1][0]          # the second plan's memory: it is the fastest that fits
    assert fastest_fitting(plans, limit) is plans[1]
    assert fastest_fitting(plans, plans.points[0][0] / 2) is None
    with pytest.raises(TypeError, match="to_bytes"):
        pickle.dumps(plans)              # a frontier travels compactly, in a SearchSummary


def test_frontier_estimates_match_the_plans_without_building_them():
    models.build("cnn", size="tiny")
    plans = frontier_for(to.get_default_graph(), get_cluster("paper-v100x16"), 4).plans
    estimates = plans.estimates
    assert len(estimates) == len(plans) and not plans._built
    for estimate, plan in zip(estimates, plans):
        assert tuple(estimate) == pytest.approx(
            (plan.memory_bytes, plan.time_s, plan.network_s, plan.compute_s), rel=1e-9, abs=1e-15)
    assert len({e.compute_s for e in estimates}) > 1   # compute differs along the frontier


def test_a_frontier_table_builds_only_the_chosen_plan():
    from tensoropt.cli.report import plans_table

    models.build("cnn", size="tiny")
    plans = frontier_for(to.get_default_graph(), get_cluster("paper-v100x16"), 4).plans
    chosen = plans[7]
    table = plans_table(plans, chosen=chosen, max_rows=4).splitlines()
    assert set(plans._built) == {7}
    assert [ln.split()[0] for ln in table if ln.endswith("chosen")] == ["7"]
    rows = [int(ln.split()[0]) for ln in table[1:]]
    assert {0, 7, len(plans) - 1} <= set(rows) and len(rows) <= 4 + 2  # + turning point, chosen
    with pytest.raises(ValueError, match="not taken from this frontier"):
        plans.index(copy.copy(plans[8]))        # equal, but not this frontier's


def test_a_search_summary_travels_as_bytes_and_rebuilds_the_same_plans():
    from tensoropt.search.strategy import SearchSettings, choose_plan, search_summary
    from tensoropt.search.summary import SearchSummary

    models.build("cnn", size="tiny")
    graph = to.get_default_graph()
    sent = choose_plan(graph, SearchSettings.resolve("paper-v100x16", parallelism=4))
    data = sent.to_bytes()
    got = SearchSummary.from_bytes(data)
    assert len(got.frontier) == len(sent.frontier) > 3
    assert got.frontier.points == sent.frontier.points and got.frontier.estimates == sent.frontier.estimates
    assert list(got.frontier) == list(sent.frontier)          # every plan, edges and steps included
    assert got.data_parallel == sent.data_parallel and got.chosen == sent.chosen
    k = sent.frontier.index(sent.chosen)
    assert got.chosen is got.frontier[k]
    json_bytes = sum(len(p.to_json()) for p in sent.frontier)
    assert len(data) * 20 < json_bytes, (len(data), json_bytes)   # choice arrays, not plan JSONs
    rows = search_summary(graph, SearchSettings.resolve("paper-v100x16", option="profiling", parallelisms=[1, 2]))
    again = SearchSummary.from_bytes(rows.to_bytes())
    assert [r.parallelism for r in again.profile] == [1, 2] and again.chosen is None
    for a, b in zip(again.profile, rows.profile):
        assert (a.plan, a.data_parallel, a.search_s, a.approximation) == (b.plan, b.data_parallel, b.search_s,
                                                                         b.approximation)
        assert list(a.frontier) == list(b.frontier)
    with pytest.raises(ValueError, match="covered 2 device counts"):
        again.frontier


@pytest.mark.parametrize("kwargs, words", [
    (dict(epsilon=0.05, relative="yes"), ("relative", "'yes'")),
    (dict(relative=True), ("relative=True", "epsilon")),
])
def test_search_options_refuse_a_relative_bound_they_cannot_use(kwargs, words):
    with pytest.raises(ValueError) as err:
        SearchOptions(**kwargs)
    assert all(w in str(err.value) for w in words)


def test_find_strategy_passes_relative_to_the_search():
    """``relative=True`` reaches Frontier-Tracking: the chosen plan's notes say the error is
    relative to each plan's time, and the plan is within (1 + e) of the exact fastest."""
    _model()
    exact = to.find_strategy("mini_time", parallelism=4, cluster="paper-v100x16")
    plan = to.find_strategy("mini_time", parallelism=4, cluster="paper-v100x16", epsilon=0.1,
                            relative=True)
    assert "epsilon 0.1 (relative to each plan's time)" in plan.notes
    assert exact.time_s <= plan.time_s <= 1.1 * exact.time_s


def test_the_collector_is_off_while_pricing_and_tracking_and_on_after(monkeypatch):
    import gc

    from tensoropt.search import driver
    seen = []
    build, track = driver.build_space, driver.track

    def spy_build(*args, **kwargs):
        seen.append(("pricing", gc.isenabled()))
        return build(*args, **kwargs)

    def spy_track(*args, **kwargs):
        seen.append(("tracking", gc.isenabled()))
        return track(*args, **kwargs)
    monkeypatch.setattr(driver, "build_space", spy_build)
    monkeypatch.setattr(driver, "track", spy_track)
    _model()
    assert gc.isenabled()
    frontier_for(to.get_default_graph(), get_cluster("paper-v100x16"), 4)
    assert seen == [("pricing", False), ("tracking", False)] and gc.isenabled()
    gc.disable()
    try:                                  # a caller's own setting is kept
        frontier_for(to.get_default_graph(), get_cluster("paper-v100x16"), 4)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_graph_that_needs_heuristic_elimination_keeps_both_ends_of_its_frontier():
    # The tiny Transformer's residual streams need heuristic elimination. min_memory alone
    # fixes its layer norms split, and its fastest plan then gathers them back each layer.
    models.build("transformer", size="tiny")
    both = to.search_strategy("mini_time", parallelism=2, cluster="paper-v100x16")
    one = to.search_strategy("mini_time", parallelism=2, cluster="paper-v100x16",
                             heuristics=("min_memory",))
    fast = to.search_strategy("mini_time", parallelism=2, cluster="paper-v100x16",
                              heuristics=("min_time",))
    assert both.chosen.time_s == pytest.approx(min(one.chosen.time_s, fast.chosen.time_s))
    assert both.chosen.time_s < 0.9 * one.chosen.time_s
    assert both.frontier[0].memory_bytes == min(one.frontier[0].memory_bytes, fast.frontier[0].memory_bytes)
    with pytest.raises(ValueError, match="tuple of rules"):
        SearchOptions(heuristics="min_time")


def test_a_scalar_placeholder_has_no_batch_axis_for_data_parallel():
    x = to.placeholder(to.float32, [64, 32], name="x")
    scale = to.placeholder(to.float32, [], name="scale")       # fed per step, as a keep_prob is
    h = to.matmul(x, to.get_variable("w", [32, 8])) * (1.0 - scale)    # an op fed by the scalar alone
    to.train.GradientDescentOptimizer(0.1).minimize(to.reduce_mean(h))
    dp = to.search_strategy("mini_time", parallelism=4, cluster="paper-v100x16").data_parallel
    assert dp.ops["x"].dim_axes and not dp.ops["scale"].dim_axes
