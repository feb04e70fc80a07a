//! NCCL through warpmap's device layer (cargo feature `nccl`; src/device/nccl.rs): a
//! communicator over the GPUs present, a sum all-reduce, a fixed-size all-to-all and the
//! sharded table's exchange (per-peer counts, then variable-size parts), each checked element by
//! element. On a machine with one GPU: one rank (NCCL sends to itself), then an attempt at two
//! ranks on the same GPU, which NCCL refuses ("duplicate GPU") — the refusal is checked to be a
//! clean `Error::Nccl`; if a future NCCL allowed it, the same checks run with two ranks.
//!
//! Without a GPU the GPU test skips (unless `WARPMAP_REQUIRE_GPU=1`); without NCCL too, and then
//! it says what to install. Run: `cargo test --features nccl --test nccl` (bundle:
//! `target/device-bundle/tests/nccl`).
#![cfg(feature = "nccl")]

mod common;

use common::*;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use warpmap::device::nccl::{nccl, Communicator, ExchangePlan, UniqueId};
use warpmap::device::Move;
use warpmap::sharded::{ShardedConfig, ShardedMap};
use warpmap::table::registry::TableConfig;
use warpmap::{DeviceHashTable, Error, Gpu, HashTable, WarpDriveConfig};

/// NCCL work of this binary, one test at a time (communicators of one process share GPUs).
static SERIAL: Mutex<()> = Mutex::new(());

/// NCCL, or `None` (with a note) when it is missing and not required.
fn nccl_or_skip() -> Option<&'static warpmap::device::nccl::Nccl> {
    match nccl() {
        Ok(n) => Some(n),
        Err(e) => {
            assert!(
                matches!(e, Error::NcclMissing { .. }),
                "a missing NCCL must be NcclMissing: {e}"
            );
            if gpu_required() {
                panic!("WARPMAP_REQUIRE_GPU is set but NCCL is missing: {e}");
            }
            eprintln!("skipping the NCCL cases: {e}");
            None
        }
    }
}

/// Runs on every machine: NCCL loads (and says where from and which version), or the error
/// says what to install.
#[test]
fn nccl_loads_or_names_the_remedy() {
    match nccl() {
        Ok(n) => {
            println!(
                "NCCL {}.{}.{} from {}",
                n.version.0,
                n.version.1,
                n.version.2,
                n.path.display()
            );
            assert_eq!(n.version.0, 2);
        }
        Err(e) => {
            let shown = e.to_string();
            assert!(matches!(e, Error::NcclMissing { .. }), "{shown}");
            assert!(
                shown.contains("libnccl2") && shown.contains("nvidia-nccl-cu13"),
                "{shown}"
            );
            println!("no NCCL here: {shown}");
        }
    }
}

#[test]
fn versions_decode_both_schemes() {
    use warpmap::device::nccl::decode_version;
    assert_eq!(decode_version(22707), (2, 27, 7));
    assert_eq!(decode_version(21003), (2, 10, 3));
    assert_eq!(decode_version(2804), (2, 8, 4));
}

#[test]
fn plans_of_count_matrices() {
    let p = ExchangePlan::from_counts(&[vec![5]]).unwrap();
    assert_eq!(p.send_offsets, vec![vec![0, 5]]);
    assert_eq!(p.recv_offsets, vec![vec![0, 5]]);
    let c = vec![vec![0, 2, 1], vec![3, 0, 0], vec![1, 1, 4]];
    let p = ExchangePlan::from_counts(&c).unwrap();
    assert_eq!(p.send_offsets[2], vec![0, 1, 2, 6]);
    assert_eq!(p.recv_offsets[0], vec![0, 0, 3, 4]);
    assert_eq!(p.recv_offsets[2], vec![0, 1, 1, 5]);
    for (r, row) in c.iter().enumerate() {
        for (q, &n) in row.iter().enumerate() {
            assert_eq!(p.count(r, q), n);
        }
    }
    assert!(ExchangePlan::from_counts(&[]).is_err());
    assert!(ExchangePlan::from_counts(&[vec![1, 2]]).is_err());
    assert!(ExchangePlan::from_counts(&[vec![u64::MAX, 1], vec![0, 0]]).is_err());
}

