//! Multisplit: partition a batch of device-resident keys (and values) into `parts` contiguous
//! parts by a function of each key's hash, on the GPU — the first step of the two-level cuckoo
//! table (keys to buckets) and of the sharded table (keys to GPUs).
//!
//! Two methods ([`Method`]), both on the handle's stream (kernels/multisplit.cu):
//! - **counting** (the default, up to 2^20 parts): a counting sort by part in one pass (up to
//!   2^10 parts) or two, with no global atomics. The first pass moves each block's chunk of the
//!   batch to coarse groups (the high bits of the part; the parts themselves in one pass) at
//!   offsets from per-chunk histograms and their scans; the second gives each group a block,
//!   which counts the group's parts and moves its keys to them. Tiles of up to 8192 items go
//!   through shared memory in part order, so a part's run of a tile is written by consecutive
//!   threads; in a split of one pass on sm_90, where a second tile buffer fits, the next tile
//!   is bulk-copied into it (the multiprocessor's copy engine, one thread a tile) while this
//!   one is ranked and moved; other tiles (not 16-byte aligned, or in a split of two passes, or
//!   before sm_90) are loaded into registers.
//! - **claiming** (past 2^20 parts, or asked for): per-part counts with warp-aggregated atomics
//!   (lanes of a warp grouped by part with `__match_any_sync`, one atomic per distinct part per
//!   warp), an exclusive scan into `parts + 1` offsets, and a scatter that claims slots the same
//!   way. Once a warp's keys rarely share a part, every key costs an atomic with a return, at
//!   the rate of random atomics.
//!
//! On an H100 the counting split was the faster at every part count measured (2 to 10^5 parts;
//! bench/NOTES.md, issue 13): it took the two-level table's inserts of 2^27 keys from 6.8 to
//! 11.2 G keys/s.
//!
//! The result is **not stable**: within a part, keys are in no particular order; the parts
//! themselves are contiguous and in part order, and key `i`'s value travels with it.
//!
//! A third split, for consumers that can walk parts with gaps between them (the
//! locality-partitioned insert), skips the count: [`multisplit_slack_async`] gives each part a
//! region of [`slack_cap`] items and claims each tile's run of a part there with one atomic, in
//! one pass; the keys that find their region full are flagged in a bitmap instead
//! ([`SlackSplit`]).
//!
//! The part of a key ([`PartFunction::part_of`], the CPU twin of the device's `wm_part_of`) is
//! `(h * parts) >> 32` for the first 32-bit hash `h` of the key under the split's seed:
//! `wm_hash_pair`'s first hash for keys of 4 and 8 bytes, the low half of `wm_hash_words` for
//! wider ones ([`crate::hash`] has their host twins). Use a seed that no table the parts go into
//! uses ([`DEFAULT_PART_SEED`] differs from the tables' default): with the same hash and seed,
//! the keys of one part would crowd into `1/parts` of that table's windows.
//!
//! ```no_run
//! # fn main() -> warpmap::Result<()> {
//! use warpmap::table::engine::multisplit::{multisplit, DEFAULT_PART_SEED};
//! use warpmap::Gpu;
//! let gpu = Gpu::default_gpu()?;
//! let keys = gpu.upload(&(0..1000u64).collect::<Vec<_>>())?;
//! let values = gpu.upload(&(0..1000u32).collect::<Vec<_>>())?;
//! let split = multisplit(&gpu, &keys, Some(&values), 7, DEFAULT_PART_SEED)?;
//! assert_eq!(split.offsets.len(), 8);
//! assert_eq!(split.offsets[7], 1000);
//! // Part p is split.keys[offsets[p]..offsets[p + 1]] (and the same range of split.values).
//! # Ok(()) }
//! ```

use super::knob;
use crate::device::{DeviceBuffer, Gpu, Module};
use crate::hash::{hash_pair, hash_words, map_to_range, HashFunction};
use crate::kernels::{KernelSource, MULTISPLIT};
use crate::key::Key;
use crate::{Error, Result};

/// A partition seed unlike the tables' default seed (see the [module docs](self)).
pub const DEFAULT_PART_SEED: u64 = 0x2545_f491_4f6c_dd1d;

/// Threads per block of the count and scatter kernels (`WM_MS_BLOCK`).
const BLOCK: u32 = 256;
/// Threads of the one-block scan (`WM_MS_SCAN_BLOCK` in kernels/multisplit.cu).
const SCAN_BLOCK: u32 = 1024;
/// Grid-stride loops over at most this many full-occupancy waves of blocks.
const WAVES: u64 = 8;
/// Threads per block of the counting split's moving kernels (`WM_MS_CBLOCK`).
const COUNTING_BLOCK: u32 = 512;
/// Shared memory a counting tile's staged items may take (less where the GPU gives a block
/// less): 8192 items of a 4-byte key and 8-byte payload. Larger tiles write longer runs per
/// part; measured on an H100 (bench/NOTES.md, issue 13): tiles of 2048 items 7.9 G/s of
/// two-level inserts, 4096 9.8, 8192 11.2, 14 336 10.7.
const STAGE_BYTES: usize = 112 * 1024;
/// What sizes the counting split's tiles on a GPU: the shared memory a block may have (opting
/// in), and whether its multiprocessors bulk-copy (sm_90 on: `cp.async.bulk`), which the second
/// tile buffer needs to pay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileRoom {
    /// [`Gpu::shared_per_block_optin`].
    pub shared_optin: u32,
    /// Whether the GPU has bulk copies (compute capability 9.0 or later).
    pub bulk_copies: bool,
}

impl TileRoom {
    /// An H100's (the compile tests' specialisations).
    pub const H100: TileRoom = TileRoom {
        shared_optin: 227 * 1024,
        bulk_copies: true,
    };

    /// This GPU's.
    pub fn of(gpu: &Gpu) -> TileRoom {
        TileRoom {
            shared_optin: gpu.shared_per_block_optin(),
            bulk_copies: gpu.sm() >= 90,
        }
    }
}
/// Items per thread of a counting tile, at most.
const MAX_ITEMS: usize = 16;
/// Bins of one counting pass, at most (`WM_MS_MAX_BINS`): 2^10, so two passes serve 2^20 parts.
const MAX_BIN_BITS: u32 = 10;

/// How a multisplit moves its keys (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Warp-aggregated atomic claims per part: for few parts.
    Claiming,
    /// A counting sort by part in one or two passes, without global atomics: for many parts.
    Counting,
}

impl Method {
    /// Whether the counting split serves `parts` parts: at most 2^20 (two passes of 2^10 bins).
    pub fn counting_serves(parts: u32) -> bool {
        part_bits(parts) <= 2 * MAX_BIN_BITS
    }

    /// The method for a split of `n` items into `parts` parts: counting where it serves (it
    /// was the faster at every part count measured, 2 to 10^5), claiming otherwise.
    /// `WARPMAP_MULTISPLIT=claiming` or `=counting` overrides the choice (for measurements;
    /// counting only where it serves).
    pub fn choose(n: usize, parts: u32) -> Method {
        let serves = n > 0 && Method::counting_serves(parts);
        match std::env::var("WARPMAP_MULTISPLIT")
            .as_deref()
            .map(str::trim)
        {
            Ok("claiming") => Method::Claiming,
            Ok("counting") if serves => Method::Counting,
            _ if serves => Method::Counting,
            _ => Method::Claiming,
        }
    }
}

/// A counting tile's shape for pairs of `key_bytes` + `value_bytes`.
/// `WARPMAP_MULTISPLIT_BLOCK` and `WARPMAP_MULTISPLIT_STAGE_KB` override the block size and
/// the staging budget (for measurements).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CountingTile {
    /// Threads per block.
    block: u32,
    /// Items per thread.
    items: u32,
    /// Whether the tile is staged in shared memory (each staged item also takes a 2-byte bin);
    /// pairs too wide for one staged item a thread are written from registers, one a thread.
    staged: bool,
    /// The pair's bytes.
    pair_bytes: u32,
    /// Threads per block of the count (`WM_MS_COUNT_BLOCK`).
    count_block: u32,
    /// Whether the moves load the next tile's items while they rank and move this tile's
    /// (`WM_MS_PREFETCH`).
    prefetch: bool,
    /// Whether the moves copy the next tile into a second tile buffer in shared memory while
    /// they rank and move this one (`WM_MS_ASYNC`; staged tiles only).
    async_copies: bool,
}

