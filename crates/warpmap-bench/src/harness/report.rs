//! The report of a run: its rows ([`BenchResult`], one per (table, key/value type, load
//! factor, operation)), the in-run [`Roofline`] and out-of-core [`HostBound`]s the rows are
//! compared with, the whole [`Report`] that `warpmap bench` prints and writes as JSON, and the
//! bookkeeping that turns one table's timed runs into rows (`Measured`).

use super::timing::{harmonic, median};
use crate::plan::{Distribution, Estimate, KvType, Op, Preset, ZipfInfo};
use crate::schemes::stadium::{location_name, StadiumInfo};
use crate::schemes::two_level::TwoLevelShape;
use crate::schemes::Scheme;
use std::collections::BTreeMap;
use warpmap::device::CompileRecord;
use warpmap::table::stadium::Location;
use warpmap::table::Backend;

/// A progress report: `done` of `total` steps, and what is running now.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Steps finished.
    pub done: u64,
    /// All steps (it does not change during a run).
    pub total: u64,
    /// What runs now.
    pub message: String,
}

/// The in-run random-access roofline (all `null` on the CPU backend).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Roofline {
    /// Random 8-byte reads, 10^9 per second.
    pub gather8_gops: Option<f64>,
    /// Random 8-byte compare-and-swaps, 10^9 per second.
    pub cas8_gops: Option<f64>,
    /// Copy bandwidth, 10^9 bytes per second (bytes read plus bytes written).
    pub copy_gbps: Option<f64>,
    /// Elements (`u64`) of the table the accesses go to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table_elements: Option<u64>,
    /// Accesses per timed gather or CAS kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops: Option<u64>,
    /// Timed runs per kernel (after one warm-up).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<usize>,
    /// The out-of-core bounds of the Stadium host-bucket tables, one per table size.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub host_bounds: Vec<HostBound>,
}

/// The bound of an out-of-core (host-bucket) table: random record writes and reads into pinned
/// mapped host memory of the table's bucket bytes ([`measure_host_bound`](super::roofline::measure_host_bound)).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct HostBound {
    /// Bytes of the host buffer (the table's buckets).
    pub bytes: u64,
    /// Bytes of one record (key + value).
    pub record_bytes: usize,
    /// Random record writes, 10^9 per second.
    pub write_gops: f64,
    /// Random record reads, 10^9 per second.
    pub read_gops: f64,
    /// Accesses per timed kernel.
    pub ops: u64,
    /// Timed runs per kernel (after one warm-up).
    pub runs: usize,
    /// How the host buffer was allocated ([`HostPages`](warpmap::HostPages)): "pinned" or "huge".
    pub pages: warpmap::HostPages,
    /// Bytes of the buffer the kernel backed with transparent huge pages (`AnonHugePages` in
    /// `/proc/self/smaps`), read after the timed runs; absent when unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub huge_page_bytes: Option<u64>,
    /// Milliseconds to allocate, zero and map the buffer (wall clock).
    pub alloc_ms: f64,
}

impl HostBound {
    /// The bound an operation's rate is compared with: random writes for insert and erase,
    /// random reads for the finds and contains.
    pub fn for_op(&self, op: Op) -> f64 {
        if op == Op::Mixed {
            harmonic(self.write_gops, self.read_gops)
        } else if op.writes() {
            self.write_gops
        } else {
            self.read_gops
        }
    }
}

