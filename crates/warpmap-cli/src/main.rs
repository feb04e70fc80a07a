//! `warpmap`: the command-line tool of the warpmap GPU hash tables.
//!
//! - `warpmap bench [--quick] [--cpu] [--json PATH] [--svg PATH]`: the in-run roofline and every
//!   bulk operation of each table at several load factors, verified; a table on stdout, JSON and
//!   an SVG chart on disk. Exit code 1 if any result failed verification. More: `--keys-log2 N`
//!   (n = 2^N keys and a new table per load factor), `--group-sizes`, `--distribution
//!   unique|zipf|both`, `--types u32,u64,u32u64,u128`, `--ops`, `--preset
//!   fig7|fig8|compare|stadium|fig15|fig19`, `--scheme warpdrive|stadium` with `--ticket-bits
//!   1,2,4,8` and `--location device,host`, `--ops mixed` with `--slice-log2` (the mixed-batch
//!   experiment), `--dry-run`. `--scheme slab` with `--preset slab-fig4|slab-fig5|slab-fig6|
//!   slab-fig7|slab-alloc|slab-compare` runs the slab hash's benchmarks instead (`slab.rs`):
//!   a line per cell, `<preset>.json`. `--scheme dycuckoo` with `--preset dycuckoo-static|
//!   dycuckoo-dynamic|dycuckoo-compare` runs DyCuckoo's (`dycuckoo.rs`).
//! - `warpmap hostbound [--sizes-gib 0.0625,1,4,16] [--record-bytes 8] [--pages pinned,huge]
//!   [--json PATH]`: random record writes and reads from a kernel into mapped host memory of
//!   each size and page kind (the out-of-core bound), and whether huge pages were granted.
//! - `warpmap outofcore [--host-gib 90] [--quick] [--pages pinned|huge] [--json PATH] ...`: a
//!   Stadium table with host buckets larger than the GPU's memory, built and queried on the
//!   device, verified.
//! - `warpmap info`: the GPU, NVRTC and the kernel cache, or why each is missing.

mod chart;
mod crossover;
mod dycuckoo;
mod lanes;
mod ooc;
mod sharded;
mod slab;
mod slab_chart;
mod workload;

use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use warpmap::table::warpdrive::OverflowFilter;
use warpmap::table::Backend;
use warpmap::Location;
use warpmap::{Error, Gpu, Result};
use warpmap_bench::{
    BenchConfig, Distribution, KvType, Op, Progress, Report, Scheme, TwoLevelShape, ZipfLoad,
};

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
    Bench(Box<BenchArgs>),
    /// Measure the out-of-core bound: random record writes and reads into mapped host memory,
    /// per size and host-page kind (pinned, huge); print a table, write JSON.
    Hostbound(ooc::HostBoundArgs),
    /// Build and query a Stadium table with host buckets larger than the GPU's memory (90 GiB
    /// by default; --quick: 0.25 GiB); print progress and figures, write JSON.
    Outofcore(Box<ooc::OutOfCoreArgs>),
    /// Show the GPU, NVRTC and the kernel cache (or why they are missing).
    Info,
    /// Stadium's insert strategies: the hybrid threshold (Fig. 13) and Stash vs clStash vs
    /// hybrid (Fig. 18).
    #[command(subcommand)]
    Lanes(lanes::LanesCommand),
    /// The tables at work: TPC-H join and group-bys (`tpch --sf N`), k-mer counting (`kmer`),
    /// on the GPU (columns resident, or from host Arrow arrays) and the CPU backend, every
    /// answer checked; JSON and SVG.
    #[command(subcommand)]
    Workload(workload::WorkloadCommand),
}

