//! [`TwoLevelCpu`]: the two-level cuckoo table on host threads, with the GPU table's layout,
//! hashes, policies and statuses: the same first level ([`part_function`]), the same buckets of
//! `d` subtables cut into cells and cell functions ([`cell_of`]) under per-bucket seeds, the
//! same bucket build (rounds with cells: a key takes the first free slot of its cell or, the cell
//! being full, a pseudo-random slot of it, and the key it displaces is queued for its next cell;
//! keys left beyond the slots go to the stash, new seeds when more are left after `max_probes`
//! rounds or a queue overflows, at most `max_rebuilds` times), the same stash limits (each
//! bucket keeps its own stashed keys, the GPU table one stash for all), the same lookups (cells
//! in order, stopping at the first with an empty slot, then the stash; erase leaves a
//! tombstone), the
//! same splits before a crowding batch and after failed builds, the same coalescing after
//! erases, and the side path for sentinel-valued keys (statuses carry
//! [`SENTINEL_KEY`](crate::status::SENTINEL_KEY) as on the GPU). Bucket builds run in parallel
//! on the rayon pool, finds too. It is the reference the GPU table is checked against where no
//! GPU is present, and the way to measure the algorithm's rebuild and split counts on a CPU.
//!
//! Differences from the GPU table: the first occurrence of a key repeated in a batch is the one
//! reported new, and with `Assign` the last occurrence's value stays (the CPU backend's rule;
//! the GPU promises only "one of them"); mixed batches run, in batch order (the GPU refuses
//! them).

use super::{
    buckets_for, cell_of, cell_slots, grown_buckets, initial_seed, may_overflow, next_seed,
    part_function, queue_entries, shrunk_buckets, slot_bytes, stash_capacity, stash_cells,
    TwoLevelConfig, TwoLevelStats,
};
use crate::cpu::MapHashBuilder;
use crate::error::check_same_len;
use crate::hash::fmix32;
use crate::hash::hash_pair;
use crate::key::{Key, Sentinels, Value};
use crate::status::{self, InsertStatus};
use crate::table::{
    check_mixed_lens, check_rehash_capacity, Backend, HashTable, InsertMode, MixedOp,
};
use crate::{Error, Result};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// A slot: empty, a tombstone (an erased key's: not empty again until the bucket is rebuilt,
/// so the lookups' stopping rule holds), or a pair.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Slot<K, V> {
    Empty,
    Tomb,
    Full(K, V),
}

impl<K: Copy, V: Copy> Slot<K, V> {
    fn pair(&self) -> Option<(K, V)> {
        match *self {
            Slot::Full(k, v) => Some((k, v)),
            _ => None,
        }
    }
}

/// One bucket: its seed, `d × sub` slots, and its keys in the stash (the GPU table keeps them
/// in one stash for all buckets; here each bucket holds its own part of it).
#[derive(Clone, Debug)]
struct Bucket<K, V> {
    seed: u64,
    slots: Vec<Slot<K, V>>,
    stash: Vec<(K, V)>,
    /// Keys in its slots and its stash.
    count: u32,
}

/// Where a key is in its bucket.
#[derive(Clone, Copy, Debug)]
enum Place {
    Slot(usize),
    Stash(usize),
}

/// Stash slots taken so far (the GPU's `stats[2]`): the bucket builds, running in parallel,
/// reserve theirs here.
#[derive(Debug, Default)]
struct StashUse(AtomicU64);

