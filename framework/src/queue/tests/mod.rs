//! Tests of the queue as a whole.
