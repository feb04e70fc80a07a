//! The CPU backend: [`CpuTable`], the [`HashTable`] API and semantics on host threads.
//!
//! It is the fallback where no GPU is present, the reference the GPU schemes are compared with,
//! and the CPU peer in benchmarks.
//!
//! # Design
//!
//! The table is `S` shards (a power of two), each a `Mutex<HashMap<K, V>>`. A key goes to shard
//! `hash_key(key.to_bits(), seed) & (S - 1)` ([`crate::hash::hash_key`], the kernels' hash; for
//! keys wider than 8 bytes `to_bits` is a digest of every byte, [`crate::key::digest`]). A
//! batch is partitioned by shard in parallel (rayon), keeping batch order within each shard, and
//! then every shard with work processes its part of the batch under its lock, shards in parallel.
//! Results are scattered back to the caller's per-key outputs in parallel.
//!
//! The capacity is a hard limit on the number of stored keys, as on the GPU: a counter of stored
//! keys is shared by all shards, and a new key reserves one unit with a compare-exchange loop
//! before it is added. A new key that finds no unit left is not stored and gets
//! [`status::TABLE_FULL`]; an update of a present key always succeeds.
//!
//! There are no sentinel keys on the CPU: every key value is stored the same way (and
//! [`status::SENTINEL_KEY`] is never reported).
//!
//! Besides the [`HashTable`] methods (which take `&mut self` for writes), inserts and erases are
//! also available on `&self` ([`CpuTable::insert_with_status_shared`],
//! [`CpuTable::insert_shared`], [`CpuTable::erase_shared`]), so that several threads can write
//! into one table at once; the table is then linearizable per key.

use crate::error::check_same_len;
use crate::hash::{fmix64, hash_key};
use crate::key::{Key, Value};
use crate::status::{self, InsertStatus};
use crate::table::{Backend, HashTable, InsertMode, MixedOp};
use crate::{Error, Result};
use rayon::prelude::*;
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The seed of the hash that routes keys to shards.
pub const DEFAULT_SEED: u64 = 0x9e37_79b9_7f4a_7c15;
/// The most shards a table may have.
pub const MAX_SHARDS: usize = 1 << 16;
/// The seed of the shards' own hash maps; differs from the routing seed so that the keys of one
/// shard (which share their low routing bits) spread over the whole map.
const MAP_SEED: u64 = 0x2545_f491_4f6c_dd1d;
/// The fewest keys a partition chunk holds (smaller batches are one chunk).
const MIN_CHUNK: usize = 4096;

/// The hasher of the shards' maps: the kernels' `fmix64` finaliser over the key's bytes, 8 at a
/// time (keys are plain old data, so a keyed cryptographic hash buys nothing here and costs
/// time).
#[derive(Clone, Copy, Debug)]
struct MapHashBuilder;

impl BuildHasher for MapHashBuilder {
    type Hasher = MapHasher;
    fn build_hasher(&self) -> MapHasher {
        MapHasher(MAP_SEED)
    }
}

/// See [`MapHashBuilder`].
struct MapHasher(u64);

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

type Shard<K, V> = HashMap<K, V, MapHashBuilder>;

/// A batch split by shard: `lists[c][s]` holds the offsets (relative to the start of chunk `c`,
/// which is `c * chunk`) of the keys of chunk `c` that belong to shard `s`, in batch order.
struct Partition {
    chunk: usize,
    lists: Vec<Vec<Vec<u32>>>,
}

impl Partition {
    /// How many keys of the batch belong to shard `s`.
    fn count(&self, s: usize) -> usize {
        self.lists.iter().map(|l| l[s].len()).sum()
    }

    /// The batch indices of shard `s`'s keys, in batch order.
    fn indices(&self, s: usize) -> impl Iterator<Item = usize> + '_ {
        let chunk = self.chunk;
        self.lists
            .iter()
            .enumerate()
            .flat_map(move |(c, l)| l[s].iter().map(move |&i| c * chunk + i as usize))
    }

    /// Writes `results[s][j]` (the result of shard `s`'s `j`-th key, in the order of
    /// [`Partition::indices`]) into `out` at that key's batch index, in parallel over chunks.
    fn scatter<R: Sync, O: Send>(
        &self,
        results: &[Vec<R>],
        out: &mut [O],
        put: impl Fn(&mut O, &R) + Sync,
    ) {
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
        out.par_chunks_mut(self.chunk)
            .zip(self.lists.par_iter())
            .zip(starts.par_iter())
            .for_each(|((out, lists), starts)| {
                for ((list, res), &start) in lists.iter().zip(results).zip(starts) {
                    for (&i, r) in list.iter().zip(&res[start..]) {
                        put(&mut out[i as usize], r);
                    }
                }
            });
    }
}

