#!/bin/bash
# Session AD call 2: what a split into fine parts (two counting passes) costs for u64 pairs at load 0.5 (ncu, bench clocks).
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r2; mkdir -p $R; S=$SECONDS
for p in 128 1024 16384 65536; do
  WARPMAP_LOCALITY_PARTS=$p timeout 90 ncu --clock-control none --kernel-name regex:"multisplit|warpdrive_insert" --metrics gpu__time_duration.sum ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-parts$p.txt 2>&1; echo "parts $p rc=$? [$((SECONDS-S)) s]"
  awk '/^  [a-z_]+ \(/{k=$1} /gpu__time_duration.sum/{print "   ", k, $NF}' $R/ncu-parts$p.txt
done
for p in 128 65536; do WARPMAP_LOCALITY_PARTS=$p timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5 --ops insert --runs 3 > $R/w$p.log 2>&1; echo "parts $p $(grep -E '^warpdrive' $R/w$p.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"; done
tar czf $OUT/r.tar.gz -C $R .
