#!/bin/bash
# Session AI call 2: the ordered insert with tiles a warp (no block barriers), with and without the
# look-ahead, against HEAD's kernels (all through WARPMAP_KERNEL_DIR, one CLI), alternated, two
# rounds; ncu: the base kernel's L2 breakdown and warp states, and a diagnostic (claims by plain
# stores, no atomics: racy, timing only).
cd "$(dirname "$0")"
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r2; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
ins() { # label variant [env...]
  local l=$1 v=$2; shift 2
  left 420 "$l" || return
  env WARPMAP_KERNEL_DIR=$PWD/variants/$v "$@" timeout 100 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 5 --json $R/ins-$l.json > $R/ins-$l.log 2>&1
  echo "$l rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ins-$l.log | awk '{printf "%s %s; ", $5, $7}')"
}
for round in 1 2; do
  ins base-r$round base
  ins w-r$round w
  ins wa1-r$round wa1
done
ins w-rounds2 w WARPMAP_ORDERED_ROUNDS=2
ins w-rounds8 w WARPMAP_ORDERED_ROUNDS=8 WARPMAP_LOCALITY=on
ins base-rounds8 base WARPMAP_ORDERED_ROUNDS=8 WARPMAP_LOCALITY=on
M=gpu__time_duration.sum,lts__t_requests.sum,lts__t_sectors.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,sm__inst_executed.sum,smsp__warps_active.avg.per_cycle_active
for v in w dstore; do
  left 480 "ncu $v" || continue
  WARPMAP_KERNEL_DIR=$PWD/variants/$v timeout 45 ncu --clock-control none --kernel-name regex:"warpdrive_insert_ordered" -c 2 --metrics $M \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$v.log 2>&1
  echo "ncu $v rc=$? [$((SECONDS-S)) s]"; grep -E "^\s+(lts|gpu|dram|sm|smsp)__" $R/ncu-$v.log | head -14
done
left 520 "ncu base sections" && {
  WARPMAP_KERNEL_DIR=$PWD/variants/base timeout 70 ncu --clock-control none --kernel-name regex:"warpdrive_insert_ordered" -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section Occupancy --metrics breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed,$M \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-base-sections.log 2>&1
  echo "ncu base sections rc=$? [$((SECONDS-S)) s]"; grep -E "lts__|Stall|Busy|Throughput|Warp Cycles|Achieved|Theoretical" $R/ncu-base-sections.log | head -60
}
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
