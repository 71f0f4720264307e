//! Streaming lists on the fake: initial events, their end, live events, 410 Gone and old servers.

use std::time::Duration;

use kube::runtime::watcher::Event;

use super::*;

const WAIT: Duration = Duration::from_secs(5);

/// The next event of a raw watch, named: `ADDED a`, `BOOKMARK 3 end` (with the end annotation).
async fn next_event(
    stream: &mut (impl futures::Stream<Item = Result<WatchEvent<ConfigMap>, kube::Error>> + Unpin),
) -> String {
    let next = tokio::time::timeout(WAIT, stream.try_next()).await;
    match next.expect("an event within 5 s").expect("a watch event") {
        Some(WatchEvent::Added(o)) => format!("ADDED {}", o.name_any()),
        Some(WatchEvent::Modified(o)) => format!("MODIFIED {}", o.name_any()),
        Some(WatchEvent::Deleted(o)) => format!("DELETED {}", o.name_any()),
        Some(WatchEvent::Bookmark(b)) => {
            let end = b.metadata.annotations.get("k8s.io/initial-events-end");
            match end.map(String::as_str) {
                Some("true") => format!("BOOKMARK {} end", b.metadata.resource_version),
                _ => format!("BOOKMARK {}", b.metadata.resource_version),
            }
        }
        Some(WatchEvent::Error(e)) => format!("ERROR {}", e.code),
        None => "END".into(),
    }
}

fn streaming() -> WatchParams {
    WatchParams::streaming_lists()
}

