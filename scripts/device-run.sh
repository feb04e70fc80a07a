#!/usr/bin/env bash
# run.sh — runs warpmap's tests, memcheck and benchmark on the GPU machine.
# (Source: scripts/device-run.sh; scripts/device-bundle.sh copies it to target/device-bundle/run.sh
# beside the binaries it builds. It needs no Rust: only bash, coreutils and the CUDA toolkit.)
#
# Usage: run.sh [STEP...] [--quick] [--filter PATTERN] [--bins a,b] [--list] [-- BENCH ARGS...]
#   STEP       tests | memcheck | racecheck | bench | all (default: tests memcheck bench)
#     tests      every test binary, WARPMAP_REQUIRE_GPU=1 (GPU tests fail instead of skipping)
#     memcheck   compute-sanitizer --tool memcheck --error-exitcode 1 over the GPU test binaries
#                (all but kernels_compile and nccl; MEMCHECK_BINS="contract warpmap-unit" to choose)
#     racecheck  compute-sanitizer --tool racecheck (shared-memory hazards) over RACECHECK_BINS,
#                each NAME or NAME:TEST_FILTER (default: stadium, whose clStash queues live in
#                shared memory; multisplit:counting_split_small, the counting split's staged
#                tiles; two_level:forced_rebuilds, the bucket builds). --filter overrides them.
#     bench      warpmap bench --json $OUT/bench.json --svg $OUT/bench.svg [--quick] [BENCH ARGS]
#   --quick    passed to `warpmap bench`
#   --filter P a libtest name filter for tests and memcheck (e.g. --filter warpdrive)
#   --bins a,b only these test binaries (names as in tests.txt)
#   --list     list the test binaries and exit
# Writes into $OUT (default: ./out beside this script): summary.txt, tests.log, memcheck.log,
# bench.log, bench.json, bench.svg. Prints a summary; exits 1 if any step failed.
# Environment: TEST_THREADS (4), RUN_BUDGET_S (570: steps that would run past it are cut short
# or skipped, so the summary is always written inside the device tool's 600 s), WARPMAP_LOG=1
# (log every kernel compile), WARPMAP_CACHE_DIR (default /tmp/warpmap-cache).
set -uo pipefail

B="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The bundle sits at <repo>/target/device-bundle; tests run in their package's directory there.
REPO="$(cd "$B/../.." && pwd)"
OUT="${OUT:-$B/out}"
mkdir -p "$OUT"
START=$SECONDS
BUDGET="${RUN_BUDGET_S:-570}"
THREADS="${TEST_THREADS:-4}"

usage() { sed -n '2,21p' "$B/run.sh" 2>/dev/null | sed 's/^# \{0,1\}//'; }

STEPS=(); QUICK=0; FILTER=(); ONLY=""; BENCH_EXTRA=()
while (( $# )); do
  case "$1" in
    tests|memcheck|racecheck|bench) STEPS+=("$1") ;;
    all) STEPS+=(tests memcheck bench) ;;
    --quick) QUICK=1 ;;
    --filter) [[ $# -ge 2 ]] || { echo "run.sh: --filter needs a pattern" >&2; exit 2; }; FILTER=("$2"); shift ;;
    --filter=*) FILTER=("${1#--filter=}") ;;
    --bins) [[ $# -ge 2 ]] || { echo "run.sh: --bins needs names" >&2; exit 2; }; ONLY=",$2,"; shift ;;
    --bins=*) ONLY=",${1#--bins=},";;
    --list) cat "$B/tests.txt"; exit 0 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; BENCH_EXTRA=("$@"); break ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
