//! How times are taken and summarised: the warm-up before a table's timed runs (on the device,
//! every kernel once; on the host, every operation once), the median of the runs, the harmonic
//! mean of two rates (the bound of a half-insert, half-find batch), and the report's UTC dates.
//! The timing itself is CUDA events around the kernels ([`warpmap::device::Timer`]) on a GPU and
//! [`std::time::Instant`] around each bulk call on the CPU.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use warpmap::device::Timer;
use warpmap::{keygen, DeviceHashTable, Gpu, HashTable, Key, Result, Value};

/// The median (mean of the middle two for an even count; 0 for none).
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// The harmonic mean of two rates (the rate of doing one operation at each): the bound of a
/// batch that is half inserts and half finds.
pub(crate) fn harmonic(a: f64, b: f64) -> f64 {
    if a > 0.0 && b > 0.0 {
        2.0 / (1.0 / a + 1.0 / b)
    } else {
        0.0
    }
}

/// Now, UTC, as `YYYY-MM-DDTHH:MM:SSZ` (from [`SystemTime`]; no calendar crate).
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format_utc(secs)
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian).
pub fn format_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Every device-buffer kernel of a GPU table once on a small batch (module load, first-launch
/// costs), then cleared.
pub(crate) fn warm_up_device<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    table: &mut dyn DeviceHashTable<K, V>,
    timer: &Timer,
    n: usize,
    seed: u64,
) -> Result<()> {
    let nw = n.min(1 << 16).min(table.capacity() / 2).max(1);
    let wk = keygen::unique::<K>(nw, seed ^ 0x3a3a)?;
    let wv = keygen::values_for::<K, V>(&wk);
    let dk = gpu.upload(&wk)?;
    let dv = gpu.upload(&wv)?;
    let mut dout = gpu.alloc::<V>(nw)?;
    let mut dfound = gpu.alloc::<u8>(nw)?;
    timer.start()?;
    table.insert_device_async(&dk, &dv, None)?;
    table.find_device_async(&dk, &mut dout, &mut dfound)?;
    table.contains_device_async(&dk, &mut dfound)?;
    table.erase_device_async(&dk)?;
    timer.stop_ms()?;
    table.synchronize()?;
    table.clear()
}

/// A small batch through every operation of a host table: the thread pool and the allocator.
pub(crate) fn warm_up_host<K: Key, V: Value>(
    table: &mut dyn HashTable<K, V>,
    n: usize,
    seed: u64,
) -> Result<()> {
    let nw = n.min(1 << 12).min(table.capacity()).max(1);
    let wk = keygen::unique::<K>(nw, seed ^ 0x3a3a)?;
    let wv = keygen::values_for::<K, V>(&wk);
    let mut out = vec![V::zeroed(); nw];
    let mut found = vec![false; nw];
    table.insert(&wk, &wv)?;
    table.find_into(&wk, &mut out, &mut found)?;
    table.contains(&wk)?;
    table.erase(&wk)?;
    table.clear()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(format_utc(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }
}
