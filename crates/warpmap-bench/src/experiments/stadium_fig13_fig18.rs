//! Stadium's insert strategies on the GPU (stadium-hashing.txt §III-C): the hybrid threshold
//! measured as the paper's Fig. 13 describes ([`threshold`]), and basic Stash, clStash and the
//! hybrid side by side (Fig. 18's insert rates; [`compare`], also the subject of Table I's warp
//! execution efficiency, which `ncu` reads off these launches).
//!
//! **Fig. 13.** A table sized for `n / lf_max` buckets is filled with `n` unique keys in `chunks`
//! equal batches, once with basic Stash and once with clStash (same keys, fresh tables). Each
//! batch is timed alone with CUDA events. The difference `stash_ms - clstash_ms` (positive: the
//! collaborative lanes were faster) is fitted by least squares with a second-order polynomial of
//! the load factor at the batch's middle, and the hybrid threshold is the root of that parabola
//! in `[0, lf_max]` where it turns from negative to positive (the paper: "the second in-the-range
//! root"). When no such root exists the sign of the fit decides: 0 when the lanes win
//! everywhere, 1 when they never do. Repeated `runs` times with fresh keys; the per-batch median
//! is fitted. Every run's table is verified (length, then every key found with its value).

use crate::harness::timing::{median, utc_now};
use crate::schemes::stadium::location_name;
use serde::Serialize;
use std::sync::Arc;
use warpmap::device::{DeviceBuffer, Gpu, Timer};
use warpmap::key::{Key, Value};
use warpmap::keygen;
use warpmap::table::stadium::{InsertStrategy, Location};
use warpmap::table::{DeviceHashTable, HashTable};
use warpmap::{Error, Result, Stadium, StadiumConfig};

/// Key/value types of the strategy experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LanesTypes {
    /// 4-byte keys and values.
    U32,
    /// 8-byte keys and values (the paper's Fig. 13 and Fig. 18 setup).
    U64,
}

impl LanesTypes {
    /// "u32" or "u64".
    pub fn name(self) -> &'static str {
        match self {
            LanesTypes::U32 => "u32",
            LanesTypes::U64 => "u64",
        }
    }
    /// Parses "u32" or "u64".
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        match s {
            "u32" => Ok(LanesTypes::U32),
            "u64" => Ok(LanesTypes::U64),
            o => Err(format!("unknown types '{o}' (u32 or u64)")),
        }
    }
}

/// What the strategy experiments measure.
#[derive(Clone, Debug, Serialize)]
pub struct LanesConfig {
    /// Keys inserted per run: `2^keys_log2`.
    pub keys_log2: u32,
    /// Load factors: the table has `n / lf` buckets (rounded up to a prime). [`threshold`] uses
    /// the first only.
    pub load_factors: Vec<f64>,
    /// Fig. 13: equal batches the keys are inserted in.
    pub chunks: usize,
    /// Ticket sizes (bits).
    pub ticket_bits: Vec<u32>,
    /// Bucket locations.
    #[serde(serialize_with = "location_names")]
    pub locations: Vec<Location>,
    /// Key/value types.
    pub types: LanesTypes,
    /// Runs per measurement (fresh keys each; medians reported).
    pub runs: usize,
    /// Strategies for [`compare`] (the hybrid's threshold included).
    #[serde(skip)]
    pub strategies: Vec<InsertStrategy>,
    /// The base seed.
    pub seed: u64,
}

impl Default for LanesConfig {
    fn default() -> Self {
        LanesConfig {
            keys_log2: 26,
            load_factors: vec![0.95],
            chunks: 50,
            ticket_bits: vec![8],
            locations: vec![Location::Device],
            types: LanesTypes::U64,
            runs: 3,
            strategies: vec![
                InsertStrategy::Stash,
                InsertStrategy::ClStash,
                InsertStrategy::MeasuredHybrid,
            ],
            seed: 0x5eed_1a9e,
        }
    }
}

