//! The benchmark runner behind `warpmap bench`: the in-run roofline, then every bulk operation of
//! each table at several load factors, timed and verified, into one serialisable [`Report`].
//!
//! On a GPU ([`Gpu::default_gpu`] succeeds and [`BenchConfig::force_cpu`] is off):
//! 1. the roofline ([`roofline`]): random 8-byte gathers and CASes and a large copy, on a table
//!    far beyond L2, timed with CUDA events, warm-up then median;
//! 2. the [`WarpDrive`](warpmap::WarpDrive) table with `u32`/`u32` and `u64`/`u64` pairs, at load
//!    factors 0.5, 0.8, 0.9 and 0.95 of 2^26 slots: insert, find of present keys (`find_hit`),
//!    find of absent keys (`find_miss`), `contains` and `erase`, each timed alone with CUDA
//!    events around the kernel (inputs are on the device before timing starts). Every run draws
//!    fresh keys (a new seed), clears the table, and verifies every operation.
//!
//! Without a GPU (or with `force_cpu`) the same operations run on [`CpuTable`](warpmap::CpuTable),
//! timed with [`std::time::Instant`] around each bulk call on host slices, at sizes that finish
//! in well under a minute on two cores; the roofline is `null` and the report says why the CPU
//! was used.
//!
//! Stadium hashing ([`Scheme::Stadium`], `--scheme stadium`): the same loop over a
//! [`Stadium`](warpmap::Stadium) table per (bucket location, ticket size) instead of per group
//! size, rows with `scheme: "stadium"`, `location`, `ticket_bits` and `bound_ratio`. Host-bucket
//! (out-of-core) rows are compared with a bound measured in the same run for each table size:
//! random writes and reads of records of the table's key + value bytes into a pinned mapped host
//! buffer of the table's bucket bytes ([`roofline::measure_host_bound`], in
//! [`Roofline::host_bounds`]); their `bound_ratio` is the rate over the random-write bound
//! (insert, erase) or the random-read bound (finds, contains). Device-bucket rows have
//! `bound_ratio` = `roofline_ratio` (the gather / CAS roofline). [`Preset::Stadium`] is the
//! paper's Figs. 14, 16 and 17 setup; [`Preset::Fig19`] its Fig. 19 (the same loop over the
//! key and value sizes of [`KvType::FIG19`]).
//!
//! The mixed experiment ([`Op::Mixed`], [`Preset::Fig15`], the paper's Fig. 15) is a loop of its
//! own ([`mixed`]): keys inserted in slices, each slice also finding the previous slice's keys,
//! timed once as one mixed insert/find batch per slice and once as an insert batch then a find
//! batch per slice; its rows carry `concurrency_efficiency` (separated time / mixed time),
//! `separated_ms` and `slice_ops`. With Stadium device buckets, WarpDrive (default group size)
//! runs the same slices for comparison.
//!
//! Beyond the default: a fixed number of keys per load factor with a table per load factor
//! ([`BenchConfig::keys_log2`]), several WarpDrive group sizes ([`BenchConfig::group_sizes`]),
//! Zipf keys ([`Distribution::Zipf`]), a choice of types (also `u32`→`u64` and `u128`→`u64`:
//! [`KvType`]) and operations, and the presets
//! [`Preset::Fig7`], [`Preset::Fig8`] (the WarpDrive paper's figures) and [`Preset::Compare`].
//! [`resolve`] turns a configuration into the [`Plan`] that runs, with a size and time
//! [`Estimate`].
//!
//! ```no_run
//! use warpmap_bench::{run, BenchConfig};
//! let cfg = BenchConfig { quick: true, ..BenchConfig::default() };
//! let report = run(&cfg, &mut |p| eprintln!("{}/{} {}", p.done, p.total, p.message))?;
//! assert!(report.all_verified());
//! println!("{}", report.results.len());
//! # Ok::<(), warpmap::Error>(())
//! ```

#![warn(missing_docs)]

mod cpu;
mod gpu;
mod gpu_mixed;
pub mod kernels;
pub mod lanes;
pub mod mixed;
pub mod outofcore;
mod plan;
pub mod roofline;
mod workload;