impl CountingTile {
    /// The tile on a GPU with `room`.
    fn new(key_bytes: usize, value_bytes: Option<usize>, room: TileRoom) -> CountingTile {
        let block = knob::<usize>("WARPMAP_MULTISPLIT_BLOCK")
            .filter(|b| b % 32 == 0 && (32..=1024).contains(b))
            .unwrap_or(COUNTING_BLOCK as usize);
        let bulk_copies = room.bulk_copies;
        let room = (room.shared_optin as usize).saturating_sub(Self::BINS_BYTES as usize + 1024);
        let stage = knob::<usize>("WARPMAP_MULTISPLIT_STAGE_KB")
            .map_or(STAGE_BYTES, |kb| kb * 1024)
            .min(room);
        let pair = key_bytes + value_bytes.unwrap_or(0);
        let (items, staged) = match (stage / (block * (pair + 2))).min(MAX_ITEMS) {
            0 => (1, false),
            items => (items, true),
        };
        // The moves bulk-copy the next tile into a second buffer while they rank and move this
        // one (the loads fly without registers or issue slots) where the GPU bulk-copies and
        // that buffer fits beside a tile of the same size: u64 pairs' 6144-item tiles take
        // 220 KiB of an H100's 227. Tiles a bulk copy cannot take (unaligned: a batch at an
        // odd offset, a tail) are loaded into registers; copies item by item (cp.async, the
        // only kind before sm_90) were slower than that for 4-byte items (bench/NOTES.md,
        // session AC). Splits of two passes take the register path (see `split`).
        // `WARPMAP_MULTISPLIT_ASYNC` (0 or 1) overrides it (off where it does not fit, before
        // sm_90, or in a split of two passes).
        let fits_twice = staged && block * items * (2 * pair + 2) <= room;
        let async_copies = fits_twice
            && bulk_copies
            && knob::<u32>("WARPMAP_MULTISPLIT_ASYNC").is_none_or(|a| a != 0);
        // The count runs a block per chunk (a resident scatter block's share), so its loads in
        // flight are its blocks' threads': 1024 where a thread's keys fit 32 registers (the
        // bound leaves it 64), 256 else. H100, 2^26 four-byte keys in 132 chunks: 256-thread
        // blocks read at 1.1 TB/s. `WARPMAP_MULTISPLIT_COUNT_BLOCK` overrides it.
        let count_block = knob::<u32>("WARPMAP_MULTISPLIT_COUNT_BLOCK")
            .filter(|b| b % 32 == 0 && (32..=1024).contains(b))
            .unwrap_or(if items * key_bytes <= 128 { 1024 } else { 256 });
        // The moves run one block of 512 a multiprocessor, so the loads of a tile wait with
        // nothing beside them unless the next tile's are in flight while this one is ranked and
        // moved: where a thread's items of a tile take at most 64 bytes (16 registers more: the
        // keys of four-byte keys). H100, one call: the ordered find of 2^27 four-byte keys (split
        // with positions, find, unsplit) 6.51-6.57 → 6.29-6.37 ms. Forced on pairs: u32 pairs'
        // partitioned inserts +0.2 to +1.9 %, u64 pairs' (192 bytes a thread) -1.3 to -2.4 %; not
        // taken for u32 pairs, as their 4-GPU rows were not measured alone (bench/NOTES.md,
        // session T). `WARPMAP_MULTISPLIT_PREFETCH` (0 or 1) overrides it.
        let prefetch = !async_copies
            && knob::<u32>("WARPMAP_MULTISPLIT_PREFETCH")
                .map_or(staged && items * pair <= 64, |p| p != 0);
        CountingTile {
            block: block as u32,
            items: items as u32,
            staged,
            pair_bytes: pair as u32,
            count_block,
            prefetch,
            async_copies,
        }
    }

    /// The bins' arrays: two of u32 and one of u64 per bin.
    const BINS_BYTES: u32 = (1 << MAX_BIN_BITS) * (4 + 4 + 8);

    /// Items per tile.
    fn len(&self) -> usize {
        (self.block * self.items) as usize
    }

    /// Dynamic shared memory of the moving kernels: at least `sizeof(wm_ms_tile_smem)` (the
    /// bins' three arrays, the warp sums, and the staged bins, keys and values (two tile
    /// buffers with async copies), with room for their alignment; the kernel checks it).
    fn shared_bytes(&self) -> u32 {
        let bins = Self::BINS_BYTES;
        let buffers = if self.async_copies { 2 } else { 1 };
        let staged = if self.staged {
            self.len() as u32 * (2 + buffers * self.pair_bytes)
        } else {
            0
        };
        bins + 4 * (self.block / 32) + staged + 80
    }
}

/// Bits of a part index: ceil(log2 parts).
fn part_bits(parts: u32) -> u32 {
    32 - parts.saturating_sub(1).leading_zeros()
}

/// Which part a key goes to: `parts` parts (1 to `u32::MAX - 1`), a seed and a hash function.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PartFunction {
    /// The number of parts.
    pub parts: u32,
    /// The hash seed (see the [module docs](self) on choosing it).
    pub seed: u64,
    /// The hash function.
    pub hash: HashFunction,
}

impl PartFunction {
    /// `parts` parts by MurmurHash3 under `seed`.
    pub fn new(parts: u32, seed: u64) -> Self {
        PartFunction {
            parts,
            seed,
            hash: HashFunction::default(),
        }
    }

    /// The same with another hash function.
    pub fn hash(mut self, f: HashFunction) -> Self {
        self.hash = f;
        self
    }

    /// [`Error::InvalidInput`] unless `1 <= parts < u32::MAX` (`u32::MAX` marks "no part" in
    /// the kernels).
    pub fn check(&self) -> Result<()> {
        if self.parts == 0 || self.parts == u32::MAX {
            return Err(Error::invalid(format!(
                "multisplit into {} parts: between 1 and {} parts",
                self.parts,
                u32::MAX - 1
            )));
        }
        Ok(())
    }

    /// The part of `key`, in `0..parts`: the host twin of the device's `wm_part_of`.
    pub fn part_of<K: Key>(&self, key: &K) -> u32 {
        let bytes = bytemuck::bytes_of(key);
        let h = if K::BYTES <= 8 {
            hash_pair(key.to_bits(), K::BYTES, self.seed, self.hash).0
        } else {
            // Keys are at most 64 bytes: 16 words.
            let mut words = [0u32; 16];
            for (w, c) in words.iter_mut().zip(bytes.chunks(4)) {
                *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
            hash_words(&words[..bytes.len() / 4], self.seed, self.hash) as u32
        };
        map_to_range(h, self.parts)
    }
}

/// The result of a multisplit: part `p` is `keys[offsets[p]..offsets[p + 1]]` (and the same
/// range of `values`).
pub struct Split<K, V = K> {
    /// The keys, part by part.
    pub keys: DeviceBuffer<K>,
    /// The values, moved with their keys (`None` for a keys-only split).
    pub values: Option<DeviceBuffer<V>>,
    /// `parts + 1` offsets: `offsets[0] = 0`, `offsets[parts]` = the batch size (empty from
    /// [`multisplit_async`], which does not read them back).
    pub offsets: Vec<u64>,
    /// The same offsets on the device, for kernels that follow.
    pub device_offsets: DeviceBuffer<u64>,
}

impl<K, V> Split<K, V> {
    /// The number of keys in part `p`.
    pub fn part_len(&self, p: usize) -> u64 {
        self.offsets[p + 1] - self.offsets[p]
    }
}

impl<K: bytemuck::Pod, V> std::fmt::Debug for Split<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Split({} keys in {} parts)",
            self.keys.len(),
            self.offsets.len().saturating_sub(1)
        )
    }
}

/// Values move as whole 4-byte words: [`Error::Unsupported`] for other sizes.
fn check_value_size<V>() -> Result<()> {
    let b = std::mem::size_of::<V>();
    if b == 0 || b % 4 != 0 {
        return Err(Error::Unsupported(format!(
            "multisplit values of {b} bytes (a non-zero multiple of 4 is needed)"
        )));
    }
    Ok(())
}

/// The kernel module of one specialisation: key width, value width (`None`: keys only), hash,
/// and the GPU's [`TileRoom`], which sizes the counting split's tiles.
pub fn kernel_source(
    key_bytes: usize,
    value_bytes: Option<usize>,
    hash: HashFunction,
    room: TileRoom,
) -> KernelSource {
    let tile = CountingTile::new(key_bytes, value_bytes, room);
    let mut s = KernelSource::new("multisplit", MULTISPLIT)
        .define("WM_KEY_BYTES", key_bytes)
        .define("WM_HASH", hash.define())
        .define("WM_MS_BLOCK", BLOCK)
        .define("WM_MS_CBLOCK", tile.block)
        .define("WM_MS_COUNT_BLOCK", tile.count_block)
        .define("WM_MS_ITEMS", tile.items)
        .define("WM_MS_STAGED", tile.staged as u32)
        .define("WM_MS_PREFETCH", tile.prefetch as u32)
        .define("WM_MS_ASYNC", tile.async_copies as u32);
    if let Some(v) = value_bytes {
        s = s.define("WM_VALUE_BYTES", v);
    }
    s
}

