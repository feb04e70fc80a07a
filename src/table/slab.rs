//! The slab hash: a dynamic hash table with chaining in slab lists, warp-cooperative work
//! sharing and a warp-synchronous slab allocator (slab-hash.txt). Device code:
//! `kernels/slab.cu`; the allocator's memory: [`slab_alloc`].
//!
//! A slab is 32 words that a warp reads in one coalesced load: 15 key-value pairs (key in an
//! even lane, value in the odd lane after it), an auxiliary lane and the address of the next
//! slab. 4-byte keys with 4-byte values use 4-byte words (128-byte slabs, the paper's layout);
//! other pairs of 4- or 8-byte keys and values use 8-byte words (256-byte slabs), so a pair is
//! always placed by one CAS (128-bit on sm_90). `buckets` base slabs start the lists; further
//! slabs come from SlabAlloc's pool, which **grows** by super blocks up to a memory budget
//! (the paper's pool, and the public SlabHash's, is fixed).
//!
//! Every lane of a warp takes one operation; the lanes then run them one at a time (a ballot
//! forms the work queue, the source lane's key is shuffled to all), reading one slab per step.
//! Deletes, and every batch of 8-byte words, do so in half-warp groups: 16 lanes read a slab
//! (a pair per lane), so a warp serves two operations per step, and each group reads the base
//! slabs of its next operations ahead ([`SlabConfig::read_ahead`]). Finds, inserts and mixed
//! batches of 4-byte pairs (128-byte slabs) go further, beyond the paper: the warp copies the
//! 32 slabs its lanes need into shared memory together (`cp.async`, 4 whole slabs per
//! instruction), and each lane scans its own and goes on alone (its walk, its CAS), so a warp
//! has 32 operations in flight in one round trip and spends a few instructions on each.
//! Inserts that need a new slab, CASes that lost, SEARCHALL, FLUSH and the allocator run
//! warp-wide, as in the paper.
//!
//! Two tables share the device code:
//! - [`Slab<K, V>`]: unique keys. `insert` is the paper's REPLACE, `find` SEARCH, `erase`
//!   DELETE (the key becomes a tombstone; [`Slab::flush`] reclaims them). Inserts, finds and
//!   erases may share one concurrent batch ([`HashTable::mixed_batch`],
//!   [`MixedOp::Erase`](crate::MixedOp::Erase) included).
//! - [`SlabMultiMap<K, V>`]: duplicates kept ([`MultiMap`]): INSERT, SEARCHALL
//!   ([`MultiMap::count`], [`MultiMap::find_all`]) and DELETEALL ([`MultiMap::erase_all`]).
//!
//! # Capacity and growth
//!
//! [`SlabConfig::new`]`(capacity)` sizes the base slabs for `capacity` keys at about 10 per
//! bucket (memory utilisation near 0.6, where the paper's table is fastest) and the first pool
//! for about `capacity / 15` slabs. `capacity()` is the pairs its slabs hold now (base and pool),
//! and grows with the pool. Before a batch that may insert, the table adds super blocks when its
//! estimate of free slabs runs short; a key that still finds the pool full gets the status
//! [`TABLE_FULL`](crate::status::TABLE_FULL), and the host-slice inserts then grow the pool and
//! insert it again. Only an exhausted budget ([`SlabConfig::memory_budget`]; by default the
//! device's free memory at creation less 1 GiB or 5 %) or device memory leaves a key out, and
//! then it is reported (a status, [`Error::TableFull`]). Device-buffer inserts report such keys
//! by status and at [`synchronize`](crate::DeviceHashTable::synchronize). The table's
//! [`counters`](crate::DeviceHashTable::counters) say how often it read the exact count
//! (`pool_count_reads`: each a synchronisation) and how many super blocks the pool has.
//!
//! Every key value is insertable: keys equal to the slab's internal markers (all ones, all ones
//! minus one) are kept in two lists of their own.
//!
//! ```no_run
//! use warpmap::{Gpu, HashTable, Slab, SlabConfig};
//! # fn main() -> warpmap::Result<()> {
//! let mut t = Slab::<u32, u32>::new(Gpu::default_gpu()?, SlabConfig::new(1 << 20))?;
//! t.insert(&[1, 2, u32::MAX], &[10, 20, 30])?;
//! t.erase(&[1])?;
//! t.flush()?; // compact the lists, free emptied slabs
//! assert_eq!(t.find(&[1, 2, u32::MAX])?, vec![None, Some(20), Some(30)]);
//! # Ok(()) }
//! ```

