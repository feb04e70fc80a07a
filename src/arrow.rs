//! Arrow columns in and out (feature `arrow`): build a table from a key array and a value
//! array, probe it with a key array and get a value array with nulls where the key is absent,
//! read a table back as a [`RecordBatch`], and reduce by key from arrays into one.
//!
//! The array types: `UInt32`, `UInt64`, `Int32`, `Int64` keys and values, `Float32` and
//! `Float64` values, and `FixedSizeBinary(N)` keys and values for the `[u8; N]` widths warpmap
//! stores ([`ArrowColumn`]). Any [`HashTable`] takes them (a GPU table or the CPU backend).
//!
//! **Nulls.** A null key never matches, as in SQL: [`insert_arrays`] skips its row and
//! [`find_array`] answers null for it. A value column with nulls is refused
//! ([`Error::InvalidInput`]): a table stores values, not their absence.
//!
//! **Copies.** Key and value arrays without nulls are read in place (the table's host calls take
//! the arrays' buffers as slices, with the offset of a sliced array), and the answers' vectors
//! become the output arrays' buffers without a copy. What copies: the rows of a key array with
//! nulls (the valid ones are gathered first), the validity of [`find_array`]'s answers (packed
//! into a bitmap from one byte per key), and a `FixedSizeBinary` array whose data does not start
//! at its first value.
//!
//! ```
//! use warpmap::arrow::{arrow_array::{Array, UInt32Array, UInt64Array}, find_array, insert_arrays};
//! use warpmap::{CpuTable, InsertMode};
//! let mut table = CpuTable::<u32, u64>::new(8)?;
//! let keys = UInt32Array::from(vec![Some(1), None, Some(3)]);
//! let values = UInt64Array::from(vec![10, 20, 30]);
//! assert_eq!(insert_arrays(&mut table, &keys, &values, InsertMode::Assign)?, 2); // null skipped
//! let probe = UInt32Array::from(vec![Some(3), Some(2), None]);
//! let found = find_array(&table, &probe)?;
//! let found = found.as_any().downcast_ref::<UInt64Array>().unwrap();
//! assert_eq!(found.iter().collect::<Vec<_>>(), vec![Some(30), None, None]);
//! # Ok::<(), warpmap::Error>(())
//! ```

pub use arrow_array;
pub use arrow_buffer;
pub use arrow_schema;

use crate::key::{Key, Value};
use crate::{Error, HashTable, InsertMode, Reduce, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, FixedSizeBinaryArray, PrimitiveArray, RecordBatch};
use arrow_buffer::{Buffer, NullBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Schema};
use std::borrow::Cow;
use std::sync::Arc;

/// A key or value type with an Arrow array type.
pub trait ArrowColumn: Value {
    /// The Arrow type of a column of these.
    fn data_type() -> DataType;
    /// The array's values, in place where its layout allows; `None` if the array is of another
    /// type. Null rows hold whatever the array's buffer holds.
    fn values(array: &dyn Array) -> Option<Cow<'_, [Self]>>;
    /// An array of `values` and `nulls`, taking the vector's memory.
    fn array(values: Vec<Self>, nulls: Option<NullBuffer>) -> ArrayRef;
}

macro_rules! primitive_column {
    ($($t:ty => $arrow:ty, $dt:expr;)*) => {$(
        impl ArrowColumn for $t {
            fn data_type() -> DataType {
                $dt
            }
            fn values(array: &dyn Array) -> Option<Cow<'_, [Self]>> {
                array.as_primitive_opt::<$arrow>().map(|a| Cow::Borrowed(&a.values()[..]))
            }
            fn array(values: Vec<Self>, nulls: Option<NullBuffer>) -> ArrayRef {
                Arc::new(PrimitiveArray::<$arrow>::new(ScalarBuffer::from(values), nulls))
            }
        }
    )*};
}

primitive_column! {
    u32 => UInt32Type, DataType::UInt32;
    u64 => UInt64Type, DataType::UInt64;
    i32 => Int32Type, DataType::Int32;
    i64 => Int64Type, DataType::Int64;
    f32 => Float32Type, DataType::Float32;
    f64 => Float64Type, DataType::Float64;
}

macro_rules! binary_column {
    ($($n:literal),*) => {$(
        impl ArrowColumn for [u8; $n] {
            fn data_type() -> DataType {
                DataType::FixedSizeBinary($n)
            }
            fn values(array: &dyn Array) -> Option<Cow<'_, [Self]>> {
                let a = array.as_fixed_size_binary_opt()?;
                if a.value_length() != $n {
                    return None;
                }
                let data = a.value_data();
                Some(if data.len() == a.len() * $n {
                    Cow::Borrowed(bytemuck::cast_slice(data))
                } else {
                    Cow::Owned((0..a.len()).map(|i| a.value(i).try_into().unwrap_or([0; $n])).collect())
                })
            }
            fn array(values: Vec<Self>, nulls: Option<NullBuffer>) -> ArrayRef {
                let bytes: Vec<u8> = bytemuck::cast_vec(values);
                Arc::new(FixedSizeBinaryArray::new($n, Buffer::from_vec(bytes), nulls))
            }
        }
    )*};
}

binary_column!(4, 8, 12, 16, 20, 24, 32, 48, 64, 128, 256);

