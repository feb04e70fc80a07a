//! The engine every GPU scheme runs on: written once, so that a scheme is only what is its own.
//!
//! A scheme ([`Scheme`]) owns its device arrays and knows its layout and parameters; it hands the
//! kernels a *device view* ([`Scheme::View`], a `#[repr(C)]` struct of addresses and geometry,
//! passed by value as one kernel argument, the way cuCollections passes a `ref`). The engine's
//! [`GpuTable`] owns the rest and writes [`HashTable`](crate::HashTable) and
//! [`DeviceHashTable`](crate::DeviceHashTable) once for every scheme: the kernel module and its
//! five bulk kernels, the two counters, grid sizes, the one launch site (the only `unsafe` of a
//! table), length checks, the host-slice methods over the device ones, retrieve, rehash.
//!
//! Every bulk kernel is `extern "C" __global__ void <scheme>_<op>(<view> t, wm_bulk b)` for
//! `<op>` in insert, find, erase, mixed, retrieve (`kernels/common/bulk.cuh`): `b` is [`Bulk`].
//! The engine passes the sizes of [`Bulk`] and of the view, and its block size, as `-D` defines
//! (see [`engine_source`]), and the kernels `static_assert` them, so host and device cannot
//! disagree on a layout without a compile error.
//!
//! Adding a scheme: a kernel file `kernels/<scheme>.cu` (its view struct with
//! `WM_CHECK_VIEW`, the five kernels over `kernels/common/`), a table file
//! `src/table/<scheme>.rs` (config, a type implementing [`Scheme`], `pub type <Scheme><K, V> =
//! GpuTable<...>`), and an entry in [`registry`](crate::table::registry).

pub mod l2_sides;
pub mod locality;
pub mod multisplit;
mod table;

pub use table::GpuTable;

use crate::device::{DeviceBuffer, Gpu, Kernel, KernelArg, Module};
use crate::kernels::{KernelFile, KernelSource};
use crate::key::{Key, Value};
use crate::{InsertMode, Result};
use std::sync::Arc;

/// Threads per block of every engine launch (`WM_BLOCK` in the kernels).
pub const BLOCK: u32 = 256;
/// Full-occupancy waves of blocks a bulk launch may have; beyond that, kernels stride over the
/// grid. Measured on an H100 (bench/NOTES.md): 32 waves beat 4 by up to 24 % at high load (less
/// imbalance between threads whose keys have long chains), and one group per key (no stride,
/// ~2M blocks) loses up to 25 % on inserts to block scheduling.
pub const GRID_WAVES: u64 = 32;

