//! Compiled schema trees.
//!
//! A [`Schema`] is a handle (an `Arc` to an arena plus a node index) into a graph compiled
//! from OpenAPI v3 JSON. `$ref`s become plain edges to the named node, so recursive types
//! (JSONSchemaProps refers to itself) are cycles in the graph and cost nothing to build or to
//! keep; walkers are driven by the (finite) value they check, so they terminate.
//!
//! The same type serves built-in kinds (compiled once from k8s-openapi's definitions, see
//! [`crate::builtin`]) and a CRD's `openAPIV3Schema` ([`Schema::compile`]); logical clusters
//! share either by cloning the handle.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::SchemaError;
use crate::constraints::{Bound, Constraints, ListType, MapType, Pattern};

/// How deep a schema may nest before compilation gives up (guards hand-built values).
pub const MAX_SCHEMA_DEPTH: usize = 256;
/// How many `$ref` hops a node may chain before we stop following (guards `A -> A`).
const MAX_ALIAS_HOPS: usize = 64;

/// The OpenAPI `type` of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaType {
    String,
    Integer,
    Number,
    Boolean,
    Array,
    Object,
}

impl SchemaType {
    /// Parses an OpenAPI type name; `null` and unknown names give `None`.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            "array" => Self::Array,
            "object" => Self::Object,
            _ => return None,
        })
    }

    /// The OpenAPI name of the type.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::Boolean => "boolean",
            Self::Array => "array",
            Self::Object => "object",
        }
    }
}

/// Knobs for compilation.
#[derive(Debug, Clone, Default)]
pub struct CompileOptions {
    /// Go-backed (built-in) semantics: an `object` with neither `properties` nor
    /// `additionalProperties` stands for an opaque Go type (RawExtension, FieldsV1, Patch), which
    /// accepts any JSON. A CRD schema must leave this off: there such an object prunes everything.
    pub opaque_empty_objects: bool,
}

/// An edge to another node: in the same arena, or into another compiled schema (lets a CRD
/// schema point at the built-in ObjectMeta without copying it).
#[derive(Debug, Clone)]
enum Link {
    Local(u32),
    External(Schema),
}

#[derive(Debug, Clone, Default)]
enum Additional {
    #[default]
    Unspecified,
    Bool(bool),
    Schema(Link),
}

#[derive(Debug, Default)]
struct Node {
    ty: Option<SchemaType>,
    format: Option<String>,
    description: Option<String>,
    /// The definition name when this node is a named component.
    name: Option<String>,
    properties: BTreeMap<String, Link>,
    additional: Additional,
    items: Option<Link>,
    /// `oneOf`/`anyOf` branches; used for structure only when the node has no type itself.
    alternatives: Vec<Link>,
    /// `$ref` (or a lone `allOf: [$ref]`): the structure lives there.
    target: Option<Link>,
    preserve_unknown_fields: bool,
    int_or_string: bool,
    embedded_resource: bool,
    nullable: bool,
    /// Accepts any JSON and is not looked into (untyped and without structure).
    opaque: bool,
    required: Vec<String>,
    enum_values: Vec<Value>,
    /// Value constraints and allOf/anyOf/oneOf/not; boxed as most (built-in) nodes have none.
    checks: Option<Box<Checks>>,
}

/// What a node asks of values beyond their type and structure.
#[derive(Debug, Default)]
struct Checks {
    constraints: Constraints,
    all_of: Vec<Link>,
    any_of: Vec<Link>,
    one_of: Vec<Link>,
    not: Option<Link>,
}

/// The nodes of one compilation unit.
#[derive(Debug, Default)]
struct SchemaArena {
    nodes: Vec<Node>,
    names: HashMap<String, u32>,
    /// Root properties [`Schema::compile_linked`] replaced, as they were declared.
    declared: HashMap<String, Link>,
}

