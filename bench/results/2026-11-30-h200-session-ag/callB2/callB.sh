#!/bin/bash
# Session AG call B (third run; kvA is empty: the embedded kernels): the ordered insert on the L2's sides (default) against the same binary without them
# (WARPMAP_L2_SIDES=off) and with the two-phase selection of a tile's side (onB: WARPMAP_KERNEL_DIR=kvB), two rounds; ncu both ways.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/rB; mkdir -p $R/t; S=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
WARPMAP_KERNEL_DIR=$PWD/kvA WARPMAP_TRACE_SIDES=1 timeout 60 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 3 > $R/first.log 2>&1; echo "first rc=$? [$((SECONDS-S)) s]"; grep -E "L2 sides|^warpdrive" $R/first.log | head -5
for round in 1 2; do for c in on off onB; do
  if [ $c = onB ]; then export WARPMAP_KERNEL_DIR=$PWD/kvB; else export WARPMAP_KERNEL_DIR=$PWD/kvA; fi
  WARPMAP_L2_SIDES=${c%B} timeout 120 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert,find_hit --runs 5 --json $R/ab-$c-r$round.json > $R/ab-$c-r$round.log 2>&1
  echo "sides=$c round $round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-$c-r$round.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done; done
export WARPMAP_KERNEL_DIR=$PWD/kvA
for c in on off; do
  WARPMAP_L2_SIDES=$c timeout 90 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_requests_srcunit_tex_op_atom.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_requests_srcunit_ltcfabric.sum,lts__t_sectors.sum,dram__bytes.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$c.log 2>&1
  echo "ncu sides=$c rc=$? [$((SECONDS-S)) s]"; grep -E "^\s+(lts|gpu|dram)__" $R/ncu-$c.log
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