use super::slab_alloc::{self, SlabPool};
use crate::device::{DeviceBuffer, Gpu, Kernel, KernelArg, Module};
use crate::error::check_same_len;
use crate::hash::{HashFunction, DEFAULT_SEED};
use crate::kernels::{KernelSource, SLAB};
use crate::key::{Key, Value};
use crate::status::InsertStatus;
use crate::table::engine::{bulk_grid, engine_source, scheme_config, Bulk, GpuTable, Scheme};
use crate::table::{Backend, HashTable, InsertMode, MultiMap};
use crate::{Error, Result};
use std::marker::PhantomData;
use std::sync::Arc;

/// Pairs in a slab (lanes 0..29).
pub const PAIRS_PER_SLAB: usize = 15;
/// Base slabs each kernel's warps read ahead by default ([`SlabConfig::read_ahead`]): insert,
/// find (and SEARCHALL), erase, mixed, per group of 16 lanes (a warp runs two groups), in the
/// kernels that run in half-warp groups (all of 8-byte words; the erase kernel and SEARCHALL of
/// 4-byte pairs: the others run a thread per operation and read no further ahead). Measured
/// on an H100 (u32 pairs, 2^24 keys at utilisation 0.615; bench/NOTES.md): searches run 19.0 G/s
/// reading one slab at a time, 19.7 with 2 ahead, 18.1 with 4; deletes 12.1, 12.1, 11.7; builds
/// 10.5 with 1 or 2; mixed batches 7.4, 7.3, 6.7.
pub const DEFAULT_READ_AHEAD: ReadAhead = ReadAhead {
    insert: 1,
    find: 2,
    erase: 2,
    mixed: 2,
};

/// Base slabs a kernel's warps read ahead of the operation they run (1 to 16 each; 1 is the
/// paper's one slab at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadAhead {
    /// The insert kernel's.
    pub insert: u32,
    /// The find kernel's (and SEARCHALL's).
    pub find: u32,
    /// The erase kernel's.
    pub erase: u32,
    /// The mixed kernel's.
    pub mixed: u32,
}

impl ReadAhead {
    /// The same for every kernel.
    pub fn all(n: u32) -> Self {
        ReadAhead {
            insert: n,
            find: n,
            erase: n,
            mixed: n,
        }
    }
    fn check(self) -> Result<()> {
        for n in [self.insert, self.find, self.erase, self.mixed] {
            if !(1..=16).contains(&n) {
                return Err(Error::invalid(format!(
                    "read-ahead must be 1 to 16, not {n}"
                )));
            }
        }
        Ok(())
    }
}
/// Keys per base slab that [`SlabConfig::new`] sizes the buckets for (memory utilisation about
/// 0.6 with 4-byte pairs).
pub const DEFAULT_KEYS_PER_BUCKET: usize = 10;

/// A slab hash's parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlabConfig {
    /// Keys the table is sized for (it grows beyond).
    pub capacity: usize,
    /// Base slabs (buckets); `None`: `capacity / DEFAULT_KEYS_PER_BUCKET`.
    pub buckets: Option<usize>,
    /// Memory blocks of 1024 slabs per super block (the paper's N_M, 1 to 2^14); `None`: from
    /// the capacity (64 to 1024).
    pub memory_blocks: Option<u32>,
    /// Super blocks of the first pool; `None`: enough for `capacity / 15` slabs.
    pub super_blocks: Option<u32>,
    /// Most device bytes the pool may grow to; `None`: the device's free memory at creation
    /// less 1 GiB or 5 %.
    pub memory_budget: Option<usize>,
    /// Seed of the bucket hash.
    pub seed: u64,
    /// The bucket hash.
    pub hash: HashFunction,
    /// Hashed changes of a warp's resident memory block before its allocation scans every
    /// block ([`slab_alloc::DEFAULT_RESIDENT_PROBES`] by default).
    pub max_probes: Option<u32>,
    /// Base slabs the kernels' warps read ahead ([`DEFAULT_READ_AHEAD`], or the same for every
    /// kernel from the environment's `WARPMAP_SLAB_READ_AHEAD`, for measurements).
    pub read_ahead: ReadAhead,
    /// Duplicates kept (the multimap); set by [`SlabMultiMap`].
    pub(crate) multimap: bool,
}

scheme_config!(SlabConfig);

