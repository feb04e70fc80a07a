//! The sharded core of the CPU backend, shared by [`CpuTable`](super::CpuTable) and
//! [`CpuMultiMap`](super::CpuMultiMap): `S` shards (a power of two), each a `Mutex` around one
//! map; a batch partitioned by shard in parallel and run shard by shard in parallel, each shard
//! under its lock and in batch order; results scattered back to per-key outputs in parallel; a
//! shared count of stored items held to the capacity. See the [module docs](super) for the
//! design.

use crate::hash::{fmix64, hash_key};
use crate::key::Key;
use crate::{Error, Result};
use rayon::prelude::*;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{DEFAULT_SEED, MAX_SHARDS};

/// The seed of the shards' own hash maps; differs from the routing seed so that the keys of one
/// shard (which share their low routing bits) spread over the whole map.
const MAP_SEED: u64 = 0x2545_f491_4f6c_dd1d;
/// The fewest keys a partition chunk holds (smaller batches are one chunk).
const MIN_CHUNK: usize = 4096;

/// The hasher of the shards' maps: the kernels' `fmix64` finaliser over the key's bytes, 8 at a
/// time (keys are plain old data, so a keyed cryptographic hash buys nothing here and costs
/// time).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MapHashBuilder;

impl BuildHasher for MapHashBuilder {
    type Hasher = MapHasher;
    fn build_hasher(&self) -> MapHasher {
        MapHasher(MAP_SEED)
    }
}

/// See [`MapHashBuilder`].
pub(crate) struct MapHasher(u64);

impl Hasher for MapHasher {
    fn write(&mut self, bytes: &[u8]) {
        // Wide keys (u128, byte arrays) come here; u32 / u64 / i32 / i64 call write_u32 /
        // write_u64. Every byte feeds the state through a bijection, so keys that differ in one
        // 8-byte word (in the last byte, say) never hash alike.
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = fmix64(i ^ self.0).wrapping_add(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A shard's map: `K` to `T` (a value, or a multimap's values).
pub(super) type ShardMap<K, T> = HashMap<K, T, MapHashBuilder>;

/// Bytes that std's `HashMap` (a SwissTable) allocates for `items` of capacity: one
/// `(K, T)` bucket and one control byte per bucket, plus one group of trailing control bytes.
pub(super) fn map_bytes<K, T>(items: usize) -> usize {
    if items == 0 {
        return 0;
    }
    let buckets = if items < 4 {
        4
    } else if items < 8 {
        8
    } else {
        (items * 8 / 7).next_power_of_two()
    };
    buckets * (std::mem::size_of::<(K, T)>() + 1) + 16
}

/// A batch split by shard: `lists[c][s]` holds the offsets (relative to the start of chunk `c`,
/// which is `c * chunk`) of the keys of chunk `c` that belong to shard `s`, in batch order.
pub(super) struct Partition {
    chunk: usize,
    lists: Vec<Vec<Vec<u32>>>,
}

impl Partition {
    /// How many keys of the batch belong to shard `s`.
    pub fn count(&self, s: usize) -> usize {
        self.lists.iter().map(|l| l[s].len()).sum()
    }

    /// The batch indices of shard `s`'s keys, in batch order.
    pub fn indices(&self, s: usize) -> Indices<'_> {
        Indices {
            chunk: self.chunk,
            shard: s,
            lists: self.lists.iter().enumerate(),
            current: None,
        }
    }

    /// Writes `results[s][j]` (the result of shard `s`'s `j`-th key, in the order of
    /// [`Partition::indices`]) into `out` at that key's batch index, in parallel over chunks:
    /// `put(out, s, result)`.
    pub fn scatter<'r, R: Sync, O: Send>(
        &self,
        results: &'r [Vec<R>],
        out: &mut [O],
        put: impl Fn(&mut O, usize, &'r R) + Sync,
    ) {
        // A second output of zero-sized items (no memory) for the one-output case.
        let mut none = vec![(); out.len()];
        self.scatter_pair(results, out, &mut none, |o, _, s, r| put(o, s, r));
    }

    /// [`Partition::scatter`] into two outputs at once (one pass over the partition):
    /// `put(a, b, s, result)` for the key's places in `a` and `b` (both as long as the batch).
    pub fn scatter_pair<'r, R: Sync, A: Send, B: Send>(
        &self,
        results: &'r [Vec<R>],
        a: &mut [A],
        b: &mut [B],
        put: impl Fn(&mut A, &mut B, usize, &'r R) + Sync,
    ) {
        debug_assert_eq!(a.len(), b.len(), "outputs of the batch's length");
        let shards = results.len();
        // starts[c][s]: where chunk c's keys begin in results[s].
        let mut starts = Vec::with_capacity(self.lists.len());
        let mut offset = vec![0usize; shards];
        for l in &self.lists {
            starts.push(offset.clone());
            for (o, list) in offset.iter_mut().zip(l) {
                *o += list.len();
            }
        }
        a.par_chunks_mut(self.chunk)
            .zip(b.par_chunks_mut(self.chunk))
            .zip(self.lists.par_iter())
            .zip(starts.par_iter())
            .for_each(|(((a, b), lists), starts)| {
                for (s, ((list, res), &start)) in lists.iter().zip(results).zip(starts).enumerate()
                {
                    for (&i, r) in list.iter().zip(&res[start..]) {
                        put(&mut a[i as usize], &mut b[i as usize], s, r);
                    }
                }
            });
    }
}

/// The batch indices of one shard's keys, in batch order ([`Partition::indices`]). A named type
/// rather than `impl Iterator`, so that [`Shards::run_shards`] hands it to its closure without
/// dynamic dispatch.
pub(super) struct Indices<'a> {
    chunk: usize,
    shard: usize,
    lists: std::iter::Enumerate<std::slice::Iter<'a, Vec<Vec<u32>>>>,
    /// The chunk being walked: its start in the batch and the rest of its offsets.
    current: Option<(usize, std::slice::Iter<'a, u32>)>,
}

impl Iterator for Indices<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        loop {
            if let Some((start, offsets)) = &mut self.current {
                if let Some(&i) = offsets.next() {
                    return Some(*start + i as usize);
                }
            }
            let (c, lists) = self.lists.next()?;
            self.current = Some((c * self.chunk, lists[self.shard].iter()));
        }
    }
}

