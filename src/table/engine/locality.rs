//! The locality-partitioned bulk insert: a batch of keys in the order of the table's stretches,
//! so that the inserts in flight hit L2 instead of DRAM.
//!
//! Every GPU hash table inserts a batch in input order, so each insert's first probe (and its
//! CAS) is a random access into a table many times the L2 cache: the random-access bound that
//! every peer obeys (warpdrive.txt §III; on an H100, random CAS on a 2 GiB table runs at
//! ~12.8 G/s, on a 32 MiB one at ~36.5). Here the batch is first split by the engine's one-pass
//! [`multisplit`](super::multisplit) into parts by the *top bits of each key's first probe
//! position*: part `p`'s keys all start in the `p`-th of `parts` equal stretches of the table.
//! The insert then runs over the parts in order with one group per key and no grid stride:
//! blocks are dispatched in index order, so the blocks in flight work on a few consecutive
//! parts, whose stretches of the table stay in L2. The results and statuses are the same as in
//! input order (an insert's outcome does not depend on the batch's order beyond what the
//! schemes already leave unspecified: which copy of a duplicated key wins).
//!
//! A scheme opts in with [`Scheme::locality`](super::Scheme::locality): the seed and hash
//! function of its first probe, which must be `map_to_range(h.x, n)` of the key's first 32-bit
//! hash (WarpDrive's first window), so that [`PartFunction::part_of`] with the same seed and
//! hash gives the stretch. Only inserts without per-key statuses take this path
//! ([`DeviceHashTable::insert_device_async`](crate::DeviceHashTable::insert_device_async) with
//! `None`); with statuses the batch runs in input order.
//!
//! **Scratch:** the batch goes through in chunks of [`Plan::chunk`] keys; each chunk's split
//! takes `chunk × (key + value bytes)` of device memory (plus a few KiB of counts), allocated
//! on the table's stream and freed after the chunk's insert. The chunk is at least
//! [`MIN_CHUNK`] keys, and more where the table is so large that the keys in flight would
//! otherwise spread over more than a quarter of the L2 cache.
//!
//! **When:** [`LocalityMode::Auto`] (the default) partitions when the table is at least twice
//! the L2 cache (a smaller one is in L2 anyway) and the batch is large enough that its keys in
//! flight cover at most a quarter of the L2 cache (see [`plan`]). `WARPMAP_LOCALITY=on` or
//! `=off` overrides `Auto` (for measurements). Measured on an H100: bench/NOTES.md, issue 18.

use super::multisplit::PartFunction;
use crate::device::Gpu;
use crate::hash::HashFunction;

/// Parts of a split: one pass of the counting multisplit serves up to 2^10.
pub const ONE_PASS_PARTS: u32 = 1 << 10;
/// Parts of a split at most (two passes of the counting multisplit).
pub const MAX_PARTS: u32 = 1 << 20;
/// Keys per chunk, at least: the scratch of a chunk of 2^24 u32 pairs is 128 MiB.
pub const MIN_CHUNK: usize = 1 << 24;

/// Whether inserts are partitioned by locality (see the [module docs](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LocalityMode {
    /// When the table and the batch are large enough ([`plan`]).
    #[default]
    Auto,
    /// Every insert batch without statuses (for tests and measurements).
    On,
    /// Never: inserts in input order, as every peer.
    Off,
    /// Every insert batch without statuses, in chunks of this many keys (at least 1): for
    /// tests of the chunked path and for measurements.
    Chunks(usize),
}

impl LocalityMode {
    /// `Auto`, unless `WARPMAP_LOCALITY` says `on` or `off`; `On` and `Off` stay as they are.
    fn resolved(self) -> LocalityMode {
        if self != LocalityMode::Auto {
            return self;
        }
        match std::env::var("WARPMAP_LOCALITY").as_deref().map(str::trim) {
            Ok("on") => LocalityMode::On,
            Ok("off") => LocalityMode::Off,
            _ => LocalityMode::Auto,
        }
    }
}

/// A scheme's locality: how its keys' first probes fall in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Locality {
    /// The seed of the first probe's hash.
    pub seed: u64,
    /// The hash function of the first probe.
    pub hash: HashFunction,
    /// The bytes of the table's arrays that the first probes spread over.
    pub table_bytes: u64,
    /// The table's setting.
    pub mode: LocalityMode,
}

/// How one insert batch is partitioned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The split: parts in the order of the table's stretches.
    pub part: PartFunction,
    /// Keys per chunk (each chunk is split, then inserted).
    pub chunk: usize,
}

/// The machine facts a plan depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    /// L2 cache bytes.
    pub l2_bytes: u64,
    /// Groups (keys) the GPU holds in flight: resident threads / group size.
    pub in_flight: u64,
}

impl Machine {
    /// The facts of `gpu` for groups of `group` threads (2048 resident threads per
    /// multiprocessor, as on every GPU from sm_70 to sm_90).
    pub fn of(gpu: &Gpu, group: u32) -> Machine {
        Machine {
            l2_bytes: gpu.l2_bytes(),
            in_flight: gpu.sm_count() as u64 * 2048 / group.max(1) as u64,
        }
    }
}