impl SlabConfig {
    /// The default parameters for about `capacity` keys.
    pub fn new(capacity: usize) -> Self {
        SlabConfig {
            capacity,
            buckets: None,
            memory_blocks: None,
            super_blocks: None,
            memory_budget: None,
            seed: DEFAULT_SEED,
            hash: HashFunction::default(),
            max_probes: None,
            read_ahead: std::env::var("WARPMAP_SLAB_READ_AHEAD")
                .ok()
                .and_then(|v| v.parse().ok())
                .map_or(DEFAULT_READ_AHEAD, ReadAhead::all),
            multimap: false,
        }
    }
    /// Sets the base slabs the kernels read ahead.
    pub fn read_ahead(mut self, r: ReadAhead) -> Self {
        self.read_ahead = r;
        self
    }
    /// Sets the number of base slabs (buckets).
    pub fn buckets(mut self, b: usize) -> Self {
        self.buckets = Some(b);
        self
    }
    /// Sets the memory blocks per super block.
    pub fn memory_blocks(mut self, m: u32) -> Self {
        self.memory_blocks = Some(m);
        self
    }
    /// Sets the super blocks of the first pool.
    pub fn super_blocks(mut self, s: u32) -> Self {
        self.super_blocks = Some(s);
        self
    }
    /// Sets the most device bytes the pool may take.
    pub fn memory_budget(mut self, bytes: usize) -> Self {
        self.memory_budget = Some(bytes);
        self
    }
}

/// Whether the slab hash stores keys of `key_bytes` and values of `value_bytes` bytes (4 or 8
/// each).
pub fn supports_widths(key_bytes: usize, value_bytes: usize) -> bool {
    matches!(key_bytes, 4 | 8) && matches!(value_bytes, 4 | 8)
}

/// Bytes of a slab word: 4 for 4-byte keys with 4-byte values, else 8.
pub fn word_bytes(key_bytes: usize, value_bytes: usize) -> usize {
    if key_bytes == 4 && value_bytes == 4 {
        4
    } else {
        8
    }
}

/// `E[max(1, ceil(c / m))]` for `c ~ Poisson(lambda)`: the expected number of slabs of a list
/// that holds a Poisson number of pairs, `m` per slab (`lambda`: keys per bucket).
pub fn expected_slabs_per_bucket(lambda: f64, m: usize) -> f64 {
    if lambda.is_nan() || lambda <= 0.0 {
        return 1.0;
    }
    let m = m.max(1);
    // Sum the pmf in log space up to far beyond the mean; the tail beyond adds nothing.
    let hi = (lambda + 14.0 * lambda.sqrt() + 40.0).ceil() as usize;
    let (mut ln_p, ln_l) = (-lambda, lambda.ln());
    let (mut sum, mut mass) = (0.0, 0.0);
    for c in 0..=hi {
        if c > 0 {
            ln_p += ln_l - (c as f64).ln();
        }
        let p = ln_p.exp();
        mass += p;
        sum += p * c.div_ceil(m).max(1) as f64;
    }
    // The (negligible) mass beyond `hi`: at least the slabs of `hi` keys.
    sum + (1.0 - mass).max(0.0) * hi.div_ceil(m) as f64
}

/// The expected memory utilisation (the paper's: pair bytes stored over slab bytes used) of
/// `keys` keys hashed uniformly into `buckets` lists of slabs of `slab_bytes` bytes holding
/// [`PAIRS_PER_SLAB`] pairs of `pair_bytes` each: a bucket holds a Poisson number of keys
/// (slab-hash.txt §III-C).
pub fn expected_utilization(
    keys: usize,
    buckets: usize,
    pair_bytes: usize,
    slab_bytes: usize,
) -> f64 {
    if keys == 0 || buckets == 0 {
        return 0.0;
    }
    let lambda = keys as f64 / buckets as f64;
    let slabs = buckets as f64 * expected_slabs_per_bucket(lambda, PAIRS_PER_SLAB);
    (keys * pair_bytes) as f64 / (slabs * slab_bytes as f64)
}

/// The number of buckets whose [`expected_utilization`] for `keys` keys is closest to
/// `utilization` (bisection: the utilisation falls as buckets are added); targets at or above
/// what full slabs reach give 1 bucket. Pairs of `pair_bytes` in slabs of `slab_bytes`.
pub fn buckets_for_slab_utilization(
    keys: usize,
    utilization: f64,
    pair_bytes: usize,
    slab_bytes: usize,
) -> usize {
    let n = keys.max(1);
    if utilization.is_nan() || utilization <= 0.0 {
        return n;
    }
    let u = |b: usize| expected_utilization(n, b, pair_bytes, slab_bytes);
    // With one slab per bucket the utilisation is n·pair/(B·slab): an upper bound at any B.
    let mut hi = ((n * pair_bytes) as f64 / (utilization * slab_bytes as f64)).ceil() as usize + 1;
    let mut lo = 1usize;
    if u(lo) <= utilization {
        return lo;
    }
    // Invariant: u(lo) > utilization >= u(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if u(mid) > utilization {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if (u(lo) - utilization).abs() < (utilization - u(hi)).abs() {
        lo
    } else {
        hi
    }
}

