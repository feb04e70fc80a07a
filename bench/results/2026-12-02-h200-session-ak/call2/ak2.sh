#!/bin/bash
# Session AK call 2: the ordered insert's prefetch ahead of its walk (WARPMAP_PREFETCH_LEAD, eighths of a stretch), one CLI.
cd "$(dirname "$0")"
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r2; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
for L in 0 2 1 3 4 0 2 6 0 2; do
  (( SECONDS < 480 )) || { echo "skipped (time): $L"; continue; }
  n=lead$L; [ -e $R/$n.json ] && n=$n-r2; [ -e $R/$n.json ] && n=lead$L-r3
  WARPMAP_PREFETCH_LEAD=$L timeout 100 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 5 --json $R/$n.json > $R/$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/$n.log | awk '{printf "%s %s %s; ", $5, $6, $7}')"
done
tar czf $OUT/r.tar.gz -C $R .
