//! The bulk-operation experiment on the GPU: the roofline, then the plan's scheme (WarpDrive, or
//! Stadium) through the device-buffer API ([`DeviceHashTable`]), every kernel timed alone with
//! CUDA events.
//!
//! Loop order: type, distribution, variant (WarpDrive group size, or Stadium (location, ticket
//! size)), load factor, run. One loop for every scheme: `schemes::build_table` makes the
//! variant's table as a `dyn DeviceHashTable` with what its rows report beside it. Host-bucket
//! Stadium tables get their bound measured once per table size, before their runs. Fixed slots:
//! a table per (type, distribution, group size), cleared between runs and load factors. Fixed
//! keys: a table per load factor too, dropped (its device memory freed) before the next is made;
//! the run key sets of a (type, distribution) are generated once (host cache) and uploaded once
//! when all of them fit in device memory beside the largest table (else uploaded per run).

use crate::harness::report::{BenchResult, Measured, OpStats, Progress, Roofline};
use crate::harness::session::{attach_host_bound, run_sets, SetCx};
use crate::harness::timing::warm_up_device;
use crate::harness::verify::{
    bad_contains, bad_half, bad_hits, bad_misses, bad_sums, check_len_after_insert,
    table_full_is_failure,
};
use crate::harness::workloads::{resize_par, Tag, Workload, WorkloadSpec, Workloads};
use crate::plan::{keys_for, with_kv_types, Distribution, Op, Plan};
use crate::schemes::{build_table, largest_table_bytes, Built};
use std::sync::Arc;
use warpmap::device::{DeviceBuffer, Timer};
use warpmap::table::{Backend, DeviceHashTable};
use warpmap::{Error, Gpu, InsertMode, Key, Reduce, Result, Value};

pub(crate) const METHOD: &str = "GPU: CUDA events around each kernel launch only (keys and values \
uploaded and outputs poisoned before the start event; verification after the stop event); one \
warm-up of every kernel per table; median of the runs; fresh unique keys every run (new seed) \
into the cleared table; every run verified (insert: no failures and len == n; find_hit: all found \
with value_for(key), downloaded and checked; find_miss: none found; contains: all present; \
erase: len == 0; find_half, when measured: every answer checked). Roofline: random 8-byte gathers and CASes on a u64 table far beyond \
L2 and a copy of it (bytes read + written), CUDA events, one warm-up then the median (sizes in the \
roofline object)";

/// The experiment: the roofline, then every (type, distribution)'s sets.
pub(crate) fn run(
    gpu: &Arc<Gpu>,
    plan: &Plan,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Roofline, Vec<BenchResult>)> {
    run_sets(gpu, plan, progress, |cx, ty| {
        for &dist in &plan.distributions {
            with_kv_types!(ty, bench_set(cx, dist))?;
        }
        Ok(())
    })
}

/// One run's key set on the device.
struct DevSet<K: Key, V: Value> {
    tag: Option<Tag>,
    keys: DeviceBuffer<K>,
    vals: DeviceBuffer<V>,
    /// Absent keys (a 1-element dummy when find_miss is not measured).
    miss: DeviceBuffer<K>,
    /// find_half's queries (a 1-element dummy when it is not measured).
    half: DeviceBuffer<K>,
}

/// The device copies of the run sets: one per run (uploaded once) or one reused (uploaded per
/// run), all of `n` keys, plus the outputs. Every slot is allocated up front, before the first
/// timed operation: an allocation between runs takes memory the pool kept from the previous
/// run's batches, so a partitioned insert then maps its split's scratch afresh (1.5 ms of 8.8
/// for 2^27 u32 pairs at load 0.5 on an H100: bench/NOTES.md, issue 18, session P), which a
/// program inserting batch after batch does not pay.
struct DevSets<K: Key, V: Value> {
    n: usize,
    sets: Vec<Option<DevSet<K, V>>>,
    out: DeviceBuffer<V>,
    found: DeviceBuffer<u8>,
}

impl<K: Key, V: Value> DevSets<K, V> {
    fn new(gpu: &Gpu, plan: &Plan, n: usize, slots: usize) -> Result<Self> {
        let set = || -> Result<Option<DevSet<K, V>>> {
            Ok(Some(DevSet {
                tag: None,
                keys: gpu.alloc::<K>(n)?,
                vals: gpu.alloc::<V>(n)?,
                miss: gpu.alloc::<K>(if plan.needs_misses() { n } else { 1 })?,
                half: gpu.alloc::<K>(if plan.needs_half() { n } else { 1 })?,
            }))
        };
        Ok(DevSets {
            n,
            sets: (0..slots.max(1)).map(|_| set()).collect::<Result<_>>()?,
            out: gpu.alloc::<V>(n)?,
            found: gpu.alloc::<u8>(n)?,
        })
    }