/// A scheme's part of a GPU table: its device arrays, layout and parameters (see the
/// [module docs](self)). [`GpuTable<S>`] does everything else.
///
/// # Safety
/// [`view`](Scheme::view) must describe buffers that the scheme owns and that are as large as
/// the scheme's kernels index for the geometry it states, for as long as the scheme lives; the
/// view type must be the kernels' view struct (its size is checked against `WM_VIEW_BYTES` when
/// the module compiles: pass it with [`engine_source`]).
pub unsafe trait Scheme: Sized + Send + Sync + 'static {
    /// The key type.
    type Key: Key;
    /// The value type.
    type Value: Value;
    /// The table's parameters.
    type Config: SchemeConfig;
    /// The device view: the kernels' first argument.
    type View: KernelArg;
    /// The scheme's name, and the prefix of its kernels' names (`<NAME>_insert`, ...).
    const NAME: &'static str;

    /// Checks `config` (the engine has checked that its capacity is at least 1), allocates the scheme's arrays on `gpu` and says which kernel module it
    /// runs (with [`engine_source`]'s defines). The engine loads the module and then clears the
    /// table.
    fn new(gpu: &Arc<Gpu>, config: Self::Config) -> Result<(Self, KernelSource)>;
    /// The parameters the table was made with (with any defaults resolved).
    fn config(&self) -> &Self::Config;
    /// Looks up kernels of the module beyond the five bulk ones (default: none).
    fn bind(&mut self, _gpu: &Gpu, _module: &Module) -> Result<()> {
        Ok(())
    }
    /// The device view; `meta` is the address of the engine's counters (`[stored keys, keys
    /// left unplaced by all inserts so far, tiles taken by an ordered launch, spare]`).
    fn view(&self, meta: u64) -> Self::View;
    /// Keys the table can hold; also the positions retrieve visits.
    fn capacity(&self) -> usize;
    /// Threads that handle one key (a coalesced group; 1 for a thread per key).
    fn group_size(&self) -> u32;
    /// Device memory the scheme's arrays take.
    fn memory_bytes(&self) -> usize;
    /// Empties the arrays (the engine resets the counters).
    fn clear(&mut self, gpu: &Gpu) -> Result<()>;
    /// The kernel and grid for an insert of `n` keys, where they are not the bulk insert kernel
    /// and the engine's grid (Stadium's collaborative lanes).
    fn insert_kernel(&self, _n: usize) -> Option<(&Kernel, u32)> {
        None
    }
    /// Where the keys' first probes fall and the ordered insert kernel, for the
    /// locality-partitioned insert ([`locality`]): only for a scheme whose first probe position
    /// is `map_to_range(h.x, n)` of the key's first hash under the returned seed and function
    /// (see [`locality::Locality`] for the kernel's contract). Default: none.
    fn locality(&self) -> Option<locality::Locality<'_>> {
        None
    }
    /// [`Error::Unsupported`](crate::Error::Unsupported) where this table cannot run mixed
    /// batches on `gpu` (checked where the mixed kernel is launched).
    fn check_mixed(&self, _gpu: &Gpu) -> Result<()> {
        Ok(())
    }
    /// Why this scheme's mixed batches cannot erase ([`MixedOp::Erase`](crate::MixedOp::Erase)),
    /// or `None` where its mixed kernel erases. Its kernel leaves the operations it does not
    /// run alone (no output written).
    const NO_MIXED_ERASE: Option<&'static str> = None;
    /// Makes room before a batch that may insert `n` keys (a scheme that grows adds memory
    /// here); called where the insert and mixed kernels are launched. Default: nothing.
    fn reserve_for_insert(&mut self, _gpu: &Gpu, _n: usize) -> Result<()> {
        Ok(())
    }
    /// After `failed` keys of a host-slice insert found no room (status
    /// [`TABLE_FULL`](crate::status::TABLE_FULL)): grows and returns true to have the engine
    /// insert those keys again, or false to report them. Default: false.
    fn grow_after_failures(&mut self, _gpu: &Gpu, _failed: usize) -> Result<bool> {
        Ok(false)
    }
    /// The load factor up to which inserts are sure to find a place (what
    /// [`HashTable::reserve`](crate::HashTable::reserve) plans with).
    fn max_load_factor(&self) -> f64 {
        1.0
    }
    /// The scheme's own counters, by name (see
    /// [`DeviceHashTable::counters`](crate::DeviceHashTable::counters)). Default: none.
    fn counters(_table: &GpuTable<Self>) -> Result<Vec<(&'static str, u64)>> {
        Ok(Vec::new())
    }

    /// `Ok` where the scheme's insert kernels reduce by key ([`InsertMode::Apply`]) on `gpu`.
    /// Default: [`Error::Unsupported`](crate::Error::Unsupported) (their kernels read the mode
    /// word as a flag: assign or keep).
    fn check_apply(&self, _gpu: &Gpu) -> Result<()> {
        Err(crate::Error::Unsupported(format!(
            "{} does not reduce by key: WarpDrive and the CPU backend do",
            Self::NAME
        )))
    }

    // Table-level hooks, for a scheme that resizes itself with kernels of its own (DyCuckoo):
    // they get the whole table (its launch site, view and GPU). The defaults call the
    // scheme-level hooks above, so a scheme overrides one or the other.

    /// Before a batch of `keys` and their `values` that may insert (`ops`: the mixed batch's
    /// operations, `None` for an insert batch) is launched, on the table's stream; `status`:
    /// where the insert launch after it will write each key's status (the same buffer), if
    /// anywhere. Default: [`reserve_for_insert`](Scheme::reserve_for_insert) with the batch's
    /// length.
    fn before_insert(
        table: &mut GpuTable<Self>,
        keys: &DeviceBuffer<Self::Key>,
        _values: &DeviceBuffer<Self::Value>,
        _ops: Option<&DeviceBuffer<u8>>,
        _status: Option<&mut DeviceBuffer<u32>>,
    ) -> Result<()> {
        table.scheme.reserve_for_insert(&table.gpu, keys.len())
    }
    /// After the launches of a batch that may insert (an insert or a mixed batch), on the
    /// table's stream; nothing has waited for them. Default: nothing.
    fn after_insert(_table: &mut GpuTable<Self>) -> Result<()> {
        Ok(())
    }
    /// After `failed` keys of a host-slice insert found no room: grows and returns true to have
    /// the engine insert them again. Default: [`grow_after_failures`](Scheme::grow_after_failures).
    fn grow_table(table: &mut GpuTable<Self>, failed: usize) -> Result<bool> {
        table.scheme.grow_after_failures(&table.gpu, failed)
    }
    /// Before a batch of `n` operations that may erase keys (an erase batch, or a mixed batch)
    /// is launched, on the table's stream. Default: nothing.
    fn before_erase(_table: &mut GpuTable<Self>, _n: usize) -> Result<()> {
        Ok(())
    }
    /// After a host-slice erase (synchronous: the table's `len` is exact). Default: nothing.
    fn after_erase(_table: &mut GpuTable<Self>) -> Result<()> {
        Ok(())
    }
}