#[derive(Args)]
struct BenchArgs {
    /// Tiny sizes and 3 runs: a smoke test of a few seconds.
    #[arg(long)]
    quick: bool,
    /// Use the CPU backend even if a GPU is present.
    #[arg(long)]
    cpu: bool,
    /// Where to write the JSON report (default bench-results.json; slab presets
    /// `<preset>.json`).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Where to write the SVG chart (default: the JSON path with .svg).
    #[arg(long, value_name = "PATH")]
    svg: Option<PathBuf>,
    /// Table slots as a power of two (default: 26 on a GPU, 22 on the CPU; quick: 18).
    #[arg(long, value_name = "LOG2")]
    slots_log2: Option<u32>,
    /// Timed runs per measurement (default 5; quick 3).
    #[arg(long)]
    runs: Option<usize>,
    /// Load factors, comma-separated, each in (0, 1] (default 0.5,0.8,0.9,0.95).
    #[arg(long, value_delimiter = ',', value_name = "LF,...")]
    load_factors: Option<Vec<f64>>,
    /// Fixed keys: n = 2^N keys per load factor and a new table of ceil(n / lf) slots per load
    /// factor (instead of --slots-log2's fixed table). At most 31; capped at 22 on the CPU.
    #[arg(long, value_name = "N")]
    keys_log2: Option<u32>,
    /// WarpDrive group sizes, comma-separated, of 1,2,4,8,16,32 (default: the table's default);
    /// a table per group size.
    #[arg(long, value_delimiter = ',', value_name = "G,...")]
    group_sizes: Option<Vec<u32>>,
    /// Key distribution: unique, zipf (s = 1 + 1e-6, duplicates) or both (default unique).
    #[arg(long, value_name = "unique|zipf|both", value_parser = parse_distributions)]
    distribution: Option<DistList>,
    /// Key/value types, comma-separated: u32 (u32->u32), u64 (u64->u64), u32u64 (u32->u64;
    /// also u32/u64, u32->u64), u128 (u128->u64; also u128/u64, u128->u64), and fig19's
    /// b32u64, b64u64, u64u32, u64u128, u64b32, u64b64, u64b128, u64b256 (bN = [u8; N]).
    /// Default: u32,u64 (or the preset's); the others run only when listed.
    #[arg(long, value_delimiter = ',', value_name = "TYPE,...")]
    types: Option<Vec<KvType>>,
    /// Operations with rows, comma-separated, of insert,find_hit,find_half,find_miss,contains,
    /// erase (default all but find_half; insert always runs, the others need it). find_half:
    /// half the queries present, half absent. Or mixed, alone: the mixed vs phase-separated
    /// batch experiment (concurrency efficiency; needs --keys-log2; see --preset fig15).
    #[arg(long, value_delimiter = ',', value_name = "OP,...")]
    ops: Option<Vec<Op>>,
    /// A preset: fig7 (paper Fig. 7: group sizes x load factors 0.4-0.99, 2^27 unique u32
    /// keys), fig8 (the same with Zipf keys) or compare (u32 and u64 at 0.5/0.8/0.9/0.95,
    /// 2^27 keys, insert/find_hit/find_miss) or stadium (Stadium hashing: tickets 1/2/4/8,
    /// buckets on the device and in host memory, u32 at 0.5-0.95, 2^27 keys, 2^25 for host
    /// buckets) or fig15 (Stadium paper Fig. 15: mixed vs phase-separated insert/find batches,
    /// concurrency efficiency, u32, 2^24 keys (host 2^22), tickets 1/2/4/8, device and host
    /// buckets, slices of 2^17 and 2^21 ops, WarpDrive alongside) or fig19 (Stadium paper
    /// Fig. 19: key sizes 4-64 B and value sizes 4-256 B, insert/find_hit/erase at load factor
    /// 0.85, 2^24 keys (host 2^22), tickets 1/8, device and host buckets). Other flags
    /// override its values. The slab hash's (paper SVI; a line per cell, JSON
    /// `<preset>.json`): slab-fig4 (build, search hit/miss vs memory utilisation 0.2-0.9, n =
    /// 2^22 and 2^24), slab-fig5 (the same vs n = 2^18-2^26 at 0.6), slab-fig6 (incremental
    /// batches of 2^15/2^16/2^17 up to 2^24 vs rebuilding WarpDrive after each), slab-fig7
    /// (concurrent mixes G0/G1/G2 in batches of 2^20 vs initial utilisation), slab-alloc
    /// (SlabAlloc's rate), slab-compare (the target cells at 2^24 and utilisation 0.615).
    /// DyCuckoo's (a line per cell, JSON `<preset>.json`): dycuckoo-static (build, find
    /// hit/miss, erase vs fill factor 0.5-0.95, keys not placed), dycuckoo-dynamic (batches of
    /// inserts, finds, erases, replayed swapped; vs WarpDrive rebuilt on resize),
    /// dycuckoo-compare (the target cells), dycuckoo-sweep (the dynamic workload vs alpha,
    /// beta, r and the batch size, one at a time). The two-level cuckoo table's (--scheme two_level):
    /// two-level-compare (the target cells: u32 at 0.8/0.95, 2^27 keys, shapes 3x512 and
    /// 4x384), two-level-buckets (vs bucket shape 3x64-4x384 at 0.7, 2^26 keys),
    /// two-level-load (vs load 0.3-0.9, the paper's REG_LOAD chart), two-level-crossover (the
    /// GPU table with and without transfers vs its CPU twin and CpuTable on all cores and
    /// hashbrown on one, n = 2^10-2^28 (--sizes-log2), where the GPU starts to pay; JSON
    /// `two-level-crossover.json`; runs without a GPU too).
    #[arg(long, value_name = "NAME", value_parser = slab::parse_preset)]
    preset: Option<slab::PresetArg>,
    /// Zipf exponent s (default 1.000001).
    #[arg(long, value_name = "S")]
    zipf_s: Option<f64>,
    /// Zipf universe: 2^N ranks, mapped to keys by keygen's bijection (default 31).
    #[arg(long, value_name = "N")]
    zipf_universe_log2: Option<u32>,
    /// With --keys-log2, a Zipf set's load factor: distinct (occupancy: capacity =
    /// distinct / lf, as in the paper's Fig. 8) or inserted (capacity = n / lf).
    #[arg(long, value_name = "distinct|inserted")]
    zipf_load: Option<ZipfLoad>,
    /// The base seed of the key sets.
    #[arg(long)]
    seed: Option<u64>,
    /// Print the plan and its estimate, then exit without measuring.
    #[arg(long)]
    dry_run: bool,
    /// WarpDrive's overflow filter: auto (bits per window to fit a quarter of L2), off (the
    /// paper's exact scheme), or 1, 2, 4, 8 bits per window.
    #[arg(long, value_name = "auto|off|BITS", value_parser = parse_filter)]
    overflow_filter: Option<OverflowFilter>,
    /// The GPU table: warpdrive (default), stadium, slab (the slab hash's presets, see
    /// --preset; slab-compare when none is given) or dycuckoo (its presets; dycuckoo-compare
    /// when none is given) or two_level (the two-level cuckoo table; see --two-level-shapes and
    /// the two-level presets). The CPU backend (--cpu, or no GPU)
    /// measures CpuTable for warpdrive, stadium and two_level; slab needs a GPU.
    #[arg(long, value_name = "warpdrive|stadium|slab|dycuckoo|two_level")]
    scheme: Option<Scheme>,
    /// Stadium ticket sizes in bits, comma-separated, of 1,2,4,8 (default 8); a table per size.
    #[arg(long, value_delimiter = ',', value_name = "BITS,...")]
    ticket_bits: Option<Vec<u32>>,
    /// Stadium bucket locations: device (in-core), host (out-of-core: pinned host memory), or
    /// both, comma-separated (default device); a table per location.
    #[arg(long, value_name = "device,host", value_parser = parse_locations)]
    location: Option<LocList>,
    /// Fixed keys, Stadium host buckets: n = 2^min(keys-log2, N) unique keys (random accesses
    /// over the bus are slow; the stadium preset uses 25). --scheme sharded: the host-sided
    /// rows' 2^N pairs in all (default 2^keys-log2 per GPU, times the GPUs).
    #[arg(long, value_name = "N")]
    host_keys_log2: Option<u32>,
    /// The mixed experiment (--ops mixed, --preset fig15): operations per slice (inserts +
    /// finds) as powers of two, comma-separated (default 17,21; quick 12); a row per size.
    #[arg(long, value_delimiter = ',', value_name = "LOG2,...")]
    slice_log2: Option<Vec<u32>>,
    /// Slab presets: memory utilisations, comma-separated, each below 0.9375 (slab-fig4 and
    /// slab-fig7: the sweep; the others: the one target).
    #[arg(long, value_delimiter = ',', value_name = "U,...")]
    utilizations: Option<Vec<f64>>,
    /// Slab presets: sizes as powers of two, comma-separated (slab-fig4: n per sweep;
    /// slab-fig5: the sizes; slab-fig6, slab-compare: the final keys; slab-fig7: n0;
    /// slab-alloc: allocations). --keys-log2 N is the same as --sizes-log2 N.
    #[arg(long, value_delimiter = ',', value_name = "LOG2,...")]
    sizes_log2: Option<Vec<u32>>,
    /// Slab presets: batch sizes as powers of two (slab-fig6: the incremental batches;
    /// slab-fig7, slab-compare: operations per concurrent batch).
    #[arg(long, value_delimiter = ',', value_name = "LOG2,...")]
    batch_log2: Option<Vec<u32>>,
    /// two_level bucket shapes, comma-separated, each DxSLOTS (hash functions 2-4 x slots per
    /// subtable, the build in shared memory: at most 48 KiB), e.g. 3x512,4x384 (default 3x512
    /// or the preset's); a table per shape.
    #[arg(long, value_delimiter = ',', value_name = "DxSLOTS,...", value_parser = parse_shape)]
    two_level_shapes: Option<Vec<TwoLevelShape>>,
    /// --scheme sharded: GPUs (0..N), one rank each (default 1).
    #[arg(long, value_name = "N")]
    gpus: Option<usize>,
    /// --scheme sharded: shards per GPU, comma-separated, a sharded table per entry (default
    /// 1,2,4,8).
    #[arg(long, value_delimiter = ',', value_name = "M,...")]
    shards_per_gpu: Option<Vec<usize>>,
    /// --scheme sharded: how ranks exchange parts: peer (none moves: the shards' kernels read
    /// and answer every rank's parts in place over the GPUs' link; default), copy
    /// (device-to-device copies), nccl, or nccl-group (a communicator from an NCCL unique id
    /// and the protocol of a table over processes, in one process); the NCCL ones need the CLI
    /// built with warpmap's `nccl` feature.
    #[arg(long, value_name = "peer|copy|nccl|nccl-group")]
    exchange: Option<String>,
    /// --scheme sharded: the host pipeline's chunk, keys per rank (default: 2^24 per four shards
    /// of a rank).
    #[arg(long, value_name = "KEYS")]
    pipeline_batch: Option<usize>,

