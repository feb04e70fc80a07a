//! The CPU backend: [`CpuTable`] (the [`HashTable`] API and semantics on host threads) and
//! [`CpuMultiMap`] (the [`MultiMap`](crate::MultiMap) API).
//!
//! It is the fallback where no GPU is present, the reference the GPU schemes are compared with,
//! and the CPU peer in benchmarks.
//!
//! # Design
//!
//! A table is `S` shards (a power of two), each a `Mutex<HashMap<K, _>>` (a value per key for
//! [`CpuTable`], a `Vec` of values for [`CpuMultiMap`]). A key goes to shard
//! `hash_key(key.to_bits(), seed) & (S - 1)` ([`crate::hash::hash_key`], the kernels' hash; for
//! keys wider than 8 bytes `to_bits` is a digest of every byte, [`crate::key::digest`]). A
//! batch is partitioned by shard in parallel (rayon), keeping batch order within each shard, and
//! then every shard with work processes its part of the batch under its lock, shards in parallel.
//! Results are scattered back to the caller's per-key outputs in parallel.
//!
//! The capacity is a hard limit on the number of stored keys (pairs, for the multimap), as on
//! the GPU: a counter of stored items is shared by all shards. An insert batch takes it once
//! per shard, under the shard's lock, for exactly the new keys of the shard's part (the part is
//! inserted, its new keys counted, and one compare-exchange takes that many units; new keys past
//! what is granted leave the map again, unseen by other threads). A new key (pair) that finds no
//! unit left is not stored and gets [`status::TABLE_FULL`]; an update of a present key always
//! succeeds. (A unit per key, taken one by one, made every insert fight over one cache line:
//! on 2 threads CpuTable inserted 3× slower than that.)
//!
//! There are no sentinel keys on the CPU: every key value is stored the same way (and
//! [`status::SENTINEL_KEY`] is never reported).
//!
//! Besides the [`HashTable`] methods (which take `&mut self` for writes), inserts and erases are
//! also available on `&self` ([`CpuTable::insert_with_status_shared`],
//! [`CpuTable::insert_shared`], [`CpuTable::erase_shared`]), so that several threads can write
//! into one table at once; the table is then linearizable per key.

mod multimap;
mod shards;

pub use multimap::CpuMultiMap;

use crate::error::check_same_len;
use crate::key::{Key, Value};
use crate::status::{self, InsertStatus};
use crate::table::{Backend, HashTable, InsertMode, MixedOp, Reduce};
use crate::{Error, Result};
use rayon::prelude::*;
pub(crate) use shards::MapHashBuilder;
use shards::{map_bytes, ShardMap, Shards};
use std::collections::hash_map::Entry;

/// The seed of the hash that routes keys to shards (the library's one default seed).
pub use crate::hash::DEFAULT_SEED;

/// The most shards a table may have.
pub const MAX_SHARDS: usize = 1 << 16;

type Shard<K, V> = ShardMap<K, V>;

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
    shards: Shards<Shard<K, V>>,
}

impl<K: Key, V: Value> std::fmt::Debug for CpuTable<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.shards.debug(f, "CpuTable", K::NAME, V::NAME)
    }
}

impl<K: Key, V: Value> CpuTable<K, V> {
    /// An empty table that holds at most `capacity` keys, with a shard count suited to the
    /// rayon thread pool (4 per thread, a power of two, at most 1024, and not far above
    /// `capacity`). No memory is reserved up front: shards grow as keys arrive.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `capacity` is 0.
    pub fn new(capacity: usize) -> Result<Self> {
        Self::with_shards(capacity, Shards::<Shard<K, V>>::default_count(capacity))
    }

    /// An empty table of at most `capacity` keys in exactly `shards` shards.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `capacity` is 0 or `shards` is not a power of two in
    /// `1..=`[`MAX_SHARDS`].
    pub fn with_shards(capacity: usize, shards: usize) -> Result<Self> {
        Ok(CpuTable {
            shards: Shards::new(capacity, shards)?,
        })
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.shards.count()
    }

