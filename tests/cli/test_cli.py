"""``tensoropt frontier`` and ``tensoropt profile`` on a small zoo model."""

import json
import re

from tensoropt import cli


def test_frontier_table_reports_points_data_parallel_and_exactness(capsys):
    assert cli.main(["frontier", "--model", "mlp", "--size", "tiny", "--cluster", "paper-v100x16",
                     "--devices", "4"]) == 0
    out = capsys.readouterr().out
    assert "data parallel" in out and "configurations per op: mean" in out
    assert "frontier: exact" in out


def test_frontier_epsilon_is_reported_with_its_bound(capsys):
    assert cli.main(["frontier", "--model", "transformer", "--size", "tiny", "--cluster",
                     "paper-v100x16", "--devices", "4", "--epsilon", "0.1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    stats = out["frontier_stats"]
    assert stats["epsilon"] == 0.1
    # one run per heuristic rule, each within epsilon of the least T of them all
    assert len(stats["heuristic_runs"]) == 2
    assert stats["time_lower_bound_s"] == min(r[3] for r in stats["heuristic_runs"])
    assert 0 <= stats["time_error_bound_s"] <= 0.1 * stats["time_lower_bound_s"] * (1 + 1e-9)
    times = [row["time_s"] for row in out["frontier"]]
    assert times == sorted(times, reverse=True) and min(times) >= stats["time_lower_bound_s"]


def test_frontier_relative_epsilon_bounds_each_plan_by_its_own_time(capsys):
    argv = ["frontier", "--model", "transformer", "--size", "tiny", "--cluster", "paper-v100x16",
            "--devices", "4", "--epsilon", "0.1"]
    assert cli.main(argv + ["--relative", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    stats = out["frontier_stats"]
    assert stats["relative"] is True and 0 < stats["relative_error_bound"] <= 0.1
    assert cli.main(argv + ["--relative"]) == 0
    assert "epsilon 0.1 (relative to each plan's time)" in capsys.readouterr().out


def test_profile_table_has_a_row_per_device_count(capsys):
    assert cli.main(["profile", "--model", "mlp", "--size", "tiny", "--cluster", "paper-v100x16",
                     "--devices", "1,2", "--epsilon", "0.05"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines[2:4]] == ["1", "2"]
    assert [ln.split(": ")[0] for ln in lines[4:]] == ["devices 1", "devices 2"]
    assert all("epsilon 0.05" in ln for ln in lines[4:])


def test_frontier_max_candidates_thins_and_prints_its_bound(capsys):
    argv = ["frontier", "--model", "transformer", "--size", "tiny", "--cluster", "paper-v100x16",
            "--devices", "4"]
    assert cli.main(argv + ["--json"]) == 0
    exact = json.loads(capsys.readouterr().out)["frontier_stats"]
    assert cli.main(argv + ["--max-candidates", "20", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)["frontier_stats"]
    assert stats["capped_products"] > 0 and stats["max_candidates"] == 20
    assert exact["capped_products"] == 0 and exact["time_error_bound_s"] == 0
    # the whole run's candidates need not fall here: the elimination order reads the
    # tables' points per cell, which thinning changes, and on this tiny model the cap
    # barely thins (tests/frontier/test_frontier_api.py checks that it cuts the work on
    # a graph where it thins much)
    assert stats["time_error_bound_s"] > 0
    assert cli.main(argv + ["--max-candidates", "20"]) == 0
    out = capsys.readouterr().out
    assert "products thinned to about 20 candidates" in out and "slower than the exact" in out


def test_profile_max_candidates_says_which_frontiers_are_approximate(capsys):
    assert cli.main(["profile", "--model", "transformer", "--size", "tiny", "--cluster",
                     "paper-v100x16", "--devices", "1,4", "--max-candidates", "20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[0] for ln in lines[2:4]] == ["1", "4"]
    assert any(ln.startswith("devices 4: frontier: ") and "products thinned to about 20" in ln
               for ln in lines[4:])


def test_a_bad_search_option_is_named(capsys):
    assert cli.main(["frontier", "--model", "mlp", "--size", "tiny", "--cluster", "paper-v100x16",
                     "--max-candidates", "0"]) == 2
    assert re.search("tensoropt frontier: argument --max-candidates: '0' is below 1", capsys.readouterr().err)


def test_frontier_plot_draws_the_frontier(tmp_path, capsys):
    path = tmp_path / "frontier.png"
    assert cli.main(["frontier", "--model", "cnn", "--size", "tiny", "--cluster", "paper-v100x16",
                     "--devices", "4", "--plot", str(path)]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
    assert f"plot written to {path}" in capsys.readouterr().err