/// An empty search (and no system fallback) is NcclMissing with the remedy.
#[test]
fn missing_nccl_names_the_remedy() {
    use warpmap::device::nccl::load_from;
    let e = load_from(&["/nonexistent/warpmap".into()], false).unwrap_err();
    match &e {
        Error::NcclMissing { searched, remedy } => {
            assert!(searched.contains("/nonexistent/warpmap"), "{searched}");
            assert!(remedy.contains("libnccl2"), "{remedy}");
        }
        other => panic!("expected NcclMissing, got {other:?}"),
    }
    assert!(e.to_string().contains("nvidia-nccl-cu13"), "{e}");
}

/// The GPUs present, each as a new stream handle (so NCCL's work has streams of its own).
fn all_gpus() -> Option<Vec<Arc<Gpu>>> {
    let first = gpu()?;
    let n = Gpu::count().expect("counting GPUs");
    let mut v = vec![first.with_new_stream().expect("a stream")];
    for i in 1..n {
        let g = Gpu::new(i).unwrap_or_else(|e| panic!("opening GPU {i}: {e}"));
        v.push(g.with_new_stream().expect("a stream"));
    }
    Some(v)
}

/// The checks on one communicator: all-reduce (u64 exact, f64), fixed all-to-all, exchange.
fn check_collectives(comm: &Communicator, label: &str) {
    let n = comm.size();
    let t0 = Instant::now();
    // Sum all-reduce of u64: rank r holds i * (r + 1); the sum is i * n(n+1)/2.
    const LEN: usize = 1 << 20;
    let sends: Vec<_> = (0..n)
        .map(|r| {
            let v: Vec<u64> = (0..LEN as u64).map(|i| i * (r as u64 + 1)).collect();
            comm.gpu(r).upload(&v).unwrap()
        })
        .collect();
    let mut recvs: Vec<_> = (0..n)
        .map(|r| comm.gpu(r).alloc_filled::<u64>(LEN, 0xab).unwrap())
        .collect();
    {
        let s: Vec<_> = sends.iter().collect();
        let mut d: Vec<_> = recvs.iter_mut().collect();
        comm.all_reduce_sum(&s, &mut d).unwrap();
    }
    let tri = (n * (n + 1) / 2) as u64;
    for (r, buf) in recvs.iter().enumerate() {
        let got = comm.gpu(r).download(buf).unwrap();
        for (i, g) in got.iter().enumerate() {
            assert_eq!(
                *g,
                i as u64 * tri,
                "{label}: all-reduce u64, rank {r}, element {i}"
            );
        }
    }
    // f64, with values exact in binary.
    let fs: Vec<_> = (0..n)
        .map(|r| {
            comm.gpu(r)
                .upload(&vec![0.5f64 * (r + 1) as f64; 1000])
                .unwrap()
        })
        .collect();
    let mut fr: Vec<_> = (0..n)
        .map(|r| comm.gpu(r).alloc_filled::<f64>(1000, 0).unwrap())
        .collect();
    {
        let s: Vec<_> = fs.iter().collect();
        let mut d: Vec<_> = fr.iter_mut().collect();
        comm.all_reduce_sum(&s, &mut d).unwrap();
    }
    for (r, buf) in fr.iter().enumerate() {
        let got = comm.gpu(r).download(buf).unwrap();
        assert!(
            got.iter().all(|&x| x == 0.5 * tri as f64),
            "{label}: f64 rank {r}"
        );
    }
    let t_reduce = t0.elapsed();

    // Fixed all-to-all: CHUNK u32 from every rank to every rank; element j of the part from r
    // to p is r << 24 | p << 16 | j.
    const CHUNK: usize = 4096;
    let word = |r: usize, p: usize, j: usize| (r << 24 | p << 16 | j) as u32;
    let sends: Vec<_> = (0..n)
        .map(|r| {
            let v: Vec<u32> = (0..n)
                .flat_map(|p| (0..CHUNK).map(move |j| word(r, p, j)))
                .collect();
            comm.gpu(r).upload(&v).unwrap()
        })
        .collect();
    let mut recvs: Vec<_> = (0..n)
        .map(|r| comm.gpu(r).alloc_filled::<u32>(n * CHUNK, 0xff).unwrap())
        .collect();
    let plan = ExchangePlan::from_counts(&vec![vec![CHUNK as u64; n]; n]).unwrap();
    {
        let s: Vec<_> = sends.iter().collect();
        let mut d: Vec<_> = recvs.iter_mut().collect();
        comm.all_to_all_v(&s, &mut d, &plan).unwrap();
    }
    for (p, buf) in recvs.iter().enumerate() {
        let got = comm.gpu(p).download(buf).unwrap();
        for r in 0..n {
            for j in 0..CHUNK {
                assert_eq!(
                    got[r * CHUNK + j],
                    word(r, p, j),
                    "{label}: all-to-all at {p} from {r}"
                );
            }
        }
    }

    // The sharded table's exchange: 16-byte records in variable parts (some empty), counts
    // exchanged through NCCL first.
    let mut rng = SplitMix64::new(0xacc ^ n as u64);
    let mut moved = 0u64;
    let mut parts: Vec<Vec<Vec<[u32; 4]>>> = Vec::new(); // parts[r][p]
    for r in 0..n {
        let row: Vec<Vec<[u32; 4]>> = (0..n)
            .map(|p| {
                let len = if rng.chance(0.2) {
                    0
                } else {
                    rng.index(50_000)
                };
                (0..len)
                    .map(|j| [r as u32, p as u32, j as u32, rng.next_u64() as u32])
                    .collect()
            })
            .collect();
        parts.push(row);
    }
    let mut send_bufs = Vec::new();
    let mut send_offsets = Vec::new();
    for (r, row) in parts.iter().enumerate() {
        let flat: Vec<[u32; 4]> = row.iter().flatten().copied().collect();
        let mut offs = vec![0u64];
        for part in row {
            offs.push(offs.last().unwrap() + part.len() as u64);
        }
        moved += flat.len() as u64;
        send_bufs.push(comm.gpu(r).upload(&flat).unwrap());
        send_offsets.push(offs);
    }
    let s: Vec<_> = send_bufs.iter().collect();
    let got = comm.exchange(&s, &send_offsets).unwrap();
    let (recv, recv_offsets) = (got.recv, got.offsets);
    for p in 0..n {
        let got = comm.gpu(p).download(&recv[p]).unwrap();
        assert_eq!(recv_offsets[p].len(), n + 1);
        for r in 0..n {
            let (a, b) = (recv_offsets[p][r] as usize, recv_offsets[p][r + 1] as usize);
            assert_eq!(
                &got[a..b],
                parts[r][p].as_slice(),
                "{label}: exchange at {p} from {r}"
            );
        }
        assert_eq!(got.len() as u64, recv_offsets[p][n]);
    }
    println!(
        "{label}: {n} rank(s) on GPUs {:?}: all-reduce of {LEN} u64 + 1000 f64 in {:.1} ms, \
         all-to-all of {CHUNK} u32 per pair and an exchange of {moved} 16-byte records ({} MiB): \
         all checked",
        (0..n).map(|r| comm.gpu(r).ordinal()).collect::<Vec<_>>(),
        t_reduce.as_secs_f64() * 1e3,
        (moved * 16) >> 20
    );
}

