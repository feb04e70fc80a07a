//! The relational operators on device-resident columns: the rows are already in GPU memory
//! ([`DeviceBuffer`]s) and the answers stay there, or come back as a few totals. This is what a
//! query engine that keeps its columns on the GPU calls (the host-slice calls of the
//! [parent module](super) upload the rows and download the answers around the same steps).
//!
//! - [`HashJoin`]: the build side's keys and row numbers in a join table of its own (16-byte
//!   rows, linear probing), probed in input order with runs of equal probe keys looked up once;
//!   [`HashJoin::sum_matched`] for `COUNT(*), SUM(column)` over the matches, or
//!   [`HashJoin::probe_sum`] for those totals in the probe's one pass.
//! - [`group_by`]: `SELECT key, agg(c1), agg(c2), ... [, COUNT(*)] GROUP BY key` in one pass
//!   over the rows into a group table of its own (a row holds the key and every aggregate),
//!   runs of equal keys folded in the warp, few groups folded per block in shared memory first;
//!   sized by [`estimate_distinct`] (a HyperLogLog sketch) unless told. [`group_by_sums`] is
//!   its `SUM`s.
//! - [`kmers`] and [`count_kmers`]: the canonical k-mers of reads on the GPU, counted by reduce by
//!   key.
//!
//! The device steps (row numbers, the join and group tables, the sum of the matches, the
//! k-mers, the sketch) are in `kernels/ops.cu`; the k-mers are counted in a [`WarpDrive`]
//! table.

use crate::device::{DeviceBuffer, Gpu, Launch, Module};
use crate::kernels::{KernelSource, OPS};
use crate::key::{Key, Numeric, Value};
use crate::table::engine::{bulk_grid, BLOCK};
use crate::table::warpdrive::{WarpDrive, WarpDriveConfig};
use crate::{DeviceHashTable, Error, InsertMode, Reduce, Result};
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

/// The matches of a probe ([`HashJoin::probe`]), in input order: for each `i`, where `found[i]`
/// is 1, probe row `probe_row[i]` (which is `i`) matches build row `build_row[i]` (elsewhere
/// `build_row[i]` is `u32::MAX`). Every probe row appears once.
pub struct DeviceMatches {
    /// The probe side's row of each answer.
    pub probe_row: DeviceBuffer<u32>,
    /// The build side's row it matched.
    pub build_row: DeviceBuffer<u32>,
    /// 1 where it matched, 0 where not.
    pub found: DeviceBuffer<u8>,
}

/// A hash join's build side on the GPU: its keys and their row numbers in a join table
/// (`ops_join_*` in kernels/ops.cu: open addressing, linear probing, the key and its build row
/// in 16 bytes, at a load of one half). A probe folds runs of equal probe keys (a fact table
/// clustered on its foreign key: TPC-H's lineitem on `l_orderkey`) so that a run looks its key
/// up once. The build keys must be distinct (a primary key: TPC-H's `o_orderkey`, a dimension
/// table's id); repeated build keys are refused ([`Error::Unsupported`]: the host-slice joins
/// of the [parent module](super) take them through a multimap). Every key value is a key (the
/// table's free mark, all ones, has a side row).
pub struct HashJoin<K: Key> {
    rows: DeviceBuffer<u64>,
    /// Hashed rows (the side row is one more), as the kernels take it.
    capacity: u64,
    map: KeyMap,
    build_rows: usize,
    gpu: Arc<Gpu>,
    _key: std::marker::PhantomData<K>,
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

/// The load a join table is built at.
const JOIN_LOAD: f64 = 0.5;

impl<K: Key> HashJoin<K> {
    /// Builds on `keys` (row `i` is `keys[i]`), waiting for the build to finish.
    ///
    /// # Errors
    /// [`Error::Unsupported`] if a key repeats, or for keys other than 4 or 8 bytes;
    /// [`Error::InvalidInput`] for `u32::MAX` rows or more; the device's errors.
    pub fn build(gpu: &Arc<Gpu>, keys: &DeviceBuffer<K>) -> Result<Self> {
        check_group_types::<K, u64>(true)?;
        let n = keys.len();
        if n >= u32::MAX as usize {
            return Err(Error::invalid(format!(
                "HashJoin::build: {n} rows; build rows are u32, so fewer than {}",
                u32::MAX
            )));
        }
        // More rows than keys: every key finds a free row, so the hash's probing ends.
        let capacity = ((n as f64 / JOIN_LOAD).ceil() as usize).max(n + 1).max(64);
        let bounds = sketch(gpu, keys)?;
        let mut map = KeyMap::choose(n as f64, bounds.lo, bounds.hi, capacity);
        let m = module(gpu)?;
        let template = gpu.upload(&[u64::MAX, 0])?;
        let mut rows = gpu.alloc::<u64>((capacity + 1) * 2)?;
        let (repeats, map) = loop {
            init_rows(gpu, &m, &mut rows, 2, &template)?;
            let mut counters = gpu.alloc_filled::<u64>(2, 0)?;
            if n > 0 {
                let build = m.kernel("ops_join_build")?;
                let (key_bytes, n64, cap64) = (K::BYTES as u32, n as u64, capacity as u64);
                // The hash probes as far as it takes (there is room for every key); the range
                // map gives up where keys crowd, and the hash builds again.
                let max_probes = if map.is_range() {
                    MAX_PROBES.min(cap64)
                } else {
                    cap64
                };
                let mut l = build.launch();
                l.buf(keys)
                    .arg(&key_bytes)
                    .arg(&n64)
                    .buf_mut(&mut rows)
                    .arg(&cap64)
                    .arg(&max_probes)
                    .arg(&map.lo)
                    .arg(&map.hi)
                    .arg(&map.scale)
                    .buf_mut(&mut counters);
                // SAFETY: ops_join_build(keys, key_bytes, n, rows, capacity, max_probes, map_lo,
                // map_hi, map_scale, counters): keys holds n keys of key_bytes (4 or 8:
                // checked); rows (capacity + 1) * 2 words with capacity > n; counters two u64s.
                // Grid-stride.
                unsafe { l.run(bulk_grid(gpu, n64), BLOCK, 0)? };
            }
            let c = gpu.download(&counters)?;
            if c[1] == 0 {
                break (c[0], map);
            }
            map = KeyMap::HASHED;
        };
        if repeats != 0 {
            return Err(Error::Unsupported(format!(
                "HashJoin::build: {repeats} of {n} build keys repeat; the device join takes \
                 distinct build keys (ops::inner_join takes repeats through a multimap)"
            )));
        }
        Ok(HashJoin {
            rows,
            capacity: capacity as u64,
            map,
            build_rows: n,
            gpu: gpu.clone(),
            _key: std::marker::PhantomData,
        })
    }

