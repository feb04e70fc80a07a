#!/bin/bash
# Session AG call E: the sided walk as a lane loop (kvC: each thread reads the sides of its 2 x ROUNDS items of a tile,
# then inserts its side's, no shared list) against the shared-list walk (embedded) and no sides, two rounds; ncu.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/rE; mkdir -p $R; S=$SECONDS
for round in 1 2; do for c in onC on off; do
  if [ $c = onC ]; then export WARPMAP_KERNEL_DIR=$PWD/kvC; else unset WARPMAP_KERNEL_DIR; fi
  WARPMAP_L2_SIDES=${c%C} timeout 120 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 5 --json $R/ab-$c-r$round.json > $R/ab-$c-r$round.log 2>&1
  echo "sides=$c round $round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-$c-r$round.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done; done
export WARPMAP_KERNEL_DIR=$PWD/kvC
WARPMAP_L2_SIDES=on timeout 90 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_requests_srcunit_tex_op_atom.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_requests_srcunit_ltcfabric.sum,lts__t_sectors.sum,dram__bytes.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-onC.log 2>&1
echo "ncu onC rc=$? [$((SECONDS-S)) s]"; grep -E "^\s+(lts|gpu|dram)__" $R/ncu-onC.log
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
