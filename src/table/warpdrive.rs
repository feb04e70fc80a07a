//! WarpDrive: static open addressing with coalesced-group probing (warpdrive.txt §IV-A).
//! Device code: `kernels/warpdrive.cu`.
//!
//! A coalesced group of |g| ∈ {1, 2, 4, 8, 16, 32} threads handles one key: it loads a window of
//! |g| consecutive slots in one coalesced access, ballots for the key and for free slots, claims
//! the leftmost free slot with one CAS, and otherwise moves to the next window by double hashing.
//! Probing is bounded by `max_probes` windows (the paper's `p_max`): a key that finds no slot is
//! reported, never dropped silently.
//!
//! Slots ([`SlotLayout`]): 4-byte keys with 4-byte values pack into 8 bytes (one 64-bit CAS);
//! other pairs of 4- or 8-byte keys and values take 16 bytes, placed by one 128-bit CAS on sm_90.
//! Keys or values wider than 8 bytes (`u128`, `[u8; N]`, up to [`MAX_KEY_BYTES`] /
//! [`MAX_VALUE_BYTES`], multiples of 4) use the paper's struct-of-arrays layout with a 4-byte
//! tag per slot: the tag is claimed by CAS, key and value written, then the key's fingerprint
//! published; searches compare the window's tags (one coalesced load) and read a key only where
//! the fingerprint matches. Erase leaves tombstones that later inserts reuse; narrow keys equal
//! to the internal sentinels live on a side path (wide keys need none: the tag holds the state).
//! Inserts and finds may share a launch ([`HashTable::mixed_batch`](crate::HashTable::mixed_batch)); erases are
//! phase-separated, as in the paper. Measurements and the reasons for the defaults:
//! `bench/NOTES.md`.
//!
//! # Semantics
//!
//! - Duplicates within one insert batch: the key is stored once; with [`InsertMode::Assign`](crate::InsertMode::Assign)
//!   (`insert`) its value is one of the batch's values for it (which one is not specified: the
//!   groups race); with [`InsertMode::IfAbsent`](crate::InsertMode::IfAbsent) the value of the insert that placed it stays
//!   (also one of the batch's values), and a key present before the batch keeps its value.
//! - A value wider than 8 bytes is replaced, and read in a mixed batch, while its slot's tag is
//!   held, so readers see the old or the new value, never a mix.
//!
//! # The overflow filter
//!
//! Beyond the paper, a table keeps by default a few bits per window
//! ([`WarpDriveConfig::overflow_filter`]). Each key owns one of a window's B bits (from its hash).
//! An insert that moves on from a window with no empty slot first sets its bit of that window,
//! and bits are only cleared by `clear` and `rehash`. A search (find, contains, erase) that meets
//! a window holding neither its key nor an empty slot goes on only if its bit is set there: if it
//! is clear, no key with that bit ever went past this window, so the key is not further on.
//!
//! In the paper's scheme an absent key walks to the first window with an empty slot: at load
//! 0.95 with |g| = 4, ~7.6 windows (random 32-byte sectors). With the filter (simulated,
//! bench/NOTES.md change 6): ~3.9 windows with B = 1, ~2.5 with B = 2, ~1.7 with B = 4, ~1.3
//! with B = 8. Present keys and inserts walk the same windows as before, plus a filter read per
//! window they move past (and inserts an `atomicOr` when their bit was clear). Those accesses
//! must hit L2: a filter larger than L2 costs hits and inserts as much as it saves misses
//! (measured). So [`OverflowFilter::Auto`] takes the most bits per window that fit in a quarter
//! of the L2 cache (H100, 50 MB L2, 2^27 u32 keys at load 0.95: B = 2, 8.8 MB), and the kernels
//! access it under an L2 evict-last cache policy so the streams of keys, results and windows do
//! not push it out. Measured on an H100 (2^27 u32 keys, bench/NOTES.md changes 6–11): absent
//! keys 3.4 → 9.0 G/s at load 0.95 and 6.4 → 13.0 at 0.9; inserts pay 3–8 % and hits 2–10 %.
//! The memory is counted in `memory_bytes`; [`OverflowFilter::Off`] is the paper's table,
//! exactly `capacity × slot size` bytes.
//!
//! ```no_run
//! use warpmap::{Gpu, HashTable, WarpDrive, WarpDriveConfig};
//! # fn main() -> warpmap::Result<()> {
//! let gpu = Gpu::default_gpu()?;
//! let mut table = WarpDrive::<u32, u32>::new(gpu, WarpDriveConfig::new(1 << 20))?;
//! table.insert(&[1, 2, u32::MAX], &[10, 20, 30])?; // u32::MAX is a key like any other
//! assert_eq!(table.find(&[2, 3])?, vec![Some(20), None]);
//! # Ok(()) }
//! ```

