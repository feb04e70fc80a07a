#!/bin/bash
# Session AJ call 3: 33ebc60's CLI (base) beside bad4d1d's (new) on one machine (is the u32 deep cells'
# drop the host or the machine?); the split's knobs again under the slack split (u64/u32 at 0.5);
# the compare preset of bad4d1d. lb2 = the slack scatter with __launch_bounds__(512, 2) (two blocks a SM
# with STAGE_KB=48: 5 items a thread for u64 pairs).
cd "$(dirname "$0")"
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r3; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
ins() { # label cli loads [env...]
  local l=$1 c=$2 lf=$3; shift 3
  left 400 "$l" || return
  env "$@" timeout 100 ./$c bench --keys-log2 27 --types u64,u32 --load-factors $lf --ops insert --runs 5 --json $R/ins-$l.json > $R/ins-$l.log 2>&1
  echo "$l rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ins-$l.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
}
ins base-r1 warpmap-base 0.5,0.8,0.9,0.95
ins new-r1 warpmap 0.5,0.8,0.9,0.95
ins base-r2 warpmap-base 0.5,0.8,0.9,0.95
ins new-r2 warpmap 0.5,0.8,0.9,0.95
for r in 1 2; do
  ins p256-r$r warpmap 0.5 WARPMAP_LOCALITY_PARTS=256
  ins p64-r$r warpmap 0.5 WARPMAP_LOCALITY_PARTS=64
  ins b1024-r$r warpmap 0.5 WARPMAP_MULTISPLIT_BLOCK=1024
  ins b256s48-r$r warpmap 0.5 WARPMAP_MULTISPLIT_BLOCK=256 WARPMAP_MULTISPLIT_STAGE_KB=48
  ins lb2s48-r$r warpmap 0.5 WARPMAP_KERNEL_DIR=$PWD/variants/lb2 WARPMAP_MULTISPLIT_STAGE_KB=48
  ins def-r$r warpmap 0.5
done
left 500 compare && { timeout 90 ./warpmap bench --preset compare --runs 5 --json $R/compare.json > $R/compare.log 2>&1; echo "compare rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"; }
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
