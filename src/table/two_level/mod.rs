//! Two-level cuckoo hashing (two-level-cuckoo.txt: HH Hash, after Alcantara's two-level table).
//! Device code: `kernels/two_level.cu`; a CPU twin of the same layout: [`TwoLevelCpu`].
//!
//! **First level**: a hash of the key picks one of `buckets` buckets. An insert batch is split
//! by bucket in one pass of the engine's multisplit ([`multisplit`](crate::table::engine::multisplit);
//! the paper lost 80 % of its time in a merge sort by bucket).
//!
//! **Second level**: a bucket is `d` subtables ([`TwoLevelConfig::hash_functions`], default 3)
//! of [`TwoLevelConfig::slots_per_subtable`] slots, cut into cells of one 32-byte memory sector
//! ([`cell_slots`]: 4 slots of a 4-byte key and value, else 2). A key has one candidate cell per
//! subtable ([`cell_of`]), under the bucket's own seed; its first choice is spread over all
//! subtables. An insert rebuilds only the buckets the batch touches: one thread block per bucket
//! loads the bucket into shared memory, merges the batch's keys (present keys are updated or
//! kept, duplicates in the batch enter once), cuckoo-hashes all of them in shared memory
//! (Alcantara's parallel rounds, with cells and a queue: a key takes the first free slot of its
//! current cell, or, the cell being full, exchanges itself into one of its slots with
//! `atomicExch`, and the key it displaces is queued for its next cell; after the first round
//! only queued keys are placed), and writes the bucket back with one coalesced store. A bucket with no layout within
//! [`TwoLevelConfig::max_probes`] rounds is rebuilt with a new seed ([`next_seed`]), at most
//! [`TwoLevelConfig::max_rebuilds`] times (counted: [`TwoLevelStats`]). The batch travels to
//! the buckets with each key's value beside it, so the build reads values in order.
//!
//! **Lookups** (a thread per key) read the key's cells in order, one sector each, and stop at
//! the cell that holds the key or at the first with an empty slot: a key moves on from a cell
//! only when that cell is full, and a full cell never gets an empty slot back (erase leaves a
//! tombstone, which the next rebuild of the bucket drops). Most hits read one sector, most
//! misses one or two; this is where the table departs from Alcantara's slot-per-function layout
//! (which reads `d` sectors per miss and, at load 0.8 with 3 functions, about 1.9 per hit).
//!
//! **The stash** (what holds load 0.95): a bucket's share of the keys varies (at load 0.95 a
//! bucket of 1536 slots averages 1459 keys, sd about 38, and among 10^5 buckets the fullest
//! needs about 1.06 of its slots), so a build takes up to an eighth more keys than its slots
//! ([`extra_items`]; fewer where shared memory is short), and the keys its layout leaves (those
//! beyond its slots, and at most 1/128 of its slots more: else it tries a new seed first) go to
//! one stash for the whole table: an open-addressing table of [`stash_cells`] cells (a slot per
//! [`STASH_FRACTION`] bucket slots) of which at most half is used. A stashed key sets a bit in
//! its bucket's 16-bit mask (kept above the bucket's 48-bit seed, [`SEED_BITS`], so a lookup
//! reads both at once), and a lookup that does not find its key in the bucket's cells probes
//! the stash only when the key's bit is set. Stashed keys stay there until the table
//! re-buckets; a build that finds the stash full fails and the table splits.
//!
//! **Splits and coalescing** (the paper's "when to make more buckets, when to coalesce old
//! buckets"): before a batch that could put more keys in a bucket than it takes
//! ([`TwoLevelConfig::bucket_capacity`]), and after a batch whose keys found no layout even
//! with new seeds (or no room in the stash), the
//! table grows its bucket count and re-buckets every pair ([`grown_buckets`]: to the regular
//! load [`TwoLevelConfig::reg_load`], at least 25 % more buckets); the failed keys are inserted
//! again, so a key is never dropped by a host-slice insert. After an erase that leaves the
//! table below [`TwoLevelConfig::shrink_load`], buckets coalesce: the table re-buckets into
//! fewer ([`shrunk_buckets`]), never fewer than the capacity it was made with asked for.
//! Re-bucketing is host-driven (retrieve on the device, a new table, one insert; keys whose
//! bucket found no layout go in again after a further split), as the issue allows.
//!
//! Keys and values of 4 or 8 bytes ([`supports_widths`]). Keys equal to the internal sentinels
//! (all ones, all ones minus one) live on the side path, so every key value is insertable.
//!
//! # Semantics
//! As every table's ([`HashTable`]), with these particulars:
//! - Duplicates within one insert batch: the key is stored once; one occurrence is reported new,
//!   the others [`UPDATED`](crate::status::UPDATED) (or [`PRESENT`](crate::status::PRESENT)
//!   with [`InsertMode::IfAbsent`](crate::InsertMode::IfAbsent)); with `Assign` the value is one
//!   of the batch's values for it, with `IfAbsent` that of the occurrence reported new.
//! - The table grows instead of filling up: an insert fails only when re-bucketing does not help
//!   (the table is already below a quarter of its regular load: see [`grown_buckets`]), or, for
//!   the device-buffer inserts (which do not retry), when a bucket found no layout; those keys
//!   are reported [`TABLE_FULL`](crate::status::TABLE_FULL), never dropped silently.
//! - Mixed batches are refused on the GPU ([`Error::Unsupported`]): an insert rebuilds whole
//!   buckets in place, which a find in the same launch could see half moved. The CPU twin runs
//!   them in batch order.
//!
//! Measured on an H100 with `warpmap bench --preset two-level-compare` (bench/NOTES.md,
//! "Issue 13"); the CPU twin passes the contract tests and tests/two_level.rs.

mod cpu;

pub use cpu::TwoLevelCpu;

use crate::device::{DeviceBuffer, Gpu, Kernel, KernelArg, Module};
use crate::hash::{fmix32, fmix64, map_to_range, HashFunction, DEFAULT_SEED, GOLDEN};
use crate::kernels::{KernelSource, TWO_LEVEL};
use crate::key::{Key, Value};
use crate::table::engine::multisplit::{multisplit_by, PartFunction, Split};
use crate::table::engine::{
    bulk_grid, check_fits, engine_source, resolve_max_probes, scheme_config, Bulk, GpuTable, Scheme,
};
use crate::table::HashTable;
use crate::{Error, Result};
use std::marker::PhantomData;
use std::sync::Arc;