pub use plan::{
    location_name, parse_locations, resolve, Distribution, Estimate, KvType, Plan, Preset, Scheme,
    Variant, ZipfInfo, ZipfLoad, CPU_MAX_KEYS_LOG2, DEFAULT_SLICE_LOG2, DEFAULT_ZIPF_UNIVERSE_LOG2,
    FIG19_LOAD_FACTOR, FIG_HOST_KEYS_LOG2, FIG_KEYS_LOG2, GPU_MAX_KEYS_LOG2, QUICK_KEYS_LOG2,
    STADIUM_HOST_KEYS_LOG2,
};
pub use workload::distinct_count;

use std::time::{Instant, SystemTime, UNIX_EPOCH};
use warpmap::device::CompileRecord;
use warpmap::table::stadium::Location;
use warpmap::table::Backend;
use warpmap::{Gpu, Result};

/// The load factors measured by default.
pub const DEFAULT_LOAD_FACTORS: [f64; 4] = [0.5, 0.8, 0.9, 0.95];

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Tiny sizes and few runs: a smoke test of a few seconds on either backend.
    pub quick: bool,
    /// Use the CPU backend even if a GPU is present.
    pub force_cpu: bool,
    /// The source revision, recorded in the report (the CLI embeds it at build time).
    pub commit: String,
    /// Table slots as a power of two; `None`: 2^26 on a GPU, 2^22 on the CPU (2^18 quick on either).
    /// Ignored with `keys_log2`.
    pub slots_log2: Option<u32>,
    /// Timed runs per (table, load factor); `None`: 5 (3 quick). At least 1.
    pub runs: Option<usize>,
    /// Load factors; `None`: [`DEFAULT_LOAD_FACTORS`]. Each in `(0, 1]`.
    pub load_factors: Option<Vec<f64>>,
    /// The base seed of every key set (each run derives its own).
    pub seed: u64,
    /// Fixed keys: `n = 2^keys_log2` keys per load factor and a new table of `ceil(n / lf)`
    /// slots per load factor (instead of fixed slots). At most [`GPU_MAX_KEYS_LOG2`]; capped at
    /// [`CPU_MAX_KEYS_LOG2`] on the CPU backend.
    pub keys_log2: Option<u32>,
    /// WarpDrive group sizes, a table per group size; `None`: the default group size only.
    pub group_sizes: Option<Vec<u32>>,
    /// Key distributions; `None`: unique only.
    pub distributions: Option<Vec<Distribution>>,
    /// Key/value types; `None`: the preset's (fig7, fig8: `u32`→`u32`; compare:
    /// [`KvType::ALL`]), else [`KvType::ALL`] (`u32`→`u32` and `u64`→`u64`).
    /// [`KvType::U32U64`] (`u32`→`u64`) and [`KvType::U128U64`] (`u128`→`u64`, WarpDrive's
    /// tagged layout) run only when listed here; both work with either [`Distribution`] (Zipf
    /// keys come from keygen's injective key sequence for every width, values are
    /// `value_for(key)` of the value type) and each row's `key_bytes`, `value_bytes`,
    /// `key_type` and `value_type` are those of the table's key and value types.
    pub types: Option<Vec<KvType>>,
    /// Operations with a row; `None`: [`Op::DEFAULT`] (all but `find_half`).
    pub ops: Option<Vec<Op>>,
    /// A preset: it fills the fields above that are `None`.
    pub preset: Option<Preset>,
    /// Zipf exponent `s` (default `1 + 1e-6`).
    pub zipf_s: f64,
    /// Zipf universe as log2 of the rank count; `None`: [`DEFAULT_ZIPF_UNIVERSE_LOG2`].
    pub zipf_universe_log2: Option<u32>,
    /// What a Zipf set's load factor means with `keys_log2` (default: occupancy).
    pub zipf_load: ZipfLoad,
    /// WarpDrive's overflow filter (default: auto; off measures the paper's exact scheme).
    pub overflow_filter: warpmap::table::warpdrive::OverflowFilter,
    /// The GPU table measured; `None`: the preset's, else [`Scheme::WarpDrive`] (the CPU
    /// backend measures `CpuTable` either way).
    pub scheme: Option<Scheme>,
    /// Stadium ticket sizes in bits, a table per size; `None`: the preset's, else 8.
    pub ticket_bits: Option<Vec<u32>>,
    /// Stadium bucket locations, a table per location; `None`: the preset's, else device.
    pub locations: Option<Vec<Location>>,
    /// Fixed keys, Stadium host-bucket tables: `n = 2^min(keys_log2, host_keys_log2)` for unique
    /// keys (random accesses over the bus run at 0.04-0.45 G/s); `None`: the preset's
    /// ([`STADIUM_HOST_KEYS_LOG2`] for `stadium`), else no cap.
    pub host_keys_log2: Option<u32>,
    /// The mixed experiment ([`Op::Mixed`]): operations per slice (inserts + finds), log2, a
    /// set per size; `None`: the preset's, else [`DEFAULT_SLICE_LOG2`] (quick: 2^12).
    pub slice_log2: Option<Vec<u32>>,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            quick: false,
            force_cpu: false,
            commit: "unknown".into(),
            slots_log2: None,
            runs: None,
            load_factors: None,
            seed: 0x5eed_2024_0bad_cafe,
            keys_log2: None,
            group_sizes: None,
            distributions: None,
            types: None,
            ops: None,
            preset: None,
            zipf_s: warpmap::keygen::DEFAULT_ZIPF_S,
            zipf_universe_log2: None,
            zipf_load: ZipfLoad::Distinct,
            overflow_filter: Default::default(),
            scheme: None,
            ticket_bits: None,
            locations: None,
            host_keys_log2: None,
            slice_log2: None,
        }
    }
}

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

