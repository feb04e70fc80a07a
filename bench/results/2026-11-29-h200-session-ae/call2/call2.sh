#!/bin/bash
# Session AE call 2 (experiment: WARPMAP_ORDERED_GRID_PCT, a share of the ordered insert's resident wave):
# does the L2-bound ordered insert keep its rate with fewer blocks in flight (what an overlap with the split would need)?
cd "$(dirname "$0")"; tar xzf mini-exp.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r2; mkdir -p $R; S=$SECONDS
for round in 1 2; do for p in 100 75 50 33 25; do
  WARPMAP_ORDERED_GRID_PCT=$p timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8 --ops insert --runs 3 --json $R/ins-$p-$round.json > $R/w.log 2>&1; echo "pct $p rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
for p in 100 50; do
  WARPMAP_ORDERED_GRID_PCT=$p timeout 90 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered --launch-count 1 --metrics gpu__time_duration.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_requests.sum,sm__warps_active.avg.pct_of_peak_sustained_active ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$p.txt 2>&1; echo "ncu $p rc=$? $(grep -E '^ +(gpu|lts|sm)' $R/ncu-$p.txt | awk '{printf "%s=%s ", $1, $NF}') [$((SECONDS-S)) s]"
done
rm -f $R/*.svg $R/w.log; tar czf $OUT/r.tar.gz -C $R .
