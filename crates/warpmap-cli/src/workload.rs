//! `warpmap workload`: the tables at work on real jobs, each answer checked against a reference
//! computed on the host, times split into transfer, build, probe or aggregate, and output.
//!
//! - `tpch --sf N`: TPC-H data generated in memory by the `tpchgen` crate (the official dbgen's
//!   rows; generation is not timed), the columns the queries need as Arrow arrays:
//!   `join`: `SELECT COUNT(*), SUM(l_extendedprice) FROM lineitem JOIN orders ON l_orderkey =
//!   o_orderkey`; `groupby_orderkey`: `SELECT l_orderkey, SUM(l_quantity), SUM(l_extendedprice)
//!   GROUP BY l_orderkey` (SF × 1.5 M groups); `groupby_suppkey`: the same by `l_suppkey` (SF ×
//!   10 k groups). Prices are integer cents (`TPCHDecimal`'s own representation), so every sum
//!   is exact and engines agree to the cent.
//! - `kmer --reads N --read-len L --k K`: counting the canonical k-mers of synthetic reads drawn
//!   from a random genome (known answer: a sort on the host).
//!
//! Paths per query: `gpu-device` (the columns already in GPU memory, the answer left there:
//! what a GPU query engine pays), `gpu-host` (Arrow columns in host memory: narrowed into
//! pinned staging, copied, queried, the answer copied back; every step timed), and `cpu` (the
//! CPU backend on all cores, host columns). Keys are narrowed to `u32` where the column's
//! largest key allows (checked when the data is made: a query engine keeps such statistics).
//! `--export DIR` writes the columns and the answers for `bench/peers/tpch.py` (PyTorch on the
//! GPU, DuckDB and Polars), which runs the same queries on the same rows and checks that its
//! answers equal these.

use clap::{Args, Subcommand};
use rayon::prelude::*;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use warpmap::arrow::arrow_array::{Array, Int64Array};
use warpmap::ops::device::{count_kmers, group_by_sums, HashJoin, MatchTotals, NOT_A_KMER};
use warpmap::ops::Engine;
use warpmap::{DeviceBuffer, Error, Gpu, HashTable, Reduce, Result};

/// `warpmap workload ...`
#[derive(Subcommand)]
pub enum WorkloadCommand {
    /// TPC-H: lineitem ⋈ orders, and two group-bys of lineitem.
    Tpch(TpchArgs),
    /// Canonical k-mer counting of synthetic reads.
    Kmer(KmerArgs),
}

/// Options shared by the workloads.
#[derive(Args, Clone)]
pub struct Common {
    /// Timed runs per query and path (the median is reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Paths, comma-separated, of gpu-device, gpu-host, cpu (default: all that this machine
    /// has), or none (with --export: only the data and the answers).
    #[arg(long, value_delimiter = ',')]
    paths: Option<Vec<String>>,
    /// Where to write the JSON report.
    #[arg(long, default_value = "workload.json")]
    json: PathBuf,
    /// Where to write the SVG chart (default: the JSON path with .svg).
    #[arg(long)]
    svg: Option<PathBuf>,
}

/// `warpmap workload tpch`
#[derive(Args, Clone)]
pub struct TpchArgs {
    /// The TPC-H scale factor (SF 1: 6 M lineitems, 1.5 M orders).
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Write the columns (raw little-endian .bin files) and the answers (answers.json) here,
    /// for bench/peers/tpch.py.
    #[arg(long)]
    export: Option<PathBuf>,
    /// Size the group-bys' tables for the true number of groups (a statistic an engine's
    /// catalog would hold) instead of for one group per row.
    #[arg(long)]
    hint_groups: bool,
    #[command(flatten)]
    common: Common,
}

/// `warpmap workload kmer`
#[derive(Args, Clone)]
pub struct KmerArgs {
    /// Reads.
    #[arg(long, default_value_t = 1 << 16)]
    reads: usize,
    /// Bases per read.
    #[arg(long, default_value_t = 150)]
    read_len: usize,
    /// k (1 to 31).
    #[arg(long, default_value_t = 31)]
    k: usize,
    #[command(flatten)]
    common: Common,
}

/// Runs a workload; exit code 1 if an answer was wrong.
pub fn run(cmd: WorkloadCommand) -> Result<std::process::ExitCode> {
    match cmd {
        WorkloadCommand::Tpch(a) => tpch(a),
        WorkloadCommand::Kmer(a) => kmer(a),
    }
}

// ---------------------------------------------------------------------------------------------
// Timing

/// One timed run of one query on one path, in milliseconds per phase.
#[derive(Clone, Debug, Default)]
struct Phases {
    transfer: f64,
    build: f64,
    probe: f64,
    output: f64,
    /// Device memory the query's buffers took at their most, beyond what was in use when it
    /// started (the resident columns), in bytes (GPU paths; 0 without a memory pool).
    gpu_bytes: u64,
}