/// A benchmarked operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Insert `n` new keys into the empty table.
    Insert,
    /// Find the `n` inserted keys (values checked).
    FindHit,
    /// Find `n` keys of which half are inserted (even positions: the inserted key at that
    /// position) and half absent (odd positions): the paper's "half of the queries present".
    /// Every answer checked (found with `value_for(key)`, or not found). Only when asked for.
    FindHalf,
    /// Find `n` keys that are not in the table.
    FindMiss,
    /// Membership test of the `n` inserted keys.
    Contains,
    /// Erase the `n` inserted keys.
    Erase,
    /// The mixed-batch experiment (the Stadium paper's Fig. 15, [`mixed`]): `n` keys inserted
    /// in slices, each slice also finding the previous slice's keys, run once as one mixed
    /// insert/find batch per slice and once as an insert batch then a find batch per slice.
    /// Its own experiment (`--ops mixed` alone, or `--preset fig15`), not part of [`Op::ALL`].
    Mixed,
}

impl Op {
    /// Every operation of the per-operation loop, in the order they run ([`Op::Mixed`] is an
    /// experiment of its own).
    pub const ALL: [Op; 6] = [
        Op::Insert,
        Op::FindHit,
        Op::FindHalf,
        Op::FindMiss,
        Op::Contains,
        Op::Erase,
    ];

    /// The operations measured when none are named (all but [`Op::FindHalf`]).
    pub const DEFAULT: [Op; 5] = [
        Op::Insert,
        Op::FindHit,
        Op::FindMiss,
        Op::Contains,
        Op::Erase,
    ];

    /// The name used in the JSON ("insert", "find_hit", ...).
    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::FindHit => "find_hit",
            Op::FindHalf => "find_half",
            Op::FindMiss => "find_miss",
            Op::Contains => "contains",
            Op::Erase => "erase",
            Op::Mixed => "mixed",
        }
    }

    /// The position in [`Op::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the operation writes the table (its roofline is the random CAS; finds and
    /// `contains` compare with the random gather; [`Op::Mixed`], half inserts and half finds,
    /// with their harmonic mean).
    pub fn writes(self) -> bool {
        matches!(self, Op::Insert | Op::Erase)
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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
/// mapped host memory of the table's bucket bytes ([`roofline::measure_host_bound`]).
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

impl Sink<'_> {
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
}

/// What a Stadium table adds to its rows.
#[derive(Clone, Debug)]
pub(crate) struct StadiumInfo {
    pub location: Location,
    pub ticket_bits: u32,
    /// The table's insert strategy, resolved (the measured hybrid shows its threshold).
    pub strategy: warpmap::InsertStrategy,
    pub host_memory_bytes: usize,
    /// Host rows: the bound of the table's size.
    pub bound: Option<HostBound>,
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
        });
    }
}

