#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

#[cfg(feature = "arrow")]
pub mod arrow;
pub mod cpu;
pub mod device;
mod error;
pub mod hash;
pub mod kernels;
pub mod key;
pub mod keygen;
pub mod ops;
pub mod sharded;
pub mod status;
pub mod table;
mod trace;

pub use cpu::{CpuMultiMap, CpuTable};
pub use device::{
    BufferView, BufferViewMut, DeviceBuffer, Gpu, HostPages, MappedBuffer, Move, PinnedBuffer,
};
pub use error::{Error, Result};
pub use hash::HashFunction;
pub use key::{Key, Numeric, Value};
pub use status::InsertStatus;
pub use table::dycuckoo::{DyCuckoo, DyCuckooConfig, DyCuckooStats};
pub use table::slab::{Slab, SlabConfig, SlabMultiMap, SlabStats};
pub use table::stadium::{InsertStrategy, Location, Stadium, StadiumConfig};
pub use table::two_level::{TwoLevel, TwoLevelConfig, TwoLevelCpu};
pub use table::warpdrive::{WarpDrive, WarpDriveConfig};
pub use table::{
    Backend, DeviceHashTable, HashTable, InsertMode, MixedOp, MultiMap, Reduce, UnorderedFind,
};
