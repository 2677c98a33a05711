"""Checkpoints survive a change of plan and of rank count (under mpirun), and a save cut
off by a dying rank leaves the previous checkpoint restorable.

Steps 1-3 run under plan A on 4 ranks and save; steps 4-6 restore under plan B on 2
ranks and save; steps 7-8 restore on one process. The 8 losses equal one process's 8
uninterrupted steps, for the tiny MLP and Transformer, in two chains: least-memory plan
-> data parallel, and data parallel -> least-memory plan.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

DRIVER = pathlib.Path(__file__).with_name("checkpoint_driver.py")
MODELS = ("mlp", "transformer")
CHAINS = ("least_memory", "data_parallel")


def _single(phase, out):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, str(DRIVER), phase, str(out)], capture_output=True, text=True,
                          timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_a_checkpoint_restores_under_other_plans_and_rank_counts(mpirun, tmp_path):
    mpirun(4, str(DRIVER), "a", str(tmp_path), timeout=900)
    mpirun(2, str(DRIVER), "b", str(tmp_path), timeout=900)
    _single("c", tmp_path)
    for model in MODELS:
        for chain in CHAINS:
            phases = {p: json.loads((tmp_path / f"{model}-{chain}-{p}.json").read_text()) for p in "abc"}
            assert [phases[p]["ranks"] for p in "abc"] == [4, 2, 1]
            assert phases["a"]["plan"] != phases["b"]["plan"], "the chain must change plan"
            assert (phases["b"]["restored_step"], phases["c"]["restored_step"]) == (3, 6)
            losses = phases["a"]["losses"] + phases["b"]["losses"] + phases["c"]["losses"]
            reference = phases["c"]["reference"]
            assert losses == pytest.approx(reference, rel=1e-4), f"{model} {chain}: {losses} vs {reference}"
            assert len(set(reference)) == 8   # training moved: a stale restore would show


def test_a_rank_dying_mid_save_leaves_the_previous_checkpoint(tmp_path):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun is not installed; run `make setup`")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", OMPI_MCA_rmaps_base_oversubscribe="1",
               HOROVOD_CYCLE_TIME="0.2")
    proc = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "4", sys.executable,
                           str(DRIVER), "kill", str(tmp_path)], capture_output=True, text=True, timeout=600,
                          env=env)
    assert proc.returncode != 0, "rank 1 was to die during the second save"
    assert (tmp_path / "saved_at_1.npz").exists(), proc.stderr[-3000:]
    _single("after_kill", tmp_path)
    result = json.loads((tmp_path / "after_kill.json").read_text())
    assert result["latest"] == "model-1" and result["step"] == 1
    assert result["equal"], "the restored values are not those saved at step 1"
    assert result["leftovers_before"], "the cut-off save left no temporary directory to clear"
    assert result["leftovers_after"] == []
