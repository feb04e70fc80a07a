//! The SVG chart of a bench report.
//!
//! - One group size (the default run): G ops/s against load factor, one panel per (scheme, key
//!   and value type, distribution), one line per operation, the roofline (random gather, random
//!   CAS) as dashed horizontal lines.
//! - Several group sizes (`--group-sizes`, the fig7/fig8 presets): the WarpDrive paper's Fig. 7
//!   layout: a row of panels per (scheme, types, distribution) and a panel per operation, G
//!   ops/s against load factor with one line per group size and the operation's roofline
//!   (CAS for insert and erase, gather for the finds) as a dashed line.
//! - Stadium rows (`--scheme stadium`, the stadium preset): the same layout with one line per
//!   ticket size and a row of panels per bucket location; host-bucket panels draw the measured
//!   bound of each table size (random record writes for insert and erase, reads for the finds)
//!   as a dashed line instead of the device roofline.
//!
//! - The mixed experiment (`--ops mixed`, the fig15 preset): the Stadium paper's Fig. 15,
//!   concurrency efficiency (separated time / mixed time) against load factor, a panel per
//!   (bucket location, slice size), a line per ticket size (and WarpDrive's in the device
//!   panels), 1 (no gain, no loss) as a dashed line.
//! - Key/value sizes (the fig19 preset, or one load factor and three or more record sizes): the
//!   paper's Fig. 19: G ops/s against key bytes (8-byte values) and against value bytes
//!   (8-byte keys), a row of panels per bucket location, a line per operation and ticket size
//!   (solid for the largest ticket, dashed for the others); host panels draw the measured
//!   random-write and random-read bounds of each record size as dashed grey lines.
//!
//! Points that failed verification are marked with a black cross.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use warpmap_bench::{BenchResult, Distribution, Op, Preset, Report};

const WIDTH_PER_PANEL: u32 = 620;
const HEIGHT: u32 = 560;
const FIG_PANEL_W: u32 = 560;
const FIG_PANEL_H: u32 = 440;

fn op_color(op: Op) -> RGBColor {
    match op {
        Op::Insert => RGBColor(214, 39, 40),
        Op::FindHit => RGBColor(31, 119, 180),
        Op::FindHalf => RGBColor(148, 103, 189),
        Op::FindMiss => RGBColor(23, 190, 207),
        Op::Contains => RGBColor(44, 160, 44),
        Op::Erase => RGBColor(255, 127, 14),
        Op::Reduce => RGBColor(188, 189, 34),
        Op::FindUnordered => RGBColor(127, 127, 127),
        Op::Mixed => RGBColor(140, 86, 75),
    }
}

fn group_color(g: u32) -> RGBColor {
    match g {
        1 => RGBColor(214, 39, 40),
        2 => RGBColor(255, 127, 14),
        4 => RGBColor(44, 160, 44),
        8 => RGBColor(31, 119, 180),
        16 => RGBColor(148, 103, 189),
        32 => RGBColor(140, 86, 75),
        _ => RGBColor(90, 90, 90),
    }
}

fn s<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// A panel's chart: G ops/s against load factor.
type Panel<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A dashed reference line (a roofline or a measured bound) with its legend entry.
fn reference_line(
    chart: &mut Panel<'_, '_>,
    points: Vec<(f64, f64)>,
    label: String,
    color: RGBColor,
) -> Result<(), String> {
    chart
        .draw_series(DashedLineSeries::new(points, 8, 5, color.stroke_width(2)))
        .map_err(s)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    Ok(())
}

/// The legend box in a panel's upper right corner.
fn legend<'a, 'b: 'a>(chart: &mut Panel<'a, 'b>, font_size: u32) -> Result<(), String> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", font_size))
        .draw()
        .map_err(s)
}

/// A panel group: (scheme, backend, key type, value type, distribution, Stadium location).
type PanelKey = (
    String,
    String,
    &'static str,
    &'static str,
    Distribution,
    Option<&'static str>,
);

fn panel_key(r: &BenchResult) -> PanelKey {
    (
        r.scheme.clone(),
        r.backend.to_string(),
        r.key_type,
        r.value_type,
        r.distribution,
        r.location,
    )
}

/// The line a row belongs to in the series layout: its group size or ticket size.
fn series_key(r: &BenchResult) -> Option<u32> {
    r.group_size.or(r.ticket_bits)
}

