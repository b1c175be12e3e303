//! Field ownership across writes: Kubernetes' field manager (update tracking, server-side
//! apply, conflicts) over structured-merge-diff's updater, for one API version.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::{Map, Value};

use super::compare::{Comparison, compare};
use super::conflict::{Conflict, Conflicts};
use super::entry::{
    ManagedFieldsEntry, Operation, raw_managed_fields, set_managed_fields, strip_managed_fields,
};
use super::field_set::{field_set, validate};
use super::last_applied::{
    KUBECTL_MANAGER, allowed_conflicts, build_last_applied, has_last_applied, set_last_applied,
};
use super::merge::merge;
use super::remove::{ensure_named_fields_are_members, remove_items};
use super::schema::TypeView;
use super::set::{FieldSet, field_path};

/// Kubernetes keeps at most this many `Update` entries; older ones are merged.
pub const MAX_UPDATE_MANAGERS: usize = 10;
/// The entry older `Update` entries are merged into.
pub const ANCIENT_CHANGES_MANAGER: &str = "ancient-changes";
/// Owner of the fields of an object that had no managedFields when first applied to.
pub const BEFORE_FIRST_APPLY_MANAGER: &str = "before-first-apply";

/// What a write is, beyond the objects.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The field manager (the `fieldManager` parameter, or [`super::manager_from_user_agent`]).
    pub manager: &'a str,
    /// The request's `group/version` (`v1` for the core group).
    pub api_version: &'a str,
    /// Empty for the main resource, else e.g. `status`.
    pub subresource: &'a str,
    /// Now, as RFC 3339 UTC seconds (`2024-03-01T10:00:00Z`).
    pub time: &'a str,
    /// Fields this endpoint resets and never owns (`status` on the main resource of a kind
    /// with a status subresource; everything but `status` on `/status`).
    pub reset_fields: &'a FieldSet,
}

/// The result of an apply.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The merged object, with `metadata.managedFields` set to `managed_fields`.
    pub object: Value,
    pub managed_fields: Vec<ManagedFieldsEntry>,
}

/// Why an apply was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// 409: fields owned by other managers would change; retry with `force` to take them.
    #[error(transparent)]
    Conflicts(#[from] Conflicts),
    /// 400: an applied configuration may not carry managedFields.
    #[error("metadata.managedFields must be nil")]
    ManagedFieldsInConfig,
    /// Kubernetes answers 500 for these (the config cannot be typed, e.g. duplicate keys).
    #[error("failed to create typed patch object: {0}")]
    InvalidConfig(String),
    #[error("failed to create typed live object: {0}")]
    InvalidLive(String),
}

/// A manager as Kubernetes keys it: appliers by name and subresource, updaters also by
/// operation and API version.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ManagerId {
    manager: String,
    operation: Operation,
    /// Empty for appliers, whose entry follows them across versions.
    api_version: String,
    subresource: String,
}

