#!/usr/bin/env bash
# The main job: record a zoo model and print its statistics, then train a small model
# for a few steps through find_strategy / build_execution_graph / run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export TF_CPP_MIN_LOG_LEVEL=2
.venv/bin/python examples/main_job.py "$@"