impl Phases {
    fn total(&self) -> f64 {
        self.transfer + self.build + self.probe + self.output
    }
}

/// Times phases: each ends after the GPU is idle (so a phase's time is its own).
struct Clock {
    gpu: Option<Arc<Gpu>>,
    used_at_start: u64,
    t: Instant,
    p: Phases,
}

impl Clock {
    fn start(gpu: Option<&Arc<Gpu>>) -> Result<Clock> {
        let used_at_start = match gpu {
            Some(g) => {
                g.synchronize()?;
                g.reset_pool_used_high().unwrap_or(0)
            }
            None => 0,
        };
        Ok(Clock {
            gpu: gpu.cloned(),
            used_at_start,
            t: Instant::now(),
            p: Phases::default(),
        })
    }

    /// Ends a phase: its milliseconds since the last.
    fn lap(&mut self) -> Result<f64> {
        if let Some(g) = &self.gpu {
            g.synchronize()?;
            let high = g.pool_used_high_since_reset().unwrap_or(self.used_at_start);
            self.p.gpu_bytes = self
                .p
                .gpu_bytes
                .max(high.saturating_sub(self.used_at_start));
        }
        let ms = self.t.elapsed().as_secs_f64() * 1e3;
        self.t = Instant::now();
        Ok(ms)
    }
    fn transfer(&mut self) -> Result<()> {
        self.p.transfer += self.lap()?;
        Ok(())
    }
    fn build(&mut self) -> Result<()> {
        self.p.build += self.lap()?;
        Ok(())
    }
    fn probe(&mut self) -> Result<()> {
        self.p.probe += self.lap()?;
        Ok(())
    }
    fn output(&mut self) -> Result<()> {
        self.p.output += self.lap()?;
        Ok(())
    }
}

/// The median run (by total) of `runs`, after one untimed warm-up (kernel compiles, pools).
fn median_of<A>(runs: usize, mut f: impl FnMut() -> Result<(Phases, A)>) -> Result<(Phases, A)> {
    let _ = f()?;
    let mut all = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        all.push(f()?);
    }
    all.sort_by(|a, b| a.0.total().total_cmp(&b.0.total()));
    let mid = all.len() / 2;
    Ok(all.swap_remove(mid))
}

/// One row of the report.
struct Row {
    query: &'static str,
    path: &'static str,
    phases: Phases,
    correct: bool,
    note: String,
}

fn row_json(r: &Row) -> serde_json::Value {
    json!({
        "query": r.query, "path": r.path, "total_ms": r.phases.total(),
        "transfer_ms": r.phases.transfer, "build_ms": r.phases.build,
        "probe_ms": r.phases.probe, "output_ms": r.phases.output,
        "gpu_peak_bytes": r.phases.gpu_bytes, "correct": r.correct, "note": r.note,
    })
}

fn print_row(r: &Row) {
    println!(
        "{:<18} {:<11} {:>9.3} ms  (transfer {:>8.3}, build {:>8.3}, probe {:>8.3}, output \
         {:>8.3}; GPU {:>6.0} MiB)  {}  {}",
        r.query,
        r.path,
        r.phases.total(),
        r.phases.transfer,
        r.phases.build,
        r.phases.probe,
        r.phases.output,
        r.phases.gpu_bytes as f64 / (1 << 20) as f64,
        if r.correct { "ok" } else { "WRONG" },
        r.note
    );
}

/// The paths to run: those asked for, or every one this machine has.
fn paths(common: &Common, gpu: &Option<Arc<Gpu>>) -> Result<Vec<&'static str>> {
    let all = ["gpu-device", "gpu-host", "cpu"];
    let asked: Vec<&'static str> = match &common.paths {
        None => all.to_vec(),
        Some(v) if v.iter().any(|p| p == "none") => Vec::new(),
        Some(v) => v
            .iter()
            .map(|p| {
                all.iter().copied().find(|a| a == p).ok_or_else(|| {
                    Error::invalid(format!("--paths: '{p}' is not gpu-device, gpu-host or cpu"))
                })
            })
            .collect::<Result<_>>()?,
    };
    Ok(asked
        .into_iter()
        .filter(|p| gpu.is_some() || *p == "cpu")
        .collect())
}

