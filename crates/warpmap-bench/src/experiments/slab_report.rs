//! The report of the slab-hash benchmarks ([`SlabReport`]): one [`SlabRow`] per measured cell
//! (the memory utilisation beside every rate), the target cells of `slab-compare`
//! ([`TargetRow`], beside the targets and SlabHash's own figures, [`TARGETS`]), and the
//! one-line text of each (what `warpmap bench --scheme slab` prints as the cells finish).

use crate::harness::report::Roofline;
use crate::harness::timing::median;
use crate::plan::{Mix, SlabPlan, SlabPreset};
use crate::schemes::slab::SlabInfo;
use warpmap::device::CompileRecord;
use warpmap::{Key, Value};

/// What a slab row measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlabOp {
    /// `n` new keys into the empty table in one launch (the paper's bulk build).
    Build,
    /// `n` searches of stored keys.
    SearchHit,
    /// `n` searches of keys never inserted.
    SearchMiss,
    /// A delete of the `n` stored keys.
    Delete,
    /// `n` keys inserted in equal batches, one launch each (Fig. 6).
    Incremental,
    /// Fig. 6's baseline: a static WarpDrive table rebuilt from all keys so far after every
    /// batch (the sum of the builds).
    Rebuild,
    /// Batches of concurrent mixed operations (Fig. 7).
    Concurrent,
    /// SlabAlloc: one slab per thread.
    Alloc,
    /// Freeing the allocated slabs.
    Free,
}

impl SlabOp {
    /// The JSON name ("build", "search_hit", ...).
    pub fn name(self) -> &'static str {
        match self {
            SlabOp::Build => "build",
            SlabOp::SearchHit => "search_hit",
            SlabOp::SearchMiss => "search_miss",
            SlabOp::Delete => "delete",
            SlabOp::Incremental => "incremental",
            SlabOp::Rebuild => "rebuild",
            SlabOp::Concurrent => "concurrent",
            SlabOp::Alloc => "alloc",
            SlabOp::Free => "free",
        }
    }

    /// Whether its roofline is the random CAS (updates), else the random gather (searches);
    /// `None` where no roofline applies (the allocator, the concurrent mixes).
    fn writes(self) -> Option<bool> {
        match self {
            SlabOp::Build | SlabOp::Delete | SlabOp::Incremental | SlabOp::Rebuild => Some(true),
            SlabOp::SearchHit | SlabOp::SearchMiss => Some(false),
            SlabOp::Concurrent | SlabOp::Alloc | SlabOp::Free => None,
        }
    }
}

/// One measured cell.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SlabRow {
    /// The figure: "fig4", "fig5", "fig6", "fig7", "alloc" or "compare".
    pub experiment: &'static str,
    /// What was timed.
    pub op: SlabOp,
    /// "slab", or "warpdrive" for Fig. 6's rebuilds.
    pub scheme: &'static str,
    /// Key type name.
    pub key_type: &'static str,
    /// Value type name.
    pub value_type: &'static str,
    /// Elements stored: keys inserted (build, searches, delete), the final count
    /// (incremental, rebuild), the initial count n0 (concurrent), allocations (alloc, free).
    pub n: usize,
    /// Operations per timed measurement (the rate's numerator).
    pub ops: usize,
    /// 10^9 operations per second at the median time.
    pub gops: f64,
    /// Median milliseconds of one timed measurement.
    pub median_ms: f64,
    /// Fastest measurement, milliseconds.
    pub min_ms: f64,
    /// Slowest measurement, milliseconds.
    pub max_ms: f64,
    /// Timed measurements the median is over.
    pub runs: usize,
    /// `gops` over the in-run roofline (random CAS for updates, random gather for searches,
    /// their harmonic mix weighted by the operation mix for concurrent rows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub roofline_ratio: Option<f64>,
    /// The memory utilisation asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization_target: Option<f64>,
    /// The memory utilisation measured (the table's stats after the build; median of the
    /// runs). Concurrent rows: before the batches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization: Option<f64>,
    /// Concurrent rows: the utilisation after the run's batches (median).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utilization_end: Option<f64>,
    /// The slab table's stats (of the last run, after the build).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slab: Option<SlabInfo>,
    /// Incremental and concurrent rows: operations per batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// Incremental rows: batches in the sequence; concurrent rows: timed batches per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batches: Option<usize>,
    /// Concurrent rows: the operation mix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<Mix>,
    /// Rebuild rows: WarpDrive's load factor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_factor: Option<f64>,
    /// Fig. 6 slab rows: the rebuilds' time over the incremental time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// Fig. 6: milliseconds after each batch (slab: each batch timed alone in one pass;
    /// rebuild: the sum of the builds so far), the figure's curve.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cumulative_ms: Vec<f64>,
    /// Alloc rows: allocated slabs over the pool's slabs while allocated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_fill: Option<f64>,
    /// Device bytes of the table (`HashTable::memory_bytes`).
    pub memory_bytes: usize,
    /// Whether every run's result was checked and correct.
    pub verified: bool,
    /// What failed verification, per failing run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

