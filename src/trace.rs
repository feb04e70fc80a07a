//! Phase times of host-side work, printed to standard error where a tracing variable is set
//! (`WARPMAP_TRACE_PIPELINE` for sharded tables' pipelines, `WARPMAP_TRACE_DYCUCKOO` for
//! DyCuckoo's growth checks): tools for tuning, off by default.

use std::sync::OnceLock;

/// Whether the environment variable `name` is set, read once into `cell`.
pub(crate) fn env_flag(cell: &'static OnceLock<bool>, name: &str) -> bool {
    *cell.get_or_init(|| std::env::var_os(name).is_some())
}

/// Times of named phases (ms), each the time since the previous mark; records nothing when off.
pub(crate) struct PhaseClock {
    on: bool,
    last: std::time::Instant,
    spent: Vec<(&'static str, f64)>,
}

impl PhaseClock {
    pub(crate) fn new(on: bool) -> Self {
        PhaseClock {
            on,
            last: std::time::Instant::now(),
            spent: Vec::new(),
        }
    }
    pub(crate) fn on(&self) -> bool {
        self.on
    }
    /// Adds the time since the last mark to `phase`.
    pub(crate) fn mark(&mut self, phase: &'static str) {
        if !self.on {
            return;
        }
        let now = std::time::Instant::now();
        let ms = (now - self.last).as_secs_f64() * 1e3;
        self.last = now;
        match self.spent.iter_mut().find(|(p, _)| *p == phase) {
            Some((_, t)) => *t += ms,
            None => self.spent.push((phase, ms)),
        }
    }
    /// Prints `warpmap {what}: {total} ms: {phase} {ms}, ...` when on.
    pub(crate) fn report(&self, what: std::fmt::Arguments<'_>) {
        if self.on {
            let total: f64 = self.spent.iter().map(|(_, t)| t).sum();
            let phases: Vec<String> = self
                .spent
                .iter()
                .map(|(p, t)| format!("{p} {t:.2}"))
                .collect();
            eprintln!("warpmap {what}: {total:.2} ms: {}", phases.join(", "));
        }
    }
}
