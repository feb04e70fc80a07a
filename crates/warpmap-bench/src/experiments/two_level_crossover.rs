//! The two-level paper's closing question (two-level-cuckoo.txt, "HH Hash vs. NBDS"): from
//! what size on does the GPU table beat a tuned CPU table, transfers included?
//! `warpmap bench --preset two-level-crossover`.
//!
//! For each size n = 2^10 .. 2^28, u32→u32 unique keys, a table made for `n / load_factor`
//! slots before the clock starts, every contender inserts the n pairs into its empty table and
//! then finds all n keys (median of the runs, every run verified):
//!
//! | contender | what | clock |
//! |---|---|---|
//! | `gpu` | [`TwoLevel`] through the device-buffer API, keys already on the device | CUDA events |
//! | `gpu+transfers` | [`TwoLevel`] through the host-slice API: upload, kernels, statuses or results back | `Instant` |
//! | `two_level_cpu` | [`TwoLevelCpu`], the CPU twin, on every host thread | `Instant` |
//! | `cpu` | [`CpuTable`], the CPU backend's table, on every host thread | `Instant` |
//! | `hashbrown` | `hashbrown::HashMap` (SwissTable) on one thread, `with_capacity(n)` | `Instant` |
//!
//! The crossover of a GPU contender and an operation is the smallest measured n from which on
//! it is faster than every CPU contender at every larger measured n ([`CrossoverPoint`]).

use crate::harness::timing::{median, utc_now};
use crate::harness::verify::{bad_hits, Flag};
use rayon::prelude::*;
use std::sync::Arc;
use std::time::Instant;
use warpmap::table::two_level::TwoLevelConfig;
use warpmap::{
    keygen, CpuTable, DeviceHashTable, Error, Gpu, HashTable, Result, TwoLevel, TwoLevelCpu,
};

/// Sizes measured by default (log2): 2^10 .. 2^28, every other power.
pub const CROSSOVER_SIZES_LOG2: [u32; 10] = [10, 12, 14, 16, 18, 20, 22, 24, 26, 28];
/// `--quick` sizes.
pub const CROSSOVER_QUICK_SIZES_LOG2: [u32; 3] = [10, 12, 14];
/// The load factor the tables are made for (`capacity = n / load_factor`).
pub const CROSSOVER_LOAD_FACTOR: f64 = 0.5;

/// What the crossover benchmark is asked for.
#[derive(Clone, Debug)]
pub struct CrossoverConfig {
    /// Small sizes.
    pub quick: bool,
    /// The source revision, recorded in the report.
    pub commit: String,
    /// Sizes, log2 (`None`: [`CROSSOVER_SIZES_LOG2`], quick [`CROSSOVER_QUICK_SIZES_LOG2`]).
    pub sizes_log2: Option<Vec<u32>>,
    /// Timed runs per (size, contender) (`None`: 3).
    pub runs: Option<usize>,
    /// `capacity = n / load_factor` for every table.
    pub load_factor: f64,
    /// The base seed of the key sets.
    pub seed: u64,
    /// Measure the CPU contenders only, even with a GPU.
    pub force_cpu: bool,
}

impl Default for CrossoverConfig {
    fn default() -> Self {
        CrossoverConfig {
            quick: false,
            commit: "unknown".into(),
            sizes_log2: None,
            runs: None,
            load_factor: CROSSOVER_LOAD_FACTOR,
            seed: 0x2_1e7e_1c0f_fee5,
            force_cpu: false,
        }
    }
}

/// One (size, contender, operation).
#[derive(Clone, Debug, serde::Serialize)]
pub struct CrossoverRow {
    /// Keys inserted, then found.
    pub n: usize,
    /// log2 of `n`.
    pub n_log2: u32,
    /// `gpu`, `gpu+transfers`, `two_level_cpu`, `cpu` or `hashbrown`.
    pub contender: &'static str,
    /// `insert` or `find`.
    pub op: &'static str,
    /// 10^9 keys per second from the median time.
    pub gops: f64,
    /// Median time, milliseconds.
    pub median_ms: f64,
    /// Fastest run, milliseconds.
    pub min_ms: f64,
    /// Timed runs.
    pub runs: usize,
    /// Threads the contender used (the host's, 1 for hashbrown; GPU rows: the host's).
    pub threads: usize,
    /// Whether every run was checked and correct.
    pub verified: bool,
    /// What failed, per run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

/// Where a GPU contender starts to pay for one operation.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CrossoverPoint {
    /// `insert` or `find`.
    pub op: &'static str,
    /// `gpu` or `gpu+transfers`.
    pub gpu: &'static str,
    /// The smallest measured n from which on the GPU contender beats every CPU contender
    /// (`None`: it never does at the sizes measured).
    pub n_log2: Option<u32>,
    /// At that n: the GPU's rate over the best CPU contender's.
    pub speedup: Option<f64>,
    /// The best CPU contender at that n.
    pub against: Option<&'static str>,
}

