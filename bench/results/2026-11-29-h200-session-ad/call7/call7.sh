#!/bin/bash
# Session AD call 7: host-side times of a partitioned insert (a temporary instrumented CLI, 38c6b47 + eprintln
# around insert_partitioned's split and in split_counting; not committed).
cd "$(dirname "$0")"; tar xzf ht.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r7; mkdir -p $R
WARPMAP_HOST_TIMES=1 timeout 60 ./warpmap-ht bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 3 > $R/ht.log 2>&1; echo "rc=$?"; grep -E "^host|^warpdrive" $R/ht.log | tail -14
tar czf $OUT/r.tar.gz -C $R .
