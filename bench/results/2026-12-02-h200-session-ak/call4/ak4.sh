#!/bin/bash
# Session AK call 4: GPU tests of the prepared scatter and Launch::opt_buf (multisplit, locality, reduce,
# contract on WarpDrive, sharded, ops; memcheck), the timeline at 128-1024 parts, then the compare
# preset of main's CLI (warpmap-main) and this one side by side, alternated.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h; tar xzf bins.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r4; mkdir -p $R; S=$SECONDS
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
for P in 128 256 512 1024; do
  left 330 parts$P || continue
  WARPMAP_LOCALITY_PARTS=$P WARPMAP_TRACE_STREAM=1 timeout 60 ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 3 > $R/trace-parts$P.log 2>&1
  echo "parts $P rc=$? $(grep -E '^warpdrive' $R/trace-parts$P.log | awk '{printf "%s %s; ", $5, $7}')"; grep "insert of 134217728" $R/trace-parts$P.log | tail -1
done
for b in warpmap-main warpmap; do
  left 480 $b || continue
  n=$b; [ -e $R/compare-$n.json ] && n=$b-r2
  timeout 120 ./$b bench --preset compare --runs 5 --json $R/compare-$n.json > $R/compare-$n.log 2>&1
  echo "$n rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/compare-$n.log | awk '{printf "%s %s %s; ", $5, $6, $7}')"
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
