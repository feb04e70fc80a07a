#!/bin/bash
# Session AD call 8 (CLI and tests of a26313c: the count launched before the split's outputs are allocated):
# tests; the inserts against 38c6b47's CLI, three rounds; the compare preset and reduce at a26313c.
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz; tar xzf b2.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r8; mkdir -p $R/t; S=$SECONDS
export WARPMAP_REQUIRE_GPU=1
for t in multisplit two_level locality sharded dycuckoo reduce ops; do
  timeout 90 ./$t > $R/t/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
WARPMAP_TEST_SCHEMES=warpdrive timeout 150 ./contract > $R/t/contract.log 2>&1; echo "contract(warpdrive) rc=$? $(grep 'test result' $R/t/contract.log | tr '\n' ' ') [$((SECONDS-S)) s]"
timeout 100 compute-sanitizer --tool memcheck ./multisplit > $R/t/memcheck-multisplit.log 2>&1; echo "memcheck multisplit rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck-multisplit.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
for round in 1 2 3; do for v in new b2; do
  b=./warpmap; [ $v = b2 ] && b=./warpmap-b2
  timeout 60 $b bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.95 --ops insert,find_hit --runs 3 --json $R/ins-$v-$round.json > $R/w.log 2>&1; echo "$v rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
timeout 200 ./warpmap bench --preset compare --runs 5 --json $R/compare-new.json > $R/compare.log 2>&1; echo "compare rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/compare.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
timeout 120 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert,reduce --runs 5 --json $R/reduce.json > $R/reduce.log 2>&1; echo "reduce rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/reduce.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
timeout 80 ./warpmap bench --scheme two_level --preset two-level-compare --runs 3 --json $R/tl.json > $R/l.log 2>&1; echo "tl rc=$? $(grep -E '^two_level' $R/l.log | grep insert | awk '{printf "%s %s %s; ", $5, $10, $12}') [$((SECONDS-S)) s]"
rm -f $R/*.svg $R/w.log; tar czf $OUT/r.tar.gz -C $R .
