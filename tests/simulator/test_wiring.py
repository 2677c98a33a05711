"""find_strategy(simulate=...), and the CLI's frontier --simulate, plan and simulate."""

import json
import re

import pytest

import tensoropt as to
from tensoropt.cli import main as cli_main
from tensoropt.plan import Plan


def _model(batch: int = 16):
    x = to.placeholder(to.float32, [batch, 32], name="x")
    h = to.nn.relu(to.matmul(x, to.get_variable("w1", [32, 64])))
    loss = to.reduce_mean(to.matmul(h, to.get_variable("w2", [64, 8])))
    to.train.AdamOptimizer(0.1).minimize(loss)


@pytest.mark.parametrize("mode", ["auto", "chosen"])
def test_find_strategy_attaches_the_check_of_its_frontier(mode):
    _model()
    result = to.search_strategy(parallelism=4, cluster="paper-v100x16", simulate=mode)
    check = result.simulator_check
    chosen = result.frontier.index(result.chosen)
    assert check["chosen_index"] == chosen
    rows = {r["index"]: r for r in check["plans"]}
    assert chosen in rows and -1 in rows
    assert rows[chosen]["estimated_time_s"] == pytest.approx(result.chosen.time_s)
    assert rows[chosen]["simulated_time_s"] <= result.chosen.time_s * (1 + 1e-9)
    if mode == "auto":
        assert len(rows) == len(result.frontier) + 1
    else:
        assert len(rows) == 2
    assert to.search_strategy(parallelism=4, cluster="paper-v100x16").simulator_check is None


def test_find_strategy_warns_when_the_simulated_peak_exceeds_the_limit():
    _model(batch=256)                  # activations, not weights, make the peak
    plain = to.search_strategy(parallelism=4, cluster="paper-v100x16", simulate="chosen")
    row = next(r for r in plain.simulator_check["plans"] if r["index"] == plain.simulator_check["chosen_index"])
    assert row["simulated_peak_bytes"] > row["estimated_memory_bytes"]   # transient buffers
    limit = (row["simulated_peak_bytes"] + row["estimated_memory_bytes"]) / 2
    with pytest.warns(UserWarning, match=r"simulated peak memory.*exceeds the memory limit"):
        to.find_strategy(parallelism=4, cluster="paper-v100x16", memory_limit=limit, simulate="chosen",
                         check_peak=False)   # checking the peak (the default) avoids that plan


def test_find_strategy_refuses_an_unknown_simulate_value():
    _model()
    with pytest.raises(ValueError, match="simulate='sometimes'.*'auto', 'all', 'chosen' or False"):
        to.find_strategy(simulate="sometimes")


def test_cli_frontier_simulate_plan_and_simulate(tmp_path, capsys):
    args = ["--model", "mlp", "--size", "tiny", "--cluster", "paper-v100x16", "--devices", "4"]
    assert cli_main(["frontier", *args, "--simulate", "all", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    check = out["simulator_check"]
    assert {"kendall_tau_time", "kendall_tau_memory"} <= set(check)
    assert len(check["plans"]) == len(out["frontier"]) + 1
    assert cli_main(["frontier", *args, "--simulate", "3", "--trace-dir", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert "simulator check" in table and "sim time" in table
    assert len(list(tmp_path.glob("*.json"))) >= 3
    plan_path, trace = tmp_path / "plan.json", tmp_path / "trace.json"
    assert cli_main(["plan", *args, "--option", "mini_time", "--out", str(plan_path)]) == 0
    plan = Plan.load(str(plan_path))
    capsys.readouterr()
    assert cli_main(["simulate", *args, "--plan", str(plan_path), "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "simulated" in out and f"{plan.time_s:.4g}" in out
    assert json.loads(trace.read_text())["traceEvents"]


def test_cli_simulate_names_what_to_fix(tmp_path, capsys):
    args = ["--model", "mlp", "--size", "tiny", "--cluster", "paper-v100x16"]
    plan_path = tmp_path / "plan.json"
    assert cli_main(["plan", *args, "--devices", "4", "--out", str(plan_path)]) == 0
    assert cli_main(["simulate", *args, "--devices", "2", "--plan", str(plan_path)]) == 2
    assert re.search("--devices 4", capsys.readouterr().err)
    assert cli_main(["simulate", "--model", "cnn", "--size", "tiny", "--cluster", "paper-v100x16",
                     "--devices", "4", "--plan", str(plan_path)]) == 2
    assert re.search("does not configure", capsys.readouterr().err)
    assert cli_main(["simulate", *args, "--devices", "4", "--plan", str(plan_path),
                     "--trace", str(tmp_path / "no" / "t.json")]) == 2
    assert re.search("cannot write --trace", capsys.readouterr().err)


def test_cli_simulate_with_profiled_costs_and_no_profile_names_the_command(tmp_path, monkeypatch, capsys):
    args = ["--model", "mlp", "--size", "tiny", "--cluster", "paper-v100x16", "--devices", "4"]
    plan_path = tmp_path / "plan.json"
    assert cli_main(["plan", *args, "--out", str(plan_path)]) == 0
    monkeypatch.setenv("TENSOROPT_PROFILE", str(tmp_path / "none.json"))
    assert cli_main(["simulate", *args, "--cost-model", "profiled", "--plan", str(plan_path)]) == 2
    assert re.search("tensoropt calibrate", capsys.readouterr().err)
