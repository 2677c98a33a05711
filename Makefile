# The two commands a new user runs (README):
#   make demo   installs everything, then runs the main job
#   make test   installs everything, then runs the whole test suite
.PHONY: setup demo test clean

PYTHON := .venv/bin/python

setup:
	@bash scripts/setup.sh

demo: setup
	@bash scripts/demo.sh

test: setup
	@bash scripts/test.sh

clean:
	rm -rf .venv build dist *.egg-info .pytest_cache
