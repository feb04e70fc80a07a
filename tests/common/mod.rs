//! Helpers shared by the integration tests: a seeded RNG, the backends present on this machine,
//! and checks of a table against a `std::collections::HashMap` oracle.
//!
//! GPU cases run when a GPU is present. Without one they are skipped with a note on stderr,
//! unless `WARPMAP_REQUIRE_GPU` is set (to anything but `0`): then a missing GPU fails the test.

#![allow(dead_code)] // each test binary uses its own subset

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use warpmap::table::registry::schemes;
use warpmap::table::warpdrive::GROUP_SIZES;
use warpmap::{Backend, Gpu, HashTable, Key, Value, WarpDrive, WarpDriveConfig};
use warpmap::{Stadium, StadiumConfig};

/// A table behind the common trait, as the contract tests use it.
pub type DynTable<K, V> = Box<dyn HashTable<K, V>>;

/// A multimap behind the common trait, as the multimap contract tests use it.
pub type DynMultiMap<K, V> = Box<dyn warpmap::MultiMap<K, V>>;

/// The WarpDrive group sizes every contract test runs on (all that the scheme allows).
pub const GPU_GROUP_SIZES: [u32; 6] = GROUP_SIZES;

/// splitmix64: a tiny, fast, seeded generator (no dependency; deterministic across platforms).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// An index in `0..n` (n > 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64) / ((1u64 << 53) as f64) < p
    }

    /// A uniformly random key of type `K`.
    pub fn key<K: Key>(&mut self) -> K {
        K::from_bits(self.next_u64())
    }

    /// A uniformly random value of type `V`.
    pub fn value<V: Value>(&mut self) -> V {
        V::from_bits(self.next_u64())
    }
}

/// splitmix64's output function (a bijection on u64).
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A value determined by the key and a round number, so that duplicates of a key within one
/// batch carry the same value (the oracle then knows the outcome).
pub fn value_for<K: Key, V: Value>(key: K, round: u64) -> V {
    V::from_bits(mix(key.to_bits() ^ mix(round.wrapping_add(0x5151))))
}

/// The two sentinel-like keys of `K`'s width: all ones, and all ones but a first byte `0xfe`
/// (`K::from_bits(u64::MAX)` and `K::from_bits(u64::MAX - 1)`). For narrow keys these equal the
/// tables' internal sentinels: `u32::MAX`, `u32::MAX - 1`; `-1i32`, `-2i32`; and so on. For wide
/// keys: `u128::MAX`, `u128::MAX - 1`; `[0xff; 16]`, `[0xfe, 0xff, ..]`; and so on.
pub fn sentinel_keys<K: Key>() -> [K; 2] {
    [K::from_bits(u64::MAX), K::from_bits(u64::MAX - 1)]
}

/// `key` with its last byte XORed with `flip` (its first 8 bytes unchanged for wide keys).
pub fn with_last_byte<K: Key>(mut key: K, flip: u8) -> K {
    let bytes = bytemuck::bytes_of_mut(&mut key);
    let last = bytes.len() - 1;
    bytes[last] ^= flip;
    key
}

/// `n` distinct keys: with `specials`, first the two sentinel keys, 0 and 1, then random keys;
/// without, random keys that are not sentinels.
pub fn unique_keys<K: Key>(rng: &mut SplitMix64, n: usize, specials: bool) -> Vec<K> {
    let sentinels = sentinel_keys::<K>();
    let mut seen = HashSet::with_capacity(n);
    let mut keys = Vec::with_capacity(n);
    if specials {
        for k in sentinels
            .into_iter()
            .chain([K::from_bits(0), K::from_bits(1)])
        {
            if keys.len() < n && seen.insert(k) {
                keys.push(k);
            }
        }
    } else {
        seen.extend(sentinels);
    }
    while keys.len() < n {
        let k = rng.key::<K>();
        if seen.insert(k) {
            keys.push(k);
        }
    }
    keys
}

