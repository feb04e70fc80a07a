//! `warpmap bench --scheme dycuckoo`: DyCuckoo's presets ([`DyCuckooPreset`]) on the GPU.
//! [`run_dycuckoo`] resolves the plan and runs, for every key/value type, the static cells
//! (`static_cell`: Tables 4-8) and the dynamic workload (`dynamic_cell`: Fig. 15, with the
//! WarpDrive rebuild-on-resize baseline), and returns the [`DyCuckooReport`] (`dycuckoo-compare`
//! with its target cells).

use super::dycuckoo_report::{
    dc_target_rows, BatchPoint, DcOp, DcProgress, DcRow, DyCuckooReport, DynamicTrace,
};
use crate::harness::timing::{median, utc_now, warm_up_device};
use crate::harness::workloads::{run_seed, Tag, WorkloadSpec, Workloads};
use crate::plan::{
    resolve_dycuckoo, Distribution, DyCuckooBenchConfig, DyCuckooPlan, DyCuckooPreset, KvType,
    STATIC_BETA,
};
use std::sync::Arc;
use std::time::Instant;
use warpmap::device::{compile_log, DeviceBuffer, Timer};
use warpmap::table::dycuckoo::policy::{slots_per_bucket, Geometry};
use warpmap::table::dycuckoo::DEFAULT_SUBTABLES;
use warpmap::{
    keygen, status, DeviceHashTable, DyCuckoo, DyCuckooConfig, Error, Gpu, HashTable, Key, Result,
    Value, WarpDrive, WarpDriveConfig,
};

/// At most this many failure messages per row (the counts say the rest).
const MAX_MESSAGES: usize = 8;

/// What every cell shares.
struct Cx<'a> {
    gpu: &'a Arc<Gpu>,
    plan: &'a DyCuckooPlan,
    timer: &'a Timer,
    rows: Vec<DcRow>,
    traces: Vec<DynamicTrace>,
    progress: &'a mut dyn FnMut(DcProgress),
    type_tag: u64,
    /// `dycuckoo-sweep`: the point being measured ("alpha 0.3"), written into its rows.
    sweep: Option<String>,
}

impl Cx<'_> {
    fn say(&mut self, s: String) {
        (self.progress)(DcProgress::Step(s));
    }
    fn push(&mut self, row: DcRow) {
        (self.progress)(DcProgress::Row(&row));
        self.rows.push(row);
    }
    fn seed(&self, cell: usize, run: usize) -> u64 {
        run_seed(self.plan.seed, self.type_tag, cell, run)
    }
}

fn note(fail: &mut Vec<String>, s: String) {
    if fail.len() < MAX_MESSAGES {
        fail.push(s);
    }
}

/// Runs a DyCuckoo preset on the default GPU. `progress` hears each step and each finished
/// row. Errors are what prevents measuring; a wrong result makes its row's `verified` false.
pub fn run_dycuckoo(
    cfg: &DyCuckooBenchConfig,
    progress: &mut dyn FnMut(DcProgress),
) -> Result<DyCuckooReport> {
    let started = Instant::now();
    let date = utc_now();
    let plan = resolve_dycuckoo(cfg)?;
    let gpu = Gpu::default_gpu()?;
    let timer = gpu.timer()?;
    let (mut rows, mut dynamic) = (Vec::new(), Vec::new());
    for ty in plan.types.clone() {
        let mut cx = Cx {
            gpu: &gpu,
            plan: &plan,
            timer: &timer,
            rows: Vec::new(),
            traces: Vec::new(),
            progress: &mut *progress,
            type_tag: ty.seed_tag(),
            sweep: None,
        };
        match ty {
            KvType::U64 => run_type::<u64, u64>(&mut cx)?,
            _ => run_type::<u32, u32>(&mut cx)?,
        }
        rows.append(&mut cx.rows);
        dynamic.append(&mut cx.traces);
    }
    let targets = if plan.preset == DyCuckooPreset::DycuckooCompare {
        dc_target_rows(&rows)
    } else {
        Vec::new()
    };
    Ok(DyCuckooReport {
        preset: plan.preset,
        device: format!("{} sm_{}", gpu.name(), gpu.sm()),
        commit: cfg.commit.clone(),
        date,
        method: plan.method(),
        plan,
        rows,
        dynamic,
        targets,
        host_threads: rayon::current_num_threads(),
        compile: compile_log(),
        wall_s: started.elapsed().as_secs_f64(),
    })
}

