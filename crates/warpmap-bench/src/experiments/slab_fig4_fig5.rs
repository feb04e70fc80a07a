//! The slab hash's bulk benchmarks (slab-hash.txt §VI-A): build a table of `n` unique keys from
//! empty in one launch, search all of them (hits), search `n` keys never inserted (misses), and
//! (compare) delete them, at a memory utilisation set by the number of buckets. Fig. 4 sweeps
//! the utilisation at n = 2^22 and 2^24, Fig. 5 sweeps n at utilisation 0.6; `slab-compare`
//! takes its build, search and delete cells from here.
//!
//! Per cell: the buckets for the target utilisation (`schemes::slab::calibrate`), one table, a
//! warm-up of its kernels, then per run fresh keys into the cleared table, each kernel between CUDA
//! events, every result checked: build (no key unplaced, `len == n`), the measured utilisation
//! (stats), search hit (every key found with `value_for(key)`, outputs poisoned before), search
//! miss (none found), delete (`len == 0` after).

use super::slab_report::{SlabOp, SlabRow};
use super::slab_run::{SlabCx, CALIBRATION_RUN};
use crate::harness::timing::median;
use crate::harness::verify::{bad_hits, bad_misses, check_len_after_insert, table_full_is_failure};
use crate::harness::workloads::{Tag, WorkloadSpec, Workloads};
use crate::plan::Distribution;
use crate::schemes::slab::{self, SlabInfo};
use warpmap::{DeviceHashTable, HashTable, Key, Result, Value};

/// One bulk cell: `n` keys at memory utilisation `target`; rows build, search hit, search
/// miss (and delete when the plan asks), labelled `experiment`.
pub(crate) fn bulk_cell<K: Key, V: Value>(
    cx: &mut SlabCx<'_>,
    experiment: &'static str,
    n: usize,
    target: f64,
    cell: usize,
) -> Result<()> {
    let (gpu, plan, timer) = (cx.gpu, cx.plan, cx.timer);
    let what = format!(
        "{experiment} {}/{} n 2^{} util {target}",
        K::NAME,
        V::NAME,
        n.trailing_zeros()
    );
    cx.say(format!("{what}: choosing the buckets"));
    let (buckets, _) = slab::calibrate::<K, V>(gpu, n, target, cx.seed(cell, CALIBRATION_RUN))?;
    cx.say(format!("{what}: {buckets} buckets, warming up"));
    let mut t = slab::make::<K, V>(gpu, n, buckets)?;
    slab::warm_up(gpu, &mut t, timer, plan.seed)?;

    let spec = WorkloadSpec {
        dist: Distribution::Unique,
        misses: true,
        half: false,
        zipf_universe: 0,
        zipf_s: 0.0,
    };
    let mut host = Workloads::<K, V>::new(spec, 1);
    let mut dk = gpu.alloc::<K>(n)?;
    let mut dv = gpu.alloc::<V>(n)?;
    let mut dm = gpu.alloc::<K>(n)?;
    let mut d_out = gpu.alloc::<V>(n)?;
    let mut d_found = gpu.alloc::<u8>(n)?;
    let mut out = vec![V::zeroed(); n];
    let mut found = vec![0u8; n];

    // build, search hit, search miss, delete: times and failures.
    let mut ms: [Vec<f64>; 4] = Default::default();
    let mut fail: [Vec<String>; 4] = Default::default();
    let mut utils = Vec::with_capacity(plan.runs);
    let mut last: Option<SlabInfo> = None;
    for r in 0..plan.runs {
        cx.say(format!("{what} run {}/{}", r + 1, plan.runs));
        let w = host.get(
            0,
            Tag {
                seed: cx.seed(cell, r),
                n,
            },
        )?;
        gpu.copy_to_device(&w.keys, &mut dk)?;
        gpu.copy_to_device(&w.vals, &mut dv)?;
        gpu.copy_to_device(&w.miss, &mut dm)?;
        t.clear()?;

        timer.start()?;
        t.insert_device_async(&dk, &dv, None)?;
        ms[0].push(timer.stop_ms()?);
        table_full_is_failure(t.synchronize(), &mut fail[0], r)?;
        fail[0].extend(check_len_after_insert(r, t.len()?, n, n));
        let info = slab::info(&t)?;
        utils.push(info.utilization);
        last = Some(info);

        gpu.fill_bytes(&mut d_out, 0xaa)?;
        gpu.fill_bytes(&mut d_found, 0xaa)?;
        timer.start()?;
        t.find_device_async(&dk, &mut d_out, &mut d_found)?;
        ms[1].push(timer.stop_ms()?);
        t.synchronize()?;
        gpu.copy_to_host(&d_found, &mut found)?;
        gpu.copy_to_host(&d_out, &mut out)?;
        let bad = bad_hits(&w.keys, &out, &found);
        if bad > 0 {
            fail[1].push(format!(
                "run {r}: {bad} of {n} stored keys not found or with a wrong value"
            ));
        }

        gpu.fill_bytes(&mut d_found, 0xaa)?;
        timer.start()?;
        t.find_device_async(&dm, &mut d_out, &mut d_found)?;
        ms[2].push(timer.stop_ms()?);
        t.synchronize()?;
        gpu.copy_to_host(&d_found, &mut found)?;
        let bad = bad_misses(&found);
        if bad > 0 {
            fail[2].push(format!(
                "run {r}: {bad} of {n} absent keys found (or unwritten)"
            ));
        }

        if plan.delete {
            timer.start()?;
            t.erase_device_async(&dk)?;
            ms[3].push(timer.stop_ms()?);
            t.synchronize()?;
            let len = t.len()?;
            if len != 0 {
                fail[3].push(format!("run {r}: len {len} after deleting all {n} keys"));
            }
        }
    }

    let utilization = median(&utils);
    let memory_bytes = t.memory_bytes();
    let build_failures: Vec<String> = fail[0].iter().map(|f| format!("build {f}")).collect();
    let ops = [
        SlabOp::Build,
        SlabOp::SearchHit,
        SlabOp::SearchMiss,
        SlabOp::Delete,
    ];
    for (i, (op, mut f)) in ops.into_iter().zip(fail).enumerate() {
        if op == SlabOp::Delete && !plan.delete {
            continue;
        }
        if i > 0 {
            // The searches and the delete need the build: its failures are theirs too.
            f.extend(build_failures.iter().cloned());
        }
        let mut row = SlabRow::new::<K, V>(experiment, op, n, n, &ms[i], f);
        row.utilization_target = Some(target);
        row.utilization = Some(utilization);
        row.slab = last;
        row.memory_bytes = memory_bytes;
        cx.push(row);
    }
    Ok(())
}