use crate::device::{DeviceBuffer, Gpu, Kernel, KernelArg, Module};
use crate::hash::{next_prime, HashFunction};
use crate::kernels::{KernelSource, WARPDRIVE};
use crate::key::{Key, Value};
pub use crate::table::engine::locality::LocalityMode;
use crate::table::engine::locality::{self, Locality, OrderedKernel, Stretches};
use crate::table::engine::{
    check_fits, engine_source, resolve_max_probes, scheme_config, GpuTable, Scheme,
};
use crate::{Error, Result};
use std::marker::PhantomData;
use std::sync::Arc;

pub use crate::hash::DEFAULT_SEED;

/// The group sizes the paper allows.
pub const GROUP_SIZES: [u32; 6] = [1, 2, 4, 8, 16, 32];
/// The default group size. The paper finds |g| ∈ {2, 4, 8} best on a P100; on an H100 |g| = 4 is
/// best for unique keys at every load factor up to 0.9 (bench/NOTES.md, Fig. 7 sweep).
pub const DEFAULT_GROUP_SIZE: u32 = 4;
/// The default probe budget in slots: `max_probes = ceil(budget / |g|)` windows (or all windows
/// if fewer). At load 0.99 a key fails to find a slot within 8192 probed slots with probability
/// about 0.99^8192 ≈ 1e-36 under uniform hashing.
pub const DEFAULT_PROBE_BUDGET_SLOTS: u32 = 8192;

/// The parameters of a [`WarpDrive`] table: [`WarpDriveConfig::new`] gives the defaults, the
/// setters change one each. [`GpuTable::new`] checks them (see [`WarpDriveScheme`]'s `new` for
/// the errors).
///
/// # Examples
/// ```
/// use warpmap::table::warpdrive::OverflowFilter;
/// use warpmap::{HashFunction, WarpDriveConfig};
/// let c = WarpDriveConfig::new(1 << 20)
///     .group_size(8)
///     .hash(HashFunction::Mueller)
///     .overflow_filter(OverflowFilter::Off)
///     .max_probes(64);
/// assert_eq!((c.group_size, c.max_probes), (8, Some(64)));
/// assert_eq!(WarpDriveConfig::new(10).group_size, 4); // DEFAULT_GROUP_SIZE
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WarpDriveConfig {
    /// The number of keys the table must hold (slots; rounded up to a prime number of windows).
    pub capacity: usize,
    /// Threads per coalesced group, |g| ∈ {1, 2, 4, 8, 16, 32}.
    pub group_size: u32,
    /// Windows probed before a key is reported unplaceable (`p_max`); `None`: the default budget.
    pub max_probes: Option<u32>,
    /// The hash seed. For 4-byte keys its two halves translate the key for the two hashes, so
    /// keep them different (the default does).
    pub seed: u64,
    /// The hash function (the paper's two: MurmurHash3's finaliser, Mueller's hash).
    pub hash: HashFunction,
    /// The overflow filter: a few bits per window that let a search stop at the first window
    /// its key never went past, instead of walking to the first window with an empty slot.
    /// Default [`OverflowFilter::Auto`]; [`OverflowFilter::Off`] is the paper's exact scheme
    /// (`capacity × slot size` bytes only). See the [module docs](self#the-overflow-filter).
    pub overflow_filter: OverflowFilter,
    /// Whether bulk inserts without statuses are split by the top bits of their first window
    /// first, so that the inserts in flight stay within an L2-sized stretch of the table
    /// ([`crate::table::engine::locality`]). Default [`LocalityMode::Auto`]: when the
    /// table is at least twice the L2 cache and the batch is large. The CPU backend ignores it.
    pub locality: LocalityMode,
}

