//! Whether an informer has synced, without its type: for waiting on informers of many kinds.

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Error, Result};

/// Tells when one informer's first complete list is stored; wakes on the change, never polls.
/// Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Synced {
    synced: watch::Receiver<bool>,
    shutdown: CancellationToken,
}

impl Synced {
    pub(crate) fn new(synced: watch::Receiver<bool>, shutdown: CancellationToken) -> Self {
        Self { synced, shutdown }
    }

    /// Waits until the first complete list is stored.
    ///
    /// # Errors
    /// [`Error::ShutDown`] if the informer is shut down first.
    pub(crate) async fn wait(&self) -> Result<()> {
        let mut synced = self.synced.clone();
        tokio::select! {
            result = synced.wait_for(|synced| *synced) => result.map(drop).map_err(|_| Error::ShutDown),
            () = self.shutdown.cancelled() => Err(Error::ShutDown),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With time paused, a waiter that polled on a timer would move the clock (tokio advances
    /// it to the next timer when every task is idle); one woken by the change does not.
    #[tokio::test(start_paused = true)]
    async fn a_waiter_wakes_on_the_sync_itself_and_moves_no_timer() {
        let (tx, rx) = watch::channel(false);
        let synced = Synced::new(rx, CancellationToken::new());
        let started = tokio::time::Instant::now();
        let syncing = tokio::spawn(async move {
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            tx.send_replace(true);
            tx
        });
        assert!(synced.wait().await.is_ok());
        assert_eq!(started.elapsed(), std::time::Duration::ZERO);
        drop(syncing.await);
    }

    #[tokio::test]
    async fn a_waiter_hears_of_a_shutdown_before_the_sync() {
        let (_tx, rx) = watch::channel(false);
        let shutdown = CancellationToken::new();
        let synced = Synced::new(rx, shutdown.clone());
        shutdown.cancel();
        assert!(matches!(synced.wait().await, Err(Error::ShutDown)));
    }
}
