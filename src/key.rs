//! Key and value types.
//!
//! A table stores fixed-size plain-old-data keys and values, compared bytewise:
//!
//! | | types |
//! |---|---|
//! | keys | `u32`, `i32`, `u64`, `i64`, `u128`, `i128`, `[u8; N]` for N ∈ {4, 8, 12, 16, 20, 24, 32, 48, 64} |
//! | values | every key type, `f32`, `f64`, and `[u8; N]` for N ∈ {128, 256} |
//!
//! Types of at most 8 bytes are *narrow*, the others *wide*. Every key value is insertable: the
//! tables' internal sentinels (an empty slot, a deleted slot) are all-ones bit patterns, and a
//! user key equal to one of them is stored on a side path, invisibly to users.
//!
//! Both traits map a type to and from 64 bits, for workload generators, tests and hashing:
//!
//! - [`Key::from_bits`] / [`Value::from_bits`] (a `u64` → the type). For narrow types, the bit
//!   pattern truncated to the width, as a bijection would. For wide types, an injective
//!   expansion: the first 8 bytes are `bits` in little-endian order, and every following 8-byte
//!   chunk (the last one possibly shorter) is a SplitMix64-style mix of `bits` and the chunk's
//!   index, so the tails of wide keys look random and a table that compares only a key's prefix
//!   fails. The sentinel-like inputs are the exception: `from_bits(u64::MAX)` is all ones (every
//!   byte `0xff`) and `from_bits(u64::MAX - 1)` is all ones but for a first byte `0xfe`; for
//!   narrow types this is what truncation gives (`u32::MAX`, `u32::MAX - 1`, `-1i64`, ...), so
//!   these two are "the sentinel patterns" of every width.
//! - [`Key::to_bits`] / [`Value::to_bits`] (the type → a `u64`). For narrow types, the bit
//!   pattern zero-extended (the inverse of `from_bits`). For wide types, [`digest`]: a 64-bit
//!   hash of every byte. It is **not invertible** (`from_bits(x.to_bits()) != x` in general),
//!   distinct wide values may share a digest, and two values that differ in a single 8-byte
//!   chunk never do.
//!
//! ```
//! use warpmap::Key;
//! assert_eq!(<u32 as Key>::from_bits(u64::MAX - 1), u32::MAX - 1);
//! let k = <[u8; 16] as Key>::from_bits(0x0102_0304_0506_0708);
//! assert_eq!(k[..8], [8, 7, 6, 5, 4, 3, 2, 1]); // then 8 random-looking bytes
//! assert_eq!(<u128 as Key>::from_bits(u64::MAX), u128::MAX);
//! let ones_but_first = <[u8; 12] as Key>::from_bits(u64::MAX - 1);
//! assert_eq!(ones_but_first, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
//! ```

use crate::hash::{fmix64, splitmix64, GOLDEN};
use std::fmt::Debug;
use std::hash::Hash;

mod sealed {
    pub trait Sealed {}
}

/// A key type: plain old data of a fixed width, compared bytewise.
///
/// Implemented for `u32`, `i32`, `u64`, `i64`, `u128`, `i128` and `[u8; N]` for
/// N ∈ {4, 8, 12, 16, 20, 24, 32, 48, 64}. Tables work on the bytes, so a key type is fully
/// described by its width. See the [module docs](self) for the meaning of
/// [`to_bits`](Key::to_bits) and [`from_bits`](Key::from_bits) on narrow (at most 8 bytes) and
/// wide types.
pub trait Key:
    bytemuck::Pod + Eq + Hash + Ord + Debug + Send + Sync + sealed::Sealed + 'static
{
    /// Width in bytes (4 to 64).
    const BYTES: usize;
    /// A short name for messages and reports: `"u32"`, `"u128"`, `"[u8; 16]"`, ...
    const NAME: &'static str;
    /// At most 8 bytes: the bit pattern, zero-extended (the inverse of
    /// [`from_bits`](Key::from_bits)). Wider: [`digest`] of the bytes, a 64-bit hash of every
    /// byte that is not invertible.
    fn to_bits(self) -> u64;
    /// At most 8 bytes: the key with this bit pattern, truncated to the width. Wider: the first
    /// 8 bytes are `bits` (little-endian) and each following 8-byte chunk (the last one possibly
    /// shorter) is a mix of `bits` and the chunk's index, so this is injective in `bits`; except
    /// that `u64::MAX` gives all ones and `u64::MAX - 1` all ones but for a first byte `0xfe`.
    fn from_bits(bits: u64) -> Self;
}

