#!/bin/bash
# Session AH call 2: the ordered insert prefetching the table's stretch ahead of its walk
# (WARPMAP_PREFETCH = lead in stretches), against main's path, same binary, alternated, two rounds;
# 256 parts with and without it; ncu of the ordered insert both ways; tests with the prefetch on.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_REQUIRE_GPU=1
R=/tmp/r2; mkdir -p $R; S=$SECONDS
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
timeout 60 ./h/warpmap-unit prefetch bulk_is > $R/unit.log 2>&1; echo "unit rc=$? $(grep 'test result' $R/unit.log)"
declare -A V=( [base]="" [pf025]="WARPMAP_PREFETCH=0.25" [pf05]="WARPMAP_PREFETCH=0.5" [pf1]="WARPMAP_PREFETCH=1" [p256]="WARPMAP_LOCALITY_PARTS=256" [p256pf1]="WARPMAP_LOCALITY_PARTS=256 WARPMAP_PREFETCH=1" )
for round in 1 2; do for c in base pf05 pf1 pf025 p256 p256pf1; do
  left 330 "ab $c r$round" || continue
  env ${V[$c]} timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 5 --json $R/ab-$c-r$round.json > $R/ab-$c-r$round.log 2>&1
  echo "$c r$round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-$c-r$round.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
done; done
for c in base pf05 pf1; do
  left 400 "ncu $c" || continue
  env ${V[$c]} timeout 50 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_lookup_miss.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$c.log 2>&1
  echo "ncu $c rc=$? [$((SECONDS-S)) s]"; grep -E "^\s+(lts|gpu|dram|sm)__" $R/ncu-$c.log
done
left 430 "locality pf" && { WARPMAP_PREFETCH=0.5 timeout 60 ./h/locality > $R/locality-pf.log 2>&1; echo "locality (prefetch 0.5) rc=$? $(grep 'test result' $R/locality-pf.log) [$((SECONDS-S)) s]"; }
left 450 "memcheck" && { WARPMAP_PREFETCH=0.5 WARPMAP_LOCALITY=on timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 ./h/locality partitioned > $R/memcheck-pf.log 2>&1; echo "memcheck locality partitioned (prefetch) rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-pf.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
