//! [`CpuMultiMap`]: the [`MultiMap`] API on host threads, on the CPU backend's sharded core.

use super::shards::{map_bytes, ShardMap, Shards};
use crate::error::check_same_len;
use crate::key::{Key, Value};
use crate::status::{self, InsertStatus};
use crate::table::{Backend, MultiMap};
use crate::Result;
use rayon::prelude::*;

type Shard<K, V> = ShardMap<K, Vec<V>>;

/// A multimap on host threads: several values per key, with the [`MultiMap`] API and
/// semantics.
///
/// The same sharded design as [`CpuTable`](crate::CpuTable) (see the
/// [module docs](super)), each shard a map from a key to its values in insertion order.
/// Fixed capacity: at most `capacity` **pairs** are stored; a pair beyond that is reported
/// (status [`status::TABLE_FULL`], [`Error::TableFull`](crate::Error::TableFull) from
/// [`MultiMap::insert`]) and not stored. Every key value is insertable. Batches run in parallel
/// on the rayon thread pool; [`find_all`](MultiMap::find_all) returns each key's values in the
/// order they were inserted (batch order within a batch).
///
/// ```
/// use warpmap::{CpuMultiMap, MultiMap};
/// # fn main() -> warpmap::Result<()> {
/// // A join: the orders (customer, order id) grouped by customer.
/// let mut orders = CpuMultiMap::<u32, u64>::new(1000)?;
/// orders.insert(&[7, 3, 7, 7, u32::MAX], &[100, 101, 102, 103, 104])?;
/// let (offsets, ids) = orders.find_all(&[7, 5, u32::MAX])?;
/// assert_eq!(&ids[offsets[0]..offsets[1]], &[100, 102, 103]); // insertion order on the CPU
/// assert_eq!(offsets[1], offsets[2]); // customer 5: none
/// assert_eq!(&ids[offsets[2]..offsets[3]], &[104]);
/// assert_eq!(orders.erase_all(&[7])?, 3);
/// assert_eq!(orders.len()?, 2);
/// # Ok(()) }
/// ```
pub struct CpuMultiMap<K: Key, V: Value> {
    shards: Shards<Shard<K, V>>,
}

impl<K: Key, V: Value> std::fmt::Debug for CpuMultiMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.shards.debug(f, "CpuMultiMap", K::NAME, V::NAME)
    }
}

impl<K: Key, V: Value> CpuMultiMap<K, V> {
    /// An empty multimap that holds at most `capacity` pairs, with a shard count suited to the
    /// rayon thread pool (as [`CpuTable::new`](crate::CpuTable::new)). No memory is reserved up
    /// front.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) if `capacity` is 0.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// let map = CpuMultiMap::<u64, u32>::new(1 << 20)?;
    /// assert_eq!(map.capacity(), 1 << 20);
    /// assert!(CpuMultiMap::<u64, u32>::new(0).is_err());
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    pub fn new(capacity: usize) -> Result<Self> {
        Self::with_shards(capacity, Shards::<Shard<K, V>>::default_count(capacity))
    }

    /// An empty multimap of at most `capacity` pairs in exactly `shards` shards.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) if `capacity` is 0 or `shards` is
    /// not a power of two in `1..=`[`MAX_SHARDS`](super::MAX_SHARDS).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::CpuMultiMap;
    /// assert_eq!(CpuMultiMap::<u32, u32>::with_shards(100, 4)?.shards(), 4);
    /// assert!(CpuMultiMap::<u32, u32>::with_shards(100, 3).is_err());
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    pub fn with_shards(capacity: usize, shards: usize) -> Result<Self> {
        Ok(CpuMultiMap {
            shards: Shards::new(capacity, shards)?,
        })
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.shards.count()
    }
}