/// Distinct panel keys in order of appearance.
fn panel_keys(report: &Report) -> Vec<PanelKey> {
    let mut keys: Vec<PanelKey> = Vec::new();
    for r in &report.results {
        let k = panel_key(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys
}

fn group_sizes(report: &Report) -> Vec<u32> {
    let mut g: Vec<u32> = report.results.iter().filter_map(|r| r.group_size).collect();
    g.sort_unstable();
    g.dedup();
    g
}

fn title(report: &Report) -> String {
    let mut t = format!(
        "warpmap bench: {}, commit {}, {}",
        report.device, report.commit, report.date
    );
    if let Some(k) = report.keys_log2 {
        t += &format!(", n = 2^{k} keys per point");
    }
    if let Some(p) = report.preset {
        t += &format!(" (preset {p})");
    }
    t
}

/// The x range of a set of rows: the load factors, padded.
fn x_range(rows: &[&BenchResult]) -> (f64, f64) {
    let lf_min = rows
        .iter()
        .map(|r| r.load_factor)
        .fold(f64::INFINITY, f64::min);
    let lf_max = rows
        .iter()
        .map(|r| r.load_factor)
        .fold(f64::NEG_INFINITY, f64::max);
    let pad = ((lf_max - lf_min) * 0.08).max(0.05);
    (lf_min - pad, (lf_max + pad).min(1.05))
}

/// The chart as SVG text.
pub fn render(report: &Report) -> Result<String, String> {
    if report.results.iter().any(|r| r.op == Op::Mixed) {
        return render_mixed(report);
    }
    if is_size_sweep(report) {
        return render_sizes(report);
    }
    if group_sizes(report).len() > 1 || report.results.iter().any(|r| r.ticket_bits.is_some()) {
        render_by_group_size(report)
    } else {
        render_by_op(report)
    }
}

/// One panel per (scheme, types, distribution), one line per operation.
fn render_by_op(report: &Report) -> Result<String, String> {
    let groups = panel_keys(report);
    let several_dists = groups
        .iter()
        .any(|g| g.4 != groups.first().map(|f| f.4).unwrap_or(g.4));
    let panels = groups.len().max(1) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH_PER_PANEL * panels, HEIGHT))
            .into_drawing_area();
        root.fill(&WHITE).map_err(s)?;
        let root = root.titled(&title(report), ("sans-serif", 18)).map_err(s)?;
        if groups.is_empty() {
            root.draw(&Text::new("no results", (20, 40), ("sans-serif", 16)))
                .map_err(s)?;
        }
        let areas = root.split_evenly((1, groups.len().max(1)));
        for (area, key) in areas.iter().zip(&groups) {
            let (scheme, backend, kt, vt, dist, _) = key;
            let rows: Vec<&BenchResult> = report
                .results
                .iter()
                .filter(|r| &panel_key(r) == key)
                .collect();
            let (x0, x1) = x_range(&rows);
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

            let caption = if several_dists || *dist != Distribution::Unique {
                format!("{scheme} {kt}/{vt} {dist} ({backend})")
            } else {
                format!("{scheme} {kt}/{vt} ({backend})")
            };
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
                    reference_line(
                        &mut chart,
                        vec![(x0, v), (x1, v)],
                        format!("{name} {v:.2}"),
                        color,
                    )?;
                }
            }
            legend(&mut chart, 13)?;
        }
        root.present().map_err(s)?;
    }
    Ok(svg)
}

/// The paper's Fig. 7 layout: a row per (scheme, types, distribution), a panel per operation,
/// a line per group size.
fn render_by_group_size(report: &Report) -> Result<String, String> {
    let groups = panel_keys(report);
    let ops: Vec<Op> = Op::ALL
        .into_iter()
        .filter(|op| report.results.iter().any(|r| r.op == *op))
        .collect();
    let (nrows, ncols) = (groups.len().max(1), ops.len().max(1));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(
            &mut svg,
            (FIG_PANEL_W * ncols as u32, FIG_PANEL_H * nrows as u32 + 40),
        )
        .into_drawing_area();
        root.fill(&WHITE).map_err(s)?;
        let root = root.titled(&title(report), ("sans-serif", 18)).map_err(s)?;
        let areas = root.split_evenly((nrows, ncols));
        for (gi, key) in groups.iter().enumerate() {
            for (oi, &op) in ops.iter().enumerate() {
                let rows: Vec<&BenchResult> = report
                    .results
                    .iter()
                    .filter(|r| &panel_key(r) == key && r.op == op)
                    .collect();
                fig_panel(report, &areas[gi * ncols + oi], key, op, &rows)?;
            }
        }
        root.present().map_err(s)?;
    }
    Ok(svg)
}

