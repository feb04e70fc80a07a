//! `warpmap bench --scheme sharded --gpus N [--shards-per-gpu M,...]`: the sharded table against
//! the bare WarpDrive table in one run (`warpmap_bench::run_sharded`): device-sided insert and
//! find per shard count, the host-sided insert and the host-to-device copy bandwidth, and the
//! issue's targets beside their figures. Writes the JSON report (default `sharded.json`).
//! Exit code 1 if a row failed verification.

use crate::{create_parents, verdict, write_report, BenchArgs, COMMIT};
use std::path::PathBuf;
use std::process::ExitCode;
use warpmap::sharded::Transport;
use warpmap::{Error, Result};
use warpmap_bench::experiments::sharded::SHARDED_METHOD;
use warpmap_bench::{Scheme, ShardedBenchConfig, ShardedRow};

/// Whether the flags ask for the sharded run.
pub(crate) fn wants_sharded(a: &BenchArgs) -> bool {
    a.scheme == Some(Scheme::Sharded)
}

fn config(a: &BenchArgs) -> Result<ShardedBenchConfig> {
    let d = ShardedBenchConfig::default();
    let load_factor = match a.load_factors.as_deref() {
        None => d.load_factor,
        Some([lf]) => *lf,
        Some(_) => return Err(Error::invalid("--scheme sharded takes one load factor")),
    };
    let transport = match a.exchange.as_deref() {
        None | Some("peer") => Transport::Peer,
        Some("copy") => Transport::Copy,
        Some("nccl") => Transport::Nccl,
        Some("nccl-group") => Transport::NcclGroup,
        Some(x) => {
            return Err(Error::invalid(format!(
                "--exchange {x}: peer, copy, nccl or nccl-group"
            )))
        }
    };
    Ok(ShardedBenchConfig {
        gpus: a.gpus.unwrap_or(d.gpus),
        shards_per_gpu: a.shards_per_gpu.clone().unwrap_or(d.shards_per_gpu),
        keys_log2: a
            .keys_log2
            .unwrap_or(if a.quick { 20 } else { d.keys_log2 }),
        load_factor,
        runs: a.runs.unwrap_or(if a.quick { 3 } else { d.runs }),
        transport,
        commit: COMMIT.to_string(),
        seed: a.seed.unwrap_or(d.seed),
        host_sided: true,
        pipeline_batch: a.pipeline_batch,
        strong_keys_log2: None,
        host_keys_log2: a.host_keys_log2,
    })
}

fn row_line(r: &ShardedRow) -> String {
    format!(
        "{:<9} gpus {} shards {:<3} {:<6} {:<6} {:>8.3} G/s {:>9.3} ms{}{} {}",
        r.scheme,
        r.gpus,
        r.shards,
        match (r.memory, r.scaling) {
            (Some("pinned"), _) => "host/pinned".to_string(),
            (_, Some(s)) => format!("local/{s}"),
            _ => r.sided.to_string(),
        },
        r.op,
        r.gops,
        r.median_ms,
        r.of_bare
            .map(|x| format!("  {x:.3} of bare"))
            .unwrap_or_default(),
        r.gbs.map(|x| format!("  {x:.2} GB/s")).unwrap_or_default(),
        if r.verified { "PASS" } else { "FAIL" }
    )
}

/// `warpmap bench --scheme sharded`.
pub(crate) fn sharded_cmd(a: &BenchArgs) -> Result<ExitCode> {
    let cfg = config(a)?;
    let json: PathBuf = a
        .json
        .clone()
        .unwrap_or_else(|| PathBuf::from("sharded.json"));
    println!("commit:  {COMMIT}");
    println!("method:  {SHARDED_METHOD}");
    println!(
        "plan:    {} GPU(s), shards per GPU {:?}, n = 2^{}, host-sided {} pairs, load {}, {} \
         runs, exchange {:?}, pipeline batch {}",
        cfg.gpus,
        cfg.shards_per_gpu,
        cfg.keys_log2,
        cfg.host_pairs(),
        cfg.load_factor,
        cfg.runs,
        cfg.transport,
        cfg.pipeline_batch
            .map_or("default".to_string(), |b| b.to_string())
    );
    if a.dry_run {
        println!("dry run: nothing measured");
        return Ok(ExitCode::SUCCESS);
    }
    create_parents(&[&json])?;
    let report = warpmap_bench::run_sharded(&cfg, &mut |r| println!("{}", row_line(r)))?;
    println!("device:  {}", report.device);
    println!(
        "chunk:   the host pipeline's chunk for the host-sided rows: {} keys per rank",
        report.pipeline_batch
    );
    for t in &report.targets {
        println!(
            "target:  {}: {:.3} (bar {:.2}) {}",
            t.target,
            t.figure,
            t.bar,
            if t.met { "MET" } else { "MISSED" }
        );
    }
    write_report(&report, &json, None)?;
    Ok(verdict(
        &report.rows,
        |r| r.verified,
        |r| (row_line(r), r.failures.join("; ")),
        "rows",
        report.wall_s,
    ))
}
