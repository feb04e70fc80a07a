#!/bin/bash
# Session AE call 6 (CLI and tests of 9ddfd94: the deep ordered insert for loads 0.75-0.925): tests and memcheck;
# the compare preset; reduce beside insert.
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r6; mkdir -p $R/t; S=$SECONDS
export WARPMAP_REQUIRE_GPU=1
for t in locality multisplit reduce sharded dycuckoo ops; do
  timeout 90 ./$t > $R/t/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
WARPMAP_TEST_SCHEMES=warpdrive timeout 150 ./contract > $R/t/contract.log 2>&1; echo "contract(warpdrive) rc=$? $(grep 'test result' $R/t/contract.log | tr '\n' ' ') [$((SECONDS-S)) s]"
timeout 150 compute-sanitizer --tool memcheck ./locality > $R/t/memcheck-locality.log 2>&1; echo "memcheck locality rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck-locality.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
timeout 200 ./warpmap bench --preset compare --runs 5 --json $R/compare.json > $R/compare.log 2>&1; echo "compare rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/compare.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
timeout 120 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert,reduce --runs 5 --json $R/reduce.json > $R/reduce.log 2>&1; echo "reduce rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/reduce.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
