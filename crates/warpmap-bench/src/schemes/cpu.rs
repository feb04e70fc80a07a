//! The CPU backend in the benchmark: one [`CpuTable`] per set, whatever GPU scheme was asked
//! (its rows have `scheme: "cpu"` and no group size).

use warpmap::{CpuTable, HashTable, Key, Result, Value};

/// The table under test. One place to change when the CPU backend gets another table type.
pub(crate) fn make_table<K: Key, V: Value>(capacity: usize) -> Result<Box<dyn HashTable<K, V>>> {
    Ok(Box::new(CpuTable::<K, V>::new(capacity)?))
}

/// Operations per second in the GPU estimate's model (a CPU variant never runs on a GPU plan).
pub(crate) fn op_rate() -> f64 {
    1e9
}
