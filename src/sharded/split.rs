//! The split of a batch into shards on the GPU, and its inverse for results
//! (kernels/sharded.cu).
//!
//! The engine's [`multisplit`](crate::table::engine::multisplit) serves many parts (the
//! two-level table's buckets) with warp-aggregated atomics in global memory; with the few parts
//! of a sharded table every warp would hit the same few counters. This split works by tiles
//! instead: a count pass writes each tile's count per part, a scan turns them into each tile's
//! offset within its part, and the scatter moves every key to part base + tile offset + its
//! rank among the tile's keys of its part. It is **stable** (keys keep their input order within
//! a part, so it equals the host twin [`multisplit_host`] exactly) and uses no atomics in
//! global memory. Where results will come back, the scatter also writes where each key went
//! (an index array in input order), and the inverse, [`unsplit`], is a plain gather by it.

use crate::device::{DeviceBuffer, Gpu, Module};
use crate::hash::HashFunction;
use crate::kernels::{KernelSource, SHARDED};
use crate::key::Key;
use crate::table::engine::bulk_grid;
#[cfg(doc)]
use crate::table::engine::multisplit::multisplit_host;
use crate::table::engine::multisplit::{multisplit_within, PartFunction};
#[cfg(doc)]
use crate::{table::engine::multisplit::MAX_WITHIN_PARTS, DeviceHashTable};
use crate::{Error, Result};

/// The most shards a sharded table splits into (the split's shared memory holds a few words
/// per shard and per warp).
pub const MAX_SHARDS: usize = 256;

/// Threads per block (`WM_SH_BLOCK`).
const BLOCK: u32 = 256;
/// Keys per thread per tile (`WM_SH_ITEMS`).
const ITEMS: u32 = 16;
/// Keys per tile (`WM_SH_TILE`): one block's share.
const TILE: u64 = (BLOCK * ITEMS) as u64;
/// Threads of the per-part scan (`WM_SH_SCAN_BLOCK`).
const SCAN_BLOCK: u32 = 1024;

/// The kernel module of one key width and hash.
pub fn kernel_source(key_bytes: usize, hash: HashFunction) -> KernelSource {
    KernelSource::new("sharded", SHARDED)
        .define("WM_KEY_BYTES", key_bytes)
        .define("WM_HASH", hash.define())
        .define("WM_SH_BLOCK", BLOCK)
        .define("WM_SH_ITEMS", ITEMS)
}

/// Every specialisation the compile test builds: keys of 4, 8, 16 and 64 bytes under both
/// hashes.
pub fn all_kernel_sources() -> Vec<KernelSource> {
    let mut v = Vec::new();
    for k in [4, 8, 16, 64] {
        for h in [HashFunction::Murmur3, HashFunction::Mueller] {
            v.push(kernel_source(k, h));
        }
    }
    v
}

/// Where a split put each part, and what its inverse needs: part `p` is elements
/// `offsets[p]..offsets[p + 1]` of the split buffers.
pub struct SplitPlan {
    /// `parts + 1` offsets (`offsets[parts]` = the batch size).
    pub offsets: Vec<u64>,
    parts: u32,
    n: u64,
    /// Per key, in input order: its position in the split (asked for with `positions`).
    positions: Option<DeviceBuffer<u32>>,
}

impl SplitPlan {
    /// The number of keys in part `p`.
    pub fn part_len(&self, p: usize) -> u64 {
        self.offsets[p + 1] - self.offsets[p]
    }
    /// The parts' ranges, as element ranges of the split buffers.
    pub fn ranges(&self) -> Vec<std::ops::Range<usize>> {
        self.offsets
            .windows(2)
            .map(|w| w[0] as usize..w[1] as usize)
            .collect()
    }
}

/// A split batch: the keys and the payloads in split order, and the plan.
pub struct SplitBatch<K, V> {
    /// Where each part is.
    pub plan: SplitPlan,
    /// The keys, part by part.
    pub keys: DeviceBuffer<K>,
    /// The values, moved with their keys (if given).
    pub values: Option<DeviceBuffer<V>>,
    /// The mixed-batch operations, moved with their keys (if given).
    pub ops: Option<DeviceBuffer<u8>>,
}

