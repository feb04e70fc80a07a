#!/bin/bash
# Session AD call 4: the fine pass without bulk copies (variant finereg), the split's block of 768 (knob), the ordered
# insert with launch bounds for 5 / 6 blocks a multiprocessor (variants lb5, lb6); which profilers are here.
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r4; mkdir -p $R/t; S=$SECONDS
which nsys ncu; ls /usr/local/cuda/bin | grep -i nsys; ls /opt/nvidia 2>/dev/null
export WARPMAP_REQUIRE_GPU=1
for t in multisplit two_level dycuckoo; do
  WARPMAP_KERNEL_DIR=$PWD/variants/finereg timeout 90 ./$t > $R/t/$t-finereg.log 2>&1; echo "$t(finereg) rc=$? $(grep 'test result' $R/t/$t-finereg.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
WARPMAP_KERNEL_DIR=$PWD/variants/finereg timeout 100 compute-sanitizer --tool memcheck ./multisplit > $R/t/memcheck-finereg.log 2>&1; echo "memcheck(finereg) rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck-finereg.log | tr '\n' ' ') [$((SECONDS-S)) s]"
for v in lb5 lb6; do WARPMAP_KERNEL_DIR=$PWD/variants/$v timeout 90 ./locality > $R/t/locality-$v.log 2>&1; echo "locality($v) rc=$? $(grep 'test result' $R/t/locality-$v.log) [$((SECONDS-S)) s]"; done
unset WARPMAP_REQUIRE_GPU
for round in 1 2; do for v in embedded block768 lb5 lb6; do
  d=(); [ $v = block768 ] && d=(WARPMAP_MULTISPLIT_BLOCK=768); [[ $v = lb* ]] && d=(WARPMAP_KERNEL_DIR=$PWD/variants/$v)
  env "${d[@]}" timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8 --ops insert --runs 3 --json $R/ins-$v-$round.json > $R/w.log 2>&1; echo "$v rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
for v in embedded lb5 lb6; do
  d=(); [[ $v = lb* ]] && d=(WARPMAP_KERNEL_DIR=$PWD/variants/$v)
  env "${d[@]}" timeout 60 ncu --clock-control none --kernel-name regex:insert_ordered --metrics gpu__time_duration.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$v.txt 2>&1
  echo "$v ncu rc=$? $(awk '/^  [a-z_]+ \(/{k=$1} /gpu__time|registers_per|warps_active|lts__thr|local_op/{printf "%s ", $NF}' $R/ncu-$v.txt)"
done
for round in 1 2; do for v in embedded finereg async0 block768; do
  d=(); [ $v = finereg ] && d=(WARPMAP_KERNEL_DIR=$PWD/variants/finereg); [ $v = async0 ] && d=(WARPMAP_MULTISPLIT_ASYNC=0); [ $v = block768 ] && d=(WARPMAP_KERNEL_DIR=$PWD/variants/finereg WARPMAP_MULTISPLIT_BLOCK=768)
  env "${d[@]}" timeout 80 ./warpmap bench --scheme two_level --preset two-level-compare --runs 3 --json $R/tl-$v-$round.json > $R/l.log 2>&1; echo "tl $v rc=$? $(grep -E '^two_level' $R/l.log | grep insert | awk '{printf "%s %s %s; ", $5, $10, $12}') [$((SECONDS-S)) s]"; cat $R/l.log >> $R/all.log
done; done
rm -f $R/*.svg $R/w.log $R/l.log; tar czf $OUT/r.tar.gz -C $R .