impl Clone for StashUse {
    fn clone(&self) -> Self {
        StashUse(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}

impl StashUse {
    /// Takes `n` slots if at most `cap` are then taken.
    fn reserve(&self, n: u64, cap: u64) -> bool {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                (u + n <= cap).then_some(u + n)
            })
            .is_ok()
    }
    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// What a bucket build did with its part of a batch.
struct Merged {
    /// (batch index, status) of every key of the part.
    statuses: Vec<(usize, u32)>,
    inserted: usize,
    rebuilds: u64,
    failed_build: bool,
    stash_full: bool,
}

/// A two-level cuckoo table on host threads (see the [module docs](crate::table::two_level)).
///
/// ```
/// use warpmap::table::two_level::{TwoLevelConfig, TwoLevelCpu};
/// use warpmap::HashTable;
/// # fn main() -> warpmap::Result<()> {
/// let mut t = TwoLevelCpu::<u32, u32>::new(TwoLevelConfig::new(1000))?;
/// t.insert(&[1, 2, u32::MAX], &[10, 20, 30])?;
/// assert_eq!(t.find(&[2, 3, u32::MAX])?, vec![Some(20), None, Some(30)]);
/// // Far more keys than the capacity asked for: the table splits its buckets.
/// let keys: Vec<u32> = (0..10_000).collect();
/// t.insert(&keys, &keys)?;
/// assert_eq!(t.len()?, 10_001);
/// assert!(t.stats().splits > 0);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct TwoLevelCpu<K: Key, V: Value> {
    config: TwoLevelConfig,
    max_iterations: u32,
    buckets: Vec<Bucket<K, V>>,
    side: [Option<V>; 2],
    len: usize,
    stats: TwoLevelStats,
    stash_used: StashUse,
    /// A build found the stash full since the last re-bucketing (the GPU's `stats[3]`).
    stash_was_full: bool,
}

impl<K: Key, V: Value> TwoLevelCpu<K, V> {
    /// An empty table of at least `config.capacity` slots.
    ///
    /// # Errors
    /// [`TwoLevelConfig::check`]'s.
    pub fn new(mut config: TwoLevelConfig) -> Result<Self> {
        config.check(K::BYTES, V::BYTES)?;
        let buckets = buckets_for(config.capacity, config.bucket_slots() as usize) as u32;
        if config.min_buckets == 0 {
            config.min_buckets = buckets;
        }
        let max_iterations = config.max_iterations()?;
        let mut t = TwoLevelCpu {
            config,
            max_iterations,
            buckets: Vec::new(),
            side: [None, None],
            len: 0,
            stats: TwoLevelStats::default(),
            stash_used: StashUse::default(),
            stash_was_full: false,
        };
        t.reset(buckets);
        Ok(t)
    }

    /// The parameters (defaults resolved).
    pub fn config(&self) -> &TwoLevelConfig {
        &self.config
    }
    /// The number of buckets.
    pub fn buckets(&self) -> u32 {
        self.buckets.len() as u32
    }
    /// Rebuild, failure, split and coalesce counts since the table was made; stash slots taken
    /// since the last re-bucketing.
    pub fn stats(&self) -> TwoLevelStats {
        TwoLevelStats {
            stashed: self.stash_used.get(),
            ..self.stats
        }
    }
    /// Keys per bucket (side-path keys not included).
    pub fn bucket_counts(&self) -> Vec<u32> {
        self.buckets.iter().map(|b| b.count).collect()
    }

    fn reset(&mut self, buckets: u32) {
        let slots = self.config.bucket_slots() as usize;
        self.buckets = (0..buckets)
            .map(|b| Bucket {
                seed: initial_seed(self.config.seed, b),
                slots: vec![Slot::Empty; slots],
                stash: Vec::new(),
                count: 0,
            })
            .collect();
        self.side = [None, None];
        self.len = 0;
        self.stash_used = StashUse::default();
        self.stash_was_full = false;
    }

    /// Stash slots the table may take ([`stash_capacity`]).
    fn stash_cap(&self) -> u64 {
        let cell = cell_slots(K::BYTES, V::BYTES);
        stash_capacity(stash_cells(self.capacity(), cell), cell)
    }

    fn side_slot(key: &K) -> Option<usize> {
        Sentinels::for_width(K::BYTES).side_slot(key.to_bits())
    }

    fn hash(&self, key: &K, seed: u64) -> (u32, u32) {
        hash_pair(key.to_bits(), K::BYTES, seed, self.config.hash)
    }

