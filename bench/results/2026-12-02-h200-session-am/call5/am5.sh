#!/bin/bash
# Session AM call 5: the insert's stretch rule again (WARPMAP_INSERT_STRETCH=5/16, a lead of session
# AL call 3) against the default, the compare preset's inserts alternated, three rounds; then the
# parts of u64 pairs at 0.5 (WARPMAP_LOCALITY_PARTS), two rounds.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r5; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
c() { # label stretch
  left 400 $1 || return
  local n=$1; [ -e $R/compare-$n.json ] && n=$1-r2; [ -e $R/compare-$n.json ] && n=$1-r3
  if [ -n "$2" ]; then export WARPMAP_INSERT_STRETCH=$2; else unset WARPMAP_INSERT_STRETCH; fi
  timeout 100 ./warpmap bench --preset compare --ops insert --runs 5 --json $R/compare-$n.json > $R/compare-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$n.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
  unset WARPMAP_INSERT_STRETCH
}
for r in 1 2 3; do c base; c s5of16 5/16; done
for r in 1 2; do for p in 128 160 192 224 256; do
  left 480 p$p || continue
  WARPMAP_LOCALITY_PARTS=$p timeout 40 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 5 > $R/parts$p-r$r.log 2>&1
  echo "parts $p r$r rc=$? $(grep -E '^warpdrive' $R/parts$p-r$r.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
done; done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
