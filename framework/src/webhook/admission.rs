//! Declares an admission webhook: a kind's validator or defaulter, its path, rules and policy.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, RuleWithOperations, ValidatingWebhook, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::core::admission::Operation;

use super::{Admissible, Defaulter, Route, Validator, review};

/// What the API server does when it cannot reach the webhook or gets no valid answer
/// (`failurePolicy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailurePolicy {
    /// Refuse the request (the default: nothing unchecked gets in).
    #[default]
    Fail,
    /// Admit the request as if the webhook were not there.
    Ignore,
}

/// Whether a webhook checks or changes objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Validating,
    Mutating,
}

/// An admission webhook for kind `K`: a [`Validator`] or a [`Defaulter`] served at
/// kubebuilder's path (`/validate-GROUP-VERSION-KIND`, `/mutate-...`, the group's dots as
/// dashes), with the rules, `failurePolicy` and `timeoutSeconds` its webhook configuration
/// declares. Give it to [`Manager::add_webhook`](crate::manager::Manager::add_webhook).
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kubeward::webhook::{Admission, FailurePolicy, Validator};
///
/// struct Anything;
/// impl Validator<ConfigMap> for Anything {}
///
/// let webhook = Admission::validator::<ConfigMap>(Anything)
///     .failure_policy(FailurePolicy::Ignore)
///     .timeout(std::time::Duration::from_secs(5));
/// assert_eq!(webhook.path(), "/validate--v1-configmap");
/// ```
#[derive(Clone, Debug)]
pub struct Admission {
    pub(crate) kind: Kind,
    pub(crate) name: String,
    pub(crate) route: Route,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) resource: String,
    pub(crate) operations: Vec<Operation>,
    pub(crate) failure_policy: FailurePolicy,
    pub(crate) timeout: Duration,
    pub(crate) namespace_selector: Option<LabelSelector>,
    pub(crate) object_selector: Option<LabelSelector>,
}

impl Admission {
    /// The validating webhook of `validator`, called on CREATE and UPDATE.
    #[must_use]
    pub fn validator<K: Admissible>(validator: impl Validator<K>) -> Self {
        let validator = Arc::new(validator);
        let path = path::<K>("validate");
        let route = Route::new(path, move |body| {
            let validator = Arc::clone(&validator);
            async move { review::validate::<K, _>(&*validator, &body).await }
        });
        Self::new::<K>(Kind::Validating, route)
    }

    /// The mutating webhook of `defaulter`, called on CREATE and UPDATE.
    #[must_use]
    pub fn defaulter<K: Admissible>(defaulter: impl Defaulter<K>) -> Self {
        let defaulter = Arc::new(defaulter);
        let path = path::<K>("mutate");
        let route = Route::new(path, move |body| {
            let defaulter = Arc::clone(&defaulter);
            async move { review::mutate::<K, _>(&*defaulter, &body).await }
        });
        Self::new::<K>(Kind::Mutating, route)
    }

    fn new<K: Admissible>(kind: Kind, route: Route) -> Self {
        let letter = match kind {
            Kind::Validating => 'v',
            Kind::Mutating => 'm',
        };
        Self {
            kind,
            name: format!(
                "{letter}{}-{}.kubeward.io",
                K::kind(&()).to_ascii_lowercase(),
                K::version(&())
            ),
            route,
            group: K::group(&()).into_owned(),
            version: K::version(&()).into_owned(),
            resource: K::plural(&()).into_owned(),
            operations: vec![Operation::Create, Operation::Update],
            failure_policy: FailurePolicy::default(),
            timeout: Duration::from_secs(10),
            namespace_selector: None,
            object_selector: None,
        }
    }

    /// The operations the API server sends to the webhook (default CREATE and UPDATE; add
    /// DELETE for [`Validator::validate_delete`]).
    #[must_use]
    pub fn operations(mut self, operations: impl IntoIterator<Item = Operation>) -> Self {
        self.operations = operations.into_iter().collect();
        self
    }

