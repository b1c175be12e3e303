use std::time::{Duration, Instant};

use serde_json::{Value as Json, json};

use super::*;
use crate::validate::CauseReason;

const AT: &str = "spec.validation.openAPIV3Schema";

fn compile(schema: Json) -> CelRules {
    match CelRules::compile(&schema, AT) {
        Ok(rules) => rules,
        Err(causes) => panic!("compile failed: {causes:#?}"),
    }
}

fn compile_err(schema: Json) -> Vec<FieldCause> {
    match CelRules::compile(&schema, AT) {
        Ok(_) => panic!("compiled"),
        Err(causes) => causes,
    }
}

/// A CRD root whose `spec` has `rules` and `properties`.
fn spec_schema(rules: Json, properties: Json) -> Json {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": rules,
                "properties": properties
            }
        }
    })
}

fn cr(spec: Json) -> Json {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

fn cause(field: &str, reason: CauseReason, message: &str) -> FieldCause {
    FieldCause {
        field: field.to_owned(),
        reason,
        message: message.to_owned(),
    }
}

fn autoscaler() -> CelRules {
    compile(spec_schema(
        json!([{"rule": "self.minReplicas <= self.maxReplicas",
                "message": "minReplicas must not exceed maxReplicas"}]),
        json!({"minReplicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}}),
    ))
}

#[test]
fn shared_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<CelRules>();
}

#[test]
fn schema_without_rules_is_empty() {
    let rules = compile(json!({"type": "object", "properties": {"spec": {"type": "object"}}}));
    assert!(rules.is_empty());
    assert!(!autoscaler().is_empty());
    assert!(rules.validate(&cr(json!({})), None).is_empty());
}

#[test]
fn object_rule_holds_or_fails_with_kubernetes_text() {
    let rules = autoscaler();
    let good = cr(json!({"minReplicas": 1, "maxReplicas": 3}));
    assert_eq!(rules.validate(&good, None), vec![]);
    let bad = cr(json!({"minReplicas": 5, "maxReplicas": 3}));
    assert_eq!(
        rules.validate(&bad, None),
        vec![cause(
            "spec",
            CauseReason::FieldValueInvalid,
            "Invalid value: \"object\": minReplicas must not exceed maxReplicas"
        )]
    );
}

#[test]
fn default_message_names_the_rule() {
    let rules = compile(spec_schema(
        json!([{"rule": "self.replicas >= 0"}]),
        json!({"replicas": {"type": "integer"}}),
    ));
    assert_eq!(
        rules.validate(&cr(json!({"replicas": -1})), None)[0].message,
        "Invalid value: \"object\": failed rule: self.replicas >= 0"
    );
}

#[test]
fn message_expression_and_its_fallback() {
    let rules = compile(spec_schema(
        json!([
            {"rule": "self.replicas <= 10",
             "messageExpression": "'replicas is ' + string(self.replicas) + ', at most 10 allowed'"},
            {"rule": "self.replicas <= 5", "message": "static text",
             "messageExpression": "'missing: ' + self.nothing"}
        ]),
        json!({"replicas": {"type": "integer"}, "nothing": {"type": "string"}}),
    ));
    let causes = rules.validate(&cr(json!({"replicas": 12})), None);
    let messages: Vec<&str> = causes.iter().map(|c| c.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "Invalid value: \"object\": replicas is 12, at most 10 allowed",
            "Invalid value: \"object\": static text"
        ]
    );
}

#[test]
fn reason_and_field_path() {
    let rules = compile(spec_schema(
        json!([
            {"rule": "!has(self.legacy)", "message": "legacy is gone",
             "reason": "FieldValueForbidden", "fieldPath": ".legacy"},
            {"rule": "has(self.owner)", "message": "an owner is needed",
             "reason": "FieldValueRequired", "fieldPath": "['owner']"},
            {"rule": "self.tags.all(k, k != 'x')", "reason": "FieldValueDuplicate",
             "fieldPath": ".tags['x']"}
        ]),
        json!({
            "legacy": {"type": "string"},
            "owner": {"type": "string"},
            "tags": {"type": "object", "additionalProperties": {"type": "string"}}
        }),
    ));
    let causes = rules.validate(&cr(json!({"legacy": "y", "tags": {"x": "1"}})), None);
    assert_eq!(
        causes,
        vec![
            cause(
                "spec.legacy",
                CauseReason::FieldValueForbidden,
                "Forbidden: legacy is gone"
            ),
            cause(
                "spec.owner",
                CauseReason::FieldValueRequired,
                "Required value: an owner is needed"
            ),
            cause(
                "spec.tags[x]",
                CauseReason::FieldValueDuplicate,
                "Duplicate value: \"object\""
            ),
        ]
    );
}

#[test]
fn immutability_is_a_transition_rule() {
    let rules = compile(spec_schema(
        json!([]),
        json!({"name": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]}}),
    ));
    let v1 = cr(json!({"name": "a"}));
    let v2 = cr(json!({"name": "b"}));
    // Create: no old value, the rule does not run.
    assert!(rules.validate(&v2, None).is_empty());
    assert!(rules.validate(&v1, Some(&v1)).is_empty());
    assert_eq!(
        rules.validate(&v2, Some(&v1)),
        vec![cause(
            "spec.name",
            CauseReason::FieldValueInvalid,
            "Invalid value: \"string\": name is immutable"
        )]
    );
    // A field absent before has no old value: the rule does not run.
    assert!(rules.validate(&v2, Some(&cr(json!({})))).is_empty());
}

