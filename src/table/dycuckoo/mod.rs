//! DyCuckoo: dynamic cuckoo hashing with voter-based bucket locks, resizing one subtable at a
//! time so that the fill factor stays within `[α, β]` (dycuckoo.txt). Device code:
//! `kernels/dycuckoo.cu`; the host-side rules: [`policy`].
//!
//! # Layout
//!
//! `d` subtables ([`DyCuckooConfig::subtables`], 3 by default as in the paper), each with its
//! own universal hash `h^i(k) = ((a_i k + b_i) mod p) mod |h^i|`. A bucket is one 128-byte line
//! of keys, read by a warp in one coalesced load: 32 four-byte keys or 16 eight-byte keys. Keys
//! and values live in separate arrays, so a value may be any multiple of 4 bytes up to
//! [`MAX_VALUE_BYTES`] and a search that misses reads no value. Each bucket has a lock word.
//!
//! # Operations
//!
//! - `find`, `contains` and `erase`: no lock; the key's bucket in each subtable in turn, target
//!   first (the paper's Algorithm 1). The paper gives each key a warp; here each lane holds a
//!   key, the warp copies the 32 buckets its lanes need next into shared memory together
//!   (`cp.async`, one request per bucket) and each lane scans its own.
//! - `insert`: the voter scheme (Algorithm 2). The lanes of a warp each hold a key; the warp
//!   elects a leader, whose lane locks the key's bucket in the key's target subtable; a lock
//!   held by another warp makes the warp revote (the next lane leads), otherwise the warp
//!   inserts, updates, or evicts a pair towards the next subtable. The target subtable is drawn,
//!   by a hash of the key, with probability proportional to `n_i / C(m_i, 2)` (Theorem 1).
//! - Mixed batches run inserts and finds together ([`HashTable::mixed_batch`]); erases are
//!   phase-separated, as in the paper (a batch with an erase is refused with
//!   [`Error::Unsupported`]).
//!
//! Where this departs from the paper (see `kernels/dycuckoo.cu` for the details): the locks are
//! sequence locks, so an insert checks the key's buckets in the other subtables (the paper's
//! insert looks only at the target bucket, and would store a key twice) and a concurrent find
//! reads consistent buckets. A batch known to hold no key of the table (*fresh*: the table is
//! empty, or the growth check counted its keys and found all absent) skips that check: each
//! thread inserts its own key
//! into the first of the key's buckets with room, in the order target, next subtable, ...,
//! under that bucket's lock, which is safe because a key of the batch can only be in that
//! bucket or a full one before it (`kernels/dycuckoo.cu`, `dc_insert_threads`). With values
//! of at most 8 bytes a fresh plain batch first runs a lock-free launch (`dycuckoo_first_fit`:
//! one CAS of the key into the first empty slot of that bucket), and so does any other plain
//! batch of such values, *checked*: the launch first looks for each key in all its d buckets
//! (staged in shared memory) and leaves a key it sees. It lists the keys it leaves (all d
//! buckets full, a copy of the key seen, lost CASes), and the insert launch after it
//! (`dycuckoo_insert_left`, one resident wave) runs the locked paths for those alone, one per
//! warp, so no eviction races its CASes. An eviction
//! chain is built under the locks of all its buckets and then moved from its end back to its
//! start, so no evicted pair is ever held outside the table: a chain longer than
//! [`DyCuckooConfig::max_evictions`] changes nothing, and the key
//! being inserted gets [`TABLE_FULL`](crate::status::TABLE_FULL) (the paper's pair in hand is
//! dropped).
//!
//! # The partitioned build
//!
//! A fresh batch's first fit is latency-bound: each key's target bucket line, its CAS and its
//! value are random accesses into subtables many times the L2 cache (on an H100 the build of
//! 2^26 u32 pairs at fill 0.8 read ~220 DRAM bytes a key). Where the batch is large beside the
//! table ([`DyCuckooConfig::locality`], `Auto`: the subtables at least twice the L2 cache),
//! the batch is first split by the engine's counting multisplit into bins of *target subtable ×
//! stretch of the key's bucket there* (stretches of at most half the L2 cache; the target drawn
//! from the same weights as the launch's), and the first fit runs over the split as one
//! resident wave taking tiles of consecutive keys in order (`wm_for_each_ordered_lanes`), so
//! the keys in flight fall in one stretch of one subtable, which stays in L2 (WarpDrive's
//! locality-partitioned insert, [`crate::table::engine::locality`], for a scheme whose order is
//! not a hash's top bits). The insert launch after it reads each key's outcome through the
//! split's positions and runs over the batch in input order, so statuses come out as without
//! the split, and keys the first fit left (full target buckets, copies, sentinels) take the
//! locked paths as before. Scratch: 4 bytes a key for the bins (freed after the split), the
//! split's keys and values and 4 bytes a key of positions (until the next batch); a batch whose
//! scratch finds no device memory goes in input order.
//!
//! # Resizing
//!
//! The fill factor θ (keys in the subtables over their slots) is kept within
//! `[α, β]` ([`DyCuckooConfig::fill_bounds`], 0.4 and 0.9 by default as in the paper):
//! - before a batch that could take θ above β, the table **doubles the smallest subtable**
//!   until the batch fits below β: taking every key of the batch as new where the growth that
//!   asks for keeps θ at α or above even if no key is new (a batch small beside the table),
//!   else after counting the batch's absent keys on the device (a find pass, which also tells
//!   whether the batch is fresh). The upsize rehash is conflict-free: a key of bucket
//!   `loc` goes to `loc` or `loc + |h^i|`. Keys that still find no room (a chain ran out) make
//!   the table double a
//!   subtable and insert them again; only at [`DyCuckooConfig::max_capacity`] or when device
//!   memory runs out are they reported (status, [`Error::TableFull`]).
//! - after a host-slice `erase` that leaves θ below α, the table **halves the largest
//!   subtable**, again while θ < α: buckets `loc` and `loc + |h^i|/2` merge, and the pairs that
//!   do not fit (the residuals) are inserted into the other subtables. If one cannot be placed
//!   the downsize is rolled back (the table is as before it). Never below
//!   [`DyCuckooConfig::min_capacity`] (by default the capacity the table was made with).
//! - no subtable is ever more than twice as large as another, and only the resized subtable is
//!   rewritten.
//!
//! `capacity()` is the slots of all subtables and changes with resizes; `max_load_factor()` is
//! β. Device-buffer inserts ([`DeviceHashTable`]) grow the same way, and
//! synchronise only when the table's estimate of its keys comes near β; device-buffer erases do
//! not shrink the table ([`DyCuckoo::fit_fill_bounds`] does). A resize that cannot allocate its
//! arrays returns [`Error::OutOfMemory`] from [`DyCuckoo::upsize`] / [`DyCuckoo::downsize`] and
//! changes nothing (inside an insert, the keys that then find no room are reported).
//!
//! Every key value is insertable: keys equal to the internal markers (all ones, all ones minus
//! one) are kept on a side path. Many tables may live in one program (no device globals).
//!
//! ```no_run
//! use warpmap::{DyCuckoo, DyCuckooConfig, Gpu, HashTable};
//! # fn main() -> warpmap::Result<()> {
//! let mut t = DyCuckoo::<u32, u32>::new(Gpu::default_gpu()?, DyCuckooConfig::new(1 << 10))?;
//! let keys: Vec<u32> = (0..100_000).collect();
//! t.insert(&keys, &keys)?; // grows: doubles one subtable at a time
//! assert!(t.capacity() >= 100_000);
//! t.erase(&keys[1000..])?; // shrinks back towards the fill bounds
//! let s = t.stats()?;
//! assert!(s.upsizes > 0 && s.downsizes > 0);
//! assert_eq!(t.find(&[5, 5000])?, vec![Some(5), None]);
//! # Ok(()) }
//! ```

pub mod policy;

use crate::device::{DeviceBuffer, Event, Gpu, Kernel, KernelArg, Module, PinnedBuffer};
use crate::kernels::{KernelSource, DYCUCKOO};
use crate::key::{Key, Value};
use crate::table::engine::locality::{self, LocalityMode};
use crate::table::engine::multisplit::multisplit_by_bins;
use crate::table::engine::{bulk_grid, engine_source, Bulk, GpuTable, Scheme, SchemeConfig};
use crate::table::{DeviceHashTable, HashTable};
use crate::trace::{env_flag, PhaseClock};
use crate::{Error, Result};
use policy::{Geometry, MAX_SUBTABLES};
use std::marker::PhantomData;
use std::sync::Arc;

pub use crate::hash::DEFAULT_SEED;

/// The paper's number of subtables (§6.2: the best balance between insert and find).
pub const DEFAULT_SUBTABLES: u32 = 3;
/// The paper's default fill-factor bounds (Table 3): α = 0.4, β = 0.9.
pub const DEFAULT_FILL_BOUNDS: (f64, f64) = (0.4, 0.9);
/// The most evictions an insert's chain may make: a warp holds a chain's buckets in its 32
/// lanes.
pub const MAX_EVICTIONS: u32 = 31;
/// The default eviction-chain limit: the most there is (a chain is built under its locks and
/// is short at fill factors up to β; the limit only decides when a key is reported).
pub const DEFAULT_MAX_EVICTIONS: u32 = MAX_EVICTIONS;
/// The widest value a DyCuckoo table stores (bytes, a multiple of 4).
pub const MAX_VALUE_BYTES: usize = 1024;

