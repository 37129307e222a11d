//! Iceberg predicates: what a query's filters say about a table, bound to field ids, and what
//! they let a scan skip.
//!
//! - [`predicate`]: the [`Predicate`] tree (bound to field ids and types).
//! - [`convert`]: DataFusion `Expr` -> [`Predicate`], exact or not at all.
//! - [`project`]: inclusive projection of a predicate on source columns to a predicate on a
//!   partition spec's fields, through every transform.
//! - [`eval`]: evaluators that decide "no row can match" from metadata alone: manifest-list
//!   partition summaries (stage 1), partition tuples and column metrics (stage 2).
//!
//! Every evaluator is conservative: `false` only when no row of the file or manifest can
//! satisfy the predicate.

pub mod convert;
pub mod eval;
pub mod predicate;
pub mod project;

pub use predicate::{BinaryOp, Predicate, Reference, SetOp, UnaryOp};
