#!/bin/bash
# Session AK call 6: racecheck (shared-memory hazards) and synccheck of the slack scatter's tests.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_REQUIRE_GPU=1 WARPMAP_SANITIZER=1
R=/tmp/r6; mkdir -p $R; S=$SECONDS
for tool in racecheck synccheck; do
  timeout 250 compute-sanitizer --tool $tool --error-exitcode 9 ./h/multisplit slack > $R/$tool-ms.log 2>&1
  echo "$tool multisplit slack rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test result' $R/$tool-ms.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
tar czf $OUT/r.tar.gz -C $R .
