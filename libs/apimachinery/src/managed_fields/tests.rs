//! Behaviour tests of update tracking and server-side apply.
#![allow(clippy::unwrap_used)] // tests may panic on unexpected input

use serde_json::{Value, json};

use super::test_schema::pods;
use super::*;

const T0: &str = "2024-01-01T00:00:00Z";
const T1: &str = "2024-01-01T00:00:01Z";
const T2: &str = "2024-01-01T00:00:02Z";
const T3: &str = "2024-01-01T00:00:03Z";

fn no_reset() -> FieldSet {
    FieldSet::new()
}

fn req<'a>(manager: &'a str, time: &'a str, reset: &'a FieldSet) -> Request<'a> {
    Request {
        manager,
        api_version: "v1",
        subresource: "",
        time,
        reset_fields: reset,
    }
}

fn cm_without_data() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}})
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}, "data": data})
}

/// `(manager, operation, time, fieldsV1)` of each entry, in order.
fn summary(entries: &[ManagedFieldsEntry]) -> Vec<(String, &'static str, String, String)> {
    entries
        .iter()
        .map(|e| {
            (
                e.manager.clone(),
                e.operation.as_str(),
                e.time.clone().unwrap_or_default(),
                e.fields.to_fields_v1_string(),
            )
        })
        .collect()
}

fn fields_of(entries: &[ManagedFieldsEntry], manager: &str) -> Option<String> {
    entries
        .iter()
        .find(|e| e.manager == manager)
        .map(|e| e.fields.to_fields_v1_string())
}

fn do_apply(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    time: &str,
    force: bool,
) -> Result<Applied, ApplyError> {
    let managed = live
        .map(|l| managed_fields_of(l).unwrap())
        .unwrap_or_default();
    let reset = no_reset();
    apply(
        live,
        config,
        force,
        managed,
        &req(manager, time, &reset),
        &pods(),
    )
}

fn applied(live: Option<&Value>, config: &Value, manager: &str, time: &str) -> Value {
    do_apply(live, config, manager, time, false).unwrap().object
}

fn do_update(old: Option<&Value>, new: &Value, manager: &str, time: &str) -> Value {
    let managed = managed_fields_for_update(old, new, false);
    let reset = no_reset();
    let entries = update(old, new, managed, &req(manager, time, &reset), &pods());
    let mut out = new.clone();
    set_managed_fields(&mut out, &entries);
    out
}

fn entries(obj: &Value) -> Vec<ManagedFieldsEntry> {
    managed_fields_of(obj).unwrap()
}

/// The object without managedFields (and without the `metadata` only they needed).
fn without_managed_fields(obj: &Value) -> Value {
    let mut o = obj.clone();
    set_managed_fields(&mut o, &[]);
    if o.get("metadata") == Some(&json!({})) {
        o.as_object_mut().unwrap().remove("metadata");
    }
    o
}

// --- update tracking -------------------------------------------------------------------------

#[test]
fn create_gives_the_creator_everything_it_set_like_kubectl_create() {
    let obj = do_update(None, &cm(json!({"key": "v"})), "kubectl-create", T0);
    assert_eq!(
        summary(&entries(&obj)),
        vec![(
            "kubectl-create".into(),
            "Update",
            T0.into(),
            // Byte for byte what kube-apiserver stores for `kubectl create configmap`.
            r#"{"f:data":{".":{},"f:key":{}}}"#.into()
        )]
    );
    let e = &entries(&obj)[0];
    assert_eq!(e.api_version, "v1");
    assert!(e.subresource.is_empty());
}

#[test]
fn an_existing_object_without_managed_fields_stays_untracked() {
    let old = cm(json!({"a": "1"}));
    let new = do_update(Some(&old), &cm(json!({"a": "2"})), "editor", T1);
    assert!(entries(&new).is_empty());
}

#[test]
fn an_update_takes_changed_fields_from_their_owner() {
    let v0 = do_update(None, &cm(json!({"a": "1", "b": "1"})), "creator", T0);
    let mut next = v0.clone();
    next["data"]["a"] = json!("2");
    let v1 = do_update(Some(&v0), &next, "editor", T1);
    assert_eq!(
        summary(&entries(&v1)),
        vec![
            (
                "creator".into(),
                "Update",
                T0.into(),
                r#"{"f:data":{".":{},"f:b":{}}}"#.into()
            ),
            (
                "editor".into(),
                "Update",
                T1.into(),
                r#"{"f:data":{"f:a":{}}}"#.into()
            ),
        ]
    );
}

