//! External triggers: streams of keys fed into the queue of a controller's current term.

use futures::StreamExt as _;
use futures::stream::BoxStream;
use tokio::task::JoinSet;

use super::intake::Intake;
use super::why::{Reason, Trigger};
use crate::cache::ObjectKey;

/// A stream of keys to reconcile, from outside the controller's informers.
pub(crate) type Source = BoxStream<'static, ObjectKey>;

/// Forwards every source into `queue` until the source ends or the returned set is dropped; keys
/// that come between terms are dropped.
pub(crate) fn forward(sources: Vec<Source>, queue: &Intake) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    for mut source in sources {
        let queue = queue.clone();
        tasks.spawn(async move {
            while let Some(key) = source.next().await {
                queue.add(key, Trigger::bare(Reason::Stream));
            }
        });
    }
    tasks
}