/// What the engine needs of a scheme's configuration: a `capacity` field (keys the table must
/// hold), and `new(capacity)` with the defaults. Implemented with the crate-internal `scheme_config!` macro.
pub trait SchemeConfig: Clone + std::fmt::Debug + Send + Sync {
    /// The default parameters for a table of at least `capacity` keys.
    fn with_capacity(capacity: usize) -> Self;
    /// Keys the table must hold.
    fn capacity(&self) -> usize;
    /// The same parameters for a table of at least `capacity` keys (rehash makes its new table
    /// with it).
    fn resized(&self, capacity: usize) -> Self;
}

/// Implements [`SchemeConfig`] for a configuration type with a `capacity: usize` field and a
/// `new(capacity)` constructor, and adds the builder setters of the fields every scheme's
/// configuration has (`seed`, `hash`, `max_probes: Option<u32>`), written once for all.
macro_rules! scheme_config {
    ($config:ty) => {
        impl $crate::table::engine::SchemeConfig for $config {
            fn with_capacity(capacity: usize) -> Self {
                <$config>::new(capacity)
            }
            fn capacity(&self) -> usize {
                self.capacity
            }
            fn resized(&self, capacity: usize) -> Self {
                Self {
                    capacity,
                    ..self.clone()
                }
            }
        }

        impl $config {
            /// Sets the hash seed.
            pub fn seed(mut self, seed: u64) -> Self {
                self.seed = seed;
                self
            }
            /// Sets the hash function.
            pub fn hash(mut self, f: $crate::hash::HashFunction) -> Self {
                self.hash = f;
                self
            }
            /// Sets the probe limit (the `max_probes` field says in what unit).
            pub fn max_probes(mut self, p: u32) -> Self {
                self.max_probes = Some(p);
                self
            }
        }
    };
}
pub(crate) use scheme_config;

/// A flag beside the insert mode word in [`Bulk`]'s `assign` (`WM_BATCH_PAIRS` in
/// kernels/common/bulk.cuh): the batch's keys are `{key, value}` pairs ([`Bulk::insert_pairs`]).
const BATCH_PAIRS: u32 = 1 << 16;

/// A batch, as every bulk kernel takes it (`wm_bulk` in `kernels/common/bulk.cuh`): device
/// addresses (0 for none) and sizes. Each operation fills the fields it uses; the launch names
/// the same buffers to the device layer (`reads` / `writes`), which orders them across streams.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Bulk {
    ops: u64,
    keys: u64,
    values: u64,
    status: u64,
    out: u64,
    found: u64,
    n: u64,
    counter: u64,
    out_keys: u64,
    assign: u32,
    part_count: u32,
    parts: u64,
    sm_l2_side: u64,
    granule_l2_side: u64,
    fill: u64,
    flagged: u64,
    region_tiles: u32,
    regions: u32,
}

/// One batch of an ordered launch over several (`wm_ordered_part` in
/// `kernels/common/bulk.cuh`): device addresses (0 for none), its length, and its items per
/// step of the launch (see `Bulk::ordered_parts`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct OrderedPart {
    keys: u64,
    values: u64,
    out: u64,
    found: u64,
    n: u64,
    tile: u64,
}