/// One batch of Fig. 13.
#[derive(Clone, Debug, Serialize)]
pub struct ChunkRow {
    /// Load factor before the batch.
    pub load_start: f64,
    /// Load factor after the batch.
    pub load_end: f64,
    /// Median milliseconds of the batch with basic Stash.
    pub stash_ms: f64,
    /// Median milliseconds of the batch with clStash.
    pub clstash_ms: f64,
    /// `stash_ms - clstash_ms`: positive where the collaborative lanes are faster.
    pub diff_ms: f64,
}

/// Fig. 13 for one (location, ticket size).
#[derive(Clone, Debug, Serialize)]
pub struct ThresholdResult {
    /// "device" or "host".
    pub location: &'static str,
    /// Bits per ticket.
    pub ticket_bits: u32,
    /// Buckets of the table (prime).
    pub buckets: u32,
    /// One row per batch, in insertion order.
    pub rows: Vec<ChunkRow>,
    /// The fit `diff_ms ≈ c[0] + c[1]·lf + c[2]·lf²`.
    pub fit: [f64; 3],
    /// The fit's real roots in `[0, lf_max]`, ascending.
    pub roots: Vec<f64>,
    /// The hybrid threshold (a load factor).
    pub threshold: f64,
    /// Whole-fill milliseconds with basic Stash (sum of the batch medians).
    pub stash_total_ms: f64,
    /// Whole-fill milliseconds with clStash (sum of the batch medians).
    pub clstash_total_ms: f64,
    /// Whether every run's tables held every key with its value.
    pub verified: bool,
}

/// One strategy's full build (Fig. 18's insert rate).
#[derive(Clone, Debug, Serialize)]
pub struct StrategyRow {
    /// "stash", "clstash" or "hybrid".
    pub strategy: &'static str,
    /// The hybrid's threshold, if the hybrid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// "device" or "host".
    pub location: &'static str,
    /// Bits per ticket.
    pub ticket_bits: u32,
    /// Keys over buckets after the build.
    pub load_factor: f64,
    /// Keys inserted.
    pub keys: usize,
    /// Buckets of the table (prime).
    pub buckets: u32,
    /// Median milliseconds of one insert launch of all keys into an empty table.
    pub ms: f64,
    /// Keys per second, 10^9.
    pub gops: f64,
    /// Runs the median is over.
    pub runs: usize,
    /// Whether every run's table held every key with its value.
    pub verified: bool,
}

/// What [`threshold`] or [`compare`] report.
#[derive(Clone, Debug, Serialize)]
pub struct LanesReport {
    /// "fig13" or "fig18".
    pub experiment: &'static str,
    /// The GPU.
    pub device: String,
    /// The source revision.
    pub commit: String,
    /// When (UTC).
    pub date: String,
    /// How it was timed and verified.
    pub method: String,
    /// What was asked.
    pub config: LanesConfig,
    /// Fig. 13 results.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<ThresholdResult>,
    /// Fig. 18 rows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub strategies: Vec<StrategyRow>,
}

impl LanesReport {
    /// Whether every run verified.
    pub fn all_verified(&self) -> bool {
        self.thresholds.iter().all(|t| t.verified) && self.strategies.iter().all(|s| s.verified)
    }
}

const METHOD: &str = "CUDA events around each insert launch (keys and values already on the \
device), median over runs with fresh unique keys, every run's table verified (length, every key \
found with its value)";

fn location_names<S: serde::Serializer>(
    ls: &[Location],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(ls.iter().map(|&l| location_name(l)))
}

fn check(cfg: &LanesConfig) -> Result<()> {
    if !(10..=30).contains(&cfg.keys_log2) {
        return Err(Error::invalid(format!(
            "keys_log2 {} is outside 10..=30",
            cfg.keys_log2
        )));
    }
    if cfg.load_factors.is_empty() || cfg.load_factors.iter().any(|&l| !(l > 0.0 && l <= 1.0)) {
        return Err(Error::invalid("load factors must be in (0, 1]"));
    }
    if cfg.chunks < 3 || cfg.chunks > 1000 {
        return Err(Error::invalid("chunks must be in 3..=1000"));
    }
    if cfg.runs == 0 || cfg.ticket_bits.is_empty() || cfg.locations.is_empty() {
        return Err(Error::invalid(
            "runs, ticket sizes and locations must not be empty",
        ));
    }
    Ok(())
}