/// Static shared memory a block may use without opting in (the kernels use static arrays).
pub const SHARED_LIMIT: usize = 48 * 1024;
/// Threads per block of the bucket build (the engine's block).
pub const BUILD_THREADS: usize = crate::table::engine::BLOCK as usize;
/// The default number of hash functions (subtables per bucket).
pub const DEFAULT_HASH_FUNCTIONS: u32 = 3;
/// The default slots per subtable: 3 × 512 = 1536 slots per bucket, whose build fits in 45 KiB
/// of shared memory for 8-byte keys and values. Not yet chosen by measurement.
pub const DEFAULT_SLOTS_PER_SUBTABLE: u32 = 512;
/// The default regular load (the paper's REG_LOAD): buckets are sized for it when the table
/// grows or shrinks.
pub const DEFAULT_REG_LOAD: f64 = 0.8;
/// The default cuckoo rounds of a bucket build before it is rebuilt with a new seed.
pub const DEFAULT_MAX_ITERATIONS: u32 = 128;
/// The default new seeds a bucket build tries before it fails.
pub const DEFAULT_MAX_REBUILDS: u32 = 8;
/// The salt of the first level's seed (the multisplit's): unlike any bucket's seed.
const PART_SALT: u64 = 0x2545_f491_4f6c_dd1d;
/// The salt of the stash's seed.
const STASH_SALT: u64 = 0x6a09_e667_f3bc_c908;
/// The most a bucket may be asked to hold, as a fraction of its slots: a build takes up to an
/// eighth more keys than it has slots ([`extra_items`]) and stashes those it cannot place.
pub const MAX_BUCKET_LOAD: f64 = 1.125;
/// The stash has a slot for every this many slots of the buckets (at least 16 cells), and at
/// most half of its slots are used.
pub const STASH_FRACTION: usize = 64;

/// The parameters of a two-level table.
///
/// ```
/// use warpmap::table::two_level::TwoLevelConfig;
/// let c = TwoLevelConfig::new(1 << 20).hash_functions(4).slots_per_subtable(384).reg_load(0.85);
/// assert_eq!(c.bucket_slots(), 1536);
/// assert!(c.check(4, 4).is_ok());
/// assert!(TwoLevelConfig::new(10).hash_functions(9).check(4, 4).is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct TwoLevelConfig {
    /// Slots the table has at least (the capacity it starts with, and the least it coalesces to).
    pub capacity: usize,
    /// Hash functions, one subtable each, per bucket: 2, 3 or 4.
    pub hash_functions: u32,
    /// Slots per subtable (a bucket has `hash_functions` × this many); the build of a bucket
    /// must fit in [`SHARED_LIMIT`] bytes of shared memory ([`shared_bytes`]).
    pub slots_per_subtable: u32,
    /// The paper's REG_LOAD: the load buckets are sized for when the table grows or shrinks.
    pub reg_load: f64,
    /// A bucket may be asked to hold at most this fraction of its slots (keys beyond what its
    /// cuckoo layout places go to the stash); a batch that could put more keys in one splits
    /// the table first. At most [`MAX_BUCKET_LOAD`], and never more than the build holds
    /// ([`TwoLevelConfig::bucket_capacity`]). Default: 0.85 for 2 functions (below the load
    /// threshold of cuckoo hashing with 2 functions and cells of 2 slots, 0.897), else
    /// [`MAX_BUCKET_LOAD`] (3 or 4 functions place nearly every slot's key; the stash takes
    /// the rest).
    pub max_bucket_load: f64,
    /// Buckets coalesce (the table re-buckets into fewer) when an erase leaves it below this
    /// load. 0 turns coalescing off.
    pub shrink_load: f64,
    /// Cuckoo rounds of a bucket build before it is rebuilt with a new seed (`None`: 128).
    pub max_probes: Option<u32>,
    /// New seeds a bucket build tries before its keys are reported and the table splits.
    pub max_rebuilds: u32,
    /// The seed of the first level and of every bucket's first seed.
    pub seed: u64,
    /// The hash function (MurmurHash3's finaliser or Mueller's hash).
    pub hash: HashFunction,
    /// Buckets the table never coalesces below (0: those of `capacity`, set when the table is
    /// made; re-bucketing keeps it).
    pub min_buckets: u32,
}

scheme_config!(TwoLevelConfig);

impl TwoLevelConfig {
    /// A table of at least `capacity` slots with default parameters.
    pub fn new(capacity: usize) -> Self {
        TwoLevelConfig {
            capacity,
            hash_functions: DEFAULT_HASH_FUNCTIONS,
            slots_per_subtable: DEFAULT_SLOTS_PER_SUBTABLE,
            reg_load: DEFAULT_REG_LOAD,
            max_bucket_load: default_max_bucket_load(DEFAULT_HASH_FUNCTIONS),
            shrink_load: DEFAULT_REG_LOAD / 4.0,
            max_probes: None,
            max_rebuilds: DEFAULT_MAX_REBUILDS,
            seed: DEFAULT_SEED,
            hash: HashFunction::default(),
            min_buckets: 0,
        }
    }
    /// Sets the number of hash functions (and the default bucket load bound for it).
    pub fn hash_functions(mut self, d: u32) -> Self {
        self.hash_functions = d;
        self.max_bucket_load = default_max_bucket_load(d);
        self
    }
    /// Sets the slots per subtable.
    pub fn slots_per_subtable(mut self, s: u32) -> Self {
        self.slots_per_subtable = s;
        self
    }
    /// Sets the regular load (REG_LOAD), and the coalescing bound to a quarter of it.
    pub fn reg_load(mut self, l: f64) -> Self {
        self.reg_load = l;
        self.shrink_load = l / 4.0;
        self
    }
    /// Sets the most a bucket may hold, as a fraction of its slots.
    pub fn max_bucket_load(mut self, l: f64) -> Self {
        self.max_bucket_load = l;
        self
    }
    /// Sets the load below which buckets coalesce (0: never).
    pub fn shrink_load(mut self, l: f64) -> Self {
        self.shrink_load = l;
        self
    }
    /// Sets the new seeds a bucket build tries.
    pub fn max_rebuilds(mut self, r: u32) -> Self {
        self.max_rebuilds = r;
        self
    }
    /// Slots per bucket.
    pub fn bucket_slots(&self) -> u32 {
        self.hash_functions.saturating_mul(self.slots_per_subtable)
    }
    /// Cuckoo rounds per build attempt, resolved.
    pub fn max_iterations(&self) -> Result<u32> {
        resolve_max_probes(self.max_probes, DEFAULT_MAX_ITERATIONS, u32::MAX)
    }

