//! LimitRanges, defaulted and validated as Kubernetes does: a Container item's missing defaults
//! come from its max (limit) and then its default or min (request); each item has a known or
//! qualified type, once, resource names its type may bound, and min ≤ default request ≤ default
//! ≤ max with a max limit/request ratio of at least 1 that max/min allows.

use std::collections::BTreeMap;

use kcp_apimachinery::names::is_qualified_name;
use kcp_apimachinery::quantity::Quantity;
use kcp_apimachinery::status::Cause;
use serde_json::{Map, Value, json};

use super::go_values::invalid_shown;
use super::resource_names::{
    canonicalize_list, container_resource_name_causes, overcommit_allowed, quantity_at,
    resource_name_causes,
};
use crate::resource::Strategy;

const CONTAINER: &str = "Container";
const POD: &str = "Pod";
const CLAIM: &str = "PersistentVolumeClaim";

/// The resource lists of an item, in the order Kubernetes reads them.
const LISTS: [&str; 5] = [
    "max",
    "min",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
];

/// Kubernetes' `MaxMilliValue`: below it, the ratio check compares thousandths.
const MAX_MILLI_VALUE: i128 = (i64::MAX / 1000) as i128;

pub struct LimitRangeStrategy;

fn items_mut(obj: &mut Value) -> impl Iterator<Item = &mut Map<String, Value>> {
    (obj.pointer_mut("/spec/limits")
        .and_then(Value::as_array_mut))
    .into_iter()
    .flatten()
    .filter_map(Value::as_object_mut)
}

/// `into[k] = from[k]` for every `k` of `from` that `into` lacks; `into` appears only if it gains
/// something (an empty list is not serialized).
fn fill_missing(item: &mut Map<String, Value>, into: &str, from: &str) {
    let Some(source) = item.get(from).and_then(Value::as_object).cloned() else {
        return;
    };
    let target = item.entry(into).or_insert_with(|| json!({}));
    let Some(target) = target.as_object_mut() else {
        return;
    };
    for (k, v) in source {
        target.entry(k).or_insert(v);
    }
    if target.is_empty() {
        item.remove(into);
    }
}

impl LimitRangeStrategy {
    /// What decoding does: canonical quantities, then `SetDefaults_LimitRangeItem`.
    fn default(obj: &mut Value) {
        for item in items_mut(obj) {
            for list in LISTS {
                canonicalize_list(item.get_mut(list));
            }
            if item.get("type").and_then(Value::as_str) == Some(CONTAINER) {
                fill_missing(item, "default", "max");
                fill_missing(item, "defaultRequest", "default");
                fill_missing(item, "defaultRequest", "min");
            }
        }
    }
}

/// Kubernetes' `validateLimitRangeTypeName`.
fn type_causes(kind: &str, path: &str) -> Vec<Cause> {
    let causes: Vec<Cause> = is_qualified_name(kind)
        .iter()
        .map(|msg| Cause::invalid(path, &json!(kind), msg))
        .collect();
    if causes.is_empty() && !kind.contains('/') && ![POD, CONTAINER, CLAIM].contains(&kind) {
        return vec![Cause::invalid(
            path,
            &json!(kind),
            "must be a standard limit type or fully qualified",
        )];
    }
    causes
}

/// The quantities of one resource list of an item, its names and values checked on the way.
fn read_list(
    item: &Value,
    list: &str,
    kind: &str,
    path: &str,
    causes: &mut Vec<Cause>,
) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    for (name, value) in item
        .get(list)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let at = format!("{path}.{list}[{name}]");
        causes.extend(match kind {
            POD | CONTAINER => container_resource_name_causes(name, &at),
            _ => resource_name_causes(name, &at),
        });
        if let Some(q) = quantity_at(value, &at, causes) {
            out.insert(name.clone(), q);
        }
    }
    out
}

fn has_entries(item: &Value, list: &str) -> bool {
    item.get(list)
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
}

/// `ratio` against what max/min leaves room for, compared as Kubernetes compares them (in
/// thousandths when all three are small enough, else in whole units).
fn ratio_above_max_over_min(ratio: &Quantity, min: &Quantity, max: &Quantity) -> Option<f64> {
    let small = [ratio, min, max]
        .iter()
        .all(|q| q.value() < MAX_MILLI_VALUE);
    let (ratio, min, max) = if small {
        (
            ratio.milli_value() as f64 / 1000.0,
            min.milli_value(),
            max.milli_value(),
        )
    } else {
        (ratio.value() as f64, min.value(), max.value())
    };
    let limit = max as f64 / min as f64;
    (ratio > limit).then_some(limit)
}

