#!/bin/bash
# Session AG call F: the shared-list sided walk with the tile's sides read first, loads together (kvB), the careful
# granule map, tiles of 4 and 6 rounds, against the embedded walk and no sides; ncu of kvB.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/rF; mkdir -p $R; S=$SECONDS
for round in 1 2; do for c in onB on off onB6 off6; do
  if [ ${c:0:3} = onB ]; then export WARPMAP_KERNEL_DIR=$PWD/kvB; else unset WARPMAP_KERNEL_DIR; fi
  if [ ${c: -1} = 6 ]; then export WARPMAP_ORDERED_ROUNDS=6; else unset WARPMAP_ORDERED_ROUNDS; fi
  s=on; [ ${c:0:3} = off ] && s=off
  WARPMAP_L2_SIDES=$s timeout 120 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8 --ops insert --runs 5 --json $R/ab-$c-r$round.json > $R/ab-$c-r$round.log 2>&1
  echo "$c round $round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-$c-r$round.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done; done
unset WARPMAP_ORDERED_ROUNDS; export WARPMAP_KERNEL_DIR=$PWD/kvB
WARPMAP_L2_SIDES=on timeout 90 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_requests_srcunit_tex_op_atom.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_requests_srcunit_ltcfabric.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-onB.log 2>&1
echo "ncu onB rc=$? [$((SECONDS-S)) s]"; grep -E "^\s+(lts|gpu|dram|sm__|smsp)" $R/ncu-onB.log
unset WARPMAP_KERNEL_DIR
WARPMAP_L2_SIDES=off timeout 90 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-off.log 2>&1
echo "ncu off rc=$?"; grep -E "^\s+(lts|gpu|dram|sm__|smsp)" $R/ncu-off.log
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