/// `S` maps behind locks, the routing of keys to them, and the count of stored items (keys, or
/// pairs for a multimap) held to a capacity.
pub(super) struct Shards<M> {
    maps: Box<[Mutex<M>]>,
    /// The most items stored at once.
    capacity: usize,
    /// Items stored (reserved before a new item is added, released after one is removed).
    len: AtomicUsize,
    seed: u64,
}

impl<M: Default + Send> Shards<M> {
    /// The shard count for `capacity` items: 4 per thread of the rayon pool, a power of two, at
    /// most 1024, and not far above `capacity`.
    pub fn default_count(capacity: usize) -> usize {
        let threads = rayon::current_num_threads().max(1);
        let shards = (4 * threads).next_power_of_two().min(1024);
        if capacity < shards {
            capacity.max(1).next_power_of_two()
        } else {
            shards
        }
    }

    /// Empty shards; [`Error::InvalidInput`] if `capacity` is 0 or `shards` is not a power of
    /// two in `1..=`[`MAX_SHARDS`].
    pub fn new(capacity: usize, shards: usize) -> Result<Self> {
        if capacity == 0 {
            return Err(Error::invalid("capacity must be at least 1"));
        }
        if !shards.is_power_of_two() || shards > MAX_SHARDS {
            return Err(Error::invalid(format!(
                "shard count {shards} must be a power of two between 1 and {MAX_SHARDS}"
            )));
        }
        Ok(Shards {
            maps: (0..shards).map(|_| Mutex::new(M::default())).collect(),
            capacity,
            len: AtomicUsize::new(0),
            seed: DEFAULT_SEED,
        })
    }

