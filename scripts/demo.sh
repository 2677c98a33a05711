#!/usr/bin/env bash
# The main job under mpirun -np 4: a paper-scale model's statistics, a small model's
# frontier, the mini_time plan, and 20 training steps on 4 ranks.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# TF 2.21 prints oneDNN and absl lines whatever TF_CPP_MIN_LOG_LEVEL says: these stop them.
export TF_CPP_MIN_LOG_LEVEL=3 TF_ENABLE_ONEDNN_OPTS=0 GLOG_minloglevel=2 ABSL_MIN_LOG_LEVEL=2
export HOROVOD_CYCLE_TIME="${HOROVOD_CYCLE_TIME:-0.2}"
exec mpirun --allow-run-as-root --oversubscribe -np "${NP:-4}" -x TF_CPP_MIN_LOG_LEVEL -x TF_ENABLE_ONEDNN_OPTS \
  -x GLOG_minloglevel -x ABSL_MIN_LOG_LEVEL -x HOROVOD_CYCLE_TIME \
  .venv/bin/python examples/main_job.py "$@"