/// A value type: plain old data of a fixed width.
///
/// Implemented for every [`Key`] type, `f32`, `f64`, and `[u8; N]` for
/// N ∈ {4, 8, 12, 16, 20, 24, 32, 48, 64, 128, 256}. [`to_bits`](Value::to_bits) and
/// [`from_bits`](Value::from_bits) mean what they mean for keys (see the [module docs](self)).
pub trait Value:
    bytemuck::Pod + PartialEq + Debug + Send + Sync + sealed::Sealed + 'static
{
    /// Width in bytes (4 to 256).
    const BYTES: usize;
    /// A short name for messages and reports: `"f32"`, `"[u8; 256]"`, ...
    const NAME: &'static str;
    /// At most 8 bytes: the bit pattern, zero-extended. Wider: [`digest`] of the bytes (not
    /// invertible).
    fn to_bits(self) -> u64;
    /// At most 8 bytes: the value with this bit pattern, truncated to the width. Wider: the
    /// injective expansion of [`Key::from_bits`] (`bits` little-endian in the first 8 bytes,
    /// mixed tails; all ones for `u64::MAX`, all ones but a first byte `0xfe` for
    /// `u64::MAX - 1`).
    fn from_bits(bits: u64) -> Self;
    /// The arithmetic kind of a numeric value (`u32`, `i32`, `f32`, `u64`, `i64`, `f64`), which
    /// reduce by key ([`InsertMode::Apply`](crate::InsertMode::Apply)) needs; `None` for the
    /// others (byte arrays, 128-bit integers).
    const NUMERIC: Option<Numeric> = None;
    /// `op(self, incoming)`: a wrapping sum for integers, the IEEE sum for floats, the minimum
    /// or maximum (for floats as [`f32::min`] / [`f32::max`]: a NaN loses to a number). Types
    /// without [`NUMERIC`](Value::NUMERIC) return `self` (the tables refuse to reduce them).
    fn reduce(self, incoming: Self, op: crate::Reduce) -> Self {
        let _ = (incoming, op);
        self
    }
    /// The value as an `f64` (rounded where it has more than 53 significant bits), for the
    /// numeric types ([`NUMERIC`](Value::NUMERIC)); `None` for the others. The relational
    /// operators' means sum in it ([`ops::group_by`](crate::ops::group_by)).
    fn to_f64(self) -> Option<f64> {
        None
    }
}

/// The arithmetic kind of a numeric [`Value`] (see [`Value::NUMERIC`]); the kernels take it in
/// the mode word of a reducing insert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Numeric {
    /// `u32`, `u64`.
    Unsigned = 0,
    /// `i32`, `i64` (two's complement: their sums are the unsigned ones).
    Signed = 1,
    /// `f32`, `f64`.
    Float = 2,
}

/// Salts the tails of wide `from_bits` so that they are unrelated to [`digest`].
const TAIL_SALT: u64 = 0x6a09_e667_f3bc_c909;

/// The 8-byte chunk number `chunk` (1, 2, ...) of the wide `from_bits(bits)`: element `chunk` of
/// a SplitMix64 stream seeded with `fmix64(bits ^ TAIL_SALT)`.
#[inline]
fn tail_word(bits: u64, chunk: u64) -> u64 {
    splitmix64(fmix64(bits ^ TAIL_SALT).wrapping_add(chunk.wrapping_mul(GOLDEN)))
}

