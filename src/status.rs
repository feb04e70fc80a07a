//! Per-key insert status, mirrored bit for bit by `kernels/common/status.cuh`
//! (the test `status_bits_match_cuda_header` checks they agree).
//!
//! A status is a `u32`: the low byte holds failure bits (the key is **not** in the table), the
//! bits above hold information (the key is in the table, and something is worth knowing).

/// The key was placed (new) and nothing else is worth saying.
pub const OK: u32 = 0;
/// Failure: probing reached the scheme's probe limit (`p_max`) without finding a free slot.
pub const PROBE_LIMIT: u32 = 1 << 0;
/// Failure: the table has no free slot left.
pub const TABLE_FULL: u32 = 1 << 1;
/// Failure: the scheme's allocator is exhausted (chaining schemes).
pub const OUT_OF_MEMORY: u32 = 1 << 2;
/// Mask of the failure bits.
pub const FAILURE_MASK: u32 = 0xff;
/// Information: the key was already present; its value was replaced.
pub const UPDATED: u32 = 1 << 8;
/// Information: the key equals an internal sentinel and was stored on the side path.
pub const SENTINEL_KEY: u32 = 1 << 9;
/// Information: the key was already present and [`InsertMode::IfAbsent`](crate::table::InsertMode)
/// kept its value.
pub const PRESENT: u32 = 1 << 10;

/// All named bits with their names, for messages.
pub const NAMES: &[(u32, &str)] = &[
    (PROBE_LIMIT, "PROBE_LIMIT"),
    (TABLE_FULL, "TABLE_FULL"),
    (OUT_OF_MEMORY, "OUT_OF_MEMORY"),
    (UPDATED, "UPDATED"),
    (SENTINEL_KEY, "SENTINEL_KEY"),
    (PRESENT, "PRESENT"),
];

/// The status of one key of an insert batch.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(transparent)]
pub struct InsertStatus(pub u32);

impl InsertStatus {
    /// `n` statuses of 0 in zeroed memory: the pages come from the allocator untouched, and the
    /// first writer (a pipeline's copy on every host thread) touches them, not one thread
    /// filling half a gigabyte in advance (`vec![InsertStatus::default(); n]` writes every
    /// element).
    pub(crate) fn zeroed_vec(n: usize) -> Vec<InsertStatus> {
        bytemuck::zeroed_vec(n)
    }
}

impl InsertStatus {
    /// The key is in the table (new or updated).
    pub fn is_ok(self) -> bool {
        self.0 & FAILURE_MASK == 0
    }
    /// The key could not be placed and is not in the table.
    pub fn is_failure(self) -> bool {
        !self.is_ok()
    }
    /// The key was present before; its value was replaced.
    pub fn was_update(self) -> bool {
        self.0 & UPDATED != 0
    }
    /// The key was present before and kept its value (insert-if-absent).
    pub fn was_present(self) -> bool {
        self.0 & PRESENT != 0
    }
}

impl std::fmt::Debug for InsertStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InsertStatus({})", names(self.0))
    }
}

/// The names of the bits set in `bits`, joined by `|` ("OK" when none).
pub fn names(bits: u32) -> String {
    let mut out: Vec<String> = NAMES
        .iter()
        .filter(|(b, _)| bits & b != 0)
        .map(|(_, n)| n.to_string())
        .collect();
    let known: u32 = NAMES.iter().map(|(b, _)| b).fold(0, |a, b| a | b);
    if bits & !known != 0 {
        out.push(format!("UNKNOWN({:#x})", bits & !known));
    }
    if out.is_empty() {
        "OK".into()
    } else {
        out.join("|")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CUDA header must define the same bits with the same values.
    #[test]
    fn status_bits_match_cuda_header() {
        let header = include_str!("../kernels/common/status.cuh");
        let expect = [
            ("WM_STATUS_OK", OK),
            ("WM_STATUS_PROBE_LIMIT", PROBE_LIMIT),
            ("WM_STATUS_TABLE_FULL", TABLE_FULL),
            ("WM_STATUS_OUT_OF_MEMORY", OUT_OF_MEMORY),
            ("WM_STATUS_FAILURE_MASK", FAILURE_MASK),
            ("WM_STATUS_UPDATED", UPDATED),
            ("WM_STATUS_SENTINEL_KEY", SENTINEL_KEY),
            ("WM_STATUS_PRESENT", PRESENT),
        ];
        for (name, value) in expect {
            let line = header
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(name))
                .unwrap_or_else(|| panic!("{name} missing from status.cuh"));
            let text = line
                .split_whitespace()
                .nth(2)
                .unwrap()
                .trim_end_matches('u');
            let parsed = if let Some(hex) = text.strip_prefix("0x") {
                u32::from_str_radix(hex, 16).unwrap()
            } else {
                text.parse::<u32>().unwrap()
            };
            assert_eq!(parsed, value, "{name}");
        }
    }

    #[test]
    fn status_names() {
        assert_eq!(names(0), "OK");
        assert_eq!(names(PROBE_LIMIT | UPDATED), "PROBE_LIMIT|UPDATED");
        assert!(InsertStatus(UPDATED).is_ok());
        assert!(InsertStatus(TABLE_FULL).is_failure());
    }
}
