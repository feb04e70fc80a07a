//! Canonical k-mer counting: every k-mer (k ≤ 31, two bits a base, packed in a `u64`) of a set
//! of synthetic reads, counted by reduce by key ([`HashTable::insert_or_apply`] with
//! [`Reduce::Sum`] and a count of one per k-mer): on the GPU (WarpDrive) when there is one, else
//! on the CPU backend. A k-mer and its reverse complement are one k-mer (the smaller code
//! stands for both), and a k-mer never spans two reads. The counts are checked against a
//! `HashMap` fold on the host.
//!
//! The reads are drawn from a random reference (a genome of `reads × read length / 8` bases, so
//! each base is covered about 8 times and k-mers repeat), half of them reverse-complemented, as
//! a sequencer's reads of both strands would be.
//!
//! Run: `cargo run --release --example kmer_count [READS] [K]` (default 2^16 reads of 150 bases,
//! k = 31). The k-mers are extracted on the host; the time shown is the table's (moving the
//! k-mers to the GPU included) and the retrieval of the counts.

use std::collections::HashMap;
use std::time::Instant;
use warpmap::ops::Engine;
use warpmap::{Reduce, Result};

/// Bases per read.
const READ_LEN: usize = 150;

/// The 2-bit code of the complement of a base (A=0 ↔ T=3, C=1 ↔ G=2).
fn complement(base: u8) -> u8 {
    3 - base
}

/// The canonical k-mers of `read` (bases as 2-bit codes), in order: for each window of `k`
/// bases, the smaller of its code and its reverse complement's code.
fn canonical_kmers(read: &[u8], k: usize, out: &mut Vec<u64>) {
    if read.len() < k {
        return;
    }
    let mask = if k == 32 {
        u64::MAX
    } else {
        (1u64 << (2 * k)) - 1
    };
    let shift = 2 * (k as u64 - 1);
    let (mut fwd, mut rev) = (0u64, 0u64);
    for (i, &b) in read.iter().enumerate() {
        fwd = ((fwd << 2) | b as u64) & mask;
        rev = (rev >> 2) | ((complement(b) as u64) << shift);
        if i + 1 >= k {
            out.push(fwd.min(rev));
        }
    }
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let reads: usize = args
        .next()
        .map_or(1 << 16, |s| s.parse().expect("READS: a number of reads"));
    let k: usize = args
        .next()
        .map_or(31, |s| s.parse().expect("K: a k-mer length"));
    assert!(
        (1..=31).contains(&k),
        "k from 1 to 31 (two bits a base in a u64)"
    );

    // A random reference and reads from it (xorshift stream; fixed seed: the same run each time).
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let genome_len = (reads * READ_LEN / 8).max(READ_LEN);
    let genome: Vec<u8> = (0..genome_len).map(|_| (next() & 3) as u8).collect();
    let mut kmers = Vec::with_capacity(reads * (READ_LEN + 1 - k.min(READ_LEN)));
    for _ in 0..reads {
        let start = (next() % (genome_len - READ_LEN + 1) as u64) as usize;
        let mut read = genome[start..start + READ_LEN].to_vec();
        if next() & 1 == 1 {
            read.reverse();
            read.iter_mut().for_each(|b| *b = complement(*b));
        }
        canonical_kmers(&read, k, &mut kmers);
    }
    let ones = vec![1u32; kmers.len()];

    // The GPU when there is one, else the CPU backend (looked for once).
    let engine = Engine::Auto.resolved();
    let backend = engine.describe();
    // Room for every k-mer at a load of one half (at most as many distinct as there are k-mers).
    let capacity = (2 * kmers.len()).max(1);
    let mut table = engine.table::<u64, u32>(capacity)?;
    let start = Instant::now();
    table.insert_or_apply(&kmers, &ones, Reduce::Sum)?;
    let (distinct, counts) = table.retrieve_all()?;
    let secs = start.elapsed().as_secs_f64();

    let mut expected: HashMap<u64, u32> = HashMap::new();
    for &m in &kmers {
        *expected.entry(m).or_default() += 1;
    }
    assert_eq!(distinct.len(), expected.len(), "distinct k-mers");
    for (m, c) in distinct.iter().zip(&counts) {
        assert_eq!(expected.get(m), Some(c), "count of k-mer {m:#x}");
    }
    let total: u64 = counts.iter().map(|&c| c as u64).sum();
    assert_eq!(total, kmers.len() as u64, "every k-mer counted once");
    println!(
        "{reads} reads of {READ_LEN} bases, k = {k}: {} k-mers, {} distinct ({backend}); counted \
         and retrieved in {:.2} ms ({:.1} M k-mers/s), checked against the host",
        kmers.len(),
        distinct.len(),
        secs * 1e3,
        kmers.len() as f64 / secs / 1e6
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kmer_and_its_reverse_complement_are_one() {
        // ACGTT and its reverse complement AACGT: the same canonical code.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        canonical_kmers(&[0, 1, 2, 3, 3], 5, &mut a);
        canonical_kmers(&[0, 0, 1, 2, 3], 5, &mut b);
        assert_eq!(a, b);
        // Windows stay within the read: 5 bases give 5 - 3 + 1 3-mers, a shorter read none.
        let mut c = Vec::new();
        canonical_kmers(&[0, 1, 2, 3, 3], 3, &mut c);
        assert_eq!(c.len(), 3);
        canonical_kmers(&[0, 1], 3, &mut c);
        assert_eq!(c.len(), 3);
    }
}