/// Kubernetes' checks between the lists of one item for resource `name`.
#[derive(Default)]
struct Bounds<'a> {
    min: Option<&'a Quantity>,
    max: Option<&'a Quantity>,
    default: Option<&'a Quantity>,
    request: Option<&'a Quantity>,
    ratio: Option<&'a Quantity>,
}

impl Bounds<'_> {
    fn causes(&self, name: &str, path: &str, causes: &mut Vec<Cause>) {
        let at = |list: &str| format!("{path}.{list}[{name}]");
        let mut push = |list: &str, shown: &Quantity, detail: String| {
            causes.push(invalid_shown(&at(list), &shown.to_string(), &detail));
        };
        if let (Some(min), Some(max)) = (self.min, self.max)
            && min > max
        {
            push(
                "min",
                min,
                format!("min value {min} is greater than max value {max}"),
            );
        }
        if let (Some(request), Some(min)) = (self.request, self.min)
            && min > request
        {
            let detail = format!("min value {min} is greater than default request value {request}");
            push("defaultRequest", request, detail);
        }
        if let (Some(request), Some(max)) = (self.request, self.max)
            && request > max
        {
            let detail = format!("default request value {request} is greater than max value {max}");
            push("defaultRequest", request, detail);
        }
        if let (Some(request), Some(default)) = (self.request, self.default)
            && request > default
        {
            let detail = format!(
                "default request value {request} is greater than default limit value {default}"
            );
            push("defaultRequest", request, detail);
        }
        if let (Some(default), Some(min)) = (self.default, self.min)
            && min > default
        {
            let detail = format!("min value {min} is greater than default value {default}");
            push("default", min, detail);
        }
        if let (Some(default), Some(max)) = (self.default, self.max)
            && default > max
        {
            let detail = format!("default value {default} is greater than max value {max}");
            push("default", max, detail);
        }
        if let Some(ratio) = self.ratio {
            if *ratio < Quantity::from_count(1) {
                push(
                    "maxLimitRequestRatio",
                    ratio,
                    format!("ratio {ratio} is less than 1"),
                );
            }
            if let (Some(min), Some(max)) = (self.min, self.max)
                && let Some(limit) = ratio_above_max_over_min(ratio, min, max)
            {
                let detail = format!("ratio {ratio} is greater than max/min = {limit:.6}");
                push("maxLimitRequestRatio", ratio, detail);
            }
        }
        if let (Some(default), Some(request)) = (self.default, self.request)
            && !overcommit_allowed(name)
            && default != request
        {
            let detail = format!(
                "default value {default} must equal to defaultRequest value {request} in {name}"
            );
            push("defaultRequest", request, detail);
        }
    }
}

/// Kubernetes' `ValidateLimitRange` for one item.
fn item_causes(item: &Value, path: &str, causes: &mut Vec<Cause>) {
    let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
    let max = read_list(item, "max", kind, path, causes);
    let min = read_list(item, "min", kind, path, causes);
    let (default, request) = if kind == POD {
        for list in ["default", "defaultRequest"] {
            if has_entries(item, list) {
                causes.push(Cause::forbidden(
                    &format!("{path}.{list}"),
                    "may not be specified when `type` is 'Pod'",
                ));
            }
        }
        (BTreeMap::new(), BTreeMap::new())
    } else {
        (
            read_list(item, "default", kind, path, causes),
            read_list(item, "defaultRequest", kind, path, causes),
        )
    };
    if kind == CLAIM && !min.contains_key("storage") && !max.contains_key("storage") {
        causes.push(Cause::required(
            &format!("{path}.limits"),
            "either minimum or maximum storage value is required, but neither was provided",
        ));
    }
    let ratio = read_list(item, "maxLimitRequestRatio", kind, path, causes);
    let mut names: Vec<&String> = [&max, &min, &default, &request, &ratio]
        .iter()
        .flat_map(|list| list.keys())
        .collect();
    names.sort();
    names.dedup();
    for name in names {
        let bounds = Bounds {
            min: min.get(name),
            max: max.get(name),
            default: default.get(name),
            request: request.get(name),
            ratio: ratio.get(name),
        };
        bounds.causes(name, path, causes);
    }
}

