"""The benchmark runs end to end on tiny graphs and both methods agree."""

from frontier import bench


def test_bench_smoke(capsys):
    assert bench.main(["--shape", "chain,residual,transformer", "--n", "12,20", "--k", "4",
                       "--timeout", "60", "--threads", "1,2"]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith("#")]
    assert len(lines) == 1 + 6
    assert "DIFFER" not in out
    assert sum("same" in ln for ln in lines) >= 4