/// Every specialisation the tests compile (tests/kernels_compile.rs): keys of 4, 8, 16 and 64
/// bytes with no values and with values of 4, 8 and 128 bytes, both hashes on the keys-only
/// splits of 4, 8 and 16 bytes, and 8-byte keys with 256-byte values (tiles sized for an H100).
pub fn all_kernel_sources() -> Vec<KernelSource> {
    let mut v = Vec::new();
    for k in [4, 8, 16, 64] {
        for val in [None, Some(4), Some(8), Some(128)] {
            v.push(kernel_source(k, val, HashFunction::Murmur3, TileRoom::H100));
        }
    }
    for k in [4, 8, 16] {
        v.push(kernel_source(
            k,
            None,
            HashFunction::Mueller,
            TileRoom::H100,
        ));
    }
    // Pairs too wide to stage (written from registers).
    v.push(kernel_source(
        8,
        Some(256),
        HashFunction::Murmur3,
        TileRoom::H100,
    ));
    v
}

/// Splits `keys` (and `values`, if given) into `parts` parts by [`PartFunction::new`]`(parts,
/// seed)` (MurmurHash3). See [`multisplit_by`].
pub fn multisplit<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    parts: u32,
    seed: u64,
) -> Result<Split<K, V>> {
    multisplit_by(gpu, keys, values, &PartFunction::new(parts, seed))
}

/// A keys-only [`multisplit`].
pub fn multisplit_keys<K: Key>(
    gpu: &Gpu,
    keys: &DeviceBuffer<K>,
    parts: u32,
    seed: u64,
) -> Result<Split<K>> {
    multisplit_by::<K, K>(gpu, keys, None, &PartFunction::new(parts, seed))
}

/// Splits `keys` (and `values`, moved with their keys) into `f.parts` contiguous parts by
/// `f.part_of`, on `gpu`'s stream, into new buffers of that stream, by the method
/// [`Method::choose`] picks. Not stable (see the [module docs](self)). Waits for the stream at
/// the end, to read the offsets.
///
/// # Errors
/// [`Error::InvalidInput`] for 0 or `u32::MAX` parts, or values of another length than the keys;
/// [`Error::Unsupported`] for values whose size is not a multiple of 4 bytes (every
/// [`Value`](crate::Value) type's is); the device's errors (memory, kernel launch, compile).
pub fn multisplit_by<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    f: &PartFunction,
) -> Result<Split<K, V>> {
    let method = Method::choose(keys.len(), f.parts);
    multisplit_using(gpu, keys, values, f, method)
}

/// [`multisplit_by`] without reading the offsets back: nothing waits for the stream, and the
/// result's `offsets` is empty (its `device_offsets` holds them). For callers that only need
/// the keys in part order, such as the engine's locality-partitioned insert
/// ([`locality`](super::locality)).
///
/// # Errors
/// As [`multisplit_by`].
pub fn multisplit_async<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    f: &PartFunction,
) -> Result<Split<K, V>> {
    let method = Method::choose(keys.len(), f.parts);
    split(gpu, keys, values, f, method, false)
}

/// [`multisplit_by`] by the given method. [`Method::Counting`] where it does not serve
/// ([`Method::counting_serves`], or an empty batch) runs [`Method::Claiming`].
///
/// # Errors
/// As [`multisplit_by`].
pub fn multisplit_using<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    f: &PartFunction,
    method: Method,
) -> Result<Split<K, V>> {
    split(gpu, keys, values, f, method, true)
}

/// The split by `method`; `read_offsets`: read the offsets back (waits for the stream).
fn split<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    f: &PartFunction,
    method: Method,
    read_offsets: bool,
) -> Result<Split<K, V>> {
    f.check()?;
    // A split in two passes moves its tiles through registers, without the second tile buffer
    // and its bulk copies: the fine pass's groups are a tile or two each, and the two-level
    // table's inserts (u32 pairs into ~109 k buckets) ran 1.5-2 % faster so (H200, bench/NOTES.md,
    // session AD, calls 3-4); one pass keeps them (WarpDrive's partitioned inserts: +2 %).
    let room = TileRoom::of(gpu);
    let room = TileRoom {
        bulk_copies: room.bulk_copies && !Cut::takes_two_passes(f.parts),
        ..room
    };
    let module = split_module(gpu, keys, values, f.hash, room)?;
    let counting =
        method == Method::Counting && !keys.is_empty() && Method::counting_serves(f.parts);
    if counting {
        split_counting(
            gpu,
            gpu,
            &module,
            room,
            keys,
            values,
            f,
            None,
            None,
            None,
            read_offsets,
            false,
        )
    } else {
        split_claiming(gpu, &module, keys, values, f, read_offsets)
    }
}

/// The split kernels for these keys and values (checked: as many values as keys, of a size the
/// kernels move) under `hash`.
fn split_module<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    hash: HashFunction,
    room: TileRoom,
) -> Result<Module> {
    if let Some(v) = values {
        crate::error::check_same_len("multisplit", keys.len(), v.len())?;
        check_value_size::<V>()?;
    }
    let value_bytes = values.map(|_| std::mem::size_of::<V>());
    gpu.module(&kernel_source(K::BYTES, value_bytes, hash, room))
}

/// The claiming split (see the [module docs](self)).
fn split_claiming<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    module: &Module,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    f: &PartFunction,
    read_offsets: bool,
) -> Result<Split<K, V>> {
    let n = keys.len();
    let parts = f.parts as usize;
    let mut counts = gpu.alloc_filled::<u64>(parts, 0)?;
    let mut device_offsets = gpu.alloc::<u64>(parts + 1)?;
    let mut cursor = gpu.alloc::<u64>(parts)?;
    let mut keys_out = gpu.alloc::<K>(n)?;
    let mut values_out = match values {
        Some(_) => Some(gpu.alloc::<V>(n)?),
        None => None,
    };
    let max_blocks = (gpu.sm_count() as u64 * 2048 / BLOCK as u64 * WAVES).max(1);
    let grid = (n as u64).div_ceil(BLOCK as u64).clamp(1, max_blocks) as u32;
    let (n64, seed, parts32) = (n as u64, f.seed, f.parts);

    let count = module.kernel("multisplit_count")?;
    let mut l = count.launch();
    l.buf(keys)
        .arg(&n64)
        .arg(&seed)
        .arg(&parts32)
        .buf_mut(&mut counts);
    // SAFETY: the arguments are multisplit_count's (keys, n, seed, parts, counts) in order and
    // type; it reads keys[0..n) (`keys` holds n) and adds to counts[0..parts) (parts < 2^32 - 1
    // and every part it computes is below `parts`; `counts` holds `parts`).
    unsafe { l.run(grid, BLOCK, 0) }?;

    let scan = module.kernel("multisplit_scan")?;
    let mut l = scan.launch();
    l.buf(&counts)
        .arg(&parts32)
        .buf_mut(&mut device_offsets)
        .buf_mut(&mut cursor);
    // SAFETY: multisplit_scan's (counts, parts, offsets, cursor); it reads counts[0..parts) and
    // writes offsets[0..=parts] and cursor[0..parts), the sizes allocated; one block of
    // exactly WM_MS_SCAN_BLOCK threads, as the kernel requires.
    unsafe { l.run(1, SCAN_BLOCK, 0) }?;

    let scatter = module.kernel("multisplit_scatter")?;
    let mut l = scatter.launch();
    l.buf(keys);
    l.opt_buf(values);
    l.arg(&n64)
        .arg(&seed)
        .arg(&parts32)
        .buf_mut(&mut cursor)
        .buf_mut(&mut keys_out);
    l.opt_buf_mut(values_out.as_mut());
    // SAFETY: multisplit_scatter's (keys, values, n, seed, parts, cursor, keys_out, values_out)
    // in order; a missing value buffer is a null pointer (8 bytes, like the pointer parameter),
    // which the kernel does not touch. It reads keys[0..n) and values[0..n), and writes each
    // input once to keys_out/values_out[cursor[part]++]: the cursors start at the exclusive
    // prefix sums of the same parts' counts, so every slot is in [0, n).
    unsafe { l.run(grid, BLOCK, 0) }?;

    finish(gpu, keys_out, values_out, device_offsets, read_offsets)
}

