#!/bin/bash
# Session AD call 11: the review's comment-only edits of kernels/multisplit.cu and common/stage.cuh (variant review,
# through WARPMAP_KERNEL_DIR on a26313c's test binaries): the split's tests.
cd "$(dirname "$0")"; tar xzf tests.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc WARPMAP_REQUIRE_GPU=1 WARPMAP_KERNEL_DIR=$PWD/variants/review
R=/tmp/r11; mkdir -p $R; S=$SECONDS
for t in multisplit two_level locality; do timeout 60 ./$t > $R/$t.log 2>&1; echo "$t rc=$? $(grep 'test result' $R/$t.log | tr '\n' ' ') [$((SECONDS-S)) s]"; done
tar czf $OUT/r.tar.gz -C $R .
