#!/usr/bin/env bash
# device-ab.sh — A/B of kernel files with one host build, on the GPU machine (no Rust needed).
#
# Here: copy variants of kernel files into the bundle, one folder per variant laid out like the
# repository (target/device-bundle/variants/<name>/kernels/<file>.cu; a variant holds only the
# files it changes, the others come from the binary), and this script beside run.sh:
#   cp scripts/device-ab.sh target/device-bundle/
# There: target/device-bundle/device-ab.sh [--repeat N] VARIANT[:ENV=VAL,...] ... -- BENCH ARGS
#   every variant (the name "embedded" means the kernel files built into the binary) runs
#   `warpmap bench BENCH ARGS --json $OUT/ab/<label>.json` with WARPMAP_KERNEL_DIR pointing at
#   it and the ENV settings given after its colon, in turn, N times round-robin (default 2), so
#   that drift in the machine shows as a difference between repeats of one variant. Prints each
#   run's cells (the "G/s" lines) and leaves the JSONs and logs in $OUT/ab.tar.gz.
# Example:
#   device-ab.sh embedded mine mine:WARPMAP_SLAB_READ_AHEAD=4 -- --scheme slab --preset slab-compare
set -uo pipefail
B="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${OUT:-$B/out}"
REPEAT=2
VARIANTS=()
while (( $# )); do
  case "$1" in
    --repeat) REPEAT="$2"; shift ;;
    --) shift; break ;;
    *) VARIANTS+=("$1") ;;
  esac
  shift
done
(( ${#VARIANTS[@]} )) || { echo "device-ab.sh: name at least one variant (or 'embedded')" >&2; exit 2; }
(( $# )) || { echo "device-ab.sh: give the bench arguments after --" >&2; exit 2; }
if [[ -f "$B/payload.tar.gz" && ! -x "$B/warpmap" ]]; then tar -xzf "$B/payload.tar.gz" -C "$B" || exit 1; fi
chmod +x "$B/warpmap" 2>/dev/null || true
export WARPMAP_CACHE_DIR="${WARPMAP_CACHE_DIR:-/tmp/warpmap-cache}"
R="$OUT/ab"; mkdir -p "$R"
for ((r = 1; r <= REPEAT; r++)); do
  for spec in "${VARIANTS[@]}"; do
    name="${spec%%:*}"; envs=()
    [[ "$spec" == *:* ]] && IFS=',' read -r -a envs <<< "${spec#*:}"
    if [[ "$name" != embedded && ! -d "$B/variants/$name" ]]; then
      echo "device-ab.sh: no variant folder $B/variants/$name" >&2; exit 2
    fi
    label="$(echo "$spec" | tr ':,=/' '-----')-$r"
    dir=(); [[ "$name" != embedded ]] && dir=(WARPMAP_KERNEL_DIR="$B/variants/$name")
    env "${dir[@]}" "${envs[@]}" "$B/warpmap" bench "$@" --json "$R/$label.json" > "$R/$label.log" 2>&1
    echo "== $label (exit $?)"
    grep "G/s" "$R/$label.log" | grep -v "^target\|^roofline" | sed -E 's/ +/ /g'
  done
done
tar -czf "$OUT/ab.tar.gz" -C "$OUT" ab
