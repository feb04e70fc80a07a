//! `warpmap`: the command-line tool of the warpmap GPU hash tables.
//!
//! - `warpmap bench [--quick] [--cpu] [--json PATH] [--svg PATH]`: the in-run roofline and every
//!   bulk operation of each table at several load factors, verified; a table on stdout, JSON and
//!   an SVG chart on disk. Exit code 1 if any result failed verification.
//! - `warpmap info`: the GPU, NVRTC and the kernel cache, or why each is missing.

mod chart;

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use warpmap::bench::{self, BenchConfig, Progress, Report};
use warpmap::table::Backend;
use warpmap::{Error, Gpu, Result};

/// The source revision this binary was built from (build.rs).
const COMMIT: &str = env!("WARPMAP_COMMIT");

#[derive(Parser)]
#[command(
    name = "warpmap",
    version,
    about = "GPU hash tables: benchmarks and diagnostics"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Measure the roofline and every table operation; print a table, write JSON and SVG.
    Bench(BenchArgs),
    /// Show the GPU, NVRTC and the kernel cache (or why they are missing).
    Info,
}

#[derive(Args)]
struct BenchArgs {
    /// Tiny sizes and 3 runs: a smoke test of a few seconds.
    #[arg(long)]
    quick: bool,
    /// Use the CPU backend even if a GPU is present.
    #[arg(long)]
    cpu: bool,
    /// Where to write the JSON report.
    #[arg(long, value_name = "PATH", default_value = "bench-results.json")]
    json: PathBuf,
    /// Where to write the SVG chart (default: the JSON path with .svg).
    #[arg(long, value_name = "PATH")]
    svg: Option<PathBuf>,
    /// Table slots as a power of two (default: 26 on a GPU, 22 on the CPU; quick: 18).
    #[arg(long, value_name = "LOG2")]
    slots_log2: Option<u32>,
    /// Timed runs per measurement (default 5; quick 3).
    #[arg(long)]
    runs: Option<usize>,
    /// Load factors, comma-separated (default 0.5,0.8,0.9,0.95).
    #[arg(long, value_delimiter = ',', value_name = "LF,...")]
    load_factors: Option<Vec<f64>>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(a) => bench_cmd(a),
        Command::Info => info_cmd().map(|()| ExitCode::SUCCESS),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("warpmap: error: {e}");
            ExitCode::from(1)
        }
    }
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source,
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
    }
    std::fs::write(path, bytes).map_err(|e| io_err(path, e))
}

fn bench_cmd(a: BenchArgs) -> Result<ExitCode> {
    let started = Instant::now();
    // The library opens the GPU once per process; asking here only decides what to print first.
    let backend = if a.cpu || Gpu::default_gpu().is_err() {
        Backend::Cpu
    } else {
        Backend::Gpu
    };
    let device = match (backend, Gpu::default_gpu()) {
        (Backend::Gpu, Ok(g)) => format!("{} sm_{} ({} SMs)", g.name(), g.sm(), g.sm_count()),
        _ => format!("CPU ({} threads)", host_threads()),
    };
    println!("device:  {device}");
    println!("commit:  {COMMIT}");
    println!("method:  {}", bench::method_for(backend));
    if backend == Backend::Cpu {
        match (a.cpu, Gpu::default_gpu()) {
            (true, _) => println!("backend: cpu (forced by --cpu)"),
            (false, Err(e)) => println!("backend: cpu, because no GPU was found: {e}"),
            _ => {}
        }
    }

    let cfg = BenchConfig {
        quick: a.quick,
        force_cpu: a.cpu,
        commit: COMMIT.to_string(),
        slots_log2: a.slots_log2,
        runs: a.runs,
        load_factors: a.load_factors.clone(),
        ..BenchConfig::default()
    };

    // Fail on an unusable output folder now rather than after the run.
    let svg = a
        .svg
        .clone()
        .unwrap_or_else(|| a.json.with_extension("svg"));
    for p in [&a.json, &svg] {
        if let Some(parent) = p.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
        }
    }

    let tty = std::io::stderr().is_terminal();
    let pb = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} {wide_msg}",
    ) {
        pb.set_style(style);
    }
    let mut last_done = u64::MAX;
    let mut on_progress = |p: Progress| {
        pb.set_length(p.total);
        pb.set_position(p.done);
        if !tty && p.done != last_done {
            // No bar in logs: one line per finished step.
            eprintln!("[{}/{}] {}", p.done, p.total, p.message);
            last_done = p.done;
        }
        pb.set_message(p.message);
    };
    let report = bench::run(&cfg, &mut on_progress);
    pb.finish_and_clear();
    let report = report?;

    println!();
    print_table(&report);
    println!();
    print_roofline(&report);

    let json = serde_json::to_string_pretty(&report)
        .map_err(|e| io_err(&a.json, std::io::Error::other(e)))?;
    write_file(&a.json, json.as_bytes())?;
    println!("wrote JSON: {}", display_path(&a.json));
    let svg = a
        .svg
        .clone()
        .unwrap_or_else(|| a.json.with_extension("svg"));
    let svg_text = chart::render(&report).map_err(|e| io_err(&svg, std::io::Error::other(e)))?;
    write_file(&svg, svg_text.as_bytes())?;
    println!("wrote SVG:  {}", display_path(&svg));

    let bad: Vec<_> = report.results.iter().filter(|r| !r.verified).collect();
    println!(
        "{} results, {} verified, in {:.1} s",
        report.results.len(),
        report.results.len() - bad.len(),
        started.elapsed().as_secs_f64()
    );
    if bad.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for r in &bad {
            eprintln!(
                "FAIL: {} {}/{} lf {} {}: {}",
                r.scheme,
                r.key_type,
                r.value_type,
                r.load_factor,
                r.op,
                r.failures.join("; ")
            );
        }
        eprintln!("warpmap: {} results failed verification", bad.len());
        Ok(ExitCode::from(1))
    }
}

