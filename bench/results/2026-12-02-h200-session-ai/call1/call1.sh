#!/bin/bash
# Session AI call 1: the ordered kernels' look-ahead (every key's first window of a tile prefetched
# into L2 before the tile's first key), kernel files through WARPMAP_KERNEL_DIR, one CLI (b219741's
# host code); alternated, two rounds. base = HEAD's kernels, a1 = prefetch.global.L2 per key,
# a2 = cp.async.bulk.prefetch.L2 of the 64-byte window, a1f1 = a1 and the ordered find too.
cd "$(dirname "$0")"
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r1; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
ins() { # label variant [env...]
  local l=$1 v=$2; shift 2
  left 470 "$l" || return
  env WARPMAP_KERNEL_DIR=$PWD/variants/$v "$@" timeout 100 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 5 --json $R/ins-$l.json > $R/ins-$l.log 2>&1
  echo "$l rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ins-$l.log | awk '{printf "%s %s; ", $5, $7}')"
}
for round in 1 2; do
  ins base-r$round base
  ins a1-r$round a1
  ins a2-r$round a2
  ins a1rounds2-r$round a1 WARPMAP_ORDERED_ROUNDS=2
  ins a1rounds6-r$round a1 WARPMAP_ORDERED_ROUNDS=6
done
for v in base a1f1; do
  left 500 "compare $v" || continue
  WARPMAP_KERNEL_DIR=$PWD/variants/$v timeout 100 ./warpmap bench --preset compare --runs 5 --json $R/compare-$v.json > $R/compare-$v.log 2>&1
  echo "compare $v rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$v.log | awk '{printf "%s %s %s; ", $5, $6, $7}')"
done
for v in base a1; do
  left 540 "ncu $v" || continue
  WARPMAP_KERNEL_DIR=$PWD/variants/$v timeout 45 ncu --clock-control none --kernel-name regex:"warpdrive_insert_ordered" -c 2 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_sectors.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$v.log 2>&1
  echo "ncu $v rc=$? [$((SECONDS-S)) s]"; grep -E "^\s+(lts|gpu|dram|sm)__" $R/ncu-$v.log | head -16
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
