#!/bin/bash
# Session AL call 2 (b0b8296's CLI): knobs around the pairs split at u64 load 0.5 (parts 128/192/256,
# rounds a tile 3-6, the split's block 768), each with the stream timeline; then the compare preset
# of main's CLI (1371e8f) and b0b8296's side by side, alternated.
cd "$(dirname "$0")"; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r2; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
k() { # label env...
  local l=$1; shift
  left 250 $l || return
  env "$@" WARPMAP_TRACE_STREAM=1 timeout 60 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 5 > $R/k-$l.log 2>&1
  echo "$l rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/k-$l.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"; grep "insert of 134217728" $R/k-$l.log | tail -1
}
for r in 1 2; do
  k base$r
  k parts192-$r WARPMAP_LOCALITY_PARTS=192
  k parts256-$r WARPMAP_LOCALITY_PARTS=256
  k rounds3-$r WARPMAP_ORDERED_ROUNDS=3
  k rounds5-$r WARPMAP_ORDERED_ROUNDS=5
  k rounds6-$r WARPMAP_ORDERED_ROUNDS=6
  k block768-$r WARPMAP_MULTISPLIT_BLOCK=768
done
for b in warpmap-main warpmap warpmap-main warpmap; do
  left 480 $b || continue
  n=$b; [ -e $R/compare-$n.json ] && n=$b-r2
  timeout 120 ./$b bench --preset compare --runs 5 --json $R/compare-$n.json > $R/compare-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$n.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
