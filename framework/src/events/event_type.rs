//! The two types of an Event: `Normal` and `Warning`.

/// Whether an Event reports something expected or something an operator should look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum EventType {
    /// Something expected happened.
    Normal,
    /// Something an operator may want to look at happened.
    Warning,
}

impl EventType {
    /// The type as the Events API spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}