/// One (table, key/value type, load factor, operation) measurement.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchResult {
    /// The table scheme ("warpdrive", "cpu", ...).
    pub scheme: String,
    /// Where it ran.
    pub backend: Backend,
    /// Key width in bytes.
    pub key_bytes: usize,
    /// Value width in bytes.
    pub value_bytes: usize,
    /// Keys per operation (for inserts: keys inserted into the empty table; mixed rows: the
    /// operations of the whole sequence, inserts plus finds).
    pub n: usize,
    /// The load factor the table is filled to (nominal; inserted keys / capacity up to
    /// rounding).
    pub load_factor: f64,
    /// The operation.
    pub op: Op,
    /// 10^9 operations (keys) per second, from the median time.
    pub gops: f64,
    /// Median time of one batch operation, milliseconds.
    pub median_ms: f64,
    /// Timed runs.
    pub runs: usize,
    /// `gops` over the roofline's `gather8_gops` (finds, contains) or `cas8_gops` (insert,
    /// erase); `null` without a roofline.
    pub roofline_ratio: Option<f64>,
    /// Whether every run's result was checked and correct.
    pub verified: bool,
    /// Key type name.
    pub key_type: &'static str,
    /// Value type name.
    pub value_type: &'static str,
    /// The table's capacity in slots.
    pub capacity: usize,
    /// WarpDrive's coalesced group size (GPU only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_size: Option<u32>,
    /// WarpDrive's overflow-filter bits per window, 0 without one (GPU only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_bits: Option<u32>,
    /// The table's device (or host) memory, `HashTable::memory_bytes`.
    pub memory_bytes: usize,
    /// Fastest run, milliseconds.
    pub min_ms: f64,
    /// Slowest run, milliseconds.
    pub max_ms: f64,
    /// What failed verification, per failing run (empty when verified).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// How the keys were drawn ("unique" or "zipf").
    pub distribution: Distribution,
    /// Zipf: distinct keys among the `n` inserted (median over the runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distinct: Option<usize>,
    /// Zipf: `distinct / capacity`, the table's occupancy after the insert.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub occupancy: Option<f64>,
    /// Stadium: where the buckets live, "device" or "host".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<&'static str>,
    /// Stadium: bits per ticket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket_bits: Option<u32>,
    /// Stadium: the insert strategy ("stash", "clstash" or "hybrid").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert_strategy: Option<&'static str>,
    /// Stadium with the hybrid insert: the load factor at which warps switch to collaborative
    /// lanes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid_threshold: Option<f64>,
    /// Stadium: host rows, `gops` over the table size's random-write (insert, erase) or
    /// random-read (finds, contains) bound (`bound_gops`); device rows, `roofline_ratio`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_ratio: Option<f64>,
    /// Stadium host rows: the bound `bound_ratio` divides by, 10^9 per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bound_gops: Option<f64>,
    /// Stadium host rows: pinned host memory of the buckets, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_memory_bytes: Option<usize>,
    /// Mixed rows ([`Op::Mixed`]): the median time of the phase-separated sequence (per slice
    /// an insert batch, then a find batch) over the median time of the mixed sequence (per
    /// slice one mixed batch): the paper's "concurrency efficiency" (Fig. 15). Above 1: the
    /// mixed batches were faster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency_efficiency: Option<f64>,
    /// Mixed rows: median time of the phase-separated sequence, milliseconds (`median_ms`,
    /// `gops` and the ratios are the mixed sequence's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub separated_ms: Option<f64>,
    /// Mixed rows: operations per slice (inserts plus finds; the paper's "approximately
    /// 100k"), the size of one mixed batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slice_ops: Option<usize>,
    /// two_level: the bucket shape (hash functions, slots per subtable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub two_level: Option<TwoLevelShape>,
    /// two_level: `n / capacity` after the runs, the fill the table ended at (a table that
    /// split buckets on the way ends below the nominal `load_factor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill: Option<f64>,
    /// The scheme's counters after the runs ([`DeviceHashTable::counters`](warpmap::DeviceHashTable::counters):
    /// two_level's bucket rebuilds, splits, buckets), by name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<&'static str, u64>,
}

