//! `warpmap lanes`: Stadium's insert strategies (basic Stash, clStash, the hybrid).
//! `lanes threshold` measures the hybrid threshold as the paper's Fig. 13 does; `lanes compare`
//! times each strategy building a table from empty (Fig. 18's insert rates; run it under `ncu`
//! for Table I's warp execution efficiency). Prints a table, writes JSON and an SVG chart.

use crate::{print_gpu_header, write_file, COMMIT};
use clap::{Args, Subcommand};
use plotters::prelude::*;
use std::path::PathBuf;
use std::process::ExitCode;
use warpmap::{Error, Gpu, InsertStrategy, Result};
use warpmap_bench::experiments::stadium_fig13_fig18::{
    self as lanes, LanesConfig, LanesReport, LanesTypes,
};
use warpmap_bench::parse_locations;

#[derive(Subcommand)]
pub enum LanesCommand {
    /// Fig. 13: time each batch of a fill with basic Stash and with clStash, fit the difference
    /// with a parabola of the load factor, and report the hybrid threshold (its root).
    Threshold(LanesArgs),
    /// Fig. 18: insert rate of each strategy building a table from empty.
    Compare(LanesArgs),
}

#[derive(Args, Clone)]
pub struct LanesArgs {
    /// Keys per run: 2^N.
    #[arg(long, default_value_t = 26)]
    keys_log2: u32,
    /// Load factors (threshold: the first, the load at the end of the fill).
    #[arg(long, value_delimiter = ',', default_value = "0.95")]
    load_factors: Vec<f64>,
    /// threshold: batches of the fill.
    #[arg(long, default_value_t = 50)]
    chunks: usize,
    /// Ticket sizes in bits.
    #[arg(long, value_delimiter = ',', default_value = "8")]
    ticket_bits: Vec<u32>,
    /// Bucket locations: device, host.
    #[arg(long, default_value = "device", value_parser = parse_locations_list)]
    location: LocList,
    /// Key/value types: u32 or u64 (both key and value).
    #[arg(long, default_value = "u64", value_parser = LanesTypes::parse)]
    types: LanesTypes,
    /// Runs per measurement (medians reported).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// compare: the hybrid's threshold (default: the one measured for the ticket size and
    /// record width, built in).
    #[arg(long)]
    hybrid_threshold: Option<f64>,
    /// compare: strategies (stash, clstash, hybrid).
    #[arg(long, value_delimiter = ',', default_value = "stash,clstash,hybrid")]
    strategies: Vec<String>,
    /// Write the report as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the chart as SVG here.
    #[arg(long)]
    svg: Option<PathBuf>,
}

#[derive(Clone)]
pub struct LocList(Vec<warpmap::Location>);

fn parse_locations_list(s: &str) -> std::result::Result<LocList, String> {
    parse_locations(s).map(LocList)
}

