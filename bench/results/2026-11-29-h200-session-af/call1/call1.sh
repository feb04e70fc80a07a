#!/bin/bash
# Session AF call 1: the peers (cuco static_map, WarpCore single-value, BGHT bcht8/bcht16/iht) built from
# source with CUDA 13.0 beside warpmap's compare preset (ae602e7), on this H200.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r1; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
for p in cuco warpcore selftest; do timeout 40 ./peers/$p-bench 20 1 u32,u64 0.5,0.95 > $R/smoke-$p.log 2>&1 || timeout 40 ./peers/$p 20 1 u32,u64 0.5,0.95 > $R/smoke-$p.log 2>&1; echo "smoke $p rc=$? $(grep -c verified $R/smoke-$p.log) verified $(grep -c FAILED $R/smoke-$p.log) failed [$((SECONDS-S)) s]"; done
for v in bcht8 bcht16 iht; do timeout 60 ./peers/bght-bench 20 1 u32,u64 0.5,0.95 $v > $R/smoke-bght-$v.log 2>&1; echo "smoke bght $v rc=$? $(grep -c verified $R/smoke-bght-$v.log) verified $(grep -c FAILED $R/smoke-bght-$v.log) failed [$((SECONDS-S)) s]"; done
timeout 200 ./warpmap bench --preset compare --runs 5 --json $R/compare.json > $R/compare.log 2>&1; echo "compare rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/compare.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
for p in cuco warpcore; do timeout 100 ./peers/$p-bench 27 5 > $R/peer-$p.log 2>&1; echo "peer $p rc=$? [$((SECONDS-S)) s]"; grep '^peer' $R/peer-$p.log | awk '{printf "%s %s %s %s %s; ", $3, $4, $5, $6, $8}'; echo; done
for v in bcht8 bcht16 iht; do timeout 100 ./peers/bght-bench 27 5 u32,u64 0.5,0.8,0.9,0.95 $v > $R/peer-bght-$v.log 2>&1; echo "peer bght-$v rc=$? [$((SECONDS-S)) s]"; grep '^peer' $R/peer-bght-$v.log | awk '{printf "%s %s %s %s %s; ", $3, $4, $5, $6, $8}'; echo; done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
