//! A hash join on TPC-H: `lineitem ⋈ orders ON l_orderkey = o_orderkey`, its row pairs through
//! [`warpmap::ops::inner_join`] (the build side in a table of its row numbers, the probe side
//! looked up in it), then `COUNT(*)` and `SUM(l_extendedprice)` over the pairs: on the GPU
//! (WarpDrive) when there is one, else on the CPU backend. The rows are generated in memory by
//! the `tpchgen` crate (no download); every pair is checked (each lineitem meets the order of
//! its key, once) and the totals against the host's.
//!
//! Run: `cargo run --release --example join [SF]` (default scale factor 0.1: 600 k lineitems,
//! 150 k orders). The time includes moving the keys to the GPU and the pairs back; the
//! device-resident join and its benchmark are `warpmap workload tpch`.

use std::collections::HashMap;
use std::time::Instant;
use tpchgen::generators::{LineItemGenerator, OrderGenerator};
use warpmap::ops::{inner_join, Engine};
use warpmap::Result;

fn main() -> Result<()> {
    let sf: f64 = match std::env::args().nth(1) {
        Some(s) => s.parse().expect("SF: a TPC-H scale factor, such as 0.1"),
        None => 0.1,
    };
    let o_orderkey: Vec<u32> = OrderGenerator::new(sf, 1, 1)
        .iter()
        .map(|o| o.o_orderkey as u32)
        .collect();
    let (l_orderkey, l_extendedprice): (Vec<u32>, Vec<i64>) = LineItemGenerator::new(sf, 1, 1)
        .iter()
        .map(|l| (l.l_orderkey as u32, l.l_extendedprice.0))
        .unzip();

    let engine = Engine::Auto.resolved();
    println!(
        "TPC-H SF {sf}: {} lineitems, {} orders ({})",
        l_orderkey.len(),
        o_orderkey.len(),
        engine.describe()
    );
    let start = Instant::now();
    // left = the probe side (lineitem), right = the build side (orders).
    let pairs = inner_join(&engine, &l_orderkey, &o_orderkey)?;
    let (count, cents) = pairs.probe.iter().fold((0u64, 0i64), |(n, s), &row| {
        (n + 1, s + l_extendedprice[row as usize])
    });
    let ms = start.elapsed().as_secs_f64() * 1e3;

    // Every pair joins equal keys, and each lineitem meets its order exactly once.
    let order_row: HashMap<u32, u32> = o_orderkey
        .iter()
        .enumerate()
        .map(|(i, &k)| (k, i as u32))
        .collect();
    let mut seen = vec![false; l_orderkey.len()];
    for (&p, &b) in pairs.probe.iter().zip(&pairs.build) {
        assert_eq!(
            order_row.get(&l_orderkey[p as usize]),
            Some(&b),
            "lineitem {p}"
        );
        assert!(!seen[p as usize], "lineitem {p} twice");
        seen[p as usize] = true;
    }
    let want: i64 = l_orderkey
        .iter()
        .zip(&l_extendedprice)
        .filter(|(k, _)| order_row.contains_key(k))
        .map(|(_, &p)| p)
        .sum();
    assert_eq!(
        (count as usize, cents),
        (seen.iter().filter(|&&s| s).count(), want)
    );
    println!(
        "{count} pairs, SUM(l_extendedprice) = {}.{:02} in {ms:.1} ms, every pair checked",
        cents / 100,
        cents % 100
    );
    Ok(())
}