    /// The number of shards.
    pub fn count(&self) -> usize {
        self.maps.len()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// Items stored.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Items the capacity still admits (a hint: other writers may take them meanwhile).
    pub fn room(&self) -> usize {
        self.capacity
            .saturating_sub(self.len.load(Ordering::Relaxed))
    }

    pub fn lock(&self, s: usize) -> MutexGuard<'_, M> {
        // A shard's lock is never held across code that can panic (only std map operations on
        // plain-old-data keys), so a poisoned lock still guards a consistent map.
        self.maps[s].lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn shard_of<K: Key>(&self, key: K) -> usize {
        (hash_key(key.to_bits(), self.seed) as usize) & (self.maps.len() - 1)
    }

    /// Splits a batch by shard, in parallel over chunks of the batch.
    pub fn partition<K: Key>(&self, keys: &[K]) -> Partition {
        let shards = self.maps.len();
        let threads = rayon::current_num_threads().max(1);
        let chunk = keys
            .len()
            .div_ceil(4 * threads)
            .clamp(MIN_CHUNK, u32::MAX as usize);
        let lists = keys
            .par_chunks(chunk)
            .map(|ks| {
                let mut lists = vec![Vec::new(); shards];
                for (i, &k) in ks.iter().enumerate() {
                    lists[self.shard_of(k)].push(i as u32);
                }
                lists
            })
            .collect();
        Partition { chunk, lists }
    }

    /// Runs `f(map, n, indices)` on every shard that has keys in the batch: `n` of them, whose
    /// batch indices `indices` yields in batch order. Shards in parallel, each under its lock.
    /// One result per shard; `R::default()` for shards without keys.
    pub fn run_shards<R: Default + Send>(
        &self,
        part: &Partition,
        f: impl Fn(&mut M, usize, Indices<'_>) -> R + Sync,
    ) -> Vec<R> {
        (0..self.maps.len())
            .into_par_iter()
            .map(|s| {
                let n = part.count(s);
                if n == 0 {
                    return R::default();
                }
                f(&mut self.lock(s), n, part.indices(s))
            })
            .collect()
    }

    /// Runs `op(map, i)` on every key `i` of the batch (see [`Shards::run_shards`]): per
    /// shard, the results in the order of [`Partition::indices`], for [`Partition::scatter`].
    pub fn run<R: Send>(
        &self,
        part: &Partition,
        op: impl Fn(&mut M, usize) -> R + Sync,
    ) -> Vec<Vec<R>> {
        self.run_shards(part, |map, _, indices| {
            indices.map(|i| op(map, i)).collect()
        })
    }

    /// Every stored pair: `pairs` of every shard's map (in parallel), concatenated.
    pub fn retrieve<K: Send, V: Send>(
        &self,
        pairs: impl Fn(&M) -> (Vec<K>, Vec<V>) + Sync,
    ) -> (Vec<K>, Vec<V>) {
        let parts: Vec<(Vec<K>, Vec<V>)> = (0..self.maps.len())
            .into_par_iter()
            .map(|s| pairs(&self.lock(s)))
            .collect();
        let total = parts.iter().map(|(k, _)| k.len()).sum();
        let mut keys = Vec::with_capacity(total);
        let mut values = Vec::with_capacity(total);
        for (k, v) in parts {
            keys.extend(k);
            values.extend(v);
        }
        (keys, values)
    }

    /// Bytes held: the fixed parts (this struct, the shards' locks) and `map_bytes` of every
    /// shard's map.
    pub fn memory_bytes(&self, map_bytes: impl Fn(&M) -> usize + Sync) -> usize {
        let maps: usize = (0..self.maps.len())
            .into_par_iter()
            .map(|s| map_bytes(&self.lock(s)))
            .sum();
        std::mem::size_of::<Self>() + std::mem::size_of_val(&*self.maps) + maps
    }

    /// The `Debug` output of a table over these shards: its type and sizes.
    pub fn debug(
        &self,
        f: &mut std::fmt::Formatter<'_>,
        table: &str,
        key: &str,
        value: &str,
    ) -> std::fmt::Result {
        f.debug_struct(table)
            .field("key", &key)
            .field("value", &value)
            .field("capacity", &self.capacity)
            .field("len", &self.len())
            .field("shards", &self.maps.len())
            .finish()
    }

    /// `clear` on every shard's map, in parallel; no item stored afterwards.
    pub fn clear_with(&mut self, clear: impl Fn(&mut M) + Sync) {
        self.maps.par_iter_mut().for_each(|m| {
            clear(m.get_mut().unwrap_or_else(PoisonError::into_inner));
        });
        *self.len.get_mut() = 0;
    }

    /// Takes one unit of capacity for a new item; false when none is left.
    pub fn reserve_one(&self) -> bool {
        self.reserve(1) == 1
    }

    /// Takes up to `n` units of capacity at once (for `n` new items); returns how many it took:
    /// `n`, or what the capacity had left.
    pub fn reserve(&self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let mut stored = self.len.load(Ordering::Acquire);
        loop {
            let take = n.min(self.capacity.saturating_sub(stored));
            if take == 0 {
                return 0;
            }
            match self.len.compare_exchange_weak(
                stored,
                stored + take,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return take,
                Err(now) => stored = now,
            }
        }
    }

    /// Gives back the units of `n` removed items.
    pub fn release(&self, n: usize) {
        if n > 0 {
            self.len.fetch_sub(n, Ordering::AcqRel);
        }
    }
}