/// A compiled schema: a cheap, shareable handle to one node of an arena.
#[derive(Debug, Clone)]
pub struct Schema {
    arena: Arc<SchemaArena>,
    root: u32,
}

impl Schema {
    /// Compiles a self-contained schema (a CRD's `openAPIV3Schema`) with CRD semantics.
    pub fn compile(json: &Value) -> Result<Schema, SchemaError> {
        Self::compile_with(json, &CompileOptions::default())
    }

    /// Compiles a self-contained schema with the given options.
    pub fn compile_with(json: &Value, options: &CompileOptions) -> Result<Schema, SchemaError> {
        let mut compiler = Compiler::new(options, HashMap::new());
        let root = compiler.alloc();
        compiler.fill(root, json, "", 0)?;
        Ok(Schema {
            arena: Arc::new(compiler.finish()),
            root,
        })
    }

    /// Compiles `json` like [`Schema::compile_with`], but the listed root properties are replaced
    /// by edges to already compiled schemas, e.g. a CRD's `metadata` to the built-in ObjectMeta.
    pub fn compile_linked(
        json: &Value,
        options: &CompileOptions,
        links: &[(&str, Schema)],
    ) -> Result<Schema, SchemaError> {
        let mut compiler = Compiler::new(options, HashMap::new());
        let root = compiler.alloc();
        compiler.fill(root, json, "", 0)?;
        let node = &mut compiler.nodes[root as usize];
        let mut declared = HashMap::new();
        for (name, schema) in links {
            if let Some(own) = node
                .properties
                .insert((*name).to_owned(), Link::External(schema.clone()))
            {
                declared.insert((*name).to_owned(), own);
            }
        }
        let mut arena = compiler.finish();
        arena.declared = declared;
        Ok(Schema {
            arena: Arc::new(arena),
            root,
        })
    }

    /// The root node, for walking.
    pub fn root(&self) -> SchemaNode<'_> {
        SchemaNode {
            arena: &self.arena,
            id: self.root,
        }
    }

    /// A root property as the JSON declared it before [`Schema::compile_linked`] replaced it
    /// (a CRD's own `metadata` restrictions on name/generateName, say).
    pub fn declared_root_property(&self, name: &str) -> Option<SchemaNode<'_>> {
        let link = self.arena.declared.get(name)?;
        Some(self.root().follow(link))
    }

    /// The definition name of the root, when it is a named component.
    pub fn name(&self) -> Option<&str> {
        self.root().name()
    }

    /// Whether both handles point at the very same compiled node.
    pub fn same_as(&self, other: &Schema) -> bool {
        Arc::ptr_eq(&self.arena, &other.arena) && self.root == other.root
    }
}

/// Named definitions compiled together (refs between them resolved).
#[derive(Debug, Clone)]
pub struct SchemaSet {
    arena: Arc<SchemaArena>,
}

impl SchemaSet {
    /// Compiles every definition of `definitions` (name -> schema JSON). `$ref`s of the form
    /// `#/components/schemas/<name>` (also `#/definitions/` and `#/$defs/`) must name one of them.
    pub fn compile(
        definitions: &Map<String, Value>,
        options: &CompileOptions,
    ) -> Result<SchemaSet, SchemaError> {
        // Reserve a node per name first so refs (also cyclic ones) resolve to a fixed index.
        let mut names = HashMap::with_capacity(definitions.len());
        for (index, name) in definitions.keys().enumerate() {
            let index = u32::try_from(index).map_err(|_| invalid(name, "too many definitions"))?;
            names.insert(name.clone(), index);
        }
        let mut compiler = Compiler::new(options, names);
        for _ in 0..definitions.len() {
            compiler.alloc();
        }
        for (index, (name, json)) in definitions.iter().enumerate() {
            let id = index as u32;
            compiler.fill(id, json, name, 0)?;
            compiler.nodes[index].name = Some(name.clone());
        }
        Ok(SchemaSet {
            arena: Arc::new(compiler.finish()),
        })
    }

