//! The report of DyCuckoo's benchmarks ([`DyCuckooReport`]): one [`DcRow`] per measured cell
//! (static cells with their keys not placed; dynamic cells per operation, DyCuckoo's and the
//! rebuild baseline's), the per-batch trace of the dynamic workload ([`BatchPoint`], Fig. 15,
//! memory beside the fill factor), and the target cells of `dycuckoo-compare` ([`DcTargetRow`],
//! beside the targets and DyCuckoo's own figures, [`DC_TARGETS`]).

use crate::harness::timing::median;
use crate::plan::{DyCuckooPlan, DyCuckooPreset};
use warpmap::device::CompileRecord;
use warpmap::{Key, Value};

/// What a DyCuckoo row measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DcOp {
    /// Static: `n` new keys into the empty table in one launch.
    Build,
    /// Static: `n` finds of stored keys.
    FindHit,
    /// Static: `n` finds of keys never inserted.
    FindMiss,
    /// Static: an erase of the `n` keys; dynamic: the batches' erases (shrinks included).
    Erase,
    /// Dynamic: the batches' inserts (growth included; the baseline's rebuilds included).
    Insert,
    /// Dynamic: the batches' finds.
    Find,
    /// Dynamic: every operation of the workload over the whole time.
    All,
}

impl DcOp {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            DcOp::Build => "build",
            DcOp::FindHit => "find_hit",
            DcOp::FindMiss => "find_miss",
            DcOp::Erase => "erase",
            DcOp::Insert => "insert",
            DcOp::Find => "find",
            DcOp::All => "all",
        }
    }
}

/// One measured cell.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DcRow {
    /// "static", "dynamic", or "compare" (the compare preset's cells of both kinds).
    pub experiment: &'static str,
    /// What was timed.
    pub op: DcOp,
    /// "dycuckoo", or "warpdrive" for the dynamic baseline.
    pub scheme: &'static str,
    /// Key type name.
    pub key_type: &'static str,
    /// Value type name.
    pub value_type: &'static str,
    /// Static: keys inserted; dynamic: keys inserted in all batches of the first half.
    pub n: usize,
    /// Operations per timed measurement (the rate's numerator).
    pub ops: usize,
    /// 10^9 operations per second at the median time.
    pub gops: f64,
    /// Median milliseconds of one measurement (dynamic: the sum over the batches).
    pub median_ms: f64,
    /// Fastest measurement, milliseconds.
    pub min_ms: f64,
    /// Slowest measurement, milliseconds.
    pub max_ms: f64,
    /// Measurements the median is over.
    pub runs: usize,
    /// Static: the fill factor asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill: Option<f64>,
    /// Static: keys over slots after the build (median of the runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill_measured: Option<f64>,
    /// Static: the table's slots.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<usize>,
    /// Static build: keys not placed (TABLE_FULL status), summed over the runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unplaced: Option<usize>,
    /// Static build: `unplaced` over the keys inserted in all runs, percent (the paper's
    /// Tables 4-8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unplaced_percent: Option<f64>,
    /// Dynamic: inserts per batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// Dynamic: batches in all (both halves).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batches: Option<usize>,
    /// Dynamic rows: the lowest and highest fill factor (DyCuckoo) or load (WarpDrive) after
    /// a batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fill_range: Option<(f64, f64)>,
    /// Dynamic rows: the most device bytes the table held after a batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_memory_bytes: Option<usize>,
    /// Dynamic: resizes (DyCuckoo: upsizes + downsizes; WarpDrive: rebuilds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resizes: Option<u64>,
    /// Dynamic DyCuckoo rows: the baseline's time over DyCuckoo's for the same operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// Dynamic rows: α, β and r of the workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// β.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// r.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// `dycuckoo-sweep` rows: the parameter swept and its value here, e.g. "alpha 0.3".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<String>,
    /// Device bytes of the table (`HashTable::memory_bytes`, static: after the build).
    pub memory_bytes: usize,
    /// Whether every run's result was checked and correct.
    pub verified: bool,
    /// What failed verification.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

