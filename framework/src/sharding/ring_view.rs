//! Shows a controller ring: each shard's Lease state and how many objects of each kind it holds.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{Timestamp, Unit};
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::{Api, Client, ResourceExt as _};

use super::{DEAD_LEASE_TTL, RING_LABEL, ShardState, lease_state, shard_label};

/// How many objects one list request reads, metadata only.
const PAGE: u32 = 500;

/// A controller ring as the API server shows it at one instant: its shards and their shares.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RingView {
    /// The ring's name.
    pub ring: String,
    /// The ring's kinds, by plural name, in the order of each row's counts.
    pub kinds: Vec<String>,
    /// One row per shard Lease of the ring, by shard id, then one per shard label value that
    /// has no Lease.
    pub shards: Vec<ShardRow>,
    /// The objects of each kind no shard is assigned to.
    pub unassigned: Vec<usize>,
}

/// One shard of a [`RingView`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardRow {
    /// The shard id: its Lease's name, and the value of the shard label on its objects.
    pub id: String,
    /// Its state, from its Lease; `None` for a shard label value with no Lease.
    pub state: Option<ShardState>,
    /// Its Lease's holder: the shard itself, or the sharder once it took the Lease over.
    pub holder: Option<String>,
    /// Its Lease's last renewal (or acquisition).
    pub renewed: Option<Timestamp>,
    /// The objects of each kind assigned to it (drained ones included), as [`RingView::kinds`].
    pub objects: Vec<usize>,
}

/// The view of `ring`, whose shard Leases are in `lease_namespace` and whose objects are of
/// `kinds` (with whether each is namespaced), counted in `namespaces` (all when empty).
///
/// The objects are read metadata-only, 500 at a time, and grouped by their shard label.
///
/// # Errors
/// A list the API server refuses (e.g. no permission to list a kind or the Leases).
pub async fn ring_view(
    client: &Client,
    lease_namespace: &str,
    ring: &str,
    kinds: &[(ApiResource, bool)],
    namespaces: &[String],
) -> Result<RingView, kube::Error> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), lease_namespace);
    let listed = leases
        .list(&ListParams::default().labels(&format!("{RING_LABEL}={ring}")))
        .await?;
    let now = Timestamp::now().as_microsecond();
    let mut shards: BTreeMap<String, ShardRow> = listed
        .items
        .iter()
        .map(|lease| {
            let spec = lease.spec.as_ref();
            let row = ShardRow {
                id: lease.name_any(),
                state: Some(lease_state(lease, now, DEAD_LEASE_TTL).0),
                holder: spec.and_then(|s| s.holder_identity.clone()),
                renewed: spec
                    .and_then(|s| s.renew_time.as_ref().or(s.acquire_time.as_ref()))
                    .map(|t| t.0),
                objects: vec![0; kinds.len()],
            };
            (row.id.clone(), row)
        })
        .collect();
    let mut unassigned = vec![0; kinds.len()];
    let label = shard_label(ring);
    for (index, (kind, namespaced)) in kinds.iter().enumerate() {
        let apis: Vec<Api<DynamicObject>> = if *namespaced && !namespaces.is_empty() {
            namespaces
                .iter()
                .map(|ns| Api::namespaced_with(client.clone(), ns, kind))
                .collect()
        } else {
            vec![Api::all_with(client.clone(), kind)]
        };
        for api in apis {
            let mut params = ListParams::default().limit(PAGE);
            loop {
                let page = api.list_metadata(&params).await?;
                for object in &page.items {
                    match object.labels().get(&label) {
                        Some(shard) => {
                            let row = shards.entry(shard.clone()).or_insert_with(|| ShardRow {
                                id: shard.clone(),
                                state: None,
                                holder: None,
                                renewed: None,
                                objects: vec![0; kinds.len()],
                            });
                            row.objects[index] += 1;
                        }
                        None => unassigned[index] += 1,
                    }
                }
                match page.metadata.continue_.filter(|c| !c.is_empty()) {
                    Some(token) => params = params.continue_token(&token),
                    None => break,
                }
            }
        }
    }
    Ok(RingView {
        ring: ring.to_owned(),
        kinds: kinds.iter().map(|(k, _)| k.plural.clone()).collect(),
        shards: shards.into_values().collect(),
        unassigned,
    })
}

impl RingView {
    /// The row of shard `id`, if the ring has it.
    #[must_use]
    pub fn shard(&self, id: &str) -> Option<&ShardRow> {
        self.shards.iter().find(|s| s.id == id)
    }
}

impl fmt::Display for RingView {
    /// A table: `RING`, `SHARD`, `STATE`, `HOLDER`, `RENEWED`, then one column per kind, and a
    /// last row `(unassigned)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rows = vec![
            ["RING", "SHARD", "STATE", "HOLDER", "RENEWED"]
                .into_iter()
                .map(str::to_owned)
                .chain(self.kinds.iter().map(|k| k.to_uppercase()))
                .collect::<Vec<_>>(),
        ];
        let dash = || "-".to_owned();
        for shard in &self.shards {
            rows.push(
                [
                    self.ring.clone(),
                    shard.id.clone(),
                    shard.state.map_or("no-lease".to_owned(), |s| s.to_string()),
                    shard
                        .holder
                        .clone()
                        .filter(|h| !h.is_empty())
                        .unwrap_or_else(dash),
                    shard
                        .renewed
                        .map_or_else(dash, |t| t.round(Unit::Second).unwrap_or(t).to_string()),
                ]
                .into_iter()
                .chain(shard.objects.iter().map(ToString::to_string))
                .collect(),
            );
        }
        rows.push(
            [
                self.ring.clone(),
                "(unassigned)".to_owned(),
                dash(),
                dash(),
                dash(),
            ]
            .into_iter()
            .chain(self.unassigned.iter().map(ToString::to_string))
            .collect(),
        );
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
            .collect();
        for row in rows {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:width$}"))
                .collect();
            writeln!(f, "{}", cells.join("  ").trim_end())?;
        }
        Ok(())
    }
}
