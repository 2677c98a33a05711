"""Shared fixtures: a fresh default graph for every test."""

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture(autouse=True)
def fresh_graph():
    import tensoropt as to

    to.reset_default_graph()
    yield
    to.reset_default_graph()
