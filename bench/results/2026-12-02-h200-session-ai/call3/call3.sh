#!/bin/bash
# Session AI call 3: the module memo under WARPMAP_KERNEL_DIR (keyed by the directory). The new CLI's
# embedded kernels against HEAD's kernel files through WARPMAP_KERNEL_DIR (the same text): should now be
# equal (calls 1-2: 3-4 % apart without the memo); GPU tests of the host change; the compare preset.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r3; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
for round in 1 2; do for v in embedded base; do
  left 300 "$v r$round" || continue
  if [ $v = embedded ]; then unset WARPMAP_KERNEL_DIR; else export WARPMAP_KERNEL_DIR=$PWD/variants/base; fi
  timeout 100 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 5 --json $R/ins-$v-r$round.json > $R/ins-$v-r$round.log 2>&1
  echo "$v r$round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ins-$v-r$round.log | awk '{printf "%s %s; ", $5, $7}')"
done; done
unset WARPMAP_KERNEL_DIR
export WARPMAP_REQUIRE_GPU=1
for t in locality multisplit reduce; do
  left 420 "$t" || continue
  timeout 150 ./h/$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
left 420 "locality dir" && { WARPMAP_KERNEL_DIR=$PWD/variants/base timeout 150 ./h/locality > $R/locality-dir.log 2>&1; echo "locality (kernel dir) rc=$? $(grep 'test result' $R/locality-dir.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
left 470 "contract" && { WARPMAP_TEST_SCHEMES=warpdrive timeout 120 ./h/contract > $R/contract.log 2>&1; echo "contract (warpdrive) rc=$? $(grep 'test result' $R/contract.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
unset WARPMAP_REQUIRE_GPU
left 540 "compare" && { timeout 60 ./warpmap bench --preset compare --runs 5 --json $R/compare.json > $R/compare.log 2>&1; echo "compare rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare.log | awk '{printf "%s %s %s; ", $5, $6, $7}')"; }
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