scheme_config!(WarpDriveConfig);

impl WarpDriveConfig {
    /// A table of at least `capacity` slots with default parameters.
    pub fn new(capacity: usize) -> Self {
        WarpDriveConfig {
            capacity,
            group_size: DEFAULT_GROUP_SIZE,
            max_probes: None,
            seed: DEFAULT_SEED,
            hash: HashFunction::default(),
            overflow_filter: OverflowFilter::Auto,
            locality: LocalityMode::Auto,
        }
    }
    /// Sets the group size.
    pub fn group_size(mut self, g: u32) -> Self {
        self.group_size = g;
        self
    }
    /// Sets the overflow filter.
    pub fn overflow_filter(mut self, f: OverflowFilter) -> Self {
        self.overflow_filter = f;
        self
    }
    /// Sets whether bulk inserts are partitioned by locality.
    pub fn locality(mut self, m: LocalityMode) -> Self {
        self.locality = m;
        self
    }
}

/// WarpDrive's overflow filter (see the [module docs](self#the-overflow-filter)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OverflowFilter {
    /// No filter: the paper's scheme.
    Off,
    /// The most bits per window (8, 4, 2 or 1) that keep the filter within a quarter of the
    /// GPU's L2 cache, and 1 bit when even that does not fit: the filter's reads and atomics must
    /// hit L2 or they cost as much as the windows they save (bench/NOTES.md, change 6).
    #[default]
    Auto,
    /// Exactly this many bits per window: 1, 2, 4 or 8.
    Bits(u32),
}

/// The filter bits per window [`OverflowFilter::Auto`] picks for `windows` windows and an L2
/// cache of `l2_bytes`.
pub fn auto_filter_bits(windows: u64, l2_bytes: u64) -> u32 {
    let budget_bits = l2_bytes / 4 * 8;
    [8u32, 4, 2]
        .into_iter()
        .find(|&b| windows * b as u64 <= budget_bits)
        .unwrap_or(1)
}

impl OverflowFilter {
    /// Bits per window for a table of `windows` windows on a GPU with `l2_bytes` of L2 (0: off).
    pub fn bits(self, windows: u64, l2_bytes: u64) -> Result<u32> {
        match self {
            OverflowFilter::Off => Ok(0),
            OverflowFilter::Auto => Ok(auto_filter_bits(windows, l2_bytes)),
            OverflowFilter::Bits(b @ (1 | 2 | 4 | 8)) => Ok(b),
            OverflowFilter::Bits(b) => Err(Error::invalid(format!(
                "overflow filter bits per window must be 1, 2, 4 or 8, not {b}"
            ))),
        }
    }
}

