//! Engines implementing [`crate::Store`]. (Filled in by the engines work.)
