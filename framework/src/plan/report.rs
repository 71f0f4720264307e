//! What a plan found: the objects it would change, what it reconciled, what failed; as text or JSON.

use std::fmt;

use http::Method;
use serde::Serialize;
use serde_json::Value;

use super::diff::{changed_fields, without_noise};
use super::dry_run::Write;
use super::{Action, Change, FieldChange};

/// What an operator would do to the cluster, found by reconciling every object once with every
/// write a dry run: see [`Manager::plan`](crate::manager::Manager::plan).
///
/// Its [`Display`](fmt::Display) is the text the `plan` command prints; [`Self::to_json`] the
/// JSON of `plan -o json`; [`Self::exit_code`] the command's exit code.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Plan {
    /// The objects that would be created, changed or deleted, in the order first written.
    pub changes: Vec<Change>,
    /// Writes the API server refused in the dry run (the reconcile may have gone on).
    pub refused: Vec<Refusal>,
    /// Reconciles that failed, and controllers whose pass could not run.
    pub failures: Vec<Failure>,
    /// How many objects were reconciled, over all controllers.
    pub reconciled: usize,
    /// How many objects were left alone because they are paused.
    pub paused: usize,
    /// The controllers planned.
    pub controllers: Vec<String>,
    /// Event writes that were sent as dry runs, so not recorded.
    pub events_not_recorded: usize,
}

/// A write the API server refused in the dry run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Refusal {
    /// The HTTP method and path of the write.
    pub request: String,
    /// The API server's HTTP status code.
    pub code: u16,
    /// Its message.
    pub message: String,
}

/// A reconcile that failed, or a controller whose pass could not run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Failure {
    /// The controller.
    pub controller: String,
    /// The object (`namespace/name`); `None` when the whole pass failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// The error and its causes, `: `-separated.
    pub error: String,
}

impl Failure {
    pub(crate) fn new(controller: &str, object: Option<String>, error: String) -> Self {
        Self {
            controller: controller.to_owned(),
            object,
            error,
        }
    }
}

/// The exit code of a plan that would change nothing.
pub const NOTHING_TO_DO: i32 = 0;
/// The exit code of a plan that failed somewhere: it is incomplete.
pub const FAILED: i32 = 1;
/// The exit code of a plan that would change something.
pub const CHANGES: i32 = 2;

impl Plan {
    /// Whether anything would be created, changed or deleted.
    #[must_use]
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    /// The `plan` command's exit code: [`FAILED`] (1) when a reconcile or a controller's
    /// pass failed, else [`CHANGES`] (2) when something would change, else [`NOTHING_TO_DO`] (0).
    #[must_use]
    pub fn exit_code(&self) -> i32 {
        if !self.failures.is_empty() {
            FAILED
        } else if self.has_changes() {
            CHANGES
        } else {
            NOTHING_TO_DO
        }
    }

    /// How many objects would be created, updated and deleted.
    #[must_use]
    pub fn counts(&self) -> (usize, usize, usize) {
        let count = |action| self.changes.iter().filter(|c| c.action == action).count();
        (
            count(Action::Create),
            count(Action::Update),
            count(Action::Delete),
        )
    }

    /// The plan as JSON (`plan -o json`): these fields, camelCase, with `dryRun: true` and a
    /// `summary` of the counts.
    #[must_use]
    pub fn to_json(&self) -> Value {
        let mut json = serde_json::to_value(self).unwrap_or_default();
        let (create, update, delete) = self.counts();
        if let Value::Object(map) = &mut json {
            map.insert("dryRun".to_owned(), Value::Bool(true));
            map.insert(
                "summary".to_owned(),
                serde_json::json!({"create": create, "update": update, "delete": delete}),
            );
        }
        json
    }

    /// The summary line: `Plan: 0 to create, 10 to update, 0 to delete.` with what was
    /// reconciled.
    #[must_use]
    pub fn summary(&self) -> String {
        let (create, update, delete) = self.counts();
        let controllers = match self.controllers.len() {
            1 => "1 controller".to_owned(),
            n => format!("{n} controllers"),
        };
        format!(
            "Plan: {create} to create, {update} to update, {delete} to delete \
             ({} reconciled by {controllers}, {} paused, {} failed).",
            self.reconciled,
            self.paused,
            self.failures.len()
        )
    }

    /// Adds the changes `writes` would make (their diffs against the live objects, several
    /// writes of one object merged) and the refusals among them.
    pub(crate) fn add_writes(&mut self, writes: Vec<Write>) {
        for write in writes {
            if !write.status.is_success() {
                self.refused.push(refusal(&write));
                continue;
            }
            if let Some(change) = change_of(&write) {
                self.merge(change);
            }
        }
        self.changes
            .retain(|c| c.action != Action::Update || !c.fields.is_empty());
    }