/// How a table stores its slots (chosen by the key and value widths; see `kernels/warpdrive.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotLayout {
    /// 4-byte key + 4-byte value in one 8-byte word, placed by one 64-bit CAS (the paper's).
    Packed8,
    /// 4- or 8-byte keys and values (not both 4), each zero-extended to 8 bytes, in 16 bytes,
    /// placed by one 128-bit CAS on sm_90 and newer (before: the key by a 64-bit CAS, then the
    /// value, in the same sector).
    Pair16,
    /// Keys or values wider than 8 bytes: the paper's struct-of-arrays layout, with a 4-byte tag
    /// per slot (its state, or the key's 32-bit fingerprint) before the key and value arrays.
    /// An insert claims the tag by CAS, writes key and value, then publishes the fingerprint; a
    /// search reads the window's tags in one coalesced load and a key only where the
    /// fingerprint matches. No key value is reserved.
    Tagged {
        /// Key bytes.
        key_bytes: usize,
        /// Value bytes.
        value_bytes: usize,
    },
}

impl SlotLayout {
    /// The layout for these widths.
    pub fn for_widths(key_bytes: usize, value_bytes: usize) -> Self {
        match (key_bytes, value_bytes) {
            (4, 4) => SlotLayout::Packed8,
            (4 | 8, 4 | 8) => SlotLayout::Pair16,
            _ => SlotLayout::Tagged {
                key_bytes,
                value_bytes,
            },
        }
    }
    /// Bytes per slot.
    pub fn slot_bytes(self) -> usize {
        match self {
            SlotLayout::Packed8 => 8,
            SlotLayout::Pair16 => 16,
            SlotLayout::Tagged {
                key_bytes,
                value_bytes,
            } => 4 + key_bytes + value_bytes,
        }
    }
    /// Bytes of device memory for `n` slots (the tagged layout starts each of its three arrays
    /// at a multiple of 16 bytes; `kernels/warpdrive.cu` `wd_arrays` computes the same offsets).
    pub fn table_bytes(self, n: usize) -> usize {
        match self {
            SlotLayout::Tagged {
                key_bytes,
                value_bytes,
            } => {
                let key_offset = (n * 4).next_multiple_of(16);
                let value_offset = key_offset + (n * key_bytes).next_multiple_of(16);
                value_offset + n * value_bytes
            }
            _ => n * self.slot_bytes(),
        }
    }
}

/// Whether a WarpDrive table can store keys of `key_bytes` and values of `value_bytes` bytes
/// ([`WarpDrive::new`] returns [`Error::Unsupported`] for other widths).
pub fn supports_widths(key_bytes: usize, value_bytes: usize) -> bool {
    let ok = |b: usize, max: usize| b >= 4 && b % 4 == 0 && b <= max;
    ok(key_bytes, MAX_KEY_BYTES) && ok(value_bytes, MAX_VALUE_BYTES)
}

/// The widest key a WarpDrive table stores (bytes; keys are multiples of 4 bytes).
pub const MAX_KEY_BYTES: usize = 256;
/// The widest value a WarpDrive table stores (bytes; values are multiples of 4 bytes).
pub const MAX_VALUE_BYTES: usize = 1024;

/// The kernel module specialisation for these widths, group size, hash function and filter bits
/// per window (0: none).
pub fn kernel_source(
    key_bytes: usize,
    value_bytes: usize,
    group_size: u32,
    hash: HashFunction,
    filter_bits: u32,
) -> KernelSource {
    engine_source::<WarpDriveView>("warpdrive", WARPDRIVE, key_bytes, value_bytes)
        .define("WM_GROUP_SIZE", group_size)
        .define("WM_HASH", hash.define())
        .define("WD_FILTER_BITS", filter_bits)
        .define("WD_ORDERED_ROUNDS", locality::ordered_rounds())
        .define("WD_ORDERED_ROUNDS_DEEP", locality::deep_rounds())
}