/// The parameters of a [`DyCuckoo`] table: [`DyCuckooConfig::new`] gives the defaults, the
/// setters change one each. [`GpuTable::new`] checks them.
///
/// # Examples
/// ```
/// use warpmap::DyCuckooConfig;
/// let c = DyCuckooConfig::new(1 << 20)
///     .subtables(4)
///     .fill_bounds(0.5, 0.95)
///     .max_evictions(8)
///     .min_capacity(0)
///     .max_capacity(1 << 24);
/// assert_eq!((c.subtables, c.alpha, c.beta), (4, 0.5, 0.95));
/// assert!(DyCuckooConfig::new(10).check(4).is_ok());
/// assert!(DyCuckooConfig::new(10).fill_bounds(0.8, 0.9).check(4).is_err()); // α > β·d/(d+1)
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct DyCuckooConfig {
    /// Keys the table is sized for when made: its first capacity (slots, rounded up to whole
    /// buckets of equal subtables), and by default the least it shrinks to.
    pub capacity: usize,
    /// The number of subtables `d`: 2 to 8 (the paper's default: 3).
    pub subtables: u32,
    /// The lower fill-factor bound α: a host-slice erase that leaves the fill below it halves
    /// subtables.
    pub alpha: f64,
    /// The upper fill-factor bound β: an insert that would take the fill above it doubles
    /// subtables first. Also the table's `max_load_factor`.
    pub beta: f64,
    /// The longest eviction chain of an insert (1 to [`MAX_EVICTIONS`]).
    pub max_evictions: u32,
    /// The least capacity (slots) downsizes keep; `None`: `capacity` (the first capacity, or
    /// the one a `rehash` or `reserve` asked for: they make the table anew).
    pub min_capacity: Option<usize>,
    /// The most capacity (slots) upsizes may reach; `None`: as device memory allows.
    pub max_capacity: Option<usize>,
    /// Seed of the subtables' hash parameters and of the insert distribution's draw.
    pub seed: u64,
    /// Whether a fresh build's first-fit launch takes its keys partitioned by target subtable
    /// and the stretch of their bucket there, so that the inserts in flight stay within an
    /// L2-sized stretch of one subtable (see the [module docs](self#the-partitioned-build)).
    /// Default [`LocalityMode::Auto`]: when the subtables are at least twice the L2 cache and
    /// the batch is large beside them. The CPU backend ignores it.
    pub locality: LocalityMode,
}

impl DyCuckooConfig {
    /// The paper's defaults for a table of at least `capacity` keys.
    pub fn new(capacity: usize) -> Self {
        DyCuckooConfig {
            capacity,
            subtables: DEFAULT_SUBTABLES,
            alpha: DEFAULT_FILL_BOUNDS.0,
            beta: DEFAULT_FILL_BOUNDS.1,
            max_evictions: DEFAULT_MAX_EVICTIONS,
            min_capacity: None,
            max_capacity: None,
            seed: DEFAULT_SEED,
            locality: LocalityMode::Auto,
        }
    }
    /// Sets whether fresh builds are partitioned by locality.
    pub fn locality(mut self, m: LocalityMode) -> Self {
        self.locality = m;
        self
    }
    /// Sets the number of subtables.
    pub fn subtables(mut self, d: u32) -> Self {
        self.subtables = d;
        self
    }
    /// Sets the fill-factor bounds α and β.
    pub fn fill_bounds(mut self, alpha: f64, beta: f64) -> Self {
        self.alpha = alpha;
        self.beta = beta;
        self
    }
    /// Sets the eviction-chain limit.
    pub fn max_evictions(mut self, n: u32) -> Self {
        self.max_evictions = n;
        self
    }
    /// Sets the least capacity downsizes keep.
    pub fn min_capacity(mut self, slots: usize) -> Self {
        self.min_capacity = Some(slots);
        self
    }
    /// Sets the most capacity upsizes may reach.
    pub fn max_capacity(mut self, slots: usize) -> Self {
        self.max_capacity = Some(slots);
        self
    }
    /// Sets the seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// [`Error::InvalidInput`] unless the parameters are usable for keys of `key_bytes` bytes:
    /// 2 to 8 subtables, `0 < α < β < 1` with `α ≤ β·d/(d + 1)`
    /// ([`policy::check_fill_bounds`]), 1 to [`MAX_EVICTIONS`] evictions, and a `max_capacity`
    /// not below the first capacity. (A capacity of 0 is refused by [`GpuTable::new`].)
    pub fn check(&self, key_bytes: usize) -> Result<()> {
        let d = self.subtables as usize;
        if !(2..=MAX_SUBTABLES).contains(&d) {
            return Err(Error::invalid(format!(
                "DyCuckoo needs 2 to {MAX_SUBTABLES} subtables, not {d}"
            )));
        }
        policy::check_fill_bounds(self.alpha, self.beta, d).map_err(Error::invalid)?;
        if !(1..=MAX_EVICTIONS).contains(&self.max_evictions) {
            return Err(Error::invalid(format!(
                "max_evictions must be 1 to {MAX_EVICTIONS}, not {}",
                self.max_evictions
            )));
        }
        if let Some(max) = self.max_capacity {
            let first = self.geometry(key_bytes).capacity();
            if max < first {
                return Err(Error::invalid(format!(
                    "max_capacity {max} is below the first capacity {first} (capacity {} in \
                     {d} subtables of whole buckets)",
                    self.capacity
                )));
            }
        }
        Ok(())
    }

    /// The first geometry: `subtables` equal subtables of at least `capacity` slots together.
    fn geometry(&self, key_bytes: usize) -> Geometry {
        Geometry::for_capacity(
            self.capacity,
            self.subtables as usize,
            policy::slots_per_bucket(key_bytes),
        )
    }
}

impl SchemeConfig for DyCuckooConfig {
    fn with_capacity(capacity: usize) -> Self {
        DyCuckooConfig::new(capacity)
    }
    fn capacity(&self) -> usize {
        self.capacity
    }
    /// The same parameters at a new first capacity (a rehash; `min_capacity`, when unset,
    /// follows it).
    fn resized(&self, capacity: usize) -> Self {
        DyCuckooConfig {
            capacity,
            ..self.clone()
        }
    }
}

/// Whether DyCuckoo stores keys of `key_bytes` and values of `value_bytes` bytes: keys of 4 or
/// 8 bytes, values of 4 to [`MAX_VALUE_BYTES`] bytes in multiples of 4.
pub fn supports_widths(key_bytes: usize, value_bytes: usize) -> bool {
    matches!(key_bytes, 4 | 8)
        && value_bytes >= 4
        && value_bytes % 4 == 0
        && value_bytes <= MAX_VALUE_BYTES
}

/// The kernel module of one specialisation: key and value widths and `d` subtables.
pub fn kernel_source(key_bytes: usize, value_bytes: usize, subtables: u32) -> KernelSource {
    let src = engine_source::<DyCuckooView>("dycuckoo", DYCUCKOO, key_bytes, value_bytes)
        .define("DC_SUBTABLES", subtables)
        .define("DC_ORDERED_ROUNDS", locality::ordered_rounds())
        .define("DC_CHOICE_RACE", u32::from(choice_race()))
        .define(
            "DC_SEARCH_MIN_BLOCKS",
            search_min_blocks(key_bytes, subtables),
        );
    // `DC_MIN_BLOCKS` of the insert kernels (kernels/dycuckoo.cu), for measurements.
    match crate::table::engine::knob::<u32>("WARPMAP_DYCUCKOO_INSERT_BLOCKS") {
        Some(n) => src.define("DC_MIN_BLOCKS", n),
        None => src,
    }
}

/// Blocks of 256 threads per multiprocessor that the staged searches (find, erase,
/// count_absent, unplace) are compiled for (`DC_SEARCH_MIN_BLOCKS` in `kernels/dycuckoo.cu`;
/// 0: the compiler's choice). `WARPMAP_DYCUCKOO_SEARCH_BLOCKS=N` sets it (measurements).
fn search_min_blocks(key_bytes: usize, subtables: u32) -> u32 {
    static KNOB: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let knob =
        *KNOB.get_or_init(|| crate::table::engine::knob::<u32>("WARPMAP_DYCUCKOO_SEARCH_BLOCKS"));
    knob.unwrap_or(if key_bytes == 4 && subtables <= 4 {
        4
    } else {
        0
    })
}

/// Whether a key draws its target subtable by an exponential race over the weights
/// (`kernels/dycuckoo.cu`, `dc_choose`: a change of weights moves fewer keys' targets, so finds
/// and erases read fewer buckets), the default; `WARPMAP_DYCUCKOO_CHOICE=interval` takes the
/// key's one uniform as a point in the cumulative weights instead (measurements). Both draw
/// each subtable with the paper's probability.
fn choice_race() -> bool {
    static RACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *RACE.get_or_init(|| {
        crate::table::engine::knob::<String>("WARPMAP_DYCUCKOO_CHOICE").as_deref()
            != Some("interval")
    })
}

/// Every specialisation the compile test builds: u32/u64 keys with u32/u64 values for 2, 3, 4
/// and 8 subtables, and wide values (16, 32, 128, 256 and 1024 bytes) with 3.
pub fn all_kernel_sources() -> Vec<KernelSource> {
    let mut v = Vec::new();
    for kb in [4, 8] {
        for vb in [4, 8] {
            for d in [2, 3, 4, 8] {
                v.push(kernel_source(kb, vb, d));
            }
        }
        for vb in [16, 32, 128, 256, MAX_VALUE_BYTES] {
            v.push(kernel_source(kb, vb, DEFAULT_SUBTABLES));
        }
    }
    v
}

/// One subtable as the kernels see it: twin of `dc_subtable` in `kernels/dycuckoo.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SubtableView {
    keys: u64,
    values: u64,
    locks: u64,
    a: u64,
    b: u64,
    buckets: u32,
    reserved: u32,
}

