//! The SVG chart of a bench report: G ops/s against load factor, one panel per (scheme, key and
//! value type), one line per operation, the roofline (random gather, random CAS) as dashed
//! horizontal lines. Points that failed verification are marked with a black cross.

use plotters::prelude::*;
use warpmap::bench::{Op, Report};

const WIDTH_PER_PANEL: u32 = 620;
const HEIGHT: u32 = 560;

fn op_color(op: Op) -> RGBColor {
    match op {
        Op::Insert => RGBColor(214, 39, 40),
        Op::FindHit => RGBColor(31, 119, 180),
        Op::FindMiss => RGBColor(23, 190, 207),
        Op::Contains => RGBColor(44, 160, 44),
        Op::Erase => RGBColor(255, 127, 14),
    }
}

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// The chart as SVG text.
pub fn render(report: &Report) -> Result<String, String> {
    // Panels: distinct (scheme, backend, key type, value type), in order of appearance.
    let mut groups: Vec<(String, String, &str, &str)> = Vec::new();
    for r in &report.results {
        let g = (
            r.scheme.clone(),
            r.backend.to_string(),
            r.key_type,
            r.value_type,
        );
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let panels = groups.len().max(1) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PER_PANEL * panels, HEIGHT))
            .into_drawing_area();
        root.fill(&WHITE).map_err(s)?;
        let title = format!(
            "warpmap bench: {}, commit {}, {}",
            report.device, report.commit, report.date
        );
        let root = root.titled(&title, ("sans-serif", 18)).map_err(s)?;
        if groups.is_empty() {
            root.draw(&Text::new("no results", (20, 40), ("sans-serif", 16)))
                .map_err(s)?;
        }
        let areas = root.split_evenly((1, groups.len().max(1)));
        for (area, (scheme, backend, kt, vt)) in areas.iter().zip(&groups) {
            let rows: Vec<_> = report
                .results
                .iter()
                .filter(|r| {
                    &r.scheme == scheme
                        && &r.backend.to_string() == backend
                        && r.key_type == *kt
                        && r.value_type == *vt
                })
                .collect();
            let lf_min = rows
                .iter()
                .map(|r| r.load_factor)
                .fold(f64::INFINITY, f64::min);
            let lf_max = rows
                .iter()
                .map(|r| r.load_factor)
                .fold(f64::NEG_INFINITY, f64::max);
            let pad = ((lf_max - lf_min) * 0.08).max(0.05);
            let (x0, x1) = (lf_min - pad, (lf_max + pad).min(1.05));
            let gather = report.roofline.gather8_gops;
            let cas = report.roofline.cas8_gops;
            let y_top = rows
                .iter()
                .map(|r| r.gops)
                .chain(gather)
                .chain(cas)
                .fold(0.0f64, f64::max)
                .max(1e-6)
                * 1.5; // the top third stays free for the legend

            let caption = format!("{scheme} {kt}/{vt} ({backend})");
            let mut chart = ChartBuilder::on(area)
                .caption(caption, ("sans-serif", 16))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(x0..x1, 0f64..y_top)
                .map_err(s)?;
            chart
                .configure_mesh()
                .x_desc("load factor")
                .y_desc("G ops/s")
                .x_label_formatter(&|x| format!("{x:.2}"))
                .y_label_formatter(&|y| format!("{y:.2}"))
                .draw()
                .map_err(s)?;

            for op in Op::ALL {
                let mut pts: Vec<(f64, f64, bool)> = rows
                    .iter()
                    .filter(|r| r.op == op)
                    .map(|r| (r.load_factor, r.gops, r.verified))
                    .collect();
                if pts.is_empty() {
                    continue;
                }
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                let color = op_color(op);
                chart
                    .draw_series(LineSeries::new(
                        pts.iter().map(|p| (p.0, p.1)),
                        color.stroke_width(2),
                    ))
                    .map_err(s)?
                    .label(op.name())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(
                        pts.iter()
                            .map(|p| Circle::new((p.0, p.1), 3, color.filled())),
                    )
                    .map_err(s)?;
                chart
                    .draw_series(
                        pts.iter()
                            .filter(|p| !p.2)
                            .map(|p| Cross::new((p.0, p.1), 6, BLACK.stroke_width(2))),
                    )
                    .map_err(s)?;
            }
            for (name, value, color) in [
                ("gather8 roofline", gather, RGBColor(40, 40, 40)),
                ("cas8 roofline", cas, RGBColor(150, 150, 150)),
            ] {
                if let Some(v) = value {
                    chart
                        .draw_series(DashedLineSeries::new(
                            vec![(x0, v), (x1, v)],
                            8,
                            5,
                            color.stroke_width(2),
                        ))
                        .map_err(s)?
                        .label(format!("{name} {v:.2}"))
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                        });
                }
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(s)?;
        }
        root.present().map_err(s)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use warpmap::bench::{BenchResult, Roofline};
    use warpmap::table::Backend;

    /// A GPU-like report: rooflines far above the table rates, one unverified point.
    fn fake_report() -> Report {
        let mut results = Vec::new();
        for (kb, kt) in [(4usize, "u32"), (8, "u64")] {
            for lf in warpmap::bench::DEFAULT_LOAD_FACTORS {
                for (i, op) in Op::ALL.into_iter().enumerate() {
                    let gops = (8.0 - 3.0 * lf) * (1.0 + i as f64 * 0.3) / kb as f64 * 4.0;
                    results.push(BenchResult {
                        scheme: "warpdrive".into(),
                        backend: Backend::Gpu,
                        key_bytes: kb,
                        value_bytes: kb,
                        n: 1000,
                        load_factor: lf,
                        op,
                        gops,
                        median_ms: 1.0,
                        runs: 5,
                        roofline_ratio: Some(gops / 30.0),
                        verified: !(kb == 8 && lf == 0.9 && op == Op::Erase),
                        key_type: kt,
                        value_type: kt,
                        capacity: 2000,
                        group_size: Some(4),
                        min_ms: 1.0,
                        max_ms: 1.0,
                        failures: Vec::new(),
                    });
                }
            }
        }
        Report {
            device: "NVIDIA H100 80GB HBM3 sm_90".into(),
            commit: "abc".into(),
            date: "2026-01-01T00:00:00Z".into(),
            roofline: Roofline {
                gather8_gops: Some(30.0),
                cas8_gops: Some(22.0),
                copy_gbps: Some(3000.0),
                table_elements: Some(1 << 28),
                ops: Some(1 << 28),
                runs: Some(5),
            },
            results,
            backend: Backend::Gpu,
            backend_note: None,
            method: "m".into(),
            quick: false,
            slots: 1 << 26,
            runs: 5,
            host_threads: 16,
            compile: Vec::new(),
            wall_s: 1.0,
        }
    }

    #[test]
    fn renders_gpu_like_report() {
        let svg = render(&fake_report()).unwrap();
        assert!(svg.starts_with("<svg"));
        for label in [
            "find_hit",
            "gather8 roofline",
            "cas8 roofline",
            "warpdrive u64/u64 (gpu)",
        ] {
            assert!(svg.contains(label), "{label} missing");
        }
        if let Some(dir) = std::env::var_os("WARPMAP_CHART_OUT") {
            std::fs::write(std::path::Path::new(&dir).join("fake.svg"), &svg).unwrap();
        }
    }

    #[test]
    fn renders_empty_report() {
        let mut r = fake_report();
        r.results.clear();
        assert!(render(&r).unwrap().contains("no results"));
    }
}
