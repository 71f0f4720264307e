//! Parses the operator's command line, with controller-runtime's flag names.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use super::Command;
use super::duration::parse_duration;
use crate::informer::{self, CacheScope, WatchList};
use crate::leader;
use crate::manager::{Config, Error, LeaderElection, OnLeadershipLoss};
use crate::process::program::program_object_name;
use crate::serving::{BindAddress, Endpoints};

/// The command-line flags every kubeward operator understands, named as in controller-runtime and
/// kubebuilder; each can also be set through the environment variable shown in `--help`.
///
/// Embed it in your own `clap` parser with `#[command(flatten)]`, or let
/// [`Operator::from_args`](super::Operator::from_args) parse it alone.
#[derive(Clone, Debug, Parser)]
#[command(about = "A Kubernetes operator built with kubeward", long_about = None)]
#[non_exhaustive]
pub struct Flags {
    /// Address the /metrics endpoint binds to (`:8080`, `127.0.0.1:8080`); `0` turns it off.
    #[arg(long, env = "KUBEWARD_METRICS_BIND_ADDRESS", default_value = ":8080", value_parser = parse_bind_address)]
    pub metrics_bind_address: BindAddress,

    /// Serve /metrics over HTTPS, only to callers whose bearer token may `get` `/metrics`
    /// (checked with `TokenReview` and `SubjectAccessReview`); `--metrics-secure=false` turns it off.
    #[cfg(feature = "tls")]
    #[arg(long, env = "KUBEWARD_METRICS_SECURE", num_args = 0..=1, require_equals = true, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub metrics_secure: bool,

    /// Let the HTTPS servers (secure metrics, webhooks) speak HTTP/2 too; off, they speak
    /// HTTP/1.1 only, out of reach of HTTP/2's stream-reset floods (CVE-2023-44487).
    #[cfg(feature = "tls")]
    #[arg(long, env = "KUBEWARD_ENABLE_HTTP2", num_args = 0..=1, require_equals = true, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub enable_http2: bool,

    /// Folder holding `tls.crt` and `tls.key` for secure metrics, reloaded when they change; when
    /// unset, a self-signed certificate is made at start.
    #[cfg(feature = "tls")]
    #[arg(long, env = "KUBEWARD_METRICS_CERT_DIR", value_name = "DIR")]
    pub metrics_cert_dir: Option<PathBuf>,

    /// Address the /healthz and /readyz endpoints bind to; `0` turns them off.
    #[arg(long, env = "KUBEWARD_HEALTH_PROBE_BIND_ADDRESS", default_value = ":8081", value_parser = parse_bind_address)]
    pub health_probe_bind_address: BindAddress,

    /// Run controllers only while holding the leader-election Lease.
    #[arg(long, env = "KUBEWARD_LEADER_ELECT")]
    pub leader_elect: bool,

