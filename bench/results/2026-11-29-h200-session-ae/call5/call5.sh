#!/bin/bash
# Session AE call 5 (working tree on 7b4e441: the deep ordered insert, 6 rounds a tile where a batch leaves the
# table at least 0.75 full): tests and memcheck; inserts and the compare preset with the deep insert at 4 rounds
# (WARPMAP_ORDERED_ROUNDS_DEEP=4: the plain kernel's tiles, as 7b4e441) and at its default 6, alternating.
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r5; mkdir -p $R/t; S=$SECONDS
export WARPMAP_REQUIRE_GPU=1
for t in locality reduce sharded ops; do
  timeout 90 ./$t > $R/t/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
WARPMAP_TEST_SCHEMES=warpdrive timeout 150 ./contract > $R/t/contract.log 2>&1; echo "contract(warpdrive) rc=$? $(grep 'test result' $R/t/contract.log | tr '\n' ' ') [$((SECONDS-S)) s]"
timeout 150 compute-sanitizer --tool memcheck ./locality > $R/t/memcheck-locality.log 2>&1; echo "memcheck locality rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck-locality.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
for round in 1 2; do for v in r4 r6; do
  WARPMAP_ORDERED_ROUNDS_DEEP=${v#r} timeout 200 ./warpmap bench --preset compare --runs 5 --json $R/compare-$v-$round.json > $R/w.log 2>&1; echo "compare $v rc=$? $(grep -E '^warpdrive' $R/w.log | grep insert | awk '{printf "%s %s %s; ", $3, $5, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
timeout 120 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert,reduce --runs 5 --json $R/reduce.json > $R/reduce.log 2>&1; echo "reduce rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/reduce.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
rm -f $R/*.svg $R/w.log; tar czf $OUT/r.tar.gz -C $R .
