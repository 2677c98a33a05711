"""``python -m tensoropt.costs.profiler`` profiles a model and fills the cache file."""

from __future__ import annotations

import json

from tensoropt.costs.profiler.__main__ import main


def test_cli_profiles_the_demo_model_then_serves_it_from_the_cache(tmp_path, capsys):
    path = tmp_path / "profile.json"
    assert main(["--model", "demo", "--devices", "2", "--cache", str(path)]) == 0
    first = capsys.readouterr().out
    assert "matmul" in first and "0 from the cache" not in first.split("pairs")[0]
    entries = json.loads(path.read_text())["entries"]
    assert entries
    assert main(["--model", "demo", "--devices", "2", "--cache", str(path)]) == 0
    second = capsys.readouterr().out
    assert ": 0 measured," in second
    assert len(json.loads(path.read_text())["entries"]) == len(entries)
