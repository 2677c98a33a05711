#!/usr/bin/env bash
# Runs the whole test suite in .venv. Multi-process tests under tests/parallel launch
# their own `mpirun` from inside pytest. pytest's exit code 5 (no tests collected) is a
# failure here: a suite that runs nothing must not pass.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export TF_CPP_MIN_LOG_LEVEL=2
.venv/bin/python -m pytest tests -p no:cacheprovider "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests; failing" >&2
  exit 1
fi
exit "$rc"
