//! Stadium hashing: a ticket board in GPU memory, buckets in GPU or pinned host memory
//! (stadium-hashing.txt §III). Device code: `kernels/stadium.cu`.
//!
//! The table is a prime number of *buckets*, each holding one key-value record. Beside them, the
//! *ticket board* keeps one small *ticket* per bucket in GPU memory: an *availability bit* and
//! `ticket_bits - 1` *info bits* drawn from the key's hash ([`StadiumConfig::ticket_bits`] ∈
//! {1, 2, 4, 8}), plus the paper's *access bit* (§III-B). One thread handles one key. A key
//! starts at bucket `__umulhi(h1, size)` and steps by `1 + __umulhi(h2, size - 1)` (double
//! hashing; the table size is prime, so `size` probes visit every bucket and load factors up to
//! 1.0 work). An insert reserves a ticket with one `atomicAnd` on the board, writes the info bits
//! with another, then the record with plain stores; a lookup checks the availability bit, then
//! the info bits, and reads a bucket's key only when both match (the paper's three levels of
//! certitude). Collisions and mismatches are thus resolved on the board, which matters most
//! when the buckets live in host memory ([`Location::Host`], out-of-core): there an insert
//! costs one write-only transfer over the bus, and a lookup reads host memory only for
//! candidates whose info bits match.
//!
//! # The board
//!
//! Each bucket's board entry is its ticket (T bits) and its access bit: T + 1 bits, packed
//! ⌊32 / (T + 1)⌋ to a 32-bit word (16, 10, 6 and 3 entries for T = 1, 2, 4, 8), so one atomic
//! changes an entry's bits together. The two state bits give four states: empty, busy (being
//! written, or held while a value is replaced or read in a mixed batch), live, and deleted
//! (erased; searches go on past it, inserts reuse it). `kernels/stadium.cu` explains the
//! transitions and why the access bit is stored inverted with respect to the paper.
//!
//! # Semantics
//!
//! - **Every key is insertable.** The board holds the buckets' states, so no key value is
//!   reserved and there is no side path.
//! - **Duplicate keys.** The paper's insert does not look for the key; warpmap's contract
//!   stores a key once and `insert` replaces its value. An insert here first walks the key's
//!   chain as a lookup does and updates the key where found; a key absent takes the first free
//!   bucket of its chain. Threads with the same key in one batch meet at that bucket: a thread
//!   that finds a bucket busy whose info bits may be its key's waits for it, and a thread that
//!   loses a reservation looks at that bucket again, so the key is stored once, exactly one
//!   occurrence reports it new, and it keeps one of the batch's values (which one is not
//!   specified). Values are replaced while the bucket is held, never torn. With
//!   [`InsertMode::IfAbsent`](crate::InsertMode::IfAbsent) (`insert_if_absent`) a key absent
//!   before the batch keeps the value of the occurrence that placed it (one of the batch's
//!   values, which one is not specified; the others report `PRESENT`), and a key present
//!   before keeps its value.
//! - **Mixed batches** ([`HashTable::mixed_batch`](crate::HashTable::mixed_batch)) run inserts and finds in one launch with
//!   the paper's access bit and fences (`__threadfence` for device buckets,
//!   `__threadfence_system` for host buckets): a key inserted by an earlier call is always
//!   found, with a whole value. Erases are phase-separated.
//! - **Nothing hangs.** Probing is bounded by [`StadiumConfig::max_probes`] (default: the table
//!   size, so a key fails only when no bucket is free: `TABLE_FULL`; a smaller limit reports
//!   `PROBE_LIMIT`).
//! - **Records** are the key's bytes followed by the value's, copied as 4-byte words (every
//!   [`Key`] and [`Value`] type is a multiple of 4 bytes) in the widest vector accesses the
//!   record's alignment allows. Any key and value type of warpmap works, up to 64-byte keys and
//!   256-byte values.
//! - **Where the buckets go** ([`Location`]): the default, [`Location::Auto`], puts them in GPU
//!   memory when the board and the buckets fit a device-memory budget
//!   ([`StadiumConfig::device_memory_budget`]; by default the GPU's free memory less
//!   [`default_budget_margin`]) and in pinned host memory mapped into the GPU otherwise, so a
//!   table larger than the GPU works without asking; [`Location::Device`] and [`Location::Host`]
//!   force one. [`Stadium::location`] says where they went. Host buckets use the page kind of
//!   [`StadiumConfig::host_pages`] ([`HostPages`]: the driver's pinned pages, or transparent
//!   huge pages registered with CUDA).
//! - [`HashTable::memory_bytes`](crate::HashTable::memory_bytes) counts device memory only: the board, device buckets and a
//!   counter. Host buckets are reported by [`Stadium::host_memory_bytes`].
//!
//! # Inserts and the warps
//!
//! [`StadiumConfig::insert_strategy`] chooses how a batch of inserts uses the GPU's warps
//! (§III-C): basic Stash (a thread per pair, to the end), clStash (collaborative lanes: each
//! warp parks unfinished pairs in a shared-memory queue and keeps every lane busy), or the
//! hybrid of the two that switches to collaborative lanes once the table's load passes a
//! threshold. All give the same table; only speed differs. The default,
//! [`InsertStrategy::MeasuredHybrid`], takes the threshold measured as the paper's Fig. 13
//! describes for the table's ticket size and record width ([`MEASURED_HYBRID_THRESHOLDS`]).
//! Measured on an H100 (u64 keys and values, 2^27 keys, load 0.85): hybrid 4.52 / 4.71 / 4.60
//! G inserts/s with 1 / 4 / 8-bit tickets, basic Stash 4.23 / 4.49 / 4.42, clStash 4.45 / 4.48
//! / 4.21; warp execution efficiency (ncu, 4-bit tickets, load 0.8 to 0.95): Stash 31-27 %,
//! clStash 71-65 %.
//!
//! Lookups with 4- or 8-bit tickets read a candidate's whole record (key and value) once its
//! info bits match, one bucket access instead of two dependent ones.
//!
//! ```no_run
//! use warpmap::{Gpu, HashTable, Location, Stadium, StadiumConfig};
//! # fn main() -> warpmap::Result<()> {
//! let gpu = Gpu::default_gpu()?;
//! // 8-bit tickets on the GPU, 64-byte records in host memory.
//! let config = StadiumConfig::new(1 << 20).ticket_bits(8).location(Location::Host);
//! let mut table = Stadium::<[u8; 32], [u8; 32]>::new(gpu, config)?;
//! table.insert(&[[1; 32], [0xff; 32]], &[[10; 32], [20; 32]])?; // all-ones is a key like any other
//! assert_eq!(table.find(&[[1; 32], [2; 32]])?, vec![Some([10; 32]), None]);
//! # Ok(()) }
//! ```