/// The whole benchmark: what `warpmap bench` prints and writes as JSON.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    /// The GPU's name and `sm_XY`, or "CPU (N threads)".
    pub device: String,
    /// The source revision.
    pub commit: String,
    /// When the run started, UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub date: String,
    /// The in-run roofline.
    pub roofline: Roofline,
    /// Every measurement.
    pub results: Vec<BenchResult>,
    /// The backend measured.
    pub backend: Backend,
    /// Why this backend (set when the CPU was used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend_note: Option<String>,
    /// How times were taken.
    pub method: String,
    /// Whether `--quick` sizes were used.
    pub quick: bool,
    /// Table slots asked for (each table rounds up; see `capacity` per result). With
    /// `keys_log2`: the largest, `ceil(n / smallest load factor)`.
    pub slots: usize,
    /// Timed runs per measurement.
    pub runs: usize,
    /// Host threads (rayon) used for data generation, verification and the CPU backend.
    pub host_threads: usize,
    /// Kernel module compiles and cache loads of this process.
    pub compile: Vec<CompileRecord>,
    /// Wall-clock seconds of the whole benchmark.
    pub wall_s: f64,
    /// The preset run, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<Preset>,
    /// Fixed keys: `n = 2^keys_log2` per set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys_log2: Option<u32>,
    /// Load factors measured.
    pub load_factors: Vec<f64>,
    /// WarpDrive group sizes measured (empty on the CPU backend).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub group_sizes: Vec<u32>,
    /// The GPU scheme asked for ("warpdrive" or "stadium"; the CPU backend measures "cpu").
    pub scheme: Scheme,
    /// Stadium ticket sizes measured (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ticket_bits: Vec<u32>,
    /// Stadium bucket locations measured (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<&'static str>,
    /// Stadium host rows' keys per set, when smaller than `keys_log2` (log2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_keys_log2: Option<u32>,
    /// The mixed experiment's slice sizes, operations per slice, log2 (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slice_log2: Vec<u32>,
    /// Key distributions measured.
    pub distributions: Vec<Distribution>,
    /// Key/value types measured.
    pub types: Vec<KvType>,
    /// Operations with rows.
    pub ops: Vec<Op>,
    /// Zipf parameters (when Zipf keys were measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zipf: Option<ZipfInfo>,
    /// Adjustments to what was asked (caps, ignored flags).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The plan's size and rough time estimate, made before the run.
    pub estimate: Estimate,
}

impl Report {
    /// Whether every result verified.
    pub fn all_verified(&self) -> bool {
        self.results.iter().all(|r| r.verified)
    }
}

/// Per-operation times and verification of one (table, load factor) over its runs.
pub(crate) struct OpStats {
    pub ms: Vec<f64>,
    pub failures: Vec<String>,
}

impl OpStats {
    pub fn new() -> Self {
        OpStats {
            ms: Vec::new(),
            failures: Vec::new(),
        }
    }
}

/// Shared bookkeeping of a run: progress and results.
pub(crate) struct Sink<'a> {
    pub progress: &'a mut dyn FnMut(Progress),
    pub done: u64,
    pub total: u64,
    pub results: Vec<BenchResult>,
}

impl<'a> Sink<'a> {
    /// No steps done of `total`, no results yet.
    pub fn new(progress: &'a mut dyn FnMut(Progress), total: u64) -> Self {
        Sink {
            progress,
            done: 0,
            total,
            results: Vec::new(),
        }
    }
    pub fn say(&mut self, message: String) {
        (self.progress)(Progress {
            done: self.done,
            total: self.total,
            message,
        });
    }
    pub fn step(&mut self, message: String) {
        self.done = (self.done + 1).min(self.total);
        self.say(message);
    }
}

/// What one (table, load factor) measured, ready to become [`BenchResult`]s.
pub(crate) struct Measured<'a> {
    pub scheme: &'static str,
    pub backend: Backend,
    pub key_bytes: usize,
    pub value_bytes: usize,
    pub key_type: &'static str,
    pub value_type: &'static str,
    pub capacity: usize,
    pub group_size: Option<u32>,
    pub filter_bits: Option<u32>,
    pub memory_bytes: usize,
    /// Stadium: bucket location, ticket bits, pinned host bytes, and the host bound (host rows).
    pub stadium: Option<StadiumInfo>,
    pub n: usize,
    pub load_factor: f64,
    pub roofline: &'a Roofline,
    pub distribution: Distribution,
    /// Zipf: distinct keys per run.
    pub distinct: Vec<usize>,
    /// two_level: the bucket shape.
    pub two_level: Option<TwoLevelShape>,
    /// The scheme's counters after the runs.
    pub counters: Vec<(&'static str, u64)>,
}

