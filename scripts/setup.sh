#!/usr/bin/env bash
# Installs everything TensorOpt needs on a fresh Debian machine, idempotently.
#
#   1. Open MPI through apt (skipped when mpirun and the headers are already there);
#   2. a virtual environment at .venv/ in the repository root;
#   3. tensorflow-cpu, mpi4py, numpy, pytest and the project itself (editable);
#   4. horovod 0.28.1 built against that TensorFlow with MPI, from a cached wheel.
#
# A stamp in .venv records a hash of everything that decides the environment; when it
# matches and the imports work, the script returns in about a second.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv"
TF_VERSION="2.21.0"
HOROVOD_VERSION="0.28.1"
CACHE_DIR="${TENSOROPT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tensoropt}"
WHEEL_DIR="$CACHE_DIR/wheels"
STAMP="$VENV/.tensoropt-setup-stamp"

log() { printf '[setup] %s\n' "$*"; }

# Everything that should trigger a reinstall when it changes.
stamp_value() {
  cat "$ROOT/scripts/setup.sh" "$ROOT/setup.py" "$ROOT/requirements.txt" | sha256sum | cut -d' ' -f1
}

imports_ok() {
  "$VENV/bin/python" -c "import tensoropt, frontier, reschedule, horovod.tensorflow, mpi4py, numpy, pytest" \
    >/dev/null 2>&1
}

# --- 1. Open MPI --------------------------------------------------------------------
if ! command -v mpirun >/dev/null 2>&1 || ! dpkg -s libopenmpi-dev >/dev/null 2>&1; then
  log "installing Open MPI through apt"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null
fi

# --- fast path ----------------------------------------------------------------------
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(stamp_value)" ] && imports_ok; then
  log "environment up to date ($VENV)"
  exit 0
fi

# --- 2. virtual environment -----------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --upgrade pip wheel setuptools

# --- 3. Python packages ---------------------------------------------------------------
log "installing Python requirements"
"${PIP[@]}" install -r "$ROOT/requirements.txt"

# --- 4. horovod, from the wheel cache or built once -----------------------------------
if ! "$VENV/bin/python" -c "import horovod.tensorflow" >/dev/null 2>&1; then
  mkdir -p "$WHEEL_DIR"
  TF_TAG="1tf${TF_VERSION//./_}"
  WHEEL="$(ls "$WHEEL_DIR"/horovod-"$HOROVOD_VERSION"-"$TF_TAG"-*.whl 2>/dev/null | head -n1 || true)"
  if [ -z "$WHEEL" ]; then
    log "building horovod $HOROVOD_VERSION against tensorflow-cpu $TF_VERSION (about 4 minutes, once)"
    BUILD="$(mktemp -d)"
    trap 'rm -rf "$BUILD"' EXIT
    "${PIP[@]}" download --no-deps --no-binary :all: "horovod==$HOROVOD_VERSION" -d "$BUILD"
    tar -xzf "$BUILD"/horovod-"$HOROVOD_VERSION".tar.gz -C "$BUILD"
    SRC="$BUILD/horovod-$HOROVOD_VERSION"
    # xla_mpi_ops.cc includes tensorflow/compiler/xla headers that TF >= 2.16 no longer
    # ships; the XLA ops are not needed (../shared/HOROVOD.md).
    sed -i '/xla_mpi_ops.cc/d' "$SRC/horovod/tensorflow/CMakeLists.txt"
    (cd "$SRC" && HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_PYTORCH=1 \
      HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITHOUT_GLOO=1 HOROVOD_CPU_OPERATIONS=MPI \
      MAKEFLAGS="-j$(nproc)" "${PIP[@]}" wheel --no-build-isolation --no-deps . -w "$BUILD/wheel")
    BUILT="$(ls "$BUILD"/wheel/horovod-*.whl)"
    # The cached wheel carries the TensorFlow it was built against as its build tag
    # (a wheel build tag must start with a digit).
    WHEEL="$WHEEL_DIR/$(basename "$BUILT" | sed "s/^horovod-$HOROVOD_VERSION-/horovod-$HOROVOD_VERSION-$TF_TAG-/")"
    cp "$BUILT" "$WHEEL"
    log "cached $WHEEL"
  else
    log "reusing cached $WHEEL"
  fi
  "${PIP[@]}" install --no-deps "$WHEEL"
fi

# --- 5. the project itself ------------------------------------------------------------
"${PIP[@]}" install --no-deps --no-build-isolation -e "$ROOT"

if ! imports_ok; then
  log "the environment does not import; run: $VENV/bin/python -c 'import tensoropt, frontier, reschedule, horovod.tensorflow, mpi4py'"
  exit 1
fi
stamp_value >"$STAMP"
log "ready: $VENV"