(( ${#STEPS[@]} )) || STEPS=(tests memcheck bench)

# The binaries come packed (payload.tar.gz, see device-bundle.sh): unpack them beside this
# script, or into a temporary folder where that is read-only. $BIN holds warpmap and tests/.
BIN="$B"
if [[ -f "$B/payload.tar.gz" ]]; then
  if ! tar -xzf "$B/payload.tar.gz" -C "$B" 2>/dev/null; then
    BIN="$(mktemp -d)"
    tar -xzf "$B/payload.tar.gz" -C "$BIN" || { echo "run.sh: cannot unpack $B/payload.tar.gz" >&2; exit 1; }
  fi
fi
chmod +x "$BIN/warpmap" "$BIN"/tests/* 2>/dev/null || true
chmod +x "$BIN/warpmap-base" 2>/dev/null || true  # an A/B bundle's earlier CLI
export WARPMAP_REQUIRE_GPU=1
export WARPMAP_CACHE_DIR="${WARPMAP_CACHE_DIR:-/tmp/warpmap-cache}"
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"
mkdir -p "$WARPMAP_CACHE_DIR"

SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }

# ---- header ------------------------------------------------------------------------------
note "== warpmap device run: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
note "bundle: $(sed -n 1p "$B/MANIFEST.txt" 2>/dev/null || echo 'commit: unknown') ($(sed -n 2p "$B/MANIFEST.txt" 2>/dev/null))"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L 2>&1 | while IFS= read -r l; do note "gpu: $l"; done
  note "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
else
  note "gpu: nvidia-smi not found"
fi
if [[ -f /usr/local/cuda/lib64/libnvrtc.so.13 ]]; then
  note "nvrtc: /usr/local/cuda/lib64/libnvrtc.so.13 ($(readlink -f /usr/local/cuda/lib64/libnvrtc.so.13 | xargs basename))"
else
  note "nvrtc: not in /usr/local/cuda/lib64 (warpmap searches CUDA_HOME, /usr/local/cuda*, pip installs)"
fi
# NCCL, for tests/nccl.rs: warpmap searches CUDA_HOME, pip installs and the system loader
# itself; a python3 that has pip's nvidia-nccl-cu13 (PyTorch's) names its directory for sure.
# NVLink multicast stays off (the machine's rule; kept if already set).
export NCCL_NVLS_ENABLE="${NCCL_NVLS_ENABLE:-0}"
NCCL_AT="$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / { print $NF; exit }')"
if [[ -z "${WARPMAP_NCCL_DIR:-}" && -z "$NCCL_AT" ]]; then
  d="$(python3 -c 'import os, nvidia.nccl as m; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null || true)"
  if [[ -n "$d" && -f "$d/libnccl.so.2" ]]; then
    export WARPMAP_NCCL_DIR="$d"
    NCCL_AT="$d/libnccl.so.2 (pip; WARPMAP_NCCL_DIR set)"
  fi
fi
note "nccl: ${WARPMAP_NCCL_DIR:+WARPMAP_NCCL_DIR=$WARPMAP_NCCL_DIR }${NCCL_AT:-not found by ldconfig or python3 (the nccl test will say what it searched)}; NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"
SANITIZER="$(command -v compute-sanitizer || true)"
[[ -n "$SANITIZER" ]] || for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [[ -x "$c" ]] && { SANITIZER="$c"; break; }
done
note "steps: ${STEPS[*]}$( ((QUICK)) && echo ' (bench --quick)')${FILTER:+ filter=${FILTER[0]}}${ONLY:+ bins=${ONLY:1:-1}}; test threads $THREADS; budget ${BUDGET}s; out $OUT"

# ---- helpers -----------------------------------------------------------------------------
RESULTS=()   # "step|PASS/FAIL/SKIP|seconds|detail"
FAILED=0
record() {  # step status seconds detail
  RESULTS+=("$1|$2|$3|$4")
  [[ "$2" == FAIL ]] && FAILED=1
  return 0
}
remaining() { echo $(( BUDGET - (SECONDS - START) )); }
# Timeout for the next command: what is left of the budget minus a margin for the summary.
slice() { local r; r=$(( $(remaining) - 10 )); (( r < 1 )) && r=1; echo "$r"; }

selected_bins() {  # name dir, one per line
  while read -r name dir; do
    [[ -n "$name" ]] || continue
    if [[ -n "$ONLY" && "$ONLY" != *",$name,"* ]]; then continue; fi
    echo "$name $dir"
  done < "$B/tests.txt"
}

run_bin() {  # log prefix name dir -- command...
  local log="$1" name="$2" dir="$3"; shift 4
  local wd; wd="$(cd "$REPO/$dir" 2>/dev/null && pwd || echo "$B")"
  echo "=== $name ($(date -u +%H:%M:%S), cwd $wd) ===" | tee -a "$log"
  ( cd "$wd" && export CARGO_MANIFEST_DIR="$wd" && timeout -k 10 "$(slice)" "$@" ) 2>&1 | tee -a "$log"
  return "${PIPESTATUS[0]}"
}

test_counts() {  # sums libtest's "test result:" lines of a log section read from stdin
  awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) g += $i } }
       END { printf "%d passed, %d failed, %d ignored", p, f, g }'
}

# ---- steps -------------------------------------------------------------------------------
step_tests() {
  local log="$OUT/tests.log" t0=$SECONDS bad=() name dir rc
  : > "$log"
  while read -r name dir; do
    if (( $(remaining) < 20 )); then bad+=("$name(not run: out of time)"); continue; fi
    run_bin "$log" "$name" "$dir" -- "$BIN/tests/$name" --test-threads="$THREADS" "${FILTER[@]}"
    rc=$?
    if (( rc == 124 || rc == 137 )); then bad+=("$name(timeout)")
    elif (( rc != 0 )); then bad+=("$name(exit $rc)"); fi
  done < <(selected_bins)
  local counts; counts="$(test_counts < "$log")"
  if (( ${#bad[@]} )); then record tests FAIL $((SECONDS - t0)) "$counts; failed: ${bad[*]}"
  else record tests PASS $((SECONDS - t0)) "$counts"; fi
}

step_memcheck() {
  local log="$OUT/memcheck.log" t0=$SECONDS bad=() nocuda=() name dir rc ran=0
  : > "$log"
  if [[ -z "$SANITIZER" ]]; then record memcheck FAIL 0 "compute-sanitizer not found"; return; fi
  local want="${MEMCHECK_BINS:-}"
  while read -r name dir; do
    if [[ -n "$want" ]]; then [[ " $want " == *" $name "* ]] || continue
    # kernels_compile: NVRTC only, no kernel runs. nccl: NCCL's own kernels and proxy threads,
    # not ours (name it in MEMCHECK_BINS to check it anyway).
    else [[ "$name" == kernels_compile || "$name" == nccl ]] && continue; fi
    if (( $(remaining) < 20 )); then bad+=("$name(not run: out of time)"); continue; fi
    ran=$((ran + 1))
    local start_bytes; start_bytes=$(stat -c %s "$log")
    WARPMAP_SANITIZER=memcheck run_bin "$log" "$name" "$dir" -- "$SANITIZER" --tool memcheck \
      --error-exitcode 1 --print-limit 50 "$BIN/tests/$name" --test-threads="$THREADS" "${FILTER[@]}"
    rc=$?
    local section; section="$(tail -c +"$((start_bytes + 1))" "$log")"
    if (( rc == 124 || rc == 137 )); then bad+=("$name(timeout)")
    elif (( rc != 0 )) && grep -q 'terminated before first instrumented API call' <<<"$section" \
        && grep -q '^test result: ok' <<<"$section"; then
      nocuda+=("$name")  # its tests passed and it never called CUDA: nothing to check
    elif (( rc != 0 )); then bad+=("$name(exit $rc)"); fi
  done < <(selected_bins)
  local errs; errs="$(grep -h 'ERROR SUMMARY' "$log" | awk '{s += $4} END {print s + 0}')"
  local counts; counts="$(test_counts < "$log")"
  (( ${#nocuda[@]} )) && counts+="; no CUDA calls in: ${nocuda[*]}"
  if (( ${#bad[@]} )); then record memcheck FAIL $((SECONDS - t0)) "$ran binaries, $errs memcheck errors, $counts; failed: ${bad[*]}"
  else record memcheck PASS $((SECONDS - t0)) "$ran binaries, $errs memcheck errors, $counts"; fi
}

step_racecheck() {
  local log="$OUT/racecheck.log" t0=$SECONDS bad=() name dir rc ran=0
  : > "$log"
  if [[ -z "$SANITIZER" ]]; then record racecheck FAIL 0 "compute-sanitizer not found"; return; fi
  local want="${RACECHECK_BINS:-stadium multisplit:counting_split_small two_level:forced_rebuilds}"
  local -A only=()  # binary name -> its test filter ("" for all of its tests)
  local entry
  for entry in $want; do only["${entry%%:*}"]="$([[ "$entry" == *:* ]] && echo "${entry#*:}")"; done
  while read -r name dir; do
    [[ -v "only[$name]" ]] || continue
    if (( $(remaining) < 20 )); then bad+=("$name(not run: out of time)"); continue; fi
    ran=$((ran + 1))
    local filter=("${FILTER[@]}")
    (( ${#filter[@]} )) || { [[ -n "${only[$name]}" ]] && filter=("${only[$name]}"); }
    WARPMAP_SANITIZER=racecheck WARPMAP_POOL=return run_bin "$log" "$name" "$dir" -- "$SANITIZER" --tool racecheck \
      --error-exitcode 1 --print-limit 50 "$BIN/tests/$name" --test-threads="$THREADS" "${filter[@]}"
    rc=$?
    if (( rc == 124 || rc == 137 )); then bad+=("$name(timeout)")
    elif (( rc != 0 )); then bad+=("$name(exit $rc)"); fi
  done < <(selected_bins)
  local hazards; hazards="$(grep -h 'RACECHECK SUMMARY' "$log" | awk '{s += $4} END {print s + 0}')"
  local counts; counts="$(test_counts < "$log")"
  if (( ${#bad[@]} )); then record racecheck FAIL $((SECONDS - t0)) "$ran binaries, $hazards hazards, $counts; failed: ${bad[*]}"
  else record racecheck PASS $((SECONDS - t0)) "$ran binaries, $hazards hazards, $counts"; fi
}

step_bench() {
  local log="$OUT/bench.log" t0=$SECONDS rc args=(bench --json "$OUT/bench.json" --svg "$OUT/bench.svg")
  (( QUICK )) && args+=(--quick)
  args+=("${BENCH_EXTRA[@]}")
  if (( $(remaining) < 30 )); then record bench SKIP 0 "out of time"; return; fi
  rm -f "$OUT/bench.json" "$OUT/bench.svg"  # a stale file from an earlier run must not count
  echo "=== warpmap ${args[*]} ===" > "$log"
  ( cd "$REPO" && timeout -k 10 "$(slice)" "$BIN/warpmap" "${args[@]}" ) 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  local made=""; for f in bench.json bench.svg; do [[ -s "$OUT/$f" ]] && made+=" $f"; done
  if (( rc == 124 || rc == 137 )); then record bench FAIL $((SECONDS - t0)) "timeout; wrote:${made:- nothing}"
  elif (( rc != 0 )); then record bench FAIL $((SECONDS - t0)) "exit $rc; wrote:${made:- nothing}"
  elif [[ ! -s "$OUT/bench.json" ]]; then record bench FAIL $((SECONDS - t0)) "exit 0 but no bench.json written"
  else record bench PASS $((SECONDS - t0)) "wrote:${made}"; fi
}

for s in "${STEPS[@]}"; do
  echo "---- $s ----"
  "step_$s"
done

# The device tool brings back files of at most 16 MiB: keep the head and tail of a longer log.
for f in "$OUT"/*.log; do
  [[ -f "$f" ]] || continue
  if (( $(stat -c %s "$f") > 15 * 1024 * 1024 )); then
    { head -c $((4 * 1024 * 1024)) "$f"; printf '\n\n[... cut by run.sh: the log was %s bytes ...]\n\n' "$(stat -c %s "$f")"; tail -c $((10 * 1024 * 1024)) "$f"; } > "$f.cut" && mv "$f.cut" "$f"
  fi
done

note ""
note "== summary ($((SECONDS - START)) s)"
for r in "${RESULTS[@]}"; do
  IFS='|' read -r step status secs detail <<< "$r"
  note "$(printf '%-9s %-4s %5ss  %s' "$step" "$status" "$secs" "$detail")"
done
if (( FAILED )); then note "RESULT: FAIL"; exit 1; fi
note "RESULT: PASS"
