"""Per-rank input through tf.data (the example), and jobs spread over several machines,
faked on one through TENSOROPT_HOSTS."""

import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import tensoropt as to
from tensoropt import models
from tensoropt.cluster import get_cluster
from tensoropt.search.strategy import SearchSettings, choose_plan

pytestmark = [pytest.mark.mpi, pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _mpirun(n, args, hosts=None, timeout=600):
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        pytest.skip("mpirun is not installed; run `make setup`")
    # no calibration profile: the jobs' local cluster is their own (uncalibrated) shape,
    # whatever profiles/local.json this checkout has
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", OMPI_MCA_rmaps_base_oversubscribe="1",
               HOROVOD_CYCLE_TIME="0.2", TENSOROPT_PROFILE=str(ROOT / "tests" / "parallel" / "absent.json"))
    if hosts:
        env["TENSOROPT_HOSTS"] = hosts
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(n)]
    cmd += ["-x", "TENSOROPT_PROFILE"] + (["-x", "TENSOROPT_HOSTS"] if hosts else [])
    return subprocess.run(cmd + [sys.executable, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)


def test_each_rank_loads_only_its_slice_and_trains_as_with_whole_batches(tmp_path):
    out = tmp_path / "figures.json"
    proc = _mpirun(4, [str(ROOT / "examples" / "sharded_input.py"), str(tmp_path / "data"), "--check",
                       "--json", str(out)])
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(out.read_text())
    assert "loss" in proc.stdout and "loaded" in proc.stdout
    assert result["losses"] == pytest.approx(result["whole_batch_losses"], rel=1e-6)
    assert len(result["loaded"]) == 4
    for counts in result["loaded"]:
        assert counts["slice"] < counts["whole"], "a rank loaded whole batches"
    assert sum(c["slice"] for c in result["loaded"]) >= result["loaded"][0]["whole"]


def test_a_plan_for_two_machines_runs_unchanged_on_four_ranks_of_two_hosts(tmp_path):
    to.reset_default_graph()
    models.build("transformer", size="tiny")
    paper = get_cluster("paper-v100x16")
    cluster = dataclasses.replace(paper, name="paper-v100-2x2", machines=2, devices_per_machine=2)
    plan = choose_plan(to.get_default_graph(), SearchSettings(cluster=cluster, option="mini_time")).chosen
    plan.save(str(tmp_path / "plan.json"))
    proc = _mpirun(4, [str(pathlib.Path(__file__).with_name("hosts_driver.py")), str(tmp_path / "plan.json"),
                       str(tmp_path / "out.json")], hosts="hostA,hostA,hostB,hostB")
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((tmp_path / "out.json").read_text())
    assert (result["machines"], result["devices_per_machine"]) == (2, 2)
    assert result["local_cluster"] == [2, 2]
    assert result["calibrated"] == [2, 2, ["hostA", "hostA", "hostB", "hostB"]]
    assert result["loss_rel"] <= 1e-4, result
    # each machine's ranks have their process set; collectives inside one stay on it
    assert result["machine_groups"] == [[0, 1], [2, 3]]
    for r in result["ranks"]:
        machine = [0, 1] if r["rank"] < 2 else [2, 3]
        assert r["machine_ranks"] == machine and r["across_ranks"] == [r["rank"] % 2, r["rank"] % 2 + 2]
        assert r["sums"] == {"machine": float(sum(machine)), "across": float(2 * (r["rank"] % 2) + 2)}, r
        assert machine in r["registered"] and r["across_ranks"] in r["registered"]


def test_ranks_of_one_host_not_numbered_together_are_refused_with_the_fix(tmp_path):
    proc = _mpirun(4, [str(pathlib.Path(__file__).with_name("world_check.py"))], hosts="a,b,a,b", timeout=300)
    assert proc.returncode != 0
    assert "--map-by slot" in proc.stderr
