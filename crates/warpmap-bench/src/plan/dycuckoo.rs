//! DyCuckoo's benchmarks (dycuckoo.txt §6): their presets ([`DyCuckooPreset`]), what can be
//! asked of them ([`DyCuckooBenchConfig`], from the flags of `warpmap bench --scheme
//! dycuckoo`), and the resolved [`DyCuckooPlan`] with its summary, method text and rough time
//! estimate.
//!
//! | preset | what | paper |
//! |---|---|---|
//! | `dycuckoo-static` | build, find hit, find miss, erase of a fixed-size table against the fill factor 0.5 .. 0.95, keys not placed counted | Tables 4-8, Fig. 9 |
//! | `dycuckoo-dynamic` | batches of inserts, finds and r-fraction erases, replayed with inserts and erases swapped (the table shrinks); per-batch times, memory and fill; against WarpDrive rebuilt on every resize | §6.3, Fig. 15 |
//! | `dycuckoo-compare` | the target cells on one GPU, each beside its target and DyCuckoo's figure | — |
//! | `dycuckoo-sweep` | the dynamic workload with one parameter varied at a time: α, β, r and the batch size | §6.3 (Figs. 11-14's parameters) |

use super::KvType;
use std::fmt;
use std::str::FromStr;
use warpmap::{Error, Result};

/// A named DyCuckoo benchmark (`warpmap bench --scheme dycuckoo --preset NAME`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DyCuckooPreset {
    /// Tables 4-8: a static table (no resize) filled to 0.5 .. 0.95 by one insert batch; build,
    /// find hit, find miss and erase, with the keys not placed per cell.
    DycuckooStatic,
    /// The dynamic workload (§6.3, Fig. 15): batches of 2^20 inserts, 2^20 finds and r·2^20
    /// erases, then replayed with inserts and erases swapped; against a WarpDrive table
    /// rebuilt (doubled or halved, everything reinserted) whenever its load leaves [α, β].
    DycuckooDynamic,
    /// The target cells: static n = 2^26 at fill 0.8 and 0.9, and the dynamic
    /// workload (32 batches, r = 0.4, α 0.4, β 0.9) with its baseline.
    DycuckooCompare,
    /// The dynamic workload (16 batches, no baseline) with one parameter varied at a time
    /// around α 0.4, β 0.9, r 0.4 and batches of 2^20: α over [`SWEEP_ALPHAS`], β over
    /// [`SWEEP_BETAS`], r over [`SWEEP_RATIOS`], the batch over [`SWEEP_BATCH_LOG2`].
    DycuckooSweep,
}

impl DyCuckooPreset {
    /// Every DyCuckoo preset.
    pub const ALL: [DyCuckooPreset; 4] = [
        DyCuckooPreset::DycuckooStatic,
        DyCuckooPreset::DycuckooDynamic,
        DyCuckooPreset::DycuckooCompare,
        DyCuckooPreset::DycuckooSweep,
    ];

    /// "dycuckoo-static", "dycuckoo-dynamic", "dycuckoo-compare", "dycuckoo-sweep".
    pub fn name(self) -> &'static str {
        match self {
            DyCuckooPreset::DycuckooStatic => "dycuckoo-static",
            DyCuckooPreset::DycuckooDynamic => "dycuckoo-dynamic",
            DyCuckooPreset::DycuckooCompare => "dycuckoo-compare",
            DyCuckooPreset::DycuckooSweep => "dycuckoo-sweep",
        }
    }

    /// One line on what it measures.
    pub fn description(self) -> &'static str {
        match self {
            DyCuckooPreset::DycuckooStatic => {
                "DyCuckoo paper Tables 4-8: static table, build/find hit/find miss/erase vs fill \
                 factor 0.5-0.95, keys not placed counted, n = 2^26, u32/u32"
            }
            DyCuckooPreset::DycuckooDynamic => {
                "DyCuckoo paper Fig. 15: batches of 2^20 inserts + 2^20 finds + r*2^20 erases, \
                 replayed with inserts and erases swapped; per-batch time, memory, fill; vs \
                 WarpDrive rebuilt on resize"
            }
            DyCuckooPreset::DycuckooCompare => {
                "DyCuckoo target cells: static n = 2^26 at fill 0.8 and 0.9, dynamic 32 x 2^20 \
                 (r 0.4, alpha 0.4, beta 0.9) with the rebuild baseline, u32/u32"
            }
            DyCuckooPreset::DycuckooSweep => {
                "DyCuckoo's parameters: the dynamic workload (16 batches, no baseline) with alpha \
                 0.2-0.5, beta 0.8-0.95, r 0.1-0.5 and batches of 2^18-2^21, one at a time \
                 around alpha 0.4, beta 0.9, r 0.4, 2^20; u32/u32"
            }
        }
    }

    /// Whether `s` names a DyCuckoo preset.
    pub fn is_dycuckoo_name(s: &str) -> bool {
        s.parse::<DyCuckooPreset>().is_ok()
    }
}

