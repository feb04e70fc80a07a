//! `warpmap outofcore` and `warpmap hostbound` on the GPU, at tiny sizes: the same code paths as
//! the > GPU-memory run (device key and value generation, batched inserts into host buckets,
//! verified lookups; the host bound on both kinds of host pages). Without a GPU every case is
//! skipped (see the library's `tests/common/mod.rs`, shared with its integration tests).

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::*;
use warpmap::{keygen, Error, HostPages};
use warpmap_bench::experiments::stadium_outofcore::{self as outofcore, OutOfCoreConfig};
use warpmap_bench::harness::roofline::measure_host_bound;

/// The device's keys are keygen's `u64` sequence, its values the host twin's words.
#[test]
fn device_keys_and_values_match_their_host_twins() {
    let Some(gpu) = gpu() else { return };
    let (first, n, seed) = (12_345u64, 3000usize, 77u64);
    let keys = outofcore::device_keys(&gpu, first, n, seed).unwrap();
    let host: Vec<u64> = gpu.download(&keys).unwrap();
    for (j, k) in host.iter().enumerate() {
        assert_eq!(*k, keygen::key_at::<u64>(first + j as u64, seed), "key {j}");
    }
    let values = outofcore::device_values::<[u8; 128]>(&gpu, &keys).unwrap();
    let values = gpu.download(&values).unwrap();
    for (k, v) in host.iter().zip(&values) {
        let words: Vec<u32> = (0..32).map(|w| outofcore::value_word(*k, w)).collect();
        assert_eq!(
            bytemuck::cast_slice::<u8, u32>(v),
            &words[..],
            "value of {k}"
        );
    }
}

fn tiny(pages: HostPages, value_bytes: usize, ticket_bits: u32) -> OutOfCoreConfig {
    OutOfCoreConfig {
        host_bytes: 3 << 20,
        value_bytes,
        load_factor: 0.9,
        batch_log2: 12,
        query_log2: 12,
        runs: 2,
        ticket_bits,
        pages,
        commit: "test".into(),
        ..OutOfCoreConfig::default()
    }
}

#[test]
fn a_tiny_out_of_core_run_is_verified() {
    let Some(gpu) = gpu() else { return };
    for (pages, vb, t) in [
        (HostPages::Pinned, 128, 8),
        (HostPages::Huge, 128, 8),
        (HostPages::Pinned, 32, 1),
    ] {
        let cfg = tiny(pages, vb, t);
        let sizes = outofcore::sizes(&cfg).unwrap();
        let mut log = Vec::new();
        let r = match outofcore::run(&gpu, &cfg, &mut |s| log.push(s)) {
            Ok(r) => r,
            Err(Error::Unsupported(why)) if pages == HostPages::Huge => {
                eprintln!("no transparent huge pages here ({why}); huge case skipped");
                continue;
            }
            Err(e) => panic!("{pages} {vb}: {e}"),
        };
        let name = format!("{pages}, {vb}-byte values, {t}-bit tickets");
        assert!(r.verified, "{name}: {r:?}");
        assert_eq!(r.stored, sizes.keys, "{name}");
        assert!(sizes.batches > 1, "{name}: several batches");
        assert_eq!(r.batches.len() as u64, sizes.batches, "{name}");
        assert_eq!(
            r.batches.iter().map(|b| b.keys).sum::<u64>(),
            sizes.keys,
            "{name}"
        );
        assert!(
            (r.load_factor - 0.9).abs() < 0.01,
            "{name}: {}",
            r.load_factor
        );
        assert_eq!(r.location, "host");
        assert!(!r.exceeds_gpu_memory, "{name}: a tiny table");
        assert!(r.insert_gops > 0.0 && r.find_hit.gops > 0.0 && r.find_miss.gops > 0.0);
        assert_eq!(r.find_hit.ms.len(), 2, "{name}");
        assert_eq!(
            r.find_hit.wrong_found + r.find_hit.wrong_value + r.find_miss.wrong_found,
            0,
            "{name}"
        );
        assert_eq!(r.sizes, sizes, "{name}");
        assert!(log.iter().any(|l| l.contains("insert batch")), "{log:?}");
        let json = serde_json::to_value(&r).unwrap();
        for f in ["device", "commit", "date", "method", "insert_gops"] {
            assert!(!json[f].is_null(), "{name}: JSON lacks {f}");
        }
        assert_eq!(json["pages"], pages.name());
    }
}

#[test]
fn host_bound_on_both_page_kinds() {
    let Some(gpu) = gpu() else { return };
    for pages in HostPages::ALL {
        let b = match measure_host_bound(&gpu, 8 << 20, 8, 1 << 16, 2, pages) {
            Ok(b) => b,
            Err(Error::Unsupported(why)) if pages == HostPages::Huge => {
                eprintln!("no transparent huge pages here ({why}); huge case skipped");
                continue;
            }
            Err(e) => panic!("{pages}: {e}"),
        };
        assert_eq!(b.pages, pages);
        assert_eq!(b.bytes, 8 << 20);
        assert!(b.write_gops > 0.0 && b.read_gops > 0.0, "{b:?}");
        assert!(b.alloc_ms >= 0.0);
    }
    assert!(matches!(
        measure_host_bound(&gpu, 1 << 20, 6, 1 << 10, 1, HostPages::Pinned),
        Err(Error::InvalidInput(_))
    ));
}