fn write_report(
    common: &Common,
    workload: serde_json::Value,
    rows: &[Row],
    gpu: &Option<Arc<Gpu>>,
) -> Result<()> {
    let device = gpu.as_ref().map_or_else(
        || "none".to_string(),
        |g| format!("{} sm_{}", g.name(), g.sm()),
    );
    let report = json!({
        "device": device,
        "commit": crate::COMMIT,
        "host_threads": crate::host_threads(),
        "method": "Wall clock per phase, the GPU synchronized at each phase's end (so a phase \
                   includes its launches and waits); one untimed warm-up, then the median (by \
                   total) of the runs. gpu-device: the columns in GPU memory before the clock \
                   starts, the answer left in GPU memory (its download for the check is not \
                   timed, as the peers' answers stay on the GPU too). gpu-host: from host Arrow arrays, narrowed into pinned \
                   staging (allocated before the clock) and copied (transfer), the answer \
                   copied back (output). cpu: the CPU backend (CpuTable) on all cores. Every \
                   answer is checked against a host reference. gpu_peak_bytes: the most device \
                   memory the query's buffers took at once, temporaries included, beyond what \
                   was in use when it started (the resident columns): the stream-ordered \
                   pool's used-memory high-water mark, reset at the query's start.",
        "workload": workload,
        "results": rows.iter().map(row_json).collect::<Vec<_>>(),
    });
    let text =
        serde_json::to_string_pretty(&report).map_err(|e| Error::invalid(format!("JSON: {e}")))?;
    std::fs::write(&common.json, text)
        .map_err(|e| Error::invalid(format!("writing {}: {e}", common.json.display())))?;
    let svg = common
        .svg
        .clone()
        .unwrap_or_else(|| common.json.with_extension("svg"));
    let bars: Vec<(String, f64)> = rows
        .iter()
        .map(|r| (format!("{} {}", r.query, r.path), r.phases.total()))
        .collect();
    std::fs::write(
        &svg,
        bar_chart("warpmap workload: ms per query (lower is better)", &bars)?,
    )
    .map_err(|e| Error::invalid(format!("writing {}: {e}", svg.display())))?;
    println!("wrote {} and {}", common.json.display(), svg.display());
    Ok(())
}

/// A horizontal bar per (query, path): its total milliseconds.
fn bar_chart(title: &str, bars: &[(String, f64)]) -> Result<String> {
    use plotters::prelude::*;
    let err = |e: String| Error::invalid(format!("the workload chart: {e}"));
    let mut svg = String::new();
    {
        let h = 120 + 28 * bars.len() as u32;
        let root = SVGBackend::with_string(&mut svg, (900, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
        let max = bars.iter().map(|b| b.1).fold(0.0f64, f64::max).max(1e-3) * 1.15;
        let n = bars.len().max(1);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(260)
            .build_cartesian_2d(0.0..max, (0..n).into_segmented())
            .map_err(|e| err(e.to_string()))?;
        let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        chart
            .configure_mesh()
            .y_labels(n)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_desc("ms")
            .draw()
            .map_err(|e| err(e.to_string()))?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(i)),
                        (b.1, SegmentValue::Exact(i + 1)),
                    ],
                    BLUE.mix(0.6).filled(),
                )
            }))
            .map_err(|e| err(e.to_string()))?;
        root.present().map_err(|e| err(e.to_string()))?;
    }
    Ok(svg)
}

// ---------------------------------------------------------------------------------------------
// TPC-H

/// The columns of the three queries, as Arrow arrays (generated, not timed).
struct Tpch {
    o_orderkey: Int64Array,
    l_orderkey: Int64Array,
    l_suppkey: Int64Array,
    l_quantity: Int64Array,
    /// Cents.
    l_extendedprice: Int64Array,
}

fn generate_tpch(sf: f64) -> Tpch {
    use tpchgen::generators::{LineItemGenerator, OrderGenerator};
    let parts = (crate::host_threads() * 4).max(1) as i32;
    let orders: Vec<Vec<i64>> = (1..=parts)
        .into_par_iter()
        .map(|p| {
            OrderGenerator::new(sf, p, parts)
                .iter()
                .map(|o| o.o_orderkey)
                .collect()
        })
        .collect();
    type Lines = (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>);
    let lines: Vec<Lines> = (1..=parts)
        .into_par_iter()
        .map(|p| {
            let mut c: Lines = Default::default();
            for l in LineItemGenerator::new(sf, p, parts).iter() {
                c.0.push(l.l_orderkey);
                c.1.push(l.l_suppkey);
                c.2.push(l.l_quantity);
                c.3.push(l.l_extendedprice.0);
            }
            c
        })
        .collect();
    let cat = |f: &dyn Fn(&Lines) -> &Vec<i64>| -> Int64Array {
        Int64Array::from(
            lines
                .iter()
                .flat_map(|l| f(l).iter().copied())
                .collect::<Vec<_>>(),
        )
    };
    Tpch {
        o_orderkey: Int64Array::from(orders.concat()),
        l_orderkey: cat(&|l| &l.0),
        l_suppkey: cat(&|l| &l.1),
        l_quantity: cat(&|l| &l.2),
        l_extendedprice: cat(&|l| &l.3),
    }
}