fn run_type<K: Key, V: Value>(cx: &mut Cx<'_>) -> Result<()> {
    let plan = cx.plan;
    let compare = plan.preset == DyCuckooPreset::DycuckooCompare;
    if let Some(n) = plan.static_n() {
        for (i, &f) in plan.fills.iter().enumerate() {
            static_cell::<K, V>(cx, if compare { "compare" } else { "static" }, n, f, i)?;
        }
    }
    // `WARPMAP_BENCH_TRIM=1`: the pool's kept memory (the static cells' scratch) given back
    // before the dynamic cell (a measurement of what that memory costs the cell after it).
    if std::env::var_os("WARPMAP_BENCH_TRIM").is_some() {
        cx.gpu.trim_pool()?;
    }
    if plan.batch().is_some() && plan.sweep.is_empty() {
        dynamic_cell::<K, V>(cx, if compare { "compare" } else { "dynamic" }, 1 << 20)?;
    }
    // dycuckoo-sweep: the dynamic workload once per point, each its own plan.
    for (i, point) in plan.sweep.iter().enumerate() {
        let p = point.apply(plan);
        let mut sub = Cx {
            gpu: cx.gpu,
            plan: &p,
            timer: cx.timer,
            rows: Vec::new(),
            traces: Vec::new(),
            progress: &mut *cx.progress,
            type_tag: cx.type_tag,
            sweep: Some(point.label()),
        };
        dynamic_cell::<K, V>(&mut sub, "sweep", (1 << 20) + i)?;
        let (mut rows, mut traces) = (sub.rows, sub.traces);
        cx.rows.append(&mut rows);
        cx.traces.append(&mut traces);
    }
    Ok(())
}

/// The slots of a DyCuckoo table made for `capacity` keys of `K` (whole buckets of equal
/// subtables).
fn static_capacity<K: Key>(capacity: usize) -> usize {
    Geometry::for_capacity(
        capacity,
        DEFAULT_SUBTABLES as usize,
        slots_per_bucket(K::BYTES),
    )
    .capacity()
}

