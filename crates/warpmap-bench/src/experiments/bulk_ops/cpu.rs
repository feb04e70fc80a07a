//! The bulk-operation experiment on the CPU backend: the same operations as on the GPU, on
//! [`CpuTable`](warpmap::CpuTable) through the [`HashTable`] trait, timed with [`Instant`]
//! around each bulk call.
//!
//! Loop order: type, distribution, load factor, run (the CPU table has no group size). Fixed
//! slots: one table per (type, distribution), cleared between runs. Fixed keys: a new table per
//! load factor, and the run key sets generated once per (type, distribution).

use crate::harness::report::{BenchResult, Measured, OpStats, Progress, Roofline, Sink};
use crate::harness::timing::warm_up_host;
use crate::harness::verify::{
    bad_contains, bad_half, bad_hits, bad_misses, bad_sums, check_len_after_insert,
    table_full_is_failure,
};
use crate::harness::workloads::{resize_par, Tag, Workload, WorkloadSpec, Workloads};
use crate::plan::{keys_for, with_kv_types, Distribution, Op, Plan};
use crate::schemes::cpu::make_table;
use rayon::prelude::*;
use std::time::Instant;
use warpmap::table::{Backend, HashTable};
use warpmap::{Error, Key, Reduce, Result, Value};

pub(crate) const METHOD: &str = "CPU backend: std::time::Instant around each bulk HashTable call \
on host slices (keys generated before timing; the call's own output allocations included); one \
small warm-up; median of the runs; fresh unique keys every run (new seed) into the cleared table; \
every run verified (insert: no failures and len == n; find_hit: all found with value_for(key); \
find_miss: none found; contains: all present; erase: all erased and len == 0)";

/// The experiment: every (type, distribution)'s sets (no roofline on the CPU).
pub(crate) fn run(plan: &Plan, progress: &mut dyn FnMut(Progress)) -> Result<Vec<BenchResult>> {
    let mut sink = Sink::new(progress, (plan.sets() * plan.runs) as u64);
    let roofline = Roofline::default();
    for &ty in &plan.types {
        for &dist in &plan.distributions {
            with_kv_types!(ty, bench_set(plan, &roofline, &mut sink, dist))?;
        }
    }
    Ok(sink.results)
}

fn bench_set<K: Key, V: Value>(
    plan: &Plan,
    roofline: &Roofline,
    sink: &mut Sink<'_>,
    dist: Distribution,
    type_tag: u64,
) -> Result<()> {
    let what = format!("cpu {}/{} {dist}", K::NAME, V::NAME);
    let keys_mode = plan.keys();
    let host_slots = if plan.host_cache_fits(K::BYTES, V::BYTES) {
        plan.runs
    } else {
        1
    };
    let mut host = Workloads::<K, V>::new(WorkloadSpec::new(plan, dist), host_slots);
    let mut distinct_max = 0;
    if let Some(n) = keys_mode {
        for r in 0..plan.runs {
            let tag = Tag {
                seed: plan.seed_for(type_tag, dist, 0, r),
                n,
            };
            if host_slots > 1 || dist == Distribution::Zipf {
                sink.say(format!(
                    "{what}: generating key set {}/{} ({n} keys)",
                    r + 1,
                    plan.runs
                ));
                distinct_max = distinct_max.max(host.get(r, tag)?.distinct);
            }
        }
        if host_slots > 1 {
            host.release_scratch();
        }
    }

    let mut out: Vec<V> = Vec::new();
    let mut found: Vec<bool> = Vec::new();
    let mut table: Option<Box<dyn HashTable<K, V>>> = None;
    for (li, &lf) in plan.load_factors.iter().enumerate() {
        if keys_mode.is_some() {
            drop(table.take());
        }
        if table.is_none() {
            let cap = match keys_mode {
                Some(n) => plan.capacity_for(n, distinct_max, lf, dist),
                None => plan.slots,
            };
            let mut t = make_table::<K, V>(cap)?;
            warm_up_host(t.as_mut(), keys_mode.unwrap_or(cap), plan.seed)?;
            table = Some(t);
        }
        let table = table.as_mut().expect("made above");
        let capacity = table.capacity();
        let n = keys_mode.unwrap_or_else(|| keys_for(lf, capacity));
        resize_par(&mut out, n, V::zeroed());
        resize_par(&mut found, n, false);
        let mut stats: Vec<OpStats> = Op::ALL.iter().map(|_| OpStats::new()).collect();
        let mut distinct = Vec::with_capacity(plan.runs);
        for r in 0..plan.runs {
            let tag = Tag {
                seed: plan.seed_for(type_tag, dist, li, r),
                n,
            };
            sink.say(format!(
                "{what} lf {lf} run {}/{}: {}{n} keys",
                r + 1,
                plan.runs,
                if host.is_ready(r, tag) {
                    ""
                } else {
                    "generating "
                }
            ));
            let w = host.get(r, tag)?;
            distinct.push(w.distinct);
            run_once(plan, table.as_mut(), w, &mut out, &mut found, &mut stats, r)?;
            sink.step(format!("{what} lf {lf} run {}/{} done", r + 1, plan.runs));
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
            filter_bits: None,
            memory_bytes: table.memory_bytes(),
            stadium: None,
            n,
            load_factor: lf,
            roofline,
            distribution: dist,
            distinct,
            two_level: None,
            counters: Vec::new(),
        };
        m.push_selected(&plan.ops, stats, &mut sink.results);
    }
    if let Some(t) = table.as_mut() {
        t.clear()?;
    }
    Ok(())
}