#[test]
fn optional_old_self_runs_on_create() {
    let rules = compile(spec_schema(
        json!([{"rule": "oldSelf.hasValue() ? self.size >= oldSelf.value().size : self.size < 10",
                "message": "may only grow, from below 10", "optionalOldSelf": true}]),
        json!({"size": {"type": "integer"}}),
    ));
    assert_eq!(rules.validate(&cr(json!({"size": 20})), None).len(), 1);
    assert!(rules.validate(&cr(json!({"size": 5})), None).is_empty());
    let old = cr(json!({"size": 20}));
    assert!(
        rules
            .validate(&cr(json!({"size": 30})), Some(&old))
            .is_empty()
    );
    assert_eq!(
        rules.validate(&cr(json!({"size": 15})), Some(&old)).len(),
        1
    );
}

#[test]
fn rule_on_list_items() {
    let rules = compile(spec_schema(
        json!([]),
        json!({"ports": {"type": "array", "items": {
            "type": "object",
            "properties": {"port": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.port > 0 && self.port < 65536", "message": "bad port"}]
        }}}),
    ));
    let causes = rules.validate(
        &cr(json!({"ports": [{"port": 80}, {"port": 0}, {"port": 70000}]})),
        None,
    );
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert_eq!(fields, ["spec.ports[1]", "spec.ports[2]"]);
}

#[test]
fn map_list_items_correlate_by_key() {
    let rules = compile(spec_schema(
        json!([]),
        json!({"volumes": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.size >= oldSelf.size", "message": "cannot shrink"}]
            }
        }}),
    ));
    let old = cr(json!({"volumes": [{"name": "a", "size": 5}, {"name": "b", "size": 5}]}));
    // Reordered and grown: each item meets its own old item.
    let grown = cr(
        json!({"volumes": [{"name": "b", "size": 6}, {"name": "a", "size": 5}, {"name": "c", "size": 1}]}),
    );
    assert!(rules.validate(&grown, Some(&old)).is_empty());
    let shrunk = cr(json!({"volumes": [{"name": "c", "size": 1}, {"name": "a", "size": 4}]}));
    assert_eq!(
        rules.validate(&shrunk, Some(&old)),
        vec![cause(
            "spec.volumes[1]",
            CauseReason::FieldValueInvalid,
            "Invalid value: \"object\": cannot shrink"
        )]
    );
}

#[test]
fn old_self_is_refused_inside_atomic_lists() {
    let causes = compile_err(spec_schema(
        json!([]),
        json!({"items": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}),
    ));
    assert_eq!(causes.len(), 1);
    assert_eq!(
        causes[0].field,
        "spec.validation.openAPIV3Schema.properties[spec].properties[items].items.x-kubernetes-validations[0].rule"
    );
    assert!(
        causes[0]
            .message
            .contains("oldSelf cannot be used on the uncorrelatable portion of the schema"),
        "{causes:?}"
    );
}

