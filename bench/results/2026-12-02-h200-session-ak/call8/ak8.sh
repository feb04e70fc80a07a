#!/bin/bash
# Session AK call 8 (the review's mend): SlackScatter refuses another stream; GpuTable::split_with_slack.
cd "$(dirname "$0")"; mkdir -p h; tar xzf tests.tar.gz -C h
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_REQUIRE_GPU=1
R=/tmp/r8; mkdir -p $R; S=$SECONDS
for t in multisplit locality; do
  timeout 150 ./h/$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"
  grep -E "panicked|FAILED" $R/$t.log | head -5
done
tar czf $OUT/r.tar.gz -C $R .