/// One static cell: a table of about `n / fill` slots that never resizes, filled to `fill`;
/// rows build (with the keys not placed), find hit, find miss, erase.
fn static_cell<K: Key, V: Value>(
    cx: &mut Cx<'_>,
    experiment: &'static str,
    n_nominal: usize,
    fill: f64,
    cell: usize,
) -> Result<()> {
    let (gpu, plan, timer) = (cx.gpu, cx.plan, cx.timer);
    let cap = static_capacity::<K>((n_nominal as f64 / fill).ceil() as usize);
    let n = ((fill * cap as f64).floor() as usize).max(1);
    let what = format!("{experiment} {}/{} fill {fill} n {n}", K::NAME, V::NAME);
    cx.say(format!("{what}: {cap} slots, warming up"));
    // β above every swept fill and the capacity its own maximum: the table never resizes, so
    // a key that finds no place within the eviction limit is reported (TABLE_FULL).
    let config = DyCuckooConfig::new(cap)
        .fill_bounds(0.1, STATIC_BETA)
        .min_capacity(cap)
        .max_capacity(cap);
    let mut t = DyCuckoo::<K, V>::new(gpu.clone(), config)?;
    warm_up_device(gpu, &mut t, timer, 1 << 12, plan.seed)?;
    t.clear()?;
    let capacity = t.capacity();

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
    let mut d_st = gpu.alloc::<u32>(n)?;
    let mut d_out = gpu.alloc::<V>(n)?;
    let mut d_found = gpu.alloc::<u8>(n)?;
    let (mut st, mut out, mut found) = (vec![0u32; n], vec![V::zeroed(); n], vec![0u8; n]);

    let mut ms: [Vec<f64>; 4] = Default::default();
    let mut fail: [Vec<String>; 4] = Default::default();
    let (mut unplaced, mut fills, mut memory) = (0usize, Vec::new(), 0usize);
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
        gpu.fill_bytes(&mut d_st, 0xaa)?;

        timer.start()?;
        t.insert_device_async(&dk, &dv, Some(&mut d_st))?;
        ms[0].push(timer.stop_ms()?);
        match t.synchronize() {
            // Keys not placed are what this cell counts (below, from their status).
            Ok(()) | Err(Error::TableFull { .. }) => {}
            Err(e) => return Err(e),
        }
        gpu.copy_to_host(&d_st, &mut st)?;
        let placed: Vec<bool> = st.iter().map(|s| s & status::FAILURE_MASK == 0).collect();
        let lost = placed.iter().filter(|p| !**p).count();
        let other = st
            .iter()
            .filter(|s| *s & status::FAILURE_MASK != 0 && *s & status::TABLE_FULL == 0)
            .count();
        if other > 0 {
            note(
                &mut fail[0],
                format!("run {r}: {other} keys failed other than TABLE_FULL"),
            );
        }
        unplaced += lost;
        let len = t.len()?;
        if len != n - lost {
            note(
                &mut fail[0],
                format!("run {r}: len {len}, {} keys placed", n - lost),
            );
        }
        fills.push(len as f64 / capacity as f64);
        memory = t.memory_bytes();

        gpu.fill_bytes(&mut d_out, 0xaa)?;
        gpu.fill_bytes(&mut d_found, 0xaa)?;
        timer.start()?;
        t.find_device_async(&dk, &mut d_out, &mut d_found)?;
        ms[1].push(timer.stop_ms()?);
        t.synchronize()?;
        gpu.copy_to_host(&d_found, &mut found)?;
        gpu.copy_to_host(&d_out, &mut out)?;
        let bad = (0..n)
            .filter(|&i| {
                if placed[i] {
                    found[i] != 1 || out[i] != keygen::value_for::<K, V>(w.keys[i])
                } else {
                    found[i] != 0
                }
            })
            .count();
        if bad > 0 {
            note(
                &mut fail[1],
                format!("run {r}: {bad} of {n} keys found wrongly (placed keys missing or with a wrong value, or unplaced keys found)"),
            );
        }

        gpu.fill_bytes(&mut d_found, 0xaa)?;
        timer.start()?;
        t.find_device_async(&dm, &mut d_out, &mut d_found)?;
        ms[2].push(timer.stop_ms()?);
        t.synchronize()?;
        gpu.copy_to_host(&d_found, &mut found)?;
        let bad = found.iter().filter(|f| **f != 0).count();
        if bad > 0 {
            note(
                &mut fail[2],
                format!("run {r}: {bad} of {n} absent keys found (or unwritten)"),
            );
        }

        timer.start()?;
        t.erase_device_async(&dk)?;
        ms[3].push(timer.stop_ms()?);
        t.synchronize()?;
        let len = t.len()?;
        if len != 0 {
            note(
                &mut fail[3],
                format!("run {r}: len {len} after erasing all {n} keys"),
            );
        }
    }
    let ops = [DcOp::Build, DcOp::FindHit, DcOp::FindMiss, DcOp::Erase];
    let build_fail: Vec<String> = fail[0].iter().map(|f| format!("build {f}")).collect();
    for (i, (op, mut f)) in ops.into_iter().zip(fail).enumerate() {
        if i > 0 {
            f.extend(build_fail.iter().cloned());
        }
        let mut row = DcRow::new::<K, V>(experiment, op, n, n, &ms[i], f);
        row.fill = Some(fill);
        row.fill_measured = Some(median(&fills));
        row.capacity = Some(capacity);
        row.memory_bytes = memory;
        if op == DcOp::Build {
            row.unplaced = Some(unplaced);
            row.unplaced_percent = Some(100.0 * unplaced as f64 / (n * plan.runs) as f64);
        }
        cx.push(row);
    }
    Ok(())
}

/// Device buffers for one operation of `len` keys (inputs and outputs), reused per batch.
struct OpBufs<K: Key, V: Value> {
    keys: DeviceBuffer<K>,
    vals: DeviceBuffer<V>,
    status: DeviceBuffer<u32>,
}

impl<K: Key, V: Value> OpBufs<K, V> {
    fn new(gpu: &Gpu, len: usize) -> Result<Self> {
        Ok(OpBufs {
            keys: gpu.alloc::<K>(len.max(1))?,
            vals: gpu.alloc::<V>(len.max(1))?,
            status: gpu.alloc::<u32>(len.max(1))?,
        })
    }
}

/// The keys of the workload and which are present now (the host model).
struct Model<K: Key, V: Value> {
    keys: Vec<K>,
    vals: Vec<V>,
    present: Vec<bool>,
    len: usize,
}