    /// Checks the parameters for keys of `key_bytes` and values of `value_bytes` bytes:
    /// [`Error::InvalidInput`] for a capacity of 0, a function count outside 2..=4, subtables
    /// of fewer than 32 slots, loads out of order (0 ≤ shrink_load < reg_load ≤ 1, reg_load ≤
    /// max_bucket_load ≤ [`MAX_BUCKET_LOAD`]), 0 rounds, or a bucket whose build does not fit
    /// in shared memory;
    /// [`Error::Unsupported`] for widths other than 4 and 8 bytes.
    pub fn check(&self, key_bytes: usize, value_bytes: usize) -> Result<()> {
        if !supports_widths(key_bytes, value_bytes) {
            return Err(Error::Unsupported(format!(
                "two_level stores keys and values of 4 or 8 bytes, not {key_bytes} -> {value_bytes}"
            )));
        }
        if self.capacity == 0 {
            return Err(Error::invalid("capacity must be at least 1"));
        }
        if !(2..=4).contains(&self.hash_functions) {
            return Err(Error::invalid(format!(
                "two_level: {} hash functions (2, 3 or 4)",
                self.hash_functions
            )));
        }
        if self.slots_per_subtable < 32 || self.slots_per_subtable % 4 != 0 {
            return Err(Error::invalid(format!(
                "two_level: {} slots per subtable (a multiple of 4, at least 32: whole cells)",
                self.slots_per_subtable
            )));
        }
        let ordered = 0.0 <= self.shrink_load
            && self.shrink_load < self.reg_load
            && self.reg_load <= self.max_bucket_load.min(1.0)
            && self.max_bucket_load <= MAX_BUCKET_LOAD;
        if !ordered {
            return Err(Error::invalid(format!(
                "two_level loads must satisfy 0 <= shrink_load ({}) < reg_load ({}) <= 1 and \
                 reg_load <= max_bucket_load ({}) <= {MAX_BUCKET_LOAD}",
                self.shrink_load, self.reg_load, self.max_bucket_load
            )));
        }
        self.max_iterations()?;
        let slots = self.bucket_slots() as usize;
        if slots > MAX_BUCKET_SLOTS {
            return Err(Error::invalid(format!(
                "two_level: {slots} slots per bucket (at most {MAX_BUCKET_SLOTS})"
            )));
        }
        let need = shared_bytes(
            self.hash_functions,
            self.slots_per_subtable,
            key_bytes,
            value_bytes,
            0,
        );
        if need > SHARED_LIMIT {
            return Err(Error::invalid(format!(
                "two_level: a bucket of {} × {} slots needs {need} bytes of shared memory to \
                 build with {key_bytes}-byte keys and {value_bytes}-byte values (at most \
                 {SHARED_LIMIT}): use fewer slots per subtable",
                self.hash_functions, self.slots_per_subtable
            )));
        }
        let buckets = buckets_for(self.capacity, slots);
        if buckets >= u32::MAX as u64 {
            return Err(Error::Unsupported(format!(
                "capacity {} needs more than 2^32 - 2 buckets",
                self.capacity
            )));
        }
        Ok(())
    }

    /// Keys one bucket build holds (`TL_ITEMS`) for keys of `key_bytes` and values of
    /// `value_bytes` bytes: its slots and [`extra_items`] more.
    pub fn build_items(&self, key_bytes: usize, value_bytes: usize) -> u32 {
        self.bucket_slots()
            + extra_items(
                self.hash_functions,
                self.slots_per_subtable,
                key_bytes,
                value_bytes,
            )
    }

    /// Keys a build may leave to the stash beyond those its slots cannot hold, before it tries
    /// a new seed (`TL_SLACK`): 1/128 of its slots.
    pub fn build_slack(&self) -> u32 {
        self.bucket_slots() / 128
    }

    /// Keys a bucket may be asked to hold, for keys of `key_bytes` and values of `value_bytes`
    /// bytes: `max_bucket_load` × its slots, at most what its build holds
    /// ([`TwoLevelConfig::build_items`]).
    pub fn bucket_capacity(&self, key_bytes: usize, value_bytes: usize) -> u32 {
        let items = self.build_items(key_bytes, value_bytes);
        ((self.bucket_slots() as f64 * self.max_bucket_load) as u32).clamp(1, items)
    }
}

/// The default bound on a bucket's load for `d` hash functions. The load thresholds of cuckoo
/// hashing with cells of 2 slots are 0.897, 0.988, 0.998 for d = 2, 3, 4 (of 4 slots: 0.980,
/// 0.997, 0.999): with 3 or 4 functions a bucket's layout places nearly every key its slots
/// can hold, and the stash takes the rest (the buckets of a table at load 0.95 vary by a few
/// per cent, some beyond their slots); with 2 a bucket keeps a margin below its threshold.
pub fn default_max_bucket_load(d: u32) -> f64 {
    match d {
        0..=2 => 0.85,
        _ => MAX_BUCKET_LOAD,
    }
}

/// The most slots a bucket may have (item indices are 16-bit; the duplicate filter has at most
/// 2^13 entries).
pub const MAX_BUCKET_SLOTS: usize = 6143;

/// Whether a two-level table stores keys of `key_bytes` and values of `value_bytes` bytes.
pub fn supports_widths(key_bytes: usize, value_bytes: usize) -> bool {
    matches!(key_bytes, 4 | 8) && matches!(value_bytes, 4 | 8)
}