// SAFETY: #[repr(C)] over u64/u32 fields, the layout of wm_bulk (its size is checked by the
// kernels against WM_BULK_BYTES = size_of::<Bulk>()).
unsafe impl KernelArg for Bulk {}

fn addr<T: bytemuck::Pod>(b: &DeviceBuffer<T>) -> u64 {
    b.device_address()
}

impl Bulk {
    pub(crate) fn insert<K: Key, V: Value>(
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        status: Option<&DeviceBuffer<u32>>,
        assign: bool,
    ) -> Self {
        let mode = if assign {
            InsertMode::Assign
        } else {
            InsertMode::IfAbsent
        };
        Self::insert_mode(keys, values, status, mode)
    }
    /// An insert batch whose present keys are treated as `mode` says (the kernels' mode word,
    /// [`InsertMode::word`]; only the schemes whose [`Scheme::check_apply`] passes get
    /// [`InsertMode::Apply`]).
    pub(crate) fn insert_mode<K: Key, V: Value>(
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        status: Option<&DeviceBuffer<u32>>,
        mode: InsertMode,
    ) -> Self {
        Bulk {
            keys: addr(keys),
            values: addr(values),
            status: status.map_or(0, addr),
            n: keys.len() as u64,
            assign: mode.word::<V>(),
            ..Bulk::default()
        }
    }
    /// An ordered insert's batch of `n` `{key, value}` pairs of `K` and `V` in one array (a
    /// slack split's regions in [`multisplit::SlackLayout::Pairs`]): `keys` names the pairs,
    /// `values` none, and the mode word carries [`BATCH_PAIRS`] (`wm_batch_item` reads them).
    pub(crate) fn insert_pairs<K: Key, V: Value>(
        pairs: &DeviceBuffer<u8>,
        n: u64,
        mode: InsertMode,
    ) -> Self {
        debug_assert_eq!(
            pairs.len() as u64,
            n * (K::BYTES + std::mem::size_of::<V>()) as u64
        );
        Bulk {
            keys: addr(pairs),
            n,
            assign: mode.word::<V>() | BATCH_PAIRS,
            ..Bulk::default()
        }
    }
    /// The same batch for an ordered insert that takes the L2's sides
    /// (`wm_for_each_ordered_l2_sided`): the table array's SM map and granule bitmap.
    pub(crate) fn with_l2_sides(self, sides: &l2_sides::TableL2Sides) -> Self {
        Bulk {
            sm_l2_side: addr(&sides.sm),
            granule_l2_side: addr(&sides.granules),
            ..self
        }
    }
    /// The same batch for an ordered insert over a slack split (`wm_for_each_ordered_batch`):
    /// `keys`/`values` are its regions of `region_tiles` tiles each, `fill` their fills.
    pub(crate) fn with_regions(self, fill: &DeviceBuffer<u64>, region_tiles: u32) -> Self {
        Bulk {
            fill: addr(fill),
            region_tiles,
            ..self
        }
    }
    /// The same batch (in input order) for an ordered insert of only the items whose bits are
    /// set in `flagged`: as many as `fill[regions]` says (a device word: 0 makes the launch
    /// return at once).
    pub(crate) fn with_flagged(
        self,
        flagged: &DeviceBuffer<u32>,
        fill: &DeviceBuffer<u64>,
        regions: u32,
    ) -> Self {
        Bulk {
            fill: addr(fill),
            flagged: addr(flagged),
            regions,
            ..self
        }
    }
    fn find<K: Key, V: Value>(
        keys: &DeviceBuffer<K>,
        out: Option<&DeviceBuffer<V>>,
        found: &DeviceBuffer<u8>,
    ) -> Self {
        Bulk {
            keys: addr(keys),
            out: out.map_or(0, addr),
            found: addr(found),
            n: keys.len() as u64,
            ..Bulk::default()
        }
    }
    /// The parts of an ordered launch over several batches, `(keys, values, out, found)` each
    /// (null where the operation has none), tiles of at most `tile_items` items: every part is
    /// cut into the same number of steps (its tile: its length over the steps), so that its
    /// tiles, handed out in turn with the other parts', end together.
    fn ordered_parts(lens: &[[u64; 5]], tile_items: u64) -> (Vec<OrderedPart>, u64) {
        let longest = lens.iter().map(|l| l[4]).max().unwrap_or(0);
        let steps = longest.div_ceil(tile_items.max(1)).max(1);
        let parts = lens
            .iter()
            .map(|&[keys, values, out, found, n]| OrderedPart {
                keys,
                values,
                out,
                found,
                n,
                tile: n.div_ceil(steps),
            })
            .collect();
        (parts, steps)
    }
    /// The batch of an ordered launch over `parts` parts (a table of them at `table`, `steps`
    /// steps each, see [`Bulk::ordered_parts`]): its tile counter (zeroed) at `tiles`.
    fn over_parts(table: u64, parts: usize, steps: u64, tiles: u64, assign: u32) -> Self {
        Bulk {
            n: steps * parts as u64,
            counter: tiles,
            assign,
            part_count: parts as u32,
            parts: table,
            ..Bulk::default()
        }
    }
    pub(crate) fn erase<K: Key>(keys: &DeviceBuffer<K>) -> Self {
        Bulk {
            keys: addr(keys),
            n: keys.len() as u64,
            ..Bulk::default()
        }
    }
    #[allow(clippy::too_many_arguments)]
    fn mixed<K: Key, V: Value>(
        ops: &DeviceBuffer<u8>,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        status: &DeviceBuffer<u32>,
        out: &DeviceBuffer<V>,
        found: &DeviceBuffer<u8>,
    ) -> Self {
        Bulk {
            ops: addr(ops),
            keys: addr(keys),
            values: addr(values),
            status: addr(status),
            out: addr(out),
            found: addr(found),
            n: keys.len() as u64,
            assign: 1,
            ..Bulk::default()
        }
    }
    fn retrieve<K: Key, V: Value>(
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        counter: &DeviceBuffer<u64>,
    ) -> Self {
        Bulk {
            out_keys: addr(keys),
            out: addr(values),
            counter: addr(counter),
            n: keys.len() as u64,
            ..Bulk::default()
        }
    }
}

