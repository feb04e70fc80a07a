//! The traits every scheme implements: [`HashTable`] (one value per key), [`DeviceHashTable`],
//! its extension with device-buffer and asynchronous variants for tables that live on a GPU, and
//! [`MultiMap`] (several values per key).
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
//!   and as [`Error::TableFull`] by [`HashTable::insert`]. The keys that fail are not in the
//!   table; every other key of the batch is. Nothing hangs: probing is bounded.
//! - Every key value is insertable, including the bit patterns the table uses internally.
//! - Batch calls are phase-separated: each completes before the next begins. Only within one
//!   [`HashTable::mixed_batch`] do operations run together (see there what they see of each
//!   other).
//!
//! # Capacity and growth
//!
//! `capacity()` is the number of keys (pairs, for a [`MultiMap`]) the table has room for. A
//! table of fixed capacity (the CPU backend, WarpDrive, Stadium) changes it only when asked:
//! [`HashTable::rehash`], [`HashTable::reserve`]. A table that resizes itself (DyCuckoo, the
//! slab hash) may change it after **any** insert or erase: it grows instead of refusing keys,
//! and reports [`Error::TableFull`] only when growing fails (memory or its allocator exhausted).
//! Code that caches `capacity()` must read it again after writing. [`HashTable::reserve`] makes
//! room ahead of a known number of inserts on every table, by the rule that
//! [`HashTable::max_load_factor`] states.
//!
//! # Errors
//!
//! Each method's `# Errors` section names what the caller can cause or must handle. Besides
//! those, any method of a GPU table may return what the device reports:
//! [`Error::Driver`] (a CUDA call failed), [`Error::OutOfMemory`] (the staging buffers of a
//! host-slice call, a rehash's new table), and, for a bug or a corrupted table,
//! [`Error::KernelStatus`] or [`Error::CountMismatch`].

pub mod dycuckoo;
pub mod engine;
pub mod registry;
pub mod slab;
pub mod slab_alloc;
pub mod stadium;
pub mod two_level;
pub mod warpdrive;

use crate::device::{DeviceBuffer, Gpu};
use crate::key::{Key, Value};
use crate::status::InsertStatus;
use crate::table::engine::multisplit::PartFunction;
use crate::{Error, Result};
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
    /// Reduce by key: a present key's value becomes `op(stored, incoming)` (status
    /// [`UPDATED`](crate::status::UPDATED)), atomically on the value; a new key stores its
    /// value, and its later copies in the batch are reduced into it. cuCollections calls this
    /// `insert_or_apply`, HierarchicalKV `accum_or_assign`. Numeric values only
    /// ([`Value::NUMERIC`]: integers and floats of 4 and 8 bytes; integer sums wrap), on the
    /// tables that implement it: WarpDrive and the CPU backend. Elsewhere
    /// [`Error::Unsupported`], before anything is inserted. See
    /// [`HashTable::insert_or_apply`].
    Apply(Reduce),
}

/// How [`InsertMode::Apply`] combines a present key's value with an incoming one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Reduce {
    /// The sum (integers wrap; floats add in whatever order the inserts meet, so a float sum
    /// may differ from a sequential one in its last bits, and on the GPU a subnormal addend or
    /// result is flushed to zero, as the hardware's float atomics do).
    Sum = 0,
    /// The smaller (for floats, a NaN loses to a number, as [`f32::min`]).
    Min = 1,
    /// The larger (for floats, a NaN loses to a number, as [`f32::max`]).
    Max = 2,
}

impl InsertMode {
    /// The kernels' mode word (`wm_bulk.assign`, read by kernels/common/apply.cuh) for values
    /// of type `V`: 0 keep, 1 assign, 2 apply, the reduction in bits 4–7 and the value's
    /// [`Numeric`](crate::key::Numeric) kind in bits 8–11.
    pub(crate) fn word<V: Value>(self) -> u32 {
        match self {
            InsertMode::IfAbsent => 0,
            InsertMode::Assign => 1,
            InsertMode::Apply(op) => 2 | (op as u32) << 4 | V::NUMERIC.map_or(0, |n| n as u32) << 8,
        }
    }

    /// [`Error::Unsupported`] for [`InsertMode::Apply`] on values that are not numeric; `what`
    /// names the table.
    pub(crate) fn check_values<V: Value>(self, what: &str) -> Result<()> {
        match self {
            InsertMode::Apply(op) if V::NUMERIC.is_none() => Err(Error::Unsupported(format!(
                "{what}: reduce by key ({op:?}) needs numeric values (integers or floats of 4 or \
                 8 bytes), not {}",
                V::NAME
            ))),
            _ => Ok(()),
        }
    }

    /// [`Error::Unsupported`] for [`InsertMode::Apply`] on a table that does not implement it
    /// (`what` names it); the other modes pass.
    pub(crate) fn refuse_apply(self, what: &str) -> Result<()> {
        match self {
            InsertMode::Apply(op) => Err(Error::Unsupported(format!(
                "{what} does not reduce by key ({op:?}): WarpDrive and the CPU backend do"
            ))),
            _ => Ok(()),
        }
    }
}

/// One operation of a [`HashTable::mixed_batch`]. The device variant
/// ([`DeviceHashTable::mixed_device_async`]) takes it as its `u8` (`op as u8`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, bytemuck::NoUninit)]
#[repr(u8)]
pub enum MixedOp {
    /// Insert (or update, [`InsertMode::Assign`]) the pair; writes `status[i]`.
    Insert = 0,
    /// Look the key up; writes `found[i]` and, when found, `out[i]`.
    Find = 1,
    /// Erase the key if present; writes `found[i]`: whether this operation erased it. Tables
    /// that erase only in a phase of their own (WarpDrive, Stadium) refuse a batch holding one
    /// with [`Error::Unsupported`].
    Erase = 2,
}

/// Where a table lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
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
/// anywhere. See the [module docs](self) for the shared semantics, growth and the errors every
/// GPU call may return. The examples use the CPU backend; the same code runs on every table.
pub trait HashTable<K: Key, V: Value>: Send + Sync {
    /// The scheme's name ("warpdrive", "stadium", "cpu", ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let table = CpuTable::<u32, u32>::new(8)?;
    /// assert_eq!(table.scheme(), "cpu");
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn scheme(&self) -> &'static str;

    /// Where the table lives.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{Backend, CpuTable, HashTable};
    /// let table = CpuTable::<u32, u32>::new(8)?;
    /// assert_eq!(table.backend(), Backend::Cpu);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn backend(&self) -> Backend;