/// Base slabs (`SlabConfig::buckets`) for `keys` keys of `key_bytes` with values of
/// `value_bytes` at the memory utilisation `utilization` expected under uniform hashing
/// ([`buckets_for_slab_utilization`] with this layout's slab); a build measures the real one
/// ([`SlabStats::utilization`]).
pub fn buckets_for_utilization(
    keys: usize,
    utilization: f64,
    key_bytes: usize,
    value_bytes: usize,
) -> usize {
    buckets_for_slab_utilization(
        keys,
        utilization,
        key_bytes + value_bytes,
        32 * word_bytes(key_bytes, value_bytes),
    )
}

/// The module of one specialisation.
pub fn kernel_source(
    key_bytes: usize,
    value_bytes: usize,
    multimap: bool,
    hash: HashFunction,
    read_ahead: ReadAhead,
) -> KernelSource {
    engine_source::<SlabView>("slab", SLAB, key_bytes, value_bytes)
        .define("SL_UNIQUE", u32::from(!multimap))
        .define("WM_HASH", hash.define())
        .define("SL_AHEAD_INSERT", read_ahead.insert)
        .define("SL_AHEAD_FIND", read_ahead.find)
        .define("SL_AHEAD_ERASE", read_ahead.erase)
        .define("SL_AHEAD_MIXED", read_ahead.mixed)
        .define("SL_MIN_BLOCKS", min_blocks_per_sm())
}

/// Blocks per multiprocessor the half-warp insert and mixed kernels (8-byte words) are compiled
/// for (capping their registers at 40: measured on an H100, 6 blocks build 11 % and run mixed
/// batches 15 % faster than the compiler's 48-56 registers, a few spilled words
/// notwithstanding); 0 leaves the choice to the compiler. `WARPMAP_SLAB_MIN_BLOCKS` sets it for
/// measurements. The kernels with a thread per operation (4-byte pairs) are compiled for 4
/// blocks (64 registers: a lane holds a whole slab while it scans; at 6 they spill and ran
/// mixed batches at half the rate).
pub const DEFAULT_MIN_BLOCKS: u32 = 6;

fn min_blocks_per_sm() -> u32 {
    std::env::var("WARPMAP_SLAB_MIN_BLOCKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&b: &u32| b <= 8)
        .unwrap_or(DEFAULT_MIN_BLOCKS)
}

/// Every specialisation (the compile test builds each).
pub fn all_kernel_sources() -> Vec<KernelSource> {
    let mut v = Vec::new();
    for kb in [4, 8] {
        for vb in [4, 8] {
            for multimap in [false, true] {
                for h in HashFunction::ALL {
                    v.push(kernel_source(kb, vb, multimap, h, DEFAULT_READ_AHEAD));
                }
                for r in [1, 8] {
                    let r = ReadAhead::all(r);
                    v.push(kernel_source(kb, vb, multimap, HashFunction::default(), r));
                }
            }
        }
    }
    v
}

/// The slab hash's kernels beyond the five bulk ones.
struct SlabKernels {
    count: Kernel,
    find_all: Kernel,
    flush: Kernel,
    alloc: Kernel,
    free: Kernel,
}

/// The slab hash's part of a [`GpuTable`]: base slabs and the pool.
pub struct SlabScheme<K: Key, V: Value> {
    config: SlabConfig,
    buckets: u32,
    resident_probes: u32,
    /// `buckets + 2` base slabs (the last two: the sentinel keys' lists).
    base: DeviceBuffer<u8>,
    pool: SlabPool,
    kernels: Option<SlabKernels>,
    _kv: PhantomData<(K, V)>,
}

/// The slab hash with unique keys (see the [module docs](self)).
pub type Slab<K, V> = GpuTable<SlabScheme<K, V>>;

/// The table as its kernels see it: twin of `sl_view` in `kernels/slab.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SlabView {
    base: u64,
    super_blocks: u64,
    meta: u64,
    alloc_meta: u64,
    buckets: u32,
    super_block_count: u32,
    memory_blocks: u32,
    resident_probes: u32,
    seed: u64,
}

// SAFETY: #[repr(C)] plain data, the layout of sl_view (size checked by WM_CHECK_VIEW).
unsafe impl KernelArg for SlabView {}

impl<K: Key, V: Value> SlabScheme<K, V> {
    fn slab_bytes() -> usize {
        32 * word_bytes(K::BYTES, V::BYTES)
    }
    fn kernels(&self) -> &SlabKernels {
        self.kernels
            .as_ref()
            .expect("bound when the table was made")
    }
    /// One warp per list (the sentinel lists too).
    fn bucket_grid(&self, gpu: &Gpu) -> u32 {
        bulk_grid(gpu, (self.buckets as u64 + 2) * 32)
    }
}