/// The table as its kernels see it: twin of `dc_view` in `kernels/dycuckoo.cu`. The resize
/// fields are set only for the resize launches.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DyCuckooView {
    sub: [SubtableView; MAX_SUBTABLES],
    meta: u64,
    side: u64,
    side_values: u64,
    counts: u64,
    choice_seed: u64,
    exclude: u32,
    max_evictions: u32,
    new_keys: u64,
    new_values: u64,
    res_keys: u64,
    res_values: u64,
    scratch: u64,
    res_capacity: u64,
    resize_subtable: u32,
    new_buckets: u32,
    launch_counts: [u64; MAX_SUBTABLES],
    fresh: u32,
    first_fit: u32,
    outcome: u64,
    positions: u64,
    left: u64,
    left_n: u64,
}

// SAFETY: #[repr(C)] plain data (u64 addresses and integers), the layout of dc_view (its size
// is checked by WM_CHECK_VIEW when the module compiles).
unsafe impl KernelArg for DyCuckooView {}

/// "No subtable" in the view (`DC_NONE`).
const NONE: u32 = u32::MAX;

/// One subtable's arrays.
struct Subtable<K: Key, V: Value> {
    keys: DeviceBuffer<K>,
    values: DeviceBuffer<V>,
    locks: DeviceBuffer<u32>,
    buckets: u32,
}

impl<K: Key, V: Value> Subtable<K, V> {
    /// An empty subtable of `buckets` buckets (keys all ones: empty; locks free).
    fn new(gpu: &Gpu, buckets: u64, slots: usize) -> Result<Self> {
        Self::allocate(gpu, buckets, slots, true)
    }

    /// A subtable of `buckets` buckets whose keys and values are not initialised (locks
    /// free): for an upsize, whose kernel writes every slot.
    fn for_upsize(gpu: &Gpu, buckets: u64, slots: usize) -> Result<Self> {
        Self::allocate(gpu, buckets, slots, false)
    }

    fn allocate(gpu: &Gpu, buckets: u64, slots: usize, empty_keys: bool) -> Result<Self> {
        let b = u32::try_from(buckets).map_err(|_| {
            Error::Unsupported(format!("a subtable of {buckets} buckets: at most 2^32 - 1"))
        })?;
        let n = buckets as usize * slots;
        let bytes = n as u64 * (K::BYTES + V::BYTES) as u64 + buckets * 4;
        crate::table::engine::check_fits(gpu, bytes)?;
        Ok(Subtable {
            keys: if empty_keys {
                gpu.alloc_filled::<K>(n, 0xff)?
            } else {
                gpu.alloc::<K>(n)?
            },
            values: gpu.alloc::<V>(n)?,
            locks: gpu.alloc_filled::<u32>(buckets as usize, 0)?,
            buckets: b,
        })
    }
    fn memory_bytes(&self) -> usize {
        self.keys.num_bytes() + self.values.num_bytes() + self.locks.num_bytes()
    }
}

/// DyCuckoo's kernels beyond the five bulk ones.
struct DcKernels {
    reinsert: Kernel,
    unplace: Kernel,
    upsize: Kernel,
    downsize: Kernel,
    recount: Kernel,
    count_absent: Kernel,
    first_fit: Kernel,
    /// `dycuckoo_first_fit_ordered`, launched as one resident wave of this many blocks.
    first_fit_ordered: Kernel,
    ordered_resident_blocks: u32,
    stretch_bins: Kernel,
    /// `dycuckoo_insert_left`, launched as one resident wave of this many blocks.
    insert_left: Kernel,
    insert_left_blocks: u32,
}

/// How insert batches went so far (see [`DyCuckooStats`]).
#[derive(Clone, Copy, Debug, Default)]
struct InsertPaths {
    counted: u64,
    grown_on_bound: u64,
    fresh: u64,
    checked: u64,
    /// Fresh first fits that ran partitioned by locality.
    partitioned: u64,
}

/// Resizes so far (see [`DyCuckooStats`]).
#[derive(Clone, Copy, Debug, Default)]
struct Resizes {
    upsizes: u64,
    downsizes: u64,
    residuals: u64,
    rollbacks: u64,
}

/// DyCuckoo's part of a GPU table (see [`Scheme`]): the subtables, the side path, the
/// per-subtable key counts, and the resize policy's state. A table is [`DyCuckoo<K, V>`].
pub struct DyCuckooScheme<K: Key, V: Value> {
    config: DyCuckooConfig,
    slots: usize,
    /// `(a, b)` of each subtable's hash.
    hashes: Vec<(u64, u64)>,
    subtables: Vec<Subtable<K, V>>,
    /// Side path: `[lock 0, lock 1, present 0, present 1]`.
    side: DeviceBuffer<u32>,
    side_values: DeviceBuffer<V>,
    /// Keys stored per subtable (`MAX_SUBTABLES` words), kept by the kernels, then the last
    /// count of a batch's absent keys (`ABSENT_WORD`: read with the counts, one download), then
    /// the keys first-fit launches left to the locked paths (`LEFT_WORD`).
    counts: DeviceBuffer<u64>,
    /// The keys per subtable as the host last knew them (the last exact read of `counts`, or
    /// the last snapshot taken), passed by value to every launch (the view's `launch_counts`):
    /// every warp of a launch draws a key's target subtable from the same weights, and a find
    /// after an insert draws the targets that insert drew. (A device-side copy before each
    /// insert cost a driver call per batch: ~10 µs of host time each on the H100 machine.)
    host_counts: [u64; MAX_SUBTABLES],
    /// Whether the next insert launch is fresh: none of its keys was in the table before it
    /// (set by [`Scheme::before_insert`] for the launch that follows it).
    fresh: bool,
    fresh_mode: FreshMode,
    /// For the insert launch that follows a first-fit launch (`dycuckoo_first_fit`): a byte per
    /// key of the batch, 1 where that launch placed the key. Kept until the next batch's
    /// [`Scheme::before_insert`] at least, so it outlives the launch that reads it, and reused by
    /// later batches while it is at most [`OUTCOME_KEPT_BYTES`] (an allocation and a free per
    /// batch cost two driver calls).
    outcome: Option<DeviceBuffer<u8>>,
    /// With a partitioned first fit ([`partitioned_first_fit`]): where each key of the batch
    /// went in the partition (`outcome` is in that order). Kept as `outcome` is, until the next
    /// batch.
    positions: Option<DeviceBuffer<u32>>,
    /// With a first fit in input order: the indices of the keys it left (the counts'
    /// [`LEFT_N_WORD`] of them), which `dycuckoo_insert_left` takes. Kept as `outcome` is.
    left: Option<DeviceBuffer<u32>>,
    /// Whether the last first fit listed the keys it left (`left`): the insert launch after it
    /// is then `dycuckoo_insert_left`.
    listed: bool,
    /// Whether the counts' [`LEFT_N_WORD`] may be other than zero: a listed first fit was
    /// launched and the insert launch that zeroes it not yet (cleared in `after_insert`).
    left_n_dirty: bool,
    /// Whether the next insert launch follows a first-fit launch over its batch (`outcome`
    /// holds that launch's results).
    after_first_fit: bool,
    /// The `ABSENT_WORD` of the last read of the counts.
    absent: u64,
    /// The `LEFT_WORD` of the last read or snapshot of the counts.
    first_fit_left: u64,
    /// Capacity bounds of the resize policy (slots).
    floor: usize,
    ceiling: usize,
    /// Keys in the subtables at the last exact read of `counts`, at most how many inserts
    /// launched since may have added, and at most how many erases launched since may have
    /// taken away: bounds on the keys that spare most batches a read (an upper bound for
    /// growing, a lower one for shrinking).
    known: u64,
    pending: u64,
    erasing: u64,
    /// The counts as the last insert launch left them, copied to the host without a wait
    /// (`FreshMode::Checked`): once the copy is done, `known` takes it and `pending` and
    /// `erasing` keep only the batches launched after it, so the bounds stay tight without a
    /// read.
    snapshot: Option<CountSnapshot>,
    resizes: Resizes,
    paths: InsertPaths,
    kernels: Option<DcKernels>,
    _kv: PhantomData<(K, V)>,
}

/// An asynchronous copy of the counts (see `DyCuckooScheme::snapshot`).
struct CountSnapshot {
    host: PinnedBuffer<u64>,
    /// Recorded after the copy.
    done: Event,
    /// `pending` and `erasing` as the copy was enqueued (the batches it already counts).
    pending: u64,
    erasing: u64,
    /// Enqueued and not yet taken (nor made stale by an exact read or a clear).
    live: bool,
}

/// A DyCuckoo table on a GPU: [`GpuTable`] over [`DyCuckooScheme`]. See the
/// [module docs](self); [`GpuTable::new`] makes one from a [`DyCuckooConfig`].
pub type DyCuckoo<K, V> = GpuTable<DyCuckooScheme<K, V>>;

