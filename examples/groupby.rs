//! A group-by on TPC-H's lineitem: `SUM(l_quantity)`, `COUNT(*)`, `MIN(l_quantity)`,
//! `MAX(l_quantity)` and `MEAN(l_quantity)` per supplier (`GROUP BY l_suppkey`), through
//! [`warpmap::ops::group_by`]: on the GPU when there is one (one pass over the rows into a group
//! table, every aggregate and the count at once), else on the CPU backend (reduce by key, a table
//! per aggregate). The rows are generated in memory by the `tpchgen` crate (the official dbgen's
//! rows; no download), and every group is checked against a fold of the rows on the host.
//!
//! Run: `cargo run --release --example groupby [SF]` (default scale factor 0.1: 600 k lineitems,
//! 1 000 suppliers). The time includes moving the rows to the GPU and the groups back; the
//! device-resident group-by and its benchmark are `warpmap workload tpch`.

use std::collections::HashMap;
use std::time::Instant;
use tpchgen::generators::LineItemGenerator;
use warpmap::ops::{group_by, Aggregate, AggregateColumn, Engine};
use warpmap::Result;

fn main() -> Result<()> {
    let sf: f64 = match std::env::args().nth(1) {
        Some(s) => s.parse().expect("SF: a TPC-H scale factor, such as 0.1"),
        None => 0.1,
    };
    let (suppkey, quantity): (Vec<u32>, Vec<i64>) = LineItemGenerator::new(sf, 1, 1)
        .iter()
        .map(|l| (l.l_suppkey as u32, l.l_quantity))
        .unzip();

    // The GPU when there is one, else the CPU backend (looked for once).
    let engine = Engine::Auto.resolved();
    println!(
        "TPC-H SF {sf}: {} lineitems ({})",
        suppkey.len(),
        engine.describe()
    );
    use Aggregate::*;
    let aggregates = [Sum, Count, Min, Max, Mean];
    let start = Instant::now();
    let groups = group_by(&engine, &suppkey, &quantity, &aggregates)?;
    let ms = start.elapsed().as_secs_f64() * 1e3;

    // The host's fold: (sum, count, min, max) per supplier.
    let mut folded: HashMap<u32, (i64, u64, i64, i64)> = HashMap::new();
    for (&s, &q) in suppkey.iter().zip(&quantity) {
        let e = folded.entry(s).or_insert((0, 0, i64::MAX, i64::MIN));
        e.0 += q;
        e.1 += 1;
        e.2 = e.2.min(q);
        e.3 = e.3.max(q);
    }
    assert_eq!(groups.keys.len(), folded.len(), "groups");
    for (i, s) in groups.keys.iter().enumerate() {
        let e = folded[s];
        for column in &groups.columns {
            match column {
                AggregateColumn::Values(v) => assert!(
                    [e.0, e.2, e.3].contains(&v[i]),
                    "supplier {s}: {} is none of its sum, min and max",
                    v[i]
                ),
                AggregateColumn::Counts(c) => assert_eq!(c[i], e.1, "supplier {s}: count"),
                AggregateColumn::Means(m) => {
                    assert!(
                        (m[i] - e.0 as f64 / e.1 as f64).abs() < 1e-9,
                        "supplier {s}: mean"
                    )
                }
            }
        }
        // Each value column in the order asked: SUM, MIN, MAX.
        let values: Vec<i64> = groups
            .columns
            .iter()
            .filter_map(|c| match c {
                AggregateColumn::Values(v) => Some(v[i]),
                _ => None,
            })
            .collect();
        assert_eq!(values, vec![e.0, e.2, e.3], "supplier {s}: SUM, MIN, MAX");
    }
    println!(
        "GROUP BY l_suppkey: {} groups, 5 aggregates in {ms:.1} ms, every group checked against \
         the host",
        groups.keys.len()
    );
    Ok(())
}