/// The whole crossover benchmark.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CrossoverReport {
    /// The GPU's name and `sm_XY` (or "none"), and the host's threads.
    pub device: String,
    /// The source revision.
    pub commit: String,
    /// When it started, UTC.
    pub date: String,
    /// How it measured.
    pub method: String,
    /// Host threads (rayon) of the multi-threaded CPU contenders.
    pub host_threads: usize,
    /// `capacity = n / load_factor`.
    pub load_factor: f64,
    /// Sizes measured, log2.
    pub sizes_log2: Vec<u32>,
    /// Timed runs per row.
    pub runs: usize,
    /// Every measurement.
    pub rows: Vec<CrossoverRow>,
    /// Per GPU contender and operation: where it starts to pay.
    pub crossover: Vec<CrossoverPoint>,
    /// Why a contender is missing, and other remarks.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Wall-clock seconds of the whole benchmark.
    pub wall_s: f64,
}

impl CrossoverReport {
    /// Whether every row verified.
    pub fn all_verified(&self) -> bool {
        self.rows.iter().all(|r| r.verified)
    }
}

/// The method text of the report.
pub const CROSSOVER_METHOD: &str = "u32->u32 unique keys (keygen, a new seed per run), values \
value_for(key); per size and contender a table made for n / load_factor slots before the \
clock starts (cleared between runs; hashbrown: a new HashMap::with_capacity(n) per run, made \
before the clock); insert of the n pairs into the empty table, then find of all n keys; median \
of the runs. gpu: TwoLevel through the device-buffer API (insert_device, find_device), keys \
and values uploaded before, CUDA events around the call. gpu+transfers: TwoLevel through the \
host-slice API (insert, find_into from host memory: upload, kernels, statuses or results \
downloaded), Instant around the call. two_level_cpu (the CPU twin) and cpu (CpuTable): the \
host-slice API on every rayon thread. hashbrown: one thread, insert / get in a loop. Every \
run verified: len == n after the insert, every key found with its value. Crossover: the \
smallest measured n from which on a GPU contender beats every CPU contender at every larger \
measured n";

