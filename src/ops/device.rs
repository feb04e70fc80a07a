//! The relational operators on device-resident columns: the rows are already in GPU memory
//! ([`DeviceBuffer`]s) and the answers stay there, or come back as a few totals. This is what a
//! query engine that keeps its columns on the GPU calls (the host-slice calls of the
//! [parent module](super) upload the rows and download the answers around the same steps).
//!
//! - [`HashJoin`]: the build side's keys in a [`WarpDrive`] table of their row numbers, probed
//!   with answers in the table's order ([`DeviceHashTable::find_device_unordered_async`]: each
//!   answer carries its probe row, so nothing is gathered back to input order), and
//!   [`HashJoin::sum_matched`] for `COUNT(*), SUM(column)` over the matches, or
//!   [`HashJoin::probe_sum`] for those totals alone.
//! - [`group_by_sums`]: `SELECT key, SUM(c1), SUM(c2), ... GROUP BY key` by reduce by key
//!   (one table per column, [`InsertMode::Apply`]), the groups in the first table's order and the
//!   other columns looked up for them.
//! - [`kmers`] and [`count_kmers`]: the canonical k-mers of reads on the GPU, counted by reduce by
//!   key.
//!
//! The device steps of their own (row numbers, the sum of the matches, the k-mers) are in
//! `kernels/ops.cu`.

use crate::device::{DeviceBuffer, Gpu, Module};
use crate::kernels::{KernelSource, OPS};
use crate::key::{Key, Numeric, Value};
use crate::table::engine::{bulk_grid, BLOCK};
use crate::table::warpdrive::{WarpDrive, WarpDriveConfig};
use crate::{DeviceHashTable, Error, HashTable, InsertMode, Reduce, Result};
use std::sync::Arc;

/// The kernel module of `kernels/ops.cu` (no specialisation: every width is an argument).
pub fn kernel_source() -> KernelSource {
    KernelSource::new("ops", OPS)
}

fn module(gpu: &Gpu) -> Result<Module> {
    gpu.module(&kernel_source())
}

/// `n` row numbers from `start` on the device: `start, start + 1, ...` (`ops_iota`).
///
/// # Errors
/// [`Error::InvalidInput`] if they would pass `u32::MAX`; the device's errors.
pub fn row_numbers(gpu: &Gpu, n: usize, start: u32) -> Result<DeviceBuffer<u32>> {
    if start as u64 + n as u64 > u32::MAX as u64 {
        return Err(Error::invalid(format!(
            "row numbers {start}.. for {n} rows pass u32::MAX"
        )));
    }
    let mut out = gpu.alloc::<u32>(n)?;
    if n > 0 {
        let k = module(gpu)?.kernel("ops_iota")?;
        let n64 = n as u64;
        let mut l = k.launch();
        l.buf_mut(&mut out).arg(&n64).arg(&start);
        // SAFETY: ops_iota(out, n, start) writes out[0..n); `out` holds n u32s. Grid-stride.
        unsafe { l.run(bulk_grid(gpu, n64), BLOCK, 0)? };
    }
    Ok(out)
}

/// Capacity for `keys` distinct keys at a load factor of one half (the host-slice operators'
/// [`room`](super::room), at least one slot).
fn room(keys: usize) -> usize {
    super::room(keys).max(1)
}

/// The matches of a probe, in the table's order ([`HashJoin::probe`]): for each `i`, where
/// `found[i]` is 1, probe row `probe_row[i]` matches build row `build_row[i]` (elsewhere
/// `build_row[i]` is unspecified). Every probe row appears once.
pub struct DeviceMatches {
    /// The probe side's row of each answer.
    pub probe_row: DeviceBuffer<u32>,
    /// The build side's row it matched.
    pub build_row: DeviceBuffer<u32>,
    /// 1 where it matched, 0 where not.
    pub found: DeviceBuffer<u8>,
}

/// A hash join's build side on the GPU: its keys in a [`WarpDrive`] table of their row numbers.
/// The build keys must be distinct (a primary key: TPC-H's `o_orderkey`, a dimension table's
/// id); repeated build keys are refused ([`Error::Unsupported`]: the host-slice joins of the
/// [parent module](super) take them through a multimap).
pub struct HashJoin<K: Key> {
    table: WarpDrive<K, u32>,
    gpu: Arc<Gpu>,
}