    /// Adds `change`, merged into an earlier change of the same object: a later write's value
    /// of a field wins; a delete wins over the rest.
    fn merge(&mut self, change: Change) {
        let same = |c: &&mut Change| {
            (&c.api_version, &c.kind, &c.namespace, &c.name)
                == (
                    &change.api_version,
                    &change.kind,
                    &change.namespace,
                    &change.name,
                )
        };
        let Some(earlier) = self.changes.iter_mut().find(same) else {
            self.changes.push(change);
            return;
        };
        if change.action == Action::Delete {
            *earlier = change;
            return;
        }
        for field in change.fields {
            match earlier.fields.iter_mut().find(|f| f.path == field.path) {
                Some(known) => known.after = field.after,
                None => earlier.fields.push(field),
            }
        }
        earlier.fields.sort_by(|a, b| a.path.cmp(&b.path));
    }
}

/// The change a successful dry-run `write` shows; `None` when its answer is no object.
fn change_of(write: &Write) -> Option<Change> {
    let answer = &write.answer;
    let object = if write.method == Method::DELETE {
        write.live.as_ref().unwrap_or(answer)
    } else {
        answer
    };
    let text = |value: &Value| value.as_str().map(str::to_owned);
    let name = text(&object["metadata"]["name"]).or_else(|| write.target.name.clone())?;
    let kind = text(&object["kind"])?;
    let api_version = text(&object["apiVersion"]).unwrap_or_default();
    let (action, fields) = match (&write.live, write.method == Method::DELETE) {
        (_, true) => (Action::Delete, Vec::new()),
        (None, false) => {
            let nothing = serde_json::json!({"metadata": {}});
            (Action::Create, changed_fields(&nothing, &created(answer)))
        }
        (Some(live), false) => (Action::Update, changed_fields(live, answer)),
    };
    Some(Change {
        action,
        api_version,
        kind,
        namespace: write.target.namespace.clone(),
        name,
        fields,
    })
}

/// What a create would set (`data`, `spec`, `metadata.labels`, ...): the object without noise,
/// its name, namespace, kind and version, to diff against an empty one.
fn created(answer: &Value) -> Value {
    let mut object = without_noise(answer);
    if let Value::Object(map) = &mut object {
        map.remove("apiVersion");
        map.remove("kind");
        if let Some(Value::Object(meta)) = map.get_mut("metadata") {
            meta.remove("name");
            meta.remove("namespace");
        }
    }
    object
}

fn refusal(write: &Write) -> Refusal {
    let target = &write.target;
    let name = target.name.clone().unwrap_or_default();
    let mut path = target.object_path(&name);
    if let Some(sub) = &target.subresource {
        path = format!("{path}/{sub}");
    }
    Refusal {
        request: format!("{} {}", write.method, path.trim_end_matches('/')),
        code: write.status.as_u16(),
        message: write.answer["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    }
}

impl fmt::Display for Plan {
    /// The plan as the `plan` command prints it: a header saying nothing was written, one
    /// block per object (`+` create, `~` update with `path: before -> after` lines, `-`
    /// delete), refusals and failures, and the summary line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Dry run: every write was sent with dryRun=All; nothing was written, no Lease \
             was taken and no Event was recorded."
        )?;
        for change in &self.changes {
            let sign = match change.action {
                Action::Create => '+',
                Action::Update => '~',
                Action::Delete => '-',
            };
            let action = format!("{:?}", change.action).to_lowercase();
            writeln!(f, "\n{sign} {action} {} {}", change.kind, change.object())?;
            for field in &change.fields {
                writeln!(f, "    {}", field_line(field))?;
            }
        }
        for refused in &self.refused {
            writeln!(
                f,
                "\n! refused {} ({}): {}",
                refused.request, refused.code, refused.message
            )?;
        }
        for failure in &self.failures {
            let object = failure.object.as_deref().unwrap_or("(the whole pass)");
            writeln!(
                f,
                "\n! failed {} {object}: {}",
                failure.controller, failure.error
            )?;
        }
        if self.events_not_recorded > 0 {
            writeln!(
                f,
                "\n{} Events were not recorded.",
                self.events_not_recorded
            )?;
        }
        writeln!(f, "\n{}", self.summary())
    }
}

/// `path: before -> after`, `path: + after` or `path: - before`, values as compact JSON.
fn field_line(field: &FieldChange) -> String {
    let json = |v: &Value| v.to_string();
    match (&field.before, &field.after) {
        (Some(before), Some(after)) => {
            format!("{}: {} -> {}", field.path, json(before), json(after))
        }
        (None, Some(after)) => format!("{}: + {}", field.path, json(after)),
        (Some(before), None) => format!("{}: - {}", field.path, json(before)),
        (None, None) => field.path.clone(),
    }
}

#[cfg(test)]
mod tests {
    use http::StatusCode;
    use serde_json::json;

    use super::super::dry_run::Target;
    use super::*;