impl SlabRow {
    /// A row of `K`/`V` from its timed measurements (`ms`), `ops` operations each, verified
    /// when `failures` is empty; the other fields empty.
    pub fn new<K: Key, V: Value>(
        experiment: &'static str,
        op: SlabOp,
        n: usize,
        ops: usize,
        ms: &[f64],
        failures: Vec<String>,
    ) -> Self {
        let median_ms = median(ms);
        SlabRow {
            experiment,
            op,
            scheme: "slab",
            key_type: K::NAME,
            value_type: V::NAME,
            n,
            ops,
            gops: if median_ms > 0.0 {
                ops as f64 / (median_ms * 1e6)
            } else {
                0.0
            },
            median_ms,
            min_ms: ms.iter().copied().fold(f64::INFINITY, f64::min).min(1e300),
            max_ms: ms.iter().copied().fold(0.0, f64::max),
            runs: ms.len(),
            roofline_ratio: None,
            utilization_target: None,
            utilization: None,
            utilization_end: None,
            slab: None,
            batch: None,
            batches: None,
            mix: None,
            load_factor: None,
            speedup: None,
            cumulative_ms: Vec::new(),
            pool_fill: None,
            memory_bytes: 0,
            verified: failures.is_empty() && !ms.is_empty(),
            failures,
        }
    }

    /// Sets `roofline_ratio` from the in-run roofline.
    pub(crate) fn with_roofline(mut self, r: &Roofline) -> Self {
        let peak = match (self.op.writes(), self.mix) {
            (Some(true), _) => r.cas8_gops,
            (Some(false), _) => r.gather8_gops,
            (None, Some(m)) if self.op == SlabOp::Concurrent => {
                r.cas8_gops.zip(r.gather8_gops).map(|(c, g)| {
                    let u = m.updates();
                    1.0 / (u / c + (1.0 - u) / g)
                })
            }
            (None, _) => None,
        };
        self.roofline_ratio = peak.filter(|p| *p > 0.0).map(|p| self.gops / p);
        self
    }
}

/// A target cell of `slab-compare`: the target rate and SlabHash's own figure on an
/// H100, 10^9 operations per second.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Target {
    /// The cell: "build", "search_hit", "search_miss", "delete", "incremental" or
    /// "concurrent".
    pub cell: &'static str,
    /// The rate to reach.
    pub target_gops: f64,
    /// SlabHash's rate (the reference implementation).
    pub slabhash_gops: f64,
}

/// The target cells (u32->u32, n = 2^24, utilisation ~0.615, one H100).
pub const TARGETS: [Target; 6] = [
    Target {
        cell: "build",
        target_gops: 9.4,
        slabhash_gops: 8.57,
    },
    Target {
        cell: "search_hit",
        target_gops: 15.9,
        slabhash_gops: 14.46,
    },
    Target {
        cell: "search_miss",
        target_gops: 14.7,
        slabhash_gops: 13.35,
    },
    Target {
        cell: "delete",
        target_gops: 11.1,
        slabhash_gops: 10.05,
    },
    Target {
        cell: "incremental",
        target_gops: 4.4,
        slabhash_gops: 3.96,
    },
    Target {
        cell: "concurrent",
        target_gops: 11.7,
        slabhash_gops: 10.63,
    },
];

/// A target cell measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TargetRow {
    /// The cell (see [`Target::cell`]).
    pub cell: &'static str,
    /// The rate measured, 10^9 per second.
    pub gops: f64,
    /// The target.
    pub target_gops: f64,
    /// SlabHash's figure.
    pub slabhash_gops: f64,
    /// `gops / slabhash_gops`.
    pub ratio_to_slabhash: f64,
    /// `gops / target_gops`.
    pub ratio_to_target: f64,
    /// Whether `gops >= target_gops`.
    pub met: bool,
    /// The memory utilisation measured for the cell.
    pub utilization: Option<f64>,
    /// Whether the cell's row verified.
    pub verified: bool,
}

