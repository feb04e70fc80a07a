//! `warpmap bench --scheme dycuckoo [--preset dycuckoo-static|dycuckoo-dynamic|
//! dycuckoo-compare|dycuckoo-sweep]`: DyCuckoo's benchmarks (dycuckoo.txt §6; `warpmap_bench::run_dycuckoo`).
//! Prints the plan, then one line per measured cell as it finishes (keys not placed beside the
//! static rates; fill range, peak memory and the speedup over the rebuild baseline beside the
//! dynamic ones), the target cells of `dycuckoo-compare` beside their targets, and writes the
//! JSON report (default `<preset>.json`). Exit code 1 if a cell failed verification. Without a
//! preset, `--scheme dycuckoo` runs `dycuckoo-compare`.

use crate::slab::PresetArg;
use crate::{create_parents, host_threads, print_plan, verdict, write_report};
use crate::{BenchArgs, COMMIT};
use std::path::PathBuf;
use std::process::ExitCode;
use warpmap::{Error, Result};
use warpmap_bench::experiments::dycuckoo_report::{dc_row_line, dc_target_line};
use warpmap_bench::{resolve_dycuckoo, DcProgress, DyCuckooBenchConfig, DyCuckooPreset, Scheme};

/// Whether the flags ask for DyCuckoo (`--scheme dycuckoo`, or a DyCuckoo preset).
pub(crate) fn wants_dycuckoo(a: &BenchArgs) -> bool {
    a.scheme == Some(Scheme::DyCuckoo) || matches!(a.preset, Some(PresetArg::DyCuckoo(_)))
}

/// The DyCuckoo configuration the flags ask for, and notes on the flags it ignores.
pub(crate) fn config(a: &BenchArgs) -> Result<(DyCuckooBenchConfig, Vec<String>)> {
    let preset = match a.preset {
        Some(PresetArg::DyCuckoo(p)) => p,
        None => DyCuckooPreset::DycuckooCompare,
        Some(other) => {
            return Err(Error::invalid(format!(
                "--scheme dycuckoo runs the DyCuckoo presets (dycuckoo-static, \
                 dycuckoo-dynamic, dycuckoo-compare, dycuckoo-sweep), not {other}"
            )));
        }
    };
    if let Some(s) = a.scheme.filter(|s| *s != Scheme::DyCuckoo) {
        return Err(Error::invalid(format!(
            "--preset {preset} measures DyCuckoo, not {s}: drop --scheme {s}"
        )));
    }
    if a.cpu {
        return Err(Error::invalid(
            "the DyCuckoo benchmarks run on a GPU only; --dry-run prints the plan",
        ));
    }
    let mut notes = Vec::new();
    let ignored = [
        ("--slots-log2", a.slots_log2.is_some()),
        ("--load-factors", a.load_factors.is_some()),
        ("--group-sizes", a.group_sizes.is_some()),
        ("--distribution", a.distribution.is_some()),
        ("--ops", a.ops.is_some()),
        ("--zipf-s", a.zipf_s.is_some()),
        ("--zipf-universe-log2", a.zipf_universe_log2.is_some()),
        ("--zipf-load", a.zipf_load.is_some()),
        ("--overflow-filter", a.overflow_filter.is_some()),
        ("--ticket-bits", a.ticket_bits.is_some()),
        ("--location", a.location.is_some()),
        ("--host-keys-log2", a.host_keys_log2.is_some()),
        ("--slice-log2", a.slice_log2.is_some()),
        ("--utilizations", a.utilizations.is_some()),
    ];
    for (flag, given) in ignored {
        if given {
            notes.push(format!(
                "{flag} does not apply to the DyCuckoo presets: ignored"
            ));
        }
    }
    let size_log2 = match (&a.sizes_log2, a.keys_log2) {
        (Some(s), k) => {
            if s.len() > 1 || k.is_some() {
                notes.push(format!("one static size only: using 2^{}", s[0]));
            }
            s.first().copied()
        }
        (None, k) => k,
    };
    let batch_log2 = a.batch_log2.as_ref().and_then(|b| {
        if b.len() > 1 {
            notes.push(format!("one batch size only: using 2^{}", b[0]));
        }
        b.first().copied()
    });
    let d = DyCuckooBenchConfig::new(preset);
    Ok((
        DyCuckooBenchConfig {
            preset,
            quick: a.quick,
            commit: COMMIT.to_string(),
            runs: a.runs,
            seed: a.seed.unwrap_or(d.seed),
            size_log2,
            fills: a.fill_factors.clone(),
            batch_log2,
            batches: a.batches,
            ratio: a.ratio,
            alpha: a.alpha,
            beta: a.beta,
            types: a.types.clone(),
            baseline: true,
        },
        notes,
    ))
}

/// `warpmap bench` for DyCuckoo.
pub(crate) fn dycuckoo_cmd(a: &BenchArgs) -> Result<ExitCode> {
    let (cfg, notes) = config(a)?;
    // Bad flags fail here, before anything runs.
    let plan = resolve_dycuckoo(&cfg)?;
    let json: PathBuf = a
        .json
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.json", plan.preset)));
    let estimate = (plan.estimate_seconds(host_threads()), plan.device_bytes());
    if !print_plan(a.dry_run, &plan.method(), &plan.summary(), &notes, estimate)? {
        return Ok(ExitCode::SUCCESS);
    }
    create_parents(&[&json])?;
    let report = warpmap_bench::run_dycuckoo(&cfg, &mut |p| match p {
        DcProgress::Step(s) => eprintln!("  {s}"),
        DcProgress::Row(r) => println!("{}", dc_row_line(r)),
    })?;
    if !report.targets.is_empty() {
        println!();
        for t in &report.targets {
            println!("{}", dc_target_line(t));
        }
    }
    write_report(&report, &json, None)?;
    Ok(verdict(
        &report.rows,
        |r| r.verified,
        |r| (dc_row_line(r), r.failures.join("; ")),
        "cells",
        report.wall_s,
    ))
}