/// How the counting split cuts a part index: `fine_bits` low bits (the bin within a group;
/// 0: one pass, the groups are the parts) and `groups` coarse groups (the high bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cut {
    fine_bits: u32,
    groups: u32,
}

impl Cut {
    /// One pass up to 2^10 parts. Past that the high half of the bits (more where that gives
    /// the second pass, a block per group, fewer than `min_groups` blocks) are the groups.
    fn new(parts: u32, min_groups: u32) -> Cut {
        let bits = part_bits(parts);
        if !Cut::takes_two_passes(parts) {
            return Cut {
                fine_bits: 0,
                groups: parts,
            };
        }
        let coarse = bits
            .div_ceil(2)
            .max(part_bits(min_groups).min(bits))
            .min(MAX_BIN_BITS);
        Cut::with_fine_bits(parts, bits - coarse)
    }

    /// Whether a counting split into `parts` parts takes two passes (more bins than one pass
    /// counts).
    fn takes_two_passes(parts: u32) -> bool {
        part_bits(parts) > MAX_BIN_BITS
    }

    /// `fine_bits` low bits, the groups the rest.
    fn with_fine_bits(parts: u32, fine_bits: u32) -> Cut {
        Cut {
            fine_bits,
            groups: parts.div_ceil(1 << fine_bits),
        }
    }
}

/// The most parts of a [`multisplit_within`] (one pass of the counting split).
pub const MAX_WITHIN_PARTS: u32 = 1 << MAX_BIN_BITS;

/// A split, and where each key went ([`multisplit_within`]).
pub type SplitWithPositions<K, V> = (Split<K, V>, Option<DeviceBuffer<u32>>);

/// Splits `keys` (and `values`) into `outer.parts × within.parts` parts: by `outer`, and each
/// outer part by `within` (part `o × within.parts + w`), in one pass of the counting split (not
/// stable); with `positions`, also where each key went (4 bytes per key, in input order). The
/// sharded table's split for shards whose tables take their keys in the order of their
/// stretches ([`DeviceHashTable::stretch_order`](crate::DeviceHashTable::stretch_order)): one
/// pass near copy bandwidth, where the stable tile split slows with many parts (bench/NOTES.md,
/// issue 14). With `read_offsets`, reads the offsets back (`parts + 1` of them) and waits for
/// them; without, the split's [`offsets`](Split::offsets) are empty and the caller reads
/// [`device_offsets`](Split::device_offsets) when it needs them (several GPUs' splits then run
/// side by side). The kernels run on `gpu`'s stream; the result's buffers belong to `alloc`'s
/// (a handle of the same GPU: the stream that finishes with them, so that their frees do not
/// hold `gpu`'s stream back).
///
/// # Errors
/// [`Error::InvalidInput`] for more than [`MAX_WITHIN_PARTS`] parts in all, two hash functions,
/// or (with `positions`) a batch of `u32::MAX` keys or more; those of [`multisplit_by`].
#[allow(clippy::too_many_arguments)] // the split's parts, each its own concern
pub fn multisplit_within<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    alloc: &Gpu,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    outer: &PartFunction,
    within: &PartFunction,
    positions: bool,
    read_offsets: bool,
) -> Result<SplitWithPositions<K, V>> {
    let whole = composite(outer, within)?;
    one_pass_split(
        gpu,
        alloc,
        keys,
        values,
        &whole,
        Some(within),
        None,
        positions,
        read_offsets,
    )
}

/// The part function of a split by `outer` and each outer part by `within` (part
/// `o × within.parts + w`), after their checks.
fn composite(outer: &PartFunction, within: &PartFunction) -> Result<PartFunction> {
    outer.check()?;
    within.check()?;
    let parts = outer.parts as u64 * within.parts as u64;
    if parts > MAX_WITHIN_PARTS as u64 || outer.hash != within.hash {
        return Err(Error::invalid(format!(
            "multisplit into {} x {} parts ({:?}, {:?}): at most {MAX_WITHIN_PARTS} in all, by one \
             hash function",
            outer.parts, within.parts, outer.hash, within.hash
        )));
    }
    Ok(PartFunction {
        parts: parts as u32,
        ..*outer
    })
}

/// [`multisplit_within`] with each key's batch index as its value: `values[j]` of the result
/// is the index in `keys` of the key at `j` (keys only move; the indices are written by the
/// split itself, 4 bytes per key, with no index array read). For a lookup that answers in split
/// order with each answer's index
/// ([`DeviceHashTable::find_device_unordered_async`](crate::DeviceHashTable::find_device_unordered_async)):
/// no inverse of the positions, whose scattered writes cost more (bench/NOTES.md, issue 18).
///
/// # Errors
/// As [`multisplit_within`]; [`Error::InvalidInput`] for a batch of `u32::MAX` keys or more.
pub fn multisplit_within_indexed<K: Key>(
    gpu: &Gpu,
    alloc: &Gpu,
    keys: &DeviceBuffer<K>,
    outer: &PartFunction,
    within: &PartFunction,
    read_offsets: bool,
) -> Result<Split<K, u32>> {
    if keys.len() as u64 >= u32::MAX as u64 {
        return Err(Error::invalid(format!(
            "multisplit of {} keys with their indices: fewer than {}",
            keys.len(),
            u32::MAX
        )));
    }
    let whole = composite(outer, within)?;
    if keys.is_empty() {
        let split = split::<K, u32>(gpu, keys, None, &whole, Method::Claiming, read_offsets)?;
        return Ok(Split {
            values: Some(alloc.alloc::<u32>(0)?),
            ..split
        });
    }
    let room = TileRoom::of(gpu);
    let module = gpu.module(&kernel_source(K::BYTES, Some(4), whole.hash, room))?;
    split_counting::<K, u32>(
        gpu,
        alloc,
        &module,
        room,
        keys,
        None,
        &whole,
        Some(within),
        None,
        None,
        read_offsets,
        true,
    )
}

/// One pass of the counting split by `f` (with `within` or `bins`, see [`split_counting`]),
/// with each key's position where asked: [`multisplit_within`] and [`multisplit_by_bins`]
/// after their own checks.
#[allow(clippy::too_many_arguments)] // the split's parts, each its own concern
fn one_pass_split<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    alloc: &Gpu,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    f: &PartFunction,
    within: Option<&PartFunction>,
    bins: Option<&DeviceBuffer<u32>>,
    positions: bool,
    read_offsets: bool,
) -> Result<SplitWithPositions<K, V>> {
    if positions && keys.len() as u64 >= u32::MAX as u64 {
        return Err(Error::invalid(format!(
            "multisplit of {} keys with positions: fewer than {}",
            keys.len(),
            u32::MAX
        )));
    }
    let room = TileRoom::of(gpu);
    let module = split_module(gpu, keys, values, f.hash, room)?;
    let mut pos = positions
        .then(|| alloc.alloc::<u32>(keys.len()))
        .transpose()?;
    if keys.is_empty() {
        let split = split(gpu, keys, values, f, Method::Claiming, read_offsets)?;
        return Ok((split, pos));
    }
    let split = split_counting(
        gpu,
        alloc,
        &module,
        room,
        keys,
        values,
        f,
        within,
        bins,
        pos.as_mut(),
        read_offsets,
        false,
    )?;
    Ok((split, pos))
}

/// Splits `keys` (and `values`) into `parts` parts by bins the caller computed: key `i` into
/// part `bins[i]`, in one pass of the counting split (not stable); with `positions`, also where
/// each key went (4 bytes per key, in input order). For a scheme whose order of locality is not
/// a hash's top bits (DyCuckoo's build: a key's target subtable drawn by weights, then the
/// stretch of its bucket there; `src/table/dycuckoo/mod.rs`). Buffers and streams as
/// [`multisplit_within`].
///
/// The caller's word: every `bins[i] < parts` (the kernels index their shared histograms by
/// it), which is why this is not public.
///
/// # Errors
/// [`Error::InvalidInput`] for `parts` outside `1..=`[`MAX_WITHIN_PARTS`], `bins` of another
/// length than `keys`, or (with `positions`) a batch of `u32::MAX` keys or more; those of
/// [`multisplit_by`].
#[allow(clippy::too_many_arguments)] // the split's parts, each its own concern
pub(crate) fn multisplit_by_bins<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    alloc: &Gpu,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    bins: &DeviceBuffer<u32>,
    parts: u32,
    positions: bool,
    read_offsets: bool,
) -> Result<SplitWithPositions<K, V>> {
    if parts == 0 || parts > MAX_WITHIN_PARTS {
        return Err(Error::invalid(format!(
            "multisplit by bins into {parts} parts: 1 to {MAX_WITHIN_PARTS}"
        )));
    }
    crate::error::check_same_len("multisplit by bins", keys.len(), bins.len())?;
    one_pass_split(
        gpu,
        alloc,
        keys,
        values,
        &PartFunction::new(parts, 0),
        None,
        Some(bins),
        positions,
        read_offsets,
    )
}

