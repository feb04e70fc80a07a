#!/bin/bash
# Session AK call 3: the prepared slack scatter (a table keeps it between batches). The timeline again,
# main's CLI against this one, alternated, then the GPU tests of the touched paths.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r3; mkdir -p $R; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
left() { (( SECONDS < $1 )) || { echo "skipped (time): $2"; return 1; }; }
WARPMAP_TRACE_STREAM=1 timeout 60 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 5 > $R/trace-u64.log 2>&1
echo "trace rc=$?"; grep "insert of 134217728" $R/trace-u64.log | tail -3
for b in warpmap-main warpmap warpmap-main warpmap warpmap-main warpmap; do
  left 200 $b || continue
  n=$b; [ -e $R/ab-$n.json ] && n=$b-r2; [ -e $R/ab-$n.json ] && n=$b-r3
  timeout 100 ./$b bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8 --ops insert --runs 5 --json $R/ab-$n.json > $R/ab-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-$n.log | awk '{printf "%s %s; ", $5, $7}')"
done
export WARPMAP_REQUIRE_GPU=1
t() { # label binary [env...]
  local l=$1 b=$2; shift 2
  left 470 "$l" || return
  env "$@" timeout 150 ./h/$b > $R/$l.log 2>&1; echo "$l rc=$? $(grep 'test result' $R/$l.log | tr '\n' ' ') [$((SECONDS-S)) s]"
  grep -E "panicked|FAILED|failed" $R/$l.log | head -5
}
t multisplit multisplit
t locality locality
t reduce reduce
t contract contract WARPMAP_TEST_SCHEMES=warpdrive
left 520 memcheck && { WARPMAP_SANITIZER=1 timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 ./h/multisplit slack > $R/memcheck-ms.log 2>&1; echo "memcheck multisplit slack rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-ms.log | tr '\n' ' ') [$((SECONDS-S)) s]"; }
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