impl DcRow {
    /// A row of `K`/`V` from its measurements (`ms`), `ops` operations each, verified when
    /// `failures` is empty; the other fields empty.
    pub fn new<K: Key, V: Value>(
        experiment: &'static str,
        op: DcOp,
        n: usize,
        ops: usize,
        ms: &[f64],
        failures: Vec<String>,
    ) -> Self {
        let median_ms = median(ms);
        DcRow {
            experiment,
            op,
            scheme: "dycuckoo",
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
            fill: None,
            fill_measured: None,
            capacity: None,
            unplaced: None,
            unplaced_percent: None,
            batch: None,
            batches: None,
            fill_range: None,
            peak_memory_bytes: None,
            resizes: None,
            speedup: None,
            alpha: None,
            beta: None,
            ratio: None,
            sweep: None,
            memory_bytes: 0,
            verified: failures.is_empty() && !ms.is_empty(),
            failures,
        }
    }
}

/// One batch of the dynamic workload (the first run): Fig. 15's curve and the memory.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BatchPoint {
    /// Batch number, 0-based over both halves.
    pub batch: usize,
    /// Whether it is of the replay (inserts and erases swapped).
    pub replay: bool,
    /// DyCuckoo: insert, find and erase milliseconds.
    pub insert_ms: f64,
    /// Finds, ms.
    pub find_ms: f64,
    /// Erase and shrink, ms.
    pub erase_ms: f64,
    /// Keys present after the batch.
    pub len: usize,
    /// DyCuckoo's fill factor after the batch (keys in the subtables over their slots).
    pub fill: f64,
    /// DyCuckoo's device bytes after the batch.
    pub memory_bytes: usize,
    /// The baseline's milliseconds for the batch (rebuilds included), if it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_ms: Option<f64>,
    /// The baseline's load after the batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_load: Option<f64>,
    /// The baseline's device bytes after the batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_memory_bytes: Option<usize>,
}

/// The dynamic workload's per-batch trace of one key/value type.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DynamicTrace {
    /// "u32/u32" or "u64/u64".
    pub types: String,
    /// One point per batch.
    pub points: Vec<BatchPoint>,
}

/// A target cell of `dycuckoo-compare`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct DcTarget {
    /// The cell: "static_0.8_build", ..., "dynamic_all", "dynamic_speedup".
    pub cell: &'static str,
    /// "static" or "dynamic".
    pub kind: &'static str,
    /// Static: the fill factor.
    pub fill: Option<f64>,
    /// The operation (absent for the speedup cell).
    pub op: Option<DcOp>,
    /// The figure to reach (G/s; the speedup cell: times).
    pub target: f64,
    /// The goal (1.1 x DyCuckoo's figure; the speedup cell: the target).
    pub goal: f64,
    /// DyCuckoo's own figure on an H100 (G/s), where the issue gives one.
    pub dycuckoo_gops: Option<f64>,
}

const fn rate(
    cell: &'static str,
    kind: &'static str,
    fill: Option<f64>,
    op: DcOp,
    figure: f64,
) -> DcTarget {
    DcTarget {
        cell,
        kind,
        fill,
        op: Some(op),
        target: figure,
        goal: figure * 1.1,
        dycuckoo_gops: Some(figure),
    }
}

/// The target cells (u32->u32, one H100): reach DyCuckoo's figure, goal 1.1x; the
/// dynamic workload at least 5x the rebuild baseline.
pub const DC_TARGETS: [DcTarget; 13] = [
    rate("static_0.8_build", "static", Some(0.8), DcOp::Build, 6.61),
    rate(
        "static_0.8_find_hit",
        "static",
        Some(0.8),
        DcOp::FindHit,
        9.89,
    ),
    rate(
        "static_0.8_find_miss",
        "static",
        Some(0.8),
        DcOp::FindMiss,
        6.37,
    ),
    rate("static_0.8_erase", "static", Some(0.8), DcOp::Erase, 9.02),
    rate("static_0.9_build", "static", Some(0.9), DcOp::Build, 5.94),
    rate(
        "static_0.9_find_hit",
        "static",
        Some(0.9),
        DcOp::FindHit,
        9.47,
    ),
    rate(
        "static_0.9_find_miss",
        "static",
        Some(0.9),
        DcOp::FindMiss,
        6.37,
    ),
    rate("static_0.9_erase", "static", Some(0.9), DcOp::Erase, 8.73),
    rate("dynamic_insert", "dynamic", None, DcOp::Insert, 3.45),
    rate("dynamic_find", "dynamic", None, DcOp::Find, 7.60),
    rate("dynamic_erase", "dynamic", None, DcOp::Erase, 6.77),
    rate("dynamic_all", "dynamic", None, DcOp::All, 5.00),
    DcTarget {
        cell: "dynamic_speedup",
        kind: "dynamic",
        fill: None,
        op: None,
        target: 5.0,
        goal: 5.0,
        dycuckoo_gops: None,
    },
];

