//! Host-side plumbing shared by the GPU tables (WarpDrive, Stadium): the two counters every
//! kernel of a table updates, and the host-slice [`HashTable`] methods written once over a
//! table's device launches ([`GpuLaunches`]). A table keeps only what is its own: its buffers,
//! its kernel arguments and its checks.

use crate::device::{DeviceBuffer, Gpu};
use crate::error::check_same_len;
use crate::key::{Key, Value};
use crate::status::InsertStatus;
use crate::table::{check_mixed_lens, DeviceHashTable, HashTable, InsertMode, MixedOp};
use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// `[stored keys, keys left unplaced by all inserts so far]` on the device, and how many of
/// those failures were already reported.
pub(crate) struct Counters {
    buf: DeviceBuffer<u64>,
    /// `buf[1]` when failures were last reported: later ones are `buf[1] - this`.
    failed_seen: AtomicU64,
}

impl Counters {
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Counters {
            buf: gpu.alloc_filled::<u64>(2, 0)?,
            failed_seen: AtomicU64::new(0),
        })
    }
    /// The device buffer, for the kernels.
    pub fn buffer(&mut self) -> &mut DeviceBuffer<u64> {
        &mut self.buf
    }
    pub fn num_bytes(&self) -> usize {
        self.buf.num_bytes()
    }
    fn read(&self, gpu: &Gpu) -> Result<[u64; 2]> {
        let mut m = [0u64; 2];
        gpu.copy_to_host(&self.buf, &mut m)?;
        Ok(m)
    }
    /// Stored keys.
    pub fn len(&self, gpu: &Gpu) -> Result<usize> {
        Ok(self.read(gpu)?[0] as usize)
    }
    /// Zero stored keys (the failure count stays: it is reported once).
    pub fn reset(&mut self, gpu: &Gpu) -> Result<()> {
        let failed = self.read(gpu)?[1];
        gpu.copy_to_device(&[0u64, failed], &mut self.buf)
    }
    /// Marks every failure so far as reported (the caller returned them per key).
    pub fn mark_reported(&self, gpu: &Gpu) -> Result<()> {
        self.failed_seen
            .store(self.read(gpu)?[1], Ordering::Relaxed);
        Ok(())
    }
    /// Waits for the GPU, then reports the failures of asynchronous inserts since the last
    /// report as [`Error::TableFull`].
    pub fn synchronize(&self, gpu: &Gpu, capacity: usize) -> Result<()> {
        gpu.synchronize()?;
        let total = self.read(gpu)?[1];
        let seen = self.failed_seen.swap(total, Ordering::Relaxed);
        let failed = total.saturating_sub(seen) as usize;
        if failed > 0 {
            return Err(Error::TableFull {
                failed,
                batch: 0,
                capacity,
            });
        }
        Ok(())
    }
}

/// What a GPU table launches; the host-slice methods below are written over these.
pub(crate) trait GpuLaunches<K: Key, V: Value>:
    HashTable<K, V> + DeviceHashTable<K, V>
{
    fn counters(&self) -> &Counters;
}

/// [`HashTable::insert_with_mode`] through the device: upload, launch, per-key statuses back.
pub(crate) fn insert<K: Key, V: Value, T: GpuLaunches<K, V>>(
    t: &mut T,
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
    t.synchronize()?; // earlier asynchronous failures surface here, not in these statuses
    let gpu = t.gpu().clone();
    let (dk, dv) = (gpu.upload(keys)?, gpu.upload(values)?);
    let mut ds = gpu.alloc::<u32>(keys.len())?;
    t.insert_device_async_with_mode(&dk, &dv, Some(&mut ds), mode)?;
    gpu.copy_to_host(&ds, bytemuck::cast_slice_mut(status))?;
    t.counters().mark_reported(&gpu)?; // the statuses are the report
    Ok(status.iter().filter(|s| s.is_failure()).count())
}

/// [`HashTable::mixed_batch`] through the device.
#[allow(clippy::too_many_arguments)]
pub(crate) fn mixed<K: Key, V: Value, T: GpuLaunches<K, V>>(
    t: &mut T,
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
    // Both schemes on this glue (WarpDrive, Stadium) erase only in a phase of their own.
    crate::table::reject_mixed_erase(
        ops,
        t.scheme(),
        "its erases are phase-separated from inserts, as in its paper",
    )?;
    if keys.is_empty() {
        return Ok(0);
    }
    t.synchronize()?;
    let gpu = t.gpu().clone();
    let d_ops = gpu.upload(bytemuck::cast_slice::<MixedOp, u8>(ops))?;
    let (dk, dv) = (gpu.upload(keys)?, gpu.upload(values)?);
    // Uploaded, so that entries of the other kind of operation come back unchanged.
    let mut ds = gpu.upload(bytemuck::cast_slice::<InsertStatus, u32>(status))?;
    let mut d_out = gpu.upload(out)?;
    let mut d_found = gpu.alloc_filled::<u8>(keys.len(), 0)?;
    t.mixed_device_async(&d_ops, &dk, &dv, &mut ds, &mut d_out, &mut d_found)?;
    gpu.copy_to_host(&ds, bytemuck::cast_slice_mut::<InsertStatus, u32>(status))?;
    gpu.copy_to_host(&d_out, out)?;
    let flags = gpu.download(&d_found)?;
    let mut failed = 0;
    for (i, op) in ops.iter().enumerate() {
        match op {
            MixedOp::Insert => failed += usize::from(status[i].is_failure()),
            MixedOp::Find => found[i] = flags[i] != 0,
            MixedOp::Erase => {} // refused above
        }
    }
    t.counters().mark_reported(&gpu)?;
    Ok(failed)
}

/// [`HashTable::find_into`] through the device.
pub(crate) fn find_into<K: Key, V: Value, T: GpuLaunches<K, V>>(
    t: &T,
    keys: &[K],
    values: &mut [V],
    found: &mut [bool],
) -> Result<usize> {
    check_same_len("find", keys.len(), values.len())?;
    check_same_len("find", keys.len(), found.len())?;
    if keys.is_empty() {
        return Ok(0);
    }
    let gpu = t.gpu();
    let dk = gpu.upload(keys)?;
    let mut dv = gpu.alloc::<V>(keys.len())?;
    let mut df = gpu.alloc::<u8>(keys.len())?;
    t.find_device_async(&dk, &mut dv, &mut df)?;
    let (flags, v) = (gpu.download(&df)?, gpu.download(&dv)?);
    let mut hits = 0;
    for i in 0..keys.len() {
        found[i] = flags[i] != 0;
        if found[i] {
            values[i] = v[i];
            hits += 1;
        }
    }
    Ok(hits)
}

/// [`HashTable::contains`] through the device.
pub(crate) fn contains<K: Key, V: Value, T: GpuLaunches<K, V>>(
    t: &T,
    keys: &[K],
) -> Result<Vec<bool>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let gpu = t.gpu();
    let dk = gpu.upload(keys)?;
    let mut df = gpu.alloc::<u8>(keys.len())?;
    t.contains_device_async(&dk, &mut df)?;
    Ok(gpu.download(&df)?.into_iter().map(|b| b != 0).collect())
}

/// [`HashTable::erase`] through the device: the number erased is the drop in `len`.
pub(crate) fn erase<K: Key, V: Value, T: GpuLaunches<K, V>>(
    t: &mut T,
    keys: &[K],
) -> Result<usize> {
    if keys.is_empty() {
        return Ok(0);
    }
    let before = t.len()?;
    let dk = t.gpu().upload(keys)?;
    t.erase_device_async(&dk)?;
    Ok(before.saturating_sub(t.len()?))
}