#[test]
fn removed_fields_leave_every_owner_and_empty_entries_go() {
    let v0 = do_update(None, &cm(json!({"a": "1"})), "creator", T0);
    let mut next = v0.clone();
    next["data"]["b"] = json!("1");
    let v1 = do_update(Some(&v0), &next, "editor", T1);
    let mut next = v1.clone();
    next["data"].as_object_mut().unwrap().remove("b");
    let v2 = do_update(Some(&v1), &next, "remover", T2);
    // The remover changed nothing it could own, so it gets no entry; the editor lost all.
    assert_eq!(
        summary(&entries(&v2)),
        vec![(
            "creator".into(),
            "Update",
            T0.into(),
            r#"{"f:data":{".":{},"f:a":{}}}"#.into()
        )]
    );
}

#[test]
fn a_managers_updates_merge_into_one_entry_whose_time_moves_only_on_change() {
    let v0 = do_update(None, &cm(json!({"a": "1"})), "ctl", T0);
    let v1 = do_update(Some(&v0), &v0.clone(), "ctl", T1);
    assert_eq!(summary(&entries(&v1))[0].2, T0);
    let mut next = v1.clone();
    next["data"]["b"] = json!("2");
    let v2 = do_update(Some(&v1), &next, "ctl", T2);
    assert_eq!(
        summary(&entries(&v2)),
        vec![(
            "ctl".into(),
            "Update",
            T2.into(),
            r#"{"f:data":{".":{},"f:a":{},"f:b":{}}}"#.into()
        )]
    );
}

#[test]
fn managed_fields_in_an_update_request_replace_the_tracked_ones_and_can_be_reset() {
    let v0 = do_update(None, &cm(json!({"a": "1"})), "ctl", T0);
    let mut reset = v0.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    let v1 = do_update(Some(&v0), &reset, "ctl", T1);
    assert!(entries(&v1).is_empty());
    assert!(raw_managed(&v1).is_none());
}

fn raw_managed(obj: &Value) -> Option<&Value> {
    obj["metadata"].get("managedFields")
}

#[test]
fn update_managers_are_capped_into_ancient_changes() {
    let times: Vec<String> = (0..12)
        .map(|i| format!("2024-01-01T00:00:{i:02}Z"))
        .collect();
    let mut obj = do_update(None, &cm(json!({"k00": "x"})), "m00", &times[0]);
    for i in 1..12 {
        let mut next = obj.clone();
        next["data"][format!("k{i:02}")] = json!("x");
        obj = do_update(Some(&obj), &next, &format!("m{i:02}"), &times[i]);
    }
    let e = entries(&obj);
    assert_eq!(e.len(), MAX_UPDATE_MANAGERS);
    // m00 and m01 (the oldest) are merged, m02 too, into one bucket that takes the newest time.
    let bucket = e
        .iter()
        .find(|e| e.manager == ANCIENT_CHANGES_MANAGER)
        .unwrap();
    assert_eq!(
        bucket.fields.to_fields_v1_string(),
        r#"{"f:data":{".":{},"f:k00":{},"f:k01":{},"f:k02":{}}}"#
    );
    assert_eq!(bucket.time.as_deref(), Some("2024-01-01T00:00:02Z"));
    assert!(
        !e.iter()
            .any(|e| ["m00", "m01", "m02"].contains(&e.manager.as_str()))
    );
}

// --- apply -----------------------------------------------------------------------------------

#[test]
fn create_by_apply_owns_what_it_applied() {
    let config = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {"app": "web"}},
        "data": {"a": "1"}
    });
    let obj = applied(None, &config, "kubectl", T0);
    assert_eq!(without_managed_fields(&obj), config);
    assert_eq!(
        summary(&entries(&obj)),
        vec![(
            "kubectl".into(),
            "Apply",
            T0.into(),
            r#"{"f:data":{"f:a":{}},"f:metadata":{"f:labels":{"f:app":{}}}}"#.into()
        )]
    );
}

#[test]
fn managed_fields_in_the_config_are_refused() {
    let mut config = cm(json!({}));
    config["metadata"]["managedFields"] = json!([]);
    assert_eq!(
        do_apply(None, &config, "m", T0, false).unwrap_err(),
        ApplyError::ManagedFieldsInConfig
    );
}

#[test]
fn a_config_with_duplicate_keys_is_refused() {
    let config = json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}});
    assert_eq!(
        do_apply(None, &config, "m", T0, false)
            .unwrap_err()
            .to_string(),
        "failed to create typed patch object: .spec.containers: duplicate entries for key [name=\"a\"]"
    );
}

