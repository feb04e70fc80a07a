#!/bin/bash
# Session AI call 4: where the split's scatter spends its 1.6 ms (u64 pairs at load 0.5, the bench's clocks):
# ncu sections of multisplit_coarse_scatter and multisplit_coarse_count.
cd "$(dirname "$0")"
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r4; mkdir -p $R; S=$SECONDS
timeout 120 ncu --clock-control none --kernel-name regex:"multisplit_coarse_scatter" -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SourceCounters --section Occupancy --section LaunchStats --metrics breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,sm__inst_executed.sum \
  ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-scatter.log 2>&1
echo "ncu scatter rc=$? [$((SECONDS-S)) s]"; grep -E "gpu__time|dram__bytes|inst_executed|Throughput|Stall|stall|Warp Cycles|Registers|Shared Memory|Block Size|Achieved|Theoretical|Active Threads" $R/ncu-scatter.log | head -50
timeout 60 ncu --clock-control none --kernel-name regex:"multisplit_coarse_count" -c 1 --section SpeedOfLight --metrics dram__bytes_read.sum,gpu__time_duration.sum \
  ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-count.log 2>&1
echo "ncu count rc=$? [$((SECONDS-S)) s]"; grep -E "gpu__time|dram__bytes|Throughput" $R/ncu-count.log | head
tar czf $OUT/r.tar.gz -C $R .