    /// What the API server does when the webhook cannot answer (default
    /// [`FailurePolicy::Fail`]).
    #[must_use]
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.failure_policy = policy;
        self
    }

    /// How long the API server waits for an answer, 1 to 30 s (default 10 s; clamped).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.clamp(Duration::from_secs(1), Duration::from_secs(30));
        self
    }

    /// Only objects in namespaces matching `selector` are sent (e.g. to exempt `kube-system`,
    /// or a test's own namespace via the `kubernetes.io/metadata.name` label).
    #[must_use]
    pub fn namespace_selector(mut self, selector: LabelSelector) -> Self {
        self.namespace_selector = Some(selector);
        self
    }

    /// Only objects whose labels match `selector` are sent (on UPDATE, when the old or the new
    /// object matches).
    #[must_use]
    pub fn object_selector(mut self, selector: LabelSelector) -> Self {
        self.object_selector = Some(selector);
        self
    }

    /// Served at `path` instead of kubebuilder's (for the framework's own webhooks: a shard's).
    #[cfg(feature = "sharding")]
    #[must_use]
    pub(crate) fn at(mut self, path: String) -> Self {
        self.route.path = path;
        self
    }

    /// The webhook's name in its configuration (default `vKIND-VERSION.kubeward.io`, `m...`
    /// for a defaulter); a fully qualified name with at least three labels.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The path the webhook is served at.
    #[must_use]
    pub fn path(&self) -> &str {
        self.route.path()
    }

    /// The rule of the configuration: this kind's group, version and resource, the operations.
    fn rule(&self) -> RuleWithOperations {
        RuleWithOperations {
            api_groups: Some(vec![self.group.clone()]),
            api_versions: Some(vec![self.version.clone()]),
            resources: Some(vec![self.resource.clone()]),
            operations: Some(
                self.operations
                    .iter()
                    .map(|o| {
                        serde_json::to_value(o)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default()
                    })
                    .collect(),
            ),
            scope: None,
        }
    }

    fn policy(&self) -> String {
        match self.failure_policy {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
        .to_owned()
    }

    fn timeout_seconds(&self) -> i32 {
        i32::try_from(self.timeout.as_secs()).unwrap_or(30)
    }

    /// Its entry in a ValidatingWebhookConfiguration, calling `client`.
    pub(crate) fn validating(&self, client: WebhookClientConfig) -> ValidatingWebhook {
        ValidatingWebhook {
            name: self.name.clone(),
            admission_review_versions: vec!["v1".into()],
            client_config: client,
            failure_policy: Some(self.policy()),
            namespace_selector: self.namespace_selector.clone(),
            object_selector: self.object_selector.clone(),
            rules: Some(vec![self.rule()]),
            side_effects: "None".into(),
            timeout_seconds: Some(self.timeout_seconds()),
            ..ValidatingWebhook::default()
        }
    }

    /// Its entry in a MutatingWebhookConfiguration, calling `client`.
    pub(crate) fn mutating(&self, client: WebhookClientConfig) -> MutatingWebhook {
        MutatingWebhook {
            name: self.name.clone(),
            admission_review_versions: vec!["v1".into()],
            client_config: client,
            failure_policy: Some(self.policy()),
            namespace_selector: self.namespace_selector.clone(),
            object_selector: self.object_selector.clone(),
            rules: Some(vec![self.rule()]),
            side_effects: "None".into(),
            timeout_seconds: Some(self.timeout_seconds()),
            ..MutatingWebhook::default()
        }
    }
}

/// kubebuilder's path of a `verb` webhook for `K`: `/validate-example-com-v1-widget`.
fn path<K: Admissible>(verb: &str) -> String {
    format!(
        "/{verb}-{}-{}-{}",
        K::group(&()).replace('.', "-"),
        K::version(&()),
        K::kind(&()).to_ascii_lowercase()
    )
}
