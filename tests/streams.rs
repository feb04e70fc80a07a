//! Several streams on one GPU (src/device/stream.rs): handles made by `Gpu::with_new_stream`,
//! events, and the ordering of a buffer's uses across streams that the device layer does
//! itself (a use waits for the allocation and the last write on another stream; the free waits
//! for every other stream that used the buffer).
//!
//! Each ordering test keeps the *other* stream busy first (a queue of large fills), so that a
//! missing wait would let the dependent copy run too early and read the wrong bytes: the
//! checks compare every byte. GPU only (skipped without one, unless `WARPMAP_REQUIRE_GPU=1`).

mod common;

use common::*;
use std::collections::HashMap;
use std::time::Instant;
use warpmap::{DeviceBuffer, DeviceHashTable, Gpu, HashTable, WarpDriveConfig};

/// Elements of the buffers whose ordering is checked (256 MiB of u32: a fill takes ~0.1 ms on
/// an H100, a copy ~0.2 ms); 16 MiB under compute-sanitizer (run.sh sets WARPMAP_SANITIZER).
fn n() -> usize {
    if std::env::var_os("WARPMAP_SANITIZER").is_some() {
        4 << 20
    } else {
        64 << 20
    }
}

/// Enqueues `times` fills of `scratch` on `gpu`: a queue of work that keeps its stream busy
/// for a while.
fn keep_busy(gpu: &Gpu, scratch: &mut DeviceBuffer<u32>, times: usize) {
    for i in 0..times {
        gpu.fill_bytes(scratch, i as u8).unwrap();
    }
}

/// Every element of `v` is `want`; else the first bad index and value.
fn first_bad(v: &[u32], want: u32) -> Option<(usize, u32)> {
    v.iter().position(|&x| x != want).map(|i| (i, v[i]))
}

#[test]
fn handles_share_the_gpu_and_differ_in_stream() {
    let Some(a) = gpu() else { return };
    let b = a.with_new_stream().unwrap();
    assert!(!a.same_stream(&b), "a new stream is not the old one");
    assert!(a.same_stream(&a));
    assert!(a.same_device(&b));
    assert_ne!(a.stream_id(), b.stream_id());
    assert_eq!(
        (a.ordinal(), a.name(), a.sm()),
        (b.ordinal(), b.name(), b.sm())
    );
    // A kernel module loaded on one handle is in the other's cache: a WarpDrive table on each
    // compiles (or loads) its module once.
    let before = warpmap::device::compile_log().len();
    let _ta = warpdrive::<u64, u64>(&a, WarpDriveConfig::new(1 << 10).group_size(8));
    let mid = warpmap::device::compile_log().len();
    let _tb = warpdrive::<u64, u64>(&b, WarpDriveConfig::new(1 << 10).group_size(8));
    let after = warpmap::device::compile_log().len();
    println!(
        "streams {} and {}: module loads {} for the first table, {} for the second",
        a.stream_id(),
        b.stream_id(),
        mid - before,
        after - mid
    );
    // (Other tests may load modules concurrently, so the counts are printed, not checked.)
}

/// A buffer filled on stream A and read by a copy on stream B: B waits for A's fill, without
/// any explicit wait by the caller.
#[test]
fn a_use_on_another_stream_waits_for_the_last_write() {
    let Some(a) = gpu() else { return };
    let a = a.with_new_stream().unwrap();
    let b = a.with_new_stream().unwrap();
    let mut scratch_a = a.alloc::<u32>(n()).unwrap();
    let mut y = b.alloc::<u32>(n()).unwrap();
    for round in 0..4u32 {
        let byte = 0x30 + round as u8;
        let mut x = a.alloc::<u32>(n()).unwrap();
        keep_busy(&a, &mut scratch_a, 16);
        a.fill_bytes(&mut x, byte).unwrap();
        // B is idle: without the ordering its copy would run at once, before the fill.
        b.copy_device(&x, &mut y).unwrap();
        let got = b.download(&y).unwrap();
        let want = u32::from_ne_bytes([byte; 4]);
        assert_eq!(
            first_bad(&got, want),
            None,
            "round {round}: B read before A's fill"
        );
        // And the other way: B writes x (a buffer of A), A reads it.
        keep_busy(&b, &mut y, 16);
        b.fill_bytes(&mut x, byte ^ 0xff).unwrap();
        let back = a.download(&x).unwrap();
        assert_eq!(
            first_bad(&back, u32::from_ne_bytes([byte ^ 0xff; 4])),
            None,
            "round {round}: A read before B's fill of A's buffer"
        );
    }
    println!(
        "4 rounds x 2 directions: {} MiB checked per read",
        (n() * 4) >> 20
    );
}