#[test]
fn reapplying_without_a_field_removes_it() {
    let v0 = applied(None, &cm(json!({"a": "1", "b": "2"})), "m", T0);
    let v1 = applied(Some(&v0), &cm(json!({"a": "1"})), "m", T1);
    assert_eq!(v1["data"], json!({"a": "1"}));
    assert_eq!(
        fields_of(&entries(&v1), "m").unwrap(),
        r#"{"f:data":{"f:a":{}}}"#
    );
    // Dropping the last field of a struct field drops the field itself.
    let v2 = applied(Some(&v1), &cm_without_data(), "m", T2);
    assert_eq!(v2.get("data"), None);
    assert_eq!(fields_of(&entries(&v2), "m"), None);
    // Applying an empty map claims the map itself.
    let v3 = applied(Some(&v1), &cm(json!({})), "m", T2);
    assert_eq!(fields_of(&entries(&v3), "m").unwrap(), r#"{"f:data":{}}"#);
}

#[test]
fn two_appliers_of_the_same_value_share_it() {
    let v0 = applied(None, &cm(json!({"a": "1"})), "one", T0);
    let v1 = applied(Some(&v0), &cm(json!({"a": "1", "b": "2"})), "two", T1);
    let e = entries(&v1);
    assert_eq!(fields_of(&e, "one").unwrap(), r#"{"f:data":{"f:a":{}}}"#);
    assert_eq!(
        fields_of(&e, "two").unwrap(),
        r#"{"f:data":{"f:a":{},"f:b":{}}}"#
    );
    // When one stops applying the field, the other still owns it, so it stays.
    let v2 = applied(Some(&v1), &cm_without_data(), "one", T2);
    assert_eq!(v2["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(fields_of(&entries(&v2), "one"), None);
    assert_eq!(
        fields_of(&entries(&v2), "two").unwrap(),
        r#"{"f:data":{"f:a":{},"f:b":{}}}"#
    );
}

#[test]
fn changing_anothers_field_conflicts_and_force_takes_it() {
    let v0 = applied(None, &cm(json!({"a": "1", "b": "1"})), "one", T0);
    let err = do_apply(Some(&v0), &cm(json!({"a": "2"})), "two", T1, false).unwrap_err();
    let ApplyError::Conflicts(conflicts) = err else {
        panic!("expected conflicts, got {err:?}")
    };
    assert_eq!(
        conflicts.to_string(),
        "Apply failed with 1 conflict: conflict with \"one\": .data.a"
    );
    let forced = do_apply(Some(&v0), &cm(json!({"a": "2"})), "two", T1, true).unwrap();
    assert_eq!(forced.object["data"], json!({"a": "2", "b": "1"}));
    assert_eq!(
        summary(&forced.managed_fields),
        vec![
            (
                "one".into(),
                "Apply",
                T0.into(),
                r#"{"f:data":{"f:b":{}}}"#.into()
            ),
            (
                "two".into(),
                "Apply",
                T1.into(),
                r#"{"f:data":{"f:a":{}}}"#.into()
            ),
        ]
    );
}

#[test]
fn conflicts_with_updaters_name_their_version_and_group_by_manager() {
    let v0 = do_update(
        None,
        &cm(json!({"key": "1", "x": "1"})),
        "kubectl-client-side-apply",
        T0,
    );
    let err = do_apply(Some(&v0), &cm(json!({"key": "2"})), "kubectl", T1, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.key"
    );
    let ApplyError::Conflicts(c) = do_apply(
        Some(&v0),
        &cm(json!({"key": "2", "x": "2"})),
        "kubectl",
        T1,
        false,
    )
    .unwrap_err() else {
        panic!("expected conflicts")
    };
    assert_eq!(
        c.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using v1:\n- .data.key\n- .data.x"
    );
    let status = c.to_api_error().to_status();
    assert_eq!(status["code"], 409);
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(
        status["details"]["causes"][0],
        json!({"reason": "FieldManagerConflict", "message": "conflict with \"kubectl-client-side-apply\" using v1", "field": ".data.key"})
    );
}

#[test]
fn an_update_after_an_apply_takes_the_field_and_reapplying_then_conflicts() {
    let v0 = applied(None, &cm(json!({"a": "1"})), "applier", T0);
    let mut next = v0.clone();
    next["data"]["a"] = json!("2");
    let v1 = do_update(Some(&v0), &next, "editor", T1);
    assert_eq!(fields_of(&entries(&v1), "applier"), None);
    assert_eq!(
        fields_of(&entries(&v1), "editor").unwrap(),
        r#"{"f:data":{"f:a":{}}}"#
    );
    let err = do_apply(Some(&v1), &cm(json!({"a": "1"})), "applier", T2, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.a"
    );
    // Re-applying the current value is fine and shares the field again.
    let v2 = applied(Some(&v1), &cm(json!({"a": "2"})), "applier", T2);
    assert_eq!(
        fields_of(&entries(&v2), "applier").unwrap(),
        r#"{"f:data":{"f:a":{}}}"#
    );
    assert_eq!(
        fields_of(&entries(&v2), "editor").unwrap(),
        r#"{"f:data":{"f:a":{}}}"#
    );
}

#[test]
fn the_first_apply_to_an_untracked_object_credits_its_fields_to_before_first_apply() {
    let live = cm(json!({"a": "1", "b": "1"}));
    let err = do_apply(Some(&live), &cm(json!({"a": "2"})), "m", T1, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .data.a"
    );
    let ok = do_apply(Some(&live), &cm(json!({"b": "1"})), "m", T1, false).unwrap();
    assert_eq!(
        summary(&ok.managed_fields),
        vec![
            (
                "m".into(),
                "Apply",
                T1.into(),
                r#"{"f:data":{"f:b":{}}}"#.into()
            ),
            (
                BEFORE_FIRST_APPLY_MANAGER.into(),
                "Update",
                T1.into(),
                r#"{"f:data":{".":{},"f:a":{},"f:b":{}}}"#.into()
            ),
        ]
    );
}

#[test]
fn set_lists_are_unioned_and_each_applier_owns_its_items() {
    let v0 = applied(None, &json!({"spec": {"finalizers": ["x"]}}), "one", T0);
    let v1 = applied(
        Some(&v0),
        &json!({"spec": {"finalizers": ["y"]}}),
        "two",
        T1,
    );
    assert_eq!(v1["spec"]["finalizers"], json!(["x", "y"]));
    assert_eq!(
        fields_of(&entries(&v1), "two").unwrap(),
        r#"{"f:spec":{"f:finalizers":{"v:\"y\"":{}}}}"#
    );
    let v2 = applied(Some(&v1), &json!({"spec": {}}), "one", T2);
    assert_eq!(v2["spec"]["finalizers"], json!(["y"]));
}

#[test]
fn map_lists_merge_by_key_and_conflict_per_item_field() {
    let v0 = applied(
        None,
        &json!({"spec": {"containers": [{"name": "a", "image": "1"}]}}),
        "one",
        T0,
    );
    let v1 = applied(
        Some(&v0),
        &json!({"spec": {"containers": [{"name": "b", "image": "2"}]}}),
        "two",
        T1,
    );
    assert_eq!(
        v1["spec"]["containers"],
        json!([{"name": "a", "image": "1"}, {"name": "b", "image": "2"}])
    );
    assert_eq!(
        fields_of(&entries(&v1), "two").unwrap(),
        r#"{"f:spec":{"f:containers":{"k:{\"name\":\"b\"}":{".":{},"f:image":{},"f:name":{}}}}}"#
    );
    let err = do_apply(
        Some(&v1),
        &json!({"spec": {"containers": [{"name": "a", "image": "3"}]}}),
        "two",
        T2,
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"one\": .spec.containers[name=\"a\"].image"
    );
    // "two" stopping to apply its container removes it; "one"'s stays.
    let v3 = applied(Some(&v1), &json!({"spec": {"containers": []}}), "two", T3);
    assert_eq!(
        v3["spec"]["containers"],
        json!([{"name": "a", "image": "1"}])
    );
}

#[test]
fn key_fields_left_out_take_their_schema_default() {
    let v0 = applied(
        None,
        &json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80}]}]}}),
        "one",
        T0,
    );
    let v1 = applied(
        Some(&v0),
        &json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}]}}),
        "two",
        T1,
    );
    assert_eq!(
        v1["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}])
    );
}