    fn bucket_of(&self, key: &K) -> usize {
        part_function(&self.config, self.buckets()).part_of(key) as usize
    }

    /// Slots per cell, and cells per subtable.
    fn cells(&self) -> (u32, u32) {
        let cell = cell_slots(K::BYTES, V::BYTES);
        (cell, self.config.slots_per_subtable / cell)
    }

    /// Where `key` is in bucket `b`, if there: its cells in order, up to the first that holds it
    /// or has an empty slot, then the bucket's stash (`tl_locate`).
    fn locate(&self, b: usize, key: &K) -> Option<Place> {
        let bucket = &self.buckets[b];
        if let Some(s) = self.locate_in_slots(bucket, key) {
            return Some(Place::Slot(s));
        }
        bucket
            .stash
            .iter()
            .position(|(k, _)| k == key)
            .map(Place::Stash)
    }

    /// The slot of `key` in `bucket`'s cells.
    fn locate_in_slots(&self, bucket: &Bucket<K, V>, key: &K) -> Option<usize> {
        let h = self.hash(key, bucket.seed);
        let (cell, sub_cells) = self.cells();
        let d = self.config.hash_functions;
        for j in 0..d {
            let first = (cell_of(h, j, d, sub_cells) * cell) as usize;
            let slots = &bucket.slots[first..first + cell as usize];
            if let Some(e) = slots
                .iter()
                .position(|s| matches!(s, Slot::Full(k, _) if k == key))
            {
                return Some(first + e);
            }
            if slots.contains(&Slot::Empty) {
                return None;
            }
        }
        None
    }

    fn get(&self, key: &K) -> Option<V> {
        if let Some(s) = Self::side_slot(key) {
            return self.side[s];
        }
        let b = self.bucket_of(key);
        let bucket = &self.buckets[b];
        match self.locate(b, key)? {
            Place::Slot(s) => bucket.slots[s].pair().map(|(_, v)| v),
            Place::Stash(s) => Some(bucket.stash[s].1),
        }
    }

    /// The build's rounds over `keys` under `seed` (`two_level_insert`): the slot of every key
    /// it placed, and the keys it left, or `None` when a round displaces more than a queue
    /// holds ([`queue_entries`]). Round 0 places every key at its first cell, later rounds the
    /// queued ones at their next: the cell's first free slot, or, the cell being full, the
    /// pseudo-random slot the GPU picks, whose key is displaced and queued for its next cell.
    /// The rounds stop when no more keys are queued than the slots cannot hold, or at the
    /// round limit; with a round to spare, each queued key then takes the first free slot of
    /// its cells, in order, if it has one. Keys in order stand for the GPU's racing threads
    /// (any order gives a valid layout).
    fn layout(&self, keys: &[K], seed: u64) -> Option<(Vec<Option<u32>>, Vec<u32>)> {
        let d = self.config.hash_functions;
        let (cell, sub_cells) = self.cells();
        let h: Vec<(u32, u32)> = keys.iter().map(|k| self.hash(k, seed)).collect();
        let slots_n = self.config.bucket_slots() as usize;
        let mut table = vec![u32::MAX; slots_n];
        let cap = queue_entries(self.build_items());
        let over = keys.len().saturating_sub(slots_n);
        // (item, cell choice) to place this round.
        let mut queue: Vec<(u32, u32)> = (0..keys.len() as u32).map(|i| (i, 0)).collect();
        let mut round = 0;
        loop {
            let mut next = Vec::new();
            for &(i, j) in &queue {
                let c = cell_of(h[i as usize], j, d, sub_cells);
                let first = c * cell;
                if let Some(s) = (first..first + cell).find(|&s| table[s as usize] == u32::MAX) {
                    table[s as usize] = i;
                    continue;
                }
                let r = fmix32(i.wrapping_mul(0x9e37_79b9).wrapping_add(round));
                let s = (first + ((r as u64 * cell as u64) >> 32) as u32) as usize;
                let out = std::mem::replace(&mut table[s], i);
                let at = (0..d)
                    .find(|&j| cell_of(h[out as usize], j, d, sub_cells) == c)
                    .unwrap_or(d - 1);
                next.push((out, (at + 1) % d));
            }
            if next.len() > cap {
                return None;
            }
            queue = next;
            round += 1;
            if queue.len() <= over || round >= self.max_iterations {
                break;
            }
        }
        let settle = round < self.max_iterations;
        let mut left = Vec::new();
        for &(i, _) in &queue {
            let free = (0..d).find_map(|j| {
                let first = cell_of(h[i as usize], j, d, sub_cells) * cell;
                (first..first + cell).find(|&s| table[s as usize] == u32::MAX)
            });
            match free.filter(|_| settle) {
                Some(s) => table[s as usize] = i,
                None => left.push(i),
            }
        }
        let mut slot = vec![None; keys.len()];
        for (s, &i) in table.iter().enumerate() {
            if i != u32::MAX {
                slot[i as usize] = Some(s as u32);
            }
        }
        Some((slot, left))
    }

