#!/bin/bash
# Session AD call 10: variant "partial4": call 9's shared row loads for partial warps, with the ordered insert held to
# 4 blocks a multiprocessor (__launch_bounds__(256, 4): at most 64 registers, as the embedded kernel's 63).
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r10; mkdir -p $R/t; S=$SECONDS; V=$PWD/variants/partial4
WARPMAP_REQUIRE_GPU=1 WARPMAP_KERNEL_DIR=$V timeout 90 ./locality > $R/t/locality.log 2>&1; echo "locality(partial4) rc=$? $(grep 'test result' $R/t/locality.log | tr '\n' ' ') [$((SECONDS-S)) s]"
for round in 1 2; do for v in embedded partial4; do
  d=(); [ $v = partial4 ] && d=(WARPMAP_KERNEL_DIR=$V)
  env "${d[@]}" timeout 60 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5,0.8,0.95 --ops insert --runs 3 --json $R/ins-$v-$round.json > $R/w.log 2>&1; echo "$v rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
WARPMAP_KERNEL_DIR=$V timeout 60 ncu --kernel-name regex:warpdrive_insert_ordered --launch-count 1 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_requests_srcunit_tex_op_read.sum,launch__registers_per_thread,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu.txt 2>&1; echo "ncu rc=$? $(grep -E '^ +(lts|gpu|launch|l1tex)' $R/ncu.txt | awk '{printf "%s=%s ", $1, $NF}')"
rm -f $R/*.svg $R/w.log; tar czf $OUT/r.tar.gz -C $R .
