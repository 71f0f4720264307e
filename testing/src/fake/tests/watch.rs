//! Watches on the fake: ordering, selectors, bookmarks, 410 Gone and kube-runtime's watcher.

use super::*;

async fn next_event(
    stream: &mut (impl futures::Stream<Item = Result<WatchEvent<ConfigMap>, kube::Error>> + Unpin),
) -> (String, String) {
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => ("ADDED".into(), o.name_any()),
        Some(WatchEvent::Modified(o)) => ("MODIFIED".into(), o.name_any()),
        Some(WatchEvent::Deleted(o)) => ("DELETED".into(), o.name_any()),
        Some(WatchEvent::Bookmark(b)) => ("BOOKMARK".into(), b.metadata.resource_version),
        Some(WatchEvent::Error(e)) => ("ERROR".into(), e.code.to_string()),
        None => ("END".into(), String::new()),
    }
}

#[tokio::test]
async fn a_watch_from_a_resource_version_sees_only_later_events_in_order() {
    let fake = fake();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    configmaps
        .create(&PostParams::default(), &config_map("before", &[]))
        .await
        .unwrap();
    let from = fake.resource_version().to_string();
    configmaps
        .create(&PostParams::default(), &config_map("after", &[]))
        .await
        .unwrap();
    let params = WatchParams::default().disable_bookmarks();
    let mut events = configmaps.watch(&params, &from).await.unwrap().boxed();
    assert_eq!(
        next_event(&mut events).await,
        ("ADDED".into(), "after".into())
    );
    configmaps
        .delete("before", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        next_event(&mut events).await,
        ("DELETED".into(), "before".into())
    );
}

#[tokio::test]
async fn a_label_change_moves_an_object_in_and_out_of_a_selected_watch() {
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake().client());
    let params = WatchParams::default()
        .labels("tier=web")
        .disable_bookmarks();
    let mut events = configmaps.watch(&params, "0").await.unwrap().boxed();
    configmaps
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    let label = |tier: &str| Patch::Merge(json!({ "metadata": { "labels": { "tier": tier } } }));
    configmaps
        .patch("a", &PatchParams::default(), &label("web"))
        .await
        .unwrap();
    assert_eq!(next_event(&mut events).await, ("ADDED".into(), "a".into()));
    configmaps
        .patch("a", &PatchParams::default(), &label("db"))
        .await
        .unwrap();
    assert_eq!(
        next_event(&mut events).await,
        ("DELETED".into(), "a".into())
    );
}

#[tokio::test]
async fn a_watch_from_forgotten_history_gets_410_gone() {
    let fake = fake().with_history_limit(2);
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    for name in ["a", "b", "c", "d"] {
        configmaps
            .create(&PostParams::default(), &config_map(name, &[]))
            .await
            .unwrap();
    }
    let params = WatchParams::default().disable_bookmarks();
    let mut too_old = configmaps.watch(&params, "1").await.unwrap().boxed();
    assert_eq!(
        next_event(&mut too_old).await,
        ("ERROR".into(), "410".into())
    );
    let mut recent = configmaps.watch(&params, "3").await.unwrap().boxed();
    assert_eq!(next_event(&mut recent).await, ("ADDED".into(), "d".into()));

    fake.expire_next_watch();
    let mut expired = configmaps.watch(&params, "4").await.unwrap().boxed();
    assert_eq!(
        next_event(&mut expired).await,
        ("ERROR".into(), "410".into())
    );
    fake.compact();
    let mut compacted = configmaps.watch(&params, "3").await.unwrap().boxed();
    assert_eq!(
        next_event(&mut compacted).await,
        ("ERROR".into(), "410".into())
    );
}

#[tokio::test(start_paused = true)]
async fn watches_get_bookmarks_and_end_at_their_timeout() {
    let fake = fake().with_bookmark_interval(Duration::from_secs(5));
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    configmaps
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
    let params = WatchParams::default().timeout(12);
    let mut events = configmaps.watch(&params, "1").await.unwrap().boxed();
    let start = tokio::time::Instant::now();
    assert_eq!(
        next_event(&mut events).await,
        ("BOOKMARK".into(), "1".into())
    );
    assert_eq!(
        next_event(&mut events).await,
        ("BOOKMARK".into(), "1".into())
    );
    assert_eq!(next_event(&mut events).await, ("END".into(), String::new()));
    assert_eq!(start.elapsed(), Duration::from_secs(12));
}

#[tokio::test]
async fn dropped_watches_end_and_injected_faults_answer_once() {
    let fake = fake();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let params = WatchParams::default().disable_bookmarks();
    let mut events = configmaps.watch(&params, "0").await.unwrap().boxed();
    fake.drop_watches();
    assert_eq!(next_event(&mut events).await, ("END".into(), String::new()));

    fake.fail_next(Verb::Create, "configmaps", StatusCode::SERVICE_UNAVAILABLE);
    let failed = configmaps
        .create(&PostParams::default(), &config_map("a", &[]))
        .await;
    assert_eq!(api_status(failed), (503, "ServiceUnavailable".into()));
    configmaps
        .create(&PostParams::default(), &config_map("a", &[]))
        .await
        .unwrap();
}