/// A hash table on host threads, with the same API and semantics as the GPU tables.
///
/// Fixed capacity: at most `capacity` keys are stored; a new key beyond that is reported (status
/// [`status::TABLE_FULL`], [`Error::TableFull`] from [`HashTable::insert`]) and not stored.
/// Every key value is insertable. Batches run in parallel on the rayon thread pool. When one batch
/// holds a key several times, the **last** occurrence's value is kept, and the first occurrence's
/// status says whether the key was new (later occurrences are updates). See the
/// [module docs](self) for the design.
///
/// ```
/// use warpmap::{CpuTable, HashTable};
/// # fn main() -> warpmap::Result<()> {
/// let mut table = CpuTable::<u64, u32>::new(1000)?;
/// table.insert(&[1, 2, u64::MAX], &[10, 20, 30])?; // u64::MAX is a key like any other
/// assert_eq!(table.find(&[2, 3, u64::MAX])?, vec![Some(20), None, Some(30)]);
/// assert_eq!(table.erase(&[1, 3])?, 1);
/// assert_eq!(table.len()?, 2);
///
/// // Beyond the capacity, new keys are refused (and reported), never lost silently.
/// let mut small = CpuTable::<u32, u32>::new(2)?;
/// assert!(matches!(
///     small.insert(&[1, 2, 3], &[0, 0, 0]),
///     Err(warpmap::Error::TableFull { failed: 1, .. })
/// ));
/// assert_eq!(small.len()?, 2);
///
/// // Writes through `&self` let several threads fill one table at once.
/// let shared = CpuTable::<u32, u32>::new(1 << 12)?;
/// std::thread::scope(|s| {
///     for t in 0..4u32 {
///         let shared = &shared;
///         s.spawn(move || {
///             let keys: Vec<u32> = (0..1000).map(|i| t * 1000 + i).collect();
///             shared.insert_shared(&keys, &keys).unwrap();
///         });
///     }
/// });
/// assert_eq!(shared.len()?, 4000);
/// # Ok(()) }
/// ```
pub struct CpuTable<K: Key, V: Value> {
    shards: Box<[Mutex<Shard<K, V>>]>,
    capacity: usize,
    /// Keys stored (reserved before a new key is added, released after one is removed).
    len: AtomicUsize,
    seed: u64,
}

impl<K: Key, V: Value> std::fmt::Debug for CpuTable<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuTable")
            .field("key", &K::NAME)
            .field("value", &V::NAME)
            .field("capacity", &self.capacity)
            .field("len", &self.len.load(Ordering::Relaxed))
            .field("shards", &self.shards.len())
            .finish()
    }
}

impl<K: Key, V: Value> CpuTable<K, V> {
    /// An empty table that holds at most `capacity` keys, with a shard count suited to the
    /// rayon thread pool (4 per thread, a power of two, at most 1024, and not far above
    /// `capacity`). No memory is reserved up front: shards grow as keys arrive.
    ///
    /// [`Error::InvalidInput`] if `capacity` is 0.
    pub fn new(capacity: usize) -> Result<Self> {
        let threads = rayon::current_num_threads().max(1);
        let shards = (4 * threads).next_power_of_two().min(1024);
        let shards = if capacity < shards {
            capacity.max(1).next_power_of_two()
        } else {
            shards
        };
        Self::with_shards(capacity, shards)
    }

