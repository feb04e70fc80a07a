//! The out-of-core commands: `warpmap hostbound` (the bound of random record accesses into
//! mapped host memory, per size and host-page kind) and `warpmap outofcore` (a Stadium table
//! with host buckets larger than the GPU's memory, built and queried on the device).

use crate::{display_path, io_err, print_gpu_header, write_file, COMMIT};
use clap::{ArgAction, Args};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;
use warpmap::device::{transparent_huge_pages, DEFAULT_HOST_PAGES};
use warpmap::{Error, Gpu, HostPages, Result};
use warpmap_bench::experiments::stadium_outofcore::{self as outofcore, OutOfCoreConfig};
use warpmap_bench::harness::roofline::measure_host_bound;
use warpmap_bench::utc_now;

const GIB: f64 = (1u64 << 30) as f64;

/// Parses `pinned`, `huge` or a comma-separated list of them.
fn parse_pages_list(s: &str) -> std::result::Result<Vec<HostPages>, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let p: HostPages = if part == "both" {
            v.extend(HostPages::ALL);
            continue;
        } else {
            part.parse()?
        };
        if !v.contains(&p) {
            v.push(p);
        }
    }
    if v.is_empty() {
        return Err("no host page kind given (pinned, huge or both)".into());
    }
    Ok(v)
}

/// A parsed `--pages` list.
#[derive(Clone, Debug)]
pub struct PagesList(pub Vec<HostPages>);

fn parse_pages(s: &str) -> std::result::Result<PagesList, String> {
    parse_pages_list(s).map(PagesList)
}

/// The kernel's THP mode, for people.
fn thp_line() -> String {
    match transparent_huge_pages() {
        Some(mode) => format!(
            "{mode} (/sys/kernel/mm/transparent_hugepage/enabled){}",
            if mode == "never" {
                ": huge pages will not be granted"
            } else {
                ""
            }
        ),
        None => "absent: this kernel has no transparent huge pages (no \
                 /sys/kernel/mm/transparent_hugepage/enabled)"
            .into(),
    }
}

fn open_gpu() -> Result<std::sync::Arc<Gpu>> {
    Gpu::default_gpu()
}

/// `warpmap hostbound`.
#[derive(Args, Debug)]
pub struct HostBoundArgs {
    /// Host buffer sizes in GiB, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "GIB,...",
        default_value = "0.0625,1,4,16"
    )]
    pub sizes_gib: Vec<f64>,
    /// Bytes per record (a multiple of 4): 8 for the 8-byte bound, 136 for the outofcore
    /// table's u64 keys with 128-byte values.
    #[arg(long, value_name = "BYTES", default_value_t = 8)]
    pub record_bytes: usize,
    /// Host page kinds, comma-separated: pinned (cuMemHostAlloc), huge (mmap + MADV_HUGEPAGE +
    /// cuMemHostRegister), or both.
    #[arg(long, value_name = "pinned,huge", default_value = "pinned,huge", value_parser = parse_pages)]
    pub pages: PagesList,
    /// Random accesses per timed kernel, as a power of two (at most one per record).
    #[arg(long, value_name = "N", default_value_t = 22)]
    pub ops_log2: u32,
    /// Timed runs per kernel after one warm-up; the median counts.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Where to write the JSON report.
    #[arg(long, value_name = "PATH", default_value = "hostbound.json")]
    pub json: PathBuf,
}