/// Whether GPU tests must run (`WARPMAP_REQUIRE_GPU` set to anything but empty or `0`).
pub fn gpu_required() -> bool {
    std::env::var("WARPMAP_REQUIRE_GPU").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The GPU, if present. Without one: `None` and a note on stderr, or a panic when
/// [`gpu_required`].
pub fn gpu() -> Option<Arc<Gpu>> {
    match Gpu::default_gpu() {
        Ok(g) => Some(g),
        Err(e) => {
            if gpu_required() {
                panic!("WARPMAP_REQUIRE_GPU is set but no GPU is usable: {e}");
            }
            eprintln!("skipping the GPU cases (set WARPMAP_REQUIRE_GPU=1 to fail instead): {e}");
            None
        }
    }
}

/// A WarpDrive table with group size `g`, or a panic that says why (on a machine with a GPU,
/// creating a small table must work).
pub fn warpdrive<K: Key, V: Value>(gpu: &Arc<Gpu>, config: WarpDriveConfig) -> WarpDrive<K, V> {
    let what = format!("WarpDrive<{}, {}> {config:?}", K::NAME, V::NAME);
    WarpDrive::new(gpu.clone(), config).unwrap_or_else(|e| panic!("creating {what}: {e}"))
}

/// A Stadium table, or a panic that says why (on a machine with a GPU, creating a small table
/// must work).
pub fn stadium<K: Key, V: Value>(gpu: &Arc<Gpu>, config: StadiumConfig) -> Stadium<K, V> {
    let what = format!("Stadium<{}, {}> {config:?}", K::NAME, V::NAME);
    Stadium::new(gpu.clone(), config).unwrap_or_else(|e| panic!("creating {what}: {e}"))
}

/// Whether the scheme `name` takes part in the tests: all do, unless `WARPMAP_TEST_SCHEMES` lists
/// scheme names (comma-separated, e.g. `slab,cpu`) to run alone (device runs that check one
/// scheme).
pub fn scheme_selected(name: &str) -> bool {
    match std::env::var("WARPMAP_TEST_SCHEMES") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .any(|s| s.trim() == name || s.trim().split('/').next() == Some(name)),
        _ => true,
    }
}

/// Whether the test configuration `name` ("scheme/label") takes part: its scheme is selected
/// and, where `WARPMAP_TEST_SCHEMES` names configurations of it (`sharded/slab/2x2`), it is
/// one of them.
pub fn config_selected(scheme: &str, name: &str) -> bool {
    match std::env::var("WARPMAP_TEST_SCHEMES") {
        Ok(list) if !list.trim().is_empty() => {
            let named: Vec<&str> = list
                .split(',')
                .map(str::trim)
                .filter(|s| s.split('/').next() == Some(scheme) && *s != scheme)
                .collect();
            scheme_selected(scheme) && (named.is_empty() || named.contains(&name))
        }
        _ => true,
    }
}

/// Every backend present on this machine, each holding at least `capacity` keys: every test
/// configuration of every scheme in the registry (`warpmap::table::registry`) that stores `K` and
/// `V`, GPU schemes only on a GPU. Names say which: "cpu", "cpu/1-shard", "warpdrive/g4",
/// "stadium/t8/stash", ... (the scheme, then the configuration's label).
pub fn backends<K: Key, V: Value>(capacity: usize) -> Vec<(String, DynTable<K, V>)> {
    let gpu = if schemes().iter().any(|s| s.backend == Backend::Gpu) {
        gpu()
    } else {
        None
    };
    let mut v: Vec<(String, DynTable<K, V>)> = Vec::new();
    for scheme in schemes() {
        if (scheme.backend == Backend::Gpu && gpu.is_none()) || !scheme_selected(scheme.name) {
            continue;
        }
        for (label, config) in (scheme.test_configs)() {
            if !config.supports(K::BYTES, V::BYTES) {
                continue;
            }
            let name = match label {
                "" => scheme.name.to_string(),
                l => format!("{}/{l}", scheme.name),
            };
            if !config_selected(scheme.name, &name) {
                continue;
            }
            let what = format!("{name} <{}, {}>", K::NAME, V::NAME);
            let t = config
                .build::<K, V>(gpu.as_ref(), capacity)
                .unwrap_or_else(|e| panic!("creating {what}: {e}"));
            v.push((name, t));
        }
    }
    v
}

/// Every [`MultiMap`](warpmap::MultiMap) backend present on this machine, each holding at least `capacity` pairs:
/// the CPU multimap (default shards and a single shard) and, on a GPU, the slab hash's
/// multimap (defaults, and 7 buckets with one-memory-block super blocks: long lists, a pool
/// that grows).
pub fn multimap_backends<K: Key, V: Value>(capacity: usize) -> Vec<(String, DynMultiMap<K, V>)> {
    let mut v: Vec<(String, DynMultiMap<K, V>)> = vec![
        (
            "cpu".into(),
            Box::new(warpmap::CpuMultiMap::<K, V>::new(capacity).expect("CpuMultiMap::new")),
        ),
        (
            "cpu/1-shard".into(),
            Box::new(
                warpmap::CpuMultiMap::<K, V>::with_shards(capacity, 1)
                    .expect("CpuMultiMap::with_shards"),
            ),
        ),
    ];
    if warpmap::table::slab::supports_widths(K::BYTES, V::BYTES) {
        if let Some(gpu) = gpu() {
            for (label, config) in [
                ("slab", warpmap::SlabConfig::new(capacity)),
                (
                    "slab/long-lists",
                    warpmap::SlabConfig::new(capacity)
                        .buckets(7)
                        .memory_blocks(1),
                ),
            ] {
                let m = warpmap::SlabMultiMap::<K, V>::new(gpu.clone(), config)
                    .unwrap_or_else(|e| panic!("creating {label}: {e}"));
                v.push((label.into(), Box::new(m)));
            }
        }
    }
    v
}