fn fig_panel(
    report: &Report,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    key: &PanelKey,
    op: Op,
    rows: &[&BenchResult],
) -> Result<(), String> {
    let (scheme, backend, kt, vt, dist, location) = key;
    let caption = match location {
        Some(l) => format!("{op}: {scheme} {kt}/{vt}, {dist} keys, {l} buckets ({backend})"),
        None => format!("{op}: {scheme} {kt}/{vt}, {dist} keys ({backend})"),
    };
    if rows.is_empty() {
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 15))
            .margin(12)
            .build_cartesian_2d(0f64..1f64, 0f64..1f64)
            .map_err(s)?;
        chart.configure_mesh().draw().map_err(s)?;
        return Ok(());
    }
    let (roof_name, roof) = if op.writes() {
        ("cas8 roofline", report.roofline.cas8_gops)
    } else {
        ("gather8 roofline", report.roofline.gather8_gops)
    };
    // Host buckets: the measured bound per load factor (the table's size) replaces the roofline.
    let mut bound: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| r.bound_gops.map(|b| (r.load_factor, b)))
        .collect();
    bound.sort_by(|a, b| a.0.total_cmp(&b.0));
    bound.dedup_by(|a, b| a.0 == b.0);
    let roof = if bound.is_empty() { roof } else { None };
    let (x0, x1) = x_range(rows);
    let y_top = rows
        .iter()
        .map(|r| r.gops)
        .chain(roof)
        .chain(bound.iter().map(|b| b.1))
        .fold(0.0f64, f64::max)
        .max(1e-6)
        * 1.6; // the top stays free for the legend
    let x_desc = match (dist, report.zipf.as_ref().map(|z| z.load)) {
        (Distribution::Zipf, Some(warpmap_bench::ZipfLoad::Distinct))
            if report.keys_log2.is_some() =>
        {
            "load factor (occupancy: distinct keys / capacity)"
        }
        (Distribution::Zipf, _) => "load factor (inserted keys / capacity)",
        _ => "load factor",
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 15))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..y_top)
        .map_err(s)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc("G ops/s")
        .x_label_formatter(&|x| format!("{x:.2}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .draw()
        .map_err(s)?;
    let mut gs: Vec<Option<u32>> = rows.iter().map(|r| series_key(r)).collect();
    gs.sort_unstable();
    gs.dedup();
    let tickets = rows.iter().any(|r| r.ticket_bits.is_some());
    for g in gs {
        let mut pts: Vec<(f64, f64, bool)> = rows
            .iter()
            .filter(|r| series_key(r) == g)
            .map(|r| (r.load_factor, r.gops, r.verified))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let color = g.map(group_color).unwrap_or(RGBColor(90, 90, 90));
        let name = match (g, tickets) {
            (Some(t), true) => format!("T = {t} bits"),
            (Some(g), false) => format!("|g| = {g}"),
            (None, _) => "-".into(),
        };
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.1)),
                color.stroke_width(2),
            ))
            .map_err(s)?
            .label(name)
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
    if !bound.is_empty() {
        let color = RGBColor(40, 40, 40);
        let name = if op.writes() {
            "random-write bound (host)"
        } else {
            "random-read bound (host)"
        };
        reference_line(&mut chart, bound, name.to_string(), color)?;
    }
    if let Some(v) = roof {
        let color = RGBColor(40, 40, 40);
        reference_line(
            &mut chart,
            vec![(x0, v), (x1, v)],
            format!("{roof_name} {v:.2}"),
            color,
        )?;
    }
    legend(&mut chart, 12)
}

/// Whether a report is a key/value size sweep: the fig19 preset, or one load factor and three
/// or more (key, value) sizes.
fn is_size_sweep(report: &Report) -> bool {
    if report.preset == Some(Preset::Fig19) {
        return true;
    }
    let mut sizes: Vec<(usize, usize)> = Vec::new();
    let mut lfs: Vec<u64> = Vec::new();
    for r in &report.results {
        if !sizes.contains(&(r.key_bytes, r.value_bytes)) {
            sizes.push((r.key_bytes, r.value_bytes));
        }
        if !lfs.contains(&r.load_factor.to_bits()) {
            lfs.push(r.load_factor.to_bits());
        }
    }
    sizes.len() >= 3 && lfs.len() == 1
}