use crate::device::{
    DeviceBuffer, Gpu, HostPages, Kernel, KernelArg, MappedBuffer, Module, DEFAULT_HOST_PAGES,
};
use crate::hash::{next_prime, HashFunction};
use crate::kernels::{KernelSource, STADIUM};
use crate::key::{Key, Value};
use crate::table::engine::{
    check_fits, engine_source, resolve_max_probes, scheme_config, GpuTable, Scheme, BLOCK,
};
use crate::{Error, Result};
use std::marker::PhantomData;
use std::sync::Arc;

pub use crate::hash::DEFAULT_SEED;

/// The ticket sizes the paper evaluates, in bits (availability bit + info bits).
pub const TICKET_BITS: [u32; 4] = [1, 2, 4, 8];
/// The default ticket size: 4 bits, the size of the paper's code listings (3 info bits reject
/// 7 of 8 wrong candidates without a bucket access).
pub const DEFAULT_TICKET_BITS: u32 = 4;

/// Where a Stadium table keeps its buckets (the ticket board is always in GPU memory).
///
/// [`StadiumConfig::new`] asks for [`Location::Auto`]: a table that fits the device-memory
/// budget ([`StadiumConfig::device_memory_budget`]) is in-core, a larger one goes to host
/// memory by itself, so asking for a 100 GB table gives one that works. A table says where its
/// buckets went with [`Stadium::location`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Location {
    /// Buckets in GPU memory (in-core).
    Device,
    /// Buckets in pinned host memory mapped into the GPU (out-of-core): tables larger than GPU
    /// memory; kernels reach the buckets over the bus.
    Host,
    /// Decided when the table is made: [`Location::Device`] when the board and the buckets
    /// together fit the device-memory budget, else [`Location::Host`] (see
    /// [`resolve_location`]).
    #[default]
    Auto,
}

/// Device memory kept free when [`StadiumConfig::device_memory_budget`] is `None`: 1 GiB or 5 %
/// of the GPU's memory, whichever is larger (4 GiB on an 80 GB H100). Beside the board and the
/// buckets a table needs device memory for its batches (keys, values, status and results: a
/// 2^24-key batch of `u64` keys and values with status and found flags is about 0.3 GiB),
/// the kernel modules, and the local memory the driver reserves at the first launch of each
/// kernel; other tables and libraries of the process share the GPU too. A larger batch needs
/// an explicit budget.
pub fn default_budget_margin(total_device_bytes: u64) -> u64 {
    (1u64 << 30).max(total_device_bytes / 20)
}

