#!/bin/bash
# Session AG call H: the locality tests of 7a5a7ac: default, with made-up sides (WARPMAP_L2_SIDES=synthetic), with
# measured sides (=on), and memcheck with made-up sides (the sided walk under the sanitizer).
cd "$(dirname "$0")"
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_REQUIRE_GPU=1
R=/tmp/rH; mkdir -p $R; S=$SECONDS
timeout 60 ./h/locality l2_sides --nocapture > $R/l2.log 2>&1; echo "l2 sides rc=$? [$((SECONDS-S)) s]"; grep -E "L2 sides of|granules on side|test result" $R/l2.log
for m in default synthetic on; do
  if [ $m = default ]; then unset WARPMAP_L2_SIDES; else export WARPMAP_L2_SIDES=$m; fi
  timeout 150 ./h/locality > $R/locality-$m.log 2>&1; echo "locality ($m) rc=$? $(grep 'test result' $R/locality-$m.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
export WARPMAP_L2_SIDES=synthetic
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 ./h/locality > $R/memcheck-synthetic.log 2>&1; echo "memcheck locality (synthetic sides) rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-synthetic.log | tr '\n' ' ') [$((SECONDS-S)) s]"
unset WARPMAP_L2_SIDES
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 ./h/locality l2_sides > $R/memcheck-l2.log 2>&1; echo "memcheck l2 tests rc=$? $(grep -E 'ERROR SUMMARY|test result' $R/memcheck-l2.log | tr '\n' ' ') [$((SECONDS-S)) s]"
tar czf $OUT/r.tar.gz -C $R .