#[test]
fn atomic_maps_are_owned_and_replaced_whole() {
    let v0 = applied(
        None,
        &json!({"spec": {"nodeSelector": {"x": "1"}}}),
        "one",
        T0,
    );
    assert_eq!(
        fields_of(&entries(&v0), "one").unwrap(),
        r#"{"f:spec":{"f:nodeSelector":{}}}"#
    );
    let err = do_apply(
        Some(&v0),
        &json!({"spec": {"nodeSelector": {"y": "2"}}}),
        "two",
        T1,
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"one\": .spec.nodeSelector"
    );
    let forced = do_apply(
        Some(&v0),
        &json!({"spec": {"nodeSelector": {"y": "2"}}}),
        "two",
        T1,
        true,
    )
    .unwrap();
    assert_eq!(forced.object["spec"]["nodeSelector"], json!({"y": "2"}));
    assert_eq!(fields_of(&forced.managed_fields, "one"), None);
}

#[test]
fn reset_fields_are_neither_owned_nor_conflicting() {
    let status = FieldSet::from_paths([field_path(&["status"])]);
    let r = Request {
        reset_fields: &status,
        ..req("ctrl", T0, &status)
    };
    let config = json!({"spec": {"replicas": 1}, "status": {"ready": 1}});
    let out = apply(None, &config, false, Vec::new(), &r, &pods()).unwrap();
    assert_eq!(
        fields_of(&out.managed_fields, "ctrl").unwrap(),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
    // A status writer on /status owns status; the main-resource applier touching status does
    // not conflict with it.
    let not_status = FieldSet::from_paths([field_path(&["spec"]), field_path(&["metadata"])]);
    let status_req = Request {
        subresource: "status",
        ..req("kubelet", T1, &not_status)
    };
    let mut with_status = out.object.clone();
    with_status["status"]["ready"] = json!(2);
    let managed = managed_fields_of(&out.object).unwrap();
    let updated = update(
        Some(&out.object),
        &with_status,
        managed,
        &status_req,
        &pods(),
    );
    assert_eq!(
        fields_of(&updated, "kubelet").unwrap(),
        r#"{"f:status":{"f:ready":{}}}"#
    );
    assert_eq!(
        updated
            .iter()
            .find(|e| e.manager == "kubelet")
            .unwrap()
            .subresource,
        "status"
    );
    let mut live = with_status.clone();
    set_managed_fields(&mut live, &updated);
    let again = apply(
        Some(&live),
        &json!({"spec": {"replicas": 1}, "status": {"ready": 5}}),
        false,
        updated.clone(),
        &Request { time: T2, ..r },
        &pods(),
    );
    assert!(again.is_ok(), "{again:?}");
}

#[test]
fn a_no_op_apply_keeps_the_object_and_refreshes_the_time() {
    let v0 = applied(None, &cm(json!({"a": "1"})), "m", T0);
    let v1 = applied(Some(&v0), &cm(json!({"a": "1"})), "m", T1);
    assert_eq!(without_managed_fields(&v1), without_managed_fields(&v0));
    assert_eq!(summary(&entries(&v1))[0].2, T1);
}

#[test]
fn entries_are_sorted_appliers_first_then_by_time() {
    let v0 = do_update(None, &cm(json!({"u": "1"})), "zed", T0);
    let v1 = applied(Some(&v0), &cm(json!({"b": "1"})), "late", T2);
    let v2 = applied(Some(&v1), &cm(json!({"c": "1"})), "early", T1);
    let names: Vec<String> = entries(&v2).into_iter().map(|e| e.manager).collect();
    assert_eq!(names, ["early", "late", "zed"]);
}

#[test]
fn struct_fields_no_longer_applied_by_anyone_are_removed_whole() {
    let v0 = applied(
        None,
        &json!({"spec": {"replicas": 1, "containers": [{"name": "a", "image": "1"}]}}),
        "m",
        T0,
    );
    let v1 = applied(Some(&v0), &json!({"metadata": {"name": "x"}}), "m", T1);
    assert_eq!(v1.get("spec"), None);
    assert_eq!(fields_of(&entries(&v1), "m"), None);
}

// --- taking over from client-side apply --------------------------------------------------------

/// A ConfigMap as client-side `kubectl apply` leaves it: its configuration in the annotation.
fn client_side_applied(data: Value) -> Value {
    let mut config = cm(data);
    let annotation = last_applied::build_last_applied(&config);
    config["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: annotation});
    do_update(None, &config, "kubectl-client-side-apply", T0)
}

#[test]
fn kubectl_server_side_apply_takes_fields_client_side_apply_still_describes() {
    let live = client_side_applied(json!({"key": "1"}));
    let out = do_apply(Some(&live), &cm(json!({"key": "2"})), "kubectl", T1, false).unwrap();
    assert_eq!(out.object["data"], json!({"key": "2"}));
    assert_eq!(
        fields_of(&out.managed_fields, "kubectl").unwrap(),
        r#"{"f:data":{"f:key":{}}}"#
    );
    // The annotation now records the server-side applied configuration.
    let annotation = out.object["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(annotation).unwrap(),
        cm(json!({"key": "2"}))
    );
    // Another manager name gets the conflict.
    let err = do_apply(Some(&live), &cm(json!({"key": "2"})), "other", T1, false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.key"
    );
}

#[test]
fn fields_changed_since_the_client_side_apply_still_conflict() {
    let live = client_side_applied(json!({"key": "1", "other": "1"}));
    let mut edited = live.clone();
    edited["data"]["other"] = json!("edited");
    let edited = do_update(Some(&live), &edited, "kubectl-client-side-apply", T1);
    let err = do_apply(
        Some(&edited),
        &cm(json!({"key": "2", "other": "3"})),
        "kubectl",
        T2,
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.other"
    );
}

// --- scenarios from structured-merge-diff's behaviour -------------------------------------------

fn owned(obj: &Value) -> Vec<(String, String)> {
    entries(obj)
        .into_iter()
        .map(|e| (e.manager, e.fields.to_fields_v1_string()))
        .collect()
}

fn pod_with_finalizers(items: &[&str]) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"finalizers": items}})
}

