#!/bin/bash
# Session AE call 1 (working tree on 7b4e441: the split's tiles written out by bulk copies, WM_MS_STORE_BINS):
# tests and memcheck; inserts with the bulk write-out off / on (WARPMAP_MULTISPLIT_STORE=0), three rounds;
# ncu of the scatter off / on (u64 pairs at load 0.5, bench clocks).
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r1; mkdir -p $R/t; S=$SECONDS
export WARPMAP_REQUIRE_GPU=1
for t in multisplit locality two_level sharded reduce; do
  timeout 90 ./$t > $R/t/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
timeout 100 compute-sanitizer --tool memcheck ./multisplit > $R/t/memcheck-multisplit.log 2>&1; echo "memcheck multisplit rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck-multisplit.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
for round in 1 2 3; do for v in off on; do
  e=""; [ $v = off ] && e="WARPMAP_MULTISPLIT_STORE=0"
  env $e timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.95 --ops insert --runs 3 --json $R/ins-$v-$round.json > $R/w.log 2>&1; echo "$v rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
for v in off on; do
  e=""; [ $v = off ] && e="WARPMAP_MULTISPLIT_STORE=0"
  env $e timeout 90 ncu --clock-control none --kernel-name regex:multisplit_coarse_scatter --launch-count 2 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,launch__registers_per_thread ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$v.txt 2>&1; echo "ncu $v rc=$? $(grep -E '^ +(gpu|dram|smsp|launch)' $R/ncu-$v.txt | awk '{printf "%s=%s ", $1, $NF}') [$((SECONDS-S)) s]"
done
rm -f $R/*.svg $R/w.log; tar czf $OUT/r.tar.gz -C $R .