#[test]
fn runtime_errors_are_invalid_causes() {
    let rules = compile(spec_schema(
        json!([
            {"rule": "self.total / self.parts > 1"},
            {"rule": "self.missing > 0", "message": "missing must be positive"}
        ]),
        json!({"total": {"type": "integer"}, "parts": {"type": "integer"}, "missing": {"type": "integer"}}),
    ));
    assert_eq!(
        rules.validate(&cr(json!({"total": 4, "parts": 0})), None),
        vec![
            cause(
                "spec",
                CauseReason::FieldValueInvalid,
                "Invalid value: \"object\": division by zero evaluating rule: self.total / self.parts > 1"
            ),
            cause(
                "spec",
                CauseReason::FieldValueInvalid,
                "Invalid value: \"object\": no such key: missing evaluating rule: missing must be positive"
            ),
        ]
    );
}

#[test]
fn syntax_error_fails_compilation_with_the_rule_path() {
    let causes = compile_err(spec_schema(
        json!([{"rule": "self.a <= 1"}, {"rule": "self.a >"}]),
        json!({"a": {"type": "integer"}}),
    ));
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(
        causes[0].field,
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule"
    );
    assert_eq!(causes[0].reason, CauseReason::FieldValueInvalid);
    assert!(
        causes[0].message.starts_with(
            "Invalid value: apiextensions.ValidationRule{Rule:\"self.a >\", Message:\"\", MessageExpression:\"\", \
             Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: \
             compilation failed: ERROR: <input>:1:"
        ),
        "{}",
        causes[0].message
    );
}

#[test]
fn other_compile_errors() {
    let causes = compile_err(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "undeclared > 1"},
            {"rule": "Foo{a: 1} == self"},
            {"rule": "self.a > 0", "reason": "FieldValueTooLong"},
            {"rule": "self.a > 0", "fieldPath": ".nope"},
            {"rule": "self.a > 0", "messageExpression": "'x' +"},
            {"rule": "self.a > 0", "optionalOldSelf": true},
            {"rule": " "}
        ],
        "properties": {"a": {"type": "integer"}}
    }));
    let got: Vec<(&str, CauseReason)> = causes
        .iter()
        .map(|c| (c.field.as_str(), c.reason))
        .collect();
    let at = |i: usize, field: &str| format!("{AT}.x-kubernetes-validations[{i}].{field}");
    let expected = [
        (at(0, "rule"), CauseReason::FieldValueInvalid),
        (at(1, "rule"), CauseReason::FieldValueInvalid),
        (at(2, "reason"), CauseReason::FieldValueNotSupported),
        (at(3, "fieldPath"), CauseReason::FieldValueInvalid),
        (at(4, "messageExpression"), CauseReason::FieldValueInvalid),
        (at(5, "optionalOldSelf"), CauseReason::FieldValueInvalid),
        (at(6, "rule"), CauseReason::FieldValueRequired),
    ];
    let expected: Vec<(&str, CauseReason)> =
        expected.iter().map(|(f, r)| (f.as_str(), *r)).collect();
    assert_eq!(got, expected, "{causes:#?}");
    assert!(
        causes[0]
            .message
            .ends_with("undeclared reference to 'undeclared' (in container '')")
    );
}

#[test]
fn cost_bomb_is_stopped_quickly() {
    let rules = compile(spec_schema(
        json!([{"rule": "self.l.all(a, self.l.all(b, self.l.all(c, self.l.all(d, a + b + c + d >= 0))))"},
               {"rule": "self.l.size() > 1000", "message": "never reached"}]),
        json!({"l": {"type": "array", "items": {"type": "integer"}}}),
    ));
    // 100^4 iterations: far beyond the per-call limit.
    let spec = json!({"l": (0..100).collect::<Vec<i64>>()});
    let started = Instant::now();
    let causes = rules.validate(&cr(spec), None);
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(causes[0].field, "spec");
    assert_eq!(
        causes[0].message,
        "Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further \
         validation rules will be run due to call cost exceeds limit for rule: \
         self.l.all(a, self.l.all(b, self.l.all(c, self.l.all(d, a + b + c + d >= 0))))"
    );
}