impl<K: Key, V: Value> Model<K, V> {
    fn set(&mut self, range: std::ops::Range<usize>, on: bool) {
        for i in range {
            if self.present[i] != on {
                self.present[i] = on;
                if on {
                    self.len += 1;
                } else {
                    self.len -= 1;
                }
            }
        }
    }
    /// Every present key and its value (a rebuild's input).
    fn present_pairs(&self) -> (Vec<K>, Vec<V>) {
        let idx = (0..self.keys.len()).filter(|&i| self.present[i]);
        idx.map(|i| (self.keys[i], self.vals[i])).unzip()
    }
}

/// One batch operation: which keys, inserted or found or erased.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Insert,
    Find,
    Erase,
}

/// A batch of the workload: whether it is of the replay, and its insert, find and erase.
type Batch = (bool, [(Kind, std::ops::Range<usize>); 3]);

/// Finds of `range` checked against the model; returns the wrong ones.
fn check_finds<K: Key, V: Value>(
    m: &Model<K, V>,
    range: std::ops::Range<usize>,
    out: &[V],
    found: &[u8],
) -> usize {
    range
        .enumerate()
        .filter(|&(j, i)| {
            if m.present[i] {
                found[j] != 1 || out[j] != m.vals[i]
            } else {
                found[j] != 0
            }
        })
        .count()
}

/// Times one operation of `range` on `t` (an erase followed by `after`, e.g. a shrink);
/// checks it against the model (already updated for it).
#[allow(clippy::too_many_arguments)]
fn timed_op<K: Key, V: Value, T: DeviceHashTable<K, V>>(
    gpu: &Gpu,
    timer: &Timer,
    t: &mut T,
    after: &mut dyn FnMut(&mut T) -> Result<()>,
    bufs: &mut OpBufs<K, V>,
    found: &mut (DeviceBuffer<V>, DeviceBuffer<u8>),
    model: &Model<K, V>,
    kind: Kind,
    range: std::ops::Range<usize>,
    fail: &mut Vec<String>,
    what: &str,
) -> Result<f64> {
    let len = range.len();
    if len == 0 {
        // r = 0: no erase in the first half, no insert in the replay.
        return Ok(0.0);
    }
    gpu.copy_to_device(&model.keys[range.clone()], &mut bufs.keys)?;
    let ms = match kind {
        Kind::Insert => {
            gpu.copy_to_device(&model.vals[range.clone()], &mut bufs.vals)?;
            gpu.fill_bytes(&mut bufs.status, 0xaa)?;
            timer.start()?;
            let host = Instant::now();
            t.insert_device_async(&bufs.keys, &bufs.vals, Some(&mut bufs.status))?;
            let host = host.elapsed();
            let ms = timer.stop_ms()?;
            if trace_inserts() {
                eprintln!(
                    "warpmap bench {what}: insert of {len} keys: host {:.1} us, events {:.1} us",
                    host.as_secs_f64() * 1e6,
                    ms * 1e3
                );
            }
            match t.synchronize() {
                Ok(()) | Err(Error::TableFull { .. }) => {}
                Err(e) => return Err(e),
            }
            let st = gpu.download(&bufs.status)?;
            let bad = st
                .iter()
                .filter(|s| **s & status::FAILURE_MASK != 0)
                .count();
            if bad > 0 {
                note(fail, format!("{what}: {bad} of {len} inserts not placed"));
            }
            ms
        }
        Kind::Find => {
            gpu.fill_bytes(&mut found.0, 0xaa)?;
            gpu.fill_bytes(&mut found.1, 0xaa)?;
            timer.start()?;
            t.find_device_async(&bufs.keys, &mut found.0, &mut found.1)?;
            let ms = timer.stop_ms()?;
            t.synchronize()?;
            let (out, f) = (gpu.download(&found.0)?, gpu.download(&found.1)?);
            let bad = check_finds(model, range, &out, &f);
            if bad > 0 {
                note(fail, format!("{what}: {bad} of {len} finds wrong"));
            }
            ms
        }
        Kind::Erase => {
            timer.start()?;
            let host = Instant::now();
            t.erase_device_async(&bufs.keys)?;
            let launched = host.elapsed();
            after(t)?;
            let host = host.elapsed();
            let ms = timer.stop_ms()?;
            if trace_inserts() {
                eprintln!(
                    "warpmap bench {what}: erase of {len} keys: host {:.1} us (launch {:.1} us), events {:.1} us",
                    host.as_secs_f64() * 1e6,
                    launched.as_secs_f64() * 1e6,
                    ms * 1e3
                );
            }
            t.synchronize()?;
            ms
        }
    };
    let got = t.len()?;
    if got != model.len {
        note(fail, format!("{what}: len {got}, the model {}", model.len));
    }
    Ok(ms)
}