    /// DyCuckoo presets: the static cells' fill factors, comma-separated, each below 0.99
    /// (dycuckoo-static: 0.5-0.95; dycuckoo-compare: 0.8,0.9).
    #[arg(long, value_delimiter = ',', value_name = "F,...")]
    fill_factors: Option<Vec<f64>>,
    /// DyCuckoo presets: insert batches of the dynamic workload before its replay (default 32).
    #[arg(long, value_name = "N")]
    batches: Option<usize>,
    /// DyCuckoo presets: r, erases per insert in a dynamic batch (default 0.4).
    #[arg(long, value_name = "R")]
    ratio: Option<f64>,
    /// DyCuckoo presets: the dynamic workload's lower fill bound alpha (default 0.4).
    #[arg(long, value_name = "A")]
    alpha: Option<f64>,
    /// DyCuckoo presets: the dynamic workload's upper fill bound beta (default 0.9).
    #[arg(long, value_name = "B")]
    beta: Option<f64>,
}

/// A parsed `--location` value.
#[derive(Clone, Debug)]
struct LocList(Vec<Location>);

fn parse_locations(s: &str) -> std::result::Result<LocList, String> {
    warpmap_bench::parse_locations(s).map(LocList)
}

fn parse_shape(s: &str) -> std::result::Result<TwoLevelShape, String> {
    s.parse()
}

fn parse_filter(s: &str) -> std::result::Result<OverflowFilter, String> {
    match s {
        "auto" => Ok(OverflowFilter::Auto),
        "off" | "0" => Ok(OverflowFilter::Off),
        b => match b.parse::<u32>() {
            Ok(b @ (1 | 2 | 4 | 8)) => Ok(OverflowFilter::Bits(b)),
            _ => Err(format!("'{s}' is not auto, off, 1, 2, 4 or 8")),
        },
    }
}

/// A parsed `--distribution` value.
#[derive(Clone, Debug)]
struct DistList(Vec<Distribution>);

fn parse_distributions(s: &str) -> std::result::Result<DistList, String> {
    Distribution::parse_list(s).map(DistList)
}

impl BenchArgs {
    /// The library configuration these flags ask for.
    fn config(&self) -> BenchConfig {
        let d = BenchConfig::default();
        BenchConfig {
            quick: self.quick,
            force_cpu: self.cpu,
            commit: COMMIT.to_string(),
            slots_log2: self.slots_log2,
            runs: self.runs,
            load_factors: self.load_factors.clone(),
            seed: self.seed.unwrap_or(d.seed),
            keys_log2: self.keys_log2,
            group_sizes: self.group_sizes.clone(),
            distributions: self.distribution.as_ref().map(|l| l.0.clone()),
            types: self.types.clone(),
            ops: self.ops.clone(),
            preset: match self.preset {
                Some(slab::PresetArg::Bench(p)) => Some(p),
                _ => None,
            },
            zipf_s: self.zipf_s.unwrap_or(d.zipf_s),
            zipf_universe_log2: self.zipf_universe_log2,
            zipf_load: self.zipf_load.unwrap_or(d.zipf_load),
            overflow_filter: self.overflow_filter.unwrap_or_default(),
            scheme: self.scheme,
            ticket_bits: self.ticket_bits.clone(),
            locations: self.location.as_ref().map(|l| l.0.clone()),
            host_keys_log2: self.host_keys_log2,
            slice_log2: self.slice_log2.clone(),
            two_level_shapes: self.two_level_shapes.clone(),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bench(a) => bench_cmd(*a),
        Command::Hostbound(a) => ooc::hostbound_cmd(a),
        Command::Outofcore(a) => ooc::outofcore_cmd(*a),
        Command::Info => info_cmd().map(|()| ExitCode::SUCCESS),
        Command::Lanes(c) => lanes::run(c),
        Command::Workload(c) => workload::run(c),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("warpmap: error: {e}");
            ExitCode::from(1)
        }
    }
}

