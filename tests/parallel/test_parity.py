"""Under mpirun -np 4, every plan trains like one process, and issues the collectives it
says it does.

One launch runs the MLP, the CNN, the Transformer and the LSTM, each under 12 plans (the
frontier's two ends, data parallel, 8 random plans that exercise re-scheduling steps and
tensor-reuse choices, and one in which an op leaves its output partial and an edge
reduce-scatters it into the consumer's split), 3 Adam steps each, against a
single-process TensorFlow run of the same model with the same initial values and batches. Every collective the builder
makes is checked against the plan's collective schedule as it is built.

A second launch picks plans as a user script does, from ``to.search_strategy``'s result
on every rank: the frontier's first, middle and last plans and the data-parallel plan;
then ``to.find_strategy``'s plan, saved as JSON by rank 0 and loaded by every rank.

Both compare every rank's losses and its own block of every parameter, shard or replica.
"""

import json
import pathlib

import pytest

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

MODELS = ["mlp", "cnn", "transformer", "lstm"]


def _run(mpirun, tmp_path, models=MODELS):
    out = tmp_path / "parity.json"
    driver = pathlib.Path(__file__).with_name("parity_driver.py")
    proc = mpirun(4, str(driver), str(out), *models, timeout=1500)
    # 44 plans in one process: horovod's response cache (sized by tensoropt.init) holds them
    assert "evicted from cache" not in proc.stderr + proc.stdout
    return json.loads(out.read_text())


def test_every_plan_matches_one_process_and_its_collective_counts(mpirun, tmp_path):
    results = _run(mpirun, tmp_path)
    assert {r["model"] for r in results} == set(MODELS)
    for model in MODELS:
        rows = _check_every_plan(results, model)
        kinds = set().union(*(r["step_kinds"] for r in rows))
        assert {"allgather", "alltoall", "alltoallv", "slice", "reducescatter"} <= kinds, (
            f"{model}: steps seen {kinds}")
        reuse = set().union(*(r["reuse"] for r in rows))
        assert {"keep_both", "keep_producer"} <= reuse, f"{model}: reuse seen {reuse}"
        options = {r["option"] for r in rows}
        assert {"frontier", "data_parallel", "sampled"} <= options
    all_reuse = set().union(*(r["reuse"] for r in results))
    assert "keep_consumer" in all_reuse, f"no plan dropped a producer's copy: {all_reuse}"


def _check_every_plan(results, model):
    rows = [r for r in results if r["model"] == model]
    assert len(rows) >= 10, f"{model}: only {len(rows)} plans ran"
    for r in rows:
        label = f"{model} plan {r['plan']} ({r['option']})"
        assert r["loss_rel"] <= 1e-4, f"{label}: losses {r['losses']} vs {r['reference']}"
        assert r["param_rel"] <= 1e-4, f"{label}: final parameters differ by {r['param_rel']:.2e}"
        assert r["collectives"] == r["expected_collectives"], (
            f"{label}: built {r['collectives']}, the plan says {r['expected_collectives']}")
        assert r["ranks_compared"] == 4, label
    return rows


def test_more_tensorflow_ops_and_rmsprop_train_like_one_process_under_every_plan(mpirun, tmp_path):
    """The activations, losses and shape functions beyond the core set (``activations`` in
    the driver), trained by centered RMSProp, under the same 12 kinds of plan."""
    results = _run(mpirun, tmp_path, ["activations"])
    rows = _check_every_plan(results, "activations")
    assert {"frontier", "data_parallel", "sampled"} <= {r["option"] for r in rows}
    kinds = set().union(*(r["step_kinds"] for r in rows))
    assert {"allgather", "slice"} <= kinds, f"steps seen {kinds}"


def test_frontier_plans_picked_on_every_rank_train_like_one_process(mpirun, tmp_path):
    out = tmp_path / "summary.json"
    driver = pathlib.Path(__file__).with_name("parity_driver.py")
    models = ["mlp", "transformer"]
    mpirun(4, str(driver), str(out), "--summary", *models, timeout=900)
    results = json.loads(out.read_text())
    assert [r["model"] for r in results] == [m for m in models for _ in range(5)]
    for model in models:
        rows = [r for r in results if r["model"] == model]
        assert [r["option"] for r in rows] == ["mini_time"] * 3 + ["data_parallel", "mini_time"]
        assert rows[-1]["round_trip"] is True, f"{model}: find_strategy's plan changed through JSON"
        memory = [r["memory_bytes"] for r in rows[:3]]
        assert memory[0] < memory[2] and memory == sorted(memory), "first, middle, last of the frontier"
        for r in rows:
            label = f"{model} plan {r['plan']} ({r['option']})"
            assert r["same_plan_on_every_rank"], f"{label}: the ranks took different plans"
            assert r["loss_rel"] <= 1e-4, f"{label}: losses {r['losses']} vs {r['reference']}"
            assert r["param_rel"] <= 1e-4, f"{label}: final parameters differ by {r['param_rel']:.2e}"
            assert r["collectives"] == r["expected_collectives"], label
            assert r["ranks_compared"] == 4, label
