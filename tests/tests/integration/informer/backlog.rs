//! A backlog on a real API server's watch is gathered into batches and decoded off the
//! reflector's thread, and every change lands.

use std::collections::HashSet;
use std::thread::ThreadId;

use super::*;

const BACKLOG: usize = 2000;

/// One worker thread runs every task, the reflector's too; decoding ahead needs a multi-thread
/// runtime (on a current-thread one, every event is decoded on the reflector's task).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_watch_backlog_from_the_api_server_decodes_off_the_reflectors_thread_and_lands_whole()
-> anyhow::Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.create_namespace("inf-backlog").await?;
    let admin: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let proxy = TcpProxy::start(cp.apiserver_addr()).await?;
    let informer = SharedInformer::new(
        Api::<ConfigMap>::namespaced(cp.client_through(&proxy), &ns),
        quick_retries(),
    );
    let decoded_on: Arc<Mutex<HashSet<ThreadId>>> = Arc::default();
    let threads = Arc::clone(&decoded_on);
    informer.add_transform(move |_: &mut ConfigMap| {
        threads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(std::thread::current().id());
    })?;
    informer.start()?;
    tokio::time::timeout(SYNC, informer.wait_for_sync()).await??;

    // The server keeps the changes made while the connection is stalled, and sends them all at
    // once when it flows again: a backlog, several events to a chunk.
    proxy.stall();
    create_many(&admin, "b", BACKLOG).await?;
    proxy.restore();
    let store = informer.store();
    wait_for(SYNC, "every object of the backlog to be cached", || async {
        (store.len() == BACKLOG).then_some(())
    })
    .await?;
    let worker = tokio::spawn(async { std::thread::current().id() }).await?;
    let decoded_on = decoded_on
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    assert!(
        decoded_on.iter().any(|thread| *thread != worker),
        "no event of the backlog was decoded off the reflector's thread"
    );
    informer.shutdown().await;
    Ok(())
}
