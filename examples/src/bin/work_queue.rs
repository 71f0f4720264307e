//! The client-go worker loop on kubeward's work queue, without a cluster.
//!
//! `cargo run -p kubeward-examples --bin work_queue`: a key added three times is handed out once,
//! a failing key comes back after growing rate-limited delays, and a delayed key arrives late.

use std::time::Duration;

use kubeward::cli::{LogFormat, init_logging};
use kubeward::queue::WorkQueue;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// Fails `default/flaky` on its first two tries, as a reconcile that meets a conflict would.
fn process(key: &str, failures_so_far: u32) -> Result<(), String> {
    if key == "default/flaky" && failures_so_far < 2 {
        return Err(format!("conflict on try {}", failures_so_far + 1));
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    init_logging(LogFormat::Text, "info")?;
    let (finished, mut finished_rx) = mpsc::unbounded_channel();

    // ANCHOR: queue
    // client-go's default rate limiter: per key 5 ms doubling to 1000 s, overall 10 qps / 100 burst.
    let queue: WorkQueue<String> = WorkQueue::new();
    for key in ["default/web", "default/flaky", "default/web", "default/web"] {
        queue.add(key.to_owned()); // `default/web` waits once, however often it is added
    }
    queue.add_after("default/later".to_owned(), Duration::from_millis(100));

    let mut workers = JoinSet::new();
    for worker in 0..2 {
        let (queue, finished) = (queue.clone(), finished.clone());
        workers.spawn(async move {
            // `get` hands a key to one worker at a time; `None` once the queue has shut down.
            while let Some(key) = queue.get().await {
                match process(&key, queue.num_requeues(&key)) {
                    Ok(()) => {
                        tracing::info!(worker, key, "processed");
                        queue.forget(&key); // success: its failures are history
                        let _ = finished.send(key.clone());
                    }
                    Err(error) => {
                        tracing::warn!(worker, key, error, "failed; retrying with backoff");
                        queue.add_rate_limited(key.clone()); // 5 ms, then 10 ms, 20 ms, ...
                    }
                }
                queue.done(&key); // another worker may take this key now
            }
        });
    }
    // ANCHOR_END: queue

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let key = finished_rx.recv().await;
        seen.extend(key);
    }
    tokio::time::timeout(Duration::from_secs(5), queue.shutdown_with_drain()).await?;
    while workers.join_next().await.is_some() {}
    seen.sort();
    anyhow::ensure!(
        seen == ["default/flaky", "default/later", "default/web"],
        "each key is processed once to success, got {seen:?}"
    );
    tracing::info!(?seen, "every key processed once to success");
    Ok(())
}