/// Every specialisation the library can ask for (the compile test builds them all).
pub fn all_kernel_sources() -> Vec<KernelSource> {
    let mut v = Vec::new();
    for kb in [4, 8] {
        for vb in [4, 8] {
            for g in GROUP_SIZES {
                for h in HashFunction::ALL {
                    v.push(kernel_source(kb, vb, g, h, 2));
                }
                if kb == vb {
                    for bits in [0, 1, 4, 8] {
                        v.push(kernel_source(kb, vb, g, HashFunction::default(), bits));
                    }
                }
            }
        }
    }
    // The tagged layout: the wide widths the contract tests use, at three group sizes.
    for (kb, vb) in [
        (16, 8),
        (16, 4),
        (32, 4),
        (64, 8),
        (8, 32),
        (12, 256),
        (4, 16),
    ] {
        for g in [1, 4, 32] {
            for h in HashFunction::ALL {
                v.push(kernel_source(kb, vb, g, h, 2));
            }
        }
        v.push(kernel_source(kb, vb, 8, HashFunction::default(), 0));
    }
    v
}

/// WarpDrive's part of a GPU table (see [`Scheme`]): the slot array, the overflow filter, the
/// sentinel side path and the geometry. A table is [`WarpDrive<K, V>`].
pub struct WarpDriveScheme<K: Key, V: Value> {
    config: WarpDriveConfig,
    windows: u32,
    max_probes: u32,
    /// The slot array (see [`SlotLayout`]).
    slots: DeviceBuffer<u8>,
    /// Overflow-filter bits per window (0: no filter).
    filter_bits: u32,
    /// The overflow filter: `filter_bits` bits per window in u32 words (one word when there is
    /// no filter, so that the kernels always get a valid pointer).
    filter: DeviceBuffer<u32>,
    /// Side path for sentinel-valued keys: [occupied0, value0, occupied1, value1].
    side: DeviceBuffer<u64>,
    /// `warpdrive_insert_ordered`, `warpdrive_find_ordered` (a thread per key holding its
    /// window), their forms over several parts (`…_parts`) and the deep ordered insert
    /// (`warpdrive_insert_ordered_deep`, longer tiles) with their resident blocks, for groups of
    /// at most [`MAX_ORDERED_GROUP`] slots; bound after the module loads.
    ordered: Option<[(Kernel, u32); 5]>,
    _kv: PhantomData<(K, V)>,
}

/// The widest window the ordered insert holds in one thread's registers (`wd_solo_window`).
pub const MAX_ORDERED_GROUP: u32 = 8;

/// A WarpDrive table on a GPU: [`GpuTable`] over [`WarpDriveScheme`]. See the
/// [module docs](self); [`GpuTable::new`] makes one from a [`WarpDriveConfig`].
pub type WarpDrive<K, V> = GpuTable<WarpDriveScheme<K, V>>;

/// The kernels' view of a WarpDrive table (`wd_view` in `kernels/warpdrive.cu`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WarpDriveView {
    slots: u64,
    filter: u64,
    side: u64,
    meta: u64,
    windows: u32,
    max_probes: u32,
    seed: u64,
}

// SAFETY: #[repr(C)] plain data, the layout of wd_view (size checked by WM_CHECK_VIEW).
unsafe impl KernelArg for WarpDriveView {}

// SAFETY: the view holds the addresses of the scheme's own slot array (table_bytes of
// windows × |g| slots, the size the kernels index for `windows`), filter (windows × B bits, at
// least one word) and side path (4 words), alive as long as the scheme.
unsafe impl<K: Key, V: Value> Scheme for WarpDriveScheme<K, V> {
    type Key = K;
    type Value = V;
    type Config = WarpDriveConfig;
    type View = WarpDriveView;
    const NAME: &'static str = "warpdrive";
    const NO_MIXED_ERASE: Option<&'static str> =
        Some("erases are phase-separated from inserts, as in the paper (tombstones)");