/// A value's bytes, to compare values (which need not be `Ord`) as multisets.
pub fn value_bytes<V: Value>(v: &V) -> Vec<u8> {
    bytemuck::bytes_of(v).to_vec()
}

/// `values` as a sorted multiset of their bytes.
pub fn value_multiset<V: Value>(values: &[V]) -> Vec<Vec<u8>> {
    let mut m: Vec<Vec<u8>> = values.iter().map(value_bytes).collect();
    m.sort();
    m
}

/// Checks a multimap against its oracle (every key's values, in any order): `len`,
/// `retrieve_all` (the same pairs, as many times), and `count`, `contains` and `find_all` of
/// every oracle key and of `absent` keys (which must have no values).
pub fn assert_multimap_matches<K: Key, V: Value>(
    name: &str,
    map: &dyn warpmap::MultiMap<K, V>,
    oracle: &HashMap<K, Vec<V>>,
    absent: &[K],
) {
    let pairs: usize = oracle.values().map(Vec::len).sum();
    let len = map.len().unwrap_or_else(|e| panic!("{name}: len: {e}"));
    assert_eq!(len, pairs, "{name}: len() differs from the oracle");
    assert!(len <= map.capacity(), "{name}: len {len} > capacity");
    let (keys, values) = map
        .retrieve_all()
        .unwrap_or_else(|e| panic!("{name}: retrieve_all: {e}"));
    assert_eq!(keys.len(), values.len(), "{name}: retrieve_all lengths");
    let mut got: HashMap<K, Vec<V>> = HashMap::new();
    for (k, v) in keys.into_iter().zip(values) {
        got.entry(k).or_default().push(v);
    }
    let expect: HashMap<K, Vec<Vec<u8>>> = oracle
        .iter()
        .filter(|(_, vs)| !vs.is_empty())
        .map(|(k, vs)| (*k, value_multiset(vs)))
        .collect();
    let got: HashMap<K, Vec<Vec<u8>>> =
        got.iter().map(|(k, vs)| (*k, value_multiset(vs))).collect();
    assert_eq!(got, expect, "{name}: retrieve_all differs from the oracle");

    let queries: Vec<K> = oracle.keys().chain(absent).copied().collect();
    let expect_count = |k: &K| oracle.get(k).map_or(0, Vec::len);
    let counts = map
        .count(&queries)
        .unwrap_or_else(|e| panic!("{name}: count: {e}"));
    let contained = map
        .contains(&queries)
        .unwrap_or_else(|e| panic!("{name}: contains: {e}"));
    let (offsets, found) = map
        .find_all(&queries)
        .unwrap_or_else(|e| panic!("{name}: find_all: {e}"));
    assert_eq!(offsets.len(), queries.len() + 1, "{name}: find_all offsets");
    assert_eq!(offsets[0], 0, "{name}: find_all offsets start at 0");
    assert_eq!(
        *offsets.last().unwrap(),
        found.len(),
        "{name}: find_all ends"
    );
    for (i, k) in queries.iter().enumerate() {
        assert_eq!(counts[i], expect_count(k), "{name}: count({k:?})");
        assert_eq!(contained[i], expect_count(k) > 0, "{name}: contains({k:?})");
        assert!(
            offsets[i] <= offsets[i + 1],
            "{name}: offsets decrease at {i}"
        );
        let vs = &found[offsets[i]..offsets[i + 1]];
        let want = oracle.get(k).map_or(&[][..], Vec::as_slice);
        assert_eq!(
            value_multiset(vs),
            value_multiset(want),
            "{name}: find_all({k:?})"
        );
    }
}

/// Whether the scheme's [`HashTable::mixed_batch`] runs erases ([`warpmap::MixedOp::Erase`]).
/// WarpDrive, Stadium and DyCuckoo erase only in a phase of their own, as their papers do, and
/// refuse such a batch with `Error::Unsupported`; every other scheme, and the CPU backend, runs
/// it.
pub fn erases_in_mixed_batches(scheme: &str) -> bool {
    // two_level refuses every mixed batch on the GPU (its inserts rebuild buckets in place);
    // its CPU twin runs them.
    !matches!(scheme, "warpdrive" | "stadium" | "dycuckoo" | "two_level")
}