impl<K: Key, V: Value> DyCuckooScheme<K, V> {
    fn kernels(&self) -> &DcKernels {
        self.kernels
            .as_ref()
            .expect("bound when the table was made")
    }
    fn geometry(&self) -> Geometry {
        Geometry::new(
            self.subtables.iter().map(|s| s.buckets as u64).collect(),
            self.slots,
        )
    }
    /// Reads the per-subtable counts (synchronises): the exact number of keys in the subtables.
    fn read_counts(&mut self, gpu: &Gpu) -> Result<Vec<u64>> {
        let all = gpu.download(&self.counts)?;
        self.drop_snapshot();
        self.absent = all[ABSENT_WORD];
        self.first_fit_left = all[LEFT_WORD];
        let counts = all[..self.subtables.len()].to_vec();
        self.host_counts = [0; MAX_SUBTABLES];
        self.host_counts[..counts.len()].copy_from_slice(&counts);
        self.known = counts.iter().sum();
        self.pending = 0;
        self.erasing = 0;
        Ok(counts)
    }
    /// Enqueues a copy of the counts to the host (after an insert batch's launches; the host
    /// does not wait), taken by the next [`take_snapshot`](Self::take_snapshot) that finds it
    /// done.
    fn enqueue_snapshot(&mut self, gpu: &Gpu) -> Result<()> {
        if self.snapshot.is_none() {
            self.snapshot = Some(CountSnapshot {
                host: gpu.alloc_pinned::<u64>(COUNT_WORDS)?,
                done: gpu.new_event()?,
                pending: 0,
                erasing: 0,
                live: false,
            });
        }
        let (pending, erasing) = (self.pending, self.erasing);
        let snap = self.snapshot.as_mut().expect("made above");
        gpu.copy_to_pinned(&self.counts, 0, &mut snap.host, 0, COUNT_WORDS)?;
        snap.done.record(gpu)?;
        (snap.pending, snap.erasing, snap.live) = (pending, erasing, true);
        Ok(())
    }
    /// Takes the last snapshot of the counts if its copy is done (never waits): `known` becomes
    /// its sum, and `pending` and `erasing` keep only what was launched after it.
    fn take_snapshot(&mut self) -> Result<()> {
        let d = self.subtables.len();
        let Some(snap) = self
            .snapshot
            .as_mut()
            .filter(|s| s.live && s.done.is_complete())
        else {
            return Ok(());
        };
        snap.live = false;
        let all = snap.host.as_slice()?;
        self.host_counts = [0; MAX_SUBTABLES];
        self.host_counts[..d].copy_from_slice(&all[..d]);
        self.known = all[..d].iter().sum();
        self.first_fit_left = all[LEFT_WORD];
        self.pending = self.pending.saturating_sub(snap.pending);
        self.erasing = self.erasing.saturating_sub(snap.erasing);
        Ok(())
    }
    /// Makes a snapshot in flight stale (an exact read or a clear came after it).
    fn drop_snapshot(&mut self) {
        if let Some(s) = self.snapshot.as_mut() {
            s.live = false;
        }
    }
    fn allocate_side(gpu: &Gpu) -> Result<(DeviceBuffer<u32>, DeviceBuffer<V>)> {
        // Two side-path locks, two present flags, and the escalation token of the kernels'
        // inserts (kernels/dycuckoo.cu: DC_SIDE_TOKEN).
        Ok((gpu.alloc_filled::<u32>(5, 0)?, gpu.alloc_filled::<V>(2, 0)?))
    }
}

// SAFETY: the view holds the addresses of the scheme's own arrays, alive as long as it is: for
// each of its d subtables, keys and values of `buckets × slots` elements and `buckets` lock
// words (what the kernels index for the `buckets` the view states); the side path's 5 words (with the escalation token)
// and 2 values; the counts' MAX_SUBTABLES words. The launches that also set the view's resize
// fields (upsize_subtable, downsize_subtable, recount, count_absent below) name the buffers
// those fields address to the launch, which orders their frees after the kernel.
unsafe impl<K: Key, V: Value> Scheme for DyCuckooScheme<K, V> {
    type Key = K;
    type Value = V;
    type Config = DyCuckooConfig;
    type View = DyCuckooView;
    const NAME: &'static str = "dycuckoo";
    const NO_MIXED_ERASE: Option<&'static str> = Some(
        "erases are phase-separated from inserts, as in the paper (finds and erases take no \
         lock)",
    );

    /// [`Error::Unsupported`] for widths DyCuckoo does not store ([`supports_widths`]);
    /// [`Error::InvalidInput`] for parameters [`DyCuckooConfig::check`] refuses;
    /// [`Error::OutOfMemory`] when the subtables do not fit the GPU.
    fn new(gpu: &Arc<Gpu>, config: DyCuckooConfig) -> Result<(Self, KernelSource)> {
        if !supports_widths(K::BYTES, V::BYTES) {
            return Err(Error::Unsupported(format!(
                "DyCuckoo stores keys of 4 or 8 bytes and values of 4 to {MAX_VALUE_BYTES} bytes \
                 in multiples of 4, not {} ({} bytes) -> {} ({} bytes)",
                K::NAME,
                K::BYTES,
                V::NAME,
                V::BYTES
            )));
        }
        config.check(K::BYTES)?;
        let geometry = config.geometry(K::BYTES);
        let slots = geometry.slots_per_bucket();
        let d = config.subtables as usize;
        let subtables = geometry
            .buckets()
            .iter()
            .map(|&b| Subtable::new(gpu, b, slots))
            .collect::<Result<Vec<_>>>()?;
        let (side, side_values) = Self::allocate_side(gpu)?;
        let floor = config
            .min_capacity
            .unwrap_or(config.capacity)
            .min(config.capacity);
        let source = kernel_source(K::BYTES, V::BYTES, config.subtables);
        let scheme = DyCuckooScheme {
            hashes: policy::hash_parameters(config.seed, d, K::BYTES),
            ceiling: config.max_capacity.unwrap_or(usize::MAX),
            config,
            slots,
            subtables,
            side,
            side_values,
            counts: gpu.alloc_filled::<u64>(COUNT_WORDS, 0)?,
            host_counts: [0; MAX_SUBTABLES],
            fresh: false,
            fresh_mode: FreshMode::from_env(),
            outcome: None,
            positions: None,
            left: None,
            listed: false,
            left_n_dirty: false,
            after_first_fit: false,
            absent: 0,
            first_fit_left: 0,
            floor,
            known: 0,
            pending: 0,
            erasing: 0,
            snapshot: None,
            resizes: Resizes::default(),
            paths: InsertPaths::default(),
            kernels: None,
            _kv: PhantomData,
        };
        Ok((scheme, source))
    }

    fn config(&self) -> &DyCuckooConfig {
        &self.config
    }

    fn bind(&mut self, gpu: &Gpu, module: &Module) -> Result<()> {
        let k = |op: &str| module.kernel(&format!("dycuckoo_{op}"));
        let first_fit_ordered = k("first_fit_ordered")?;
        let ordered_resident_blocks = locality::resident_blocks(gpu, &first_fit_ordered)?;
        let insert_left = k("insert_left")?;
        let insert_left_blocks = locality::resident_blocks(gpu, &insert_left)?;
        self.kernels = Some(DcKernels {
            reinsert: k("reinsert")?,
            unplace: k("unplace")?,
            upsize: k("upsize")?,
            downsize: k("downsize")?,
            recount: k("recount")?,
            count_absent: k("count_absent")?,
            first_fit: k("first_fit")?,
            first_fit_ordered,
            ordered_resident_blocks,
            stretch_bins: k("stretch_bins")?,
            insert_left,
            insert_left_blocks,
        });
        Ok(())
    }

    fn view(&self, meta: u64) -> DyCuckooView {
        let mut sub = [SubtableView::default(); MAX_SUBTABLES];
        for (i, s) in self.subtables.iter().enumerate() {
            sub[i] = SubtableView {
                keys: s.keys.device_address(),
                values: s.values.device_address(),
                locks: s.locks.device_address(),
                a: self.hashes[i].0,
                b: self.hashes[i].1,
                buckets: s.buckets,
                reserved: 0,
            };
        }
        DyCuckooView {
            sub,
            meta,
            side: self.side.device_address(),
            side_values: self.side_values.device_address(),
            counts: self.counts.device_address(),
            choice_seed: policy::choice_seed(self.config.seed),
            exclude: NONE,
            max_evictions: self.config.max_evictions,
            new_keys: 0,
            new_values: 0,
            res_keys: 0,
            res_values: 0,
            scratch: 0,
            res_capacity: 0,
            resize_subtable: NONE,
            new_buckets: 0,
            launch_counts: self.host_counts,
            fresh: u32::from(self.fresh),
            first_fit: u32::from(self.after_first_fit),
            outcome: match &self.outcome {
                Some(o) if self.after_first_fit => o.device_address(),
                _ => 0,
            },
            positions: match &self.positions {
                Some(p) if self.after_first_fit => p.device_address(),
                _ => 0,
            },
            left: match &self.left {
                Some(l) if self.listed => l.device_address(),
                _ => 0,
            },
            left_n: if self.listed {
                self.counts.device_address() + (LEFT_N_WORD * std::mem::size_of::<u64>()) as u64
            } else {
                0
            },
        }
    }

    fn capacity(&self) -> usize {
        self.geometry().capacity()
    }

    /// After a first fit that listed the keys it left: `dycuckoo_insert_left` over the list, one
    /// resident wave (the batch's other keys only get their statuses).
    fn insert_kernel(&self, _n: usize) -> Option<(&Kernel, u32)> {
        let k = self.kernels();
        (self.after_first_fit && self.listed).then_some((&k.insert_left, k.insert_left_blocks))
    }

    /// One thread per key: the warp serves its lanes' keys in turn.
    fn group_size(&self) -> u32 {
        1
    }

    fn memory_bytes(&self) -> usize {
        self.subtables
            .iter()
            .map(Subtable::memory_bytes)
            .sum::<usize>()
            + self.side.num_bytes()
            + self.side_values.num_bytes()
            + self.counts.num_bytes()
            + self.outcome.as_ref().map_or(0, |o| o.num_bytes())
            + self.positions.as_ref().map_or(0, |p| p.num_bytes())
            + self.left.as_ref().map_or(0, |l| l.num_bytes())
    }

    /// Every key empty, every lock free, the counts and the side path zero; the subtables keep
    /// their sizes.
    fn clear(&mut self, gpu: &Gpu) -> Result<()> {
        for s in &mut self.subtables {
            gpu.fill_bytes(&mut s.keys, 0xff)?;
            gpu.fill_bytes(&mut s.locks, 0)?;
        }
        gpu.fill_bytes(&mut self.side, 0)?;
        gpu.fill_bytes(&mut self.counts, 0)?;
        self.host_counts = [0; MAX_SUBTABLES];
        self.after_first_fit = false;
        self.listed = false;
        self.left_n_dirty = false; // (the counts are zeroed above)
        self.known = 0;
        self.pending = 0;
        self.erasing = 0;
        self.drop_snapshot();
        self.first_fit_left = 0;
        Ok(())
    }

    /// β: the table grows before it would fill beyond it.
    fn max_load_factor(&self) -> f64 {
        self.config.beta
    }

    /// Grows (doubling the smallest subtable) until the batch's keys absent from the table fit
    /// within β. The keys are counted on the device only when the table's bound on its keys
    /// (the last snapshot of the counts taken, plus every insert launched since) says the batch
    /// might cross β (`FreshMode::Count`: for every plain batch into a non-empty table); an
    /// upsize that cannot allocate stops the growth (the keys that then find no room are
    /// reported). Then decides whether the launch is fresh (none of its keys in the table: the
    /// table is empty, or the count found every key of a plain insert absent), copies the
    /// counts the launch draws targets from, and launches the first fit of a plain batch of
    /// narrow values: fresh, or checked (`FreshMode::Checked`, the default: each key looked
    /// for in all its buckets first).
    fn before_insert(
        table: &mut GpuTable<Self>,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        ops: Option<&DeviceBuffer<u8>>,
        status: Option<&mut DeviceBuffer<u32>>,
    ) -> Result<()> {
        let n = keys.len() as u64;
        let gpu = table.gpu.clone();
        static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let mut clock = PhaseClock::new(env_flag(&TRACE, "WARPMAP_TRACE_DYCUCKOO"));
        table.scheme.take_snapshot()?;
        clock.mark("take_snapshot");
        let s = &table.scheme;
        let limit = policy::keys_at(s.capacity(), s.config.beta);
        let empty = |s: &Self| s.known == 0 && s.pending == 0;
        // (Count: every plain batch into a non-empty table counts its absent keys.)
        let count_always =
            s.fresh_mode == FreshMode::Count && ops.is_none() && !empty(&table.scheme);
        let mut absent = None;
        let upsizes = table.scheme.resizes.upsizes;
        let bound = s.known.saturating_add(s.pending).saturating_add(n);
        if bound > limit && !count_always && grows_on_bound(s, n) {
            // Every key taken as new: the growth this needs keeps the fill at α or above even
            // if none is, so no count (a find pass and a synchronisation) is needed to plan it.
            let incoming = s.pending.saturating_add(n);
            grow(table, incoming, false)?;
            table.scheme.paths.grown_on_bound += 1;
            clock.mark("upsizes on the bound");
        } else if bound > limit || count_always {
            // The count goes first, so that one download brings it and the exact counts.
            count_absent(table, keys, ops)?;
            table.scheme.read_counts(&gpu)?;
            table.scheme.paths.counted += 1;
            clock.mark("count_absent and read_counts");
            let s = &table.scheme;
            absent = Some(s.absent);
            if s.known + n > limit {
                grow(table, s.absent, false)?;
                if clock.on() {
                    gpu.synchronize()?; // a traced growth's time is its own
                    clock.mark("upsizes");
                }
            }
        }
        let s = &mut table.scheme;
        s.fresh =
            s.fresh_mode != FreshMode::Off && (empty(s) || (ops.is_none() && absent == Some(n)));
        let checked = !s.fresh && s.fresh_mode == FreshMode::Checked;
        s.after_first_fit = false;
        s.listed = false;
        if s.outcome
            .as_ref()
            .is_some_and(|o| o.num_bytes() > OUTCOME_KEPT_BYTES)
        {
            s.outcome = None;
            s.left = None;
            clock.mark("last outcome freed");
        }
        s.pending += n;
        if (table.scheme.fresh || checked) && ops.is_none() && V::BYTES <= 8 && first_fit_on() {
            let paths = &mut table.scheme.paths;
            if checked {
                paths.checked += 1;
            } else {
                paths.fresh += 1;
            }
            first_fit(table, keys, values, status)?;
            clock.mark("first fit launched");
        }
        let s = &table.scheme;
        clock.report(format_args!(
            "dycuckoo before_insert: {n} keys, {} known, fresh {}, checked {checked}, {} upsizes, {} left by first fits so far",
            s.known,
            s.fresh,
            s.resizes.upsizes - upsizes,
            s.first_fit_left
        ));
        Ok(())
    }

    /// Copies the counts to the host without waiting (`FreshMode::Checked`): the next batch's
    /// bound starts from them once the copy is done.
    fn after_insert(table: &mut GpuTable<Self>) -> Result<()> {
        // The insert launch after a listed first fit (dycuckoo_insert_left) zeroed the list's
        // length.
        if table.scheme.listed {
            table.scheme.left_n_dirty = false;
        }
        if table.scheme.fresh_mode != FreshMode::Checked {
            return Ok(());
        }
        let gpu = table.gpu.clone();
        table.scheme.enqueue_snapshot(&gpu)
    }

    /// Doubles subtables (at least one) until the stored keys and the `failed` ones fit within
    /// β; false when none could be doubled (the ceiling, or device memory).
    fn grow_table(table: &mut GpuTable<Self>, failed: usize) -> Result<bool> {
        let gpu = table.gpu.clone();
        table.scheme.read_counts(&gpu)?;
        grow(table, failed as u64, true)
    }

    /// Counts the batch's operations as possible erases (the lower bound the shrink check reads).
    fn before_erase(table: &mut GpuTable<Self>, n: usize) -> Result<()> {
        table.scheme.erasing += n as u64;
        Ok(())
    }

    /// Halves subtables while the fill is below α (see [`DyCuckoo::fit_fill_bounds`]).
    fn after_erase(table: &mut GpuTable<Self>) -> Result<()> {
        shrink(table)
    }
}

