//! Arrow columns in and out (src/arrow.rs, feature `arrow`), on the CPU backend and, where there
//! is one, on the GPU (WarpDrive and Stadium for the wide keys): every array type, null keys
//! never match, value nulls refused, type mismatches named, sliced arrays read at their offset,
//! answers as arrays with nulls and as record batches.
#![cfg(feature = "arrow")]

mod common;

use common::*;
use std::collections::HashMap;
use warpmap::arrow::arrow_array::{
    Array, FixedSizeBinaryArray, Float64Array, Int32Array, Int64Array, UInt32Array, UInt64Array,
};
use warpmap::arrow::{find_array, insert_arrays, reduce_by_key, to_record_batch, ArrowColumn};
use warpmap::{
    CpuTable, Error, HashTable, InsertMode, Key, Reduce, Stadium, StadiumConfig, Value, WarpDrive,
    WarpDriveConfig,
};

/// Tables under test, each with its name.
type Named<K, V> = Vec<(&'static str, Box<dyn HashTable<K, V>>)>;

/// Tables of `K → V` for `capacity` keys: the CPU backend, and the GPU where there is one.
fn tables<K: Key, V: Value>(capacity: usize, wide: bool) -> Named<K, V> {
    let mut v: Named<K, V> = vec![("cpu", Box::new(CpuTable::<K, V>::new(capacity).unwrap()))];
    if let Some(g) = gpu() {
        if wide {
            v.push((
                "stadium",
                Box::new(Stadium::<K, V>::new(g, StadiumConfig::new(capacity)).unwrap()),
            ));
        } else {
            v.push((
                "warpdrive",
                Box::new(WarpDrive::<K, V>::new(g, WarpDriveConfig::new(capacity)).unwrap()),
            ));
        }
    }
    v
}

/// Insert with some null keys, probe with present, absent and null keys, read back: against a
/// host map. `keys` and `values` are plain vectors; `null_every` makes every such key null.
fn round_trip<K, V>(keys: Vec<K>, values: Vec<V>, probe: Vec<K>, null_every: usize, wide: bool)
where
    K: Key + ArrowColumn + std::hash::Hash + Eq,
    V: ArrowColumn + PartialEq + std::fmt::Debug,
{
    let n = keys.len();
    let key_nulls: Vec<bool> = (0..n)
        .map(|i| null_every == 0 || i % null_every != 1)
        .collect();
    let key_array = K::array(keys.clone(), Some(key_nulls.clone().into()));
    let value_array = V::array(values.clone(), None);
    let mut want: HashMap<K, V> = HashMap::new();
    for i in 0..n {
        if key_nulls[i] {
            want.insert(keys[i], values[i]);
        }
    }
    let probe_nulls: Vec<bool> = (0..probe.len()).map(|i| i % 5 != 3).collect();
    let probe_array = K::array(probe.clone(), Some(probe_nulls.clone().into()));
    for (name, mut t) in tables::<K, V>(2 * n + 8, wide) {
        let what = format!("{name} {}/{}", <K as Key>::NAME, <V as Value>::NAME);
        let inserted =
            insert_arrays(t.as_mut(), &*key_array, &*value_array, InsertMode::Assign).unwrap();
        assert_eq!(inserted, key_nulls.iter().filter(|&&v| v).count(), "{what}");
        assert_eq!(t.len().unwrap(), want.len(), "{what}: len");
        let got = find_array(t.as_ref(), &*probe_array).unwrap();
        assert_eq!(got.len(), probe.len());
        assert_eq!(got.data_type(), &V::data_type());
        let values_back = V::values(&*got).unwrap();
        for (i, k) in probe.iter().enumerate() {
            let expect = if probe_nulls[i] { want.get(k) } else { None };
            assert_eq!(got.is_valid(i), expect.is_some(), "{what}: row {i}");
            if let Some(v) = expect {
                assert_eq!(&values_back[i], v, "{what}: row {i}");
            }
        }
        let batch = to_record_batch(t.as_ref()).unwrap();
        assert_eq!(batch.num_rows(), want.len());
        let (bk, bv) = (
            K::values(batch.column(0)).unwrap(),
            V::values(batch.column(1)).unwrap(),
        );
        for (k, v) in bk.iter().zip(bv.iter()) {
            assert_eq!(want.get(k), Some(v), "{what}: retrieved");
        }
    }
}

#[test]
fn every_array_type_round_trips() {
    let mut rng = SplitMix64::new(21);
    let n = 3000;
    macro_rules! case {
        ($k:ty, $v:ty, $wide:expr, $val:expr) => {{
            let keys = unique_keys::<$k>(&mut rng, n, true);
            let values: Vec<$v> = (0..n).map($val).collect();
            let mut probe = keys[..n / 2].to_vec();
            probe.extend(unique_keys::<$k>(&mut rng, n / 2, false));
            round_trip::<$k, $v>(keys, values, probe, 7, $wide);
        }};
    }
    case!(u32, u32, false, |i| i as u32 * 3);
    case!(u64, u64, false, |i| i as u64 * 5);
    case!(i32, i64, false, |i| -(i as i64));
    case!(i64, f64, false, |i| i as f64 * 0.5);
    case!(u32, f32, false, |i| i as f32);
    case!([u8; 16], u64, true, |i| i as u64);
    case!(u64, [u8; 8], false, |i| (i as u64).to_le_bytes());
}

#[test]
fn keys_without_nulls_and_sliced_arrays() {
    let keys = UInt64Array::from((0..100u64).map(|k| k * 7).collect::<Vec<_>>());
    let values = UInt32Array::from((0..100u32).collect::<Vec<_>>());
    for (name, mut t) in tables::<u64, u32>(256, false) {
        // The second half only, through slices of both arrays.
        let (ks, vs) = (keys.slice(50, 50), values.slice(50, 50));
        assert_eq!(
            insert_arrays(t.as_mut(), &ks, &vs, InsertMode::Assign).unwrap(),
            50,
            "{name}"
        );
        let probe = keys.slice(40, 20);
        let got = find_array(t.as_ref(), &probe).unwrap();
        let got = got.as_any().downcast_ref::<UInt32Array>().unwrap();
        let want: Vec<Option<u32>> = (40..60u32).map(|i| (i >= 50).then_some(i)).collect();
        assert_eq!(got.iter().collect::<Vec<_>>(), want, "{name}");
    }
    // A sliced fixed-size binary array is read at its offset.
    let bytes: Vec<[u8; 4]> = (0..10u32).map(|i| (i * 1000).to_le_bytes()).collect();
    let fsb = <[u8; 4]>::array(bytes.clone(), None);
    let sliced = fsb.slice(3, 4);
    assert_eq!(<[u8; 4]>::values(&*sliced).unwrap().as_ref(), &bytes[3..7]);
    let _ = FixedSizeBinaryArray::try_from_iter(bytes.iter()).unwrap();
}

#[test]
fn reduce_by_key_from_arrays() {
    let keys = Int64Array::from(vec![
        Some(1),
        Some(2),
        None,
        Some(1),
        Some(i64::MAX),
        Some(2),
    ]);
    let values = Float64Array::from(vec![1.5, 2.0, 100.0, 0.25, -1.0, 3.0]);
    for (name, mut t) in tables::<i64, f64>(64, false) {
        let batch = reduce_by_key(t.as_mut(), &keys, &values, Reduce::Sum).unwrap();
        let k = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        let v = batch
            .column(1)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        let mut got: Vec<(i64, f64)> = k
            .values()
            .iter()
            .copied()
            .zip(v.values().iter().copied())
            .collect();
        got.sort_by_key(|p| p.0);
        assert_eq!(got, vec![(1, 1.75), (2, 5.0), (i64::MAX, -1.0)], "{name}");
        assert_eq!(batch.schema().field(0).name(), "key");
        // Min into the same table: the groups' values become min(sum, incoming).
        let more = Int64Array::from(vec![1, 2]);
        let less = Float64Array::from(vec![0.5, 9.0]);
        let batch = reduce_by_key(t.as_mut(), &more, &less, Reduce::Min).unwrap();
        assert_eq!(batch.num_rows(), 3, "{name}");
    }
}

#[test]
fn refusals_name_the_problem() {
    let mut t = CpuTable::<u32, u64>::new(16).unwrap();
    let keys = UInt32Array::from(vec![1, 2]);
    // Wrong key type, wrong value type, mismatched lengths, value nulls.
    let e = insert_arrays(
        &mut t,
        &Int32Array::from(vec![1, 2]),
        &UInt64Array::from(vec![1, 2]),
        InsertMode::Assign,
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("Int32") && m.contains("u32")),
        "{e}"
    );
    let e = insert_arrays(
        &mut t,
        &keys,
        &UInt32Array::from(vec![1, 2]),
        InsertMode::Assign,
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)));
    let e = insert_arrays(
        &mut t,
        &keys,
        &UInt64Array::from(vec![1]),
        InsertMode::Assign,
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)));
    let e = insert_arrays(
        &mut t,
        &keys,
        &UInt64Array::from(vec![Some(1), None]),
        InsertMode::Assign,
    )
    .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidInput(m) if m.contains("nulls")),
        "{e}"
    );
    assert_eq!(t.len().unwrap(), 0, "nothing inserted by a refused call");
    let e = find_array(&t, &UInt64Array::from(vec![1])).unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)));
    // Reduce by key of values that are not numeric.
    let mut b = CpuTable::<u32, [u8; 8]>::new(16).unwrap();
    let e = reduce_by_key(
        &mut b,
        &keys,
        &*<[u8; 8]>::array(vec![[0; 8]; 2], None),
        Reduce::Sum,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Unsupported(_)), "{e}");
    // A full table: the error, not a silent drop.
    let mut small = CpuTable::<u32, u64>::new(2).unwrap();
    let many = UInt32Array::from((0..1000u32).collect::<Vec<_>>());
    let vals = UInt64Array::from(vec![0u64; 1000]);
    let r = insert_arrays(&mut small, &many, &vals, InsertMode::Assign);
    assert!(r.is_err() || small.len().unwrap() == 1000);
}
