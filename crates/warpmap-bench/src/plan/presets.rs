//! The named setups of `warpmap bench --preset NAME` ([`Preset`]): the papers' figures and the
//! comparison table, each a set of defaults that [`resolve`](super::resolve) fills in where the
//! configuration leaves a field `None`.

use super::{Distribution, KvType, Op, DEFAULT_LOAD_FACTORS, DEFAULT_SLICE_LOG2};
use crate::schemes::two_level::TwoLevelShape;
use crate::schemes::Scheme;
use std::fmt;
use std::str::FromStr;
use warpmap::table::stadium::{Location, TICKET_BITS};
use warpmap::table::warpdrive::{DEFAULT_GROUP_SIZE, GROUP_SIZES};

/// `host_keys_log2` of the `stadium` preset: out-of-core (host-bucket) rows use 2^25 unique keys
/// (tables of 256-512 MiB of pinned memory), as random accesses over the bus run at 0.04-0.45
/// G/s; at 2^27 the host rows alone would take about 10 minutes.
pub const STADIUM_HOST_KEYS_LOG2: u32 = 25;

/// `keys_log2` of the fig15 and fig19 presets (in-core): 2^24 keys. Fig. 19 of the paper uses
/// 2^25 pairs; 2^24 keeps the 264-byte records of its widest pairing at 4 GiB per key set, so
/// that the five run sets stay cached on the host and on the device and the preset stays under
/// three minutes on an H100.
pub const FIG_KEYS_LOG2: u32 = 24;

/// `host_keys_log2` of the fig15 and fig19 presets: out-of-core (host-bucket) rows use 2^22
/// keys (tables of 20 MiB to 1.3 GiB of pinned memory), as random accesses over the bus run at
/// 0.04-0.45 G/s and a record of up to 264 bytes is written per insert.
pub const FIG_HOST_KEYS_LOG2: u32 = 22;

/// The Stadium paper's Fig. 19 load factor (the fig19 preset's).
pub const FIG19_LOAD_FACTOR: f64 = 0.85;

/// A named benchmark setup (`warpmap bench --preset NAME`). Flags given beside a preset
/// override its values (except `--group-sizes` with `compare`, which adds to the default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// The WarpDrive paper's Fig. 7: rate against group size (1 to 32) and load factor
    /// (0.4 to 0.99), unique keys, `u32`/`u32`, 2^27 pairs, insert and find_hit.
    Fig7,
    /// Fig. 7's setup with Zipf keys (`s = 1 + 1e-6`): the paper's Fig. 8.
    Fig8,
    /// The comparison table: load factors 0.5, 0.8, 0.9, 0.95, `u32`/`u32` and `u64`/`u64`,
    /// 2^27 keys, insert, find_hit and find_miss, the default group size.
    Compare,
    /// Stadium hashing (paper Figs. 14, 16, 17): `u32`/`u32`, 2^27 keys (host buckets: 2^25,
    /// [`STADIUM_HOST_KEYS_LOG2`]), load factors 0.5, 0.8, 0.9, 0.95, ticket sizes 1, 2, 4, 8,
    /// buckets in device and in host memory, insert, find_hit, find_half and find_miss.
    Stadium,
    /// Stadium hashing's Fig. 15: mixed versus phase-separated batches ([`Op::Mixed`]),
    /// `u32`/`u32`, 2^24 keys ([`FIG_KEYS_LOG2`]; host buckets 2^22), load factors 0.5, 0.8,
    /// 0.9, 0.95, ticket sizes 1, 2, 4, 8, buckets on the device and in host memory, slices of
    /// 2^17 and 2^21 operations, and WarpDrive (default group size) on the same slices.
    Fig15,
    /// Stadium hashing's Fig. 19: key and value sizes ([`KvType::FIG19`]), insert, find_hit
    /// and erase, load factor 0.85, 2^24 keys (host buckets 2^22), ticket sizes 1 and 8,
    /// buckets on the device and in host memory.
    Fig19,
    /// The two-level cuckoo table's target cells (issue 13): `u32`/`u32`, 2^27 keys, load
    /// factors 0.8 and 0.95, insert, find_hit, find_miss and erase, bucket shapes 3x512 (the
    /// default) and 4x384 (four functions: the one that holds 0.95).
    TwoLevelCompare,
    /// The two-level paper's bucket-load chart: insert/erase and lookups against the bucket
    /// size, shapes 3x64 .. 3x512 and 4x96 .. 4x384, `u32`/`u32`, 2^26 keys, load factor 0.7.
    TwoLevelBuckets,
    /// The two-level paper's REG_LOAD chart: insert/erase and lookups against the load the
    /// buckets are filled to (0.3 .. 0.9), `u32`/`u32`, 2^26 keys, the default shape and 4x384.
    TwoLevelLoad,
}