/// Bytes per slot: 8 for a 4-byte key with a 4-byte value, else 16 (`tl_slot`).
pub fn slot_bytes(key_bytes: usize, value_bytes: usize) -> usize {
    if key_bytes == 4 && value_bytes == 4 {
        8
    } else {
        16
    }
}

/// Entries of the build's duplicate filter for `items` items (`TL_CLAIM`): the smallest power
/// of two from 2^9 to 2^13 that is at least 4/3 of them.
pub fn claim_entries(items: usize) -> usize {
    (9..=13)
        .map(|b| 1usize << b)
        .find(|&c| items * 4 / 3 <= c)
        .unwrap_or(1 << 13)
}

/// Static shared memory of the bucket build (`two_level_insert`) with `extra` items beyond
/// the slots (`TL_EXTRA`): keys and values of each item, the slot table (32-bit: the cuckoo
/// rounds exchange into it with atomics), the old slots of the items that were in the bucket
/// (16-bit, one per slot), the duplicate filter (a 32-bit position and a 16-bit item per
/// entry), two placement queues of [`queue_entries`] 16-bit entries, seven counters, and the
/// block sum of the counts (`wm_add_count`, 8 bytes, with up to 8 of alignment).
pub fn shared_bytes(d: u32, sub: u32, key_bytes: usize, value_bytes: usize, extra: u32) -> usize {
    let slots = d as usize * sub as usize;
    let items = slots + extra as usize;
    items * (key_bytes + value_bytes)
        + slots * 4
        + slots * 2
        + claim_entries(slots) * 6
        + 2 * queue_entries(items) * 2
        + 28
        + 16
}

/// Items a bucket build takes beyond its slots (`TL_EXTRA`; they go to the stash): an eighth
/// of the slots, or fewer where shared memory holds fewer ([`shared_bytes`]; 0 where a build
/// without them does not fit).
pub fn extra_items(d: u32, sub: u32, key_bytes: usize, value_bytes: usize) -> u32 {
    let slots = d.saturating_mul(sub);
    (0..=slots / 8)
        .rev()
        .find(|&e| shared_bytes(d, sub, key_bytes, value_bytes, e) <= SHARED_LIMIT)
        .unwrap_or(0)
}

/// Entries of each placement queue of the build (`TL_QUEUE`): a third of the items (at least
/// 8). A round that displaces more fails its attempt, which starts over with a new seed.
pub fn queue_entries(items: usize) -> usize {
    (items / 3).max(8)
}

/// Cells of the stash of a table of `slots` bucket slots with cells of `cell` slots: a slot
/// per [`STASH_FRACTION`] bucket slots, at least 16 cells.
pub fn stash_cells(slots: usize, cell: u32) -> u32 {
    (slots / STASH_FRACTION)
        .div_ceil(cell as usize)
        .clamp(16, u32::MAX as usize) as u32
}

/// Stash slots a table may use: half of them (the builds reserve theirs; a build that finds
/// none fails and the table splits).
pub fn stash_capacity(stash_cells: u32, cell: u32) -> u64 {
    stash_cells as u64 * cell as u64 / 2
}

/// The stash's hash seed for a table seeded `seed`.
pub fn stash_seed(seed: u64) -> u64 {
    seed ^ STASH_SALT
}

/// Buckets for a table of at least `capacity` slots of buckets of `slots` slots.
pub fn buckets_for(capacity: usize, slots: usize) -> u64 {
    (capacity as u64).div_ceil(slots as u64).max(1)
}

/// Buckets that hold `keys` keys at the regular load (at least 1).
pub fn buckets_at_load(config: &TwoLevelConfig, keys: usize) -> u64 {
    let per_bucket = config.bucket_slots() as f64 * config.reg_load;
    ((keys as f64 / per_bucket).ceil() as u64).max(1)
}

/// Buckets after a split: enough for `keys` keys at the regular load, and at least 25 % more
/// than `buckets`.
pub fn grown_buckets(config: &TwoLevelConfig, buckets: u32, keys: usize) -> u64 {
    buckets_at_load(config, keys).max(buckets as u64 + buckets as u64 / 4 + 1)
}

/// Buckets after coalescing, when `keys` keys in `buckets` buckets are below the shrink bound:
/// enough for them at the regular load, never fewer than `min_buckets`; `None` to stay.
pub fn shrunk_buckets(
    config: &TwoLevelConfig,
    buckets: u32,
    min_buckets: u32,
    keys: usize,
) -> Option<u32> {
    let slots = config.bucket_slots() as f64;
    if config.shrink_load <= 0.0 || keys as f64 >= config.shrink_load * slots * buckets as f64 {
        return None;
    }
    let at_load = ((keys as f64 / (slots * config.reg_load)).ceil() as u32).max(1);
    let target = at_load.max(min_buckets);
    (target < buckets).then_some(target)
}

/// Whether a batch whose parts have `part_len(b)` keys may put more than `cap` keys
/// ([`TwoLevelConfig::bucket_capacity`]) in a bucket that holds `count[b]` (an upper bound:
/// present keys and duplicates are counted as new).
pub fn may_overflow(cap: u32, counts: &[u32], part_len: impl Fn(usize) -> u64) -> bool {
    let cap = cap as u64;
    counts
        .iter()
        .enumerate()
        .any(|(b, &c)| c as u64 + part_len(b) > cap)
}

/// The first level: which of `buckets` buckets a key goes to (the multisplit's part function).
pub fn part_function(config: &TwoLevelConfig, buckets: u32) -> PartFunction {
    PartFunction::new(buckets, config.seed ^ PART_SALT).hash(config.hash)
}

/// Bits of a bucket's seed (`TL_SEED_BITS`): the GPU table keeps the bucket's 16-bit stash
/// mask above them in the same word, so that a lookup reads both at once.
pub const SEED_BITS: u32 = 48;

/// Bucket `b`'s first seed.
pub fn initial_seed(seed: u64, bucket: u32) -> u64 {
    fmix64(seed ^ (bucket as u64 + 1).wrapping_mul(GOLDEN)) & ((1 << SEED_BITS) - 1)
}

