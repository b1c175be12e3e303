//! Label and field selectors (`?labelSelector=` / `?fieldSelector=`, `metav1.LabelSelector`).

pub mod field;
pub mod label;

pub use field::{FieldSelector, FieldSelectorError};
pub use label::{LabelSelectorError, Labels, Selector};