#[tokio::test]
async fn kube_runtime_watchers_run_on_the_fake() {
    let fake = fake();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    configmaps
        .create(&PostParams::default(), &config_map("listed", &[]))
        .await
        .unwrap();
    let config = kube::runtime::watcher::Config::default();
    let mut objects = kube::runtime::watcher(configmaps.clone(), config).boxed();
    let mut seen = Vec::new();
    while let Some(event) = objects.try_next().await.unwrap() {
        match event {
            kube::runtime::watcher::Event::InitApply(o)
            | kube::runtime::watcher::Event::Apply(o) => {
                seen.push(o.name_any());
            }
            kube::runtime::watcher::Event::InitDone => {
                configmaps
                    .create(&PostParams::default(), &config_map("watched", &[]))
                    .await
                    .unwrap();
            }
            _ => {}
        }
        if seen.len() == 2 {
            break;
        }
    }
    assert_eq!(seen, ["listed", "watched"]);
}

/// The next watcher event, named, with errors named too (the watcher keeps going after them).
async fn next_watcher_event(
    events: &mut (
             impl futures::Stream<
        Item = Result<kube::runtime::watcher::Event<ConfigMap>, kube::runtime::watcher::Error>,
    > + Unpin
         ),
) -> String {
    use kube::runtime::watcher::Event;
    let next = tokio::time::timeout(Duration::from_secs(5), events.next()).await;
    match next.expect("a watcher event within 5 s") {
        Some(Ok(Event::Init)) => "init".into(),
        Some(Ok(Event::InitApply(o))) => format!("init-apply {}", o.name_any()),
        Some(Ok(Event::InitDone)) => "init-done".into(),
        Some(Ok(Event::Apply(o))) => format!("apply {}", o.name_any()),
        Some(Ok(Event::Delete(o))) => format!("delete {}", o.name_any()),
        Some(Err(_)) => "error".into(),
        None => "end".into(),
    }
}

#[tokio::test]
async fn a_kube_runtime_watcher_resumes_after_dropped_watches_and_relists_after_410_gone() {
    let fake = fake();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let post = PostParams::default();
    configmaps
        .create(&post, &config_map("a", &[]))
        .await
        .unwrap();
    let config = kube::runtime::watcher::Config::default();
    let mut events = kube::runtime::watcher(configmaps.clone(), config).boxed();
    for expected in ["init", "init-apply a", "init-done"] {
        assert_eq!(next_watcher_event(&mut events).await, expected);
    }

    fake.drop_watches();
    configmaps
        .create(&post, &config_map("b", &[]))
        .await
        .unwrap();
    assert_eq!(
        next_watcher_event(&mut events).await,
        "apply b",
        "resumed from its resourceVersion"
    );

    fake.expire_next_watch();
    fake.drop_watches();
    configmaps
        .create(&post, &config_map("c", &[]))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen.last().map(String::as_str) != Some("init-done") {
        seen.push(next_watcher_event(&mut events).await);
    }
    assert_eq!(
        seen,
        [
            "error",
            "init",
            "init-apply a",
            "init-apply b",
            "init-apply c",
            "init-done"
        ],
        "a 410 Gone makes the watcher list again"
    );
}

#[test]
fn the_fake_and_its_futures_can_be_shared_across_tasks() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    fn sendable<T: Send + 'static>(_: &T) {}
    shareable::<FakeApiServer>();
    let mut fake = FakeApiServer::new();
    let request = http::Request::new(kube::client::Body::empty());
    sendable(&tower_service::Service::call(&mut fake, request));
}

#[tokio::test]
async fn paused_watches_get_the_held_changes_in_order_on_resume_and_a_watch_opened_meanwhile_gets_none_twice()
 {
    let fake = fake();
    let configmaps: Api<ConfigMap> = Api::default_namespaced(fake.client());
    let params = WatchParams::default().disable_bookmarks();
    let mut before = configmaps.watch(&params, "0").await.unwrap().boxed();
    // A second watch: the held lines of two watches interleave, each keeping its own order.
    let mut also_before = configmaps.watch(&params, "0").await.unwrap().boxed();
    fake.pause_watches();
    for name in ["a", "b"] {
        configmaps
            .create(&PostParams::default(), &config_map(name, &[]))
            .await
            .unwrap();
    }
    // Absence can only be shown by waiting a while: nothing may arrive during the pause.
    let early = tokio::time::timeout(Duration::from_millis(300), next_event(&mut before)).await;
    assert!(
        early.is_err(),
        "a change arrived during the pause: {early:?}"
    );
    let mut meanwhile = configmaps.watch(&params, "0").await.unwrap().boxed();
    fake.resume_watches();
    configmaps
        .create(&PostParams::default(), &config_map("c", &[]))
        .await
        .unwrap();
    for events in [&mut before, &mut also_before, &mut meanwhile] {
        for name in ["a", "b", "c"] {
            assert_eq!(next_event(events).await, ("ADDED".into(), name.into()));
        }
    }
}