/// `COUNT(*)` and `SUM(column)` over a join's matches ([`HashJoin::sum_matched`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchTotals {
    /// The matched probe rows.
    pub count: u64,
    /// The sum of their column values, in 64 bits with wrap-around (as `i64` for signed
    /// columns, as `u64` bits otherwise: see [`MatchTotals::sum_signed`]).
    pub sum_bits: u64,
}

impl MatchTotals {
    /// The sum read as a signed 64-bit integer.
    pub fn sum_signed(&self) -> i64 {
        self.sum_bits as i64
    }
}

impl<K: Key> HashJoin<K> {
    /// Builds on `keys` (row `i` is `keys[i]`), waiting for the build to finish.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if a key repeats; [`Error::InvalidInput`] for `u32::MAX` rows or
    /// more; the table's errors.
    pub fn build(gpu: &Arc<Gpu>, keys: &DeviceBuffer<K>) -> Result<Self> {
        let n = keys.len();
        let rows = row_numbers(gpu, n, 0)?;
        let mut table = WarpDrive::<K, u32>::new(gpu.clone(), WarpDriveConfig::new(room(n)))?;
        table.insert_device_async_with_mode(keys, &rows, None, InsertMode::IfAbsent)?;
        table.synchronize()?;
        let distinct = table.len()?;
        if distinct != n {
            return Err(Error::Unsupported(format!(
                "HashJoin::build: {} of {n} build keys repeat; the device join takes distinct \
                 build keys (ops::inner_join takes repeats through a multimap)",
                n - distinct
            )));
        }
        Ok(HashJoin {
            table,
            gpu: gpu.clone(),
        })
    }

    /// The build side's rows.
    pub fn build_rows(&self) -> Result<usize> {
        self.table.len()
    }

    /// Probes with `keys`: every probe row's match, in the table's order. Asynchronous on the
    /// GPU's stream (the buffers are ordered for any later use).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for `u32::MAX` probe rows or more; the table's errors.
    pub fn probe(&self, keys: &DeviceBuffer<K>) -> Result<DeviceMatches> {
        let f = self.table.find_device_unordered_async(keys)?;
        Ok(DeviceMatches {
            probe_row: f.index,
            build_row: f.values,
            found: f.found,
        })
    }

    /// `COUNT(*)` and `SUM(column)` of the probe rows that match, straight from the probe keys:
    /// a membership test in input order ([`DeviceHashTable::contains_device_async`], which the
    /// table partitions by its stretches where that pays) and a coalesced sum of `column` where
    /// found. Cheaper than [`probe`](Self::probe) then [`sum_matched`](Self::sum_matched) when
    /// only the totals are wanted: no build rows are written and `column` is read in order.
    /// Waits for the answer.
    ///
    /// # Errors
    /// As [`sum_matched`](Self::sum_matched); [`Error::InvalidInput`] if `column` is shorter
    /// than `keys`.
    pub fn probe_sum<V: Value>(
        &self,
        keys: &DeviceBuffer<K>,
        column: &DeviceBuffer<V>,
    ) -> Result<MatchTotals> {
        let mut found = self.gpu.alloc::<u8>(keys.len())?;
        self.table.contains_device_async(keys, &mut found)?;
        sum_found(&self.gpu, &found, None, column)
    }

    /// `COUNT(*)` and `SUM(column[probe row])` over the matches of a probe (`ops_found_sum`),
    /// `column` being a probe-side column of 4- or 8-byte integers. Waits for the answer.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for columns of other types; [`Error::InvalidInput`] if `column`
    /// is shorter than the probe; the device's errors.
    pub fn sum_matched<V: Value>(
        &self,
        matches: &DeviceMatches,
        column: &DeviceBuffer<V>,
    ) -> Result<MatchTotals> {
        sum_found(&self.gpu, &matches.found, Some(&matches.probe_row), column)
    }
}