#[test]
fn collectives_on_the_gpus_present() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpus) = all_gpus() else { return };
    let Some(lib) = nccl_or_skip() else { return };
    println!(
        "NCCL {}.{}.{} from {}",
        lib.version.0,
        lib.version.1,
        lib.version.2,
        lib.path.display()
    );
    let comm = Communicator::from_devices(&gpus)
        .unwrap_or_else(|e| panic!("a communicator over {} GPU(s): {e}", gpus.len()));
    assert_eq!(comm.size(), gpus.len());
    check_collectives(&comm, "all GPUs");
    drop(comm);
    // One rank on GPU 0 alone (the sharded table's one-GPU case), whatever the GPU count.
    let one = Communicator::from_devices(&gpus[..1]).expect("a one-rank communicator");
    check_collectives(&one, "one rank");
}

/// Two ranks on one GPU: NCCL refuses ("duplicate GPU"), which must come back as a clean
/// `Error::Nccl` (no panic, no hang); should it be accepted, the collectives must work.
#[test]
fn two_ranks_on_one_gpu() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(g) = gpu() else { return };
    if nccl_or_skip().is_none() {
        return;
    }
    let pair = [g.with_new_stream().unwrap(), g.with_new_stream().unwrap()];
    match Communicator::from_devices(&pair) {
        Ok(comm) => {
            println!("NCCL accepted two ranks on GPU {}", g.ordinal());
            check_collectives(&comm, "two ranks on one GPU");
        }
        Err(e) => {
            assert!(
                matches!(e, Error::Nccl { .. }),
                "expected Error::Nccl, got {e}"
            );
            println!("NCCL refuses two ranks on one GPU, as expected: {e}");
        }
    }
    // The GPU still works afterwards.
    let b = g.upload(&[1u32, 2, 3]).unwrap();
    assert_eq!(g.download(&b).unwrap(), vec![1, 2, 3]);
}

