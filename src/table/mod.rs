//! The [`HashTable`] trait that every scheme implements, and [`DeviceHashTable`], its extension
//! with device-buffer and asynchronous variants for tables that live on a GPU.
//!
//! Semantics shared by every backend (the contract tests check them against a `HashMap`):
//! - `insert` of a key already present replaces its value ([`InsertMode::Assign`], status
//!   `UPDATED`); `insert_if_absent` keeps it ([`InsertMode::IfAbsent`], status `PRESENT`). If one
//!   batch holds a key several times, exactly one of its values is kept and exactly one
//!   occurrence of a key absent before reports it new; which one is unspecified on the GPU
//!   (threads race; the CPU backend keeps the last value under `Assign` and the first under
//!   `IfAbsent`, and reports the first occurrence new).
//! - `len` is exact after every synchronous call; `retrieve_all` returns each stored pair once.
//! - An insert that cannot be placed is reported: per key by [`HashTable::insert_with_status`],
//!   and as [`Error::TableFull`](crate::Error::TableFull) by [`HashTable::insert`]. The keys that
//!   fail are not in the table; every other key of the batch is. Nothing hangs: probing is bounded.
//! - Every key value is insertable, including the bit patterns the table uses internally.
//! - Erase and insert are phase-separated: a batch call completes before the next begins.

/// Host code shared by the GPU schemes: the multisplit pass (more of the engine to come).
pub mod engine;
pub(crate) mod gpu_glue;
pub mod stadium;
pub mod warpdrive;

use crate::device::{DeviceBuffer, Gpu};
use crate::key::{Key, Value};
use crate::status::InsertStatus;
use crate::Result;
use std::sync::Arc;

/// What an insert does with a key that is already present.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum InsertMode {
    /// Replace its value (status [`UPDATED`](crate::status::UPDATED)); cuCollections calls this
    /// `insert_or_assign`. The default, and what [`HashTable::insert`] does.
    #[default]
    Assign,
    /// Keep its value (status [`PRESENT`](crate::status::PRESENT)); cuCollections' `insert`.
    IfAbsent,
}

/// One operation of a [`HashTable::mixed_batch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, bytemuck::NoUninit)]
#[repr(u8)]
pub enum MixedOp {
    /// Insert (or update) the pair.
    Insert = 0,
    /// Look the key up.
    Find = 1,
}

/// Where a table lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// On a CUDA GPU.
    Gpu,
    /// On host threads (rayon).
    Cpu,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Gpu => "gpu",
            Backend::Cpu => "cpu",
        })
    }
}

/// A hash table of fixed-size keys and values with bulk operations on host slices.
///
/// All schemes and backends implement it, so code written against `dyn HashTable<K, V>` runs
/// anywhere. See the [module docs](self) for the shared semantics.
pub trait HashTable<K: Key, V: Value>: Send + Sync {
    /// The scheme's name ("warpdrive", "cpu", ...).
    fn scheme(&self) -> &'static str;

    /// Where the table lives.
    fn backend(&self) -> Backend;

    /// Inserts (or updates) every pair. Returns [`Error::TableFull`](crate::Error::TableFull) if
    /// some keys could not be placed; all others are in the table.
    fn insert(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        insert_all(self, keys, values, InsertMode::Assign)
    }

    /// Inserts (or updates) every pair and writes one status per key into `status`. Returns the
    /// number of keys that could not be placed (their status says why); that is not an error.
    fn insert_with_status(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
    ) -> Result<usize> {
        self.insert_with_mode(keys, values, status, InsertMode::Assign)
    }

    /// Inserts every pair whose key is absent; present keys keep their values. Returns
    /// [`Error::TableFull`](crate::Error::TableFull) if some keys could not be placed. For a key
    /// absent before and repeated in the batch, one of its values is stored (which one is
    /// unspecified).
    fn insert_if_absent(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        insert_all(self, keys, values, InsertMode::IfAbsent)
    }