/// Memory blocks per super block for a table of `capacity` keys: a super block of about a
/// quarter of `capacity / 15` slabs, 64 to 1024 memory blocks.
fn default_memory_blocks(capacity: usize) -> u32 {
    let blocks = (capacity / PAIRS_PER_SLAB / slab_alloc::UNITS / 4).max(1);
    (blocks.next_power_of_two() as u32).clamp(64, 1024)
}

// SAFETY: the view holds the addresses of the scheme's base slabs (buckets + 2 slabs of
// slab_bytes, what the kernels index for `buckets`), of the pool's address array
// (MAX_SUPER_BLOCKS entries, the first `super_block_count` of them super blocks of
// `memory_blocks` memory blocks of slabs and bitmaps, as the kernels lay them out) and of its
// allocation counter, all owned by the scheme and alive as long as it is.
unsafe impl<K: Key, V: Value> Scheme for SlabScheme<K, V> {
    type Key = K;
    type Value = V;
    type Config = SlabConfig;
    type View = SlabView;
    const NAME: &'static str = "slab";

    fn new(gpu: &Arc<Gpu>, config: SlabConfig) -> Result<(Self, KernelSource)> {
        if !supports_widths(K::BYTES, V::BYTES) {
            return Err(Error::Unsupported(format!(
                "the slab hash stores 4- or 8-byte keys and values, not {} ({} bytes) -> {} ({} \
                 bytes)",
                K::NAME,
                K::BYTES,
                V::NAME,
                V::BYTES
            )));
        }
        let buckets = config
            .buckets
            .unwrap_or(config.capacity.div_ceil(DEFAULT_KEYS_PER_BUCKET))
            .max(1);
        if buckets > u32::MAX as usize - 2 {
            return Err(Error::Unsupported(format!(
                "{buckets} buckets: at most 2^32 - 3"
            )));
        }
        let resident_probes = match config.max_probes {
            Some(0) => return Err(Error::invalid("max_probes must be at least 1")),
            Some(p) => p,
            None => slab_alloc::DEFAULT_RESIDENT_PROBES,
        };
        let slab_bytes = Self::slab_bytes();
        let memory_blocks = config
            .memory_blocks
            .unwrap_or_else(|| default_memory_blocks(config.capacity));
        if memory_blocks == 0 || memory_blocks > slab_alloc::MAX_MEMORY_BLOCKS {
            return Err(Error::invalid(format!(
                "memory blocks per super block must be 1 to {}, not {memory_blocks}",
                slab_alloc::MAX_MEMORY_BLOCKS
            )));
        }
        let super_block_slabs = memory_blocks as usize * slab_alloc::UNITS;
        let super_blocks = match config.super_blocks {
            Some(s) => s as usize,
            None => (config.capacity / PAIRS_PER_SLAB * 11 / 10)
                .div_ceil(super_block_slabs)
                .min(slab_alloc::MAX_SUPER_BLOCKS / 2),
        }
        .max(1);
        let base_bytes = (buckets + 2) * slab_bytes;
        let budget = match config.memory_budget {
            Some(b) => b,
            None => {
                let free = gpu.free_memory()?;
                let margin = crate::table::stadium::default_budget_margin(gpu.total_memory());
                free.saturating_sub(margin + base_bytes as u64) as usize
            }
        };
        crate::table::engine::check_fits(gpu, base_bytes as u64)?;
        let mut base = gpu.alloc::<u8>(base_bytes)?;
        gpu.fill_bytes(&mut base, 0xff)?;
        let pool = SlabPool::new(gpu, slab_bytes, memory_blocks, super_blocks, budget)?;
        config.read_ahead.check()?;
        let source = kernel_source(
            K::BYTES,
            V::BYTES,
            config.multimap,
            config.hash,
            config.read_ahead,
        );
        let scheme = SlabScheme {
            config,
            buckets: buckets as u32,
            resident_probes,
            base,
            pool,
            kernels: None,
            _kv: PhantomData,
        };
        Ok((scheme, source))
    }

    fn config(&self) -> &SlabConfig {
        &self.config
    }

    fn bind(&mut self, _gpu: &Gpu, module: &Module) -> Result<()> {
        let k = |op: &str| module.kernel(&format!("slab_{op}"));
        self.kernels = Some(SlabKernels {
            count: k("count")?,
            find_all: k("find_all")?,
            flush: k("flush")?,
            alloc: k("alloc")?,
            free: k("free")?,
        });
        Ok(())
    }

