#!/bin/bash
# Session AF call 8: the locality tests after the review mend of tests/locality.rs (shuffled_batch shared; same batches).
cd "$(dirname "$0")"
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_REQUIRE_GPU=1
timeout 120 ./locality > /tmp/loc.log 2>&1; echo "locality rc=$? $(grep 'test result' /tmp/loc.log)"; grep -E "copies_race" /tmp/loc.log
timeout 150 compute-sanitizer --tool memcheck ./locality copies_race > /tmp/mc.log 2>&1; echo "memcheck copies_race rc=$? $(grep -E 'ERROR SUMMARY|test result' /tmp/mc.log | tr '\n' ' ')"
cp /tmp/loc.log /tmp/mc.log $OUT/