impl LanesArgs {
    fn config(&self) -> Result<LanesConfig> {
        let hybrid = match self.hybrid_threshold {
            Some(threshold) => InsertStrategy::Hybrid { threshold },
            None => InsertStrategy::MeasuredHybrid,
        };
        let strategies = self
            .strategies
            .iter()
            .map(|s| match s.as_str() {
                "stash" => Ok(InsertStrategy::Stash),
                "clstash" => Ok(InsertStrategy::ClStash),
                "hybrid" => Ok(hybrid),
                o => Err(Error::invalid(format!(
                    "unknown strategy '{o}' (stash, clstash, hybrid)"
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(LanesConfig {
            keys_log2: self.keys_log2,
            load_factors: self.load_factors.clone(),
            chunks: self.chunks,
            ticket_bits: self.ticket_bits.clone(),
            locations: self.location.0.clone(),
            types: self.types,
            runs: self.runs,
            strategies,
            ..LanesConfig::default()
        })
    }
}

pub fn run(cmd: LanesCommand) -> Result<ExitCode> {
    let (args, is_threshold) = match &cmd {
        LanesCommand::Threshold(a) => (a.clone(), true),
        LanesCommand::Compare(a) => (a.clone(), false),
    };
    let cfg = args.config()?;
    let gpu = Gpu::default_gpu()?;
    print_gpu_header(&gpu);
    let mut say = |m: String| eprintln!("  {m}");
    let report = if is_threshold {
        lanes::threshold(&gpu, &cfg, COMMIT, &mut say)?
    } else {
        lanes::compare(&gpu, &cfg, COMMIT, &mut say)?
    };
    println!("method:  {}", report.method);
    print!("{}", text(&report));
    if let Some(p) = &args.json {
        let json = serde_json::to_vec_pretty(&report)
            .map_err(|e| Error::invalid(format!("serialising the report: {e}")))?;
        write_file(p, &json)?;
        println!("json:    {}", p.display());
    }
    if let Some(p) = &args.svg {
        let svg = chart(&report).map_err(|e| Error::invalid(format!("chart: {e}")))?;
        write_file(p, svg.as_bytes())?;
        println!("svg:     {}", p.display());
    }
    if report.all_verified() {
        Ok(ExitCode::SUCCESS)
    } else {
        println!("FAIL: a run did not verify");
        Ok(ExitCode::from(2))
    }
}

/// The report as a text table.
pub fn text(r: &LanesReport) -> String {
    let mut out = String::new();
    for t in &r.thresholds {
        out += &format!(
            "fig13 {} t{} ({} buckets): stash {:.2} ms, clstash {:.2} ms for the whole fill; \
             fit diff = {:.4} + {:.4} lf + {:.4} lf^2; roots {:?}; threshold {:.3}{}\n",
            t.location,
            t.ticket_bits,
            t.buckets,
            t.stash_total_ms,
            t.clstash_total_ms,
            t.fit[0],
            t.fit[1],
            t.fit[2],
            t.roots,
            t.threshold,
            if t.verified { "" } else { "  NOT VERIFIED" }
        );
        out += "  load    stash_ms  clstash_ms  diff_ms\n";
        for c in &t.rows {
            out += &format!(
                "  {:.3}  {:9.4}  {:10.4}  {:+8.4}\n",
                0.5 * (c.load_start + c.load_end),
                c.stash_ms,
                c.clstash_ms,
                c.diff_ms
            );
        }
    }
    if !r.strategies.is_empty() {
        out += "location  ticket  lf     strategy  threshold  keys        ms        G/s     verified\n";
        for s in &r.strategies {
            out += &format!(
                "{:<8}  {:>6}  {:.2}   {:<8}  {:>9}  {:<10}  {:8.3}  {:7.3}  {}\n",
                s.location,
                s.ticket_bits,
                s.load_factor,
                s.strategy,
                s.threshold.map_or("-".to_string(), |t| format!("{t:.3}")),
                s.keys,
                s.ms,
                s.gops,
                if s.verified { "PASS" } else { "FAIL" }
            );
        }
    }
    out
}

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Fig. 13: the per-batch difference against load with its fitted parabola and the threshold,
/// one panel per (location, ticket size); Fig. 18: G/s per strategy, bars per configuration.
pub fn chart(r: &LanesReport) -> std::result::Result<String, String> {
    let mut svg = String::new();
    if !r.thresholds.is_empty() {
        let n = r.thresholds.len() as u32;
        {
            let root = SVGBackend::with_string(&mut svg, (620 * n, 480)).into_drawing_area();
            root.fill(&WHITE).map_err(s)?;
            for (t, area) in r.thresholds.iter().zip(root.split_evenly((1, n as usize))) {
                let xs: Vec<f64> = t
                    .rows
                    .iter()
                    .map(|c| 0.5 * (c.load_start + c.load_end))
                    .collect();
                let ys: Vec<f64> = t.rows.iter().map(|c| c.diff_ms).collect();
                let (lo, hi) = ys
                    .iter()
                    .fold((0.0f64, 0.0f64), |(a, b), &y| (a.min(y), b.max(y)));
                let pad = (hi - lo).max(1e-3) * 0.1;
                let x_hi = xs.last().copied().unwrap_or(1.0) + 0.02;
                let mut c = ChartBuilder::on(&area)
                    .caption(
                        format!(
                            "Fig. 13: stash - clstash per batch ({} t{}), threshold {:.3}",
                            t.location, t.ticket_bits, t.threshold
                        ),
                        ("sans-serif", 16),
                    )
                    .margin(12)
                    .x_label_area_size(36)
                    .y_label_area_size(60)
                    .build_cartesian_2d(0.0..x_hi, (lo - pad)..(hi + pad))
                    .map_err(s)?;
                c.configure_mesh()
                    .x_desc("load factor")
                    .y_desc("ms (positive: clStash faster)")
                    .draw()
                    .map_err(s)?;
                c.draw_series(
                    xs.iter()
                        .zip(&ys)
                        .map(|(&x, &y)| Circle::new((x, y), 3, BLUE.filled())),
                )
                .map_err(s)?
                .label("measured batches")
                .legend(|(x, y)| Circle::new((x, y), 3, BLUE.filled()));
                let f = t.fit;
                c.draw_series(LineSeries::new(
                    (0..=100).map(|i| {
                        let x = x_hi * i as f64 / 100.0;
                        (x, f[0] + f[1] * x + f[2] * x * x)
                    }),
                    RED.stroke_width(2),
                ))
                .map_err(s)?
                .label("2nd-order fit")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED));
                c.draw_series(LineSeries::new(
                    [(0.0, 0.0), (x_hi, 0.0)],
                    BLACK.mix(0.4).stroke_width(1),
                ))
                .map_err(s)?;
                c.configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .draw()
                    .map_err(s)?;
            }
            root.present().map_err(s)?;
        }
        return Ok(svg);
    }
    // Fig. 18: one bar group per (location, ticket, lf), one bar per strategy.
    let mut groups: Vec<String> = Vec::new();
    for row in &r.strategies {
        let g = format!(
            "{} t{} lf {:.2}",
            row.location, row.ticket_bits, row.load_factor
        );
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let names = ["stash", "clstash", "hybrid"];
    let colors = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
    ];
    let top = r.strategies.iter().map(|x| x.gops).fold(0.0, f64::max) * 1.15 + 1e-9;
    {
        let w = (groups.len() as u32 * 160).max(480);
        let root = SVGBackend::with_string(&mut svg, (w, 460)).into_drawing_area();
        root.fill(&WHITE).map_err(s)?;
        let mut c = ChartBuilder::on(&root)
            .caption(
                "Fig. 18: Stadium insert rate by strategy",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..groups.len() as f64, 0.0..top)
            .map_err(s)?;
        c.configure_mesh()
            .disable_x_mesh()
            .x_labels(groups.len())
            .x_label_formatter(&|x| groups.get(x.floor() as usize).cloned().unwrap_or_default())
            .y_desc("G inserts/s")
            .draw()
            .map_err(s)?;
        for (k, (name, color)) in names.iter().zip(colors).enumerate() {
            let bars: Vec<_> = r
                .strategies
                .iter()
                .filter(|x| x.strategy == *name)
                .filter_map(|x| {
                    let g = format!("{} t{} lf {:.2}", x.location, x.ticket_bits, x.load_factor);
                    let gi = groups.iter().position(|y| *y == g)? as f64;
                    let x0 = gi + 0.1 + 0.27 * k as f64;
                    Some(Rectangle::new(
                        [(x0, 0.0), (x0 + 0.25, x.gops)],
                        color.filled(),
                    ))
                })
                .collect();
            c.draw_series(bars)
                .map_err(s)?
                .label(*name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
        c.configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(s)?;
        root.present().map_err(s)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(subcommand)]
        c: LanesCommand,
    }

    #[test]
    fn parses_and_builds_the_config() {
        let t = T::try_parse_from([
            "t",
            "compare",
            "--keys-log2",
            "20",
            "--load-factors",
            "0.5,0.95",
            "--location",
            "device,host",
            "--strategies",
            "stash,hybrid",
            "--hybrid-threshold",
            "0.4",
            "--types",
            "u32",
        ])
        .unwrap();
        let LanesCommand::Compare(a) = t.c else {
            panic!("compare")
        };
        let cfg = a.config().unwrap();
        assert_eq!(cfg.keys_log2, 20);
        assert_eq!(cfg.load_factors, vec![0.5, 0.95]);
        assert_eq!(cfg.locations.len(), 2);
        assert_eq!(cfg.types, LanesTypes::U32);
        assert_eq!(
            cfg.strategies,
            vec![
                InsertStrategy::Stash,
                InsertStrategy::Hybrid { threshold: 0.4 }
            ]
        );
        let bad = T::try_parse_from(["t", "compare", "--strategies", "fast"]).unwrap();
        let LanesCommand::Compare(a) = bad.c else {
            panic!("compare")
        };
        assert!(a.config().is_err());
        assert!(T::try_parse_from(["t", "threshold", "--types", "u16"]).is_err());
    }
}
