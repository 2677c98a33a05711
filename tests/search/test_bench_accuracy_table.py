"""The accuracy bench's closing table (``tensoropt.bench.accuracy.summary_lines``)."""

from tensoropt.bench.accuracy import _summary, summary_lines


def _row(kind, measured_s, estimated_s, spread_s=0.0):
    figures = {"time": measured_s, "time_spread": spread_s, "network": 0.5 * measured_s, "memory": 100.0}
    estimate = {"time": estimated_s, "network": 0.5 * estimated_s, "memory": 90.0}
    return {"kind": kind, "measured": figures, "additive": dict(estimate), "simulated": dict(estimate)}


def test_errors_and_tau_per_model_and_n_a_where_the_frontier_times_tie():
    ordered = [_row("sampled", 1.0, 0.9), _row("frontier", 2.0, 2.2), _row("frontier", 1.0, 1.1),
               _row("frontier", 3.0, 3.3)]
    tied = [_row("frontier", 2.0, 1.0), _row("frontier", 1.0, 1.0)]   # every estimate the same
    lines = summary_lines([("mlp", _summary(ordered)), ("cnn", _summary(tied))])
    assert lines[0].split()[:2] == ["model", "source"] and lines[-2].startswith("targets:")
    mlp = [ln.split() for ln in lines if ln.startswith("mlp")]
    cnn = [ln.split() for ln in lines if ln.startswith("cnn")]
    assert [r[1] for r in mlp] == ["additive", "simulated"]
    # time: +10% under once, -10% over three times: mean |error| 10.0%, signed -5.0%
    assert mlp[0][2:4] == ["10.0%", "(-5.0%)"]
    assert mlp[0][-3:] == ["1.00", "1.00", "(3)"]    # the estimated order is the measured one
    assert cnn[0][-3] == "n/a" and cnn[1][-3] == "n/a"


def test_tau_on_resolved_pairs_leaves_out_plans_measured_within_noise():
    # frontier plans at 10.0 and 10.5 ms (IQR 1 ms each) are within noise; the estimate
    # swaps them, which costs tau but not the resolved pairs' tau
    front = [_row("frontier", 10.0, 11.0, 1.0), _row("frontier", 10.5, 10.6, 1.0),
             _row("frontier", 20.0, 21.0, 1.0)]
    mlp = [ln.split() for ln in summary_lines([("mlp", _summary(front))]) if ln.startswith("mlp")]
    assert mlp[0][-3:] == ["0.33", "1.00", "(2)"]
