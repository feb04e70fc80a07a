//! Relational operators on one key column, over the hash tables: group-by with aggregates,
//! inner and left hash joins, and distinct counts. Host slices in, host vectors out; each call
//! runs on the GPU (WarpDrive tables, the slab multimap for joins whose build keys repeat) or on
//! the CPU backend, as its [`Engine`] says ([`Engine::Auto`]: the GPU when there is one).
//!
//! - [`group_by`]: `SELECT key, agg(value), ... GROUP BY key`. On the GPU in one pass over the
//!   rows ([`device::group_by`]) where the types allow (keys and numeric values of 4 or 8 bytes;
//!   a `Mean` of `f64` values or of 8-byte integers); elsewhere by reduce by key ([`HashTable::insert_or_apply`]), one
//!   table per aggregate, the counts' table naming the groups. `Mean` is the sum over the
//!   count, in `f64`.
//! - [`inner_join`] / [`left_join`]: the row pairs of an equi-join. The build side is put in a
//!   table of its row numbers and the probe side looked up in it; an inner join builds on the
//!   shorter side. Build keys that repeat go through a multimap ([`MultiMap::find_all`]), each
//!   match a pair. Pairs come in probe-row order, a row's matches in no particular order.
//! - [`count_distinct`]: the number of distinct keys.
//!
//! Every row number is a `u32`: inputs of `u32::MAX` rows or more are refused.

pub mod device;

use crate::cpu::{CpuMultiMap, CpuTable};
use crate::device::Gpu;
use crate::key::{Key, Value};
use crate::table::slab::{SlabConfig, SlabMultiMap};
use crate::table::warpdrive::{WarpDrive, WarpDriveConfig};
use crate::{Error, HashTable, InsertMode, InsertStatus, MultiMap, Reduce, Result};
use std::sync::Arc;

/// Where an operator runs.
#[derive(Clone, Default)]
pub enum Engine {
    /// On the default GPU when there is one ([`Gpu::default_gpu`]), else on the CPU backend.
    #[default]
    Auto,
    /// On the CPU backend (all cores).
    Cpu,
    /// On this GPU.
    Gpu(Arc<Gpu>),
}

impl Engine {
    /// `Auto` resolved: the GPU's handle, or `None` for the CPU backend.
    fn gpu(&self) -> Option<Arc<Gpu>> {
        match self {
            Engine::Auto => Gpu::default_gpu().ok(),
            Engine::Cpu => None,
            Engine::Gpu(g) => Some(g.clone()),
        }
    }

    /// `Auto` resolved once (the default GPU is looked for now), so that later calls do not
    /// look again.
    pub fn resolved(&self) -> Engine {
        match self.gpu() {
            Some(g) => Engine::Gpu(g),
            None => Engine::Cpu,
        }
    }

    /// Where the engine runs, in words: "GPU, WarpDrive" or "CPU backend".
    pub fn describe(&self) -> &'static str {
        match self.gpu() {
            Some(_) => "GPU, WarpDrive",
            None => "CPU backend",
        }
    }

    /// An empty table for `capacity` keys where the engine runs: a [`WarpDrive`] table on the
    /// GPU (its default configuration), a [`CpuTable`] on the CPU backend.
    ///
    /// # Errors
    /// The tables' constructors' errors.
    ///
    /// # Examples
    ///
    /// ```
    /// use warpmap::{ops::Engine, HashTable};
    /// let mut t = Engine::Cpu.table::<u64, u32>(100)?;
    /// t.insert(&[7], &[70])?;
    /// assert_eq!(t.find(&[7])?, vec![Some(70)]);
    /// # Ok::<(), warpmap::Error>(())
    /// ```
    pub fn table<K: Key, V: Value>(&self, capacity: usize) -> Result<Box<dyn HashTable<K, V>>> {
        table(&self.gpu(), capacity)
    }
}