/// One timed and verified run of every selected operation on the cleared table.
fn run_once<K: Key, V: Value>(
    plan: &Plan,
    table: &mut dyn HashTable<K, V>,
    w: &Workload<K, V>,
    out: &mut [V],
    found: &mut [bool],
    stats: &mut [OpStats],
    r: usize,
) -> Result<()> {
    let n = w.keys.len();
    let (keys, vals) = (&w.keys[..], &w.vals[..]);
    let on = |op: Op| plan.ops.contains(&op);
    let poison = V::from_bits(0xaaaa_aaaa_aaaa_aaaa);
    table.clear()?;

    // insert (always: the other operations need the filled table)
    let s = &mut stats[Op::Insert.index()];
    let t = Instant::now();
    let res = table.insert(keys, vals);
    s.ms.push(t.elapsed().as_secs_f64() * 1e3);
    table_full_is_failure(res, &mut s.failures, r)?;
    let len = table.len()?;
    s.failures
        .extend(check_len_after_insert(r, len, n, w.distinct));

    // find_hit
    if on(Op::FindHit) {
        let s = &mut stats[Op::FindHit.index()];
        out.par_iter_mut().for_each(|v| *v = poison);
        found.par_iter_mut().for_each(|f| *f = false);
        let t = Instant::now();
        let hits = table.find_into(keys, out, found)?;
        s.ms.push(t.elapsed().as_secs_f64() * 1e3);
        let bad = bad_hits(keys, out, found);
        if bad > 0 || hits != n {
            s.failures.push(format!(
                "run {r}: {bad} of {n} inserted keys not found or with a wrong value ({hits} reported found)"
            ));
        }
    }

    // find_half
    if on(Op::FindHalf) {
        let s = &mut stats[Op::FindHalf.index()];
        out.par_iter_mut().for_each(|v| *v = poison);
        found.par_iter_mut().for_each(|f| *f = false);
        let t = Instant::now();
        let hits = table.find_into(&w.half, out, found)?;
        s.ms.push(t.elapsed().as_secs_f64() * 1e3);
        let bad = bad_half(keys, out, found);
        if bad > 0 || hits != n.div_ceil(2) {
            s.failures.push(format!(
                "run {r}: {bad} of {n} half-present queries answered wrongly ({hits} reported found)"
            ));
        }
    }

    // find_miss
    if on(Op::FindMiss) {
        let s = &mut stats[Op::FindMiss.index()];
        found.par_iter_mut().for_each(|f| *f = true);
        let t = Instant::now();
        let hits = table.find_into(&w.miss, out, found)?;
        s.ms.push(t.elapsed().as_secs_f64() * 1e3);
        let bad = bad_misses(found);
        if bad > 0 || hits != 0 {
            s.failures
                .push(format!("run {r}: {bad} of {n} absent keys found"));
        }
    }

    // contains
    if on(Op::Contains) {
        let s = &mut stats[Op::Contains.index()];
        let t = Instant::now();
        let present = table.contains(keys)?;
        s.ms.push(t.elapsed().as_secs_f64() * 1e3);
        let bad = bad_contains(&present) + n.abs_diff(present.len());
        if bad > 0 {
            s.failures
                .push(format!("run {r}: {bad} of {n} inserted keys not contained"));
        }
    }

    // erase
    if on(Op::Erase) {
        let s = &mut stats[Op::Erase.index()];
        let t = Instant::now();
        let erased = table.erase(keys)?;
        s.ms.push(t.elapsed().as_secs_f64() * 1e3);
        let len = table.len()?;
        if erased != w.distinct || len != 0 {
            s.failures.push(format!(
                "run {r}: erased {erased} of {} distinct, len {len} after erase",
                w.distinct
            ));
        }
    }

    // find_unordered: a device operation (the CPU backend has no device buffers)
    if on(Op::FindUnordered) {
        stats[Op::FindUnordered.index()].failures.push(format!(
            "run {r}: find_unordered is an operation of device tables (DeviceHashTable)"
        ));
    }

    // reduce: the insert's batch, reduced by key (sums) into the cleared table
    if on(Op::Reduce) {
        let s = &mut stats[Op::Reduce.index()];
        table.clear()?;
        let t = Instant::now();
        match table.insert_or_apply(keys, vals, Reduce::Sum) {
            Err(Error::Unsupported(why)) => {
                s.failures
                    .push(format!("run {r}: reduce by key refused: {why}"));
                return Ok(());
            }
            res => {
                s.ms.push(t.elapsed().as_secs_f64() * 1e3);
                table_full_is_failure(res, &mut s.failures, r)?;
            }
        }
        let len = table.len()?;
        s.failures
            .extend(check_len_after_insert(r, len, n, w.distinct));
        found.par_iter_mut().for_each(|f| *f = false);
        table.find_into(keys, out, found)?;
        let bad = bad_sums(keys, vals, out, found, w.distinct);
        if bad > 0 {
            s.failures.push(format!(
                "run {r}: {bad} of {n} keys not holding the sum of their rows"
            ));
        }
    }
    Ok(())
}
