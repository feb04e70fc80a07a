//! The checks that verify every operation of every run against the key set it was given (no
//! map needed: a key's value is [`keygen::value_for`](warpmap::keygen::value_for) of it). A
//! wrong answer, an unwritten (poisoned) output or an unplaced key counts as a failure of its
//! row; it never stops the run.

use rayon::prelude::*;
use warpmap::keygen::value_matches;
use warpmap::{Error, Key, Result, Value};

/// A found flag as the backends write it: `u8` on a GPU (1 or 0; anything else is an unwritten
/// poisoned byte), `bool` on the CPU.
pub(crate) trait Flag: Copy + Send + Sync {
    /// Exactly "found".
    fn is_found(self) -> bool;
    /// Exactly "not found".
    fn is_absent(self) -> bool;
}

impl Flag for u8 {
    fn is_found(self) -> bool {
        self == 1
    }
    fn is_absent(self) -> bool {
        self == 0
    }
}

impl Flag for bool {
    fn is_found(self) -> bool {
        self
    }
    fn is_absent(self) -> bool {
        !self
    }
}

/// Wrong answers of a find whose query `i` is `keys[i]` where `present(i)` (it must be found
/// with `value_for(keys[i])`) and an absent key elsewhere (it must be reported absent).
fn bad_answers<K: Key, V: Value, F: Flag>(
    keys: &[K],
    out: &[V],
    found: &[F],
    present: impl Fn(usize) -> bool + Sync,
) -> usize {
    if keys.len() != out.len() || keys.len() != found.len() {
        return keys.len().max(out.len()).max(found.len());
    }
    keys.par_iter()
        .zip(out.par_iter())
        .zip(found.par_iter())
        .enumerate()
        .with_min_len(1 << 12)
        .filter(|&(i, ((&k, &v), &f))| {
            if present(i) {
                !f.is_found() || !value_matches(k, v)
            } else {
                !f.is_absent()
            }
        })
        .count()
}

/// find_hit: queries (inserted keys, repeats allowed) not found or found with a value other
/// than `value_for(key)`.
pub(crate) fn bad_hits<K: Key, V: Value, F: Flag>(keys: &[K], out: &[V], found: &[F]) -> usize {
    bad_answers(keys, out, found, |_| true)
}

/// reduce: wrong answers of a find of every row's key after the rows were reduced by key with
/// [`Reduce::Sum`](warpmap::Reduce): each key must be found holding the sum of its rows'
/// values. With distinct keys that is each row's own value ([`bad_hits`]); with repeats the sums
/// are folded on the host first (in row order: integer sums wrap, and the workloads' float
/// values are whole numbers, so any order of the additions gives the same sum at these sizes).
pub(crate) fn bad_sums<K: Key, V: Value, F: Flag>(
    keys: &[K],
    vals: &[V],
    out: &[V],
    found: &[F],
    distinct: usize,
) -> usize {
    if distinct == keys.len() {
        return bad_hits(keys, out, found);
    }
    let mut sums: std::collections::HashMap<K, V> =
        std::collections::HashMap::with_capacity(distinct);
    for (&k, &v) in keys.iter().zip(vals) {
        sums.entry(k)
            .and_modify(|s| *s = s.reduce(v, warpmap::Reduce::Sum))
            .or_insert(v);
    }
    keys.iter()
        .zip(out)
        .zip(found)
        .filter(|&((k, v), f)| !f.is_found() || sums.get(k) != Some(v))
        .count()
}

/// find_half: wrong answers to [`Workload::half`]'s queries: an even position (`keys[i]`,
/// inserted) not found or with a value other than `value_for(key)`, an odd one (absent) found
/// or left unwritten.
pub(crate) fn bad_half<K: Key, V: Value, F: Flag>(keys: &[K], out: &[V], found: &[F]) -> usize {
    bad_answers(keys, out, found, |i| i % 2 == 0)
}

/// find_miss: absent keys reported found (or left unwritten).
pub(crate) fn bad_misses<F: Flag>(found: &[F]) -> usize {
    found
        .par_iter()
        .with_min_len(1 << 12)
        .filter(|f| !f.is_absent())
        .count()
}

/// contains: inserted keys not reported present.
pub(crate) fn bad_contains<F: Flag>(found: &[F]) -> usize {
    found
        .par_iter()
        .with_min_len(1 << 12)
        .filter(|f| !f.is_found())
        .count()
}

/// After inserting `n` keys of which `distinct` are distinct: `len` must be `distinct`.
pub(crate) fn check_len_after_insert(
    run: usize,
    len: usize,
    n: usize,
    distinct: usize,
) -> Option<String> {
    (len != distinct).then(|| {
        if n == distinct {
            format!("run {run}: len {len} after inserting {n} keys")
        } else {
            format!("run {run}: len {len} after inserting {n} keys ({distinct} distinct)")
        }
    })
}

/// Turns a [`TableFull`](Error::TableFull) into a verification failure of run `run` (keys
/// not placed are a wrong result, not a reason to stop); other errors stop the benchmark. A
/// batch call's error says of how many keys (`batch`); a GPU table's `synchronize` does not.
pub(crate) fn table_full_is_failure(
    r: Result<()>,
    failures: &mut Vec<String>,
    run: usize,
) -> Result<()> {
    match r {
        Ok(()) => Ok(()),
        Err(Error::TableFull { failed, batch, .. }) => {
            failures.push(if batch > 0 {
                format!("run {run}: {failed} of {batch} keys not placed")
            } else {
                format!("run {run}: {failed} keys not placed")
            });
            Ok(())
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_full_is_a_failure_with_its_batch_when_known() {
        let full = |batch| Error::TableFull {
            failed: 3,
            batch,
            capacity: 64,
        };
        let mut failures = Vec::new();
        table_full_is_failure(Err(full(10)), &mut failures, 1).unwrap();
        table_full_is_failure(Err(full(0)), &mut failures, 2).unwrap();
        table_full_is_failure(Ok(()), &mut failures, 3).unwrap();
        assert_eq!(
            failures,
            ["run 1: 3 of 10 keys not placed", "run 2: 3 keys not placed"]
        );
        assert!(table_full_is_failure(Err(Error::invalid("x")), &mut failures, 4).is_err());
    }
}
