#!/bin/bash
# Session AJ call 2: why u32 inserts at 0.8-0.9 (the deep ordered insert) ran 10-13 % below session AI's
# in call 1, with the counting split as well: kernel files through WARPMAP_KERNEL_DIR, one CLI.
# vpad = HEAD's (33ebc60) kernels with wm_bulk padded to the new size (ignores regions: slack off only);
# cur = this tree's (one loop for every shape); vT = cur with HEAD's loop where there are no regions or flags.
# Then ncu of the slack path's kernels (u64 pairs at load 0.5, bench clocks).
cd "$(dirname "$0")"
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r2; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
ins() { # label variant loads [env...]
  local l=$1 v=$2 lf=$3; shift 3
  left 420 "$l" || return
  env WARPMAP_KERNEL_DIR=$PWD/variants/$v "$@" timeout 100 ./warpmap bench --keys-log2 27 --types u32,u64 --load-factors $lf --ops insert --runs 5 --json $R/ins-$l.json > $R/ins-$l.log 2>&1
  echo "$l rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ins-$l.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
}
for r in 1 2; do
  ins vpad-off-r$r vpad 0.5,0.8,0.9 WARPMAP_SLACK_SPLIT=0
  ins cur-off-r$r cur 0.5,0.8,0.9 WARPMAP_SLACK_SPLIT=0
  ins vT-off-r$r vT 0.5,0.8,0.9 WARPMAP_SLACK_SPLIT=0
  ins cur-on-r$r cur 0.5,0.8,0.9
  ins vT-on-r$r vT 0.5,0.8,0.9
done
left 480 ncu && { timeout 110 ncu --clock-control none --kernel-name regex:"multisplit_slack_scatter|warpdrive_insert_ordered" -c 3 --section SpeedOfLight --section Occupancy --section LaunchStats --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,sm__inst_executed.sum \
  ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-slack.log 2>&1
echo "ncu slack rc=$? [$((SECONDS-S)) s]"; grep -E "^  [a-z_]+\(|gpu__time|dram__bytes|inst_executed|Registers Per|Achieved Occ|Block Limit Reg" $R/ncu-slack.log | head -40; }
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
