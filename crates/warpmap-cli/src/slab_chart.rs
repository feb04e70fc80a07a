//! The SVG chart of a slab report (`warpmap bench --scheme slab`), a panel per figure of the
//! paper, points that failed verification crossed out:
//!
//! - slab-fig4: G ops/s against the measured memory utilisation, a panel per n, a line per
//!   operation (Fig. 4a, 4b);
//! - slab-fig5: G ops/s against log2 n, a line per operation (Fig. 5);
//! - slab-fig6: log10 of the cumulative milliseconds against the batches inserted, a panel per
//!   batch size, the slab hash and the WarpDrive rebuilds (Fig. 6);
//! - slab-fig7: G ops/s against the initial memory utilisation, a line per mix (Fig. 7a);
//! - slab-alloc: G slabs/s against log2 allocations, allocation and free;
//! - slab-compare: each target cell's rate, its target and SlabHash's figure.

use plotters::prelude::*;
use warpmap_bench::experiments::slab_report::{SlabOp, SlabRow};
use warpmap_bench::{SlabPreset, SlabReport};

/// A line of a panel.
struct Line {
    label: String,
    color: RGBColor,
    points: Vec<(f64, f64, bool)>,
    /// Markers only (no line between the points).
    markers: bool,
}

/// One panel: a title, axis names and its lines.
struct PanelSpec {
    title: String,
    x: &'static str,
    y: &'static str,
    lines: Vec<Line>,
}

const COLORS: [RGBColor; 6] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(23, 190, 207),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// The lines of slab rows grouped by `key` (in order of appearance), each point `xy(row)`.
fn lines_by<'a>(
    rows: impl Iterator<Item = &'a SlabRow>,
    key: impl Fn(&SlabRow) -> String,
    xy: impl Fn(&SlabRow) -> (f64, f64),
) -> Vec<Line> {
    lines_of(rows, key, |r| {
        let (x, y) = xy(r);
        (x, y, r.verified)
    })
}

/// The lines of `rows` grouped by `key` (in order of appearance), each point `xyv(row)`: x, y
/// and whether the row verified.
fn lines_of<'a, R: 'a>(
    rows: impl Iterator<Item = &'a R>,
    key: impl Fn(&R) -> String,
    xyv: impl Fn(&R) -> (f64, f64, bool),
) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    for r in rows {
        let k = key(r);
        let p = xyv(r);
        match lines.iter_mut().find(|l| l.label == k) {
            Some(l) => l.points.push(p),
            None => {
                let color = COLORS[lines.len() % COLORS.len()];
                lines.push(Line {
                    label: k,
                    color,
                    points: vec![p],
                    markers: false,
                });
            }
        }
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    lines
}

fn log2(n: usize) -> f64 {
    (n.max(1) as f64).log2()
}

