"""``tensoropt compare`` on a tiny zoo model: the table, the JSON and the plot."""

import json

import pytest

from tensoropt import cli
from tensoropt.search.baselines import METHODS


def test_compare_json_lists_every_method_with_its_fields(capsys, tmp_path):
    plot = tmp_path / "compare.png"
    assert cli.main(["compare", "--model", "cnn", "--size", "tiny", "--cluster", "paper-v100x16",
                     "--devices", "4", "--budget-s", "0.5", "--json", "--plot", str(plot)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [m["method"] for m in out["methods"]] == list(METHODS)
    for m in out["methods"]:
        assert {"method", "search_s", "time_s", "memory_bytes", "fits"} <= set(m)
        assert m["time_s"] > 0 and m["memory_bytes"] > 0 and m["search_s"] >= 0
        assert 0 < m["simulated_s"] <= m["time_s"] * (1 + 1e-9)   # overlap only ever helps
    ft = out["methods"][0]
    assert ft["fits"] and ft["slowdown"] == 1.0
    assert all(m["time_s"] >= ft["time_s"] * (1 - 1e-9) for m in out["methods"] if m["fits"])
    assert out["mcmc_trace"]
    assert plot.stat().st_size > 10_000


def test_compare_table_has_a_row_per_method_and_the_limit(capsys):
    assert cli.main(["compare", "--model", "mlp", "--size", "tiny", "--cluster", "paper-v100x16",
                     "--devices", "4", "--budget-s", "0.2", "--memory-limit", "1e9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "memory limit 0.93 GiB" in lines[0]
    assert [ln.split()[0] for ln in lines[2:]] == list(METHODS)


def test_compare_prices_mcmc_with_the_simulator_unless_told_additive(capsys):
    args = ["compare", "--model", "mlp", "--size", "tiny", "--cluster", "paper-v100x16",
            "--devices", "4", "--budget-s", "0.3", "--json"]
    notes = {}
    for cost in ("simulated", "additive"):
        assert cli.main(args + ["--mcmc-cost", cost]) == 0
        methods = json.loads(capsys.readouterr().out)["methods"]
        mcmc = next(m for m in methods if m["method"] == "mcmc")
        notes[cost] = mcmc["note"]
        if cost == "simulated":   # the chain's best time is its plan's simulated time
            its_time = float(mcmc["note"].split("its time ")[1].split()[0])
            assert its_time == pytest.approx(mcmc["simulated_s"], abs=1e-5)
    assert "cost=SimulatedCost" in notes["simulated"] and "its time" in notes["simulated"]
    assert "cost=AdditiveCost" in notes["additive"]
