//! Builds an operator from its command line: the manager the flags describe, and the subcommand.

use std::ops::Deref;

use super::flags::exit_if_invalid;
use super::kubeconfig::client_config;
use super::offline::offline_client;
use super::{Command, Flags, init_logging};
use crate::manager::{Manager, Result};

/// An operator started from the command line: the [`Manager`] its [`Flags`] describe (which it
/// derefs to, so controllers are added as to the manager) and the [`Command`], if one was given.
///
/// ```no_run
/// # #[allow(dead_code)]
/// # async fn demo() -> Result<(), kubeward::manager::Error> {
/// use kubeward::cli::Operator;
/// use kubeward::manager::{RunsOn, runnable_fn};
///
/// let operator = Operator::from_args("Keeps a heartbeat").await?; // --metrics-bind-address, --leader-elect, ...
/// operator.add(runnable_fn("heartbeat", RunsOn::EveryReplica, |shutdown| async move {
///     shutdown.cancelled().await;
///     Ok(())
/// }))?;
/// operator.run().await // until SIGTERM or SIGINT; `crd` or `manifests` print instead
/// # }
/// ```
#[derive(Debug)]
pub struct Operator {
    manager: Manager,
    command: Option<Command>,
    /// Where the `shards` command reads shard Leases (`--leader-election-namespace`).
    lease_namespace: Option<String>,
}

impl Operator {
    /// Parses [`Flags`] from the command line (printing usage and exiting with code 2 on a bad
    /// flag, like every clap program, and on a `--kubeconfig` that does not read or a
    /// `--context` it lacks), installs logging, and finds the client configuration
    /// (`--kubeconfig` and `--context`, else `KUBECONFIG`, `~/.kube/config`, or the in-cluster
    /// service account). `about`, what this operator does, opens `--help`.
    ///
    /// The manager serves the probes and metrics the flags name and, with `--shard-ring`
    /// (feature `sharding`), runs as that ring's shard (see `Flags::shard`).
    ///
    /// The command line may also name a [`Command`] (`crd`, `manifests`): then [`Self::run`]
    /// prints or writes the manifests of the controllers added by then instead of running, and
    /// no cluster or kubeconfig is needed.
    ///
    /// # Errors
    /// See [`Self::from_flags`].
    pub async fn from_args(about: impl Into<String>) -> Result<Self> {
        use clap::{CommandFactory as _, FromArgMatches as _};
        let mut command = Flags::command().about(about.into()).long_about(None);
        let matches = command.get_matches_mut();
        let flags = Flags::from_arg_matches(&matches)
            .map_err(|e| e.format(&mut command))
            .unwrap_or_else(|e| e.exit());
        Self::from_flags(&flags).await.map_err(exit_if_invalid)
    }

    /// As [`Self::from_args`], with flags you parsed yourself (e.g. flattened into your own parser).
    /// It checks what clap cannot check flag by flag, before it installs logging or reads a
    /// cluster's configuration.
    ///
    /// # Errors
    /// [`Error::InvalidFlags`](crate::manager::Error::InvalidFlags) (inconsistent
    /// leader-election timings, a `--kubeconfig` that does not read, a `--context` it lacks),
    /// [`Error::Logging`](crate::manager::Error::Logging),
    /// [`Error::NoClientConfig`](crate::manager::Error::NoClientConfig) when no cluster
    /// configuration can be used, or [`Error::ClientConfig`](crate::manager::Error::ClientConfig)
    /// when no client can be built for it.
    pub fn from_flags(flags: &Flags) -> impl Future<Output = Result<Self>> + Send + '_ {
        // Boxed in a function that is not async, as `Manager::run` is: compiled into kubeward.
        let build: futures::future::BoxFuture<'_, Result<Self>> = Box::pin(Self::build(flags));
        build
    }

    /// [`Self::from_flags`]'s work.
    async fn build(flags: &Flags) -> Result<Self> {
        let config = flags.checked_config()?;
        #[cfg(feature = "sharding")]
        let shard = flags.shard()?;
        init_logging(flags.log_format, &flags.log_level)?;
        let command = flags.command.clone();
        let manager = if command.as_ref().is_some_and(|c| !c.needs_cluster()) {
            Manager::new(offline_client(), config)?
        } else {
            let found =
                client_config(flags.kubeconfig.as_deref(), flags.context.as_deref()).await?;
            Manager::new(found, config)?
        };
        // The probes and metrics (and the shard, before any controller of its ring), unless a
        // subcommand runs instead of the operator.
        if command.is_none() {
            manager.add(flags.endpoints())?;
            #[cfg(feature = "sharding")]
            if let Some(shard) = shard {
                manager.add(shard)?;
            }
        }
        Ok(Self {
            manager,
            command,
            lease_namespace: flags.leader_election_namespace.clone(),
        })
    }

    /// The operator's manager.
    #[must_use]
    pub fn manager(&self) -> &Manager {
        &self.manager
    }

    /// The subcommand the command line named, if any.
    #[must_use]
    pub fn command(&self) -> Option<&Command> {
        self.command.as_ref()
    }

    /// Runs the manager ([`Manager::run`]), or, when the command line named a [`Command`],
    /// carries it out for the controllers added so far and returns without starting anything.
    ///
    /// `plan` ([`Manager::plan`]) prints the plan and ends the process with the plan's exit
    /// code when it is not 0: 2 when something would change, 1 when a reconcile failed.
    ///
    /// # Errors
    /// [`Manager::run`]'s, or for a command
    /// [`Error::Manifests`](crate::manager::Error::Manifests) (and [`Manager::plan`]'s).
    pub fn run(self) -> impl Future<Output = Result<()>> + Send + 'static {
        let run: futures::future::BoxFuture<'static, Result<()>> = Box::pin(async move {
            match &self.command {
                Some(Command::Plan { selector, output }) => {
                    let (selector, output) = (selector.clone(), *output);
                    super::plan::plan(self.manager, selector, output).await
                }
                Some(command) => {
                    command
                        .run(&self.manager, self.lease_namespace.as_deref())
                        .await
                }
                None => self.manager.run().await,
            }
        });
        run
    }
}

impl Deref for Operator {
    type Target = Manager;

    fn deref(&self) -> &Manager {
        &self.manager
    }
}