/// The seed a bucket is rebuilt with after `seed` found no layout (`tl_next_seed`).
pub fn next_seed(seed: u64) -> u64 {
    fmix64(seed.wrapping_add(GOLDEN)) & ((1 << SEED_BITS) - 1)
}

/// Cell `j` (of `d`) of a key in its bucket, from its hash pair `h` under the bucket's seed
/// (`tl_cell`): in subtable `(umulhi(h.1, d) + j) mod d` (the first choices spread over every
/// subtable), at `umulhi(fmix32(h.0 + j h.1), sub_cells)` of its `sub_cells` cells. The cell's
/// slots are `cell × cell_slots ..` ([`cell_slots`]).
pub fn cell_of(h: (u32, u32), j: u32, d: u32, sub_cells: u32) -> u32 {
    let sub = (map_to_range(h.1, d) + j) % d;
    sub * sub_cells + map_to_range(fmix32(h.0.wrapping_add(j.wrapping_mul(h.1))), sub_cells)
}

/// Slots per cell (`TL_CELL`): 32 bytes, one memory sector: 4 packed slots for a 4-byte key
/// with a 4-byte value, else 2.
pub fn cell_slots(key_bytes: usize, value_bytes: usize) -> u32 {
    (32 / slot_bytes(key_bytes, value_bytes)) as u32
}

/// The kernel module for these widths, hash, function count and subtable size.
pub fn kernel_source(
    key_bytes: usize,
    value_bytes: usize,
    hash: HashFunction,
    d: u32,
    sub: u32,
) -> KernelSource {
    engine_source::<TwoLevelView>("two_level", TWO_LEVEL, key_bytes, value_bytes)
        .define("WM_HASH", hash.define())
        .define("TL_D", d)
        .define("TL_SUB", sub)
        .define("TL_EXTRA", extra_items(d, sub, key_bytes, value_bytes))
}

/// Every specialisation the library's defaults and tests ask for (the compile test builds them).
pub fn all_kernel_sources() -> Vec<KernelSource> {
    let mut v = Vec::new();
    for kb in [4, 8] {
        for vb in [4, 8] {
            for h in HashFunction::ALL {
                v.push(kernel_source(kb, vb, h, 3, DEFAULT_SLOTS_PER_SUBTABLE));
            }
            for (d, sub) in [(2, 64), (3, 32), (4, 384), (3, 128)] {
                v.push(kernel_source(kb, vb, HashFunction::default(), d, sub));
            }
            // The registry's "d4/mueller" test configuration.
            v.push(kernel_source(kb, vb, HashFunction::Mueller, 4, 384));
        }
    }
    v
}

/// Counters of a two-level table since it was made (or last re-bucketed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TwoLevelStats {
    /// Bucket builds that started over with a new seed.
    pub rebuilds: u64,
    /// Bucket builds that failed (their new keys were reported): no layout with any seed, or
    /// no room in the stash.
    pub failed_builds: u64,
    /// Stash slots taken (erased keys' tombstones included): keys their bucket's layout did
    /// not place.
    pub stashed: u64,
    /// Bucket builds that found the stash full (counted among `failed_builds`).
    pub stash_full: u64,
    /// Times the table re-bucketed into more buckets (splits).
    pub splits: u64,
    /// Times the table re-bucketed into fewer buckets (coalescing).
    pub coalesces: u64,
}

/// The kernels' view of a two-level table (`tl_view` in `kernels/two_level.cu`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TwoLevelView {
    slots: u64,
    seeds: u64,
    counts: u64,
    side: u64,
    meta: u64,
    stats: u64,
    batch_keys: u64,
    batch_payload: u64,
    batch_offsets: u64,
    stash: u64,
    buckets: u32,
    max_iterations: u32,
    max_rebuilds: u32,
    stash_cells: u32,
    part_seed: u64,
    stash_seed: u64,
}

// SAFETY: #[repr(C)] plain data, the layout of tl_view (size checked by WM_CHECK_VIEW).
unsafe impl KernelArg for TwoLevelView {}

/// The two-level scheme's part of a GPU table (see [`Scheme`]). A table is [`TwoLevel<K, V>`].
pub struct TwoLevelScheme<K: Key, V: Value> {
    config: TwoLevelConfig,
    buckets: u32,
    max_iterations: u32,
    slots: DeviceBuffer<u8>,
    seeds: DeviceBuffer<u64>,
    counts: DeviceBuffer<u32>,
    side: DeviceBuffer<u64>,
    /// Keys their bucket did not place ([`stash_cells`] cells).
    stash: DeviceBuffer<u8>,
    stash_cells: u32,
    /// `[rebuilds, failed builds, stash slots taken, builds that found the stash full]` on the
    /// device.
    stats: DeviceBuffer<u64>,
    /// Splits and coalesces so far (host-side decisions), carried across re-bucketing.
    resizes: (u64, u64),
    /// The last insert batch, split by bucket (keys, their payloads, offsets): the insert
    /// kernel reads it. Kept until the next batch, so it outlives the launch.
    batch: Option<Batch<K>>,
    kernels: Option<(Kernel, Kernel)>,
    _kv: PhantomData<V>,
}

/// A two-level cuckoo table on a GPU: [`GpuTable`] over [`TwoLevelScheme`]. See the
/// [module docs](self).
pub type TwoLevel<K, V> = GpuTable<TwoLevelScheme<K, V>>;

impl<K: Key, V: Value> TwoLevelScheme<K, V> {
    fn slots_total(&self) -> usize {
        self.buckets as usize * self.config.bucket_slots() as usize
    }

    fn seeds_host(&self) -> Vec<u64> {
        (0..self.buckets)
            .map(|b| initial_seed(self.config.seed, b))
            .collect()
    }

    fn kernels(&self) -> Result<&(Kernel, Kernel)> {
        self.kernels
            .as_ref()
            .ok_or_else(|| Error::invalid("two_level: kernels not bound"))
    }
}

