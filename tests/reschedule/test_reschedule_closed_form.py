"""Closed-form plans: exact steps and hand-computed textbook costs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reschedule import (
    Layout, NoConversionError, Step, alpha_beta_cost, plan_conversion, run_numpy,
)

ALPHA, BW = 1e-5, 1e9          # seconds per message, bytes per second
BETA = 1.0 / BW
COST = alpha_beta_cost(alpha_s=ALPHA, bandwidth_bytes_per_s=BW)


def plan(src: str, dst: str, shape, cost_fn=COST, itemsize=4):
    return plan_conversion(Layout.parse(src), Layout.parse(dst), shape, itemsize, cost_fn)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-18)


def test_split_to_replicated_is_one_allgather():
    conv = plan("[4] S0,R", "[4] R,R", (8, 8))
    src = Layout.parse("[4] S0,R")
    assert conv.steps == (Step("allgather", src, Layout.parse("[4] R,R"), axis=0, src_dim=0),)
    n = 8 * 8 * 4                      # gathered bytes
    assert close(conv.time_s, 3 * ALPHA + 3 / 4 * n * BETA)
    assert str(conv) == "allgather(axis 0, dim 0)"


def test_split_moves_dims_is_one_alltoall():
    conv = plan("[4] S0,R", "[4] R,S0", (8, 8))
    assert [(s.kind, s.axis, s.src_dim, s.dst_dim) for s in conv.steps] == [("alltoall", 0, 0, 1)]
    n = 8 * 8 * 4 // 4                 # bytes each rank holds
    assert close(conv.time_s, 3 * ALPHA + 3 / 4 * n * BETA)
    assert str(conv) == "alltoall(axis 0, dim 0->1)"


def test_partial_to_split_is_one_reducescatter():
    conv = plan("[4] R,R P{0}", "[4] S0,R", (8, 8))
    assert [(s.kind, s.axis, s.dst_dim) for s in conv.steps] == [("reducescatter", 0, 0)]
    n = 8 * 8 * 4                      # bytes before the scatter
    assert close(conv.time_s, 3 * ALPHA + 3 / 4 * n * BETA)


def test_partial_to_replicated_is_one_allreduce():
    conv = plan("[4] R,R P{0}", "[4] R,R", (8, 8))
    assert [(s.kind, s.axis) for s in conv.steps] == [("allreduce", 0)]
    n = 8 * 8 * 4
    assert close(conv.time_s, 2 * 3 * ALPHA + 2 * 3 / 4 * n * BETA)


def test_replicated_to_split_is_a_free_slice():
    conv = plan("[4] R,R", "[4] R,S0", (8, 8))
    assert [(s.kind, s.axis, s.dst_dim) for s in conv.steps] == [("slice", 0, 1)]
    assert conv.time_s == 0.0 and not conv.steps[0].communicates
    assert str(conv) == "slice(axis 0, dim 1)"


def test_identity_has_no_steps():
    conv = plan("[2,2] S0,R P{1}", "[2,2] S0,R P{1}", (4, 4))
    assert conv.steps == () and conv.time_s == 0.0 and str(conv) == "identity"


def test_issue_example_string():
    """[2,4] S0,R,S1 -> [2,4] R,S1,R: alltoall first (smaller blocks), then allgather."""
    conv = plan("[2,4] S0,R,S1", "[2,4] R,S1,R", (8, 8, 8))
    assert str(conv) == "alltoall(axis 1, dim 2->1) -> allgather(axis 0, dim 0)"
    n = 8 * 8 * 8 * 4
    # alltoall in groups of 4 holding n/8; then allgather in groups of 2 gathering n/4
    want = (3 * ALPHA + 3 / 4 * (n / 8) * BETA) + (ALPHA + 1 / 2 * (n / 4) * BETA)
    assert close(conv.time_s, want)
    assert close(sum(c.time_s for c in conv.step_costs), conv.time_s)
    assert conv.layouts[1] == Layout.parse("[2,4] S0,S1,R")


@pytest.mark.parametrize("shape, expect", [((8, 8), "small"), ((1024, 1024), "large")])
def test_mesh_change_2x2_to_4_costs_the_textbook_model(shape, expect):
    """[2,2] S0,S1 -> [4] S0,R.

    Rank r = 2i + j holds rows-half i, cols-half j; it needs rows-quarter r (inside half i),
    all columns. Two candidates (n = full tensor bytes):
      direct alltoallv: every rank lacks the other column half of its quarter, n/8 bytes:
          3 alpha + n/8 beta;
      allgather on axis 1 (groups of 2, gathered block n/2): alpha + 1/2 * n/2 * beta, after
          which every rank already holds its quarter: the alltoallv receives nothing (free).
    """
    n = shape[0] * shape[1] * 4
    direct = 3 * ALPHA + n / 8 * BETA
    via_gather = ALPHA + 1 / 2 * (n / 2) * BETA
    conv = plan("[2,2] S0,S1", "[4] S0,R", shape)
    assert close(conv.time_s, min(direct, via_gather))
    if expect == "small":
        assert via_gather < direct
        assert [s.kind for s in conv.steps] == ["allgather", "alltoallv"]
        assert conv.steps[0].axis == 1 and conv.step_costs[1].time_s == 0.0
        assert conv.step_costs[1].bytes_recv_per_rank == 0
    else:
        assert direct < via_gather
        assert [s.kind for s in conv.steps] == ["alltoallv"]
        ex = conv.steps[0].exchange(shape)
        for q in range(4):
            others = [c for p, c in enumerate(ex.recv_splits(q)) if p != q]
            assert sum(others) * 4 == n / 8 and sum(c > 0 for c in others) == 1


def test_mesh_change_4_to_2x2_replicated_is_free():
    conv = plan("[4] R,R", "[2,2] S0,R", (8, 8))
    assert [s.kind for s in conv.steps] in (["alltoallv"], ["slice", "alltoallv"])
    assert conv.time_s == 0.0


def test_stride_aware_cost_fn_picks_the_cheap_axis():
    """A profiled model prices by (group size, stride): stride > 1 crosses machines."""
    seen = set()

    def cost(step, shape, itemsize):
        seen.add((step.kind, step.group_size, step.group_stride))
        base = COST(step, shape, itemsize)
        return base * (100.0 if step.group_stride > 1 else 1.0)

    # P over both axes of [2,2]; reducing axis 0 (stride 2) first is expensive, so the plan
    # reduce-scatters over axis 1 (stride 1) first, which shrinks what axis 0 must reduce.
    conv = plan("[2,2] R,R P{0,1}", "[2,2] R,R", (64, 64), cost_fn=cost)
    kinds = [(s.kind, s.axis) for s in conv.steps]
    assert kinds[0] == ("reducescatter", 1), kinds
    assert ("allreduce", 2, 2) in seen and ("allreduce", 2, 1) in seen
    total = sum(cost(s, (64, 64), 4) for s in conv.steps)
    assert close(conv.time_s, total)


def test_infinite_cost_forbids_a_step():
    def no_alltoall(step, shape, itemsize):
        return math.inf if step.kind == "alltoall" else COST(step, shape, itemsize)

    conv = plan("[4] S0,R", "[4] R,S0", (8, 8), cost_fn=no_alltoall)
    assert [s.kind for s in conv.steps] == ["allgather", "slice"]
    with pytest.raises(NoConversionError, match=r"from \[4\] S0,R to \[4\] R,R"):
        plan("[4] S0,R", "[4] R,R", (8, 8), cost_fn=lambda s, sh, i: math.inf)


def test_negative_cost_is_rejected():
    with pytest.raises(ValueError, match="costs must be seconds >= 0"):
        plan("[4] S0,R", "[4] R,R", (8, 8), cost_fn=lambda s, sh, i: -1.0)


def test_unreachable_partial_destination_names_both_layouts():
    with pytest.raises(NoConversionError) as err:
        plan("[4] S0,R", "[4] R,R P{0}", (8, 8))
    assert "[4] S0,R" in str(err.value) and "[4] R,R P{0}" in str(err.value)
    assert err.value.src == Layout.parse("[4] S0,R")
    assert isinstance(err.value, ValueError)
    with pytest.raises(NoConversionError, match=r"\[2,2\] R,R P\{0\}.*\[4\] R,R P\{0\}"):
        plan("[2,2] R,R P{0}", "[4] R,R P{0}", (8, 8))


def test_partial_source_on_another_mesh_reduces_then_moves():
    conv = plan("[2,2] R,R P{0}", "[4] S0,R", (8, 8))
    assert conv.steps[-1].kind == "alltoallv"
    assert conv.steps[0].kind in ("allreduce", "reducescatter")
    full = np.arange(64).reshape(8, 8)
    src = Layout.parse("[2,2] R,R P{0}")
    shards = {r: (full if src.coords(r)[0] == 0 else np.zeros_like(full)) for r in range(4)}
    out = run_numpy(conv, shards)
    for r in range(4):
        np.testing.assert_array_equal(out[r], full[2 * r:2 * r + 2])


def test_ranks_that_do_not_match_raise():
    with pytest.raises(ValueError, match="ranks don't match.*4 ranks.*8"):
        plan("[4] S0,R", "[2,4] S0,R", (8, 8))


def test_plan_validates_shapes_and_inputs():
    with pytest.raises(ValueError, match="indivisible"):
        plan("[4] S0,R", "[4] R,R", (6, 8))
    with pytest.raises(ValueError, match=r"\[4\] R,S0.*indivisible"):
        plan("[4] S0,R", "[4] R,S0", (8, 6))
    with pytest.raises(ValueError, match="tensor dims"):
        plan("[4] S0,R", "[4] R,R,R", (8, 8))
    with pytest.raises(ValueError, match="itemsize"):
        plan("[4] S0,R", "[4] R,R", (8, 8), itemsize=0)
    with pytest.raises(ValueError, match="two Layout values"):
        plan_conversion("[4] S0,R", Layout.parse("[4] R,R"), (8, 8))


def test_run_numpy_validates_shards():
    conv = plan("[4] S0,R", "[4] R,R", (8, 8))
    good = {r: np.zeros((2, 8)) for r in range(4)}
    with pytest.raises(ValueError, match=r"ranks \[0, 1, 2\].*ranks 0..3"):
        run_numpy(conv, {r: good[r] for r in range(3)})
    with pytest.raises(ValueError, match=r"rank 2's block has shape \(8, 8\).*\(2, 8\)"):
        run_numpy(conv, {**good, 2: np.zeros((8, 8))})
    out = run_numpy(conv, good)
    assert all(out[r].shape == (8, 8) for r in range(4))


def test_default_cost_and_factory():
    conv = plan_conversion(Layout.parse("[4] S0,R"), Layout.parse("[4] R,R"), (8, 8))
    c = alpha_beta_cost()
    assert close(conv.time_s, 3 * c.alpha_s + 3 / 4 * 256 / c.bandwidth_bytes_per_s)
    with pytest.raises(ValueError, match="bandwidth"):
        alpha_beta_cost(bandwidth_bytes_per_s=0)
    with pytest.raises(ValueError, match="latency"):
        alpha_beta_cost(alpha_s=-1)


def test_unit_axes_and_single_rank():
    """Mesh axes of size 1 are legal; steps on them are free and move nothing."""
    full = np.arange(32).reshape(4, 8)
    for src, dst in [("[1,4] S1,R", "[4,1] R,S0"), ("[1] S0,R", "[1] R,S0"),
                     ("[2,1] S0,R P{1}", "[2] R,S0"), ("[1,2] R,R P{0}", "[1,2] R,S1")]:
        s, d = Layout.parse(src), Layout.parse(dst)
        conv = plan_conversion(s, d, full.shape, 4, COST)
        # a partial source: the rank at coordinate 0 of every partial axis holds the block
        shards = {r: full[s.shard_slices(r, full.shape)]
                  * int(all(s.coords(r)[a] == 0 for a in s.partial))
                  for r in range(s.num_ranks)}
        out = run_numpy(conv, shards)
        for r in range(d.num_ranks):
            np.testing.assert_array_equal(out[r], full[d.shard_slices(r, full.shape)])
    assert plan("[1] S0,R", "[1] R,S0", (4, 6)).time_s == 0.0
    assert plan("[1,2] R,R P{0}", "[1,2] R,R", (4, 6)).time_s == 0.0


def test_conversion_layouts_and_peak_memory():
    conv = plan("[2,4] S0,R,S1", "[2,4] R,S1,R", (8, 8, 8))
    assert conv.layouts == (Layout.parse("[2,4] S0,R,S1"), Layout.parse("[2,4] S0,S1,R"),
                            Layout.parse("[2,4] R,S1,R"))
    assert conv.peak_bytes_per_rank == 8 * 8 * 8 * 4 // 4
    assert [c.bytes_in_per_rank for c in conv.step_costs] == [256, 256]
    assert [c.bytes_out_per_rank for c in conv.step_costs] == [256, 512]
    assert [c.bytes_recv_per_rank for c in conv.step_costs] == [192, 256]
