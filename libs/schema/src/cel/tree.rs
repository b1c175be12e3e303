//! The compiled schema: one [`Node`] per schema node, with what typing `self` needs and the
//! node's compiled rules.

use std::collections::BTreeMap;

use serde_json::Value as Json;

use super::rule::{self, CompiledRule};
use crate::FieldCause;

/// How a string is typed in CEL (kube-apiserver's `format` mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Plain,
    /// `date-time` and `date`: a timestamp.
    Timestamp,
    /// `duration`: a duration.
    Duration,
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ListType {
    Atomic,
    Set,
    /// A map list with its `x-kubernetes-list-map-keys`.
    Map(Vec<String>),
}

#[derive(Debug, Default)]
pub(super) struct Node {
    /// The schema's `type` (`""` when absent), printed in `Invalid value: "object": ...`.
    pub type_name: String,
    pub format: Option<Format>,
    pub preserve_unknown: bool,
    /// The root of a resource: the custom resource itself or an embedded resource.
    pub resource_root: bool,
    pub properties: BTreeMap<String, Node>,
    pub items: Option<Box<Node>>,
    /// `additionalProperties` (a schema, or `true` as an untyped node).
    pub additional: Option<Box<Node>>,
    pub list_type: Option<ListType>,
    /// Rules of `allOf` branches, evaluated on this node's value and typed by this node.
    pub all_of: Vec<Node>,
    pub rules: Vec<CompiledRule>,
    /// The `self` fields `rules` (and their message expressions) read, when they read `self` only
    /// field by field: what converting `self` to CEL can stop at. Computed once, at compile time.
    pub self_fields: Option<Vec<String>>,
    /// Whether this node or a descendant has a rule.
    pub has_rules: bool,
}

impl Node {
    /// Builds the node of `schema`, found at `path` in the CRD; compile errors go to `causes`.
    pub fn build(
        schema: &Json,
        path: &str,
        resource_root: bool,
        causes: &mut Vec<FieldCause>,
    ) -> Node {
        Builder { causes }.node(schema, path, resource_root, None)
    }

    /// A node accepting anything (`additionalProperties: true`).
    fn untyped() -> Node {
        Node {
            preserve_unknown: true,
            ..Node::default()
        }
    }
}

struct Builder<'c> {
    causes: &'c mut Vec<FieldCause>,
}

impl Builder<'_> {
    /// `uncorrelated` is the path of the nearest enclosing list whose items have no old value
    /// (sets and atomic lists), where kube-apiserver forbids `oldSelf`.
    fn node(
        &mut self,
        schema: &Json,
        path: &str,
        resource_root: bool,
        uncorrelated: Option<&str>,
    ) -> Node {
        let str_of = |key: &str| schema.get(key).and_then(Json::as_str);
        let flag = |key: &str| schema.get(key).and_then(Json::as_bool) == Some(true);
        let type_name = str_of("type").unwrap_or_default().to_owned();
        let format = match (type_name.as_str(), str_of("format")) {
            ("string", Some("date-time" | "date")) => Some(Format::Timestamp),
            ("string", Some("duration")) => Some(Format::Duration),
            ("string", _) => Some(Format::Plain),
            _ => None,
        };
        let list_type = match str_of("x-kubernetes-list-type") {
            Some("set") => Some(ListType::Set),
            Some("map") => Some(ListType::Map(
                schema
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Json::as_array)
                    .map(|keys| {
                        keys.iter()
                            .filter_map(|k| k.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
            )),
            Some(_) => Some(ListType::Atomic),
            None if type_name == "array" => Some(ListType::Atomic),
            None => None,
        };

        let mut node = Node {
            type_name,
            format,
            preserve_unknown: flag("x-kubernetes-preserve-unknown-fields"),
            resource_root: resource_root || flag("x-kubernetes-embedded-resource"),
            list_type,
            ..Node::default()
        };

        if let Some(properties) = schema.get("properties").and_then(Json::as_object) {
            for (name, child) in properties {
                let child_path = format!("{path}.properties[{name}]");
                let child = self.node(child, &child_path, false, uncorrelated);
                node.properties.insert(name.clone(), child);
            }
        }
        if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
            let items_path = format!("{path}.items");
            let item_uncorrelated = match &node.list_type {
                Some(ListType::Map(_)) => uncorrelated,
                _ => Some(uncorrelated.unwrap_or(path)),
            };
            node.items = Some(Box::new(self.node(
                items,
                &items_path,
                false,
                item_uncorrelated,
            )));
        }
        match schema.get("additionalProperties") {
            Some(additional @ Json::Object(_)) => {
                let additional_path = format!("{path}.additionalProperties");
                node.additional = Some(Box::new(self.node(
                    additional,
                    &additional_path,
                    false,
                    uncorrelated,
                )));
            }
            Some(Json::Bool(true)) => node.additional = Some(Box::new(Node::untyped())),
            _ => {}
        }
        if let Some(branches) = schema.get("allOf").and_then(Json::as_array) {
            for (i, branch) in branches.iter().enumerate() {
                let branch_path = format!("{path}.allOf[{i}]");
                let branch = self.node(branch, &branch_path, resource_root, uncorrelated);
                if branch.has_rules {
                    node.all_of.push(branch);
                }
            }
        }

        if let Some(rules) = schema.get("x-kubernetes-validations") {
            node.rules = rule::compile_all(
                rules,
                schema,
                path,
                node.resource_root,
                uncorrelated,
                self.causes,
            );
        }
        node.self_fields = self_fields(&node.rules);
        node.has_rules = !node.rules.is_empty()
            || !node.all_of.is_empty()
            || node.properties.values().any(|p| p.has_rules)
            || node.items.as_ref().is_some_and(|i| i.has_rules)
            || node.additional.as_ref().is_some_and(|a| a.has_rules);
        node
    }
}

/// The union of the `self` fields the rules (and their message expressions) of a node read;
/// `None` when one of them needs `self` whole.
fn self_fields(rules: &[CompiledRule]) -> Option<Vec<String>> {
    let mut fields: Vec<String> = Vec::new();
    for rule in rules {
        let programs = std::iter::once(&rule.program).chain(rule.message_expression.as_ref());
        for program in programs {
            fields.extend(program.self_fields.as_ref()?.iter().cloned());
        }
    }
    fields.sort();
    fields.dedup();
    Some(fields)
}
