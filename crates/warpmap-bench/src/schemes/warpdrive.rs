//! WarpDrive in the benchmark: a table per coalesced group size, sized by its slot layout
//! ([`SlotLayout`]), with the overflow filter the plan asks for.

use super::{Built, Variant};
use crate::harness::timing::harmonic;
use crate::plan::{Op, Plan};
use std::sync::Arc;
use warpmap::table::warpdrive::SlotLayout;
use warpmap::{Gpu, Key, Result, Value, WarpDrive, WarpDriveConfig};

/// A table per group size.
pub(crate) fn variants(group_sizes: &[u32]) -> Vec<Variant> {
    group_sizes
        .iter()
        .map(|&group| Variant::WarpDrive { group })
        .collect()
}

/// "g 8".
pub(crate) fn label(group: u32) -> String {
    format!("g {group}")
}

/// A table of at least `capacity` slots with group size `group` and the plan's overflow
/// filter; its rows report the group size and the filter's bits.
pub(crate) fn build<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    plan: &Plan,
    group: u32,
    capacity: usize,
) -> Result<Built<K, V>> {
    let t = WarpDrive::<K, V>::new(
        gpu.clone(),
        WarpDriveConfig::new(capacity)
            .group_size(group)
            .overflow_filter(plan.overflow_filter),
    )?;
    Ok(Built {
        group_size: Some(t.config().group_size),
        filter_bits: Some(t.filter_bits()),
        stadium: None,
        two_level: None,
        table: Box::new(t),
    })
}

/// Whether mixed batches of `K`/`V` cannot run on this GPU: 16-byte pairs need sm_90's 128-bit
/// CAS.
pub(crate) fn mixed_unsupported<K: Key, V: Value>(gpu: &Gpu) -> bool {
    SlotLayout::for_widths(K::BYTES, V::BYTES) == SlotLayout::Pair16 && gpu.sm() < 90
}

/// Bytes of a table of `cap` slots of `kb` + `vb` bytes (its slot layout).
pub(crate) fn table_bytes(kb: usize, vb: usize, cap: usize) -> usize {
    SlotLayout::for_widths(kb, vb).table_bytes(cap)
}

/// Device bytes of a table of `cap` slots (estimate).
pub(crate) fn device_bytes(kb: usize, vb: usize, cap: f64) -> f64 {
    table_bytes(kb, vb, cap as usize) as f64
}

/// Operations per second (the estimate's model): conservative H100 rates by slot layout, and
/// find_miss falling with the load factor.
pub(crate) fn op_rate(kb: usize, vb: usize, lf: f64, op: Op) -> f64 {
    let (ins, find, erase) = match SlotLayout::for_widths(kb, vb) {
        SlotLayout::Packed8 => (6e9, 12e9, 8e9),
        SlotLayout::Pair16 => (4e9, 8e9, 7e9),
        SlotLayout::Tagged { .. } => (2e9, 4e9, 3.5e9),
    };
    let miss = (65e9 * (1.0 - lf)).clamp(0.4e9, 20e9);
    match op {
        Op::Insert | Op::Reduce => ins,
        Op::FindHit | Op::Contains | Op::FindUnordered => find,
        Op::FindMiss => miss,
        Op::FindHalf => harmonic(find, miss),
        Op::Erase => erase,
        Op::Mixed => harmonic(ins, find),
    }
}
