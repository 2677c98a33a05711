"""The accuracy bench's closing table (``tensoropt.bench.accuracy.summary_lines``)."""

from tensoropt.bench.accuracy import _summary, summary_lines


def _row(kind, measured_s, estimated_s):
    figures = {"time": measured_s, "network": 0.5 * measured_s, "memory": 100.0}
    estimate = {"time": estimated_s, "network": 0.5 * estimated_s, "memory": 90.0}
    return {"kind": kind, "measured": figures, "additive": dict(estimate), "simulated": dict(estimate)}


def test_errors_and_tau_per_model_and_n_a_where_the_frontier_times_tie():
    ordered = [_row("sampled", 1.0, 0.9), _row("frontier", 2.0, 2.2), _row("frontier", 1.0, 1.1),
               _row("frontier", 3.0, 3.3)]
    tied = [_row("frontier", 2.0, 1.0), _row("frontier", 1.0, 1.0)]   # every estimate the same
    lines = summary_lines([("mlp", _summary(ordered)), ("cnn", _summary(tied))])
    assert lines[0].split()[:2] == ["model", "source"] and lines[-1].startswith("targets:")
    mlp = [ln.split() for ln in lines if ln.startswith("mlp")]
    cnn = [ln.split() for ln in lines if ln.startswith("cnn")]
    assert [r[1] for r in mlp] == ["additive", "simulated"]
    # time: +10% under once, -10% over three times: mean |error| 10.0%, signed -5.0%
    assert mlp[0][2:4] == ["10.0%", "(-5.0%)"]
    assert mlp[0][-1] == "1.00"                      # the estimated order is the measured one
    assert cnn[0][-1] == "n/a" and cnn[1][-1] == "n/a"
