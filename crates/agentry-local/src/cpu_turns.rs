//! Taking turns on the cores with other processes
//! ([`LocalConfig::cpu_lock`](crate::LocalConfig::cpu_lock)).
//!
//! Each decode call spreads over every core, and llama.cpp's worker threads
//! spin while they wait for each other at each step of the graph. Two
//! processes decoding at once on the same cores therefore do not share
//! them: each one's threads spin while the other's run, and both crawl
//! (two `agentry eval bfcl` runs side by side on two cores took minutes per
//! question instead of seconds). An exclusive lock on one file, held for
//! each decode call, makes them take turns instead: a process waits (asleep)
//! while another decodes, then gets every core for its own call, so two
//! processes each go at about half speed. Models in one process take turns
//! the same way (each holds its own open file).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::engine::Counters;

/// How often, at most, the wait notice is given.
const NOTICE_EVERY: Duration = Duration::from_secs(30);

/// The lock file, open.
pub(crate) struct CpuTurns {
    file: File,
    notice: Option<fn()>,
    noticed: Mutex<Option<Instant>>,
}

/// A turn on the cores: the lock is released when it is dropped.
pub(crate) struct Turn<'a>(Option<&'a File>);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(file) = self.0 {
            let _ = file.unlock();
        }
    }
}

impl CpuTurns {
    /// Open (or create) the lock file at `path`; `None`, with a warning, when
    /// it cannot be: decoding then goes on without taking turns.
    pub(crate) fn open(path: &Path, notice: Option<fn()>) -> Option<Self> {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        match OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
        {
            Ok(file) => Some(Self {
                file,
                notice,
                noticed: Mutex::new(None),
            }),
            Err(error) => {
                tracing::warn!(path = %path.display(), %error, "the CPU lock file: decoding without taking turns");
                None
            }
        }
    }

    /// Wait for a turn: at once when no other process (or model) is
    /// decoding; otherwise asleep until it is done, counted in `counters`
    /// and announced through the notice (at most every thirty seconds). A lock
    /// that fails is not waited for.
    pub(crate) fn turn(&self, counters: &Counters) -> Turn<'_> {
        match self.file.try_lock() {
            Ok(()) => return Turn(Some(&self.file)),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(error)) => {
                tracing::warn!(%error, "the CPU lock: decoding without it");
                return Turn(None);
            }
        }
        self.announce();
        let started = Instant::now();
        let held = self.file.lock();
        counters.cpu_waits.fetch_add(1, Ordering::Relaxed);
        counters
            .cpu_wait_micros
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        match held {
            Ok(()) => Turn(Some(&self.file)),
            Err(error) => {
                tracing::warn!(%error, "the CPU lock: decoding without it");
                Turn(None)
            }
        }
    }

    fn announce(&self) {
        let Some(notice) = self.notice else {
            return;
        };
        let mut noticed = self.noticed.lock().unwrap_or_else(|p| p.into_inner());
        if noticed.is_none_or(|at| at.elapsed() >= NOTICE_EVERY) {
            *noticed = Some(Instant::now());
            notice();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_waits_for_the_first_and_is_counted() {
        static NOTICES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        fn notice() {
            NOTICES.fetch_add(1, Ordering::Relaxed);
        }
        let path = std::env::temp_dir().join(format!("agentry-cpu-turns-{}", std::process::id()));
        let first = CpuTurns::open(&path, None).unwrap();
        let second = CpuTurns::open(&path, Some(notice)).unwrap();
        let counters = Counters::default();
        let held = first.turn(&counters);
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _turn = second.turn(&counters);
                sender.send(()).unwrap();
            });
            std::thread::sleep(Duration::from_millis(200));
            assert!(receiver.try_recv().is_err(), "the second turn waits");
            drop(held);
            receiver.recv_timeout(Duration::from_secs(10)).unwrap();
        });
        assert_eq!(counters.cpu_waits.load(Ordering::Relaxed), 1);
        assert!(counters.cpu_wait_micros.load(Ordering::Relaxed) >= 150_000);
        assert_eq!(NOTICES.load(Ordering::Relaxed), 1);
        // Free again: no wait, no notice.
        drop(second.turn(&counters));
        assert_eq!(counters.cpu_waits.load(Ordering::Relaxed), 1);
        let _ = std::fs::remove_file(&path);
    }
}