/// The counting split (see the [module docs](self)): [`Method::counting_serves`] holds and the
/// batch is not empty. With `within` (one pass: at most [`MAX_WITHIN_PARTS`] parts), part
/// `o × within.parts + w` for outer part `o` by `f` (`f.parts / within.parts` of them) and `w`
/// by `within`; with `bins` (one pass, `f.parts` at most [`MAX_WITHIN_PARTS`]), part `bins[i]`
/// for key `i`; with `positions`, where each key went. The result's buffers belong to `alloc`'s
/// stream (see [`multisplit_within`]), the kernels run on `gpu`'s.
#[allow(clippy::too_many_arguments)] // the split's parts, each its own concern
fn split_counting<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    alloc: &Gpu,
    module: &Module,
    room: TileRoom,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    f: &PartFunction,
    within: Option<&PartFunction>,
    bins: Option<&DeviceBuffer<u32>>,
    positions: Option<&mut DeviceBuffer<u32>>,
    read_offsets: bool,
    indexed: bool,
) -> Result<Split<K, V>> {
    let (within_seed, within_parts) = within.map_or((0u64, 1u32), |w| (w.seed, w.parts));
    let n = keys.len();
    let parts = f.parts as usize;
    let value_bytes = values.map(|_| std::mem::size_of::<V>());
    let shape = CountingTile::new(K::BYTES, value_bytes.or(indexed.then_some(4)), room);
    let (cblock, shared) = (shape.block, shape.shared_bytes());
    let scatter = tile_kernel(gpu, module, &shape, "multisplit_coarse_scatter")?;
    let fine = tile_kernel(gpu, module, &shape, "multisplit_fine")?;
    let (chunk, chunks) = scatter_chunks(gpu, &scatter, &shape, n)?;
    // The second pass runs a block per group: at least two per multiprocessor where the bits
    // allow (`WARPMAP_MULTISPLIT_MIN_GROUPS` overrides that floor, for measurements).
    let min_groups = knob("WARPMAP_MULTISPLIT_MIN_GROUPS").unwrap_or(2 * gpu.sm_count());
    let mut cut = Cut::new(f.parts, min_groups);
    // `WARPMAP_MULTISPLIT_COARSE_BITS` sets the groups' bits directly (for measurements).
    if let Some(coarse) =
        knob::<u32>("WARPMAP_MULTISPLIT_COARSE_BITS").filter(|_| within.is_none() && bins.is_none())
    {
        let bits = part_bits(f.parts);
        if bits > MAX_BIN_BITS && (bits - MAX_BIN_BITS..=MAX_BIN_BITS).contains(&coarse) {
            cut = Cut::with_fine_bits(f.parts, bits - coarse);
        }
    }
    let groups = cut.groups as usize;
    let two_passes = cut.fine_bits > 0;
    debug_assert!(
        (within.is_none() && bins.is_none()) || !two_passes,
        "a composite split and a split by bins are one pass"
    );
    debug_assert!(
        !indexed || (values.is_none() && std::mem::size_of::<V>() == 4 && !two_passes),
        "an indexed split is one pass of 4-byte indices, with no values of its own"
    );

    let mut counts = gpu.alloc::<u64>(groups * chunks)?;
    let (n64, seed, parts32, fine_bits, groups32, chunk64, chunks32) = (
        n as u64,
        f.seed,
        f.parts,
        cut.fine_bits,
        cut.groups,
        chunk as u64,
        chunks as u32,
    );

    let count = module.kernel("multisplit_coarse_count")?;
    let mut l = count.launch();
    l.buf(keys)
        .arg(&n64)
        .arg(&seed)
        .arg(&parts32)
        .arg(&fine_bits)
        .arg(&within_seed)
        .arg(&within_parts);
    l.opt_buf(bins);
    l.arg(&groups32).arg(&chunk64).buf_mut(&mut counts);
    // SAFETY: multisplit_coarse_count's (keys, n, seed, parts, fine_bits, within_seed, within,
    // bins, groups, chunk, counts) in order and type (a composite group is below parts = groups;
    // `bins`, null or n words, each below parts = groups: the caller's word);
    // block c reads keys[c * chunk .. min(n, (c + 1) * chunk)) and writes counts[g * chunks + c]
    // for g < groups (groups <= 2^10, the kernel's bins): `counts` holds groups * chunks, and
    // chunks blocks run, of the module's WM_MS_COUNT_BLOCK threads (whole warps).
    unsafe { l.run(chunks32, shape.count_block, 0) }?;

    // The rest of the split's memory is allocated while the GPU counts: the host's allocations
    // (the outputs are the batch's size) would otherwise keep it waiting at the batch's start
    // (H200, bench/NOTES.md, session AD).
    let mut totals = gpu.alloc::<u64>(groups)?;
    // The coarse pass's output: the result itself in one pass.
    let out = if two_passes { gpu } else { alloc };
    let mut group_offsets = out.alloc::<u64>(groups + 1)?;
    let mut scratch = gpu.alloc::<u64>(groups)?;
    let mut coarse_keys = out.alloc::<K>(n)?;
    // With `indexed`, the values are the items' batch indices, written by the scatter itself
    // (a null `values` beside a non-null `values_out`: kernels/multisplit.cu, wm_ms_move).
    let mut coarse_values = match values.is_some() || indexed {
        true => Some(out.alloc::<V>(n)?),
        false => None,
    };

    let rows = module.kernel("multisplit_scan_rows")?;
    let mut l = rows.launch();
    l.buf_mut(&mut counts).arg(&chunks32).buf_mut(&mut totals);
    // SAFETY: multisplit_scan_rows's (counts, chunks, totals); block g scans
    // counts[g * chunks .. (g + 1) * chunks) in place and writes totals[g]; `groups` blocks of
    // WM_MS_SCAN_BLOCK threads, the sizes allocated.
    unsafe { l.run(groups32, SCAN_BLOCK, 0) }?;

    let scan = module.kernel("multisplit_scan")?;
    let mut l = scan.launch();
    l.buf(&totals)
        .arg(&groups32)
        .buf_mut(&mut group_offsets)
        .buf_mut(&mut scratch);
    // SAFETY: multisplit_scan's (counts, parts, offsets, cursor) over the groups: it reads
    // totals[0..groups), writes group_offsets[0..=groups] and scratch[0..groups); one block of
    // WM_MS_SCAN_BLOCK threads.
    unsafe { l.run(1, SCAN_BLOCK, 0) }?;

    // A scope of its own: the launch borrows the outputs, which move into the result below.
    {
        let mut l = scatter.launch();
        l.buf(keys);
        l.opt_buf(values);
        l.arg(&n64)
            .arg(&seed)
            .arg(&parts32)
            .arg(&fine_bits)
            .arg(&within_seed)
            .arg(&within_parts);
        l.opt_buf(bins);
        l.arg(&groups32)
            .arg(&chunk64)
            .buf(&counts)
            .buf(&group_offsets)
            .buf_mut(&mut coarse_keys);
        l.opt_buf_mut(coarse_values.as_mut());
        // Positions only of a one-pass split (the composite one): relative to the result.
        l.opt_buf_mut(positions.filter(|_| !two_passes));
        // SAFETY: multisplit_coarse_scatter's (keys, values, n, seed, parts, fine_bits,
        // within_seed, within, bins, groups, chunk, counts, group_offsets, keys_out, values_out,
        // positions) in order (`bins` as for the count); a missing value or positions buffer is a null pointer, which the
        // kernel does not touch (positions, when given, hold n entries: item i writes entry i;
        // a null `values` beside `values_out`, only for an indexed split of a module with
        // 4-byte values: each item's index goes to `values_out`, n entries like the keys).
        // Block c reads its chunk of keys/values (as the count did, with the same chunks
        // blocks) and writes each item once into [0, n): group g's items of chunk c go to
        // group_offsets[g] + (the items of g in the chunks before c) + (their rank in chunk c),
        // which the counts and scans above computed from the same keys and part function. `shared` bytes of dynamic shared
        // memory, allowed above: at least the kernel's tile (it checks).
        unsafe { l.run(chunks32, cblock, shared) }?;
    }

    if !two_passes {
        // The groups are the parts.
        return finish(gpu, coarse_keys, coarse_values, group_offsets, read_offsets);
    }
    let mut keys_out = alloc.alloc::<K>(n)?;
    let mut values_out = match values {
        Some(_) => Some(alloc.alloc::<V>(n)?),
        None => None,
    };
    let mut device_offsets = alloc.alloc::<u64>(parts + 1)?;
    let mut l = fine.launch();
    l.buf(&coarse_keys);
    l.opt_buf(coarse_values.as_ref());
    l.arg(&seed)
        .arg(&parts32)
        .arg(&fine_bits)
        .buf(&group_offsets)
        .buf_mut(&mut keys_out);
    l.opt_buf_mut(values_out.as_mut());
    l.buf_mut(&mut device_offsets);
    // SAFETY: multisplit_fine's (keys, values, seed, parts, fine_bits, group_offsets, keys_out,
    // values_out, offsets) in order; block g (of `groups`, the kernel's gridDim) reads items
    // group_offsets[g] .. group_offsets[g + 1] of the coarse split (within [0, n)), writes each
    // of them once within that range of keys_out/values_out (the group's parts in order,
    // counted from the same items), and offsets[p] for the group's parts p < parts; the last
    // block writes offsets[parts]. 2^fine_bits <= 2^10 bins; `shared` bytes as for the scatter.
    unsafe { l.run(groups32, cblock, shared) }?;
    finish(gpu, keys_out, values_out, device_offsets, read_offsets)
}

