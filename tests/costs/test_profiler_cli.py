"""``python -m tensoropt.costs.profiler`` profiles a model and fills the cache file."""

from __future__ import annotations

import json
import re

from tensoropt.costs.profiler.__main__ import main


def test_cli_profiles_the_demo_model_then_serves_it_from_the_cache(tmp_path, capsys):
    path = tmp_path / "profile.json"
    assert main(["--model", "demo", "--devices", "2", "--cache", str(path)]) == 0
    first = capsys.readouterr().out
    assert "matmul" in first
    counts = re.search(r"\(op, config\) pairs on 2 devices: (\d+) measured, (\d+) from the cache", first)
    assert counts, first
    assert int(counts[1]) > 0 and int(counts[2]) == 0, counts[0]   # a fresh cache: all measured
    entries = json.loads(path.read_text())["entries"]
    assert entries
    assert main(["--model", "demo", "--devices", "2", "--cache", str(path)]) == 0
    second = capsys.readouterr().out
    again = re.search(r"pairs on 2 devices: (\d+) measured, (\d+) from the cache", second)
    assert again and (int(again[1]), int(again[2])) == (0, int(counts[1])), second
    assert len(json.loads(path.read_text())["entries"]) == len(entries)