    /// The general insert: one status per key into `status`, present keys treated as `mode`
    /// says. Returns the number of keys that could not be placed.
    fn insert_with_mode(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<usize>;

    /// Runs the inserts ([`InsertMode::Assign`]) and finds of one batch together, as the
    /// WarpDrive paper allows: `ops[i]` says what to do with `keys[i]` (and `values[i]`, read for
    /// inserts only). An insert writes `status[i]`; a find writes `found[i]` and, when found,
    /// `out[i]`; each leaves the other kind's outputs untouched. A key inserted by an earlier call
    /// is found; a key inserted in this batch may or may not be (the threads race), and when it
    /// is, its value is one this batch or an earlier call inserted, never a torn one. Returns the
    /// number of inserts that could not be placed.
    /// [`Error::Unsupported`](crate::Error::Unsupported) where the table cannot place a pair in
    /// one atomic step (16-byte slots before sm_90).
    #[allow(clippy::too_many_arguments)]
    fn mixed_batch(
        &mut self,
        ops: &[MixedOp],
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        out: &mut [V],
        found: &mut [bool],
    ) -> Result<usize>;

    /// Looks up every key: writes its value into `values` and whether it was found into `found`
    /// (`values` is left untouched where not found). Returns the number found.
    fn find_into(&self, keys: &[K], values: &mut [V], found: &mut [bool]) -> Result<usize>;

    /// Looks up every key; `None` where absent.
    fn find(&self, keys: &[K]) -> Result<Vec<Option<V>>> {
        let mut values = vec![V::zeroed(); keys.len()];
        let mut found = vec![false; keys.len()];
        self.find_into(keys, &mut values, &mut found)?;
        Ok(values
            .into_iter()
            .zip(found)
            .map(|(v, f)| f.then_some(v))
            .collect())
    }

    /// Whether each key is present.
    fn contains(&self, keys: &[K]) -> Result<Vec<bool>>;

    /// Erases every key present; absent keys are ignored. Returns the number erased.
    fn erase(&mut self, keys: &[K]) -> Result<usize>;

    /// The number of keys stored.
    fn len(&self) -> Result<usize>;

    /// Whether the table holds no key.
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// How many keys the table can hold (its number of slots).
    fn capacity(&self) -> usize;

    /// `len / capacity`.
    fn load_factor(&self) -> Result<f64> {
        Ok(self.len()? as f64 / self.capacity().max(1) as f64)
    }

    /// Removes every key; the capacity stays.
    fn clear(&mut self) -> Result<()>;

    /// Changes the capacity to at least `new_capacity` keys, keeping every pair (and dropping
    /// tombstones, where the scheme has them): to grow a table that is filling up.
    /// [`Error::InvalidInput`](crate::Error::InvalidInput) if `new_capacity` is below `len()`;
    /// on any error the table is unchanged.
    fn rehash(&mut self, new_capacity: usize) -> Result<()>;

    /// Every stored pair, in no particular order.
    fn retrieve_all(&self) -> Result<(Vec<K>, Vec<V>)>;

    /// Bytes of memory the table holds (device memory for GPU tables).
    fn memory_bytes(&self) -> usize;
}

/// The length checks of [`HashTable::mixed_batch`]: every per-op slice holds one entry per key.
pub(crate) fn check_mixed_lens(
    keys: usize,
    ops: usize,
    values: usize,
    status: usize,
    out: usize,
    found: usize,
) -> Result<()> {
    use crate::error::check_same_len;
    check_same_len("mixed batch ops", keys, ops)?;
    check_same_len("mixed batch", keys, values)?;
    check_same_len("mixed batch status", keys, status)?;
    check_same_len("mixed batch out", keys, out)?;
    check_same_len("mixed batch found", keys, found)
}

/// `insert_with_mode` with the statuses reduced to one error: [`Error::TableFull`] when some keys
/// could not be placed.
///
/// [`Error::TableFull`]: crate::Error::TableFull
fn insert_all<K: Key, V: Value, T: HashTable<K, V> + ?Sized>(
    table: &mut T,
    keys: &[K],
    values: &[V],
    mode: InsertMode,
) -> Result<()> {
    let mut status = vec![InsertStatus::default(); keys.len()];
    let failed = table.insert_with_mode(keys, values, &mut status, mode)?;
    if failed > 0 {
        return Err(crate::Error::TableFull {
            failed,
            batch: keys.len(),
            capacity: table.capacity(),
        });
    }
    Ok(())
}

/// The extension of [`HashTable`] for tables on a GPU: every bulk operation on device buffers,
/// synchronous and `_async` (enqueued on the table's stream, returning before it completes).
///
/// An `_async` insert counts the keys it could not place on the device; [`synchronize`]
/// waits for the stream and returns [`Error::TableFull`](crate::Error::TableFull) if any
/// insert since the last `synchronize` left keys unplaced. Pass a status buffer to learn which.
///
/// [`synchronize`]: DeviceHashTable::synchronize
pub trait DeviceHashTable<K: Key, V: Value>: HashTable<K, V> {
    /// The GPU the table lives on.
    fn gpu(&self) -> &Arc<Gpu>;

