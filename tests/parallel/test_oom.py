"""Under mpirun -np 2, one launch: with a memory limit that rules out the frontier's
fastest plans, ``mini_time``'s plan (its additive estimate and its simulated peak within
the limit) trains with a measured peak per rank (``execution.step_profile``: resident
variables + the step's allocation peak) at that limit.

The limit is the checked peak of a plan a third along the frontier, so the chosen plan's
estimate sits at it, and what the estimate does not model decides which side of it the
run lands on. The analytical cost model (as CI runs it) now counts TensorFlow's CPU
kernels' big transients (``costs.cpu_workspaces``: the 23 MB im2col buffer of the tiny
CNN's convolution backprop, the LSTM's per-step weight-gradient partials), and the LSTM's
backward keeps its (all-gathered) kernel; before, the CNN measured 114x its limit and the
LSTM 1.8x. What is left is horovod's thread freeing a collective's input and output when
it gets to them, after the reader of the result has run (seen in the traces: the tiny MLP
holds two 1 KiB gradients longer, some runs; the CNN one 32 KiB gradient), so the models
are held to the memory target, 5% over the limit at most, and the tiny MLP, whose two
buffers are 6% of it, to 10%. Measured (2026-11-27, uncalibrated, three launches): mlp
5.8% over, cnn 0.0-0.14% over, lstm 7.1-8.4% under, transformer 2.3-7.6% under.
"""

import json
import pathlib

import pytest

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

MODELS = ["mlp", "cnn", "transformer", "lstm"]
#: how far over the limit a measured peak may land (see the module doc)
OVER_AT_MOST = {"mlp": 0.10, "cnn": 0.05, "transformer": 0.05, "lstm": 0.05}


def test_mini_time_plans_measured_peak_lands_at_the_memory_limit(mpirun, tmp_path):
    out = tmp_path / "oom.json"
    mpirun(2, str(pathlib.Path(__file__).with_name("oom_driver.py")), str(out), *MODELS, timeout=900)
    rows = {r["model"]: r for r in json.loads(out.read_text())}
    assert set(rows) == set(MODELS)
    for model, r in rows.items():
        assert r["estimated_bytes"] <= r["limit_bytes"] < r["fastest_bytes"], (
            f"{model}: the limit should rule out the fastest plan (its checked peak)")
        what = f"{model}: measured peak per rank {r['measured_peak_bytes']}, limit {r['limit_bytes']:.0f}"
        assert max(r["measured_peak_bytes"]) <= (1 + OVER_AT_MOST[model]) * r["limit_bytes"], what
