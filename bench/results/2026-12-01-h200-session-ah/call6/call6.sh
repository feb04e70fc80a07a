#!/bin/bash
# Session AH call 6: was the slower main path of calls 2-4 the machines or the prefetch's code? One machine,
# alternated, two rounds: main's CLI (c10517d = 4a73cef's code) against d6ec6b0's (the prefetch built in:
# u64 ordered insert 66 registers against 64) with the prefetch on and off, the compare preset.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r6; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
for round in 1 2; do for c in main pfon pfoff; do
  (( SECONDS < 400 )) || { echo "skipped (time): $c r$round"; continue; }
  case $c in main) B=./warpmap-main; unset WARPMAP_PREFETCH;; pfon) B=./warpmap-d6ec6b0; unset WARPMAP_PREFETCH;; pfoff) B=./warpmap-d6ec6b0; export WARPMAP_PREFETCH=off;; esac
  timeout 100 $B bench --preset compare --runs 5 --json $R/compare-$c-r$round.json > $R/compare-$c-r$round.log 2>&1
  echo "$c r$round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$c-r$round.log | grep insert | awk '{printf "%s %s %s; ", $3, $5, $7}')"
done; done
unset WARPMAP_PREFETCH
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