/// A kernel of the module that moves tiles of `shape` (their dynamic shared memory allowed), or
/// [`Error::Unsupported`] where this GPU gives a block less shared memory than the tile takes.
fn tile_kernel(
    gpu: &Gpu,
    module: &Module,
    shape: &CountingTile,
    name: &str,
) -> Result<crate::device::Kernel> {
    let shared = shape.shared_bytes();
    if shared > gpu.shared_per_block_optin() {
        return Err(Error::Unsupported(format!(
            "multisplit: a counting tile of {shared} bytes of shared memory (this GPU gives a \
             block {})",
            gpu.shared_per_block_optin()
        )));
    }
    let kernel = module.kernel(name)?;
    kernel.allow_shared(shared)?;
    Ok(kernel)
}

/// The chunks of a one-pass scatter of `n > 0` items (`chunk` items each, `chunks` of them,
/// one a block): one wave of the scatter's blocks, each over a chunk of whole tiles.
fn scatter_chunks(
    gpu: &Gpu,
    scatter: &crate::device::Kernel,
    shape: &CountingTile,
    n: usize,
) -> Result<(usize, usize)> {
    let tile = shape.len();
    let resident = gpu.sm_count() as usize
        * gpu.max_active_blocks_per_sm_with(scatter, shape.block, shape.shared_bytes())? as usize;
    let tiles = n.div_ceil(tile);
    let chunk = tiles.div_ceil(resident.clamp(1, tiles)) * tile;
    Ok((chunk, n.div_ceil(chunk)))
}

/// A split with slack ([`multisplit_slack_async`]): part `p` owns the region
/// `p * cap .. (p + 1) * cap` of its items (keys and values, [`SlackItems`]), of which its
/// first `min(fill[p], cap)` items are its keys, in no particular order, and the rest holds
/// nothing. The keys that found their part's region full are not in it: their bits are set in
/// `flagged` (bit `i % 32` of word `i / 32` for key `i` of the batch), and `fill[parts]` counts
/// them.
pub struct SlackSplit<K, V = K> {
    /// The regions' keys and values, in the layout the split was prepared with.
    pub items: SlackItems<K, V>,
    /// The number of parts.
    pub parts: u32,
    /// Items a region: a multiple of the split's unit.
    pub cap: u64,
    /// `parts + 1` words: each part's claims (which may pass `cap`), then the flagged keys.
    pub fill: DeviceBuffer<u64>,
    /// One bit a key of the batch: set where the key is not in its region.
    pub flagged: DeviceBuffer<u32>,
}

/// The regions' items of a [`SlackSplit`], in its [`SlackLayout`].
pub enum SlackItems<K, V> {
    /// The keys in one array, their values (`None` for a keys-only split) in another.
    Columns {
        /// The regions' keys.
        keys: DeviceBuffer<K>,
        /// Their values.
        values: Option<DeviceBuffer<V>>,
    },
    /// `{key, value}` pairs in one array ([`SlackLayout::Pairs`]): item `j` is the
    /// `K::BYTES + size_of::<V>()` bytes from `j * (K::BYTES + size_of::<V>())`, the key first.
    Pairs(DeviceBuffer<u8>),
}

/// How a slack split lays out its regions' items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlackLayout {
    /// Keys in one array, values in another ([`SlackItems::Columns`]).
    Columns,
    /// `{key, value}` pairs in one array ([`SlackItems::Pairs`]; `wm_pair` in
    /// kernels/common/types.cuh): the scatter stages and writes a pair in one 8- or 16-byte
    /// access instead of two, and an ordered insert reads it in one load. For keys and values
    /// of one width, 4 or 8 bytes ([`SlackLayout::serves`]).
    Pairs,
}

impl SlackLayout {
    /// Whether this layout serves keys of `key_bytes` with values of `value_bytes` (`None`: a
    /// keys-only split).
    pub fn serves(self, key_bytes: usize, value_bytes: Option<usize>) -> bool {
        match self {
            SlackLayout::Columns => true,
            SlackLayout::Pairs => value_bytes == Some(key_bytes) && matches!(key_bytes, 4 | 8),
        }
    }

    /// The layout of a partitioned insert's split of `K` keys with `V` values: pairs where
    /// they serve (an H200, u64 pairs: the scatter 1.25 → 1.17 ms for 2^27 of them,
    /// bench/NOTES.md, session AK), columns elsewhere. `WARPMAP_SLACK_PAIRS=0` asks for
    /// columns (for measurements).
    pub fn for_insert<K: Key, V>() -> SlackLayout {
        let pairs = SlackLayout::Pairs.serves(K::BYTES, Some(std::mem::size_of::<V>()))
            && knob::<u32>("WARPMAP_SLACK_PAIRS").is_none_or(|p| p != 0);
        if pairs {
            SlackLayout::Pairs
        } else {
            SlackLayout::Columns
        }
    }
}

impl<K: Key, V: bytemuck::Pod> SlackSplit<K, V> {
    /// The regions' keys and values (`None` for a keys-only split) copied to the host, as two
    /// arrays of `parts * cap` items whatever the layout (waits for the stream).
    ///
    /// # Errors
    /// The driver's, from the copies.
    pub fn download(&self, gpu: &Gpu) -> Result<(Vec<K>, Option<Vec<V>>)> {
        match &self.items {
            SlackItems::Columns { keys, values } => Ok((
                gpu.download(keys)?,
                values.as_ref().map(|v| gpu.download(v)).transpose()?,
            )),
            SlackItems::Pairs(pairs) => {
                let bytes = gpu.download(pairs)?;
                let width = K::BYTES + std::mem::size_of::<V>();
                let (keys, values) = bytes
                    .chunks_exact(width)
                    .map(|p| {
                        let (k, v) = p.split_at(K::BYTES);
                        (
                            bytemuck::pod_read_unaligned::<K>(k),
                            bytemuck::pod_read_unaligned::<V>(v),
                        )
                    })
                    .unzip();
                Ok((keys, Some(values)))
            }
        }
    }
}

/// The items a part's region of a slack split holds: the mean `n / parts` and 4 standard
/// deviations of a random batch's part sizes (a part of 2^20 random keys varies by ~0.1 %), plus
/// 1/64 of the mean, rounded up to a multiple of `unit`: at 2^20 keys a part, 2 % more memory
/// than the keys. A part that is larger (a batch of many copies of a key, or keys built to
/// collide) keeps what fits, and the rest is flagged.
pub fn slack_cap(n: u64, parts: u32, unit: u64) -> u64 {
    let unit = unit.max(1);
    let mean = n.div_ceil(parts.max(1) as u64);
    let slack = 4 * (mean as f64).sqrt().ceil() as u64 + mean / 64;
    (mean + slack).div_ceil(unit).max(1) * unit
}