#[test]
fn set_items_added_by_an_updater_survive_the_appliers_reapply() {
    let v0 = applied(None, &pod_with_finalizers(&["a", "c"]), "default", T0);
    let mut next = v0.clone();
    next["spec"]["finalizers"] = json!(["a", "b", "c", "d"]);
    let v1 = do_update(Some(&v0), &next, "controller", T1);
    let v2 = applied(
        Some(&v1),
        &pod_with_finalizers(&["a", "aprime", "c", "cprime"]),
        "default",
        T2,
    );
    assert_eq!(
        v2["spec"]["finalizers"],
        json!(["a", "b", "aprime", "c", "d", "cprime"])
    );
    assert_eq!(
        owned(&v2),
        vec![
            (
                "default".into(),
                r#"{"f:spec":{"f:finalizers":{"v:\"a\"":{},"v:\"aprime\"":{},"v:\"c\"":{},"v:\"cprime\"":{}}}}"#.into()
            ),
            ("controller".into(), r#"{"f:spec":{"f:finalizers":{"v:\"b\"":{},"v:\"d\"":{}}}}"#.into()),
        ]
    );
    // Applying an item the updater added shares it.
    let v3 = applied(
        Some(&v1),
        &pod_with_finalizers(&["a", "b", "c"]),
        "default",
        T2,
    );
    assert_eq!(v3["spec"]["finalizers"], json!(["a", "b", "c", "d"]));
    assert_eq!(
        owned(&v3)[1],
        (
            "controller".into(),
            r#"{"f:spec":{"f:finalizers":{"v:\"b\"":{},"v:\"d\"":{}}}}"#.into()
        )
    );
}

fn pod_with_containers(containers: Value) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": containers}})
}