/// A key column narrowed to `u32` (every key of TPC-H's key columns fits at the scale factors
/// that fit in memory; checked).
fn narrow(what: &str, a: &Int64Array) -> Result<Vec<u32>> {
    let v = a.values();
    if a.null_count() > 0 || v.par_iter().any(|&k| !(0..=u32::MAX as i64).contains(&k)) {
        return Err(Error::Unsupported(format!(
            "{what}: keys outside u32 or nulls (not at TPC-H's scale factors)"
        )));
    }
    Ok(v.par_iter().map(|&k| k as u32).collect())
}

/// The answers of the three queries.
#[derive(Clone, Debug, PartialEq)]
struct JoinAnswer {
    count: u64,
    sum: i64,
}

impl From<MatchTotals> for JoinAnswer {
    fn from(t: MatchTotals) -> Self {
        JoinAnswer {
            count: t.count,
            sum: t.sum_signed(),
        }
    }
}

/// A group-by's answer, sorted by key: (key, sum of quantity, sum of price).
type GroupAnswer = Vec<(u32, i64, i64)>;

fn sorted_groups(keys: &[u32], a: &[i64], b: &[i64]) -> GroupAnswer {
    let mut g: GroupAnswer = keys
        .iter()
        .zip(a)
        .zip(b)
        .map(|((&k, &x), &y)| (k, x, y))
        .collect();
    g.par_sort_unstable_by_key(|r| r.0);
    g
}

/// Host references: a sort of the rows by key, then runs.
fn reference_groups(keys: &[u32], qty: &[i64], price: &[i64]) -> GroupAnswer {
    let mut rows: Vec<(u32, i64, i64)> = keys
        .par_iter()
        .zip(qty.par_iter().zip(price.par_iter()))
        .map(|(&k, (&q, &p))| (k, q, p))
        .collect();
    rows.par_sort_unstable_by_key(|r| r.0);
    let mut out: GroupAnswer = Vec::new();
    for (k, q, p) in rows {
        match out.last_mut() {
            Some(last) if last.0 == k => {
                last.1 += q;
                last.2 += p;
            }
            _ => out.push((k, q, p)),
        }
    }
    out
}

fn reference_join(o_keys: &[u32], l_keys: &[u32], price: &[i64]) -> JoinAnswer {
    let mut build = o_keys.to_vec();
    build.par_sort_unstable();
    let (count, sum) = l_keys
        .par_iter()
        .zip(price.par_iter())
        .filter(|(k, _)| build.binary_search(k).is_ok())
        .map(|(_, &p)| (1u64, p))
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1.wrapping_add(b.1)));
    JoinAnswer { count, sum }
}

/// Checksums of a group-by's answer for the peers' script: groups, the sums' totals, and a
/// key-weighted sum (wrapping).
fn group_checksums(g: &GroupAnswer) -> serde_json::Value {
    let (mut q, mut p, mut w) = (0i64, 0i64, 0u64);
    for &(k, a, b) in g {
        q = q.wrapping_add(a);
        p = p.wrapping_add(b);
        w = w.wrapping_add((k as u64).wrapping_mul(b as u64 ^ (a as u64) << 40));
    }
    json!({"groups": g.len(), "sum_quantity": q, "sum_extendedprice": p, "weighted": w.to_string()})
}

/// The device-resident columns (uploaded once, before any clock).
struct DeviceTpch {
    o_orderkey: DeviceBuffer<u32>,
    l_orderkey: DeviceBuffer<u32>,
    l_suppkey: DeviceBuffer<u32>,
    l_quantity: DeviceBuffer<i64>,
    l_extendedprice: DeviceBuffer<i64>,
}

/// Pinned staging for the gpu-host path (allocated before any clock, as an engine's pool).
struct Staging {
    keys_a: warpmap::PinnedBuffer<u32>,
    keys_b: warpmap::PinnedBuffer<u32>,
    vals_a: warpmap::PinnedBuffer<i64>,
    vals_b: warpmap::PinnedBuffer<i64>,
    out_keys: warpmap::PinnedBuffer<u32>,
    out_a: warpmap::PinnedBuffer<i64>,
    out_b: warpmap::PinnedBuffer<i64>,
}

