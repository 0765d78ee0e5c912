#!/usr/bin/env bash
# Installs the odek-bench peer clients with pinned versions. Idempotent: a peer whose pinned
# versions are already installed is left alone.
#
#   TypeScript SDK: bench/peers/ts/node_modules, from package-lock.json (npm ci).
#   Python SDK:     .ci/cache/bench-peers/py-venv, from bench/peers/py/requirements.lock.
#
# Usage: bash bench/peers/install.sh [ts] [py]     (no argument: both)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${ODEK_BENCH_PY_VENV:-$repo/.ci/cache/bench-peers/py-venv}"

want_ts=0
want_py=0
if [ "$#" -eq 0 ]; then
  want_ts=1
  want_py=1
fi
for arg in "$@"; do
  case "$arg" in
    ts) want_ts=1 ;;
    py) want_py=1 ;;
    *) echo "usage: $0 [ts] [py]" >&2; exit 2 ;;
  esac
done

install_ts() {
  if ! command -v npm >/dev/null 2>&1; then
    echo "install.sh: npm not found; skipping the TypeScript SDK peer" >&2
    return 0
  fi
  local stamp="$here/ts/node_modules/.odek-bench-lock"
  if [ -f "$stamp" ] && cmp -s "$stamp" "$here/ts/package-lock.json"; then
    echo "install.sh: TypeScript SDK peer already installed"
    return 0
  fi
  (cd "$here/ts" && npm ci --no-audit --no-fund)
  cp "$here/ts/package-lock.json" "$stamp"
}

install_py() {
  local python="${PYTHON:-python3}"
  if ! command -v "$python" >/dev/null 2>&1; then
    echo "install.sh: $python not found; skipping the Python SDK peer" >&2
    return 0
  fi
  local stamp="$venv/.odek-bench-lock"
  if [ -f "$stamp" ] && cmp -s "$stamp" "$here/py/requirements.lock"; then
    echo "install.sh: Python SDK peer already installed"
    return 0
  fi
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps -r "$here/py/requirements.lock"
  cp "$here/py/requirements.lock" "$stamp"
}

if [ "$want_ts" -eq 1 ]; then install_ts; fi
if [ "$want_py" -eq 1 ]; then install_py; fi
