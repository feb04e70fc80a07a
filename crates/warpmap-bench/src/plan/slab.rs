//! The slab hash's benchmarks (slab-hash.txt §VI): their presets ([`SlabPreset`], named after the
//! paper's figures), what can be asked of them ([`SlabBenchConfig`], from the flags of
//! `warpmap bench --scheme slab`), and the resolved [`SlabPlan`] with its summary, method text
//! and rough time estimate.
//!
//! | preset | what | paper |
//! |---|---|---|
//! | `slab-fig4` | build, search hit and search miss against memory utilisation (the buckets swept), n = 2^22 and 2^24 | Fig. 4 |
//! | `slab-fig5` | the same against n = 2^18 .. 2^26 at utilisation 0.6 | Fig. 5 |
//! | `slab-fig6` | incremental batches of 2^15, 2^16, 2^17 keys up to 2^24, against rebuilding a static WarpDrive table after every batch | Fig. 6 |
//! | `slab-fig7` | concurrent mixed batches Γ0, Γ1, Γ2 against initial utilisation | Fig. 7a |
//! | `slab-alloc` | SlabAlloc's allocation (and free) rate, one slab per thread | §V |
//! | `slab-compare` | the target cells on one GPU, each beside its target and SlabHash's figure | — |

use super::KvType;
use std::fmt;
use std::str::FromStr;
use warpmap::{Error, Result};

/// A named slab-hash benchmark (`warpmap bench --scheme slab --preset NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlabPreset {
    /// Fig. 4: build, search hit, search miss against memory utilisation (0.2 .. 0.9), n = 2^22
    /// and 2^24.
    SlabFig4,
    /// Fig. 5: build, search hit, search miss against n (2^18 .. 2^26) at utilisation 0.6.
    SlabFig5,
    /// Fig. 6: incremental insertion in batches of 2^15, 2^16 and 2^17 keys up to 2^24 keys
    /// (final utilisation 0.65), against rebuilding a static WarpDrive table (load factor 0.65)
    /// from all keys so far after every batch.
    SlabFig6,
    /// Fig. 7a: concurrent batches of 2^20 mixed operations (Γ0, Γ1, Γ2) against the initial
    /// memory utilisation, from n0 = 2^22 keys.
    SlabFig7,
    /// §V: SlabAlloc's rate, 2^20 and 2^22 allocations of one slab per thread, then their free.
    SlabAlloc,
    /// The target cells of the issue at n = 2^24 and utilisation 0.615: build, search hit,
    /// search miss, delete, incremental (128 batches of 2^17) and the concurrent Γ2 mix.
    SlabCompare,
}

impl SlabPreset {
    /// Every slab preset.
    pub const ALL: [SlabPreset; 6] = [
        SlabPreset::SlabFig4,
        SlabPreset::SlabFig5,
        SlabPreset::SlabFig6,
        SlabPreset::SlabFig7,
        SlabPreset::SlabAlloc,
        SlabPreset::SlabCompare,
    ];

    /// "slab-fig4", ..., "slab-alloc", "slab-compare".
    pub fn name(self) -> &'static str {
        match self {
            SlabPreset::SlabFig4 => "slab-fig4",
            SlabPreset::SlabFig5 => "slab-fig5",
            SlabPreset::SlabFig6 => "slab-fig6",
            SlabPreset::SlabFig7 => "slab-fig7",
            SlabPreset::SlabAlloc => "slab-alloc",
            SlabPreset::SlabCompare => "slab-compare",
        }
    }

    /// One line on what it measures.
    pub fn description(self) -> &'static str {
        match self {
            SlabPreset::SlabFig4 => {
                "slab hash paper Fig. 4: build, search hit, search miss vs memory utilisation \
                 0.2-0.9 (buckets swept), n = 2^22 and 2^24, u32/u32"
            }
            SlabPreset::SlabFig5 => {
                "slab hash paper Fig. 5: build, search hit, search miss vs n = 2^18-2^26 at \
                 memory utilisation 0.6, u32/u32"
            }
            SlabPreset::SlabFig6 => {
                "slab hash paper Fig. 6: incremental batches of 2^15/2^16/2^17 keys up to 2^24 \
                 (final utilisation 0.65) vs rebuilding WarpDrive (load 0.65) after every batch"
            }
            SlabPreset::SlabFig7 => {
                "slab hash paper Fig. 7a: concurrent batches of 2^20 ops, mixes G0/G1/G2, vs \
                 initial memory utilisation 0.2-0.9, n0 = 2^22, u32/u32"
            }
            SlabPreset::SlabAlloc => {
                "slab hash paper SV: SlabAlloc rate, 2^20 and 2^22 slab allocations (one per \
                 thread), distinct addresses checked, then freed"
            }
            SlabPreset::SlabCompare => {
                "slab hash target cells: n = 2^24 at utilisation 0.615, build/search hit/search \
                 miss/delete, incremental 128 x 2^17, concurrent G2 mix from n0 = 2^24, u32/u32"
            }
        }
    }

    /// Whether `s` names a slab preset (for a parser that accepts both kinds of preset).
    pub fn is_slab_name(s: &str) -> bool {
        s.parse::<SlabPreset>().is_ok()
    }
}

