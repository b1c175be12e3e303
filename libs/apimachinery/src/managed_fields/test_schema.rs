//! A small hand-written schema for tests, shaped like a Pod/ConfigMap mix.

use serde_json::{Value, json};

use super::schema::{ListType, Shape, TypeView};

/// A position in the test schema, named by type.
#[derive(Debug, Clone)]
pub(crate) struct TestType(&'static str);

/// The root of the test schema.
pub(crate) fn pods() -> TestType {
    TestType("root")
}

impl TypeView for TestType {
    fn shape(&self, _value: &Value) -> Shape {
        match self.0 {
            "root" | "meta" | "spec" | "container" | "port" | "status" => Shape::Struct,
            "containers" => Shape::List(ListType::Map {
                keys: vec!["name".into()],
            }),
            "ports" => Shape::List(ListType::Map {
                keys: vec!["containerPort".into(), "protocol".into()],
            }),
            "set" => Shape::List(ListType::Set),
            "atomiclist" => Shape::List(ListType::Atomic),
            "strmap" => Shape::Map { atomic: false },
            "atomicmap" => Shape::Map { atomic: true },
            "scalar" | "protocol" => Shape::Scalar,
            _ => Shape::Untyped,
        }
    }

    fn field(&self, name: &str) -> Self {
        TestType(match (self.0, name) {
            ("root", "metadata") => "meta",
            ("root", "spec") => "spec",
            ("root", "data") => "strmap",
            ("root", "status") => "status",
            ("root", "apiVersion" | "kind") => "scalar",
            ("meta", "labels" | "annotations") => "strmap",
            ("meta", "finalizers") => "set",
            ("meta", _) => "scalar",
            ("spec", "containers") => "containers",
            ("spec", "finalizers") => "set",
            ("spec", "nodeSelector") => "atomicmap",
            ("spec", "replicas") => "scalar",
            ("container", "ports") => "ports",
            ("container", "args") => "atomiclist",
            ("container", "tags") => "set",
            ("container", _) => "scalar",
            ("port", "protocol") => "protocol",
            ("port", _) => "scalar",
            ("strmap", _) => "scalar",
            _ => "untyped",
        })
    }

    fn item(&self) -> Self {
        TestType(match self.0 {
            "containers" => "container",
            "ports" => "port",
            "set" => "scalar",
            _ => "untyped",
        })
    }

    fn default_value(&self) -> Option<Value> {
        (self.0 == "protocol").then(|| json!("TCP"))
    }
}