/// The harmonic mean of two rates (the rate of doing one operation at each): the bound of a
/// batch that is half inserts and half finds.
pub(crate) fn harmonic(a: f64, b: f64) -> f64 {
    if a > 0.0 && b > 0.0 {
        2.0 / (1.0 / a + 1.0 / b)
    } else {
        0.0
    }
}

/// The median (mean of the middle two for an even count; 0 for none).
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The seed of one run: distinct for every (base, table type, load factor, run).
pub(crate) fn run_seed(base: u64, type_tag: u64, lf_index: usize, run: usize) -> u64 {
    use warpmap::hash::fmix64;
    fmix64(fmix64(fmix64(base ^ type_tag) ^ lf_index as u64) ^ (run as u64 + 1))
}

/// `n` for a load factor of a table of `capacity` slots.
pub(crate) fn keys_for(load_factor: f64, capacity: usize) -> usize {
    ((load_factor * capacity as f64).round() as usize).clamp(1, capacity)
}

/// Now, UTC, as `YYYY-MM-DDTHH:MM:SSZ` (from [`SystemTime`]; no calendar crate).
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_utc(secs)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian).
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Runs the benchmark. `progress` is called as steps start and finish (from this thread).
///
/// Errors are returned for what prevents measuring (a driver failure, NVRTC missing, out of
/// memory, bad configuration). A wrong result is not an error: it makes its result's
/// `verified` false (see [`Report::all_verified`]).
pub fn run(cfg: &BenchConfig, progress: &mut dyn FnMut(Progress)) -> Result<Report> {
    let started = Instant::now();
    let date = utc_now();
    let (gpu, backend_note) = if cfg.force_cpu {
        (
            None,
            Some("the CPU backend was forced (--cpu); no GPU was used".to_string()),
        )
    } else {
        match Gpu::default_gpu() {
            Ok(g) => (Some(g), None),
            Err(e) => (
                None,
                Some(format!(
                    "no GPU found ({e}): the CPU backend (warpmap::CpuTable) was used"
                )),
            ),
        }
    };
    let backend = if gpu.is_some() {
        Backend::Gpu
    } else {
        Backend::Cpu
    };
    let plan = resolve(cfg, backend)?;
    let host_threads = rayon::current_num_threads();
    let estimate = plan.estimate(host_threads);
    let method = plan.method();
    let (device, roofline, results) = match &gpu {
        Some(g) => {
            let (roofline, results) = if plan.mixed() {
                gpu_mixed::run(g, &plan, progress)?
            } else {
                gpu::run(g, &plan, progress)?
            };
            (format!("{} sm_{}", g.name(), g.sm()), roofline, results)
        }
        None => {
            let results = if plan.mixed() {
                mixed::run_cpu(&plan, progress)?
            } else {
                cpu::run(&plan, progress)?
            };
            (
                format!("CPU ({host_threads} threads)"),
                Roofline::default(),
                results,
            )
        }
    };
    Ok(Report {
        device,
        commit: cfg.commit.clone(),
        date,
        roofline,
        results,
        backend,
        backend_note,
        method,
        quick: cfg.quick,
        slots: plan.slots,
        runs: plan.runs,
        host_threads,
        compile: warpmap::device::compile_log(),
        wall_s: started.elapsed().as_secs_f64(),
        preset: plan.preset,
        keys_log2: plan.keys_log2,
        load_factors: plan.load_factors.clone(),
        group_sizes: plan.group_sizes.clone(),
        scheme: plan.scheme,
        ticket_bits: plan.ticket_bits.clone(),
        locations: plan.locations.iter().map(|l| location_name(*l)).collect(),
        host_keys_log2: plan
            .host_keys(Distribution::Unique)
            .filter(|n| Some(*n) != plan.keys())
            .map(|n| n.trailing_zeros()),
        slice_log2: plan.slice_log2.clone(),
        distributions: plan.distributions.clone(),
        types: plan.types.clone(),
        ops: plan.ops.clone(),
        zipf: plan.zipf_info(),
        notes: plan.notes.clone(),
        estimate,
    })
}

