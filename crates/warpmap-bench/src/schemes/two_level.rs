//! The two-level cuckoo table in the benchmark: a table per bucket shape ([`TwoLevelShape`]:
//! hash functions × slots per subtable, the paper's "bucket load" axis). The set loop's load
//! factor sizes the table (`capacity = n / lf`: the paper's REG_LOAD axis); a table that splits
//! buckets on the way (a batch that could overflow a bucket) ends below it, so its rows carry
//! the fill reached (`fill`), the memory per key and the scheme's counters (rebuilds, splits,
//! buckets).

use super::{Built, Variant};
use crate::harness::timing::harmonic;
use crate::plan::Op;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use warpmap::table::two_level::{
    slot_bytes, TwoLevelConfig, DEFAULT_HASH_FUNCTIONS, DEFAULT_SLOTS_PER_SUBTABLE,
};
use warpmap::{Gpu, Key, Result, TwoLevel, Value};

/// A bucket shape: `hash_functions` subtables of `slots_per_subtable` slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct TwoLevelShape {
    /// Hash functions (subtables) per bucket, 2..=4.
    pub hash_functions: u32,
    /// Slots per subtable.
    pub slots_per_subtable: u32,
}

impl TwoLevelShape {
    /// The library's default shape.
    pub const DEFAULT: TwoLevelShape = TwoLevelShape {
        hash_functions: DEFAULT_HASH_FUNCTIONS,
        slots_per_subtable: DEFAULT_SLOTS_PER_SUBTABLE,
    };

    /// `d` × `sub`.
    pub const fn new(hash_functions: u32, slots_per_subtable: u32) -> Self {
        TwoLevelShape {
            hash_functions,
            slots_per_subtable,
        }
    }

    /// Slots per bucket.
    pub fn bucket_slots(self) -> u32 {
        self.hash_functions * self.slots_per_subtable
    }

    /// The table's configuration for at least `capacity` slots.
    pub fn config(self, capacity: usize) -> TwoLevelConfig {
        TwoLevelConfig::new(capacity)
            .hash_functions(self.hash_functions)
            .slots_per_subtable(self.slots_per_subtable)
    }

    /// Parses a comma-separated list of shapes (`3x512,4x384`), each checked for u32/u32 and
    /// u64/u64 keys (the build must fit in shared memory).
    pub fn parse_list(s: &str) -> std::result::Result<Vec<TwoLevelShape>, String> {
        let v: Vec<TwoLevelShape> = s
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::parse)
            .collect::<std::result::Result<_, _>>()?;
        if v.is_empty() {
            return Err("no bucket shape given (e.g. 3x512,4x384)".into());
        }
        Ok(v)
    }
}

impl FromStr for TwoLevelShape {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let bad = || {
            format!("'{s}' is not a bucket shape DxSLOTS (hash functions x slots per subtable, e.g. 3x512)")
        };
        let (d, sub) = s.trim().split_once(['x', 'X']).ok_or_else(bad)?;
        let shape = TwoLevelShape::new(
            d.trim().parse().map_err(|_| bad())?,
            sub.trim().parse().map_err(|_| bad())?,
        );
        shape
            .config(1)
            .check(4, 4)
            .map_err(|e| format!("bucket shape {shape}: {e}"))?;
        Ok(shape)
    }
}

impl fmt::Display for TwoLevelShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.hash_functions, self.slots_per_subtable)
    }
}

/// A table per shape.
pub(crate) fn variants(shapes: &[TwoLevelShape]) -> Vec<Variant> {
    shapes
        .iter()
        .map(|&shape| Variant::TwoLevel { shape })
        .collect()
}

/// "3x512".
pub(crate) fn label(shape: TwoLevelShape) -> String {
    shape.to_string()
}

/// A table of at least `capacity` slots of this shape; its rows report the shape and the
/// table's counters.
pub(crate) fn build<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    shape: TwoLevelShape,
    capacity: usize,
) -> Result<Built<K, V>> {
    let t = TwoLevel::<K, V>::new(gpu.clone(), shape.config(capacity))?;
    Ok(Built {
        group_size: None,
        filter_bits: None,
        stadium: None,
        two_level: Some(shape),
        table: Box::new(t),
    })
}

/// Device bytes of a table of `cap` slots (estimate: its slots, rounded up to whole buckets,
/// and a split's second table beside it).
pub(crate) fn device_bytes(shape: TwoLevelShape, kb: usize, vb: usize, cap: f64) -> f64 {
    let b = shape.bucket_slots() as f64;
    2.0 * (cap / b).ceil() * b * slot_bytes(kb, vb) as f64
}

/// Operations per second (the estimate's model): conservative H100 rates; inserts include the
/// multisplit and the bucket builds.
pub(crate) fn op_rate(op: Op) -> f64 {
    let (ins, hit, miss, erase) = (4e9, 12e9, 8e9, 8e9);
    match op {
        Op::Insert | Op::Reduce => ins,
        Op::FindHit | Op::Contains | Op::FindUnordered => hit,
        Op::FindMiss => miss,
        Op::FindHalf => harmonic(hit, miss),
        Op::Erase => erase,
        Op::Mixed => harmonic(ins, hit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_and_check() {
        assert_eq!(
            TwoLevelShape::parse_list("3x512, 4X384").unwrap(),
            vec![TwoLevelShape::new(3, 512), TwoLevelShape::new(4, 384)]
        );
        assert_eq!(TwoLevelShape::DEFAULT.to_string(), "3x512");
        for bad in ["", "3", "3x", "x512", "9x512", "3x8", "4x1024", "ax3"] {
            assert!(TwoLevelShape::parse_list(bad).is_err(), "{bad}");
        }
        assert_eq!(TwoLevelShape::new(4, 384).bucket_slots(), 1536);
    }
}