impl ManagerId {
    fn new(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> Self {
        ManagerId {
            manager: manager.to_string(),
            operation,
            api_version: if operation == Operation::Apply {
                String::new()
            } else {
                api_version.to_string()
            },
            subresource: subresource.to_string(),
        }
    }

    /// Kubernetes' identifier (the entry's JSON without fields and time); orders ties.
    fn identifier(&self) -> String {
        let mut m = Map::new();
        if !self.manager.is_empty() {
            m.insert("manager".into(), Value::String(self.manager.clone()));
        }
        m.insert(
            "operation".into(),
            Value::String(self.operation.as_str().into()),
        );
        if !self.api_version.is_empty() {
            m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        }
        if !self.subresource.is_empty() {
            m.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        Value::Object(m).to_string()
    }
}

#[derive(Debug, Clone)]
struct Owned {
    fields: FieldSet,
    api_version: String,
    time: Option<String>,
}

type Managers = BTreeMap<ManagerId, Owned>;

fn to_managers(entries: Vec<ManagedFieldsEntry>) -> Managers {
    // A later entry with the same identity replaces an earlier one, as in Kubernetes.
    entries
        .into_iter()
        .map(|e| {
            let id = ManagerId::new(&e.manager, e.operation, &e.api_version, &e.subresource);
            let owned = Owned {
                fields: e.fields,
                api_version: e.api_version,
                time: e.time,
            };
            (id, owned)
        })
        .collect()
}

/// Entries in Kubernetes' order: appliers first, then by time, manager, version, subresource.
fn to_entries(managers: Managers) -> Vec<ManagedFieldsEntry> {
    let mut entries: Vec<ManagedFieldsEntry> = managers
        .into_iter()
        .filter(|(_, owned)| !owned.fields.is_empty())
        .map(|(id, owned)| ManagedFieldsEntry {
            manager: id.manager,
            operation: id.operation,
            api_version: owned.api_version,
            time: owned.time,
            fields: owned.fields,
            subresource: id.subresource,
        })
        .collect();
    entries.sort_by(|p, q| {
        p.operation
            .cmp(&q.operation)
            .then_with(|| unix_seconds(p.time.as_deref()).cmp(&unix_seconds(q.time.as_deref())))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    entries
}

/// Seconds since the epoch of an RFC 3339 time; 0 when absent or unreadable (as a nil time
/// counts in Kubernetes' ordering).
fn unix_seconds(time: Option<&str>) -> i64 {
    fn num(s: &str, range: std::ops::Range<usize>) -> Option<i64> {
        s.get(range)?.parse().ok()
    }
    let Some(t) = time else { return 0 };
    let parse = || -> Option<i64> {
        let (y, mo, d) = (num(t, 0..4)?, num(t, 5..7)?, num(t, 8..10)?);
        let (h, mi, s) = (num(t, 11..13)?, num(t, 14..16)?, num(t, 17..19)?);
        // Skip a fraction, then read the zone.
        let rest = t.get(19..)?;
        let zone = rest.trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
        let offset = match zone {
            "Z" | "z" => 0,
            z if z.len() == 6 => {
                let sign = if z.starts_with('-') { -1 } else { 1 };
                sign * (num(z, 1..3)? * 3600 + num(z, 4..6)? * 60)
            }
            _ => return None,
        };
        // Days from civil date (proleptic Gregorian).
        let yy = if mo <= 2 { y - 1 } else { y };
        let era = yy.div_euclid(400);
        let yoe = yy - era * 400;
        let mp = (mo + 9) % 12;
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        Some(days * 86_400 + h * 3600 + mi * 60 + s - offset)
    };
    parse().unwrap_or(0)
}

/// Fields no manager ever owns (Kubernetes' stripmeta): type meta and server-set metadata.
/// Built once: every tracked write subtracts it.
fn stripped_fields() -> &'static FieldSet {
    static STRIPPED: LazyLock<FieldSet> = LazyLock::new(build_stripped_fields);
    &STRIPPED
}

fn build_stripped_fields() -> FieldSet {
    let mut set = FieldSet::from_paths([
        field_path(&["apiVersion"]),
        field_path(&["kind"]),
        field_path(&["metadata"]),
    ]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&field_path(&["metadata", name]));
    }
    set
}

/// Takes from every manager but `skip` the fields that changed (when `force`) and those that
/// disappeared; without `force`, changed fields owned by others are conflicts.
fn take_from_others(
    managers: &mut Managers,
    cmp: &Comparison,
    skip: Option<&ManagerId>,
    force: bool,
) -> Result<(), Conflicts> {
    let changed = cmp.changed();
    let mut conflicts: Vec<(ManagerId, FieldSet)> = Vec::new();
    for (id, owned) in managers.iter() {
        if Some(id) == skip {
            continue;
        }
        let taken = owned.fields.intersection(&changed);
        if !taken.is_empty() {
            conflicts.push((id.clone(), taken));
        }
    }
    if !force && !conflicts.is_empty() {
        conflicts.sort_by_key(|(id, _)| id.identifier());
        let mut list = Vec::new();
        for (id, set) in conflicts {
            let api_version = managers
                .get(&id)
                .map(|o| o.api_version.clone())
                .unwrap_or_default();
            for path in set.paths() {
                list.push(Conflict {
                    manager: id.manager.clone(),
                    operation: id.operation,
                    api_version: api_version.clone(),
                    subresource: id.subresource.clone(),
                    path,
                });
            }
        }
        return Err(Conflicts(list));
    }
    for (id, taken) in conflicts {
        if let Some(owned) = managers.get_mut(&id) {
            owned.fields = owned.fields.difference(&taken);
        }
    }
    if !cmp.removed.is_empty() {
        for (id, owned) in managers.iter_mut() {
            if Some(id) != skip {
                owned.fields = owned.fields.difference(&cmp.removed);
            }
        }
    }
    managers.retain(|_, owned| !owned.fields.is_empty());
    Ok(())
}

/// Records an update by `id`: it gains the fields it changed (less reset and stripped ones),
/// others lose them, and everyone loses removed fields. `id` keeps its time when it changed
/// nothing.
fn record_update<T: TypeView>(
    managers: &mut Managers,
    old: &Value,
    new: &Value,
    id: ManagerId,
    req: &Request,
    ty: &T,
) {
    let mut cmp = compare(old, new, ty);
    cmp.exclude(req.reset_fields);
    // The update is tracked under a temporary name, so the manager's own earlier entry
    // loses what changed like everybody else's before the new fields are added back.
    if take_from_others(managers, &cmp, None, true).is_err() {
        return;
    }
    // `exclude` above already took the reset fields out of what changed.
    let mut gained = cmp.changed();
    gained.remove_all(stripped_fields());
    if !gained.is_empty() {
        let fields = match managers.remove(&id) {
            Some(previous) => gained.union(&previous.fields),
            None => gained,
        };
        managers.insert(
            id,
            Owned {
                fields,
                api_version: req.api_version.to_string(),
                time: Some(req.time.to_string()),
            },
        );
    }
    cap_update_managers(managers, MAX_UPDATE_MANAGERS);
}

/// Merges the oldest `Update` entries, per API version, into an `ancient-changes` entry until
/// at most `max` remain.
fn cap_update_managers(managers: &mut Managers, max: usize) {
    let mut updaters: Vec<ManagerId> = managers
        .keys()
        .filter(|id| id.operation == Operation::Update)
        .cloned()
        .collect();
    if updaters.len() <= max {
        return;
    }
    updaters.sort_by_cached_key(|id| {
        let time = managers.get(id).and_then(|o| o.time.clone());
        (unix_seconds(time.as_deref()), id.identifier())
    });
    let mut first_of_version: BTreeMap<String, ManagerId> = BTreeMap::new();
    let mut remaining = updaters.len();
    for id in updaters {
        if remaining <= max {
            break;
        }
        let Some(owned) = managers.get(&id).cloned() else {
            continue;
        };
        let version = owned.api_version.clone();
        let Some(first) = first_of_version.get(&version).cloned() else {
            first_of_version.insert(version, id);
            continue;
        };
        let bucket = ManagerId::new(ANCIENT_CHANGES_MANAGER, Operation::Update, &version, "");
        if !managers.contains_key(&bucket)
            && let Some(first_owned) = managers.remove(&first)
        {
            managers.insert(bucket.clone(), first_owned);
        }
        managers.remove(&id);
        if let Some(b) = managers.get_mut(&bucket) {
            b.fields = owned.fields.union(&b.fields);
            // The merged entry is more recent than the bucket.
            b.time = owned.time;
            b.api_version = version;
        }
        remaining -= 1;
    }
}

fn object_or_empty(v: Option<&Value>) -> Value {
    let mut v = v.cloned().unwrap_or_else(|| Value::Object(Map::new()));
    strip_managed_fields(&mut v);
    v
}

/// `v` without `metadata.managedFields`, copied only when it has them.
fn without_managed_fields(v: &Value) -> Cow<'_, Value> {
    if raw_managed_fields(v).is_none() {
        return Cow::Borrowed(v);
    }
    let mut v = v.clone();
    strip_managed_fields(&mut v);
    Cow::Owned(v)
}

/// Tracks a create, update or non-apply patch: returns the managedFields of `new`.
///
/// `old` is `None` for a create. `managed` are the entries to start from (see
/// [`super::managed_fields_for_update`]). Fields `req.manager` added or changed become its
/// own (operation `Update`, merged with its earlier entry for the same version and
/// subresource) and are taken from other managers; removed fields are taken from everyone.
/// An existing object without managedFields stays untracked, as in Kubernetes, and an object
/// that cannot be typed keeps `managed` unchanged.
pub fn update<T: TypeView>(
    old: Option<&Value>,
    new: &Value,
    managed: Vec<ManagedFieldsEntry>,
    req: &Request,
    ty: &T,
) -> Vec<ManagedFieldsEntry> {
    if managed.is_empty() && old.is_some() {
        return managed;
    }
    let empty = Value::Object(Map::new());
    let old_v = without_managed_fields(old.unwrap_or(&empty));
    let new_v = without_managed_fields(new);
    if (old.is_some() && !validate(&old_v, ty, true).is_empty())
        || !validate(&new_v, ty, true).is_empty()
    {
        return managed;
    }
    let mut managers = to_managers(managed);
    let id = ManagerId::new(
        req.manager,
        Operation::Update,
        req.api_version,
        req.subresource,
    );
    record_update(&mut managers, &old_v, &new_v, id, req, ty);
    to_entries(managers)
}

fn validation_message(errors: Vec<String>) -> String {
    if errors.len() == 1 {
        return errors.concat();
    }
    let mut lines = vec!["errors:".to_string()];
    lines.extend(errors.into_iter().map(|e| format!("  {e}")));
    lines.join("\n")
}

/// Server-side apply of `config` by `req.manager` onto `live` (`None` when creating).
///
/// `managed` are the live object's entries. The config is merged into the live object; fields
/// the manager applied before but no longer applies are removed unless someone else owns
/// them; the manager then owns exactly what it applied. A field the config changes that
/// another manager owns is a conflict, unless `force`, which moves it to the applier.
/// Applying a value equal to the live one shares the field.
///
/// An apply by `kubectl` also takes over from client-side apply: conflicts on fields its
/// last-applied annotation still describes are forced, and an existing annotation is updated
/// to the applied configuration.
pub fn apply<T: TypeView>(
    live: Option<&Value>,
    config: &Value,
    force: bool,
    managed: Vec<ManagedFieldsEntry>,
    req: &Request,
    ty: &T,
) -> Result<Applied, ApplyError> {
    let kubectl = req.manager == KUBECTL_MANAGER;
    let mut result = match apply_once(live, config, force, managed.clone(), req, ty) {
        Err(ApplyError::Conflicts(conflicts)) if kubectl => {
            let Some(allowed) = live.and_then(|l| allowed_conflicts(l, req.api_version, ty)) else {
                return Err(conflicts.into());
            };
            let remaining: Vec<Conflict> = conflicts
                .0
                .into_iter()
                .filter(|c| !allowed.has(&c.path))
                .collect();
            if !remaining.is_empty() {
                return Err(Conflicts(remaining).into());
            }
            apply_once(live, config, true, managed, req, ty)?
        }
        other => other?,
    };
    if kubectl && has_last_applied(&result.object) {
        set_last_applied(&mut result.object, build_last_applied(config));
    }
    Ok(result)
}

fn apply_once<T: TypeView>(
    live: Option<&Value>,
    config: &Value,
    force: bool,
    managed: Vec<ManagedFieldsEntry>,
    req: &Request,
    ty: &T,
) -> Result<Applied, ApplyError> {
    if raw_managed_fields(config).is_some() {
        return Err(ApplyError::ManagedFieldsInConfig);
    }
    let errors = validate(config, ty, false);
    if !errors.is_empty() {
        return Err(ApplyError::InvalidConfig(validation_message(errors)));
    }
    let live_v = object_or_empty(live);
    let errors = validate(&live_v, ty, true);
    if !errors.is_empty() {
        return Err(ApplyError::InvalidLive(validation_message(errors)));
    }

    let mut managers = to_managers(managed);
    if managers.is_empty() {
        // Whatever the object holds before its first apply belongs to a placeholder, so the
        // applier cannot silently take or drop it.
        let id = ManagerId::new(
            BEFORE_FIRST_APPLY_MANAGER,
            Operation::Update,
            req.api_version,
            req.subresource,
        );
        record_update(
            &mut managers,
            &Value::Object(Map::new()),
            &live_v,
            id,
            req,
            ty,
        );
    }

    let applier = ManagerId::new(
        req.manager,
        Operation::Apply,
        req.api_version,
        req.subresource,
    );
    let merged = merge(&live_v, config, ty);
    let last = managers.get(&applier).map(|o| o.fields.clone());
    let applied = field_set(config, ty).recursive_difference(req.reset_fields);
    managers.insert(
        applier.clone(),
        Owned {
            fields: applied,
            api_version: req.api_version.to_string(),
            time: Some(req.time.to_string()),
        },
    );
    let merged = prune(merged, &managers, last.as_ref(), ty);

    let mut cmp = compare(&live_v, &merged, ty);
    cmp.exclude(req.reset_fields);
    take_from_others(&mut managers, &cmp, Some(&applier), force)?;

    if let Some(owned) = managers.get_mut(&applier) {
        owned.fields.remove_all(stripped_fields());
        if owned.fields.is_empty() {
            managers.remove(&applier);
        }
    }

    let managed_fields = to_entries(managers);
    let mut object = merged;
    set_managed_fields(&mut object, &managed_fields);
    Ok(Applied {
        object,
        managed_fields,
    })
}

/// Removes from `merged` what the applier owned before (`last`) and nobody owns now,
/// including a struct field none of whose contents anyone owns anymore.
fn prune<T: TypeView>(
    merged: Value,
    managers: &Managers,
    last: Option<&FieldSet>,
    ty: &T,
) -> Value {
    let Some(last) = last.filter(|l| !l.is_empty()) else {
        return merged;
    };
    let named = |set: &FieldSet| ensure_named_fields_are_members(set, Some(&merged), ty);
    let last = named(last);
    let owned = named(
        &managers
            .values()
            .fold(FieldSet::new(), |acc, o| acc.union(&o.fields)),
    );
    let merged_set = named(&field_set(&merged, ty));

    // Drop everything the applier owned, then bring back what anyone still owns.
    let pruned = remove_items(&merged, &last, ty);
    let pruned_set = named(&field_set(&pruned, ty));
    let pruned = remove_items(
        &merged,
        &merged_set.difference(&pruned_set.union(&owned)),
        ty,
    );
    // Only what the applier owned may go: restore anything else lost on the way.
    let pruned_set = named(&field_set(&pruned, ty));
    remove_items(
        &merged,
        &merged_set.difference(&pruned_set).intersection(&last),
        ty,
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    #[test]
    fn unix_seconds_reads_rfc3339() {
        assert_eq!(unix_seconds(Some("1970-01-01T00:00:00Z")), 0);
        assert_eq!(unix_seconds(Some("2024-03-01T10:00:00Z")), 1_709_287_200);
        assert_eq!(unix_seconds(Some("2024-03-01T10:00:00.5Z")), 1_709_287_200);
        assert_eq!(
            unix_seconds(Some("2024-03-01T12:00:00+02:00")),
            1_709_287_200
        );
        assert_eq!(unix_seconds(Some("nonsense")), 0);
        assert_eq!(unix_seconds(None), 0);
    }

    #[test]
    fn identifiers_match_kubernetes() {
        assert_eq!(
            ManagerId::new("m", Operation::Apply, "v1", "").identifier(),
            r#"{"manager":"m","operation":"Apply"}"#
        );
        assert_eq!(
            ManagerId::new("m", Operation::Update, "apps/v1", "status").identifier(),
            r#"{"manager":"m","operation":"Update","apiVersion":"apps/v1","subresource":"status"}"#
        );
    }
}