/// The count of the rows where `found[i]` is not 0, and the sum of `column[index[i]]` over them
/// (`column[i]` without `index`), 4- or 8-byte integers summed in 64 bits.
///
/// # Errors
/// As [`HashJoin::sum_matched`].
pub fn sum_found<V: Value>(
    gpu: &Gpu,
    found: &DeviceBuffer<u8>,
    index: Option<&DeviceBuffer<u32>>,
    column: &DeviceBuffer<V>,
) -> Result<MatchTotals> {
    let signed = match V::NUMERIC {
        Some(Numeric::Signed) => 1u32,
        Some(Numeric::Unsigned) => 0u32,
        _ => {
            return Err(Error::Unsupported(format!(
                "sum of the matches: integer columns only, not {}",
                V::NAME
            )))
        }
    };
    let n = found.len();
    if index.is_some_and(|x| x.len() < n) || (index.is_none() && column.len() < n) {
        return Err(Error::invalid(format!(
            "sum of the matches: {n} answers, a shorter index or column"
        )));
    }
    let mut totals = gpu.alloc_filled::<u64>(2, 0)?;
    if n > 0 {
        let k = module(gpu)?.kernel("ops_found_sum")?;
        let (n64, null, bytes) = (n as u64, 0u64, V::BYTES as u32);
        let mut l = k.launch();
        l.buf(found);
        match index {
            Some(x) => l.buf(x),
            None => l.arg(&null),
        };
        l.buf(column)
            .arg(&bytes)
            .arg(&signed)
            .arg(&n64)
            .buf_mut(&mut totals);
        // SAFETY: ops_found_sum(found, index, values, value_bytes, is_signed, n, totals): found
        // holds n bytes; index (if given) n u32s (checked above), each a row of the probe, so
        // below column's length when the matches came from a probe of that column's rows;
        // without it the column holds n values (checked above); value_bytes is V's width (4 or
        // 8 for integer Values); totals holds two u64s. Grid-stride.
        unsafe { l.run(bulk_grid(gpu, n64), BLOCK, 0)? };
    }
    let t = gpu.download(&totals)?;
    Ok(MatchTotals {
        count: t[0],
        sum_bits: t[1],
    })
}

/// The groups of [`group_by_sums`], on the device: group `i` is `keys[i]`, its sum of column
/// `j` is `sums[j][i]`; groups in no particular order.
pub struct DeviceGroups<K, V> {
    /// Each group's key.
    pub keys: DeviceBuffer<K>,
    /// Each column's sums, a value per group.
    pub sums: Vec<DeviceBuffer<V>>,
}

/// `SELECT key, SUM(c) for c in columns GROUP BY key` on device-resident rows, by reduce by key
/// into one [`WarpDrive`] table per column; the first table's groups name them and the other
/// columns are looked up for them. `expected_groups` sizes the tables (load one half); `None`
/// takes the rows' count, which always fits. Waits for the answer.
///
/// # Errors
/// [`Error::InvalidInput`] if a column's length differs from the keys'; [`Error::Unsupported`]
/// for values that are not numeric; [`Error::TableFull`](crate::Error) if more groups come
/// than `expected_groups` leaves room for; the tables' errors.
pub fn group_by_sums<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    keys: &DeviceBuffer<K>,
    columns: &[&DeviceBuffer<V>],
    expected_groups: Option<usize>,
) -> Result<DeviceGroups<K, V>> {
    for c in columns {
        crate::error::check_same_len("group_by_sums", keys.len(), c.len())?;
    }
    let Some((first, rest)) = columns.split_first() else {
        return Err(Error::invalid("group_by_sums: no columns to sum"));
    };
    let capacity = room(expected_groups.unwrap_or(keys.len()));
    let reduce = |c: &DeviceBuffer<V>| -> Result<WarpDrive<K, V>> {
        let mut t = WarpDrive::<K, V>::new(gpu.clone(), WarpDriveConfig::new(capacity))?;
        t.insert_device_async_with_mode(keys, c, None, InsertMode::Apply(Reduce::Sum))?;
        Ok(t)
    };
    let head = reduce(first)?;
    head.synchronize()?;
    let (group_keys, head_sums) = head.retrieve_device()?;
    drop(head);
    let mut sums = vec![head_sums];
    for c in rest {
        let t = reduce(c)?;
        let mut values = gpu.alloc::<V>(group_keys.len())?;
        let mut found = gpu.alloc::<u8>(group_keys.len())?;
        t.find_device_async(&group_keys, &mut values, &mut found)?;
        t.synchronize()?;
        sums.push(values);
    }
    Ok(DeviceGroups {
        keys: group_keys,
        sums,
    })
}