    /// The compiled definition of that name.
    pub fn get(&self, name: &str) -> Option<Schema> {
        self.arena.names.get(name).map(|&root| Schema {
            arena: Arc::clone(&self.arena),
            root,
        })
    }

    /// All definition names (unordered).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.arena.names.keys().map(String::as_str)
    }
}

/// What a node says about keys not listed in `properties`.
#[derive(Debug, Clone, Copy)]
pub enum AdditionalProperties<'a> {
    /// Not given.
    Unspecified,
    /// `additionalProperties: true|false`.
    Allowed(bool),
    /// A map: every other key's value has this schema.
    Schema(SchemaNode<'a>),
}

/// A borrowed view of one node; structural accessors see through `$ref`s.
#[derive(Debug, Clone, Copy)]
pub struct SchemaNode<'a> {
    arena: &'a SchemaArena,
    id: u32,
}

impl<'a> SchemaNode<'a> {
    fn node(self) -> &'a Node {
        // Ids are only minted by the compiler of this very arena, so they are in range.
        &self.arena.nodes[self.id as usize]
    }

    fn follow(self, link: &'a Link) -> SchemaNode<'a> {
        match link {
            Link::Local(id) => SchemaNode {
                arena: self.arena,
                id: *id,
            },
            Link::External(schema) => schema.root(),
        }
    }

    /// The node that carries the structure: this one, or where its `$ref` chain ends.
    pub fn resolved(self) -> SchemaNode<'a> {
        let mut current = self;
        for _ in 0..MAX_ALIAS_HOPS {
            match &current.node().target {
                Some(link) => current = current.follow(link),
                None => return current,
            }
        }
        current
    }

    /// Identity of the node (arena address and index), for cycle bookkeeping.
    pub fn identity(self) -> (usize, u32) {
        (std::ptr::from_ref(self.arena) as usize, self.id)
    }

    /// The component name of the resolved node (e.g. `io.k8s.api.core.v1.ConfigMap`).
    pub fn name(self) -> Option<&'a str> {
        self.node()
            .name
            .as_deref()
            .or_else(|| self.resolved().node().name.as_deref())
    }

    /// The node's own description, else that of what it refers to.
    pub fn description(self) -> Option<&'a str> {
        self.node()
            .description
            .as_deref()
            .or_else(|| self.resolved().node().description.as_deref())
    }

    pub fn schema_type(self) -> Option<SchemaType> {
        self.resolved().node().ty
    }

    pub fn format(self) -> Option<&'a str> {
        self.resolved().node().format.as_deref()
    }

    /// The schema of a listed property.
    pub fn property(self, name: &str) -> Option<SchemaNode<'a>> {
        let resolved = self.resolved();
        resolved
            .node()
            .properties
            .get(name)
            .map(|link| resolved.follow(link))
    }

    /// Listed properties, by name.
    pub fn properties(self) -> impl Iterator<Item = (&'a str, SchemaNode<'a>)> + 'a {
        let resolved = self.resolved();
        resolved
            .node()
            .properties
            .iter()
            .map(move |(name, link)| (name.as_str(), resolved.follow(link)))
    }

    pub fn has_properties(self) -> bool {
        !self.resolved().node().properties.is_empty()
    }

    pub fn additional_properties(self) -> AdditionalProperties<'a> {
        let resolved = self.resolved();
        match &resolved.node().additional {
            Additional::Unspecified => AdditionalProperties::Unspecified,
            Additional::Bool(allowed) => AdditionalProperties::Allowed(*allowed),
            Additional::Schema(link) => AdditionalProperties::Schema(resolved.follow(link)),
        }
    }

    pub fn items(self) -> Option<SchemaNode<'a>> {
        let resolved = self.resolved();
        resolved
            .node()
            .items
            .as_ref()
            .map(|link| resolved.follow(link))
    }

    /// `oneOf`/`anyOf` branches of an untyped node.
    pub fn alternatives(self) -> impl Iterator<Item = SchemaNode<'a>> + 'a {
        let resolved = self.resolved();
        resolved
            .node()
            .alternatives
            .iter()
            .map(move |link| resolved.follow(link))
    }

    pub fn preserve_unknown_fields(self) -> bool {
        self.node().preserve_unknown_fields || self.resolved().node().preserve_unknown_fields
    }

    pub fn int_or_string(self) -> bool {
        self.resolved().node().int_or_string
    }

    pub fn embedded_resource(self) -> bool {
        self.node().embedded_resource || self.resolved().node().embedded_resource
    }

    pub fn nullable(self) -> bool {
        self.node().nullable || self.resolved().node().nullable
    }

    /// Accepts any JSON and has no structure to check.
    pub fn is_opaque(self) -> bool {
        self.resolved().node().opaque
    }

    pub fn required(self) -> &'a [String] {
        &self.resolved().node().required
    }

    pub fn enum_values(self) -> &'a [Value] {
        &self.resolved().node().enum_values
    }

    fn checks(self) -> Option<&'a Checks> {
        self.resolved().node().checks.as_deref()
    }

    fn constraint<T>(self, get: impl FnOnce(&'a Constraints) -> T) -> Option<T> {
        self.checks().map(|checks| get(&checks.constraints))
    }

    /// `pattern`, compiled.
    pub fn pattern(self) -> Option<&'a Pattern> {
        self.constraint(|c| c.pattern.as_ref()).flatten()
    }

    /// `maximum` with `exclusiveMaximum`.
    pub fn maximum(self) -> Option<Bound> {
        self.constraint(|c| c.maximum).flatten()
    }

    /// `minimum` with `exclusiveMinimum`.
    pub fn minimum(self) -> Option<Bound> {
        self.constraint(|c| c.minimum).flatten()
    }

    pub fn multiple_of(self) -> Option<f64> {
        self.constraint(|c| c.multiple_of).flatten()
    }

    /// `maxLength`, in Unicode code points.
    pub fn max_length(self) -> Option<i64> {
        self.constraint(|c| c.max_length).flatten()
    }

    /// `minLength`, in Unicode code points.
    pub fn min_length(self) -> Option<i64> {
        self.constraint(|c| c.min_length).flatten()
    }

    pub fn max_items(self) -> Option<i64> {
        self.constraint(|c| c.max_items).flatten()
    }

    pub fn min_items(self) -> Option<i64> {
        self.constraint(|c| c.min_items).flatten()
    }

    pub fn unique_items(self) -> bool {
        self.constraint(|c| c.unique_items).unwrap_or(false)
    }

    pub fn max_properties(self) -> Option<i64> {
        self.constraint(|c| c.max_properties).flatten()
    }

    pub fn min_properties(self) -> Option<i64> {
        self.constraint(|c| c.min_properties).flatten()
    }

    /// The `default` value.
    pub fn default(self) -> Option<&'a Value> {
        self.constraint(|c| c.default.as_ref()).flatten()
    }

    /// `x-kubernetes-list-type` (unknown values read as absent).
    pub fn list_type(self) -> Option<ListType> {
        self.constraint(|c| c.list_type).flatten()
    }

    /// `x-kubernetes-list-map-keys`.
    pub fn list_map_keys(self) -> &'a [String] {
        self.constraint(|c| c.list_map_keys.as_slice())
            .unwrap_or(&[])
    }

    /// `x-kubernetes-map-type` (unknown values read as absent).
    pub fn map_type(self) -> Option<MapType> {
        self.constraint(|c| c.map_type).flatten()
    }

    /// `x-kubernetes-validations` as written (a JSON list of rules).
    pub fn validations(self) -> Option<&'a Value> {
        self.constraint(|c| c.validations.as_ref()).flatten()
    }

    fn links(self, get: impl FnOnce(&'a Checks) -> &'a [Link]) -> Vec<SchemaNode<'a>> {
        let resolved = self.resolved();
        match resolved.node().checks.as_deref() {
            Some(checks) => get(checks)
                .iter()
                .map(|link| resolved.follow(link))
                .collect(),
            None => Vec::new(),
        }
    }

    /// `allOf` branches (value validations; a lone `allOf: [$ref]` is structure instead).
    pub fn all_of(self) -> Vec<SchemaNode<'a>> {
        self.links(|c| &c.all_of)
    }

    /// `anyOf` branches.
    pub fn any_of(self) -> Vec<SchemaNode<'a>> {
        self.links(|c| &c.any_of)
    }

    /// `oneOf` branches.
    pub fn one_of(self) -> Vec<SchemaNode<'a>> {
        self.links(|c| &c.one_of)
    }

    /// The `not` schema.
    pub fn not_schema(self) -> Option<SchemaNode<'a>> {
        let resolved = self.resolved();
        let link = resolved.node().checks.as_deref()?.not.as_ref()?;
        Some(resolved.follow(link))
    }
}