#[test]
fn an_item_dropped_by_its_only_applier_goes_with_what_updaters_added_inside_it() {
    let v0 = applied(
        None,
        &pod_with_containers(json!([{"name": "a"}, {"name": "b", "tags": ["c"]}])),
        "apply-one",
        T0,
    );
    let v1 = applied(
        Some(&v0),
        &pod_with_containers(json!([{"name": "a", "tags": ["b"]}])),
        "apply-two",
        T1,
    );
    let mut next = v1.clone();
    next["spec"]["containers"] =
        json!([{"name": "a", "tags": ["b"]}, {"name": "b", "tags": ["c", "d"]}]);
    let v2 = do_update(Some(&v1), &next, "controller", T2);
    let v3 = applied(
        Some(&v2),
        &pod_with_containers(json!([{"name": "a"}])),
        "apply-one",
        T3,
    );
    assert_eq!(
        v3["spec"]["containers"],
        json!([{"name": "a", "tags": ["b"]}])
    );
    assert_eq!(
        owned(&v3),
        vec![
            (
                "apply-two".into(),
                r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:tags":{"v:\"b\"":{}}}}}}"#.into()
            ),
            (
                "apply-one".into(),
                r#"{"f:spec":{"f:containers":{"k:{\"name\":\"a\"}":{".":{},"f:name":{}}}}}"#.into()
            ),
        ]
    );
}

#[test]
fn an_item_another_applier_keeps_loses_only_what_the_dropping_applier_alone_owned() {
    let v0 = applied(
        None,
        &pod_with_containers(json!([{"name": "a"}, {"name": "b", "tags": ["c"]}])),
        "apply-one",
        T0,
    );
    let v1 = applied(
        Some(&v0),
        &pod_with_containers(json!([{"name": "b", "tags": ["d"]}])),
        "apply-two",
        T1,
    );
    let mut next = v1.clone();
    next["spec"]["containers"] = json!([{"name": "a"}, {"name": "b", "tags": ["c", "d", "e"]}]);
    let v2 = do_update(Some(&v1), &next, "controller", T2);
    let v3 = applied(
        Some(&v2),
        &pod_with_containers(json!([{"name": "a"}])),
        "apply-one",
        T3,
    );
    assert_eq!(
        v3["spec"]["containers"],
        json!([{"name": "a"}, {"name": "b", "tags": ["d", "e"]}])
    );
    let e = entries(&v3);
    assert_eq!(
        fields_of(&e, "controller").unwrap(),
        r#"{"f:spec":{"f:containers":{"k:{\"name\":\"b\"}":{"f:tags":{"v:\"e\"":{}}}}}}"#
    );
}