impl Strategy for LimitRangeStrategy {
    fn decode(&self, obj: &mut Value) {
        Self::default(obj);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let mut kinds: Vec<&str> = Vec::new();
        let items = obj.pointer("/spec/limits").and_then(Value::as_array);
        for (i, item) in items.into_iter().flatten().enumerate() {
            let path = format!("spec.limits[{i}]");
            let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
            causes.extend(type_causes(kind, &format!("{path}.type")));
            if kinds.contains(&kind) {
                causes.push(Cause::duplicate(&format!("{path}.type"), &json!(kind)));
            }
            kinds.push(kind);
            item_causes(item, &path, &mut causes);
        }
        causes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(obj: &Value) -> Vec<String> {
        (LimitRangeStrategy.validate(obj).iter())
            .map(Cause::full_message)
            .collect()
    }

    fn limits(items: Value) -> Value {
        json!({"metadata": {"name": "l"}, "spec": {"limits": items}})
    }

    #[test]
    fn container_items_are_defaulted_from_max_default_and_min() {
        let mut lr = limits(json!([
            {"type": "Container", "max": {"cpu": "2000m", "memory": "1Gi"}, "min": {"cpu": "100m", "ephemeral-storage": "1Gi"},
             "default": {"memory": "512Mi"}},
            {"type": "Pod", "max": {"cpu": "4"}},
        ]));
        LimitRangeStrategy.decode(&mut lr);
        let container = &lr["spec"]["limits"][0];
        assert_eq!(container["max"]["cpu"], "2");
        assert_eq!(container["default"], json!({"cpu": "2", "memory": "512Mi"}));
        assert_eq!(
            container["defaultRequest"],
            json!({"cpu": "2", "memory": "512Mi", "ephemeral-storage": "1Gi"})
        );
        // Only Container items are defaulted; nothing to copy leaves no empty lists behind.
        assert!(lr["spec"]["limits"][1].get("default").is_none());
        let mut bare = limits(json!([{"type": "Container"}]));
        LimitRangeStrategy.decode(&mut bare);
        assert_eq!(bare["spec"]["limits"][0], json!({"type": "Container"}));
        assert!(
            LimitRangeStrategy.validate(&lr).is_empty(),
            "{:?}",
            messages(&lr)
        );
    }

    #[test]
    fn bounds_are_ordered_as_kubernetes_requires() {
        let lr = limits(json!([{
            "type": "Container",
            "min": {"cpu": "2"}, "max": {"cpu": "1"},
            "default": {"cpu": "3"}, "defaultRequest": {"cpu": "4"},
            "maxLimitRequestRatio": {"cpu": "500m"},
        }]));
        assert_eq!(
            messages(&lr),
            [
                "spec.limits[0].min[cpu]: Invalid value: 2: min value 2 is greater than max value 1",
                "spec.limits[0].defaultRequest[cpu]: Invalid value: 4: default request value 4 is greater than max value 1",
                "spec.limits[0].defaultRequest[cpu]: Invalid value: 4: default request value 4 is greater than default limit value 3",
                "spec.limits[0].default[cpu]: Invalid value: 1: default value 3 is greater than max value 1",
                "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: 500m: ratio 500m is less than 1",
            ]
        );
        let ratio = limits(json!([{
            "type": "Container", "min": {"memory": "1Gi"}, "max": {"memory": "2Gi"},
            "maxLimitRequestRatio": {"memory": "3"},
        }]));
        assert_eq!(
            messages(&ratio),
            [
                "spec.limits[0].maxLimitRequestRatio[memory]: Invalid value: 3: ratio 3 is greater than max/min = 2.000000"
            ]
        );
        let gpu = limits(json!([{
            "type": "Container", "default": {"example.com/gpu": "2"}, "defaultRequest": {"example.com/gpu": "1"},
        }]));
        assert_eq!(
            messages(&gpu),
            [
                "spec.limits[0].defaultRequest[example.com/gpu]: Invalid value: 1: default value 2 must equal to defaultRequest value 1 in example.com/gpu"
            ]
        );
    }

    #[test]
    fn types_names_and_pod_defaults_are_checked() {
        let lr = limits(json!([
            {"type": "Pod", "max": {"pods": "1"}, "default": {"cpu": "1"}},
            {"type": "Pod"},
            {"type": "Node"},
            {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}},
            {"type": "example.com/thing", "max": {"example.com/x": "1"}},
        ]));
        assert_eq!(
            messages(&lr),
            [
                "spec.limits[0].max[pods]: Invalid value: \"pods\": must be a standard resource for containers",
                "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'",
                "spec.limits[1].type: Duplicate value: \"Pod\"",
                "spec.limits[2].type: Invalid value: \"Node\": must be a standard limit type or fully qualified",
                "spec.limits[3].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
            ]
        );
        let bad = limits(json!([{"type": "Container", "max": {"cpu": "lots"}}]));
        assert_eq!(
            LimitRangeStrategy.validate(&bad)[0].field,
            "spec.limits[0].max[cpu]"
        );
    }
}