#[test]
fn runtime_budget_is_shared_by_all_rules() {
    // Each item's rule costs about half the per-call limit; the 10M budget runs out after
    // about twenty of them.
    let rules = compile(spec_schema(
        json!([]),
        json!({"items": {"type": "array", "items": {
            "type": "object",
            "properties": {"l": {"type": "array", "items": {"type": "integer"}}},
            "x-kubernetes-validations": [{"rule": "self.l.all(a, self.l.all(b, a + b >= 0))"}]
        }}}),
    ));
    let item = json!({"l": (0..200).collect::<Vec<i64>>()});
    let spec = json!({"items": vec![item; 40]});
    let causes = rules.validate(&cr(spec), None);
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert!(causes[0].field.starts_with("spec.items["));
    assert!(
        causes[0].message.ends_with(
            "validation failed due to running out of cost budget, no further validation rules will be run"
        ),
        "{causes:?}"
    );
}

#[test]
fn list_building_macros_are_charged_by_size() {
    // map() copies its accumulator on every step here: quadratic work must hit the limit.
    let rules = compile(spec_schema(
        json!([{"rule": "self.l.map(x, x).size() >= 0"}]),
        json!({"l": {"type": "array", "items": {"type": "integer"}}}),
    ));
    let small = json!({"l": (0..100).collect::<Vec<i64>>()});
    assert!(rules.validate(&cr(small), None).is_empty());
    let large = json!({"l": (0..5000).collect::<Vec<i64>>()});
    let causes = rules.validate(&cr(large), None);
    assert_eq!(causes.len(), 1);
    assert!(causes[0].message.contains("call cost exceeds limit"));
}

#[test]
fn values_are_typed_by_the_schema() {
    let rules = compile(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.kind == 'Widget' && self.metadata.name == 'w'", "message": "root"},
            {"rule": "self.metadata.all(k, k == 'name')", "message": "only name and generateName"}
        ],
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.start < self.end", "message": "timestamps"},
                {"rule": "self.timeout < duration('1h')", "message": "durations"},
                {"rule": "self.foo__dash__bar == 1 && self.__namespace__ == 'n'", "message": "escaping"},
                {"rule": "self.ratio == 2.0", "message": "numbers are doubles"},
                {"rule": "self.port == 80 || self.port == 'http'", "message": "int-or-string"},
                {"rule": "self.labels['a.b'] == 'c'", "message": "map keys stay"},
                {"rule": "self.free.anything == 1", "message": "unknown fields preserved"},
                {"rule": "self.inner.apiVersion == 'v1' && self.inner.metadata.name == 'x' && self.inner.metadata.size() == 1",
                 "message": "embedded resource"}
            ],
            "properties": {
                "start": {"type": "string", "format": "date-time"},
                "end": {"type": "string", "format": "date-time"},
                "timeout": {"type": "string", "format": "duration"},
                "foo-bar": {"type": "integer"},
                "namespace": {"type": "string"},
                "ratio": {"type": "number"},
                "port": {"x-kubernetes-int-or-string": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "inner": {"type": "object", "x-kubernetes-embedded-resource": true,
                          "x-kubernetes-preserve-unknown-fields": true}
            }
        }}
    }));
    let object = json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "labels": {"a": "b"}},
        "spec": {
            // As strings these would compare the other way round.
            "start": "2024-01-01T10:00:00+05:00", "end": "2024-01-01T06:00:00Z",
            "timeout": "30m", "foo-bar": 1, "namespace": "n", "ratio": 2,
            "port": "http", "labels": {"a.b": "c"}, "free": {"anything": 1},
            "inner": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "y"}}
        }
    });
    assert_eq!(rules.validate(&object, None), vec![]);
    // Flip one typed value to show the rules do look at them.
    let mut late = object.clone();
    late["spec"]["start"] = json!("2024-01-01T07:00:00Z");
    late["spec"]["port"] = json!(80);
    let causes = rules.validate(&late, None);
    assert_eq!(
        causes,
        vec![cause(
            "spec",
            CauseReason::FieldValueInvalid,
            "Invalid value: \"object\": timestamps"
        )]
    );
}

