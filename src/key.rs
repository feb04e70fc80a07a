//! Key and value types.
//!
//! A table stores fixed-size plain-old-data keys and values. Keys are compared bytewise. Every key
//! value is insertable: the tables' internal sentinels (an empty slot, a deleted slot) are all-ones
//! bit patterns, and a user key equal to one of them is stored on a side path, invisibly to users.

use std::fmt::Debug;
use std::hash::Hash;

mod sealed {
    pub trait Sealed {}
}

/// A key type: 4 or 8 bytes of plain old data compared bitwise.
///
/// Implemented for `u32`, `i32`, `u64` and `i64`. The kernels work on the bit pattern, so a key
/// type is fully described by its width.
pub trait Key:
    bytemuck::Pod + Eq + Hash + Ord + Debug + Send + Sync + sealed::Sealed + 'static
{
    /// Width in bytes (4 or 8).
    const BYTES: usize;
    /// A short name for messages and reports ("u32", ...).
    const NAME: &'static str;
    /// The bit pattern, zero-extended.
    fn to_bits(self) -> u64;
    /// The key with this bit pattern (truncated to the width).
    fn from_bits(bits: u64) -> Self;
}

/// A value type: 4 or 8 bytes of plain old data.
///
/// Implemented for `u32`, `i32`, `f32`, `u64`, `i64` and `f64`.
pub trait Value:
    bytemuck::Pod + PartialEq + Debug + Send + Sync + sealed::Sealed + 'static
{
    /// Width in bytes (4 or 8).
    const BYTES: usize;
    /// A short name for messages and reports.
    const NAME: &'static str;
    /// The bit pattern, zero-extended.
    fn to_bits(self) -> u64;
    /// The value with this bit pattern (truncated to the width).
    fn from_bits(bits: u64) -> Self;
}

macro_rules! impl_pod {
    ($($t:ty => $bits:ty, $name:literal, key: $is_key:tt;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Value for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            const NAME: &'static str = $name;
            fn to_bits(self) -> u64 { bytemuck::cast::<$t, $bits>(self) as u64 }
            fn from_bits(bits: u64) -> Self { bytemuck::cast::<$bits, $t>(bits as $bits) }
        }
        impl_pod!(@key $is_key $t, $bits, $name);
    )*};
    (@key true $t:ty, $bits:ty, $name:literal) => {
        impl Key for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            const NAME: &'static str = $name;
            fn to_bits(self) -> u64 { bytemuck::cast::<$t, $bits>(self) as u64 }
            fn from_bits(bits: u64) -> Self { bytemuck::cast::<$bits, $t>(bits as $bits) }
        }
    };
    (@key false $t:ty, $bits:ty, $name:literal) => {};
}

impl_pod! {
    u32 => u32, "u32", key: true;
    i32 => u32, "i32", key: true;
    u64 => u64, "u64", key: true;
    i64 => u64, "i64", key: true;
    f32 => u32, "f32", key: false;
    f64 => u64, "f64", key: false;
}

/// The internal sentinel bit patterns for a key width. A user key equal to one of these is
/// stored on a side path (see the crate docs); users never see them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sentinels {
    /// Marks a slot that never held a key.
    pub empty: u64,
    /// Marks a slot whose key was erased.
    pub tombstone: u64,
}

impl Sentinels {
    /// The sentinels for keys of `key_bytes` bytes: all ones, and all ones minus one.
    pub const fn for_width(key_bytes: usize) -> Self {
        let empty = if key_bytes >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * key_bytes)) - 1
        };
        Sentinels {
            empty,
            tombstone: empty - 1,
        }
    }

    /// Which side-path slot (0: empty pattern, 1: tombstone pattern) a key uses, if any.
    pub fn side_slot(&self, bits: u64) -> Option<usize> {
        if bits == self.empty {
            Some(0)
        } else if bits == self.tombstone {
            Some(1)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip() {
        assert_eq!(<i32 as Key>::from_bits(Key::to_bits(-1i32)), -1);
        assert_eq!(Key::to_bits(-1i32), 0xffff_ffff);
        assert_eq!(<f64 as Value>::from_bits(Value::to_bits(1.5f64)), 1.5);
        assert_eq!(Sentinels::for_width(4).empty, 0xffff_ffff);
        assert_eq!(Sentinels::for_width(8).tombstone, u64::MAX - 1);
        assert_eq!(Sentinels::for_width(4).side_slot(0xffff_fffe), Some(1));
    }
}