/// The first lines of a GPU command's output: the device and the source revision.
fn print_gpu_header(gpu: &Gpu) {
    println!(
        "device:  {} sm_{} ({} SMs)",
        gpu.name(),
        gpu.sm(),
        gpu.sm_count()
    );
    println!("commit:  {COMMIT}");
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

/// The head of a preset's output: the device and commit (only the commit on a dry run), the
/// method, the plan's summary and notes, and the estimate of its time (`seconds` on an H100
/// host) and peak device memory. Returns whether to measure (false on a dry run, which says so).
fn print_plan(
    dry_run: bool,
    method: &str,
    summary: &str,
    notes: &[String],
    (seconds, device_bytes): (f64, u64),
) -> Result<bool> {
    if dry_run {
        println!("commit:  {COMMIT}");
    } else {
        print_gpu_header(&*Gpu::default_gpu()?);
    }
    println!("method:  {method}");
    for (i, line) in summary.lines().enumerate() {
        println!("{}{line}", if i == 0 { "plan:    " } else { "         " });
    }
    for n in notes {
        println!("         note: {n}");
    }
    println!(
        "estimate: about {seconds:.0} s on an H100 host, {:.1} GiB of device memory at the peak",
        device_bytes as f64 / (1u64 << 30) as f64
    );
    if dry_run {
        println!("dry run: nothing measured");
    }
    Ok(!dry_run)
}

/// Writes a preset's report as pretty JSON to `json` and, when given, its chart (`svg`: the
/// path and the rendered chart, or why it could not be rendered).
fn write_report<R: serde::Serialize>(
    report: &R,
    json: &Path,
    svg: Option<(&Path, std::result::Result<String, String>)>,
) -> Result<()> {
    let text =
        serde_json::to_string_pretty(report).map_err(|e| io_err(json, std::io::Error::other(e)))?;
    write_file(json, text.as_bytes())?;
    println!("wrote JSON: {}", display_path(json));
    if let Some((path, chart)) = svg {
        let chart = chart.map_err(|e| io_err(path, std::io::Error::other(e)))?;
        write_file(path, chart.as_bytes())?;
        println!("wrote SVG:  {}", display_path(path));
    }
    Ok(())
}

/// Prints how many of a preset's `rows` (`noun`: "cells", "rows") verified in `wall_s` seconds
/// and each failed row (`failure`: its line and what failed); exit code 1 when any failed.
fn verdict<R>(
    rows: &[R],
    verified: impl Fn(&R) -> bool,
    failure: impl Fn(&R) -> (String, String),
    noun: &str,
    wall_s: f64,
) -> ExitCode {
    let failed: Vec<(String, String)> = rows.iter().filter(|r| !verified(r)).map(failure).collect();
    println!(
        "{} {noun}, {} verified, in {wall_s:.1} s",
        rows.len(),
        rows.len() - failed.len()
    );
    if failed.is_empty() {
        return ExitCode::SUCCESS;
    }
    for (line, why) in &failed {
        eprintln!("FAIL: {line}: {why}");
    }
    eprintln!("warpmap: {} {noun} failed verification", failed.len());
    ExitCode::from(1)
}

/// Makes the folders of `paths` (an unusable output folder fails before a run, not after).
fn create_parents(paths: &[&Path]) -> Result<()> {
    for p in paths {
        if let Some(parent) = p.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
        }
    }
    Ok(())
}

fn bench_cmd(a: BenchArgs) -> Result<ExitCode> {
    if crossover::wants_crossover(&a) {
        return crossover::crossover_cmd(&a);
    }
    if dycuckoo::wants_dycuckoo(&a) {
        return dycuckoo::dycuckoo_cmd(&a);
    }
    if sharded::wants_sharded(&a) {
        return sharded::sharded_cmd(&a);
    }
    if slab::wants_slab(&a) {
        return slab::slab_cmd(&a);
    }
    let started = Instant::now();
    let json = a
        .json
        .clone()
        .unwrap_or_else(|| PathBuf::from("bench-results.json"));
    // The library opens the GPU once per process; asking here only decides what to print first.
    // Only "no driver or no GPU" falls back to the CPU; a driver that is present but fails
    // (Error::DriverInit, ...) is an error the user must see, not a silent CPU run.
    let backend = match (a.cpu, Gpu::default_gpu()) {
        (true, _) | (false, Err(warpmap::Error::NoDevice { .. })) => Backend::Cpu,
        (false, Ok(_)) => Backend::Gpu,
        (false, Err(e)) => return Err(e),
    };
    let device = match (backend, Gpu::default_gpu()) {
        (Backend::Gpu, Ok(g)) => format!("{} sm_{} ({} SMs)", g.name(), g.sm(), g.sm_count()),
        _ => format!("CPU ({} threads)", host_threads()),
    };
    let cfg = a.config();
    // Bad flags fail here, before anything runs.
    let plan = warpmap_bench::resolve(&cfg, backend)?;
    println!("device:  {device}");
    println!("commit:  {COMMIT}");
    println!("method:  {}", plan.method());
    if backend == Backend::Cpu {
        match (a.cpu, Gpu::default_gpu()) {
            (true, _) => println!("backend: cpu (forced by --cpu)"),
            (false, Err(e)) => println!("backend: cpu, because no GPU was found: {e}"),
            _ => {}
        }
    }
    for (i, line) in plan.summary().lines().enumerate() {
        println!("{}{line}", if i == 0 { "plan:    " } else { "         " });
    }
    if a.dry_run {
        println!("dry run: nothing measured");
        return Ok(ExitCode::SUCCESS);
    }

    // Fail on an unusable output folder now rather than after the run.
    let svg = a.svg.clone().unwrap_or_else(|| json.with_extension("svg"));
    create_parents(&[&json, &svg])?;

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
    let report = warpmap_bench::run(&cfg, &mut on_progress);
    pb.finish_and_clear();
    let report = report?;

    println!();
    print_table(&report);
    println!();
    print_roofline(&report);
    print_host_bounds(&report);

    let text = serde_json::to_string_pretty(&report)
        .map_err(|e| io_err(&json, std::io::Error::other(e)))?;
    write_file(&json, text.as_bytes())?;
    println!("wrote JSON: {}", display_path(&json));
    let svg = a.svg.clone().unwrap_or_else(|| json.with_extension("svg"));
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
                "FAIL: {} {}/{} {}{} lf {} {}: {}",
                r.scheme,
                r.key_type,
                r.value_type,
                r.distribution,
                match (r.group_size, r.location, r.ticket_bits) {
                    (Some(g), _, _) => format!(" g {g}"),
                    (None, Some(l), Some(t)) => format!(" {l} T {t}"),
                    _ => String::new(),
                },
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

/// Which optional columns a report's table needs: group size and distribution where they vary,
/// the distinct count where Zipf keys were measured.
fn optional_columns(report: &Report) -> (bool, bool, bool) {
    let mut groups: Vec<Option<u32>> = report.results.iter().map(|r| r.group_size).collect();
    groups.sort_unstable();
    groups.dedup();
    let mut dists: Vec<Distribution> = Vec::new();
    for r in &report.results {
        if !dists.contains(&r.distribution) {
            dists.push(r.distribution);
        }
    }
    let distinct = report.results.iter().any(|r| r.distinct.is_some());
    (groups.len() > 1, dists.len() > 1, distinct)
}

fn table_text(report: &Report) -> String {
    let (show_g, show_dist, show_distinct) = optional_columns(report);
    let mut out = String::new();
    let mut head = format!("{:<10} {:<7} {:>7}", "scheme", "backend", "k/v B");
    if show_dist {
        head += &format!(" {:<7}", "dist");
    }
    if show_g {
        head += &format!(" {:>3}", "g");
    }
    head += &format!(" {:>11}", "n");
    if show_distinct {
        head += &format!(" {:>11}", "distinct");
    }
    let stadium = report.results.iter().any(|r| r.ticket_bits.is_some());
    if stadium {
        head += &format!(" {:<6} {:>2}", "bucket", "T");
    }
    let two_level = report.results.iter().any(|r| r.two_level.is_some());
    if two_level {
        head += &format!(
            " {:<7} {:>5} {:>6} {:>8} {:>6}",
            "shape", "fill", "B/key", "rebuilds", "splits"
        );
    }
    head += &format!(
        " {:>5} {:<10} {:>9} {:>10} {:>9}",
        "lf", "op", "G ops/s", "median ms", "roofline"
    );
    if stadium {
        head += &format!(" {:>7}", "bound");
    }
    let mixed = report.results.iter().any(|r| r.slice_ops.is_some());
    if mixed {
        head += &format!(" {:>8} {:>10} {:>8}", "slice", "sep. ms", "conc.eff");
    }
    head += " verified";
    out += &head;
    out.push('\n');
    let mut prev = None;
    for r in &report.results {
        let group = (
            r.key_bytes,
            r.value_bytes,
            r.distribution,
            r.group_size.or(r.ticket_bits),
            r.two_level,
            r.location,
            r.load_factor.to_bits(),
            r.scheme.as_str(),
        );
        if prev.is_some() && prev.as_ref() != Some(&group) {
            out.push('\n');
        }
        prev = Some(group);
        let ratio = r
            .roofline_ratio
            .map(|x| format!("{x:.3}"))
            .unwrap_or_else(|| "-".into());
        let mut line = format!(
            "{:<10} {:<7} {:>7}",
            r.scheme,
            r.backend.to_string(),
            format!("{}/{}", r.key_bytes, r.value_bytes)
        );
        if show_dist {
            line += &format!(" {:<7}", r.distribution.name());
        }
        if show_g {
            line += &format!(
                " {:>3}",
                r.group_size
                    .map(|g| g.to_string())
                    .unwrap_or_else(|| "-".into())
            );
        }
        line += &format!(" {:>11}", r.n);
        if show_distinct {
            line += &format!(
                " {:>11}",
                r.distinct
                    .map(|d| d.to_string())
                    .unwrap_or_else(|| "-".into())
            );
        }
        if stadium {
            line += &format!(
                " {:<6} {:>2}",
                r.location.unwrap_or("-"),
                r.ticket_bits
                    .map(|t| t.to_string())
                    .unwrap_or_else(|| "-".into())
            );
        }
        if two_level {
            let counter = |name: &str| {
                r.counters
                    .get(name)
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into())
            };
            line += &format!(
                " {:<7} {:>5} {:>6.2} {:>8} {:>6}",
                r.two_level
                    .map(|s| s.to_string())
                    .unwrap_or_else(|| "-".into()),
                r.fill
                    .map(|f| format!("{f:.3}"))
                    .unwrap_or_else(|| "-".into()),
                r.memory_bytes as f64 / r.n.max(1) as f64,
                counter("rebuilds"),
                counter("splits")
            );
        }
        line += &format!(
            " {:>5} {:<10} {:>9.3} {:>10.3} {:>9}",
            format!("{:.2}", r.load_factor),
            r.op.name(),
            r.gops,
            r.median_ms,
            ratio,
        );
        if stadium {
            line += &format!(
                " {:>7}",
                r.bound_ratio
                    .map(|x| format!("{x:.3}"))
                    .unwrap_or_else(|| "-".into())
            );
        }
        if mixed {
            let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
            line += &format!(
                " {:>8} {:>10} {:>8}",
                opt(r.slice_ops.map(|s| s.to_string())),
                opt(r.separated_ms.map(|x| format!("{x:.3}"))),
                opt(r.concurrency_efficiency.map(|x| format!("{x:.3}")))
            );
        }
        line += if r.verified { " PASS" } else { " FAIL" };
        out += &line;
        out.push('\n');
    }
    out
}

