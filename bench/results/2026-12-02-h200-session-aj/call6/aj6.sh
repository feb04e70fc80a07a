#!/bin/bash
# Session AJ call 6: the compare preset of 33ebc60's CLI (base) and 3403b76's (new) side by side, one machine.
cd "$(dirname "$0")"
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r6; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
for c in base new base new; do
  (( SECONDS < 400 )) || { echo "skipped (time): $c"; continue; }
  b=warpmap; [ $c = base ] && b=warpmap-base
  n=$c; [ -e $R/compare-$c.json ] && n=$c-r2
  timeout 120 ./$b bench --preset compare --runs 5 --json $R/compare-$n.json > $R/compare-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$n.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