    fn write(method: Method, path: &str, live: Option<Value>, answer: Value) -> Write {
        let status = if live.is_none() && method != Method::DELETE {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        Write {
            method,
            target: Target::of(path).expect("a resource path"),
            live,
            status,
            answer,
        }
    }

    fn config_map(name: &str, content: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "ns", "resourceVersion": "5"},
               "data": {"content": content}})
    }

    #[test]
    fn unchanged_writes_are_left_out_and_a_drift_is_one_update_with_its_field() {
        let path = "/api/v1/namespaces/ns/configmaps/";
        let mut plan = Plan::default();
        plan.add_writes(vec![
            write(
                Method::PATCH,
                &format!("{path}same"),
                Some(config_map("same", "1")),
                config_map("same", "1"),
            ),
            write(
                Method::PATCH,
                &format!("{path}drifted"),
                Some(config_map("drifted", "by hand")),
                config_map("drifted", "2"),
            ),
        ]);
        assert_eq!(plan.changes.len(), 1);
        let change = &plan.changes[0];
        assert_eq!(
            (change.action, change.object()),
            (Action::Update, "ns/drifted".to_owned())
        );
        assert_eq!(
            change.fields,
            vec![FieldChange::new(
                "data.content".into(),
                Some(json!("by hand")),
                Some(json!("2"))
            )]
        );
        assert_eq!(plan.exit_code(), CHANGES);
    }

    #[test]
    fn two_writes_of_one_object_merge_and_a_create_lists_its_fields() {
        let mut plan = Plan::default();
        let owner = "/apis/demo.kubeward.dev/v1/namespaces/ns/configmapgenerators/g";
        let live = json!({"apiVersion": "demo.kubeward.dev/v1", "kind": "ConfigMapGenerator",
                          "metadata": {"name": "g"}, "spec": {"content": "1"}});
        let mut finalized = live.clone();
        finalized["metadata"]["finalizers"] = json!(["demo.kubeward.dev/cleanup"]);
        let mut with_status = live.clone();
        with_status["status"] = json!({"configMap": "g-generated"});
        plan.add_writes(vec![
            write(Method::PATCH, owner, Some(live.clone()), finalized),
            write(
                Method::POST,
                "/api/v1/namespaces/ns/configmaps",
                None,
                config_map("g-generated", "1"),
            ),
            write(
                Method::PATCH,
                &format!("{owner}/status"),
                Some(live),
                with_status,
            ),
        ]);
        let paths: Vec<(Action, Vec<&str>)> = plan
            .changes
            .iter()
            .map(|c| (c.action, c.fields.iter().map(|f| f.path.as_str()).collect()))
            .collect();
        assert_eq!(
            paths,
            vec![
                (Action::Update, vec!["metadata.finalizers", "status"]),
                (Action::Create, vec!["data"]),
            ]
        );
    }

    #[test]
    fn a_refused_write_is_listed_and_a_failure_makes_the_exit_code_one() {
        let mut plan = Plan::default();
        let mut refused = write(
            Method::POST,
            "/api/v1/namespaces/ns/configmaps",
            None,
            json!({"kind": "Status", "message": "configmaps \"a\" already exists", "code": 409}),
        );
        refused.status = StatusCode::CONFLICT;
        plan.add_writes(vec![refused]);
        assert_eq!(plan.exit_code(), NOTHING_TO_DO);
        assert_eq!(
            plan.refused[0].request,
            "POST /api/v1/namespaces/ns/configmaps"
        );
        plan.failures
            .push(Failure::new("c", Some("ns/a".into()), "boom".into()));
        assert_eq!(plan.exit_code(), FAILED);
    }

    #[test]
    fn the_text_shows_each_object_its_fields_and_a_summary_and_the_json_has_counts() {
        let mut plan = Plan {
            reconciled: 3,
            controllers: vec!["configmap-generator".into()],
            ..Plan::default()
        };
        plan.add_writes(vec![
            write(
                Method::PATCH,
                "/api/v1/namespaces/ns/configmaps/a",
                Some(config_map("a", "x")),
                config_map("a", "y"),
            ),
            write(
                Method::DELETE,
                "/api/v1/namespaces/ns/configmaps/b",
                Some(config_map("b", "x")),
                json!({"kind": "Status", "status": "Success"}),
            ),
        ]);
        let text = plan.to_string();
        let expected = "Dry run: every write was sent with dryRun=All; nothing was written, no \
                        Lease was taken and no Event was recorded.\n\
                        \n~ update ConfigMap ns/a\n    data.content: \"x\" -> \"y\"\n\
                        \n- delete ConfigMap ns/b\n\
                        \nPlan: 0 to create, 1 to update, 1 to delete (3 reconciled by 1 \
                        controller, 0 paused, 0 failed).\n";
        assert_eq!(text, expected);
        let json = plan.to_json();
        assert_eq!(
            json["summary"],
            json!({"create": 0, "update": 1, "delete": 1})
        );
        assert_eq!(json["dryRun"], json!(true));
        assert_eq!(
            json["changes"][0]["fields"][0]["path"],
            json!("data.content")
        );
        assert_eq!(json["changes"][1]["action"], json!("delete"));
    }
}