/// Payload and result elements move as bytes: 1, or a multiple of 4.
fn element_bytes<T>(what: &str) -> Result<u32> {
    let b = std::mem::size_of::<T>();
    if b == 1 || (b > 0 && b % 4 == 0) {
        Ok(b as u32)
    } else {
        Err(Error::Unsupported(format!(
            "a sharded table moves {what} of 1 byte or a multiple of 4, not {b}"
        )))
    }
}

fn module<K: Key>(gpu: &Gpu, f: &PartFunction) -> Result<Module> {
    gpu.module(&kernel_source(K::BYTES, f.hash))
}

fn check(f: &PartFunction, n: usize) -> Result<()> {
    f.check()?;
    if f.parts as usize > MAX_SHARDS {
        return Err(Error::invalid(format!(
            "a split into {} shards: at most {MAX_SHARDS}",
            f.parts
        )));
    }
    if n as u64 >= u32::MAX as u64 {
        return Err(Error::invalid(format!(
            "a sharded batch of {n} keys: at most {} per call (split the batch)",
            u32::MAX - 1
        )));
    }
    Ok(())
}

/// The ranking's dynamic shared memory: the part bases (u64), two per-warp count buffers and
/// the running counts (u32).
fn rank_shared_bytes(parts: u32) -> u32 {
    parts * 8 + (2 * (BLOCK / 32) + 1) * parts * 4
}

/// Splits `keys` (and `values`, `ops`, moved with them) into `f.parts` parts by `f.part_of`,
/// stably; or, with `within`, each part also in the order of `within.part_of` (a shard's keys
/// in the order its table takes fastest, [`DeviceHashTable::stretch_order`]): then by the
/// engine's counting split in one pass ([`multisplit_within`]; not stable, no operations), as
/// the tile split slows with many parts (H100, 2^27 pairs: 8 shards × 8 stretches took 6.6 ms
/// where 8 shards take 1.6 ms; bench/NOTES.md, issue 14). Either way on `gpu`'s stream, into
/// buffers that belong to `alloc`'s stream (the stream that will finish with them: freeing them
/// there does not hold `gpu`'s stream back); waits for the part sizes on `gpu`'s stream (the
/// host needs them to size what follows). With `positions`,
/// also where each key went, for [`unsplit`] (4 bytes per key).
///
/// # Errors
/// [`Error::InvalidInput`] for 0 or more than [`MAX_SHARDS`] parts, a batch of `u32::MAX`
/// keys or more, or payloads of another length than the keys; with `within`, operations, or
/// what [`multisplit_within`] refuses (more than [`MAX_WITHIN_PARTS`] parts in all, two hash
/// functions); the device's errors.
#[allow(clippy::too_many_arguments)] // the batch's parts, each its own concern
pub fn split<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    alloc: &Gpu,
    f: &PartFunction,
    within: Option<&PartFunction>,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    ops: Option<&DeviceBuffer<u8>>,
    positions: bool,
) -> Result<SplitBatch<K, V>> {
    split_async(gpu, alloc, f, within, keys, values, ops, positions)?.finish(gpu)
}

/// A split whose kernels are enqueued and whose part sizes the host has not read yet
/// ([`split_async`]); [`finish`](PendingSplit::finish) reads them.
pub struct PendingSplit<K, V> {
    batch: SplitBatch<K, V>,
    /// The part sizes on the device, where they are still to be read.
    sizes: Option<Sizes>,
}

/// Where a pending split's part sizes are on the device.
enum Sizes {
    /// One count per part (the tile split's totals).
    Counts(DeviceBuffer<u64>),
    /// The offsets of `step` times as many parts (an ordered split's, each part cut in `step`
    /// by the order within): every `step`-th is a part's start.
    Offsets(DeviceBuffer<u64>, usize),
}