/// A target cell measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DcTargetRow {
    /// The cell (see [`DcTarget::cell`]).
    pub cell: &'static str,
    /// The measured figure (G/s; the speedup cell: times).
    pub value: f64,
    /// The target.
    pub target: f64,
    /// The goal.
    pub goal: f64,
    /// DyCuckoo's figure, where there is one.
    pub dycuckoo_gops: Option<f64>,
    /// `value / dycuckoo_gops`.
    pub ratio_to_dycuckoo: Option<f64>,
    /// `value / target`.
    pub ratio_to_target: f64,
    /// Whether `value >= target`.
    pub met: bool,
    /// Whether `value >= goal`.
    pub goal_met: bool,
    /// Whether the cell's row verified (the speedup: both DyCuckoo's and the baseline's).
    pub verified: bool,
}

fn same_fill(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(x), Some(y)) => (x - y).abs() < 1e-9,
        (None, None) => true,
        _ => false,
    }
}

/// The target rows of `rows` (compare rows), in the targets' order.
pub fn dc_target_rows(rows: &[DcRow]) -> Vec<DcTargetRow> {
    DC_TARGETS
        .iter()
        .filter_map(|t| {
            let ours = |op: DcOp| {
                rows.iter().find(|r| {
                    r.experiment == "compare"
                        && r.scheme == "dycuckoo"
                        && r.op == op
                        && same_fill(r.fill, t.fill)
                        && (r.batch.is_some()) == (t.kind == "dynamic")
                })
            };
            let (value, verified) = match t.op {
                Some(op) => {
                    let r = ours(op)?;
                    (r.gops, r.verified)
                }
                None => {
                    let r = ours(DcOp::All)?;
                    let base = rows.iter().find(|b| {
                        b.experiment == "compare" && b.scheme == "warpdrive" && b.op == DcOp::All
                    })?;
                    (r.speedup?, r.verified && base.verified)
                }
            };
            Some(DcTargetRow {
                cell: t.cell,
                value,
                target: t.target,
                goal: t.goal,
                dycuckoo_gops: t.dycuckoo_gops,
                ratio_to_dycuckoo: t.dycuckoo_gops.map(|d| value / d),
                ratio_to_target: value / t.target,
                met: value >= t.target,
                goal_met: value >= t.goal,
                verified,
            })
        })
        .collect()
}

/// The whole DyCuckoo benchmark: what `warpmap bench --scheme dycuckoo` writes as JSON.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DyCuckooReport {
    /// The preset run.
    pub preset: DyCuckooPreset,
    /// The GPU's name and `sm_XY`.
    pub device: String,
    /// The source revision.
    pub commit: String,
    /// When the run started, UTC.
    pub date: String,
    /// How cells were timed and verified.
    pub method: String,
    /// What was run.
    pub plan: DyCuckooPlan,
    /// Every measured cell.
    pub rows: Vec<DcRow>,
    /// The dynamic workload's per-batch trace (first run), per type.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dynamic: Vec<DynamicTrace>,
    /// dycuckoo-compare: the target cells beside their targets.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub targets: Vec<DcTargetRow>,
    /// Host threads (rayon).
    pub host_threads: usize,
    /// Kernel module compiles and cache loads of this process.
    pub compile: Vec<CompileRecord>,
    /// Wall-clock seconds of the whole benchmark.
    pub wall_s: f64,
}

impl DyCuckooReport {
    /// Whether every row verified.
    pub fn all_verified(&self) -> bool {
        self.rows.iter().all(|r| r.verified)
    }
}

/// Progress of a DyCuckoo benchmark: a step starting, or a finished row.
pub enum DcProgress<'a> {
    /// What runs now.
    Step(String),
    /// A cell finished.
    Row(&'a DcRow),
}

