#!/bin/bash
# Session AH call 3: the stretch prefetch's lead and rate (WARPMAP_PREFETCH, WARPMAP_PREFETCH_RATE:
# each stretch whole in the first 1/rate of its part, lead stretches ahead) against main's path,
# same binary, alternated, two rounds; ncu both ways; tests and memcheck with the prefetch on.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_REQUIRE_GPU=1
R=/tmp/r3; mkdir -p $R; S=$SECONDS
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
timeout 60 ./h/warpmap-unit prefetch bulk_is > $R/unit.log 2>&1; echo "unit rc=$? $(grep 'test result' $R/unit.log)"
declare -A V=( [base]="" [l25r1]="WARPMAP_PREFETCH=0.25" [l125r4]="WARPMAP_PREFETCH=0.125 WARPMAP_PREFETCH_RATE=4" [l0r4]="WARPMAP_PREFETCH=0 WARPMAP_PREFETCH_RATE=4" [l06r8]="WARPMAP_PREFETCH=0.0625 WARPMAP_PREFETCH_RATE=8" [l125r2]="WARPMAP_PREFETCH=0.125 WARPMAP_PREFETCH_RATE=2" [l25r2]="WARPMAP_PREFETCH=0.25 WARPMAP_PREFETCH_RATE=2" )
for round in 1 2; do for c in base l25r1 l125r4 l0r4 l06r8 l125r2 l25r2; do
  left 300 "ab $c r$round" || continue
  env ${V[$c]} timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 5 --json $R/ab-$c-r$round.json > $R/ab-$c-r$round.log 2>&1
  echo "$c r$round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-$c-r$round.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
done; done
for c in base l125r4 l25r1; do
  left 360 "ncu $c" || continue
  env ${V[$c]} timeout 50 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_sector_hit_rate.pct,dram__bytes_read.sum,dram__bytes_write.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$c.log 2>&1
  echo "ncu $c rc=$? [$((SECONDS-S)) s]"; grep -E "^\s+(lts|gpu|dram|sm)__" $R/ncu-$c.log
done
left 400 "locality pf" && { WARPMAP_PREFETCH=0.125 WARPMAP_PREFETCH_RATE=4 timeout 60 ./h/locality > $R/locality-pf.log 2>&1; echo "locality (prefetch 0.125 x4) rc=$? $(grep 'test result' $R/locality-pf.log) [$((SECONDS-S)) s]"; }
left 420 "memcheck" && { WARPMAP_PREFETCH=0.125 WARPMAP_PREFETCH_RATE=4 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 ./h/locality chunks_g on_g4 copies_race > $R/memcheck-pf.log 2>&1; echo "memcheck locality (prefetch) rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-pf.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