/// The target rows of `rows` (compare rows whose op names a [`TARGETS`] cell), in the
/// targets' order.
pub fn target_rows(rows: &[SlabRow]) -> Vec<TargetRow> {
    TARGETS
        .iter()
        .filter_map(|t| {
            let r = rows.iter().find(|r| {
                r.experiment == "compare" && r.scheme == "slab" && r.op.name() == t.cell
            })?;
            Some(TargetRow {
                cell: t.cell,
                gops: r.gops,
                target_gops: t.target_gops,
                slabhash_gops: t.slabhash_gops,
                ratio_to_slabhash: r.gops / t.slabhash_gops,
                ratio_to_target: r.gops / t.target_gops,
                met: r.gops >= t.target_gops,
                utilization: r.utilization,
                verified: r.verified,
            })
        })
        .collect()
}

/// The whole slab benchmark: what `warpmap bench --scheme slab` writes as JSON.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SlabReport {
    /// The preset run.
    pub preset: SlabPreset,
    /// The GPU's name and `sm_XY`.
    pub device: String,
    /// The source revision.
    pub commit: String,
    /// When the run started, UTC.
    pub date: String,
    /// How cells were timed and verified.
    pub method: String,
    /// What was run.
    pub plan: SlabPlan,
    /// The in-run roofline.
    pub roofline: Roofline,
    /// Every measured cell.
    pub rows: Vec<SlabRow>,
    /// slab-compare: the target cells beside their targets.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<TargetRow>,
    /// Host threads (rayon).
    pub host_threads: usize,
    /// Kernel module compiles and cache loads of this process.
    pub compile: Vec<CompileRecord>,
    /// Wall-clock seconds of the whole benchmark.
    pub wall_s: f64,
}

impl SlabReport {
    /// Whether every row verified.
    pub fn all_verified(&self) -> bool {
        self.rows.iter().all(|r| r.verified)
    }
}

/// Progress of a slab benchmark: a step starting, or a finished row.
pub enum SlabProgress<'a> {
    /// What runs now.
    Step(String),
    /// A cell finished.
    Row(&'a SlabRow),
}

/// `2^k` for powers of two, else the number.
fn size(n: usize) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// One line for a row: figure, operation, sizes, memory utilisation (measured and asked), rate,
/// time, roofline ratio, PASS or FAIL.
pub fn row_line(r: &SlabRow) -> String {
    let mut s = format!(
        "{:<7} {:<9} {:<11} {}/{} n {:<5}",
        r.experiment,
        r.scheme,
        r.op.name(),
        r.key_type,
        r.value_type,
        size(r.n)
    );
    if let Some(b) = r.batch {
        s += &format!(" batch {:<5}", size(b));
    }
    if let Some(m) = r.mix {
        s += &format!(" {}", m.name);
    }
    match (r.utilization, r.utilization_target) {
        (Some(u), Some(t)) => s += &format!(" util {u:.3} (target {t:.3})"),
        (Some(u), None) => s += &format!(" util {u:.3}"),
        (None, Some(t)) => s += &format!(" util ? (target {t:.3})"),
        (None, None) => {}
    }
    if let Some(u) = r.utilization_end {
        s += &format!(" -> {u:.3}");
    }
    if let Some(lf) = r.load_factor {
        s += &format!(" load {lf:.2}");
    }
    if let Some(f) = r.pool_fill {
        s += &format!(" pool fill {f:.3}");
    }
    // Buckets and the average slab count where the table holds pairs (not the allocator's).
    if let Some(i) = r.slab.filter(|i| i.stats.pairs > 0) {
        s += &format!(" B {} beta {:.2}", i.stats.buckets, i.beta);
    }
    s += &format!(" {:>8.3} G/s {:>9.3} ms", r.gops, r.median_ms);
    if let Some(x) = r.roofline_ratio {
        s += &format!(" roofline {x:.3}");
    }
    if let Some(x) = r.speedup {
        s += &format!(" speedup {x:.1}x");
    }
    s += if r.verified { " PASS" } else { " FAIL" };
    s
}

