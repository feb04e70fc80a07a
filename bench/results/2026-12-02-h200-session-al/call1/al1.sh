#!/bin/bash
# Session AL call 1: GPU tests of the slack split's pairs layout (multisplit, locality, reduce, sharded,
# ops, contract on WarpDrive; memcheck of the slack tests), then inserts of main's CLI (warpmap-main,
# 1371e8f) and this one with pairs off (WARPMAP_SLACK_PAIRS=0) and on, alternated, then ncu of the
# scatter and the ordered insert (u64 pairs at 0.5) with pairs off and on.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r1; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
export WARPMAP_REQUIRE_GPU=1
t() { # label binary [env...]
  local l=$1 b=$2; shift 2
  left 250 "$l" || return
  env "$@" timeout 150 ./h/$b > $R/$l.log 2>&1; echo "$l rc=$? $(grep 'test result' $R/$l.log | tr '\n' ' ') [$((SECONDS-S)) s]"
  grep -E "panicked|FAILED|failed" $R/$l.log | head -5
}
t multisplit multisplit
t locality locality
t reduce reduce
t sharded sharded
t ops ops
t contract contract WARPMAP_TEST_SCHEMES=warpdrive
left 280 memcheck && { WARPMAP_SANITIZER=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 ./h/multisplit slack > $R/memcheck-ms.log 2>&1; echo "memcheck multisplit slack rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-ms.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
unset WARPMAP_REQUIRE_GPU
run() { # name binary pairs
  left 470 $1 || return
  local n=$1; [ -e $R/ab-$n.json ] && n=$1-r2; [ -e $R/ab-$n.json ] && n=$1-r3
  WARPMAP_SLACK_PAIRS=$3 timeout 60 ./$2 bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert --runs 5 --json $R/ab-$n.json > $R/ab-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-$n.log | awk '{printf "%s %s %s; ", $3, $5, $7}')"
}
for r in 1 2; do run main warpmap-main 1; run cols warpmap 0; run pairs warpmap 1; done
for p in 0 1; do
  left 540 ncu$p || continue
  WARPMAP_SLACK_PAIRS=$p timeout 60 ncu --clock-control none -k regex:"multisplit_slack_scatter|warpdrive_insert_ordered" -c 2 \
    --section SpeedOfLight --section WarpStateStats --section LaunchStats \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-pairs$p.txt 2>&1
  echo "ncu pairs=$p rc=$? [$((SECONDS-S)) s]"; grep -E "^  [a-z_]+|Duration|Registers Per" $R/ncu-pairs$p.txt | head -10
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