/// Batches of a scheme's own kernels (beyond the five bulk ones); each kernel's comment says
/// which fields it reads.
impl Bulk {
    /// `keys` and one `u32` per key (`status`: counts, or addresses of slabs).
    pub(crate) fn keys_words<K: Key>(keys: &DeviceBuffer<K>, words: &DeviceBuffer<u32>) -> Self {
        Bulk {
            keys: addr(keys),
            status: addr(words),
            n: keys.len() as u64,
            ..Bulk::default()
        }
    }
    /// `keys` and, where not `None`, their operations (`ops`, one [`MixedOp`](crate::MixedOp)
    /// byte per key).
    pub(crate) fn keys_ops<K: Key>(keys: &DeviceBuffer<K>, ops: Option<&DeviceBuffer<u8>>) -> Self {
        Bulk {
            keys: addr(keys),
            ops: ops.map_or(0, addr),
            n: keys.len() as u64,
            ..Bulk::default()
        }
    }
    /// `values` (`values`) and a buffer of one element per value (`status`: what the kernel
    /// derives from them).
    pub(crate) fn values_into<V: Value, T: bytemuck::Pod>(
        values: &DeviceBuffer<V>,
        out: &DeviceBuffer<T>,
    ) -> Self {
        Bulk {
            values: addr(values),
            status: addr(out),
            n: values.len() as u64,
            ..Bulk::default()
        }
    }
    /// The same batch with its mode word (`assign`) set to `word`: a scheme kernel's parameter.
    pub(crate) fn with_word(mut self, word: u32) -> Self {
        self.assign = word;
        self
    }
    /// The same batch with its `counter` at the device address `counter` (an ordered launch's
    /// tile counter, zeroed by the caller).
    pub(crate) fn with_counter(mut self, counter: u64) -> Self {
        self.counter = counter;
        self
    }
    /// `n` words (`status`), no keys.
    pub(crate) fn words(words: &DeviceBuffer<u32>) -> Self {
        Bulk {
            status: addr(words),
            n: words.len() as u64,
            ..Bulk::default()
        }
    }
    /// `keys`, `n + 1` offsets (`counter`) and the values they index (`out`).
    pub(crate) fn keys_offsets_values<K: Key, V: Value>(
        keys: &DeviceBuffer<K>,
        offsets: &DeviceBuffer<u64>,
        values: &DeviceBuffer<V>,
    ) -> Self {
        Bulk {
            keys: addr(keys),
            counter: addr(offsets),
            out: addr(values),
            n: keys.len() as u64,
            ..Bulk::default()
        }
    }
}