// SAFETY: the view holds the addresses of the scheme's own arrays: `buckets` × bucket_slots
// slots of slot_bytes each (what the kernels index for `buckets`, TL_D and TL_SUB, which come
// from the same config), `buckets` seeds and counts, `stash_cells` cells of 32
// bytes (what the kernels index for stash_cells), the 4-word side path and 4 stats words,
// alive as long as the scheme; and of the last batch's split (kept in `batch` until replaced,
// after the launch that reads it was enqueued on the same stream), or 0 with no batch.
unsafe impl<K: Key, V: Value> Scheme for TwoLevelScheme<K, V> {
    type Key = K;
    type Value = V;
    type Config = TwoLevelConfig;
    type View = TwoLevelView;
    const NAME: &'static str = "two_level";
    const NO_MIXED_ERASE: Option<&'static str> =
        Some("an insert rebuilds whole buckets in place; batches are phase-separated");

    /// See [`TwoLevelConfig::check`]; [`Error::OutOfMemory`] when the table exceeds the GPU.
    fn new(gpu: &Arc<Gpu>, mut config: TwoLevelConfig) -> Result<(Self, KernelSource)> {
        config.check(K::BYTES, V::BYTES)?;
        let slots_per_bucket = config.bucket_slots() as usize;
        let buckets = buckets_for(config.capacity, slots_per_bucket) as u32;
        if config.min_buckets == 0 {
            config.min_buckets = buckets;
        }
        let max_iterations = config.max_iterations()?;
        let slot = slot_bytes(K::BYTES, V::BYTES);
        let bytes = buckets as usize * slots_per_bucket * slot;
        let stash_cells = stash_cells(
            buckets as usize * slots_per_bucket,
            cell_slots(K::BYTES, V::BYTES),
        );
        let stash_bytes = stash_cells as usize * 32;
        check_fits(gpu, (bytes + stash_bytes) as u64 + buckets as u64 * 12)?;
        let source = kernel_source(
            K::BYTES,
            V::BYTES,
            config.hash,
            config.hash_functions,
            config.slots_per_subtable,
        );
        let scheme = TwoLevelScheme {
            slots: gpu.alloc::<u8>(bytes)?,
            seeds: gpu.alloc::<u64>(buckets as usize)?,
            counts: gpu.alloc::<u32>(buckets as usize)?,
            side: gpu.alloc::<u64>(4)?,
            stash: gpu.alloc::<u8>(stash_bytes)?,
            stash_cells,
            stats: gpu.alloc::<u64>(4)?,
            resizes: (0, 0),
            batch: None,
            kernels: None,
            config,
            buckets,
            max_iterations,
            _kv: PhantomData,
        };
        Ok((scheme, source))
    }

    fn config(&self) -> &TwoLevelConfig {
        &self.config
    }

    /// The build kernel again (the engine's insert launch gets one block per bucket from
    /// [`insert_kernel`](Scheme::insert_kernel)) and the batch indexer.
    fn bind(&mut self, _gpu: &Gpu, module: &Module) -> Result<()> {
        self.kernels = Some((
            module.kernel("two_level_insert")?,
            module.kernel("two_level_index")?,
        ));
        Ok(())
    }

    fn view(&self, meta: u64) -> TwoLevelView {
        let (batch_keys, batch_payload, batch_offsets) = match &self.batch {
            Some(b) => b.addresses(),
            None => (0, 0, 0),
        };
        TwoLevelView {
            slots: self.slots.device_address(),
            seeds: self.seeds.device_address(),
            counts: self.counts.device_address(),
            side: self.side.device_address(),
            meta,
            stats: self.stats.device_address(),
            batch_keys,
            batch_payload,
            batch_offsets,
            stash: self.stash.device_address(),
            buckets: self.buckets,
            max_iterations: self.max_iterations,
            max_rebuilds: self.config.max_rebuilds,
            stash_cells: self.stash_cells,
            part_seed: self.config.seed ^ PART_SALT,
            stash_seed: stash_seed(self.config.seed),
        }
    }

    fn capacity(&self) -> usize {
        self.slots_total()
    }

    fn group_size(&self) -> u32 {
        1
    }

    fn memory_bytes(&self) -> usize {
        self.slots.num_bytes()
            + self.seeds.num_bytes()
            + self.counts.num_bytes()
            + self.side.num_bytes()
            + self.stash.num_bytes()
            + self.stats.num_bytes()
    }

    /// Every slot (the stash's too) empty (all ones), counts, side path and stats zero, every
    /// bucket at its first seed (its stash mask empty).
    fn clear(&mut self, gpu: &Gpu) -> Result<()> {
        self.batch = None;
        gpu.fill_bytes(&mut self.slots, 0xff)?;
        gpu.fill_bytes(&mut self.stash, 0xff)?;
        gpu.fill_bytes(&mut self.counts, 0)?;
        gpu.fill_bytes(&mut self.side, 0)?;
        gpu.fill_bytes(&mut self.stats, 0)?;
        let seeds = self.seeds_host();
        gpu.copy_to_device(&seeds, &mut self.seeds)
    }

    /// One block per bucket: blocks of buckets the batch does not touch return at once.
    fn insert_kernel(&self, _n: usize) -> Option<(&Kernel, u32)> {
        let (build, _) = self.kernels.as_ref()?;
        Some((build, self.buckets))
    }

    fn check_mixed(&self, _gpu: &Gpu) -> Result<()> {
        Err(Error::Unsupported(
            "two_level: mixed insert/find batches are not supported on the GPU (an insert \
             rebuilds whole buckets in place); run the inserts and the finds as separate batches"
                .into(),
        ))
    }

    fn max_load_factor(&self) -> f64 {
        self.config.reg_load
    }