    /// Inserts (or updates) every pair. Some keys that cannot be placed make it an error; all
    /// others are in the table.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidInput`] if `keys` and `values` differ in length; nothing is inserted.
    /// - [`Error::TableFull`] (with `batch` = `keys.len()`) if some keys could not be placed.
    /// - On a GPU table, [`Error::TableFull`] with `batch` 0 if earlier asynchronous inserts
    ///   left keys unplaced that [`DeviceHashTable::synchronize`] has not reported yet: they
    ///   are reported first, and nothing of this batch is inserted (see
    ///   [`insert_with_status`](HashTable::insert_with_status)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, Error, HashTable};
    /// let mut table = CpuTable::<u64, u32>::new(3)?;
    /// table.insert(&[1, 2], &[10, 20])?;
    /// table.insert(&[2], &[21])?; // a present key gets the new value
    /// assert_eq!(table.find(&[1, 2])?, vec![Some(10), Some(21)]);
    /// // Two new keys, room for one: one is placed, one is reported.
    /// let err = table.insert(&[3, 4], &[30, 40]).unwrap_err();
    /// assert!(matches!(err, Error::TableFull { failed: 1, batch: 2, .. }));
    /// assert_eq!(table.len()?, 3);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn insert(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        insert_all(self, keys, values, InsertMode::Assign)
    }

    /// Inserts (or updates) every pair and writes one status per key into `status`. Returns the
    /// number of keys that could not be placed (their status says why); that is not an error.
    ///
    /// On a GPU table the call first collects what earlier `_async` inserts left unplaced (as
    /// [`DeviceHashTable::synchronize`] does): if any keys were, it returns that as an error
    /// before this batch runs. Those keys belong to the earlier batches, whose statuses (where
    /// a status buffer was given) say which; this batch is not inserted and `status` is not
    /// written, so call again. Each failure is reported once.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidInput`] if `values` or `status` differ in length from `keys`; nothing
    ///   is inserted.
    /// - [`Error::TableFull`] with `batch` 0 (GPU tables): earlier asynchronous inserts left
    ///   keys unplaced, as above.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable, InsertStatus};
    /// use warpmap::status::TABLE_FULL;
    /// let mut table = CpuTable::<u32, u32>::new(2)?;
    /// table.insert(&[1], &[10])?;
    /// let mut status = vec![InsertStatus::default(); 3];
    /// let failed = table.insert_with_status(&[1, 2, 3], &[11, 20, 30], &mut status)?;
    /// assert_eq!(failed, 1);
    /// assert!(status[0].is_ok() && status[0].was_update()); // 1 was present
    /// assert!(status[1].is_ok() && !status[1].was_update()); // 2 is new
    /// assert_eq!(status[2].0, TABLE_FULL); // no room left for 3
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn insert_with_status(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
    ) -> Result<usize> {
        self.insert_with_mode(keys, values, status, InsertMode::Assign)
    }

    /// Inserts every pair whose key is absent; present keys keep their values. For a key
    /// absent before and repeated in the batch, one of its values is stored (which one is
    /// unspecified; the CPU backend keeps the first).
    ///
    /// # Errors
    ///
    /// As [`insert`](HashTable::insert): [`Error::InvalidInput`] for mismatched lengths,
    /// [`Error::TableFull`] if some keys could not be placed (or, with `batch` 0 on a GPU
    /// table, if earlier asynchronous inserts left keys unplaced).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(8)?;
    /// table.insert(&[1], &[10])?;
    /// table.insert_if_absent(&[1, 2], &[11, 20])?;
    /// assert_eq!(table.find(&[1, 2])?, vec![Some(10), Some(20)]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn insert_if_absent(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        insert_all(self, keys, values, InsertMode::IfAbsent)
    }

    /// Reduce by key ([`InsertMode::Apply`]): every pair's value is combined by `op` into its
    /// key's stored value, or stored where the key is new, so that a batch (or many) of
    /// `(key, value)` rows ends as one value per key: the sum, minimum or maximum of its rows
    /// (and of the value it had). A group-by in one call; counting is `Sum` with ones.
    ///
    /// # Errors
    ///
    /// [`Error::Unsupported`] on tables without it (all but WarpDrive and the CPU backend) and
    /// for values that are not numeric ([`Value::NUMERIC`]), before anything is inserted; then
    /// as [`insert`](HashTable::insert).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable, Reduce};
    /// let mut table = CpuTable::<u32, u64>::new(8)?;
    /// table.insert_or_apply(&[1, 2, 1, 1], &[10, 20, 1, 5], Reduce::Sum)?;
    /// table.insert_or_apply(&[2], &[2], Reduce::Sum)?;
    /// assert_eq!(table.find(&[1, 2])?, vec![Some(16), Some(22)]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn insert_or_apply(&mut self, keys: &[K], values: &[V], op: Reduce) -> Result<()> {
        insert_all(self, keys, values, InsertMode::Apply(op))
    }

    /// The general insert: one status per key into `status`, present keys treated as `mode`
    /// says. Returns the number of keys that could not be placed. Like
    /// [`insert_with_status`](HashTable::insert_with_status), a GPU table first reports
    /// earlier asynchronous failures, as an error, without running this batch.
    ///
    /// # Errors
    ///
    /// As [`insert_with_status`](HashTable::insert_with_status): [`Error::InvalidInput`] for
    /// mismatched lengths; [`Error::TableFull`] with `batch` 0 for earlier asynchronous
    /// failures (GPU tables).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable, InsertMode, InsertStatus};
    /// let mut table = CpuTable::<u32, u32>::new(8)?;
    /// table.insert(&[1], &[10])?;
    /// let mut status = vec![InsertStatus::default(); 2];
    /// let failed =
    ///     table.insert_with_mode(&[1, 2], &[11, 20], &mut status, InsertMode::IfAbsent)?;
    /// assert_eq!(failed, 0);
    /// assert!(status[0].was_present() && !status[1].was_present());
    /// assert_eq!(table.find(&[1])?, vec![Some(10)]); // kept
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn insert_with_mode(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
        mode: InsertMode,
    ) -> Result<usize>;

    /// Runs the inserts ([`InsertMode::Assign`]), finds and erases of one batch together, as
    /// the WarpDrive paper allows for inserts and finds: `ops[i]` says what to do with
    /// `keys[i]` (and `values[i]`, read for inserts only).
    ///
    /// - An insert writes `status[i]`.
    /// - A find writes `found[i]` and, when found, `out[i]`.
    /// - An erase removes the key if present and writes `found[i]`: `true` when this operation
    ///   removed it. A key erased twice in one batch is reported by one of the two; the number
    ///   erased is the number of erase operations with `found[i]` set.
    ///
    /// Each operation leaves the other kinds' outputs untouched. Operations on different keys
    /// do not affect each other. A key inserted by an earlier call is found. Operations of this
    /// batch on one key race, as threads do: a key inserted in this batch may or may not be
    /// found, and when it is, its value is one this batch or an earlier call inserted, never a
    /// torn one; whether a find or an insert of a key runs before or after an erase of it in
    /// the same batch is unspecified, so such a key may end up present (with a value this batch
    /// inserted) or absent. Every operation's output agrees with some order of the batch's
    /// operations on its key, and the table ends in the state that order leaves. The CPU
    /// backend runs the operations on each key in batch order.
    ///
    /// Returns the number of inserts that could not be placed (their status says why; not an
    /// error).
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidInput`] if a slice differs in length from `keys`; nothing runs.
    /// - [`Error::Unsupported`] where the table cannot run the batch; nothing runs: a batch
    ///   with a [`MixedOp::Erase`] on a table that erases only in a phase of its own
    ///   (WarpDrive, Stadium), or a table that cannot place a pair in one atomic step
    ///   (WarpDrive's 16-byte slots before sm_90).
    /// - [`Error::TableFull`] with `batch` 0 (GPU tables): earlier asynchronous inserts left
    ///   keys unplaced; reported before this batch runs, as by
    ///   [`insert_with_status`](HashTable::insert_with_status).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable, InsertStatus, MixedOp};
    /// let mut table = CpuTable::<u32, u32>::new(8)?;
    /// table.insert(&[1, 2], &[10, 20])?;
    /// let ops = [MixedOp::Insert, MixedOp::Find, MixedOp::Erase, MixedOp::Erase];
    /// let keys = [3, 1, 2, 4];
    /// let values = [30, 0, 0, 0]; // read for inserts only
    /// let mut status = vec![InsertStatus::default(); 4];
    /// let mut out = vec![0; 4];
    /// let mut found = vec![false; 4];
    /// let failed =
    ///     table.mixed_batch(&ops, &keys, &values, &mut status, &mut out, &mut found)?;
    /// assert_eq!(failed, 0);
    /// assert!(status[0].is_ok());
    /// assert_eq!((found[1], out[1]), (true, 10)); // the find
    /// assert_eq!(&found[2..], &[true, false]); // 2 erased, 4 was absent
    /// assert_eq!(table.find(&[1, 2, 3])?, vec![Some(10), None, Some(30)]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
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
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `values` or `found` differ in length from `keys`.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(8)?;
    /// table.insert(&[1, 2], &[10, 20])?;
    /// let (mut values, mut found) = (vec![0; 3], vec![false; 3]);
    /// assert_eq!(table.find_into(&[2, 5, 1], &mut values, &mut found)?, 2);
    /// assert_eq!((values, found), (vec![20, 0, 10], vec![true, false, true]));
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn find_into(&self, keys: &[K], values: &mut [V], found: &mut [bool]) -> Result<usize>;

    /// Looks up every key; `None` where absent.
    ///
    /// # Errors
    ///
    /// None of its own (see the [module docs](self) for a GPU table's device errors).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(8)?;
    /// table.insert(&[1, u32::MAX], &[10, 20])?; // u32::MAX is a key like any other
    /// assert_eq!(table.find(&[u32::MAX, 5])?, vec![Some(20), None]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
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
    ///
    /// # Errors
    ///
    /// None of its own (see the [module docs](self) for a GPU table's device errors).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(8)?;
    /// table.insert(&[1], &[10])?;
    /// assert_eq!(table.contains(&[1, 2])?, vec![true, false]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn contains(&self, keys: &[K]) -> Result<Vec<bool>>;

    /// Erases every key present; absent keys are ignored, and a key repeated in the batch is
    /// erased (and counted) once. Returns the number erased.
    ///
    /// # Errors
    ///
    /// None of its own (see the [module docs](self) for a GPU table's device errors).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(8)?;
    /// table.insert(&[1, 2], &[10, 20])?;
    /// assert_eq!(table.erase(&[1, 1, 3])?, 1);
    /// assert_eq!(table.find(&[1, 2])?, vec![None, Some(20)]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn erase(&mut self, keys: &[K]) -> Result<usize>;

    /// The number of keys stored.
    ///
    /// # Errors
    ///
    /// None of its own (a GPU table reads a device counter: see the [module docs](self)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(8)?;
    /// table.insert(&[1, 2, 2], &[10, 20, 21])?;
    /// assert_eq!(table.len()?, 2);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn len(&self) -> Result<usize>;

    /// Whether the table holds no key.
    ///
    /// # Errors
    ///
    /// As [`len`](HashTable::len).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let table = CpuTable::<u32, u32>::new(8)?;
    /// assert!(table.is_empty()?);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// How many keys the table can hold (its number of slots). Fixed unless the table is
    /// rehashed or reserved; a table that resizes itself may change it after any insert or
    /// erase (see the [module docs](self#capacity-and-growth)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let table = CpuTable::<u32, u32>::new(1000)?;
    /// assert_eq!(table.capacity(), 1000); // exact on the CPU; GPU tables may round up
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn capacity(&self) -> usize;

    /// The highest load factor (`len / capacity`) up to which the table promises to place
    /// every new key: 1 where every slot is usable (the default, and the CPU backend's), less
    /// for open addressing with bounded probing. [`reserve`](HashTable::reserve) sizes the
    /// table by it.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let table = CpuTable::<u32, u32>::new(8)?;
    /// assert_eq!(table.max_load_factor(), 1.0);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn max_load_factor(&self) -> f64 {
        1.0
    }

    /// `len / capacity`.
    ///
    /// # Errors
    ///
    /// As [`len`](HashTable::len).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(4)?;
    /// table.insert(&[1], &[10])?;
    /// assert_eq!(table.load_factor()?, 0.25);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn load_factor(&self) -> Result<f64> {
        Ok(self.len()? as f64 / self.capacity().max(1) as f64)
    }

    /// Removes every key; the capacity stays (a table that resizes itself may change it at its
    /// next insert or erase).
    ///
    /// # Errors
    ///
    /// None of its own (see the [module docs](self) for a GPU table's device errors).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(8)?;
    /// table.insert(&[1, 2], &[10, 20])?;
    /// table.clear()?;
    /// assert_eq!((table.len()?, table.capacity()), (0, 8));
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn clear(&mut self) -> Result<()>;

    /// Changes the capacity to at least `new_capacity` keys, keeping every pair (and dropping
    /// tombstones, where the scheme has them): to grow a table that is filling up (see also
    /// [`reserve`](HashTable::reserve)), or to shrink one. A GPU table first reports what
    /// earlier asynchronous inserts left unplaced, as
    /// [`insert_with_status`](HashTable::insert_with_status) does.
    ///
    /// # Errors
    ///
    /// On any error the table is unchanged.
    /// - [`Error::InvalidInput`] if `new_capacity` is 0 (no table has capacity 0, empty or
    ///   not) or below `len()`.
    /// - [`Error::TableFull`] with `batch` 0 (GPU tables): earlier asynchronous inserts left
    ///   keys unplaced.
    /// - [`Error::OutOfMemory`] where the new table does not fit (GPU tables build it beside
    ///   the old one).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, Error, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(2)?;
    /// table.insert(&[1, 2], &[10, 20])?;
    /// table.rehash(100)?;
    /// assert_eq!(table.capacity(), 100);
    /// assert_eq!(table.find(&[1, 2])?, vec![Some(10), Some(20)]);
    /// assert!(matches!(table.rehash(1), Err(Error::InvalidInput(_)))); // below len()
    /// assert!(matches!(table.rehash(0), Err(Error::InvalidInput(_))));
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn rehash(&mut self, new_capacity: usize) -> Result<()>;

    /// Makes room for `additional` more keys: afterwards, inserting `additional` keys absent
    /// from the table places every one of them (on a table that resizes itself: without
    /// growing). A no-op that keeps the capacity when the room is there already, that is when
    /// `len() + additional <= capacity() * max_load_factor()`; otherwise a
    /// [`rehash`](HashTable::rehash) to the smallest capacity `c` with
    /// `c * max_load_factor() >= len() + additional` (exactly `len() + additional` where the
    /// maximum load factor is 1, as on the CPU backend).
    ///
    /// # Errors
    ///
    /// On any error the table is unchanged.
    /// - [`Error::InvalidInput`] if `len() + additional` overflows `usize`.
    /// - What [`rehash`](HashTable::rehash) returns when one is needed.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(10)?;
    /// table.insert(&[1, 2, 3], &[10, 20, 30])?;
    /// table.reserve(7)?; // 3 + 7 fit already
    /// assert_eq!(table.capacity(), 10);
    /// table.reserve(100)?;
    /// assert_eq!(table.capacity(), 103);
    /// let keys: Vec<u32> = (100..200).collect();
    /// table.insert(&keys, &keys)?; // cannot fail
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn reserve(&mut self, additional: usize) -> Result<()> {
        let needed = self.len()?.checked_add(additional).ok_or_else(|| {
            Error::invalid(format!(
                "reserve({additional}): the stored keys plus {additional} overflow usize"
            ))
        })?;
        let max_load = self.max_load_factor();
        if needed <= keys_at_load(self.capacity(), max_load) {
            return Ok(());
        }
        self.rehash(capacity_for(needed, max_load)?)
    }

    /// Every stored pair, in no particular order.
    ///
    /// # Errors
    ///
    /// None of its own (see the [module docs](self) for a GPU table's device errors).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u32, u32>::new(8)?;
    /// table.insert(&[1, 2], &[10, 20])?;
    /// let (keys, values) = table.retrieve_all()?;
    /// let mut pairs: Vec<(u32, u32)> = keys.into_iter().zip(values).collect();
    /// pairs.sort();
    /// assert_eq!(pairs, vec![(1, 10), (2, 20)]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn retrieve_all(&self) -> Result<(Vec<K>, Vec<V>)>;

    /// Bytes of memory the table holds (device memory for GPU tables).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuTable, HashTable};
    /// let mut table = CpuTable::<u64, u64>::new(1 << 10)?;
    /// let keys: Vec<u64> = (0..1 << 10).collect();
    /// table.insert(&keys, &keys)?;
    /// assert!(table.memory_bytes() >= (1 << 10) * 16);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn memory_bytes(&self) -> usize;
}

/// How many keys `capacity` slots hold at load factor `max_load` (rounded down).
fn keys_at_load(capacity: usize, max_load: f64) -> usize {
    if max_load >= 1.0 {
        capacity
    } else {
        (capacity as f64 * max_load) as usize
    }
}

/// The smallest capacity that holds `keys` keys at load factor `max_load`: exact where
/// `max_load` is 1; otherwise `keys / max_load`, rounded up and then stepped up until
/// [`keys_at_load`] agrees (so a `reserve` after a `reserve` is a no-op despite rounding).
fn capacity_for(keys: usize, max_load: f64) -> Result<usize> {
    if !(max_load > 0.0 && max_load <= 1.0) {
        return Err(Error::invalid(format!(
            "max_load_factor {max_load} is not in (0, 1]"
        )));
    }
    if max_load >= 1.0 {
        return Ok(keys);
    }
    let mut c = (keys as f64 / max_load).ceil() as usize;
    while keys_at_load(c, max_load) < keys {
        c = c.checked_add(1).ok_or_else(|| {
            Error::invalid(format!("{keys} keys at load {max_load} overflow usize"))
        })?;
    }
    Ok(c)
}

/// The checks of [`HashTable::rehash`] every table makes before it changes anything:
/// [`Error::InvalidInput`] for a capacity of 0 or below the `len` keys stored.
pub(crate) fn check_rehash_capacity(new_capacity: usize, len: usize) -> Result<()> {
    if new_capacity == 0 {
        return Err(Error::invalid(
            "rehash to capacity 0: every table holds at least 1 key",
        ));
    }
    if new_capacity < len {
        return Err(Error::invalid(format!(
            "rehash to capacity {new_capacity} cannot hold the {len} stored keys"
        )));
    }
    Ok(())
}

/// For tables that erase only in a phase of their own: [`Error::Unsupported`] if `ops` holds a
/// [`MixedOp::Erase`], naming the scheme, the first erase and `reason` (why the scheme cannot
/// erase during inserts), so that [`HashTable::mixed_batch`] refuses the batch before running
/// any of it.
pub(crate) fn reject_mixed_erase(ops: &[MixedOp], scheme: &str, reason: &str) -> Result<()> {
    match ops.iter().position(|&op| op == MixedOp::Erase) {
        Some(i) => Err(Error::Unsupported(format!(
            "{scheme}: mixed batches cannot erase (operation {i} is an erase): {reason}; \
             call erase() between batches instead"
        ))),
        None => Ok(()),
    }
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
pub(crate) fn insert_all<K: Key, V: Value, T: HashTable<K, V> + ?Sized>(
    table: &mut T,
    keys: &[K],
    values: &[V],
    mode: InsertMode,
) -> Result<()> {
    let mut status = InsertStatus::zeroed_vec(keys.len());
    let failed = table.insert_with_mode(keys, values, &mut status, mode)?;
    if failed > 0 {
        return Err(Error::table_full(failed, keys.len(), table.capacity()));
    }
    Ok(())
}

/// [`DeviceHashTable::find_device_unordered_async`] in input order: the index `0..n` uploaded
/// from the host, and the table's lookup.
pub(crate) fn find_in_input_order<K: Key, V: Value, T: DeviceHashTable<K, V> + ?Sized>(
    table: &T,
    keys: &DeviceBuffer<K>,
) -> Result<UnorderedFind<V>> {
    let gpu = table.gpu();
    let n = check_index_range(keys.len())?;
    let index = gpu.upload(&(0..n).collect::<Vec<u32>>())?;
    let mut values = gpu.alloc::<V>(keys.len())?;
    let mut found = gpu.alloc::<u8>(keys.len())?;
    table.find_device_async(keys, &mut values, &mut found)?;
    Ok(UnorderedFind {
        index,
        values,
        found,
    })
}

/// `n` as a `u32` bound for batch indices: [`Error::InvalidInput`] for `u32::MAX` keys or more.
pub(crate) fn check_index_range(n: usize) -> Result<u32> {
    u32::try_from(n)
        .ok()
        .filter(|&n| n < u32::MAX)
        .ok_or_else(|| {
            Error::invalid(format!(
                "a lookup of {n} keys with batch indices: fewer than {} per call",
                u32::MAX
            ))
        })
}

/// One batch of [`DeviceHashTable::find_device_ordered_parts_async`]: its keys, and where its
/// values (`None`: a contains) and found flags go.
pub struct OrderedFind<'a, K, V> {
    /// The keys, in the table's stretch order.
    pub keys: &'a DeviceBuffer<K>,
    /// The values found (left alone for misses), or `None`.
    pub values: Option<&'a mut DeviceBuffer<V>>,
    /// 1 for each key found, 0 for the others.
    pub found: &'a mut DeviceBuffer<u8>,
}

/// The answers of [`DeviceHashTable::find_device_unordered_async`], in an order of the table's
/// choosing: element `j` of `values` and `found` answers key `index[j]` of the batch.
pub struct UnorderedFind<V> {
    /// The batch index of each answer's key: every index of the batch once.
    pub index: DeviceBuffer<u32>,
    /// The value of each answer's key where it was found (unspecified where not).
    pub values: DeviceBuffer<V>,
    /// 1 where the answer's key is present, 0 where not.
    pub found: DeviceBuffer<u8>,
}

/// The extension of [`HashTable`] for tables on a GPU: every bulk operation on device buffers,
/// synchronous and `_async` (enqueued on the table's stream, returning before it completes).
///
/// An `_async` insert counts the keys it could not place on the device; [`synchronize`]
/// waits for the stream and returns [`Error::TableFull`] (with `batch` 0: the total of the
/// batches is not tracked) if any insert since the last report left keys unplaced. Pass a
/// status buffer to learn which. The host-slice inserts of [`HashTable`] and
/// [`rehash`](HashTable::rehash) collect that report first, so an earlier asynchronous
/// failure surfaces as their error (see [`HashTable::insert_with_status`]).
///
/// An `_async` call checks what it can on the host (buffer lengths, what the table supports)
/// and returns those errors at once; what goes wrong on the device comes back from
/// [`synchronize`] (or the next synchronous call). Every method may also return the device
/// errors of the [module docs](self#errors).
///
/// The examples return early where no GPU is present; on a GPU they run as written.
///
/// [`synchronize`]: DeviceHashTable::synchronize
pub trait DeviceHashTable<K: Key, V: Value>: HashTable<K, V> {
    /// The GPU the table lives on.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let table = WarpDrive::<u32, u32>::new(gpu.clone(), WarpDriveConfig::new(1000))?;
    /// assert!(std::sync::Arc::ptr_eq(table.gpu(), &gpu));
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn gpu(&self) -> &Arc<Gpu>;

    /// Enqueues an insert of device-resident pairs ([`InsertMode::Assign`]). `status`, if
    /// given, receives one [`InsertStatus`] word per key.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `values` or `status` differ in length from `keys`. Keys that
    /// cannot be placed are reported by [`synchronize`](DeviceHashTable::synchronize) (and in
    /// `status`), not here.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, HashTable, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let mut table = WarpDrive::<u32, u32>::new(gpu.clone(), WarpDriveConfig::new(1000))?;
    /// let keys = gpu.upload(&[1u32, 2, 3])?;
    /// let values = gpu.upload(&[10u32, 20, 30])?;
    /// let mut status = gpu.alloc::<u32>(3)?;
    /// table.insert_device_async(&keys, &values, Some(&mut status))?;
    /// table.synchronize()?; // Err(TableFull) if some key could not be placed
    /// assert!(gpu.download(&status)?.iter().all(|&s| s == warpmap::status::OK));
    /// assert_eq!(table.len()?, 3);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn insert_device_async(
        &mut self,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        status: Option<&mut DeviceBuffer<u32>>,
    ) -> Result<()> {
        self.insert_device_async_with_mode(keys, values, status, InsertMode::Assign)
    }

    /// Enqueues an insert of device-resident pairs, present keys treated as `mode` says.
    ///
    /// # Errors
    ///
    /// As [`insert_device_async`](DeviceHashTable::insert_device_async).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, HashTable, InsertMode, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let mut table = WarpDrive::<u32, u32>::new(gpu.clone(), WarpDriveConfig::new(1000))?;
    /// table.insert(&[1], &[10])?;
    /// let (keys, values) = (gpu.upload(&[1u32, 2])?, gpu.upload(&[11u32, 20])?);
    /// table.insert_device_async_with_mode(&keys, &values, None, InsertMode::IfAbsent)?;
    /// table.synchronize()?;
    /// assert_eq!(table.find(&[1, 2])?, vec![Some(10), Some(20)]); // 1 kept its value
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn insert_device_async_with_mode(
        &mut self,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        status: Option<&mut DeviceBuffer<u32>>,
        mode: InsertMode,
    ) -> Result<()>;

    /// Enqueues a lookup: `values[i]` receives the value of `keys[i]` where found, `found[i]`
    /// 1 or 0.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `values` or `found` differ in length from `keys`.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, HashTable, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let mut table = WarpDrive::<u32, u32>::new(gpu.clone(), WarpDriveConfig::new(1000))?;
    /// table.insert(&[1, 2], &[10, 20])?;
    /// let keys = gpu.upload(&[2u32, 5])?;
    /// let (mut values, mut found) = (gpu.alloc::<u32>(2)?, gpu.alloc::<u8>(2)?);
    /// table.find_device_async(&keys, &mut values, &mut found)?;
    /// table.synchronize()?;
    /// assert_eq!(gpu.download(&found)?, vec![1, 0]);
    /// assert_eq!(gpu.download(&values)?[0], 20);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn find_device_async(
        &self,
        keys: &DeviceBuffer<K>,
        values: &mut DeviceBuffer<V>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()>;

    /// Enqueues a membership test: `found[i]` receives 1 or 0.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `found` differs in length from `keys`.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, HashTable, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let mut table = WarpDrive::<u32, u32>::new(gpu.clone(), WarpDriveConfig::new(1000))?;
    /// table.insert(&[1], &[10])?;
    /// let keys = gpu.upload(&[1u32, 2])?;
    /// let mut found = gpu.alloc::<u8>(2)?;
    /// table.contains_device_async(&keys, &mut found)?;
    /// table.synchronize()?;
    /// assert_eq!(gpu.download(&found)?, vec![1, 0]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn contains_device_async(
        &self,
        keys: &DeviceBuffer<K>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()>;

    /// For a caller that reorders a batch of `n` keys anyway (the sharded table splits every
    /// batch by shard): the part function whose order this table takes fastest, or `None` where
    /// order buys nothing (the default). A batch whose keys are in the order of
    /// [`PartFunction::part_of`] (parts in order, any order within a part) may go to
    /// [`insert_device_ordered_async`](DeviceHashTable::insert_device_ordered_async) and
    /// [`find_device_ordered_async`](DeviceHashTable::find_device_ordered_async), whose results
    /// are those of the plain calls; only their speed depends on the order. WarpDrive answers
    /// with the stretches of its table where the batch is long enough for its keys in flight to
    /// stay in L2 ([`locality::order_for`](engine::locality::order_for)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, HashTable, WarpDrive, WarpDriveConfig};
    /// use warpmap::table::engine::{locality::LocalityMode, multisplit::multisplit_by};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let config = WarpDriveConfig::new(1000).locality(LocalityMode::On);
    /// let mut table = WarpDrive::<u32, u32>::new(gpu.clone(), config)?;
    /// let keys: Vec<u32> = (0..500).collect();
    /// let order = table.stretch_order(keys.len()).expect("WarpDrive, locality on");
    /// let (dk, dv) = (gpu.upload(&keys)?, gpu.upload(&keys)?);
    /// let split = multisplit_by(&gpu, &dk, Some(&dv), &order)?; // keys in the order of `order`
    /// let values = split.values.as_ref().expect("split with values");
    /// table.insert_device_ordered_async(&split.keys, values, warpmap::InsertMode::Assign)?;
    /// table.synchronize()?;
    /// assert_eq!(table.len()?, 500);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn stretch_order(&self, n: usize) -> Option<PartFunction> {
        let _ = n;
        None
    }

    /// Enqueues an insert without statuses, present keys treated as `mode` says, of a batch the
    /// caller put in the order of [`stretch_order`](DeviceHashTable::stretch_order): the
    /// results are those of
    /// [`insert_device_async_with_mode`](DeviceHashTable::insert_device_async_with_mode)
    /// (the default calls it), in any order of the batch.
    ///
    /// # Errors
    ///
    /// As [`insert_device_async`](DeviceHashTable::insert_device_async).
    fn insert_device_ordered_async(
        &mut self,
        keys: &DeviceBuffer<K>,
        values: &DeviceBuffer<V>,
        mode: InsertMode,
    ) -> Result<()> {
        self.insert_device_async_with_mode(keys, values, None, mode)
    }

    /// Enqueues a lookup of a batch the caller put in the order of
    /// [`stretch_order`](DeviceHashTable::stretch_order): results as
    /// [`find_device_async`](DeviceHashTable::find_device_async) (`values: None`: as
    /// [`contains_device_async`](DeviceHashTable::contains_device_async)), in the batch's
    /// order, for any order of the batch (the default calls them).
    ///
    /// # Errors
    ///
    /// As [`find_device_async`](DeviceHashTable::find_device_async).
    fn find_device_ordered_async(
        &self,
        keys: &DeviceBuffer<K>,
        values: Option<&mut DeviceBuffer<V>>,
        found: &mut DeviceBuffer<u8>,
    ) -> Result<()> {
        match values {
            Some(v) => self.find_device_async(keys, v, found),
            None => self.contains_device_async(keys, found),
        }
    }

    /// Enqueues a lookup of `keys` whose answers come in an order of the table's choosing, each
    /// with its key's index in the batch ([`UnorderedFind`]): for consumers that do not need
    /// input order, such as a hash join's probe side, which gathers its rows by the index
    /// anyway. WarpDrive answers in the order of its table's stretches where its partitioned
    /// path would be taken for an insert of the batch (a table of at least twice the L2 cache,
    /// a long batch: [`locality::plan`](engine::locality::plan)), at any load: the split of
    /// its partitioned lookup without the gather back to input order. Elsewhere answers come in
    /// input order (`index[j] = j`; the default does that: the index goes up from the host).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for a batch of `u32::MAX` keys or more; as
    /// [`find_device_async`](DeviceHashTable::find_device_async) otherwise.
    fn find_device_unordered_async(&self, keys: &DeviceBuffer<K>) -> Result<UnorderedFind<V>> {
        find_in_input_order(self, keys)
    }

    /// Enqueues the inserts of several batches, each in the order of
    /// [`stretch_order`](DeviceHashTable::stretch_order), as one operation: the results are
    /// those of [`insert_device_ordered_async`](DeviceHashTable::insert_device_ordered_async)
    /// on each in turn (the default does that), but a table may work on the batches together:
    /// WarpDrive's one launch interleaves their tiles by their progress through its stretches,
    /// so that a batch read over a link from another GPU (a [`Gpu::view`] of its buffer) goes
    /// beside one in the table's own memory rather than after it.
    ///
    /// # Errors
    ///
    /// As [`insert_device_async`](DeviceHashTable::insert_device_async).
    fn insert_device_ordered_parts_async(
        &mut self,
        parts: &[(&DeviceBuffer<K>, &DeviceBuffer<V>)],
        mode: InsertMode,
    ) -> Result<()> {
        for (keys, values) in parts {
            self.insert_device_ordered_async(keys, values, mode)?;
        }
        Ok(())
    }

    /// Enqueues the lookups of several batches, each in the order of
    /// [`stretch_order`](DeviceHashTable::stretch_order), as one operation: results as
    /// [`find_device_ordered_async`](DeviceHashTable::find_device_ordered_async) on each (the
    /// default calls it for each in turn; see
    /// [`insert_device_ordered_parts_async`](DeviceHashTable::insert_device_ordered_parts_async)
    /// for why a table works on them together).
    ///
    /// # Errors
    ///
    /// As [`find_device_async`](DeviceHashTable::find_device_async).
    fn find_device_ordered_parts_async(&self, parts: &mut [OrderedFind<'_, K, V>]) -> Result<()> {
        for p in parts {
            self.find_device_ordered_async(p.keys, p.values.as_deref_mut(), p.found)?;
        }
        Ok(())
    }

    /// Enqueues an erase of every key present (absent keys are ignored). The number erased is
    /// the drop in [`len`](HashTable::len).
    ///
    /// # Errors
    ///
    /// None of its own (device errors only, see the [module docs](self#errors)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, HashTable, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let mut table = WarpDrive::<u32, u32>::new(gpu.clone(), WarpDriveConfig::new(1000))?;
    /// table.insert(&[1, 2], &[10, 20])?;
    /// table.erase_device_async(&gpu.upload(&[1u32, 7])?)?;
    /// table.synchronize()?;
    /// assert_eq!(table.len()?, 1);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn erase_device_async(&mut self, keys: &DeviceBuffer<K>) -> Result<()>;

    /// Enqueues a mixed batch of device-resident operations (the device twin of
    /// [`HashTable::mixed_batch`], with its semantics): `ops[i]` is a [`MixedOp`] as its `u8`
    /// (`MixedOp::Insert as u8`, ...). Every buffer holds one entry per key; an insert writes
    /// `status[i]`, a find writes `found[i]` (1 or 0) and, when found, `out[i]`, an erase writes
    /// `found[i]` (1 where it erased the key). Unplaced inserts are reported by
    /// [`synchronize`](DeviceHashTable::synchronize) and in `status`.
    ///
    /// The operations stay on the device, so a table that refuses [`MixedOp::Erase`] in
    /// `mixed_batch` (WarpDrive, Stadium) does not check `ops` for it here: an erase byte (or
    /// any byte that is not a [`MixedOp`]) in `ops` is a caller error, and what the kernel
    /// does with it is unspecified.
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidInput`] if a buffer differs in length from `keys`.
    /// - [`Error::Unsupported`] where the table cannot run mixed batches at all (WarpDrive's
    ///   16-byte slots before sm_90).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, HashTable, MixedOp, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let mut table = WarpDrive::<u32, u32>::new(gpu.clone(), WarpDriveConfig::new(1000))?;
    /// table.insert(&[1], &[10])?;
    /// let ops = gpu.upload(&[MixedOp::Insert as u8, MixedOp::Find as u8])?;
    /// let (keys, values) = (gpu.upload(&[2u32, 1])?, gpu.upload(&[20u32, 0])?);
    /// let mut status = gpu.alloc_filled::<u32>(2, 0)?;
    /// let mut out = gpu.alloc_filled::<u32>(2, 0)?;
    /// let mut found = gpu.alloc_filled::<u8>(2, 0)?;
    /// table.mixed_device_async(&ops, &keys, &values, &mut status, &mut out, &mut found)?;
    /// table.synchronize()?;
    /// assert_eq!((gpu.download(&found)?[1], gpu.download(&out)?[1]), (1, 10));
    /// assert_eq!(table.find(&[2])?, vec![Some(20)]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
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
    ///
    /// # Errors
    ///
    /// [`Error::OutOfMemory`] if the pairs do not fit beside the table;
    /// [`Error::CountMismatch`] if the pairs found differ from the stored count (a bug or a
    /// corrupted table).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, HashTable, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let mut table = WarpDrive::<u32, u32>::new(gpu.clone(), WarpDriveConfig::new(1000))?;
    /// table.insert(&[1, 2], &[10, 20])?;
    /// let (keys, values) = table.retrieve_device()?;
    /// let mut pairs: Vec<(u32, u32)> =
    ///     gpu.download(&keys)?.into_iter().zip(gpu.download(&values)?).collect();
    /// pairs.sort();
    /// assert_eq!(pairs, vec![(1, 10), (2, 20)]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn retrieve_device(&self) -> Result<(DeviceBuffer<K>, DeviceBuffer<V>)>;

    /// Waits for every enqueued operation, then reports what the asynchronous inserts since
    /// the last report left unplaced. Each failure is reported once: a second call returns
    /// `Ok` unless more were enqueued meanwhile.
    ///
    /// # Errors
    ///
    /// - [`Error::TableFull`] with `batch` 0 ([`Error::table_full_async`]) if inserts since
    ///   the last report left keys unplaced; the other keys are in the table.
    /// - The error of a failed kernel or copy ([`Error::Driver`], [`Error::KernelStatus`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Error, Gpu, HashTable, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let mut table = WarpDrive::<u32, u32>::new(gpu.clone(), WarpDriveConfig::new(100))?;
    /// let keys: Vec<u32> = (0..10 * table.capacity() as u32).collect();
    /// let (dk, dv) = (gpu.upload(&keys)?, gpu.upload(&keys)?);
    /// table.insert_device_async(&dk, &dv, None)?; // far too many keys
    /// match table.synchronize() {
    ///     Err(Error::TableFull { failed, batch: 0, .. }) => assert!(failed > 0),
    ///     other => panic!("{other:?}"),
    /// }
    /// table.synchronize()?; // reported once
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn synchronize(&self) -> Result<()>;

    /// Why the table's mixed batches cannot erase, or `None` if they can: the tables that erase
    /// only in a phase of their own (WarpDrive, Stadium, DyCuckoo) say why, and
    /// [`HashTable::mixed_batch`] refuses a batch holding a [`MixedOp::Erase`] with
    /// [`Error::Unsupported`]. Wrappers (the sharded table) ask it before sending a batch on.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let table = WarpDrive::<u32, u32>::new(gpu, WarpDriveConfig::new(100))?;
    /// assert!(table.mixed_erase_refusal().is_some());
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn mixed_erase_refusal(&self) -> Option<&'static str> {
        None
    }

    /// The scheme's own counters, by name: what its kernels and its resizing did since the
    /// table was made (two_level: bucket rebuilds with new seeds, failed builds, splits,
    /// coalesces, buckets; slab: reads of the pool's exact count, super blocks). Empty for schemes
    /// that keep none. Waits for the table's stream.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let table = WarpDrive::<u32, u32>::new(gpu, WarpDriveConfig::new(100))?;
    /// assert!(table.counters()?.is_empty());
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn counters(&self) -> Result<Vec<(&'static str, u64)>> {
        Ok(Vec::new())
    }

    /// Synchronous insert of device-resident pairs: the enqueue, then
    /// [`synchronize`](DeviceHashTable::synchronize).
    ///
    /// # Errors
    ///
    /// Those of [`insert_device_async`](DeviceHashTable::insert_device_async) and
    /// [`synchronize`](DeviceHashTable::synchronize): [`Error::TableFull`] (with `batch` 0)
    /// covers this batch's unplaced keys and any earlier asynchronous insert's not yet
    /// reported.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, HashTable, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let mut table = WarpDrive::<u64, u64>::new(gpu.clone(), WarpDriveConfig::new(1000))?;
    /// let keys: Vec<u64> = (0..500).collect();
    /// table.insert_device(&gpu.upload(&keys)?, &gpu.upload(&keys)?)?;
    /// assert_eq!(table.len()?, 500);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn insert_device(&mut self, keys: &DeviceBuffer<K>, values: &DeviceBuffer<V>) -> Result<()> {
        self.insert_device_async(keys, values, None)?;
        self.synchronize()
    }

    /// Synchronous lookup of device-resident keys: the enqueue, then
    /// [`synchronize`](DeviceHashTable::synchronize).
    ///
    /// # Errors
    ///
    /// Those of [`find_device_async`](DeviceHashTable::find_device_async) and
    /// [`synchronize`](DeviceHashTable::synchronize) (which also reports earlier asynchronous
    /// inserts' unplaced keys).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{DeviceHashTable, Gpu, HashTable, WarpDrive, WarpDriveConfig};
    /// let Ok(gpu) = Gpu::default_gpu() else { return Ok(()) }; // no GPU here
    /// let mut table = WarpDrive::<u32, u32>::new(gpu.clone(), WarpDriveConfig::new(1000))?;
    /// table.insert(&[1], &[10])?;
    /// let (mut values, mut found) = (gpu.alloc::<u32>(1)?, gpu.alloc::<u8>(1)?);
    /// table.find_device(&gpu.upload(&[1u32])?, &mut values, &mut found)?;
    /// assert_eq!((gpu.download(&values)?, gpu.download(&found)?), (vec![10], vec![1]));
    /// # Ok::<(), warpmap::Error>(())
    /// ```
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

