#!/bin/bash
# Session AM call 2: ncu of the fresh build (u64 pairs at 0.5): the ordered insert (build off),
# the fresh insert and its deferred pass, at the plan's stretches and at 1/4 of L2.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r2; mkdir -p $R; S=$SECONDS
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg
n() { # label fresh stretch
  export WARPMAP_FRESH_BUILD=$2
  if [ -n "$3" ]; then export WARPMAP_INSERT_STRETCH=$3; else unset WARPMAP_INSERT_STRETCH; fi
  timeout 90 ncu --clock-control none -k regex:"warpdrive_insert_(ordered|fresh|deferred)" -c 3 --metrics $M \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$1.txt 2>&1
  echo "ncu $1 rc=$? [$((SECONDS-S)) s]"; grep -E "^  [a-z_]+|gpu__time|dram__bytes|hit_rate|lts__t_sectors|warps_active" $R/ncu-$1.txt | head -30
  unset WARPMAP_INSERT_STRETCH WARPMAP_FRESH_BUILD
}
n off 0; n on 1; n on-s1of4 1 1/4
WARPMAP_REQUIRE_GPU=1 timeout 60 ./h/multisplit > $R/multisplit.log 2>&1; echo "multisplit rc=$? $(grep 'test result' $R/multisplit.log)"
tar czf $OUT/r.tar.gz -C $R .