impl Measured<'_> {
    /// Rows for the selected operations; `stats` is indexed as [`Op::ALL`]. Insert runs in
    /// every run: when it has no row, its failures go to every row.
    pub fn push_selected(&self, ops: &[Op], stats: Vec<OpStats>, out: &mut Vec<BenchResult>) {
        let insert_failures: Vec<String> = if ops.contains(&Op::Insert) {
            Vec::new()
        } else {
            stats[Op::Insert.index()]
                .failures
                .iter()
                .map(|f| format!("insert {f}"))
                .collect()
        };
        for (op, mut s) in Op::ALL.into_iter().zip(stats) {
            if !ops.contains(&op) {
                continue;
            }
            if op != Op::Insert {
                s.failures.extend(insert_failures.iter().cloned());
            }
            self.push(op, s, out);
        }
    }

    pub fn push(&self, op: Op, stats: OpStats, out: &mut Vec<BenchResult>) {
        let runs = stats.ms.len();
        let median_ms = median(&stats.ms);
        let gops = if median_ms > 0.0 {
            self.n as f64 / (median_ms * 1e6)
        } else {
            0.0
        };
        let peak = if op == Op::Mixed {
            self.roofline
                .cas8_gops
                .zip(self.roofline.gather8_gops)
                .map(|(c, g)| harmonic(c, g))
        } else if op.writes() {
            self.roofline.cas8_gops
        } else {
            self.roofline.gather8_gops
        };
        let roofline_ratio = peak.filter(|p| *p > 0.0).map(|p| gops / p);
        let st = self.stadium.as_ref();
        let bound_gops = st
            .and_then(|s| s.bound.as_ref())
            .map(|b| b.for_op(op))
            .filter(|b| *b > 0.0);
        let bound_ratio = match (st, bound_gops) {
            (None, _) => None,
            (Some(s), _) if s.location == Location::Device => roofline_ratio,
            (Some(_), b) => b.map(|b| gops / b),
        };
        let min_ms = stats.ms.iter().copied().fold(f64::INFINITY, f64::min);
        let max_ms = stats.ms.iter().copied().fold(0.0, f64::max);
        let distinct =
            (self.distribution == Distribution::Zipf && !self.distinct.is_empty()).then(|| {
                let mut d = self.distinct.clone();
                d.sort_unstable();
                d[d.len() / 2]
            });
        out.push(BenchResult {
            scheme: self.scheme.to_string(),
            backend: self.backend,
            key_bytes: self.key_bytes,
            value_bytes: self.value_bytes,
            n: self.n,
            load_factor: self.load_factor,
            op,
            gops,
            median_ms,
            runs,
            roofline_ratio,
            verified: runs > 0 && stats.failures.is_empty(),
            key_type: self.key_type,
            value_type: self.value_type,
            capacity: self.capacity,
            group_size: self.group_size,
            filter_bits: self.filter_bits,
            memory_bytes: self.memory_bytes,
            min_ms: if runs > 0 { min_ms } else { 0.0 },
            max_ms,
            failures: stats.failures,
            distribution: self.distribution,
            distinct,
            occupancy: distinct.map(|d| d as f64 / self.capacity.max(1) as f64),
            location: st.map(|s| location_name(s.location)),
            ticket_bits: st.map(|s| s.ticket_bits),
            insert_strategy: st.map(|s| s.strategy.name()),
            hybrid_threshold: st.and_then(|s| match s.strategy {
                warpmap::InsertStrategy::Hybrid { threshold } => Some(threshold),
                _ => None,
            }),
            bound_ratio,
            bound_gops,
            host_memory_bytes: st
                .filter(|s| s.location == Location::Host)
                .map(|s| s.host_memory_bytes),
            concurrency_efficiency: None,
            separated_ms: None,
            slice_ops: None,
            two_level: self.two_level,
            fill: self
                .two_level
                .map(|_| self.n as f64 / self.capacity.max(1) as f64),
            counters: self.counters.iter().copied().collect(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stadium rows carry location, ticket_bits and bound_ratio; other rows do not.
    #[test]
    fn stadium_rows_serialise_their_fields() {
        let roof = Roofline {
            gather8_gops: Some(30.0),
            cas8_gops: Some(20.0),
            ..Roofline::default()
        };
        let bound = HostBound {
            bytes: 1 << 30,
            record_bytes: 8,
            write_gops: 0.1,
            read_gops: 0.2,
            ops: 1 << 22,
            runs: 5,
            pages: warpmap::HostPages::Pinned,
            huge_page_bytes: None,
            alloc_ms: 1.0,
        };
        let m = |stadium: Option<StadiumInfo>| Measured {
            scheme: if stadium.is_some() {
                "stadium"
            } else {
                "warpdrive"
            },
            backend: Backend::Gpu,
            key_bytes: 4,
            value_bytes: 4,
            key_type: "u32",
            value_type: "u32",
            capacity: 2000,
            group_size: None,
            filter_bits: None,
            memory_bytes: 100,
            stadium,
            n: 1000,
            load_factor: 0.5,
            roofline: &roof,
            distribution: Distribution::Unique,
            distinct: vec![],
            two_level: None,
            counters: vec![],
        };
        let stats = |ms: f64| OpStats {
            ms: vec![ms],
            failures: vec![],
        };
        let mut rows = Vec::new();
        let host = m(Some(StadiumInfo {
            location: Location::Host,
            ticket_bits: 8,
            strategy: warpmap::InsertStrategy::Stash,
            host_memory_bytes: 1 << 30,
            bound: Some(bound),
        }));
        // 1000 keys in 0.02 ms: 0.05 G/s.
        host.push(Op::Insert, stats(0.02), &mut rows);
        host.push(Op::FindMiss, stats(0.02), &mut rows);
        let device = m(Some(StadiumInfo {
            location: Location::Device,
            ticket_bits: 1,
            strategy: warpmap::InsertStrategy::Hybrid { threshold: 0.5 },
            host_memory_bytes: 0,
            bound: None,
        }));
        device.push(Op::FindHit, stats(0.0001), &mut rows);
        m(None).push(Op::Insert, stats(0.001), &mut rows);
        // (The JSON names and skip-if-none are checked by the CLI's tests, which have serde_json.)
        let close = |v: Option<f64>, want: f64| (v.unwrap() - want).abs() < 1e-9;
        assert_eq!(rows[0].scheme, "stadium");
        assert_eq!(rows[0].location, Some("host"));
        assert_eq!(rows[0].ticket_bits, Some(8));
        assert!(close(rows[0].bound_ratio, 0.5), "{:?}", rows[0]); // 0.05 / 0.1 (writes)
        assert!(close(rows[0].bound_gops, 0.1));
        assert!(close(rows[1].bound_ratio, 0.25), "{:?}", rows[1]); // 0.05 / 0.2 (reads)
        assert_eq!(rows[0].host_memory_bytes, Some(1 << 30));
        assert_eq!(rows[2].location, Some("device"));
        assert_eq!(rows[2].ticket_bits, Some(1));
        // Device rows: bound_ratio is the roofline ratio (10 G/s over the 30 G/s gather).
        assert!(close(rows[2].bound_ratio, 1.0 / 3.0), "{:?}", rows[2]);
        assert_eq!(rows[2].bound_ratio, rows[2].roofline_ratio);
        assert_eq!(
            (rows[2].bound_gops, rows[2].host_memory_bytes),
            (None, None)
        );
        let w = &rows[3];
        assert_eq!(
            (w.location, w.ticket_bits, w.bound_ratio, w.bound_gops),
            (None, None, None, None)
        );
    }
}
