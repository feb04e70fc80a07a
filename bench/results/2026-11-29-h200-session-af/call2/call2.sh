#!/bin/bash
# Session AF call 2: the ordered insert reading 16-byte-slot windows by halves (WARPMAP_WD_HALF_WINDOWS=1, default)
# against whole windows (=0), same binary (ae602e7 + the change); ncu of the ordered insert both ways.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r2; mkdir -p $R; S=$SECONDS
for round in 1 2; do for h in 0 1; do
  WARPMAP_WD_HALF_WINDOWS=$h timeout 100 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5,0.8,0.9,0.95 --ops insert,find_hit --runs 5 --json $R/ab-h$h-r$round.json > $R/ab-h$h-r$round.log 2>&1
  echo "half=$h round $round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-h$h-r$round.log | awk '{printf "%s %s %s; ", $5, $6, $7}')"
done; done
for h in 0 1; do
  WARPMAP_WD_HALF_WINDOWS=$h timeout 150 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats \
    --metrics lts__t_sectors_op_read.sum,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,lts__t_sectors_op_write.sum,lts__t_requests_op_atom.sum,lts__t_requests_op_read.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors.sum,lts__t_requests.sum,gpu__time_duration.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-h$h.log 2>&1
  echo "ncu half=$h rc=$? [$((SECONDS-S)) s]"; grep -E "Duration|lts__t_|dram__bytes|L2 Cache Throughput|DRAM Throughput|Mem Busy|Max Bandwidth|Registers|Achieved Occ" $R/ncu-h$h.log | head -30
done
tar czf $OUT/r.tar.gz -C $R .
