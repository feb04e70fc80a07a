//! De-duplicating the edges of an undirected graph: an edge list with repeats and both
//! directions (as crawls and joins produce them) goes into a table keyed by the edge, its two
//! vertex ids packed in a `u64` with the smaller first, so that `(u, v)` and `(v, u)` are one
//! key. An insert that keeps the first value ([`InsertMode::IfAbsent`]) stores each edge once
//! with the position of its first occurrence; [`HashTable::retrieve_all`] gives the distinct
//! edges. On the GPU (WarpDrive) when there is one, else on the CPU backend; checked against a
//! `HashMap` of first occurrences on the host.
//!
//! Run: `cargo run --release --example dedup [EDGES]` (default 2^20 edges over 2^16 vertices).
//! The time shown includes moving the edges to the GPU and the distinct ones back.

use std::collections::HashMap;
use std::time::Instant;
use warpmap::ops::Engine;
use warpmap::{InsertMode, InsertStatus, Result};

/// The key of the undirected edge `{u, v}`: the smaller id in the high half.
fn edge_key(u: u32, v: u32) -> u64 {
    let (a, b) = if u <= v { (u, v) } else { (v, u) };
    (a as u64) << 32 | b as u64
}

fn main() -> Result<()> {
    let edges: usize = match std::env::args().nth(1) {
        Some(s) => s.parse().expect("EDGES: a number of edges"),
        None => 1 << 20,
    };
    let vertices = (edges / 16).max(2) as u64;
    // Edges from a xorshift stream between a few vertices, so that repeats are common; every
    // other edge also comes back reversed.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut list: Vec<(u32, u32)> = Vec::with_capacity(edges);
    while list.len() < edges {
        let r = next();
        let (u, v) = ((r % vertices) as u32, ((r >> 32) % vertices) as u32);
        list.push((u, v));
        if list.len() < edges && r & 1 == 1 {
            list.push((v, u));
        }
    }
    let keys: Vec<u64> = list.iter().map(|&(u, v)| edge_key(u, v)).collect();
    let first: Vec<u32> = (0..edges as u32).collect();

    // The GPU when there is one, else the CPU backend (looked for once).
    let engine = Engine::Auto.resolved();
    let backend = engine.describe();
    // Room for every edge at a load of one half (at most as many distinct as there are edges).
    let capacity = (2 * edges).max(1);
    let mut table = engine.table::<u64, u32>(capacity)?;
    let start = Instant::now();
    // One batch: which copy of a repeated key an insert keeps is not ordered within a batch, so
    // the check below accepts any occurrence's position for the edge's value.
    // The statuses say which rows found their edge already there (`was_present`).
    let mut status = vec![InsertStatus::default(); edges];
    table.insert_with_mode(&keys, &first, &mut status, InsertMode::IfAbsent)?;
    let (distinct, at) = table.retrieve_all()?;
    let ms = start.elapsed().as_secs_f64() * 1e3;

    let mut expected: HashMap<u64, Vec<u32>> = HashMap::new();
    for (i, &k) in keys.iter().enumerate() {
        expected.entry(k).or_default().push(i as u32);
    }
    assert_eq!(distinct.len(), expected.len(), "distinct edges");
    let repeats = status.iter().filter(|s| s.was_present()).count();
    assert_eq!(repeats, edges - distinct.len(), "rows reported as repeats");
    for (k, i) in distinct.iter().zip(&at) {
        let occurrences = expected
            .get(k)
            .unwrap_or_else(|| panic!("edge {k:#x} is not in the list"));
        assert!(
            occurrences.contains(i),
            "edge {k:#x} stored with position {i}"
        );
        let (u, v) = list[*i as usize];
        assert_eq!(edge_key(u, v), *k, "the stored position holds the edge");
    }
    println!(
        "{edges} edges over {vertices} vertices: {} distinct undirected edges ({backend}) in \
         {ms:.2} ms, checked against the host",
        distinct.len()
    );
    Ok(())
}
