//! Wrong API keys, counted by the address they come from: after `limit`
//! wrong keys within a minute from one address, no request of that address
//! has its key checked (429 with `Retry-After`) until that minute is over,
//! so keys cannot be guessed quickly. A throttled address is refused even
//! with a right key, or a guess would still show when it hit. IPv6
//! addresses are counted by their /64, which one host usually holds whole.
//!
//! `governor` (the per-key rate) cannot say whether a key is out of cells
//! without spending one, which is what the check before the key needs; a
//! fixed window per address can.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use std::time::Instant;

use crate::connections::counted;

const WINDOW: Duration = Duration::from_secs(60);
/// Addresses tracked at most; past this (after forgetting windows that are
/// over) a new address is not counted rather than growing the table.
const MAX_TRACKED: usize = 100_000;

/// Wrong keys per address in the current minute.
#[derive(Debug)]
pub(crate) struct FailedKeys {
    limit: u32,
    windows: Mutex<HashMap<IpAddr, Window>>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

impl FailedKeys {
    /// At most `limit` wrong keys a minute from one address (at least 1).
    pub(crate) fn new(limit: u32) -> Self {
        Self {
            limit: limit.max(1),
            windows: Mutex::default(),
        }
    }

    /// The wrong keys allowed a minute.
    pub(crate) fn limit(&self) -> u32 {
        self.limit
    }

    /// How long `peer` must still wait, if it used up its wrong keys.
    pub(crate) fn throttled(&self, peer: IpAddr) -> Option<Duration> {
        self.throttled_at(peer, Instant::now())
    }

    /// Count a wrong key from `peer`.
    pub(crate) fn record(&self, peer: IpAddr) {
        self.record_at(peer, Instant::now());
    }

    fn throttled_at(&self, peer: IpAddr, now: Instant) -> Option<Duration> {
        let windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        let window = windows.get(&counted(peer))?;
        let left = WINDOW.checked_sub(now.duration_since(window.started))?;
        (window.failures >= self.limit && !left.is_zero()).then_some(left)
    }

    fn record_at(&self, peer: IpAddr, now: Instant) {
        let mut windows = self.windows.lock().unwrap_or_else(|p| p.into_inner());
        if windows.len() >= MAX_TRACKED {
            windows.retain(|_, w| now.duration_since(w.started) < WINDOW);
            if windows.len() >= MAX_TRACKED && !windows.contains_key(&counted(peer)) {
                tracing::warn!(%peer, "too many addresses sent wrong keys to count another");
                return;
            }
        }
        let window = windows.entry(counted(peer)).or_insert(Window {
            started: now,
            failures: 0,
        });
        if now.duration_since(window.started) >= WINDOW {
            *window = Window {
                started: now,
                failures: 0,
            };
        }
        window.failures = window.failures.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_throttled_for_the_rest_of_its_minute() {
        let failed = FailedKeys::new(3);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let start = Instant::now();
        let at = |seconds| start + Duration::from_secs(seconds);
        failed.record_at(a, at(0));
        failed.record_at(a, at(1));
        assert_eq!(failed.throttled_at(a, at(1)), None, "two of three");
        failed.record_at(a, at(20));
        assert_eq!(
            failed.throttled_at(a, at(20)),
            Some(Duration::from_secs(40))
        );
        assert_eq!(
            failed.throttled_at(b, at(20)),
            None,
            "another address is not held back"
        );
        assert_eq!(failed.throttled_at(a, at(60)), None, "the minute is over");
        failed.record_at(a, at(60));
        assert_eq!(
            failed.throttled_at(a, at(60)),
            None,
            "a new minute counts afresh"
        );
    }

    #[test]
    fn ipv6_is_counted_by_its_64_and_mapped_ipv4_as_ipv4() {
        let failed = FailedKeys::new(2);
        failed.record("2001:db8:0:1::1".parse().unwrap());
        failed.record("2001:db8:0:1:ffff::2".parse().unwrap());
        assert!(
            failed
                .throttled("2001:db8:0:1::9".parse().unwrap())
                .is_some()
        );
        assert!(
            failed
                .throttled("2001:db8:0:2::1".parse().unwrap())
                .is_none()
        );
        failed.record("::ffff:10.0.0.1".parse().unwrap());
        failed.record("10.0.0.1".parse().unwrap());
        assert!(failed.throttled("10.0.0.1".parse().unwrap()).is_some());
    }
}