/// Bad shapes are InvalidInput before anything is enqueued (needs a communicator, so a GPU).
#[test]
fn bad_shapes_are_invalid_input() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpus) = all_gpus() else { return };
    if nccl_or_skip().is_none() {
        return;
    }
    let comm = Communicator::from_devices(&gpus[..1]).unwrap();
    let g = comm.gpu(0).clone();
    let a = g.upload(&[1u64; 10]).unwrap();
    let mut short = g.alloc::<u64>(5).unwrap();
    let err = comm.all_reduce_sum(&[&a], &mut [&mut short]).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    let err = comm
        .all_reduce_sum(&[&a, &a], &mut [&mut short])
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    // 11 > 10 elements: the counts go through, the parts are refused by the bounds check.
    let err = comm.exchange(&[&a], &[vec![0, 11]]).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    let err = comm.exchange(&[&a], &[vec![3, 1]]).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(matches!(
        Communicator::from_devices(&[]).unwrap_err(),
        Error::InvalidInput(_)
    ));
}

/// Unique ids travel as 256 hex digits or 128 bytes; anything else is refused (no NCCL
/// needed).
#[test]
fn unique_id_text_is_checked() {
    for bad in [
        "",
        "zz",
        &"0".repeat(255),
        &"g".repeat(256),
        &"0".repeat(258),
    ] {
        assert!(
            matches!(UniqueId::from_hex(bad), Err(Error::InvalidInput(_))),
            "{bad:.10}"
        );
    }
    assert!(matches!(
        UniqueId::from_bytes(&[0u8; 127]),
        Err(Error::InvalidInput(_))
    ));
    let id = UniqueId::from_hex(&format!(" {} \n", "a5".repeat(128))).unwrap();
    assert_eq!(id.as_bytes(), &[0xa5u8; 128]);
    assert_eq!(UniqueId::from_bytes(id.as_bytes()).unwrap(), id);
    assert_eq!(id.to_hex(), "a5".repeat(128));
}

/// A communicator from a unique id, this process holding its one rank: the same collectives
/// as `from_devices`, an all-gather, and the half-transfers of a group (a buffer of a rank
/// not held here is refused).
#[test]
fn a_communicator_from_a_unique_id() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(gpus) = all_gpus() else { return };
    if nccl_or_skip().is_none() {
        return;
    }
    let id = UniqueId::new().expect("a unique id");
    assert_eq!(UniqueId::from_hex(&id.to_hex()).unwrap(), id);
    let g = gpus[0].clone();
    let comm = Communicator::from_unique_id(&id, 1, &[(0, g.clone())])
        .unwrap_or_else(|e| panic!("joining a one-rank group: {e}"));
    assert_eq!((comm.world(), comm.held(), comm.size()), (1, &[0][..], 1));
    assert!(comm.is_joined() && comm.holds_all());
    check_collectives(&comm, "one rank from a unique id");
    // All-gather of one rank: the send buffer itself.
    let row: Vec<u64> = (0..1000).map(|i| i * 7 + 3).collect();
    let s = g.upload(&row).unwrap();
    let mut d = g.alloc_filled::<u64>(1000, 0xff).unwrap();
    comm.all_gather(&[&s], &mut [&mut d]).unwrap();
    assert_eq!(g.download(&d).unwrap(), row);
    // Transfers: pieces to itself; a buffer of rank 1 (not in the group) is refused.
    let mut r = g.alloc_filled::<u64>(1000, 0).unwrap();
    let moves = [
        Move {
            from: 0,
            from_at: 10,
            to: 0,
            to_at: 500,
            len: 400,
        },
        Move {
            from: 0,
            from_at: 0,
            to: 0,
            to_at: 0,
            len: 10,
        },
    ];
    comm.transfer(&[(Some(&s), 0)], &mut [(Some(&mut r), 0)], &moves)
        .unwrap();
    let got = g.download(&r).unwrap();
    assert_eq!(&got[500..900], &row[10..410]);
    assert_eq!(&got[..10], &row[..10]);
    assert!(got[10..500].iter().all(|&v| v == 0));
    let err = comm
        .transfer(&[(Some(&s), 1)], &mut [(Some(&mut r), 0)], &moves)
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    // Rank numbers out of range and ranks held twice are refused before NCCL is called.
    for ranks in [
        vec![(1usize, g.clone())],
        vec![(0, g.clone()), (0, g.clone())],
    ] {
        let err = Communicator::from_unique_id(&id, 1, &ranks).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    }
    assert!(matches!(
        Communicator::from_unique_id(&id, 1, &[]).unwrap_err(),
        Error::InvalidInput(_)
    ));
}

