#!/bin/bash
# Session AM call 1: a fresh table's build (clear ahead in L2). Tests (locality with the new
# fresh-build tests, multisplit), then the compare preset's inserts with the build off
# (WARPMAP_FRESH_BUILD=0), on, and on with finer stretches (WARPMAP_INSERT_STRETCH 1/4, 5/16).
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r1; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
WARPMAP_REQUIRE_GPU=1 timeout 150 ./h/locality fresh > $R/locality-fresh.log 2>&1; echo "locality fresh rc=$? $(grep 'test result' $R/locality-fresh.log) [$((SECONDS-S)) s]"
grep -E "panicked|FAILED|failed" $R/locality-fresh.log | head -5
c() { # label fresh stretch
  left 520 $1 || return
  local n=$1; [ -e $R/compare-$n.json ] && n=$1-r2
  export WARPMAP_FRESH_BUILD=$2
  if [ -n "$3" ]; then export WARPMAP_INSERT_STRETCH=$3; else unset WARPMAP_INSERT_STRETCH; fi
  timeout 100 ./warpmap bench --preset compare --ops insert --runs 5 --json $R/compare-$n.json > $R/compare-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$n.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
  unset WARPMAP_INSERT_STRETCH WARPMAP_FRESH_BUILD
}
c off 0; c on 1; c on-s1of4 1 1/4; c on-s5of16 1 5/16; c off 0; c on 1
left 560 trace && { WARPMAP_TRACE_STREAM=1 timeout 40 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 3 > $R/trace.log 2>&1; echo "trace rc=$?"; grep -E "insert of 134217728" $R/trace.log | tail -n 2; }
left 580 rest && { WARPMAP_REQUIRE_GPU=1 timeout 15 ./h/multisplit > $R/multisplit.log 2>&1; echo "multisplit rc=$? $(grep 'test result' $R/multisplit.log)"; }
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