    /// Splits the batch by bucket (one multisplit pass, each key's value and batch index
    /// travelling with it as its payload); first re-buckets into more buckets while the batch
    /// could overflow one (at most four times, and not beyond twice the buckets the keys need
    /// at the regular load: past that, only duplicates or present keys can be crowding a
    /// bucket, which the build sorts out).
    fn before_insert(
        table: &mut GpuTable<Self>,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        _ops: Option<&DeviceBuffer<u8>>,
        _status: Option<&mut DeviceBuffer<u32>>,
    ) -> Result<()> {
        let n = keys.len();
        if n >= u32::MAX as usize {
            return Err(Error::Unsupported(format!(
                "two_level: an insert batch of {n} keys (at most 2^32 - 2)"
            )));
        }
        let gpu = table.gpu.clone();
        let payload = Payload::pack(table, values)?;
        for attempt in 0.. {
            let config = table.scheme.config.clone();
            let buckets = table.scheme.buckets;
            let split = payload.split(&gpu, keys, &part_function(&config, buckets))?;
            let counts = gpu.download(&table.scheme.counts)?;
            let len = table.len()?;
            let needed = buckets_at_load(&config, len + n);
            let cap = config.bucket_capacity(K::BYTES, V::BYTES);
            let crowded = may_overflow(cap, &counts, |b| split.part_len(b));
            if !crowded || attempt == 4 || buckets as u64 >= 2 * needed.max(1) {
                table.scheme.batch = Some(split);
                return Ok(());
            }
            let grown = grown_buckets(&config, buckets, len + n);
            split_into(table, grown)?;
        }
        unreachable!("the loop returns")
    }

    /// After keys found no layout: more buckets, unless the table is already below a quarter
    /// of its regular load and its stash had room (then more buckets would not help, and the
    /// keys are reported). A full stash (it may hold erased keys' tombstones) is always
    /// answered by re-bucketing, which starts a new one.
    fn grow_table(table: &mut GpuTable<Self>, failed: usize) -> Result<bool> {
        let config = table.scheme.config.clone();
        let len = table.len()?;
        let load = len as f64 / table.scheme.slots_total() as f64;
        if load < config.reg_load / 4.0 && table.stats()?.stash_full == 0 {
            return Ok(false);
        }
        let grown = grown_buckets(&config, table.scheme.buckets, len + failed);
        split_into(table, grown)?;
        Ok(true)
    }

    /// Rebuilds, failed builds, splits, coalesces and the bucket count ([`TwoLevel::stats`]).
    fn counters(table: &GpuTable<Self>) -> Result<Vec<(&'static str, u64)>> {
        let s = table.stats()?;
        Ok(vec![
            ("rebuilds", s.rebuilds),
            ("failed_builds", s.failed_builds),
            ("stashed", s.stashed),
            ("splits", s.splits),
            ("coalesces", s.coalesces),
            ("buckets", table.buckets() as u64),
        ])
    }

    /// Coalesces buckets when the load fell below the shrink bound.
    fn after_erase(table: &mut GpuTable<Self>) -> Result<()> {
        let len = table.len()?;
        let s = &table.scheme;
        if let Some(b) = shrunk_buckets(&s.config, s.buckets, s.config.min_buckets, len) {
            let resizes = (s.resizes.0, s.resizes.1 + 1);
            rebucket(table, b as u64, resizes)?;
        }
        Ok(())
    }
}

/// An insert batch's payloads before the split: each key's value and batch index
/// (`tl_payload` in the kernels: packed in 8 bytes for 4-byte values, 16 otherwise).
enum Payload {
    Narrow(DeviceBuffer<u64>),
    Wide(DeviceBuffer<[u64; 2]>),
}

/// An insert batch split by bucket, with its payloads.
enum Batch<K> {
    Narrow(Split<K, u64>),
    Wide(Split<K, [u64; 2]>),
}

impl Payload {
    /// Packs `values` with their indices on the table's stream (`two_level_index`).
    fn pack<K: Key, V: Value>(table: &TwoLevel<K, V>, values: &DeviceBuffer<V>) -> Result<Self> {
        let gpu = &table.gpu;
        let n = values.len();
        let (_, packer) = table.scheme.kernels()?;
        let view = table.view();
        let grid = bulk_grid(gpu, n as u64);
        if V::BYTES == 4 {
            let mut out = gpu.alloc::<u64>(n)?;
            let bulk = Bulk::values_into(values, &out);
            table.launch(packer, grid, &view, &bulk, |l| {
                l.reads(values).writes(&mut out);
            })?;
            Ok(Payload::Narrow(out))
        } else {
            let mut out = gpu.alloc::<[u64; 2]>(n)?;
            let bulk = Bulk::values_into(values, &out);
            table.launch(packer, grid, &view, &bulk, |l| {
                l.reads(values).writes(&mut out);
            })?;
            Ok(Payload::Wide(out))
        }
    }

    /// The keys and their payloads split by `f` (one multisplit pass).
    fn split<K: Key>(
        &self,
        gpu: &Gpu,
        keys: &DeviceBuffer<K>,
        f: &PartFunction,
    ) -> Result<Batch<K>> {
        Ok(match self {
            Payload::Narrow(p) => Batch::Narrow(multisplit_by(gpu, keys, Some(p), f)?),
            Payload::Wide(p) => Batch::Wide(multisplit_by(gpu, keys, Some(p), f)?),
        })
    }
}

impl<K: Key> Batch<K> {
    /// Keys in part (bucket) `b`.
    fn part_len(&self, b: usize) -> u64 {
        match self {
            Batch::Narrow(s) => s.part_len(b),
            Batch::Wide(s) => s.part_len(b),
        }
    }

    /// The device addresses of the keys, payloads and offsets (the view's `batch_*`).
    fn addresses(&self) -> (u64, u64, u64) {
        fn of<K: Key, P: bytemuck::Pod>(s: &Split<K, P>) -> (u64, u64, u64) {
            (
                s.keys.device_address(),
                s.values.as_ref().map_or(0, |v| v.device_address()),
                s.device_offsets.device_address(),
            )
        }
        match self {
            Batch::Narrow(s) => of(s),
            Batch::Wide(s) => of(s),
        }
    }
}

/// Re-buckets `table` into `buckets` buckets (a split), counting it.
fn split_into<K: Key, V: Value>(table: &mut TwoLevel<K, V>, buckets: u64) -> Result<()> {
    let r = table.scheme.resizes;
    rebucket(table, buckets, (r.0 + 1, r.1))
}