/// What a child process of `two_processes_share_a_sharded_table` is told.
const GROUP_CHILD: &str = "WARPMAP_TEST_GROUP_RANK";
const GROUP_DIR: &str = "WARPMAP_TEST_GROUP_DIR";

/// A sharded table over two processes on one GPU: NCCL refuses two ranks of one GPU in one
/// host, so each process claims a host of its own (`NCCL_HOSTID`) and their parts travel
/// through NCCL's socket transport on the loopback interface: the cross-node path, on one
/// machine. The test runs this binary twice more (`group_child`), as ranks 0 and 1, and
/// checks that both succeed; rank 0 hands the unique id to rank 1 through a file.
#[test]
fn two_processes_share_a_sharded_table() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if std::env::var_os(GROUP_CHILD).is_some() || std::env::var_os("WARPMAP_SANITIZER").is_some() {
        return;
    }
    let Some(_g) = gpu() else { return };
    if nccl_or_skip().is_none() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("warpmap-group-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut children: Vec<std::process::Child> = (0..2)
        .map(|r| {
            let mut c = std::process::Command::new(&exe);
            c.args([
                "--exact",
                "group_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(GROUP_CHILD, r.to_string())
            .env(GROUP_DIR, &dir)
            .env("NCCL_HOSTID", format!("warpmap-test-host-{r}"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
            if std::env::var_os("NCCL_SOCKET_IFNAME").is_none() {
                c.env("NCCL_SOCKET_IFNAME", "lo");
            }
            c.spawn().expect("starting a child process")
        })
        .collect();
    let deadline = Instant::now() + std::time::Duration::from_secs(240);
    let mut status = [None; 2];
    while status.iter().any(|s| s.is_none()) && Instant::now() < deadline {
        for (c, s) in children.iter_mut().zip(status.iter_mut()) {
            if s.is_none() {
                *s = c.try_wait().unwrap();
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let timed_out = status.iter().any(|s| s.is_none());
    let mut report = String::new();
    for (r, mut c) in children.into_iter().enumerate() {
        if status[r].is_none() {
            let _ = c.kill();
        }
        let out = c.wait_with_output().unwrap();
        report.push_str(&format!(
            "--- rank {r}: {:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{report}");
    assert!(
        !timed_out,
        "the two processes did not finish in 240 s\n{report}"
    );
    assert!(
        status.iter().all(|s| s.is_some_and(|s| s.success())),
        "a process failed\n{report}"
    );
}

/// One process of `two_processes_share_a_sharded_table` (does nothing when run otherwise).
#[test]
fn group_child() {
    let Some(rank) = std::env::var(GROUP_CHILD)
        .ok()
        .map(|r| r.parse::<usize>().unwrap())
    else {
        return;
    };
    let dir = std::path::PathBuf::from(std::env::var_os(GROUP_DIR).unwrap());
    let g = gpu().expect("a GPU in the child");
    let id_file = dir.join("id");
    let id = if rank == 0 {
        let id = UniqueId::new().unwrap();
        let tmp = dir.join("id.tmp");
        std::fs::write(&tmp, id.to_hex()).unwrap();
        std::fs::rename(&tmp, &id_file).unwrap();
        id
    } else {
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        loop {
            if let Ok(t) = std::fs::read_to_string(&id_file) {
                break UniqueId::from_hex(&t).unwrap();
            }
            assert!(Instant::now() < deadline, "no unique id from rank 0");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let t0 = Instant::now();
    let comm = Communicator::from_unique_id(&id, 2, &[(rank, g.clone())]).unwrap();
    println!("rank {rank}: joined in {:?}", t0.elapsed());
    let config = ShardedConfig::new(100_000, TableConfig::WarpDrive(WarpDriveConfig::new(0)))
        .shards_per_rank(2)
        .pipeline_batch(3000);
    let mut map = ShardedMap::<u64, u64>::join(config, comm).unwrap();
    assert_eq!(map.shards(), 4);
    // Rank 0 inserts 20 000 keys, rank 1 7 000 (so the processes run different numbers of
    // pipeline chunks), every key found by both, wherever its shard is.
    let all = unique_keys::<u64>(&mut SplitMix64::new(4242), 27_000, true);
    let (first, second) = all.split_at(20_000);
    let mine = if rank == 0 { first } else { second };
    let values: Vec<u64> = mine.iter().map(|&k| value_for(k, 0)).collect();
    map.insert(mine, &values).unwrap();
    assert_eq!(map.len().unwrap(), 27_000, "rank {rank}: len of the group");
    let held: usize = map.shard_lens().unwrap().iter().sum();
    println!("rank {rank}: {held} keys in the shards held here");
    assert!(held > 0 && held < 27_000);
    let mut queries = all.clone();
    queries.extend(unique_keys::<u64>(&mut SplitMix64::new(99), 3000, false));
    let got = map.find(&queries).unwrap();
    for (i, (q, v)) in queries.iter().zip(&got).enumerate() {
        let expect = (i < all.len()).then(|| value_for::<u64, u64>(*q, 0));
        assert_eq!(*v, expect, "rank {rank}: find {q}");
    }
    // Device-sided find of the other process's keys.
    let theirs = if rank == 0 { second } else { first };
    let dq = g.upload(theirs).unwrap();
    let mut dv = g.alloc_filled::<u64>(theirs.len(), 0).unwrap();
    let mut df = g.alloc_filled::<u8>(theirs.len(), 0).unwrap();
    map.find_device(&dq, &mut dv, &mut df).unwrap();
    let (dv, df) = (g.download(&dv).unwrap(), g.download(&df).unwrap());
    for (i, k) in theirs.iter().enumerate() {
        assert_eq!(
            (df[i], dv[i]),
            (1, value_for::<u64, u64>(*k, 0)),
            "rank {rank}"
        );
    }
    // Rank 0 erases 1000 of rank 1's keys; rank 1 erases nothing (an empty batch still
    // serves the other process). Both learn the group's count.
    let gone: Vec<u64> = if rank == 0 {
        second[..1000].to_vec()
    } else {
        Vec::new()
    };
    assert_eq!(map.erase(&gone).unwrap(), 1000, "rank {rank}: erased");
    assert_eq!(map.len().unwrap(), 26_000);
    // Rank 1's batch is malformed: it gets its own error, rank 0 the refusal, nobody runs it.
    let n = if rank == 1 { 5 } else { 10 };
    let mut out = vec![0u64; 10];
    let mut found = vec![false; n];
    let err = map.find_into(&all[..10], &mut out, &mut found).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "rank {rank}: {err}");
    if rank == 0 {
        assert!(err.to_string().contains("refused"), "{err}");
    }
    // Still in step afterwards: statuses of keys present (rank 1's first 1000 are erased).
    assert_eq!(map.len().unwrap(), 26_000);
    let mut st = vec![warpmap::InsertStatus::default(); 100];
    let again = if rank == 1 { 1000..1100 } else { 0..100 };
    let failed = map
        .insert_with_status(&mine[again.clone()], &values[again], &mut st)
        .unwrap();
    assert_eq!(failed, 0);
    assert!(
        st.iter().all(|s| s.is_ok() && s.was_update()),
        "rank {rank}"
    );
    println!("rank {rank}: done in {:?}", t0.elapsed());
}
