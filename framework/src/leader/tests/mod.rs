//! Tests of leader election as a whole; each file's own tests sit at its bottom.

mod simulation;