    /// The build side's rows.
    pub fn build_rows(&self) -> Result<usize> {
        Ok(self.build_rows)
    }

    /// The table's arguments of the probe kernels: `rows, capacity, map_lo, map_hi, map_scale`
    /// (rows holds capacity + 1 rows of two words, as ops_join_build left them).
    fn table_args<'a>(&'a self, l: &mut Launch<'a>) {
        l.buf(&self.rows)
            .arg(&self.capacity)
            .arg(&self.map.lo)
            .arg(&self.map.hi)
            .arg(&self.map.scale);
    }

    /// Probes with `keys`: every probe row's match, in input order. Asynchronous on the GPU's
    /// stream (the buffers are ordered for any later use).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for `u32::MAX` probe rows or more; the device's errors.
    pub fn probe(&self, keys: &DeviceBuffer<K>) -> Result<DeviceMatches> {
        let n = keys.len();
        let probe_row = row_numbers(&self.gpu, n, 0)?;
        let mut build_row = self.gpu.alloc::<u32>(n)?;
        let mut found = self.gpu.alloc::<u8>(n)?;
        if n > 0 {
            let k = module(&self.gpu)?.kernel("ops_join_probe")?;
            let (key_bytes, n64) = (K::BYTES as u32, n as u64);
            let mut l = k.launch();
            l.buf(keys).arg(&key_bytes).arg(&n64);
            self.table_args(&mut l);
            l.buf_mut(&mut build_row).buf_mut(&mut found);
            // SAFETY: ops_join_probe(keys, key_bytes, n, rows, capacity, map_lo, map_hi,
            // map_scale, build_row, found): keys holds n keys of key_bytes; the table as built;
            // build_row and found n elements each. Warp-stride.
            unsafe { l.run(bulk_grid(&self.gpu, n64), BLOCK, 0)? };
        }
        Ok(DeviceMatches {
            probe_row,
            build_row,
            found,
        })
    }

