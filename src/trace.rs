//! Phase times of host-side work, printed to standard error where a tracing variable is set
//! (`WARPMAP_TRACE_PIPELINE` for sharded tables' pipelines, `WARPMAP_TRACE_DYCUCKOO` for
//! DyCuckoo's growth checks), and a GPU insert's timeline on its stream (`WARPMAP_TRACE_STREAM`,
//! [`stream`]): tools for tuning, off by default.

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

/// A batch's timeline on one stream, where `WARPMAP_TRACE_STREAM` is set: each mark takes the
/// host's time and a stamp on the GPU's stream ([`crate::Gpu::stamp`]); the report waits for the
/// stream and prints, a mark each, the host's and the GPU's milliseconds since the first mark.
/// Where the host's time of a mark is past the GPU's, the GPU waited for the host there (the
/// enqueue of what precedes the mark was late). A tool for tuning, off by default; marks are
/// kept per thread, from [`start`](stream::start) to the report.
pub(crate) mod stream {
    use crate::device::{Gpu, Stamp};
    use std::cell::RefCell;
    use std::sync::OnceLock;
    use std::time::Instant;

    thread_local! {
        static MARKS: RefCell<Vec<(&'static str, Instant, Stamp)>> = const { RefCell::new(Vec::new()) };
    }

    fn on() -> bool {
        static ON: OnceLock<bool> = OnceLock::new();
        super::env_flag(&ON, "WARPMAP_TRACE_STREAM")
    }

    /// Starts a timeline at `phase` (forgetting the marks of one that ended without a report:
    /// an error on its way); nothing when off.
    pub(crate) fn start(gpu: &Gpu, phase: &'static str) {
        if on() {
            MARKS.with(|m| m.borrow_mut().clear());
            mark(gpu, phase);
        }
    }

    /// Marks `phase` (the host's time now, the GPU's when its stream gets here); nothing when off.
    pub(crate) fn mark(gpu: &Gpu, phase: &'static str) {
        if !on() {
            return;
        }
        if let Ok(stamp) = gpu.stamp() {
            MARKS.with(|m| m.borrow_mut().push((phase, Instant::now(), stamp)));
        }
    }

    /// Prints `warpmap {what}: phase host/gpu ms, ...` and forgets the marks; nothing when off.
    pub(crate) fn report(what: std::fmt::Arguments<'_>) {
        if !on() {
            return;
        }
        let marks = MARKS.with(|m| std::mem::take(&mut *m.borrow_mut()));
        let Some((_, host0, gpu0)) = marks.first() else {
            return;
        };
        let phases: Vec<String> = marks
            .iter()
            .map(|(phase, host, gpu)| {
                let h = (*host - *host0).as_secs_f64() * 1e3;
                let g = gpu.ms_since(gpu0).map_or(f64::NAN, f64::from);
                format!("{phase} {h:.3}/{g:.3}")
            })
            .collect();
        eprintln!("warpmap {what} (host/gpu ms): {}", phases.join(", "));
    }
}
