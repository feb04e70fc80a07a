#!/usr/bin/env bash
# install-nvrtc.sh — install the pinned NVRTC (the CUDA run-time compiler) from PyPI into this
# repository's ignored folder .nvrtc/site, where warpmap finds it with no environment variables:
#
#     .nvrtc/site/nvidia/cu13/lib/libnvrtc.so.13            (+ libnvrtc-builtins.so.13.0)
#
# (src/device/nvrtc.rs searches `.nvrtc/site/nvidia/cu13/lib` relative to the working directory
# and to the crate's directory.) This is what lets a machine with no GPU and no CUDA toolkit run
# tests/kernels_compile.rs, which compiles every kernel specialisation to CUBIN.
#
# Why 13.0 exactly: warpmap compiles kernels at run time for the GPU in the machine, and CUDA code
# built by a NEWER compiler than the driver is refused by the driver (PTX 9.1+ from NVRTC 13.1 is
# rejected by a 13.0 / R580 driver with CUDA_ERROR_UNSUPPORTED_PTX_VERSION). Our GPU machines run
# a CUDA 13.0 driver, so the compile tests use the same NVRTC they would meet there. Bump the pin
# only together with the drivers.
#
# Only libnvrtc and its builtins are needed: our kernels include no CUDA headers, so no CCCL /
# cuda-runtime wheels (unlike ../shared/tools/install-cuda-compile-tools.sh ... nvrtc).
#
# Usage: scripts/install-nvrtc.sh [--force]
#   Idempotent: a stamp file (.nvrtc/.installed) records the pin; a re-run is a no-op.
#   PYTHON=...           the Python with pip to use (default python3)
#   WARPMAP_NVRTC_PREFIX install somewhere else than <repo>/.nvrtc (warpmap will then need
#                        WARPMAP_NVRTC_DIR=<prefix>/site/nvidia/cu13/lib to find it)
# Needs: python3 with pip, network access to PyPI (one ~90 MB wheel). Works as root or not.
# Everything it says goes to stderr.
set -euo pipefail

PIN="nvidia-cuda-nvrtc==13.0.88"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="${WARPMAP_NVRTC_PREFIX:-$ROOT/.nvrtc}"
PY="${PYTHON:-python3}"
SITE="$PREFIX/site"
LIBDIR="$SITE/nvidia/cu13/lib"
STAMP="$PREFIX/.installed"
FORCE=0
case "${1:-}" in
  "") ;;
  --force) FORCE=1 ;;
  -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
  *) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

say() { echo "install-nvrtc: $*" >&2; }

installed() {
  [[ -f "$STAMP" ]] && grep -qxF "$PIN" "$STAMP" \
    && [[ -f "$LIBDIR/libnvrtc.so.13" ]] \
    && compgen -G "$LIBDIR/libnvrtc-builtins.so.13*" >/dev/null
}

if (( ! FORCE )) && installed; then
  say "$PIN already installed in $LIBDIR"
  exit 0
fi

if ! "$PY" -m pip --version >/dev/null 2>&1; then
  say "ERROR: '$PY -m pip' does not work. Install pip (e.g. 'apt-get install python3-pip' or"
  say "       '$PY -m ensurepip --user'), or set PYTHON to a Python that has it."
  exit 1
fi

mkdir -p "$PREFIX"
# Install into a fresh temporary folder beside the final one and move it into place at the end,
# so an interrupted install never leaves a half-filled .nvrtc/site behind a valid stamp.
TMP="$(mktemp -d "$PREFIX/.site.XXXXXX")"
chmod 755 "$TMP"  # mktemp makes it 0700
trap 'rm -rf "$TMP"' EXIT
say "installing $PIN into $SITE (one ~90 MB wheel from PyPI) ..."
t0=$(date +%s.%N)
# --target: a plain folder, outside any (possibly externally managed or read-only) Python
# environment, so it works as root and as an ordinary user. --no-deps --only-binary: exactly
# this one wheel. PIP_USER/PIP_REQUIRE_VIRTUALENV off: a user's pip.conf must not turn --target
# into an error.
PIP_USER=0 PIP_REQUIRE_VIRTUALENV=0 "$PY" -m pip install \
    --disable-pip-version-check --root-user-action=ignore --no-input --quiet \
    --no-deps --only-binary=:all: --no-compile --target "$TMP" "$PIN" >&2
t1=$(date +%s.%N)
# The wheel also carries an "alt" build of each library (~110 MB) that warpmap never loads.
rm -f "$TMP"/nvidia/cu13/lib/*.alt.so*
if [[ ! -f "$TMP/nvidia/cu13/lib/libnvrtc.so.13" ]]; then
  say "ERROR: the wheel did not contain nvidia/cu13/lib/libnvrtc.so.13 (found: $(cd "$TMP" && find . -name '*.so*' | tr '\n' ' '))"
  exit 1
fi
rm -rf "$SITE" "$STAMP"
mv "$TMP" "$SITE"
trap - EXIT
printf '%s\n' "$PIN" > "$STAMP"
say "installed $PIN in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s: $(cd "$LIBDIR" && echo *)"