    /// Keys a build holds ([`TwoLevelConfig::build_items`]).
    fn build_items(&self) -> usize {
        self.config.build_items(K::BYTES, V::BYTES) as usize
    }

    /// Merges the keys at `part` (batch indices, in batch order) into bucket `b`: present keys
    /// are updated or kept, new keys enter once, and the bucket is rebuilt (new seeds as
    /// needed; keys the layout leaves go to the stash); on failure it keeps its layout and the
    /// new keys are TABLE_FULL.
    fn merge(
        &self,
        b: usize,
        part: &[usize],
        keys: &[K],
        values: &[V],
        mode: InsertMode,
    ) -> (Bucket<K, V>, Merged) {
        let assign = mode == InsertMode::Assign;
        let present_code = if assign {
            status::UPDATED
        } else {
            status::PRESENT
        };
        let mut bucket = self.buckets[b].clone();
        let mut statuses = Vec::with_capacity(part.len());
        // New keys: their item (index into new_keys) and whether each index led.
        let mut new_keys: Vec<(K, V)> = Vec::new();
        // The cpu backend's hasher: std's keyed default costs several times more per key.
        let mut new_at: HashMap<K, usize, MapHashBuilder> = HashMap::default();
        let mut leaders: Vec<(usize, usize)> = Vec::new(); // (batch index, item)
        let mut followers: Vec<(usize, usize)> = Vec::new();
        for &i in part {
            let (k, v) = (keys[i], values[i]);
            if let Some(at) = self.locate(b, &k) {
                if assign {
                    match at {
                        Place::Slot(s) => bucket.slots[s] = Slot::Full(k, v),
                        Place::Stash(s) => bucket.stash[s].1 = v,
                    }
                }
                statuses.push((i, present_code));
            } else if let Some(&item) = new_at.get(&k) {
                if assign {
                    new_keys[item].1 = v;
                }
                followers.push((i, item));
            } else {
                new_at.insert(k, new_keys.len());
                leaders.push((i, new_keys.len()));
                new_keys.push((k, v));
            }
        }
        let mut merged = Merged {
            statuses,
            inserted: 0,
            rebuilds: 0,
            failed_build: false,
            stash_full: false,
        };
        if new_keys.is_empty() {
            return (bucket, merged);
        }
        let slots_n = bucket.slots.len();
        let items: Vec<(K, V)> = bucket
            .slots
            .iter()
            .filter_map(Slot::pair)
            .chain(new_keys.iter().copied())
            .collect();
        let mut result = None;
        if items.len() <= self.build_items() {
            let item_keys: Vec<K> = items.iter().map(|p| p.0).collect();
            let over = items.len().saturating_sub(slots_n);
            let slack = self.config.build_slack() as usize;
            let mut seed = bucket.seed;
            for attempt in 0..=self.config.max_rebuilds {
                if attempt > 0 {
                    seed = next_seed(seed);
                    merged.rebuilds += 1;
                }
                let Some((at, left)) = self.layout(&item_keys, seed) else {
                    continue;
                };
                if left.len() > over + slack && attempt < self.config.max_rebuilds {
                    continue;
                }
                if !self.stash_used.reserve(left.len() as u64, self.stash_cap()) {
                    merged.stash_full = true;
                    break;
                }
                let mut slots = vec![Slot::Empty; slots_n];
                for (&(k, v), s) in items.iter().zip(at) {
                    if let Some(s) = s {
                        slots[s as usize] = Slot::Full(k, v);
                    }
                }
                let mut stash = bucket.stash.clone();
                stash.extend(left.iter().map(|&i| items[i as usize]));
                result = Some(Bucket {
                    seed,
                    slots,
                    stash,
                    count: bucket.count + new_keys.len() as u32,
                });
                break;
            }
            merged.failed_build = result.is_none();
        }
        let ok = result.is_some();
        for &(i, _) in &leaders {
            merged
                .statuses
                .push((i, if ok { status::OK } else { status::TABLE_FULL }));
        }
        for &(i, _) in &followers {
            merged
                .statuses
                .push((i, if ok { present_code } else { status::TABLE_FULL }));
        }
        if ok {
            merged.inserted = new_keys.len();
        }
        // On failure the bucket keeps its layout, with the values the batch replaced.
        (result.unwrap_or(bucket), merged)
    }