fn tpch(a: TpchArgs) -> Result<std::process::ExitCode> {
    let gpu = Gpu::default_gpu().ok();
    let paths = paths(&a.common, &gpu)?;
    let t = Instant::now();
    let data = generate_tpch(a.sf);
    println!(
        "TPC-H SF {}: {} lineitems, {} orders, generated in {:.1} s (not timed)",
        a.sf,
        data.l_orderkey.len(),
        data.o_orderkey.len(),
        t.elapsed().as_secs_f64()
    );
    // Narrowed key columns (host), the references.
    let o_keys = narrow("o_orderkey", &data.o_orderkey)?;
    let l_keys = narrow("l_orderkey", &data.l_orderkey)?;
    let s_keys = narrow("l_suppkey", &data.l_suppkey)?;
    let qty = data.l_quantity.values().to_vec();
    let price = data.l_extendedprice.values().to_vec();
    let t = Instant::now();
    let ref_join = reference_join(&o_keys, &l_keys, &price);
    let ref_by_order = reference_groups(&l_keys, &qty, &price);
    let ref_by_supp = reference_groups(&s_keys, &qty, &price);
    println!(
        "references on the host in {:.1} s: join {} rows, sum {}; {} orderkey groups, {} suppkey \
         groups",
        t.elapsed().as_secs_f64(),
        ref_join.count,
        ref_join.sum,
        ref_by_order.len(),
        ref_by_supp.len()
    );
    if let Some(dir) = &a.export {
        export_tpch(
            dir,
            &o_keys,
            &l_keys,
            &s_keys,
            &qty,
            &price,
            &ref_join,
            &ref_by_order,
            &ref_by_supp,
        )?;
    }
    let runs = a.common.runs;
    let mut rows = Vec::new();
    let mut push = |r: Row| {
        print_row(&r);
        rows.push(r);
    };
    for &path in &paths {
        match path {
            "gpu-device" => {
                let g = gpu.as_ref().expect("a GPU path has a GPU");
                let d = DeviceTpch {
                    o_orderkey: g.upload(&o_keys)?,
                    l_orderkey: g.upload(&l_keys)?,
                    l_suppkey: g.upload(&s_keys)?,
                    l_quantity: g.upload(&qty)?,
                    l_extendedprice: g.upload(&price)?,
                };
                // The totals straight from the probe (probe_sum), then the same through the
                // row pairs (probe, then the sum over them): what a join that outputs pairs pays.
                for pairs in [false, true] {
                    let (p, ans) = median_of(runs, || {
                        let mut c = Clock::start(Some(g))?;
                        let join = HashJoin::build(g, &d.o_orderkey)?;
                        c.build()?;
                        let totals = if pairs {
                            let m = join.probe(&d.l_orderkey)?;
                            join.sum_matched(&m, &d.l_extendedprice)?
                        } else {
                            join.probe_sum(&d.l_orderkey, &d.l_extendedprice)?
                        };
                        c.probe()?;
                        Ok((c.p, totals.into()))
                    })?;
                    let mut r = join_row("gpu-device", p, &ans, &ref_join);
                    if pairs {
                        r.query = "join_pairs";
                    }
                    push(r);
                }
                for (query, keys, reference) in [
                    ("groupby_orderkey", &d.l_orderkey, &ref_by_order),
                    ("groupby_suppkey", &d.l_suppkey, &ref_by_supp),
                ] {
                    let hint = a.hint_groups.then_some(reference.len());
                    let (p, ans) = median_of(runs, || {
                        let mut c = Clock::start(Some(g))?;
                        let gr =
                            group_by_sums(g, keys, &[&d.l_quantity, &d.l_extendedprice], hint)?;
                        c.probe()?;
                        // The answer stays on the device (as PyTorch's does): its download, for
                        // the check, is not timed.
                        let k = g.download(&gr.keys)?;
                        let s0 = g.download(&gr.values[0])?;
                        let s1 = g.download(&gr.values[1])?;
                        Ok((c.p, sorted_groups(&k, &s0, &s1)))
                    })?;
                    push(group_row(query, "gpu-device", p, &ans, reference));
                }
            }
            "gpu-host" => {
                let g = gpu.as_ref().expect("a GPU path has a GPU");
                let n = l_keys.len();
                let mut st = Staging {
                    keys_a: g.alloc_pinned::<u32>(n.max(o_keys.len()))?,
                    keys_b: g.alloc_pinned::<u32>(n)?,
                    vals_a: g.alloc_pinned::<i64>(n)?,
                    vals_b: g.alloc_pinned::<i64>(n)?,
                    out_keys: g.alloc_pinned::<u32>(n)?,
                    out_a: g.alloc_pinned::<i64>(n)?,
                    out_b: g.alloc_pinned::<i64>(n)?,
                };
                let (p, ans) = median_of(runs, || {
                    let mut c = Clock::start(Some(g))?;
                    let ok = stage_keys(g, &data.o_orderkey, &mut st.keys_a)?;
                    let lk = stage_keys(g, &data.l_orderkey, &mut st.keys_b)?;
                    let pr = stage_values(g, &data.l_extendedprice, &mut st.vals_a)?;
                    c.transfer()?;
                    let join = HashJoin::build(g, &ok)?;
                    c.build()?;
                    let totals = join.probe_sum(&lk, &pr)?;
                    c.probe()?;
                    Ok((c.p, totals.into()))
                })?;
                push(join_row("gpu-host", p, &ans, &ref_join));
                for (query, col, reference) in [
                    ("groupby_orderkey", &data.l_orderkey, &ref_by_order),
                    ("groupby_suppkey", &data.l_suppkey, &ref_by_supp),
                ] {
                    let hint = a.hint_groups.then_some(reference.len());
                    let (p, ans) = median_of(runs, || {
                        let mut c = Clock::start(Some(g))?;
                        let k = stage_keys(g, col, &mut st.keys_b)?;
                        let q = stage_values(g, &data.l_quantity, &mut st.vals_a)?;
                        let pr = stage_values(g, &data.l_extendedprice, &mut st.vals_b)?;
                        c.transfer()?;
                        let gr = group_by_sums(g, &k, &[&q, &pr], hint)?;
                        c.probe()?;
                        // The answer into pinned staging (pre-touched host memory: a fresh
                        // vector's first touch costs more than the copy).
                        let groups = gr.keys.len();
                        g.copy_to_pinned(&gr.keys, 0, &mut st.out_keys, 0, groups)?;
                        g.copy_to_pinned(&gr.values[0], 0, &mut st.out_a, 0, groups)?;
                        g.copy_to_pinned(&gr.values[1], 0, &mut st.out_b, 0, groups)?;
                        c.output()?;
                        Ok((
                            c.p,
                            sorted_groups(
                                &st.out_keys.as_slice()?[..groups],
                                &st.out_a.as_slice()?[..groups],
                                &st.out_b.as_slice()?[..groups],
                            ),
                        ))
                    })?;
                    push(group_row(query, "gpu-host", p, &ans, reference));
                }
            }
            _ => {
                // The CPU backend on all cores, through ops' host-slice calls.
                let (p, ans) = median_of(runs, || {
                    let mut c = Clock::start(None)?;
                    let mut t = Engine::Cpu.table::<u32, u32>(o_keys.len() * 2)?;
                    let rows: Vec<u32> = (0..o_keys.len() as u32).collect();
                    t.insert(&o_keys, &rows)?;
                    c.build()?;
                    let (mut v, mut f) = (vec![0u32; l_keys.len()], vec![false; l_keys.len()]);
                    t.find_into(&l_keys, &mut v, &mut f)?;
                    let (count, sum) = f
                        .par_iter()
                        .zip(price.par_iter())
                        .filter(|(f, _)| **f)
                        .map(|(_, &p)| (1u64, p))
                        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1.wrapping_add(b.1)));
                    c.probe()?;
                    Ok((c.p, JoinAnswer { count, sum }))
                })?;
                push(join_row("cpu", p, &ans, &ref_join));
                for (query, keys, reference) in [
                    ("groupby_orderkey", &l_keys, &ref_by_order),
                    ("groupby_suppkey", &s_keys, &ref_by_supp),
                ] {
                    let hint = a.hint_groups.then_some(reference.len());
                    let (p, ans) = median_of(runs, || {
                        let mut c = Clock::start(None)?;
                        let capacity = 2 * hint.unwrap_or(keys.len());
                        let mut tq = Engine::Cpu.table::<u32, i64>(capacity)?;
                        tq.insert_or_apply(keys, &qty, Reduce::Sum)?;
                        let mut tp = Engine::Cpu.table::<u32, i64>(capacity)?;
                        tp.insert_or_apply(keys, &price, Reduce::Sum)?;
                        c.probe()?;
                        let (k, q) = tq.retrieve_all()?;
                        let mut p = vec![0i64; k.len()];
                        let mut f = vec![false; k.len()];
                        tp.find_into(&k, &mut p, &mut f)?;
                        c.output()?;
                        Ok((c.p, sorted_groups(&k, &q, &p)))
                    })?;
                    push(group_row(query, "cpu", p, &ans, reference));
                }
            }
        }
    }
    let workload = json!({
        "name": "tpch", "sf": a.sf, "lineitems": l_keys.len(), "orders": o_keys.len(),
        "answers": {
            "join": {"count": ref_join.count, "sum_extendedprice": ref_join.sum},
            "groupby_orderkey": group_checksums(&ref_by_order),
            "groupby_suppkey": group_checksums(&ref_by_supp),
        },
        "note": "l_extendedprice in integer cents; keys narrowed to u32 (checked)",
    });
    write_report(&a.common, workload, &rows, &gpu)?;
    Ok(exit_code(&rows))
}

