#!/bin/bash
# Session AF call 3: where the ordered insert's L2 atomics come from (u64 pairs at load 0.5): SM-side atomic
# instructions and sectors (each thread's CAS is one) against the L2's atomic requests. Binary of call 2, whole windows.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_WD_HALF_WINDOWS=0
R=/tmp/r3; mkdir -p $R; S=$SECONDS
i=0
for m in l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum,sm__sass_inst_executed_op_global_atom.sum \
         lts__t_requests_srcunit_tex_op_atom.sum,lts__t_sectors_srcunit_tex_op_atom.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex.sum \
         lts__t_requests_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_ltcfabric.sum \
         l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,smsp__thread_inst_executed_op_global_atom.sum; do
  i=$((i+1))
  timeout 60 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --metrics $m,gpu__time_duration.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$i.log 2>&1
  echo "ncu $i rc=$? [$((SECONDS-S)) s]"; grep -E "^\s+(l1tex|lts|sm|smsp|gpu)__|ERROR|rror" $R/ncu-$i.log | head -8
done
for lf in 0.5 0.9; do
  WARPMAP_LOCALITY=off timeout 60 ncu --clock-control none --kernel-name regex:warpdrive_insert -c 1 --metrics l1tex__t_sectors_pipe_lsu_mem_global_op_atom.sum,lts__t_requests_op_atom.sum,lts__t_requests_srcunit_tex_op_atom.sum,gpu__time_duration.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors $lf --ops insert --runs 1 > $R/ncu-input-$lf.log 2>&1
  echo "ncu input order $lf rc=$?"; grep -E "^\s+(l1tex|lts|gpu)__|rror" $R/ncu-input-$lf.log | head -6
done
tar czf $OUT/r.tar.gz -C $R .
