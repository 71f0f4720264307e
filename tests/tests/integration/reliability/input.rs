//! Unusual but valid input: a 1 MiB ConfigMap, names at the limits, unicode in values.

use std::collections::BTreeMap;

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use kubeward::cache::ObjectKey;
use kubeward::manager::Config;
use kubeward::testing::ControlPlane;
use tokio::time::Instant;

use super::summary::Row;
use super::witness::check;
use super::witnessed::{Witnessed, start_witnessed};
use super::writer::Writer;

/// The most a ConfigMap may hold: keys and values together, 1 MiB.
const MAX_CONFIG_MAP_BYTES: usize = 1024 * 1024;
const UNICODE: &str = "Grüße, 日本語, emoji 🦀, RTL עברית, and a\nnewline";

/// Creates the unusual objects, runs a controller over them, changes them all once and checks.
pub(super) async fn unusual_objects(cp: &ControlPlane) -> anyhow::Result<Vec<Row>> {
    let ns = cp.create_namespace("rel-input").await?;
    let api: Api<ConfigMap> = Api::namespaced(cp.client(), &ns);
    let objects = unusual();
    let names: Vec<String> = objects
        .iter()
        .filter_map(|cm| cm.metadata.name.clone())
        .collect();
    let created = Instant::now();
    futures::stream::iter(&objects)
        .map(|cm| async { api.create(&PostParams::default(), cm).await })
        .buffer_unordered(4)
        .try_collect::<Vec<_>>()
        .await?;

    let Witnessed {
        witness,
        cache,
        operator,
        ..
    } = start_witnessed(cp.client(), &ns, Config::default(), ("input", 2))?;
    let mut row = Row::new(
        format!(
            "bad input: a 1 MiB ConfigMap and {} unusual but valid names, labels and unicode values",
            objects.len() - 1
        ),
        "created (then: changed)",
    );
    let checked = check(
        "creating unusual objects",
        &api,
        &cache,
        &witness,
        &operator,
    )
    .await?;
    row.record(&checked, created.elapsed());

    let key = |name: &str| ObjectKey::new(Some(&ns), name);
    let big = cache
        .get(&key("one-mebibyte"))
        .ok_or_else(|| anyhow::anyhow!("the 1 MiB ConfigMap is not cached"))?;
    let size: usize = big
        .data
        .iter()
        .flatten()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    anyhow::ensure!(
        size == MAX_CONFIG_MAP_BYTES - 2,
        "the cached ConfigMap of 1 MiB less 2 bytes holds {size} bytes"
    );
    let odd = cache
        .get(&key("0-starts-with-a-digit"))
        .ok_or_else(|| anyhow::anyhow!("0-starts-with-a-digit is not cached"))?;
    anyhow::ensure!(
        odd.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("example.com/unicode"))
            .map(String::as_str)
            == Some(UNICODE),
        "the unicode annotation did not survive the round trip: {:?}",
        odd.metadata.annotations
    );

    // One change to every object (also the big one), then the same checks.
    let writer = Writer::start(&api, &names, 50, 2);
    let changed = Instant::now();
    writer.wait_written(names.len() as u64).await?;
    let written = writer.stop().await;
    let checked = check(
        "changing unusual objects",
        &api,
        &cache,
        &witness,
        &operator,
    )
    .await?;
    row.record(&checked, changed.elapsed());
    row.note(format!("{written} changes"));
    operator.stop().await?;
    Ok(vec![row])
}

/// The objects: each valid, each at an edge of what the API accepts.
fn unusual() -> Vec<ConfigMap> {
    let longest = format!(
        "{}.{}.{}.{}",
        "a".repeat(63),
        "b".repeat(63),
        "c".repeat(63),
        "d".repeat(61)
    );
    debug_assert_eq!(longest.len(), 253, "the longest ConfigMap name");
    let mut objects: Vec<ConfigMap> = [
        longest.as_str(),
        "0-starts-with-a-digit",
        "9",
        "x",
        "dots.in.the.name",
        "double--dash",
        "1.2.3",
    ]
    .into_iter()
    .map(odd)
    .collect();
    // Two bytes short of the limit, so that the writer's `round` may grow to two digits.
    let big = "x".repeat(MAX_CONFIG_MAP_BYTES - "big".len() - "round0".len() - 2);
    objects.push(ConfigMap {
        metadata: ObjectMeta {
            name: Some("one-mebibyte".into()),
            ..ObjectMeta::default()
        },
        data: Some(
            [
                ("big".to_owned(), big),
                ("round".to_owned(), "0".to_owned()),
            ]
            .into(),
        ),
        ..ConfigMap::default()
    });
    objects
}

/// A ConfigMap with the longest label key and value, an empty label value, unicode in an
/// annotation and a value, and a data key using every allowed punctuation mark.
fn odd(name: &str) -> ConfigMap {
    let labels = BTreeMap::from([
        (
            format!("{}.example.com/{}", "p".repeat(60), "k".repeat(63)),
            "v".repeat(63),
        ),
        ("empty".to_owned(), String::new()),
        ("digits".to_owned(), "0123".to_owned()),
    ]);
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels),
            annotations: Some(BTreeMap::from([(
                "example.com/unicode".to_owned(),
                UNICODE.to_owned(),
            )])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([
            ("a_b.c-D".to_owned(), UNICODE.to_owned()),
            ("round".to_owned(), "0".to_owned()),
        ])),
        ..ConfigMap::default()
    }
}