/// Runs the crossover benchmark: on the default GPU when there is one (and `force_cpu` is not
/// set), the CPU contenders always. `progress` hears each finished row.
pub fn run_crossover(
    cfg: &CrossoverConfig,
    progress: &mut dyn FnMut(&CrossoverRow),
) -> Result<CrossoverReport> {
    let started = Instant::now();
    let date = utc_now();
    if !(cfg.load_factor > 0.0 && cfg.load_factor <= 0.9) {
        return Err(Error::invalid(format!(
            "load factor {} must be in (0, 0.9]",
            cfg.load_factor
        )));
    }
    let sizes: Vec<u32> = match &cfg.sizes_log2 {
        Some(s) => s.clone(),
        None if cfg.quick => CROSSOVER_QUICK_SIZES_LOG2.to_vec(),
        None => CROSSOVER_SIZES_LOG2.to_vec(),
    };
    if let Some(bad) = sizes.iter().find(|s| !(1..=30).contains(*s)) {
        return Err(Error::invalid(format!("size 2^{bad}: use 2^1 to 2^30")));
    }
    let runs = cfg.runs.unwrap_or(3);
    if runs == 0 {
        return Err(Error::invalid("runs must be at least 1"));
    }
    let mut notes = Vec::new();
    let gpu = if cfg.force_cpu {
        notes.push("GPU contenders not measured: the CPU was forced".to_string());
        None
    } else {
        match Gpu::default_gpu() {
            Ok(g) => Some(g),
            Err(e) => {
                notes.push(format!("GPU contenders not measured: {e}"));
                None
            }
        }
    };
    let threads = rayon::current_num_threads();
    let device = match &gpu {
        Some(g) => format!(
            "{} sm_{} ({} SMs), host {threads} threads",
            g.name(),
            g.sm(),
            g.sm_count()
        ),
        None => format!("none (CPU only), host {threads} threads"),
    };
    let mut rows = Vec::new();
    for &log2 in &sizes {
        let n = 1usize << log2;
        let capacity = ((n as f64 / cfg.load_factor).ceil() as usize).max(1);
        let sets: Vec<(Vec<u32>, Vec<u32>)> = (0..runs)
            .map(|r| {
                let keys = keygen::unique::<u32>(n, cfg.seed ^ ((log2 as u64) << 32) ^ r as u64)?;
                let vals = keygen::values_for::<u32, u32>(&keys);
                Ok((keys, vals))
            })
            .collect::<Result<_>>()?;
        let mut push = |row: CrossoverRow| {
            progress(&row);
            rows.push(row);
        };
        if let Some(gpu) = &gpu {
            for row in gpu_rows(gpu, &sets, capacity, log2)? {
                push(row);
            }
        }
        let mut twin = TwoLevelCpu::<u32, u32>::new(TwoLevelConfig::new(capacity))?;
        for row in host_rows(&mut twin, "two_level_cpu", &sets, log2, threads)? {
            push(row);
        }
        drop(twin);
        let mut cpu = CpuTable::<u32, u32>::new(capacity)?;
        for row in host_rows(&mut cpu, "cpu", &sets, log2, threads)? {
            push(row);
        }
        drop(cpu);
        for row in hashbrown_rows(&sets, log2) {
            push(row);
        }
    }
    let crossover = crossover_points(&rows);
    Ok(CrossoverReport {
        device,
        commit: cfg.commit.clone(),
        date,
        method: CROSSOVER_METHOD.to_string(),
        host_threads: threads,
        load_factor: cfg.load_factor,
        sizes_log2: sizes,
        runs,
        rows,
        crossover,
        notes,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// Times per run of one (contender, op), and what failed.
struct Timed {
    ms: Vec<f64>,
    failures: Vec<String>,
}

impl Timed {
    fn new() -> Self {
        Timed {
            ms: Vec::new(),
            failures: Vec::new(),
        }
    }

    fn row(
        self,
        contender: &'static str,
        op: &'static str,
        log2: u32,
        threads: usize,
    ) -> CrossoverRow {
        let n = 1usize << log2;
        let median_ms = median(&self.ms);
        CrossoverRow {
            n,
            n_log2: log2,
            contender,
            op,
            gops: if median_ms > 0.0 {
                n as f64 / (median_ms * 1e6)
            } else {
                0.0
            },
            median_ms,
            min_ms: self.ms.iter().copied().fold(f64::INFINITY, f64::min),
            runs: self.ms.len(),
            threads,
            verified: !self.ms.is_empty() && self.failures.is_empty(),
            failures: self.failures,
        }
    }
}

/// Checks a find's answers: the count of keys not found or with a wrong value.
fn check_find<F: Flag>(r: usize, keys: &[u32], out: &[u32], found: &[F], t: &mut Timed) {
    let bad = bad_hits(keys, out, found);
    if bad > 0 {
        t.failures.push(format!(
            "run {r}: {bad} of {} keys not found or wrong",
            keys.len()
        ));
    }
}

fn check_len(r: usize, len: usize, n: usize, t: &mut Timed) {
    if len != n {
        t.failures
            .push(format!("run {r}: len {len} after inserting {n} keys"));
    }
}

/// `gpu` and `gpu+transfers` on one two-level table made for `capacity` slots.
fn gpu_rows(
    gpu: &Arc<Gpu>,
    sets: &[(Vec<u32>, Vec<u32>)],
    capacity: usize,
    log2: u32,
) -> Result<Vec<CrossoverRow>> {
    let n = 1usize << log2;
    let threads = rayon::current_num_threads();
    let timer = gpu.timer()?;
    let mut table = TwoLevel::<u32, u32>::new(gpu.clone(), TwoLevelConfig::new(capacity))?;
    // Warm-up: the kernels compiled and loaded, the allocator primed.
    table.insert(&sets[0].0[..n.min(1024)], &sets[0].1[..n.min(1024)])?;
    table.clear()?;
    let (mut ins, mut find) = (Timed::new(), Timed::new());
    let mut out = gpu.alloc::<u32>(n)?;
    let mut found = gpu.alloc::<u8>(n)?;
    let (mut h_out, mut h_found8) = (vec![0u32; n], vec![0u8; n]);
    for (r, (keys, vals)) in sets.iter().enumerate() {
        table.clear()?;
        let (dk, dv) = (gpu.upload(keys)?, gpu.upload(vals)?);
        gpu.synchronize()?;
        timer.start()?;
        let res = table.insert_device(&dk, &dv);
        ins.ms.push(timer.stop_ms()?);
        if let Err(e) = res {
            ins.failures.push(format!("run {r}: {e}"));
        }
        check_len(r, table.len()?, n, &mut ins);
        gpu.fill_bytes(&mut found, 0xaa)?;
        timer.start()?;
        table.find_device_async(&dk, &mut out, &mut found)?;
        find.ms.push(timer.stop_ms()?);
        table.synchronize()?;
        gpu.copy_to_host(&out, &mut h_out)?;
        gpu.copy_to_host(&found, &mut h_found8)?;
        check_find(r, keys, &h_out, &h_found8, &mut find);
    }
    let mut v = vec![
        ins.row("gpu", "insert", log2, threads),
        find.row("gpu", "find", log2, threads),
    ];
    for row in host_rows(&mut table, "gpu+transfers", sets, log2, threads)? {
        v.push(row);
    }
    Ok(v)
}

/// Insert then find through the host-slice API, `Instant` around each call.
fn host_rows(
    table: &mut dyn HashTable<u32, u32>,
    contender: &'static str,
    sets: &[(Vec<u32>, Vec<u32>)],
    log2: u32,
    threads: usize,
) -> Result<Vec<CrossoverRow>> {
    let n = 1usize << log2;
    let (mut ins, mut find) = (Timed::new(), Timed::new());
    let mut out = vec![0u32; n];
    let mut found = vec![false; n];
    // Warm-up: threads, allocator, kernels.
    table.insert(&sets[0].0[..n.min(1024)], &sets[0].1[..n.min(1024)])?;
    table.clear()?;
    for (r, (keys, vals)) in sets.iter().enumerate() {
        table.clear()?;
        let t0 = Instant::now();
        let res = table.insert(keys, vals);
        ins.ms.push(t0.elapsed().as_secs_f64() * 1e3);
        if let Err(e) = res {
            ins.failures.push(format!("run {r}: {e}"));
        }
        check_len(r, table.len()?, n, &mut ins);
        out.par_iter_mut().for_each(|x| *x = 0xaaaa_aaaa);
        found.par_iter_mut().for_each(|x| *x = false);
        let t0 = Instant::now();
        table.find_into(keys, &mut out, &mut found)?;
        find.ms.push(t0.elapsed().as_secs_f64() * 1e3);
        check_find(r, keys, &out, &found, &mut find);
    }
    Ok(vec![
        ins.row(contender, "insert", log2, threads),
        find.row(contender, "find", log2, threads),
    ])
}

/// hashbrown on one thread.
fn hashbrown_rows(sets: &[(Vec<u32>, Vec<u32>)], log2: u32) -> Vec<CrossoverRow> {
    let n = 1usize << log2;
    let (mut ins, mut find) = (Timed::new(), Timed::new());
    let mut out = vec![0u32; n];
    let mut found = vec![false; n];
    for (r, (keys, vals)) in sets.iter().enumerate() {
        let mut map = hashbrown::HashMap::<u32, u32>::with_capacity(n);
        let t0 = Instant::now();
        for (&k, &v) in keys.iter().zip(vals) {
            map.insert(k, v);
        }
        ins.ms.push(t0.elapsed().as_secs_f64() * 1e3);
        check_len(r, map.len(), n, &mut ins);
        let t0 = Instant::now();
        for ((k, o), f) in keys.iter().zip(out.iter_mut()).zip(found.iter_mut()) {
            match map.get(k) {
                Some(&v) => {
                    *o = v;
                    *f = true;
                }
                None => *f = false,
            }
        }
        find.ms.push(t0.elapsed().as_secs_f64() * 1e3);
        check_find(r, keys, &out, &found, &mut find);
    }
    vec![
        ins.row("hashbrown", "insert", log2, 1),
        find.row("hashbrown", "find", log2, 1),
    ]
}

/// The GPU contenders.
const GPU_CONTENDERS: [&str; 2] = ["gpu", "gpu+transfers"];

/// Per GPU contender and operation: the smallest measured size from which on it beats the best
/// CPU contender at every larger measured size.
pub fn crossover_points(rows: &[CrossoverRow]) -> Vec<CrossoverPoint> {
    let mut sizes: Vec<u32> = rows.iter().map(|r| r.n_log2).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut points = Vec::new();
    for op in ["insert", "find"] {
        for gpu in GPU_CONTENDERS {
            if !rows.iter().any(|r| r.contender == gpu && r.op == op) {
                continue;
            }
            // (size, gpu rate, best cpu rate and name) where both were measured and verified.
            let cells: Vec<(u32, f64, f64, &'static str)> = sizes
                .iter()
                .filter_map(|&s| {
                    let at = |c: &str| {
                        rows.iter()
                            .find(|r| r.n_log2 == s && r.op == op && r.contender == c && r.verified)
                    };
                    let g = at(gpu)?;
                    let best = rows
                        .iter()
                        .filter(|r| {
                            r.n_log2 == s
                                && r.op == op
                                && r.verified
                                && !GPU_CONTENDERS.contains(&r.contender)
                        })
                        .max_by(|a, b| a.gops.total_cmp(&b.gops))?;
                    Some((s, g.gops, best.gops, best.contender))
                })
                .collect();
            // Walk down from the largest size while the GPU stays ahead.
            let mut first: Option<&(u32, f64, f64, &'static str)> = None;
            for c in cells.iter().rev() {
                if c.1 > c.2 {
                    first = Some(c);
                } else {
                    break;
                }
            }
            points.push(CrossoverPoint {
                op,
                gpu,
                n_log2: first.map(|c| c.0),
                speedup: first.map(|c| c.1 / c.2),
                against: first.map(|c| c.3),
            });
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n_log2: u32, contender: &'static str, op: &'static str, gops: f64) -> CrossoverRow {
        CrossoverRow {
            n: 1 << n_log2,
            n_log2,
            contender,
            op,
            gops,
            median_ms: 1.0,
            min_ms: 1.0,
            runs: 1,
            threads: 1,
            verified: true,
            failures: vec![],
        }
    }

    #[test]
    fn crossover_is_where_the_gpu_stays_ahead() {
        let rows = vec![
            row(10, "gpu+transfers", "insert", 0.01),
            row(10, "cpu", "insert", 0.1),
            row(10, "hashbrown", "insert", 0.2),
            row(12, "gpu+transfers", "insert", 0.3),
            row(12, "hashbrown", "insert", 0.2),
            row(14, "gpu+transfers", "insert", 0.1), // behind again: 2^12 does not count
            row(14, "cpu", "insert", 0.5),
            row(16, "gpu+transfers", "insert", 2.0),
            row(16, "cpu", "insert", 0.5),
            row(16, "hashbrown", "insert", 0.1),
            row(18, "gpu+transfers", "insert", 4.0),
            row(18, "cpu", "insert", 1.0),
            row(16, "gpu+transfers", "find", 0.1),
            row(16, "cpu", "find", 1.0),
        ];
        let p = crossover_points(&rows);
        assert_eq!(p.len(), 2);
        assert_eq!(
            (p[0].op, p[0].gpu, p[0].n_log2),
            ("insert", "gpu+transfers", Some(16))
        );
        assert_eq!(p[0].against, Some("cpu"));
        assert!((p[0].speedup.unwrap() - 4.0).abs() < 1e-9);
        assert_eq!((p[1].op, p[1].n_log2), ("find", None));
    }

    #[test]
    fn cpu_only_run_verifies() {
        let cfg = CrossoverConfig {
            sizes_log2: Some(vec![8, 10]),
            runs: Some(2),
            force_cpu: true,
            ..CrossoverConfig::default()
        };
        let rep = run_crossover(&cfg, &mut |_| {}).unwrap();
        assert!(rep.all_verified(), "{:?}", rep.rows);
        // Three CPU contenders, two operations, two sizes.
        assert_eq!(rep.rows.len(), 3 * 2 * 2);
        assert!(rep.crossover.is_empty());
        assert!(rep.notes.iter().any(|n| n.contains("forced")));
        assert!(run_crossover(
            &CrossoverConfig {
                load_factor: 0.0,
                ..cfg
            },
            &mut |_| {}
        )
        .is_err());
    }
}
