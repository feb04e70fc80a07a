#!/bin/bash
# Session AL call 3: the insert's stretch rule. The compare preset with the plan's parts as today
# (a power of two, stretches <= 9/16 of L2) and with WARPMAP_INSERT_STRETCH=3/8 and 5/16 (as many
# parts as that takes), alternated; the locality tests under the 3/8 rule; timelines at u64 0.5.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r3; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
WARPMAP_REQUIRE_GPU=1 WARPMAP_INSERT_STRETCH=3/8 timeout 100 ./h/locality > $R/locality-3of8.log 2>&1; echo "locality (3/8) rc=$? $(grep 'test result' $R/locality-3of8.log) [$((SECONDS-S)) s]"
c() { # label stretch
  left 470 $1 || return
  local n=$1; [ -e $R/compare-$n.json ] && n=$1-r2
  if [ -n "$2" ]; then export WARPMAP_INSERT_STRETCH=$2; else unset WARPMAP_INSERT_STRETCH; fi
  timeout 100 ./warpmap bench --preset compare --ops insert --runs 5 --json $R/compare-$n.json > $R/compare-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$n.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
  unset WARPMAP_INSERT_STRETCH
}
for r in 1 2; do c pow2; c s3of8 3/8; c s5of16 5/16; done
for f in "" 3/8 5/16; do
  left 540 trace$f || continue
  WARPMAP_INSERT_STRETCH=$f WARPMAP_TRACE_STREAM=1 timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8 --ops insert --runs 3 > $R/trace${f/\//of}.log 2>&1
  echo "trace '$f' rc=$?"; grep -E "insert of 134217728" $R/trace${f/\//of}.log | awk 'NR%3==0'
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
