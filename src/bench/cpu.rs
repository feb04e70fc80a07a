//! The CPU backend's benchmark: the same operations as on the GPU, on [`CpuTable`] through the
//! [`HashTable`] trait, timed with [`Instant`] around each bulk call.

use super::{
    keys_for, run_seed, BenchResult, Measured, Op, OpStats, Plan, Progress, Roofline, Sink,
};
use crate::key::{Key, Value};
use crate::keygen::{self, value_matches};
use crate::table::{Backend, HashTable};
use crate::{CpuTable, Error, Result};
use rayon::prelude::*;
use std::time::Instant;

pub(crate) const METHOD: &str = "CPU backend: std::time::Instant around each bulk HashTable call \
on host slices (keys generated before timing; the call's own output allocations included); one \
small warm-up; median of the runs; fresh unique keys every run (new seed) into the cleared table; \
every run verified (insert: no failures and len == n; find_hit: all found with value_for(key); \
find_miss: none found; contains: all present; erase: all erased and len == 0)";

/// The table under test. One place to change when the CPU backend gets another table type.
fn make_table<K: Key, V: Value>(capacity: usize) -> Result<Box<dyn HashTable<K, V>>> {
    Ok(Box::new(CpuTable::<K, V>::new(capacity)?))
}

pub(crate) fn run(plan: &Plan, progress: &mut dyn FnMut(Progress)) -> Result<Vec<BenchResult>> {
    let total = 2 * (plan.load_factors.len() * plan.runs) as u64;
    let mut sink = Sink {
        progress,
        done: 0,
        total,
        results: Vec::new(),
    };
    let roofline = Roofline::default();
    bench_type::<u32, u32>(plan, &roofline, &mut sink, 0x0404)?;
    bench_type::<u64, u64>(plan, &roofline, &mut sink, 0x0808)?;
    Ok(sink.results)
}

/// Turns a `TableFull` into a verification failure; other errors stop the benchmark.
fn table_full_is_failure(r: Result<()>, failures: &mut Vec<String>, run: usize) -> Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(Error::TableFull { failed, batch, .. }) => {
            failures.push(format!("run {run}: {failed} of {batch} keys not placed"));
            Ok(())
        }
        Err(e) => Err(e),
    }
}

fn bench_type<K: Key, V: Value>(
    plan: &Plan,
    roofline: &Roofline,
    sink: &mut Sink<'_>,
    type_tag: u64,
) -> Result<()> {
    let mut table = make_table::<K, V>(plan.slots)?;
    let capacity = table.capacity();
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
    let mut found = vec![false; n_max];

    // Warm-up: the thread pool and the allocator, on a small batch.
    {
        let nw = n_max.min(1 << 12);
        let wk = keygen::unique::<K>(nw, plan.seed ^ 0x3a3a)?;
        let wv = keygen::values_for::<K, V>(&wk);
        table.insert(&wk, &wv)?;
        table.find_into(&wk, &mut out[..nw], &mut found[..nw])?;
        table.contains(&wk)?;
        table.erase(&wk)?;
        table.clear()?;
    }

    let poison = V::from_bits(0xaaaa_aaaa_aaaa_aaaa);
    for (li, &lf) in plan.load_factors.iter().enumerate() {
        let n = keys_for(lf, capacity);
        let (keys, vals, miss) = (&mut keys[..n], &mut vals[..n], &mut miss[..n]);
        let (out, found) = (&mut out[..n], &mut found[..n]);
        let mut stats: Vec<OpStats> = Op::ALL.iter().map(|_| OpStats::new()).collect();
        for r in 0..plan.runs {
            sink.say(format!(
                "cpu {}/{} lf {lf} run {}/{}: generating {n} keys",
                K::NAME,
                V::NAME,
                r + 1,
                plan.runs
            ));
            let seed = run_seed(plan.seed, type_tag, li, r);
            keygen::unique_into(keys, 0, seed)?;
            keygen::unique_into(miss, n as u64, seed)?;
            keygen::values_into(keys, vals)?;
            table.clear()?;

            // insert
            let t = Instant::now();
            let res = table.insert(keys, vals);
            stats[0].ms.push(t.elapsed().as_secs_f64() * 1e3);
            table_full_is_failure(res, &mut stats[0].failures, r)?;
            let len = table.len()?;
            if len != n {
                stats[0]
                    .failures
                    .push(format!("run {r}: len {len} after inserting {n} keys"));
            }

            // find_hit
            out.par_iter_mut().for_each(|v| *v = poison);
            found.par_iter_mut().for_each(|f| *f = false);
            let t = Instant::now();
            let hits = table.find_into(keys, out, found)?;
            stats[1].ms.push(t.elapsed().as_secs_f64() * 1e3);
            let bad = (0..n)
                .into_par_iter()
                .filter(|&i| !found[i] || !value_matches(keys[i], out[i]))
                .count();
            if bad > 0 || hits != n {
                stats[1].failures.push(format!(
                    "run {r}: {bad} of {n} inserted keys not found or with a wrong value ({hits} reported found)"
                ));
            }

            // find_miss
            found.par_iter_mut().for_each(|f| *f = true);
            let t = Instant::now();
            let hits = table.find_into(miss, out, found)?;
            stats[2].ms.push(t.elapsed().as_secs_f64() * 1e3);
            let bad = found.par_iter().filter(|&&f| f).count();
            if bad > 0 || hits != 0 {
                stats[2]
                    .failures
                    .push(format!("run {r}: {bad} of {n} absent keys found"));
            }

            // contains
            let t = Instant::now();
            let present = table.contains(keys)?;
            stats[3].ms.push(t.elapsed().as_secs_f64() * 1e3);
            let bad = present.par_iter().filter(|&&p| !p).count() + n.abs_diff(present.len());
            if bad > 0 {
                stats[3]
                    .failures
                    .push(format!("run {r}: {bad} of {n} inserted keys not contained"));
            }

            // erase
            let t = Instant::now();
            let erased = table.erase(keys)?;
            stats[4].ms.push(t.elapsed().as_secs_f64() * 1e3);
            let len = table.len()?;
            if erased != n || len != 0 {
                stats[4].failures.push(format!(
                    "run {r}: erased {erased} of {n}, len {len} after erase"
                ));
            }
            sink.step(format!(
                "cpu {}/{} lf {lf} run {}/{} done",
                K::NAME,
                V::NAME,
                r + 1,
                plan.runs
            ));
        }
        let m = Measured {
            scheme: table.scheme(),
            backend: Backend::Cpu,
            key_bytes: K::BYTES,
            value_bytes: V::BYTES,
            key_type: K::NAME,
            value_type: V::NAME,
            capacity,
            group_size: None,
            n,
            load_factor: lf,
            roofline,
        };
        for (op, s) in Op::ALL.into_iter().zip(stats) {
            m.push(op, s, &mut sink.results);
        }
    }
    table.clear()?;
    Ok(())
}