/// Draws one line with its points, crosses on unverified points, and a legend entry.
fn series(
    chart: &mut Panel<'_, '_>,
    mut pts: Vec<(f64, f64, bool)>,
    name: String,
    color: RGBColor,
    dash: Option<(u32, u32)>,
) -> Result<(), String> {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let line: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
    let style = color.stroke_width(2);
    match dash {
        Some((size, gap)) => chart
            .draw_series(DashedLineSeries::new(line, size, gap, style))
            .map_err(s)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style)),
        None => chart
            .draw_series(LineSeries::new(line, style))
            .map_err(s)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style)),
    };
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
    Ok(())
}

/// The Stadium paper's Fig. 15: concurrency efficiency against load factor, a panel per
/// (bucket location, slice size); WarpDrive rows (no location) go with the device panels.
fn render_mixed(report: &Report) -> Result<String, String> {
    let rows: Vec<&BenchResult> = report
        .results
        .iter()
        .filter(|r| r.op == Op::Mixed)
        .collect();
    let loc = |r: &BenchResult| r.location.unwrap_or("device");
    let mut panels: Vec<(&'static str, usize, &'static str, &'static str)> = Vec::new();
    for r in &rows {
        let k = (loc(r), r.slice_ops.unwrap_or(0), r.key_type, r.value_type);
        if !panels.contains(&k) {
            panels.push(k);
        }
    }
    let mut locs: Vec<&str> = panels.iter().map(|p| p.0).collect();
    locs.dedup();
    let ncols = panels.len().div_ceil(locs.len().max(1)).max(1);
    let nrows = panels.len().div_ceil(ncols).max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(
            &mut svg,
            (FIG_PANEL_W * ncols as u32, FIG_PANEL_H * nrows as u32 + 40),
        )
        .into_drawing_area();
        root.fill(&WHITE).map_err(s)?;
        let root = root.titled(&title(report), ("sans-serif", 18)).map_err(s)?;
        let areas = root.split_evenly((nrows, ncols));
        for (area, key) in areas.iter().zip(&panels) {
            let (l, slice, kt, vt) = *key;
            let prow: Vec<&BenchResult> = rows
                .iter()
                .copied()
                .filter(|r| (loc(r), r.slice_ops.unwrap_or(0), r.key_type, r.value_type) == *key)
                .collect();
            let (x0, x1) = x_range(&prow);
            let y_top = prow
                .iter()
                .filter_map(|r| r.concurrency_efficiency)
                .fold(1.0f64, f64::max)
                * 1.5;
            let mut chart = ChartBuilder::on(area)
                .caption(
                    format!("mixed vs separated: {kt}/{vt}, {l} buckets, slices of {slice} ops"),
                    ("sans-serif", 15),
                )
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(x0..x1, 0f64..y_top)
                .map_err(s)?;
            chart
                .configure_mesh()
                .x_desc("load factor (after the last slice)")
                .y_desc("concurrency efficiency (separated / mixed time)")
                .x_label_formatter(&|x| format!("{x:.2}"))
                .y_label_formatter(&|y| format!("{y:.2}"))
                .draw()
                .map_err(s)?;
            let mut lines: Vec<(String, Option<u32>, Option<u32>)> = Vec::new();
            for r in &prow {
                let k = (r.scheme.clone(), r.ticket_bits, r.group_size);
                if !lines.contains(&k) {
                    lines.push(k);
                }
            }
            for (scheme, t, g) in lines {
                let pts: Vec<(f64, f64, bool)> = prow
                    .iter()
                    .filter(|r| r.scheme == scheme && r.ticket_bits == t && r.group_size == g)
                    .filter_map(|r| {
                        r.concurrency_efficiency
                            .map(|e| (r.load_factor, e, r.verified))
                    })
                    .collect();
                let (name, color) = match (t, g) {
                    (Some(t), _) => (format!("{scheme} T = {t} bits"), group_color(t)),
                    (None, Some(g)) => (format!("{scheme} |g| = {g}"), RGBColor(90, 90, 90)),
                    (None, None) => (scheme.clone(), RGBColor(90, 90, 90)),
                };
                let dash = (t.is_none()).then_some((6, 4));
                series(&mut chart, pts, name, color, dash)?;
            }
            reference_line(
                &mut chart,
                vec![(x0, 1.0), (x1, 1.0)],
                "1: no gain, no loss".into(),
                RGBColor(40, 40, 40),
            )?;
            legend(&mut chart, 12)?;
        }
        root.present().map_err(s)?;
    }
    Ok(svg)
}

