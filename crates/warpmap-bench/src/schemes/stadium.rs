//! Stadium hashing in the benchmark: a table per (bucket location, ticket size). Device-bucket
//! rows compare with the roofline; host-bucket (out-of-core) rows with the bound of their table
//! size measured in the same run (`StadiumInfo::bound`).

use super::{Built, Variant};
use crate::harness::report::HostBound;
use crate::harness::timing::harmonic;
use crate::plan::{dedup_in_place, host_random_rate, Op};
use std::sync::Arc;
use warpmap::table::stadium::{entries_per_word, Location};
use warpmap::{Gpu, InsertStrategy, Key, Result, Stadium, StadiumConfig, Value};

/// "device" or "host" (the rows' `location`; "auto" for an unresolved [`Location::Auto`]).
pub fn location_name(l: Location) -> &'static str {
    match l {
        Location::Device => "device",
        Location::Host => "host",
        Location::Auto => "auto",
    }
}

/// `device`, `host`, `both`, or a comma-separated list of the first two.
pub fn parse_locations(s: &str) -> std::result::Result<Vec<Location>, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.to_ascii_lowercase().as_str() {
            "device" | "in-core" => v.push(Location::Device),
            "host" | "out-of-core" => v.push(Location::Host),
            "both" | "all" => v.extend([Location::Device, Location::Host]),
            other => return Err(format!("unknown location '{other}' (device, host or both)")),
        }
    }
    if v.is_empty() {
        return Err("no location given (device, host or both)".into());
    }
    dedup_in_place(&mut v);
    Ok(v)
}

/// What a Stadium table adds to its rows.
#[derive(Clone, Debug)]
pub(crate) struct StadiumInfo {
    pub location: Location,
    pub ticket_bits: u32,
    /// The table's insert strategy, resolved (the measured hybrid shows its threshold).
    pub strategy: InsertStrategy,
    pub host_memory_bytes: usize,
    /// Host rows: the bound of the table's size.
    pub bound: Option<HostBound>,
}

/// A table per (location, ticket size), locations outermost.
pub(crate) fn variants(locations: &[Location], ticket_bits: &[u32]) -> Vec<Variant> {
    locations
        .iter()
        .flat_map(|&location| {
            ticket_bits
                .iter()
                .map(move |&ticket_bits| Variant::Stadium {
                    location,
                    ticket_bits,
                })
        })
        .collect()
}

/// "host T 4".
pub(crate) fn label(location: Location, ticket_bits: u32) -> String {
    format!("{} T {ticket_bits}", location_name(location))
}

/// A table of at least `capacity` buckets; its rows report the location, ticket size, insert
/// strategy and host memory (the host bound is the caller's to measure).
pub(crate) fn build<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    location: Location,
    ticket_bits: u32,
    capacity: usize,
) -> Result<Built<K, V>> {
    let t = Stadium::<K, V>::new(
        gpu.clone(),
        StadiumConfig::new(capacity)
            .ticket_bits(ticket_bits)
            .location(location),
    )?;
    Ok(Built {
        group_size: None,
        filter_bits: None,
        stadium: Some(StadiumInfo {
            location,
            ticket_bits,
            strategy: t.config().insert_strategy,
            host_memory_bytes: t.host_memory_bytes(),
            bound: None,
        }),
        two_level: None,
        table: Box::new(t),
    })
}

/// Device bytes of a table of `cap` buckets (estimate): the ticket board, and the buckets
/// unless they are in host memory.
pub(crate) fn device_bytes(
    location: Location,
    ticket_bits: u32,
    kb: usize,
    vb: usize,
    cap: f64,
) -> f64 {
    let board = (cap / entries_per_word(ticket_bits) as f64).ceil() * 4.0;
    board
        + match location {
            // Auto: at most device buckets.
            Location::Device | Location::Auto => cap * (kb + vb) as f64,
            Location::Host => 0.0,
        }
}

/// Operations per second (the estimate's model; guesses, not calibrated): device buckets at
/// fixed rates; host buckets at the bus's random-access rate for the table's size
/// (`host_table` bytes) times the expected bucket reads of double hashing at the load factor,
/// filtered by the ticket's info bits.
pub(crate) fn op_rate(
    location: Location,
    ticket_bits: u32,
    lf: f64,
    host_table: f64,
    op: Op,
) -> f64 {
    match location {
        // Auto: the plan's locations are resolved ones; estimate it as in-core.
        Location::Device | Location::Auto => {
            let miss = if ticket_bits >= 4 {
                10e9
            } else {
                (10e9 * (1.0 - lf)).max(1e9)
            };
            match op {
                Op::Insert | Op::Erase | Op::Reduce => 4e9,
                Op::FindHit | Op::Contains | Op::FindUnordered => 5e9,
                Op::FindMiss => miss,
                Op::FindHalf => harmonic(5e9, miss),
                Op::Mixed => harmonic(4e9, 5e9),
            }
        }
        Location::Host => {
            let b = host_random_rate(host_table);
            let a = lf.clamp(0.01, 0.99);
            let fp = 0.5f64.powi(ticket_bits as i32 - 1);
            // Expected host reads per query (double hashing at load a).
            let miss_reads = fp * a / (1.0 - a);
            let hit_reads = 1.0 + fp * ((1.0 / a) * (1.0 / (1.0 - a)).ln() - 1.0).max(0.0);
            let insert_reads = fp * ((-(1.0 - a).ln() - a) / a).max(0.0);
            let board = 1.0 / 10e9;
            let t = |host_accesses: f64| 1.0 / (board + host_accesses / b);
            match op {
                Op::Insert | Op::Reduce => t(1.0 + insert_reads),
                Op::FindHit | Op::Contains | Op::FindUnordered => t(hit_reads),
                Op::FindMiss => t(miss_reads),
                Op::FindHalf => harmonic(t(hit_reads), t(miss_reads)),
                Op::Erase => t(hit_reads),
                Op::Mixed => harmonic(t(1.0 + insert_reads), t(hit_reads)),
            }
        }
    }
}