    fn view(&self, meta: u64) -> SlabView {
        SlabView {
            base: self.base.device_address(),
            super_blocks: self.pool.addresses(),
            meta,
            alloc_meta: self.pool.allocated.device_address(),
            buckets: self.buckets,
            super_block_count: self.pool.super_block_count() as u32,
            memory_blocks: self.pool.memory_blocks,
            resident_probes: self.resident_probes,
            seed: self.config.seed,
        }
    }

    fn capacity(&self) -> usize {
        (self.buckets as usize + self.pool.slabs()) * PAIRS_PER_SLAB
    }

    fn group_size(&self) -> u32 {
        1
    }

    fn memory_bytes(&self) -> usize {
        self.base.num_bytes() + self.pool.memory_bytes()
    }

    fn clear(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.fill_bytes(&mut self.base, 0xff)?;
        self.pool.clear(gpu)
    }

    fn check_mixed(&self, gpu: &Gpu) -> Result<()> {
        if word_bytes(K::BYTES, V::BYTES) == 8 && gpu.sm() < 90 {
            return Err(Error::Unsupported(format!(
                "mixed batches of {}→{} slab pairs need a 128-bit CAS (sm_90 or newer); this \
                 GPU is sm_{}",
                K::NAME,
                V::NAME,
                gpu.sm()
            )));
        }
        Ok(())
    }

    fn reserve_for_insert(&mut self, gpu: &Gpu, n: usize) -> Result<()> {
        self.pool.reserve(gpu, n)
    }

    fn grow_after_failures(&mut self, gpu: &Gpu, failed: usize) -> Result<bool> {
        self.pool.grow_for(gpu, failed)
    }

    /// `pool_count_reads`: how often the table read the pool's exact allocation count from the
    /// device (a synchronisation) because its estimate ran short before a batch that may
    /// insert, or after keys found the pool full; `pool_super_blocks`: super blocks in the pool.
    fn counters(table: &GpuTable<Self>) -> Result<Vec<(&'static str, u64)>> {
        Ok(vec![
            ("pool_count_reads", table.scheme.pool.count_reads),
            (
                "pool_super_blocks",
                table.scheme.pool.super_block_count() as u64,
            ),
        ])
    }
}

/// What a slab table holds ([`Slab::stats`], [`SlabMultiMap::stats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct SlabStats {
    /// Base slabs (the two lists of sentinel keys not counted).
    pub buckets: usize,
    /// Bytes of a slab (128 or 256).
    pub slab_bytes: usize,
    /// Bytes of a pair (key + value).
    pub pair_bytes: usize,
    /// Super blocks in the pool.
    pub super_blocks: usize,
    /// Slabs the pool holds (free or not).
    pub pool_slabs: usize,
    /// Pool slabs in lists (allocated).
    pub allocated_slabs: usize,
    /// Pairs stored.
    pub pairs: usize,
}

impl SlabStats {
    /// The paper's memory utilisation: pair bytes stored over the bytes of the slabs in use
    /// (base slabs and allocated ones).
    pub fn utilization(&self) -> f64 {
        let used = (self.buckets + self.allocated_slabs) * self.slab_bytes;
        if used == 0 {
            return 0.0;
        }
        (self.pairs * self.pair_bytes) as f64 / used as f64
    }
}

/// What both slab tables do beyond the traits.
impl<K: Key, V: Value> GpuTable<SlabScheme<K, V>> {
    /// The paper's FLUSH: compacts every list so that its pairs fill its first slabs, and
    /// returns the emptied slabs to the pool (erased keys' tombstones and empty slots are
    /// dropped). A kernel of its own, ordered after earlier batches.
    pub fn flush(&mut self) -> Result<()> {
        let grid = self.scheme.bucket_grid(&self.gpu);
        let (bulk, view) = (Bulk::default(), self.view());
        self.launch(&self.scheme.kernels().flush, grid, &view, &bulk, |_| {})
    }

    /// Counts of what the table holds now (waits for the GPU).
    pub fn stats(&self) -> Result<SlabStats> {
        Ok(SlabStats {
            buckets: self.scheme.buckets as usize,
            slab_bytes: SlabScheme::<K, V>::slab_bytes(),
            pair_bytes: K::BYTES + V::BYTES,
            super_blocks: self.scheme.pool.super_block_count(),
            pool_slabs: self.scheme.pool.slabs(),
            allocated_slabs: self.scheme.pool.allocated(&self.gpu)?,
            pairs: HashTable::len(self)?,
        })
    }