impl FromStr for SlabPreset {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim().to_ascii_lowercase().replace('_', "-");
        SlabPreset::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| {
                format!(
                    "unknown slab preset '{s}' (slab-fig4, slab-fig5, slab-fig6, slab-fig7, \
                     slab-alloc or slab-compare)"
                )
            })
    }
}

impl fmt::Display for SlabPreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An operation mix of the concurrent benchmark, the paper's Γ = (a, b, c, d): fractions of
/// inserts of new keys, deletes of present keys, searches of present keys and searches of
/// absent keys.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Mix {
    /// "G0", "G1", "G2" (the paper's Γ0, Γ1, Γ2), or "custom".
    pub name: &'static str,
    /// Inserts of new keys.
    pub insert: f64,
    /// Deletes of present keys.
    pub delete: f64,
    /// Searches of present keys (hits).
    pub hit: f64,
    /// Searches of absent keys (misses).
    pub miss: f64,
}

impl Mix {
    /// Γ0 = (0.5, 0.5, 0, 0): updates only.
    pub const G0: Mix = Mix {
        name: "G0",
        insert: 0.5,
        delete: 0.5,
        hit: 0.0,
        miss: 0.0,
    };
    /// Γ1 = (0.2, 0.2, 0.3, 0.3).
    pub const G1: Mix = Mix {
        name: "G1",
        insert: 0.2,
        delete: 0.2,
        hit: 0.3,
        miss: 0.3,
    };
    /// Γ2 = (0.1, 0.1, 0.4, 0.4).
    pub const G2: Mix = Mix {
        name: "G2",
        insert: 0.1,
        delete: 0.1,
        hit: 0.4,
        miss: 0.4,
    };

    /// Operations of each kind (insert, delete, hit, miss) in a batch of `ops`: the fractions
    /// rounded so that they add up to `ops` (largest remainders).
    pub fn counts(&self, ops: usize) -> [usize; 4] {
        let f = [self.insert, self.delete, self.hit, self.miss];
        let total: f64 = f.iter().sum();
        let exact: Vec<f64> = f.iter().map(|x| x / total * ops as f64).collect();
        let mut c: [usize; 4] = [0; 4];
        for i in 0..4 {
            c[i] = exact[i].floor() as usize;
        }
        let mut rest = ops - c.iter().sum::<usize>();
        let mut order: Vec<usize> = (0..4).collect();
        order.sort_by(|&a, &b| {
            (exact[b] - exact[b].floor())
                .total_cmp(&(exact[a] - exact[a].floor()))
                .then(a.cmp(&b))
        });
        for i in order {
            if rest == 0 {
                break;
            }
            c[i] += 1;
            rest -= 1;
        }
        c
    }

    /// Fraction of updates (inserts and deletes): the share compared with the CAS roofline.
    pub fn updates(&self) -> f64 {
        (self.insert + self.delete) / (self.insert + self.delete + self.hit + self.miss)
    }
}

