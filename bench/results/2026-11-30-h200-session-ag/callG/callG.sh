#!/bin/bash
# Session AG call G: ncu of the ordered insert (u64 pairs at load 0.5) with the L2's sides (shared-list walk,
# careful granule map) and without: where the time goes once the fabric's requests are gone.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/rG; mkdir -p $R
M=gpu__time_duration.sum,lts__t_requests.sum,lts__t_sectors_srcunit_tex_lookup_hit.sum,lts__t_sectors_srcunit_tex_lookup_miss.sum,lts__t_sectors_srcunit_ltcfabric.sum,l1tex__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,lts__d_sectors_fill_sysmem.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,lts__t_sectors_srcunit_tex_op_atom_lookup_miss.sum,smsp__average_warp_latency_per_inst_issued.ratio,smsp__inst_executed.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,lts__average_gcomp_input_sector_success_rate.pct
for c in on off; do
  WARPMAP_L2_SIDES=$c timeout 120 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --metrics $M \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$c.log 2>&1
  echo "ncu sides=$c rc=$?"; grep -E "^\s+(lts|gpu|dram|sm__|smsp|l1tex)" $R/ncu-$c.log
done
tar czf $OUT/r.tar.gz -C $R .