    /// SlabAlloc on its own (for its tests and its rate): allocates `out.len()` slabs, one per
    /// element (each warp serves its 32 elements in turn, as inserts do) and writes their
    /// 32-bit addresses to `out` (all ones where the pool was full). The slabs stay allocated
    /// (unlinked) until [`free_slabs_async`](Self::free_slabs_async) or `clear`.
    pub fn allocate_slabs_async(&mut self, out: &mut DeviceBuffer<u32>) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let grid = bulk_grid(&self.gpu, out.len() as u64);
        let (bulk, view) = (Bulk::words(out), self.view());
        self.launch(&self.scheme.kernels().alloc, grid, &view, &bulk, |l| {
            l.writes(out);
        })
    }

    /// Returns the slabs at `addresses` (from [`allocate_slabs_async`](Self::allocate_slabs_async),
    /// unwritten since; all-ones entries are skipped) to the pool.
    pub fn free_slabs_async(&mut self, addresses: &DeviceBuffer<u32>) -> Result<()> {
        if addresses.is_empty() {
            return Ok(());
        }
        let grid = bulk_grid(&self.gpu, addresses.len() as u64);
        let (bulk, view) = (Bulk::words(addresses), self.view());
        self.launch(&self.scheme.kernels().free, grid, &view, &bulk, |l| {
            l.reads(addresses);
        })
    }

    /// SEARCHALL's first pass: the number of pairs of each key.
    fn count_device(&self, keys: &DeviceBuffer<K>, counts: &mut DeviceBuffer<u32>) -> Result<()> {
        let grid = bulk_grid(&self.gpu, keys.len() as u64);
        let (bulk, view) = (Bulk::keys_words(keys, counts), self.view());
        self.launch(&self.scheme.kernels().count, grid, &view, &bulk, |l| {
            l.reads(keys).writes(counts);
        })
    }

    /// SEARCHALL's second pass: the values of `keys[i]` into `values[offsets[i]..offsets[i + 1]]`.
    fn find_all_device(
        &self,
        keys: &DeviceBuffer<K>,
        offsets: &DeviceBuffer<u64>,
        values: &mut DeviceBuffer<V>,
    ) -> Result<()> {
        let grid = bulk_grid(&self.gpu, keys.len() as u64);
        let (bulk, view) = (
            Bulk::keys_offsets_values(keys, offsets, values),
            self.view(),
        );
        self.launch(&self.scheme.kernels().find_all, grid, &view, &bulk, |l| {
            l.reads(keys).reads(offsets).writes(values);
        })
    }
}

/// The slab hash with duplicate keys (the paper's INSERT, SEARCHALL, DELETEALL): a
/// [`MultiMap`]. See the [module docs](self) for growth and layout.
///
/// ```no_run
/// use warpmap::{Gpu, MultiMap, SlabConfig, SlabMultiMap};
/// # fn main() -> warpmap::Result<()> {
/// let mut m = SlabMultiMap::<u64, u32>::new(Gpu::default_gpu()?, SlabConfig::new(1 << 20))?;
/// m.insert(&[7, 7, 8], &[1, 2, 3])?;
/// assert_eq!(m.count(&[7, 8, 9])?, vec![2, 1, 0]);
/// assert_eq!(m.erase_all(&[7])?, 2);
/// # Ok(()) }
/// ```
pub struct SlabMultiMap<K: Key, V: Value> {
    table: GpuTable<SlabScheme<K, V>>,
}

impl<K: Key, V: Value> SlabMultiMap<K, V> {
    /// An empty multimap on `gpu` (errors as [`Slab::new`](GpuTable::new)).
    pub fn new(gpu: Arc<Gpu>, config: SlabConfig) -> Result<Self> {
        let config = SlabConfig {
            multimap: true,
            ..config
        };
        Ok(SlabMultiMap {
            table: GpuTable::new(gpu, config)?,
        })
    }
    /// The parameters it was made with.
    pub fn config(&self) -> &SlabConfig {
        self.table.config()
    }
    /// FLUSH (see [`Slab::flush`](GpuTable::flush)): slots emptied by `erase_all` are
    /// compacted away and emptied slabs return to the pool.
    pub fn flush(&mut self) -> Result<()> {
        self.table.flush()
    }
    /// Counts of what it holds now (waits for the GPU).
    pub fn stats(&self) -> Result<SlabStats> {
        self.table.stats()
    }
    /// The GPU it lives on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.table.gpu
    }
}