    /// One pass of an insert: side path, split before a crowding batch, bucket builds in
    /// parallel. Statuses go to `status`.
    fn insert_pass(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<()> {
        let mut routed: Vec<usize> = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            match Self::side_slot(k) {
                Some(s) => {
                    let present = self.side[s].is_some();
                    let mut st = status::SENTINEL_KEY;
                    if present {
                        if mode == InsertMode::Assign {
                            self.side[s] = Some(values[i]);
                            st |= status::UPDATED;
                        } else {
                            st |= status::PRESENT;
                        }
                    } else {
                        self.side[s] = Some(values[i]);
                        self.len += 1;
                    }
                    status[i] = InsertStatus(st);
                }
                None => routed.push(i),
            }
        }
        if routed.is_empty() {
            return Ok(());
        }
        let mut parts;
        let mut attempt = 0;
        loop {
            parts = vec![Vec::new(); self.buckets.len()];
            for &i in &routed {
                parts[self.bucket_of(&keys[i])].push(i);
            }
            let counts = self.bucket_counts();
            let needed = super::buckets_at_load(&self.config, self.len + routed.len());
            let cap = self.config.bucket_capacity(K::BYTES, V::BYTES);
            let crowded = may_overflow(cap, &counts, |b| parts[b].len() as u64);
            if !crowded || attempt == 4 || self.buckets.len() as u64 >= 2 * needed.max(1) {
                break;
            }
            let grown = grown_buckets(&self.config, self.buckets(), self.len + routed.len());
            self.rebucket(grown)?;
            self.stats.splits += 1;
            attempt += 1;
        }
        let this = &*self;
        let results: Vec<(usize, Bucket<K, V>, Merged)> = parts
            .par_iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
            .map(|(b, p)| {
                let (bucket, m) = this.merge(b, p, keys, values, mode);
                (b, bucket, m)
            })
            .collect();
        for (b, bucket, m) in results {
            self.buckets[b] = bucket;
            self.len += m.inserted;
            self.stats.rebuilds += m.rebuilds;
            self.stats.failed_builds += u64::from(m.failed_build);
            self.stats.stash_full += u64::from(m.stash_full);
            self.stash_was_full |= m.stash_full;
            for (i, st) in m.statuses {
                status[i] = InsertStatus(st);
            }
        }
        Ok(())
    }