/// The 64-bit digest of a wide key or value, its [`Key::to_bits`] / [`Value::to_bits`]:
///
/// ```text
/// h = 0x9e3779b97f4a7c15 ^ len
/// for each 8-byte chunk w of the bytes (little-endian; the last one zero-padded):
///     h = fmix64(h ^ w) + 0x9e3779b97f4a7c15   (wrapping)
/// ```
///
/// Every step is a bijection of `h`, so two inputs of one length that differ in exactly one
/// chunk (in the last byte, say) always have different digests. It is a hash, not an encoding:
/// not invertible, and other pairs of inputs may collide (with probability about 2^-64).
pub fn digest(bytes: &[u8]) -> u64 {
    let mut h = GOLDEN ^ bytes.len() as u64;
    for chunk in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = fmix64(h ^ u64::from_le_bytes(w)).wrapping_add(GOLDEN);
    }
    h
}

/// `to_bits` of a byte-array-like type: zero-extended little-endian bytes up to 8 bytes, the
/// [`digest`] beyond.
#[inline]
fn pod_to_bits<T: bytemuck::Pod>(x: T) -> u64 {
    let bytes = bytemuck::bytes_of(&x);
    if bytes.len() <= 8 {
        let mut w = [0u8; 8];
        w[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(w)
    } else {
        digest(bytes)
    }
}

/// `from_bits` of a byte-array-like type (see the [module docs](self)).
#[inline]
fn pod_from_bits<T: bytemuck::Pod>(bits: u64) -> T {
    let mut x = T::zeroed();
    let bytes = bytemuck::bytes_of_mut(&mut x);
    if bytes.len() <= 8 {
        let n = bytes.len();
        bytes.copy_from_slice(&bits.to_le_bytes()[..n]);
    } else if bits >= u64::MAX - 1 {
        bytes.fill(0xff);
        if bits == u64::MAX - 1 {
            bytes[0] = 0xfe;
        }
    } else {
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let w = if i == 0 {
                bits
            } else {
                tail_word(bits, i as u64)
            };
            let n = chunk.len();
            chunk.copy_from_slice(&w.to_le_bytes()[..n]);
        }
    }
    x
}

/// Implements `Value` (and `Key` with `key: true`) for primitive types of at most 8 bytes, by
/// casting to and from the unsigned integer of their width.
macro_rules! impl_narrow {
    ($($t:ty => $bits:ty, $name:literal, key: $is_key:tt, $num:ident, $sum:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Value for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            const NAME: &'static str = $name;
            const NUMERIC: Option<Numeric> = Some(Numeric::$num);
            fn to_bits(self) -> u64 { bytemuck::cast::<$t, $bits>(self) as u64 }
            fn from_bits(bits: u64) -> Self { bytemuck::cast::<$bits, $t>(bits as $bits) }
            fn reduce(self, incoming: Self, op: crate::Reduce) -> Self {
                match op {
                    crate::Reduce::Sum => impl_narrow!(@sum $sum self, incoming),
                    crate::Reduce::Min => self.min(incoming),
                    crate::Reduce::Max => self.max(incoming),
                }
            }
            fn to_f64(self) -> Option<f64> { Some(self as f64) }
        }
        impl_narrow!(@key $is_key $t, $bits, $name);
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
    (@sum wrapping $a:expr, $b:expr) => { $a.wrapping_add($b) };
    (@sum ieee $a:expr, $b:expr) => { $a + $b };
}

impl_narrow! {
    u32 => u32, "u32", key: true, Unsigned, wrapping;
    i32 => u32, "i32", key: true, Signed, wrapping;
    u64 => u64, "u64", key: true, Unsigned, wrapping;
    i64 => u64, "i64", key: true, Signed, wrapping;
    f32 => u32, "f32", key: false, Float, ieee;
    f64 => u64, "f64", key: false, Float, ieee;
}

/// Implements `Value` (and `Key` with `key: true`) through the type's bytes: `u128`, `i128`
/// and byte arrays.
macro_rules! impl_bytes {
    ($($t:ty, $name:expr, key: $is_key:tt;)*) => {$(
        impl sealed::Sealed for $t {}
        impl Value for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            const NAME: &'static str = $name;
            fn to_bits(self) -> u64 { pod_to_bits(self) }
            fn from_bits(bits: u64) -> Self { pod_from_bits(bits) }
        }
        impl_bytes!(@key $is_key $t, $name);
    )*};
    (@key true $t:ty, $name:expr) => {
        impl Key for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            const NAME: &'static str = $name;
            fn to_bits(self) -> u64 { pod_to_bits(self) }
            fn from_bits(bits: u64) -> Self { pod_from_bits(bits) }
        }
    };
    (@key false $t:ty, $name:expr) => {};
}