#[test]
fn additional_properties_and_all_of() {
    let rules = compile(spec_schema(
        json!([]),
        json!({
            "limits": {"type": "object", "additionalProperties": {
                "type": "integer",
                "x-kubernetes-validations": [{"rule": "self >= 0", "message": "negative"}]
            }},
            "name": {"type": "string", "allOf": [
                {"x-kubernetes-validations": [{"rule": "self.startsWith('w-')", "message": "prefix"}]}
            ]}
        }),
    ));
    let causes = rules.validate(
        &cr(json!({"limits": {"cpu": 1, "mem": -1}, "name": "x"})),
        None,
    );
    assert_eq!(
        causes,
        vec![
            cause(
                "spec.limits[mem]",
                CauseReason::FieldValueInvalid,
                "Invalid value: \"integer\": negative"
            ),
            cause(
                "spec.name",
                CauseReason::FieldValueInvalid,
                "Invalid value: \"string\": prefix"
            ),
        ]
    );
}

#[test]
fn nulls_are_not_validated() {
    let rules = compile(spec_schema(
        json!([]),
        json!({"n": {"type": "integer", "nullable": true,
            "x-kubernetes-validations": [{"rule": "self > 0"}]}}),
    ));
    assert!(rules.validate(&cr(json!({"n": null})), None).is_empty());
    assert_eq!(rules.validate(&cr(json!({"n": 0})), None).len(), 1);
}

#[test]
fn unchanged_values_are_ratcheted() {
    let rules = autoscaler();
    let bad = cr(json!({"minReplicas": 5, "maxReplicas": 3}));
    // The stored object already broke the rule and the update leaves spec alone.
    let mut relabelled = bad.clone();
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    assert!(rules.validate(&relabelled, Some(&bad)).is_empty());
    // Touching spec makes the rule count again.
    let worse = cr(json!({"minReplicas": 6, "maxReplicas": 3}));
    assert_eq!(rules.validate(&worse, Some(&bad)).len(), 1);
}

/// `self` for the library tests below.
fn library_schema(rules: Json) -> Json {
    json!({"type": "object", "x-kubernetes-validations": rules, "properties": {
        "s": {"type": "string"},
        "l": {"type": "array", "items": {"type": "integer"}},
        "m": {"type": "object", "additionalProperties": {"type": "string"}}}})
}

#[test]
fn kubernetes_libraries_are_available() {
    let expressions = [
        "self.l.exists_one(x, x == 1)",
        "self.l.all(x, x > 0 || [1, 2].exists(y, y == x))",
        "self.l.map(x, x * 2).sum() == 6 && self.l.filter(x, x > 1).size() == 1",
        "quantity('1Gi').isGreaterThan(quantity('1Mi'))",
        "isURL('https://a/b') && url('https://a.b/c').getHost() == 'a.b'",
        "self.s.matches('^a') && self.s.split(',').size() == 2",
        "self.s.lowerAscii() == 'a,b' && self.s.charAt(0) == 'a' && self.s.reverse() == 'b,a'",
        "sets.contains([1, 2], [1]) && self.l.isSorted() && self.l.indexOf(2) == 1",
        "ip('10.0.0.1').family() == 4 && isCIDR('10.0.0.0/8')",
        "'%s'.format(['x']) == 'x' && strings.quote('a') == '\"a\"'",
        "math.greatest(1, 2) == 2 && base64.encode(b'a') == 'YQ=='",
        "semver('1.2.3').major() == 1",
        "timestamp('2024-01-01T00:00:00Z') + duration('1h') > timestamp('2024-01-01T00:00:00Z')",
        "'a' in self.m && has(self.m.a) && self.m.all(k, k == 'a')",
        "int('5') == 5 && double(1) == 1.0 && dyn(self.s) == 'a,b'",
        "lists.range(3) == [0, 1, 2] && self.l.slice(0, 1) == [1]",
        "optional.of(1).hasValue() && self.l[?5].orValue(3) == 3",
        "self.?missing.orValue(1) == 1 && !self.?missing.hasValue() && self.?m.?a.orValue('q') == 'x'",
        "self.m[?'zz'].orValue('q') == 'q'",
    ];
    let rules: Vec<Json> = expressions.iter().map(|e| json!({"rule": e})).collect();
    let rules = compile(library_schema(json!(rules)));
    let causes = rules.validate(&json!({"s": "a,b", "l": [1, 2], "m": {"a": "x"}}), None);
    assert_eq!(causes, vec![]);
    // And they can fail: the same rules on other data.
    let causes = rules.validate(&json!({"s": "b", "l": [2, 1], "m": {}}), None);
    assert!(causes.len() >= 5, "{causes:#?}");
}

