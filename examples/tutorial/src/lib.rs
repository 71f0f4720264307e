// ANCHOR: file
//! The operator of the book's tutorial: a `Countdown` finishes once its seconds have passed.

// ANCHOR: modules
mod countdown;
mod timer;

pub use countdown::{Countdown, CountdownSpec, CountdownStatus, Phase};
pub use timer::Timer;
// ANCHOR_END: modules
// ANCHOR_END: file