    /// `COUNT(*)` and `SUM(column)` of the probe rows that match, straight from the probe keys
    /// in one pass (`ops_join_probe_sum`: the keys and the column read in order, a run of equal
    /// keys looked up once), `column` being a probe-side column of 4- or 8-byte integers.
    /// Cheaper than [`probe`](Self::probe) then [`sum_matched`](Self::sum_matched) when only
    /// the totals are wanted. Waits for the answer.
    ///
    /// # Errors
    /// As [`sum_matched`](Self::sum_matched); [`Error::InvalidInput`] if `column` is shorter
    /// than `keys`.
    pub fn probe_sum<V: Value>(
        &self,
        keys: &DeviceBuffer<K>,
        column: &DeviceBuffer<V>,
    ) -> Result<MatchTotals> {
        let signed = integer_kind::<V>()?;
        let n = keys.len();
        if column.len() < n {
            return Err(Error::invalid(format!(
                "probe_sum: {n} probe keys, a column of {}",
                column.len()
            )));
        }
        let mut totals = self.gpu.alloc_filled::<u64>(2, 0)?;
        if n > 0 {
            let k = module(&self.gpu)?.kernel("ops_join_probe_sum")?;
            let (key_bytes, n64, value_bytes) = (K::BYTES as u32, n as u64, V::BYTES as u32);
            let mut l = k.launch();
            l.buf(keys)
                .arg(&key_bytes)
                .arg(&n64)
                .buf(column)
                .arg(&value_bytes)
                .arg(&signed);
            self.table_args(&mut l);
            l.buf_mut(&mut totals);
            // SAFETY: ops_join_probe_sum(keys, key_bytes, n, column, value_bytes, is_signed,
            // rows, capacity, map_lo, map_hi, map_scale, totals): keys holds n keys of
            // key_bytes; column at least n values of value_bytes (4 or 8: integers, checked);
            // the table as built; totals two u64s. Warp-stride.
            unsafe { l.run(bulk_grid(&self.gpu, n64), BLOCK, 0)? };
        }
        let t = self.gpu.download(&totals)?;
        Ok(MatchTotals {
            count: t[0],
            sum_bits: t[1],
        })
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

/// 1 for signed integer values, 0 for unsigned ones; [`Error::Unsupported`] for the others.
fn integer_kind<V: Value>() -> Result<u32> {
    match V::NUMERIC {
        Some(Numeric::Signed) => Ok(1),
        Some(Numeric::Unsigned) => Ok(0),
        _ => Err(Error::Unsupported(format!(
            "sum of the matches: integer columns only, not {}",
            V::NAME
        ))),
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
    let signed = integer_kind::<V>()?;
    let n = found.len();
    if index.is_some_and(|x| x.len() < n) || (index.is_none() && column.len() < n) {
        return Err(Error::invalid(format!(
            "sum of the matches: {n} answers, a shorter index or column"
        )));
    }
    let mut totals = gpu.alloc_filled::<u64>(2, 0)?;
    if n > 0 {
        let k = module(gpu)?.kernel("ops_found_sum")?;
        let (n64, bytes) = (n as u64, V::BYTES as u32);
        let mut l = k.launch();
        l.buf(found);
        l.opt_buf(index);
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

/// The groups of [`group_by`] (and [`group_by_sums`]), on the device: group `i` is `keys[i]`,
/// its aggregate of column `j` is `values[j][i]` and, where asked, its row count `counts[i]`;
/// groups in no particular order.
pub struct DeviceGroups<K, V> {
    /// Each group's key.
    pub keys: DeviceBuffer<K>,
    /// Each column's aggregate, a value per group.
    pub values: Vec<DeviceBuffer<V>>,
    /// Each group's rows (`COUNT(*)`), where asked.
    pub counts: Option<DeviceBuffer<u64>>,
}

/// The most columns one [`group_by`] folds (a table row is the key, the columns and the count,
/// in at most 16 words).
pub const MAX_GROUP_COLUMNS: usize = 14;

/// The load a group table is sized for (at the estimated group count).
const GROUP_LOAD: f64 = 0.6;
/// The margin over a sketch's estimate (its standard error is 1.6 %).
const ESTIMATE_MARGIN: f64 = 1.1;
/// Dynamic shared memory for a block's own group table: the default limit, which leaves room
/// for four blocks of 256 threads on a multiprocessor.
const SHARED_TABLE_BYTES: usize = 48 << 10;
/// The key probes before a global group table counts as too small.
const MAX_PROBES: u64 = 4096;
/// Rows a thread of `ops_group_emit` looks at (`OPS_EMIT_ITEMS`).
const EMIT_ITEMS: u64 = 8;

/// Where a table's keys start probing (`ops_map` in kernels/ops.cu): their hash, or their place
/// in the keys' range `[lo, hi]` (`scale` rows per key value; 0 for the hash).
#[derive(Clone, Copy, Debug, PartialEq)]
struct KeyMap {
    lo: u64,
    hi: u64,
    scale: f64,
}

/// The range map is taken where the keys fill at least this share of their range.
const RANGE_MAP_DENSITY: f64 = 1.0 / 16.0;

impl KeyMap {
    const HASHED: KeyMap = KeyMap {
        lo: 0,
        hi: 0,
        scale: 0.0,
    };

    /// The range map for `keys` distinct keys in `[lo, hi]` over `capacity` rows where they
    /// fill enough of the range (rows of near keys stay near: a sorted or clustered column
    /// touches the table in order), else the hash. `WARPMAP_KEY_MAP=hash|range` forces one
    /// (measurements; `range` still needs lo <= hi).
    fn choose(keys: f64, lo: u64, hi: u64, capacity: usize) -> KeyMap {
        if lo > hi {
            return KeyMap::HASHED; // no keys
        }
        let span = (hi - lo) as f64 + 1.0;
        let dense = keys >= span * RANGE_MAP_DENSITY;
        let range = match std::env::var("WARPMAP_KEY_MAP").as_deref() {
            Ok("hash") => false,
            Ok("range") => true,
            _ => dense,
        };
        if range {
            KeyMap {
                lo,
                hi,
                scale: capacity as f64 / span,
            }
        } else {
            KeyMap::HASHED
        }
    }

    fn is_range(&self) -> bool {
        self.scale != 0.0
    }
}

/// `SELECT key, agg_0(c_0), agg_1(c_1), ... [, COUNT(*)] GROUP BY key` on device-resident rows,
/// in one pass over them: each row's key finds or claims its row of a group table (open
/// addressing, the key and every aggregate in one 32-byte sector for up to three aggregates)
/// and each column is reduced into it atomically (`ops_group_reduce` in kernels/ops.cu).
/// Rows that repeat a key next to each other (a table sorted or clustered on its key) are folded
/// in the warp first, so a run costs one probe. Where the groups are few enough (about 900 of up
/// to three aggregates), each block folds its rows in a table in shared memory first. Where the
/// keys fill their range (at least a sixteenth of it), the table places them by their place in
/// it rather than by hash (rows of near keys stay near), and falls back to the hash where the
/// keys crowd part of the range.
///
/// Where the key column is sorted (as unsigned bits; one read of the keys tells), no table is
/// built: each run of equal keys is a group, numbered by a scan over tiles of rows, and its
/// aggregates go straight into the answer's arrays, in key order.
/// `WARPMAP_SORTED_GROUPS=0` and `WARPMAP_KEY_MAP=hash|range` force the other ways
/// (measurements).
///
/// `expected_groups` sizes the table; `None` estimates the distinct keys with a HyperLogLog
/// sketch of the keys ([`estimate_distinct`], one read of the key column). If more groups come
/// than the table has room for, it is sized again and the pass runs over: every row is counted
/// once, whatever the estimate. Integer sums wrap in the column's type (as
/// [`Reduce::Sum`]); floats sum in their own type, in no fixed order; min and max are as
/// [`Value::reduce`]. Groups come in no particular order (in key order from a sorted column).
/// Waits for the answer.
///
/// # Errors
/// [`Error::InvalidInput`] if a column's length differs from the keys', or for more than
/// [`MAX_GROUP_COLUMNS`] columns or none (and no count); [`Error::Unsupported`] for keys
/// other than 4 or 8 bytes or values that are not numeric; the device's errors.
pub fn group_by<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    keys: &DeviceBuffer<K>,
    columns: &[(&DeviceBuffer<V>, Reduce)],
    count: bool,
    expected_groups: Option<usize>,
) -> Result<DeviceGroups<K, V>> {
    for (c, _) in columns {
        crate::error::check_same_len("ops::device::group_by", keys.len(), c.len())?;
    }
    if columns.len() > MAX_GROUP_COLUMNS || (columns.is_empty() && !count) {
        return Err(Error::invalid(format!(
            "ops::device::group_by: {} columns{}: 1 to {MAX_GROUP_COLUMNS} (or a count alone)",
            columns.len(),
            if count { " and a count" } else { "" }
        )));
    }
    check_group_types::<K, V>(columns.is_empty())?;
    let n = keys.len();
    let stride = (1 + columns.len() + count as usize)
        .next_power_of_two()
        .max(2);
    let m = module(gpu)?;
    if let Some((offsets, groups)) = sorted_runs(gpu, &m, keys)? {
        return sorted_group_by(gpu, &m, keys, columns, count, &offsets, groups);
    }
    let template = row_template::<V>(columns, stride);
    let sketch = sketch(gpu, keys)?;
    let groups = match expected_groups {
        Some(g) => g as f64,
        None => sketch.distinct * ESTIMATE_MARGIN,
    };
    let mut capacity = ((groups / GROUP_LOAD).ceil() as usize).max(64);
    let mut map = KeyMap::choose(groups, sketch.lo, sketch.hi, capacity);
    let mut crowded = false;
    let descriptors = gpu.upload(&column_descriptors(columns))?;
    let row_template = gpu.upload(&template)?;
    let (key_bytes, value_bytes, cols, with_count) = (
        K::BYTES as u32,
        V::BYTES as u32,
        columns.len() as u32,
        count as u32,
    );
    let (rows, capacity, groups) = loop {
        let words = (capacity + 1) * stride;
        let mut rows = gpu.alloc::<u64>(words)?;
        init_rows(gpu, &m, &mut rows, stride, &row_template)?;
        let stride32 = stride as u32;
        let mut counters = gpu.alloc_filled::<u64>(2, 0)?;
        if n > 0 {
            // A block's own table where the groups fit it at the table's load.
            let shared_rows = SHARED_TABLE_BYTES / (stride * 8);
            let shared_rows = if ((groups / GROUP_LOAD) as usize) < shared_rows - 1 {
                shared_rows as u32
            } else {
                0
            };
            let reduce = m.kernel(if shared_rows > 0 {
                "ops_group_reduce_shared"
            } else {
                "ops_group_reduce"
            })?;
            let shared_bytes = shared_rows * stride as u32 * 8;
            let grid = if shared_rows > 0 {
                // One wave: each block's table is added into the global one once.
                gpu.sm_count()
                    * gpu
                        .max_active_blocks_per_sm_with(&reduce, BLOCK, shared_bytes)?
                        .max(1)
            } else {
                bulk_grid(gpu, n as u64)
            };
            // The last try (room for every row as a group) may probe the whole table.
            let max_probes = if capacity as f64 >= n as f64 / GROUP_LOAD {
                capacity as u64
            } else {
                MAX_PROBES.min(capacity as u64)
            };
            let (n64, cap64) = (n as u64, capacity as u64);
            let mut l = reduce.launch();
            l.buf(keys)
                .arg(&key_bytes)
                .arg(&n64)
                .buf(&descriptors)
                .arg(&cols)
                .arg(&value_bytes)
                .arg(&with_count)
                .buf_mut(&mut rows)
                .arg(&cap64)
                .arg(&stride32)
                .buf(&row_template)
                .buf_mut(&mut counters)
                .arg(&shared_rows)
                .arg(&max_probes)
                .arg(&map.lo)
                .arg(&map.hi)
                .arg(&map.scale);
            // SAFETY: ops_group_reduce(keys, key_bytes, n, columns, cols, value_bytes, count,
            // rows, capacity, stride, template, counters, shared_rows, max_probes, map_lo,
            // map_hi, map_scale): keys holds
            // n keys of key_bytes (4 or 8: checked); descriptors holds cols column addresses,
            // each column n values of value_bytes (lengths checked), then cols mode words;
            // rows holds (capacity + 1) * stride words, stride >= 1 + cols + count; template
            // stride words; counters two u64s; shared_bytes = shared_rows * stride * 8 of
            // dynamic shared memory (48 KiB at most: the default limit). Warp-stride loops.
            unsafe { l.run(grid, BLOCK, shared_bytes)? };
        }
        let c = gpu.download(&counters)?;
        if c[1] == 0 {
            break (rows, capacity, c[0] as usize);
        }
        if map.is_range() && (c[0] as f64) < capacity as f64 * GROUP_LOAD {
            // The table had room: the keys crowd a part of their range. Hash them.
            crowded = true;
            map = KeyMap::HASHED;
            continue;
        }
        // Too small: room for twice what came, or for every row as a group.
        let every_row = (n as f64 / GROUP_LOAD).ceil() as usize + 1;
        capacity = (capacity * 2)
            .max((c[0] as f64 * 2.0 / GROUP_LOAD) as usize)
            .min(every_row);
        if !crowded {
            map = KeyMap::choose(groups, sketch.lo, sketch.hi, capacity);
        }
    };
    let mut out_keys = gpu.alloc::<K>(groups)?;
    let mut values = Vec::with_capacity(columns.len());
    for _ in columns {
        values.push(gpu.alloc::<V>(groups)?);
    }
    let mut counts = gpu.alloc::<u64>(if count { groups } else { 0 })?;
    if groups > 0 {
        let out_columns = gpu.upload(&addresses(&values))?;
        let mut cursor = gpu.alloc_filled::<u64>(1, 0)?;
        let emit = m.kernel("ops_group_emit")?;
        let (cap64, stride32) = (capacity as u64, stride as u32);
        let mut l = emit.launch();
        l.buf(&rows)
            .arg(&cap64)
            .arg(&stride32)
            .arg(&key_bytes)
            .arg(&cols)
            .arg(&value_bytes)
            .arg(&with_count)
            .buf_mut(&mut out_keys)
            .buf(&out_columns)
            .buf_mut(&mut counts)
            .buf_mut(&mut cursor);
        // SAFETY: ops_group_emit(rows, capacity, stride, key_bytes, cols, value_bytes, count,
        // out_keys, out_columns, out_counts, cursor): rows as above; exactly `groups` rows are
        // occupied (the reduce's count of claims), so the packed outputs hold groups keys,
        // groups values in each of the cols arrays out_columns points to, and groups counts
        // where count is set. Tiles of EMIT_ITEMS rows a thread over capacity + 1 rows.
        let tiles = (capacity as u64 + 1).div_ceil(EMIT_ITEMS);
        unsafe { l.run(bulk_grid(gpu, tiles), BLOCK, 0)? };
    }
    gpu.synchronize()?;
    Ok(DeviceGroups {
        keys: out_keys,
        values,
        counts: count.then_some(counts),
    })
}

/// Every row of a group or join table from its template (`ops_group_init`): `rows` holds whole
/// rows of `stride` words, a power of two of at least 2; `template` one row.
fn init_rows(
    gpu: &Gpu,
    m: &Module,
    rows: &mut DeviceBuffer<u64>,
    stride: usize,
    template: &DeviceBuffer<u64>,
) -> Result<()> {
    debug_assert!(stride.is_power_of_two() && stride >= 2 && rows.len() % stride == 0);
    debug_assert!(template.len() >= stride);
    let init = m.kernel("ops_group_init")?;
    let (words, stride32) = (rows.len() as u64, stride as u32);
    let mut l = init.launch();
    l.buf_mut(rows).arg(&words).arg(&stride32).buf(template);
    // SAFETY: ops_group_init(rows, words, stride, template) writes rows[0..words) (even: the
    // stride is a power of two of at least 2) from template[0..stride). Grid-stride.
    unsafe { l.run(bulk_grid(gpu, words / 2), BLOCK, 0) }
}

/// The device addresses of a group-by's output columns for the kernels, then a 0 (never an
/// empty upload).
fn addresses<V: Value>(columns: &[DeviceBuffer<V>]) -> Vec<u64> {
    columns
        .iter()
        .map(|v| v.device_address())
        .chain([0])
        .collect()
}

/// Rows of a tile of the sorted group-by (`OPS_TILE`).
const TILE: usize = 1024;

/// Where a key column is sorted (as unsigned bits: every key's rows one run), the runs that
/// start before each tile of [`TILE`] rows, and the runs in all (the groups); `None` where it
/// is not (`ops_run_heads`, one read of the keys, then `ops_scan_tiles`).
/// `WARPMAP_SORTED_GROUPS=0` skips the look (measurements).
fn sorted_runs<K: Key>(
    gpu: &Gpu,
    m: &Module,
    keys: &DeviceBuffer<K>,
) -> Result<Option<(DeviceBuffer<u64>, usize)>> {
    let n = keys.len();
    if n == 0 || std::env::var("WARPMAP_SORTED_GROUPS").as_deref() == Ok("0") {
        return Ok(None);
    }
    let tiles = n.div_ceil(TILE);
    let mut heads = gpu.alloc::<u64>(tiles)?;
    let mut flags = gpu.alloc_filled::<u32>(1, 0)?;
    let k = m.kernel("ops_run_heads")?;
    let (key_bytes, n64, tiles64) = (K::BYTES as u32, n as u64, tiles as u64);
    let mut l = k.launch();
    l.buf(keys)
        .arg(&key_bytes)
        .arg(&n64)
        .buf_mut(&mut heads)
        .buf_mut(&mut flags);
    // SAFETY: ops_run_heads(keys, key_bytes, n, tile_heads, flags): keys holds n keys of
    // key_bytes (4 or 8: checked by the caller); tile_heads ceil(n / TILE) u64s; flags one.
    // Warp-stride over the tiles.
    unsafe { l.run(bulk_grid(gpu, tiles64 * 32), BLOCK, 0)? };
    if gpu.download(&flags)?[0] != 0 {
        return Ok(None);
    }
    let mut total = gpu.alloc::<u64>(1)?;
    let k = m.kernel("ops_scan_tiles")?;
    let mut l = k.launch();
    l.buf_mut(&mut heads).arg(&tiles64).buf_mut(&mut total);
    // SAFETY: ops_scan_tiles(tile_heads, tiles, total): one block of 1024 threads (the scan's
    // BLOCK); tile_heads holds `tiles` elements, scanned in place into the offsets; total one.
    unsafe { l.run(1, 1024, 0)? };
    let groups = gpu.download(&total)?[0] as usize;
    Ok(Some((heads, groups)))
}

/// [`group_by`] of a sorted key column ([`sorted_runs`]): each run's aggregates straight into
/// the output arrays, which start at the reductions' identities (`ops_sorted_reduce`).
fn sorted_group_by<K: Key, V: Value>(
    gpu: &Gpu,
    m: &Module,
    keys: &DeviceBuffer<K>,
    columns: &[(&DeviceBuffer<V>, Reduce)],
    count: bool,
    offsets: &DeviceBuffer<u64>,
    groups: usize,
) -> Result<DeviceGroups<K, V>> {
    let stride = 1 + columns.len() + count as usize;
    let identities = row_template::<V>(columns, stride.next_power_of_two().max(2));
    let mut out_keys = gpu.alloc::<K>(groups)?;
    let mut values = Vec::with_capacity(columns.len());
    let fill = m.kernel("ops_fill")?;
    for j in 0..columns.len() {
        let mut v = gpu.alloc::<V>(groups)?;
        let (n64, bytes, bits) = (groups as u64, V::BYTES as u32, identities[1 + j]);
        let mut l = fill.launch();
        l.buf_mut(&mut v).arg(&n64).arg(&bytes).arg(&bits);
        // SAFETY: ops_fill(out, n, bytes, bits): out holds n elements of `bytes` (V's width, 4
        // or 8). Grid-stride.
        unsafe { l.run(bulk_grid(gpu, n64), BLOCK, 0)? };
        values.push(v);
    }
    let mut counts = gpu.alloc_filled::<u64>(if count { groups } else { 0 }, 0)?;
    let descriptors = column_descriptors(columns);
    let descriptors = gpu.upload(&descriptors)?;
    let out_columns = gpu.upload(&addresses(&values))?;
    let n = keys.len();
    let k = m.kernel("ops_sorted_reduce")?;
    let (key_bytes, n64, cols, value_bytes, with_count) = (
        K::BYTES as u32,
        n as u64,
        columns.len() as u32,
        V::BYTES as u32,
        count as u32,
    );
    let mut l = k.launch();
    l.buf(keys)
        .arg(&key_bytes)
        .arg(&n64)
        .buf(&descriptors)
        .arg(&cols)
        .arg(&value_bytes)
        .arg(&with_count)
        .buf(offsets)
        .buf_mut(&mut out_keys)
        .buf(&out_columns)
        .buf_mut(&mut counts);
    // SAFETY: ops_sorted_reduce(keys, key_bytes, n, columns, cols, value_bytes, count,
    // tile_offsets, out_keys, out_columns, out_counts): keys holds n keys of key_bytes;
    // descriptors cols column addresses (each n values of value_bytes: lengths checked) then
    // cols mode words; tile_offsets ceil(n / TILE) offsets whose runs total `groups`, so every
    // group index is below groups: out_keys, each of the cols arrays out_columns points to, and
    // out_counts (where count) hold groups elements. Warp-stride over the tiles.
    let tiles = n.div_ceil(TILE) as u64;
    unsafe { l.run(bulk_grid(gpu, tiles * 32), BLOCK, 0)? };
    gpu.synchronize()?;
    Ok(DeviceGroups {
        keys: out_keys,
        values,
        counts: count.then_some(counts),
    })
}

/// A group-by's column descriptors for the kernels: the columns' addresses, then their mode
/// words (the reduction and the value's kind), then a 0 (never an empty upload).
fn column_descriptors<V: Value>(columns: &[(&DeviceBuffer<V>, Reduce)]) -> Vec<u64> {
    columns
        .iter()
        .map(|(c, _)| c.device_address())
        .chain(
            columns
                .iter()
                .map(|&(_, op)| InsertMode::Apply(op).word::<V>() as u64),
        )
        .chain([0])
        .collect()
}

/// `SELECT key, SUM(c) for c in columns GROUP BY key`: [`group_by`] with a sum of each column.
///
/// # Errors
/// As [`group_by`]; [`Error::InvalidInput`] for no columns.
pub fn group_by_sums<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    keys: &DeviceBuffer<K>,
    columns: &[&DeviceBuffer<V>],
    expected_groups: Option<usize>,
) -> Result<DeviceGroups<K, V>> {
    if columns.is_empty() {
        return Err(Error::invalid("group_by_sums: no columns to sum"));
    }
    let columns: Vec<_> = columns.iter().map(|&c| (c, Reduce::Sum)).collect();
    group_by(gpu, keys, &columns, false, expected_groups)
}

/// Keys of 4 or 8 bytes; numeric values of 4 or 8 bytes (any values for a count alone).
fn check_group_types<K: Key, V: Value>(count_only: bool) -> Result<()> {
    if K::BYTES != 4 && K::BYTES != 8 {
        return Err(Error::Unsupported(format!(
            "ops::device::group_by: keys of 4 or 8 bytes, not {}",
            K::NAME
        )));
    }
    if !count_only && (V::NUMERIC.is_none() || (V::BYTES != 4 && V::BYTES != 8)) {
        return Err(Error::Unsupported(format!(
            "ops::device::group_by: numeric values of 4 or 8 bytes, not {}",
            V::NAME
        )));
    }
    Ok(())
}

/// A group table row as it starts: the free key (all ones), each column's identity for its
/// reduction, a zero count and padding.
fn row_template<V: Value>(columns: &[(&DeviceBuffer<V>, Reduce)], stride: usize) -> Vec<u64> {
    let mut t = vec![0u64; stride];
    t[0] = u64::MAX;
    let wide = V::BYTES == 8;
    for (j, &(_, op)) in columns.iter().enumerate() {
        t[1 + j] = match (op, V::NUMERIC) {
            (Reduce::Sum, _) => 0,
            // A float's min or max starts at NaN, which loses to any number.
            (_, Some(Numeric::Float)) => {
                if wide {
                    f64::NAN.to_bits()
                } else {
                    f32::NAN.to_bits() as u64
                }
            }
            (Reduce::Min, Some(Numeric::Signed)) => {
                if wide {
                    i64::MAX as u64
                } else {
                    i32::MAX as u64
                }
            }
            (Reduce::Max, Some(Numeric::Signed)) => {
                if wide {
                    i64::MIN as u64
                } else {
                    i32::MIN as u32 as u64
                }
            }
            (Reduce::Min, _) => {
                if wide {
                    u64::MAX
                } else {
                    u32::MAX as u64
                }
            }
            (Reduce::Max, _) => 0,
        };
    }
    t
}

/// Registers of the distinct-key sketch (`OPS_SKETCH_BITS` in kernels/ops.cu).
const SKETCH_REGISTERS: usize = 1 << 12;
/// Threads of a sketch block.
const SKETCH_BLOCK: u32 = 1024;

/// What one read of a key column tells: its distinct keys (estimated) and its smallest and
/// largest key (as bits, zero-extended; `lo > hi` for no keys).
struct KeySketch {
    distinct: f64,
    lo: u64,
    hi: u64,
}

/// The sketch of a key column (`ops_distinct_sketch`). Waits for it.
fn sketch<K: Key>(gpu: &Gpu, keys: &DeviceBuffer<K>) -> Result<KeySketch> {
    check_group_types::<K, u64>(true)?;
    if keys.is_empty() {
        return Ok(KeySketch {
            distinct: 0.0,
            lo: u64::MAX,
            hi: 0,
        });
    }
    let mut registers = gpu.alloc_filled::<u32>(SKETCH_REGISTERS, 0)?;
    let mut bounds = gpu.upload(&[u64::MAX, 0])?;
    let k = module(gpu)?.kernel("ops_distinct_sketch")?;
    let (key_bytes, n64) = (K::BYTES as u32, keys.len() as u64);
    let mut l = k.launch();
    l.buf(keys)
        .arg(&key_bytes)
        .arg(&n64)
        .buf_mut(&mut registers)
        .buf_mut(&mut bounds);
    // Two blocks of 1024 threads a multiprocessor (each block's registers are added into the
    // global ones once, so few large blocks), four keys a thread in flight.
    let grid = (gpu.sm_count() * 2)
        .min(keys.len().div_ceil(4 * SKETCH_BLOCK as usize) as u32)
        .max(1);
    // SAFETY: ops_distinct_sketch(keys, key_bytes, n, registers, bounds): keys holds n keys of
    // key_bytes (4 or 8: checked); registers holds 4096 u32s, bounds two u64s; 16 KiB of static
    // shared memory. Grid-stride.
    unsafe { l.run(grid, SKETCH_BLOCK, 0)? };
    let b = gpu.download(&bounds)?;
    Ok(KeySketch {
        distinct: hyperloglog_estimate(&gpu.download(&registers)?),
        lo: b[0],
        hi: b[1],
    })
}

/// An estimate of the distinct keys of a device column: a HyperLogLog sketch of 4096 registers
/// built on the GPU (`ops_distinct_sketch`, one read of the keys), its estimate on the host
/// (standard error about 1.6 %; linear counting below 2.5 × 4096). Waits for it.
///
/// # Errors
/// [`Error::Unsupported`] for keys other than 4 or 8 bytes; the device's errors.
pub fn estimate_distinct<K: Key>(gpu: &Gpu, keys: &DeviceBuffer<K>) -> Result<f64> {
    Ok(sketch(gpu, keys)?.distinct)
}

/// HyperLogLog's estimate from its registers (Flajolet et al. 2007), linear counting where it
/// is small; no large-range correction (the hash has 64 bits).
fn hyperloglog_estimate(registers: &[u32]) -> f64 {
    let m = registers.len() as f64;
    let alpha = 0.7213 / (1.0 + 1.079 / m);
    let z: f64 = registers.iter().map(|&r| (-(r as f64)).exp2()).sum();
    let raw = alpha * m * m / z;
    let zeros = registers.iter().filter(|&&r| r == 0).count();
    if raw <= 2.5 * m && zeros > 0 {
        m * (m / zeros as f64).ln()
    } else {
        raw
    }
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