/// `[u8; N]` keys and values (`key: true`) or values only (`key: false`).
macro_rules! impl_arrays {
    (key: $is_key:tt, $($n:literal),*) => {
        impl_bytes! { $([u8; $n], concat!("[u8; ", stringify!($n), "]"), key: $is_key;)* }
    };
}

impl_bytes! {
    u128, "u128", key: true;
    i128, "i128", key: true;
}
impl_arrays!(key: true, 4, 8, 12, 16, 20, 24, 32, 48, 64);
impl_arrays!(key: false, 128, 256);

/// The internal sentinel bit patterns of the GPU tables for a narrow key width (4 or 8 bytes).
/// A user key equal to one of these is stored on a side path (see the crate docs); users never
/// see them. For every width, [`Key::from_bits`]`(u64::MAX)` and `from_bits(u64::MAX - 1)` are
/// the corresponding all-ones patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sentinels {
    /// Marks a slot that never held a key.
    pub empty: u64,
    /// Marks a slot whose key was erased.
    pub tombstone: u64,
}

impl Sentinels {
    /// The sentinels for keys of `key_bytes` bytes (at most 8): all ones, and all ones minus one.
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
    use std::collections::HashSet;

    #[test]
    fn bits_round_trip() {
        assert_eq!(<i32 as Key>::from_bits(Key::to_bits(-1i32)), -1);
        assert_eq!(Key::to_bits(-1i32), 0xffff_ffff);
        assert_eq!(<f64 as Value>::from_bits(Value::to_bits(1.5f64)), 1.5);
        assert_eq!(Sentinels::for_width(4).empty, 0xffff_ffff);
        assert_eq!(Sentinels::for_width(8).tombstone, u64::MAX - 1);
        assert_eq!(Sentinels::for_width(4).side_slot(0xffff_fffe), Some(1));
    }

