#!/bin/bash
# Session AM call 3: the fresh build's cleared lines kept in L2 (variant evl: the clear's stores
# under an evict_last policy; evl2: also the ordered inserts' pairs read under evict_first), ncu of
# u64 pairs at 0.5, then inserts timed (u64, u32 at 0.5) for base / evl2, build off and on.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r3; mkdir -p $R; S=$SECONDS
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
n() { # label variant fresh stretch
  if [ -n "$2" ]; then export WARPMAP_KERNEL_DIR=$PWD/variants/$2; else unset WARPMAP_KERNEL_DIR; fi
  export WARPMAP_FRESH_BUILD=$3
  if [ -n "$4" ]; then export WARPMAP_INSERT_STRETCH=$4; else unset WARPMAP_INSERT_STRETCH; fi
  timeout 90 ncu --clock-control none -k regex:"warpdrive_insert_(ordered|fresh|deferred)" -c 2 --metrics $M \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-$1.txt 2>&1
  echo "ncu $1 rc=$? [$((SECONDS-S)) s] $(grep -E "^  [a-z_]+|gpu__time|dram__bytes|hit_rate" $R/ncu-$1.txt | head -10 | awk '{printf "%s %s %s | ", $1, $2, $3}')"
  unset WARPMAP_INSERT_STRETCH WARPMAP_FRESH_BUILD WARPMAP_KERNEL_DIR
}
n evl evl 1; n evl-s1of4 evl 1 1/4; n evl2-s1of4 evl2 1 1/4; n evl2-off evl2 0
b() { # label variant fresh stretch
  if [ -n "$2" ]; then export WARPMAP_KERNEL_DIR=$PWD/variants/$2; else unset WARPMAP_KERNEL_DIR; fi
  export WARPMAP_FRESH_BUILD=$3
  if [ -n "$4" ]; then export WARPMAP_INSERT_STRETCH=$4; else unset WARPMAP_INSERT_STRETCH; fi
  local n=$1; [ -e $R/b-$n.log ] && n=$1-r2
  timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5 --ops insert --runs 5 > $R/b-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/b-$n.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
  unset WARPMAP_INSERT_STRETCH WARPMAP_FRESH_BUILD WARPMAP_KERNEL_DIR
}
for r in 1 2; do b off "" 0; b evl2-off evl2 0; b evl-s1of4 evl 1 1/4; b evl2-s1of4 evl2 1 1/4; done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
