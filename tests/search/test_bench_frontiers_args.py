"""``python -m tensoropt.bench frontiers``: which models the fit check runs on."""

import pytest

from tensoropt.bench import frontiers


@pytest.fixture
def calls(monkeypatch):
    seen = []
    monkeypatch.setattr(frontiers, "report", lambda m, n, s: seen.append(("report", m, n)) or True)
    monkeypatch.setattr(frontiers, "fits", lambda m, n, s: seen.append(("fits", m, n)) or True)
    return seen


def test_the_fit_check_runs_only_on_the_named_models_it_applies_to(calls):
    assert frontiers.main(["--models", "paper_rnn,paper_wide_resnet", "--devices", "4"]) == 0
    assert calls == [("report", "paper_rnn", 4), ("report", "paper_wide_resnet", 4),
                     ("fits", "paper_wide_resnet", 8)]


def test_fit_models_still_names_the_fit_check_models(calls):
    frontiers.main(["--models", "paper_rnn", "--fit-models", "paper_transformer",
                    "--fit-devices", "2"])
    assert calls == [("report", "paper_rnn", 16), ("fits", "paper_transformer", 2)]
    calls.clear()
    frontiers.main(["--models", "paper_wide_resnet", "--fit-models", ""])
    assert calls == [("report", "paper_wide_resnet", 16)]