    /// An empty table of at most `capacity` keys in exactly `shards` shards.
    ///
    /// [`Error::InvalidInput`] if `capacity` is 0 or `shards` is not a power of two in
    /// `1..=`[`MAX_SHARDS`].
    pub fn with_shards(capacity: usize, shards: usize) -> Result<Self> {
        if capacity == 0 {
            return Err(Error::invalid("capacity must be at least 1"));
        }
        if !shards.is_power_of_two() || shards > MAX_SHARDS {
            return Err(Error::invalid(format!(
                "shard count {shards} must be a power of two between 1 and {MAX_SHARDS}"
            )));
        }
        let shards = (0..shards)
            .map(|_| Mutex::new(HashMap::with_hasher(MapHashBuilder)))
            .collect();
        Ok(CpuTable {
            shards,
            capacity,
            len: AtomicUsize::new(0),
            seed: DEFAULT_SEED,
        })
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// Inserts (or updates) every pair through `&self`, so that other threads may insert, erase
    /// or look up in the same table at the same time. Otherwise the same as
    /// [`HashTable::insert_with_status`]: one status per key, and the number of keys that could
    /// not be placed (their status is [`status::TABLE_FULL`]) is returned.
    pub fn insert_with_status_shared(
        &self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
    ) -> Result<usize> {
        self.insert_with_mode_shared(keys, values, status, InsertMode::Assign)
    }

    /// [`HashTable::insert_with_mode`] on a shared table (see
    /// [`insert_with_status_shared`](Self::insert_with_status_shared)).
    pub fn insert_with_mode_shared(
        &self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<usize> {
        check_same_len("insert", keys.len(), values.len())?;
        check_same_len("insert status", keys.len(), status.len())?;
        if keys.is_empty() {
            return Ok(0);
        }
        let part = self.partition(keys);
        let results: Vec<Vec<u32>> = (0..self.shards.len())
            .into_par_iter()
            .map(|s| {
                let n = part.count(s);
                if n == 0 {
                    return Vec::new();
                }
                let mut map = self.lock(s);
                // Room for this part, but not beyond what the capacity can still admit.
                let room = self
                    .capacity
                    .saturating_sub(self.len.load(Ordering::Relaxed));
                map.reserve(n.min(room));
                part.indices(s)
                    .map(|i| self.insert_one(&mut map, keys[i], values[i], mode))
                    .collect()
            })
            .collect();
        let failed = results
            .par_iter()
            .map(|r| {
                r.iter()
                    .filter(|&&st| st & status::FAILURE_MASK != 0)
                    .count()
            })
            .sum();
        part.scatter(&results, status, |out, &st| *out = InsertStatus(st));
        Ok(failed)
    }

    /// Inserts (or updates) every pair through `&self` (see
    /// [`CpuTable::insert_with_status_shared`]). [`Error::TableFull`] if some keys could not be
    /// placed; all others are in the table.
    pub fn insert_shared(&self, keys: &[K], values: &[V]) -> Result<()> {
        let mut status = vec![InsertStatus::default(); keys.len()];
        let failed = self.insert_with_status_shared(keys, values, &mut status)?;
        if failed > 0 {
            return Err(Error::table_full(failed, keys.len(), self.capacity));
        }
        Ok(())
    }

    /// Erases every key present through `&self` (other threads may use the table meanwhile);
    /// absent keys are ignored. Returns the number erased.
    pub fn erase_shared(&self, keys: &[K]) -> Result<usize> {
        if keys.is_empty() {
            return Ok(0);
        }
        let part = self.partition(keys);
        let erased = (0..self.shards.len())
            .into_par_iter()
            .map(|s| {
                if part.count(s) == 0 {
                    return 0;
                }
                let mut map = self.lock(s);
                part.indices(s)
                    .filter(|&i| self.erase_one(&mut map, keys[i]))
                    .count()
            })
            .sum();
        Ok(erased)
    }

    fn shard_of(&self, key: K) -> usize {
        (hash_key(key.to_bits(), self.seed) as usize) & (self.shards.len() - 1)
    }

    fn lock(&self, s: usize) -> MutexGuard<'_, Shard<K, V>> {
        // A shard's lock is never held across code that can panic (only std map operations on
        // plain-old-data keys), so a poisoned lock still guards a consistent map.
        self.shards[s]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Splits a batch by shard, in parallel over chunks of the batch.
    fn partition(&self, keys: &[K]) -> Partition {
        let shards = self.shards.len();
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

    /// Takes one unit of capacity for a new key; false when none is left.
    fn reserve_one(&self) -> bool {
        let mut stored = self.len.load(Ordering::Acquire);
        loop {
            if stored >= self.capacity {
                return false;
            }
            match self.len.compare_exchange_weak(
                stored,
                stored + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => stored = now,
            }
        }
    }

    /// Inserts one pair into its (locked) shard; returns its status bits.
    fn insert_one(&self, map: &mut Shard<K, V>, key: K, value: V, mode: InsertMode) -> u32 {
        match map.entry(key) {
            Entry::Occupied(mut e) => match mode {
                InsertMode::Assign => {
                    e.insert(value);
                    status::UPDATED
                }
                InsertMode::IfAbsent => status::PRESENT,
            },
            Entry::Vacant(e) => {
                if self.reserve_one() {
                    e.insert(value);
                    status::OK
                } else {
                    status::TABLE_FULL
                }
            }
        }
    }

    /// Erases one key from its (locked) shard; whether it was there.
    fn erase_one(&self, map: &mut Shard<K, V>, key: K) -> bool {
        let erased = map.remove(&key).is_some();
        if erased {
            self.len.fetch_sub(1, Ordering::AcqRel);
        }
        erased
    }

    /// Looks up a batch: per shard, the value of each of its keys (in partition order).
    fn lookup(&self, part: &Partition, keys: &[K]) -> Vec<Vec<Option<V>>> {
        (0..self.shards.len())
            .into_par_iter()
            .map(|s| {
                if part.count(s) == 0 {
                    return Vec::new();
                }
                let map = self.lock(s);
                part.indices(s)
                    .map(|i| map.get(&keys[i]).copied())
                    .collect()
            })
            .collect()
    }
}

/// Bytes that std's `HashMap` (a SwissTable) allocates for `items` of capacity: one
/// `(K, V)` bucket and one control byte per bucket, plus one group of trailing control bytes.
fn map_bytes<K, V>(items: usize) -> usize {
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
    buckets * (std::mem::size_of::<(K, V)>() + 1) + 16
}

impl<K: Key, V: Value> HashTable<K, V> for CpuTable<K, V> {
    fn scheme(&self) -> &'static str {
        "cpu"
    }

    fn backend(&self) -> Backend {
        Backend::Cpu
    }

    fn insert_with_mode(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<usize> {
        self.insert_with_mode_shared(keys, values, status, mode)
    }

    fn find_into(&self, keys: &[K], values: &mut [V], found: &mut [bool]) -> Result<usize> {
        check_same_len("find", keys.len(), values.len())?;
        check_same_len("find", keys.len(), found.len())?;
        if keys.is_empty() {
            return Ok(0);
        }
        let part = self.partition(keys);
        let results = self.lookup(&part, keys);
        let hits = results
            .par_iter()
            .map(|r| r.iter().filter(|v| v.is_some()).count())
            .sum();
        part.scatter(&results, found, |f, r| *f = r.is_some());
        part.scatter(&results, values, |v, r| {
            if let Some(x) = r {
                *v = *x;
            }
        });
        Ok(hits)
    }

    fn contains(&self, keys: &[K]) -> Result<Vec<bool>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let part = self.partition(keys);
        let results: Vec<Vec<bool>> = (0..self.shards.len())
            .into_par_iter()
            .map(|s| {
                if part.count(s) == 0 {
                    return Vec::new();
                }
                let map = self.lock(s);
                part.indices(s)
                    .map(|i| map.contains_key(&keys[i]))
                    .collect()
            })
            .collect();
        let mut out = vec![false; keys.len()];
        part.scatter(&results, &mut out, |o, &r| *o = r);
        Ok(out)
    }

    fn erase(&mut self, keys: &[K]) -> Result<usize> {
        self.erase_shared(keys)
    }

    fn len(&self) -> Result<usize> {
        Ok(self.len.load(Ordering::Acquire))
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    /// Per shard, in batch order: a find or an erase sees the operations on its key before it
    /// in the batch.
    fn mixed_batch(
        &mut self,
        ops: &[MixedOp],
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        out: &mut [V],
        found: &mut [bool],
    ) -> Result<usize> {
        crate::table::check_mixed_lens(
            keys.len(),
            ops.len(),
            values.len(),
            status.len(),
            out.len(),
            found.len(),
        )?;
        if keys.is_empty() {
            return Ok(0);
        }
        /// What one operation of the batch did.
        #[derive(Clone, Copy)]
        enum Outcome<V> {
            Inserted(u32),
            Found(Option<V>),
            Erased(bool),
        }
        let part = self.partition(keys);
        let results: Vec<Vec<Outcome<V>>> = (0..self.shards.len())
            .into_par_iter()
            .map(|s| {
                if part.count(s) == 0 {
                    return Vec::new();
                }
                let mut map = self.lock(s);
                part.indices(s)
                    .map(|i| match ops[i] {
                        MixedOp::Insert => Outcome::Inserted(self.insert_one(
                            &mut map,
                            keys[i],
                            values[i],
                            InsertMode::Assign,
                        )),
                        MixedOp::Find => Outcome::Found(map.get(&keys[i]).copied()),
                        MixedOp::Erase => Outcome::Erased(self.erase_one(&mut map, keys[i])),
                    })
                    .collect()
            })
            .collect();
        let mut outcomes = vec![Outcome::Erased(false); keys.len()];
        part.scatter(&results, &mut outcomes, |o, r| *o = *r);
        let mut failed = 0;
        for (i, o) in outcomes.into_iter().enumerate() {
            match o {
                Outcome::Inserted(st) => {
                    status[i] = InsertStatus(st);
                    failed += usize::from(st & status::FAILURE_MASK != 0);
                }
                Outcome::Found(v) => {
                    found[i] = v.is_some();
                    if let Some(v) = v {
                        out[i] = v;
                    }
                }
                Outcome::Erased(e) => found[i] = e,
            }
        }
        Ok(failed)
    }

    /// The CPU table reserves nothing per slot, so a rehash only moves the limit.
    fn rehash(&mut self, new_capacity: usize) -> Result<()> {
        crate::table::check_rehash_capacity(new_capacity, self.len()?)?;
        self.capacity = new_capacity;
        Ok(())
    }

    fn clear(&mut self) -> Result<()> {
        // Keeps the shards' allocations, as the GPU tables keep their slots.
        self.shards.par_iter_mut().for_each(|m| {
            m.get_mut().unwrap_or_else(PoisonError::into_inner).clear();
        });
        *self.len.get_mut() = 0;
        Ok(())
    }

    fn retrieve_all(&self) -> Result<(Vec<K>, Vec<V>)> {
        let parts: Vec<(Vec<K>, Vec<V>)> = (0..self.shards.len())
            .into_par_iter()
            .map(|s| self.lock(s).iter().map(|(k, v)| (*k, *v)).unzip())
            .collect();
        let total = parts.iter().map(|(k, _)| k.len()).sum();
        let mut keys = Vec::with_capacity(total);
        let mut values = Vec::with_capacity(total);
        for (k, v) in parts {
            keys.extend(k);
            values.extend(v);
        }
        Ok((keys, values))
    }

    /// An estimate: the shards' maps at their allocated size (std's SwissTable layout) plus the
    /// table's own fixed parts. Allocator overhead is not counted.
    fn memory_bytes(&self) -> usize {
        let maps: usize = (0..self.shards.len())
            .map(|s| map_bytes::<K, V>(self.lock(s).capacity()))
            .sum();
        std::mem::size_of::<Self>() + std::mem::size_of_val(&*self.shards) + maps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_basic_operations() {
        let mut t = CpuTable::<u32, u64>::new(100).unwrap();
        assert_eq!(t.scheme(), "cpu");
        assert_eq!(t.backend(), Backend::Cpu);
        assert!(t.is_empty().unwrap());
        let keys = [1, 2, 3, u32::MAX, u32::MAX - 1];
        let mut st = vec![InsertStatus::default(); 5];
        assert_eq!(
            t.insert_with_status(&keys, &[10, 20, 30, 40, 50], &mut st)
                .unwrap(),
            0
        );
        assert!(st.iter().all(|s| s.is_ok() && !s.was_update()));
        assert_eq!(t.len().unwrap(), 5);
        t.insert_with_status(&[2, 7], &[21, 70], &mut st[..2])
            .unwrap();
        assert!(st[0].was_update() && !st[1].was_update());
        assert_eq!(
            t.find(&[2, 4, u32::MAX, 7]).unwrap(),
            vec![Some(21), None, Some(40), Some(70)]
        );
        assert_eq!(t.contains(&[1, 5]).unwrap(), vec![true, false]);
        assert_eq!(t.erase(&[1, 1, 5]).unwrap(), 1);
        assert_eq!(t.len().unwrap(), 5);
        let (mut k, _) = t.retrieve_all().unwrap();
        k.sort();
        assert_eq!(k, vec![2, 3, 7, u32::MAX - 1, u32::MAX]);
        assert!(t.memory_bytes() > 0);
        t.clear().unwrap();
        assert_eq!(t.len().unwrap(), 0);
        assert_eq!(t.find(&[2]).unwrap(), vec![None]);
        assert_eq!(t.capacity(), 100);
    }

    #[test]
    fn cpu_bad_input() {
        assert!(matches!(
            CpuTable::<u32, u32>::new(0),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            CpuTable::<u32, u32>::with_shards(8, 3),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            CpuTable::<u32, u32>::with_shards(8, 0),
            Err(Error::InvalidInput(_))
        ));
        let mut t = CpuTable::<u32, u32>::new(8).unwrap();
        assert!(matches!(
            t.insert(&[1, 2], &[1]),
            Err(Error::InvalidInput(_))
        ));
        let mut st = vec![InsertStatus::default(); 1];
        assert!(matches!(
            t.insert_with_status(&[1, 2], &[1, 2], &mut st),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            t.find_into(&[1], &mut [], &mut [false]),
            Err(Error::InvalidInput(_))
        ));
        assert_eq!(t.len().unwrap(), 0);
        // A huge capacity reserves nothing up front.
        let big = CpuTable::<u64, u64>::new(usize::MAX).unwrap();
        assert_eq!(big.capacity(), usize::MAX);
    }

    #[test]
    fn cpu_capacity_is_exact_and_duplicates_keep_the_last_value() {
        for shards in [1, 2, 64] {
            let mut t = CpuTable::<u64, u32>::with_shards(1000, shards).unwrap();
            let keys: Vec<u64> = (0..30_000).map(|i| fmix64(i / 3)).collect();
            let values: Vec<u32> = (0..30_000).collect();
            let mut st = vec![InsertStatus::default(); keys.len()];
            let failed = t.insert_with_status(&keys, &values, &mut st).unwrap();
            assert_eq!(t.len().unwrap(), 1000);
            assert_eq!(failed, 3 * (10_000 - 1000));
            let found = t.find(&keys).unwrap();
            for (i, s) in st.iter().enumerate() {
                if s.is_ok() {
                    // Three occurrences in a row: new, then two updates; the last value is kept.
                    assert_eq!(s.was_update(), i % 3 != 0);
                    assert_eq!(found[i], Some((i - i % 3 + 2) as u32));
                } else {
                    assert_eq!(s.0, status::TABLE_FULL);
                    assert_eq!(found[i], None);
                }
            }
        }
    }

    #[test]
    fn cpu_shared_writers_respect_the_capacity() {
        let t = CpuTable::<u32, u32>::new(5000).unwrap();
        let (placed, failed, erased) = (
            AtomicUsize::new(0),
            AtomicUsize::new(0),
            AtomicUsize::new(0),
        );
        std::thread::scope(|s| {
            for w in 0..4u32 {
                let (t, placed, failed, erased) = (&t, &placed, &failed, &erased);
                s.spawn(move || {
                    for round in 0..4u32 {
                        let keys: Vec<u32> =
                            (0..1000).map(|i| (w << 20) | (round << 12) | i).collect();
                        let mut st = vec![InsertStatus::default(); keys.len()];
                        let f = t.insert_with_status_shared(&keys, &keys, &mut st).unwrap();
                        assert!(st
                            .iter()
                            .all(|s| s.0 == status::OK || s.0 == status::TABLE_FULL));
                        failed.fetch_add(f, Ordering::Relaxed);
                        placed.fetch_add(keys.len() - f, Ordering::Relaxed);
                        // Erase a quarter of the keys just placed.
                        let mine: Vec<u32> = keys
                            .iter()
                            .zip(&st)
                            .filter(|(_, s)| s.is_ok())
                            .map(|(k, _)| *k)
                            .step_by(4)
                            .collect();
                        assert_eq!(t.erase_shared(&mine).unwrap(), mine.len());
                        erased.fetch_add(mine.len(), Ordering::Relaxed);
                    }
                });
            }
        });
        let (keys, values) = t.retrieve_all().unwrap();
        assert_eq!(keys, values);
        let n = t.len().unwrap();
        assert_eq!(keys.len(), n);
        assert_eq!(
            n,
            placed.load(Ordering::Relaxed) - erased.load(Ordering::Relaxed)
        );
        assert!(n <= 5000);
        // 16000 distinct keys, at most 4000 erased: the table filled up and refused keys.
        assert!(failed.load(Ordering::Relaxed) > 0);
        assert_eq!(
            placed.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed),
            16_000
        );
    }

    #[test]
    fn cpu_memory_estimate_grows() {
        let mut t = CpuTable::<u64, u64>::with_shards(1 << 16, 4).unwrap();
        let empty = t.memory_bytes();
        let keys: Vec<u64> = (0..1 << 15).collect();
        t.insert(&keys, &keys).unwrap();
        let full = t.memory_bytes();
        assert!(full >= empty + (1 << 15) * 16, "{empty} -> {full}");
        assert!(full <= empty + (1 << 15) * 17 * 3, "{empty} -> {full}");
    }
}