/// The plan for a batch of `n` keys, or `None` to insert in input order.
///
/// The keys in flight cover `in_flight / chunk` of the batch's parts in order, so they start in
/// `in_flight × table_bytes / chunk` bytes of the table (when a part holds fewer keys than are in
/// flight). `Auto` partitions when the table is at least twice the L2 cache and that span,
/// with the batch as one chunk, is at most a quarter of it. The chunk is the larger of
/// [`MIN_CHUNK`] and the length that keeps the span within a quarter of L2, and at most the
/// batch. Parts: enough that a part's stretch is at most 1/16 of the L2 cache, at least
/// [`ONE_PASS_PARTS`] (a split of fewer parts costs the same), at most [`MAX_PARTS`].
pub fn plan(loc: &Locality, n: usize, machine: Machine) -> Option<Plan> {
    let quarter = (machine.l2_bytes / 4).max(1);
    // Keys per chunk so that the keys in flight span at most a quarter of L2.
    let local_chunk =
        (machine.in_flight as u128 * loc.table_bytes as u128).div_ceil(quarter as u128);
    let wanted = match loc.mode.resolved() {
        LocalityMode::Off => return None,
        LocalityMode::On => n > 0,
        LocalityMode::Chunks(c) => {
            return (n > 0).then(|| Plan {
                part: parts_for(loc, machine),
                chunk: c.clamp(1, n),
            })
        }
        LocalityMode::Auto => {
            loc.table_bytes >= 2 * machine.l2_bytes && n as u128 >= local_chunk && n > 0
        }
    };
    if !wanted {
        return None;
    }
    let chunk = (local_chunk.min(usize::MAX as u128) as usize)
        .max(MIN_CHUNK)
        .min(n);
    Some(Plan {
        part: parts_for(loc, machine),
        chunk,
    })
}

/// The split of a plan: parts of at most 1/16 of the L2 cache each (see [`plan`]).
fn parts_for(loc: &Locality, machine: Machine) -> PartFunction {
    let stretch = (machine.l2_bytes / 16).max(1);
    let parts = loc
        .table_bytes
        .div_ceil(stretch)
        .next_power_of_two()
        .clamp(ONE_PASS_PARTS as u64, MAX_PARTS as u64) as u32;
    PartFunction::new(parts, loc.seed).hash(loc.hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H100: Machine = Machine {
        l2_bytes: 50 << 20,
        in_flight: 132 * 2048 / 4,
    };

    fn loc(table_bytes: u64, mode: LocalityMode) -> Locality {
        Locality {
            seed: 7,
            hash: HashFunction::default(),
            table_bytes,
            mode,
        }
    }

    #[test]
    fn auto_partitions_large_batches_into_large_tables() {
        // 2^28 slots of 8 bytes (the compare preset at load 0.5): 2 GiB.
        let p = plan(&loc(2 << 30, LocalityMode::Auto), 1 << 27, H100).expect("partitioned");
        assert_eq!(p.part.parts, 1024);
        assert_eq!(p.part.seed, 7);
        // The keys in flight span at most a quarter of L2.
        assert!(H100.in_flight as u128 * (2u128 << 30) / p.chunk as u128 <= (50 << 20) / 4);
        assert!(p.chunk >= MIN_CHUNK && p.chunk <= 1 << 27);
    }

    #[test]
    fn auto_leaves_small_tables_and_small_batches() {
        // A table within twice the L2 cache.
        assert_eq!(
            plan(&loc(80 << 20, LocalityMode::Auto), 1 << 27, H100),
            None
        );
        // A batch whose keys in flight would spread over the whole table.
        assert_eq!(plan(&loc(2 << 30, LocalityMode::Auto), 1 << 20, H100), None);
        assert_eq!(plan(&loc(2 << 30, LocalityMode::Auto), 0, H100), None);
    }

    #[test]
    fn forced_modes() {
        let on = plan(&loc(1 << 10, LocalityMode::On), 100, H100).expect("on");
        assert_eq!((on.chunk, on.part.parts), (100, ONE_PASS_PARTS));
        assert_eq!(plan(&loc(2 << 30, LocalityMode::Off), 1 << 27, H100), None);
        assert_eq!(plan(&loc(1 << 10, LocalityMode::On), 0, H100), None);
        let c = plan(&loc(2 << 30, LocalityMode::Chunks(1000)), 5000, H100).expect("chunks");
        assert_eq!((c.chunk, c.part.parts), (1000, 1024));
        let c = plan(&loc(1 << 10, LocalityMode::Chunks(0)), 5, H100).expect("chunks");
        assert_eq!(c.chunk, 1);
        assert_eq!(plan(&loc(1 << 10, LocalityMode::Chunks(8)), 0, H100), None);
    }

    #[test]
    fn huge_tables_take_more_parts_and_longer_chunks() {
        // 64 GiB: stretches of at most L2/16 need 2^15 parts; chunks grow with the table.
        let p = plan(&loc(64 << 30, LocalityMode::Auto), 1 << 30, H100).expect("partitioned");
        assert_eq!(p.part.parts, 1 << 15);
        assert!(p.chunk > MIN_CHUNK);
    }
}
