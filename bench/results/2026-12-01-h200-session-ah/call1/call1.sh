#!/bin/bash
# Session AH call 1: tests of the split by side (locality, multisplit, unit), then the insert A/B:
# WARPMAP_L2_SIDES=off (main's path) against =on (split by side as well as stretch), same binary,
# alternated, two rounds; ncu of the ordered insert and the split both ways; the first insert's cost.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_REQUIRE_GPU=1
R=/tmp/r1; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
timeout 60 ./h/locality l2_sides split_by_side --nocapture > $R/l2.log 2>&1; echo "l2/split tests rc=$? [$((SECONDS-S)) s]"; grep -E "L2 sides of|in-page mask|test result|panicked" $R/l2.log
for m in default synthetic on; do
  if [ $m = default ]; then unset WARPMAP_L2_SIDES; else export WARPMAP_L2_SIDES=$m; fi
  timeout 150 ./h/locality > $R/locality-$m.log 2>&1; echo "locality ($m) rc=$? $(grep 'test result' $R/locality-$m.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
unset WARPMAP_L2_SIDES
timeout 60 ./h/multisplit > $R/multisplit.log 2>&1; echo "multisplit rc=$? $(grep 'test result' $R/multisplit.log) [$((SECONDS-S)) s]"
timeout 60 ./h/warpmap-unit l2_sides multisplit > $R/unit.log 2>&1; echo "unit rc=$? $(grep 'test result' $R/unit.log) [$((SECONDS-S)) s]"
WARPMAP_TRACE_SIDES=1 WARPMAP_L2_SIDES=on timeout 60 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 3 --json $R/first.json > $R/first.log 2>&1; echo "first rc=$? [$((SECONDS-S)) s]"; grep -E "L2 sides|^warpdrive" $R/first.log | head -5
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
for round in 1 2; do for c in off on; do
  left 430 "ab $c r$round" || continue
  WARPMAP_L2_SIDES=$c timeout 120 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 5 --json $R/ab-$c-r$round.json > $R/ab-$c-r$round.log 2>&1
  echo "sides=$c round $round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-$c-r$round.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done; done
for c in off on; do
  left 495 "ncu $c" || continue
  WARPMAP_L2_SIDES=$c timeout 50 ncu --clock-control none --kernel-name regex:"warpdrive_insert_ordered|multisplit_coarse|l2_sides" -c 8 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_requests_srcunit_ltcfabric.sum,sm__inst_executed.sum,lts__t_sectors.sum,dram__bytes.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$c.log 2>&1
  echo "ncu sides=$c rc=$? [$((SECONDS-S)) s]"; grep -E "^  [a-z_0-9]+\(|^\s+(lts|gpu|dram|sm)__" $R/ncu-$c.log | head -60
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