#[tokio::test]
async fn a_streaming_list_sends_every_object_then_the_annotated_bookmark_then_live_events() {
    let fake = fake();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    for name in ["b", "a", "c"] {
        fake.seed(&config_map(
            name,
            &[("tier", if name == "c" { "db" } else { "web" })],
        ))
        .unwrap();
    }
    let revision = fake.resource_version();
    let selected = streaming().labels("tier=web");
    let mut stream = configmaps.watch(&selected, "").await.unwrap().boxed();
    assert_eq!(next_event(&mut stream).await, "ADDED a");
    assert_eq!(next_event(&mut stream).await, "ADDED b");
    assert_eq!(
        next_event(&mut stream).await,
        format!("BOOKMARK {revision} end"),
        "the selector left c out, and the end bookmark carries the version of the state sent"
    );
    fake.seed(&config_map("d", &[("tier", "web")])).unwrap();
    configmaps
        .delete("a", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(next_event(&mut stream).await, "ADDED d");
    assert_eq!(next_event(&mut stream).await, "DELETED a");
}

#[tokio::test(start_paused = true)]
async fn a_stalled_stream_sends_bookmarks_without_the_end_and_an_expiry_ends_it_with_410() {
    let fake = fake().with_bookmark_interval(Duration::from_millis(10));
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    for name in ["a", "b", "c"] {
        fake.seed(&config_map(name, &[])).unwrap();
    }
    let revision = fake.resource_version();
    fake.stall_initial_events_after(1);
    let mut stream = configmaps.watch(&streaming(), "0").await.unwrap().boxed();
    assert_eq!(next_event(&mut stream).await, "ADDED a");
    assert_eq!(
        next_event(&mut stream).await,
        format!("BOOKMARK {revision}"),
        "a bookmark amid the initial events has no end annotation"
    );
    fake.expire_watches();
    assert_eq!(next_event(&mut stream).await, "ERROR 410");
    assert_eq!(next_event(&mut stream).await, "END");

    let mut stream = configmaps.watch(&streaming(), "").await.unwrap().boxed();
    assert_eq!(next_event(&mut stream).await, "ADDED a");
    fake.resume_initial_events();
    assert_eq!(next_event(&mut stream).await, "ADDED b");
    assert_eq!(next_event(&mut stream).await, "ADDED c");
    assert_eq!(
        next_event(&mut stream).await,
        format!("BOOKMARK {revision} end")
    );
}

#[tokio::test(start_paused = true)]
async fn objects_deleted_amid_the_initial_events_are_sent_as_at_the_start_then_deleted() {
    let fake = fake().with_bookmark_interval(Duration::from_millis(10));
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    for name in ["a", "b", "c"] {
        fake.seed(&config_map(name, &[])).unwrap();
    }
    let revision = fake.resource_version();
    fake.stall_initial_events_after(1);
    let mut stream = configmaps.watch(&streaming(), "").await.unwrap().boxed();
    assert_eq!(next_event(&mut stream).await, "ADDED a");
    // A streamed object, one not streamed yet, and one created after the stream opened.
    for name in ["a", "c"] {
        configmaps
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    fake.seed(&config_map("d", &[])).unwrap();
    configmaps
        .delete("d", &DeleteParams::default())
        .await
        .unwrap();
    fake.resume_initial_events();
    let mut events = Vec::new();
    while events.len() < 7 {
        let event = next_event(&mut stream).await;
        if event != format!("BOOKMARK {revision}") {
            events.push(event);
        }
    }
    assert_eq!(
        events,
        [
            "ADDED b".to_owned(),
            "ADDED c".to_owned(),
            format!("BOOKMARK {revision} end"),
            "DELETED a".to_owned(),
            "DELETED c".to_owned(),
            "ADDED d".to_owned(),
            "DELETED d".to_owned(),
        ],
        "the initial events are the state when the stream opened, as a real server's snapshot"
    );
}

#[tokio::test]
async fn streaming_lists_are_checked_as_a_1_27_server_checks_them_and_refused_by_an_old_one() {
    let fake = fake();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let request = kube::core::Request::new("/api/v1/namespaces/default/configmaps");
    let refused = |query: &str| {
        let request = http::Request::get(format!("{}?watch=true&{query}", request.url_path))
            .body(Vec::new())
            .unwrap();
        let client = fake.client();
        async move { api_status(client.request::<ConfigMap>(request).await) }
    };
    for query in [
        "sendInitialEvents=true&allowWatchBookmarks=true",
        "sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
        "resourceVersionMatch=NotOlderThan&resourceVersion=0",
    ] {
        assert_eq!(refused(query).await, (422, "Invalid".into()), "{query}");
    }

    let old = FakeApiServer::new().without_streaming_lists();
    old.register::<ConfigMap>();
    let on_old: Api<ConfigMap> = Api::default_namespaced(old.client());
    let answer = on_old.watch(&streaming(), "").await.map(|_| ());
    assert_eq!(api_status(answer), (422, "Invalid".into()));
    assert!(
        configmaps.watch(&WatchParams::default(), "0").await.is_ok()
            && on_old.watch(&WatchParams::default(), "0").await.is_ok(),
        "plain watches are served either way"
    );
}

#[tokio::test]
async fn kube_runtime_watchers_stream_their_lists_from_the_fake() {
    let fake = fake();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    fake.seed(&config_map("listed", &[])).unwrap();
    let config = kube::runtime::watcher::Config::default().streaming_lists();
    let mut events = kube::runtime::watcher(configmaps.clone(), config).boxed();
    let mut seen = Vec::new();
    while let Some(event) = tokio::time::timeout(WAIT, events.try_next())
        .await
        .expect("a watcher event within 5 s")
        .unwrap()
    {
        match event {
            Event::InitApply(o) => seen.push(format!("init-apply {}", o.name_any())),
            Event::Apply(o) => seen.push(format!("apply {}", o.name_any())),
            Event::InitDone => {
                seen.push("init-done".into());
                fake.seed(&config_map("watched", &[])).unwrap();
            }
            _ => {}
        }
        if seen.len() == 3 {
            break;
        }
    }
    assert_eq!(seen, ["init-apply listed", "init-done", "apply watched"]);
    assert_eq!(fake.open_watches(), 1, "one watch, no list");
}
