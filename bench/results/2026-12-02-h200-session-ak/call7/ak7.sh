#!/bin/bash
# Session AK call 7: DIAGNOSTIC, the slack scatter writing {key, value} pairs (one 16-byte shared store and
# one 16-byte global store a pair; the output's meaning is wrong on purpose, so the inserts after it are
# garbage: only the scatter's ncu time counts), against the embedded scatter. u64 pairs at load 0.5.
cd "$(dirname "$0")"; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r7; mkdir -p $R
for v in base pairs base pairs; do
  n=$v; [ -e $R/ncu-$n.txt ] && n=$v-r2
  if [ $v = pairs ]; then export WARPMAP_KERNEL_DIR=$PWD/kP; else unset WARPMAP_KERNEL_DIR; fi
  timeout 120 ncu --clock-control none -k regex:multisplit_slack_scatter -c 1 --section SpeedOfLight --section WarpStateStats \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$n.txt 2>&1
  echo "$n rc=$? $(grep -E 'Duration|L2 Cache Throughput|DRAM Throughput|Warp Cycles Per Issued' $R/ncu-$n.txt | awk '{printf "%s %s; ", $1, $NF}')"
done
unset WARPMAP_KERNEL_DIR
tar czf $OUT/r.tar.gz -C $R .
