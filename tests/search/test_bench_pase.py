"""``python -m tensoropt.bench pase`` runs each search in a child: what it reports when the
child answers, takes too long, dies (e.g. out of memory) or raises."""

import os
import signal
import time

import pytest

from tensoropt.bench import pase
from tensoropt.search.driver import SearchOptions


def _figures(model, devices, search):
    return {"model": model, "devices": devices, "epsilon": search.epsilon}


def _sleeps(model, devices, search):
    time.sleep(30)


def _killed(model, devices, search):
    os.kill(os.getpid(), signal.SIGKILL)   # as the out-of-memory killer does


def _raises(model, devices, search):
    raise ValueError("no such model")


def test_child_answers(monkeypatch):
    monkeypatch.setattr(pase, "run", _figures)
    out = pase.run_in_child("m", 16, SearchOptions(epsilon=0.01), timeout=60)
    assert out == {"model": "m", "devices": 16, "epsilon": 0.01}


def test_child_past_its_timeout_is_stopped(monkeypatch):
    monkeypatch.setattr(pase, "run", _sleeps)
    start = time.perf_counter()
    assert pase.run_in_child("m", 16, SearchOptions(), timeout=0.5) == {"stopped": ">0.5 s"}
    assert time.perf_counter() - start < 20


def test_killed_child_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(pase, "run", _killed)
    out = pase.run_in_child("m", 16, SearchOptions(), timeout=60)
    assert out == {"stopped": f"signal {int(signal.SIGKILL)}"}


def test_child_error_names_model_and_devices(monkeypatch):
    monkeypatch.setattr(pase, "run", _raises)
    with pytest.raises(RuntimeError, match="m on 16 devices: ValueError: no such model"):
        pase.run_in_child("m", 16, SearchOptions(), timeout=60)


def test_main_prints_a_stopped_row_and_goes_on(monkeypatch, capsys):
    monkeypatch.setattr(pase, "run", _killed)
    assert pase.main(["--models", "inception_v3,resnet101", "--devices", "64"]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert [r.split()[:2] for r in rows] == [["inception_v3", "64"], ["resnet101", "64"]]
    assert all("signal 9" in r for r in rows)
    assert rows[0].rstrip().endswith("99 s") and rows[1].rstrip().endswith("> 300 s")


def test_main_prints_an_error_row_runs_the_rest_and_fails(monkeypatch, capsys):
    def _fails_on_12(model, devices, search):    # runs in the child
        if devices == 12:
            raise ValueError("12 devices do not divide the batch")
        return {"model": model, "devices": devices, "pricing_s": 1.0, "tracking_s": 2.0,
                "total_s": 3.0, "cpu_s": 3.0, "plans": 5, "bound_s": 0.0, "heuristic": 0,
                "peak_gib": 0.5, "fastest_s": 0.25}
    monkeypatch.setattr(pase, "run", _fails_on_12)
    assert pase.main(["--models", "inception_v3", "--devices", "12,16"]) == 1
    rows = capsys.readouterr().out.splitlines()[1:]
    assert "error: inception_v3 on 12 devices: ValueError: 12 devices do not divide" in rows[0]
    assert rows[1].split()[:2] == ["inception_v3", "16"] and rows[1].rstrip().endswith("12 s")


def test_heuristics_reach_the_search_and_a_bad_rule_is_named(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(pase, "run_in_child", lambda model, devices, search, timeout: seen.append(search)
                        or {"stopped": "x"})
    assert pase.main(["--models", "m", "--devices", "16"]) == 0
    assert pase.main(["--models", "m", "--devices", "16", "--heuristics", "min_memory"]) == 0
    assert [s.heuristics for s in seen] == [("min_memory", "min_time"), ("min_memory",)]
    with pytest.raises(SystemExit):
        pase.main(["--models", "m", "--devices", "16", "--heuristics", "min_memory,fastest"])
    assert "unknown heuristic 'fastest'" in capsys.readouterr().err