impl FromStr for DyCuckooPreset {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim().to_ascii_lowercase().replace('_', "-");
        DyCuckooPreset::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| {
                format!(
                    "unknown DyCuckoo preset '{s}' (dycuckoo-static, dycuckoo-dynamic, \
                     dycuckoo-compare or dycuckoo-sweep)"
                )
            })
    }
}

impl fmt::Display for DyCuckooPreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The static sweep's fill factors (the paper's tables: 0.75 .. 0.95; 0.5 .. 0.7 below them).
pub const FILL_SWEEP: [f64; 8] = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95];
/// The compare preset's static fill factors.
pub const COMPARE_FILLS: [f64; 2] = [0.8, 0.9];
/// The dynamic workload's defaults (the paper's Table 3 and the issue): r, α, β, batches.
pub const DYNAMIC_RATIO: f64 = 0.4;
/// α of the dynamic workload (DyCuckoo and the baseline).
pub const DYNAMIC_ALPHA: f64 = 0.4;
/// β of the dynamic workload.
pub const DYNAMIC_BETA: f64 = 0.9;
/// Insert batches of the first half of the dynamic workload (the replay adds as many).
pub const DYNAMIC_BATCHES: usize = 32;
/// The static table's β: above every swept fill, so a static cell never resizes (its
/// capacity is also its maximum).
pub const STATIC_BETA: f64 = 0.99;
/// `dycuckoo-sweep`: the α values (β, r and the batch at their defaults).
pub const SWEEP_ALPHAS: [f64; 4] = [0.2, 0.3, 0.4, 0.5];
/// `dycuckoo-sweep`: the β values.
pub const SWEEP_BETAS: [f64; 4] = [0.8, 0.85, 0.9, 0.95];
/// `dycuckoo-sweep`: the r values.
pub const SWEEP_RATIOS: [f64; 5] = [0.1, 0.2, 0.3, 0.4, 0.5];
/// `dycuckoo-sweep`: the batch sizes, log2 (`--quick`: 2^10 .. 2^12).
pub const SWEEP_BATCH_LOG2: [u32; 4] = [18, 19, 20, 21];
/// `dycuckoo-sweep`: insert batches of each point's first half.
pub const SWEEP_BATCHES: usize = 16;

/// One point of `dycuckoo-sweep`: the parameter varied and its value there (the others at
/// the plan's values).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SweepPoint {
    /// "alpha", "beta", "ratio" or "batch_log2".
    pub parameter: &'static str,
    /// Its value.
    pub value: f64,
}

impl SweepPoint {
    /// "alpha 0.3", "batch 2^19".
    pub fn label(&self) -> String {
        match self.parameter {
            "batch_log2" => format!("batch 2^{}", self.value as u32),
            p => format!("{p} {}", self.value),
        }
    }

    /// `plan` with this point's value in place (and no sweep of its own).
    pub fn apply(&self, plan: &DyCuckooPlan) -> DyCuckooPlan {
        let mut p = plan.clone();
        p.sweep = Vec::new();
        match self.parameter {
            "alpha" => p.alpha = Some(self.value),
            "beta" => p.beta = Some(self.value),
            "ratio" => p.ratio = Some(self.value),
            _ => p.batch_log2 = Some(self.value as u32),
        }
        p
    }
}