/// Which insert launches may be fresh (read a key's buckets only up to the first with room;
/// `dc_insert_threads` in `kernels/dycuckoo.cu`): `WARPMAP_DYCUCKOO_FRESH`, for measurements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FreshMode {
    /// `off`: none (every insert reads the key's bucket in every subtable).
    Off,
    /// `bound`: a batch into an empty table, and a plain batch whose keys the growth check
    /// counted (only when the table's bound on its keys said it might cross β) and found all
    /// absent.
    Bound,
    /// `count`: as `Bound`, and every plain batch into a non-empty table counts its absent
    /// keys first (a find pass and a synchronisation). On an H100 (u32 pairs, the dynamic
    /// workload of `--preset dycuckoo-compare`) that made the inserts 1.6x as fast as `Bound`:
    /// a fresh insert reads one bucket where the other reads d, under fewer round trips.
    Count,
    /// The default: as `Bound`, and a plain batch of narrow values that is not fresh takes the
    /// first-fit launch checked (each key looked for in all its d buckets, staged, before it
    /// takes the first empty slot: `dc_check_all`), which is a count's pass without its
    /// synchronisation and the fresh launch after it; the bound starts from an asynchronous
    /// snapshot of the counts taken after each insert batch, so only a batch that may cross β
    /// is counted.
    Checked,
}

impl FreshMode {
    fn from_env() -> Self {
        match std::env::var("WARPMAP_DYCUCKOO_FRESH")
            .as_deref()
            .map(str::trim)
        {
            Ok("off") => FreshMode::Off,
            Ok("bound") => FreshMode::Bound,
            Ok("count") => FreshMode::Count,
            _ => FreshMode::Checked,
        }
    }
}

/// Whether a batch of `n` keys that may cross β can grow the table as if every key were new,
/// without counting the absent ones: the upsizes that this asks for
/// ([`policy::plan_upsizes`] from the last known count, plus every insert launched since and
/// the batch) must leave the fill at α or above even if no key of the batch is new and every
/// erase launched since removed a key (the fewest keys the table can then hold). Then the
/// growth never takes the fill out of [α, β] where the exact count would not have, and the
/// batch is spared a pass over its keys and a synchronisation; the counted path stays for
/// batches large beside the table (the first batches of a growing table), where taking every
/// key as new could overshoot. `WARPMAP_DYCUCKOO_GROW=count` always counts (measurements).
fn grows_on_bound<K: Key, V: Value>(s: &DyCuckooScheme<K, V>, n: u64) -> bool {
    static COUNT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let always_count = *COUNT
        .get_or_init(|| std::env::var("WARPMAP_DYCUCKOO_GROW").is_ok_and(|v| v.trim() == "count"));
    if always_count || s.fresh_mode != FreshMode::Checked {
        return false;
    }
    let geometry = s.geometry();
    let incoming = s.pending.saturating_add(n);
    let plan = policy::plan_upsizes(&geometry, s.known, incoming, s.config.beta, s.ceiling);
    let grown = plan.iter().fold(geometry, |g, &i| g.upsized(i));
    let fewest = s.known.saturating_sub(s.erasing);
    fewest as f64 >= grown.capacity() as f64 * s.config.alpha
}

/// The largest first-fit outcome buffer (a byte per key of a batch) a table keeps for later
/// batches; a larger one (a batch of more than 16 Mi keys) is freed at the next batch.
const OUTCOME_KEPT_BYTES: usize = 16 << 20;

/// Words of the counts buffer: a count per subtable, then [`ABSENT_WORD`], [`LEFT_WORD`],
/// [`LEFT_N_WORD`] and the blocks of `dycuckoo_insert_left` done (which its last block zeroes
/// with the length).
const COUNT_WORDS: usize = MAX_SUBTABLES + 4;
/// Where `count_absent` writes (read by the next [`DyCuckooScheme::read_counts`]).
const ABSENT_WORD: usize = MAX_SUBTABLES;
/// Where `dycuckoo_first_fit` adds the keys it leaves to the locked paths (since the table was
/// made or cleared; [`DyCuckooStats::first_fit_left`]).
const LEFT_WORD: usize = MAX_SUBTABLES + 1;
/// The keys that the last first fit in input order listed in `left` (zeroed by the insert
/// launch after it).
const LEFT_N_WORD: usize = MAX_SUBTABLES + 2;