    /// Makes run `r`'s slot hold `w` (uploading unless it does already); returns the slot.
    fn load(&mut self, gpu: &Gpu, r: usize, w: &Workload<K, V>) -> Result<usize> {
        let i = r % self.sets.len();
        let have = self.sets[i].as_ref().and_then(|d| d.tag);
        if have.is_some() && have == w.tag {
            return Ok(i);
        }
        let d = self.sets[i].as_mut().expect("allocated by DevSets::new");
        d.tag = None;
        gpu.copy_to_device(&w.keys, &mut d.keys)?;
        gpu.copy_to_device(&w.vals, &mut d.vals)?;
        if !w.miss.is_empty() {
            gpu.copy_to_device(&w.miss, &mut d.miss)?;
        }
        if !w.half.is_empty() {
            gpu.copy_to_device(&w.half, &mut d.half)?;
        }
        d.tag = w.tag;
        Ok(i)
    }
}

fn label<K: Key, V: Value>(plan: &Plan, dist: Distribution) -> String {
    format!("{} {}/{} {dist}", plan.scheme, K::NAME, V::NAME)
}

/// All sets of one (type, distribution).
fn bench_set<K: Key, V: Value>(
    cx: &mut SetCx<'_, '_>,
    dist: Distribution,
    type_tag: u64,
) -> Result<()> {
    let (gpu, plan, timer) = (cx.gpu, cx.plan, cx.timer);
    let what = label::<K, V>(plan, dist);
    let (kb, vb) = (K::BYTES, V::BYTES);
    let keys_mode = plan.keys();
    let host_slots = if plan.host_cache_fits(kb, vb) {
        plan.runs
    } else {
        1
    };
    let mut host = Workloads::<K, V>::new(WorkloadSpec::new(plan, dist), host_slots);

    // Fixed keys: every run's set first (Zipf: their distinct counts size the tables).
    let mut distinct_max = 0;
    if let Some(n) = keys_mode {
        for r in 0..plan.runs {
            let tag = Tag {
                seed: plan.seed_for(type_tag, dist, 0, r),
                n,
            };
            if host_slots > 1 || dist == Distribution::Zipf {
                cx.sink.say(format!(
                    "{what}: generating key set {}/{} ({n} keys{})",
                    r + 1,
                    plan.runs,
                    if dist == Distribution::Zipf {
                        ", counting distinct keys"
                    } else {
                        ""
                    }
                ));
                distinct_max = distinct_max.max(host.get(r, tag)?.distinct);
            }
        }
        if host_slots > 1 {
            host.release_scratch();
        }
    }

    // Fixed keys: keep every run's set on the device if they fit beside the largest table.
    let dev_slots = match keys_mode {
        Some(n) => {
            let lf_min = plan.load_factors.iter().copied().fold(1.0, f64::min);
            let cap = plan.capacity_for(n, distinct_max, lf_min, dist);
            let table = largest_table_bytes(kb, vb, cap);
            let sets = plan.runs as u64 * plan.set_bytes(n, kb, vb);
            let outs = n as u64 * (vb as u64 + 1);
            let free = gpu.free_memory().unwrap_or(0);
            if plan.runs > 1 && sets + table + outs + (1 << 30) <= free / 10 * 8 {
                plan.runs
            } else {
                1
            }
        }
        None => 1,
    };
    let mut dev: Option<DevSets<K, V>> = None;
    let mut h_out: Vec<V> = Vec::new();
    let mut h_found: Vec<u8> = Vec::new();

    for variant in plan.variants() {
        let vl = variant.label();
        let v_keys = plan.keys_for_variant(variant, dist);
        let mut built: Option<Built<K, V>> = None;
        for (li, &lf) in plan.load_factors.iter().enumerate() {
            if v_keys.is_some() {
                // Free the previous load factor's table before making the next.
                drop(built.take());
            }
            let cap_asked = match v_keys {
                Some(n) if n == keys_mode.unwrap_or(n) => {
                    plan.capacity_for(n, distinct_max, lf, dist)
                }
                // A smaller n (host buckets, unique keys only): n / lf.
                Some(n) => plan.capacity_for(n, n, lf, Distribution::Unique),
                None => plan.slots,
            };
            if built.is_none() {
                cx.sink.say(format!(
                    "{what} {vl} lf {lf}: making a table of {cap_asked} slots"
                ));
                let mut b = build_table::<K, V>(gpu, plan, variant, cap_asked)?;
                let nw = v_keys.unwrap_or(b.table.capacity());
                warm_up_device(gpu, b.table.as_mut(), timer, nw, plan.seed)?;
                attach_host_bound(cx, &mut b, kb + vb)?;
                built = Some(b);
            }
            let b = built.as_mut().expect("made above");
            let table = b.table.as_mut();
            let n = v_keys.unwrap_or_else(|| keys_for(lf, table.capacity()));
            if dev.as_ref().map(|d| d.n) != Some(n) {
                drop(dev.take());
                let slots = if Some(n) == keys_mode { dev_slots } else { 1 };
                dev = Some(DevSets::new(gpu, plan, n, slots)?);
            }
            let dev = dev.as_mut().expect("made above");
            resize_par(&mut h_out, n, V::zeroed());
            resize_par(&mut h_found, n, 0u8);

            let mut stats: Vec<OpStats> = Op::ALL.iter().map(|_| OpStats::new()).collect();
            let mut distinct = Vec::with_capacity(plan.runs);
            for r in 0..plan.runs {
                let tag = Tag {
                    seed: plan.seed_for(type_tag, dist, li, r),
                    n,
                };
                cx.sink.say(format!(
                    "{what} {vl} lf {lf} run {}/{}: {}{n} keys",
                    r + 1,
                    plan.runs,
                    if host.is_ready(r, tag) {
                        ""
                    } else {
                        "generating "
                    }
                ));
                let w = host.get(r, tag)?;
                let slot = dev.load(gpu, r, w)?;
                let d = dev.sets[slot].as_ref().expect("loaded");
                distinct.push(w.distinct);
                run_once(
                    gpu,
                    plan,
                    table,
                    timer,
                    w,
                    d,
                    (&mut dev.out, &mut dev.found),
                    (&mut h_out, &mut h_found),
                    &mut stats,
                    r,
                )?;
                cx.sink.step(format!(
                    "{what} {vl} lf {lf} run {}/{} done",
                    r + 1,
                    plan.runs
                ));
            }
            // After the runs: a table that grows (two_level's bucket splits) reports what it
            // ended at.
            let capacity = table.capacity();
            let m = Measured {
                scheme: table.scheme(),
                backend: Backend::Gpu,
                key_bytes: K::BYTES,
                value_bytes: V::BYTES,
                key_type: K::NAME,
                value_type: V::NAME,
                capacity,
                group_size: b.group_size,
                filter_bits: b.filter_bits,
                memory_bytes: table.memory_bytes(),
                stadium: b.stadium.clone(),
                n,
                load_factor: lf,
                roofline: cx.roofline,
                distribution: dist,
                distinct,
                two_level: b.two_level,
                counters: table.counters()?,
            };
            m.push_selected(&plan.ops, stats, &mut cx.sink.results);
        }
    }
    Ok(())
}