    /// Inserts (or updates) every pair through `&self`, so that other threads may insert, erase
    /// or look up in the same table at the same time. Otherwise the same as
    /// [`HashTable::insert_with_status`]: one status per key, and the number of keys that could
    /// not be placed (their status is [`status::TABLE_FULL`]) is returned.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `values` or `status` differ in length from `keys`.
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
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `values` or `status` differ in length from `keys`.
    pub fn insert_with_mode_shared(
        &self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<usize> {
        check_same_len("insert", keys.len(), values.len())?;
        check_same_len("insert status", keys.len(), status.len())?;
        mode.check_values::<V>("CpuTable")?;
        if keys.is_empty() {
            return Ok(0);
        }
        let part = self.shards.partition(keys);
        let results: Vec<Vec<u32>> = self.shards.run_shards(&part, |map, n, indices| {
            // Room for this part, but not beyond what the capacity can still admit.
            map.reserve(n.min(self.shards.room()));
            self.insert_part(map, keys, values, indices.collect(), mode)
        });
        let failed = results
            .par_iter()
            .map(|r| {
                r.iter()
                    .filter(|&&st| st & status::FAILURE_MASK != 0)
                    .count()
            })
            .sum();
        part.scatter(&results, status, |out, _, &st| *out = InsertStatus(st));
        Ok(failed)
    }

    /// Inserts (or updates) every pair through `&self` (see
    /// [`CpuTable::insert_with_status_shared`]).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `keys` and `values` differ in length; [`Error::TableFull`]
    /// if some keys could not be placed (all others are in the table).
    pub fn insert_shared(&self, keys: &[K], values: &[V]) -> Result<()> {
        let mut status = vec![InsertStatus::default(); keys.len()];
        let failed = self.insert_with_status_shared(keys, values, &mut status)?;
        if failed > 0 {
            return Err(Error::table_full(failed, keys.len(), self.capacity()));
        }
        Ok(())
    }

    /// Erases every key present through `&self` (other threads may use the table meanwhile);
    /// absent keys are ignored. Returns the number erased.
    ///
    /// # Errors
    ///
    /// None today; the `Result` keeps the signature of [`HashTable::erase`].
    pub fn erase_shared(&self, keys: &[K]) -> Result<usize> {
        if keys.is_empty() {
            return Ok(0);
        }
        let part = self.shards.partition(keys);
        let erased: Vec<usize> = self.shards.run_shards(&part, |map, _, indices| {
            indices.filter(|&i| self.erase_one(map, keys[i])).count()
        });
        Ok(erased.into_iter().sum())
    }

    /// Inserts one shard's part of a batch (`indices`, in batch order) into its locked map and
    /// returns the statuses in that order.
    ///
    /// The new keys take their capacity all at once: the part is inserted, the new keys are
    /// counted, and then one compare-exchange takes that many units (a unit per new key, as
    /// [`Shards::reserve_one`] would, but without an atomic per key, which threads fight over).
    /// Where fewer are left, the new keys past those granted (in batch order) are taken out
    /// again and reported [`status::TABLE_FULL`], with their later occurrences in the part: the
    /// outcome of inserting the part key by key at the moment of the exchange. The lock hides
    /// the keys taken out from every other thread, and nothing is reserved that is not used, so
    /// no other writer is refused for room this part holds.
    fn insert_part(
        &self,
        map: &mut Shard<K, V>,
        keys: &[K],
        values: &[V],
        indices: Vec<usize>,
        mode: InsertMode,
    ) -> Vec<u32> {
        let mut statuses = Vec::with_capacity(indices.len());
        let mut new = 0usize;
        for &i in &indices {
            statuses.push(match map.entry(keys[i]) {
                Entry::Occupied(e) => Self::insert_present(e, values[i], mode),
                Entry::Vacant(e) => {
                    e.insert(values[i]);
                    new += 1;
                    status::OK
                }
            });
        }
        let granted = self.shards.reserve(new);
        if granted < new {
            // The new keys past the first `granted` (their first occurrences, status OK) leave
            // again, and so do their later occurrences' updates.
            let mut refused = std::collections::HashSet::with_hasher(MapHashBuilder);
            let mut kept = 0usize;
            for (st, &i) in statuses.iter_mut().zip(&indices) {
                if *st == status::OK {
                    kept += 1;
                    if kept <= granted {
                        continue;
                    }
                    map.remove(&keys[i]);
                    refused.insert(keys[i]);
                    *st = status::TABLE_FULL;
                } else if refused.contains(&keys[i]) {
                    *st = status::TABLE_FULL;
                }
            }
        }
        statuses
    }

    /// An insert of a key already present: the value replaced (`Assign`), kept (`IfAbsent`) or
    /// reduced into (`Apply`); the status bits.
    fn insert_present(
        mut e: std::collections::hash_map::OccupiedEntry<'_, K, V>,
        value: V,
        mode: InsertMode,
    ) -> u32 {
        match mode {
            InsertMode::Assign => {
                e.insert(value);
                status::UPDATED
            }
            InsertMode::IfAbsent => status::PRESENT,
            InsertMode::Apply(op) => {
                let v = e.get().reduce(value, op);
                e.insert(v);
                status::UPDATED
            }
        }
    }

    /// Inserts one pair into its (locked) shard; returns its status bits.
    fn insert_one(&self, map: &mut Shard<K, V>, key: K, value: V, mode: InsertMode) -> u32 {
        match map.entry(key) {
            Entry::Occupied(e) => Self::insert_present(e, value, mode),
            Entry::Vacant(e) => {
                if self.shards.reserve_one() {
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
            self.shards.release(1);
        }
        erased
    }
}

/// Rows of a reduce by key that one thread folds into a map of its own before the shared
/// table sees them, where the keys repeat within so few rows ([`pre_reduce`]).
const PRE_REDUCE_CHUNK: usize = 1 << 16;
/// The sample that tells whether keys that do not repeat within a chunk repeat across the rows
/// (few groups in no order: a thread's share of the rows then folds into a map of them all).
const PRE_REDUCE_SAMPLE: usize = 1 << 20;

/// Reduce by key's first step on the CPU backend: rows folded by key on each thread first, so
/// that the shared table sees each thread's keys once, not once per row. Two shapes pay, told
/// by folding a sample:
/// - keys that repeat within [`PRE_REDUCE_CHUNK`] rows (at most half distinct: rows clustered on
///   their key) fold per chunk (small maps that stay in cache);
/// - keys that repeat across the rows but not within a chunk (a sample of
///   [`PRE_REDUCE_SAMPLE`] rows at most an eighth distinct: few groups in no order) fold per
///   thread's share of the rows (each map holds about every group).
///
/// Elsewhere (most keys distinct) the rows go as they are: folding would cost more than it
/// saves. `None` then. Measured on 16 cores (TPC-H SF 10, bench/NOTES.md): 60 M lineitems
/// grouped by order (a chunk's keys a quarter distinct) 1215 → 795 ms (session Z); by supplier
/// (100 k groups in no order: a chunk three quarters distinct) folding per chunk made it 687 →
/// 1691 ms, hence the bound; per thread's share (session AA) 711 → 221 ms.
fn pre_reduce<K: Key, V: Value>(keys: &[K], values: &[V], op: Reduce) -> Option<(Vec<K>, Vec<V>)> {
    let fold = |k: &[K], v: &[V]| -> Vec<(K, V)> {
        let mut m: ShardMap<K, V> = ShardMap::default();
        for (&k, &v) in k.iter().zip(v) {
            m.entry(k).and_modify(|e| *e = e.reduce(v, op)).or_insert(v);
        }
        m.into_iter().collect()
    };
    let distinct_in = |rows: usize| fold(&keys[..rows], &values[..rows]).len();
    let n = keys.len();
    let chunk = if n > PRE_REDUCE_CHUNK && distinct_in(PRE_REDUCE_CHUNK) * 2 <= PRE_REDUCE_CHUNK {
        PRE_REDUCE_CHUNK
    } else if n > PRE_REDUCE_SAMPLE && distinct_in(PRE_REDUCE_SAMPLE) * 8 <= PRE_REDUCE_SAMPLE {
        n.div_ceil(rayon::current_num_threads().max(1))
    } else {
        return None;
    };
    let parts: Vec<Vec<(K, V)>> = keys
        .par_chunks(chunk)
        .zip(values.par_chunks(chunk))
        .map(|(k, v)| fold(k, v))
        .collect();
    Some(parts.into_par_iter().flatten().unzip())
}

impl<K: Key, V: Value> HashTable<K, V> for CpuTable<K, V> {
    fn scheme(&self) -> &'static str {
        "cpu"
    }

    /// Reduce by key, the rows first folded on each thread where keys repeat (per chunk, or per
    /// thread's share: `pre_reduce`), then applied to the table. The table ends as with one
    /// apply per row (sums of floats may differ in their last bits: the order of the additions
    /// differs). A full table is an
    /// [`Error::TableFull`] counting the folded keys that found no room.
    fn insert_or_apply(&mut self, keys: &[K], values: &[V], op: Reduce) -> Result<()> {
        check_same_len("insert_or_apply", keys.len(), values.len())?;
        InsertMode::Apply(op).check_values::<V>("CpuTable")?;
        match pre_reduce(keys, values, op) {
            Some((k, v)) => crate::table::insert_all(self, &k, &v, InsertMode::Apply(op)),
            None => crate::table::insert_all(self, keys, values, InsertMode::Apply(op)),
        }
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
        let part = self.shards.partition(keys);
        let results = self.shards.run(&part, |map, i| map.get(&keys[i]).copied());
        let hits = results
            .par_iter()
            .map(|r| r.iter().filter(|v| v.is_some()).count())
            .sum();
        part.scatter_pair(&results, values, found, |v, f, _, r| {
            *f = r.is_some();
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
        let part = self.shards.partition(keys);
        let results = self.shards.run(&part, |map, i| map.contains_key(&keys[i]));
        let mut out = vec![false; keys.len()];
        part.scatter(&results, &mut out, |o, _, &r| *o = r);
        Ok(out)
    }

    fn erase(&mut self, keys: &[K]) -> Result<usize> {
        self.erase_shared(keys)
    }

    fn len(&self) -> Result<usize> {
        Ok(self.shards.len())
    }

    fn capacity(&self) -> usize {
        self.shards.capacity()
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
        let part = self.shards.partition(keys);
        let results = self.shards.run(&part, |map, i| match ops[i] {
            MixedOp::Insert => {
                Outcome::Inserted(self.insert_one(map, keys[i], values[i], InsertMode::Assign))
            }
            MixedOp::Find => Outcome::Found(map.get(&keys[i]).copied()),
            MixedOp::Erase => Outcome::Erased(self.erase_one(map, keys[i])),
        });
        let mut outcomes = vec![Outcome::Erased(false); keys.len()];
        part.scatter(&results, &mut outcomes, |o, _, r| *o = *r);
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
        self.shards.set_capacity(new_capacity);
        Ok(())
    }

    fn clear(&mut self) -> Result<()> {
        // Keeps the shards' allocations, as the GPU tables keep their slots.
        self.shards.clear_with(|m| m.clear());
        Ok(())
    }

    fn retrieve_all(&self) -> Result<(Vec<K>, Vec<V>)> {
        Ok(self
            .shards
            .retrieve(|m| m.iter().map(|(k, v)| (*k, *v)).unzip()))
    }

    /// An estimate: the shards' maps at their allocated size (std's SwissTable layout) plus the
    /// table's own fixed parts. Allocator overhead is not counted.
    fn memory_bytes(&self) -> usize {
        self.shards
            .memory_bytes(|m| map_bytes::<K, V>(m.capacity()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::fmix64;
    use std::sync::atomic::{AtomicUsize, Ordering};

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

    #[test]
    fn reduce_by_key_folds_chunks_first_with_the_same_answer() {
        // Over 1000 keys (folded per chunk first), 100 k keys in 2.1 M rows (not within a
        // chunk but across the rows: folded per thread's share), all distinct (not folded).
        for (distinct, n) in [
            (1000u64, 300_000usize),
            (100_000, 2_100_000),
            (300_000, 300_000),
        ] {
            let keys: Vec<u64> = (0..n as u64).map(|i| fmix64(i) % distinct).collect();
            let values: Vec<i64> = (0..n as i64).map(|i| i % 1001 - 500).collect();
            assert_eq!(
                pre_reduce(&keys, &values, Reduce::Sum).is_some(),
                distinct < 300_000,
                "{distinct}: folded first?"
            );
            for op in [Reduce::Sum, Reduce::Min, Reduce::Max] {
                let mut want: std::collections::HashMap<u64, i64> = Default::default();
                for (&k, &v) in keys.iter().zip(&values) {
                    want.entry(k)
                        .and_modify(|e| *e = e.reduce(v, op))
                        .or_insert(v);
                }
                let mut t = CpuTable::<u64, i64>::new(2 * distinct as usize).unwrap();
                t.insert_or_apply(&keys, &values, op).unwrap();
                // Into a table that holds some groups already.
                t.insert_or_apply(&keys[..1000], &values[..1000], op)
                    .unwrap();
                for (&k, &v) in keys[..1000].iter().zip(&values[..1000]) {
                    let e = want.get_mut(&k).unwrap();
                    *e = e.reduce(v, op);
                }
                let (k, v) = t.retrieve_all().unwrap();
                assert_eq!(k.len(), want.len(), "{distinct} {op:?}");
                for (k, v) in k.iter().zip(&v) {
                    assert_eq!(want.get(k), Some(v), "{distinct} {op:?}: key {k}");
                }
            }
        }
        // Refusals come before any work.
        let mut t = CpuTable::<u64, i64>::new(8).unwrap();
        assert!(matches!(
            t.insert_or_apply(&[1, 2], &[1], Reduce::Sum),
            Err(Error::InvalidInput(_))
        ));
    }
}
