//! DataFusion `Expr` -> [`super::Predicate`]. (Being written.)
