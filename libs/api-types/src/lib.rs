//! kcp-api-types: the resources kcp-rs serves, described as data for the one generic registry.
//!
//! A [`ResourceDef`] says everything the registry needs about a resource: names, scope, verbs,
//! subresources, printer columns, field selectors and a [`Strategy`] with the kind's own defaulting and
//! validation. Built-in kinds come from [`builtin::catalogue`]; CRDs and bound APIs will produce the same
//! type at run time.

pub mod apis;
pub mod builtin;
pub mod conditions;
pub mod custom;
pub mod jsonpath;
pub mod resource;
pub mod tenancy;

pub use resource::{
    Column, ColumnValue, FieldSelectorDef, FieldSource, NameRule, Requester, ResourceDef,
    ResourceKind, ScaleDef, Strategy, StrategyContext, Text,
};