/// What a DyCuckoo benchmark can be asked for; `None` fields take the preset's values.
#[derive(Clone, Debug)]
pub struct DyCuckooBenchConfig {
    /// The preset.
    pub preset: DyCuckooPreset,
    /// Small sizes and few runs: a smoke test of a few seconds.
    pub quick: bool,
    /// The source revision, recorded in the report.
    pub commit: String,
    /// Timed runs per static cell (fresh keys each); the dynamic workload runs once per run.
    pub runs: Option<usize>,
    /// The base seed of every key set.
    pub seed: u64,
    /// Static cells: keys per cell, log2.
    pub size_log2: Option<u32>,
    /// Static cells: the fill factors (the sweep, or compare's two).
    pub fills: Option<Vec<f64>>,
    /// Dynamic: inserts per batch, log2 (finds as many, erases r times as many).
    pub batch_log2: Option<u32>,
    /// Dynamic: insert batches before the replay.
    pub batches: Option<usize>,
    /// Dynamic: r, erases per insert in a batch.
    pub ratio: Option<f64>,
    /// Dynamic: α.
    pub alpha: Option<f64>,
    /// Dynamic: β.
    pub beta: Option<f64>,
    /// Key/value types: `u32` (the default) or `u64`.
    pub types: Option<Vec<KvType>>,
    /// Dynamic: run the WarpDrive rebuild baseline too (default).
    pub baseline: bool,
}

impl DyCuckooBenchConfig {
    /// The preset's defaults.
    pub fn new(preset: DyCuckooPreset) -> Self {
        DyCuckooBenchConfig {
            preset,
            quick: false,
            commit: "unknown".into(),
            runs: None,
            seed: 0xdc_2020_5eed_beef,
            size_log2: None,
            fills: None,
            batch_log2: None,
            batches: None,
            ratio: None,
            alpha: None,
            beta: None,
            types: None,
            baseline: true,
        }
    }
}

/// A resolved DyCuckoo benchmark ([`resolve_dycuckoo`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct DyCuckooPlan {
    /// The preset.
    pub preset: DyCuckooPreset,
    /// `--quick` sizes.
    pub quick: bool,
    /// Timed runs per static cell; runs of the dynamic workload.
    pub runs: usize,
    /// The base seed.
    pub seed: u64,
    /// Key/value types.
    pub types: Vec<KvType>,
    /// Static: keys per cell, log2 (absent for dynamic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_log2: Option<u32>,
    /// Static: fill factors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fills: Vec<f64>,
    /// Dynamic: inserts per batch, log2.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_log2: Option<u32>,
    /// Dynamic: insert batches before the replay (as many replayed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batches: Option<usize>,
    /// Dynamic: r.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Dynamic: α.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// Dynamic: β.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// Dynamic: whether the rebuild baseline runs.
    pub baseline: bool,
    /// `dycuckoo-sweep`: the points, each the dynamic workload with one parameter changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<SweepPoint>,
    /// Adjustments to what was asked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Resolves a DyCuckoo configuration: the preset's values where the configuration leaves a
