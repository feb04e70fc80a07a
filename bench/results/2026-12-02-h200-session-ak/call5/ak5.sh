#!/bin/bash
# Session AK call 5 (832b4af): the tests of the last commit (multisplit, locality), ncu of the slack
# scatter and the ordered insert at the bench's clocks (u64 pairs at load 0.5), then the compare preset
# of main's CLI (warpmap-main, 3403b76's tree = 10d8222's code) and 832b4af's side by side, alternated.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r5; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
export WARPMAP_REQUIRE_GPU=1
for t in multisplit locality; do
  timeout 150 ./h/$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
  grep -E "panicked|FAILED" $R/$t.log | head -5
done
unset WARPMAP_REQUIRE_GPU
for b in warpmap-main warpmap warpmap-main warpmap; do
  left 300 $b || continue
  n=$b; [ -e $R/compare-$n.json ] && n=$b-r2
  timeout 120 ./$b bench --preset compare --runs 5 --json $R/compare-$n.json > $R/compare-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$n.log | awk '{printf "%s %s %s; ", $5, $6, $7}')"
done
left 420 ncu && timeout 170 ncu --clock-control none -k regex:"multisplit_slack_scatter|warpdrive_insert_ordered" -c 2 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
  ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu.txt 2>&1
echo "ncu rc=$? [$((SECONDS-S)) s]"; grep -E "^  [a-z_]+|Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy" $R/ncu.txt | head -30
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
