#!/bin/bash
# Builds the peer benchmarks (bench/peers/gpu/README.md) for sm_90 with a static CUDA runtime, so
# that they run on a GPU machine with only the driver. The peers' sources are NOT in this
# repository: SRC (default target/peers) holds each library as README.md says how to get it:
#   SRC/cuco/lib/include/cuco/...           cuCollections headers
#   SRC/warpcore/lib/include/*.cuh + hpc_helpers
#   SRC/bght/lib/include/{bght,detail}/...  BGHT headers
# Output: OUT (default target/peers/bin). Needs nvcc 13.0 on PATH (the CUDA 13.0 toolkit, or
# ../shared/tools/install-cuda-compile-tools.sh PREFIX nvcc on a machine without one).
# Usage: bench/peers/gpu/build.sh [linear|cuco|warpcore|bght ...]   (default: all that SRC has)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
SRC="${SRC:-$ROOT/target/peers}"
OUT="${OUT:-$ROOT/target/peers/bin}"
mkdir -p "$OUT"
FLAGS=(-O3 -std=c++17 -arch=sm_90 --cudart static --expt-relaxed-constexpr --expt-extended-lambda -I"$HERE")
build() {  # name, extra flags...
  local name="$1"; shift
  echo "building $name" >&2
  nvcc "${FLAGS[@]}" "$@" -o "$OUT/$name-bench" "$HERE/$name.cu"
}
WANT=("$@"); [[ ${#WANT[@]} -gt 0 ]] || WANT=(linear cuco warpcore bght)
for p in "${WANT[@]}"; do
  case "$p" in
    linear) build linear ;;
    cuco) [[ -d "$SRC/cuco/lib/include" ]] && build cuco -I"$SRC/cuco/lib/include" || echo "no $SRC/cuco: skipped" >&2 ;;
    warpcore) [[ -d "$SRC/warpcore/lib/include" ]] && build warpcore -I"$SRC/warpcore/lib/include" || echo "no $SRC/warpcore: skipped" >&2 ;;
    bght) [[ -d "$SRC/bght/lib/include" ]] && build bght -I"$HERE/bght-shim" -I"$SRC/bght/lib/include" || echo "no $SRC/bght: skipped" >&2 ;;
    *) echo "unknown peer $p" >&2; exit 2 ;;
  esac
done
ls -la "$OUT" >&2