/// A split of `keys` (and `values`) by `f` without a count: one pass over the batch (the
/// counting split reads its keys twice), into a region of [`slack_cap`] items per part, each
/// tile's run of a part claimed there with an atomic (see [`SlackSplit`]), keys and values in
/// two arrays ([`SlackScatter::prepare`] offers the pairs layout too). On `gpu`'s stream;
/// nothing waits for it. For the locality-partitioned insert, whose ordered kernels take the
/// regions as they are and then insert the flagged keys from the batch
/// (`wm_for_each_ordered_batch` in kernels/common/bulk.cuh): `unit` is their tile, so that no
/// tile spans two regions. `None` where it does not serve: an empty batch, or more parts than
/// one pass splits (2^10).
///
/// # Errors
/// As [`multisplit_by`], and [`Error::InvalidInput`] for a `unit` of 0 or regions of 2^32
/// units or more.
pub fn multisplit_slack_async<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    f: &PartFunction,
    unit: u64,
) -> Result<Option<SlackSplit<K, V>>> {
    let columns = SlackLayout::Columns;
    match SlackScatter::prepare::<K, V>(gpu, keys.len(), values.is_some(), f, unit, columns)? {
        Some(scatter) => scatter.split_async(gpu, keys, values, f).map(Some),
        None => Ok(None),
    }
}

/// The kernel of a split with slack made ready for batches of one shape ([`Self::prepare`]):
/// its module and kernel found, its shared memory allowed and its chunks worked out from its
/// occupancy once. [`multisplit_slack_async`] does all that at every batch, ~0.05 ms of host
/// time on an H200's host while the GPU waits for the split at the batch's start (bench/NOTES.md,
/// session AK); a table keeps its last one ([`Self::serves`]).
pub struct SlackScatter {
    kernel: crate::device::Kernel,
    block: u32,
    shared: u32,
    /// The stream it launches on (the kernel's): `prepare`'s handle's.
    stream_id: u64,
    /// The shape it serves: batch length, parts, hash, unit, key and value bytes.
    n: usize,
    parts: u32,
    hash: HashFunction,
    unit: u64,
    key_bytes: usize,
    value_bytes: Option<usize>,
    layout: SlackLayout,
    cap: u64,
    chunk: usize,
    chunks: usize,
}

impl SlackScatter {
    /// The scatter of batches of `n` keys of type `K` (with values of type `V` where
    /// `with_values`) by `f`'s parts and hash, in regions of whole `unit`s ([`slack_cap`]),
    /// its items in `layout`; `None` where a slack split does not serve (see
    /// [`multisplit_slack_async`]).
    ///
    /// # Errors
    /// As [`multisplit_slack_async`], and [`Error::InvalidInput`] for a layout that does not
    /// serve these types ([`SlackLayout::serves`]).
    pub fn prepare<K: Key, V: bytemuck::Pod>(
        gpu: &Gpu,
        n: usize,
        with_values: bool,
        f: &PartFunction,
        unit: u64,
        layout: SlackLayout,
    ) -> Result<Option<SlackScatter>> {
        f.check()?;
        let value_bytes = with_values.then_some(std::mem::size_of::<V>());
        if !layout.serves(K::BYTES, value_bytes) {
            return Err(Error::invalid(format!(
                "a slack split in {layout:?} of {}-byte keys with {value_bytes:?}-byte values \
                 (pairs: keys and values of one width, 4 or 8 bytes)",
                K::BYTES
            )));
        }
        if n == 0 || Cut::takes_two_passes(f.parts) {
            return Ok(None);
        }
        let cap = slack_cap(n as u64, f.parts, unit);
        let units = (f.parts as u64 * cap) / unit.max(1);
        if unit == 0 || units >= u32::MAX as u64 {
            return Err(Error::invalid(format!(
                "slack split of {n} keys into {} parts: units of {unit} items, fewer than 2^32 of them",
                f.parts
            )));
        }
        if with_values {
            check_value_size::<V>()?;
        }
        let room = TileRoom::of(gpu);
        let module = gpu.module(&kernel_source(K::BYTES, value_bytes, f.hash, room))?;
        let shape = CountingTile::new(K::BYTES, value_bytes, room);
        let name = match layout {
            SlackLayout::Columns => "multisplit_slack_scatter",
            SlackLayout::Pairs => "multisplit_slack_scatter_pairs",
        };
        let kernel = tile_kernel(gpu, &module, &shape, name)?;
        let (chunk, chunks) = scatter_chunks(gpu, &kernel, &shape, n)?;
        Ok(Some(SlackScatter {
            kernel,
            stream_id: gpu.stream_id(),
            block: shape.block,
            shared: shape.shared_bytes(),
            n,
            parts: f.parts,
            hash: f.hash,
            unit,
            key_bytes: K::BYTES,
            value_bytes,
            layout,
            cap,
            chunk,
            chunks,
        }))
    }

    /// Whether this scatter serves the batch that [`Self::prepare`] would be asked for with
    /// these arguments (the same module, shape, regions and layout).
    pub fn serves<K: Key, V>(
        &self,
        n: usize,
        with_values: bool,
        f: &PartFunction,
        unit: u64,
        layout: SlackLayout,
    ) -> bool {
        self.n == n
            && self.parts == f.parts
            && self.hash == f.hash
            && self.unit == unit
            && self.key_bytes == K::BYTES
            && self.value_bytes == with_values.then_some(std::mem::size_of::<V>())
            && self.layout == layout
    }

    /// The layout of its splits' items.
    pub fn layout(&self) -> SlackLayout {
        self.layout
    }

    /// Splits `keys` (and `values`) by `f` on `gpu`'s stream (nothing waits for it): a
    /// [`SlackSplit`], as [`multisplit_slack_async`].
    ///
    /// # Errors
    /// [`Error::InvalidInput`] where the batch is not the one this scatter was prepared for
    /// ([`Self::serves`]), `gpu` is not the handle (stream) it was prepared on, or `values` is
    /// not as long as `keys`; [`Error::OutOfMemory`] where its outputs do not fit.
    pub fn split_async<K: Key, V: bytemuck::Pod>(
        &self,
        gpu: &Gpu,
        keys: &DeviceBuffer<K>,
        values: Option<&DeviceBuffer<V>>,
        f: &PartFunction,
    ) -> Result<SlackSplit<K, V>> {
        if let Some(v) = values {
            crate::error::check_same_len("multisplit", keys.len(), v.len())?;
        }
        if !self.serves::<K, V>(keys.len(), values.is_some(), f, self.unit, self.layout) {
            return Err(Error::invalid(
                "a slack split's scatter prepared for another batch shape",
            ));
        }
        // The kernel launches on the stream it was prepared on; its outputs are allocated on
        // `gpu`'s: the two must be one.
        if gpu.stream_id() != self.stream_id {
            return Err(Error::invalid(
                "a slack split's scatter used on another stream than it was prepared on",
            ));
        }
        let (n, cap) = (self.n, self.cap);
        let len = f.parts as usize * cap as usize;
        crate::trace::stream::mark(gpu, "split setup");
        let mut fill = gpu.alloc_filled::<u64>(f.parts as usize + 1, 0)?;
        // Zeroed by the scatter's blocks, each its chunk's words (no memset on the head).
        let mut flagged = gpu.alloc::<u32>(n.div_ceil(32))?;
        let mut items = match self.layout {
            SlackLayout::Columns => SlackItems::Columns {
                keys: gpu.alloc::<K>(len)?,
                values: match values {
                    Some(_) => Some(gpu.alloc::<V>(len)?),
                    None => None,
                },
            },
            SlackLayout::Pairs => {
                let pair = K::BYTES + std::mem::size_of::<V>();
                SlackItems::Pairs(gpu.alloc::<u8>(len * pair)?)
            }
        };
        let (n64, chunk64, parts32) = (n as u64, self.chunk as u64, f.parts);
        crate::trace::stream::mark(gpu, "split alloc");
        {
            let mut l = self.kernel.launch();
            l.buf(keys);
            l.opt_buf(values);
            l.arg(&n64)
                .arg(&f.seed)
                .arg(&parts32)
                .arg(&chunk64)
                .arg(&cap)
                .buf_mut(&mut fill)
                .buf_mut(&mut flagged);
            match &mut items {
                SlackItems::Columns { keys, values } => {
                    l.buf_mut(keys);
                    l.opt_buf_mut(values.as_mut());
                }
                SlackItems::Pairs(pairs) => {
                    l.buf_mut(pairs);
                }
            }
            // SAFETY: multisplit_slack_scatter's (keys, values, n, seed, parts, chunk, cap, fill,
            // flagged, keys_out, values_out) in order, or multisplit_slack_scatter_pairs' (...,
            // flagged, pairs_out) for the pairs layout (`prepare` bound the kernel of
            // `self.layout`, whose items these are, and checked that pairs serve the types:
            // values given, of the keys' width, 4 or 8 bytes); a missing values buffer is a null
            // pointer on both sides, which the kernel does not touch (the kernel was compiled for
            // the values' presence and width, `serves` checked above). Block c (of `chunks`)
            // reads its chunk of keys/values within [0, n), zeroes its chunk's words of
            // `flagged` (whole words: a chunk is whole tiles of whole warps), and writes item i
            // either into its part's region, at p * cap + (its run's claim on fill[p]) + its rank
            // when that is below (p + 1) * cap (within the parts * cap items allocated above, a
            // pair being K::BYTES + size_of V bytes), or bit i of `flagged` (n bits allocated);
            // fill holds parts + 1 words (parts <= 2^10, the kernel's bins), zeroed above on
            // this stream. `shared` bytes of dynamic shared memory, allowed in `prepare`: at
            // least the kernel's tile (it checks).
            unsafe { l.run(self.chunks as u32, self.block, self.shared) }?;
        }
        Ok(SlackSplit {
            items,
            parts: f.parts,
            cap,
            fill,
            flagged,
        })
    }
}

