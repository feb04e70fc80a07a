//! A group-by in one call per aggregate: `SUM(amount)`, `COUNT(*)`, `MIN(amount)` and
//! `MAX(amount)` per customer over rows of `(customer, amount)`, by reduce by key
//! ([`HashTable::insert_or_apply`]): on the GPU (WarpDrive) when there is one, else on the CPU
//! backend. Each answer is checked against a fold of the rows on the host.
//!
//! Run: `cargo run --release --example groupby [ROWS]` (default 2^20 rows, 2^16 customers). The
//! times include moving the rows to the GPU and the groups back (`retrieve_all`); the benchmark
//! of the reduction alone is `warpmap bench --ops insert,reduce`.

use std::collections::HashMap;
use std::time::Instant;
use warpmap::ops::Engine;
use warpmap::{Reduce, Result, Value};

fn main() -> Result<()> {
    let rows: usize = match std::env::args().nth(1) {
        Some(s) => s.parse().expect("ROWS: a number of rows"),
        None => 1 << 20,
    };
    let customers = (rows / 16).max(1) as u64;
    // Rows from a xorshift stream: a customer id and an amount in cents (1 to 10 000).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (customer, amount): (Vec<u64>, Vec<u64>) = (0..rows)
        .map(|_| {
            let r = next();
            (r % customers, 1 + (r >> 40) % 10_000)
        })
        .unzip();
    let ones = vec![1u64; rows];

    // The GPU when there is one, else the CPU backend (looked for once).
    let engine = Engine::Auto.resolved();
    let backend = engine.describe();
    println!("{rows} rows over {customers} customers ({backend})");
    for (aggregate, op, values) in [
        ("SUM(amount)", Reduce::Sum, &amount),
        ("COUNT(*)", Reduce::Sum, &ones),
        ("MIN(amount)", Reduce::Min, &amount),
        ("MAX(amount)", Reduce::Max, &amount),
    ] {
        // Room for every customer at a load of one half.
        let capacity = 2 * customers as usize;
        let mut table = engine.table::<u64, u64>(capacity)?;
        let start = Instant::now();
        table.insert_or_apply(&customer, values, op)?;
        let (groups, results) = table.retrieve_all()?;
        let ms = start.elapsed().as_secs_f64() * 1e3;

        let mut expected: HashMap<u64, u64> = HashMap::new();
        for (&c, &v) in customer.iter().zip(values.iter()) {
            expected
                .entry(c)
                .and_modify(|e| *e = e.reduce(v, op))
                .or_insert(v);
        }
        assert_eq!(groups.len(), expected.len(), "{aggregate}: groups");
        for (g, r) in groups.iter().zip(&results) {
            assert_eq!(expected.get(g), Some(r), "{aggregate} of customer {g}");
        }
        println!(
            "{aggregate:>12}: {} groups in {ms:.2} ms, checked against the host",
            groups.len()
        );
    }
    Ok(())
}