/// An empty table for `capacity` keys where `gpu` says.
fn table<K: Key, V: Value>(
    gpu: &Option<Arc<Gpu>>,
    capacity: usize,
) -> Result<Box<dyn HashTable<K, V>>> {
    let capacity = capacity.max(1);
    Ok(match gpu {
        Some(g) => Box::new(WarpDrive::<K, V>::new(
            g.clone(),
            WarpDriveConfig::new(capacity),
        )?),
        None => Box::new(CpuTable::<K, V>::new(capacity)?),
    })
}

/// Room for `rows` distinct keys at a load of one half.
fn room(rows: usize) -> usize {
    rows.saturating_mul(2)
}

/// `n` rows numbered by `u32`: [`Error::InvalidInput`] from `u32::MAX` rows.
fn check_rows(what: &str, n: usize) -> Result<()> {
    if n as u64 >= u32::MAX as u64 {
        return Err(Error::invalid(format!(
            "{what}: {n} rows; row numbers are u32, so fewer than {}",
            u32::MAX
        )));
    }
    Ok(())
}

/// An aggregate of [`group_by`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregate {
    /// The sum of the group's values (integers wrap; see [`Reduce::Sum`] for floats).
    Sum,
    /// The number of the group's rows.
    Count,
    /// The smallest value.
    Min,
    /// The largest value.
    Max,
    /// The sum over the count, in `f64`.
    Mean,
}

/// One aggregate's column of [`Groups`], a value per group.
#[derive(Clone, Debug, PartialEq)]
pub enum AggregateColumn<V> {
    /// [`Aggregate::Sum`], [`Aggregate::Min`], [`Aggregate::Max`].
    Values(Vec<V>),
    /// [`Aggregate::Count`].
    Counts(Vec<u64>),
    /// [`Aggregate::Mean`].
    Means(Vec<f64>),
}

/// The result of [`group_by`]: group `i` is `keys[i]`, and its aggregate `j` is element `i` of
/// `columns[j]` (the aggregates in the order asked). Groups come in no particular order.
#[derive(Clone, Debug, PartialEq)]
pub struct Groups<K, V> {
    /// Each group's key.
    pub keys: Vec<K>,
    /// Each aggregate's column.
    pub columns: Vec<AggregateColumn<V>>,
}