/// Moves every pair into a new table of `buckets` buckets (the same parameters otherwise):
/// retrieve on the device, one insert (the engine's rehash: keys that found no layout go in
/// again after a further split). `resizes` carries the split/coalesce counts over.
fn rebucket<K: Key, V: Value>(
    table: &mut TwoLevel<K, V>,
    buckets: u64,
    resizes: (u64, u64),
) -> Result<()> {
    if buckets >= u32::MAX as u64 {
        return Err(Error::Unsupported(format!(
            "two_level: {buckets} buckets (at most 2^32 - 2)"
        )));
    }
    let slots = buckets as usize * table.scheme.config.bucket_slots() as usize;
    table.rehash(slots)?;
    table.scheme.resizes = resizes;
    Ok(())
}

impl<K: Key, V: Value> TwoLevel<K, V> {
    /// The number of buckets.
    pub fn buckets(&self) -> u32 {
        self.scheme.buckets
    }
    /// Rebuild, failure, stash, split and coalesce counts (rebuilds, failures and the stash
    /// since the last re-bucketing; splits and coalesces since the table was made). Waits for
    /// the stream.
    pub fn stats(&self) -> Result<TwoLevelStats> {
        let s = self.gpu.download(&self.scheme.stats)?;
        Ok(TwoLevelStats {
            rebuilds: s[0],
            failed_builds: s[1],
            stashed: s[2],
            stash_full: s[3],
            splits: self.scheme.resizes.0,
            coalesces: self.scheme.resizes.1,
        })
    }
    /// Keys per bucket (side-path keys not included). Waits for the stream.
    pub fn bucket_counts(&self) -> Result<Vec<u32>> {
        self.gpu.download(&self.scheme.counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_is_the_kernels_layout() {
        // tl_view: ten 8-byte addresses, four u32, the part and stash seeds.
        assert_eq!(std::mem::size_of::<TwoLevelView>(), 10 * 8 + 4 * 4 + 2 * 8);
    }

    #[test]
    fn default_builds_fit_shared_memory() {
        for (kb, vb) in [(4, 4), (4, 8), (8, 4), (8, 8)] {
            assert!(TwoLevelConfig::new(100).check(kb, vb).is_ok());
            let c = TwoLevelConfig::new(100)
                .hash_functions(4)
                .slots_per_subtable(384);
            assert!(c.check(kb, vb).is_ok(), "{kb}/{vb}");
            let too_big = TwoLevelConfig::new(100)
                .hash_functions(4)
                .slots_per_subtable(1024);
            assert!(matches!(too_big.check(kb, vb), Err(Error::InvalidInput(_))));
        }
        // The kernel's static arrays for 8/8 at 3 × 512 without extra items: 48172 bytes at
        // most; shared memory leaves room for 56 more items there (57 made ptxas report
        // 0xc008 bytes), and for an eighth of the slots (192) with 4-byte keys and values.
        assert_eq!(shared_bytes(3, 512, 8, 8, 0), 48172);
        assert_eq!(extra_items(3, 512, 8, 8), 56);
        assert_eq!(extra_items(3, 512, 4, 4), 192);
        assert_eq!(extra_items(4, 384, 4, 4), 192);
        for (d, sub) in [(2, 64), (3, 32), (3, 512), (4, 384)] {
            for (kb, vb) in [(4, 4), (4, 8), (8, 4), (8, 8)] {
                let e = extra_items(d, sub, kb, vb);
                assert!(shared_bytes(d, sub, kb, vb, e) <= SHARED_LIMIT);
                let c = TwoLevelConfig::new(1)
                    .hash_functions(d)
                    .slots_per_subtable(sub);
                assert!(c.bucket_capacity(kb, vb) <= d * sub + e);
            }
        }
    }

    #[test]
    fn bad_configs_are_invalid_input() {
        let bad = [
            TwoLevelConfig::new(0),
            TwoLevelConfig::new(10).hash_functions(1),
            TwoLevelConfig::new(10).hash_functions(5),
            TwoLevelConfig::new(10).slots_per_subtable(8),
            TwoLevelConfig::new(10).slots_per_subtable(66),
            TwoLevelConfig::new(10).reg_load(0.0),
            TwoLevelConfig::new(10).reg_load(1.05),
            TwoLevelConfig::new(10).hash_functions(2).reg_load(0.9),
            TwoLevelConfig::new(10).max_bucket_load(1.5),
            TwoLevelConfig::new(10).shrink_load(0.9),
            TwoLevelConfig::new(10).max_probes(0),
        ];
        for c in bad {
            assert!(
                matches!(c.check(4, 4), Err(Error::InvalidInput(_))),
                "{c:?}"
            );
        }
        assert!(matches!(
            TwoLevelConfig::new(10).check(16, 4),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn growth_and_coalescing_policy() {
        let c = TwoLevelConfig::new(1);
        let per = c.bucket_slots() as f64 * c.reg_load;
        assert_eq!(grown_buckets(&c, 10, 100), 13); // at least 25 % more
        assert_eq!(grown_buckets(&c, 1, (per * 40.0) as usize), 40);
        assert_eq!(shrunk_buckets(&c, 40, 1, (per * 20.0) as usize), None);
        assert_eq!(shrunk_buckets(&c, 40, 1, 100), Some(1));
        assert_eq!(shrunk_buckets(&c, 40, 8, 100), Some(8));
        assert_eq!(shrunk_buckets(&c.clone().shrink_load(0.0), 40, 1, 0), None);
    }

    #[test]
    fn a_key_has_one_cell_per_subtable() {
        for d in 2..=4 {
            for x in [0u32, 1, 0x8000_0000, u32::MAX, 0x1234_5678] {
                let h = (x, x.rotate_left(7) ^ 0x9e37_79b9);
                let mut subs: Vec<u32> = (0..d).map(|j| cell_of(h, j, d, 24) / 24).collect();
                assert!(subs.iter().all(|&s| s < d));
                subs.sort_unstable();
                subs.dedup();
                assert_eq!(subs.len(), d as usize, "d {d}: {subs:?}");
            }
        }
        assert_eq!(
            (cell_slots(4, 4), cell_slots(4, 8), cell_slots(8, 8)),
            (4, 2, 2)
        );
        assert_ne!(next_seed(1), 1);
        assert_ne!(initial_seed(1, 0), initial_seed(1, 1));
    }
}
