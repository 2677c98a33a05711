"""The zoo's models profile end to end, and every op kind they use is covered."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

import tensoropt as to
from tensoropt.configs import enumerate_configs
from tensoropt.costs.profiler import SOURCE_KINDS, ComputeProfiler

models = pytest.importorskip("tensoropt.models")


def _zoo_kinds_tested() -> set[str]:
    spec = importlib.util.spec_from_file_location(
        "_profiler_ops_test", pathlib.Path(__file__).with_name("test_profiler_ops.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return set(module.ZOO_KINDS)


def test_every_kind_the_zoo_uses_is_profiled_by_the_kinds_test():
    used = set()
    for name in models.names():
        to.reset_default_graph()
        models.build(name, size="tiny")
        used |= {op.kind for op in to.get_default_graph().operations}
    missing = used - SOURCE_KINDS - _zoo_kinds_tested()
    assert not missing, f"add {sorted(missing)} to ZOO_KINDS and build_all_kinds in test_profiler_ops.py"


@pytest.mark.parametrize("name", ["cnn", "lstm", "rnnlm", "transformer", "paper_wide_resnet"])
def test_tiny_model_profiles_on_split_configs(name):
    models.build(name, size="tiny")
    p = ComputeProfiler(cache_path=None, warmup=0, min_runs=1, max_runs=1, min_time_s=0.0)
    priced = 0
    for op in to.get_default_graph().operations:
        if op.kind in SOURCE_KINDS:
            continue
        configs = enumerate_configs(op, 4)
        split = [c for c in configs if c.split_factor() > 1] or configs
        assert p.compute_s(op, split[0]) >= 0.0
        priced += 1
    assert priced > 0 and p.measurements + p.hits == priced