/// `SELECT key, aggregates... GROUP BY key` over the rows `(keys[i], values[i])`.
///
/// # Errors
/// [`Error::InvalidInput`] if `keys` and `values` differ in length or hold `u32::MAX` rows or
/// more; [`Error::Unsupported`] for an aggregate of values that are not numeric
/// ([`Value::NUMERIC`]; `Count` takes any); the tables' errors.
///
/// # Examples
///
/// ```
/// use warpmap::ops::{group_by, Aggregate, AggregateColumn, Engine};
/// use Aggregate::{Count, Mean, Sum};
/// let g = group_by(&Engine::Cpu, &[7u32, 3, 7], &[10u64, 1, 5], &[Sum, Count, Mean])?;
/// let seven = g.keys.iter().position(|&k| k == 7).unwrap(); // groups in no particular order
/// assert!(matches!(&g.columns[0], AggregateColumn::Values(s) if s[seven] == 15));
/// assert!(matches!(&g.columns[1], AggregateColumn::Counts(c) if c[seven] == 2));
/// assert!(matches!(&g.columns[2], AggregateColumn::Means(m) if m[seven] == 7.5));
/// # Ok::<(), warpmap::Error>(())
/// ```
pub fn group_by<K: Key, V: Value>(
    engine: &Engine,
    keys: &[K],
    values: &[V],
    aggregates: &[Aggregate],
) -> Result<Groups<K, V>> {
    crate::error::check_same_len("group_by", keys.len(), values.len())?;
    check_rows("group_by", keys.len())?;
    if V::NUMERIC.is_none() && aggregates.iter().any(|&a| a != Aggregate::Count) {
        return Err(Error::Unsupported(format!(
            "group_by: aggregates of {} values (numeric values only, but COUNT)",
            V::NAME
        )));
    }
    let gpu = engine.gpu();
    if let Some(g) = &gpu {
        if let Some(groups) = group_by_in_one_pass(g, keys, values, aggregates)? {
            return Ok(groups);
        }
    }
    // The counts name the groups.
    let mut counts = table::<K, u64>(&gpu, room(keys.len()))?;
    counts.insert_or_apply(keys, &vec![1u64; keys.len()], Reduce::Sum)?;
    let (group_keys, group_counts) = counts.retrieve_all()?;
    drop(counts);
    // One reduction per value aggregate, read back in the groups' order.
    let reduced = |op: Reduce| -> Result<Vec<V>> {
        let mut t = table::<K, V>(&gpu, room(group_keys.len()))?;
        t.insert_or_apply(keys, values, op)?;
        t.find(&group_keys)?
            .into_iter()
            .map(|v| v.ok_or_else(|| Error::invalid("group_by: a group lost its aggregate")))
            .collect()
    };
    let mut columns = Vec::with_capacity(aggregates.len());
    for &a in aggregates {
        columns.push(match a {
            Aggregate::Sum => AggregateColumn::Values(reduced(Reduce::Sum)?),
            Aggregate::Min => AggregateColumn::Values(reduced(Reduce::Min)?),
            Aggregate::Max => AggregateColumn::Values(reduced(Reduce::Max)?),
            Aggregate::Count => AggregateColumn::Counts(group_counts.clone()),
            Aggregate::Mean => {
                // The sum in f64 (an integer column's sum in its own type could wrap).
                let wide = values
                    .iter()
                    .map(|&v| v.to_f64())
                    .collect::<Option<Vec<f64>>>()
                    .expect("numeric values (checked above) convert to f64");
                let mut t = table::<K, f64>(&gpu, room(group_keys.len()))?;
                t.insert_or_apply(keys, &wide, Reduce::Sum)?;
                let sums = t.find(&group_keys)?;
                let means = sums
                    .iter()
                    .zip(&group_counts)
                    .map(|(s, &c)| s.map(|s| s / c as f64))
                    .collect::<Option<Vec<f64>>>()
                    .ok_or_else(|| Error::invalid("group_by: a group lost its sum"))?;
                AggregateColumn::Means(means)
            }
        });
    }
    Ok(Groups {
        keys: group_keys,
        columns,
    })
}