/// A hash table that keeps several values per key: every inserted pair is stored, duplicates
/// included, as cuCollections' `static_multimap` (`count`, `retrieve`) and SlabHash (INSERT,
/// SEARCHALL, DELETEALL) do. The CPU backend implements it ([`CpuMultiMap`]); the slab hash
/// will on the GPU.
///
/// Semantics shared by every backend (`tests/multimap.rs` checks them against a
/// `HashMap<K, Vec<V>>`):
/// - [`insert`](MultiMap::insert) stores every pair of the batch as a new pair: nothing is
///   replaced or merged, not even a pair equal to one already stored.
/// - `len` and `capacity` count pairs. A pair that cannot be placed is reported (a status per
///   pair, [`Error::TableFull`] from `insert`) and not stored; every other pair is.
/// - [`count`](MultiMap::count), [`find_all`](MultiMap::find_all) and
///   [`erase_all`](MultiMap::erase_all) act on every pair of a key. A key repeated in a batch of
///   queries is answered at each occurrence; repeated in a batch of erases, its pairs are
///   removed (and counted) once.
/// - The values of one key come in no particular order (the CPU backend: insertion order).
/// - Every key value is insertable, as for [`HashTable`]; batch calls are phase-separated;
///   capacity and growth as in the [module docs](self#capacity-and-growth) (a multimap that
///   resizes itself may change `capacity()` after any insert or erase).
///
/// [`CpuMultiMap`]: crate::CpuMultiMap
pub trait MultiMap<K: Key, V: Value>: Send + Sync {
    /// The scheme's name ("cpu", "slab", ...).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// assert_eq!(CpuMultiMap::<u32, u32>::new(8)?.scheme(), "cpu");
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn scheme(&self) -> &'static str;