/// The canonical k-mers of `reads` reads of `read_len` bases each, stored one after another in
/// `bases` (ASCII, either case): window `p` of read `r` is key `r * (read_len - k + 1) + p`,
/// the smaller of the k-mer and its reverse complement packed 2 bits a base (A=0, C=1, G=2,
/// T=3, the first base highest). A window holding another byte than ACGT gets the key
/// [`NOT_A_KMER`]. Also returns a count of 1 per window (the values of [`count_kmers`]).
///
/// # Errors
/// [`Error::InvalidInput`] unless `1 <= k <= 31` and `k <= read_len`, or if `bases` is shorter
/// than the reads; the device's errors.
pub fn kmers(
    gpu: &Gpu,
    bases: &DeviceBuffer<u8>,
    reads: usize,
    read_len: usize,
    k: usize,
) -> Result<(DeviceBuffer<u64>, DeviceBuffer<u32>)> {
    if !(1..=31).contains(&k) || k > read_len || read_len > u32::MAX as usize {
        return Err(Error::invalid(format!(
            "k-mers: k = {k} with reads of {read_len} bases (1 <= k <= 31, k <= the read length)"
        )));
    }
    if bases.len() < reads.saturating_mul(read_len) {
        return Err(Error::invalid(format!(
            "k-mers: {reads} reads of {read_len} bases need {} bytes, not {}",
            reads as u128 * read_len as u128,
            bases.len()
        )));
    }
    let n = reads * (read_len - k + 1);
    let (mut keys, mut ones) = (gpu.alloc::<u64>(n)?, gpu.alloc::<u32>(n)?);
    if n > 0 {
        let kernel = module(gpu)?.kernel("ops_kmers")?;
        let (reads64, len32, k32) = (reads as u64, read_len as u32, k as u32);
        let mut l = kernel.launch();
        l.buf(bases)
            .arg(&reads64)
            .arg(&len32)
            .arg(&k32)
            .buf_mut(&mut keys)
            .buf_mut(&mut ones);
        // SAFETY: ops_kmers(bases, reads, read_len, k, keys, ones): bases holds reads * read_len
        // bytes (checked), 1 <= k <= min(31, read_len) (checked), keys and ones hold
        // reads * (read_len - k + 1) elements each. Grid-stride.
        unsafe { l.run(bulk_grid(gpu, n as u64), BLOCK, 0)? };
    }
    Ok((keys, ones))
}

/// The key [`kmers`] gives a window that is not a k-mer (a base other than ACGT): all ones, which
/// no canonical k-mer of `k <= 31` equals (they fit 62 bits).
pub const NOT_A_KMER: u64 = u64::MAX;

/// Counts the canonical k-mers of reads on the device ([`kmers`], then reduce by key into a
/// [`WarpDrive`] table of `expected_distinct` keys at load one half, or of every window where
/// `None`): the table of k-mer → count. Its key [`NOT_A_KMER`], if present, counts the windows
/// that held another base. Waits for the count.
///
/// # Errors
/// As [`kmers`]; the table's.
pub fn count_kmers(
    gpu: &Arc<Gpu>,
    bases: &DeviceBuffer<u8>,
    reads: usize,
    read_len: usize,
    k: usize,
    expected_distinct: Option<usize>,
) -> Result<WarpDrive<u64, u32>> {
    let (keys, ones) = kmers(gpu, bases, reads, read_len, k)?;
    let capacity = room(expected_distinct.unwrap_or(keys.len()));
    let mut t = WarpDrive::<u64, u32>::new(gpu.clone(), WarpDriveConfig::new(capacity))?;
    t.insert_device_async_with_mode(&keys, &ones, None, InsertMode::Apply(Reduce::Sum))?;
    t.synchronize()?;
    Ok(t)
}