/// A buffer of stream A read on stream B and dropped at once: its free (on A) waits for B's
/// read, so memory that A allocates next (the pool gives back the same memory) is not written
/// under B's copy.
#[test]
fn the_free_waits_for_other_streams_uses() {
    let Some(a) = gpu() else { return };
    let a = a.with_new_stream().unwrap();
    let b = a.with_new_stream().unwrap();
    let mut scratch_b = b.alloc::<u32>(n()).unwrap();
    let mut y = b.alloc::<u32>(n()).unwrap();
    let mut reused = 0;
    for round in 0..4u32 {
        let byte = 0x50 + round as u8;
        let mut x = a.alloc::<u32>(n()).unwrap();
        a.fill_bytes(&mut x, byte).unwrap();
        let x_addr = x.device_address();
        keep_busy(&b, &mut scratch_b, 16);
        b.copy_device(&x, &mut y).unwrap(); // queued behind B's fills
        drop(x); // freed on A: must wait for B's copy
        let mut z = a.alloc::<u32>(n()).unwrap();
        reused += (z.device_address() == x_addr) as u32;
        a.fill_bytes(&mut z, 0xee).unwrap();
        let got = b.download(&y).unwrap();
        assert_eq!(
            first_bad(&got, u32::from_ne_bytes([byte; 4])),
            None,
            "round {round}: B's copy read memory freed and refilled on A"
        );
        a.synchronize().unwrap();
    }
    println!("the next allocation on A reused the freed buffer's memory in {reused} of 4 rounds");
}

/// Events: record on A, make B wait, and wait on the host.
#[test]
fn events_order_streams_and_the_host() {
    let Some(a) = gpu() else { return };
    let a = a.with_new_stream().unwrap();
    let b = a.with_new_stream().unwrap();
    let mut scratch_a = a.alloc::<u32>(n()).unwrap();
    let fresh = a.new_event().unwrap();
    assert!(fresh.is_complete(), "an event never recorded is complete");
    keep_busy(&a, &mut scratch_a, 8);
    a.fill_bytes(&mut scratch_a, 0x77).unwrap();
    let filled = a.record().unwrap();
    b.wait(&filled).unwrap();
    b.wait_for(&a).unwrap();
    filled.synchronize().unwrap();
    assert!(filled.is_complete());
    let got = a.download(&scratch_a).unwrap();
    assert_eq!(first_bad(&got, 0x7777_7777), None);
    // Re-recording an event moves it to the new point.
    fresh.record(&b).unwrap();
    fresh.synchronize().unwrap();
    b.synchronize().unwrap();
    a.synchronize_device().unwrap();
}

