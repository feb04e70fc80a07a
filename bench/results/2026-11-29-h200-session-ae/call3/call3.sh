#!/bin/bash
# Session AE call 3 (CLI and tests of 7b4e441, clean: the review refactor of session AD, never run on the GPU):
# tests and memcheck; the ordered insert's rounds per tile (WARPMAP_ORDERED_ROUNDS 2 / 4 / 8) at u64 and u32;
# the compare preset at 7b4e441.
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r3; mkdir -p $R/t; S=$SECONDS
export WARPMAP_REQUIRE_GPU=1
for t in multisplit locality two_level sharded dycuckoo reduce ops; do
  timeout 90 ./$t > $R/t/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
WARPMAP_TEST_SCHEMES=warpdrive timeout 150 ./contract > $R/t/contract.log 2>&1; echo "contract(warpdrive) rc=$? $(grep 'test result' $R/t/contract.log | tr '\n' ' ') [$((SECONDS-S)) s]"
timeout 100 compute-sanitizer --tool memcheck ./multisplit > $R/t/memcheck-multisplit.log 2>&1; echo "memcheck multisplit rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck-multisplit.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
for round in 1 2; do for r in 4 2 8; do
  WARPMAP_ORDERED_ROUNDS=$r timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8 --ops insert --runs 3 --json $R/ins-r$r-$round.json > $R/w.log 2>&1; echo "rounds $r rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
WARPMAP_LOCALITY=off timeout 90 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 5 --json $R/ins-input-order.json > $R/w.log 2>&1; echo "input order rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
timeout 200 ./warpmap bench --preset compare --runs 5 --json $R/compare.json > $R/compare.log 2>&1; echo "compare rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/compare.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
rm -f $R/*.svg $R/w.log; tar czf $OUT/r.tar.gz -C $R .