/// What a slab benchmark can be asked for (the flags of `warpmap bench --scheme slab`); `None`
/// fields take the preset's values.
#[derive(Clone, Debug)]
pub struct SlabBenchConfig {
    /// The preset.
    pub preset: SlabPreset,
    /// Small sizes and few runs: a smoke test of a few seconds.
    pub quick: bool,
    /// The source revision, recorded in the report.
    pub commit: String,
    /// Timed runs per cell (fresh keys each).
    pub runs: Option<usize>,
    /// The base seed of every key set.
    pub seed: u64,
    /// Sizes as powers of two: fig4 the stored elements of each sweep, fig5 the sizes swept,
    /// fig6 and compare the final number of keys, fig7 the initial keys n0, alloc the
    /// allocations per launch.
    pub sizes_log2: Option<Vec<u32>>,
    /// Memory utilisations: fig4 and fig7 the sweep; fig5, fig6 and compare the one target
    /// (the first). Each in (0, 0.9375).
    pub utilizations: Option<Vec<f64>>,
    /// Batch sizes as powers of two: fig6 the incremental batches; fig7 and compare the
    /// operations per concurrent batch (the first); compare's incremental batch is 2^17.
    pub batch_log2: Option<Vec<u32>>,
    /// Key/value types: `u32` (u32->u32, the default) or `u64` (u64->u64).
    pub types: Option<Vec<KvType>>,
    /// Measure the in-run roofline first (default; tests of the cells turn it off, and the
    /// rows' `roofline_ratio` is then absent).
    pub roofline: bool,
}

impl SlabBenchConfig {
    /// The preset's defaults.
    pub fn new(preset: SlabPreset) -> Self {
        SlabBenchConfig {
            preset,
            quick: false,
            commit: "unknown".into(),
            runs: None,
            seed: 0x51ab_2018_5eed_cafe,
            sizes_log2: None,
            utilizations: None,
            batch_log2: None,
            types: None,
            roofline: true,
        }
    }
}

/// The largest memory utilisation a slab list reaches: 15 pairs in a slab of 16 pair-sized
/// words (the paper's 94 %).
pub const MAX_UTILIZATION: f64 = 15.0 / 16.0;

/// The sweep of fig4 and fig7: memory utilisations 0.2 to 0.9.
pub const UTILIZATION_SWEEP: [f64; 9] = [0.2, 0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.8, 0.9];

/// The compare preset's memory utilisation.
pub const COMPARE_UTILIZATION: f64 = 0.615;

/// compare's incremental cell: 2^7 = 128 equal batches up to the size (2^17 keys each at
/// 2^24).
pub const COMPARE_BATCHES_LOG2: u32 = 7;

/// A resolved slab benchmark: every choice made ([`resolve_slab`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct SlabPlan {
    /// The preset.
    pub preset: SlabPreset,
    /// `--quick` sizes.
    pub quick: bool,
    /// Timed runs per cell.
    pub runs: usize,
    /// The base seed.
    pub seed: u64,
    /// Key/value types.
    pub types: Vec<KvType>,
    /// Sizes, log2 (see [`SlabBenchConfig::sizes_log2`]).
    pub sizes_log2: Vec<u32>,
    /// Memory utilisations (see [`SlabBenchConfig::utilizations`]).
    pub utilizations: Vec<f64>,
    /// Batch sizes, log2 (see [`SlabBenchConfig::batch_log2`]).
    pub batch_log2: Vec<u32>,
    /// compare: the incremental batch, log2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incremental_log2: Option<u32>,
    /// fig7 and compare: the operation mixes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mixes: Vec<Mix>,
    /// fig7 and compare: timed concurrent batches per run (on one table built once per run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batches_per_run: Option<usize>,
    /// Bulk cells: whether delete is timed too (compare).
    pub delete: bool,
    /// fig6: the WarpDrive table's load factor in every rebuild.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rebuild_load_factor: Option<f64>,
    /// alloc: slabs in the pool per allocation (the paper: 8 M slabs for 1 M allocations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_factor: Option<usize>,
    /// Adjustments to what was asked (ignored flags).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Resolves a slab configuration: the preset's values where the configuration leaves a field
