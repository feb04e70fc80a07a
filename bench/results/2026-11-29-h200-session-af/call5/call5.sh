#!/bin/bash
# Session AF call 5: a lost claim takes the next slot seen empty instead of reloading the window
# (WARPMAP_WD_CLAIM_NEXT=1, default) against the reload (=0), same binary; ncu of the ordered insert;
# tests and memcheck; the compare preset.
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r5; mkdir -p $R/t; S=$SECONDS
for round in 1 2; do for c in 0 1; do
  WARPMAP_WD_CLAIM_NEXT=$c timeout 100 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert,find_hit --runs 5 --json $R/ab-c$c-r$round.json > $R/ab-c$c-r$round.log 2>&1
  echo "claim_next=$c round $round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-c$c-r$round.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done; done
for c in 0 1; do
  WARPMAP_WD_CLAIM_NEXT=$c timeout 60 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_requests_srcunit_tex_op_atom.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_requests_srcunit_ltcfabric.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-c$c.log 2>&1
  echo "ncu claim_next=$c rc=$?"; grep -E "^\s+(lts|gpu)__" $R/ncu-c$c.log
done
export WARPMAP_REQUIRE_GPU=1
for t in locality multisplit reduce sharded two_level; do
  timeout 120 ./$t > $R/t/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
WARPMAP_TEST_SCHEMES=warpdrive timeout 150 ./contract > $R/t/contract.log 2>&1; echo "contract(warpdrive) rc=$? $(grep 'test result' $R/t/contract.log | tr '\n' ' ') [$((SECONDS-S)) s]"
timeout 150 compute-sanitizer --tool memcheck ./locality > $R/t/memcheck-locality.log 2>&1; echo "memcheck locality rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck-locality.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
timeout 200 ./warpmap bench --preset compare --runs 5 --json $R/compare.json > $R/compare.log 2>&1; echo "compare rc=$? [$((SECONDS-S)) s]"; grep -E '^warpdrive' $R/compare.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}'; echo
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