/// Where the buckets go for a `requested` location, given the ticket board's and the buckets'
/// bytes and the device-memory budget in bytes (a pure function: [`Stadium::new`] passes the
/// budget it computed). [`Location::Device`] and [`Location::Host`] are kept as asked (their
/// allocations report [`Error::OutOfMemory`] themselves); [`Location::Auto`] gives `Device` when
/// `board + buckets <= budget`, else `Host` when the board alone fits, else
/// [`Error::OutOfMemory`] (the board is always in GPU memory). Never returns `Auto`.
pub fn resolve_location(
    requested: Location,
    board_bytes: u64,
    bucket_bytes: u64,
    budget: u64,
) -> Result<Location> {
    match requested {
        Location::Device | Location::Host => Ok(requested),
        Location::Auto if board_bytes.saturating_add(bucket_bytes) <= budget => {
            Ok(Location::Device)
        }
        Location::Auto if board_bytes <= budget => Ok(Location::Host),
        Location::Auto => Err(Error::OutOfMemory {
            requested_bytes: board_bytes,
            free_bytes: budget,
        }),
    }
}

/// How an insert batch is scheduled on the GPU's warps (§III-C).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum InsertStrategy {
    /// Basic Stash: one thread per pair, to the end. A warp waits for its slowest lane.
    Stash,
    /// Stash with collaborative lanes (clStash, Fig. 12): each warp parks unfinished pairs in a
    /// shared-memory queue and keeps all 32 lanes busy with fresh or parked pairs.
    ClStash,
    /// Basic Stash while the table's load factor is below `threshold`, clStash above it (the
    /// paper's hybrid).
    Hybrid {
        /// The load factor (stored keys / buckets) at which warps switch to collaborative lanes.
        threshold: f64,
    },
    /// The hybrid with the threshold measured for the table's ticket size and record width
    /// ([`measured_hybrid_threshold`]): the default.
    #[default]
    MeasuredHybrid,
}

impl InsertStrategy {
    /// "stash", "clstash" or "hybrid".
    pub fn name(&self) -> &'static str {
        match self {
            InsertStrategy::Stash => "stash",
            InsertStrategy::ClStash => "clstash",
            InsertStrategy::Hybrid { .. } | InsertStrategy::MeasuredHybrid => "hybrid",
        }
    }

    /// The load factor from which warps collaborate, for a table of `ticket_bits` tickets and
    /// `record_bytes`-byte records: `None` for basic Stash, 0 for clStash, the threshold for the
    /// hybrids.
    pub fn collaborate_from(self, ticket_bits: u32, record_bytes: usize) -> Option<f64> {
        match self {
            InsertStrategy::Stash => None,
            InsertStrategy::ClStash => Some(0.0),
            InsertStrategy::Hybrid { threshold } => Some(threshold),
            InsertStrategy::MeasuredHybrid => {
                Some(measured_hybrid_threshold(ticket_bits, record_bytes))
            }
        }
    }

    /// This strategy for a table of `ticket_bits` tickets and `record_bytes`-byte records:
    /// [`InsertStrategy::MeasuredHybrid`] becomes the hybrid with its measured threshold; the
    /// others are kept.
    pub fn resolve(self, ticket_bits: u32, record_bytes: usize) -> Self {
        match self {
            InsertStrategy::MeasuredHybrid => InsertStrategy::Hybrid {
                threshold: measured_hybrid_threshold(ticket_bits, record_bytes),
            },
            s => s,
        }
    }
}

/// The hybrid thresholds measured as the paper's Fig. 13 describes (`warpmap lanes threshold`:
/// 2^26 unique keys filling a table to load 0.95 in 50 timed batches with basic Stash and with
/// clStash; the difference per batch fitted by a parabola of the load; its root where clStash
/// starts to win), on an H100 (sm_90, 132 SMs) with device buckets at commit 611bb81, median of
/// 3 runs, every table verified: `bench/results/2026-11-22-h100-611bb81-stadium-fig13-u32.json`
/// (4-byte keys and values) and `...-fig13-u64.json` (8-byte keys and values), for tickets of
/// 1, 2, 4 and 8 bits. With 1-bit tickets and 8-byte records clStash won every batch (no root:
/// threshold 0). The more info bits, the later the lanes pay: a larger board misses L2, and a
/// warp's parked jobs cost more than its slowest lane.
pub const MEASURED_HYBRID_THRESHOLDS: [(u32, f64, f64); 4] = [
    // (ticket bits, 8-byte records (u32/u32), 16-byte records (u64/u64))
    (1, 0.000, 0.281),
    (2, 0.334, 0.432),
    (4, 0.429, 0.513),
    (8, 0.586, 0.643),
];

