//! `warpmap bench --preset two-level-crossover`: from what size on the two-level GPU table beats
//! the CPU tables, transfers included (`warpmap_bench::run_crossover`). Prints a line per
//! measured (size, contender, operation) and the crossover points, and writes the JSON report
//! (default `two-level-crossover.json`) and its chart (`slab_chart::render_crossover`; default:
//! the JSON path with `.svg`). Runs without a GPU too (the CPU contenders only).
//! Exit code 1 if a row failed verification.

use crate::slab::PresetArg;
use crate::{create_parents, verdict, write_report, BenchArgs, COMMIT};
use std::path::PathBuf;
use std::process::ExitCode;
use warpmap::{Error, Result};
use warpmap_bench::{CrossoverConfig, CrossoverRow, Scheme};

/// The preset's name.
pub(crate) const PRESET: &str = "two-level-crossover";

/// Whether the flags ask for the crossover.
pub(crate) fn wants_crossover(a: &BenchArgs) -> bool {
    a.preset == Some(PresetArg::Crossover)
}

/// The configuration the flags ask for.
fn config(a: &BenchArgs) -> Result<CrossoverConfig> {
    if let Some(s) = a.scheme.filter(|s| *s != Scheme::TwoLevel) {
        return Err(Error::invalid(format!(
            "--preset {PRESET} measures the two-level table, not {s}: drop --scheme {s}"
        )));
    }
    let d = CrossoverConfig::default();
    let load_factor = match a.load_factors.as_deref() {
        None => d.load_factor,
        Some([lf]) => *lf,
        Some(_) => {
            return Err(Error::invalid(format!(
                "--preset {PRESET} takes one load factor"
            )))
        }
    };
    Ok(CrossoverConfig {
        quick: a.quick,
        commit: COMMIT.to_string(),
        sizes_log2: a.sizes_log2.clone().or(a.keys_log2.map(|k| vec![k])),
        runs: a.runs,
        load_factor,
        seed: a.seed.unwrap_or(d.seed),
        force_cpu: a.cpu,
    })
}

fn row_line(r: &CrossoverRow) -> String {
    format!(
        "n 2^{:<2} {:<14} {:<6} {:>9.4} G/s {:>11.3} ms {}",
        r.n_log2,
        r.contender,
        r.op,
        r.gops,
        r.median_ms,
        if r.verified { "PASS" } else { "FAIL" }
    )
}

/// `warpmap bench --preset two-level-crossover`.
pub(crate) fn crossover_cmd(a: &BenchArgs) -> Result<ExitCode> {
    let cfg = config(a)?;
    let json: PathBuf = a
        .json
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{PRESET}.json")));
    println!("commit:  {COMMIT}");
    println!(
        "method:  {}",
        warpmap_bench::experiments::two_level_crossover::CROSSOVER_METHOD
    );
    if a.dry_run {
        println!("dry run: nothing measured");
        return Ok(ExitCode::SUCCESS);
    }
    create_parents(&[&json])?;
    let report = warpmap_bench::run_crossover(&cfg, &mut |r| println!("{}", row_line(r)))?;
    println!("device:  {}", report.device);
    for n in &report.notes {
        println!("note:    {n}");
    }
    for p in &report.crossover {
        match (p.n_log2, p.speedup, p.against) {
            (Some(n), Some(x), Some(c)) => println!(
                "crossover: {} {} beats every CPU table from n = 2^{n} on ({x:.2}x {c} there)",
                p.gpu, p.op
            ),
            _ => println!(
                "crossover: {} {} never beats every CPU table at the sizes measured",
                p.gpu, p.op
            ),
        }
    }
    let svg = a.svg.clone().unwrap_or_else(|| json.with_extension("svg"));
    let chart = crate::slab_chart::render_crossover(&report);
    write_report(&report, &json, Some((&svg, chart)))?;
    Ok(verdict(
        &report.rows,
        |r| r.verified,
        |r| (row_line(r), r.failures.join("; ")),
        "rows",
        report.wall_s,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_only_crossover_renders() {
        let cfg = CrossoverConfig {
            sizes_log2: Some(vec![6, 8]),
            runs: Some(1),
            force_cpu: true,
            ..CrossoverConfig::default()
        };
        let report = warpmap_bench::run_crossover(&cfg, &mut |_| {}).unwrap();
        assert!(report.all_verified());
        assert!(row_line(&report.rows[0]).ends_with("PASS"));
        let svg = crate::slab_chart::render_crossover(&report).unwrap();
        assert!(svg.contains("two_level insert") && svg.contains("hashbrown"));
    }
}