    /// Where the multimap lives.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{Backend, CpuMultiMap, MultiMap};
    /// assert_eq!(CpuMultiMap::<u32, u32>::new(8)?.backend(), Backend::Cpu);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn backend(&self) -> Backend;

    /// Stores every pair (a key already present gets one more value).
    ///
    /// # Errors
    ///
    /// - [`Error::InvalidInput`] if `keys` and `values` differ in length; nothing is stored.
    /// - [`Error::TableFull`] (with `batch` = `keys.len()`) if some pairs could not be placed;
    ///   all others are stored.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, Error, MultiMap};
    /// let mut map = CpuMultiMap::<u32, u32>::new(4)?;
    /// map.insert(&[1, 1, 2], &[10, 11, 20])?;
    /// map.insert(&[1], &[10])?; // an equal pair is stored again
    /// assert_eq!(map.count(&[1, 2, 3])?, vec![3, 1, 0]);
    /// // Full: 4 pairs stored, the fifth is refused.
    /// let err = map.insert(&[3], &[30]).unwrap_err();
    /// assert!(matches!(err, Error::TableFull { failed: 1, batch: 1, .. }));
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn insert(&mut self, keys: &[K], values: &[V]) -> Result<()> {
        let mut status = InsertStatus::zeroed_vec(keys.len());
        let failed = self.insert_with_status(keys, values, &mut status)?;
        if failed > 0 {
            return Err(Error::table_full(failed, keys.len(), self.capacity()));
        }
        Ok(())
    }