/// The measured hybrid threshold ([`MEASURED_HYBRID_THRESHOLDS`]) for `ticket_bits` tickets and
/// records of `record_bytes` (key + value): the 8-byte record's up to 8 bytes, the 16-byte
/// record's above (wider records were not measured; their buckets cost more per insert, like
/// 16-byte ones, and the switch moved later from 8 to 16 bytes, so the later value is the safer
/// of the two).
pub fn measured_hybrid_threshold(ticket_bits: u32, record_bytes: usize) -> f64 {
    MEASURED_HYBRID_THRESHOLDS
        .iter()
        .find(|(t, _, _)| *t == ticket_bits)
        .map_or(
            0.5,
            |&(_, narrow, wide)| {
                if record_bytes <= 8 {
                    narrow
                } else {
                    wide
                }
            },
        )
}

/// The parameters of a [`Stadium`] table: [`StadiumConfig::new`] gives the defaults, the
/// setters change one each. [`GpuTable::new`] checks them (see [`StadiumScheme`]'s `new` for
/// the errors).
///
/// # Examples
/// ```
/// use warpmap::{InsertStrategy, Location, StadiumConfig};
/// let c = StadiumConfig::new(1 << 20)
///     .ticket_bits(8)
///     .location(Location::Host)
///     .insert_strategy(InsertStrategy::ClStash)
///     .seed(7);
/// assert_eq!((c.capacity, c.ticket_bits, c.seed), (1 << 20, 8, 7));
/// assert_eq!(StadiumConfig::new(10).location, Location::Auto);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct StadiumConfig {
    /// The number of keys the table must hold (rounded up to a prime number of buckets).
    pub capacity: usize,
    /// Bits per ticket: 1, 2, 4 or 8 (the availability bit and `ticket_bits - 1` info bits).
    pub ticket_bits: u32,
    /// Where the buckets live (default [`Location::Auto`]).
    pub location: Location,
    /// The device memory, in bytes, that [`Location::Auto`] lets the board and the buckets take;
    /// `None` (the default): the GPU's free memory when the table is made minus
    /// [`default_budget_margin`]. Used only by `Auto`.
    pub device_memory_budget: Option<u64>,
    /// The host pages of host buckets ([`Location::Host`], or `Auto` resolved to it); default
    /// [`DEFAULT_HOST_PAGES`] (pinned). Where the kernel has no transparent huge pages,
    /// `Huge` gets the driver's pinned pages instead ([`Stadium::host_pages`] says which).
    pub host_pages: HostPages,
    /// Buckets probed before an insert gives up (`PROBE_LIMIT`); `None`: the table size, so that
    /// an insert fails only when no bucket is free (`TABLE_FULL`). Values above the table size
    /// mean the table size.
    pub max_probes: Option<u32>,
    /// The hash seed.
    pub seed: u64,
    /// The hash function.
    pub hash: HashFunction,
    /// How inserts use the warps (basic Stash, clStash or the hybrid).
    pub insert_strategy: InsertStrategy,
}

scheme_config!(StadiumConfig);

impl StadiumConfig {
    /// A table of at least `capacity` buckets with default parameters.
    pub fn new(capacity: usize) -> Self {
        StadiumConfig {
            capacity,
            ticket_bits: DEFAULT_TICKET_BITS,
            location: Location::Auto,
            device_memory_budget: None,
            host_pages: DEFAULT_HOST_PAGES,
            max_probes: None,
            seed: DEFAULT_SEED,
            hash: HashFunction::default(),
            insert_strategy: InsertStrategy::default(),
        }
    }
    /// Sets the ticket size in bits.
    pub fn ticket_bits(mut self, bits: u32) -> Self {
        self.ticket_bits = bits;
        self
    }
    /// Sets where the buckets live.
    pub fn location(mut self, location: Location) -> Self {
        self.location = location;
        self
    }
    /// Sets the device-memory budget of [`Location::Auto`], in bytes.
    pub fn device_memory_budget(mut self, bytes: u64) -> Self {
        self.device_memory_budget = Some(bytes);
        self
    }
    /// Sets the kind of host pages for host buckets.
    pub fn host_pages(mut self, pages: HostPages) -> Self {
        self.host_pages = pages;
        self
    }
    /// Sets the insert strategy.
    pub fn insert_strategy(mut self, strategy: InsertStrategy) -> Self {
        self.insert_strategy = strategy;
        self
    }
}