/// The scheme whose behaviour a backend named `name` (as [`backends`] names it) has: the
/// inner scheme of a sharded table (`sharded/<inner>/...`), else the name's scheme.
pub fn behaves_as(name: &str) -> &str {
    let mut parts = name.split(['/', ' ']);
    let scheme = parts.next().unwrap_or(name);
    match scheme {
        "sharded" | "sharded_cpu" => parts.next().unwrap_or(scheme),
        _ => scheme,
    }
}

/// Whether a full table of the scheme holds exactly `capacity()` keys and refuses more. The
/// slab hash grows its pool instead (up to a memory budget: its own tests exhaust one), and
/// DyCuckoo doubles subtables (tests/dycuckoo.rs reaches its `max_capacity`).
pub fn fills_to_capacity(scheme: &str) -> bool {
    // The two-level table splits its buckets instead (tests/two_level.rs); a sharded table's
    // shards fill unevenly (tests/sharded.rs fills one to the brim).
    !matches!(
        scheme,
        "slab" | "dycuckoo" | "two_level" | "two_level_cpu" | "sharded" | "sharded_cpu"
    )
}

/// The table's content as a map; panics if `retrieve_all` returns a key twice or mismatched
/// lengths.
pub fn contents<K: Key, V: Value>(name: &str, table: &dyn HashTable<K, V>) -> HashMap<K, V> {
    let (keys, values) = table
        .retrieve_all()
        .unwrap_or_else(|e| panic!("{name}: retrieve_all: {e}"));
    assert_eq!(keys.len(), values.len(), "{name}: retrieve_all lengths");
    let mut map = HashMap::with_capacity(keys.len());
    for (k, v) in keys.into_iter().zip(values) {
        if let Some(old) = map.insert(k, v) {
            panic!("{name}: retrieve_all returned key {k:?} twice (values {old:?}, {v:?})");
        }
    }
    map
}

/// Checks everything observable against the oracle: `len`, `retrieve_all` (no duplicates, same
/// pairs), and `find`/`contains` of every oracle key.
pub fn assert_matches<K: Key, V: Value>(
    name: &str,
    table: &dyn HashTable<K, V>,
    oracle: &HashMap<K, V>,
) {
    let len = table.len().unwrap_or_else(|e| panic!("{name}: len: {e}"));
    assert_eq!(len, oracle.len(), "{name}: len() differs from the oracle");
    let got = contents(name, table);
    assert_eq!(
        got.len(),
        oracle.len(),
        "{name}: retrieve_all size differs from the oracle"
    );
    for (k, v) in oracle {
        match got.get(k) {
            Some(g) => assert_eq!(g, v, "{name}: retrieve_all value of key {k:?}"),
            None => panic!("{name}: key {k:?} missing from retrieve_all"),
        }
    }
    let keys: Vec<K> = oracle.keys().copied().collect();
    let found = table
        .find(&keys)
        .unwrap_or_else(|e| panic!("{name}: find: {e}"));
    for (k, f) in keys.iter().zip(&found) {
        assert_eq!(f.as_ref(), oracle.get(k), "{name}: find({k:?})");
    }
    let contained = table
        .contains(&keys)
        .unwrap_or_else(|e| panic!("{name}: contains: {e}"));
    assert!(
        contained.iter().all(|&c| c),
        "{name}: contains() misses an oracle key"
    );
}

/// Checks the statuses of an insert batch whose outcome the oracle (state *before* the batch)
/// knows: no failures; a key present before is UPDATED at every occurrence; a new key is new
/// (not UPDATED) at exactly one occurrence, and on the CPU backend at its first.
pub fn assert_insert_statuses<K: Key, V: Value>(
    name: &str,
    table: &dyn HashTable<K, V>,
    keys: &[K],
    status: &[warpmap::InsertStatus],
    before: &HashMap<K, V>,
) {
    let mut new_at: HashMap<K, Vec<usize>> = HashMap::new();
    for (i, (k, s)) in keys.iter().zip(status).enumerate() {
        assert!(s.is_ok(), "{name}: key {k:?} (index {i}) failed: {s:?}");
        if before.contains_key(k) {
            assert!(
                s.was_update(),
                "{name}: present key {k:?} (index {i}) not UPDATED: {s:?}"
            );
        } else {
            let e = new_at.entry(*k).or_default();
            if !s.was_update() {
                e.push(i);
            }
        }
    }
    let first: HashMap<K, usize> = keys
        .iter()
        .enumerate()
        .rev()
        .map(|(i, k)| (*k, i))
        .collect();
    for (k, at) in new_at {
        assert_eq!(
            at.len(),
            1,
            "{name}: new key {k:?} must be reported new exactly once in its batch, got indices {at:?}"
        );
        if table.backend() == warpmap::Backend::Cpu {
            assert_eq!(
                at[0], first[&k],
                "{name}: CPU reports the first occurrence of {k:?} as new"
            );
        }
    }
}