    /// Moves every pair into `buckets` buckets.
    fn rebucket(&mut self, buckets: u64) -> Result<()> {
        if buckets >= u32::MAX as u64 {
            return Err(Error::Unsupported(format!(
                "two_level: {buckets} buckets (at most 2^32 - 2)"
            )));
        }
        let (keys, values) = self.retrieve_all()?;
        let len = self.len;
        self.reset(buckets as u32);
        let mut st = vec![InsertStatus::default(); keys.len()];
        self.insert_with_mode(&keys, &values, &mut st, InsertMode::Assign)?;
        if self.len != len {
            return Err(Error::CountMismatch {
                operation: "two_level_cpu re-bucketing: keys placed".into(),
                expected: len,
                got: self.len,
            });
        }
        Ok(())
    }

    fn erase_one(&mut self, key: &K) -> bool {
        if let Some(s) = Self::side_slot(key) {
            let was = self.side[s].take().is_some();
            self.len -= usize::from(was);
            return was;
        }
        let b = self.bucket_of(key);
        let Some(at) = self.locate(b, key) else {
            return false;
        };
        let bucket = &mut self.buckets[b];
        match at {
            Place::Slot(s) => bucket.slots[s] = Slot::Tomb,
            // Its stash slot stays taken (the GPU leaves a tombstone there).
            Place::Stash(s) => {
                bucket.stash.swap_remove(s);
            }
        }
        bucket.count -= 1;
        self.len -= 1;
        true
    }

    fn coalesce(&mut self) -> Result<()> {
        if let Some(b) = shrunk_buckets(
            &self.config,
            self.buckets(),
            self.config.min_buckets,
            self.len,
        ) {
            self.rebucket(b as u64)?;
            self.stats.coalesces += 1;
        }
        Ok(())
    }
}