fn exit_code(rows: &[Row]) -> std::process::ExitCode {
    if rows.iter().all(|r| r.correct) {
        std::process::ExitCode::SUCCESS
    } else {
        eprintln!("workload: some answers were WRONG (see above)");
        std::process::ExitCode::from(1)
    }
}

fn join_row(path: &'static str, p: Phases, ans: &JoinAnswer, reference: &JoinAnswer) -> Row {
    Row {
        query: "join",
        path,
        phases: p,
        correct: ans == reference,
        note: format!("{} matches, sum {}", ans.count, ans.sum),
    }
}

fn group_row(
    query: &'static str,
    path: &'static str,
    p: Phases,
    ans: &GroupAnswer,
    reference: &GroupAnswer,
) -> Row {
    Row {
        query,
        path,
        phases: p,
        correct: ans == reference,
        note: format!("{} groups", ans.len()),
    }
}

/// A column of host Arrow memory converted by `f` into pinned staging (all threads), then
/// copied to a new device buffer.
fn stage<T: bytemuck::Pod + Send>(
    gpu: &Gpu,
    col: &Int64Array,
    staging: &mut warpmap::PinnedBuffer<T>,
    f: impl Fn(i64) -> T + Sync,
) -> Result<DeviceBuffer<T>> {
    let n = col.len();
    let dst = &mut staging.as_mut_slice()?[..n];
    dst.par_chunks_mut(1 << 16)
        .zip(col.values().par_chunks(1 << 16))
        .for_each(|(d, s)| {
            for (d, &s) in d.iter_mut().zip(s) {
                *d = f(s);
            }
        });
    let mut out = gpu.alloc::<T>(n)?;
    gpu.copy_from_pinned(staging, 0, &mut out, 0, n)?;
    Ok(out)
}

