#!/bin/bash
# Session AM call 6 (288ca41): tests, then the compare preset (inserts and finds) of 288ca41's CLI
# beside 8caef77's (warpmap-base: the same kernels and rules as 44be385 but the stretch rule),
# alternated, two rounds.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r6; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
t() { env WARPMAP_REQUIRE_GPU=1 $3 timeout $2 ./h/$1 > $R/test-$1.log 2>&1; echo "$1 rc=$? $(grep 'test result' $R/test-$1.log | tail -n 1) [$((SECONDS-S)) s]"; grep -m3 -E "panicked|FAILED" $R/test-$1.log; }
t locality 150; t multisplit 60; t reduce 90; t contract 200 WARPMAP_TEST_SCHEMES=warpdrive
c() { # label cli
  left 540 $1 || return
  local n=$1; [ -e $R/$n-compare.json ] && n=$1-r2
  timeout 120 ./$2 bench --preset compare --runs 5 --json $R/$n-compare.json > $R/$n-compare.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/$n-compare.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
}
for r in 1 2; do c new warpmap; c base warpmap-base; done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