#[test]
fn macros_this_interpreter_lacks_are_refused_at_compile_time() {
    for rule in [
        "cel.bind(x, 1, x == 1)",
        "self.l.sortBy(x, x) == self.l",
        "self.l.all(i, v, v >= 0)",
        "type(self.s) == string",
    ] {
        let causes = compile_err(library_schema(json!([{"rule": rule}])));
        assert_eq!(causes.len(), 1);
        assert!(
            causes[0]
                .message
                .contains("is not supported by this server"),
            "{rule}: {causes:?}"
        );
    }
}

#[test]
fn copies_of_big_values_in_loops_are_charged_by_size() {
    let rules = compile(spec_schema(
        json!([{"rule": "self.items.all(i, self.s.size() > 0)"}]),
        json!({"s": {"type": "string"}, "items": {"type": "array", "items": {
            "type": "object", "properties": {"name": {"type": "string"}}}}}),
    ));
    let items: Vec<Json> = (0..1000)
        .map(|n| json!({"name": format!("n{n}")}))
        .collect();
    // This interpreter copies `self.s` on each of the 1000 iterations: 100 MB of copying.
    let big = json!({"items": items, "s": "a".repeat(100_000)});
    let causes = rules.validate(&cr(big), None);
    assert_eq!(causes.len(), 1);
    assert!(causes[0].message.contains("call cost exceeds limit"));
    // The same loop over small values stays well within the limit.
    let small = json!({"items": items, "s": "a".repeat(100)});
    assert_eq!(rules.validate(&cr(small), None), vec![]);
}

#[test]
fn functions_that_multiply_their_input_are_charged_first() {
    let object = json!({"s": "a".repeat(5_000), "l": (0..20_000).collect::<Vec<i64>>(), "m": {}});
    let bombs = [
        "lists.range(100000000).size() > 0",
        "self.s.replace('a', self.s + self.s + self.s + self.s).size() > 0",
        "'%.100000000f'.format([1.0]) != ''",
        "sets.contains(self.l, self.l)",
        "self.l.distinct().size() > 0",
    ];
    for rule in bombs {
        let rules = compile(library_schema(json!([{"rule": rule}])));
        let started = Instant::now();
        let causes = rules.validate(&object, None);
        assert!(started.elapsed() < Duration::from_secs(10), "{rule}");
        assert_eq!(causes.len(), 1, "{rule}: {causes:?}");
        assert!(
            causes[0].message.contains("call cost exceeds limit"),
            "{rule}: {causes:?}"
        );
    }
    // The guarded functions still do their job on small inputs.
    let rules = compile(library_schema(json!([
        {"rule": "lists.range(3) == [0, 1, 2] && 'aXa'.replace('a', 'bb') == 'bbXbb'"},
        {"rule": "'abab'.replace('a', 'c', 1) == 'cbab' && 'abab'.replace('a', 'c', -1) == 'cbcb'"},
        {"rule": "'%.2f'.format([1.0]) == '1.00' && sets.contains([1, 2], [2])"},
        {"rule": "[1, 1, 2].distinct() == [1, 2] && sets.equivalent([1, 2], [2, 1])"},
        {"rule": "!sets.intersects([1], [2])"},
    ])));
    assert_eq!(rules.validate(&object, None), vec![]);
}

#[test]
fn a_costly_message_expression_stops_validation() {
    let rules = compile(library_schema(json!([
        {"rule": "false", "messageExpression": "self.l.all(a, self.l.all(b, a + b >= 0)) ? 'x' : 'y'"},
        {"rule": "false", "message": "never reached"}
    ])));
    let causes = rules.validate(&json!({"l": (0..2_000).collect::<Vec<i64>>()}), None);
    assert_eq!(
        causes,
        vec![cause(
            "<nil>",
            CauseReason::FieldValueInvalid,
            "Invalid value: \"object\": no further validation rules will be run due to call cost exceeds limit for messageExpression: \"self.l.all(a, self.l.all(b, a + b >= 0)) ? 'x' : 'y'\""
        )]
    );
}