impl<K: Key, V: Value> HashTable<K, V> for TwoLevelCpu<K, V> {
    fn scheme(&self) -> &'static str {
        "two_level_cpu"
    }

    fn backend(&self) -> Backend {
        Backend::Cpu
    }

    /// As the GPU table's host-slice insert: a pass, then, while keys found no layout, a split
    /// and those keys again (unless the table is below a quarter of its regular load and its
    /// stash had room).
    fn insert_with_mode(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<usize> {
        check_same_len("insert", keys.len(), values.len())?;
        check_same_len("insert status", keys.len(), status.len())?;
        mode.refuse_apply("TwoLevelCpu")?;
        if keys.is_empty() {
            return Ok(0);
        }
        self.insert_pass(keys, values, status, mode)?;
        loop {
            let full: Vec<usize> = (0..keys.len())
                .filter(|&i| status[i].0 & status::TABLE_FULL != 0)
                .collect();
            let load = self.len as f64 / self.capacity() as f64;
            if full.is_empty() || (load < self.config.reg_load / 4.0 && !self.stash_was_full) {
                break;
            }
            let grown = grown_buckets(&self.config, self.buckets(), self.len + full.len());
            self.rebucket(grown)?;
            self.stats.splits += 1;
            let k: Vec<K> = full.iter().map(|&i| keys[i]).collect();
            let v: Vec<V> = full.iter().map(|&i| values[i]).collect();
            let mut st = vec![InsertStatus::default(); full.len()];
            self.insert_pass(&k, &v, &mut st, mode)?;
            for (&i, s) in full.iter().zip(st) {
                status[i] = s;
            }
        }
        Ok(status.iter().filter(|s| s.is_failure()).count())
    }

    /// In batch order, one operation at a time (the GPU table refuses mixed batches).
    fn mixed_batch(
        &mut self,
        ops: &[MixedOp],
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        out: &mut [V],
        found: &mut [bool],
    ) -> Result<usize> {
        check_mixed_lens(
            keys.len(),
            ops.len(),
            values.len(),
            status.len(),
            out.len(),
            found.len(),
        )?;
        let mut failed = 0;
        let mut erased = false;
        for i in 0..ops.len() {
            match ops[i] {
                MixedOp::Insert => {
                    let mut st = [InsertStatus::default()];
                    failed += self.insert_with_mode(
                        &keys[i..=i],
                        &values[i..=i],
                        &mut st,
                        InsertMode::Assign,
                    )?;
                    status[i] = st[0];
                }
                MixedOp::Find => {
                    let v = self.get(&keys[i]);
                    found[i] = v.is_some();
                    if let Some(v) = v {
                        out[i] = v;
                    }
                }
                MixedOp::Erase => {
                    found[i] = self.erase_one(&keys[i]);
                    erased |= found[i];
                }
            }
        }
        if erased {
            self.coalesce()?;
        }
        Ok(failed)
    }

    fn find_into(&self, keys: &[K], values: &mut [V], found: &mut [bool]) -> Result<usize> {
        check_same_len("find", keys.len(), values.len())?;
        check_same_len("find", keys.len(), found.len())?;
        let got: Vec<Option<V>> = keys.par_iter().map(|k| self.get(k)).collect();
        let mut hits = 0;
        for (i, g) in got.into_iter().enumerate() {
            found[i] = g.is_some();
            if let Some(v) = g {
                values[i] = v;
                hits += 1;
            }
        }
        Ok(hits)
    }

    fn contains(&self, keys: &[K]) -> Result<Vec<bool>> {
        Ok(keys.par_iter().map(|k| self.get(k).is_some()).collect())
    }

    /// Erases, then coalesces buckets if the load fell below the shrink bound.
    fn erase(&mut self, keys: &[K]) -> Result<usize> {
        let erased = keys.iter().filter(|k| self.erase_one(k)).count();
        if erased > 0 {
            self.coalesce()?;
        }
        Ok(erased)
    }

    fn len(&self) -> Result<usize> {
        Ok(self.len)
    }

    fn capacity(&self) -> usize {
        self.buckets.len() * self.config.bucket_slots() as usize
    }

    fn max_load_factor(&self) -> f64 {
        self.config.reg_load
    }

    /// Empties every bucket (the bucket count stays, each back at its first seed).
    fn clear(&mut self) -> Result<()> {
        let b = self.buckets();
        self.reset(b);
        self.stats.rebuilds = 0;
        self.stats.failed_builds = 0;
        Ok(())
    }

    /// Re-buckets into buckets for at least `new_capacity` slots.
    fn rehash(&mut self, new_capacity: usize) -> Result<()> {
        check_rehash_capacity(new_capacity, self.len)?;
        let config = TwoLevelConfig {
            capacity: new_capacity,
            ..self.config.clone()
        };
        config.check(K::BYTES, V::BYTES)?;
        let buckets = buckets_for(new_capacity, config.bucket_slots() as usize);
        self.config = config;
        self.rebucket(buckets)
    }

    fn retrieve_all(&self) -> Result<(Vec<K>, Vec<V>)> {
        let mut keys = Vec::with_capacity(self.len);
        let mut values = Vec::with_capacity(self.len);
        let sentinels = Sentinels::for_width(K::BYTES);
        for (s, v) in self.side.iter().enumerate() {
            if let Some(v) = v {
                let bits = if s == 0 {
                    sentinels.empty
                } else {
                    sentinels.tombstone
                };
                keys.push(K::from_bits(bits));
                values.push(*v);
            }
        }
        for b in &self.buckets {
            for (k, v) in b
                .slots
                .iter()
                .filter_map(Slot::pair)
                .chain(b.stash.iter().copied())
            {
                keys.push(k);
                values.push(v);
            }
        }
        Ok((keys, values))
    }

    /// The GPU table's footprint for the same geometry (slots, stash, seeds and counts).
    fn memory_bytes(&self) -> usize {
        let stash = stash_cells(self.capacity(), cell_slots(K::BYTES, V::BYTES)) as usize * 32;
        self.capacity() * slot_bytes(K::BYTES, V::BYTES) + stash + self.buckets.len() * 12 + 64
    }
}