/// `None`, then validation.
pub fn resolve_slab(cfg: &SlabBenchConfig) -> Result<SlabPlan> {
    use SlabPreset::*;
    let q = cfg.quick;
    let (sizes, utils, batches, runs): (Vec<u32>, Vec<f64>, Vec<u32>, usize) = match cfg.preset {
        SlabFig4 if q => (vec![16], vec![0.3, 0.6, 0.9], vec![], 3),
        SlabFig4 => (vec![22, 24], UTILIZATION_SWEEP.to_vec(), vec![], 5),
        SlabFig5 if q => (vec![14, 16], vec![0.6], vec![], 3),
        SlabFig5 => ((18..=26).collect(), vec![0.6], vec![], 5),
        SlabFig6 if q => (vec![16], vec![0.65], vec![10, 11, 12], 2),
        SlabFig6 => (vec![24], vec![0.65], vec![15, 16, 17], 3),
        SlabFig7 if q => (vec![16], vec![0.3, 0.6, 0.9], vec![12], 2),
        SlabFig7 => (vec![22], UTILIZATION_SWEEP.to_vec(), vec![20], 3),
        SlabAlloc if q => (vec![14], vec![], vec![], 3),
        SlabAlloc => (vec![20, 22], vec![], vec![], 5),
        SlabCompare if q => (vec![16], vec![COMPARE_UTILIZATION], vec![12], 3),
        SlabCompare => (vec![24], vec![COMPARE_UTILIZATION], vec![20], 5),
    };
    let mut notes = Vec::new();
    let runs = cfg.runs.unwrap_or(runs);
    if runs == 0 {
        return Err(Error::invalid("runs must be at least 1"));
    }
    let mut sizes_log2 = cfg.sizes_log2.clone().unwrap_or(sizes);
    let mut utilizations = cfg.utilizations.clone().unwrap_or(utils);
    let mut batch_log2 = cfg.batch_log2.clone().unwrap_or(batches);
    if sizes_log2.is_empty() {
        return Err(Error::invalid("no size to measure"));
    }
    // u32 keys: inserted keys and absent keys (indices from 2^31) must stay distinct.
    if let Some(bad) = sizes_log2.iter().find(|s| !(8..=28).contains(*s)) {
        return Err(Error::invalid(format!(
            "size 2^{bad}: use sizes of 2^8 to 2^28"
        )));
    }
    let one_size = matches!(cfg.preset, SlabFig6 | SlabFig7 | SlabCompare);
    if one_size && sizes_log2.len() > 1 {
        notes.push(format!(
            "{}: one size only; using 2^{}",
            cfg.preset, sizes_log2[0]
        ));
        sizes_log2.truncate(1);
    }
    match cfg.preset {
        SlabAlloc => {
            if cfg.utilizations.is_some() {
                notes.push("--utilizations does not apply to slab-alloc: ignored".into());
            }
            utilizations.clear();
        }
        _ => {
            if utilizations.is_empty() {
                return Err(Error::invalid("no memory utilisation to measure"));
            }
            if let Some(bad) = utilizations
                .iter()
                .find(|u| !(**u >= 0.01 && **u < MAX_UTILIZATION))
            {
                return Err(Error::invalid(format!(
                    "memory utilisation {bad} is not in [0.01, {MAX_UTILIZATION}) (15 pairs \
                     per slab of 16 pair-sized words at most)"
                )));
            }
            let sweeps = matches!(cfg.preset, SlabFig4 | SlabFig7);
            if !sweeps && utilizations.len() > 1 {
                notes.push(format!(
                    "{}: one memory utilisation only; using {}",
                    cfg.preset, utilizations[0]
                ));
                utilizations.truncate(1);
            }
        }
    }
    match cfg.preset {
        SlabFig6 | SlabFig7 | SlabCompare => {
            if batch_log2.is_empty() {
                return Err(Error::invalid("no batch size to measure"));
            }
            let total = sizes_log2[0];
            if let Some(bad) = batch_log2.iter().find(|b| !(6..=total).contains(*b)) {
                return Err(Error::invalid(format!(
                    "batches of 2^{bad}: use 2^6 to 2^{total} (the size)"
                )));
            }
            if cfg.preset != SlabFig6 && batch_log2.len() > 1 {
                notes.push(format!(
                    "{}: one batch size only; using 2^{}",
                    cfg.preset, batch_log2[0]
                ));
                batch_log2.truncate(1);
            }
            if cfg.preset == SlabFig6 {
                if let Some(bad) = batch_log2.iter().find(|b| total - **b > 12) {
                    return Err(Error::invalid(format!(
                        "batches of 2^{bad} up to 2^{total} keys are more than 2^12 batches \
                         (rebuilding after each would take too long)"
                    )));
                }
            }
        }
        _ => {
            if cfg.batch_log2.is_some() {
                notes.push(format!(
                    "--batch-log2 does not apply to {}: ignored",
                    cfg.preset
                ));
            }
            batch_log2.clear();
        }
    }
    let types = cfg.types.clone().unwrap_or_else(|| vec![KvType::U32]);
    if types.is_empty() {
        return Err(Error::invalid("no key/value type to measure"));
    }
    if let Some(bad) = types
        .iter()
        .find(|t| !matches!(t, KvType::U32 | KvType::U64))
    {
        return Err(Error::invalid(format!(
            "type {bad}: the slab benchmarks measure u32 (u32->u32) and u64 (u64->u64)"
        )));
    }
    let mixes = match cfg.preset {
        SlabFig7 => vec![Mix::G0, Mix::G1, Mix::G2],
        SlabCompare => vec![Mix::G2],
        _ => Vec::new(),
    };
    let batches_per_run = match cfg.preset {
        SlabFig7 if q => Some(2),
        SlabFig7 => Some(4),
        SlabCompare if q => Some(2),
        SlabCompare => Some(8),
        _ => None,
    };
    let incremental_log2 = (cfg.preset == SlabCompare)
        .then(|| sizes_log2[0].saturating_sub(COMPARE_BATCHES_LOG2).max(1));
    Ok(SlabPlan {
        preset: cfg.preset,
        quick: q,
        runs,
        seed: cfg.seed,
        types,
        sizes_log2,
        utilizations,
        batch_log2,
        incremental_log2,
        mixes,
        batches_per_run,
        delete: cfg.preset == SlabCompare,
        rebuild_load_factor: (cfg.preset == SlabFig6).then_some(0.65),
        pool_factor: (cfg.preset == SlabAlloc).then_some(8),
        notes,
    })
}