/// The panels of a report.
fn panels(r: &SlabReport) -> Vec<PanelSpec> {
    let util = |x: &SlabRow| x.utilization.unwrap_or(0.0);
    match r.preset {
        SlabPreset::SlabFig4 => {
            let mut sizes: Vec<usize> = r.rows.iter().map(|x| x.n).collect();
            sizes.dedup();
            sizes
                .into_iter()
                .map(|n| PanelSpec {
                    title: format!("Fig. 4: n = 2^{}", n.trailing_zeros()),
                    x: "memory utilisation",
                    y: "G ops/s",
                    lines: lines_by(
                        r.rows.iter().filter(|x| x.n == n),
                        |x| format!("{} {}/{}", x.op.name(), x.key_type, x.value_type),
                        |x| (util(x), x.gops),
                    ),
                })
                .collect()
        }
        SlabPreset::SlabFig5 => vec![PanelSpec {
            title: "Fig. 5: memory utilisation ~0.6".into(),
            x: "log2 n",
            y: "G ops/s",
            lines: lines_by(
                r.rows.iter(),
                |x| format!("{} {}/{}", x.op.name(), x.key_type, x.value_type),
                |x| (log2(x.n), x.gops),
            ),
        }],
        SlabPreset::SlabFig6 => {
            let mut batches: Vec<usize> = r.rows.iter().filter_map(|x| x.batch).collect();
            batches.dedup();
            batches
                .into_iter()
                .map(|b| PanelSpec {
                    title: format!("Fig. 6: batches of 2^{}", b.trailing_zeros()),
                    x: "batches inserted",
                    y: "log10 cumulative ms",
                    lines: r
                        .rows
                        .iter()
                        .filter(|x| x.batch == Some(b))
                        .enumerate()
                        .map(|(i, x)| Line {
                            label: format!(
                                "{} {}",
                                x.scheme,
                                if x.op == SlabOp::Rebuild {
                                    "rebuild"
                                } else {
                                    "incremental"
                                }
                            ),
                            color: COLORS[i % COLORS.len()],
                            points: x
                                .cumulative_ms
                                .iter()
                                .enumerate()
                                .map(|(j, ms)| ((j + 1) as f64, ms.max(1e-6).log10(), x.verified))
                                .collect(),
                            markers: false,
                        })
                        .collect(),
                })
                .collect()
        }
        SlabPreset::SlabFig7 => vec![PanelSpec {
            title: "Fig. 7a: concurrent mixes".into(),
            x: "initial memory utilisation",
            y: "G ops/s",
            lines: lines_by(
                r.rows.iter(),
                |x| {
                    format!(
                        "{} {}/{}",
                        x.mix.map(|m| m.name).unwrap_or("-"),
                        x.key_type,
                        x.value_type
                    )
                },
                |x| (util(x), x.gops),
            ),
        }],
        SlabPreset::SlabAlloc => vec![PanelSpec {
            title: "SlabAlloc: one slab per thread".into(),
            x: "log2 allocations",
            y: "G slabs/s",
            lines: lines_by(
                r.rows.iter(),
                |x| x.op.name().to_string(),
                |x| (log2(x.n), x.gops),
            ),
        }],
        SlabPreset::SlabCompare => {
            let at = |i: usize| i as f64 + 1.0;
            let line = |label: &str, color: RGBColor, f: &dyn Fn(usize) -> (f64, bool)| Line {
                label: label.into(),
                color,
                points: (0..r.targets.len())
                    .map(|i| {
                        let (y, ok) = f(i);
                        (at(i), y, ok)
                    })
                    .collect(),
                markers: true,
            };
            vec![PanelSpec {
                title: format!(
                    "slab-compare: {}",
                    r.targets
                        .iter()
                        .enumerate()
                        .map(|(i, t)| format!("{} {}", i + 1, t.cell))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                x: "cell",
                y: "G ops/s",
                lines: vec![
                    line("measured", COLORS[0], &|i| {
                        (r.targets[i].gops, r.targets[i].verified)
                    }),
                    line("target", COLORS[4], &|i| (r.targets[i].target_gops, true)),
                    line("SlabHash", COLORS[1], &|i| {
                        (r.targets[i].slabhash_gops, true)
                    }),
                ],
            }]
        }
    }
}

/// The report as an SVG chart.
pub fn render(r: &SlabReport) -> Result<String, String> {
    render_panels(&panels(r))
}

/// The two-level crossover (`--preset two-level-crossover`) as an SVG chart: a panel per
/// operation, log10 of the rate against log2 n, a line per contender (the GPU table with and
/// without transfers, the CPU tables); points that failed verification crossed out.
pub fn render_crossover(r: &warpmap_bench::CrossoverReport) -> Result<String, String> {
    let panels: Vec<PanelSpec> = ["insert", "find"]
        .into_iter()
        .map(|op| PanelSpec {
            title: format!("two_level {op}, u32 keys: GPU vs CPU"),
            x: "log2 n",
            y: "log10 G keys/s",
            lines: lines_of(
                r.rows.iter().filter(|x| x.op == op),
                |x| x.contender.to_string(),
                |x| (x.n_log2 as f64, x.gops.max(1e-6).log10(), x.verified),
            ),
        })
        .collect();
    render_panels(&panels)
}

/// Panels side by side as an SVG chart.
fn render_panels(panels: &[PanelSpec]) -> Result<String, String> {
    let n = panels.len().max(1) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (560 * n, 460)).into_drawing_area();
        root.fill(&WHITE).map_err(s)?;
        for (p, area) in panels.iter().zip(root.split_evenly((1, n as usize))) {
            let pts = p.lines.iter().flat_map(|l| l.points.iter());
            let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, 0.0f64, f64::MIN);
            for &(x, y, _) in pts {
                (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
            }
            if x0 > x1 {
                (x0, x1, y1) = (0.0, 1.0, 1.0);
            }
            let xpad = ((x1 - x0) * 0.05).max(0.05);
            let ypad = ((y1 - y0) * 0.1).max(1e-3);
            let mut c = ChartBuilder::on(&area)
                .caption(&p.title, ("sans-serif", 15))
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(56)
                .build_cartesian_2d((x0 - xpad)..(x1 + xpad), (y0 - ypad).min(0.0)..(y1 + ypad))
                .map_err(s)?;
            c.configure_mesh()
                .max_light_lines(2)
                .x_desc(p.x)
                .y_desc(p.y)
                .draw()
                .map_err(s)?;
            for l in &p.lines {
                let color = l.color;
                let xy: Vec<(f64, f64)> = l.points.iter().map(|&(x, y, _)| (x, y)).collect();
                if l.markers {
                    c.draw_series(xy.iter().map(|&p| Circle::new(p, 5, color.filled())))
                        .map_err(s)?
                        .label(&l.label)
                        .legend(move |(x, y)| Circle::new((x, y), 5, color.filled()));
                } else {
                    c.draw_series(LineSeries::new(xy.clone(), color.stroke_width(2)))
                        .map_err(s)?
                        .label(&l.label)
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                        });
                    c.draw_series(xy.iter().map(|&p| Circle::new(p, 3, color.filled())))
                        .map_err(s)?;
                }
                c.draw_series(
                    l.points
                        .iter()
                        .filter(|p| !p.2)
                        .map(|&(x, y, _)| Cross::new((x, y), 7, BLACK.stroke_width(2))),
                )
                .map_err(s)?;
            }
            c.configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
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
    use warpmap_bench::experiments::slab_report::target_rows;
    use warpmap_bench::{resolve_slab, Mix, Roofline, SlabBenchConfig};

    /// A report of `preset` with `rows` (no GPU needed).
    pub(crate) fn fake(preset: SlabPreset, rows: Vec<SlabRow>) -> SlabReport {
        SlabReport {
            preset,
            device: "NVIDIA H100 80GB HBM3 sm_90".into(),
            commit: "test".into(),
            date: "2026-11-24T00:00:00Z".into(),
            method: "test".into(),
            plan: resolve_slab(&SlabBenchConfig::new(preset)).unwrap(),
            roofline: Roofline::default(),
            targets: target_rows(&rows),
            rows,
            host_threads: 16,
            compile: Vec::new(),
            wall_s: 1.0,
        }
    }

    fn row(exp: &'static str, op: SlabOp, n: usize, ms: f64) -> SlabRow {
        SlabRow::new::<u32, u32>(exp, op, n, n, &[ms], Vec::new())
    }

    #[test]
    fn every_preset_draws() {
        let mut fig4 = Vec::new();
        for (i, u) in [0.3, 0.6, 0.9].into_iter().enumerate() {
            for op in [SlabOp::Build, SlabOp::SearchHit, SlabOp::SearchMiss] {
                for n in [1 << 22, 1 << 24] {
                    let mut r = row("fig4", op, n, 1.0 + i as f64);
                    r.utilization = Some(u);
                    fig4.push(r);
                }
            }
        }
        fig4[3].verified = false;
        let svg = render(&fake(SlabPreset::SlabFig4, fig4)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("n = 2^24"),
            "{}",
            &svg[..200]
        );
        assert!(svg.contains("search_hit u32/u32"));

        let fig5: Vec<SlabRow> = (18..=20)
            .map(|l| row("fig5", SlabOp::Build, 1 << l, 1.0))
            .collect();
        assert!(render(&fake(SlabPreset::SlabFig5, fig5))
            .unwrap()
            .contains("log2 n"));

        let mut slab = row("fig6", SlabOp::Incremental, 1 << 20, 2.0);
        slab.batch = Some(1 << 15);
        slab.cumulative_ms = vec![0.1, 0.2, 0.3];
        let mut wd = slab.clone();
        wd.op = SlabOp::Rebuild;
        wd.scheme = "warpdrive";
        wd.cumulative_ms = vec![0.1, 0.5, 1.2];
        let svg = render(&fake(SlabPreset::SlabFig6, vec![slab, wd])).unwrap();
        assert!(svg.contains("warpdrive rebuild") && svg.contains("batches of 2^15"));

        let fig7: Vec<SlabRow> = [Mix::G0, Mix::G1, Mix::G2]
            .into_iter()
            .map(|m| {
                let mut r = row("fig7", SlabOp::Concurrent, 1 << 22, 1.0);
                r.mix = Some(m);
                r.utilization = Some(0.5);
                r
            })
            .collect();
        assert!(render(&fake(SlabPreset::SlabFig7, fig7))
            .unwrap()
            .contains("G2 u32/u32"));

        let alloc = vec![
            row("alloc", SlabOp::Alloc, 1 << 20, 1.0),
            row("alloc", SlabOp::Free, 1 << 20, 1.0),
        ];
        assert!(render(&fake(SlabPreset::SlabAlloc, alloc))
            .unwrap()
            .contains("free"));

        let compare: Vec<SlabRow> = [SlabOp::Build, SlabOp::SearchHit, SlabOp::Concurrent]
            .into_iter()
            .map(|op| row("compare", op, 1 << 24, 1.5))
            .collect();
        let r = fake(SlabPreset::SlabCompare, compare);
        assert_eq!(r.targets.len(), 3);
        let svg = render(&r).unwrap();
        assert!(svg.contains("SlabHash") && svg.contains("1 build"));
        // An empty report still draws.
        assert!(render(&fake(SlabPreset::SlabFig5, Vec::new())).is_ok());
    }
}
