#!/bin/bash
# Session AJ call 1: the split with slack (no count) for the partitioned insert. GPU tests (three ways
# for locality: default = slack, WARPMAP_LOCALITY_PARTS=64 so small tables split into many parts and
# regions overflow, WARPMAP_SLACK_SPLIT=0 = the counting split as before), memcheck of the new paths,
# then inserts with the counting split (off) against the slack split (on), alternated.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r1; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
export WARPMAP_REQUIRE_GPU=1
t() { # label binary [env...]
  local l=$1 b=$2; shift 2
  left 330 "$l" || return
  env "$@" timeout 150 ./h/$b > $R/$l.log 2>&1; echo "$l rc=$? $(grep 'test result' $R/$l.log | tr '\n' ' ') [$((SECONDS-S)) s]"
  grep -E "panicked|FAILED|failed" $R/$l.log | head -5
}
t multisplit multisplit
t locality locality
t locality-parts64 locality WARPMAP_LOCALITY_PARTS=64
t locality-counting locality WARPMAP_SLACK_SPLIT=0
t reduce reduce
t reduce-parts64 reduce WARPMAP_LOCALITY_PARTS=64
t contract contract WARPMAP_TEST_SCHEMES=warpdrive
left 360 memcheck && { WARPMAP_SANITIZER=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 ./h/multisplit slack > $R/memcheck-ms.log 2>&1; echo "memcheck multisplit slack rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-ms.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
left 390 memcheck2 && { WARPMAP_LOCALITY_PARTS=64 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 ./h/locality copies_race > $R/memcheck-loc.log 2>&1; echo "memcheck locality copies_race parts64 rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-loc.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
unset WARPMAP_REQUIRE_GPU
ins() { # label loads [env...]
  local l=$1 lf=$2; shift 2
  left 560 "$l" || return
  env "$@" timeout 100 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors $lf --ops insert --runs 5 --json $R/ins-$l.json > $R/ins-$l.log 2>&1
  echo "$l rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ins-$l.log | awk '{printf "%s %s; ", $5, $7}')"
}
ins off-r1 0.5,0.8,0.9,0.95 WARPMAP_SLACK_SPLIT=0
ins on-r1 0.5,0.8,0.9,0.95
ins on-r2 0.5,0.8
ins off-r2 0.5,0.8 WARPMAP_SLACK_SPLIT=0
ins on-r3 0.5
ins off-r3 0.5 WARPMAP_SLACK_SPLIT=0
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