#[test]
fn root_rules_report_a_nil_field() {
    let rules = compile(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.startsWith('my-')", "message": "name needs a prefix"},
            {"rule": "has(self.spec)", "message": "spec is required", "fieldPath": ".spec",
             "reason": "FieldValueRequired"}
        ],
        "properties": {"spec": {"type": "object"}}
    }));
    assert_eq!(
        rules.validate(&json!({"metadata": {"name": "w"}}), None),
        vec![
            cause(
                "<nil>",
                CauseReason::FieldValueInvalid,
                "Invalid value: \"object\": name needs a prefix"
            ),
            cause(
                "spec",
                CauseReason::FieldValueRequired,
                "Required value: spec is required"
            ),
        ]
    );
}

#[test]
fn selecting_undeclared_fields_fails_compilation() {
    let schema = |rule: &str| {
        json!({
            "type": "object",
            "x-kubernetes-validations": [{"rule": rule}],
            "properties": {"spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "foo-bar": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}}
        })
    };
    for (rule, error) in [
        ("self.spec.replica > 0", "undefined field 'replica'"),
        ("has(self.spec.foo_bar)", "undefined field 'foo_bar'"),
        (
            "self.metadata.labels.size() > 0",
            "undefined field 'labels'",
        ),
        (
            "self.spec.replicas.value > 0",
            "type 'integer' does not support field selection",
        ),
        (
            "self.spec.labels.all(k, self.spec.nope == k)",
            "undefined field 'nope'",
        ),
    ] {
        let causes = compile_err(schema(rule));
        assert_eq!(causes.len(), 1);
        assert!(causes[0].message.ends_with(error), "{rule}: {causes:?}");
    }
    for rule in [
        "self.spec.replicas > 0 || self.spec.foo__dash__bar == ''",
        "self.spec.labels.anything == 'x' || self.spec.free.any.depth == 1",
        "self.apiVersion != '' && self.kind != '' && self.metadata.name != ''",
    ] {
        compile(schema(rule));
    }
}

#[test]
fn reordered_set_and_map_lists_equal_their_old_value() {
    let rules = compile(spec_schema(
        json!([{"rule": "self == oldSelf", "message": "spec is immutable"}]),
        json!({
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "order": {"type": "array", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"},
                    "hosts": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}}
        }),
    ));
    let old = cr(json!({
        "tags": ["a", "b"], "order": ["x", "y"],
        "ports": [{"name": "http", "port": 80, "hosts": ["h1", "h2"]}, {"name": "https", "port": 443}]
    }));
    let reordered = cr(json!({
        "tags": ["b", "a"], "order": ["x", "y"],
        "ports": [{"name": "https", "port": 443}, {"name": "http", "port": 80, "hosts": ["h2", "h1"]}]
    }));
    assert_eq!(rules.validate(&reordered, Some(&old)), vec![]);
    // Atomic lists keep their order; changed values still differ.
    for change in [
        json!({"order": ["y", "x"]}),
        json!({"tags": ["a", "c"]}),
        json!({"ports": [{"name": "https", "port": 444}, {"name": "http", "port": 80, "hosts": ["h1", "h2"]}]}),
    ] {
        let mut changed = reordered.clone();
        for (k, v) in change.as_object().into_iter().flatten() {
            changed["spec"][k] = v.clone();
        }
        assert_eq!(rules.validate(&changed, Some(&old)).len(), 1, "{change}");
    }
}

/// A rule reading a map (additionalProperties) key field by field sees it by its own name, as when
/// the map converts whole: keys are not escaped in CEL, even `__x`.
#[test]
fn field_by_field_reads_of_map_keys_use_their_names() {
    let schema = json!({"type": "object", "additionalProperties": {"type": "string"},
        "x-kubernetes-validations": [{"rule": "self.__x == 'a'"}]});
    let rules = compile(schema);
    assert!(
        rules
            .validate(&json!({"__x": "a", "y": "b"}), None)
            .is_empty()
    );
    assert_eq!(rules.validate(&json!({"__x": "b"}), None).len(), 1);
}