/// One timed and verified run of every selected operation on the cleared table.
#[allow(clippy::too_many_arguments)]
fn run_once<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    plan: &Plan,
    table: &mut dyn DeviceHashTable<K, V>,
    timer: &Timer,
    w: &Workload<K, V>,
    d: &DevSet<K, V>,
    (d_out, d_found): (&mut DeviceBuffer<V>, &mut DeviceBuffer<u8>),
    (out, found): (&mut [V], &mut [u8]),
    stats: &mut [OpStats],
    r: usize,
) -> Result<()> {
    let n = w.keys.len();
    let on = |op: Op| plan.ops.contains(&op);
    table.clear()?;

    // insert (always: the other operations need the filled table)
    let s = &mut stats[Op::Insert.index()];
    timer.start()?;
    table.insert_device_async(&d.keys, &d.vals, None)?;
    s.ms.push(timer.stop_ms()?);
    table_full_is_failure(table.synchronize(), &mut s.failures, r)?;
    let len = table.len()?;
    s.failures
        .extend(check_len_after_insert(r, len, n, w.distinct));

    // find_hit, find_half: outputs poisoned, so an unwritten element fails; every answer
    // checked (find_half: the inserted key at even positions, an absent one at odd ones).
    for (op, queries, what) in [
        (
            Op::FindHit,
            &d.keys,
            "inserted keys not found or with a wrong value",
        ),
        (
            Op::FindHalf,
            &d.half,
            "half-present queries answered wrongly",
        ),
    ] {
        if !on(op) {
            continue;
        }
        let s = &mut stats[op.index()];
        gpu.fill_bytes(d_out, 0xaa)?;
        gpu.fill_bytes(d_found, 0xaa)?;
        timer.start()?;
        table.find_device_async(queries, d_out, d_found)?;
        s.ms.push(timer.stop_ms()?);
        table_full_is_failure(table.synchronize(), &mut s.failures, r)?;
        gpu.copy_to_host(d_found, found)?;
        gpu.copy_to_host(d_out, out)?;
        let bad = if op == Op::FindHit {
            bad_hits(&w.keys, out, found)
        } else {
            bad_half(&w.keys, out, found)
        };
        if bad > 0 {
            s.failures.push(format!("run {r}: {bad} of {n} {what}"));
        }
    }

    // find_miss
    if on(Op::FindMiss) {
        let s = &mut stats[Op::FindMiss.index()];
        gpu.fill_bytes(d_found, 0xaa)?;
        timer.start()?;
        table.find_device_async(&d.miss, d_out, d_found)?;
        s.ms.push(timer.stop_ms()?);
        table_full_is_failure(table.synchronize(), &mut s.failures, r)?;
        gpu.copy_to_host(d_found, found)?;
        let bad = bad_misses(found);
        if bad > 0 {
            s.failures.push(format!(
                "run {r}: {bad} of {n} absent keys found (or unwritten)"
            ));
        }
    }

    // find_unordered: the answers in the table's order, each with its key's batch index
    if on(Op::FindUnordered) {
        let s = &mut stats[Op::FindUnordered.index()];
        timer.start()?;
        let u = table.find_device_unordered_async(&d.keys)?;
        s.ms.push(timer.stop_ms()?);
        table_full_is_failure(table.synchronize(), &mut s.failures, r)?;
        let index = gpu.download(&u.index)?;
        gpu.copy_to_host(&u.found, found)?;
        gpu.copy_to_host(&u.values, out)?;
        let mut seen = vec![false; n];
        let mut keys_in_answer_order = Vec::with_capacity(n);
        let mut bad_index = 0usize;
        for &i in &index {
            let i = i as usize;
            if i >= n || std::mem::replace(&mut seen[i], true) {
                bad_index += 1;
                keys_in_answer_order.push(w.keys[0]);
            } else {
                keys_in_answer_order.push(w.keys[i]);
            }
        }
        let bad = bad_index + bad_hits(&keys_in_answer_order, out, found);
        if bad > 0 {
            s.failures.push(format!(
                "run {r}: {bad} of {n} unordered answers wrong ({bad_index} bad indices)"
            ));
        }
    }

    // contains
    if on(Op::Contains) {
        let s = &mut stats[Op::Contains.index()];
        gpu.fill_bytes(d_found, 0xaa)?;
        timer.start()?;
        table.contains_device_async(&d.keys, d_found)?;
        s.ms.push(timer.stop_ms()?);
        table_full_is_failure(table.synchronize(), &mut s.failures, r)?;
        gpu.copy_to_host(d_found, found)?;
        let bad = bad_contains(found);
        if bad > 0 {
            s.failures
                .push(format!("run {r}: {bad} of {n} inserted keys not contained"));
        }
    }

    // erase
    if on(Op::Erase) {
        let s = &mut stats[Op::Erase.index()];
        timer.start()?;
        table.erase_device_async(&d.keys)?;
        s.ms.push(timer.stop_ms()?);
        table_full_is_failure(table.synchronize(), &mut s.failures, r)?;
        let len = table.len()?;
        if len != 0 {
            s.failures
                .push(format!("run {r}: len {len} after erasing all {n} keys"));
        }
    }

    // reduce: the insert's batch, reduced by key (sums) into the cleared table
    if on(Op::Reduce) {
        let s = &mut stats[Op::Reduce.index()];
        table.clear()?;
        timer.start()?;
        let sum = InsertMode::Apply(Reduce::Sum);
        match table.insert_device_async_with_mode(&d.keys, &d.vals, None, sum) {
            Err(Error::Unsupported(why)) => {
                s.failures
                    .push(format!("run {r}: reduce by key refused: {why}"));
                return Ok(());
            }
            other => other?,
        }
        s.ms.push(timer.stop_ms()?);
        table_full_is_failure(table.synchronize(), &mut s.failures, r)?;
        let len = table.len()?;
        s.failures
            .extend(check_len_after_insert(r, len, n, w.distinct));
        gpu.fill_bytes(d_out, 0xaa)?;
        gpu.fill_bytes(d_found, 0xaa)?;
        table.find_device_async(&d.keys, d_out, d_found)?;
        table.synchronize()?;
        gpu.copy_to_host(d_found, found)?;
        gpu.copy_to_host(d_out, out)?;
        let bad = bad_sums(&w.keys, &w.vals, out, found, w.distinct);
        if bad > 0 {
            s.failures.push(format!(
                "run {r}: {bad} of {n} keys not holding the sum of their rows"
            ));
        }
    }
    Ok(())
}