/// The values of `array` as `T`, or an error naming what it is.
fn column<'a, T: ArrowColumn>(what: &str, array: &'a dyn Array) -> Result<Cow<'a, [T]>> {
    T::values(array).ok_or_else(|| {
        Error::invalid(format!(
            "{what}: an array of {}, not of {} ({})",
            array.data_type(),
            T::data_type(),
            T::NAME
        ))
    })
}

/// The rows whose key is valid, or `None` where every key is.
fn valid_rows(keys: &dyn Array) -> Option<Vec<usize>> {
    let nulls = keys.nulls().filter(|n| n.null_count() > 0)?;
    Some(nulls.valid_indices().collect())
}

/// Inserts the rows `(keys[i], values[i])` whose key is not null, as `mode` says; returns the
/// rows inserted. Keys that cannot be placed are an error, as [`HashTable::insert`]'s.
///
/// # Errors
/// [`Error::InvalidInput`] if the arrays differ in length, are not of the table's types, or if
/// `values` holds nulls; the table's errors.
pub fn insert_arrays<K, V, T>(
    table: &mut T,
    keys: &dyn Array,
    values: &dyn Array,
    mode: InsertMode,
) -> Result<usize>
where
    K: Key + ArrowColumn,
    V: ArrowColumn,
    T: HashTable<K, V> + ?Sized,
{
    crate::error::check_same_len("insert_arrays", keys.len(), values.len())?;
    if values.null_count() > 0 {
        return Err(Error::invalid(format!(
            "insert_arrays: the value column holds {} nulls; a table stores values, not their \
             absence",
            values.null_count()
        )));
    }
    let (k, v) = (column::<K>("keys", keys)?, column::<V>("values", values)?);
    let (k, v): (Cow<[K]>, Cow<[V]>) = match valid_rows(keys) {
        None => (k, v),
        Some(rows) => (
            Cow::Owned(rows.iter().map(|&i| k[i]).collect()),
            Cow::Owned(rows.iter().map(|&i| v[i]).collect()),
        ),
    };
    // The table's own call for the mode (the CPU backend's reduce by key folds rows first).
    match mode {
        InsertMode::Assign => table.insert(&k, &v)?,
        InsertMode::IfAbsent => table.insert_if_absent(&k, &v)?,
        InsertMode::Apply(op) => table.insert_or_apply(&k, &v, op)?,
    }
    Ok(k.len())
}

/// The value of each key of `keys`, null where the key is absent or null.
///
/// # Errors
/// [`Error::InvalidInput`] if `keys` is not of the table's key type; the table's errors.
pub fn find_array<K, V, T>(table: &T, keys: &dyn Array) -> Result<ArrayRef>
where
    K: Key + ArrowColumn,
    V: ArrowColumn,
    T: HashTable<K, V> + ?Sized,
{
    let k = column::<K>("keys", keys)?;
    let n = k.len();
    let (values, found) = match valid_rows(keys) {
        None => {
            let (mut values, mut found) = (vec![V::zeroed(); n], vec![false; n]);
            table.find_into(&k, &mut values, &mut found)?;
            (values, found)
        }
        Some(rows) => {
            let valid: Vec<K> = rows.iter().map(|&i| k[i]).collect();
            let (mut v, mut f) = (vec![V::zeroed(); valid.len()], vec![false; valid.len()]);
            table.find_into(&valid, &mut v, &mut f)?;
            let (mut values, mut found) = (vec![V::zeroed(); n], vec![false; n]);
            for (j, &i) in rows.iter().enumerate() {
                values[i] = v[j];
                found[i] = f[j];
            }
            (values, found)
        }
    };
    let nulls = NullBuffer::from(found);
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    Ok(V::array(values, nulls))
}

/// The table's pairs as a [`RecordBatch`] of two columns, `key` and `value` (no nulls), in no
/// particular order ([`HashTable::retrieve_all`]).
///
/// # Errors
/// The table's.
pub fn to_record_batch<K, V, T>(table: &T) -> Result<RecordBatch>
where
    K: Key + ArrowColumn,
    V: ArrowColumn,
    T: HashTable<K, V> + ?Sized,
{
    let (keys, values) = table.retrieve_all()?;
    batch(
        &["key", "value"],
        vec![K::array(keys, None), V::array(values, None)],
    )
}

/// A record batch of non-null columns.
fn batch(names: &[&str], columns: Vec<ArrayRef>) -> Result<RecordBatch> {
    let fields: Vec<Field> = names
        .iter()
        .zip(&columns)
        .map(|(n, c)| Field::new(*n, c.data_type().clone(), c.null_count() > 0))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| Error::invalid(format!("building a record batch: {e}")))
}

/// Reduce by key from arrays: `SELECT key, op(value) GROUP BY key` over the rows whose key is
/// not null, through `table` (empty, or holding earlier groups to reduce into), answered as a
/// [`RecordBatch`] of `key` and `value` ([`to_record_batch`]).
///
/// # Errors
/// As [`insert_arrays`] with [`InsertMode::Apply`] (numeric values only).
pub fn reduce_by_key<K, V, T>(
    table: &mut T,
    keys: &dyn Array,
    values: &dyn Array,
    op: Reduce,
) -> Result<RecordBatch>
where
    K: Key + ArrowColumn,
    V: ArrowColumn,
    T: HashTable<K, V> + ?Sized,
{
    insert_arrays(table, keys, values, InsertMode::Apply(op))?;
    to_record_batch(table)
}
