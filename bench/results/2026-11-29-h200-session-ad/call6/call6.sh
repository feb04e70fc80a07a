#!/bin/bash
# Session AD call 6: the compare preset at 38c6b47 and, in the same call, at 398c29b (before the module memo);
# reduce by key beside insert at 38c6b47.
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf base.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r6; mkdir -p $R; S=$SECONDS
timeout 200 ./warpmap bench --preset compare --runs 5 --json $R/compare-38c6b47.json > $R/compare.log 2>&1; echo "compare rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/compare.log | awk '{printf "%s %s %s %s\n", $3, $5, $6, $7}'
timeout 120 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert,reduce --runs 5 --json $R/reduce.json > $R/reduce.log 2>&1; echo "reduce rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/reduce.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
timeout 200 ./warpmap-base bench --preset compare --runs 5 --json $R/compare-398c29b.json > $R/compare-base.log 2>&1; echo "compare(base) rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/compare-base.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
