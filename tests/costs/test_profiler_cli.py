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
    # a fresh cache: each distinct measurement is taken once; pairs that share one (a
    # configuration that differs only in leaving its output partial) are served from it
    measured, cached = int(counts[1]), int(counts[2])
    assert measured > 0 and cached < measured, counts[0]
    entries = json.loads(path.read_text())["entries"]
    assert entries
    assert main(["--model", "demo", "--devices", "2", "--cache", str(path)]) == 0
    second = capsys.readouterr().out
    again = re.search(r"pairs on 2 devices: (\d+) measured, (\d+) from the cache", second)
    assert again and (int(again[1]), int(again[2])) == (0, measured + cached), second
    assert len(json.loads(path.read_text())["entries"]) == len(entries)