/// One line for a target cell: the rate beside its target and SlabHash's.
pub fn target_line(t: &TargetRow) -> String {
    format!(
        "target {:<11} {:>7.3} G/s  target >= {:>5.2} ({:.3}x, {})  SlabHash {:>5.2} ({:.3}x){}{}",
        t.cell,
        t.gops,
        t.target_gops,
        t.ratio_to_target,
        if t.met { "met" } else { "MISSED" },
        t.slabhash_gops,
        t.ratio_to_slabhash,
        t.utilization
            .map(|u| format!("  util {u:.3}"))
            .unwrap_or_default(),
        if t.verified { "" } else { "  NOT VERIFIED" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(op: SlabOp, gops_ms: f64) -> SlabRow {
        SlabRow::new::<u32, u32>(
            "compare",
            op,
            1 << 24,
            1 << 24,
            &[gops_ms, gops_ms * 2.0],
            vec![],
        )
    }

    #[test]
    fn rates_and_ratios() {
        let r =
            SlabRow::new::<u32, u32>("fig4", SlabOp::Build, 1000, 1000, &[1.0, 3.0, 2.0], vec![]);
        assert_eq!(r.median_ms, 2.0);
        assert!((r.gops - 1000.0 / 2e6).abs() < 1e-15);
        assert_eq!((r.min_ms, r.max_ms, r.runs), (1.0, 3.0, 3));
        assert!(r.verified);
        let failed =
            SlabRow::new::<u32, u32>("fig4", SlabOp::Build, 10, 10, &[1.0], vec!["x".into()]);
        assert!(!failed.verified);
        assert!(!SlabRow::new::<u32, u32>("fig4", SlabOp::Build, 10, 10, &[], vec![]).verified);
        let roof = Roofline {
            gather8_gops: Some(10.0),
            cas8_gops: Some(5.0),
            ..Roofline::default()
        };
        let b = SlabRow::new::<u32, u32>("x", SlabOp::Build, 1, 5_000_000, &[1.0], vec![]);
        assert_eq!(b.with_roofline(&roof).roofline_ratio, Some(1.0));
        let h = SlabRow::new::<u32, u32>("x", SlabOp::SearchHit, 1, 5_000_000, &[1.0], vec![]);
        assert_eq!(h.with_roofline(&roof).roofline_ratio, Some(0.5));
        let mut c = SlabRow::new::<u32, u32>("x", SlabOp::Concurrent, 1, 5_000_000, &[1.0], vec![]);
        c.mix = Some(Mix::G0);
        assert_eq!(c.clone().with_roofline(&roof).roofline_ratio, Some(1.0));
        c.mix = Some(Mix::G2);
        // 1 / (0.2 / 5 + 0.8 / 10) = 8.33 G/s.
        let x = c.with_roofline(&roof).roofline_ratio.unwrap();
        assert!((x - 5.0 / (1.0 / (0.2 / 5.0 + 0.8 / 10.0))).abs() < 1e-12);
        let a = SlabRow::new::<u32, u32>("x", SlabOp::Alloc, 1, 5, &[1.0], vec![]);
        assert_eq!(a.with_roofline(&roof).roofline_ratio, None);
    }

    #[test]
    fn targets_beside_slabhash() {
        // 2^24 keys in 1.6 ms: 10.49 G/s (median of 1.6 and 3.2 ms: 2.4 ms -> 6.99 G/s).
        let mut rows = vec![row(SlabOp::Build, 1.2), row(SlabOp::SearchHit, 2.0)];
        rows[0].utilization = Some(0.61);
        rows.push(SlabRow {
            experiment: "fig4",
            ..row(SlabOp::Delete, 1.0)
        });
        let t = target_rows(&rows);
        assert_eq!(t.len(), 2, "delete is not a compare row");
        assert_eq!(t[0].cell, "build");
        let g = (1u64 << 24) as f64 / 1.8e6;
        assert!((t[0].gops - g).abs() < 1e-9);
        assert!(t[0].met == (g >= 9.4));
        assert!((t[0].ratio_to_slabhash - g / 8.57).abs() < 1e-12);
        assert_eq!(t[0].utilization, Some(0.61));
        let line = target_line(&t[0]);
        assert!(
            line.contains("build") && line.contains("SlabHash  8.57"),
            "{line}"
        );
        assert!(line.contains("util 0.610"), "{line}");
        assert_eq!(TARGETS.len(), 6);
        assert!(TARGETS.iter().all(|t| t.target_gops > t.slabhash_gops));
    }

    #[test]
    fn lines_show_utilisation_and_verdict() {
        let mut r = row(SlabOp::SearchMiss, 1.0);
        r.utilization = Some(0.6123);
        r.utilization_target = Some(0.615);
        let l = row_line(&r);
        assert!(l.contains("util 0.612 (target 0.615)"), "{l}");
        assert!(l.contains("n 2^24") && l.ends_with("PASS"), "{l}");
        r.verified = false;
        r.batch = Some(1 << 20);
        r.mix = Some(Mix::G1);
        assert!(row_line(&r).ends_with("FAIL"));
        let l = row_line(&r);
        assert!(l.contains("batch 2^20") && l.contains(" G1 "), "{l}");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["op"], "search_miss");
        assert_eq!(json["mix"]["name"], "G1");
        assert!(json.get("speedup").is_none());
        assert!(json.get("cumulative_ms").is_none());
    }
}