/// Every (location, ticket size) of `cfg`, in order.
fn tables(cfg: &LanesConfig) -> Vec<(Location, u32)> {
    cfg.locations
        .iter()
        .flat_map(|&l| cfg.ticket_bits.iter().map(move |&t| (l, t)))
        .collect()
}

/// Fig. 13: the hybrid threshold for each (location, ticket size) of `cfg`, at its first load
/// factor. `commit` is recorded in the report.
pub fn threshold(
    gpu: &Arc<Gpu>,
    cfg: &LanesConfig,
    commit: &str,
    progress: &mut dyn FnMut(String),
) -> Result<LanesReport> {
    check(cfg)?;
    let mut out = Vec::new();
    for (location, t) in tables(cfg) {
        out.push(match cfg.types {
            LanesTypes::U32 => threshold_one::<u32, u32>(gpu, cfg, location, t, progress)?,
            LanesTypes::U64 => threshold_one::<u64, u64>(gpu, cfg, location, t, progress)?,
        });
    }
    Ok(report(gpu, cfg, commit, "fig13", out, Vec::new()))
}

/// Fig. 18 (insert rates): every strategy of `cfg` building a table of each load factor from
/// empty in one launch, per (location, ticket size).
pub fn compare(
    gpu: &Arc<Gpu>,
    cfg: &LanesConfig,
    commit: &str,
    progress: &mut dyn FnMut(String),
) -> Result<LanesReport> {
    check(cfg)?;
    let mut rows = Vec::new();
    for (location, t) in tables(cfg) {
        for &lf in &cfg.load_factors {
            for &s in &cfg.strategies {
                let r = match cfg.types {
                    LanesTypes::U32 => build_one::<u32, u32>(gpu, cfg, location, t, lf, s)?,
                    LanesTypes::U64 => build_one::<u64, u64>(gpu, cfg, location, t, lf, s)?,
                };
                progress(format!(
                    "{} t{} lf {:.2} {}: {:.3} G/s{}",
                    r.location,
                    r.ticket_bits,
                    lf,
                    r.strategy,
                    r.gops,
                    if r.verified { "" } else { " NOT VERIFIED" }
                ));
                rows.push(r);
            }
        }
    }
    Ok(report(gpu, cfg, commit, "fig18", Vec::new(), rows))
}

fn report(
    gpu: &Gpu,
    cfg: &LanesConfig,
    commit: &str,
    experiment: &'static str,
    thresholds: Vec<ThresholdResult>,
    strategies: Vec<StrategyRow>,
) -> LanesReport {
    LanesReport {
        experiment,
        device: format!("{} sm_{} ({} SMs)", gpu.name(), gpu.sm(), gpu.sm_count()),
        commit: commit.to_string(),
        date: utc_now(),
        method: METHOD.to_string(),
        config: cfg.clone(),
        thresholds,
        strategies,
    }
}

fn table<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    n: usize,
    lf: f64,
    location: Location,
    t: u32,
    s: InsertStrategy,
) -> Result<Stadium<K, V>> {
    let capacity = ((n as f64 / lf).ceil() as usize).max(n);
    Stadium::new(
        gpu.clone(),
        StadiumConfig::new(capacity)
            .ticket_bits(t)
            .location(location)
            .insert_strategy(s),
    )
}