impl<K, V> PendingSplit<K, V> {
    /// Waits for the part sizes on `gpu`'s stream (the stream the split ran on) and returns the
    /// split batch.
    ///
    /// # Errors
    /// The device's errors.
    pub fn finish(mut self, gpu: &Gpu) -> Result<SplitBatch<K, V>> {
        let offsets = match self.sizes.take() {
            None => return Ok(self.batch),
            Some(Sizes::Counts(totals)) => {
                let mut offsets = vec![0u64];
                for s in gpu.download(&totals)? {
                    offsets.push(offsets[offsets.len() - 1] + s);
                }
                offsets
            }
            Some(Sizes::Offsets(all, step)) => {
                gpu.download(&all)?.into_iter().step_by(step).collect()
            }
        };
        debug_assert_eq!(offsets.len(), self.batch.plan.parts as usize + 1);
        debug_assert_eq!(
            offsets[self.batch.plan.parts as usize], self.batch.plan.n,
            "the parts hold every key once"
        );
        self.batch.plan.offsets = offsets;
        Ok(self.batch)
    }
}

/// [`split`] without the wait for the part sizes: the kernels are enqueued on `gpu`'s stream
/// and [`PendingSplit::finish`] reads the sizes. Several ranks' splits launched first and
/// finished after run side by side on their GPUs, where one [`split`] after another would
/// wait for each GPU in turn (ordered splits, `within`, too).
///
/// # Errors
/// As [`split`].
#[allow(clippy::too_many_arguments)] // the batch's parts, each its own concern
pub fn split_async<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    alloc: &Gpu,
    f: &PartFunction,
    within: Option<&PartFunction>,
    keys: &DeviceBuffer<K>,
    values: Option<&DeviceBuffer<V>>,
    ops: Option<&DeviceBuffer<u8>>,
    positions: bool,
) -> Result<PendingSplit<K, V>> {
    let n = keys.len();
    check(f, n)?;
    if let Some(w) = within {
        if ops.is_some() {
            return Err(Error::invalid(
                "a split ordered within its parts carries no operations",
            ));
        }
        element_bytes::<V>("values")?; // (the lengths: multisplit_within checks them)
        let (split, positions) =
            multisplit_within(gpu, alloc, keys, values, f, w, positions, false)?;
        // The plan keeps the outer parts (the shards): each `w.parts` consecutive offsets.
        return Ok(PendingSplit {
            batch: SplitBatch {
                plan: SplitPlan {
                    offsets: Vec::new(),
                    parts: f.parts,
                    n: n as u64,
                    positions,
                },
                keys: split.keys,
                values: split.values,
                ops: None,
            },
            sizes: Some(Sizes::Offsets(split.device_offsets, w.parts as usize)),
        });
    }
    if let Some(v) = values {
        crate::error::check_same_len("sharded split (values)", n, v.len())?;
    }
    if let Some(o) = ops {
        crate::error::check_same_len("sharded split (operations)", n, o.len())?;
    }
    let value_bytes = element_bytes::<V>("values")?;
    let module = module::<K>(gpu, f)?;
    let (n64, seed, parts) = (n as u64, f.seed, f.parts);
    let tiles = (n64.div_ceil(TILE)).max(1);
    let mut tile_prefix = alloc.alloc::<u32>(tiles as usize * parts as usize)?;
    let mut totals = alloc.alloc::<u64>(parts as usize)?;

    let count = module.kernel("shard_count")?;
    let mut l = count.launch();
    l.buf(keys)
        .arg(&n64)
        .arg(&seed)
        .arg(&parts)
        .arg(&tiles)
        .buf_mut(&mut tile_prefix);
    // SAFETY: shard_count's (keys, n, seed, parts, tiles, tile_counts) in order; block b reads
    // keys of tile b below n and writes tile_counts[p * tiles + b] for p < parts (allocated:
    // tiles * parts); its dynamic shared memory holds `parts` counters.
    unsafe { l.run(tiles as u32, BLOCK, parts * 4) }?;

    let scan = module.kernel("shard_scan")?;
    let mut l = scan.launch();
    l.buf_mut(&mut tile_prefix).arg(&tiles).buf_mut(&mut totals);
    // SAFETY: shard_scan's (tile_counts, tiles, totals); block p scans row p (tiles entries)
    // in place and writes totals[p]; `parts` blocks of exactly WM_SH_SCAN_BLOCK threads.
    unsafe { l.run(parts, SCAN_BLOCK, 0) }?;

    let mut keys_out = alloc.alloc::<K>(n)?;
    let mut values_out = values.map(|_| alloc.alloc::<V>(n)).transpose()?;
    let mut ops_out = ops.map(|_| alloc.alloc::<u8>(n)).transpose()?;
    let mut positions = positions.then(|| alloc.alloc::<u32>(n)).transpose()?;
    let ops_bytes = 1u32;
    let scatter = module.kernel("shard_scatter")?;
    let mut l = scatter.launch();
    l.buf(keys)
        .arg(&n64)
        .arg(&seed)
        .arg(&parts)
        .arg(&tiles)
        .buf(&tile_prefix)
        .buf(&totals)
        .buf_mut(&mut keys_out);
    l.opt_buf(values).opt_buf_mut(values_out.as_mut());
    l.arg(&value_bytes);
    l.opt_buf(ops).opt_buf_mut(ops_out.as_mut());
    l.arg(&ops_bytes);
    l.opt_buf_mut(positions.as_mut());
    // SAFETY: shard_scatter's (keys, n, seed, parts, tiles, tile_prefix, totals, keys_out,
    // payload0, payload0_out, payload0_bytes, payload1, payload1_out, payload1_bytes,
    // positions); missing payloads are null pairs and a missing positions array null, which
    // the kernel skips. Every key below n goes to a distinct position below n (the prefixes
    // and totals of the same keys and part function), so each output (n elements of its size)
    // is written in bounds, and positions[i] for i < n (n elements; n < 2^32, checked); the
    // dynamic shared memory is rank_shared_bytes(parts), what the ranking carves.
    unsafe { l.run(tiles as u32, BLOCK, rank_shared_bytes(parts)) }?;

    Ok(PendingSplit {
        batch: SplitBatch {
            plan: SplitPlan {
                offsets: Vec::new(),
                parts,
                n: n64,
                positions,
            },
            keys: keys_out,
            values: values_out,
            ops: ops_out,
        },
        sizes: Some(Sizes::Counts(totals)),
    })
}

