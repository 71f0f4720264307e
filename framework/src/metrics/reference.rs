//! Lists every family the framework serves: name, kind, labels, meaning (for the book).

use std::fmt;

/// One metric family the framework serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Family {
    /// Its name, e.g. `controller_runtime_reconcile_total`.
    pub name: &'static str,
    /// Counter, gauge or histogram.
    pub kind: Kind,
    /// Its label names, in the order the framework gives their values (empty for none).
    pub labels: &'static [&'static str],
    /// What it measures, one sentence.
    pub help: &'static str,
}

/// The Prometheus type of a [`Family`]; shown lower-case (`counter`), as the exposition format
/// names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// Only goes up (`_total`).
    Counter,
    /// Goes up and down.
    Gauge,
    /// Counts observations in buckets (`_bucket`, `_sum`, `_count`).
    Histogram,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Counter => "counter",
            Self::Gauge => "gauge",
            Self::Histogram => "histogram",
        })
    }
}

/// Every family the framework serves. The book's metrics page shows it, and tests keep it in step
/// with what is registered.
pub const REFERENCE: &[Family] = &[
    Family {
        name: "controller_runtime_reconcile_total",
        kind: Kind::Counter,
        labels: &["controller", "result"],
        help: "Reconciles per controller and result (success, error, requeue, requeue_after).",
    },
    Family {
        name: "controller_runtime_reconcile_errors_total",
        kind: Kind::Counter,
        labels: &["controller"],
        help: "Reconciles that returned an error.",
    },
    Family {
        name: "controller_runtime_terminal_reconcile_errors_total",
        kind: Kind::Counter,
        labels: &["controller"],
        help: "Reconciles that returned an error the reconciler marked terminal (not retried).",
    },
    Family {
        name: "controller_runtime_reconcile_panics_total",
        kind: Kind::Counter,
        labels: &["controller"],
        help: "Reconciles that panicked.",
    },
    Family {
        name: "controller_runtime_reconcile_time_seconds",
        kind: Kind::Histogram,
        labels: &["controller"],
        help: "Time a reconcile took.",
    },
    Family {
        name: "controller_runtime_max_concurrent_reconciles",
        kind: Kind::Gauge,
        labels: &["controller"],
        help: "Configured maximum of reconciles at once.",
    },
    Family {
        name: "controller_runtime_active_workers",
        kind: Kind::Gauge,
        labels: &["controller"],
        help: "Reconciles running now.",
    },
    Family {
        name: "workqueue_depth",
        kind: Kind::Gauge,
        labels: &["name", "controller"],
        help: "Keys waiting in the work queue.",
    },
    Family {
        name: "workqueue_adds_total",
        kind: Kind::Counter,
        labels: &["name", "controller"],
        help: "Keys queued.",
    },
    Family {
        name: "workqueue_queue_duration_seconds",
        kind: Kind::Histogram,
        labels: &["name", "controller"],
        help: "Time a key waited in the queue before a worker took it.",
    },
    Family {
        name: "workqueue_work_duration_seconds",
        kind: Kind::Histogram,
        labels: &["name", "controller"],
        help: "Time a worker spent on a key.",
    },
    Family {
        name: "workqueue_unfinished_work_seconds",
        kind: Kind::Gauge,
        labels: &["name", "controller"],
        help: "Time spent so far on keys still being processed.",
    },
    Family {
        name: "workqueue_longest_running_processor_seconds",
        kind: Kind::Gauge,
        labels: &["name", "controller"],
        help: "How long the longest-running worker has been on its key.",
    },
    Family {
        name: "workqueue_retries_total",
        kind: Kind::Counter,
        labels: &["name", "controller"],
        help: "Rate-limited requeues.",
    },
    Family {
        name: "leader_election_master_status",
        kind: Kind::Gauge,
        labels: &["name"],
        help: "1 while this replica leads the named election, 0 otherwise.",
    },
    Family {
        name: "kubeward_informer_list_requests_total",
        kind: Kind::Counter,
        labels: &["resource"],
        help: "List requests an informer sent (one per page).",
    },
    Family {
        name: "kubeward_informer_watch_requests_total",
        kind: Kind::Counter,
        labels: &["resource"],
        help: "Watch requests an informer sent: the first one and every restart.",
    },
    Family {
        name: "kubeward_informer_relists_total",
        kind: Kind::Counter,
        labels: &["resource"],
        help: "Complete lists an informer applied to its store, the first one included.",
    },
    Family {
        name: "kubeward_informer_store_objects",
        kind: Kind::Gauge,
        labels: &["resource"],
        help: "Objects in an informer's store.",
    },
    Family {
        name: "kubeward_informer_decode_failures_total",
        kind: Kind::Counter,
        labels: &["resource"],
        help: "Objects an informer skipped because they did not decode into its type.",
    },
    Family {
        name: "kubeward_informer_last_sync_timestamp_seconds",
        kind: Kind::Gauge,
        labels: &["resource"],
        help: "Unix time of an informer's last complete list (absent before the first).",
    },
    Family {
        name: "kubeward_informer_streamed_lists_total",
        kind: Kind::Counter,
        labels: &["resource"],
        help: "Complete lists an informer received as streaming lists (counted in the relists too).",
    },
    Family {
        name: "kubeward_informer_store_resource_version",
        kind: Kind::Gauge,
        labels: &["resource"],
        help: "The newest resourceVersion an informer's store has applied, as a number (absent before the first, or when versions are not integers): how far its cache has come (KEP-5647's store_resource_version).",
    },
    Family {
        name: "kubeward_informer_not_served",
        kind: Kind::Gauge,
        labels: &["resource"],
        help: "1 while the API server answers an informer's list or watch with 404 Not Found (the kind is not served: for a custom resource, its CRD is not installed); its controller waits for it.",
    },
    Family {
        name: "kubeward_events_total",
        kind: Kind::Counter,
        labels: &["controller", "result"],
        help: "Events a controller recorded, by result (created, aggregated, limited, dropped, failed).",
    },
    Family {
        name: "kubeward_reads_total",
        kind: Kind::Counter,
        labels: &["controller", "resource", "source"],
        help: "Reads of a reconcile's context (`ctx.get`, `ctx.list`, and the reconcile kit's look-ups of owned objects), by resource and where they were served from (cache, api).",
    },
    Family {
        name: "kubeward_own_write_echoes_suppressed_total",
        kind: Kind::Counter,
        labels: &["controller"],
        help: "Watch events a controller dropped because they brought back exactly the state it wrote itself (same uid and resourceVersion), instead of reconciling again.",
    },
    Family {
        name: "kubeward_paused_objects",
        kind: Kind::Gauge,
        labels: &["controller"],
        help: "Objects of a controller's kind in its cache that carry the `kubeward.io/paused: \"true\"` annotation: the controller does not reconcile them.",
    },
    Family {
        name: "kubeward_controller_first_reconcile_seconds",
        kind: Kind::Gauge,
        labels: &["controller"],
        help: "Seconds from the start of a controller's current run (its manager gained leadership, or started without leader election) to the first key a worker took; 0 before it.",
    },
    Family {
        name: "kubeward_controller_backlog_keys",
        kind: Kind::Gauge,
        labels: &["controller"],
        help: "Keys queued when the workers of a controller's current run started: every cached object, reconciled once per run at low priority.",
    },
    Family {
        name: "kubeward_controller_backlog_drained_seconds",
        kind: Kind::Gauge,
        labels: &["controller"],
        help: "Seconds from the start of a controller's current run until its queue was first empty with no reconcile in flight; absent until then.",
    },
    Family {
        name: "kubeward_controller_run_reconciles",
        kind: Kind::Gauge,
        labels: &["controller"],
        help: "Reconciles a controller finished in its current run (since it gained leadership); 0 when it is not running.",
    },
    Family {
        name: "kubeward_cache_wait_seconds",
        kind: Kind::Histogram,
        labels: &["controller", "resource"],
        help: "How long a reconcile's cached read waited for the informer to bring in the controller's own writes (reads that did not wait are not observed).",
    },
    Family {
        name: "kubeward_cache_wait_timeouts_total",
        kind: Kind::Counter,
        labels: &["controller", "resource"],
        help: "Cached reads that stopped waiting for the controller's own writes at the timeout and read the cache as it was.",
    },
    Family {
        name: "kubeward_controller_stale_sync_skips_total",
        kind: Kind::Counter,
        labels: &["controller"],
        help: "Reconciles a controller held back because its cache had not yet brought in its own last writes of the object, or the creates and deletes its last reconcile of it made (KEP-5647's stale_sync_skips_total; kubeward waits for the cache rather than skipping).",
    },
    Family {
        name: "kubeward_expectations_pending",
        kind: Kind::Gauge,
        labels: &["controller"],
        help: "Creates with generateName, writes of owned objects and deletes a controller made while reconciling an owner and has not yet seen in its cache: the owner's next reconcile waits for them.",
    },
    Family {
        name: "kubeward_expectations_timeouts_total",
        kind: Kind::Counter,
        labels: &["controller"],
        help: "Expected writes (creates with generateName, writes of owned objects, deletes) a controller stopped waiting for at the timeout, reconciling their owner without having seen them.",
    },
    Family {
        name: "controller_runtime_reconcile_timeouts_total",
        kind: Kind::Counter,
        labels: &["controller"],
        help: "Reconciles cut off by the controller's reconcile timeout (counted as errors too).",
    },
    Family {
        name: "kubeward_sharder_shards",
        kind: Kind::Gauge,
        labels: &["ring"],
        help: "Shards of a controller ring available to the sharder (Lease held by the shard and fresh).",
    },
    Family {
        name: "kubeward_sharder_assignments_total",
        kind: Kind::Counter,
        labels: &["ring", "shard", "by"],
        help: "Objects assigned to a shard, `by` the `sharder` (new, moved after a drain, or taken from a shard that is gone) or the assignment `webhook` (as they were created or handed back).",
    },
    Family {
        name: "kubeward_sharder_drains_total",
        kind: Kind::Counter,
        labels: &["ring"],
        help: "Objects the sharder asked a live shard to hand back, to move them to another.",
    },
    Family {
        name: "kubeward_sharder_handover_seconds",
        kind: Kind::Histogram,
        labels: &["ring"],
        help: "Time from the sharder's drain of an object to its assignment to the new shard.",
    },
    Family {
        name: "kubeward_sharder_shard_leases",
        kind: Kind::Gauge,
        labels: &["ring", "state"],
        help: "Shard Leases of a controller ring by the state the sharder labels them with (ready, expired, uncertain, dead, orphaned); on the leader.",
    },
    Family {
        name: "kubeward_shard_lease_losses_total",
        kind: Kind::Counter,
        labels: &["ring"],
        help: "Times this replica lost its shard Lease of a controller ring (not renewed within the renew deadline, or taken by another): it stops the ring's controllers and the manager exits.",
    },
    Family {
        name: "controller_runtime_webhook_requests_total",
        kind: Kind::Counter,
        labels: &["webhook", "code"],
        help: "Requests a webhook path answered, by HTTP status code.",
    },
    Family {
        name: "controller_runtime_webhook_latency_seconds",
        kind: Kind::Histogram,
        labels: &["webhook"],
        help: "Time from a webhook request's headers to its answer, in seconds.",
    },
    Family {
        name: "controller_runtime_webhook_requests_in_flight",
        kind: Kind::Gauge,
        labels: &["webhook"],
        help: "Webhook requests being answered.",
    },
    Family {
        name: "kubeward_serving_connections_closed_total",
        kind: Kind::Counter,
        labels: &["server", "reason"],
        help: "Connections the webhook or secure metrics server refused or closed to protect itself (max_connections, handshake_timeout, read_header_timeout, read_timeout, idle_timeout).",
    },
    Family {
        name: "process_cpu_seconds_total",
        kind: Kind::Counter,
        labels: &[],
        help: "User and system CPU time of the operator, in whole seconds (Linux).",
    },
    Family {
        name: "process_resident_memory_bytes",
        kind: Kind::Gauge,
        labels: &[],
        help: "Resident memory of the operator (Linux).",
    },
    Family {
        name: "process_virtual_memory_bytes",
        kind: Kind::Gauge,
        labels: &[],
        help: "Virtual memory of the operator (Linux).",
    },
    Family {
        name: "process_open_fds",
        kind: Kind::Gauge,
        labels: &[],
        help: "Open file descriptors (Linux).",
    },
    Family {
        name: "process_max_fds",
        kind: Kind::Gauge,
        labels: &[],
        help: "Limit of open file descriptors (Linux).",
    },
    Family {
        name: "process_start_time_seconds",
        kind: Kind::Gauge,
        labels: &[],
        help: "Unix time the process started (Linux).",
    },
    Family {
        name: "process_threads",
        kind: Kind::Gauge,
        labels: &[],
        help: "OS threads of the process (Linux).",
    },
    Family {
        name: "rest_client_requests_total",
        kind: Kind::Counter,
        labels: &["code", "method", "host"],
        help: "Requests of the manager's client by HTTP status code (`<error>` when no answer came), method and API server.",
    },
    Family {
        name: "rest_client_request_duration_seconds",
        kind: Kind::Histogram,
        labels: &["verb", "host"],
        help: "Time until the API server's response headers arrived, by HTTP method and API server.",
    },
];
