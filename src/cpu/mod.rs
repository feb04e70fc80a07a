//! CPU backend (being written).
use std::marker::PhantomData;
/// Placeholder, replaced by the real CPU table.
pub struct CpuTable<K, V>(PhantomData<(K, V)>);
