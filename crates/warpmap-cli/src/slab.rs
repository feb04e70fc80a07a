//! `warpmap bench --scheme slab [--preset slab-fig4|slab-fig5|slab-fig6|slab-fig7|slab-alloc|
//! slab-compare]`: the slab hash's benchmarks (slab-hash.txt §VI; `warpmap_bench::run_slab`).
//! Prints the plan, then one line per measured cell as it finishes (the memory utilisation
//! beside every rate), the target cells of `slab-compare` beside their targets, and writes the
//! JSON report (default `<preset>.json`) and its chart (`slab_chart.rs`; default: the JSON path
//! with `.svg`). Exit code 1 if a cell failed verification. Without a preset, `--scheme slab`
//! runs `slab-compare`.

use crate::{create_parents, host_threads, print_plan, verdict, write_report, BenchArgs, COMMIT};
use std::path::PathBuf;
use std::process::ExitCode;
use warpmap::{Error, Result};
use warpmap_bench::experiments::slab_report::{row_line, target_line};
use warpmap_bench::{
    resolve_slab, DyCuckooPreset, Preset, Scheme, SlabBenchConfig, SlabPreset, SlabProgress,
};

/// A `--preset` value: one of the per-load-factor loop's presets, or a slab preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PresetArg {
    /// fig7, fig8, compare, stadium, fig15, fig19.
    Bench(Preset),
    /// slab-fig4, ..., slab-compare.
    Slab(SlabPreset),
    /// dycuckoo-static, dycuckoo-dynamic, dycuckoo-compare, dycuckoo-sweep (`dycuckoo.rs`).
    DyCuckoo(DyCuckooPreset),
    /// two-level-crossover: the GPU-vs-CPU crossover of the two-level table (`crossover.rs`).
    Crossover,
}

impl std::fmt::Display for PresetArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PresetArg::Bench(p) => p.fmt(f),
            PresetArg::Slab(p) => p.fmt(f),
            PresetArg::DyCuckoo(p) => p.fmt(f),
            PresetArg::Crossover => f.write_str(crate::crossover::PRESET),
        }
    }
}

/// Parses either kind of preset.
pub(crate) fn parse_preset(s: &str) -> std::result::Result<PresetArg, String> {
    if let Ok(p) = s.parse::<SlabPreset>() {
        return Ok(PresetArg::Slab(p));
    }
    if let Ok(p) = s.parse::<DyCuckooPreset>() {
        return Ok(PresetArg::DyCuckoo(p));
    }
    if s.trim().to_ascii_lowercase().replace('_', "-") == crate::crossover::PRESET {
        return Ok(PresetArg::Crossover);
    }
    s.parse::<Preset>().map(PresetArg::Bench).map_err(|e| {
        format!(
            "{e}; or a slab-hash preset (slab-fig4, slab-fig5, slab-fig6, slab-fig7, slab-alloc, \
             slab-compare); or a DyCuckoo preset (dycuckoo-static, dycuckoo-dynamic, \
             dycuckoo-compare); or two-level-crossover"
        )
    })
}

/// Whether the flags ask for the slab hash (`--scheme slab`, or a slab preset).
pub(crate) fn wants_slab(a: &BenchArgs) -> bool {
    a.scheme == Some(Scheme::Slab) || matches!(a.preset, Some(PresetArg::Slab(_)))
}

/// The slab configuration the flags ask for, and notes on the flags it ignores.
pub(crate) fn config(a: &BenchArgs) -> Result<(SlabBenchConfig, Vec<String>)> {
    let preset = match a.preset {
        Some(PresetArg::Slab(p)) => p,
        Some(p) => {
            return Err(Error::invalid(format!(
                "--scheme slab runs the slab-hash presets (slab-fig4, slab-fig5, slab-fig6, \
                 slab-fig7, slab-alloc, slab-compare), not {p}"
            )))
        }
        None => SlabPreset::SlabCompare,
    };
    if let Some(s) = a.scheme.filter(|s| *s != Scheme::Slab) {
        return Err(Error::invalid(format!(
            "--preset {preset} measures the slab hash, not {s}: drop --scheme {s}"
        )));
    }
    if a.cpu {
        return Err(Error::invalid(
            "the slab hash runs on a GPU only (no CPU backend); --dry-run prints the plan",
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
    ];
    for (flag, given) in ignored {
        if given {
            notes.push(format!(
                "{flag} does not apply to the slab presets: ignored"
            ));
        }
    }
    let sizes_log2 = match (&a.sizes_log2, a.keys_log2) {
        (Some(s), Some(_)) => {
            notes.push("--keys-log2 is ignored beside --sizes-log2".into());
            Some(s.clone())
        }
        (Some(s), None) => Some(s.clone()),
        (None, Some(k)) => Some(vec![k]),
        (None, None) => None,
    };
    let d = SlabBenchConfig::new(preset);
    Ok((
        SlabBenchConfig {
            preset,
            quick: a.quick,
            commit: COMMIT.to_string(),
            runs: a.runs,
            seed: a.seed.unwrap_or(d.seed),
            sizes_log2,
            utilizations: a.utilizations.clone(),
            batch_log2: a.batch_log2.clone(),
            types: a.types.clone(),
            roofline: true,
        },
        notes,
    ))
}

/// `warpmap bench` for the slab hash.
pub(crate) fn slab_cmd(a: &BenchArgs) -> Result<ExitCode> {
    let (cfg, notes) = config(a)?;
    // Bad flags fail here, before anything runs.
    let plan = resolve_slab(&cfg)?;
    let json: PathBuf = a
        .json
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.json", plan.preset)));
    let estimate = (plan.estimate_seconds(host_threads()), plan.device_bytes());
    if !print_plan(a.dry_run, &plan.method(), &plan.summary(), &notes, estimate)? {
        return Ok(ExitCode::SUCCESS);
    }
    let svg = a.svg.clone().unwrap_or_else(|| json.with_extension("svg"));
    create_parents(&[&json, &svg])?;
    let report = warpmap_bench::run_slab(&cfg, &mut |p| match p {
        SlabProgress::Step(s) => eprintln!("  {s}"),
        SlabProgress::Row(r) => println!("{}", row_line(r)),
    })?;
    if !report.targets.is_empty() {
        println!();
        for t in &report.targets {
            println!("{}", target_line(t));
        }
    }
    let rf = &report.roofline;
    if let (Some(g), Some(c)) = (rf.gather8_gops, rf.cas8_gops) {
        println!("roofline: gather8 {g:.2} G/s, cas8 {c:.2} G/s");
    }
    write_report(
        &report,
        &json,
        Some((&svg, crate::slab_chart::render(&report))),
    )?;
    Ok(verdict(
        &report.rows,
        |r| r.verified,
        |r| (row_line(r), r.failures.join("; ")),
        "cells",
        report.wall_s,
    ))
}