/// The two-level presets' shapes: the default, and four functions (higher loads).
pub const TWO_LEVEL_COMPARE_SHAPES: [TwoLevelShape; 2] =
    [TwoLevelShape::DEFAULT, TwoLevelShape::new(4, 384)];

impl Preset {
    /// Every preset.
    pub const ALL: [Preset; 9] = [
        Preset::Fig7,
        Preset::Fig8,
        Preset::Compare,
        Preset::Stadium,
        Preset::Fig15,
        Preset::Fig19,
        Preset::TwoLevelCompare,
        Preset::TwoLevelBuckets,
        Preset::TwoLevelLoad,
    ];

    /// "fig7", "fig8", "compare", "stadium", "fig15", "fig19", "two-level-compare",
    /// "two-level-buckets" or "two-level-load".
    pub fn name(self) -> &'static str {
        match self {
            Preset::Fig7 => "fig7",
            Preset::Fig8 => "fig8",
            Preset::Compare => "compare",
            Preset::Stadium => "stadium",
            Preset::Fig15 => "fig15",
            Preset::Fig19 => "fig19",
            Preset::TwoLevelCompare => "two-level-compare",
            Preset::TwoLevelBuckets => "two-level-buckets",
            Preset::TwoLevelLoad => "two-level-load",
        }
    }

    /// One line on what it measures.
    pub fn description(self) -> &'static str {
        match self {
            Preset::Fig7 => {
                "WarpDrive paper Fig. 7: group sizes 1-32 x load factors 0.4-0.99, unique keys, \
                 u32/u32, 2^27 pairs, insert + find_hit"
            }
            Preset::Fig8 => {
                "WarpDrive paper Fig. 8: group sizes 1-32 x load factors 0.4-0.99, Zipf keys \
                 (s = 1 + 1e-6), u32/u32, 2^27 pairs, insert + find_hit"
            }
            Preset::Compare => {
                "comparison table: load factors 0.5/0.8/0.9/0.95, u32/u32 and u64/u64, 2^27 \
                 keys, insert + find_hit + find_miss, default group size"
            }
            Preset::Stadium => {
                "Stadium hashing (paper Figs. 14, 16, 17): u32/u32, 2^27 keys (host buckets \
                 2^25), load factors 0.5/0.8/0.9/0.95, tickets 1/2/4/8 bits, buckets on the \
                 device and in host memory, insert + find_hit + find_half + find_miss"
            }
            Preset::Fig15 => {
                "Stadium hashing Fig. 15: mixed vs phase-separated insert/find batches \
                 (concurrency efficiency), u32/u32, 2^24 keys (host buckets 2^22), load \
                 factors 0.5/0.8/0.9/0.95, tickets 1/2/4/8 bits, device and host buckets, \
                 slices of 2^17 and 2^21 ops, WarpDrive alongside"
            }
            Preset::Fig19 => {
                "Stadium hashing Fig. 19: key sizes 4-64 B (8 B values) and value sizes 4-256 B \
                 (8 B keys), load factor 0.85, 2^24 keys (host buckets 2^22), tickets 1/8 \
                 bits, device and host buckets, insert + find_hit + erase"
            }
            Preset::TwoLevelCompare => {
                "two-level cuckoo target cells: u32/u32, 2^27 keys, load factors 0.8/0.95, \
                 shapes 3x512 and 4x384, insert + find_hit + find_miss + erase"
            }
            Preset::TwoLevelBuckets => {
                "two-level paper's bucket-load chart: shapes 3x64-3x512 and 4x96-4x384, \
                 u32/u32, 2^26 keys, load factor 0.7, insert + find_hit + find_miss + erase"
            }
            Preset::TwoLevelLoad => {
                "two-level paper's REG_LOAD chart: load factors 0.3-0.9, shapes 3x512 and \
                 4x384, u32/u32, 2^26 keys, insert + find_hit + find_miss + erase"
            }
        }
    }

    pub(super) fn defaults(self) -> PresetDefaults {
        let fig_lfs = vec![0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99];
        match self {
            Preset::Fig7 | Preset::Fig8 => PresetDefaults {
                keys_log2: 27,
                group_sizes: GROUP_SIZES.to_vec(),
                add_given_group_sizes: false,
                load_factors: fig_lfs,
                distributions: vec![if self == Preset::Fig7 {
                    Distribution::Unique
                } else {
                    Distribution::Zipf
                }],
                types: vec![KvType::U32],
                ops: vec![Op::Insert, Op::FindHit],
                runs: 5,
                ..PresetDefaults::warpdrive()
            },
            Preset::Compare => PresetDefaults {
                keys_log2: 27,
                group_sizes: vec![DEFAULT_GROUP_SIZE],
                add_given_group_sizes: true,
                load_factors: DEFAULT_LOAD_FACTORS.to_vec(),
                distributions: vec![Distribution::Unique],
                types: KvType::ALL.to_vec(),
                ops: vec![Op::Insert, Op::FindHit, Op::FindMiss],
                runs: 5,
                ..PresetDefaults::warpdrive()
            },
            Preset::Stadium => PresetDefaults {
                keys_log2: 27,
                group_sizes: vec![DEFAULT_GROUP_SIZE],
                add_given_group_sizes: false,
                load_factors: DEFAULT_LOAD_FACTORS.to_vec(),
                distributions: vec![Distribution::Unique],
                types: vec![KvType::U32],
                ops: vec![Op::Insert, Op::FindHit, Op::FindHalf, Op::FindMiss],
                runs: 5,
                scheme: Some(Scheme::Stadium),
                ticket_bits: Some(TICKET_BITS.to_vec()),
                locations: Some(vec![Location::Device, Location::Host]),
                host_keys_log2: Some(STADIUM_HOST_KEYS_LOG2),
                slice_log2: None,
                two_level_shapes: None,
            },
            Preset::Fig15 => PresetDefaults {
                keys_log2: FIG_KEYS_LOG2,
                load_factors: DEFAULT_LOAD_FACTORS.to_vec(),
                types: vec![KvType::U32],
                ops: vec![Op::Mixed],
                scheme: Some(Scheme::Stadium),
                ticket_bits: Some(TICKET_BITS.to_vec()),
                locations: Some(vec![Location::Device, Location::Host]),
                host_keys_log2: Some(FIG_HOST_KEYS_LOG2),
                slice_log2: Some(DEFAULT_SLICE_LOG2.to_vec()),
                ..PresetDefaults::warpdrive()
            },
            Preset::Fig19 => PresetDefaults {
                keys_log2: FIG_KEYS_LOG2,
                load_factors: vec![FIG19_LOAD_FACTOR],
                types: KvType::FIG19.to_vec(),
                ops: vec![Op::Insert, Op::FindHit, Op::Erase],
                scheme: Some(Scheme::Stadium),
                ticket_bits: Some(vec![1, 8]),
                locations: Some(vec![Location::Device, Location::Host]),
                host_keys_log2: Some(FIG_HOST_KEYS_LOG2),
                ..PresetDefaults::warpdrive()
            },
            Preset::TwoLevelCompare | Preset::TwoLevelBuckets | Preset::TwoLevelLoad => {
                let (keys_log2, load_factors, shapes) = match self {
                    Preset::TwoLevelCompare => {
                        (27, vec![0.8, 0.95], TWO_LEVEL_COMPARE_SHAPES.to_vec())
                    }
                    Preset::TwoLevelBuckets => (
                        26,
                        vec![0.7],
                        [(3, 64), (3, 128), (3, 256), (3, 512)]
                            .into_iter()
                            .chain([(4, 96), (4, 192), (4, 384)])
                            .map(|(d, s)| TwoLevelShape::new(d, s))
                            .collect(),
                    ),
                    _ => (
                        26,
                        vec![0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
                        TWO_LEVEL_COMPARE_SHAPES.to_vec(),
                    ),
                };
                PresetDefaults {
                    keys_log2,
                    load_factors,
                    types: vec![KvType::U32],
                    ops: vec![Op::Insert, Op::FindHit, Op::FindMiss, Op::Erase],
                    scheme: Some(Scheme::TwoLevel),
                    two_level_shapes: Some(shapes),
                    ..PresetDefaults::warpdrive()
                }
            }
        }
    }
}

