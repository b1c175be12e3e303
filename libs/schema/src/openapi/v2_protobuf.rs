//! `/openapi/v2` in protobuf: the Swagger 2.0 document as gnostic's `openapi.v2.Document`
//! message. client-go asks for this form only (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`);
//! kubectl reads it for client-side validation of kinds its OpenAPI v3 lookup did not find, and
//! for the strategic-merge-patch metadata of `kubectl apply`.
//!
//! Encoded by hand from the JSON document, message by message with gnostic's field numbers, so no
//! generated code is needed for a schema of sixty messages of which a shard fills a dozen. As in
//! proto3, empty strings, zeros and `false` are left out. What gnostic keeps as `Any` (defaults,
//! enum values, examples, vendor extensions) carries its YAML text; compact JSON is such a text.

use serde_json::{Map, Value};

/// A message being written.
#[derive(Default)]
struct Msg(Vec<u8>);

fn obj(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn list(v: Option<&Value>) -> impl Iterator<Item = &Value> {
    v.and_then(Value::as_array).into_iter().flatten()
}

impl Msg {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, tag: u32, wire: u8) {
        self.varint((u64::from(tag) << 3) | u64::from(wire));
    }

    fn bytes(&mut self, tag: u32, b: &[u8]) {
        self.key(tag, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn message(&mut self, tag: u32, m: Msg) {
        self.bytes(tag, &m.0);
    }

    fn string(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(s) = v.and_then(Value::as_str).filter(|s| !s.is_empty()) {
            self.bytes(tag, s.as_bytes());
        }
    }

    fn strings(&mut self, tag: u32, v: Option<&Value>) {
        for s in list(v).filter_map(Value::as_str) {
            self.bytes(tag, s.as_bytes());
        }
    }

    fn boolean(&mut self, tag: u32, v: Option<&Value>) {
        if v.and_then(Value::as_bool) == Some(true) {
            self.key(tag, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, tag: u32, v: Option<&Value>) {
        let n = v.and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)));
        if let Some(n) = n.filter(|n| *n != 0) {
            self.key(tag, 0);
            // Negative int64 values take ten bytes, as protobuf writes them.
            self.varint(n as u64);
        }
    }

    fn double(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(f) = v.and_then(Value::as_f64).filter(|f| *f != 0.0) {
            self.key(tag, 1);
            self.0.extend_from_slice(&f.to_le_bytes());
        }
    }

    fn any(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(v) = v {
            self.message(tag, any(v));
        }
    }

    fn anys(&mut self, tag: u32, v: Option<&Value>) {
        for item in list(v) {
            self.message(tag, any(item));
        }
    }

    /// Each `x-` key of `map` as a `NamedAny`.
    fn extensions(&mut self, tag: u32, map: &Map<String, Value>) {
        for (name, value) in map.iter().filter(|(k, _)| k.starts_with("x-")) {
            let mut named = Msg::default();
            named.bytes(1, name.as_bytes());
            named.message(2, any(value));
            self.message(tag, named);
        }
    }

    /// A map of `map`'s entries as `Named*` messages (field 1 the name, 2 the value) under `tag`.
    fn named(&mut self, tag: u32, map: &Map<String, Value>, value: impl Fn(&Value) -> Msg) {
        for (name, v) in map {
            let mut named = Msg::default();
            named.bytes(1, name.as_bytes());
            named.message(2, value(v));
            self.message(tag, named);
        }
    }

    /// A message whose field 1 holds `map` as named values (gnostic's `additional_properties`).
    fn wrapped_map(
        &mut self,
        tag: u32,
        map: Option<&Map<String, Value>>,
        value: impl Fn(&Value) -> Msg,
    ) {
        if let Some(map) = map {
            let mut wrapper = Msg::default();
            wrapper.named(1, map, value);
            self.message(tag, wrapper);
        }
    }
}

/// gnostic's `Any`: the value's YAML text in field 2.
fn any(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.bytes(2, v.to_string().as_bytes());
    m
}

/// The Swagger 2.0 document `doc` (as [`super::v2::v2_from_v3`] builds it) as an
/// `openapi.v2.Document`.
pub fn document(doc: &Value) -> Vec<u8> {
    let Some(d) = doc.as_object() else {
        return Vec::new();
    };
    let mut m = Msg::default();
    m.string(1, d.get("swagger"));
    if let Some(info) = obj(d.get("info")) {
        m.message(2, info_message(info));
    }
    m.string(3, d.get("host"));
    m.string(4, d.get("basePath"));
    m.strings(5, d.get("schemes"));
    m.strings(6, d.get("consumes"));
    m.strings(7, d.get("produces"));
    if let Some(paths) = obj(d.get("paths")) {
        let mut p = Msg::default();
        p.extensions(1, paths);
        let items = paths.iter().filter(|(k, _)| !k.starts_with("x-"));
        for (path, item) in items {
            let mut named = Msg::default();
            named.bytes(1, path.as_bytes());
            named.message(2, path_item(item));
            p.message(2, named);
        }
        m.message(8, p);
    }
    m.wrapped_map(9, obj(d.get("definitions")), schema);
    m.wrapped_map(10, obj(d.get("parameters")), parameter);
    m.wrapped_map(11, obj(d.get("responses")), response);
    security_requirements(&mut m, 12, d.get("security"));
    m.wrapped_map(13, obj(d.get("securityDefinitions")), security_definition);
    for tag in list(d.get("tags")).filter_map(Value::as_object) {
        let mut t = Msg::default();
        t.string(1, tag.get("name"));
        t.string(2, tag.get("description"));
        external_docs(&mut t, 3, tag.get("externalDocs"));
        t.extensions(4, tag);
        m.message(14, t);
    }
    external_docs(&mut m, 15, d.get("externalDocs"));
    m.extensions(16, d);
    m.0
}

fn info_message(info: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.string(1, info.get("title"));
    m.string(2, info.get("version"));
    m.string(3, info.get("description"));
    m.string(4, info.get("termsOfService"));
    if let Some(contact) = obj(info.get("contact")) {
        let mut c = Msg::default();
        c.string(1, contact.get("name"));
        c.string(2, contact.get("url"));
        c.string(3, contact.get("email"));
        c.extensions(4, contact);
        m.message(5, c);
    }
    if let Some(license) = obj(info.get("license")) {
        let mut l = Msg::default();
        l.string(1, license.get("name"));
        l.string(2, license.get("url"));
        l.extensions(3, license);
        m.message(6, l);
    }
    m.extensions(7, info);
    m
}

fn external_docs(m: &mut Msg, tag: u32, v: Option<&Value>) {
    if let Some(docs) = obj(v) {
        let mut e = Msg::default();
        e.string(1, docs.get("description"));
        e.string(2, docs.get("url"));
        e.extensions(3, docs);
        m.message(tag, e);
    }
}

/// `[{name: [scopes]}]` as repeated `SecurityRequirement`.
fn security_requirements(m: &mut Msg, tag: u32, v: Option<&Value>) {
    for requirement in list(v).filter_map(Value::as_object) {
        let mut r = Msg::default();
        r.named(1, requirement, |scopes| {
            let mut array = Msg::default();
            array.strings(1, Some(scopes));
            array
        });
        m.message(tag, r);
    }
}

fn security_definition(v: &Value) -> Msg {
    let mut item = Msg::default();
    let Some(d) = v.as_object() else {
        return item;
    };
    let text = |k: &str| d.get(k);
    let mut s = Msg::default();
    s.string(1, text("type"));
    let kind = match (
        text("type").and_then(Value::as_str),
        text("flow").and_then(Value::as_str),
    ) {
        (Some("basic"), _) => {
            s.string(2, text("description"));
            s.extensions(3, d);
            1
        }
        (Some("oauth2"), Some(flow)) => {
            s.string(2, text("flow"));
            s.wrapped_map(3, obj(text("scopes")), |scope| {
                let mut named = Msg::default();
                named.string(1, Some(scope));
                named
            });
            let urls: &[&str] = match flow {
                "implicit" => &["authorizationUrl"],
                "accessCode" => &["authorizationUrl", "tokenUrl"],
                _ => &["tokenUrl"],
            };
            let mut field = 4;
            for url in urls {
                s.string(field, text(url));
                field += 1;
            }
            s.string(field, text("description"));
            s.extensions(field + 1, d);
            match flow {
                "implicit" => 3,
                "password" => 4,
                "application" => 5,
                _ => 6,
            }
        }
        _ => {
            s.string(2, text("name"));
            s.string(3, text("in"));
            s.string(4, text("description"));
            s.extensions(5, d);
            2
        }
    };
    item.message(kind, s);
    item
}

fn path_item(v: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(item) = v.as_object() else {
        return m;
    };
    m.string(1, item.get("$ref"));
    let operations = ["get", "put", "post", "delete", "options", "head", "patch"];
    for (field, method) in (2..).zip(operations) {
        if let Some(op) = obj(item.get(method)) {
            m.message(field, operation(op));
        }
    }
    for p in list(item.get("parameters")) {
        m.message(9, parameters_item(p));
    }
    m.extensions(10, item);
    m
}

fn operation(op: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    m.strings(1, op.get("tags"));
    m.string(2, op.get("summary"));
    m.string(3, op.get("description"));
    external_docs(&mut m, 4, op.get("externalDocs"));
    m.string(5, op.get("operationId"));
    m.strings(6, op.get("produces"));
    m.strings(7, op.get("consumes"));
    for p in list(op.get("parameters")) {
        m.message(8, parameters_item(p));
    }
    if let Some(responses) = obj(op.get("responses")) {
        let mut r = Msg::default();
        let codes = responses.iter().filter(|(k, _)| !k.starts_with("x-"));
        for (code, value) in codes {
            let mut named = Msg::default();
            named.bytes(1, code.as_bytes());
            let mut response_value = Msg::default();
            match value.get("$ref") {
                Some(_) => response_value.message(2, json_reference(value)),
                None => response_value.message(1, response(value)),
            }
            named.message(2, response_value);
            r.message(1, named);
        }
        r.extensions(2, responses);
        m.message(9, r);
    }
    m.strings(10, op.get("schemes"));
    m.boolean(11, op.get("deprecated"));
    security_requirements(&mut m, 12, op.get("security"));
    m.extensions(13, op);
    m
}

fn json_reference(v: &Value) -> Msg {
    let mut m = Msg::default();
    m.string(1, v.get("$ref"));
    m.string(2, v.get("description"));
    m
}

fn parameters_item(v: &Value) -> Msg {
    let mut m = Msg::default();
    match v.get("$ref") {
        Some(_) => m.message(2, json_reference(v)),
        None => m.message(1, parameter(v)),
    }
    m
}

fn parameter(v: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(p) = v.as_object() else {
        return m;
    };
    let location = p.get("in").and_then(Value::as_str).unwrap_or_default();
    if location == "body" {
        let mut b = Msg::default();
        b.string(1, p.get("description"));
        b.string(2, p.get("name"));
        b.string(3, p.get("in"));
        b.boolean(4, p.get("required"));
        if let Some(s) = p.get("schema") {
            b.message(5, schema(s));
        }
        b.extensions(6, p);
        m.message(1, b);
        return m;
    }
    // The four non-body kinds share their first fields; query and formData have
    // `allowEmptyValue` before the rest, which moves everything after it by one.
    let (kind, allow_empty) = match location {
        "header" => (1, false),
        "formData" => (2, true),
        "query" => (3, true),
        _ => (4, false),
    };
    let mut s = Msg::default();
    s.boolean(1, p.get("required"));
    s.string(2, p.get("in"));
    s.string(3, p.get("description"));
    s.string(4, p.get("name"));
    let mut next = 5;
    if allow_empty {
        s.boolean(5, p.get("allowEmptyValue"));
        next = 6;
    }
    let after = primitive_fields(&mut s, next, p);
    s.extensions(after, p);
    let mut non_body = Msg::default();
    non_body.message(kind, s);
    m.message(2, non_body);
    m
}

/// The fields every simple (non-schema) type description shares, from `type` to `multipleOf`,
/// numbered from `first`; answers the number after them.
fn primitive_fields(m: &mut Msg, first: u32, p: &Map<String, Value>) -> u32 {
    m.string(first, p.get("type"));
    m.string(first + 1, p.get("format"));
    if let Some(items) = obj(p.get("items")) {
        m.message(first + 2, primitives_items(items));
    }
    m.string(first + 3, p.get("collectionFormat"));
    m.any(first + 4, p.get("default"));
    m.double(first + 5, p.get("maximum"));
    m.boolean(first + 6, p.get("exclusiveMaximum"));
    m.double(first + 7, p.get("minimum"));
    m.boolean(first + 8, p.get("exclusiveMinimum"));
    m.int64(first + 9, p.get("maxLength"));
    m.int64(first + 10, p.get("minLength"));
    m.string(first + 11, p.get("pattern"));
    m.int64(first + 12, p.get("maxItems"));
    m.int64(first + 13, p.get("minItems"));
    m.boolean(first + 14, p.get("uniqueItems"));
    m.anys(first + 15, p.get("enum"));
    m.double(first + 16, p.get("multipleOf"));
    first + 17
}

fn primitives_items(items: &Map<String, Value>) -> Msg {
    let mut m = Msg::default();
    let after = primitive_fields(&mut m, 1, items);
    m.extensions(after, items);
    m
}

fn response(v: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(r) = v.as_object() else {
        return m;
    };
    m.string(1, r.get("description"));
    if let Some(s) = r.get("schema") {
        let mut item = Msg::default();
        if s.get("type").and_then(Value::as_str) == Some("file") {
            item.message(2, file_schema(s));
        } else {
            item.message(1, schema(s));
        }
        m.message(2, item);
    }
    m.wrapped_map(3, obj(r.get("headers")), |h| {
        let mut header = Msg::default();
        if let Some(h) = h.as_object() {
            let after = primitive_fields(&mut header, 1, h);
            header.string(after, h.get("description"));
            header.extensions(after + 1, h);
        }
        header
    });
    m.wrapped_map(4, obj(r.get("examples")), any);
    m.extensions(5, r);
    m
}

fn file_schema(v: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(s) = v.as_object() else {
        return m;
    };
    m.string(1, s.get("format"));
    m.string(2, s.get("title"));
    m.string(3, s.get("description"));
    m.any(4, s.get("default"));
    m.strings(5, s.get("required"));
    m.string(6, s.get("type"));
    m.boolean(7, s.get("readOnly"));
    external_docs(&mut m, 8, s.get("externalDocs"));
    m.any(9, s.get("example"));
    m.extensions(10, s);
    m
}

fn schema(v: &Value) -> Msg {
    let mut m = Msg::default();
    let Some(s) = v.as_object() else {
        return m;
    };
    m.string(1, s.get("$ref"));
    m.string(2, s.get("format"));
    m.string(3, s.get("title"));
    m.string(4, s.get("description"));
    m.any(5, s.get("default"));
    m.double(6, s.get("multipleOf"));
    m.double(7, s.get("maximum"));
    m.boolean(8, s.get("exclusiveMaximum"));
    m.double(9, s.get("minimum"));
    m.boolean(10, s.get("exclusiveMinimum"));
    m.int64(11, s.get("maxLength"));
    m.int64(12, s.get("minLength"));
    m.string(13, s.get("pattern"));
    m.int64(14, s.get("maxItems"));
    m.int64(15, s.get("minItems"));
    m.boolean(16, s.get("uniqueItems"));
    m.int64(17, s.get("maxProperties"));
    m.int64(18, s.get("minProperties"));
    m.strings(19, s.get("required"));
    m.anys(20, s.get("enum"));
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut item = Msg::default();
            // A oneof member is written even when false: it says which member is set.
            item.key(2, 0);
            item.varint(u64::from(*b));
            m.message(21, item);
        }
        Some(sub @ Value::Object(_)) => {
            let mut item = Msg::default();
            item.message(1, schema(sub));
            m.message(21, item);
        }
        _ => {}
    }
    match s.get("type") {
        Some(t @ Value::String(_)) => {
            let mut item = Msg::default();
            item.string(1, Some(t));
            m.message(22, item);
        }
        Some(t @ Value::Array(_)) => {
            let mut item = Msg::default();
            item.strings(1, Some(t));
            m.message(22, item);
        }
        _ => {}
    }
    match s.get("items") {
        Some(one @ Value::Object(_)) => {
            let mut item = Msg::default();
            item.message(1, schema(one));
            m.message(23, item);
        }
        Some(Value::Array(many)) => {
            let mut item = Msg::default();
            for one in many {
                item.message(1, schema(one));
            }
            m.message(23, item);
        }
        _ => {}
    }
    for part in list(s.get("allOf")) {
        m.message(24, schema(part));
    }
    m.wrapped_map(25, obj(s.get("properties")), schema);
    m.string(26, s.get("discriminator"));
    m.boolean(27, s.get("readOnly"));
    if let Some(xml) = obj(s.get("xml")) {
        let mut x = Msg::default();
        x.string(1, xml.get("name"));
        x.string(2, xml.get("namespace"));
        x.string(3, xml.get("prefix"));
        x.boolean(4, xml.get("attribute"));
        x.boolean(5, xml.get("wrapped"));
        x.extensions(6, xml);
        m.message(28, x);
    }
    external_docs(&mut m, 29, s.get("externalDocs"));
    m.any(30, s.get("example"));
    m.extensions(31, s);
    m
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A field as read back: its number and its payload (varint value or bytes).
    #[derive(Debug, PartialEq)]
    enum Field {
        Varint(u64),
        Fixed64(u64),
        Bytes(Vec<u8>),
    }

    fn read_varint(b: &[u8], at: &mut usize) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let byte = b[*at];
            *at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    fn fields(b: &[u8]) -> Vec<(u32, Field)> {
        let mut at = 0;
        let mut out = Vec::new();
        while at < b.len() {
            let key = read_varint(b, &mut at);
            let tag = (key >> 3) as u32;
            let field = match key & 7 {
                0 => Field::Varint(read_varint(b, &mut at)),
                1 => {
                    let mut le = [0u8; 8];
                    le.copy_from_slice(&b[at..at + 8]);
                    at += 8;
                    Field::Fixed64(u64::from_le_bytes(le))
                }
                2 => {
                    let len = read_varint(b, &mut at) as usize;
                    at += len;
                    Field::Bytes(b[at - len..at].to_vec())
                }
                other => panic!("unexpected wire type {other}"),
            };
            out.push((tag, field));
        }
        out
    }

    fn bytes_of(fields: &[(u32, Field)], tag: u32) -> Vec<Vec<u8>> {
        fields
            .iter()
            .filter(|(t, _)| *t == tag)
            .filter_map(|(_, f)| match f {
                Field::Bytes(b) => Some(b.clone()),
                _ => None,
            })
            .collect()
    }

    fn text_of(fields: &[(u32, Field)], tag: u32) -> String {
        let all = bytes_of(fields, tag);
        String::from_utf8(all.into_iter().next().unwrap_or_default()).unwrap_or_default()
    }

    #[test]
    fn definitions_keep_their_schemas_and_extensions() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.33.0"},
            "paths": {"/api/v1/configmaps": {"get": {
                "operationId": "listConfigMap",
                "parameters": [{"name": "limit", "in": "query", "type": "integer", "uniqueItems": true}],
                "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/cml"}}},
                "x-kubernetes-action": "list",
            }}},
            "definitions": {"io.k8s.api.core.v1.ConfigMap": {
                "type": "object",
                "required": ["metadata"],
                "properties": {
                    "data": {"type": "object", "additionalProperties": {"type": "string"}},
                    "immutable": {"type": "boolean", "default": false},
                },
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}],
            }},
        });
        let top = fields(&document(&doc));
        assert_eq!(text_of(&top, 1), "2.0");
        let info = fields(&bytes_of(&top, 2)[0]);
        assert_eq!(text_of(&info, 1), "Kubernetes");

        // definitions → NamedSchema → Schema.
        let definitions = fields(&bytes_of(&top, 9)[0]);
        let named = fields(&bytes_of(&definitions, 1)[0]);
        assert_eq!(text_of(&named, 1), "io.k8s.api.core.v1.ConfigMap");
        let schema = fields(&bytes_of(&named, 2)[0]);
        assert_eq!(text_of(&fields(&bytes_of(&schema, 22)[0]), 1), "object");
        assert_eq!(text_of(&schema, 19), "metadata");
        let extension = fields(&bytes_of(&schema, 31)[0]);
        assert_eq!(text_of(&extension, 1), "x-kubernetes-group-version-kind");
        let yaml = text_of(&fields(&bytes_of(&extension, 2)[0]), 2);
        assert_eq!(
            serde_json::from_str::<Value>(&yaml).ok(),
            Some(json!([{"group": "", "kind": "ConfigMap", "version": "v1"}]))
        );
        // properties → NamedSchema "data" → additionalProperties → schema of type string.
        let properties = fields(&bytes_of(&schema, 25)[0]);
        let data = fields(&bytes_of(&properties, 1)[0]);
        assert_eq!(text_of(&data, 1), "data");
        let data_schema = fields(&bytes_of(&data, 2)[0]);
        let additional = fields(&bytes_of(&data_schema, 21)[0]);
        let string_schema = fields(&bytes_of(&additional, 1)[0]);
        assert_eq!(
            text_of(&fields(&bytes_of(&string_schema, 22)[0]), 1),
            "string"
        );
        // A default of `false` is still there, as YAML text.
        let immutable = fields(&bytes_of(&properties, 1)[1]);
        let immutable_schema = fields(&bytes_of(&immutable, 2)[0]);
        assert_eq!(
            text_of(&fields(&bytes_of(&immutable_schema, 5)[0]), 2),
            "false"
        );

        // paths → NamedPathItem → PathItem.get → Operation.
        let paths = fields(&bytes_of(&top, 8)[0]);
        let path = fields(&bytes_of(&paths, 2)[0]);
        assert_eq!(text_of(&path, 1), "/api/v1/configmaps");
        let get = fields(&bytes_of(&fields(&bytes_of(&path, 2)[0]), 2)[0]);
        assert_eq!(text_of(&get, 5), "listConfigMap");
        // A query parameter: ParametersItem.parameter → Parameter.non_body → query (3), whose
        // `type` is field 6 and `uniqueItems` field 20.
        let item = fields(&bytes_of(&get, 8)[0]);
        let non_body = fields(&bytes_of(&fields(&bytes_of(&item, 1)[0]), 2)[0]);
        let query = fields(&bytes_of(&non_body, 3)[0]);
        assert_eq!(text_of(&query, 4), "limit");
        assert_eq!(text_of(&query, 6), "integer");
        assert!(query.contains(&(20, Field::Varint(1))));
        // responses → NamedResponseValue "200" → ResponseValue.response → schema → $ref.
        let responses = fields(&bytes_of(&get, 9)[0]);
        let ok = fields(&bytes_of(&responses, 1)[0]);
        assert_eq!(text_of(&ok, 1), "200");
        let response = fields(&bytes_of(&fields(&bytes_of(&ok, 2)[0]), 1)[0]);
        let schema_item = fields(&bytes_of(&response, 2)[0]);
        let referenced = fields(&bytes_of(&schema_item, 1)[0]);
        assert_eq!(text_of(&referenced, 1), "#/definitions/cml");
        let action = fields(&bytes_of(&get, 13)[0]);
        assert_eq!(text_of(&action, 1), "x-kubernetes-action");
    }

    #[test]
    fn additional_properties_false_is_written() {
        let m = schema(&json!({"additionalProperties": false}));
        let top = fields(&m.0);
        let item = fields(&bytes_of(&top, 21)[0]);
        assert_eq!(item, vec![(2, Field::Varint(0))]);
    }
}
