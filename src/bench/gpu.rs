//! The GPU benchmark: the roofline, then WarpDrive through the device-buffer API, every kernel
//! timed alone with CUDA events.

use super::roofline::{self, RooflineConfig};
use super::{
    keys_for, run_seed, BenchResult, Measured, Op, OpStats, Plan, Progress, Roofline, Sink,
};
use crate::key::{Key, Value};
use crate::keygen::{self, value_matches};
use crate::table::{Backend, DeviceHashTable, HashTable};
use crate::{Error, Gpu, Result, WarpDrive, WarpDriveConfig};
use rayon::prelude::*;
use std::sync::Arc;

pub(crate) const METHOD: &str = "GPU: CUDA events around each kernel launch only (keys and values \
uploaded and outputs poisoned before the start event; verification after the stop event); one \
warm-up of every kernel per table; median of the runs; fresh unique keys every run (new seed) \
into the cleared table; every run verified (insert: no failures and len == n; find_hit: all found \
with value_for(key), downloaded and checked; find_miss: none found; contains: all present; \
erase: len == 0). Roofline: random 8-byte gathers and CASes on a u64 table far beyond \
L2 and a copy of it (bytes read + written), CUDA events, one warm-up then the median (sizes in the \
roofline object)";

/// Turns a `TableFull` from `synchronize` into a verification failure; other errors stop.
fn table_full_is_failure(r: Result<()>, failures: &mut Vec<String>, run: usize) -> Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(Error::TableFull { failed, .. }) => {
            failures.push(format!("run {run}: {failed} keys not placed"));
            Ok(())
        }
        Err(e) => Err(e),
    }
}

pub(crate) fn run(
    gpu: &Arc<Gpu>,
    plan: &Plan,
    quick: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Roofline, Vec<BenchResult>)> {
    let rcfg = RooflineConfig::new(quick);
    let total = 3 + 2 * (plan.load_factors.len() * plan.runs) as u64;
    let mut sink = Sink {
        progress,
        done: 0,
        total,
        results: Vec::new(),
    };
    sink.say(format!(
        "roofline: {} u64, {} random accesses per kernel",
        rcfg.elements, rcfg.ops
    ));
    let roof = roofline::measure(gpu, rcfg, &mut |what| {
        sink.step(format!("roofline {what} done"))
    })?;
    bench_type::<u32, u32>(gpu, plan, &roof, &mut sink, 0x0404)?;
    bench_type::<u64, u64>(gpu, plan, &roof, &mut sink, 0x0808)?;
    Ok((roof, sink.results))
}