/// Blocks of 256 threads per multiprocessor in `stadium_insert_cl`'s persistent grid at most:
/// 48 resident warps. Measured on an H100 (bench/NOTES.md, issue 10): when the kernel's
/// registers let 8 blocks fit instead of 6, inserts with 1-bit tickets (clStash from the first
/// key) lost 8 % at load 0.5 and 4 % at 0.8 (more warps meeting each other's busy entries, 16
/// to a board word); capped at 6 every Stadium device cell is within 0.998-1.004 of the
/// 6-block grid the hybrid thresholds were measured with, and 7 blocks still lose 4 %.
pub const CL_MAX_BLOCKS_PER_SM: u32 = 6;

/// Blocks per multiprocessor of `stadium_insert_cl`'s persistent grid, given how many fit at
/// once (`resident`): at most [`CL_MAX_BLOCKS_PER_SM`], or what the environment variable
/// `WARPMAP_STADIUM_CL_BLOCKS_PER_SM` asks (a measurement knob), never more than fit.
pub fn cl_blocks_per_sm(resident: u32) -> u32 {
    let cap = std::env::var("WARPMAP_STADIUM_CL_BLOCKS_PER_SM")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&b| b >= 1)
        .unwrap_or(CL_MAX_BLOCKS_PER_SM);
    cap.min(resident).max(1)
}

/// Board entries per 32-bit word for tickets of `ticket_bits` bits (each entry is the ticket
/// and the access bit).
pub fn entries_per_word(ticket_bits: u32) -> u32 {
    32 / (ticket_bits + 1)
}

/// The kernel module specialisation for these widths, ticket size, bucket location and hash.
/// `location` is a resolved one ([`Location::Device`] or [`Location::Host`];
/// [`Stadium::new`] resolves [`Location::Auto`] first).
pub fn kernel_source(
    key_bytes: usize,
    value_bytes: usize,
    ticket_bits: u32,
    location: Location,
    hash: HashFunction,
) -> KernelSource {
    engine_source::<StadiumView>("stadium", STADIUM, key_bytes, value_bytes)
        .define("ST_TICKET_BITS", ticket_bits)
        .define("ST_HOST_BUCKETS", u32::from(location == Location::Host))
        .define("WM_HASH", hash.define())
}

/// Every specialisation the tests ask for (the compile test builds them all): every ticket size
/// and both locations for the narrow widths, and the wide widths of the contract and Stadium
/// tests.
pub fn all_kernel_sources() -> Vec<KernelSource> {
    let mut v = Vec::new();
    for t in TICKET_BITS {
        for location in [Location::Device, Location::Host] {
            for (kb, vb) in [(4, 4), (4, 8), (8, 4), (8, 8)] {
                v.push(kernel_source(kb, vb, t, location, HashFunction::default()));
            }
            v.push(kernel_source(64, 256, t, location, HashFunction::default()));
        }
        v.push(kernel_source(
            8,
            8,
            t,
            Location::Device,
            HashFunction::Mueller,
        ));
    }
    for (kb, vb) in [
        (16, 8),
        (16, 4),
        (32, 4),
        (64, 8),
        (8, 32),
        (12, 256),
        (4, 16),
        (32, 32),
    ] {
        for location in [Location::Device, Location::Host] {
            for t in [1, 4, 8] {
                v.push(kernel_source(kb, vb, t, location, HashFunction::default()));
            }
        }
    }
    v
}

/// The buckets: `size` records of `key + value` bytes, as 4-byte words.
enum Buckets {
    Device(DeviceBuffer<u32>),
    Host(MappedBuffer<u32>),
}

impl Buckets {
    fn device_address(&self) -> u64 {
        match self {
            Buckets::Device(b) => b.device_address(),
            Buckets::Host(b) => b.device_address(),
        }
    }
}

/// Stadium's part of a GPU table (see [`Scheme`]): the ticket board, the buckets, the geometry
/// and the collaborative-lanes insert kernel. A table is [`Stadium<K, V>`].
pub struct StadiumScheme<K: Key, V: Value> {
    /// The configuration, with [`InsertStrategy::MeasuredHybrid`] resolved to its threshold.
    config: StadiumConfig,
    /// Buckets (prime).
    size: u32,
    max_probes: u32,
    /// The ticket board: one entry (ticket + access bit) per bucket, packed in words.
    board: DeviceBuffer<u32>,
    buckets: Buckets,
    /// clStash and the hybrid: the stored keys from which warps collaborate (`u64::MAX`: never,
    /// basic Stash).
    cl_from: u64,
    /// `stadium_insert_cl` and its grid (as many blocks as the GPU runs at once), once bound.
    insert_cl: Option<(Kernel, u32)>,
    _kv: PhantomData<(K, V)>,
}

