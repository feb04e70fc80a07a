#!/bin/bash
# Session AD call 5 (CLI and tests of 38c6b47): tests; memcheck of two_level (two-pass splits now through registers);
# the module memo (38c6b47) against 398c29b's CLI; the split's block of 768 (knob); the ordered insert with launch
# bounds for 5 blocks (variant lb5) with the partition forced on.
cd "$(dirname "$0")"; tar xzf mini.tar.gz; tar xzf tests.tar.gz; tar xzf base.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r5; mkdir -p $R/t; S=$SECONDS
export WARPMAP_REQUIRE_GPU=1
for t in multisplit two_level locality sharded dycuckoo reduce ops; do
  timeout 90 ./$t > $R/t/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/t/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
WARPMAP_TEST_SCHEMES=warpdrive timeout 150 ./contract > $R/t/contract.log 2>&1; echo "contract(warpdrive) rc=$? $(grep 'test result' $R/t/contract.log | tr '\n' ' ') [$((SECONDS-S)) s]"
timeout 100 compute-sanitizer --tool memcheck ./two_level > $R/t/memcheck-two_level.log 2>&1; echo "memcheck two_level rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/t/memcheck-two_level.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_REQUIRE_GPU
for round in 1 2; do for v in new base new768; do
  b=./warpmap; d=(); [ $v = base ] && b=./warpmap-base; [ $v = new768 ] && d=(WARPMAP_MULTISPLIT_BLOCK=768)
  env "${d[@]}" timeout 60 $b bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.95 --ops insert --runs 3 --json $R/ins-$v-$round.json > $R/w.log 2>&1; echo "$v rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done; done
for v in on lb5 lb5r3; do
  d=(WARPMAP_LOCALITY=on); [[ $v = lb5* ]] && d+=(WARPMAP_KERNEL_DIR=$PWD/variants/lb5); [ $v = lb5r3 ] && d+=(WARPMAP_ORDERED_ROUNDS=3)
  env "${d[@]}" timeout 60 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8 --ops insert --runs 3 --json $R/occ-$v.json > $R/w.log 2>&1; echo "occ $v rc=$? $(grep -E '^warpdrive' $R/w.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}') [$((SECONDS-S)) s]"; cat $R/w.log >> $R/all.log
done
for v in new new768; do
  d=(); [ $v = new768 ] && d=(WARPMAP_MULTISPLIT_BLOCK=768)
  env "${d[@]}" timeout 80 ./warpmap bench --scheme two_level --preset two-level-compare --runs 3 --json $R/tl-$v.json > $R/l.log 2>&1; echo "tl $v rc=$? $(grep -E '^two_level' $R/l.log | awk '{printf "%s %s %s %s; ", $5, $10, $11, $12}') [$((SECONDS-S)) s]"; cat $R/l.log >> $R/all.log
done
rm -f $R/*.svg $R/w.log $R/l.log; tar czf $OUT/r.tar.gz -C $R .