impl SlabPlan {
    /// Elements per size (`2^s` for each of `sizes_log2`).
    pub fn sizes(&self) -> Vec<usize> {
        self.sizes_log2.iter().map(|s| 1usize << s).collect()
    }

    /// The plan in a few lines (printed before the run).
    pub fn summary(&self) -> String {
        let pow = |v: &[u32]| {
            v.iter()
                .map(|s| format!("2^{s}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut s = format!(
            "{} ({}): {} runs per cell, types {}, sizes {}",
            self.preset,
            self.preset.description(),
            self.runs,
            self.types
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(","),
            pow(&self.sizes_log2)
        );
        if !self.utilizations.is_empty() {
            s += &format!(
                ", memory utilisation {}",
                self.utilizations
                    .iter()
                    .map(|u| u.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
        if !self.batch_log2.is_empty() {
            s += &format!(", batches of {}", pow(&self.batch_log2));
        }
        if let Some(i) = self.incremental_log2 {
            s += &format!(", incremental batches of 2^{i}");
        }
        if !self.mixes.is_empty() {
            s += &format!(
                ", mixes {}",
                self.mixes
                    .iter()
                    .map(|m| m.name)
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
        if let Some(b) = self.batches_per_run {
            s += &format!(" ({b} timed batches per run)");
        }
        for n in &self.notes {
            s += &format!("\nnote: {n}");
        }
        s
    }

    /// How every cell is timed and verified, in words (the report's `method`).
    pub fn method(&self) -> String {
        let mut m = String::from(
            "GPU, CUDA events around the kernels only (inputs on the device and outputs \
             poisoned before the start event, checks after the stop event); one warm-up of \
             every kernel per table; median of the runs, fresh keys every run (a new seed); \
             every run verified. Memory utilisation (the paper's): stored pairs x pair bytes \
             over (buckets + allocated slabs) x slab bytes, from the table's stats after the \
             build (median of the runs); the buckets for a target utilisation come from the \
             expected slabs per bucket under Poisson bucket loads, corrected once by a measured \
             build (untimed) when the measurement is off by more than 0.01. Roofline: random \
             8-byte gathers and CASes on a u64 table far beyond L2, measured in the same run",
        );
        use SlabPreset::*;
        match self.preset {
            SlabFig4 | SlabFig5 | SlabCompare => {
                m += ". Bulk cells: per run n fresh unique keys inserted into the cleared table \
                      in one launch (build: no failure, len == n), then n searches of them \
                      (search hit: every one found with value_for(key)) and n searches of keys \
                      never inserted (search miss: none found)";
                if self.delete {
                    m += ", then a delete of the n keys (len == 0 after)";
                }
            }
            _ => {}
        }
        match self.preset {
            SlabFig6 | SlabCompare => {
                m += ". Incremental: per run the final number of keys inserted into the \
                      cleared table in equal batches, one launch each, all launches between \
                      one pair of events (launch gaps included); verified: len after the \
                      sequence, every key found with its value";
            }
            _ => {}
        }
        if self.preset == SlabFig6 {
            m += ". Rebuild: after every batch a new WarpDrive table at load factor 0.65 for \
                  all keys so far (allocation and the copy of the keys untimed), its insert \
                  timed alone; the rebuild time is the sum over all batches; len checked \
                  after every rebuild, every key found after the last. A second pass of the \
                  slab sequence times each batch alone (cumulative curve)";
        }
        match self.preset {
            SlabFig7 | SlabCompare => {
                m += ". Concurrent: per run the table built from n0 fresh keys (untimed), then \
                      batches of mixed operations, each one launch of the mixed kernel \
                      (inserts of new keys, deletes of present keys, searches of present keys \
                      not deleted by the batch, searches of keys never inserted), shuffled so \
                      that every warp mixes them, timed alone (all of a run's batches copied \
                      to the device and the stream synchronised before the first start \
                      event); verified: per batch len = len before + inserts - deletes and \
                      (untimed) the batch's inserted keys found and deleted keys absent after \
                      it, and after the run's batches every answer: every insert new and \
                      placed, every delete reported, every hit found with its value, every miss \
                      absent";
            }
            _ => {}
        }
        if self.preset == SlabAlloc {
            m += ". SlabAlloc: allocate_slabs_async of one slab per element (the \
                  warp-synchronous allocator), timed alone; the addresses downloaded and \
                  checked distinct; then free_slabs_async of them, timed alone; the pool's \
                  allocated slabs back to where they were after the free";
        }
        m
    }

    /// A rough wall-clock estimate in seconds on an H100 host with `threads` host threads (a
    /// model, not calibrated: host key generation and checks at 6 ns per key per thread, plus
    /// 4 ns per key for the copies; GPU kernels at 1 G/s at worst; 4 s of roofline; for fig6's
    /// rebuilds WarpDrive at 4 G/s and 0.5 ms per rebuild; for fig7 14 ns per operation of host
    /// batch generation on one thread).
    pub fn estimate_seconds(&self, threads: usize) -> f64 {
        let t = threads.max(1) as f64;
        let per_key = 6e-9 / t + 4e-9 + 1e-9 * 3.0;
        let runs = self.runs as f64;
        let types = self.types.len() as f64;
        let roof = if self.quick { 1.0 } else { 4.0 };
        let sizes = self.sizes();
        let cell = |n: f64, ops: f64| runs * n * ops * per_key + 2.0 * n * per_key + 0.05;
        use SlabPreset::*;
        let s = match self.preset {
            SlabFig4 | SlabFig5 => sizes
                .iter()
                .map(|&n| cell(n as f64, 3.0) * self.utilizations.len() as f64)
                .sum::<f64>(),
            SlabFig6 => {
                let n = sizes[0] as f64;
                self.batch_log2
                    .iter()
                    .map(|b| {
                        let k = (n / (1u64 << b) as f64).max(1.0);
                        let rebuilt = (1u64 << b) as f64 * k * (k + 1.0) / 2.0;
                        runs * (rebuilt / 4e9 + k * 5e-4 + n * per_key * 2.0)
                    })
                    .sum::<f64>()
            }
            SlabFig7 | SlabCompare => {
                let n0 = sizes[0] as f64;
                let b = (1u64 << self.batch_log2[0]) as f64;
                let batches = self.batches_per_run.unwrap_or(1) as f64;
                let conc = runs * (n0 * per_key * 2.0 + batches * (b * 14e-9 + b * per_key));
                let per_util = conc * self.mixes.len() as f64;
                let mut s = per_util * self.utilizations.len() as f64;
                if self.preset == SlabCompare {
                    s += cell(n0, 4.0) + runs * n0 * per_key * 2.0;
                }
                s
            }
            SlabAlloc => sizes.iter().map(|&n| runs * n as f64 * 20e-9 + 0.2).sum(),
        };
        roof + types * s + 2.0
    }

    /// Device bytes at the peak (a model): the largest table at the lowest utilisation, its
    /// key sets and outputs; fig6: the slab table and WarpDrive's last rebuild.
    pub fn device_bytes(&self) -> u64 {
        let n = *self.sizes().iter().max().unwrap_or(&0) as f64;
        let pair = self
            .types
            .iter()
            .map(|t| t.key_bytes() + t.value_bytes())
            .max()
            .unwrap_or(8) as f64;
        let u = self
            .utilizations
            .iter()
            .copied()
            .fold(MAX_UTILIZATION, f64::min);
        let table = n * pair / u;
        let sets = n * (pair * 2.0 + 2.0);
        let extra = match self.preset {
            SlabPreset::SlabFig6 => n * pair / 0.65 + n * pair,
            SlabPreset::SlabAlloc => n * 8.0 * 256.0,
            _ => 0.0,
        };
        (table + sets + extra) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(p: SlabPreset) -> SlabPlan {
        resolve_slab(&SlabBenchConfig::new(p)).unwrap()
    }

    #[test]
    fn names_parse_back() {
        for p in SlabPreset::ALL {
            assert_eq!(p.name().parse::<SlabPreset>().unwrap(), p);
            assert_eq!(p.to_string(), p.name());
            assert!(SlabPreset::is_slab_name(p.name()));
        }
        assert_eq!(
            " SLAB_FIG7 ".parse::<SlabPreset>().unwrap(),
            SlabPreset::SlabFig7
        );
        assert!("fig4".parse::<SlabPreset>().is_err());
        assert!("slab-fig8".parse::<SlabPreset>().is_err());
        assert!(!SlabPreset::is_slab_name("compare"));
        assert_eq!(
            serde_json_name(SlabPreset::SlabCompare),
            "\"slab-compare\"".to_string()
        );
    }

    fn serde_json_name(p: SlabPreset) -> String {
        serde_json::to_string(&p).unwrap()
    }

    #[test]
    fn mix_counts_add_up() {
        assert_eq!(Mix::G0.counts(1 << 20), [1 << 19, 1 << 19, 0, 0]);
        let c = Mix::G1.counts(1 << 20);
        assert_eq!(c.iter().sum::<usize>(), 1 << 20);
        assert_eq!(c[0], c[1]);
        assert_eq!(c[2], c[3]);
        let c = Mix::G2.counts(1000);
        assert_eq!(c, [100, 100, 400, 400]);
        let c = Mix::G2.counts(7);
        assert_eq!(c.iter().sum::<usize>(), 7);
        let odd = Mix {
            name: "custom",
            insert: 1.0,
            delete: 1.0,
            hit: 1.0,
            miss: 0.0,
        };
        let c = odd.counts(10);
        assert_eq!(c.iter().sum::<usize>(), 10);
        assert_eq!(c[3], 0);
        assert!((Mix::G1.updates() - 0.4).abs() < 1e-12);
        assert_eq!(Mix::G0.updates(), 1.0);
    }

    #[test]
    fn presets_expand() {
        let p = plan(SlabPreset::SlabFig4);
        assert_eq!(p.sizes_log2, vec![22, 24]);
        assert_eq!(p.utilizations, UTILIZATION_SWEEP.to_vec());
        assert_eq!(p.types, vec![KvType::U32]);
        assert_eq!(p.runs, 5);
        assert!(p.batch_log2.is_empty() && p.mixes.is_empty() && !p.delete);
        let p = plan(SlabPreset::SlabFig5);
        assert_eq!(p.sizes_log2, (18..=26).collect::<Vec<_>>());
        assert_eq!(p.utilizations, vec![0.6]);
        let p = plan(SlabPreset::SlabFig6);
        assert_eq!(p.sizes_log2, vec![24]);
        assert_eq!(p.batch_log2, vec![15, 16, 17]);
        assert_eq!(p.rebuild_load_factor, Some(0.65));
        assert_eq!(p.utilizations, vec![0.65]);
        let p = plan(SlabPreset::SlabFig7);
        assert_eq!(p.sizes_log2, vec![22]);
        assert_eq!(p.batch_log2, vec![20]);
        assert_eq!(p.mixes, vec![Mix::G0, Mix::G1, Mix::G2]);
        assert_eq!(p.batches_per_run, Some(4));
        let p = plan(SlabPreset::SlabAlloc);
        assert_eq!(p.sizes_log2, vec![20, 22]);
        assert!(p.utilizations.is_empty());
        assert_eq!(p.pool_factor, Some(8));
        let p = plan(SlabPreset::SlabCompare);
        assert_eq!(p.sizes_log2, vec![24]);
        assert_eq!(p.utilizations, vec![COMPARE_UTILIZATION]);
        assert_eq!(p.batch_log2, vec![20]);
        assert_eq!(p.incremental_log2, Some(17));
        assert_eq!(p.mixes, vec![Mix::G2]);
        assert!(p.delete);
        // 128 batches of 2^17 up to 2^24.
        assert_eq!(1usize << (24 - 17), 128);
        assert!(p.method().contains("Concurrent") && p.method().contains("Incremental"));
        assert!(p.summary().contains("slab-compare"));
    }

    #[test]
    fn presets_fit_the_time_budget() {
        for p in SlabPreset::ALL {
            let plan = plan(p);
            let s = plan.estimate_seconds(16);
            let limit = if p == SlabPreset::SlabCompare {
                60.0
            } else {
                120.0
            };
            assert!(s > 1.0 && s < limit, "{p}: {s} s");
            assert!(
                plan.device_bytes() < 40 << 30,
                "{p}: {}",
                plan.device_bytes()
            );
            let q = resolve_slab(&SlabBenchConfig {
                quick: true,
                ..SlabBenchConfig::new(p)
            })
            .unwrap();
            assert!(
                q.estimate_seconds(2) < 15.0,
                "{p} quick: {}",
                q.estimate_seconds(2)
            );
            assert!(q.sizes_log2.iter().all(|s| *s <= 16));
        }
    }

    #[test]
    fn quick_compare_keeps_128_incremental_batches() {
        let q = resolve_slab(&SlabBenchConfig {
            quick: true,
            ..SlabBenchConfig::new(SlabPreset::SlabCompare)
        })
        .unwrap();
        assert_eq!(q.sizes_log2, vec![16]);
        assert_eq!(q.incremental_log2, Some(9));
    }

    #[test]
    fn flags_override_and_are_checked() {
        let c = SlabBenchConfig {
            sizes_log2: Some(vec![20]),
            utilizations: Some(vec![0.5, 0.7]),
            runs: Some(2),
            ..SlabBenchConfig::new(SlabPreset::SlabFig4)
        };
        let p = resolve_slab(&c).unwrap();
        assert_eq!((p.sizes_log2.clone(), p.runs), (vec![20], 2));
        assert_eq!(p.utilizations, vec![0.5, 0.7]);
        // One utilisation where the preset has one: the first, with a note.
        let p = resolve_slab(&SlabBenchConfig {
            utilizations: Some(vec![0.5, 0.7]),
            ..SlabBenchConfig::new(SlabPreset::SlabCompare)
        })
        .unwrap();
        assert_eq!(p.utilizations, vec![0.5]);
        assert!(p.notes.iter().any(|n| n.contains("one memory utilisation")));
        let bad = |c: SlabBenchConfig| resolve_slab(&c).is_err();
        let d = SlabBenchConfig::new;
        assert!(bad(SlabBenchConfig {
            utilizations: Some(vec![0.95]),
            ..d(SlabPreset::SlabFig4)
        }));
        assert!(bad(SlabBenchConfig {
            utilizations: Some(vec![]),
            ..d(SlabPreset::SlabFig5)
        }));
        assert!(bad(SlabBenchConfig {
            runs: Some(0),
            ..d(SlabPreset::SlabFig5)
        }));
        assert!(bad(SlabBenchConfig {
            sizes_log2: Some(vec![30]),
            ..d(SlabPreset::SlabFig5)
        }));
        assert!(bad(SlabBenchConfig {
            batch_log2: Some(vec![25]),
            ..d(SlabPreset::SlabFig6)
        }));
        assert!(bad(SlabBenchConfig {
            batch_log2: Some(vec![8]),
            ..d(SlabPreset::SlabFig6)
        }));
        assert!(bad(SlabBenchConfig {
            types: Some(vec![KvType::U128U64]),
            ..d(SlabPreset::SlabFig4)
        }));
        assert!(!bad(SlabBenchConfig {
            types: Some(vec![KvType::U64]),
            ..d(SlabPreset::SlabFig4)
        }));
        // Flags that do not apply: ignored, with a note.
        let p = resolve_slab(&SlabBenchConfig {
            batch_log2: Some(vec![10]),
            ..d(SlabPreset::SlabFig4)
        })
        .unwrap();
        assert!(p.batch_log2.is_empty());
        assert!(p.summary().contains("note: --batch-log2"));
        let p = resolve_slab(&SlabBenchConfig {
            utilizations: Some(vec![0.5]),
            ..d(SlabPreset::SlabAlloc)
        })
        .unwrap();
        assert!(p.utilizations.is_empty() && !p.notes.is_empty());
    }
}
