#!/bin/bash
# Session AH call 5: the contract tests (call 4's filter matched none) on WarpDrive, then on the
# schemes whose inserts go through the changed multisplit (two_level, dycuckoo), same binaries as call 4.
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_REQUIRE_GPU=1
R=/tmp/r5; mkdir -p $R; S=$SECONDS
for s in warpdrive two_level dycuckoo; do
  (( SECONDS < 200 )) || { echo "skipped (time): $s"; continue; }
  WARPMAP_TEST_SCHEMES=$s timeout 150 ./h/contract > $R/contract-$s.log 2>&1; echo "contract($s) rc=$? $(grep 'test result' $R/contract-$s.log | tr '\n' ' ') [$((SECONDS-S)) s]"
done
tar czf $OUT/r.tar.gz -C $R .
