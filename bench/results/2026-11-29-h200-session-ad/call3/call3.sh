#!/bin/bash
# Session AD call 3: the counting split's tile shape for the partitioned insert's split (knobs, no rebuild):
# ncu of the scatter (bench clocks) and inserts; and the two-level inserts with the split of d0c47ff / 7475639 / copies off.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r3; mkdir -p $R; S=$SECONDS
for spec in default WARPMAP_MULTISPLIT_BLOCK=1024 WARPMAP_MULTISPLIT_STAGE_KB=45 WARPMAP_MULTISPLIT_BLOCK=256,WARPMAP_MULTISPLIT_STAGE_KB=48 WARPMAP_MULTISPLIT_BLOCK=1024,WARPMAP_MULTISPLIT_STAGE_KB=52 WARPMAP_MULTISPLIT_BLOCK=768; do
  e=(); [ $spec != default ] && IFS=',' read -r -a e <<< "$spec"
  env "${e[@]}" timeout 60 ncu --clock-control none --kernel-name regex:"coarse_scatter|insert_ordered" --metrics gpu__time_duration.sum,launch__occupancy_limit_shared_mem,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$spec.txt 2>&1
  echo "$spec ncu rc=$? $(awk '/^  [a-z_]+ \(/{k=$1} /gpu__time_duration.sum|registers_per|limit_shared|warps_active/{printf "%s:%s ", substr(k,1,14), $NF}' $R/ncu-$spec.txt)"
  env "${e[@]}" timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8 --ops insert --runs 3 --json $R/ins-$spec.json > $R/w.log 2>&1; echo "   rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done
for round in 1 2; do for v in embedded old async0; do
  d=(); [ $v = old ] && d=(WARPMAP_KERNEL_DIR=$PWD/variants/old); [ $v = async0 ] && d=(WARPMAP_MULTISPLIT_ASYNC=0)
  env "${d[@]}" timeout 80 ./warpmap bench --scheme two_level --preset two-level-compare --runs 3 --json $R/tl-$v-$round.json > $R/l.log 2>&1; echo "tl $v rc=$? $(grep -E '^two_level' $R/l.log | grep insert | awk '{printf "%s %s %s; ", $5, $10, $12}') [$((SECONDS-S)) s]"; cat $R/l.log >> $R/all.log
done; done
rm -f $R/*.svg $R/w.log $R/l.log; tar czf $OUT/r.tar.gz -C $R .
