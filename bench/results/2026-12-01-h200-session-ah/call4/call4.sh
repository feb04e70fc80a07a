#!/bin/bash
# Session AH call 4 (the kept code: the stretch prefetch on by default, lead 0.25): the GPU tests that
# cover the changed engine (locality default / sides synthetic / sides on / prefetch off, multisplit,
# two_level, dycuckoo, sharded, reduce, ops, warpdrive_filter, streams, the contract on WarpDrive),
# memcheck of locality; then the compare preset with the prefetch (default) and without
# (WARPMAP_PREFETCH=off), alternated, two rounds.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_REQUIRE_GPU=1
R=/tmp/r4; mkdir -p $R; S=$SECONDS
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
t() { local name=$1; shift; timeout 120 "$@" > $R/$name.log 2>&1; echo "$name rc=$? $(grep 'test result' $R/$name.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
t locality ./h/locality
WARPMAP_L2_SIDES=synthetic t locality-synthetic ./h/locality
WARPMAP_L2_SIDES=on t locality-on ./h/locality
WARPMAP_PREFETCH=off t locality-noprefetch ./h/locality
for b in multisplit two_level dycuckoo sharded reduce ops warpdrive_filter streams; do t $b ./h/$b; done
t contract-warpdrive ./h/contract warpdrive
left 330 memcheck && { timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 ./h/locality > $R/memcheck-locality.log 2>&1; echo "memcheck locality rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-locality.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
for round in 1 2; do for c in on off; do
  left 500 "compare $c r$round" || continue
  if [ $c = on ]; then unset WARPMAP_PREFETCH; else export WARPMAP_PREFETCH=off; fi
  timeout 100 ./warpmap bench --preset compare --runs 5 --json $R/compare-$c-r$round.json > $R/compare-$c-r$round.log 2>&1
  echo "compare prefetch=$c r$round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$c-r$round.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done; done
unset WARPMAP_PREFETCH
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