/// [`group_by`] on the GPU in one pass over the rows ([`device::group_by`]: every aggregate and
/// the count in one group table, or by runs where the keys are sorted), where it applies: keys
/// of 4 or 8 bytes, numeric values of 4 or 8 bytes (any values for counts alone), and a
/// `Mean` only of `f64` values or of 8-byte integers whose exact sum provably fits (count ×
/// the group's largest magnitude within the type: the sum then over the count, rounded once).
/// The sum of other types is in their own width there, and `Mean` sums in `f64`. `None`
/// elsewhere: the caller reduces a table per aggregate.
fn group_by_in_one_pass<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    keys: &[K],
    values: &[V],
    aggregates: &[Aggregate],
) -> Result<Option<Groups<K, V>>> {
    use crate::key::Numeric;
    let counts_only = aggregates.iter().all(|&a| a == Aggregate::Count);
    let numeric = V::NUMERIC.is_some() && (V::BYTES == 4 || V::BYTES == 8);
    let f64_values = V::NUMERIC == Some(Numeric::Float) && V::BYTES == 8;
    let wide_integers = V::NUMERIC.is_some_and(|n| n != Numeric::Float) && V::BYTES == 8;
    let means = aggregates.contains(&Aggregate::Mean);
    if !(K::BYTES == 4 || K::BYTES == 8)
        || !(counts_only || numeric)
        || (means && !(f64_values || wide_integers))
    {
        return Ok(None);
    }
    // One column per reduction asked (a Mean is its Sum over the count; of integers, with the
    // Min and Max that bound the Sum).
    let mut reductions: Vec<Reduce> = Vec::new();
    for &a in aggregates {
        let ops: &[Reduce] = match a {
            Aggregate::Mean if wide_integers => &[Reduce::Sum, Reduce::Min, Reduce::Max],
            Aggregate::Sum | Aggregate::Mean => &[Reduce::Sum],
            Aggregate::Min => &[Reduce::Min],
            Aggregate::Max => &[Reduce::Max],
            Aggregate::Count => &[],
        };
        for &op in ops {
            if !reductions.contains(&op) {
                reductions.push(op);
            }
        }
    }
    let (dk, dv) = (gpu.upload(keys)?, gpu.upload(values)?);
    let columns: Vec<_> = reductions.iter().map(|&op| (&dv, op)).collect();
    let g = device::group_by(gpu, &dk, &columns, true, None)?;
    let group_keys = gpu.download(&g.keys)?;
    let reduced = g
        .values
        .iter()
        .map(|c| gpu.download(c))
        .collect::<Result<Vec<Vec<V>>>>()?;
    let counts = gpu.download(g.counts.as_ref().expect("counts were asked"))?;
    let column = |op: Reduce| &reduced[reductions.iter().position(|&r| r == op).expect("asked")];
    // A Mean of 8-byte integers: their sum is exact where count × the largest magnitude fits
    // the type (else it may have wrapped: a table per aggregate sums in f64 then).
    let mut means_of_sums = Vec::new();
    if means {
        let signed = V::NUMERIC == Some(Numeric::Signed);
        let as_f64 = |v: V| -> f64 {
            match (wide_integers, signed) {
                (true, true) => v.to_bits() as i64 as f64,
                (true, false) => v.to_bits() as f64,
                _ => v.to_f64().expect("f64 values"),
            }
        };
        let magnitude = |v: V| -> u128 {
            if signed {
                (v.to_bits() as i64).unsigned_abs() as u128
            } else {
                v.to_bits() as u128
            }
        };
        let limit = if signed {
            i64::MAX as u128
        } else {
            u64::MAX as u128
        };
        let sums = column(Reduce::Sum);
        let bounds = wide_integers.then(|| (column(Reduce::Min), column(Reduce::Max)));
        for i in 0..counts.len() {
            if let Some((mins, maxs)) = &bounds {
                let largest = magnitude(mins[i]).max(magnitude(maxs[i]));
                if largest * counts[i] as u128 > limit {
                    return Ok(None);
                }
            }
            means_of_sums.push(as_f64(sums[i]) / counts[i] as f64);
        }
    }
    let columns = aggregates
        .iter()
        .map(|&a| match a {
            Aggregate::Sum => AggregateColumn::Values(column(Reduce::Sum).clone()),
            Aggregate::Min => AggregateColumn::Values(column(Reduce::Min).clone()),
            Aggregate::Max => AggregateColumn::Values(column(Reduce::Max).clone()),
            Aggregate::Count => AggregateColumn::Counts(counts.clone()),
            Aggregate::Mean => AggregateColumn::Means(means_of_sums.clone()),
        })
        .collect();
    Ok(Some(Groups {
        keys: group_keys,
        columns,
    }))
}

/// A left join's build row for a probe row without a match.
pub const NO_MATCH: u32 = u32::MAX;

/// The row pairs of a join: pair `i` joins row `build[i]` of the build side with row `probe[i]`
/// of the probe side (in a [`left_join`], `build[i]` is [`NO_MATCH`] for a probe row that
/// matched nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JoinPairs {
    /// Rows of the build side (the `right` of a [`left_join`]).
    pub build: Vec<u32>,
    /// Rows of the probe side (the `left` of a [`left_join`]).
    pub probe: Vec<u32>,
}

/// `left ⋈ right` on equal keys: every pair of rows with equal keys, as (`right` row, `left`
/// row) in [`JoinPairs`] (`build` holds `right`'s rows). The shorter side is built into a table
/// and the other probes it; the pairs name the sides as given either way.
///
/// # Errors
/// [`Error::InvalidInput`] for a side of `u32::MAX` rows or more; the tables' errors.
///
/// # Examples
///
/// ```
/// use warpmap::ops::{inner_join, Engine};
/// let pairs = inner_join(&Engine::Cpu, &[1u32, 2, 2, 9], &[2u32, 1, 5])?;
/// let mut got: Vec<(u32, u32)> = pairs.build.iter().copied().zip(pairs.probe.iter().copied()).collect();
/// got.sort();
/// assert_eq!(got, vec![(0, 1), (0, 2), (1, 0)]); // (right row, left row)
/// # Ok::<(), warpmap::Error>(())
/// ```
pub fn inner_join<K: Key>(engine: &Engine, left: &[K], right: &[K]) -> Result<JoinPairs> {
    check_rows("inner_join (left)", left.len())?;
    check_rows("inner_join (right)", right.len())?;
    if left.len() < right.len() {
        // Build on the left: its rows come back as `build`; swap them to the sides asked.
        let p = join(&engine.gpu(), left, right, false)?;
        return Ok(JoinPairs {
            build: p.probe,
            probe: p.build,
        });
    }
    join(&engine.gpu(), right, left, false)
}

