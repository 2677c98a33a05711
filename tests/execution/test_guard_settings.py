"""The guards' settings and messages, without MPI: the stall limit, horovod's response
cache, and how a difference between ranks is described."""

import warnings

import pytest

from tensoropt.execution import guards


def test_the_stall_limit_sets_horovods_stall_inspector_and_the_cache():
    settings = guards.horovod_settings({"TENSOROPT_COLLECTIVE_TIMEOUT_S": "10"})
    assert settings == {"HOROVOD_STALL_CHECK_TIME_SECONDS": "3", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS": "10",
                        "HOROVOD_CACHE_CAPACITY": str(guards.CACHE_CAPACITY)}
    assert guards.horovod_settings({})["HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"] == "120"   # the default
    off = guards.horovod_settings({"TENSOROPT_COLLECTIVE_TIMEOUT_S": "0"})
    assert "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS" not in off
    mine = guards.horovod_settings({"HOROVOD_CACHE_CAPACITY": "0", "HOROVOD_STALL_CHECK_TIME_SECONDS": "5"})
    assert "HOROVOD_CACHE_CAPACITY" not in mine and "HOROVOD_STALL_CHECK_TIME_SECONDS" not in mine
    for bad in ("-1", "soon", "inf"):
        with pytest.raises(ValueError, match="TENSOROPT_COLLECTIVE_TIMEOUT_S=.*e.g. 120, or 0 for no limit"):
            guards.horovod_settings({"TENSOROPT_COLLECTIVE_TIMEOUT_S": bad})


def test_a_plan_with_more_collectives_than_the_cache_warns():
    with pytest.warns(RuntimeWarning, match="2000 collectives per step.*HOROVOD_CACHE_CAPACITY=2000"):
        guards.check_cache_capacity(2000, {"HOROVOD_CACHE_CAPACITY": "1024"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        guards.check_cache_capacity(2000, {"HOROVOD_CACHE_CAPACITY": str(guards.CACHE_CAPACITY)})
        guards.check_cache_capacity(2000, {"HOROVOD_CACHE_CAPACITY": "0"})   # caching off


def test_the_difference_between_ranks_names_the_first_op_and_collective():
    ops = [("x", "[4] d0:0"), ("MatMul", "[4] m:0"), ("relu", "[4] d0:0")]
    other = [("x", "[4] d0:0"), ("MatMul", "[2,2] m:0,n:1"), ("relu", "[2,2] d0:0")]
    lines = ["forward allreduce allreduce/MatMul/out0/axis0 mesh=[4] axis=0 bytes=64"]
    others = ["forward alltoall alltoall/relu/in0/0 mesh=[2, 2] axis=1 bytes=32"]
    everyone = [(4, ops, [], lines), (4, other, [], others), (4, ops, [], lines)]
    text = guards.describe_difference(everyone)
    assert "op 'MatMul' is configured [4] m:0 on ranks 0, 2; [2,2] m:0,n:1 on rank 1" in text
    assert "collective #0 is 'forward allreduce allreduce/MatMul/out0/axis0" in text
    assert "on ranks 0, 2; 'forward alltoall alltoall/relu/in0/0" in text and text.endswith("is not")


def test_a_stall_message_names_the_collective_and_the_missing_ranks():
    error = RuntimeError("Horovod has been shut down. ... [[{{node allreduce/Mean/out0/axis0}}]]")
    assert guards.is_collective_failure(error)
    assert guards.stalled_collective(error) == "allreduce/Mean/out0/axis0"
    text = guards.stall_message(0, "allreduce/Mean/out0/axis0", 2, [1, 3], 120)
    assert "collective 'allreduce/Mean/out0/axis0' of step 2 did not complete within 120 s" in text
    assert "rank(s) 1, 3 never started step 2" in text
    assert "Missing ranks" in guards.stall_message(0, None, 2, [], 120)
