#!/bin/bash
# Session AF call 4: tests of a4230b5 (host and kernel code = ae602e7, which had not run on the GPU); the split's
# cost by parts (u64 pairs at load 0.5, ncu); the region-insert probe (bench/probes/region_insert.cu).
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r4; mkdir -p $R/t; S=$SECONDS
export WARPMAP_REQUIRE_GPU=1
for t in locality multisplit reduce sharded dycuckoo ops two_level; do
  timeout 120 ./$t > $R/t/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
WARPMAP_TEST_SCHEMES=warpdrive timeout 150 ./contract > $R/t/contract.log 2>&1; echo "contract(warpdrive) rc=$? $(grep 'test result' $R/t/contract.log | tr '\n' ' ') [$((SECONDS-S)) s]"
timeout 150 compute-sanitizer --tool memcheck ./locality > $R/t/memcheck-locality.log 2>&1; echo "memcheck locality rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck-locality.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
for p in 128 1024 2048; do
  WARPMAP_LOCALITY_PARTS=$p timeout 60 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 3 > $R/parts-$p.log 2>&1
  echo "parts $p: $(grep -E '^warpdrive' $R/parts-$p.log | awk '{printf "%s %s %s; ", $5, $6, $7}') [$((SECONDS-S)) s]"
  WARPMAP_LOCALITY_PARTS=$p timeout 60 ncu --clock-control none --kernel-name regex:multisplit -c 12 --metrics gpu__time_duration.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-parts-$p.log 2>&1
  grep -E "multisplit_|gpu__time" $R/ncu-parts-$p.log | paste - - | awk '{print $1, $(NF)}' | tail -6 | tr '\n' ';'; echo
done
if [ -x probes/region_insert ]; then
  for args in "27 0.5,0.8,0.9 1024 16 1024" "27 0.5 2048 16 1024" "27 0.5,0.8 2048 8 1024" "27 0.5 2048 16 512" "27 0.5 4096 8 512"; do
    timeout 120 ./probes/region_insert $args > $R/probe-$(echo $args | tr ' ,' '_-').log 2>&1; echo "probe $args rc=$? [$((SECONDS-S)) s]"; tail -25 $R/probe-$(echo $args | tr ' ,' '_-').log
  done
fi
tar czf $OUT/r.tar.gz -C $R .
