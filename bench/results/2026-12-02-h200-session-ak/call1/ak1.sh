#!/bin/bash
# Session AK call 1: a batch's timeline on the stream (WARPMAP_TRACE_STREAM), u64 and u32 pairs.
cd "$(dirname "$0")"
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r1; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
for t in u64 u32; do
  WARPMAP_TRACE_STREAM=1 timeout 120 ./warpmap bench --keys-log2 27 --types $t --load-factors 0.5,0.8 --ops insert --runs 5 --json $R/trace-$t.json > $R/trace-$t.log 2>&1
  echo "trace $t rc=$? [$((SECONDS-S)) s]"; grep "insert of" $R/trace-$t.log | tail -4; grep -E '^warpdrive' $R/trace-$t.log
done
for b in warpmap-main warpmap warpmap-main warpmap; do
  timeout 100 ./$b bench --keys-log2 27 --types u64,u32 --load-factors 0.5 --ops insert --runs 5 --json $R/ab-$b.json > $R/ab-$b.log 2>&1
  echo "$b rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-$b.log | awk '{printf "%s %s %s; ", $5, $6, $7}')"
done
tar czf $OUT/r.tar.gz -C $R .
