#!/bin/bash
# Session AL call 4 (44be385 = 9971c8a's code): locality and multisplit tests, then the compare preset
# of main's CLI (1371e8f) and 44be385's side by side, alternated.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r4; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
for t in locality multisplit; do
  WARPMAP_REQUIRE_GPU=1 timeout 100 ./h/$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/$t.log) [$((SECONDS-S)) s]"
  grep -E "panicked|FAILED" $R/$t.log | head -5
done
for b in warpmap-main warpmap warpmap-main warpmap; do
  left 480 $b || continue
  n=$b; [ -e $R/compare-$n.json ] && n=$b-r2
  timeout 120 ./$b bench --preset compare --runs 5 --json $R/compare-$n.json > $R/compare-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$n.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
