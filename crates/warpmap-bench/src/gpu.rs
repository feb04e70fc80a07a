//! The GPU benchmark: the roofline, then the plan's scheme (WarpDrive, or Stadium) through the
//! device-buffer API ([`DeviceHashTable`]), every kernel timed alone with CUDA events.
//!
//! Loop order: type, distribution, variant (WarpDrive group size, or Stadium (location, ticket
//! size)), load factor, run. One loop for every scheme: [`build_table`] makes the variant's table
//! as a `dyn DeviceHashTable` with what its rows report beside it. Host-bucket Stadium tables get
//! their bound measured once per table size, before their runs. Fixed slots: a table per
//! (type, distribution, group size), cleared between runs and load factors. Fixed keys: a table
//! per load factor too, dropped (its device memory freed) before the next is made; the run key
//! sets of a (type, distribution) are generated once (host cache) and uploaded once when all of
//! them fit in device memory beside the largest table (else uploaded per run).

use super::plan::Variant;
use super::plan::{with_kv_types, Distribution, Plan};
use super::roofline::{self, RooflineConfig};
use super::workload::{
    bad_contains, bad_half, bad_hits, bad_misses, check_len_after_insert, resize_par, Tag,
    Workload, WorkloadSpec, Workloads,
};
use super::{
    keys_for, BenchResult, HostBound, Measured, Op, OpStats, Progress, Roofline, Sink, StadiumInfo,
};
use std::sync::Arc;
use warpmap::device::{DeviceBuffer, Timer};
use warpmap::key::{Key, Value};
use warpmap::keygen;
use warpmap::table::stadium::Location;
use warpmap::table::warpdrive::SlotLayout;
use warpmap::table::{Backend, DeviceHashTable};
use warpmap::{Error, Gpu, Result, Stadium, StadiumConfig, WarpDrive, WarpDriveConfig};

pub(crate) const METHOD: &str = "GPU: CUDA events around each kernel launch only (keys and values \
uploaded and outputs poisoned before the start event; verification after the stop event); one \
warm-up of every kernel per table; median of the runs; fresh unique keys every run (new seed) \
into the cleared table; every run verified (insert: no failures and len == n; find_hit: all found \
with value_for(key), downloaded and checked; find_miss: none found; contains: all present; \
erase: len == 0; find_half, when measured: every answer checked). Roofline: random 8-byte gathers and CASes on a u64 table far beyond \
L2 and a copy of it (bytes read + written), CUDA events, one warm-up then the median (sizes in the \
roofline object)";

/// Turns a `TableFull` from `synchronize` into a verification failure; other errors stop.
pub(super) fn table_full_is_failure(
    r: Result<()>,
    failures: &mut Vec<String>,
    run: usize,
) -> Result<()> {
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
    progress: &mut dyn FnMut(Progress),
) -> Result<(Roofline, Vec<BenchResult>)> {
    let rcfg = RooflineConfig::new(plan.quick);
    let total = 3 + (plan.sets() * plan.runs) as u64;
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
    let timer = gpu.timer()?;
    let mut bounds = Vec::new();
    for &ty in &plan.types {
        for &dist in &plan.distributions {
            let mut cx = SetCx {
                gpu,
                plan,
                roofline: &roof,
                sink: &mut sink,
                timer: &timer,
                bounds: &mut bounds,
            };
            with_kv_types!(ty, bench_set(&mut cx, dist))?;
        }
    }
    let mut roof = roof;
    roof.host_bounds = bounds;
    Ok((roof, sink.results))
}

/// What every set of a run shares.
pub(super) struct SetCx<'a, 'b> {
    pub gpu: &'a Arc<Gpu>,
    pub plan: &'a Plan,
    pub roofline: &'a Roofline,
    pub sink: &'a mut Sink<'b>,
    pub timer: &'a Timer,
    /// The host bounds measured so far (one per table size and record size).
    pub bounds: &'a mut Vec<HostBound>,
}

/// A table under test and what its rows report beside the measurements.
struct Built<K: Key, V: Value> {
    table: Box<dyn DeviceHashTable<K, V>>,
    group_size: Option<u32>,
    filter_bits: Option<u32>,
    stadium: Option<StadiumInfo>,
}