/// Tables on two handles, driven from two threads at once, with keys uploaded on a third
/// handle and results read back on it: every table gives the oracle's answers.
#[test]
fn tables_on_several_streams() {
    let Some(base) = gpu() else { return };
    let io = base.with_new_stream().unwrap();
    let handles = [
        base.with_new_stream().unwrap(),
        base.with_new_stream().unwrap(),
    ];
    let keys_per_table: usize = if std::env::var_os("WARPMAP_SANITIZER").is_some() {
        1 << 14
    } else {
        1 << 20
    };
    let started = Instant::now();
    std::thread::scope(|s| {
        for (i, h) in handles.iter().enumerate() {
            let io = io.clone();
            s.spawn(move || {
                let mut rng = SplitMix64::new(0x5eed ^ i as u64);
                let keys = unique_keys::<u64>(&mut rng, keys_per_table, true);
                let values: Vec<u64> = keys.iter().map(|&k| value_for(k, i as u64)).collect();
                let oracle: HashMap<u64, u64> =
                    keys.iter().copied().zip(values.iter().copied()).collect();
                let mut t = warpdrive::<u64, u64>(h, WarpDriveConfig::new(2 * keys_per_table));
                // Uploaded on `io`, inserted on the table's stream, dropped at once (the
                // frees wait for the insert).
                {
                    let dk = io.upload(&keys).unwrap();
                    let dv = io.upload(&values).unwrap();
                    t.insert_device_async(&dk, &dv, None).unwrap();
                }
                t.synchronize().unwrap();
                assert_eq!(t.len().unwrap(), keys_per_table, "table {i}");
                // Queries: half present, half absent; output buffers of `io`.
                let queries: Vec<u64> = keys
                    .iter()
                    .step_by(2)
                    .copied()
                    .chain(unique_keys::<u64>(&mut rng, keys_per_table / 2, false))
                    .collect();
                let dq = io.upload(&queries).unwrap();
                let mut out = io.alloc_filled::<u64>(queries.len(), 0).unwrap();
                let mut found = io.alloc_filled::<u8>(queries.len(), 0).unwrap();
                t.find_device_async(&dq, &mut out, &mut found).unwrap();
                drop(dq);
                // Read back on `io`, without synchronising the table's stream first.
                let (out, found) = (io.download(&out).unwrap(), io.download(&found).unwrap());
                let mut hits = 0;
                for (j, q) in queries.iter().enumerate() {
                    match oracle.get(q) {
                        Some(v) => {
                            assert_eq!((found[j], out[j]), (1, *v), "table {i}, query {j}");
                            hits += 1;
                        }
                        None => assert_eq!(found[j], 0, "table {i}, absent query {j}"),
                    }
                }
                assert_eq!(hits, keys_per_table / 2);
                // The host-slice API on the table's handle agrees.
                let some: Vec<u64> = keys[..1000].to_vec();
                let got = t.find(&some).unwrap();
                for (k, g) in some.iter().zip(got) {
                    assert_eq!(g, Some(oracle[k]));
                }
            });
        }
    });
    println!(
        "2 tables on 2 streams, {keys_per_table} keys each, uploads and reads on a third: {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
}

/// Two large fills on two streams against the same on one: what overlapping costs or gains
/// (printed, not checked: memsets are bandwidth-bound, so expect no gain).
#[test]
fn overlap_of_two_streams_measured() {
    let Some(a) = gpu() else { return };
    let a = a.with_new_stream().unwrap();
    let b = a.with_new_stream().unwrap();
    let mut xa = a.alloc::<u32>(n()).unwrap();
    let mut xb = b.alloc::<u32>(n()).unwrap();
    let run = |two: bool, xa: &mut DeviceBuffer<u32>, xb: &mut DeviceBuffer<u32>| {
        a.synchronize().unwrap();
        b.synchronize().unwrap();
        let t = Instant::now();
        for i in 0..16u8 {
            a.fill_bytes(xa, i).unwrap();
            if two {
                b.fill_bytes(xb, i).unwrap();
            } else {
                a.fill_bytes(xb, i).unwrap();
            }
        }
        a.synchronize().unwrap();
        b.synchronize().unwrap();
        t.elapsed().as_secs_f64() * 1e3
    };
    run(true, &mut xa, &mut xb);
    let one = run(false, &mut xa, &mut xb);
    let two = run(true, &mut xa, &mut xb);
    println!(
        "32 fills of {} MiB: one stream {one:.2} ms, two streams {two:.2} ms",
        (n() * 4) >> 20
    );
    assert_eq!(first_bad(&a.download(&xb).unwrap(), 0x0f0f_0f0f), None);
}

/// A table on stream A given keys, values and outputs of stream B (the engine names a batch's
/// buffers to the launch): the insert waits for B's fills of its keys and values, and B's reads
/// of the find's outputs wait for the table's kernels. B is kept busy first, so that a missing
/// wait would let the table read unfilled keys, and A is kept busy before the find, so that a
/// missing wait would let B read unwritten outputs.
#[test]
fn a_table_orders_batches_of_another_stream() {
    let Some(g) = gpu() else { return };
    let a = g.with_new_stream().unwrap();
    let b = g.with_new_stream().unwrap();
    let keys_n = 1usize << 20;
    let mut table =
        warpmap::WarpDrive::<u32, u32>::new(a.clone(), WarpDriveConfig::new(2 * keys_n))
            .expect("a WarpDrive table");
    let mut scratch_a = a.alloc::<u32>(n()).unwrap();
    let mut scratch_b = b.alloc::<u32>(n()).unwrap();
    for round in 0..3u8 {
        table.clear().unwrap();
        // Distinct keys through a device copy of uploaded data, enqueued behind B's busy queue.
        let keys: Vec<u32> = (0..keys_n as u32)
            .map(|i| i * 2 + 1 + round as u32)
            .collect();
        let values: Vec<u32> = keys.iter().map(|k| k ^ 0x5a5a_5a5a).collect();
        let staged_k = b.upload(&keys).unwrap();
        let staged_v = b.upload(&values).unwrap();
        let mut dk = b.alloc::<u32>(keys_n).unwrap();
        let mut dv = b.alloc::<u32>(keys_n).unwrap();
        keep_busy(&b, &mut scratch_b, 16);
        b.copy_device(&staged_k, &mut dk).unwrap();
        b.copy_device(&staged_v, &mut dv).unwrap();
        // The table's stream is idle: without the ordering its insert would run before B's copies.
        table.insert_device_async(&dk, &dv, None).unwrap();
        table.synchronize().unwrap();
        assert_eq!(table.len().unwrap(), keys_n, "round {round}: keys inserted");
        let mut out = b.alloc::<u32>(keys_n).unwrap();
        let mut found = b.alloc::<u8>(keys_n).unwrap();
        b.fill_bytes(&mut found, 0).unwrap();
        keep_busy(&a, &mut scratch_a, 16);
        table.find_device_async(&dk, &mut out, &mut found).unwrap();
        // B is idle: without the ordering its downloads would run before the find.
        let got = b.download(&out).unwrap();
        let hit = b.download(&found).unwrap();
        let bad = (0..keys_n)
            .filter(|&i| hit[i] != 1 || got[i] != values[i])
            .count();
        assert_eq!(
            bad, 0,
            "round {round}: finds read before the insert or outputs read before the find"
        );
    }
    println!("3 rounds of {keys_n} keys: batches of stream B ordered for a table on stream A");
}