/// The split's result, with its offsets read back if `read_offsets` (waits for the stream).
fn finish<K: Key, V>(
    gpu: &Gpu,
    keys: DeviceBuffer<K>,
    values: Option<DeviceBuffer<V>>,
    device_offsets: DeviceBuffer<u64>,
    read_offsets: bool,
) -> Result<Split<K, V>> {
    let offsets = if read_offsets {
        gpu.download(&device_offsets)?
    } else {
        Vec::new()
    };
    debug_assert!(
        !read_offsets || offsets.last().copied() == Some(keys.len() as u64),
        "the parts hold every key once"
    );
    Ok(Split {
        keys,
        values,
        offsets,
        device_offsets,
    })
}
/// [`multisplit_host`]'s result: the keys, the values (if given) and the `parts + 1` offsets.
pub type HostSplit<K, V> = (Vec<K>, Option<Vec<V>>, Vec<u64>);

/// The CPU twin of [`multisplit_by`], and the tests' oracle: the same parts by the same
/// function, stable (keys in input order within a part). Returns the keys, the values (if
/// given) and the `parts + 1` offsets.
pub fn multisplit_host<K: Key, V: bytemuck::Pod>(
    keys: &[K],
    values: Option<&[V]>,
    f: &PartFunction,
) -> Result<HostSplit<K, V>> {
    f.check()?;
    if let Some(v) = values {
        crate::error::check_same_len("multisplit", keys.len(), v.len())?;
    }
    let part: Vec<u32> = keys.iter().map(|k| f.part_of(k)).collect();
    let mut offsets = vec![0u64; f.parts as usize + 1];
    for &p in &part {
        offsets[p as usize + 1] += 1;
    }
    for p in 0..f.parts as usize {
        offsets[p + 1] += offsets[p];
    }
    let mut cursor: Vec<u64> = offsets[..f.parts as usize].to_vec();
    let mut out = vec![K::zeroed(); keys.len()];
    let mut vout = values.map(|v| vec![V::zeroed(); v.len()]);
    for (i, &p) in part.iter().enumerate() {
        let slot = cursor[p as usize] as usize;
        cursor[p as usize] += 1;
        out[slot] = keys[i];
        if let (Some(vo), Some(v)) = (vout.as_mut(), values) {
            vo[slot] = v[i];
        }
    }
    Ok((out, vout, offsets))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_in_range_and_spread() {
        for parts in [1u32, 2, 7, 64, 1000] {
            let f = PartFunction::new(parts, DEFAULT_PART_SEED);
            let mut seen = vec![0u32; parts as usize];
            for k in 0..20_000u64 {
                let p = f.part_of(&k);
                assert!(p < parts);
                seen[p as usize] += 1;
            }
            let (lo, hi) = (seen.iter().min().unwrap(), seen.iter().max().unwrap());
            if parts <= 64 {
                // 20000 / parts each, within a loose band.
                let mean = 20_000 / parts;
                assert!(
                    *lo > mean / 2 && *hi < mean * 2,
                    "parts {parts}: {lo}..{hi}"
                );
            }
        }
    }

    #[test]
    fn the_twin_splits_stably_and_completely() {
        let keys: Vec<[u8; 16]> = (0..5000u64).map(<[u8; 16] as Key>::from_bits).collect();
        let values: Vec<u32> = (0..5000).collect();
        let f = PartFunction::new(7, 42).hash(HashFunction::Mueller);
        let (k, v, off) = multisplit_host(&keys, Some(&values), &f).unwrap();
        let v = v.unwrap();
        assert_eq!(off[0], 0);
        assert_eq!(off[7], 5000);
        for p in 0..7 {
            let range = off[p] as usize..off[p + 1] as usize;
            assert!(k[range.clone()].iter().all(|x| f.part_of(x) == p as u32));
            // Stable: values (the input positions) increase within a part.
            assert!(v[range].windows(2).all(|w| w[0] < w[1]));
        }
        let mut sorted = v.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, values);
        for (key, val) in k.iter().zip(&v) {
            assert_eq!(*key, keys[*val as usize]);
        }
    }

    /// The cuts the H100 runs measured (132 SMs: at least 264 groups where the bits allow).
    #[test]
    fn cuts_of_part_indices() {
        assert_eq!(Cut::new(7, 264), Cut::with_fine_bits(7, 0));
        assert_eq!(Cut::new(1024, 264).groups, 1024);
        // 109 227 buckets (2^27 keys at 0.8, 3x512): 17 bits, 9 coarse, 427 groups of 256.
        assert_eq!(
            Cut::new(109_227, 264),
            Cut {
                fine_bits: 8,
                groups: 427
            }
        );
        // 5000 parts: 13 bits; 9 coarse for enough groups, 313 groups of 16.
        assert_eq!(Cut::new(5000, 264), Cut::with_fine_bits(5000, 4));
        // 2^20: two passes of 2^10.
        assert_eq!(Cut::new(1 << 20, 264), Cut::with_fine_bits(1 << 20, 10));
        assert_eq!(part_bits(1), 0);
        assert_eq!(part_bits(2), 1);
        assert_eq!(part_bits(1025), 11);
    }

    /// The tiles on an H100's 227 KiB: async copies where a second buffer fits beside a tile of
    /// the same size (u32 and u64 pairs, keys only), and never more than the block may have.
    #[test]
    fn counting_tiles_fit_the_block() {
        for (k, v, items, async_copies) in [
            (4, Some(4), 16, true),
            (8, Some(8), 12, true),
            (8, None, 16, true),
            (8, Some(16), 8, true),
            (8, Some(128), 1, true),
            (8, Some(256), 1, false),
        ] {
            let tile = CountingTile::new(k, v, TileRoom::H100);
            assert_eq!(
                (tile.items, tile.async_copies),
                (items, async_copies),
                "{k} + {v:?}"
            );
            assert!(
                tile.shared_bytes() <= TileRoom::H100.shared_optin,
                "{k} + {v:?}"
            );
            assert!(!(tile.async_copies && tile.prefetch));
        }
    }

    /// Before sm_90 (no bulk copies) the tiles are loaded into registers, with the next tile's
    /// loads in flight where a thread's items take at most 64 bytes (4-byte keys alone, 16 a
    /// thread): an A100's 163 KiB.
    #[test]
    fn counting_tiles_without_bulk_copies_load_into_registers() {
        let a100 = TileRoom {
            shared_optin: 163 * 1024,
            bulk_copies: false,
        };
        for (k, v, prefetch) in [(4, None, true), (4, Some(4), false), (8, Some(8), false)] {
            let tile = CountingTile::new(k, v, a100);
            assert!(!tile.async_copies, "{k} + {v:?}");
            assert_eq!(tile.prefetch, prefetch, "{k} + {v:?}");
            assert!(tile.shared_bytes() <= a100.shared_optin, "{k} + {v:?}");
        }
    }

    #[test]
    fn bad_part_counts_are_invalid() {
        for parts in [0, u32::MAX] {
            let e = multisplit_host::<u32, u32>(&[1], None, &PartFunction::new(parts, 0));
            assert!(matches!(e, Err(Error::InvalidInput(_))));
        }
        let e = multisplit_host::<u32, u32>(&[1, 2], Some(&[1]), &PartFunction::new(2, 0));
        assert!(matches!(e, Err(Error::InvalidInput(_))));
    }
}