/// Results in split order and where they go: `(split, out)`, both one element per key.
pub type Results<'a, T> = Option<(&'a DeviceBuffer<T>, &'a mut DeviceBuffer<T>)>;

/// What [`unsplit`] leaves alone: outputs that the operation of a key did not write keep what
/// the caller had in them.
#[derive(Clone, Copy)]
pub enum Keep<'a> {
    /// Every output of every key is written.
    Nothing,
    /// Values only where the found flag is set (finds).
    ValuesWhereMissing,
    /// By the mixed batch's operations (in split order): statuses for inserts, values for
    /// finds that found their key (the found flags must be given), found flags for finds and
    /// erases.
    ByOperation(&'a DeviceBuffer<u8>),
}

/// The inverse of [`split`] for results: element `i` of each `out` receives the element of its
/// `split` buffer where key `i` went (except what `keep` says). `keys` are the keys [`split`]
/// was given (with `positions`), `plan` its plan and `f` its part function. Asynchronous, on
/// `gpu`'s stream.
///
/// # Errors
/// [`Error::InvalidInput`] if `keys` is not the split's batch size, the split kept no
/// positions, or a buffer is shorter than the batch; the device's errors.
#[allow(clippy::too_many_arguments)]
pub fn unsplit<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    f: &PartFunction,
    plan: &SplitPlan,
    keys: &DeviceBuffer<K>,
    keep: Keep<'_>,
    status: Results<'_, u32>,
    values: Results<'_, V>,
    found: Results<'_, u8>,
) -> Result<()> {
    let n = keys.len();
    if n as u64 != plan.n || f.parts != plan.parts {
        return Err(Error::invalid(format!(
            "unsplit of {n} keys in {} parts by a plan of {} in {}",
            f.parts, plan.n, plan.parts
        )));
    }
    let Some(positions) = plan.positions.as_ref() else {
        return Err(Error::invalid(
            "unsplit of a split made without positions (split(.., positions: true))",
        ));
    };
    unsplit_by::<K, V>(gpu, f, positions, keep, status, values, found)
}

