//! Lists every family the framework serves: name, type, labels, meaning (for the book).

/// Every family: name, type, labels (`none` for a family without any), meaning. The book's
/// metrics page shows it, and tests keep it in step with what is registered.
pub const REFERENCE: &[(&str, &str, &str, &str)] = &[
    (
        "controller_runtime_reconcile_total",
        "counter",
        "controller, result",
        "Reconciles per controller and result (success, error, requeue, requeue_after).",
    ),
    (
        "controller_runtime_reconcile_errors_total",
        "counter",
        "controller",
        "Reconciles that returned an error.",
    ),
    (
        "controller_runtime_terminal_reconcile_errors_total",
        "counter",
        "controller",
        "Reconciles that returned an error the reconciler marked terminal (not retried).",
    ),
    (
        "controller_runtime_reconcile_panics_total",
        "counter",
        "controller",
        "Reconciles that panicked.",
    ),
    (
        "controller_runtime_reconcile_time_seconds",
        "histogram",
        "controller",
        "Time a reconcile took.",
    ),
    (
        "controller_runtime_max_concurrent_reconciles",
        "gauge",
        "controller",
        "Configured maximum of reconciles at once.",
    ),
    (
        "controller_runtime_active_workers",
        "gauge",
        "controller",
        "Reconciles running now.",
    ),
    (
        "workqueue_depth",
        "gauge",
        "name, controller",
        "Keys waiting in the work queue.",
    ),
    (
        "workqueue_adds_total",
        "counter",
        "name, controller",
        "Keys queued.",
    ),
    (
        "workqueue_queue_duration_seconds",
        "histogram",
        "name, controller",
        "Time a key waited in the queue before a worker took it.",
    ),
    (
        "workqueue_work_duration_seconds",
        "histogram",
        "name, controller",
        "Time a worker spent on a key.",
    ),
    (
        "workqueue_unfinished_work_seconds",
        "gauge",
        "name, controller",
        "Time spent so far on keys still being processed.",
    ),
    (
        "workqueue_longest_running_processor_seconds",
        "gauge",
        "name, controller",
        "How long the longest-running worker has been on its key.",
    ),
    (
        "workqueue_retries_total",
        "counter",
        "name, controller",
        "Rate-limited requeues.",
    ),
    (
        "leader_election_master_status",
        "gauge",
        "name",
        "1 while this replica leads the named election, 0 otherwise.",
    ),
    (
        "kubeward_informer_list_requests_total",
        "counter",
        "resource",
        "List requests an informer sent (one per page).",
    ),
    (
        "kubeward_informer_watch_requests_total",
        "counter",
        "resource",
        "Watch requests an informer sent: the first one and every restart.",
    ),
    (
        "kubeward_informer_relists_total",
        "counter",
        "resource",
        "Complete lists an informer applied to its store, the first one included.",
    ),
    (
        "kubeward_informer_store_objects",
        "gauge",
        "resource",
        "Objects in an informer's store.",
    ),
    (
        "kubeward_informer_decode_failures_total",
        "counter",
        "resource",
        "Objects an informer skipped because they did not decode into its type.",
    ),
    (
        "kubeward_informer_last_sync_timestamp_seconds",
        "gauge",
        "resource",
        "Unix time of an informer's last complete list (absent before the first).",
    ),
    (
        "process_cpu_seconds_total",
        "counter",
        "none",
        "User and system CPU time of the operator, in whole seconds (Linux).",
    ),
    (
        "process_resident_memory_bytes",
        "gauge",
        "none",
        "Resident memory of the operator (Linux).",
    ),
    (
        "process_virtual_memory_bytes",
        "gauge",
        "none",
        "Virtual memory of the operator (Linux).",
    ),
    (
        "process_open_fds",
        "gauge",
        "none",
        "Open file descriptors (Linux).",
    ),
    (
        "process_max_fds",
        "gauge",
        "none",
        "Limit of open file descriptors (Linux).",
    ),
    (
        "process_start_time_seconds",
        "gauge",
        "none",
        "Unix time the process started (Linux).",
    ),
    (
        "process_threads",
        "gauge",
        "none",
        "OS threads of the process (Linux).",
    ),
];