/// Whether each timed insert and erase prints its host time beside its events' time
/// (`WARPMAP_TRACE_DYCUCKOO`, which also traces the table's growth checks).
fn trace_inserts() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("WARPMAP_TRACE_DYCUCKOO").is_some())
}

/// The baseline: a static WarpDrive table resized by rebuilding.
struct Baseline<K: Key, V: Value> {
    table: WarpDrive<K, V>,
    first: usize,
    slots: usize,
    rebuilds: u64,
}

impl<K: Key, V: Value> Baseline<K, V> {
    /// Rebuilds at `slots` from the model's present keys; returns the reinsert's ms.
    fn rebuild(
        &mut self,
        gpu: &Arc<Gpu>,
        timer: &Timer,
        m: &Model<K, V>,
        slots: usize,
        fail: &mut Vec<String>,
    ) -> Result<f64> {
        let (k, v) = m.present_pairs();
        // The old table goes first: both would not fit where the new one barely does.
        self.table = WarpDrive::<K, V>::new(gpu.clone(), WarpDriveConfig::new(64))?;
        let mut t = WarpDrive::<K, V>::new(gpu.clone(), WarpDriveConfig::new(slots))?;
        let mut ms = 0.0;
        if !k.is_empty() {
            let (dk, dv) = (gpu.upload(&k)?, gpu.upload(&v)?);
            timer.start()?;
            t.insert_device_async(&dk, &dv, None)?;
            ms = timer.stop_ms()?;
            match t.synchronize() {
                Ok(()) => {}
                Err(Error::TableFull { .. }) => note(fail, "rebuild: keys not placed".into()),
                Err(e) => return Err(e),
            }
        }
        self.table = t;
        self.slots = slots;
        self.rebuilds += 1;
        Ok(ms)
    }
}

/// Totals of one run of the workload, per operation, ms.
#[derive(Default, Clone, Copy)]
struct Totals {
    insert: f64,
    find: f64,
    erase: f64,
}

impl Totals {
    fn all(&self) -> f64 {
        self.insert + self.find + self.erase
    }
}