/// [`unsplit`] by the positions of a split made elsewhere: element `i` of each `out` receives
/// element `positions[i]` of its `split` buffer (except what `keep` says). The engine's
/// partitioned lookup ([`multisplit_within`] with positions, then the table's ordered find)
/// brings its answers back to input order with it. `f` names the kernel module (its hash; `K`
/// its key width). Asynchronous, on `gpu`'s stream.
///
/// # Errors
/// [`Error::InvalidInput`] if a buffer is shorter than `positions`; the device's errors.
pub fn unsplit_by<K: Key, V: bytemuck::Pod>(
    gpu: &Gpu,
    f: &PartFunction,
    positions: &DeviceBuffer<u32>,
    keep: Keep<'_>,
    status: Results<'_, u32>,
    values: Results<'_, V>,
    found: Results<'_, u8>,
) -> Result<()> {
    let n = positions.len();
    let short = |a: usize, b: usize| a < n || b < n;
    if matches!(keep, Keep::ByOperation(o) if o.len() < n)
        || status
            .as_ref()
            .is_some_and(|(s, o)| short(s.len(), o.len()))
        || values
            .as_ref()
            .is_some_and(|(s, o)| short(s.len(), o.len()))
        || found.as_ref().is_some_and(|(s, o)| short(s.len(), o.len()))
    {
        return Err(Error::invalid(format!(
            "unsplit of {n} keys into a shorter result buffer"
        )));
    }
    if n == 0 || (status.is_none() && values.is_none() && found.is_none()) {
        return Ok(());
    }
    let value_bytes = element_bytes::<V>("values")?;
    let (status_bytes, found_bytes) = (4u32, 1u32);
    let module = module::<K>(gpu, f)?;
    let n64 = n as u64;
    let k = module.kernel("shard_unsplit")?;
    let mut l = k.launch();
    l.buf(positions).arg(&n64);
    // Values only where found: for finds, and for the finds of a mixed batch.
    let where_found = u32::from(matches!(
        keep,
        Keep::ValuesWhereMissing | Keep::ByOperation(_)
    ));
    l.opt_buf(match keep {
        Keep::ByOperation(ops) => Some(ops),
        _ => None,
    });
    l.arg(&where_found);
    let (status_in, status_out) = status.unzip();
    l.opt_buf(status_in).opt_buf_mut(status_out);
    l.arg(&status_bytes);
    let (values_in, values_out) = values.unzip();
    l.opt_buf(values_in).opt_buf_mut(values_out);
    l.arg(&value_bytes);
    let (found_in, found_out) = found.unzip();
    l.opt_buf(found_in).opt_buf_mut(found_out);
    l.arg(&found_bytes);
    // SAFETY: shard_unsplit's (positions, n, ops, values_where_found, then three (split, out,
    // bytes) triples, null pairs skipped; `ops`, when given, is the split's operations, n
    // bytes). `positions` holds n entries (n is its length), each below n for a split's (the
    // kernel skips any that is not); each buffer holds at least n elements of its size
    // (checked above).
    // A grid-stride loop: any grid covers n. (Blocks that each gather a tile of consecutive
    // keys measured faster alone under ncu but slower across GPUs: bench/NOTES.md, session S.)
    unsafe { l.run(bulk_grid(gpu, n64), BLOCK, 0) }
}