fn bench_type<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    plan: &Plan,
    roofline: &Roofline,
    sink: &mut Sink<'_>,
    type_tag: u64,
) -> Result<()> {
    sink.say(format!(
        "warpdrive {}/{}: building the table and its kernels",
        K::NAME,
        V::NAME
    ));
    let mut table = WarpDrive::<K, V>::new(gpu.clone(), WarpDriveConfig::new(plan.slots))?;
    let capacity = table.capacity();
    let group = table.config().group_size;
    let timer = gpu.timer()?;
    let n_max = plan
        .load_factors
        .iter()
        .map(|&lf| keys_for(lf, capacity))
        .max()
        .unwrap_or(1);
    let mut keys = vec![K::zeroed(); n_max];
    let mut vals = vec![V::zeroed(); n_max];
    let mut miss = vec![K::zeroed(); n_max];
    let mut out = vec![V::zeroed(); n_max];
    let mut found = vec![0u8; n_max];

    // Warm-up: every kernel once (module load, first-launch costs), and the events.
    {
        let nw = n_max.min(1 << 16);
        let wk = keygen::unique::<K>(nw, plan.seed ^ 0x3a3a)?;
        let wv = keygen::values_for::<K, V>(&wk);
        let dk = gpu.upload(&wk)?;
        let dv = gpu.upload(&wv)?;
        let mut dout = gpu.alloc::<V>(nw)?;
        let mut dfound = gpu.alloc::<u8>(nw)?;
        timer.start()?;
        table.insert_device_async(&dk, &dv, None)?;
        table.find_device_async(&dk, &mut dout, &mut dfound)?;
        table.contains_device_async(&dk, &mut dfound)?;
        table.erase_device_async(&dk)?;
        timer.stop_ms()?;
        table.synchronize()?;
        table.clear()?;
    }

    for (li, &lf) in plan.load_factors.iter().enumerate() {
        let n = keys_for(lf, capacity);
        let (keys, vals, miss) = (&mut keys[..n], &mut vals[..n], &mut miss[..n]);
        let (out, found) = (&mut out[..n], &mut found[..n]);
        let mut d_keys = gpu.alloc::<K>(n)?;
        let mut d_vals = gpu.alloc::<V>(n)?;
        let mut d_miss = gpu.alloc::<K>(n)?;
        let mut d_out = gpu.alloc::<V>(n)?;
        let mut d_found = gpu.alloc::<u8>(n)?;
        let mut stats: Vec<OpStats> = Op::ALL.iter().map(|_| OpStats::new()).collect();
        for r in 0..plan.runs {
            sink.say(format!(
                "warpdrive {}/{} lf {lf} run {}/{}: {n} keys",
                K::NAME,
                V::NAME,
                r + 1,
                plan.runs
            ));
            let seed = run_seed(plan.seed, type_tag, li, r);
            keygen::unique_into(keys, 0, seed)?;
            keygen::unique_into(miss, n as u64, seed)?;
            keygen::values_into(keys, vals)?;
            gpu.copy_to_device(keys, &mut d_keys)?;
            gpu.copy_to_device(vals, &mut d_vals)?;
            gpu.copy_to_device(miss, &mut d_miss)?;
            table.clear()?;

            // insert
            timer.start()?;
            table.insert_device_async(&d_keys, &d_vals, None)?;
            stats[0].ms.push(timer.stop_ms()?);
            table_full_is_failure(table.synchronize(), &mut stats[0].failures, r)?;
            let len = table.len()?;
            if len != n {
                stats[0]
                    .failures
                    .push(format!("run {r}: len {len} after inserting {n} keys"));
            }

            // find_hit: outputs poisoned, so an unwritten element fails.
            gpu.fill_bytes(&mut d_out, 0xaa)?;
            gpu.fill_bytes(&mut d_found, 0xaa)?;
            timer.start()?;
            table.find_device_async(&d_keys, &mut d_out, &mut d_found)?;
            stats[1].ms.push(timer.stop_ms()?);
            table_full_is_failure(table.synchronize(), &mut stats[1].failures, r)?;
            gpu.copy_to_host(&d_found, found)?;
            gpu.copy_to_host(&d_out, out)?;
            let bad = (0..n)
                .into_par_iter()
                .filter(|&i| found[i] != 1 || !value_matches(keys[i], out[i]))
                .count();
            if bad > 0 {
                stats[1].failures.push(format!(
                    "run {r}: {bad} of {n} inserted keys not found or with a wrong value"
                ));
            }

            // find_miss
            gpu.fill_bytes(&mut d_found, 0xaa)?;
            timer.start()?;
            table.find_device_async(&d_miss, &mut d_out, &mut d_found)?;
            stats[2].ms.push(timer.stop_ms()?);
            table_full_is_failure(table.synchronize(), &mut stats[2].failures, r)?;
            gpu.copy_to_host(&d_found, found)?;
            let bad = found.par_iter().filter(|&&f| f != 0).count();
            if bad > 0 {
                stats[2].failures.push(format!(
                    "run {r}: {bad} of {n} absent keys found (or unwritten)"
                ));
            }

            // contains
            gpu.fill_bytes(&mut d_found, 0xaa)?;
            timer.start()?;
            table.contains_device_async(&d_keys, &mut d_found)?;
            stats[3].ms.push(timer.stop_ms()?);
            table_full_is_failure(table.synchronize(), &mut stats[3].failures, r)?;
            gpu.copy_to_host(&d_found, found)?;
            let bad = found.par_iter().filter(|&&f| f != 1).count();
            if bad > 0 {
                stats[3]
                    .failures
                    .push(format!("run {r}: {bad} of {n} inserted keys not contained"));
            }

            // erase
            timer.start()?;
            table.erase_device_async(&d_keys)?;
            stats[4].ms.push(timer.stop_ms()?);
            table_full_is_failure(table.synchronize(), &mut stats[4].failures, r)?;
            let len = table.len()?;
            if len != 0 {
                stats[4]
                    .failures
                    .push(format!("run {r}: len {len} after erasing all {n} keys"));
            }
            sink.step(format!(
                "warpdrive {}/{} lf {lf} run {}/{} done",
                K::NAME,
                V::NAME,
                r + 1,
                plan.runs
            ));
        }
        let m = Measured {
            scheme: table.scheme(),
            backend: Backend::Gpu,
            key_bytes: K::BYTES,
            value_bytes: V::BYTES,
            key_type: K::NAME,
            value_type: V::NAME,
            capacity,
            group_size: Some(group),
            n,
            load_factor: lf,
            roofline,
        };
        for (op, s) in Op::ALL.into_iter().zip(stats) {
            m.push(op, s, &mut sink.results);
        }
    }
    Ok(())
}
