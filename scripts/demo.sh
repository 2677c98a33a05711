#!/usr/bin/env bash
# The main job under mpirun: a paper-scale model's statistics, a small model's frontier,
# the mini_time plan, and 20 training steps. One rank per core (2 to 4; NP=N to choose):
# more ranks than cores make the measured step time incomparable with the estimate.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# TF 2.21 prints oneDNN and absl lines whatever TF_CPP_MIN_LOG_LEVEL says: these stop them.
export TF_CPP_MIN_LOG_LEVEL=3 TF_ENABLE_ONEDNN_OPTS=0 GLOG_minloglevel=2 ABSL_MIN_LOG_LEVEL=2
# horovod's own cycle time, as `tensoropt calibrate` measures it (a profile made with
# another one prices collectives this job does not run: see HOROVOD_TIMING_ENV)
CORES="$(nproc)"
NP="${NP:-$(( CORES < 2 ? 2 : (CORES > 4 ? 4 : CORES) ))}"
exec mpirun --allow-run-as-root --oversubscribe -np "$NP" -x TF_CPP_MIN_LOG_LEVEL -x TF_ENABLE_ONEDNN_OPTS \
  -x GLOG_minloglevel -x ABSL_MIN_LOG_LEVEL \
  .venv/bin/python examples/main_job.py "$@"
