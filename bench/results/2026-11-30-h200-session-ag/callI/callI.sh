#!/bin/bash
# Session AG call I: the compare preset of main's WarpDrive kernels (970f22e's kernels/warpdrive.cu through
# WARPMAP_KERNEL_DIR=kvOld) beside this session's (024ac00's CLI, sides off by default), alternated, two rounds.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/rI; mkdir -p $R; S=$SECONDS
for round in 1 2; do for c in old new; do
  if [ $c = old ]; then export WARPMAP_KERNEL_DIR=$PWD/kvOld; else unset WARPMAP_KERNEL_DIR; fi
  timeout 150 ./warpmap bench --preset compare --runs 5 --json $R/compare-$c-r$round.json > $R/compare-$c-r$round.log 2>&1
  echo "$c round $round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$c-r$round.log | grep -E 'insert|find_hit' | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done; done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