/// Makes a variant's table of at least `capacity` slots or buckets.
fn build_table<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    plan: &Plan,
    v: Variant,
    capacity: usize,
) -> Result<Built<K, V>> {
    match v {
        Variant::WarpDrive { group } => {
            let t = WarpDrive::<K, V>::new(
                gpu.clone(),
                WarpDriveConfig::new(capacity)
                    .group_size(group)
                    .overflow_filter(plan.overflow_filter),
            )?;
            Ok(Built {
                group_size: Some(t.config().group_size),
                filter_bits: Some(t.filter_bits()),
                stadium: None,
                table: Box::new(t),
            })
        }
        Variant::Stadium {
            location,
            ticket_bits,
        } => {
            let t = Stadium::<K, V>::new(
                gpu.clone(),
                StadiumConfig::new(capacity)
                    .ticket_bits(ticket_bits)
                    .location(location),
            )?;
            Ok(Built {
                group_size: None,
                filter_bits: None,
                stadium: Some(StadiumInfo {
                    location,
                    ticket_bits,
                    strategy: t.config().insert_strategy,
                    host_memory_bytes: t.host_memory_bytes(),
                    bound: None,
                }),
                table: Box::new(t),
            })
        }
        Variant::Cpu => Err(Error::invalid("the GPU benchmark has no CPU variant")),
    }
}

/// A variant's short label for progress lines.
fn variant_label(v: Variant) -> String {
    match v {
        Variant::Cpu => "cpu".into(),
        Variant::WarpDrive { group } => format!("g {group}"),
        Variant::Stadium {
            location,
            ticket_bits,
        } => format!("{} T {ticket_bits}", super::location_name(location)),
    }
}

/// The host bound of a host-bucket table of `bytes` bytes of `record_bytes`-byte records:
/// measured on first use, then reused for tables of the same size.
pub(super) fn host_bound(
    cx: &mut SetCx<'_, '_>,
    bytes: u64,
    record_bytes: usize,
) -> Result<HostBound> {
    let words = (record_bytes / 4).max(1) as u64;
    let want = bytes / (4 * words) * 4 * words;
    if let Some(b) = cx
        .bounds
        .iter()
        .find(|b| b.bytes == want && b.record_bytes == record_bytes)
    {
        return Ok(b.clone());
    }
    let ops = roofline::host_bound_ops(cx.plan.quick, bytes / (4 * words));
    cx.sink.say(format!(
        "host bound: {} MiB of {record_bytes}-byte records in pinned host memory, {ops} random \
         writes and reads per kernel",
        bytes >> 20
    ));
    let b = roofline::measure_host_bound(
        cx.gpu,
        bytes,
        record_bytes,
        ops,
        cx.plan.runs,
        warpmap::device::DEFAULT_HOST_PAGES,
    )?;
    cx.bounds.push(b.clone());
    Ok(b)
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
/// run), all of `n` keys, plus the outputs.
struct DevSets<K: Key, V: Value> {
    n: usize,
    sets: Vec<Option<DevSet<K, V>>>,
    out: DeviceBuffer<V>,
    found: DeviceBuffer<u8>,
}

impl<K: Key, V: Value> DevSets<K, V> {
    fn new(gpu: &Gpu, n: usize, slots: usize) -> Result<Self> {
        Ok(DevSets {
            n,
            sets: (0..slots.max(1)).map(|_| None).collect(),
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
        if self.sets[i].is_none() {
            let set = DevSet {
                tag: None,
                keys: gpu.alloc::<K>(self.n)?,
                vals: gpu.alloc::<V>(self.n)?,
                miss: gpu.alloc::<K>(if w.miss.is_empty() { 1 } else { self.n })?,
                half: gpu.alloc::<K>(if w.half.is_empty() { 1 } else { self.n })?,
            };
            self.sets[i] = Some(set);
        }
        let d = self.sets[i].as_mut().expect("allocated above");
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

/// Every kernel once on a small batch (module load, first-launch costs), then cleared.
pub(super) fn warm_up<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    table: &mut dyn DeviceHashTable<K, V>,
    timer: &Timer,
    n: usize,
    seed: u64,
) -> Result<()> {
    let nw = n.min(1 << 16).min(table.capacity() / 2).max(1);
    let wk = keygen::unique::<K>(nw, seed ^ 0x3a3a)?;
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
    table.clear()
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
            // The table (WarpDrive's slot layout or Stadium's device buckets, whichever is
            // larger, + 10% for the overflow filter, the board and slack).
            let table = SlotLayout::for_widths(kb, vb)
                .table_bytes(cap)
                .max(cap * (kb + vb)) as u64
                * 11
                / 10;
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
        let vl = variant_label(variant);
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
                warm_up(gpu, b.table.as_mut(), timer, nw, plan.seed)?;
                if let Some(st) = b.stadium.as_mut() {
                    if st.location == Location::Host {
                        st.bound = Some(host_bound(cx, st.host_memory_bytes as u64, kb + vb)?);
                    }
                }
                built = Some(b);
            }
            let b = built.as_mut().expect("made above");
            let table = b.table.as_mut();
            let capacity = table.capacity();
            let n = v_keys.unwrap_or_else(|| keys_for(lf, capacity));
            if dev.as_ref().map(|d| d.n) != Some(n) {
                drop(dev.take());
                let slots = if Some(n) == keys_mode { dev_slots } else { 1 };
                dev = Some(DevSets::new(gpu, n, slots)?);
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
    Ok(())
}