    /// Name of the leader-election Lease; by default this program's name with `-leader`, so
    /// that two operators in one namespace never share a Lease (and never wait on each other).
    #[arg(
        long,
        env = "KUBEWARD_LEADER_ELECTION_ID",
        default_value_t = default_lease_name(),
        value_name = "NAME"
    )]
    pub leader_election_id: String,

    /// Namespace of the leader-election Lease; defaults to the pod's namespace.
    #[arg(long, env = "KUBEWARD_LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,

    /// How long a Lease is valid after its last renewal (`15s`, `1m`, `500ms`).
    #[arg(long, env = "KUBEWARD_LEADER_ELECTION_LEASE_DURATION", default_value = "15s", value_parser = parse_duration)]
    pub leader_election_lease_duration: Duration,

    /// How long the leader keeps trying to renew before it stops leading.
    #[arg(long, env = "KUBEWARD_LEADER_ELECTION_RENEW_DEADLINE", default_value = "10s", value_parser = parse_duration)]
    pub leader_election_renew_deadline: Duration,

    /// How often candidates try to acquire and the leader renews.
    #[arg(long, env = "KUBEWARD_LEADER_ELECTION_RETRY_PERIOD", default_value = "2s", value_parser = parse_duration)]
    pub leader_election_retry_period: Duration,

    /// What a leader does when it loses the Lease: `exit` (the process ends and restarts), or
    /// `standby` (stop the controllers, keep the caches warm, and campaign again).
    #[arg(long, env = "KUBEWARD_LEADER_ELECTION_ON_LOSS", value_enum, default_value_t = OnLeadershipLoss::Exit)]
    pub leader_election_on_loss: OnLeadershipLoss,

    /// Watch only these namespaces (`a,b`, or the flag repeated); all namespaces when unset.
    /// `--namespace` is another name for it.
    #[arg(
        long,
        alias = "namespace",
        env = "KUBEWARD_WATCH_NAMESPACES",
        value_delimiter = ',',
        value_name = "NAMESPACES"
    )]
    pub watch_namespaces: Vec<String>,

    /// How informers get their initial state: `off` (paginated lists), `on` (streaming lists,
    /// Kubernetes 1.27 with the `WatchList` feature, default from 1.32) or `auto` (streaming
    /// lists, falling back to paginated lists once if the server refuses them).
    #[arg(long, env = "KUBEWARD_WATCH_LIST", value_enum, default_value_t = WatchList::Off)]
    pub watch_list: WatchList,

    /// Reconciles run at once per controller, unless a controller sets its own.
    #[arg(long, env = "KUBEWARD_MAX_CONCURRENT_RECONCILES", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_concurrent_reconciles: u16,

    /// How long in-flight reconciles may take to finish after SIGTERM (`30s`, `2m`; a bare
    /// number is seconds).
    #[arg(long, env = "KUBEWARD_GRACEFUL_SHUTDOWN_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub graceful_shutdown_timeout: Duration,

    /// Ping a connection to the API server that has read nothing this long (HTTP/2), and close
    /// it when the ping is not answered within --http2-ping-timeout, so that a connection that
    /// died without a word fails its watches within both; `0` turns pings off.
    #[arg(long, env = "KUBEWARD_HTTP2_READ_IDLE_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub http2_read_idle_timeout: Duration,

    /// How long a ping to the API server may go unanswered before its connection is closed.
    #[arg(long, env = "KUBEWARD_HTTP2_PING_TIMEOUT", default_value = "15s", value_parser = parse_duration)]
    pub http2_ping_timeout: Duration,

    /// Log format.
    #[arg(long, env = "KUBEWARD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log level or filter (`info`, `debug`, `kubeward=debug,info`).
    #[arg(long, env = "KUBEWARD_LOG_LEVEL", default_value = "info", value_parser = parse_log_level)]
    pub log_level: String,

    /// Kubeconfig file to use; when unset, `KUBECONFIG`, `~/.kube/config`, or the in-cluster
    /// service account.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use; when unset, the kubeconfig's current context.
    #[arg(long, env = "KUBEWARD_CONTEXT", value_name = "NAME")]
    pub context: Option<String>,

    /// The webhook server's flags (`--webhook-*`).
    #[cfg(feature = "webhooks")]
    #[command(flatten)]
    pub webhook: super::WebhookFlags,

    /// The flags of a run as a shard (`--shard-*`).
    #[cfg(feature = "sharding")]
    #[command(flatten)]
    pub shard: super::ShardFlags,

    /// `crd` or `manifests`: print or write the operator's manifests instead of running it;
    /// `shards`: print its controller rings.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl Flags {
    /// The manager configuration these flags describe.
    ///
    /// # Errors
    /// [`Error::InvalidFlags`] for leader-election timings that do not fit together, or a log
    /// filter that does not parse (clap refuses one, but the field may be set after parsing).
    pub fn config(&self) -> Result<Config, Error> {
        tracing_subscriber::EnvFilter::try_new(&self.log_level)
            .map_err(|e| Error::InvalidFlags(format!("--log-level: {e}")))?;
        let election = self.election_timings()?;
        #[cfg(feature = "tls")]
        if self.metrics_secure
            && self.metrics_bind_address != BindAddress::Off
            && self.metrics_bind_address == self.health_probe_bind_address
        {
            return Err(Error::InvalidFlags(
                "--metrics-secure: /metrics is served over HTTPS and the health probes over plain \
                 HTTP, so --metrics-bind-address and --health-probe-bind-address must differ"
                    .into(),
            ));
        }
        if self.max_concurrent_reconciles == 0 {
            return Err(Error::InvalidFlags(
                "--max-concurrent-reconciles: 0 is not in 1..=65535".into(),
            ));
        }
        let cache = CacheScope::default().namespaces(
            self.watch_namespaces
                .iter()
                .filter(|ns| !ns.is_empty())
                .cloned(),
        );
        cache
            .check()
            .map_err(|e| Error::InvalidFlags(format!("--watch-namespaces: {e}")))?;
        let election = self.leader_elect.then(|| {
            LeaderElection::new(
                &self.leader_election_id,
                self.leader_election_namespace.clone(),
                election,
            )
            .on_loss(self.leader_election_on_loss)
        });
        let config = Config::default()
            .leader_election(election)
            .max_concurrent_reconciles(self.max_concurrent_reconciles)
            .graceful_shutdown_timeout(self.graceful_shutdown_timeout)
            .api_health_checks(self.http2_read_idle_timeout, self.http2_ping_timeout)
            .cache(cache)
            .informers(informer::Config::default().watch_list(self.watch_list));
        #[cfg(feature = "tls")]
        let config = config.enable_http2(self.enable_http2);
        #[cfg(feature = "webhooks")]
        let config = config.webhook(self.webhook.config());
        Ok(config)
    }

    /// The shard of a controller ring these flags run this replica as (`--shard-ring`,
    /// `--shard-id`), holding its Lease with the leader-election timings; the operator adds it
    /// to its manager unless a [`Command`] runs instead.
    ///
    /// # Errors
    /// [`Error::InvalidFlags`] for a shard id without its ring, a ring or id that cannot name a
    /// Lease, or leader-election timings that do not fit together.
    #[cfg(feature = "sharding")]
    pub fn shard(&self) -> Result<Option<crate::shard::Shard>, Error> {
        let timings = self.election_timings()?;
        (self.shard).shard(self.leader_election_namespace.clone(), &timings)
    }

    /// The leader-election timings, checked.
    fn election_timings(&self) -> Result<leader::Config, Error> {
        let election = leader::Config::default()
            .lease_duration(self.leader_election_lease_duration)
            .renew_deadline(self.leader_election_renew_deadline)
            .retry_period(self.leader_election_retry_period);
        election
            .validate()
            .map_err(|e| Error::InvalidFlags(format!("--leader-election-*: {e}")))?;
        Ok(election)
    }

    /// Where the probes and metrics are served (`--metrics-bind-address`,
    /// `--health-probe-bind-address`, `--metrics-secure`, `--metrics-cert-dir`); the operator
    /// adds them to its manager unless a [`Command`] runs instead.
    pub fn endpoints(&self) -> Endpoints {
        let endpoints = Endpoints::new()
            .metrics(self.metrics_bind_address)
            .health_probes(self.health_probe_bind_address);
        #[cfg(feature = "tls")]
        if self.metrics_secure {
            return endpoints.secure_metrics(self.metrics_cert_dir.clone());
        }
        endpoints
    }

    /// [`Self::config`], and, unless a [`Command`] runs instead of the operator,
    /// that `--kubeconfig` reads and `--context` exists: everything clap cannot check alone.
    pub(crate) fn checked_config(&self) -> Result<Config, Error> {
        let config = self.config()?;
        // `crd` and `manifests` never talk to a cluster, so its configuration does not matter.
        if self.command.as_ref().is_none_or(Command::needs_cluster) {
            super::kubeconfig::check_kubeconfig(
                self.kubeconfig.as_deref(),
                self.context.as_deref(),
            )?;
        }
        Ok(config)
    }
}