/// The method line of a backend, for printing before the run starts (a [`Plan`]'s
/// [`method`](Plan::method) adds what the plan changes).
pub fn method_for(backend: Backend) -> &'static str {
    match backend {
        Backend::Gpu => gpu::METHOD,
        Backend::Cpu => cpu::METHOD,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(format_utc(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn quick_cpu_bench_verifies() {
        let cfg = BenchConfig {
            quick: true,
            force_cpu: true,
            slots_log2: Some(12),
            ..Default::default()
        };
        let mut steps = 0;
        let r = run(&cfg, &mut |_| steps += 1).unwrap();
        assert!(steps > 0);
        assert_eq!(r.backend, Backend::Cpu);
        assert!(r.backend_note.is_some());
        assert_eq!(
            r.results.len(),
            2 * DEFAULT_LOAD_FACTORS.len() * Op::DEFAULT.len()
        );
        assert!(
            r.all_verified(),
            "{:?}",
            r.results.iter().find(|x| !x.verified)
        );
        assert!(r.roofline.gather8_gops.is_none());
        assert!(r
            .results
            .iter()
            .all(|x| x.distribution == Distribution::Unique && x.distinct.is_none()));
    }

    #[test]
    fn cpu_fixed_keys_both_distributions_verify() {
        let cfg = BenchConfig {
            force_cpu: true,
            keys_log2: Some(12),
            runs: Some(2),
            load_factors: Some(vec![0.5, 0.99]),
            distributions: Some(vec![Distribution::Unique, Distribution::Zipf]),
            group_sizes: Some(vec![1, 32]),
            ..Default::default()
        };
        let r = run(&cfg, &mut |_| {}).unwrap();
        assert!(
            r.all_verified(),
            "{:?}",
            r.results.iter().find(|x| !x.verified)
        );
        assert_eq!(r.results.len(), 2 * 2 * 2 * Op::DEFAULT.len());
        assert_eq!(r.keys_log2, Some(12));
        assert!(r.zipf.is_some());
        assert!(r.notes.iter().any(|n| n.contains("GPU only")));
        for x in &r.results {
            assert_eq!(x.n, 1 << 12);
            assert!(x.group_size.is_none());
            match x.distribution {
                Distribution::Unique => {
                    assert!(x.distinct.is_none());
                    assert_eq!(x.capacity, (4096.0 / x.load_factor).ceil() as usize);
                }
                Distribution::Zipf => {
                    let d = x.distinct.unwrap();
                    assert!(d < x.n && d > x.n / 10, "{d}");
                    // Occupancy load: the table holds the distinct keys at the load factor.
                    let occ = x.occupancy.unwrap();
                    assert!(
                        (occ - x.load_factor).abs() < 0.01,
                        "{occ} vs {}",
                        x.load_factor
                    );
                }
            }
        }
    }

    /// The two extra types on the CPU backend: every row verified and labelled with its own key
    /// and value types, in both sizing modes and both distributions.
    #[test]
    fn cpu_u32_u64_and_u128_u64_verify() {
        let want = |t: KvType| match t {
            KvType::U32U64 => ("u32", "u64", 4, 8),
            KvType::U128U64 => ("u128", "u64", 16, 8),
            _ => unreachable!(),
        };
        let types = vec![KvType::U32U64, KvType::U128U64];
        for (keys_log2, slots_log2) in [(None, Some(12)), (Some(11), None)] {
            let cfg = BenchConfig {
                quick: true,
                force_cpu: true,
                slots_log2,
                keys_log2,
                runs: Some(2),
                types: Some(types.clone()),
                distributions: Some(Distribution::ALL.to_vec()),
                ..Default::default()
            };
            let r = run(&cfg, &mut |_| {}).unwrap();
            assert_eq!(r.types, types);
            assert_eq!(
                r.results.len(),
                2 * 2 * DEFAULT_LOAD_FACTORS.len() * Op::DEFAULT.len()
            );
            assert!(
                r.all_verified(),
                "{:?}",
                r.results.iter().find(|x| !x.verified)
            );
            // Rows come type by type, in the order asked.
            let half = r.results.len() / 2;
            for (i, x) in r.results.iter().enumerate() {
                let t = types[i / half];
                let (kt, vt, kb, vb) = want(t);
                assert_eq!((x.key_type, x.value_type), (kt, vt), "row {i}");
                assert_eq!((x.key_bytes, x.value_bytes), (kb, vb), "row {i}");
                assert_eq!((t.key_bytes(), t.value_bytes()), (kb, vb));
                assert_eq!(x.runs, 2);
                assert_eq!(x.distinct.is_some(), x.distribution == Distribution::Zipf);
            }
        }
    }

    /// Every fig19 key/value size through the per-operation loop on the CPU backend.
    #[test]
    fn cpu_fig19_types_verify() {
        let cfg = BenchConfig {
            force_cpu: true,
            preset: Some(Preset::Fig19),
            keys_log2: Some(10),
            runs: Some(1),
            ..Default::default()
        };
        let r = run(&cfg, &mut |_| {}).unwrap();
        assert_eq!(r.results.len(), KvType::FIG19.len() * 3);
        assert!(
            r.all_verified(),
            "{:?}",
            r.results.iter().find(|x| !x.verified)
        );
        for (t, rows) in KvType::FIG19.iter().zip(r.results.chunks(3)) {
            for x in rows {
                assert_eq!(
                    (x.key_bytes, x.value_bytes),
                    (t.key_bytes(), t.value_bytes())
                );
                assert_eq!(x.load_factor, FIG19_LOAD_FACTOR);
            }
        }
        assert!(r.results.iter().any(|x| x.value_type == "[u8; 256]"));
        assert!(r.results.iter().any(|x| x.key_type == "[u8; 64]"));
    }

    /// The mixed experiment through `run` on the CPU backend: the report says what it was.
    #[test]
    fn cpu_mixed_report() {
        let cfg = BenchConfig {
            force_cpu: true,
            preset: Some(Preset::Fig15),
            keys_log2: Some(11),
            runs: Some(1),
            slice_log2: Some(vec![8]),
            load_factors: Some(vec![0.8]),
            ..Default::default()
        };
        let r = run(&cfg, &mut |_| {}).unwrap();
        assert_eq!(r.results.len(), 1);
        assert!(r.all_verified(), "{:?}", r.results[0].failures);
        assert_eq!(r.ops, vec![Op::Mixed]);
        assert_eq!(r.slice_log2, vec![8]);
        assert_eq!(r.results[0].slice_ops, Some(256));
        assert!(r.method.contains("Mixed experiment"));
    }

    #[test]
    fn cpu_find_half_verifies() {
        for keys_log2 in [None, Some(11)] {
            let cfg = BenchConfig {
                force_cpu: true,
                slots_log2: Some(12),
                keys_log2,
                runs: Some(2),
                load_factors: Some(vec![0.5, 0.95]),
                types: Some(vec![KvType::U32, KvType::U128U64]),
                distributions: Some(Distribution::ALL.to_vec()),
                ops: Some(vec![Op::FindHalf, Op::Insert]),
                ..Default::default()
            };
            let r = run(&cfg, &mut |_| {}).unwrap();
            assert_eq!(r.results.len(), 2 * 2 * 2 * 2);
            assert!(
                r.all_verified(),
                "{:?}",
                r.results.iter().find(|x| !x.verified)
            );
            assert!(r.results.iter().any(|x| x.op == Op::FindHalf));
            assert!(r.method.contains("find_half: n queries"));
        }
    }

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

    #[test]
    fn cpu_selected_ops_only() {
        let cfg = BenchConfig {
            force_cpu: true,
            slots_log2: Some(12),
            runs: Some(1),
            load_factors: Some(vec![0.9]),
            types: Some(vec![KvType::U64]),
            ops: Some(vec![Op::FindMiss, Op::FindHit]),
            distributions: Some(vec![Distribution::Zipf]),
            ..Default::default()
        };
        let r = run(&cfg, &mut |_| {}).unwrap();
        let ops: Vec<Op> = r.results.iter().map(|x| x.op).collect();
        assert_eq!(ops, vec![Op::FindHit, Op::FindMiss]);
        assert!(r.all_verified());
        assert!(r.results.iter().all(|x| x.key_type == "u64"));
        assert!(r
            .method
            .contains("Operations measured: find_hit, find_miss"));
    }
}