    /// Reduce by key on every layout (numeric values: 4 or 8 bytes). A new key's value is in
    /// its slot before another insert can see the key: one 64-bit CAS claims both (packed
    /// layout), one 128-bit CAS (pair layout: sm_90 and later; before it the value follows the
    /// key and a reduction could meet it unwritten, so [`Error::Unsupported`] there), or the
    /// slot stays busy until both are written (tagged layout).
    fn check_apply(&self, gpu: &Gpu) -> Result<()> {
        let pair = K::BYTES <= 8 && V::BYTES <= 8 && !(K::BYTES == 4 && V::BYTES == 4);
        if pair && gpu.sm() < 90 {
            return Err(Error::Unsupported(format!(
                "WarpDrive reduces {} -> {} pairs by key from sm_90 on (a 128-bit CAS claims key \
                 and value together); this GPU is sm_{}",
                K::NAME,
                V::NAME,
                gpu.sm()
            )));
        }
        Ok(())
    }

    /// [`Error::InvalidInput`] for a capacity of 0, a group size outside [`GROUP_SIZES`],
    /// `max_probes` 0 or filter bits other than 1, 2, 4, 8; [`Error::Unsupported`] for key or
    /// value widths WarpDrive does not store ([`supports_widths`]) or more than 2^31 windows;
    /// [`Error::OutOfMemory`] when the table exceeds the GPU's memory.
    fn new(gpu: &Arc<Gpu>, config: WarpDriveConfig) -> Result<(Self, KernelSource)> {
        if !supports_widths(K::BYTES, V::BYTES) {
            return Err(Error::Unsupported(format!(
                "WarpDrive stores keys of 4 to {MAX_KEY_BYTES} bytes and values of 4 to \
                 {MAX_VALUE_BYTES} bytes in multiples of 4, not {} ({} bytes) -> {} ({} bytes)",
                K::NAME,
                K::BYTES,
                V::NAME,
                V::BYTES
            )));
        }
        let g = config.group_size;
        if !GROUP_SIZES.contains(&g) {
            return Err(Error::invalid(format!(
                "group size {g} is not one of {GROUP_SIZES:?}"
            )));
        }
        let wanted_windows = (config.capacity as u64).div_ceil(g as u64).max(2);
        if wanted_windows > u32::MAX as u64 / 2 {
            return Err(Error::Unsupported(format!(
                "capacity {} needs more than 2^31 windows of {g} slots",
                config.capacity
            )));
        }
        let windows = next_prime(wanted_windows) as u32;
        let slots_n = windows as usize * g as usize;
        let default_probes = DEFAULT_PROBE_BUDGET_SLOTS.div_ceil(g);
        let max_probes = resolve_max_probes(config.max_probes, default_probes, windows)?;
        let layout = SlotLayout::for_widths(K::BYTES, V::BYTES);
        let filter_bits = config
            .overflow_filter
            .bits(windows as u64, gpu.l2_bytes())?;
        let need = layout.table_bytes(slots_n) as u64 + windows as u64 * filter_bits as u64 / 8;
        check_fits(gpu, need)?;
        let source = kernel_source(K::BYTES, V::BYTES, g, config.hash, filter_bits);
        let filter_words = (windows as usize * filter_bits as usize)
            .div_ceil(32)
            .max(1);
        let scheme = WarpDriveScheme {
            slots: gpu.alloc::<u8>(layout.table_bytes(slots_n))?,
            filter: gpu.alloc::<u32>(filter_words)?,
            side: gpu.alloc::<u64>(4)?,
            ordered: None,
            config,
            windows,
            max_probes,
            filter_bits,
            _kv: PhantomData,
        };
        Ok((scheme, source))
    }

    fn config(&self) -> &WarpDriveConfig {
        &self.config
    }

    fn bind(&mut self, gpu: &Gpu, module: &Module) -> Result<()> {
        if self.config.group_size <= MAX_ORDERED_GROUP {
            let bound = |name: &str| -> Result<(Kernel, u32)> {
                let kernel = module.kernel(name)?;
                let resident = locality::resident_blocks(gpu, &kernel)?;
                Ok((kernel, resident))
            };
            self.ordered = Some([
                bound("warpdrive_insert_ordered")?,
                bound("warpdrive_find_ordered")?,
                bound("warpdrive_insert_ordered_parts")?,
                bound("warpdrive_find_ordered_parts")?,
                bound("warpdrive_insert_ordered_deep")?,
            ]);
        }
        Ok(())
    }