/// field `None`, then validation.
pub fn resolve_dycuckoo(cfg: &DyCuckooBenchConfig) -> Result<DyCuckooPlan> {
    use DyCuckooPreset::*;
    let q = cfg.quick;
    let has_static = matches!(cfg.preset, DycuckooStatic | DycuckooCompare);
    let has_dynamic = cfg.preset != DycuckooStatic;
    let sweeping = cfg.preset == DycuckooSweep;
    let mut notes = Vec::new();
    let runs = cfg.runs.unwrap_or(match (cfg.preset, q) {
        (DycuckooDynamic | DycuckooSweep, _) => 1,
        (_, true) => 2,
        _ => 3,
    });
    if runs == 0 {
        return Err(Error::invalid("runs must be at least 1"));
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
            "the DyCuckoo presets measure u32 (u32->u32) or u64 (u64->u64), not {bad}"
        )));
    }
    let (mut size_log2, mut fills) = (None, Vec::new());
    if has_static {
        let s = cfg.size_log2.unwrap_or(if q { 14 } else { 26 });
        // u32 keys: inserted keys and absent keys (indices from 2^31) must stay distinct.
        if !(8..=28).contains(&s) {
            return Err(Error::invalid(format!(
                "size 2^{s}: use sizes of 2^8 to 2^28"
            )));
        }
        size_log2 = Some(s);
        fills = cfg.fills.clone().unwrap_or_else(|| {
            if cfg.preset == DycuckooCompare {
                COMPARE_FILLS.to_vec()
            } else if q {
                vec![0.5, 0.8, 0.95]
            } else {
                FILL_SWEEP.to_vec()
            }
        });
        if fills.is_empty() {
            return Err(Error::invalid("no fill factor to measure"));
        }
        if let Some(bad) = fills.iter().find(|f| !(**f >= 0.01 && **f < STATIC_BETA)) {
            return Err(Error::invalid(format!(
                "fill factor {bad} is not in [0.01, {STATIC_BETA})"
            )));
        }
    } else if cfg.size_log2.is_some() || cfg.fills.is_some() {
        notes.push(format!(
            "--keys-log2/--fill-factors do not apply to {}: ignored",
            cfg.preset
        ));
    }
    let (mut batch_log2, mut batches, mut ratio, mut alpha, mut beta) =
        (None, None, None, None, None);
    if has_dynamic {
        let b = cfg.batch_log2.unwrap_or(if q { 12 } else { 20 });
        if !(6..=24).contains(&b) {
            return Err(Error::invalid(format!("batches of 2^{b}: use 2^6 to 2^24")));
        }
        let k = cfg.batches.unwrap_or(match (q, sweeping) {
            (true, _) => 8,
            (false, true) => SWEEP_BATCHES,
            (false, false) => DYNAMIC_BATCHES,
        });
        if !(1..=1024).contains(&k) || ((k as u64) << b) > 1 << 28 {
            return Err(Error::invalid(format!(
                "{k} batches of 2^{b}: use 1 to 1024 batches and at most 2^28 keys in all"
            )));
        }
        let r = cfg.ratio.unwrap_or(DYNAMIC_RATIO);
        if !(0.0..1.0).contains(&r) {
            return Err(Error::invalid(format!(
                "r = {r}: use 0 <= r < 1 (the table must grow in the first half)"
            )));
        }
        let (a, be) = (
            cfg.alpha.unwrap_or(DYNAMIC_ALPHA),
            cfg.beta.unwrap_or(DYNAMIC_BETA),
        );
        // The table's own rule (3 subtables): 0 < α ≤ β·d/(d+1), β < 1.
        warpmap::table::dycuckoo::policy::check_fill_bounds(a, be, 3).map_err(Error::invalid)?;
        (batch_log2, batches, ratio, alpha, beta) = (Some(b), Some(k), Some(r), Some(a), Some(be));
    } else {
        let given = [
            ("--batch-log2", cfg.batch_log2.is_some()),
            ("--batches", cfg.batches.is_some()),
            ("--ratio", cfg.ratio.is_some()),
            ("--alpha", cfg.alpha.is_some()),
            ("--beta", cfg.beta.is_some()),
        ];
        for (flag, g) in given {
            if g {
                notes.push(format!("{flag} does not apply to dycuckoo-static: ignored"));
            }
        }
    }
    let mut sweep = Vec::new();
    if sweeping {
        let (a, be) = (alpha.unwrap_or(DYNAMIC_ALPHA), beta.unwrap_or(DYNAMIC_BETA));
        let k = batches.unwrap_or(SWEEP_BATCHES) as u64;
        let point = |parameter, value| SweepPoint { parameter, value };
        // Points the table itself would refuse (α above β·d/(d+1)) or too large are left out.
        let ok =
            |a: f64, b: f64| warpmap::table::dycuckoo::policy::check_fill_bounds(a, b, 3).is_ok();
        sweep.extend(
            SWEEP_ALPHAS
                .iter()
                .filter(|&&x| ok(x, be))
                .map(|&x| point("alpha", x)),
        );
        sweep.extend(
            SWEEP_BETAS
                .iter()
                .filter(|&&x| ok(a, x))
                .map(|&x| point("beta", x)),
        );
        sweep.extend(SWEEP_RATIOS.iter().map(|&x| point("ratio", x)));
        let sizes: Vec<u32> = if q {
            vec![10, 11, 12]
        } else {
            SWEEP_BATCH_LOG2.to_vec()
        };
        sweep.extend(
            sizes
                .into_iter()
                .filter(|&s| k << s <= 1 << 28)
                .map(|s| point("batch_log2", s as f64)),
        );
    }
    Ok(DyCuckooPlan {
        preset: cfg.preset,
        quick: q,
        runs,
        seed: cfg.seed,
        types,
        size_log2,
        fills,
        batch_log2,
        batches,
        ratio,
        alpha,
        beta,
        baseline: has_dynamic && cfg.baseline && !sweeping,
        sweep,
        notes,
    })
}

impl DyCuckooPlan {
    /// Keys per static cell.
    pub fn static_n(&self) -> Option<usize> {
        self.size_log2.map(|s| 1usize << s)
    }