/// Whether the table holds exactly `keys`, each with `value_for(key)`.
fn verify<K: Key, V: Value>(
    gpu: &Gpu,
    table: &Stadium<K, V>,
    keys: &[DeviceBuffer<K>],
    n: usize,
) -> Result<bool> {
    if table.len()? != n {
        return Ok(false);
    }
    for dk in keys {
        let mut out = gpu.alloc::<V>(dk.len())?;
        let mut found = gpu.alloc::<u8>(dk.len())?;
        table.find_device(dk, &mut out, &mut found)?;
        let (k, v, f) = (
            gpu.download(dk)?,
            gpu.download(&out)?,
            gpu.download(&found)?,
        );
        let bad = k
            .iter()
            .zip(&v)
            .zip(&f)
            .filter(|((k, v), f)| **f == 0 || !keygen::value_matches(**k, **v))
            .count();
        if bad != 0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `n` unique keys of `seed` and their values, uploaded in `chunks` equal batches.
type Batches<K, V> = (Vec<DeviceBuffer<K>>, Vec<DeviceBuffer<V>>);
fn batches<K: Key, V: Value>(
    gpu: &Gpu,
    n: usize,
    chunks: usize,
    seed: u64,
) -> Result<Batches<K, V>> {
    let keys = keygen::unique::<K>(n, seed)?;
    let values: Vec<V> = keygen::values_for(&keys);
    let per = n.div_ceil(chunks);
    let mut dk = Vec::new();
    let mut dv = Vec::new();
    for (k, v) in keys.chunks(per).zip(values.chunks(per)) {
        dk.push(gpu.upload(k)?);
        dv.push(gpu.upload(v)?);
    }
    Ok((dk, dv))
}

/// Inserts the batches one launch each, timing each; returns the milliseconds per batch.
fn timed_fill<K: Key, V: Value>(
    timer: &Timer,
    table: &mut Stadium<K, V>,
    (dk, dv): &Batches<K, V>,
) -> Result<Vec<f64>> {
    let mut ms = Vec::with_capacity(dk.len());
    for (k, v) in dk.iter().zip(dv) {
        timer.start()?;
        table.insert_device_async(k, v, None)?;
        ms.push(timer.stop_ms()?);
    }
    table.synchronize()?; // a key left unplaced is an error here
    Ok(ms)
}

fn threshold_one<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    cfg: &LanesConfig,
    location: Location,
    t: u32,
    progress: &mut dyn FnMut(String),
) -> Result<ThresholdResult> {
    let n = 1usize << cfg.keys_log2;
    let lf_max = cfg.load_factors[0];
    let timer = gpu.timer()?;
    let mut stash_runs: Vec<Vec<f64>> = Vec::new();
    let mut cl_runs: Vec<Vec<f64>> = Vec::new();
    let mut verified = true;
    let mut buckets = 0;
    // A warm-up fill with each strategy (module load, first-touch of the buffers).
    for s in [InsertStrategy::Stash, InsertStrategy::ClStash] {
        let warm = batches::<K, V>(gpu, n.min(1 << 20), cfg.chunks, cfg.seed ^ 0xabc)?;
        let mut tb = table::<K, V>(gpu, n.min(1 << 20), lf_max, location, t, s)?;
        timed_fill(&timer, &mut tb, &warm)?;
    }
    for run in 0..cfg.runs {
        let seed = cfg.seed.wrapping_add(run as u64 * 0x9e37_79b9);
        let data = batches::<K, V>(gpu, n, cfg.chunks, seed)?;
        for s in [InsertStrategy::Stash, InsertStrategy::ClStash] {
            let mut tb = table::<K, V>(gpu, n, lf_max, location, t, s)?;
            buckets = tb.size();
            let ms = timed_fill(&timer, &mut tb, &data)?;
            verified &= verify(gpu, &tb, &data.0, n)?;
            match s {
                InsertStrategy::Stash => stash_runs.push(ms),
                _ => cl_runs.push(ms),
            }
        }
        progress(format!(
            "fig13 {} t{t} run {}/{}",
            location_name(location),
            run + 1,
            cfg.runs
        ));
    }
    let per = n.div_ceil(cfg.chunks);
    let mut rows = Vec::new();
    let mut filled = 0usize;
    for c in 0..stash_runs[0].len() {
        let this = per.min(n - filled);
        let med = |runs: &[Vec<f64>]| median(&runs.iter().map(|r| r[c]).collect::<Vec<_>>());
        let (a, b) = (med(&stash_runs), med(&cl_runs));
        rows.push(ChunkRow {
            load_start: filled as f64 / buckets as f64,
            load_end: (filled + this) as f64 / buckets as f64,
            stash_ms: a,
            clstash_ms: b,
            diff_ms: a - b,
        });
        filled += this;
    }
    let xs: Vec<f64> = rows
        .iter()
        .map(|r| 0.5 * (r.load_start + r.load_end))
        .collect();
    let ys: Vec<f64> = rows.iter().map(|r| r.diff_ms).collect();
    let fit = fit_quadratic(&xs, &ys)?;
    let hi = rows.last().map_or(lf_max, |r| r.load_end);
    let roots = roots_in(fit, 0.0, hi);
    let threshold = hybrid_threshold(fit, &roots, hi);
    Ok(ThresholdResult {
        location: location_name(location),
        ticket_bits: t,
        buckets,
        stash_total_ms: rows.iter().map(|r| r.stash_ms).sum(),
        clstash_total_ms: rows.iter().map(|r| r.clstash_ms).sum(),
        rows,
        fit,
        roots,
        threshold,
        verified,
    })
}

fn build_one<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    cfg: &LanesConfig,
    location: Location,
    t: u32,
    lf: f64,
    s: InsertStrategy,
) -> Result<StrategyRow> {
    let n = 1usize << cfg.keys_log2;
    let timer = gpu.timer()?;
    let mut ms = Vec::new();
    let mut verified = true;
    let mut buckets = 0;
    // Warm-up (module load).
    let warm = batches::<K, V>(gpu, n.min(1 << 16), 1, cfg.seed ^ 0x77)?;
    let mut tb = table::<K, V>(gpu, n.min(1 << 16), lf, location, t, s)?;
    timed_fill(&timer, &mut tb, &warm)?;
    for run in 0..cfg.runs {
        let seed = cfg.seed.wrapping_add(0x1000 + run as u64 * 0x9e37_79b9);
        let data = batches::<K, V>(gpu, n, 1, seed)?;
        let mut tb = table::<K, V>(gpu, n, lf, location, t, s)?;
        buckets = tb.size();
        ms.push(timed_fill(&timer, &mut tb, &data)?[0]);
        verified &= verify(gpu, &tb, &data.0, n)?;
    }
    let m = median(&ms);
    let s = s.resolve(t, K::BYTES + V::BYTES);
    Ok(StrategyRow {
        strategy: s.name(),
        threshold: match s {
            InsertStrategy::Hybrid { threshold } => Some(threshold),
            _ => None,
        },
        location: location_name(location),
        ticket_bits: t,
        load_factor: lf,
        keys: n,
        buckets,
        ms: m,
        gops: n as f64 / (m * 1e-3) / 1e9,
        runs: cfg.runs,
        verified,
    })
}