    fn view(&self, meta: u64) -> WarpDriveView {
        WarpDriveView {
            slots: self.slots.device_address(),
            filter: self.filter.device_address(),
            side: self.side.device_address(),
            meta,
            windows: self.windows,
            max_probes: self.max_probes,
            seed: self.config.seed,
        }
    }

    fn capacity(&self) -> usize {
        self.windows as usize * self.config.group_size as usize
    }

    fn group_size(&self) -> u32 {
        self.config.group_size
    }

    /// A key's first window is `map_to_range(h.x, windows)` (`wd_probe`), and the windows are in
    /// order in the slot array: the top bits of `h.x` name its stretch of the table. The
    /// ordered kernel exists for windows of up to [`MAX_ORDERED_GROUP`] slots.
    fn locality(&self) -> Option<Locality<'_>> {
        let [insert, find, insert_parts, find_parts, deep_insert] = self.ordered.as_ref()?;
        let first_probe_bytes = match SlotLayout::for_widths(K::BYTES, V::BYTES) {
            SlotLayout::Tagged { .. } => self.capacity() as u64 * 4,
            _ => self.slots.num_bytes() as u64,
        };
        fn ordered((kernel, resident_blocks): &(Kernel, u32)) -> OrderedKernel<'_> {
            OrderedKernel {
                kernel,
                resident_blocks: *resident_blocks,
            }
        }
        Some(Locality {
            insert: ordered(insert),
            deep_insert: Some(ordered(deep_insert)),
            find: Some(ordered(find)),
            parts: Some([ordered(insert_parts), ordered(find_parts)]),
            stretches: Stretches {
                seed: self.config.seed,
                hash: self.config.hash,
                table_bytes: self.slots.num_bytes() as u64,
                mode: self.config.locality,
            },
            // The windows' slots, or (tagged layout) their tags, 4 bytes a slot at the start.
            array: Some((self.slots.device_address(), first_probe_bytes)),
            reads_pairs: true,
        })
    }

    fn memory_bytes(&self) -> usize {
        self.slots.num_bytes() + self.filter.num_bytes() + self.side.num_bytes()
    }

    /// Every slot empty (all ones), the filter and the side path zero.
    fn clear(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.fill_bytes(&mut self.slots, 0xff)?;
        gpu.fill_bytes(&mut self.filter, 0)?;
        gpu.fill_bytes(&mut self.side, 0)
    }

    /// With the default probe budget (8192 slots) a key fails to find a slot at load 0.99
    /// with probability about 1e-36; above, the last free slots may be out of reach.
    fn max_load_factor(&self) -> f64 {
        0.99
    }

    /// 16-byte slots are placed by a 128-bit CAS in mixed batches, which needs sm_90.
    fn check_mixed(&self, gpu: &Gpu) -> Result<()> {
        if SlotLayout::for_widths(K::BYTES, V::BYTES) == SlotLayout::Pair16 && gpu.sm() < 90 {
            return Err(Error::Unsupported(format!(
                "mixed insert/find batches of {}→{} pairs need a 128-bit CAS (sm_90 or newer); \
                 this GPU is sm_{}",
                K::NAME,
                V::NAME,
                gpu.sm()
            )));
        }
        Ok(())
    }
}

impl<K: Key, V: Value> WarpDrive<K, V> {
    /// The number of windows (prime).
    pub fn windows(&self) -> u32 {
        self.scheme.windows
    }
    /// The probe limit in windows (`p_max`).
    pub fn max_probes(&self) -> u32 {
        self.scheme.max_probes
    }
    /// Overflow-filter bits per window (0: no filter).
    pub fn filter_bits(&self) -> u32 {
        self.scheme.filter_bits
    }
}