impl FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim().to_ascii_lowercase().replace('_', "-");
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| {
                format!(
                    "unknown preset '{s}' (fig7, fig8, compare, stadium, fig15, fig19, \
                     two-level-compare, two-level-buckets or two-level-load)"
                )
            })
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

pub(super) struct PresetDefaults {
    pub(super) keys_log2: u32,
    pub(super) group_sizes: Vec<u32>,
    /// `--group-sizes` adds to the preset's group sizes instead of replacing them.
    pub(super) add_given_group_sizes: bool,
    pub(super) load_factors: Vec<f64>,
    pub(super) distributions: Vec<Distribution>,
    pub(super) types: Vec<KvType>,
    pub(super) ops: Vec<Op>,
    pub(super) runs: usize,
    pub(super) scheme: Option<Scheme>,
    pub(super) ticket_bits: Option<Vec<u32>>,
    pub(super) locations: Option<Vec<Location>>,
    pub(super) host_keys_log2: Option<u32>,
    pub(super) slice_log2: Option<Vec<u32>>,
    pub(super) two_level_shapes: Option<Vec<TwoLevelShape>>,
}

impl PresetDefaults {
    /// The fields a WarpDrive preset leaves at their defaults (`..` filler).
    fn warpdrive() -> Self {
        PresetDefaults {
            keys_log2: 27,
            group_sizes: vec![DEFAULT_GROUP_SIZE],
            add_given_group_sizes: false,
            load_factors: DEFAULT_LOAD_FACTORS.to_vec(),
            distributions: vec![Distribution::Unique],
            types: KvType::ALL.to_vec(),
            ops: Op::DEFAULT.to_vec(),
            runs: 5,
            scheme: None,
            ticket_bits: None,
            locations: None,
            host_keys_log2: None,
            slice_log2: None,
            two_level_shapes: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{resolve, BenchConfig, ZipfLoad, CPU_MAX_KEYS_LOG2, QUICK_KEYS_LOG2};
    use crate::schemes::Variant;
    use warpmap::table::Backend;

    fn cfg() -> BenchConfig {
        BenchConfig::default()
    }

    #[test]
    fn new_types_only_when_asked() {
        for preset in [
            None,
            Some(Preset::Fig7),
            Some(Preset::Fig8),
            Some(Preset::Compare),
        ] {
            let p = resolve(&BenchConfig { preset, ..cfg() }, Backend::Gpu).unwrap();
            assert!(
                p.types.iter().all(|t| KvType::ALL.contains(t)),
                "{preset:?}: {:?}",
                p.types
            );
        }
        let asked = vec![KvType::U128U64, KvType::U32U64, KvType::U128U64];
        let p = resolve(
            &BenchConfig {
                preset: Some(Preset::Compare),
                types: Some(asked),
                distributions: Some(vec![Distribution::Unique, Distribution::Zipf]),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.types, vec![KvType::U128U64, KvType::U32U64]);
        assert!(p.summary().contains("types u128u64,u32u64"));
    }

    #[test]
    fn fig7_preset_expands() {
        let c = BenchConfig {
            preset: Some(Preset::Fig7),
            ..cfg()
        };
        let p = resolve(&c, Backend::Gpu).unwrap();
        assert_eq!(p.keys_log2, Some(27));
        assert_eq!(p.keys(), Some(1 << 27));
        assert_eq!(p.group_sizes, GROUP_SIZES.to_vec());
        assert_eq!(
            p.load_factors,
            vec![0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]
        );
        assert_eq!(p.distributions, vec![Distribution::Unique]);
        assert_eq!(p.types, vec![KvType::U32]);
        assert_eq!(p.ops, vec![Op::Insert, Op::FindHit]);
        assert_eq!(p.runs, 5);
        assert_eq!(p.sets(), 48);
        assert_eq!(p.slots, ((1u64 << 27) as f64 / 0.4).ceil() as usize);
        assert!(p.method().contains("Preset fig7"));
        // It must fit one device command (< 8 minutes) with room to spare on a 16-thread host.
        let e = p.estimate(16);
        assert!(e.seconds < 300.0, "fig7 estimate {} s", e.seconds);
        assert_eq!((e.rows, e.timed_runs, e.tables), (96, 240, 48));

        let f8 = resolve(
            &BenchConfig {
                preset: Some(Preset::Fig8),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(f8.distributions, vec![Distribution::Zipf]);
        assert_eq!(f8.sets(), 48);
        assert!(f8.estimate(16).seconds < 300.0);
        assert!(f8.method().contains("len == distinct"));
        assert_eq!(f8.zipf_info().unwrap().load, ZipfLoad::Distinct);
    }

    #[test]
    fn flags_override_presets() {
        let c = BenchConfig {
            preset: Some(Preset::Fig7),
            group_sizes: Some(vec![8, 2, 2]),
            distributions: Some(vec![Distribution::Unique, Distribution::Zipf]),
            runs: Some(3),
            keys_log2: Some(20),
            load_factors: Some(vec![0.5, 0.99]),
            ..cfg()
        };
        let p = resolve(&c, Backend::Gpu).unwrap();
        assert_eq!(p.group_sizes, vec![2, 8]);
        assert_eq!(p.distributions.len(), 2);
        assert_eq!(p.runs, 3);
        assert_eq!(p.keys_log2, Some(20));
        assert_eq!(p.load_factors, vec![0.5, 0.99]);
        assert_eq!(p.ops, vec![Op::Insert, Op::FindHit]);
        assert_eq!(p.sets(), 2 * 2 * 2);
    }

    #[test]
    fn compare_preset_adds_group_sizes() {
        let c = BenchConfig {
            preset: Some(Preset::Compare),
            ..cfg()
        };
        let p = resolve(&c, Backend::Gpu).unwrap();
        assert_eq!(p.keys_log2, Some(27));
        assert_eq!(p.group_sizes, vec![DEFAULT_GROUP_SIZE]);
        assert_eq!(p.load_factors, DEFAULT_LOAD_FACTORS.to_vec());
        assert_eq!(p.types, KvType::ALL.to_vec());
        assert_eq!(p.ops, vec![Op::Insert, Op::FindHit, Op::FindMiss]);
        assert_eq!(p.runs, 5);
        assert!(p.estimate(16).seconds < 300.0);
        let c = BenchConfig {
            group_sizes: Some(vec![8, 16]),
            ..c
        };
        let p = resolve(&c, Backend::Gpu).unwrap();
        let mut want = vec![DEFAULT_GROUP_SIZE, 8, 16];
        want.sort_unstable();
        want.dedup();
        assert_eq!(p.group_sizes, want);
    }

    #[test]
    fn quick_presets_are_small_and_cpu_is_capped() {
        let c = BenchConfig {
            preset: Some(Preset::Fig8),
            quick: true,
            ..cfg()
        };
        let p = resolve(&c, Backend::Gpu).unwrap();
        assert_eq!((p.keys_log2, p.runs), (Some(QUICK_KEYS_LOG2), 3));
        let c = BenchConfig {
            preset: Some(Preset::Fig7),
            ..cfg()
        };
        let p = resolve(&c, Backend::Cpu).unwrap();
        assert_eq!(p.keys_log2, Some(CPU_MAX_KEYS_LOG2));
        assert!(p.group_sizes.is_empty());
        assert_eq!(p.sets(), 8);
        assert!(p.notes.iter().any(|n| n.contains("capped at 22")));
        assert!(p.notes.iter().any(|n| n.contains("GPU only")));
        let c = BenchConfig {
            keys_log2: Some(18),
            ..cfg()
        };
        let p = resolve(&c, Backend::Cpu).unwrap();
        assert_eq!(p.keys_log2, Some(18));
        assert!(p.notes.is_empty());
    }

    #[test]
    fn stadium_preset_expands() {
        let p = resolve(
            &BenchConfig {
                preset: Some(Preset::Stadium),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.scheme, Scheme::Stadium);
        assert_eq!(p.keys_log2, Some(27));
        assert_eq!(p.host_keys_log2, Some(STADIUM_HOST_KEYS_LOG2));
        assert_eq!(p.ticket_bits, TICKET_BITS.to_vec());
        assert_eq!(p.locations, vec![Location::Device, Location::Host]);
        assert_eq!(p.types, vec![KvType::U32]);
        assert_eq!(p.load_factors, DEFAULT_LOAD_FACTORS.to_vec());
        assert_eq!(
            p.ops,
            vec![Op::Insert, Op::FindHit, Op::FindHalf, Op::FindMiss]
        );
        assert_eq!(p.sets(), 2 * 4 * 4);
        let host = Variant::Stadium {
            location: Location::Host,
            ticket_bits: 8,
        };
        let device = Variant::Stadium {
            location: Location::Device,
            ticket_bits: 8,
        };
        assert_eq!(
            p.keys_for_variant(device, Distribution::Unique),
            Some(1 << 27)
        );
        assert_eq!(
            p.keys_for_variant(host, Distribution::Unique),
            Some(1 << 25)
        );
        assert_eq!(p.keys_for_variant(host, Distribution::Zipf), Some(1 << 27));
        assert!(p.notes.iter().any(|n| n.contains("2^25")));
        assert!(p.needs_misses() && p.needs_half());
        // keys + values + absent keys + half-present queries.
        assert_eq!(p.set_bytes(10, 4, 4), 10 * 16);
        let e = p.estimate(16);
        assert_eq!((e.rows, e.tables), (32 * 4, 32));
        // Under one device command (run.sh's 570 s budget).
        assert!(
            e.seconds > 30.0 && e.seconds < 450.0,
            "stadium estimate {} s",
            e.seconds
        );
        let q = resolve(
            &BenchConfig {
                preset: Some(Preset::Stadium),
                quick: true,
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(q.keys_log2, Some(QUICK_KEYS_LOG2));
        assert_eq!(q.host_keys_log2, None, "2^18 is below the host cap");
        assert!(q.estimate(16).seconds < 60.0);
    }

    #[test]
    fn two_level_presets() {
        let p = resolve(
            &BenchConfig {
                preset: Some(Preset::TwoLevelCompare),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.scheme, Scheme::TwoLevel);
        assert_eq!(p.keys_log2, Some(27));
        assert_eq!(p.load_factors, vec![0.8, 0.95]);
        assert_eq!(p.types, vec![KvType::U32]);
        assert_eq!(p.two_level_shapes, TWO_LEVEL_COMPARE_SHAPES.to_vec());
        assert!(p.group_sizes.is_empty() && p.ticket_bits.is_empty());
        assert_eq!(
            p.variants(),
            vec![
                Variant::TwoLevel {
                    shape: TwoLevelShape::DEFAULT
                },
                Variant::TwoLevel {
                    shape: TwoLevelShape::new(4, 384)
                }
            ]
        );
        assert!(p.summary().contains("two_level bucket shapes 3x512,4x384"));
        let e = p.estimate(16);
        eprintln!("two-level-compare: {:.0} s; {}", e.seconds, p.summary());
        assert!(e.seconds < 300.0, "{e:?}");
        assert_eq!(
            "two_level_compare".parse::<Preset>(),
            Ok(Preset::TwoLevelCompare)
        );
        for preset in [Preset::TwoLevelBuckets, Preset::TwoLevelLoad] {
            let p = resolve(
                &BenchConfig {
                    preset: Some(preset),
                    ..cfg()
                },
                Backend::Gpu,
            )
            .unwrap();
            assert_eq!(p.keys_log2, Some(26));
            let e = p.estimate(16);
            assert!(e.seconds < 400.0, "{preset}: {e:?}");
        }
        // Flags: shapes replace the preset's; the CPU backend measures CpuTable.
        let p = resolve(
            &BenchConfig {
                preset: Some(Preset::TwoLevelCompare),
                two_level_shapes: Some(vec![TwoLevelShape::new(2, 64); 2]),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.two_level_shapes, vec![TwoLevelShape::new(2, 64)]);
        let c = resolve(
            &BenchConfig {
                preset: Some(Preset::TwoLevelCompare),
                ..cfg()
            },
            Backend::Cpu,
        )
        .unwrap();
        assert_eq!(c.variants(), vec![Variant::Cpu]);
        assert!(c.two_level_shapes.is_empty());
        // Refused: wide keys, mixed batches.
        for bad in [
            BenchConfig {
                scheme: Some(Scheme::TwoLevel),
                types: Some(vec![KvType::U128U64]),
                ..cfg()
            },
            BenchConfig {
                scheme: Some(Scheme::TwoLevel),
                ops: Some(vec![Op::Mixed]),
                keys_log2: Some(20),
                ..cfg()
            },
        ] {
            assert!(resolve(&bad, Backend::Gpu).is_err());
        }
    }

    #[test]
    fn fig19_preset() {
        let cfg = BenchConfig {
            preset: Some(Preset::Fig19),
            ..Default::default()
        };
        let p = resolve(&cfg, Backend::Gpu).unwrap();
        assert_eq!(p.types, KvType::FIG19.to_vec());
        assert_eq!(p.load_factors, vec![FIG19_LOAD_FACTOR]);
        assert_eq!(p.ops, vec![Op::Insert, Op::FindHit, Op::Erase]);
        assert_eq!(p.ticket_bits, vec![1, 8]);
        assert_eq!(p.locations, vec![Location::Device, Location::Host]);
        assert_eq!(p.keys_log2, Some(FIG_KEYS_LOG2));
        assert_eq!(p.host_keys_log2, Some(FIG_HOST_KEYS_LOG2));
        assert_eq!(p.scheme, Scheme::Stadium);
        assert!(!p.mixed() && p.slice_log2.is_empty());
        assert_eq!(p.sets(), 11 * 4);
        assert_eq!(p.variants().len(), 4);
        let e = p.estimate(16);
        eprintln!("fig19: {:.0} s with 16 threads; {}", e.seconds, p.summary());
        assert!(e.seconds > 20.0 && e.seconds < 180.0, "{e:?}");
        assert!(e.device_bytes < 60 << 30, "{e:?}");
        // Both sweeps: keys 4..64 with 8-byte values, values 4..256 with 8-byte keys.
        let keys: Vec<usize> = p
            .types
            .iter()
            .filter(|t| t.value_bytes() == 8)
            .map(|t| t.key_bytes())
            .collect();
        assert_eq!(keys, vec![4, 8, 16, 32, 64]);
        let mut vals: Vec<usize> = p
            .types
            .iter()
            .filter(|t| t.key_bytes() == 8)
            .map(|t| t.value_bytes())
            .collect();
        vals.sort_unstable();
        assert_eq!(vals, vec![4, 8, 16, 32, 64, 128, 256]);
        // Quick: small and fast.
        let q = resolve(&BenchConfig { quick: true, ..cfg }, Backend::Gpu).unwrap();
        assert_eq!(q.keys_log2, Some(QUICK_KEYS_LOG2));
        assert!(q.estimate(16).seconds < 60.0);
    }

    #[test]
    fn fig15_preset_and_the_mixed_experiment() {
        let cfg = BenchConfig {
            preset: Some(Preset::Fig15),
            ..Default::default()
        };
        let p = resolve(&cfg, Backend::Gpu).unwrap();
        assert!(p.mixed());
        assert_eq!(p.ops, vec![Op::Mixed]);
        assert_eq!(p.slice_log2, DEFAULT_SLICE_LOG2.to_vec());
        assert_eq!(p.types, vec![KvType::U32]);
        // Eight Stadium tables and WarpDrive alongside.
        let v = p.variants();
        assert_eq!(v.len(), 9);
        assert_eq!(
            v.last(),
            Some(&Variant::WarpDrive {
                group: DEFAULT_GROUP_SIZE
            })
        );
        assert_eq!(p.sets(), 9 * 4 * 2);
        let e = p.estimate(16);
        eprintln!("fig15: {:.0} s with 16 threads; {}", e.seconds, p.summary());
        assert!(e.seconds > 10.0 && e.seconds < 180.0, "{e:?}");
        assert!(p.method().contains("concurrency_efficiency"));
        assert!(p.summary().contains("slices of 2^17,2^21 operations"));
        // Host buckets only: no WarpDrive.
        let host = resolve(
            &BenchConfig {
                locations: Some(vec![Location::Host]),
                ..cfg.clone()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(host.variants().len(), 4);
        // Quick: one small slice size.
        let q = resolve(
            &BenchConfig {
                quick: true,
                ..cfg.clone()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(q.slice_log2, vec![12]);
        // The CPU backend: CpuTable only.
        let c = resolve(&cfg, Backend::Cpu).unwrap();
        assert_eq!(c.variants(), vec![Variant::Cpu]);
        assert!(c.mixed());
    }
}