fn host_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// The path as given, and absolute in parentheses when relative.
fn display_path(p: &Path) -> String {
    if p.is_absolute() {
        return p.display().to_string();
    }
    match std::env::current_dir() {
        Ok(d) => format!("{} ({})", p.display(), d.join(p).display()),
        Err(_) => p.display().to_string(),
    }
}

fn print_table(report: &Report) {
    println!(
        "{:<10} {:<7} {:>7} {:>11} {:>5} {:<10} {:>9} {:>10} {:>9} verified",
        "scheme", "backend", "k/v B", "n", "lf", "op", "G ops/s", "median ms", "roofline"
    );
    let mut prev: Option<(usize, usize, u64)> = None;
    for r in &report.results {
        let group = (r.key_bytes, r.value_bytes, r.load_factor.to_bits());
        if prev.is_some() && prev != Some(group) {
            println!();
        }
        prev = Some(group);
        let ratio = r
            .roofline_ratio
            .map(|x| format!("{x:.3}"))
            .unwrap_or_else(|| "-".into());
        println!(
            "{:<10} {:<7} {:>7} {:>11} {:>5} {:<10} {:>9.3} {:>10.3} {:>9} {}",
            r.scheme,
            r.backend.to_string(),
            format!("{}/{}", r.key_bytes, r.value_bytes),
            r.n,
            format!("{:.2}", r.load_factor),
            r.op.name(),
            r.gops,
            r.median_ms,
            ratio,
            if r.verified { "PASS" } else { "FAIL" }
        );
    }
}

fn print_roofline(report: &Report) {
    let rf = &report.roofline;
    match (rf.gather8_gops, rf.cas8_gops, rf.copy_gbps) {
        (Some(g), Some(c), Some(b)) => println!(
            "roofline: gather8 {g:.2} G/s, cas8 {c:.2} G/s, copy {b:.1} GB/s ({} u64 table, {} ops, median of {})",
            rf.table_elements.unwrap_or(0),
            rf.ops.unwrap_or(0),
            rf.runs.unwrap_or(0)
        ),
        _ => println!(
            "roofline: not measured ({} backend){}",
            report.backend,
            report.backend_note.as_deref().map(|n| format!(": {n}")).unwrap_or_default()
        ),
    }
}

fn info_cmd() -> Result<()> {
    println!("warpmap {} (commit {COMMIT})", env!("CARGO_PKG_VERSION"));
    match Gpu::default_gpu() {
        Ok(g) => {
            let (major, minor) = g.arch();
            let free = g
                .free_memory()
                .map(|f| format!(", {:.1} GiB free", f as f64 / (1u64 << 30) as f64))
                .unwrap_or_default();
            println!("GPU:          {}", g.name());
            println!(
                "  arch:       sm_{} (compute capability {major}.{minor})",
                g.sm()
            );
            println!("  SMs:        {}", g.sm_count());
            println!(
                "  memory:     {:.1} GiB{free}",
                g.total_memory() as f64 / (1u64 << 30) as f64
            );
            println!(
                "  L2:         {:.1} MiB",
                g.l2_bytes() as f64 / (1u64 << 20) as f64
            );
        }
        Err(e) => {
            println!("GPU:          none: {e}");
            println!("              (warpmap uses its CPU backend; `warpmap bench` measures it)");
        }
    }
    match warpmap::device::nvrtc() {
        Ok(n) => {
            let from = n
                .dir
                .as_ref()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|| "the system loader's search path".into());
            println!("NVRTC:        {}.{} from {from}", n.version.0, n.version.1);
        }
        Err(e) => {
            println!("NVRTC:        missing");
            for line in e.to_string().lines() {
                println!("              {}", line.trim());
            }
        }
    }
    match warpmap::device::cache::dir() {
        Some(d) => {
            let state = if d.is_dir() {
                let n = std::fs::read_dir(&d)
                    .map(|rd| {
                        rd.flatten()
                            .filter(|e| e.path().extension().is_some_and(|x| x == "cubin"))
                            .count()
                    })
                    .unwrap_or(0);
                format!("{n} cached modules")
            } else {
                "not created yet".to_string()
            };
            println!("kernel cache: {} ({state})", d.display());
        }
        None => println!("kernel cache: disabled (WARPMAP_CACHE_DIR=off, or no HOME)"),
    }
    println!("host:         {} threads", host_threads());
    Ok(())
}