/// A Stadium hashing table on a GPU: [`GpuTable`] over [`StadiumScheme`]. See the
/// [module docs](self); [`GpuTable::new`] makes one from a [`StadiumConfig`].
pub type Stadium<K, V> = GpuTable<StadiumScheme<K, V>>;

/// The kernels' view of a Stadium table (`st_view` in `kernels/stadium.cu`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StadiumView {
    board: u64,
    buckets: u64,
    meta: u64,
    size: u32,
    max_probes: u32,
    seed: u64,
    cl_from: u64,
}

// SAFETY: #[repr(C)] plain data, the layout of st_view (size checked by WM_CHECK_VIEW).
unsafe impl KernelArg for StadiumView {}

// SAFETY: the view holds the addresses of the scheme's own board (one entry per bucket, packed
// entries_per_word to a word) and buckets (`size` records, in device memory or in host memory
// mapped into the GPU), alive as long as the scheme.
unsafe impl<K: Key, V: Value> Scheme for StadiumScheme<K, V> {
    type Key = K;
    type Value = V;
    type Config = StadiumConfig;
    type View = StadiumView;
    const NAME: &'static str = "stadium";
    const NO_MIXED_ERASE: Option<&'static str> = Some(
        "erases are phase-separated, as in the paper: the duplicate-free insert relies on \
         entries never leaving the live state during an insert phase",
    );

    /// Puts the buckets where [`resolve_location`] says ([`Stadium::location`] tells).
    /// [`Error::InvalidInput`] for a capacity of 0, a ticket size other than 1, 2, 4 or 8,
    /// `max_probes` 0 or a hybrid threshold outside [0, 1]; [`Error::Unsupported`] for more
    /// than 2^32 - 5 buckets; [`Error::OutOfMemory`] when the board (and device buckets) exceed
    /// GPU memory, or, with [`Location::Auto`], when the board alone exceeds the budget; an
    /// error from [`Gpu::alloc_mapped_with`] when host buckets cannot be had.
    fn new(gpu: &Arc<Gpu>, config: StadiumConfig) -> Result<(Self, KernelSource)> {
        let t = config.ticket_bits;
        if !TICKET_BITS.contains(&t) {
            return Err(Error::invalid(format!(
                "ticket size {t} bits is not one of {TICKET_BITS:?}"
            )));
        }
        if K::BYTES % 4 != 0 || V::BYTES % 4 != 0 {
            return Err(Error::Unsupported(format!(
                "Stadium copies records as 4-byte words: {} ({} bytes) -> {} ({} bytes)",
                K::NAME,
                K::BYTES,
                V::NAME,
                V::BYTES
            )));
        }
        // A prime below 2^32 - 1, so that position + step (both below it) fits the kernels' u32
        // arithmetic with the wrap check of the paper's Rehash.
        let size = next_prime((config.capacity as u64).max(2));
        if size >= u32::MAX as u64 - 4 {
            return Err(Error::Unsupported(format!(
                "capacity {} needs {size} buckets; Stadium indexes at most 2^32 - 5",
                config.capacity
            )));
        }
        let size = size as u32;
        let max_probes = resolve_max_probes(config.max_probes, size, size)?;
        // The measured hybrid becomes a hybrid with a number (what config() reports).
        let mut config = config;
        config.insert_strategy = config.insert_strategy.resolve(t, K::BYTES + V::BYTES);
        let cl_from = match config
            .insert_strategy
            .collaborate_from(t, K::BYTES + V::BYTES)
        {
            None => u64::MAX,
            Some(threshold) if (0.0..=1.0).contains(&threshold) => {
                (threshold * size as f64).ceil() as u64
            }
            Some(threshold) => {
                return Err(Error::invalid(format!(
                    "hybrid threshold {threshold} is not a load factor in [0, 1]"
                )))
            }
        };
        let board_words = (size as usize).div_ceil(entries_per_word(t) as usize);
        let record_words = (K::BYTES + V::BYTES) / 4;
        let bucket_words = size as usize * record_words;
        let budget = match (config.location, config.device_memory_budget) {
            (Location::Auto, None) => gpu
                .free_memory()?
                .saturating_sub(default_budget_margin(gpu.total_memory())),
            (_, Some(b)) => b,
            (_, None) => gpu.total_memory(),
        };
        let location = resolve_location(
            config.location,
            board_words as u64 * 4,
            bucket_words as u64 * 4,
            budget,
        )?;
        let device_bytes = board_words as u64 * 4
            + match location {
                Location::Device => bucket_words as u64 * 4,
                _ => 0,
            };
        check_fits(gpu, device_bytes)?;
        let source = kernel_source(K::BYTES, V::BYTES, t, location, config.hash);
        // Buckets need no initialisation: the board says which hold keys.
        let buckets = match location {
            Location::Device => Buckets::Device(gpu.alloc::<u32>(bucket_words)?),
            _ => Buckets::Host(
                match gpu.alloc_mapped_with::<u32>(bucket_words, config.host_pages) {
                    // No transparent huge pages in this kernel: the driver's pinned pages, which
                    // the kernels reach at the same rate (only making the table is slower).
                    Err(Error::Unsupported(_)) if config.host_pages == HostPages::Huge => {
                        gpu.alloc_mapped_with::<u32>(bucket_words, HostPages::Pinned)?
                    }
                    r => r?,
                },
            ),
        };
        let scheme = StadiumScheme {
            board: gpu.alloc::<u32>(board_words)?,
            config,
            size,
            max_probes,
            buckets,
            cl_from,
            insert_cl: None,
            _kv: PhantomData,
        };
        Ok((scheme, source))
    }

    fn config(&self) -> &StadiumConfig {
        &self.config
    }

    fn bind(&mut self, gpu: &Gpu, module: &Module) -> Result<()> {
        let insert_cl = module.kernel("stadium_insert_cl")?;
        let resident = gpu.max_active_blocks_per_sm(&insert_cl, BLOCK)?.max(1);
        let grid = gpu.sm_count() * cl_blocks_per_sm(resident);
        self.insert_cl = Some((insert_cl, grid));
        Ok(())
    }

    fn view(&self, meta: u64) -> StadiumView {
        StadiumView {
            board: self.board.device_address(),
            buckets: self.buckets.device_address(),
            meta,
            size: self.size,
            max_probes: self.max_probes,
            seed: self.config.seed,
            cl_from: self.cl_from,
        }
    }

    fn capacity(&self) -> usize {
        self.size as usize
    }

    fn group_size(&self) -> u32 {
        1
    }

    /// Device memory only: the board and device buckets ([`Stadium::host_memory_bytes`] counts
    /// host buckets).
    fn memory_bytes(&self) -> usize {
        let device_buckets = match &self.buckets {
            Buckets::Device(b) => b.num_bytes(),
            Buckets::Host(_) => 0,
        };
        self.board.num_bytes() + device_buckets
    }

    /// Resets the ticket board (every entry empty: all bits set); buckets are left as they are.
    fn clear(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.fill_bytes(&mut self.board, 0xff)
    }

    /// clStash and the hybrid run `stadium_insert_cl` on persistent warps: one wave at most,
    /// fewer blocks for a small batch.
    fn insert_kernel(&self, n: usize) -> Option<(&Kernel, u32)> {
        if self.cl_from == u64::MAX {
            return None; // basic Stash: the bulk insert kernel
        }
        let (kernel, wave) = self.insert_cl.as_ref()?;
        let needed = (n as u64).div_ceil(BLOCK as u64).max(1);
        Some((kernel, needed.min(*wave as u64) as u32))
    }
}

