"""The benchmark runs and verifies what it times; the package stays numpy-only."""

import ast
import pathlib
import subprocess
import sys

import pytest

from tensoropt.simulator import bench

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "tensoropt" / "simulator"


def test_bench_verifies_every_plan_and_reports_its_figures(capsys):
    assert bench.main(["--synthetic", "--ops", "40", "--plans", "4", "--changes", "2"]) == 0
    out = capsys.readouterr().out
    for line in ("tasks per plan", "full  per plan", "delta per plan", "speed-up",
                 "PASS  delta == full on 4/4 plans"):
        assert line in out
    r = bench.run(n_ops=40, plans=3)
    assert r["verified"] == 3 and r["tasks_per_plan"] > 400
    assert 0 < r["loop_fraction"] < 0.5
    assert r["loop_fraction"] + r["mirrored_fraction"] == pytest.approx(1)


def test_bad_bench_arguments_are_refused():
    with pytest.raises(SystemExit):
        bench.main(["--synthetic", "--ops", "1"])


#: Modules that turn plans into task graphs read these TensorFlow-free parts of tensoropt
#: (the configurations, the cost model's rules, the collective schedule); the engine
#: modules read nothing outside the package.
PLAN_MODULES = {"plan_tasks.py", "_rebuild_tasks.py", "plan_sim.py", "check.py", "bench_plans.py", "bench.py", "commands.py"}
PLAN_IMPORTS = ("tensoropt.configs", "tensoropt.execution.schedule", "tensoropt.cluster",
                "tensoropt.search", "tensoropt.models", "tensoropt.plan")


def test_the_package_imports_only_numpy_the_standard_library_and_itself():
    for path in PACKAGE.glob("*.py"):
        allowed_prefix = ("tensoropt.simulator", "tensoropt.units", "tensoropt.validation") + (PLAN_IMPORTS if path.name in PLAN_MODULES
                                                     else ())
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if name == "tensoropt" and path.name in PLAN_MODULES:
                    continue
                assert name.startswith(allowed_prefix) or top == "numpy" or \
                    top in sys.stdlib_module_names, f"{path.name} imports {name}"


def test_importing_the_simulator_loads_no_tensorflow_or_horovod():
    code = ("import sys, tensoropt.simulator; "
            "print([m for m in ('tensorflow', 'horovod') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=PACKAGE.parents[1]).stdout
    assert out.strip() == "[]"


def test_the_horovod_cycle_bench_prices_its_chain_by_hand():
    from tensoropt.bench.horovod_cycle import cycled_chain_s
    # mm0 0..0.5 ms; ar0 on the first cycle, 1.0; mm1 1.0..2.5, issued past the cycle after
    # ar0's end (2.0): ar1 a whole cycle later, 3.5; mm2 3.5..3.7; ar2 on ar1's next, 4.5
    assert cycled_chain_s([0.5e-3, 1.5e-3, 0.2e-3], 1e-3) == pytest.approx(4.5e-3)