/// A key column narrowed to `u32` (checked by [`narrow`] when the data was made).
fn stage_keys(
    gpu: &Gpu,
    col: &Int64Array,
    staging: &mut warpmap::PinnedBuffer<u32>,
) -> Result<DeviceBuffer<u32>> {
    stage(gpu, col, staging, |k| k as u32)
}

/// A value column as it is.
fn stage_values(
    gpu: &Gpu,
    col: &Int64Array,
    staging: &mut warpmap::PinnedBuffer<i64>,
) -> Result<DeviceBuffer<i64>> {
    stage(gpu, col, staging, |v| v)
}

#[allow(clippy::too_many_arguments)]
fn export_tpch(
    dir: &Path,
    o_keys: &[u32],
    l_keys: &[u32],
    s_keys: &[u32],
    qty: &[i64],
    price: &[i64],
    join: &JoinAnswer,
    by_order: &GroupAnswer,
    by_supp: &GroupAnswer,
) -> Result<()> {
    let io = |e: std::io::Error| Error::invalid(format!("--export {}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).map_err(io);
    write("o_orderkey.u32.bin", bytemuck::cast_slice(o_keys))?;
    write("l_orderkey.u32.bin", bytemuck::cast_slice(l_keys))?;
    write("l_suppkey.u32.bin", bytemuck::cast_slice(s_keys))?;
    write("l_quantity.i64.bin", bytemuck::cast_slice(qty))?;
    write("l_extendedprice.i64.bin", bytemuck::cast_slice(price))?;
    let answers = json!({
        "join": {"count": join.count, "sum_extendedprice": join.sum},
        "groupby_orderkey": group_checksums(by_order),
        "groupby_suppkey": group_checksums(by_supp),
    });
    write(
        "answers.json",
        serde_json::to_string_pretty(&answers)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    println!("exported the columns and answers to {}", dir.display());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// k-mers

/// Reads of `read_len` bases drawn from a random genome of `reads × read_len / 8` bases (each
/// base covered about 8 times, so k-mers repeat), half reverse-complemented; ASCII.
fn synthetic_reads(reads: usize, read_len: usize, seed: u64) -> Vec<u8> {
    let genome_len = (reads * read_len / 8).max(read_len + 1);
    let mix = |x: u64| {
        let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    const ACGT: [u8; 4] = *b"ACGT";
    let genome: Vec<u8> = (0..genome_len as u64)
        .into_par_iter()
        .map(|i| (mix(seed ^ i) & 3) as u8)
        .collect();
    let mut out = vec![0u8; reads * read_len];
    out.par_chunks_mut(read_len)
        .enumerate()
        .for_each(|(r, read)| {
            let h = mix(seed.wrapping_mul(31) ^ (r as u64) << 1);
            let start = (h % (genome_len - read_len + 1) as u64) as usize;
            let src = &genome[start..start + read_len];
            if h >> 63 == 0 {
                for (d, &b) in read.iter_mut().zip(src) {
                    *d = ACGT[b as usize];
                }
            } else {
                for (d, &b) in read.iter_mut().zip(src.iter().rev()) {
                    *d = ACGT[3 - b as usize];
                }
            }
        });
    out
}

/// The host reference: every canonical k-mer ([`host_kmers`]), sorted, then counted: (k-mer,
/// count) by k-mer.
fn reference_kmers(bases: &[u8], read_len: usize, k: usize) -> Vec<(u64, u32)> {
    let mut all = host_kmers(bases, read_len, k);
    all.par_sort_unstable();
    let mut out: Vec<(u64, u32)> = Vec::new();
    for x in all {
        match out.last_mut() {
            Some(l) if l.0 == x => l.1 += 1,
            _ => out.push((x, 1)),
        }
    }
    out
}

fn kmer(a: KmerArgs) -> Result<std::process::ExitCode> {
    if !(1..=31).contains(&a.k) || a.k > a.read_len {
        return Err(Error::invalid("--k: 1 to 31, at most --read-len"));
    }
    let gpu = Gpu::default_gpu().ok();
    let paths = paths(&a.common, &gpu)?;
    let bases = synthetic_reads(a.reads, a.read_len, 0x5eed);
    let windows = a.reads * (a.read_len - a.k + 1);
    let t = Instant::now();
    let reference = reference_kmers(&bases, a.read_len, a.k);
    println!(
        "{} reads of {} bases: {} k-mers (k = {}), {} distinct; reference in {:.1} s",
        a.reads,
        a.read_len,
        windows,
        a.k,
        reference.len(),
        t.elapsed().as_secs_f64()
    );
    let check = |mut got: Vec<(u64, u32)>| -> bool {
        got.retain(|p| p.0 != NOT_A_KMER);
        got.par_sort_unstable();
        got == reference
    };
    let mut rows = Vec::new();
    for &path in &paths {
        let (p, got) = match path {
            "gpu-device" | "gpu-host" => {
                let g = gpu.as_ref().expect("a GPU path has a GPU");
                let resident = (path == "gpu-device")
                    .then(|| g.upload(&bases))
                    .transpose()?;
                median_of(a.common.runs, || {
                    let mut c = Clock::start(Some(g))?;
                    let uploaded;
                    let on_device = match &resident {
                        Some(b) => b,
                        None => {
                            uploaded = g.upload(&bases)?;
                            c.transfer()?;
                            &uploaded
                        }
                    };
                    let t = count_kmers(g, on_device, a.reads, a.read_len, a.k, None)?;
                    c.probe()?;
                    let (k, v) = t.retrieve_all()?;
                    if resident.is_none() {
                        // From host reads, the counts come back too (timed); device-resident,
                        // their download is only the check's.
                        c.output()?;
                    }
                    Ok((c.p, k.into_iter().zip(v).collect::<Vec<_>>()))
                })?
            }
            _ => median_of(a.common.runs, || {
                let mut c = Clock::start(None)?;
                let keys = host_kmers(&bases, a.read_len, a.k);
                c.build()?;
                let mut t = Engine::Cpu.table::<u64, u32>(keys.len())?;
                t.insert_or_apply(&keys, &vec![1u32; keys.len()], Reduce::Sum)?;
                c.probe()?;
                let (k, v) = t.retrieve_all()?;
                c.output()?;
                Ok((c.p, k.into_iter().zip(v).collect::<Vec<_>>()))
            })?,
        };
        let n = got.len();
        let r = Row {
            query: "kmer_count",
            path,
            correct: check(got),
            note: format!(
                "{n} distinct; {:.2} G k-mers/s counting (probe)",
                windows as f64 / p.probe / 1e6
            ),
            phases: p,
        };
        print_row(&r);
        rows.push(r);
    }
    let workload = json!({
        "name": "kmer", "reads": a.reads, "read_len": a.read_len, "k": a.k,
        "kmers": windows, "distinct": reference.len(),
    });
    write_report(&a.common, workload, &rows, &gpu)?;
    Ok(exit_code(&rows))
}

/// The canonical k-mers of every read on the host (the CPU path's extraction, all threads).
fn host_kmers(bases: &[u8], read_len: usize, k: usize) -> Vec<u64> {
    let mask = (1u64 << (2 * k)) - 1;
    let shift = 2 * (k as u64 - 1);
    bases
        .par_chunks(read_len)
        .flat_map_iter(|read| {
            let (mut fwd, mut rev) = (0u64, 0u64);
            let mut v = Vec::with_capacity(read_len + 1 - k);
            for (i, &b) in read.iter().enumerate() {
                let c = match b {
                    b'A' => 0u64,
                    b'C' => 1,
                    b'G' => 2,
                    _ => 3,
                };
                fwd = ((fwd << 2) | c) & mask;
                rev = (rev >> 2) | ((3 - c) << shift);
                if i + 1 >= k {
                    v.push(fwd.min(rev));
                }
            }
            v
        })
        .collect()
}
