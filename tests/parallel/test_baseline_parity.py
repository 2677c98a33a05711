"""Under mpirun -np 4, the baselines' plans (Mesh-TF, OptCNN, ToFu, PaSE, MCMC) train like
one process and issue the collectives they say they do: one launch, the four tiny models,
each distinct baseline plan once."""

import json
import pathlib

import pytest

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

MODELS = ["mlp", "cnn", "transformer", "lstm"]
BASELINES = {"mesh_tf", "optcnn", "tofu", "pase", "mcmc"}


def test_every_baseline_plan_trains_like_one_process(mpirun, tmp_path):
    out = tmp_path / "baselines.json"
    driver = pathlib.Path(__file__).with_name("parity_driver.py")
    mpirun(4, str(driver), str(out), "--baselines", *MODELS, timeout=1200)
    results = json.loads(out.read_text())
    for model in MODELS:
        rows = [r for r in results if r["model"] == model]
        assert set().union(*(r["methods"] for r in rows)) == BASELINES, f"{model}: {rows}"
        for r in rows:
            label = f"{model} plan {r['plan']} ({', '.join(r['methods'])})"
            assert r["loss_rel"] <= 1e-4, f"{label}: losses {r['losses']} vs {r['reference']}"
            assert r["param_rel"] <= 1e-4, f"{label}: final parameters differ by {r['param_rel']:.2e}"
            assert r["collectives"] == r["expected_collectives"], (
                f"{label}: built {r['collectives']}, the plan says {r['expected_collectives']}")