/// The dynamic workload and its baseline: rows insert, find, erase and all for each.
fn dynamic_cell<K: Key, V: Value>(
    cx: &mut Cx<'_>,
    experiment: &'static str,
    cell: usize,
) -> Result<()> {
    let (gpu, plan, timer) = (cx.gpu, cx.plan, cx.timer);
    let (b, k) = (plan.batch().unwrap_or(1), plan.batches.unwrap_or(1));
    let e = plan.erases_per_batch().unwrap_or(0);
    let (alpha, beta) = (plan.alpha.unwrap_or(0.4), plan.beta.unwrap_or(0.9));
    let total = b * k;
    let what = format!("{experiment} {}/{} dynamic {k} x {b}", K::NAME, V::NAME);
    let mut bufs_b = OpBufs::<K, V>::new(gpu, b)?;
    let mut bufs_e = OpBufs::<K, V>::new(gpu, e)?;
    let mut found = (gpu.alloc::<V>(b)?, gpu.alloc::<u8>(b)?);
    let mut dc_fail = Vec::new();
    let mut wd_fail = Vec::new();
    let (mut dc_runs, mut wd_runs) = (Vec::<Totals>::new(), Vec::<Totals>::new());
    let (mut dc_fill, mut wd_load) = ((f64::INFINITY, 0.0f64), (f64::INFINITY, 0.0f64));
    let (mut dc_peak, mut wd_peak, mut dc_resizes, mut wd_rebuilds, mut dc_mem, mut wd_mem) =
        (0usize, 0usize, 0u64, 0u64, 0usize, 0usize);
    let mut points = Vec::new();
    for r in 0..plan.runs {
        cx.say(format!("{what} run {}/{}: keys", r + 1, plan.runs));
        let keys = keygen::unique::<K>(total, cx.seed(cell, r))?;
        let vals: Vec<V> = keygen::values_for(&keys);
        let mut model = Model {
            keys,
            vals,
            present: vec![false; total],
            len: 0,
        };
        // The batches' ranges: (insert, find, erase) of batch i, both halves.
        let ops: Vec<Batch> = (0..2 * k)
            .map(|j| {
                let i = j % k;
                let (mine, erased) = (i * b..(i + 1) * b, i * e..(i + 1) * e);
                if j < k {
                    (
                        false,
                        [
                            (Kind::Insert, mine.clone()),
                            (Kind::Find, mine),
                            (Kind::Erase, erased),
                        ],
                    )
                } else {
                    (
                        true,
                        [
                            (Kind::Insert, erased),
                            (Kind::Find, mine.clone()),
                            (Kind::Erase, mine),
                        ],
                    )
                }
            })
            .collect();

        cx.say(format!("{what} run {}/{}: DyCuckoo", r + 1, plan.runs));
        let config = DyCuckooConfig::new(b)
            .fill_bounds(alpha, beta)
            .min_capacity(0);
        let mut t = DyCuckoo::<K, V>::new(gpu.clone(), config)?;
        warm_up_device(gpu, &mut t, timer, 1 << 12, plan.seed)?;
        t.clear()?;
        let mut tot = Totals::default();
        // Device-buffer erases do not shrink DyCuckoo: the policy is applied after each.
        let mut shrink = |t: &mut DyCuckoo<K, V>| t.fit_fill_bounds();
        for (j, (replay, batch)) in ops.iter().enumerate() {
            let mut p = BatchPoint {
                batch: j,
                replay: *replay,
                ..Default::default()
            };
            for (kind, range) in batch.iter().cloned() {
                match kind {
                    Kind::Insert => model.set(range.clone(), true),
                    Kind::Erase => model.set(range.clone(), false),
                    Kind::Find => {}
                }
                let bufs = if range.len() == b {
                    &mut bufs_b
                } else {
                    &mut bufs_e
                };
                let label = format!("run {r} batch {j}");
                let ms = timed_op(
                    gpu,
                    timer,
                    &mut t,
                    &mut shrink,
                    bufs,
                    &mut found,
                    &model,
                    kind,
                    range,
                    &mut dc_fail,
                    &label,
                )?;
                match kind {
                    Kind::Insert => {
                        tot.insert += ms;
                        p.insert_ms = ms;
                    }
                    Kind::Find => {
                        tot.find += ms;
                        p.find_ms = ms;
                    }
                    Kind::Erase => {
                        tot.erase += ms;
                        p.erase_ms = ms;
                    }
                }
            }
            let s = t.stats()?;
            p.len = model.len;
            p.fill = s.fill_factor();
            p.memory_bytes = t.memory_bytes();
            dc_fill = (dc_fill.0.min(p.fill), dc_fill.1.max(p.fill));
            dc_peak = dc_peak.max(p.memory_bytes);
            dc_mem = p.memory_bytes;
            dc_resizes = s.upsizes + s.downsizes;
            points.push(p);
        }
        dc_runs.push(tot);
        let s = t.stats()?;
        cx.say(format!(
            "{what} run {}/{}: insert batches {} counted, {} grown on the bound, {} fresh, {} checked ({} keys left by first fit); {} upsizes, {} downsizes",
            r + 1,
            plan.runs,
            s.counted_batches,
            s.grown_on_bound_batches,
            s.fresh_batches,
            s.checked_batches,
            s.first_fit_left,
            s.upsizes,
            s.downsizes
        ));
        drop(t);
        for x in model.present.iter_mut() {
            *x = false;
        }
        model.len = 0;

        if plan.baseline {
            cx.say(format!(
                "{what} run {}/{}: WarpDrive rebuilds",
                r + 1,
                plan.runs
            ));
            let first = (b as f64 / beta).ceil() as usize;
            let mut base = Baseline {
                table: WarpDrive::<K, V>::new(gpu.clone(), WarpDriveConfig::new(first))?,
                first,
                slots: first,
                rebuilds: 0,
            };
            warm_up_device(gpu, &mut base.table, timer, 1 << 12, plan.seed)?;
            base.table.clear()?;
            let mut tot = Totals::default();
            let mut none = |_: &mut WarpDrive<K, V>| -> Result<()> { Ok(()) };
            for (j, (_, batch)) in ops.iter().enumerate() {
                let mut batch_ms = 0.0;
                for (kind, range) in batch.iter().cloned() {
                    let mut rebuild_ms = 0.0;
                    if kind == Kind::Insert {
                        // Doubled before an insert that would take the load above β.
                        let mut slots = base.slots;
                        while (model.len + range.len()) as f64 > beta * slots as f64 {
                            slots *= 2;
                        }
                        if slots != base.slots {
                            rebuild_ms += base.rebuild(gpu, timer, &model, slots, &mut wd_fail)?;
                        }
                        model.set(range.clone(), true);
                    } else if kind == Kind::Erase {
                        model.set(range.clone(), false);
                    }
                    let bufs = if range.len() == b {
                        &mut bufs_b
                    } else {
                        &mut bufs_e
                    };
                    let label = format!("run {r} batch {j} (WarpDrive)");
                    let ms = timed_op(
                        gpu,
                        timer,
                        &mut base.table,
                        &mut none,
                        bufs,
                        &mut found,
                        &model,
                        kind,
                        range,
                        &mut wd_fail,
                        &label,
                    )?;
                    if kind == Kind::Erase {
                        // Halved after an erase that leaves the load below α.
                        let mut slots = base.slots;
                        while slots / 2 >= base.first
                            && (model.len as f64) < alpha * slots as f64
                            && model.len as f64 <= beta * (slots / 2) as f64
                        {
                            slots /= 2;
                        }
                        if slots != base.slots {
                            rebuild_ms += base.rebuild(gpu, timer, &model, slots, &mut wd_fail)?;
                        }
                    }
                    let ms = ms + rebuild_ms;
                    batch_ms += ms;
                    match kind {
                        Kind::Insert => tot.insert += ms,
                        Kind::Find => tot.find += ms,
                        Kind::Erase => tot.erase += ms,
                    }
                }
                let load = model.len as f64 / base.table.capacity() as f64;
                wd_load = (wd_load.0.min(load), wd_load.1.max(load));
                wd_mem = base.table.memory_bytes();
                wd_peak = wd_peak.max(wd_mem);
                if r == 0 {
                    let p = &mut points[j];
                    p.baseline_ms = Some(batch_ms);
                    p.baseline_load = Some(load);
                    p.baseline_memory_bytes = Some(wd_mem);
                }
            }
            wd_runs.push(tot);
            wd_rebuilds = base.rebuilds;
        }
        if r == 0 {
            cx.traces.push(DynamicTrace {
                types: format!("{}/{}", K::NAME, V::NAME),
                points: std::mem::take(&mut points),
            });
        } else {
            points.clear();
        }
    }

    let counts = [
        (DcOp::Insert, k * b + k * e),
        (DcOp::Find, 2 * k * b),
        (DcOp::Erase, k * e + k * b),
        (DcOp::All, 2 * k * (2 * b + e)),
    ];
    let pick = |t: &Totals, op: DcOp| match op {
        DcOp::Insert => t.insert,
        DcOp::Find => t.find,
        DcOp::Erase => t.erase,
        _ => t.all(),
    };
    for (op, ops) in counts {
        let ms: Vec<f64> = dc_runs.iter().map(|t| pick(t, op)).collect();
        let mut row = DcRow::new::<K, V>(experiment, op, total, ops, &ms, dc_fail.clone());
        row.batch = Some(b);
        row.batches = Some(2 * k);
        (row.alpha, row.beta, row.ratio) = (Some(alpha), Some(beta), plan.ratio);
        row.sweep = cx.sweep.clone();
        row.fill_range = Some(dc_fill);
        row.peak_memory_bytes = Some(dc_peak);
        row.resizes = Some(dc_resizes);
        row.memory_bytes = dc_mem;
        let base_ms: Vec<f64> = wd_runs.iter().map(|t| pick(t, op)).collect();
        if !base_ms.is_empty() && row.median_ms > 0.0 {
            row.speedup = Some(median(&base_ms) / row.median_ms);
        }
        let base = (!base_ms.is_empty()).then(|| {
            let mut w = DcRow::new::<K, V>(experiment, op, total, ops, &base_ms, wd_fail.clone());
            w.scheme = "warpdrive";
            w.batch = Some(b);
            w.batches = Some(2 * k);
            (w.alpha, w.beta, w.ratio) = (Some(alpha), Some(beta), plan.ratio);
            w.sweep = cx.sweep.clone();
            w.fill_range = Some(wd_load);
            w.peak_memory_bytes = Some(wd_peak);
            w.resizes = Some(wd_rebuilds);
            w.memory_bytes = wd_mem;
            w
        });
        cx.push(row);
        if let Some(w) = base {
            cx.push(w);
        }
    }
    Ok(())
}
