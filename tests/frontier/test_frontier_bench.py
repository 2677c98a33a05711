"""The benchmark runs end to end on tiny graphs and both methods agree."""

import os
import resource
import signal
import time

import pytest

from frontier import bench


def test_bench_smoke(capsys):
    assert bench.main(["--shape", "chain,residual,transformer", "--n", "12,20", "--k", "4",
                       "--timeout", "900", "--threads", "1,2"]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(lines) == 1 + 6
    assert "DIFFER" not in out
    assert sum("same" in ln for ln in lines) >= 4


def test_bench_graph_rows(tmp_path, capsys):
    from frontier.synthetic import model_graph
    path = str(tmp_path / "g.npz")
    model_graph("residual", 10, 4).save(path)
    assert bench.main(["--graph", f"hard:shortcut:13:4,{path}", "--epsilon", "0.1",
                       "--timeout", "900", "--steps"]) == 0
    out = capsys.readouterr().out
    # one line per graph; kinds come slowest first, so which leads depends on the machine
    kinds = [ln for ln in out.splitlines() if ln.startswith("#   seconds by kind: ")]
    assert len(kinds) == 2 and all("node " in ln for ln in kinds), kinds
    assert any(ln.startswith("#") and " s  node      nodes [" in ln for ln in out.splitlines())
    rows = [ln.split() for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]
    assert rows[0][:3] == ["graph", "nodes", "edges"] and len(rows) == 3
    assert rows[1][:3] == ["hard:shortcut:13:4", "13", "15"] and rows[2][:2] == ["g.npz", "10"]
    for row in rows[1:]:
        bound, summed = (float(x.rstrip("%")) for x in row[9:11])
        assert 0 <= bound <= 10.0 + 1e-9 and bound <= summed + 1e-9
    with pytest.raises(ValueError, match="no such file"):
        bench.main(["--graph", str(tmp_path / "missing.npz")])
    with pytest.raises(ValueError, match="expected hard:SHAPE:N:K"):
        bench.main(["--graph", "hard:ring:10:4"])


def _dies():
    os.kill(os.getpid(), signal.SIGKILL)   # as the out-of-memory killer does


def _exits():
    os._exit(3)


def _raises():
    raise ValueError("bad graph")


def test_run_in_child_reports_how_the_child_ended():
    assert bench.run_in_child(dict, (), 60) == {}
    assert bench.run_in_child(time.sleep, (30,), 0.5) == {"stopped": ">0.5 s"}
    assert bench.run_in_child(_dies, (), 60) == {"stopped": "signal 9"}
    assert bench.run_in_child(_exits, (), 60) == {"stopped": "exit 3"}
    with pytest.raises(RuntimeError, match="g.npz: ValueError: bad graph"):
        bench.run_in_child(_raises, (), 60, label="g.npz")


def _burns_cpu_and_memory():
    block = bytearray(300 * 2**20)          # touched: resident in the child only
    for i in range(0, len(block), 4096):
        block[i] = 1
    end = time.process_time() + 0.5
    while time.process_time() < end:
        pass
    return len(block)


def test_cpu_and_peak_count_forked_children():
    # a search that tracks rules at once spends CPU and memory in forked children, which
    # time.process_time and this process's own peak leave out
    from frontier._forked import ForkedRun

    cpu, peak = bench.cpu_seconds(), bench.peak_resident_gib()
    own_cpu = time.process_time()
    assert ForkedRun(_burns_cpu_and_memory).result() == 300 * 2**20
    assert bench.cpu_seconds() - cpu >= 0.45
    assert time.process_time() - own_cpu < 0.3
    own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    assert bench.peak_resident_gib() - own_peak >= 300 / 1024    # the child's 300 MiB
    assert bench.peak_resident_gib() >= peak