impl<K: Key, V: Value> Stadium<K, V> {
    /// Where the buckets are: [`Location::Device`] or [`Location::Host`] (never `Auto`: the
    /// location [`Location::Auto`] resolved to).
    pub fn location(&self) -> Location {
        match &self.scheme.buckets {
            Buckets::Device(_) => Location::Device,
            Buckets::Host(_) => Location::Host,
        }
    }
    /// The host page kind of host buckets (`None` for device buckets).
    pub fn host_pages(&self) -> Option<HostPages> {
        match &self.scheme.buckets {
            Buckets::Device(_) => None,
            Buckets::Host(b) => Some(b.pages()),
        }
    }
    /// Bytes of the host buckets backed by transparent huge pages now (see
    /// [`MappedBuffer::huge_page_bytes`]); `None` for device buckets or when unknown.
    pub fn host_huge_page_bytes(&self) -> Option<u64> {
        match &self.scheme.buckets {
            Buckets::Device(_) => None,
            Buckets::Host(b) => b.huge_page_bytes(),
        }
    }
    /// The number of buckets (prime).
    pub fn size(&self) -> u32 {
        self.scheme.size
    }
    /// The probe limit in buckets.
    pub fn max_probes(&self) -> u32 {
        self.scheme.max_probes
    }
    /// Bytes of the ticket board (in GPU memory).
    pub fn board_bytes(&self) -> usize {
        self.scheme.board.num_bytes()
    }
    /// Bytes of pinned host memory the buckets take ([`Location::Host`]; 0 for device buckets,
    /// which [`HashTable::memory_bytes`](crate::HashTable::memory_bytes)(crate::HashTable::memory_bytes) counts).
    pub fn host_memory_bytes(&self) -> usize {
        match &self.scheme.buckets {
            Buckets::Device(_) => 0,
            Buckets::Host(b) => b.num_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_resolves_by_the_budget() {
        use Location::*;
        let gib = 1u64 << 30;
        // Board + buckets fit: in-core; exactly at the budget too.
        assert_eq!(
            resolve_location(Auto, gib, 8 * gib, 10 * gib).unwrap(),
            Device
        );
        assert_eq!(
            resolve_location(Auto, gib, 9 * gib, 10 * gib).unwrap(),
            Device
        );
        // One byte over: buckets to host memory, the board stays.
        assert_eq!(
            resolve_location(Auto, gib, 9 * gib + 1, 10 * gib).unwrap(),
            Host
        );
        assert_eq!(resolve_location(Auto, 1, u64::MAX, 1).unwrap(), Host);
        // Not even the board: out of memory, whatever the buckets.
        match resolve_location(Auto, 11 * gib, 0, 10 * gib) {
            Err(Error::OutOfMemory {
                requested_bytes,
                free_bytes,
            }) => assert_eq!((requested_bytes, free_bytes), (11 * gib, 10 * gib)),
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        // Explicit locations are kept (their allocations check memory themselves).
        for l in [Device, Host] {
            assert_eq!(
                resolve_location(l, 11 * gib, 99 * gib, 10 * gib).unwrap(),
                l
            );
        }
        // Never Auto.
        for budget in [0, 1, gib, u64::MAX] {
            if let Ok(l) = resolve_location(Auto, 4096, gib, budget) {
                assert_ne!(l, Auto);
            }
        }
    }

    #[test]
    fn default_config_is_auto_with_the_default_pages() {
        let c = StadiumConfig::new(10);
        assert_eq!(c.location, Location::Auto);
        assert_eq!(Location::default(), Location::Auto);
        assert_eq!(c.device_memory_budget, None);
        assert_eq!(c.host_pages, DEFAULT_HOST_PAGES);
        let c = c.device_memory_budget(123).host_pages(HostPages::Huge);
        assert_eq!(
            (c.device_memory_budget, c.host_pages),
            (Some(123), HostPages::Huge)
        );
        // The margin: 1 GiB, or 5 % of a large GPU.
        assert_eq!(default_budget_margin(8 << 30), 1 << 30);
        assert_eq!(default_budget_margin(80 << 30), 4 << 30);
    }

    #[test]
    fn the_measured_hybrid_resolves_to_its_threshold() {
        for (t, narrow, wide) in MEASURED_HYBRID_THRESHOLDS {
            assert_eq!(
                InsertStrategy::MeasuredHybrid.resolve(t, 8),
                InsertStrategy::Hybrid { threshold: narrow }
            );
            assert_eq!(
                InsertStrategy::MeasuredHybrid.resolve(t, 16),
                InsertStrategy::Hybrid { threshold: wide }
            );
            assert_eq!(measured_hybrid_threshold(t, 320), wide);
        }
        for s in [
            InsertStrategy::Stash,
            InsertStrategy::ClStash,
            InsertStrategy::Hybrid { threshold: 0.3 },
        ] {
            assert_eq!(s.resolve(8, 16), s, "explicit strategies are kept");
        }
        assert_eq!(InsertStrategy::default(), InsertStrategy::MeasuredHybrid);
        assert_eq!(InsertStrategy::MeasuredHybrid.name(), "hybrid");
    }

    #[test]
    fn board_packing() {
        assert_eq!(
            TICKET_BITS.map(entries_per_word),
            [16, 10, 6, 3],
            "T + 1 bits per entry"
        );
    }

    #[test]
    fn specialisations_cover_every_ticket_size_and_location() {
        let labels: Vec<String> = all_kernel_sources().iter().map(|s| s.label()).collect();
        for t in TICKET_BITS {
            for host in [0, 1] {
                let want = format!("ST_TICKET_BITS={t},ST_HOST_BUCKETS={host}");
                assert!(labels.iter().any(|l| l.contains(&want)), "{want}");
            }
        }
    }
}