    /// Stores every pair and writes one status per pair into `status`:
    /// [`OK`](crate::status::OK) where stored, failure bits (such as
    /// [`TABLE_FULL`](crate::status::TABLE_FULL)) where not. Returns the number of pairs that
    /// could not be placed; that is not an error.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `values` or `status` differ in length from `keys`; nothing is
    /// stored.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, InsertStatus, MultiMap};
    /// let mut map = CpuMultiMap::<u32, u32>::new(2)?;
    /// let mut status = vec![InsertStatus::default(); 3];
    /// assert_eq!(map.insert_with_status(&[7, 7, 7], &[1, 2, 3], &mut status)?, 1);
    /// assert!(status[0].is_ok() && status[1].is_ok() && status[2].is_failure());
    /// assert_eq!(map.find_all(&[7])?, (vec![0, 2], vec![1, 2]));
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn insert_with_status(
        &mut self,
        keys: &[K],
        values: &[V],
        status: &mut [InsertStatus],
    ) -> Result<usize>;

    /// Writes the number of values of each key into `counts`; returns their sum.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] if `counts` differs in length from `keys`.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// let mut map = CpuMultiMap::<u32, u32>::new(8)?;
    /// map.insert(&[1, 1, 2], &[10, 11, 20])?;
    /// let mut counts = vec![0; 3];
    /// assert_eq!(map.count_into(&[1, 3, 1], &mut counts)?, 4);
    /// assert_eq!(counts, vec![2, 0, 2]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn count_into(&self, keys: &[K], counts: &mut [usize]) -> Result<usize>;