/// Counts the keys of `keys` (of insert operations, with `ops`) absent from the table into the
/// counts' `ABSENT_WORD`, on the table's stream (the next read of the counts brings it).
fn count_absent<K: Key, V: Value>(
    table: &mut GpuTable<DyCuckooScheme<K, V>>,
    keys: &DeviceBuffer<K>,
    ops: Option<&DeviceBuffer<u8>>,
) -> Result<()> {
    let gpu = table.gpu.clone();
    let word = std::mem::size_of::<u64>();
    gpu.fill_range(&mut table.scheme.counts, ABSENT_WORD * word, word, 0)?;
    let mut view = table.view();
    view.scratch = table.scheme.counts.device_address() + (ABSENT_WORD * word) as u64;
    let bulk = Bulk::keys_ops(keys, ops);
    let grid = bulk_grid(&gpu, keys.len() as u64);
    let kernel = &table.scheme.kernels().count_absent;
    // The counts are the table's own buffer, on its stream: only the batch's buffers are ordered.
    table.launch(kernel, grid, &view, &bulk, |l| {
        l.reads(keys);
        if let Some(o) = ops {
            l.reads(o);
        }
    })
}

/// Whether fresh plain batches take the first-fit launch (`WARPMAP_DYCUCKOO_FIRST_FIT=off`
/// turns it off, for measurements).
fn first_fit_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("WARPMAP_DYCUCKOO_FIRST_FIT").as_deref() != Ok("off"))
}