/// Least-squares `y ≈ c0 + c1 x + c2 x²` (normal equations, solved by Cramer's rule; the loads
/// are in [0, 1], so the 3×3 system is well conditioned).
pub fn fit_quadratic(xs: &[f64], ys: &[f64]) -> Result<[f64; 3]> {
    if xs.len() != ys.len() || xs.len() < 3 {
        return Err(Error::invalid("a quadratic fit needs at least 3 points"));
    }
    let mut s = [0.0f64; 5]; // Σ x^k, k = 0..4
    let mut t = [0.0f64; 3]; // Σ y x^k, k = 0..2
    for (&x, &y) in xs.iter().zip(ys) {
        let mut p = 1.0;
        for (k, sk) in s.iter_mut().enumerate() {
            *sk += p;
            if k < 3 {
                t[k] += y * p;
            }
            p *= x;
        }
    }
    let m = [[s[0], s[1], s[2]], [s[1], s[2], s[3]], [s[2], s[3], s[4]]];
    let det = |a: [[f64; 3]; 3]| {
        a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1])
            - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0])
            + a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])
    };
    let d = det(m);
    if d.abs() < 1e-12 {
        return Err(Error::invalid(
            "the loads do not spread enough for a quadratic fit",
        ));
    }
    let mut c = [0.0; 3];
    for (i, ci) in c.iter_mut().enumerate() {
        let mut a = m;
        for r in 0..3 {
            a[r][i] = t[r];
        }
        *ci = det(a) / d;
    }
    Ok(c)
}

