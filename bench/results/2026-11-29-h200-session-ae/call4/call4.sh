#!/bin/bash
# Session AE call 4 (CLI of 7b4e441): the ordered insert's rounds per tile (WARPMAP_ORDERED_ROUNDS) with the
# partition forced on (WARPMAP_LOCALITY=on: the plan's span rule declines 8 rounds at u64 0.5 / 0.8 and u32 0.5).
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r4; mkdir -p $R; S=$SECONDS
for round in 1 2; do for v in auto4 on4 on6 on8 on12 on16; do
  r=${v#auto}; r=${r#on}; l=on; [ ${v#auto} != $v ] && l=auto
  WARPMAP_ORDERED_ROUNDS=$r WARPMAP_LOCALITY=$l timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 3 --json $R/ins-$v-$round.json > $R/w.log 2>&1; echo "$v rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s; ", $3, $5, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
rm -f $R/*.svg $R/w.log; tar czf $OUT/r.tar.gz -C $R .