/// Ends the process on [`Error::InvalidFlags`] and [`Error::NoClientConfig`] the way clap ends
/// it on a bad flag: the mistake on one line, exit code 2. Any other error is handed back.
pub(super) fn exit_if_invalid(error: Error) -> Error {
    if let Error::InvalidFlags(_) | Error::NoClientConfig(_) = error {
        clap::Error::raw(
            clap::error::ErrorKind::ValueValidation,
            format!("{error}\n"),
        )
        .exit();
    }
    error
}

/// Parses `0` (off), `:PORT` (all interfaces) or `HOST:PORT`; the error names the accepted forms.
fn parse_bind_address(value: &str) -> Result<BindAddress, String> {
    if value == "0" {
        return Ok(BindAddress::Off);
    }
    let full = if value.starts_with(':') {
        format!("0.0.0.0{value}")
    } else {
        value.to_owned()
    };
    full.parse().map(BindAddress::On).map_err(|_| {
        format!("`{value}` is not an address; use `:PORT`, `HOST:PORT` or `0` to turn it off")
    })
}

/// Checks that `value` parses as a log filter (a level, or directives such as
/// `kubeward=debug,info`).
fn parse_log_level(value: &str) -> Result<String, String> {
    tracing_subscriber::EnvFilter::try_new(value)
        .map(|_| value.to_owned())
        .map_err(|e| format!("`{value}` is not a log level or filter: {e}"))
}

