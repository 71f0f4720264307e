//! A manager running as a shard, on the fake API server.

mod simulation;