    /// The number of values of each key.
    ///
    /// # Errors
    ///
    /// None of its own (a GPU multimap may return device errors, see the
    /// [module docs](self#errors)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// let mut map = CpuMultiMap::<u32, u32>::new(8)?;
    /// map.insert(&[1, 1, 2], &[10, 11, 20])?;
    /// assert_eq!(map.count(&[1, 2, 3])?, vec![2, 1, 0]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn count(&self, keys: &[K]) -> Result<Vec<usize>> {
        let mut counts = vec![0; keys.len()];
        self.count_into(keys, &mut counts)?;
        Ok(counts)
    }

    /// Whether each key has at least one value.
    ///
    /// # Errors
    ///
    /// As [`count`](MultiMap::count).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// let mut map = CpuMultiMap::<u32, u32>::new(8)?;
    /// map.insert(&[1], &[10])?;
    /// assert_eq!(map.contains(&[1, 2])?, vec![true, false]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn contains(&self, keys: &[K]) -> Result<Vec<bool>> {
        Ok(self.count(keys)?.into_iter().map(|c| c > 0).collect())
    }

    /// Every value of every key: `(offsets, values)`, where `offsets` has `keys.len() + 1`
    /// entries, starts at 0, and the values of `keys[i]` are `values[offsets[i]..offsets[i +
    /// 1]]` (none for an absent key).
    ///
    /// # Errors
    ///
    /// None of its own (a GPU multimap may return device errors, see the
    /// [module docs](self#errors)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// let mut map = CpuMultiMap::<u32, u32>::new(8)?;
    /// map.insert(&[1, 2, 1], &[10, 20, 11])?;
    /// let (offsets, values) = map.find_all(&[1, 3, 2])?;
    /// assert_eq!(offsets, vec![0, 2, 2, 3]);
    /// let mut of_1 = values[offsets[0]..offsets[1]].to_vec();
    /// of_1.sort(); // in no particular order (insertion order on the CPU)
    /// assert_eq!(of_1, vec![10, 11]);
    /// assert_eq!(&values[offsets[2]..offsets[3]], &[20]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn find_all(&self, keys: &[K]) -> Result<(Vec<usize>, Vec<V>)>;

    /// Removes every pair of every key; returns the number of pairs removed.
    ///
    /// # Errors
    ///
    /// None of its own (a GPU multimap may return device errors, see the
    /// [module docs](self#errors)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// let mut map = CpuMultiMap::<u32, u32>::new(8)?;
    /// map.insert(&[1, 1, 2], &[10, 11, 20])?;
    /// assert_eq!(map.erase_all(&[1, 1, 3])?, 2);
    /// assert_eq!(map.count(&[1, 2])?, vec![0, 1]);
    /// assert_eq!(map.len()?, 1);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn erase_all(&mut self, keys: &[K]) -> Result<usize>;

    /// The number of pairs stored.
    ///
    /// # Errors
    ///
    /// None of its own (a GPU multimap reads a device counter, see the
    /// [module docs](self#errors)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// let mut map = CpuMultiMap::<u32, u32>::new(8)?;
    /// map.insert(&[1, 1, 1], &[10, 10, 11])?;
    /// assert_eq!(map.len()?, 3);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn len(&self) -> Result<usize>;

    /// Whether no pair is stored.
    ///
    /// # Errors
    ///
    /// As [`len`](MultiMap::len).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// assert!(CpuMultiMap::<u32, u32>::new(8)?.is_empty()?);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// How many pairs the multimap can hold. A multimap that resizes itself may change it after
    /// any insert or erase.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// assert_eq!(CpuMultiMap::<u32, u32>::new(100)?.capacity(), 100);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn capacity(&self) -> usize;

    /// Removes every pair; the capacity stays.
    ///
    /// # Errors
    ///
    /// None of its own (a GPU multimap may return device errors, see the
    /// [module docs](self#errors)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// let mut map = CpuMultiMap::<u32, u32>::new(8)?;
    /// map.insert(&[1, 1], &[10, 11])?;
    /// map.clear()?;
    /// assert_eq!((map.len()?, map.capacity()), (0, 8));
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn clear(&mut self) -> Result<()>;

    /// Every stored pair (a key once per value), in no particular order.
    ///
    /// # Errors
    ///
    /// None of its own (a GPU multimap may return device errors, see the
    /// [module docs](self#errors)).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// let mut map = CpuMultiMap::<u32, u32>::new(8)?;
    /// map.insert(&[1, 2, 1], &[10, 20, 10])?;
    /// let (keys, values) = map.retrieve_all()?;
    /// let mut pairs: Vec<(u32, u32)> = keys.into_iter().zip(values).collect();
    /// pairs.sort();
    /// assert_eq!(pairs, vec![(1, 10), (1, 10), (2, 20)]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn retrieve_all(&self) -> Result<(Vec<K>, Vec<V>)>;

    /// Bytes of memory the multimap holds (device memory for GPU multimaps).
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{CpuMultiMap, MultiMap};
    /// let mut map = CpuMultiMap::<u64, u64>::new(1 << 10)?;
    /// let keys: Vec<u64> = (0..1 << 10).map(|i| i / 4).collect();
    /// map.insert(&keys, &keys)?;
    /// assert!(map.memory_bytes() >= (1 << 10) * 8);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    fn memory_bytes(&self) -> usize;
}
