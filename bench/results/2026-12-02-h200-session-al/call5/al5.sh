#!/bin/bash
# Session AL call 5 (44be385's CLI): reduce by key (sum) beside insert, u64 and u32, every load, the
# pairs path (default) and the two arrays (WARPMAP_SLACK_PAIRS=0).
cd "$(dirname "$0")"; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r5; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
for p in 1 0 1; do
  n=pairs$p; [ -e $R/reduce-$n.json ] && n=$n-r2
  WARPMAP_SLACK_PAIRS=$p timeout 100 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert,reduce --runs 5 --json $R/reduce-$n.json > $R/reduce-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/reduce-$n.log | awk '{printf "%s %s %s %s %s; ", $3, $5, $6, $7, $NF}')"
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
