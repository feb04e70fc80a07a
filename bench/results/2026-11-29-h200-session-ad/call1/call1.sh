#!/bin/bash
# Session AD call 1: the split's unaligned tiles in registers (embedded: the patch) against HEAD 7475639's split
# (variant old); the ordered insert's half-window first load (variant half); a 64-bit key CAS then a value store
# (variant cas64, an experiment); ncu breakdown of the ordered insert.
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r1; mkdir -p $R/t; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
export WARPMAP_REQUIRE_GPU=1
for t in multisplit two_level locality sharded dycuckoo; do
  timeout 90 ./$t > $R/t/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
timeout 100 compute-sanitizer --tool memcheck ./multisplit > $R/t/memcheck.log 2>&1; echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck.log | tr '\n' ' ') [$((SECONDS-S)) s]"
WARPMAP_KERNEL_DIR=$PWD/variants/half timeout 90 ./locality > $R/t/locality-half.log 2>&1; echo "locality(half) rc=$? $(grep 'test result' $R/t/locality-half.log) [$((SECONDS-S)) s]"
WARPMAP_KERNEL_DIR=$PWD/variants/half WARPMAP_TEST_SCHEMES=warpdrive timeout 90 ./reduce > $R/t/reduce-half.log 2>&1; echo "reduce(half) rc=$? $(grep 'test result' $R/t/reduce-half.log) [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
for round in 1 2; do for v in embedded old half cas64; do
  (( SECONDS - S > 420 )) && break
  d=(); [ $v != embedded ] && d=(WARPMAP_KERNEL_DIR=$PWD/variants/$v)
  env "${d[@]}" timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8 --ops insert --runs 3 --json $R/ins-$v-$round.json > $R/w.log 2>&1; echo "$v rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
M='regex:^lts__t_(sectors|requests)_srcunit_(tex|ltcfabric)(_op_(read|write|atom|red))?\.sum$'
for v in embedded half cas64; do
  (( SECONDS - S > 500 )) && break
  d=(); [ $v != embedded ] && d=(WARPMAP_KERNEL_DIR=$PWD/variants/$v)
  env "${d[@]}" timeout 60 ncu --kernel-name regex:warpdrive_insert_ordered --launch-count 1 --metrics "$M,gpu__time_duration.sum,lts__t_sectors.sum,lts__t_requests.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum" ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$v.txt 2>&1; echo "ncu $v rc=$? [$((SECONDS-S)) s]"; grep -E "^ +(lts|gpu|dram)" $R/ncu-$v.txt | awk '{print "  ", $1, $NF}'
done
for v in embedded old; do
  (( SECONDS - S > 500 )) && break
  d=(); [ $v != embedded ] && d=(WARPMAP_KERNEL_DIR=$PWD/variants/$v)
  env "${d[@]}" timeout 80 ./warpmap bench --scheme two_level --preset two-level-compare --runs 3 --json $R/tl-$v.json > $R/l.log 2>&1; echo "tl $v rc=$? $(grep -E '^two_level' $R/l.log | grep insert | awk '{printf "%s %s %s; ", $5, $10, $12}') [$((SECONDS-S)) s]"; cat $R/l.log >> $R/all.log
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