// --- properties ------------------------------------------------------------------------------

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<i8>().prop_map(|n| json!(n)),
            "[a-c]{0,2}".prop_map(Value::String),
            any::<bool>().prop_map(Value::Bool),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map("[a-d]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn arb_object() -> impl Strategy<Value = Value> {
        prop::collection::btree_map("[a-d]", arb_json(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    fn run(
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
    ) -> Result<Applied, ApplyError> {
        let managed = live
            .map(|l| managed_fields_of(l).unwrap())
            .unwrap_or_default();
        let reset = FieldSet::new();
        apply(
            live,
            config,
            force,
            managed,
            &req(manager, T0, &reset),
            &Deduced,
        )
    }

    /// Pod-like objects with map lists, set lists, atomic maps and granular maps. Lists and
    /// maps are never empty: as in Kubernetes, an empty list specifies no field (so it is
    /// pruned with its struct) and a map emptied by pruning is dropped even if the applier
    /// applied it empty, so such applies are not idempotent.
    fn arb_pod() -> impl Strategy<Value = Value> {
        let container = (
            prop::option::of("[1-3]"),
            prop::option::of(prop::collection::vec(80u16..82, 1..3)),
        );
        (
            prop::collection::btree_map("[a-c]", container, 1..3),
            prop::option::of(prop::collection::btree_set("[x-z]", 1..3)),
            prop::option::of(prop::collection::btree_map("[a-b]", "[1-2]", 1..3)),
            prop::option::of(prop::collection::btree_map("[a-b]", "[1-2]", 1..3)),
        )
            .prop_map(|(containers, finalizers, selector, data)| {
                let containers: Vec<Value> = containers
                    .into_iter()
                    .map(|(name, (image, ports))| {
                        let mut c = json!({"name": name});
                        if let Some(image) = image {
                            c["image"] = json!(image);
                        }
                        if let Some(mut ports) = ports {
                            ports.sort_unstable();
                            ports.dedup();
                            c["ports"] = json!(
                                ports
                                    .iter()
                                    .map(|p| json!({"containerPort": p}))
                                    .collect::<Vec<_>>()
                            );
                        }
                        c
                    })
                    .collect();
                let mut spec = json!({"containers": containers});
                if let Some(f) = finalizers {
                    spec["finalizers"] = json!(f);
                }
                if let Some(s) = selector {
                    spec["nodeSelector"] = json!(s);
                }
                let mut pod = json!({"metadata": {"name": "p"}, "spec": spec});
                if let Some(d) = data {
                    pod["data"] = json!(d);
                }
                pod
            })
    }

    fn path_exists<T: TypeView>(value: &Value, path: &[PathElement], ty: &T) -> bool {
        use crate::managed_fields::field_set::item_element;
        use crate::managed_fields::schema::resolve;
        let Some((first, rest)) = path.split_first() else {
            return true;
        };
        match (first, value) {
            (PathElement::Field(name), Value::Object(m)) => m
                .get(name)
                .is_some_and(|v| path_exists(v, rest, &ty.field(name))),
            (_, Value::Array(items)) => {
                let Shape::List(list) = resolve(ty, value) else {
                    return false;
                };
                let item_ty = ty.item();
                items.iter().any(|item| {
                    item_element(&list, &item_ty, item).ok().as_ref() == Some(first)
                        && path_exists(item, rest, &item_ty)
                })
            }
            _ => false,
        }
    }

    fn run_pods(
        live: Option<&Value>,
        config: &Value,
        manager: &str,
        force: bool,
    ) -> Result<Applied, ApplyError> {
        let managed = live
            .map(|l| managed_fields_of(l).unwrap())
            .unwrap_or_default();
        let reset = FieldSet::new();
        apply(
            live,
            config,
            force,
            managed,
            &req(manager, T0, &reset),
            &pods(),
        )
    }

    proptest! {
        #[test]
        fn pod_applies_are_idempotent_and_keep_ownership_consistent(
            first in arb_pod(),
            second in arb_pod(),
            third in arb_pod(),
        ) {
            let a = run_pods(None, &first, "a", false).unwrap();
            let b = run_pods(Some(&a.object), &second, "b", true).unwrap();
            let a2 = run_pods(Some(&b.object), &third, "a", true).unwrap();
            let again = run_pods(Some(&a2.object), &third, "a", false).unwrap();
            prop_assert_eq!(&again.object, &a2.object);
            // Every owned field exists in the object.
            for e in &a2.managed_fields {
                for path in e.fields.paths() {
                    prop_assert!(
                        path_exists(&a2.object, &path, &pods()),
                        "{} owns missing {}", e.manager, display_path(&path)
                    );
                }
            }
            let mine = field_set(&third, &pods()).difference(&FieldSet::from_paths([
                field_path(&["metadata", "name"]),
            ]));
            let got = a2.managed_fields.iter().find(|e| e.manager == "a").map(|e| e.fields.clone()).unwrap_or_default();
            prop_assert_eq!(got, mine);
        }

        #[test]
        fn owned_fields_always_exist_through_mixed_applies_and_updates(
            ops in prop::collection::vec((arb_pod(), 0usize..3, any::<bool>()), 1..6),
        ) {
            let managers = ["a", "b", "c"];
            let mut obj: Option<Value> = None;
            for (i, (pod, who, is_apply)) in ops.into_iter().enumerate() {
                let time = format!("2024-01-01T00:00:{i:02}Z");
                let next = if is_apply {
                    let managed = obj.as_ref().map(|o| managed_fields_of(o).unwrap()).unwrap_or_default();
                    let reset = FieldSet::new();
                    apply(obj.as_ref(), &pod, true, managed, &req(managers[who], &time, &reset), &pods())
                        .unwrap()
                        .object
                } else {
                    let mut new = pod.clone();
                    if let Some(mf) = obj.as_ref().and_then(raw_managed) {
                        new["metadata"]["managedFields"] = mf.clone();
                    }
                    do_update(obj.as_ref(), &new, managers[who], &time)
                };
                for e in entries(&next) {
                    prop_assert!(!e.fields.is_empty());
                    for path in e.fields.paths() {
                        prop_assert!(
                            path_exists(&next, &path, &pods()),
                            "step {}: {} owns missing {}", i, e.manager, display_path(&path)
                        );
                    }
                }
                obj = Some(next);
            }
        }

        #[test]
        fn creating_by_apply_yields_the_config_owned_by_the_applier(config in arb_object()) {
            let out = run(None, &config, "m", false).unwrap();
            prop_assert_eq!(without_managed_fields(&out.object), config.clone());
            let expected = field_set(&config, &Deduced);
            match out.managed_fields.as_slice() {
                [] => prop_assert!(expected.is_empty()),
                [only] => prop_assert_eq!(&only.fields, &expected),
                more => prop_assert!(false, "{} entries", more.len()),
            }
        }

        #[test]
        fn applying_twice_changes_nothing(live in arb_object(), config in arb_object()) {
            let first = run(None, &live, "other", false).unwrap();
            let Ok(once) = run(Some(&first.object), &config, "m", true) else {
                return Err(TestCaseError::fail("forced apply failed"));
            };
            let twice = run(Some(&once.object), &config, "m", false).unwrap();
            prop_assert_eq!(without_managed_fields(&twice.object), without_managed_fields(&once.object));
            prop_assert_eq!(
                twice.managed_fields.iter().map(|e| (&e.manager, &e.fields)).collect::<Vec<_>>(),
                once.managed_fields.iter().map(|e| (&e.manager, &e.fields)).collect::<Vec<_>>()
            );
        }

        #[test]
        fn a_forced_apply_leaves_the_applier_owning_its_config_and_others_not(
            live in arb_object(),
            config in arb_object(),
        ) {
            let first = run(None, &live, "other", false).unwrap();
            let out = run(Some(&first.object), &config, "m", true).unwrap();
            let mine = field_set(&config, &Deduced);
            let got = out.managed_fields.iter().find(|e| e.manager == "m").map(|e| e.fields.clone()).unwrap_or_default();
            prop_assert_eq!(&got, &mine);
            // Whatever the other manager still owns is unchanged from its own apply.
            let theirs = out.managed_fields.iter().find(|e| e.manager == "other").map(|e| e.fields.clone()).unwrap_or_default();
            let changed = compare(&without_managed_fields(&first.object), &without_managed_fields(&out.object), &Deduced).changed();
            prop_assert!(theirs.intersection(&changed).is_empty());
            // Without force, the same apply either conflicts or gives the same result.
            match run(Some(&first.object), &config, "m", false) {
                Ok(unforced) => prop_assert_eq!(unforced.object, out.object),
                Err(ApplyError::Conflicts(c)) => prop_assert!(!c.0.is_empty()),
                Err(e) => prop_assert!(false, "{e}"),
            }
        }

        #[test]
        fn tracked_fields_survive_their_fields_v1_encoding(old in arb_object(), new in arb_object()) {
            let v0 = do_update(None, &old, "a", T0);
            let mut next = new.clone();
            if let Some(mf) = raw_managed(&v0) {
                next["metadata"] = json!({"managedFields": mf});
            }
            let v1 = do_update(Some(&v0), &next, "b", T1);
            let text = serde_json::to_string(&v1).unwrap();
            let back: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(entries(&back), entries(&v1));
        }
    }
}
