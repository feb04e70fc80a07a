#!/bin/bash
# Session AF call 7: the ordered insert with the warp's lanes together at every window load
# (WARPMAP_WD_WARP_STEPS=1, default) against a key per lane and round (=0), same binary; ncu of the ordered insert;
# (the A/B only; tests in call 7b).
cd "$(dirname "$0")"; tar xzf mini.tar.gz
export WARPMAP_CACHE_DIR=/tmp/wc
R=/tmp/r7a; mkdir -p $R/t; S=$SECONDS
for round in 1 2; do for c in 0 1; do
  WARPMAP_WD_WARP_STEPS=$c timeout 100 ./warpmap bench --keys-log2 27 --types u64,u32 --load-factors 0.5,0.8,0.9,0.95 --ops insert,find_hit --runs 5 --json $R/ab-c$c-r$round.json > $R/ab-c$c-r$round.log 2>&1
  echo "warp_steps=$c round $round rc=$? [$((SECONDS-S)) s] $(grep -E '^warpdrive' $R/ab-c$c-r$round.log | awk '{printf "%s %s %s %s; ", $3, $5, $6, $7}')"
done; done
for c in 0 1; do
  WARPMAP_WD_WARP_STEPS=$c timeout 60 ncu --clock-control none --kernel-name regex:warpdrive_insert_ordered -c 1 --metrics gpu__time_duration.sum,lts__t_requests.sum,lts__t_requests_srcunit_tex_op_atom.sum,lts__t_requests_srcunit_tex_op_read.sum,lts__t_requests_srcunit_ltcfabric.sum \
    ./warpmap bench --keys-log2 27 --types u64 --load-factors 0.5 --ops insert --runs 1 > $R/ncu-c$c.log 2>&1
  echo "ncu warp_steps=$c rc=$?"; grep -E "^\s+(lts|gpu)__" $R/ncu-c$c.log
done
rm -f $R/*.svg; tar czf $OUT/r.tar.gz -C $R .