struct Compiler<'o> {
    options: &'o CompileOptions,
    names: HashMap<String, u32>,
    nodes: Vec<Node>,
}

impl<'o> Compiler<'o> {
    fn new(options: &'o CompileOptions, names: HashMap<String, u32>) -> Self {
        Compiler {
            options,
            names,
            nodes: Vec::new(),
        }
    }

    fn finish(self) -> SchemaArena {
        SchemaArena {
            nodes: self.nodes,
            names: self.names,
            declared: HashMap::new(),
        }
    }

    fn alloc(&mut self) -> u32 {
        self.nodes.push(Node::default());
        // An arena beyond u32::MAX nodes cannot come from a request-sized schema.
        (self.nodes.len() - 1) as u32
    }

    fn sub(&mut self, json: &Value, path: &str, depth: usize) -> Result<Link, SchemaError> {
        // A bare `{"$ref": ...}` needs no node of its own.
        if let Some(map) = json.as_object()
            && map.len() == 1
            && let Some(reference) = map.get("$ref")
        {
            return self.resolve_ref(reference, path);
        }
        let id = self.alloc();
        self.fill(id, json, path, depth + 1)?;
        Ok(Link::Local(id))
    }

    fn resolve_ref(&self, reference: &Value, path: &str) -> Result<Link, SchemaError> {
        let reference = reference
            .as_str()
            .ok_or_else(|| invalid(path, "$ref is not a string"))?;
        let name = ["#/components/schemas/", "#/definitions/", "#/$defs/"]
            .iter()
            .find_map(|prefix| reference.strip_prefix(prefix))
            .ok_or_else(|| SchemaError::UnsupportedRef(reference.to_owned()))?;
        // JSON-pointer escapes, in the order RFC 6901 prescribes.
        let name = name.replace("~1", "/").replace("~0", "~");
        self.names
            .get(&name)
            .map(|&id| Link::Local(id))
            .ok_or_else(|| SchemaError::UnresolvedRef(reference.to_owned()))
    }

