"""The mutation bench's table stays current: every mutation's text is still in its file.

When a refactor moves a line the bench mutates, ``apply_mutation`` raises for it and the
bench stops measuring it; this test names the stale mutation at once instead.
"""

from pathlib import Path

import pytest

from tensoropt.bench.mutants import MUTATIONS, REPO, Mutation, apply_mutation


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_each_mutation_text_occurs_once_in_its_file(mutation):
    text = (REPO / mutation.path).read_text()
    assert text.count(mutation.old) == 1, (
        f"{mutation.name}: update its text in tensoropt/bench/mutants.py to {mutation.path}'s")
    assert mutation.new != mutation.old


def test_apply_mutation_names_a_stale_mutation(tmp_path: Path):
    (tmp_path / "lib.py").write_text("x = 1\n")
    stale = Mutation("gone", "lib.py", "x = 2", "x = 3", ())
    with pytest.raises(ValueError, match="'gone'.*occurs 0 times in lib.py"):
        apply_mutation(tmp_path, stale)
    apply_mutation(tmp_path, Mutation("live", "lib.py", "x = 1", "x = 3", ()))
    assert (tmp_path / "lib.py").read_text() == "x = 3\n"