/// `left ⟕ right` on equal keys: every pair of rows with equal keys, and each `left` row that
/// matched nothing once with [`NO_MATCH`]; `probe` holds `left`'s rows, `build` `right`'s.
///
/// # Errors
/// As [`inner_join`].
pub fn left_join<K: Key>(engine: &Engine, left: &[K], right: &[K]) -> Result<JoinPairs> {
    check_rows("left_join (left)", left.len())?;
    check_rows("left_join (right)", right.len())?;
    join(&engine.gpu(), right, left, true)
}

/// The pairs of `build ⋈ probe` in probe-row order (`keep_unmatched`: a left join's
/// [`NO_MATCH`] rows too).
fn join<K: Key>(
    gpu: &Option<Arc<Gpu>>,
    build: &[K],
    probe: &[K],
    keep_unmatched: bool,
) -> Result<JoinPairs> {
    let rows: Vec<u32> = (0..build.len() as u32).collect();
    let mut pairs = JoinPairs::default();
    // Each build key once, with its row; the statuses tell whether any key repeats.
    let mut t = table::<K, u32>(gpu, room(build.len()))?;
    let mut status = vec![InsertStatus::default(); build.len()];
    t.insert_with_mode(build, &rows, &mut status, InsertMode::IfAbsent)?;
    if !status.iter().any(|s| s.was_present()) {
        for (i, m) in t.find(probe)?.into_iter().enumerate() {
            match m {
                Some(b) => pairs.build.push(b),
                None if keep_unmatched => pairs.build.push(NO_MATCH),
                None => continue,
            }
            pairs.probe.push(i as u32);
        }
        return Ok(pairs);
    }
    drop(t);
    // Build keys repeat: every row of a key in a multimap.
    let mut m: Box<dyn MultiMap<K, u32>> = match gpu {
        Some(g) => Box::new(SlabMultiMap::<K, u32>::new(
            g.clone(),
            SlabConfig::new(build.len().max(1)),
        )?),
        None => Box::new(CpuMultiMap::<K, u32>::new(build.len().max(1))?),
    };
    m.insert(build, &rows)?;
    let (offsets, matches) = m.find_all(probe)?;
    for i in 0..probe.len() {
        let of_row = &matches[offsets[i]..offsets[i + 1]];
        if of_row.is_empty() && keep_unmatched {
            pairs.build.push(NO_MATCH);
            pairs.probe.push(i as u32);
        }
        for &b in of_row {
            pairs.build.push(b);
            pairs.probe.push(i as u32);
        }
    }
    Ok(pairs)
}

/// `SELECT COUNT(DISTINCT key)`.
///
/// # Errors
/// The tables' errors.
///
/// # Examples
///
/// ```
/// use warpmap::ops::{count_distinct, Engine};
/// assert_eq!(count_distinct(&Engine::Cpu, &[5u64, 1, 5, 5, 0])?, 3);
/// # Ok::<(), warpmap::Error>(())
/// ```
pub fn count_distinct<K: Key>(engine: &Engine, keys: &[K]) -> Result<usize> {
    let mut t = table::<K, u32>(&engine.gpu(), room(keys.len()))?;
    t.insert_with_mode(
        keys,
        &vec![0u32; keys.len()],
        &mut vec![InsertStatus::default(); keys.len()],
        InsertMode::IfAbsent,
    )?;
    t.len()
}