    fn fill(&mut self, id: u32, json: &Value, path: &str, depth: usize) -> Result<(), SchemaError> {
        if depth > MAX_SCHEMA_DEPTH {
            return Err(SchemaError::TooDeep(MAX_SCHEMA_DEPTH));
        }
        let map = match json {
            Value::Object(map) => map,
            // `true`/`false` schemas: treat as "anything" (false never occurs in k8s schemas).
            Value::Bool(_) => {
                self.nodes[id as usize].opaque = true;
                return Ok(());
            }
            _ => return Err(invalid(path, "schema is not an object")),
        };
        let mut node = Node::default();

        match map.get("type") {
            None => {}
            Some(Value::String(name)) => node.ty = SchemaType::parse(name),
            // JSON-Schema style `["string", "null"]`.
            Some(Value::Array(names)) => {
                for name in names.iter().filter_map(Value::as_str) {
                    if name == "null" {
                        node.nullable = true;
                    } else if node.ty.is_none() {
                        node.ty = SchemaType::parse(name);
                    }
                }
            }
            Some(_) => return Err(invalid(path, "type is neither a string nor an array")),
        }
        node.format = str_field(map, "format");
        node.description = str_field(map, "description");
        node.nullable |= bool_field(map, "nullable");
        node.preserve_unknown_fields = bool_field(map, "x-kubernetes-preserve-unknown-fields");
        node.int_or_string = bool_field(map, "x-kubernetes-int-or-string");
        node.embedded_resource = bool_field(map, "x-kubernetes-embedded-resource");
        if let Some(Value::Array(required)) = map.get("required") {
            node.required = required
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            node.enum_values.clone_from(values);
        }

        if let Some(reference) = map.get("$ref") {
            node.target = Some(self.resolve_ref(reference, path)?);
        }

        if let Some(properties) = map.get("properties") {
            let properties = properties
                .as_object()
                .ok_or_else(|| invalid(path, "properties is not an object"))?;
            for (name, sub) in properties {
                let link = self.sub(sub, &join(path, name), depth)?;
                node.properties.insert(name.clone(), link);
            }
        }
        node.additional = match map.get("additionalProperties") {
            None => Additional::Unspecified,
            Some(Value::Bool(allowed)) => Additional::Bool(*allowed),
            Some(sub) => Additional::Schema(self.sub(sub, &join(path, "*"), depth)?),
        };
        if let Some(items) = map.get("items") {
            // Tuple-style `items: [...]` does not occur in Kubernetes schemas; use the first.
            let items = match items {
                Value::Array(list) => list.first().unwrap_or(&Value::Bool(true)),
                other => other,
            };
            node.items = Some(self.sub(items, &format!("{path}[*]"), depth)?);
        }
        let mut checks = Checks::default();
        let constraints = Constraints::read(map);
        let mut has_checks = constraints.is_some();
        checks.constraints = constraints.unwrap_or_default();
        for keyword in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = map.get(keyword) {
                for (index, branch) in branches.iter().enumerate() {
                    let link = self.sub(branch, &format!("{path}<{keyword}{index}>"), depth)?;
                    node.alternatives.push(link.clone());
                    has_checks = true;
                    if keyword == "oneOf" {
                        checks.one_of.push(link);
                    } else {
                        checks.any_of.push(link);
                    }
                }
            }
        }
        if let Some(Value::Array(all_of)) = map.get("allOf") {
            // `allOf: [{$ref}]` is how OpenAPI 3.0 puts a description next to a reference.
            if node.target.is_none()
                && node.ty.is_none()
                && node.properties.is_empty()
                && all_of.len() == 1
                && let Some(only) = all_of.first()
            {
                node.target = Some(self.sub(only, path, depth)?);
            } else {
                for (index, branch) in all_of.iter().enumerate() {
                    let link = self.sub(branch, &format!("{path}<allOf{index}>"), depth)?;
                    checks.all_of.push(link);
                    has_checks = true;
                }
            }
        }
        if let Some(not) = map.get("not") {
            checks.not = Some(self.sub(not, &format!("{path}<not>"), depth)?);
            has_checks = true;
        }
        if has_checks {
            node.checks = Some(Box::new(checks));
        }

