//! What `kubeward` and its derive macro, `kubeward-macros`, both need: name rules and defaults.
//!
//! [`names`] checks names as the API server does, so a name the derive accepts at compile time is
//! one the builder accepts at run time and the API server accepts on the wire; [`condition`]
//! holds the default the derive and the framework must agree on. Operators use `kubeward`, which
//! checks their names with this crate; they need not depend on it.
//!
//! ```
//! use kubeward_core::names;
//!
//! assert_eq!(names::qualified_name("example.com/Synced"), Ok(()));
//! assert!(names::dns_label("Web_1").is_err());
//! ```
#![doc(test(attr(deny(warnings))))]

pub mod condition;
pub mod names;