impl<K: Key, V: Value> MultiMap<K, V> for CpuMultiMap<K, V> {
    fn scheme(&self) -> &'static str {
        "cpu"
    }

    fn backend(&self) -> Backend {
        Backend::Cpu
    }

    fn insert_with_status(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
    ) -> Result<usize> {
        check_same_len("multimap insert", keys.len(), values.len())?;
        check_same_len("multimap insert status", keys.len(), status.len())?;
        if keys.is_empty() {
            return Ok(0);
        }
        let part = self.shards.partition(keys);
        // Every pair takes a unit of capacity: a shard takes its part's at once (one atomic
        // per shard, not per pair), and the pairs past what it was granted, in batch order,
        // are refused: the outcome of taking them one by one at that moment.
        let results: Vec<Vec<u32>> = self.shards.run_shards(&part, |map, n, indices| {
            let granted = self.shards.reserve(n);
            indices
                .enumerate()
                .map(|(j, i)| {
                    if j < granted {
                        map.entry(keys[i]).or_default().push(values[i]);
                        status::OK
                    } else {
                        status::TABLE_FULL
                    }
                })
                .collect()
        });
        let failed = results
            .par_iter()
            .map(|r| r.iter().filter(|&&st| st != status::OK).count())
            .sum();
        part.scatter(&results, status, |out, _, &st| *out = InsertStatus(st));
        Ok(failed)
    }

    fn count_into(&self, keys: &[K], counts: &mut [usize]) -> Result<usize> {
        check_same_len("multimap count", keys.len(), counts.len())?;
        if keys.is_empty() {
            return Ok(0);
        }
        let part = self.shards.partition(keys);
        let results = self
            .shards
            .run(&part, |map, i| map.get(&keys[i]).map_or(0, Vec::len));
        part.scatter(&results, counts, |c, _, &n| *c = n);
        Ok(results.iter().flatten().sum())
    }

    /// Two passes: each shard gathers the values of its keys into one buffer (under its lock,
    /// shards in parallel), then the buffers' slices are laid out in batch order.
    fn find_all(&self, keys: &[K]) -> Result<(Vec<usize>, Vec<V>)> {
        let part = self.shards.partition(keys);
        /// One shard's part: each of its keys' range in the values, and the values.
        type Gathered<V> = (Vec<(usize, usize)>, Vec<V>);
        let gathered: Vec<Gathered<V>> = self.shards.run_shards(&part, |map, n, indices| {
            let mut ranges = Vec::with_capacity(n);
            let mut values = Vec::new();
            for i in indices {
                let start = values.len();
                if let Some(vs) = map.get(&keys[i]) {
                    values.extend_from_slice(vs);
                }
                ranges.push((start, values.len()));
            }
            (ranges, values)
        });
        let (ranges, buffers): (Vec<_>, Vec<_>) = gathered.into_iter().unzip();
        let mut slices: Vec<&[V]> = vec![&[]; keys.len()];
        part.scatter(&ranges, &mut slices, |out, s, &(a, b)| {
            *out = &buffers[s][a..b]
        });
        let mut offsets = Vec::with_capacity(keys.len() + 1);
        offsets.push(0);
        let mut total = 0;
        for s in &slices {
            total += s.len();
            offsets.push(total);
        }
        let values: Vec<V> = slices
            .par_iter()
            .flat_map_iter(|s| s.iter().copied())
            .collect();
        Ok((offsets, values))
    }

    fn erase_all(&mut self, keys: &[K]) -> Result<usize> {
        if keys.is_empty() {
            return Ok(0);
        }
        let part = self.shards.partition(keys);
        let erased: Vec<usize> = self.shards.run_shards(&part, |map, _, indices| {
            indices
                .map(|i| map.remove(&keys[i]).map_or(0, |vs| vs.len()))
                .sum()
        });
        let erased = erased.into_iter().sum();
        self.shards.release(erased);
        Ok(erased)
    }

    fn len(&self) -> Result<usize> {
        Ok(self.shards.len())
    }

    fn capacity(&self) -> usize {
        self.shards.capacity()
    }

    fn clear(&mut self) -> Result<()> {
        self.shards.clear_with(|m| m.clear());
        Ok(())
    }

    fn retrieve_all(&self) -> Result<(Vec<K>, Vec<V>)> {
        Ok(self.shards.retrieve(|m| {
            m.iter()
                .flat_map(|(k, vs)| vs.iter().map(move |v| (*k, *v)))
                .unzip()
        }))
    }

    /// An estimate: the shards' maps at their allocated size (std's SwissTable layout), each
    /// key's value buffer at its capacity, and the fixed parts. Allocator overhead is not
    /// counted. Walks every key (the other methods' cost, not a counter's).
    fn memory_bytes(&self) -> usize {
        self.shards.memory_bytes(|m| {
            map_bytes::<K, Vec<V>>(m.capacity())
                + m.values()
                    .map(|vs| vs.capacity() * std::mem::size_of::<V>())
                    .sum::<usize>()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn cpu_multimap_keeps_every_pair_in_insertion_order() {
        for shards in [1, 4, 64] {
            let mut m = CpuMultiMap::<u32, u32>::with_shards(1000, shards).unwrap();
            let keys: Vec<u32> = (0..900).map(|i| i % 7).collect();
            let values: Vec<u32> = (0..900).collect();
            m.insert(&keys, &values).unwrap();
            assert_eq!(m.len().unwrap(), 900);
            let (offsets, got) = m.find_all(&[3, 100, 0, 3]).unwrap();
            let of = |k: u32| -> Vec<u32> { (0..900).filter(|v| v % 7 == k).collect() };
            assert_eq!(&got[offsets[0]..offsets[1]], of(3).as_slice());
            assert_eq!(offsets[1], offsets[2]);
            assert_eq!(&got[offsets[2]..offsets[3]], of(0).as_slice());
            assert_eq!(&got[offsets[3]..offsets[4]], of(3).as_slice());
            assert_eq!(m.count(&[3, 100]).unwrap(), vec![of(3).len(), 0]);
            assert_eq!(m.erase_all(&[3, 3, 100]).unwrap(), of(3).len());
            assert_eq!(m.len().unwrap(), 900 - of(3).len());
            // 100 more pairs fit, then the capacity says no.
            let more: Vec<u32> = vec![5; 100 + of(3).len() + 1];
            let mut st = vec![InsertStatus::default(); more.len()];
            assert_eq!(m.insert_with_status(&more, &more, &mut st).unwrap(), 1);
            assert_eq!(m.len().unwrap(), 1000);
            assert!(matches!(
                m.insert(&[1], &[1]),
                Err(Error::TableFull { failed: 1, .. })
            ));
            m.clear().unwrap();
            assert_eq!(m.len().unwrap(), 0);
            assert_eq!(m.find_all(&[5]).unwrap(), (vec![0, 0], vec![]));
        }
    }

    #[test]
    fn cpu_multimap_bad_input() {
        let mut m = CpuMultiMap::<u64, u64>::new(10).unwrap();
        assert!(matches!(
            m.insert(&[1, 2], &[1]),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            m.count_into(&[1, 2], &mut [0]),
            Err(Error::InvalidInput(_))
        ));
        assert_eq!(m.len().unwrap(), 0);
        assert_eq!(m.find_all(&[]).unwrap(), (vec![0], vec![]));
    }
}
