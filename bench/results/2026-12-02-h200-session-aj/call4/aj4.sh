#!/bin/bash
# Session AJ call 4: wm_bulk back within 128 bytes (at 136 the ordered inserts took 6 registers more:
# u32 deep inserts 9 % slower in call 3). GPU tests of this tree; 33ebc60's CLI (base) against this
# one (new), alternated; reduce beside insert; the compare preset.
cd "$(dirname "$0")"; rm -rf h; mkdir -p h; tar xzf tests.tar.gz -C h
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r4; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
export WARPMAP_REQUIRE_GPU=1
t() { local l=$1 b=$2; shift 2; left 300 "$l" || return
  env "$@" timeout 150 ./h/$b > $R/$l.log 2>&1; echo "$l rc=$? $(grep 'test result' $R/$l.log | tr '\n' ' ') [$((SECONDS-S)) s]"; grep -E "panicked|FAILED" $R/$l.log | head -5; }
t multisplit multisplit
t locality locality
t locality-parts64 locality WARPMAP_LOCALITY_PARTS=64
t locality-counting locality WARPMAP_SLACK_SPLIT=0
t reduce reduce
t contract contract WARPMAP_TEST_SCHEMES=warpdrive
left 330 memcheck && { WARPMAP_LOCALITY_PARTS=64 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 ./h/locality one_key > $R/memcheck-loc.log 2>&1; echo "memcheck locality one_key parts64 rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-loc.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
unset WARPMAP_REQUIRE_GPU
ins() { local l=$1 c=$2 lf=$3; shift 3; left 420 "$l" || return
  env "$@" timeout 100 ./$c bench --keys-log2 27 --types u64,u32 --load-factors $lf --ops insert --runs 5 --json $R/ins-$l.json > $R/ins-$l.log 2>&1
  echo "$l rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ins-$l.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"; }
ins base-r1 warpmap-base 0.5,0.8,0.9,0.95
ins new-r1 warpmap 0.5,0.8,0.9,0.95
ins base-r2 warpmap-base 0.5,0.8,0.9,0.95
ins new-r2 warpmap 0.5,0.8,0.9,0.95
ins newoff-r1 warpmap 0.5,0.8,0.9,0.95 WARPMAP_SLACK_SPLIT=0
left 470 reduce && { timeout 100 ./warpmap bench --scheme warpdrive --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert,reduce --runs 3 --json $R/reduce.json > $R/reduce.log 2>&1; echo "reduce rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/reduce.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"; }
left 530 compare && { timeout 80 ./warpmap bench --preset compare --runs 5 --json $R/compare.json > $R/compare.log 2>&1; echo "compare rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"; }
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