/// `warpmap hostbound`: the table on stdout, JSON on disk; exit 1 if any measurement failed.
pub fn hostbound_cmd(a: HostBoundArgs) -> Result<ExitCode> {
    if a.sizes_gib.iter().any(|g| !(g.is_finite() && *g > 0.0)) {
        return Err(Error::invalid(format!(
            "--sizes-gib {:?}: every size must be a positive number of GiB",
            a.sizes_gib
        )));
    }
    if a.record_bytes == 0 || !a.record_bytes.is_multiple_of(4) {
        return Err(Error::invalid(format!(
            "--record-bytes {}: a positive multiple of 4",
            a.record_bytes
        )));
    }
    if a.ops_log2 > 32 || a.runs == 0 {
        return Err(Error::invalid("--ops-log2 at most 32, --runs at least 1"));
    }
    let gpu = open_gpu()?;
    let started = Instant::now();
    let date = utc_now();
    let thp = transparent_huge_pages();
    let mem = outofcore::host_memory();
    print_gpu_header(&gpu);
    println!("THP:     {}", thp_line());
    println!(
        "host:    MemTotal {:.1} GiB, MemAvailable {:.1} GiB (may grow on VMs)",
        mem.mem_total.unwrap_or(0) as f64 / GIB,
        mem.mem_available.unwrap_or(0) as f64 / GIB
    );
    let method = format!(
        "random {}-byte record writes, then reads, from a kernel into host memory mapped into \
         the GPU, at indices hashed from the operation number; min(2^{}, records) accesses per \
         kernel, one warm-up then {} timed runs between CUDA events, the median counts. \
         pinned: cuMemHostAlloc(DEVICEMAP|PORTABLE); huge: mmap aligned to 2 MiB + \
         madvise(MADV_HUGEPAGE) + every page touched + cuMemHostRegister(DEVICEMAP|PORTABLE). \
         huge_page_bytes: AnonHugePages of the buffer in /proc/self/smaps after the runs.",
        a.record_bytes, a.ops_log2, a.runs
    );
    println!("method:  {method}");
    println!();
    println!(
        "{:>9} {:<7} {:>9} {:>9} {:>8} {:>12}  note",
        "GiB", "pages", "write G/s", "read G/s", "alloc s", "huge pages"
    );
    let mut rows = Vec::new();
    let mut failed = 0;
    for &g in &a.sizes_gib {
        let bytes = (g * GIB) as u64;
        for &pages in &a.pages.0 {
            let records = bytes / a.record_bytes as u64;
            let ops = (1u64 << a.ops_log2).min(records.max(1));
            match measure_host_bound(&gpu, bytes, a.record_bytes, ops, a.runs, pages) {
                Ok(b) => {
                    let huge = b
                        .huge_page_bytes
                        .map(|h| format!("{:.1}%", 100.0 * h as f64 / b.bytes.max(1) as f64))
                        .unwrap_or_else(|| "?".into());
                    let note = match (pages, b.huge_page_bytes) {
                        (HostPages::Huge, Some(0)) => "THP not granted: 4 KiB pages",
                        (HostPages::Huge, None) => "smaps unreadable: THP unknown",
                        (HostPages::Huge, Some(h)) if h < b.bytes => "THP granted in part",
                        (HostPages::Huge, Some(_)) => "THP granted",
                        _ => "",
                    };
                    println!(
                        "{:>9.4} {:<7} {:>9.4} {:>9.4} {:>8.2} {:>12}  {note}",
                        b.bytes as f64 / GIB,
                        pages,
                        b.write_gops,
                        b.read_gops,
                        b.alloc_ms / 1e3,
                        huge
                    );
                    let mut v = serde_json::to_value(&b)
                        .map_err(|e| io_err(&a.json, std::io::Error::other(e)))?;
                    v["note"] = note.into();
                    rows.push(v);
                }
                Err(e) => {
                    failed += 1;
                    println!("{g:>9.4} {:<7} failed: {e}", pages);
                    rows.push(serde_json::json!({
                        "bytes": bytes,
                        "record_bytes": a.record_bytes,
                        "pages": pages,
                        "error": e.to_string(),
                    }));
                }
            }
        }
    }
    let json = serde_json::json!({
        "command": "hostbound",
        "device": gpu.name(),
        "arch": format!("sm_{}", gpu.sm()),
        "gpu_total_memory": gpu.total_memory(),
        "commit": COMMIT,
        "date": date,
        "method": method,
        "thp_mode": thp,
        "host_memory": mem,
        "default_host_pages": DEFAULT_HOST_PAGES,
        "rows": rows,
        "elapsed_s": started.elapsed().as_secs_f64(),
    });
    let text = serde_json::to_string_pretty(&json)
        .map_err(|e| io_err(&a.json, std::io::Error::other(e)))?;
    write_file(&a.json, text.as_bytes())?;
    println!();
    println!("wrote JSON: {}", display_path(&a.json));
    println!(
        "{} measurements, {failed} failed, in {:.1} s",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `warpmap outofcore`.
#[derive(Args, Debug)]
pub struct OutOfCoreArgs {
    /// Small sizes that run anywhere in seconds: --host-gib 0.25, batches and lookups of 2^20
    /// (unless given).
    #[arg(long)]
    pub quick: bool,
    /// GiB of host buckets (default 90: more than an 80 GB GPU; quick: 0.25).
    #[arg(long, value_name = "GIB")]
    pub host_gib: Option<f64>,
    /// Value width in bytes: 8, 32, 64, 128 or 256 (keys are u64).
    #[arg(long, value_name = "BYTES", default_value_t = 128)]
    pub value_bytes: usize,
    /// Keys inserted over buckets, in (0, 1].
    #[arg(long, value_name = "LF", default_value_t = 0.85)]
    pub load_factor: f64,
    /// Keys per insert batch as a power of two (default 26; quick 20).
    #[arg(long, value_name = "N")]
    pub batch_log2: Option<u32>,
    /// Queries per lookup run as a power of two (default 26; quick 20).
    #[arg(long, value_name = "N")]
    pub query_log2: Option<u32>,
    /// Timed lookup runs of each kind (present, absent).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Stadium ticket size in bits: 1, 2, 4 or 8.
    #[arg(long, value_name = "BITS", default_value_t = 8)]
    pub ticket_bits: u32,
    /// Host pages of the buckets: pinned or huge.
    #[arg(long, value_name = "pinned|huge", default_value_t = DEFAULT_HOST_PAGES)]
    pub pages: HostPages,
    /// The key sequence's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// The memory guard: refuse when the host buckets plus 8 GiB of headroom exceed the
    /// cgroup's memory limit or --host-ram-gib (`--check-memory false` to skip it).
    /// MemTotal/MemAvailable are printed, never used to refuse: on VMs they grow as memory is
    /// used.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = ArgAction::Set)]
    pub check_memory: bool,
    /// The machine's RAM in GiB, as you know it, for the memory guard.
    #[arg(long, value_name = "GIB")]
    pub host_ram_gib: Option<f64>,
    /// Print the sizes and the memory guard's verdict, then exit without a GPU.
    #[arg(long)]
    pub dry_run: bool,
    /// Where to write the JSON report.
    #[arg(long, value_name = "PATH", default_value = "outofcore.json")]
    pub json: PathBuf,
}

impl OutOfCoreArgs {
    /// The library configuration these flags ask for.
    pub fn config(&self) -> Result<OutOfCoreConfig> {
        let d = OutOfCoreConfig::default();
        let gib = self
            .host_gib
            .unwrap_or(if self.quick { 0.25 } else { 90.0 });
        if !(gib.is_finite() && gib > 0.0) {
            return Err(Error::invalid(format!(
                "--host-gib {gib}: a positive number"
            )));
        }
        let small = |v: Option<u32>| v.unwrap_or(if self.quick { 20 } else { 26 });
        Ok(OutOfCoreConfig {
            host_bytes: (gib * GIB) as u64,
            value_bytes: self.value_bytes,
            load_factor: self.load_factor,
            batch_log2: small(self.batch_log2),
            query_log2: small(self.query_log2),
            runs: self.runs,
            ticket_bits: self.ticket_bits,
            pages: self.pages,
            seed: self.seed.unwrap_or(d.seed),
            commit: COMMIT.to_string(),
        })
    }
}

/// `warpmap outofcore`: progress on stdout, JSON on disk; exit 1 if verification failed.
pub fn outofcore_cmd(a: OutOfCoreArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let cfg = a.config()?;
    let s = outofcore::sizes(&cfg)?;
    println!("commit:  {COMMIT}");
    println!("method:  {}", outofcore::method(&cfg, &s));
    println!(
        "sizes:   {} buckets x {} B = {:.2} GiB host buckets, board {:.3} GiB, {} keys in {} \
         batches, {} queries per lookup run, device batch buffers {:.2} GiB",
        s.buckets,
        s.record_bytes,
        s.host_bucket_bytes as f64 / GIB,
        s.board_bytes as f64 / GIB,
        s.keys,
        s.batches,
        s.queries,
        s.batch_device_bytes as f64 / GIB
    );
    println!("THP:     {}", thp_line());
    let hint = a.host_ram_gib.map(|g| (g * GIB) as u64);
    let mem = outofcore::host_memory();
    let guard = outofcore::check_host_memory(
        s.host_bucket_bytes,
        hint,
        outofcore::cgroup_memory_limit(),
        mem,
    );
    match guard {
        Ok(lines) => lines.iter().for_each(|l| println!("{l}")),
        Err(e) if !a.check_memory => println!("memory guard skipped (--check-memory false): {e}"),
        Err(e) => return Err(e),
    }
    if a.dry_run {
        println!("dry run: nothing measured");
        return Ok(ExitCode::SUCCESS);
    }
    // Fail on an unusable output folder now rather than after the run.
    if let Some(parent) = a.json.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| io_err(parent, e))?;
    }
    let gpu = open_gpu()?;
    println!(
        "device:  {} sm_{} ({} SMs, {:.2} GiB)",
        gpu.name(),
        gpu.sm(),
        gpu.sm_count(),
        gpu.total_memory() as f64 / GIB
    );
    let mut say = |line: String| println!("[{:7.1} s] {line}", started.elapsed().as_secs_f64());
    let r = outofcore::run(&gpu, &cfg, &mut say)?;
    println!();
    println!(
        "host buckets {:.2} GiB = {:.3}x the GPU's {:.2} GiB ({}); board {:.3} GiB; {} pages, \
         huge pages {}",
        r.sizes.host_bucket_bytes as f64 / GIB,
        r.host_over_gpu_memory,
        r.gpu_total_memory as f64 / GIB,
        if r.exceeds_gpu_memory {
            "larger than the GPU's memory"
        } else {
            "fits the GPU's memory"
        },
        r.sizes.board_bytes as f64 / GIB,
        r.pages,
        r.huge_page_bytes
            .map(|h| format!("{:.2} GiB", h as f64 / GIB))
            .unwrap_or_else(|| "unknown".into())
    );
    println!(
        "insert:    {} keys, {:.4} G/s over the kernels ({:.1} s of kernels, {:.1} s wall); \
         batches {:.4}..{:.4} G/s",
        r.stored,
        r.insert_gops,
        r.insert_kernel_s,
        r.insert_wall_s,
        r.batches
            .iter()
            .map(|b| b.gops)
            .fold(f64::INFINITY, f64::min),
        r.batches.iter().map(|b| b.gops).fold(0.0, f64::max),
    );
    for l in [&r.find_hit, &r.find_miss] {
        println!(
            "{:<10} {} queries, {:.4} G/s (median of {}), {} wrong found, {} wrong values",
            format!("{}:", l.op),
            l.queries,
            l.gops,
            l.ms.len(),
            l.wrong_found,
            l.wrong_value
        );
    }
    println!(
        "load factor {:.4}; table made in {:.1} s; {} in {:.1} s",
        r.load_factor,
        r.table_alloc_s,
        if r.verified {
            "VERIFIED"
        } else {
            "FAILED verification"
        },
        r.elapsed_s
    );
    let text =
        serde_json::to_string_pretty(&r).map_err(|e| io_err(&a.json, std::io::Error::other(e)))?;
    write_file(&a.json, text.as_bytes())?;
    println!("wrote JSON: {}", display_path(&a.json));
    Ok(if r.verified {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_lists() {
        assert_eq!(
            parse_pages_list("pinned,huge").unwrap(),
            vec![HostPages::Pinned, HostPages::Huge]
        );
        assert_eq!(parse_pages_list("both").unwrap(), HostPages::ALL.to_vec());
        assert_eq!(
            parse_pages_list("huge,huge").unwrap(),
            vec![HostPages::Huge]
        );
        assert!(parse_pages_list("").is_err());
        assert!(parse_pages_list("tiny").is_err());
    }

    fn outofcore_args(args: &[&str]) -> std::result::Result<OutOfCoreArgs, clap::Error> {
        use clap::Parser;
        let mut v = vec!["warpmap", "outofcore"];
        v.extend_from_slice(args);
        match crate::Cli::try_parse_from(v)?.command {
            crate::Command::Outofcore(a) => Ok(*a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn outofcore_flags() {
        let c = outofcore_args(&[]).unwrap().config().unwrap();
        assert_eq!(c.host_bytes, 90 << 30);
        assert_eq!((c.value_bytes, c.ticket_bits, c.batch_log2), (128, 8, 26));
        assert_eq!(c.pages, DEFAULT_HOST_PAGES);
        let a = outofcore_args(&["--quick"]).unwrap();
        assert!(a.check_memory);
        let c = a.config().unwrap();
        assert_eq!(
            (c.host_bytes, c.batch_log2, c.query_log2),
            (1 << 28, 20, 20)
        );
        let a = outofcore_args(&[
            "--host-gib",
            "95.5",
            "--pages",
            "huge",
            "--load-factor",
            "0.9",
            "--batch-log2",
            "24",
            "--ticket-bits",
            "4",
            "--check-memory",
            "false",
            "--host-ram-gib",
            "125",
        ])
        .unwrap();
        assert!(!a.check_memory);
        let c = a.config().unwrap();
        assert_eq!(c.host_bytes, (95.5 * GIB) as u64);
        assert_eq!(c.pages, HostPages::Huge);
        assert_eq!((c.load_factor, c.batch_log2, c.ticket_bits), (0.9, 24, 4));
        assert!(outofcore_args(&["--pages", "tiny"]).is_err());
        assert!(outofcore_args(&["--host-gib=-1"])
            .unwrap()
            .config()
            .is_err());
        // Refused by the library's sizes.
        let c = outofcore_args(&["--value-bytes", "12"])
            .unwrap()
            .config()
            .unwrap();
        assert!(outofcore::sizes(&c).is_err());
    }

    #[test]
    fn hostbound_flags() {
        use clap::Parser;
        let a = match crate::Cli::try_parse_from(["warpmap", "hostbound"])
            .unwrap()
            .command
        {
            crate::Command::Hostbound(a) => a,
            _ => unreachable!(),
        };
        assert_eq!(a.sizes_gib, vec![0.0625, 1.0, 4.0, 16.0]);
        assert_eq!(a.pages.0, HostPages::ALL.to_vec());
        assert_eq!(a.record_bytes, 8);
        let a = match crate::Cli::try_parse_from([
            "warpmap",
            "hostbound",
            "--sizes-gib",
            "0.5,90",
            "--pages",
            "huge",
            "--record-bytes",
            "136",
        ])
        .unwrap()
        .command
        {
            crate::Command::Hostbound(a) => a,
            _ => unreachable!(),
        };
        assert_eq!(a.sizes_gib, vec![0.5, 90.0]);
        assert_eq!(a.pages.0, vec![HostPages::Huge]);
        assert_eq!(a.record_bytes, 136);
    }
}