impl<K: Key, V: Value> MultiMap<K, V> for SlabMultiMap<K, V> {
    fn scheme(&self) -> &'static str {
        "slab"
    }

    fn backend(&self) -> Backend {
        Backend::Gpu
    }

    fn insert_with_status(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
    ) -> Result<usize> {
        // The multimap's kernel INSERTs every pair (the mode only matters to REPLACE).
        self.table
            .insert_with_mode(keys, values, status, InsertMode::Assign)
    }

    fn count_into(&self, keys: &[K], counts: &mut [usize]) -> Result<usize> {
        check_same_len("count", keys.len(), counts.len())?;
        if keys.is_empty() {
            return Ok(0);
        }
        let gpu = &self.table.gpu;
        let dk = gpu.upload(keys)?;
        let mut dc = gpu.alloc::<u32>(keys.len())?;
        self.table.count_device(&dk, &mut dc)?;
        let c = gpu.download(&dc)?;
        for (o, &x) in counts.iter_mut().zip(&c) {
            *o = x as usize;
        }
        Ok(counts.iter().sum())
    }

    fn find_all(&self, keys: &[K]) -> Result<(Vec<usize>, Vec<V>)> {
        let mut offsets = vec![0usize; keys.len() + 1];
        if keys.is_empty() {
            return Ok((offsets, Vec::new()));
        }
        let gpu = &self.table.gpu;
        let dk = gpu.upload(keys)?;
        let mut dc = gpu.alloc::<u32>(keys.len())?;
        self.table.count_device(&dk, &mut dc)?;
        let counts = gpu.download(&dc)?;
        for (i, &c) in counts.iter().enumerate() {
            offsets[i + 1] = offsets[i] + c as usize;
        }
        let total = offsets[keys.len()];
        if total == 0 {
            return Ok((offsets, Vec::new()));
        }
        let d_off = gpu.upload(&offsets.iter().map(|&o| o as u64).collect::<Vec<u64>>())?;
        let mut dv = gpu.alloc::<V>(total)?;
        self.table.find_all_device(&dk, &d_off, &mut dv)?;
        Ok((offsets, gpu.download(&dv)?))
    }

    /// DELETEALL of each key; the number removed is the drop in `len`.
    fn erase_all(&mut self, keys: &[K]) -> Result<usize> {
        HashTable::erase(&mut self.table, keys)
    }

    fn len(&self) -> Result<usize> {
        HashTable::len(&self.table)
    }

    fn capacity(&self) -> usize {
        HashTable::capacity(&self.table)
    }

    fn clear(&mut self) -> Result<()> {
        HashTable::clear(&mut self.table)
    }

    fn retrieve_all(&self) -> Result<(Vec<K>, Vec<V>)> {
        HashTable::retrieve_all(&self.table)
    }

    fn memory_bytes(&self) -> usize {
        HashTable::memory_bytes(&self.table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_is_the_kernels_layout() {
        // sl_view: four addresses, four u32, the seed.
        assert_eq!(std::mem::size_of::<SlabView>(), 4 * 8 + 4 * 4 + 8);
    }

    #[test]
    fn widths_and_words() {
        assert!(supports_widths(4, 4) && supports_widths(8, 4) && supports_widths(4, 8));
        assert!(!supports_widths(16, 4) && !supports_widths(4, 12));
        assert_eq!(word_bytes(4, 4), 4);
        assert_eq!(word_bytes(4, 8), 8);
        assert_eq!(word_bytes(8, 8), 8);
    }

    #[test]
    fn buckets_for_a_utilization() {
        // The model: one slab per bucket as the keys per bucket go to 0, Poisson overflow beyond.
        assert!((expected_slabs_per_bucket(1e-9, 15) - 1.0).abs() < 1e-6);
        assert_eq!(expected_slabs_per_bucket(0.0, 15), 1.0);
        let lambda = 10.5;
        let s = expected_slabs_per_bucket(lambda, 15);
        assert!(s > 1.0 && s < 1.2, "{s}");
        // 2^24 pairs of 8 bytes at 0.615 of 128-byte slabs: about 10.5 keys per bucket (the
        // benchmark's measured 1.59 M buckets), and the model's utilisation there is the target.
        let b = buckets_for_utilization(1 << 24, 0.615, 4, 4);
        assert!((1_550_000..1_650_000).contains(&b), "{b}");
        let u = expected_utilization(1 << 24, b, 8, 128);
        assert!((u - 0.615).abs() < 1e-4, "{u}");
        assert!(
            buckets_for_utilization(1 << 20, 0.3, 8, 8)
                > buckets_for_utilization(1 << 20, 0.6, 8, 8)
        );
        // Beyond what full slabs reach (15/16): one bucket.
        assert_eq!(buckets_for_utilization(1000, 0.99, 4, 4), 1);
        assert_eq!(buckets_for_utilization(0, 0.5, 4, 4), 1);
    }

    #[test]
    fn memory_blocks_follow_the_capacity() {
        assert_eq!(default_memory_blocks(0), 64);
        assert_eq!(default_memory_blocks(1000), 64);
        assert_eq!(default_memory_blocks(1 << 24), 512);
        assert_eq!(default_memory_blocks(1 << 30), 1024);
    }
}