    /// Narrow types: `from_bits(to_bits(x)) == x`, and `to_bits(from_bits(b))` is `b` truncated.
    fn narrow_round_trip<T: Value>() {
        let mask = if T::BYTES >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * T::BYTES)) - 1
        };
        let mut b = 0x0123_4567_89ab_cdefu64;
        for _ in 0..1000 {
            b = splitmix64(b);
            for bits in [b, 0, 1, u64::MAX, u64::MAX - 1, b >> 40] {
                let x = T::from_bits(bits);
                assert_eq!(x.to_bits(), bits & mask, "{} {bits:#x}", T::NAME);
                assert_eq!(
                    bytemuck::bytes_of(&T::from_bits(x.to_bits())),
                    bytemuck::bytes_of(&x),
                    "{}",
                    T::NAME
                );
            }
        }
    }

    #[test]
    fn narrow_types_round_trip() {
        narrow_round_trip::<u32>();
        narrow_round_trip::<i32>();
        narrow_round_trip::<u64>();
        narrow_round_trip::<i64>();
        narrow_round_trip::<f32>();
        narrow_round_trip::<f64>();
        narrow_round_trip::<[u8; 4]>();
        narrow_round_trip::<[u8; 8]>();
        assert_eq!(
            <[u8; 4] as Key>::from_bits(0x1122_3344_5566),
            [0x66, 0x55, 0x44, 0x33]
        );
        assert_eq!(Key::to_bits([1u8, 0, 0, 0x80]), 0x8000_0001);
        assert_eq!(<i64 as Key>::from_bits(u64::MAX - 1), -2);
        // Keys and values agree.
        assert_eq!(<u64 as Key>::from_bits(77), <u64 as Value>::from_bits(77));
    }

    #[test]
    fn names_and_widths() {
        assert_eq!(<u128 as Key>::NAME, "u128");
        assert_eq!(<i128 as Key>::NAME, "i128");
        assert_eq!(<[u8; 16] as Key>::NAME, "[u8; 16]");
        assert_eq!(<[u8; 256] as Value>::NAME, "[u8; 256]");
        assert_eq!(<[u8; 48] as Key>::BYTES, 48);
        assert_eq!(<[u8; 128] as Value>::BYTES, 128);
        assert_eq!(<u128 as Key>::BYTES, 16);
    }

    /// Wide types: `from_bits` puts `bits` in the first 8 bytes (so it is injective), its tails
    /// differ between inputs and between chunks, and the all-ones exceptions hold.
    fn wide_from_bits<T: Value>() {
        let n = T::BYTES;
        assert!(n > 8);
        let inputs: Vec<u64> = (0..2000u64)
            .map(splitmix64)
            .chain(0..64)
            .chain((1..64).map(|s| 1u64 << s))
            .chain([u64::MAX, u64::MAX - 1, u64::MAX - 2])
            .collect::<HashSet<u64>>()
            .into_iter()
            .collect();
        let mut seen = HashSet::new();
        let mut tails = HashSet::new();
        for &bits in &inputs {
            let x = T::from_bits(bits);
            let bytes = bytemuck::bytes_of(&x).to_vec();
            assert_eq!(bytes[..8], bits.to_le_bytes(), "{} {bits:#x}", T::NAME);
            assert!(
                seen.insert(bytes.clone()),
                "{}: from_bits not injective",
                T::NAME
            );
            if bits < u64::MAX - 1 {
                // The tail is not a copy of the head, and is not all ones or all zeros.
                let tail = &bytes[8..];
                assert!(tail.iter().any(|&b| b != 0xff), "{} {bits:#x}", T::NAME);
                assert!(tail.iter().any(|&b| b != 0), "{} {bits:#x}", T::NAME);
                assert!(tails.insert(tail.to_vec()), "{}: tails repeat", T::NAME);
                if n >= 16 {
                    assert_ne!(bytes[8..16], bytes[..8], "{} {bits:#x}", T::NAME);
                }
                if n >= 24 {
                    assert_ne!(bytes[16..24], bytes[8..16], "{} {bits:#x}", T::NAME);
                }
            }
        }
        // Neighbouring inputs have unrelated tails: about half the tail bits differ.
        let a = T::from_bits(1000);
        let b = T::from_bits(1001);
        let (ta, tb) = (&bytemuck::bytes_of(&a)[8..], &bytemuck::bytes_of(&b)[8..]);
        let differ: u32 = ta.iter().zip(tb).map(|(x, y)| (x ^ y).count_ones()).sum();
        let bits = 8 * ta.len() as u32;
        assert!(
            differ > bits / 4 && differ < bits * 3 / 4,
            "{}: {differ} of {bits} tail bits differ",
            T::NAME
        );

        // The sentinel-like patterns.
        let ones = T::from_bits(u64::MAX);
        assert!(
            bytemuck::bytes_of(&ones).iter().all(|&b| b == 0xff),
            "{}",
            T::NAME
        );
        let ones_but_first = T::from_bits(u64::MAX - 1);
        let obf = bytemuck::bytes_of(&ones_but_first);
        assert_eq!(obf[0], 0xfe, "{}", T::NAME);
        assert!(obf[1..].iter().all(|&b| b == 0xff), "{}", T::NAME);
    }

    /// Wide types: `to_bits` is a digest that changes when any single byte changes (the last
    /// byte included), and is the documented function of the bytes.
    fn wide_digest<T: Value>() {
        let mut seen = HashSet::new();
        for bits in (1..500u64)
            .map(splitmix64)
            .chain([u64::MAX, u64::MAX - 1, 0])
        {
            let x = T::from_bits(bits);
            let d = x.to_bits();
            assert_eq!(d, digest(bytemuck::bytes_of(&x)), "{}", T::NAME);
            assert!(seen.insert(d), "{}: digests collide", T::NAME);
            for byte in [T::BYTES - 1, 0, T::BYTES / 2, 8] {
                for flip in [1u8, 0x80, 0xff] {
                    let mut y = x;
                    bytemuck::bytes_of_mut(&mut y)[byte] ^= flip;
                    assert_ne!(
                        y.to_bits(),
                        d,
                        "{}: digest ignores byte {byte} (bits {bits:#x})",
                        T::NAME
                    );
                }
            }
        }
        // Zero and all ones are ordinary inputs.
        assert_ne!(T::zeroed().to_bits(), T::from_bits(u64::MAX).to_bits());
    }

    fn wide<T: Value>() {
        wide_from_bits::<T>();
        wide_digest::<T>();
    }

    #[test]
    fn wide_keys_from_bits_and_digest() {
        wide::<u128>();
        wide::<i128>();
        wide::<[u8; 12]>();
        wide::<[u8; 16]>();
        wide::<[u8; 20]>();
        wide::<[u8; 24]>();
        wide::<[u8; 32]>();
        wide::<[u8; 48]>();
        wide::<[u8; 64]>();
        wide::<[u8; 128]>();
        wide::<[u8; 256]>();
    }

    #[test]
    fn wide_keys_and_values_agree() {
        for bits in [0u64, 5, u64::MAX, u64::MAX - 1, 0xdead_beef] {
            let k = <[u8; 32] as Key>::from_bits(bits);
            assert_eq!(k, <[u8; 32] as Value>::from_bits(bits));
            assert_eq!(Key::to_bits(k), Value::to_bits(k));
            let u = <u128 as Key>::from_bits(bits);
            assert_eq!(
                bytemuck::bytes_of(&u),
                &<[u8; 16] as Key>::from_bits(bits)[..]
            );
        }
        // On a little-endian machine the first 8 bytes of a u128 are its low half.
        if cfg!(target_endian = "little") {
            assert_eq!(<u128 as Key>::from_bits(42) as u64, 42);
            assert_eq!(<u128 as Key>::from_bits(u64::MAX - 1), u128::MAX - 1);
            assert_eq!(<i128 as Key>::from_bits(u64::MAX), -1);
            assert_eq!(<i128 as Key>::from_bits(u64::MAX - 1), -2);
        }
    }

    #[test]
    fn digest_is_the_documented_function() {
        // The digest of 16 zero bytes, step by step as documented (a GPU twin must agree).
        let d0 = digest(&[0u8; 16]);
        let mut h = GOLDEN ^ 16;
        h = fmix64(h).wrapping_add(GOLDEN);
        h = fmix64(h).wrapping_add(GOLDEN);
        assert_eq!(d0, h);
        // A shorter last chunk is zero-padded, and the length is part of the digest.
        assert_ne!(digest(&[0u8; 12]), digest(&[0u8; 16]));
        assert_ne!(digest(&[1u8; 12]), digest(&[1u8; 13]));
    }
}