/// The real roots of `c0 + c1 x + c2 x²` in `[lo, hi]`, ascending.
pub fn roots_in(c: [f64; 3], lo: f64, hi: f64) -> Vec<f64> {
    let [c0, c1, c2] = c;
    let mut r = Vec::new();
    if c2.abs() < 1e-15 {
        if c1.abs() > 1e-15 {
            r.push(-c0 / c1);
        }
    } else {
        let disc = c1 * c1 - 4.0 * c2 * c0;
        if disc >= 0.0 {
            let q = -0.5 * (c1 + c1.signum() * disc.sqrt());
            r.push(q / c2);
            if q != 0.0 {
                r.push(c0 / q);
            }
        }
    }
    r.retain(|x| x.is_finite() && *x >= lo && *x <= hi);
    r.sort_by(f64::total_cmp);
    r.dedup();
    r
}

/// The hybrid threshold from the fit of `stash - clstash` over `[0, hi]`: the last in-range root
/// where the fit turns positive (collaborative lanes start to win); without one, 0 if the fit is
/// positive at `hi` (the lanes win throughout) and 1 otherwise (they never do).
pub fn hybrid_threshold(c: [f64; 3], roots: &[f64], hi: f64) -> f64 {
    let slope = |x: f64| c[1] + 2.0 * c[2] * x;
    if let Some(&r) = roots.iter().rev().find(|&&r| slope(r) > 0.0) {
        return r;
    }
    let at = |x: f64| c[0] + c[1] * x + c[2] * x * x;
    if at(hi) > 0.0 {
        0.0
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_a_known_parabola() {
        let xs: Vec<f64> = (0..50).map(|i| i as f64 / 50.0).collect();
        let ys: Vec<f64> = xs.iter().map(|x| 2.0 * x * x - 0.5 * x - 0.1).collect();
        let c = fit_quadratic(&xs, &ys).unwrap();
        for (got, want) in c.iter().zip([-0.1, -0.5, 2.0]) {
            assert!((got - want).abs() < 1e-9, "{c:?}");
        }
        let r = roots_in(c, 0.0, 1.0);
        // 2x² - 0.5x - 0.1 = 0 → x = (0.5 ± sqrt(0.25 + 0.8)) / 4: -0.131 and 0.381.
        assert_eq!(r.len(), 1);
        assert!((r[0] - 0.381_173_769).abs() < 1e-6, "{r:?}");
        assert!((hybrid_threshold(c, &r, 1.0) - r[0]).abs() < 1e-12);
    }

    #[test]
    fn threshold_takes_the_root_where_the_lanes_start_to_win() {
        // Positive, dips negative between 0.2 and 0.6, positive again: (x-0.2)(x-0.6).
        let c = [0.12, -0.8, 1.0];
        let r = roots_in(c, 0.0, 0.95);
        assert_eq!(r.len(), 2);
        assert!((hybrid_threshold(c, &r, 0.95) - 0.6).abs() < 1e-9);
        // Never positive: Stash throughout; always positive: clStash throughout.
        assert_eq!(hybrid_threshold([-1.0, 0.0, 0.0], &[], 0.95), 1.0);
        assert_eq!(hybrid_threshold([1.0, 0.0, 0.0], &[], 0.95), 0.0);
    }

    #[test]
    fn bad_fits_are_errors() {
        assert!(fit_quadratic(&[0.1, 0.2], &[1.0, 2.0]).is_err());
        assert!(fit_quadratic(&[0.5; 10], &[1.0; 10]).is_err());
    }
}
