#!/bin/bash
# Session AG call C: tests of 024ac00 (sides off by default; locality also with WARPMAP_L2_SIDES=on), memcheck of the
# sided locality tests, the compare preset.
cd "$(dirname "$0")"; tar xzf tests.tar.gz; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/rC; mkdir -p $R/t; S=$SECONDS
export WARPMAP_REQUIRE_GPU=1
timeout 60 ./locality l2_sides --nocapture > $R/t/l2.log 2>&1; echo "l2 sides rc=$? [$((SECONDS-S)) s]"; grep -E "L2 sides of|granules on side|test result" $R/t/l2.log
timeout 150 ./locality > $R/t/locality.log 2>&1; echo "locality rc=$? $(grep 'test result' $R/t/locality.log | tr '\n' ' ') [$((SECONDS-S)) s]"
WARPMAP_L2_SIDES=on timeout 150 ./locality > $R/t/locality-on.log 2>&1; echo "locality (sides on) rc=$? $(grep 'test result' $R/t/locality-on.log | tr '\n' ' ') [$((SECONDS-S)) s]"
for t in reduce sharded multisplit; do
  timeout 120 ./$t > $R/t/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
WARPMAP_L2_SIDES=on timeout 120 ./sharded > $R/t/sharded-on.log 2>&1; echo "sharded (sides on) rc=$? $(grep 'test result' $R/t/sharded-on.log | tr '\n' ' ') [$((SECONDS-S)) s]"
WARPMAP_TEST_SCHEMES=warpdrive timeout 150 ./contract > $R/t/contract.log 2>&1; echo "contract(warpdrive) rc=$? $(grep 'test result' $R/t/contract.log | tr '\n' ' ') [$((SECONDS-S)) s]"
WARPMAP_L2_SIDES=on timeout 200 compute-sanitizer --tool memcheck ./locality > $R/t/memcheck-locality-on.log 2>&1; echo "memcheck locality (sides on) rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck-locality-on.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
timeout 200 ./warpmap bench --preset compare --runs 5 --json $R/compare.json > $R/compare.log 2>&1; echo "compare rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/compare.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