        let structureless = node.properties.is_empty()
            && matches!(node.additional, Additional::Unspecified)
            && node.items.is_none()
            && node.target.is_none()
            && node.alternatives.is_empty();
        if self.options.opaque_empty_objects
            && node.ty == Some(SchemaType::Object)
            && structureless
            && !node.preserve_unknown_fields
            && !node.embedded_resource
        {
            node.ty = None;
        }
        node.opaque = node.ty.is_none() && structureless && !node.int_or_string;

        self.nodes[id as usize] = node;
        Ok(())
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

fn invalid(path: &str, message: &str) -> SchemaError {
    SchemaError::Invalid {
        path: if path.is_empty() {
            "<root>".into()
        } else {
            path.into()
        },
        message: message.into(),
    }
}

fn str_field(map: &Map<String, Value>, key: &str) -> Option<String> {
    map.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn bool_field(map: &Map<String, Value>, key: &str) -> bool {
    map.get(key).and_then(Value::as_bool).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn schemas_can_be_shared_across_threads() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Schema>();
        assert_send_sync::<SchemaSet>();
    }

    #[test]
    fn compiles_properties_maps_and_arrays() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "list": {"type": "array", "items": {"type": "string"}},
                        "map": {"type": "object", "additionalProperties": {"type": "integer"}}
                    }
                },
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "ios": {"x-kubernetes-int-or-string": true, "nullable": true}
            }
        }))
        .expect("valid schema");
        let root = schema.root();
        assert_eq!(root.schema_type(), Some(SchemaType::Object));
        let spec = root.property("spec").expect("spec");
        let list = spec.property("list").expect("list");
        assert_eq!(list.schema_type(), Some(SchemaType::Array));
        assert_eq!(
            list.items().and_then(SchemaNode::schema_type),
            Some(SchemaType::String)
        );
        match spec.property("map").expect("map").additional_properties() {
            AdditionalProperties::Schema(value) => {
                assert_eq!(value.schema_type(), Some(SchemaType::Integer));
            }
            other => panic!("expected a map schema, got {other:?}"),
        }
        assert!(
            root.property("free")
                .expect("free")
                .preserve_unknown_fields()
        );
        let ios = root.property("ios").expect("ios");
        assert!(ios.int_or_string() && ios.nullable() && !ios.is_opaque());
    }

    #[test]
    fn resolves_cyclic_refs_without_looping() {
        let mut definitions = Map::new();
        definitions.insert(
            "Props".into(),
            json!({
                "type": "object",
                "properties": {
                    "properties": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Props"}},
                    "items": {"oneOf": [{"$ref": "#/components/schemas/Props"}, {"type": "array", "items": {"$ref": "#/components/schemas/Props"}}]},
                    "not": {"allOf": [{"$ref": "#/components/schemas/Props"}], "description": "negation"}
                }
            }),
        );
        let set = SchemaSet::compile(&definitions, &CompileOptions::default()).expect("compiles");
        let props = set.get("Props").expect("Props");
        let not = props.root().property("not").expect("not");
        assert_eq!(not.description(), Some("negation"));
        assert_eq!(not.name(), Some("Props"));
        assert!(not.property("not").is_some());
        assert_eq!(
            props
                .root()
                .property("items")
                .expect("items")
                .alternatives()
                .count(),
            2
        );
    }

    #[test]
    fn unresolved_and_self_refs() {
        let err = Schema::compile(&json!({"$ref": "#/components/schemas/Nope"}));
        assert!(matches!(err, Err(SchemaError::UnresolvedRef(_))));
        let err = Schema::compile(&json!({"$ref": "http://elsewhere/x.json"}));
        assert!(matches!(err, Err(SchemaError::UnsupportedRef(_))));

        let mut definitions = Map::new();
        definitions.insert("Loop".into(), json!({"$ref": "#/components/schemas/Loop"}));
        let set = SchemaSet::compile(&definitions, &CompileOptions::default()).expect("compiles");
        let looped = set.get("Loop").expect("Loop");
        // A degenerate self-alias must not hang any accessor.
        assert_eq!(looped.root().schema_type(), None);
    }

    #[test]
    fn opaque_empty_objects_only_when_asked() {
        let json = json!({"type": "object"});
        let crd = Schema::compile(&json).expect("compiles");
        assert!(!crd.root().is_opaque());
        let builtin = Schema::compile_with(
            &json,
            &CompileOptions {
                opaque_empty_objects: true,
            },
        )
        .expect("compiles");
        assert!(builtin.root().is_opaque());
    }

    #[test]
    fn linked_properties_point_into_other_schemas() {
        let meta =
            Schema::compile(&json!({"type": "object", "properties": {"name": {"type": "string"}}}))
                .expect("compiles");
        let cr = Schema::compile_linked(
            &json!({"type": "object", "properties": {"metadata": {"type": "object"}}}),
            &CompileOptions::default(),
            &[("metadata", meta.clone())],
        )
        .expect("compiles");
        let linked = cr.root().property("metadata").expect("metadata");
        assert!(linked.property("name").is_some());
        let declared = cr.declared_root_property("metadata").expect("declared");
        assert!(declared.property("name").is_none());
        assert!(cr.declared_root_property("spec").is_none());
        assert!(meta.same_as(&meta.clone()));
    }

    #[test]
    fn nodes_keep_value_constraints() {
        let schema = Schema::compile(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 1, "maxLength": 8,
                         "default": "x", "enum": ["x", "y"]},
                "count": {"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 5,
                          "multipleOf": 1},
                "ports": {"type": "array", "minItems": 1, "maxItems": 3, "uniqueItems": true,
                          "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "x-kubernetes-map-type": "atomic",
                                    "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "minProperties": 1, "maxProperties": 2,
                           "additionalProperties": {"type": "string"},
                           "x-kubernetes-validations": [{"rule": "size(self) > 0"}]},
                "mixed": {"type": "string", "allOf": [{"minLength": 1}], "anyOf": [{"maxLength": 2}],
                          "oneOf": [{"pattern": "a"}, {"pattern": "b"}], "not": {"enum": ["z"]}}
            }
        }))
        .expect("compiles");
        let root = schema.root();
        let node = |name: &str| root.property(name).expect("property");
        let name = node("name");
        assert!(
            name.pattern()
                .and_then(Pattern::regex)
                .is_some_and(|re| re.is_match("abc"))
        );
        assert_eq!((name.min_length(), name.max_length()), (Some(1), Some(8)));
        assert_eq!(name.default(), Some(&json!("x")));
        assert_eq!(name.enum_values().len(), 2);
        let count = node("count");
        assert_eq!(
            count.minimum(),
            Some(Bound {
                limit: 0.0,
                exclusive: true
            })
        );
        assert_eq!(
            count.maximum(),
            Some(Bound {
                limit: 5.0,
                exclusive: false
            })
        );
        assert_eq!(count.multiple_of(), Some(1.0));
        let ports = node("ports");
        assert_eq!((ports.min_items(), ports.max_items()), (Some(1), Some(3)));
        assert!(ports.unique_items());
        assert_eq!(ports.list_type(), Some(ListType::Map));
        assert_eq!(ports.list_map_keys(), ["name".to_owned()]);
        assert_eq!(
            ports.items().and_then(SchemaNode::map_type),
            Some(MapType::Atomic)
        );
        let labels = node("labels");
        assert_eq!(
            (labels.min_properties(), labels.max_properties()),
            (Some(1), Some(2))
        );
        assert_eq!(
            labels.validations(),
            Some(&json!([{"rule": "size(self) > 0"}]))
        );
        let mixed = node("mixed");
        assert_eq!(mixed.all_of().len(), 1);
        assert_eq!(mixed.any_of().len(), 1);
        assert_eq!(mixed.one_of().len(), 2);
        assert_eq!(
            mixed.not_schema().map(SchemaNode::enum_values),
            Some(&[json!("z")][..])
        );
        // Nodes without constraints answer with nothing.
        let plain = ports
            .items()
            .and_then(|i| i.property("name"))
            .expect("name");
        assert_eq!(
            (plain.list_type(), plain.default(), plain.max_length()),
            (None, None, None)
        );
        assert!(plain.all_of().is_empty() && plain.list_map_keys().is_empty());
    }
}