    /// Keys per dynamic insert batch.
    pub fn batch(&self) -> Option<usize> {
        self.batch_log2.map(|b| 1usize << b)
    }

    /// Erases per dynamic batch: r · batch, rounded down.
    pub fn erases_per_batch(&self) -> Option<usize> {
        Some((self.ratio? * self.batch()? as f64).floor() as usize)
    }

    /// A few lines: the preset, sizes, fills, the dynamic workload's parameters, notes.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} ({}), {} run{}, types {}",
            self.preset,
            self.preset.description(),
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            self.types
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        if let Some(n) = self.size_log2 {
            s += &format!(
                "\nstatic: n = 2^{n}, fill factors {}",
                self.fills
                    .iter()
                    .map(|f| f.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            );
        }
        if let (Some(b), Some(k), Some(r), Some(a), Some(be)) = (
            self.batch_log2,
            self.batches,
            self.ratio,
            self.alpha,
            self.beta,
        ) {
            s += &format!(
                "\ndynamic: {k} batches of 2^{b} inserts + 2^{b} finds + {r}*2^{b} erases, then \
                 {k} replayed (inserts and erases swapped); alpha {a}, beta {be}; baseline: {}",
                if self.baseline {
                    "WarpDrive rebuilt on resize"
                } else {
                    "off"
                }
            );
        }
        if !self.sweep.is_empty() {
            s += &format!(
                "\nsweep ({} points, one parameter changed at a time): {}",
                self.sweep.len(),
                self.sweep
                    .iter()
                    .map(SweepPoint::label)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        for n in &self.notes {
            s += &format!("\nnote: {n}");
        }
        s
    }

    /// How every cell is timed and verified (the report's `method`).
    pub fn method(&self) -> String {
        let mut m = String::from(
            "GPU, CUDA events around the kernels only (inputs on the device and outputs \
             poisoned before the start event, checks after the stop event); one warm-up of \
             every kernel per table; every result checked on the host",
        );
        if self.size_log2.is_some() {
            m += ". Static cells: a DyCuckoo table (3 subtables) made for n / fill slots whose \
                  maximum capacity is its capacity and beta 0.99 (no resize); per run floor(fill \
                  x capacity) fresh unique keys inserted into the cleared table in one launch \
                  with per-key status (build; keys whose status is TABLE_FULL are counted as \
                  not placed, the table's len must equal the keys placed), then all of them \
                  searched (find hit: every placed key found with value_for(key), every unplaced \
                  key absent), as many keys never inserted searched (find miss: none found), \
                  then all erased (len 0 after); median of the runs, fresh keys every run";
        }
        if self.batch_log2.is_some() {
            m += ". Dynamic: one DyCuckoo table (3 subtables, first capacity one batch, no \
                  floor) and per batch i: an insert of batch i's new keys (growth included), \
                  finds of batch i's keys, an erase of the r x batch oldest present keys \
                  followed by fit_fill_bounds (the shrink is part of the erase's time); then \
                  the batches replayed in order with inserts and erases swapped (batch i \
                  inserts the keys it erased and erases the keys it inserted). Each operation \
                  timed alone; a host model of the present keys checks every batch: every \
                  insert placed, every find against the model (hit with value_for(key), or \
                  absent), len equal to the model after every operation. Memory \
                  (memory_bytes) and fill factor (stats) recorded after every batch. Rates: \
                  keys of an operation over the sum of its times; all ops: every key over the \
                  whole time";
            if self.baseline {
                m += ". Baseline: WarpDrive (static) driven by the same batches, its capacity a \
                      power-of-two multiple of one batch / beta: before an insert that would \
                      take its load above beta it is doubled, after an erase that leaves it \
                      below alpha halved (never below the first capacity), each resize a new \
                      table and every present key reinserted (allocation and the copy of the \
                      keys untimed, the reinsert timed); erases are WarpDrive's own. Speedup: \
                      the baseline's whole time over DyCuckoo's";
            }
        }
        if !self.sweep.is_empty() {
            m += ". Sweep: the dynamic workload once per point, with the point's parameter \
                  changed and the others as above; each row names its point (`sweep`)";
        }
        m
    }

    /// A rough wall-clock estimate in seconds on an H100 host (a model, not calibrated: host
    /// key generation and checks at 6 ns per key per thread plus 4 ns per key of copies; GPU
    /// kernels at 1 G/s at worst; 0.5 ms per dynamic operation launch; the baseline's
    /// reinserts at 2 G/s).
    pub fn estimate_seconds(&self, threads: usize) -> f64 {
        if !self.sweep.is_empty() {
            // Each point's workload, less the fixed 2 s each would add.
            let points: f64 = self
                .sweep
                .iter()
                .map(|p| p.apply(self).estimate_seconds(threads) - 2.0)
                .sum();
            return points + 2.0;
        }
        let t = threads.max(1) as f64;
        let per_key = 6e-9 / t + 4e-9 + 1e-9 * 3.0;
        let runs = self.runs as f64;
        let types = self.types.len() as f64;
        let mut s = 0.0;
        if let Some(n) = self.static_n() {
            let n = n as f64;
            s += self.fills.len() as f64 * (runs * n * 4.0 * per_key + n * per_key + 0.1);
        }
        if let (Some(b), Some(k)) = (self.batch(), self.batches) {
            let (b, k) = (b as f64, k as f64);
            // Two halves of k batches, each about 3 operations of a batch, host model checks.
            let dyn_s = 2.0 * k * (3.0 * b * per_key * 2.0 + 3.0 * 5e-4);
            let total = b * k;
            let base = if self.baseline {
                dyn_s + 2.0 * total * (k.log2().max(1.0)) / 2e9 + total * per_key * 2.0
            } else {
                0.0
            };
            s += runs * (dyn_s + base) + total * per_key;
        }
        types * s + 2.0
    }

    /// Device bytes at the peak (a model): the largest static table at the lowest fill with its
    /// key sets, or the dynamic table at α beside the baseline and the workload's keys.
    pub fn device_bytes(&self) -> u64 {
        if !self.sweep.is_empty() {
            return self
                .sweep
                .iter()
                .map(|p| p.apply(self).device_bytes())
                .max()
                .unwrap_or(0);
        }
        let pair = self
            .types
            .iter()
            .map(|t| t.key_bytes() + t.value_bytes())
            .max()
            .unwrap_or(8) as f64;
        let mut peak: f64 = 0.0;
        if let Some(n) = self.static_n() {
            let f = self.fills.iter().copied().fold(1.0, f64::min);
            let n = n as f64;
            peak = peak.max(n * pair / f + n * (pair * 2.0 + 5.0));
        }
        if let (Some(b), Some(k), Some(a)) = (self.batch(), self.batches, self.alpha) {
            let total = (b * k) as f64;
            let table = total * pair / a;
            // Two WarpDrive tables while one is rebuilt.
            let base = if self.baseline { 3.0 * table } else { 0.0 };
            peak = peak.max(table + base + total * pair + b as f64 * 16.0);
        }
        peak as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(p: DyCuckooPreset) -> DyCuckooPlan {
        resolve_dycuckoo(&DyCuckooBenchConfig::new(p)).unwrap()
    }

    #[test]
    fn names_parse_back() {
        for p in DyCuckooPreset::ALL {
            assert_eq!(p.name().parse::<DyCuckooPreset>().unwrap(), p);
            assert_eq!(p.to_string(), p.name());
            assert!(DyCuckooPreset::is_dycuckoo_name(p.name()));
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                format!("\"{}\"", p.name())
            );
        }
        assert!("dycuckoo".parse::<DyCuckooPreset>().is_err());
        assert!("slab-compare".parse::<DyCuckooPreset>().is_err());
    }

    #[test]
    fn presets_expand() {
        let p = plan(DyCuckooPreset::DycuckooStatic);
        assert_eq!(
            (p.size_log2, p.fills.clone()),
            (Some(26), FILL_SWEEP.to_vec())
        );
        assert!(p.batch_log2.is_none() && !p.baseline);
        assert!(!p.method().contains("Dynamic"));
        let p = plan(DyCuckooPreset::DycuckooDynamic);
        assert_eq!((p.batch_log2, p.batches), (Some(20), Some(32)));
        assert_eq!(
            (p.ratio, p.alpha, p.beta),
            (Some(0.4), Some(0.4), Some(0.9))
        );
        assert_eq!(p.erases_per_batch(), Some(419_430));
        assert!(p.size_log2.is_none() && p.baseline);
        assert!(p.method().contains("Baseline") && !p.method().contains("Static cells"));
        let p = plan(DyCuckooPreset::DycuckooCompare);
        assert_eq!(
            (p.size_log2, p.fills.clone()),
            (Some(26), COMPARE_FILLS.to_vec())
        );
        assert_eq!((p.batch_log2, p.batches), (Some(20), Some(32)));
        assert!(p.summary().contains("dycuckoo-compare"));
        assert!(p.method().contains("Static cells") && p.method().contains("Dynamic"));
        let p = plan(DyCuckooPreset::DycuckooSweep);
        assert!(p.size_log2.is_none() && !p.baseline);
        assert_eq!((p.batch_log2, p.batches), (Some(20), Some(SWEEP_BATCHES)));
        // Every α and β is valid beside the other's default; every r; every batch size.
        assert_eq!(p.sweep.len(), 4 + 4 + 5 + 4);
        let alphas: Vec<f64> = p
            .sweep
            .iter()
            .filter(|s| s.parameter == "alpha")
            .map(|s| s.value)
            .collect();
        assert_eq!(alphas, SWEEP_ALPHAS.to_vec());
        let q = p.sweep[0].apply(&p);
        assert_eq!(
            (q.alpha, q.beta, q.ratio),
            (Some(0.2), Some(0.9), Some(0.4))
        );
        assert!(q.sweep.is_empty());
        let big = p.sweep.last().unwrap();
        assert_eq!(big.label(), "batch 2^21");
        assert_eq!(big.apply(&p).batch_log2, Some(21));
        assert!(p.summary().contains("sweep (17 points") && p.summary().contains("beta 0.85"));
        // A β that rules out some α: those points are left out, not refused.
        let p = resolve_dycuckoo(&DyCuckooBenchConfig {
            beta: Some(0.6),
            ..DyCuckooBenchConfig::new(DyCuckooPreset::DycuckooSweep)
        })
        .unwrap();
        assert!(p
            .sweep
            .iter()
            .all(|s| s.parameter != "alpha" || s.value <= 0.45));
    }

    #[test]
    fn presets_fit_the_time_budget() {
        for p in DyCuckooPreset::ALL {
            let pl = plan(p);
            let s = pl.estimate_seconds(16);
            assert!(s > 1.0 && s < 300.0, "{p}: {s} s");
            assert!(pl.device_bytes() < 40 << 30, "{p}: {}", pl.device_bytes());
            let q = resolve_dycuckoo(&DyCuckooBenchConfig {
                quick: true,
                ..DyCuckooBenchConfig::new(p)
            })
            .unwrap();
            assert!(q.estimate_seconds(2) < 15.0, "{p} quick");
            assert!(q.size_log2.is_none_or(|s| s <= 16));
        }
    }

    #[test]
    fn flags_override_and_are_checked() {
        let d = DyCuckooBenchConfig::new;
        let p = resolve_dycuckoo(&DyCuckooBenchConfig {
            fills: Some(vec![0.7]),
            size_log2: Some(18),
            runs: Some(1),
            ..d(DyCuckooPreset::DycuckooStatic)
        })
        .unwrap();
        assert_eq!(
            (p.fills.clone(), p.size_log2, p.runs),
            (vec![0.7], Some(18), 1)
        );
        let bad = |c: DyCuckooBenchConfig| resolve_dycuckoo(&c).is_err();
        assert!(bad(DyCuckooBenchConfig {
            fills: Some(vec![0.995]),
            ..d(DyCuckooPreset::DycuckooStatic)
        }));
        assert!(bad(DyCuckooBenchConfig {
            runs: Some(0),
            ..d(DyCuckooPreset::DycuckooStatic)
        }));
        assert!(bad(DyCuckooBenchConfig {
            ratio: Some(1.0),
            ..d(DyCuckooPreset::DycuckooDynamic)
        }));
        // α above β·d/(d+1) is the table's own refusal.
        assert!(bad(DyCuckooBenchConfig {
            alpha: Some(0.8),
            ..d(DyCuckooPreset::DycuckooDynamic)
        }));
        assert!(bad(DyCuckooBenchConfig {
            types: Some(vec![KvType::U128U64]),
            ..d(DyCuckooPreset::DycuckooStatic)
        }));
        let p = resolve_dycuckoo(&DyCuckooBenchConfig {
            ratio: Some(0.2),
            ..d(DyCuckooPreset::DycuckooStatic)
        })
        .unwrap();
        assert!(p.ratio.is_none() && p.summary().contains("note: --ratio"));
    }
}