    /// Enqueues an insert of device-resident pairs ([`InsertMode::Assign`]). `status`, if
    /// given, receives one [`InsertStatus`] word per key.
    fn insert_device_async(
        &mut self,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        status: Option<&mut DeviceBuffer<u32>>,
    ) -> Result<()> {
        self.insert_device_async_with_mode(keys, values, status, InsertMode::Assign)
    }

    /// Enqueues an insert of device-resident pairs, present keys treated as `mode` says.
    fn insert_device_async_with_mode(
        &mut self,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        status: Option<&mut DeviceBuffer<u32>>,
        mode: InsertMode,
    ) -> Result<()>;

    /// Enqueues a lookup: `values[i]` receives the value of `keys[i]` where found, `found[i]`
    /// 1 or 0.
    fn find_device_async(
        &self,
        keys: &DeviceBuffer<K>,
        values: &mut DeviceBuffer<V>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()>;

    /// Enqueues a membership test: `found[i]` receives 1 or 0.
    fn contains_device_async(
        &self,
        keys: &DeviceBuffer<K>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()>;

    /// Enqueues an erase.
    fn erase_device_async(&mut self, keys: &DeviceBuffer<K>) -> Result<()>;

    /// Enqueues a mixed batch of device-resident operations (the device twin of
    /// [`HashTable::mixed_batch`]): `ops[i]` is a [`MixedOp`] as its `u8` (`MixedOp::Insert as
    /// u8`, ...). Every buffer holds one entry per key; an insert writes `status[i]`, a find
    /// writes `found[i]` (1 or 0) and, when found, `out[i]`. Unplaced inserts are reported by
    /// [`synchronize`](DeviceHashTable::synchronize) and in `status`.
    /// [`Error::Unsupported`](crate::Error::Unsupported) where the table cannot run the batch
    /// (see [`HashTable::mixed_batch`]).
    #[allow(clippy::too_many_arguments)]
    fn mixed_device_async(
        &mut self,
        ops: &DeviceBuffer<u8>,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        status: &mut DeviceBuffer<u32>,
        out: &mut DeviceBuffer<V>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()>;

    /// Every stored pair, into new device buffers (no copy through the host), in no particular
    /// order. Synchronous: it needs the stored count to size the buffers.
    fn retrieve_device(&self) -> Result<(DeviceBuffer<K>, DeviceBuffer<V>)>;

    /// Waits for every enqueued operation. Returns `Error::TableFull` if inserts since the last
    /// call left keys unplaced, or the error of a failed kernel.
    fn synchronize(&self) -> Result<()>;

    /// Synchronous insert of device-resident pairs.
    fn insert_device(&mut self, keys: &DeviceBuffer<K>, values: &DeviceBuffer<V>) -> Result<()> {
        self.insert_device_async(keys, values, None)?;
        self.synchronize()
    }

    /// Synchronous lookup of device-resident keys.
    fn find_device(
        &self,
        keys: &DeviceBuffer<K>,
        values: &mut DeviceBuffer<V>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        self.find_device_async(keys, values, found)?;
        self.synchronize()
    }
}