/// The first launch of a fresh plain batch (`dycuckoo_first_fit`: each key placed without a
/// lock at the first empty slot of its order of buckets, or left for the locked paths), on the
/// table's stream; the engine's insert launch that follows (the view's `first_fit`) gives the
/// placed keys their status and inserts the others, with fresh batches' shortcut off (they run
/// the full checks: a copy of a key may be in from the first launch).
fn first_fit<K: Key, V: Value>(
    table: &mut GpuTable<DyCuckooScheme<K, V>>,
    keys: &DeviceBuffer<K>,
    values: &DeviceBuffer<V>,
    status: Option<&mut DeviceBuffer<u32>>,
) -> Result<()> {
    let gpu = table.gpu.clone();
    let mut outcome = match table.scheme.outcome.take() {
        Some(o) if o.len() >= keys.len() => o,
        _ => gpu.alloc::<u8>(keys.len())?,
    };
    table.scheme.positions = None;
    if let Some(stretches) = partition_stretches(table, keys.len()) {
        match partitioned_first_fit(table, keys, values, &mut outcome, stretches) {
            Ok(positions) => {
                let s = &mut table.scheme;
                s.outcome = Some(outcome);
                s.positions = Some(positions);
                s.after_first_fit = true;
                s.fresh = false;
                s.paths.partitioned += 1;
                return Ok(());
            }
            // No room for the partition's scratch (a table that fills the GPU): in input order,
            // as without it.
            Err(Error::OutOfMemory { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    // The keys it leaves are listed (their indices, a word per key of the batch), so that the
    // insert launch after it takes them alone (`dycuckoo_insert_left`, which zeroes the list's
    // length when done); the placed keys get their status here.
    let mut left = match table.scheme.left.take() {
        Some(l) if l.len() >= keys.len() => l,
        _ => gpu.alloc::<u32>(keys.len())?,
    };
    if table.scheme.left_n_dirty {
        // (A listed first fit whose insert launch did not follow: an error between them.)
        let word = std::mem::size_of::<u64>();
        gpu.fill_range(&mut table.scheme.counts, LEFT_N_WORD * word, 2 * word, 0)?;
    }
    table.scheme.left = Some(left);
    table.scheme.listed = keys.len() <= u32::MAX as usize;
    table.scheme.left_n_dirty = table.scheme.listed;
    let view = first_fit_view(table, &outcome);
    left = table.scheme.left.take().expect("just put");
    let statuses = status.as_deref().filter(|_| table.scheme.listed);
    let bulk = Bulk::insert(keys, values, statuses, true);
    let grid = bulk_grid(&gpu, keys.len() as u64);
    let kernel = &table.scheme.kernels().first_fit;
    table.launch(kernel, grid, &view, &bulk, |l| {
        l.reads(keys)
            .reads(values)
            .writes(&mut outcome)
            .writes(&mut left);
        if let Some(s) = status {
            l.writes(s);
        }
    })?;
    let s = &mut table.scheme;
    s.outcome = Some(outcome);
    s.left = Some(left);
    s.after_first_fit = true;
    s.fresh = false;
    Ok(())
}

/// The view of a first-fit launch: its outcome into `outcome`, the keys it leaves added to the
/// counts' `LEFT_WORD`.
fn first_fit_view<K: Key, V: Value>(
    table: &GpuTable<DyCuckooScheme<K, V>>,
    outcome: &DeviceBuffer<u8>,
) -> DyCuckooView {
    let mut view = table.view();
    view.outcome = outcome.device_address();
    let word = std::mem::size_of::<u64>();
    view.scratch = table.scheme.counts.device_address() + (LEFT_WORD * word) as u64;
    view
}

/// Stretches per subtable of a partitioned first fit of a fresh batch of `n` keys (see the
/// [module docs](self#the-partitioned-build)), or `None` for input order: whether to partition
/// is WarpDrive's insert rule ([`locality::plan`] over the subtables' bytes and the ordered
/// first fit's resident wave; `Auto`: subtables of at least twice the L2 cache, and a batch of
/// at least [`locality::MIN_CHUNK`] keys whose keys in flight would start within a third of it). Stretches of at most half the L2 cache each,
/// at most [`MAX_WITHIN_PARTS`](crate::table::engine::multisplit::MAX_WITHIN_PARTS) bins in all;
/// `WARPMAP_DYCUCKOO_STRETCHES` sets them, `WARPMAP_DYCUCKOO_PARTITION=on|off` the mode
/// (measurements).
fn partition_stretches<K: Key, V: Value>(
    table: &GpuTable<DyCuckooScheme<K, V>>,
    n: usize,
) -> Option<u32> {
    let s = &table.scheme;
    if !s.fresh {
        return None;
    }
    let l2 = table.gpu.l2_bytes().max(1);
    let slot_bytes = (K::BYTES + V::BYTES) as u64;
    let all = s.capacity() as u64 * slot_bytes;
    let largest = s
        .subtables
        .iter()
        .map(|t| t.buckets as u64 * s.slots as u64 * slot_bytes)
        .max()
        .unwrap_or(0);
    // `WARPMAP_DYCUCKOO_PARTITION=on|off` overrides the configuration (measurements: the
    // WarpDrive tables beside it keep theirs).
    let mode = match crate::table::engine::knob::<String>("WARPMAP_DYCUCKOO_PARTITION").as_deref() {
        Some("on") => LocalityMode::On,
        Some("off") => LocalityMode::Off,
        _ => s.config.locality.resolved(),
    };
    let stretches_of_table = locality::Stretches {
        seed: 0, // (the plan's part function is not used: the bins are DyCuckoo's own)
        hash: crate::hash::HashFunction::default(),
        table_bytes: all,
        mode,
    };
    let machine = locality::Machine {
        l2_bytes: l2,
        resident_blocks: s.kernels().ordered_resident_blocks,
        rounds: locality::ordered_rounds(),
    };
    locality::plan(&stretches_of_table, n, machine)?;
    let d = s.subtables.len() as u32;
    let most = crate::table::engine::multisplit::MAX_WITHIN_PARTS / d;
    let stretches = crate::table::engine::knob::<u32>("WARPMAP_DYCUCKOO_STRETCHES")
        .unwrap_or_else(|| largest.div_ceil((l2 / 2).max(1)) as u32);
    Some(stretches.clamp(1, most))
}

/// The first fit of a fresh batch over its keys partitioned by locality (see the
/// [module docs](self#the-partitioned-build)): each key's bin (`dycuckoo_stretch_bins`: its
/// target subtable, drawn from the launch's weights, and the stretch of its bucket there, of
/// `stretches` per subtable), a split of keys and values by the bins with each key's position
/// ([`multisplit_by_bins`]), then `dycuckoo_first_fit_ordered` over the split, one resident
/// wave taking tiles in order, its outcome in the split's order. Returns the positions, which
/// the insert launch after it reads the outcome through (it runs over the batch in input order,
/// so statuses come out in that order). Everything on the table's stream; the scratch (bins,
/// the split) is freed behind the launches.
fn partitioned_first_fit<K: Key, V: Value>(
    table: &mut GpuTable<DyCuckooScheme<K, V>>,
    keys: &DeviceBuffer<K>,
    values: &DeviceBuffer<V>,
    outcome: &mut DeviceBuffer<u8>,
    stretches: u32,
) -> Result<DeviceBuffer<u32>> {
    let gpu = table.gpu.clone();
    let n = keys.len();
    let parts = stretches * table.scheme.subtables.len() as u32;
    let mut bins = gpu.alloc::<u32>(n)?;
    {
        let bulk = Bulk::keys_words(keys, &bins).with_word(stretches);
        let view = table.view();
        let kernel = &table.scheme.kernels().stretch_bins;
        table.launch(kernel, bulk_grid(&gpu, n as u64), &view, &bulk, |l| {
            l.reads(keys).writes(&mut bins);
        })?;
    }
    let (split, positions) =
        multisplit_by_bins(&gpu, &gpu, keys, Some(values), &bins, parts, true, false)?;
    drop(bins);
    let positions = positions.ok_or_else(|| Error::invalid("a split asked for positions"))?;
    let split_values = split
        .values
        .as_ref()
        .ok_or_else(|| Error::invalid("a split with values returns them"))?;
    let tiles = gpu.alloc_filled::<u64>(1, 0)?;
    let view = first_fit_view(table, outcome);
    let bulk =
        Bulk::insert(&split.keys, split_values, None, true).with_counter(tiles.device_address());
    let kernels = table.scheme.kernels();
    table.launch(
        &kernels.first_fit_ordered,
        kernels.ordered_resident_blocks,
        &view,
        &bulk,
        |l| {
            l.reads(&split.keys).reads(split_values).writes(outcome);
        },
    )?;
    Ok(positions)
}

/// Doubles subtables until `table.scheme.known + incoming` keys fit within β (at least one when
/// `at_least_one`), within the ceiling. Call after an exact read of the counts. Returns whether
/// it grew; running out of device memory stops it without an error.
fn grow<K: Key, V: Value>(
    table: &mut GpuTable<DyCuckooScheme<K, V>>,
    incoming: u64,
    at_least_one: bool,
) -> Result<bool> {
    let s = &table.scheme;
    let geometry = s.geometry();
    let mut plan = policy::plan_upsizes(&geometry, s.known, incoming, s.config.beta, s.ceiling);
    if plan.is_empty() && at_least_one {
        let i = geometry.upsize_target();
        if geometry.upsized(i).capacity() <= s.ceiling {
            plan.push(i);
        }
    }
    let mut grew = false;
    for i in plan {
        match upsize_subtable(table, i) {
            Ok(()) => grew = true,
            Err(Error::OutOfMemory { .. }) => break,
            Err(e) => return Err(e),
        }
    }
    Ok(grew)
}

/// Halves subtables while the fill is below α, within the floor (reads the counts:
/// synchronises). A downsize that is rolled back or cannot allocate stops it.
fn shrink<K: Key, V: Value>(table: &mut GpuTable<DyCuckooScheme<K, V>>) -> Result<()> {
    table.scheme.take_snapshot()?;
    if !may_shrink(&table.scheme) {
        return Ok(());
    }
    let gpu = table.gpu.clone();
    table.scheme.read_counts(&gpu)?;
    loop {
        let s = &table.scheme;
        let plan = policy::plan_downsizes(
            &s.geometry(),
            s.known,
            s.config.alpha,
            s.config.beta,
            s.floor,
        );
        let Some(&i) = plan.first() else {
            return Ok(());
        };
        match downsize_subtable(table, i) {
            Ok(true) => {}
            Ok(false) | Err(Error::OutOfMemory { .. }) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

/// Whether a shrink could halve a subtable: false when even the fewest keys the table can hold
/// now (the last exact count less every erase launched since) keep the fill at α or above,
/// or otherwise give no downsize. Fewer keys never give fewer downsizes, so a false spares the
/// read of the counts (a synchronisation) after most erase batches.
fn may_shrink<K: Key, V: Value>(s: &DyCuckooScheme<K, V>) -> bool {
    let fewest = s.known.saturating_sub(s.erasing);
    !policy::plan_downsizes(
        &s.geometry(),
        fewest,
        s.config.alpha,
        s.config.beta,
        s.floor,
    )
    .is_empty()
}

/// Doubles subtable `i` (§5.3's conflict-free rehash into new arrays). On any error the table
/// is unchanged (the new arrays are allocated before anything is written).
fn upsize_subtable<K: Key, V: Value>(
    table: &mut GpuTable<DyCuckooScheme<K, V>>,
    i: usize,
) -> Result<()> {
    let gpu = table.gpu.clone();
    let slots = table.scheme.slots;
    let old_buckets = table.scheme.subtables[i].buckets as u64;
    // `WARPMAP_TRACE_DYCUCKOO`: the allocation's and the kernel's times, each synchronised.
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let mut clock = PhaseClock::new(env_flag(&TRACE, "WARPMAP_TRACE_DYCUCKOO"));
    if clock.on() {
        gpu.synchronize()?;
        clock.mark("before");
    }
    let mut fresh = Subtable::<K, V>::for_upsize(&gpu, old_buckets * 2, slots)?;
    if clock.on() {
        clock.mark("allocated (host)");
        gpu.synchronize()?;
        clock.mark("allocated (GPU)");
    }
    let mut view = table.view();
    view.resize_subtable = i as u32;
    view.new_buckets = fresh.buckets;
    view.new_keys = fresh.keys.device_address();
    view.new_values = fresh.values.device_address();
    let grid = bulk_grid(&gpu, old_buckets * slots as u64);
    let kernel = &table.scheme.kernels().upsize;
    table.launch(kernel, grid, &view, &Bulk::default(), |l| {
        l.writes(&mut fresh.keys).writes(&mut fresh.values);
    })?;
    if clock.on() {
        gpu.synchronize()?;
        clock.mark("kernel");
    }
    // The old arrays are freed on the table's stream, after the kernel that reads them.
    let old_bytes = std::mem::replace(&mut table.scheme.subtables[i], fresh).memory_bytes();
    table.scheme.resizes.upsizes += 1;
    clock.report(format_args!(
        "dycuckoo upsize of subtable {i}: {old_buckets} buckets, {:.1} MB to twice that",
        old_bytes as f64 / 1e6
    ));
    Ok(())
}

/// Halves subtable `i` (§5.3): merges its buckets into new arrays, then inserts the residuals
/// into the other subtables. True when done; false (the table unchanged) when a residual could
/// not be placed: the placed ones are erased from the other subtables again and the old arrays
/// kept. Errors before the new arrays are in use leave the table unchanged.
fn downsize_subtable<K: Key, V: Value>(
    table: &mut GpuTable<DyCuckooScheme<K, V>>,
    i: usize,
) -> Result<bool> {
    let gpu = table.gpu.clone();
    let slots = table.scheme.slots;
    let buckets = table.scheme.subtables[i].buckets as u64;
    if buckets < 2 || buckets % 2 != 0 {
        return Ok(false);
    }
    let counts = table.scheme.read_counts(&gpu)?;
    let half = buckets / 2;
    // At most the subtable's keys, and at most one bucket's worth per new bucket.
    let res_capacity = (counts[i] as usize).min(half as usize * slots).max(1);
    let mut fresh = Subtable::<K, V>::new(&gpu, half, slots)?;
    let mut res_keys = gpu.alloc::<K>(res_capacity)?;
    let mut res_values = gpu.alloc::<V>(res_capacity)?;
    // [residuals, residuals that found no place]
    let mut scratch = gpu.alloc_filled::<u64>(MAX_SUBTABLES, 0)?;

    let mut view = table.view();
    view.resize_subtable = i as u32;
    view.new_buckets = fresh.buckets;
    view.new_keys = fresh.keys.device_address();
    view.new_values = fresh.values.device_address();
    view.res_keys = res_keys.device_address();
    view.res_values = res_values.device_address();
    view.res_capacity = res_capacity as u64;
    view.scratch = scratch.device_address();
    let grid = bulk_grid(&gpu, half * 32);
    let kernel = &table.scheme.kernels().downsize;
    table.launch(kernel, grid, &view, &Bulk::default(), |l| {
        l.writes(&mut fresh.keys)
            .writes(&mut fresh.values)
            .writes(&mut res_keys)
            .writes(&mut res_values)
            .writes(&mut scratch);
    })?;

    // The new arrays take the subtable's place; the old ones stay for a rollback.
    let old = std::mem::replace(&mut table.scheme.subtables[i], fresh);
    // (The reinsert's weights: the counts read above. Subtable i, whose count the downsize
    // changed, is excluded; the others' are unchanged.)
    let mut view = table.view();
    view.exclude = i as u32;
    view.scratch = scratch.device_address();
    let bulk = Bulk::insert(&res_keys, &res_values, None, true);
    let grid = bulk_grid(&gpu, res_capacity as u64);
    let kernel = &table.scheme.kernels().reinsert;
    table.launch(kernel, grid, &view, &bulk, |l| {
        l.reads(&res_keys).reads(&res_values).writes(&mut scratch);
    })?;
    let outcome = gpu.download(&scratch)?;
    let (residuals, unplaced) = (outcome[0], outcome[1]);
    if residuals <= res_capacity as u64 && unplaced == 0 {
        table.scheme.resizes.downsizes += 1;
        table.scheme.resizes.residuals += residuals;
        return Ok(true);
    }

    // Roll back: erase the placed residuals from the other subtables, restore the old arrays,
    // and count every subtable's keys again.
    let mut view = table.view();
    view.exclude = i as u32;
    view.scratch = scratch.device_address();
    let bulk = Bulk::erase(&res_keys);
    let kernel = &table.scheme.kernels().unplace;
    table.launch(kernel, grid, &view, &bulk, |l| {
        l.reads(&res_keys).writes(&mut scratch);
    })?;
    table.scheme.subtables[i] = old;
    let exact = recount(table)?;
    let mut words = vec![0u64; MAX_SUBTABLES];
    words[..exact.len()].copy_from_slice(&exact);
    gpu.copy_to_device(&words, &mut table.scheme.counts)?;
    table.scheme.read_counts(&gpu)?;
    table.scheme.resizes.rollbacks += 1;
    Ok(false)
}

/// Counts the keys in each subtable by reading every slot (synchronises).
fn recount<K: Key, V: Value>(table: &GpuTable<DyCuckooScheme<K, V>>) -> Result<Vec<u64>> {
    let gpu = &table.gpu;
    let mut scratch = gpu.alloc_filled::<u64>(MAX_SUBTABLES, 0)?;
    let mut view = table.view();
    view.scratch = scratch.device_address();
    let grid = bulk_grid(gpu, table.scheme.capacity() as u64);
    let kernel = &table.scheme.kernels().recount;
    table.launch(kernel, grid, &view, &Bulk::default(), |l| {
        l.writes(&mut scratch);
    })?;
    let all = gpu.download(&scratch)?;
    Ok(all[..table.scheme.subtables.len()].to_vec())
}

/// What a DyCuckoo table holds and how it got there ([`DyCuckoo::stats`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DyCuckooStats {
    /// Buckets of each subtable.
    pub subtable_buckets: Vec<usize>,
    /// Keys in each subtable (the kernels' counts).
    pub subtable_keys: Vec<usize>,
    /// Slots per bucket (32 for 4-byte keys, 16 for 8-byte keys).
    pub slots_per_bucket: usize,
    /// Keys on the side path (equal to an internal marker; they take no slot).
    pub side_keys: usize,
    /// Upsizes (a subtable doubled) since the table was made.
    pub upsizes: u64,
    /// Downsizes (a subtable halved) since the table was made.
    pub downsizes: u64,
    /// Pairs those downsizes moved into other subtables (the residuals: what did not fit the
    /// halved subtable's merged buckets).
    pub residuals: u64,
    /// Downsizes rolled back (a residual found no place).
    pub rollbacks: u64,
    /// Insert batches whose absent keys were counted before the launch (the growth check, when
    /// the bound on the keys says the batch might cross β).
    pub counted_batches: u64,
    /// Insert batches that might cross β and grew the table taking every key as new, without
    /// a count (where that growth keeps the fill at α or above whatever the batch holds).
    pub grown_on_bound_batches: u64,
    /// Keys that the lock-free first launches left to the locked paths (all their buckets
    /// full, a copy of the key seen, CASes lost), since the table was made or cleared, as of
    /// the last read or snapshot of the counts.
    pub first_fit_left: u64,
    /// Plain insert batches of values of 8 bytes at most whose lock-free first launch was
    /// fresh (no key of the batch in the table: each key reads its buckets only up to the
    /// first with room).
    pub fresh_batches: u64,
    /// Such batches whose first launch was checked (each key looked for in all its buckets
    /// first), without a count of their absent keys.
    pub checked_batches: u64,
    /// Fresh batches whose first launch took the keys partitioned by locality
    /// ([`DyCuckooConfig::locality`]).
    pub partitioned_batches: u64,
}

impl DyCuckooStats {
    /// The fill factor θ: keys in the subtables over their slots.
    pub fn fill_factor(&self) -> f64 {
        let slots: usize = self.subtable_buckets.iter().sum::<usize>() * self.slots_per_bucket;
        self.subtable_keys.iter().sum::<usize>() as f64 / slots.max(1) as f64
    }
    /// Whether no subtable is more than twice as large as another.
    pub fn is_balanced(&self) -> bool {
        let min = self.subtable_buckets.iter().min().copied().unwrap_or(0);
        let max = self.subtable_buckets.iter().max().copied().unwrap_or(0);
        max <= 2 * min
    }
}

/// What DyCuckoo does beyond the traits.
impl<K: Key, V: Value> GpuTable<DyCuckooScheme<K, V>> {
    /// Each subtable's buckets.
    pub fn subtable_buckets(&self) -> Vec<usize> {
        self.scheme
            .subtables
            .iter()
            .map(|s| s.buckets as usize)
            .collect()
    }

    /// Counts of what the table holds now (waits for the GPU).
    pub fn stats(&self) -> Result<DyCuckooStats> {
        let counts = self.gpu.download(&self.scheme.counts)?;
        let d = self.scheme.subtables.len();
        let in_subtables: u64 = counts[..d].iter().sum();
        Ok(DyCuckooStats {
            subtable_buckets: self.subtable_buckets(),
            subtable_keys: counts[..d].iter().map(|&c| c as usize).collect(),
            slots_per_bucket: self.scheme.slots,
            side_keys: HashTable::len(self)?.saturating_sub(in_subtables as usize),
            upsizes: self.scheme.resizes.upsizes,
            downsizes: self.scheme.resizes.downsizes,
            residuals: self.scheme.resizes.residuals,
            rollbacks: self.scheme.resizes.rollbacks,
            counted_batches: self.scheme.paths.counted,
            grown_on_bound_batches: self.scheme.paths.grown_on_bound,
            first_fit_left: self.scheme.first_fit_left,
            fresh_batches: self.scheme.paths.fresh,
            checked_batches: self.scheme.paths.checked,
            partitioned_batches: self.scheme.paths.partitioned,
        })
    }

    /// The keys in each subtable counted by reading every slot (waits for the GPU): a check of
    /// the counts [`stats`](Self::stats) reports, which the kernels keep as they go.
    pub fn recount(&self) -> Result<Vec<usize>> {
        Ok(recount(self)?.into_iter().map(|c| c as usize).collect())
    }

    /// Doubles the smallest subtable now. `Ok(false)` when that would exceed
    /// [`DyCuckooConfig::max_capacity`].
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the new arrays cannot be allocated; the table is unchanged.
    pub fn upsize(&mut self) -> Result<bool> {
        let g = self.scheme.geometry();
        let i = g.upsize_target();
        if g.upsized(i).capacity() > self.scheme.ceiling {
            return Ok(false);
        }
        self.synchronize()?;
        upsize_subtable(self, i)?;
        Ok(true)
    }

    /// Halves the largest subtable now, whatever the fill (but never below
    /// [`DyCuckooConfig::min_capacity`]). `Ok(false)` when it cannot be halved (the floor, one
    /// bucket or an odd number of them, or more keys than β of the smaller table) or when a
    /// residual found no place (the downsize was rolled back; the table is unchanged).
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when the new arrays cannot be allocated; the table is unchanged.
    pub fn downsize(&mut self) -> Result<bool> {
        self.synchronize()?;
        let gpu = self.gpu.clone();
        self.scheme.read_counts(&gpu)?;
        let g = self.scheme.geometry();
        let Some(i) = g.downsize_target() else {
            return Ok(false);
        };
        let smaller = g.downsized(i);
        if smaller.capacity() < self.scheme.floor
            || self.scheme.known > policy::keys_at(smaller.capacity(), self.scheme.config.beta)
        {
            return Ok(false);
        }
        downsize_subtable(self, i)
    }

    /// Applies the resize policy now: halves subtables while the fill is below α (what a
    /// host-slice `erase` does afterwards; device-buffer erases do not). Waits for the GPU only
    /// where a downsize is possible: not while the last exact count of keys, less every erase
    /// launched since, keeps the fill at α or above.
    pub fn fit_fill_bounds(&mut self) -> Result<()> {
        self.scheme.take_snapshot()?;
        if !may_shrink(&self.scheme) {
            return Ok(()); // no downsize is possible: nothing to wait for
        }
        self.synchronize()?;
        shrink(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_is_the_kernels_layout() {
        // dc_subtable: five u64 and two u32.
        assert_eq!(std::mem::size_of::<SubtableView>(), 48);
        // dc_view: 8 subtables, 5 u64, 2 u32, 6 u64, 2 u32, 8 u64 (the launch counts), 2 u32,
        // 4 u64 (the outcome, the positions, the list of keys left and its length).
        assert_eq!(
            std::mem::size_of::<DyCuckooView>(),
            8 * 48 + 5 * 8 + 8 + 6 * 8 + 8 + 8 * 8 + 8 + 4 * 8
        );
        assert_eq!(std::mem::align_of::<DyCuckooView>(), 8);
    }

    #[test]
    fn widths() {
        assert!(supports_widths(4, 4) && supports_widths(8, 8) && supports_widths(4, 128));
        assert!(supports_widths(8, MAX_VALUE_BYTES));
        assert!(!supports_widths(16, 4) && !supports_widths(4, 6) && !supports_widths(4, 2048));
        assert!(!supports_widths(12, 4));
    }

    #[test]
    fn config_checks() {
        assert!(DyCuckooConfig::new(100).check(4).is_ok());
        for bad in [
            DyCuckooConfig::new(100).subtables(1),
            DyCuckooConfig::new(100).subtables(9),
            DyCuckooConfig::new(100).fill_bounds(0.9, 0.4),
            DyCuckooConfig::new(100).fill_bounds(0.7, 0.9),
            DyCuckooConfig::new(100).fill_bounds(0.4, 1.0),
            DyCuckooConfig::new(100).max_evictions(0),
            DyCuckooConfig::new(100).max_evictions(32),
            DyCuckooConfig::new(1000).max_capacity(999),
        ] {
            assert!(
                matches!(bad.check(4), Err(Error::InvalidInput(_))),
                "{bad:?}"
            );
        }
        // The first capacity is whole buckets: 1000 slots in 3 subtables of 11 buckets of 32.
        assert!(DyCuckooConfig::new(1000)
            .max_capacity(1056)
            .check(4)
            .is_ok());
        assert!(DyCuckooConfig::new(1000)
            .max_capacity(1055)
            .check(4)
            .is_err());
        // Absurd sizes are not a panic (the allocation refuses them later).
        assert!(DyCuckooConfig::new(usize::MAX)
            .max_capacity(usize::MAX)
            .check(4)
            .is_ok());
        // With 8-byte keys, 16 slots: 21 buckets each, 1008 slots.
        assert!(DyCuckooConfig::new(1000)
            .max_capacity(1008)
            .check(8)
            .is_ok());
    }

    #[test]
    fn resized_keeps_the_parameters() {
        let c = DyCuckooConfig::new(100).subtables(4).fill_bounds(0.3, 0.8);
        let r = c.resized(5000);
        assert_eq!(r.capacity, 5000);
        assert_eq!((r.subtables, r.alpha, r.beta), (4, 0.3, 0.8));
    }

    #[test]
    fn kernel_sources_cover_every_default() {
        let v = all_kernel_sources();
        assert!(v.len() >= 2 * (4 * 2 + 5));
        let d3 = kernel_source(4, 4, 3).label();
        assert!(v.iter().any(|s| s.label() == d3));
        assert!(d3.contains("DC_SUBTABLES=3"));
    }
}