/// A table module's source: `file` after the common headers, with the engine's defines (block
/// size, the sizes of [`Bulk`] and of the scheme's view `V`, key and value widths) that the
/// kernels check. A scheme adds its own defines.
pub fn engine_source<V: KernelArg>(
    module: &'static str,
    file: KernelFile,
    key_bytes: usize,
    value_bytes: usize,
) -> KernelSource {
    KernelSource::new(module, file)
        .define("WM_KEY_BYTES", key_bytes)
        .define("WM_VALUE_BYTES", value_bytes)
        .define("WM_ENGINE", 1)
        .define("WM_BLOCK", BLOCK)
        .define("WM_BULK_BYTES", std::mem::size_of::<Bulk>())
        .define("WM_VIEW_BYTES", std::mem::size_of::<V>())
}

/// A probe limit from a configuration's `max_probes`: `default` when `None`, at most `all`
/// (the positions there are), and [`Error::InvalidInput`](crate::Error::InvalidInput) for 0.
pub fn resolve_max_probes(asked: Option<u32>, default: u32, all: u32) -> Result<u32> {
    match asked {
        Some(0) => Err(crate::Error::invalid("max_probes must be at least 1")),
        Some(p) => Ok(p.min(all)),
        None => Ok(default.min(all)),
    }
}

/// [`Error::OutOfMemory`](crate::Error::OutOfMemory) when a table of `bytes` of device memory
/// cannot fit `gpu` at all (before trying to allocate it).
pub fn check_fits(gpu: &Gpu, bytes: u64) -> Result<()> {
    if bytes > gpu.total_memory() {
        return Err(crate::Error::OutOfMemory {
            requested_bytes: bytes,
            free_bytes: gpu.free_memory().unwrap_or(0),
        });
    }
    Ok(())
}

/// A measurement knob: the environment variable `name` parsed, where set and valid.
pub(crate) fn knob<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Blocks for `threads` threads: enough for one thread each, at most [`GRID_WAVES`]
/// full-occupancy waves of [`BLOCK`]-thread blocks (kernels stride beyond).
pub fn bulk_grid(gpu: &Gpu, threads: u64) -> u32 {
    let max_blocks = gpu.sm_count() as u64 * 2048 / BLOCK as u64 * GRID_WAVES;
    threads.div_ceil(BLOCK as u64).clamp(1, max_blocks) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_is_the_kernels_layout() {
        // wm_bulk: nine 8-byte fields, then assign and part_count, then parts, sm_l2_side,
        // granule_l2_side, fill and flagged, then region_tiles and regions: 128 bytes, the most
        // it may take (kernels/common/bulk.cuh: past it the kernels take more registers).
        assert_eq!(std::mem::size_of::<Bulk>(), 9 * 8 + 8 + 5 * 8 + 8);
        assert_eq!(std::mem::size_of::<Bulk>(), 128);
        // wm_ordered_part: four addresses, n and tile.
        assert_eq!(std::mem::size_of::<OrderedPart>(), 6 * 8);
    }

    #[test]
    fn ordered_parts_end_together() {
        let lens = [[1, 0, 0, 2, 1000], [3, 0, 0, 4, 10], [5, 0, 0, 6, 0]];
        let (parts, steps) = Bulk::ordered_parts(&lens, 64);
        assert_eq!(steps, 16); // 1000 items in tiles of at most 64
        for p in &parts {
            assert!(p.tile <= 64);
            assert!(p.tile * steps >= p.n, "{p:?} ends within the steps");
        }
        assert_eq!((parts[1].keys, parts[1].found, parts[2].n), (3, 4, 0));
        let (_, one) = Bulk::ordered_parts(&[[0, 0, 0, 0, 0]], 64);
        assert_eq!(one, 1);
        assert_eq!(std::mem::align_of::<Bulk>(), 8);
    }
}