fn size(n: usize) -> String {
    if n.is_power_of_two() {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// One line for a row.
pub fn dc_row_line(r: &DcRow) -> String {
    let mut s = String::new();
    if let Some(p) = &r.sweep {
        s += &format!("[{p}] ");
    }
    s += &format!(
        "{:<8} {:<9} {:<9} {}/{} n {:<9}",
        r.experiment,
        r.scheme,
        r.op.name(),
        r.key_type,
        r.value_type,
        size(r.n)
    );
    if let Some(f) = r.fill {
        s += &format!(" fill {f:.2}");
        if let Some(m) = r.fill_measured {
            s += &format!(" ({m:.3})");
        }
    }
    if let (Some(b), Some(k)) = (r.batch, r.batches) {
        s += &format!(" {k} x {}", size(b));
    }
    if let Some((lo, hi)) = r.fill_range {
        s += &format!(" fill {lo:.3}..{hi:.3}");
    }
    if let Some(m) = r.peak_memory_bytes {
        s += &format!(" peak {:.1} MiB", m as f64 / (1 << 20) as f64);
    }
    s += &format!(" {:>8.3} G/s {:>9.3} ms", r.gops, r.median_ms);
    if let (Some(u), Some(p)) = (r.unplaced, r.unplaced_percent) {
        s += &format!(" unplaced {u} ({p:.1e} %)");
    }
    if let Some(x) = r.resizes {
        s += &format!(" resizes {x}");
    }
    if let Some(x) = r.speedup {
        s += &format!(" speedup {x:.2}x");
    }
    s += if r.verified { " PASS" } else { " FAIL" };
    s
}

/// One line for a target cell: the figure beside its target and DyCuckoo's.
pub fn dc_target_line(t: &DcTargetRow) -> String {
    let unit = if t.dycuckoo_gops.is_some() {
        "G/s"
    } else {
        "x  "
    };
    format!(
        "target {:<21} {:>7.3} {unit}  target >= {:>5.2} ({:.3}x, {})  goal {:>5.2} ({}){}{}",
        t.cell,
        t.value,
        t.target,
        t.ratio_to_target,
        if t.met { "met" } else { "MISSED" },
        t.goal,
        if t.goal_met { "met" } else { "not yet" },
        match (t.dycuckoo_gops, t.ratio_to_dycuckoo) {
            (Some(d), Some(x)) => format!("  DyCuckoo {d:>5.2} ({x:.3}x)"),
            _ => String::new(),
        },
        if t.verified { "" } else { "  NOT VERIFIED" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_rates_and_targets() {
        let r = DcRow::new::<u32, u32>("static", DcOp::Build, 1000, 1000, &[1.0, 3.0, 2.0], vec![]);
        assert_eq!(r.median_ms, 2.0);
        assert!((r.gops - 1000.0 / 2e6).abs() < 1e-15);
        assert!(r.verified);
        assert!(!DcRow::new::<u32, u32>("static", DcOp::Build, 1, 1, &[], vec![]).verified);

        let n = 1usize << 26;
        let mut rows = vec![];
        for (fill, ms) in [(0.8, 10.0), (0.9, 12.0)] {
            let mut r = DcRow::new::<u32, u32>("compare", DcOp::Build, n, n, &[ms], vec![]);
            r.fill = Some(fill);
            rows.push(r);
        }
        let m = 32usize << 20;
        let mut all = DcRow::new::<u32, u32>("compare", DcOp::All, m, m * 2, &[10.0], vec![]);
        all.batch = Some(1 << 20);
        all.speedup = Some(6.0);
        rows.push(all.clone());
        let mut base = all.clone();
        base.scheme = "warpdrive";
        base.speedup = None;
        rows.push(base);
        let t = dc_target_rows(&rows);
        let cells: Vec<&str> = t.iter().map(|x| x.cell).collect();
        assert_eq!(
            cells,
            [
                "static_0.8_build",
                "static_0.9_build",
                "dynamic_all",
                "dynamic_speedup"
            ]
        );
        let g = n as f64 / 1e7;
        assert!((t[0].value - g).abs() < 1e-9);
        assert_eq!(t[0].met, g >= 6.61);
        assert!((t[0].ratio_to_dycuckoo.unwrap() - g / 6.61).abs() < 1e-12);
        assert!((t[0].goal - 6.61 * 1.1).abs() < 1e-12);
        assert!(t[3].met && t[3].verified && t[3].dycuckoo_gops.is_none());
        let line = dc_target_line(&t[0]);
        assert!(line.contains("DyCuckoo  6.61"), "{line}");
        assert!(dc_target_line(&t[3]).contains("6.000 x"));
        assert!(dc_row_line(&rows[0]).ends_with("PASS"));
        let json = serde_json::to_value(&rows[0]).unwrap();
        assert_eq!(json["op"], "build");
        assert!(json.get("speedup").is_none());
    }
}
