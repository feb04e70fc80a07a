#!/bin/bash
# Session AD call 9 (a26313c's binaries): variant "partial": wm_warp_load_rows shares the row loads among whatever
# lanes call it (an insert's rescans and later windows, where not all 32 lanes are there), instead of each lane
# loading its own 16-byte chunks.
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r9; mkdir -p $R/t; S=$SECONDS; V=$PWD/variants/partial
export WARPMAP_REQUIRE_GPU=1
for t in locality reduce; do WARPMAP_KERNEL_DIR=$V timeout 90 ./$t > $R/t/$t.log 2>&1; echo "$t(partial) rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"; done
WARPMAP_KERNEL_DIR=$V WARPMAP_TEST_SCHEMES=warpdrive timeout 150 ./contract > $R/t/contract.log 2>&1; echo "contract(partial) rc=$? $(grep 'test result' $R/t/contract.log | tr '\n' ' ') [$((SECONDS-S)) s]"
WARPMAP_KERNEL_DIR=$V timeout 120 compute-sanitizer --tool memcheck ./locality u64 > $R/t/memcheck.log 2>&1; echo "memcheck locality u64 (partial) rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
for round in 1 2; do for v in embedded partial; do
  d=(); [ $v = partial ] && d=(WARPMAP_KERNEL_DIR=$V)
  env "${d[@]}" timeout 60 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 3 --json $R/ins-$v-$round.json > $R/w.log 2>&1; echo "$v rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
for v in embedded partial; do
  d=(); [ $v = partial ] && d=(WARPMAP_KERNEL_DIR=$V)
  env "${d[@]}" timeout 60 ncu --kernel-name regex:warpdrive_insert_ordered --launch-count 1 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_sectors.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_atom.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$v.txt 2>&1; echo "ncu $v rc=$? $(grep -E '^ +(lts|gpu|launch)' $R/ncu-$v.txt | awk '{printf "%s=%s ", $1, $NF}')"
done
rm -f $R/*.svg $R/w.log; tar czf $OUT/r.tar.gz -C $R .