fn print_table(report: &Report) {
    print!("{}", table_text(report));
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

fn print_host_bounds(report: &Report) {
    for b in &report.roofline.host_bounds {
        println!(
            "host bound: {:.1} MiB of {}-byte records in mapped host memory ({} pages): random \
             writes {:.3} G/s, random reads {:.3} G/s ({} ops, median of {})",
            b.bytes as f64 / (1u64 << 20) as f64,
            b.record_bytes,
            b.pages,
            b.write_gops,
            b.read_gops,
            b.ops,
            b.runs
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use warpmap::table::warpdrive::GROUP_SIZES;
    use warpmap_bench::{resolve, GPU_MAX_KEYS_LOG2};

    /// `warpmap bench --help`.
    fn bench_help() -> String {
        let mut help = Vec::new();
        <Cli as clap::CommandFactory>::command()
            .find_subcommand_mut("bench")
            .unwrap()
            .write_long_help(&mut help)
            .unwrap();
        String::from_utf8(help).unwrap()
    }

    fn bench_args(args: &[&str]) -> std::result::Result<BenchArgs, clap::Error> {
        let mut v = vec!["warpmap", "bench"];
        v.extend_from_slice(args);
        match Cli::try_parse_from(v)?.command {
            Command::Bench(a) => Ok(*a),
            _ => unreachable!("the arguments name bench"),
        }
    }

    #[test]
    fn default_flags_give_the_default_config() {
        let c = bench_args(&[]).unwrap().config();
        let d = BenchConfig::default();
        assert_eq!(c.keys_log2, None);
        assert_eq!(c.group_sizes, None);
        assert_eq!(c.distributions, None);
        assert_eq!(c.types, None);
        assert_eq!(c.ops, None);
        assert_eq!(c.preset, None);
        assert_eq!(c.seed, d.seed);
        assert_eq!(c.zipf_s, d.zipf_s);
        assert_eq!(c.zipf_load, ZipfLoad::Distinct);
    }

    #[test]
    fn parses_the_new_flags() {
        let a = bench_args(&[
            "--keys-log2",
            "20",
            "--group-sizes",
            "1,4,32",
            "--distribution",
            "both",
            "--types",
            "u64",
            "--ops",
            "insert,find-hit,find_miss",
            "--load-factors",
            "0.4,0.99",
            "--zipf-load",
            "inserted",
            "--seed",
            "7",
            "--dry-run",
        ])
        .unwrap();
        assert!(a.dry_run);
        let c = a.config();
        assert_eq!(c.keys_log2, Some(20));
        assert_eq!(c.group_sizes, Some(vec![1, 4, 32]));
        assert_eq!(
            c.distributions,
            Some(vec![Distribution::Unique, Distribution::Zipf])
        );
        assert_eq!(c.types, Some(vec![KvType::U64]));
        assert_eq!(c.ops, Some(vec![Op::Insert, Op::FindHit, Op::FindMiss]));
        assert_eq!(c.load_factors, Some(vec![0.4, 0.99]));
        assert_eq!(c.zipf_load, ZipfLoad::Inserted);
        assert_eq!(c.seed, 7);
        let p = resolve(&c, Backend::Gpu).unwrap();
        assert_eq!(p.sets(), 3 * 2 * 2);
        assert_eq!(
            bench_args(&["--distribution", "zipf"])
                .unwrap()
                .config()
                .distributions,
            Some(vec![Distribution::Zipf])
        );
    }

    #[test]
    fn parses_the_extra_types() {
        for (arg, want) in [
            ("u32u64,u128", vec![KvType::U32U64, KvType::U128U64]),
            ("u32/u64,u128/u64", vec![KvType::U32U64, KvType::U128U64]),
            ("u32->u64,u128->u64", vec![KvType::U32U64, KvType::U128U64]),
            (
                "u32,u64,u32u64,u128",
                vec![KvType::U32, KvType::U64, KvType::U32U64, KvType::U128U64],
            ),
        ] {
            let c = bench_args(&["--types", arg]).unwrap().config();
            assert_eq!(c.types, Some(want.clone()), "{arg}");
            let p = resolve(&c, Backend::Gpu).unwrap();
            assert_eq!(p.types, want);
        }
        // A preset keeps its types unless --types is given.
        let c = bench_args(&["--preset", "compare", "--types", "u128"])
            .unwrap()
            .config();
        assert_eq!(
            resolve(&c, Backend::Gpu).unwrap().types,
            vec![KvType::U128U64]
        );
        // The JSON names are the names the flag accepts.
        for t in KvType::EVERY {
            assert_eq!(serde_json::to_value(t).unwrap(), t.name());
            assert_eq!(t.name().parse::<KvType>().unwrap(), t);
        }
    }

    #[test]
    fn parses_the_stadium_flags() {
        let c = bench_args(&[
            "--scheme",
            "stadium",
            "--ticket-bits",
            "1,2,4,8",
            "--location",
            "device,host",
            "--host-keys-log2",
            "24",
            "--ops",
            "insert,find_half",
        ])
        .unwrap()
        .config();
        assert_eq!(c.scheme, Some(Scheme::Stadium));
        assert_eq!(c.ticket_bits, Some(vec![1, 2, 4, 8]));
        assert_eq!(c.locations, Some(vec![Location::Device, Location::Host]));
        assert_eq!(c.host_keys_log2, Some(24));
        assert_eq!(c.ops, Some(vec![Op::Insert, Op::FindHalf]));
        let p = resolve(&c, Backend::Gpu).unwrap();
        assert_eq!(p.variants().len(), 8);
        assert_eq!(bench_args(&[]).unwrap().config().scheme, None);
        assert!(bench_args(&["--scheme", "cuckoo"]).is_err());
        assert!(bench_args(&["--location", "disk"]).is_err());
        assert!(bench_args(&["--ticket-bits", "x"]).is_err());
        // Parsed, then refused by the plan.
        let bad = |args: &[&str]| resolve(&bench_args(args).unwrap().config(), Backend::Gpu);
        assert!(bad(&["--scheme", "stadium", "--ticket-bits", "3"]).is_err());
        // --cpu with host buckets: measured on CpuTable, with notes that say so.
        let p = resolve(
            &bench_args(&["--scheme", "stadium", "--location", "host", "--cpu"])
                .unwrap()
                .config(),
            Backend::Cpu,
        )
        .unwrap();
        assert!(
            p.summary().contains("note: --location host"),
            "{}",
            p.summary()
        );
        let p = resolve(
            &bench_args(&["--preset", "stadium"]).unwrap().config(),
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.scheme, Scheme::Stadium);
        assert_eq!(p.sets(), 32);
    }

    #[test]
    fn table_shows_stadium_columns() {
        let r = chart::tests::fake_stadium_report();
        let t = table_text(&r);
        let head = t.lines().next().unwrap();
        assert!(head.contains("bucket") && head.contains("bound"), "{head}");
        assert!(t
            .lines()
            .any(|l| l.contains("stadium") && l.contains(" host ")));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["scheme"], "stadium");
        assert_eq!(json["locations"][1], "host");
        assert_eq!(json["results"][0]["ticket_bits"], 1);
        assert!(json["results"][0]["bound_ratio"].is_number());
        let host = json["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["location"] == "host")
            .unwrap();
        for f in [
            "ticket_bits",
            "bound_ratio",
            "bound_gops",
            "host_memory_bytes",
        ] {
            assert!(host[f].is_number(), "host row lacks {f}: {host}");
        }
        let wd = serde_json::to_value(chart::tests::fake_report()).unwrap();
        let row = &wd["results"][0];
        for f in ["location", "ticket_bits", "bound_ratio", "bound_gops"] {
            assert!(row.get(f).is_none(), "warpdrive row has {f}");
        }
        assert!(wd.get("ticket_bits").is_none() && wd["roofline"].get("host_bounds").is_none());
        // WarpDrive tables keep their columns.
        let plain = table_text(&chart::tests::fake_report());
        assert!(!plain.lines().next().unwrap().contains("bucket"));
    }

    #[test]
    fn table_shows_unequal_widths() {
        let mut r = chart::tests::fake_report();
        for x in r.results.iter_mut().filter(|x| x.key_bytes == 8) {
            x.key_bytes = 16;
            x.value_bytes = 8;
            x.key_type = "u128";
            x.value_type = "u64";
        }
        let t = table_text(&r);
        assert!(t.lines().any(|l| l.contains(" 16/8 ")), "{t}");
        assert!(t.lines().any(|l| l.contains(" 4/4 ")), "{t}");
    }

    #[test]
    fn rejects_bad_flag_values() {
        assert!(bench_args(&["--ops", "insert,delete"]).is_err());
        assert!(bench_args(&["--types", "u16"]).is_err());
        assert!(bench_args(&["--types", "u32,u128/u128"]).is_err());
        assert!(bench_args(&["--distribution", "normal"]).is_err());
        assert!(bench_args(&["--preset", "fig9"]).is_err());
        assert!(bench_args(&["--zipf-load", "half"]).is_err());
        // Values clap accepts but the plan refuses.
        let bad = |args: &[&str]| resolve(&bench_args(args).unwrap().config(), Backend::Gpu);
        assert!(bad(&["--group-sizes", "3"]).is_err());
        assert!(bad(&["--load-factors", "0,0.5"]).is_err());
        let too_many = (GPU_MAX_KEYS_LOG2 + 1).to_string();
        assert!(bad(&["--keys-log2", &too_many]).is_err());
    }

    #[test]
    fn presets_expand_through_the_flags() {
        let p = resolve(
            &bench_args(&["--preset", "fig7"]).unwrap().config(),
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.keys_log2, Some(27));
        assert_eq!(p.group_sizes, GROUP_SIZES.to_vec());
        assert_eq!(p.load_factors.len(), 8);
        assert_eq!(p.ops, vec![Op::Insert, Op::FindHit]);
        assert_eq!(p.types, vec![KvType::U32]);
        let p = resolve(
            &bench_args(&["--preset", "fig8", "--distribution", "both"])
                .unwrap()
                .config(),
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.distributions, Distribution::ALL.to_vec());
        assert_eq!(p.sets(), 96);
        let p = resolve(
            &bench_args(&["--preset", "compare", "--group-sizes", "8"])
                .unwrap()
                .config(),
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.group_sizes.len(), 2);
        assert!(p.group_sizes.contains(&8));
        assert_eq!(p.types, KvType::ALL.to_vec());
        // On the CPU: capped, with a note.
        let p = resolve(
            &bench_args(&["--preset", "compare", "--cpu"])
                .unwrap()
                .config(),
            Backend::Cpu,
        )
        .unwrap();
        assert_eq!(p.keys_log2, Some(22));
        assert!(!p.notes.is_empty());
        assert!(p.summary().contains("note: keys-log2 27 capped at 22"));
    }

    #[test]
    fn table_columns_follow_the_report() {
        let plain = chart::tests::fake_report();
        let t = table_text(&plain);
        let head = t.lines().next().unwrap();
        assert!(!head.contains("dist") && !head.contains(" g ") && !head.contains("distinct"));
        let fig = chart::tests::fake_fig_report();
        let t = table_text(&fig);
        let head = t.lines().next().unwrap();
        assert!(head.contains("dist") && head.contains("distinct"), "{head}");
        assert!(t.lines().any(|l| l.contains("zipf") && l.contains(" 32 ")));
        // The JSON carries the new fields.
        let json = serde_json::to_value(&fig).unwrap();
        let row = &json["results"][json["results"].as_array().unwrap().len() - 1];
        assert_eq!(row["distribution"], "zipf");
        assert_eq!(row["group_size"], 32);
        assert_eq!(row["distinct"], 400);
        assert_eq!(json["keys_log2"], 27);
        assert_eq!(json["distributions"][1], "zipf");
        assert_eq!(json["zipf"]["load"], "distinct");
    }

    #[test]
    fn parses_the_fig15_and_fig19_presets() {
        let plan = |args: &[&str]| resolve(&bench_args(args).unwrap().config(), Backend::Gpu);
        let p = plan(&["--preset", "fig15"]).unwrap();
        assert_eq!(p.ops, vec![Op::Mixed]);
        assert_eq!(p.slice_log2, vec![17, 21]);
        assert_eq!(p.scheme, Scheme::Stadium);
        assert_eq!(p.keys_log2, Some(24));
        assert!(p.estimate(16).seconds < 180.0);
        let p = plan(&[
            "--preset",
            "fig15",
            "--slice-log2",
            "16,20,16",
            "--ticket-bits",
            "8",
        ])
        .unwrap();
        assert_eq!(p.slice_log2, vec![16, 20]);
        assert_eq!(p.ticket_bits, vec![8]);
        let p = plan(&["--preset", "fig19"]).unwrap();
        assert_eq!(p.types, KvType::FIG19.to_vec());
        assert_eq!(p.load_factors, vec![0.85]);
        assert_eq!(p.ops, vec![Op::Insert, Op::FindHit, Op::Erase]);
        assert!(p.estimate(16).seconds < 180.0);
        let p = plan(&[
            "--preset",
            "fig19",
            "--ticket-bits",
            "1,2,4,8",
            "--location",
            "host",
        ])
        .unwrap();
        assert_eq!(p.variants().len(), 4);
        // The mixed experiment through the flags.
        let c = bench_args(&[
            "--scheme",
            "stadium",
            "--ops",
            "mixed",
            "--keys-log2",
            "20",
            "--slice-log2",
            "18",
        ])
        .unwrap()
        .config();
        assert_eq!(c.ops, Some(vec![Op::Mixed]));
        assert_eq!(c.slice_log2, Some(vec![18]));
        assert!(resolve(&c, Backend::Gpu).unwrap().mixed());
        // Refused with a clear message.
        assert!(plan(&["--ops", "mixed,insert", "--keys-log2", "20"]).is_err());
        assert!(plan(&["--ops", "mixed"]).is_err());
        assert!(bench_args(&["--slice-log2", "x"]).is_err());
        // The new types parse by name.
        let c = bench_args(&["--types", "u64b256,b64u64,u64u32"])
            .unwrap()
            .config();
        assert_eq!(
            c.types,
            Some(vec![KvType::U64B256, KvType::B64U64, KvType::U64U32])
        );
        assert!(bench_args(&["--types", "u64b512"]).is_err());
        // --help tells the truth about them.
        let help = bench_help();
        for word in ["fig15", "fig19", "--slice-log2", "mixed", "u64b256"] {
            assert!(help.contains(word), "--help lacks {word}");
        }
    }

    #[test]
    fn parses_the_dycuckoo_presets() {
        use warpmap_bench::{resolve_dycuckoo, DyCuckooPreset};
        for p in DyCuckooPreset::ALL {
            let a = bench_args(&["--scheme", "dycuckoo", "--preset", p.name()]).unwrap();
            assert!(dycuckoo::wants_dycuckoo(&a) && !slab::wants_slab(&a));
            let (c, notes) = dycuckoo::config(&a).unwrap();
            assert_eq!(c.preset, p);
            assert!(notes.is_empty());
            resolve_dycuckoo(&c).unwrap();
        }
        // --scheme dycuckoo alone: the target cells.
        let a = bench_args(&["--scheme", "dycuckoo"]).unwrap();
        assert_eq!(
            dycuckoo::config(&a).unwrap().0.preset,
            DyCuckooPreset::DycuckooCompare
        );
        let a = bench_args(&[
            "--preset",
            "dycuckoo-dynamic",
            "--batch-log2",
            "18",
            "--batches",
            "4",
            "--ratio",
            "0.2",
            "--alpha",
            "0.3",
            "--beta",
            "0.85",
            "--utilizations",
            "0.5",
        ])
        .unwrap();
        let (c, notes) = dycuckoo::config(&a).unwrap();
        let p = resolve_dycuckoo(&c).unwrap();
        assert_eq!(
            (p.batch_log2, p.batches, p.ratio),
            (Some(18), Some(4), Some(0.2))
        );
        assert_eq!((p.alpha, p.beta), (Some(0.3), Some(0.85)));
        assert!(notes.iter().any(|n| n.contains("--utilizations")));
        let a = bench_args(&[
            "--preset",
            "dycuckoo-static",
            "--keys-log2",
            "20",
            "--fill-factors",
            "0.7,0.9",
        ])
        .unwrap();
        let p = resolve_dycuckoo(&dycuckoo::config(&a).unwrap().0).unwrap();
        assert_eq!((p.size_log2, p.fills.clone()), (Some(20), vec![0.7, 0.9]));
        let err = |args: &[&str]| dycuckoo::config(&bench_args(args).unwrap()).unwrap_err();
        assert!(err(&["--scheme", "dycuckoo", "--preset", "slab-fig4"])
            .to_string()
            .contains("dycuckoo-static"));
        assert!(err(&["--scheme", "slab", "--preset", "dycuckoo-static"])
            .to_string()
            .contains("drop --scheme slab"));
        assert!(err(&["--scheme", "dycuckoo", "--cpu"])
            .to_string()
            .contains("GPU only"));
    }

    #[test]
    fn parses_the_slab_presets() {
        use warpmap_bench::{resolve_slab, SlabPreset};
        let a = bench_args(&["--preset", "slab-fig4"]).unwrap();
        assert!(slab::wants_slab(&a));
        assert_eq!(a.config().preset, None, "not a preset of the bench loop");
        let (c, notes) = slab::config(&a).unwrap();
        assert_eq!(c.preset, SlabPreset::SlabFig4);
        assert!(notes.is_empty());
        let p = resolve_slab(&c).unwrap();
        assert_eq!(p.sizes_log2, vec![22, 24]);
        // --scheme slab alone: the target cells.
        let a = bench_args(&["--scheme", "slab"]).unwrap();
        assert!(slab::wants_slab(&a));
        assert_eq!(slab::config(&a).unwrap().0.preset, SlabPreset::SlabCompare);
        assert!(!slab::wants_slab(
            &bench_args(&["--preset", "fig7"]).unwrap()
        ));
        // Every slab preset by name, and its flags.
        for p in SlabPreset::ALL {
            let a = bench_args(&["--scheme", "slab", "--preset", p.name()]).unwrap();
            assert_eq!(slab::config(&a).unwrap().0.preset, p);
        }
        let a = bench_args(&[
            "--preset",
            "slab-fig7",
            "--utilizations",
            "0.5,0.7",
            "--sizes-log2",
            "20",
            "--batch-log2",
            "16",
            "--runs",
            "2",
            "--seed",
            "9",
            "--types",
            "u64",
            "--quick",
        ])
        .unwrap();
        let (c, _) = slab::config(&a).unwrap();
        assert_eq!(c.utilizations, Some(vec![0.5, 0.7]));
        assert_eq!(c.sizes_log2, Some(vec![20]));
        assert_eq!(c.batch_log2, Some(vec![16]));
        assert_eq!((c.runs, c.seed, c.quick), (Some(2), 9, true));
        assert_eq!(c.types, Some(vec![KvType::U64]));
        let p = resolve_slab(&c).unwrap();
        assert_eq!(
            (p.sizes_log2.clone(), p.batch_log2.clone()),
            (vec![20], vec![16])
        );
        // --keys-log2 is a size.
        let a = bench_args(&["--preset", "slab-compare", "--keys-log2", "20"]).unwrap();
        assert_eq!(slab::config(&a).unwrap().0.sizes_log2, Some(vec![20]));
        // Flags of the other schemes: ignored, with notes.
        let a = bench_args(&[
            "--preset",
            "slab-fig5",
            "--load-factors",
            "0.5",
            "--svg",
            "x",
        ])
        .unwrap();
        let notes = slab::config(&a).unwrap().1;
        assert!(
            notes.iter().any(|n| n.contains("--load-factors")),
            "{notes:?}"
        );
        assert!(!notes.iter().any(|n| n.contains("--svg")), "{notes:?}");
        // Refused: a bench preset with --scheme slab, another scheme with a slab preset, the
        // CPU, an unknown preset, values the plan refuses.
        let err = |args: &[&str]| slab::config(&bench_args(args).unwrap()).unwrap_err();
        assert!(err(&["--scheme", "slab", "--preset", "fig7"])
            .to_string()
            .contains("slab-fig4"));
        assert!(err(&["--scheme", "stadium", "--preset", "slab-fig4"])
            .to_string()
            .contains("--scheme stadium"));
        assert!(err(&["--scheme", "slab", "--cpu"])
            .to_string()
            .contains("GPU"));
        let e = bench_args(&["--preset", "slab-fig9"])
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("slab-fig4"), "{e}");
        let c = slab::config(
            &bench_args(&["--preset", "slab-fig4", "--utilizations", "0.99"]).unwrap(),
        )
        .unwrap()
        .0;
        assert!(resolve_slab(&c).is_err());
        // The JSON path: <preset>.json unless given; the bench loop keeps its default.
        assert_eq!(bench_args(&["--preset", "slab-fig6"]).unwrap().json, None);
        // --help names them.
        let help = bench_help();
        for word in [
            "slab-fig4",
            "slab-compare",
            "--utilizations",
            "--sizes-log2",
            "--batch-log2",
        ] {
            assert!(help.contains(word), "--help lacks {word}");
        }
    }

    #[test]
    fn table_shows_mixed_columns() {
        let r = chart::tests::fake_mixed_report();
        let t = table_text(&r);
        let head = t.lines().next().unwrap();
        assert!(
            head.contains("conc.eff") && head.contains("slice"),
            "{head}"
        );
        assert!(t
            .lines()
            .any(|l| l.contains(" mixed ") && l.contains("1.250")));
        let json = serde_json::to_value(&r).unwrap();
        let row = &json["results"][0];
        assert_eq!(row["op"], "mixed");
        assert!(row["concurrency_efficiency"].is_number());
        assert!(row["separated_ms"].is_number());
        assert_eq!(row["slice_ops"], 131072);
        assert_eq!(json["slice_log2"][0], 17);
        // Other rows lack the mixed fields.
        let wd = serde_json::to_value(chart::tests::fake_report()).unwrap();
        assert!(wd["results"][0].get("concurrency_efficiency").is_none());
        assert!(wd.get("slice_log2").is_none());
    }
}