/// A size sweep's x-axis name and a row's x (`None`: the row is not in the sweep).
type Sweep = (&'static str, fn(&BenchResult) -> Option<usize>);

/// The Stadium paper's Fig. 19: rate against key bytes (8-byte values) and value bytes (8-byte
/// keys), a row of panels per bucket location.
fn render_sizes(report: &Report) -> Result<String, String> {
    let mut locs: Vec<Option<&'static str>> = Vec::new();
    for r in &report.results {
        if !locs.contains(&r.location) {
            locs.push(r.location);
        }
    }
    let sweeps: [Sweep; 2] = [
        ("key bytes (8-byte values)", |r| {
            (r.value_bytes == 8).then_some(r.key_bytes)
        }),
        ("value bytes (8-byte keys)", |r| {
            (r.key_bytes == 8).then_some(r.value_bytes)
        }),
    ];
    let nrows = locs.len().max(1);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (FIG_PANEL_W * 2, FIG_PANEL_H * nrows as u32 + 40))
                .into_drawing_area();
        root.fill(&WHITE).map_err(s)?;
        let root = root.titled(&title(report), ("sans-serif", 18)).map_err(s)?;
        let areas = root.split_evenly((nrows, 2));
        for (li, l) in locs.iter().enumerate() {
            for (si, (x_name, x_of)) in sweeps.iter().enumerate() {
                let rows: Vec<(&BenchResult, f64)> = report
                    .results
                    .iter()
                    .filter(|r| r.location == *l)
                    .filter_map(|r| x_of(r).map(|x| (r, (x as f64).log2())))
                    .collect();
                let (x0, x1) = rows
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (_, x)| {
                        (a.min(*x), b.max(*x))
                    });
                let (x0, x1) = if x0.is_finite() {
                    (x0 - 0.3, x1 + 0.3)
                } else {
                    (1.0, 9.0)
                };
                let y_top = rows
                    .iter()
                    .flat_map(|(r, _)| [Some(r.gops), r.bound_gops])
                    .flatten()
                    .fold(0.0f64, f64::max)
                    .max(1e-6)
                    * 1.6;
                let lf = rows.first().map(|(r, _)| r.load_factor).unwrap_or(0.0);
                let mut chart = ChartBuilder::on(&areas[li * 2 + si])
                    .caption(
                        format!(
                            "{} buckets: rate vs {x_name}, load factor {lf}",
                            l.unwrap_or("-")
                        ),
                        ("sans-serif", 15),
                    )
                    .margin(12)
                    .x_label_area_size(40)
                    .y_label_area_size(60)
                    .build_cartesian_2d(x0..x1, 0f64..y_top)
                    .map_err(s)?;
                chart
                    .configure_mesh()
                    .x_desc(*x_name)
                    .y_desc("G ops/s")
                    .x_label_formatter(&|x| format!("{:.0}", x.exp2()))
                    .y_label_formatter(&|y| format!("{y:.2}"))
                    .draw()
                    .map_err(s)?;
                let mut tickets: Vec<Option<u32>> =
                    rows.iter().map(|(r, _)| r.ticket_bits).collect();
                tickets.sort_unstable();
                tickets.dedup();
                let t_max = tickets.last().copied().flatten();
                for op in Op::ALL {
                    for &t in &tickets {
                        let pts: Vec<(f64, f64, bool)> = rows
                            .iter()
                            .filter(|(r, _)| r.op == op && r.ticket_bits == t)
                            .map(|(r, x)| (*x, r.gops, r.verified))
                            .collect();
                        if pts.is_empty() {
                            continue;
                        }
                        let dash = match t {
                            _ if t == t_max => None,
                            Some(t) => Some((3 + 3 * t, 4)),
                            None => None,
                        };
                        let name = match t {
                            Some(t) => format!("{op} T = {t}"),
                            None => op.name().to_string(),
                        };
                        series(&mut chart, pts, name, op_color(op), dash)?;
                    }
                }
                for (writes, name) in [(true, "random-write bound"), (false, "random-read bound")] {
                    let mut b: Vec<(f64, f64)> = rows
                        .iter()
                        .filter(|(r, _)| r.op.writes() == writes)
                        .filter_map(|(r, x)| r.bound_gops.map(|g| (*x, g)))
                        .collect();
                    b.sort_by(|a, c| a.0.total_cmp(&c.0));
                    b.dedup_by(|a, c| a.0 == c.0);
                    if !b.is_empty() {
                        let color = if writes {
                            RGBColor(60, 60, 60)
                        } else {
                            RGBColor(160, 160, 160)
                        };
                        reference_line(&mut chart, b, format!("{name} (host)"), color)?;
                    }
                }
                legend(&mut chart, 11)?;
            }
        }
        root.present().map_err(s)?;
    }
    Ok(svg)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use warpmap::table::Backend;
    use warpmap_bench::{BenchResult, Estimate, KvType, Roofline, ZipfInfo, ZipfLoad};

    fn row(
        kb: usize,
        kt: &'static str,
        lf: f64,
        op: Op,
        g: u32,
        dist: Distribution,
    ) -> BenchResult {
        let i = op.index() as f64;
        let gops =
            (8.0 - 3.0 * lf) * (1.0 + i * 0.3) / kb as f64 * 4.0 * (1.0 + (g as f64).log2() * 0.05);
        BenchResult {
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
            group_size: Some(g),
            filter_bits: Some(2),
            memory_bytes: 2000 * 2 * kb,
            min_ms: 1.0,
            max_ms: 1.0,
            failures: Vec::new(),
            distribution: dist,
            distinct: (dist == Distribution::Zipf).then_some(400),
            occupancy: (dist == Distribution::Zipf).then_some(0.2),
            location: None,
            ticket_bits: None,
            insert_strategy: None,
            hybrid_threshold: None,
            bound_ratio: None,
            bound_gops: None,
            host_memory_bytes: None,
            concurrency_efficiency: None,
            separated_ms: None,
            slice_ops: None,
            two_level: None,
            fill: None,
            counters: Default::default(),
        }
    }

    /// A Stadium row: `location` "device" or "host", ticket size `t`.
    pub(crate) fn stadium_row(lf: f64, op: Op, location: &'static str, t: u32) -> BenchResult {
        let host = location == "host";
        let gops = if host { 0.1 } else { 5.0 } * (1.2 - lf) * (1.0 + t as f64 * 0.05);
        let bound = host.then_some(if op.writes() { 0.2 } else { 0.18 } * (1.1 - lf / 4.0));
        BenchResult {
            scheme: "stadium".into(),
            group_size: None,
            filter_bits: None,
            location: Some(location),
            ticket_bits: Some(t),
            bound_gops: bound,
            bound_ratio: match bound {
                Some(b) => Some(gops / b),
                None => Some(gops / 30.0),
            },
            host_memory_bytes: host.then_some(1 << 28),
            gops,
            roofline_ratio: Some(gops / 30.0),
            verified: true,
            ..row(4, "u32", lf, op, 4, Distribution::Unique)
        }
    }

    /// A stadium-preset-like report: both locations, four ticket sizes, four operations.
    pub(crate) fn fake_stadium_report() -> Report {
        let mut results = Vec::new();
        for location in ["device", "host"] {
            for t in [1, 2, 4, 8] {
                for lf in warpmap_bench::DEFAULT_LOAD_FACTORS {
                    for op in [Op::Insert, Op::FindHit, Op::FindHalf, Op::FindMiss] {
                        results.push(stadium_row(lf, op, location, t));
                    }
                }
            }
        }
        let mut r = report(results);
        r.scheme = warpmap_bench::Scheme::Stadium;
        r.ticket_bits = vec![1, 2, 4, 8];
        r.locations = vec!["device", "host"];
        r.group_sizes = Vec::new();
        r.types = vec![KvType::U32];
        r.ops = vec![Op::Insert, Op::FindHit, Op::FindHalf, Op::FindMiss];
        r
    }

    fn report(results: Vec<BenchResult>) -> Report {
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
                host_bounds: Vec::new(),
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
            preset: None,
            keys_log2: None,
            load_factors: warpmap_bench::DEFAULT_LOAD_FACTORS.to_vec(),
            group_sizes: vec![4],
            scheme: warpmap_bench::Scheme::WarpDrive,
            ticket_bits: Vec::new(),
            locations: Vec::new(),
            host_keys_log2: None,
            slice_log2: Vec::new(),
            distributions: vec![Distribution::Unique],
            types: KvType::ALL.to_vec(),
            ops: Op::ALL.to_vec(),
            zipf: None,
            notes: Vec::new(),
            estimate: Estimate {
                sets: 0,
                rows: 0,
                timed_runs: 0,
                tables: 0,
                seconds: 0.0,
                host_bytes: 0,
                device_bytes: 0,
            },
        }
    }

    /// A GPU-like report: rooflines far above the table rates, one unverified point.
    pub(crate) fn fake_report() -> Report {
        let mut results = Vec::new();
        for (kb, kt) in [(4usize, "u32"), (8, "u64")] {
            for lf in warpmap_bench::DEFAULT_LOAD_FACTORS {
                for op in Op::ALL {
                    results.push(row(kb, kt, lf, op, 4, Distribution::Unique));
                }
            }
        }
        report(results)
    }

    /// A fig7 + fig8 like report: six group sizes, two distributions, insert and find_hit.
    pub(crate) fn fake_fig_report() -> Report {
        let lfs = [0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99];
        let mut results = Vec::new();
        for dist in Distribution::ALL {
            for g in [1, 2, 4, 8, 16, 32] {
                for lf in lfs {
                    for op in [Op::Insert, Op::FindHit] {
                        results.push(row(4, "u32", lf, op, g, dist));
                    }
                }
            }
        }
        let mut r = report(results);
        r.keys_log2 = Some(27);
        r.load_factors = lfs.to_vec();
        r.group_sizes = vec![1, 2, 4, 8, 16, 32];
        r.distributions = Distribution::ALL.to_vec();
        r.ops = vec![Op::Insert, Op::FindHit];
        r.types = vec![KvType::U32];
        r.zipf = Some(ZipfInfo {
            s: 1.000001,
            universe_log2: 31,
            load: ZipfLoad::Distinct,
        });
        r
    }

    fn save(name: &str, svg: &str) {
        if let Some(dir) = std::env::var_os("WARPMAP_CHART_OUT") {
            std::fs::write(std::path::Path::new(&dir).join(name), svg).unwrap();
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
        save("fake.svg", &svg);
    }

    #[test]
    fn renders_group_sizes_as_fig7() {
        let svg = render(&fake_fig_report()).unwrap();
        assert!(svg.starts_with("<svg"));
        for label in [
            "|g| = 1",
            "|g| = 32",
            "insert: warpdrive u32/u32, unique keys (gpu)",
            "find_hit: warpdrive u32/u32, zipf keys (gpu)",
            "cas8 roofline 22.00",
            "gather8 roofline 30.00",
            "occupancy",
            "n = 2^27",
        ] {
            assert!(svg.contains(label), "{label} missing");
        }
        save("fake-fig.svg", &svg);
    }

    #[test]
    fn one_group_size_two_distributions_keeps_op_lines() {
        let mut r = fake_report();
        let zipf: Vec<BenchResult> = r
            .results
            .iter()
            .filter(|x| x.key_bytes == 4)
            .map(|x| BenchResult {
                distribution: Distribution::Zipf,
                ..x.clone()
            })
            .collect();
        r.results.extend(zipf);
        let svg = render(&r).unwrap();
        assert!(svg.contains("warpdrive u32/u32 zipf (gpu)"));
        assert!(svg.contains("warpdrive u32/u32 unique (gpu)"));
        assert!(svg.contains("erase"));
    }

    /// Types that share a key type or a width still get a panel each.
    #[test]
    fn every_type_has_its_own_panel() {
        let mut results = Vec::new();
        for (kt, kb, vt, vb) in [
            ("u32", 4, "u32", 4),
            ("u64", 8, "u64", 8),
            ("u32", 4, "u64", 8),
            ("u128", 16, "u64", 8),
        ] {
            for lf in warpmap_bench::DEFAULT_LOAD_FACTORS {
                for op in Op::ALL {
                    results.push(BenchResult {
                        key_type: kt,
                        value_type: vt,
                        value_bytes: vb,
                        ..row(kb, kt, lf, op, 4, Distribution::Unique)
                    });
                }
            }
        }
        let mut r = report(results);
        r.types = KvType::EVERY.to_vec();
        assert_eq!(panel_keys(&r).len(), 4);
        let svg = render(&r).unwrap();
        for label in [
            "warpdrive u32/u32 (gpu)",
            "warpdrive u64/u64 (gpu)",
            "warpdrive u32/u64 (gpu)",
            "warpdrive u128/u64 (gpu)",
        ] {
            assert!(svg.contains(label), "{label} missing");
        }
        // Several group sizes: a row of panels per type.
        for x in r.results.iter_mut().skip(1).step_by(2) {
            x.group_size = Some(16);
        }
        let svg = render(&r).unwrap();
        assert!(svg.contains("insert: warpdrive u128/u64, unique keys (gpu)"));
        assert!(svg.contains("insert: warpdrive u32/u64, unique keys (gpu)"));
        save("fake-types.svg", &svg);
    }

    #[test]
    fn renders_stadium_by_location_and_ticket_size() {
        let r = fake_stadium_report();
        let svg = render(&r).unwrap();
        for label in [
            "T = 1 bits",
            "T = 8 bits",
            "insert: stadium u32/u32, unique keys, device buckets (gpu)",
            "find_half: stadium u32/u32, unique keys, host buckets (gpu)",
            "random-write bound (host)",
            "random-read bound (host)",
            "cas8 roofline 22.00",
        ] {
            assert!(svg.contains(label), "{label} missing");
        }
        save("fake-stadium.svg", &svg);
    }

    #[test]
    fn renders_empty_report() {
        let mut r = fake_report();
        r.results.clear();
        assert!(render(&r).unwrap().contains("no results"));
    }

    /// A fig15-like report: device and host Stadium rows, WarpDrive in the device panels.
    pub(crate) fn fake_mixed_report() -> Report {
        let mut results = Vec::new();
        for slice in [1usize << 17, 1 << 21] {
            for location in ["device", "host"] {
                for t in [1, 8] {
                    for lf in [0.5, 0.8, 0.95] {
                        let mut r = stadium_row(lf, Op::Mixed, location, t);
                        r.slice_ops = Some(slice);
                        r.median_ms = 2.0;
                        r.separated_ms = Some(2.5);
                        r.concurrency_efficiency = Some(1.25 - lf / 10.0 * t as f64 / 8.0);
                        r.verified = !(lf == 0.8 && t == 8 && location == "host");
                        results.push(r);
                    }
                }
            }
            for lf in [0.5, 0.8, 0.95] {
                let mut r = row(4, "u32", lf, Op::Mixed, 4, Distribution::Unique);
                r.slice_ops = Some(slice);
                r.separated_ms = Some(1.6);
                r.concurrency_efficiency = Some(1.6);
                results.push(r);
            }
        }
        // The first row's efficiency, printed by the table test.
        results[0].concurrency_efficiency = Some(1.25);
        let mut r = report(results);
        r.scheme = warpmap_bench::Scheme::Stadium;
        r.ops = vec![Op::Mixed];
        r.slice_log2 = vec![17, 21];
        r.preset = Some(Preset::Fig15);
        r
    }

    #[test]
    fn renders_mixed_as_fig15() {
        let r = fake_mixed_report();
        let svg = render(&r).unwrap();
        for label in [
            "concurrency efficiency",
            "device buckets, slices of 131072 ops",
            "host buckets, slices of 2097152 ops",
            "stadium T = 8 bits",
            "warpdrive |g| = 4",
            "1: no gain, no loss",
        ] {
            assert!(svg.contains(label), "{label} missing");
        }
        save("fake-fig15.svg", &svg);
    }

    #[test]
    fn renders_sizes_as_fig19() {
        let mut results = Vec::new();
        let sizes = [
            (4, 8),
            (8, 8),
            (16, 8),
            (32, 8),
            (64, 8),
            (8, 4),
            (8, 16),
            (8, 32),
            (8, 64),
            (8, 128),
            (8, 256),
        ];
        for (kb, vb) in sizes {
            for location in ["device", "host"] {
                for t in [1, 8] {
                    for op in [Op::Insert, Op::FindHit, Op::Erase] {
                        let mut r = stadium_row(0.85, op, location, t);
                        r.key_bytes = kb;
                        r.value_bytes = vb;
                        r.gops /= ((kb + vb) as f64).sqrt();
                        results.push(r);
                    }
                }
            }
        }
        results[3].verified = false;
        let mut r = report(results);
        assert!(is_size_sweep(&r), "one load factor, many sizes");
        r.preset = Some(Preset::Fig19);
        let svg = render(&r).unwrap();
        for label in [
            "device buckets: rate vs key bytes (8-byte values), load factor 0.85",
            "host buckets: rate vs value bytes (8-byte keys), load factor 0.85",
            "insert T = 1",
            "erase T = 8",
            "random-write bound (host)",
            "random-read bound (host)",
        ] {
            assert!(svg.contains(label), "{label} missing");
        }
        save("fake-fig19.svg", &svg);
        // The stadium preset's report is not a size sweep.
        assert!(!is_size_sweep(&fake_stadium_report()));
    }
}