/// The leader-election Lease an operator uses unless told otherwise: one per program, so that two
/// operators in one namespace never share one (`configmap-generator-leader`).
fn default_lease_name() -> String {
    format!("{}-leader", program_object_name())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn defaults_match_controller_runtime() {
        let flags = Flags::try_parse_from(["op"]).unwrap();
        assert_eq!(
            flags.metrics_bind_address,
            BindAddress::On("0.0.0.0:8080".parse().unwrap())
        );
        assert_eq!(
            flags.health_probe_bind_address,
            BindAddress::On("0.0.0.0:8081".parse().unwrap())
        );
        assert!(!flags.leader_elect);
        assert_eq!(flags.max_concurrent_reconciles, 1);
        assert_eq!(flags.log_format, LogFormat::Text);
    }

    #[test]
    fn webhook_flags_default_to_controller_runtime_and_hosts_split_on_commas() {
        let flags = Flags::try_parse_from(["op"]).unwrap();
        let config = flags.config().unwrap().webhook;
        assert_eq!(config.port, 9443);
        assert_eq!(
            config.cert_dir,
            PathBuf::from("/tmp/k8s-webhook-server/serving-certs")
        );
        assert!(!config.self_signed && config.hosts.is_empty() && config.url.is_none());
        let flags = Flags::try_parse_from([
            "op",
            "--webhook-port=0",
            "--webhook-self-signed",
            "--webhook-host=a.example,127.0.0.1",
            "--webhook-host=b.example",
            "--webhook-url=https://127.0.0.1:9443",
        ])
        .unwrap();
        let config = flags.config().unwrap().webhook;
        assert_eq!(config.port, 0);
        assert!(config.self_signed);
        assert_eq!(config.hosts, ["a.example", "127.0.0.1", "b.example"]);
        assert_eq!(config.url.as_deref(), Some("https://127.0.0.1:9443"));
    }

    #[test]
    fn zero_turns_an_endpoint_off_and_hosts_are_kept() {
        let flags = Flags::try_parse_from([
            "op",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=127.0.0.1:9000",
        ])
        .unwrap();
        assert_eq!(flags.metrics_bind_address, BindAddress::Off);
        assert_eq!(
            flags.health_probe_bind_address,
            BindAddress::On("127.0.0.1:9000".parse().unwrap())
        );
    }

    #[test]
    fn watch_list_sets_how_every_informer_of_the_manager_gets_its_initial_state() {
        let strategy = |args: &[&str]| {
            Flags::try_parse_from(args)
                .unwrap()
                .config()
                .unwrap()
                .informers
                .watch_list
        };
        assert_eq!(strategy(&["op"]), WatchList::Off);
        assert_eq!(strategy(&["op", "--watch-list=auto"]), WatchList::Auto);
        assert_eq!(strategy(&["op", "--watch-list", "on"]), WatchList::On);
        assert!(Flags::try_parse_from(["op", "--watch-list=yes"]).is_err());
    }

    #[test]
    fn watch_namespaces_split_on_commas_repeat_and_answer_to_namespace_too() {
        let namespaces = |args: &[&str]| -> Vec<String> {
            let flags = Flags::try_parse_from(args).unwrap();
            let config = flags.config().unwrap();
            config
                .cache_scope()
                .watched_namespaces()
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(
            namespaces(&["op", "--watch-namespaces=b,a", "--watch-namespaces", "c"]),
            ["a", "b", "c"]
        );
        assert_eq!(namespaces(&["op", "--namespace", "shop"]), ["shop"]);
        assert!(namespaces(&["op"]).is_empty(), "every namespace by default");
    }

    #[test]
    fn a_watched_namespace_kubernetes_would_refuse_is_an_invalid_flag() {
        let flags = Flags::try_parse_from(["op", "--watch-namespaces=shop,Shop_2"]).unwrap();
        let error = flags.config().unwrap_err();
        assert!(
            matches!(&error, Error::InvalidFlags(m) if m.starts_with("--watch-namespaces: \"Shop_2\" is not a valid namespace name")),
            "{error}"
        );
    }

    #[test]
    fn a_bad_address_is_rejected_with_the_accepted_forms() {
        let err = Flags::try_parse_from(["op", "--metrics-bind-address=eighty"]).unwrap_err();
        assert!(
            err.to_string().contains("use `:PORT`, `HOST:PORT` or `0`"),
            "{err}"
        );
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn metrics_are_plain_unless_metrics_secure_is_given_with_or_without_a_value() {
        let plain = Flags::try_parse_from(["op"]).unwrap();
        assert!(!plain.metrics_secure);
        assert!(format!("{:?}", plain.endpoints()).contains("secure: false"));
        let secure = Flags::try_parse_from(["op", "--metrics-secure", "crd"]).unwrap();
        assert!(secure.metrics_secure);
        assert!(
            secure.command.is_some(),
            "a bare --metrics-secure takes no value"
        );
        let off = Flags::try_parse_from(["op", "--metrics-secure=false"]).unwrap();
        assert!(!off.metrics_secure);
        let dir =
            Flags::try_parse_from(["op", "--metrics-secure", "--metrics-cert-dir=/certs"]).unwrap();
        assert!(dir.metrics_secure);
        assert_eq!(dir.metrics_cert_dir.as_deref(), Some(Path::new("/certs")));
        let endpoints = format!("{:?}", dir.endpoints());
        assert!(
            endpoints.contains("secure: true, cert_dir: Some(\"/certs\")"),
            "{endpoints}"
        );
    }

    #[test]
    fn the_https_servers_speak_http2_only_when_enable_http2_is_given() {
        let off = Flags::try_parse_from(["op"]).unwrap().config().unwrap();
        assert!(!off.enable_http2);
        let on = Flags::try_parse_from(["op", "--enable-http2", "crd"]).unwrap();
        assert!(on.command.is_some(), "a bare --enable-http2 takes no value");
        assert!(on.config().unwrap().enable_http2);
    }

    #[test]
    fn secure_metrics_cannot_share_the_plain_health_probe_address() {
        let flags = Flags::try_parse_from([
            "op",
            "--metrics-secure",
            "--metrics-bind-address=:9000",
            "--health-probe-bind-address=:9000",
        ])
        .unwrap();
        assert!(matches!(flags.config(), Err(Error::InvalidFlags(m)) if m.contains("must differ")),);
    }

    #[test]
    fn zero_concurrency_and_unknown_log_formats_are_rejected() {
        assert!(Flags::try_parse_from(["op", "--max-concurrent-reconciles=0"]).is_err());
        assert!(Flags::try_parse_from(["op", "--log-format=xml"]).is_err());
    }

    #[test]
    fn flags_built_in_code_with_zero_concurrency_are_an_error_not_a_panic() {
        let mut flags = Flags::try_parse_from(["op"]).unwrap();
        flags.max_concurrent_reconciles = 0;
        let err = flags.config().unwrap_err();
        assert!(
            err.to_string().contains("--max-concurrent-reconciles"),
            "{err}"
        );
    }

    #[test]
    fn durations_take_units_and_leader_election_timings_are_validated() {
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(
            parse_duration("soon")
                .unwrap_err()
                .contains("`soon` is not a duration")
        );
        let flags = Flags::try_parse_from([
            "op",
            "--leader-elect",
            "--leader-election-renew-deadline=20s",
        ])
        .unwrap();
        assert!(
            matches!(flags.config(), Err(Error::InvalidFlags(m)) if m.contains("renew deadline"))
        );
        let flags = Flags::try_parse_from(["op", "--leader-elect"]).unwrap();
        let election = flags
            .config()
            .unwrap()
            .leader_election
            .expect("--leader-elect turns it on");
        assert_eq!(election.lease, default_lease_name());
        assert!(
            election.lease.ends_with("-leader") && election.lease != "kubeward-leader",
            "the default Lease is the program's own: {}",
            election.lease
        );
        assert_eq!(election.on_loss, OnLeadershipLoss::Exit);
    }

    #[test]
    fn standby_on_loss_is_a_flag_and_other_values_are_rejected() {
        let flags =
            Flags::try_parse_from(["op", "--leader-elect", "--leader-election-on-loss=standby"])
                .unwrap();
        let election = flags.config().unwrap().leader_election.expect("on");
        assert_eq!(election.on_loss, OnLeadershipLoss::Standby);
        let err = Flags::try_parse_from(["op", "--leader-election-on-loss=linger"]).unwrap_err();
        assert!(err.to_string().contains("exit, standby"), "{err}");
    }

    #[test]
    fn a_log_filter_that_does_not_parse_is_refused_while_parsing() {
        let err = Flags::try_parse_from(["op", "--log-level=[[["]).unwrap_err();
        assert!(
            err.to_string()
                .contains("`[[[` is not a log level or filter"),
            "{err}"
        );
        assert_eq!(err.exit_code(), 2);
        let flags = Flags::try_parse_from(["op", "--log-level=kubeward=debug,info"]).unwrap();
        assert_eq!(flags.log_level, "kubeward=debug,info");
    }

    #[test]
    fn the_graceful_shutdown_timeout_takes_units_and_bare_seconds() {
        for (value, expected) in [
            ("2m", Duration::from_secs(120)),
            ("1500ms", Duration::from_millis(1500)),
            ("30", Duration::from_secs(30)),
        ] {
            let flags =
                Flags::try_parse_from(["op", "--graceful-shutdown-timeout", value]).unwrap();
            assert_eq!(flags.graceful_shutdown_timeout, expected, "{value}");
        }
        let err = Flags::try_parse_from(["op", "--graceful-shutdown-timeout=soon"]).unwrap_err();
        assert!(
            err.to_string().contains("`soon` is not a duration"),
            "{err}"
        );
    }

    #[test]
    fn the_checked_config_refuses_a_kubeconfig_that_does_not_read_unless_a_command_runs() {
        let missing = "/nonexistent/kubeward/kubeconfig";
        let flags = Flags::try_parse_from(["op", "--kubeconfig", missing]).unwrap();
        assert!(
            matches!(flags.checked_config(), Err(Error::InvalidFlags(m)) if m.starts_with(&format!("--kubeconfig {missing}: cannot read it"))),
        );
        let flags = Flags::try_parse_from(["op", "--kubeconfig", missing, "crd"]).unwrap();
        assert!(flags.checked_config().is_ok(), "`crd` needs no kubeconfig");
    }
}
