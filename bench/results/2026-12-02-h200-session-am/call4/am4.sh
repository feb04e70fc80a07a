#!/bin/bash
# Session AM call 4: the ordered inserts' batch pairs read under an evict_first policy (variant
# `stream`, through WARPMAP_KERNEL_DIR) against the embedded kernels (HEAD 8caef77): tests under
# the variant, then the compare preset's inserts alternated, two rounds.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r4; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
V=$PWD/variants/stream
WARPMAP_KERNEL_DIR=$V WARPMAP_REQUIRE_GPU=1 timeout 120 ./h/locality > $R/locality.log 2>&1; echo "locality (stream) rc=$? $(grep 'test result' $R/locality.log) [$((SECONDS-S)) s]"
WARPMAP_KERNEL_DIR=$V WARPMAP_REQUIRE_GPU=1 timeout 60 ./h/reduce > $R/reduce.log 2>&1; echo "reduce (stream) rc=$? $(grep 'test result' $R/reduce.log) [$((SECONDS-S)) s]"
c() { # label kernel-dir
  left 540 $1 || return
  local n=$1; [ -e $R/compare-$n.json ] && n=$1-r2
  if [ -n "$2" ]; then export WARPMAP_KERNEL_DIR=$2; else unset WARPMAP_KERNEL_DIR; fi
  timeout 100 ./warpmap bench --preset compare --ops insert --runs 5 --json $R/compare-$n.json > $R/compare-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$n.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
  unset WARPMAP_KERNEL_DIR
}
for r in 1 2; do c base; c stream $V; done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
