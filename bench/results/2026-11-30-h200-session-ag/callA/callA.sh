#!/bin/bash
cd "$(dirname "$0")"; S=$SECONDS
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
timeout 200 ./l2_sides 32 4 4 > $OUT/sides-32.log 2>&1; echo "rc=$? [$((SECONDS-S)) s]"
grep -v "^[0-9]*:" $OUT/sides-32.log | head -60
grep "^[0-9]*:" $OUT/sides-32.log | head -8
