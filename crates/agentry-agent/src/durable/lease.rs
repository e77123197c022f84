//! Holding a run's lease while it runs: who this process says it is, how
//! long a lease lasts, and the task that renews it in the background
//! ([`Keeper`]) and releases it when the run stops.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use agentry_core::journal::{JournalError, Lease, RunJournal};

/// How long a run's lease lasts unless renewed, by default. Its holder
/// renews it every third of that; a process that dies leaves the run to
/// others once it ends.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// How this process takes runs' leases.
#[derive(Debug, Clone)]
pub(crate) struct Leasing {
    /// Shown to whoever finds a run leased.
    pub owner: String,
    pub ttl: Duration,
}

impl Default for Leasing {
    fn default() -> Self {
        Self {
            owner: process_label(),
            ttl: DEFAULT_LEASE_TTL,
        }
    }
}

impl Leasing {
    /// Take run `run`'s lease.
    pub async fn acquire(
        &self,
        journal: &dyn RunJournal,
        run: &str,
    ) -> Result<Lease, JournalError> {
        journal.acquire(run, &self.owner, self.ttl).await
    }
}

/// This process as a lease's holder: its id and its machine's name (not a
/// secret, and nothing of the caller's).
pub fn process_label() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .map(|host| host.trim().to_owned())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("process {} on {host}", std::process::id())
}

/// Renews a lease in the background while its run goes on. Renewal that
/// finds the lease taken over records [`JournalError::Fenced`] in
/// `failure`: the run writes nothing more and stops. Dropped (a run
/// abandoned mid-way), it releases the lease on its own.
pub(crate) struct Keeper {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Keeper {
    /// Start renewing lease `token` of `run` every third of `ttl`.
    pub fn start(
        journal: Arc<dyn RunJournal>,
        run: String,
        token: u64,
        ttl: Duration,
        failure: Arc<Mutex<Option<JournalError>>>,
    ) -> Self {
        let (stop, mut stopped) = oneshot::channel::<()>();
        let period = (ttl / 3).max(Duration::from_millis(10));
        let task = tokio::spawn(async move {
            loop {
                // Told to stop, or the keeper was dropped: release.
                if tokio::time::timeout(period, &mut stopped).await.is_ok() {
                    break;
                }
                match journal.renew(&run, token, ttl).await {
                    Ok(_) => {}
                    Err(error @ JournalError::Fenced { .. }) => {
                        let mut failure = failure.lock().unwrap_or_else(|p| p.into_inner());
                        failure.get_or_insert(error);
                        return; // not ours to release any more
                    }
                    // A passing store failure: the next renewal tries again
                    // (and a write after the lease lapsed is refused).
                    Err(error) => tracing::warn!(%error, run, "could not renew a run's lease"),
                }
            }
            if let Err(error) = journal.release(&run, token).await {
                tracing::warn!(%error, run, "could not release a run's lease; it expires");
            }
        });
        Self {
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Stop renewing and release the lease, once it is released.
    pub async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        // Dropping the sender stops the task, which releases the lease.
        self.stop.take();
    }
}
