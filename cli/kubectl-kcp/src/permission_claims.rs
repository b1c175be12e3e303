//! Permission claims: as the command line names them (`resource.group`, `core` for the core group),
//! as an APIExport asks for them, and as an APIBinding answers them (`apis.kcp.io/v1alpha2`).
//!
//! kcp's plugin writes an answer from the flag alone, with `verbs: ["*"]` and no identity hash,
//! which only matches exports that claim built-in resources with every verb. Here an answer copies
//! the export's claim (group, resource, identity hash, verbs), so it is the claim the export asks
//! for.

use std::fmt;

use serde_json::{Map, Value, json};

/// A group and resource; the empty group is the core group. Shown as Kubernetes shows a
/// `GroupResource`: `resource.group`, or `resource` alone for the core group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupResource {
    pub group: String,
    pub resource: String,
}

impl GroupResource {
    fn new(group: &str, resource: &str) -> Self {
        Self {
            group: if group == "core" { "" } else { group }.to_owned(),
            resource: resource.to_owned(),
        }
    }

    /// `resource.group`, as `bind --accept-permission-claim` takes it: the group is required.
    pub fn parse_qualified(text: &str) -> Result<Self, ClaimError> {
        match text.split_once('.') {
            Some((resource, group)) if !resource.is_empty() && !group.is_empty() => {
                Ok(Self::new(group, resource))
            }
            _ => Err(ClaimError::Invalid(text.to_owned())),
        }
    }

    /// `resource[.group]`, as `claims accept --resource` takes it: no group is the core group.
    pub fn parse_lenient(text: &str) -> Result<Self, ClaimError> {
        let (resource, group) = text.split_once('.').unwrap_or((text, ""));
        if resource.is_empty() {
            return Err(ClaimError::Invalid(text.to_owned()));
        }
        Ok(Self::new(group, resource))
    }

    fn is(&self, group: &str, resource: &str) -> bool {
        self.group == group && self.resource == resource
    }
}

impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// An answer to a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimState {
    Accepted,
    Rejected,
}

impl ClaimState {
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimState::Accepted => "Accepted",
            ClaimState::Rejected => "Rejected",
        }
    }

    /// As kcp's `claims accept|reject` reports it.
    pub fn verb_past(self) -> &'static str {
        match self {
            ClaimState::Accepted => "accepted",
            ClaimState::Rejected => "rejected",
        }
    }
}

/// Why the claim flags cannot be followed. The texts are kcp's, but for the last three.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    #[error("invalid permission claim {0:?}")]
    Invalid(String),
    /// Two flags that exclude each other (kcp's sentence).
    #[error("{0}")]
    Exclusive(&'static str),
    /// The invalid claims of `--accept-permission-claim`, as Go prints a list of errors.
    #[error("invalid accepted permission claims: [{}]", .0.join(" "))]
    InvalidAccepted(Vec<String>),
    #[error("invalid rejected permission claims: [{}]", .0.join(" "))]
    InvalidRejected(Vec<String>),
    #[error(
        "accepted permission claim {accepted} conflicts with rejected permission claim {rejected}"
    )]
    Conflict {
        accepted: GroupResource,
        rejected: GroupResource,
    },
    /// An answer to a claim the export does not make would leave the binding's claims invalid.
    #[error("APIExport {export} has no permission claim for {claim}")]
    NotClaimed {
        export: String,
        claim: GroupResource,
    },
    #[error("either --resource or --identity-hash is required")]
    NoFilter,
    #[error(
        "no permission claim {filter} on APIBinding {binding:?}, nor among its export's claims"
    )]
    NoMatch { filter: String, binding: String },
}

/// What the `bind` flags answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimAnswers {
    /// The claims named on the command line (none: the binding answers no claim).
    Listed(Vec<(GroupResource, ClaimState)>),
    /// Every claim of the export.
    All(ClaimState),
}

impl ClaimAnswers {
    /// `--accept-permission-claim`, `--reject-permission-claim` and the two `--*-all-*` flags, checked
    /// in kcp's order and words.
    pub fn from_flags(
        accept: &[String],
        reject: &[String],
        accept_all: bool,
        reject_all: bool,
    ) -> Result<Self, ClaimError> {
        let exclusive = [
            (
                accept_all && reject_all,
                "cannot use both --accept-all-permission-claims and --reject-all-permission-claims",
            ),
            (
                accept_all && !accept.is_empty(),
                "cannot use --accept-all-permission-claims with --accept-permission-claim",
            ),
            (
                accept_all && !reject.is_empty(),
                "cannot use --accept-all-permission-claims together with --reject-permission-claim",
            ),
            (
                reject_all && !reject.is_empty(),
                "cannot use --reject-all-permission-claims with --reject-permission-claim",
            ),
            (
                reject_all && !accept.is_empty(),
                "cannot use --reject-all-permission-claims together with --accept-permission-claim",
            ),
        ];
        if let Some((_, text)) = exclusive.iter().find(|(hit, _)| *hit) {
            return Err(ClaimError::Exclusive(text));
        }
        if accept_all {
            return Ok(ClaimAnswers::All(ClaimState::Accepted));
        }
        if reject_all {
            return Ok(ClaimAnswers::All(ClaimState::Rejected));
        }
        let accepted = parse_all(accept).map_err(ClaimError::InvalidAccepted)?;
        let rejected = parse_all(reject).map_err(ClaimError::InvalidRejected)?;
        if let Some((a, r)) = accepted
            .iter()
            .find_map(|a| rejected.iter().find(|r| r == &a).map(|r| (a, r)))
        {
            return Err(ClaimError::Conflict {
                accepted: a.clone(),
                rejected: r.clone(),
            });
        }
        let answers = accepted
            .into_iter()
            .map(|gr| (gr, ClaimState::Accepted))
            .chain(rejected.into_iter().map(|gr| (gr, ClaimState::Rejected)))
            .collect();
        Ok(ClaimAnswers::Listed(answers))
    }

    /// Whether the binding answers no claim (then the export need not be read).
    pub fn is_empty(&self) -> bool {
        matches!(self, ClaimAnswers::Listed(list) if list.is_empty())
    }

    /// The binding's `spec.permissionClaims`: the claims of the export `export` (named for the
    /// errors) answered as the flags say.
    pub fn resolve(&self, export: &str, claims: &[ExportClaim]) -> Result<Vec<Value>, ClaimError> {
        match self {
            ClaimAnswers::All(state) => Ok(claims.iter().map(|c| c.answer(*state)).collect()),
            ClaimAnswers::Listed(list) => {
                let mut out = Vec::new();
                for (gr, state) in list {
                    let mut found = claims
                        .iter()
                        .filter(|c| gr.is(&c.group, &c.resource))
                        .peekable();
                    if found.peek().is_none() {
                        return Err(ClaimError::NotClaimed {
                            export: export.to_owned(),
                            claim: gr.clone(),
                        });
                    }
                    out.extend(found.map(|c| c.answer(*state)));
                }
                Ok(out)
            }
        }
    }
}

/// Each `resource.group` of a (comma-split, repeatable) flag, once; the invalid ones as errors.
fn parse_all(texts: &[String]) -> Result<Vec<GroupResource>, Vec<String>> {
    let mut parsed: Vec<GroupResource> = Vec::new();
    let mut errors = Vec::new();
    for text in texts {
        match GroupResource::parse_qualified(text) {
            Ok(gr) if parsed.contains(&gr) => {}
            Ok(gr) => parsed.push(gr),
            Err(e) => errors.push(e.to_string()),
        }
    }
    if errors.is_empty() {
        Ok(parsed)
    } else {
        Err(errors)
    }
}

/// A claim as an APIExport makes it (`spec.permissionClaims[]`) and as a binding's status copies it
/// (`status.exportPermissionClaims[]`). Read leniently: absent or mistyped members are empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportClaim {
    pub group: String,
    pub resource: String,
    pub identity_hash: String,
    pub verbs: Vec<String>,
    pub default_selector: Option<Value>,
}

impl ExportClaim {
    pub fn from_json(claim: &Value) -> Self {
        let text = |key: &str| {
            claim
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let verbs = claim
            .get("verbs")
            .and_then(Value::as_array)
            .map(|verbs| {
                verbs
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        Self {
            group: text("group"),
            resource: text("resource"),
            identity_hash: text("identityHash"),
            verbs,
            default_selector: claim
                .get("defaultSelector")
                .filter(|s| !s.is_null())
                .cloned(),
        }
    }

    /// The claims at `pointer` of `object` (`/spec/permissionClaims` of an export,
    /// `/status/exportPermissionClaims` of a binding).
    pub fn list(object: &Value, pointer: &str) -> Vec<Self> {
        object
            .pointer(pointer)
            .and_then(Value::as_array)
            .map(|claims| claims.iter().map(Self::from_json).collect())
            .unwrap_or_default()
    }

    /// This claim answered with `state`: its group, resource, identity hash and verbs, and the
    /// export's default selector (a binding must name one; kcp's plugin always writes `matchAll`).
    pub fn answer(&self, state: ClaimState) -> Value {
        let mut claim = Map::new();
        if !self.group.is_empty() {
            claim.insert("group".into(), json!(self.group));
        }
        claim.insert("resource".into(), json!(self.resource));
        // An export always names verbs (v1alpha1's `all` converts to `*`); none would mean every verb.
        let verbs = if self.verbs.is_empty() {
            vec!["*".to_owned()]
        } else {
            self.verbs.clone()
        };
        claim.insert("verbs".into(), json!(verbs));
        if !self.identity_hash.is_empty() {
            claim.insert("identityHash".into(), json!(self.identity_hash));
        }
        let selector = self
            .default_selector
            .clone()
            .filter(|s| s.as_object().is_some_and(|o| !o.is_empty()))
            .unwrap_or_else(|| json!({"matchAll": true}));
        claim.insert("selector".into(), selector);
        claim.insert("state".into(), json!(state.as_str()));
        Value::Object(claim)
    }
}

/// Which claims `claims accept|reject` answers: by group and resource, by identity hash, or both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimFilter {
    resource: Option<(String, GroupResource)>,
    identity_hash: Option<String>,
}

impl ClaimFilter {
    /// From `--resource` and `--identity-hash` (empty counts as not given, as in kcp).
    pub fn new(resource: Option<&str>, identity_hash: Option<&str>) -> Result<Self, ClaimError> {
        let resource = match resource.filter(|r| !r.is_empty()) {
            Some(text) => Some((text.to_owned(), GroupResource::parse_lenient(text)?)),
            None => None,
        };
        let identity_hash = identity_hash.filter(|h| !h.is_empty()).map(str::to_owned);
        if resource.is_none() && identity_hash.is_none() {
            return Err(ClaimError::NoFilter);
        }
        Ok(Self {
            resource,
            identity_hash,
        })
    }

    fn matches_parts(&self, group: &str, resource: &str, identity_hash: &str) -> bool {
        self.resource
            .as_ref()
            .is_none_or(|(_, gr)| gr.is(group, resource))
            && self
                .identity_hash
                .as_ref()
                .is_none_or(|h| h == identity_hash)
    }

    fn matches(&self, claim: &ExportClaim) -> bool {
        self.matches_parts(&claim.group, &claim.resource, &claim.identity_hash)
    }

    /// kcp's report: `claim "<resource>"`, else `claim with identity hash "<hash>"`.
    pub fn describe(&self) -> String {
        match (&self.resource, &self.identity_hash) {
            (Some((text, _)), _) => format!("claim {text:?}"),
            (None, Some(hash)) => format!("claim with identity hash {hash:?}"),
            (None, None) => "claim".to_owned(),
        }
    }

    /// Sets `state` on the claims of `binding`'s spec this filter matches. When none does, the
    /// matching claims of its export (`status.exportPermissionClaims`) are added, answered: kcp's
    /// plugin would change nothing, leaving a claim it was asked to answer unanswered. Returns how
    /// many claims were answered.
    pub fn answer(&self, binding: &mut Value, state: ClaimState) -> usize {
        let mut answered = 0;
        if let Some(claims) = binding
            .pointer_mut("/spec/permissionClaims")
            .and_then(Value::as_array_mut)
        {
            for claim in claims.iter_mut() {
                let matched = claim.is_object() && self.matches(&ExportClaim::from_json(claim));
                if let (true, Some(fields)) = (matched, claim.as_object_mut()) {
                    fields.insert("state".into(), json!(state.as_str()));
                    answered += 1;
                }
            }
        }
        if answered > 0 {
            return answered;
        }
        let added: Vec<Value> = ExportClaim::list(binding, "/status/exportPermissionClaims")
            .iter()
            .filter(|c| self.matches(c))
            .map(|c| c.answer(state))
            .collect();
        if added.is_empty() {
            return 0;
        }
        let Some(spec) = binding
            .as_object_mut()
            .map(|b| b.entry("spec").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
        else {
            return 0;
        };
        let answered = added.len();
        match spec.get_mut("permissionClaims") {
            Some(Value::Array(claims)) => claims.extend(added),
            _ => {
                spec.insert("permissionClaims".into(), Value::Array(added));
            }
        }
        answered
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn gr(group: &str, resource: &str) -> GroupResource {
        GroupResource::new(group, resource)
    }

    #[test]
    fn group_resources() {
        assert_eq!(
            GroupResource::parse_qualified("secrets.core"),
            Ok(gr("", "secrets"))
        );
        assert_eq!(
            GroupResource::parse_qualified("gateways.networking.istio.io"),
            Ok(gr("networking.istio.io", "gateways"))
        );
        for bad in ["secrets", ".core", "secrets.", ""] {
            assert_eq!(
                GroupResource::parse_qualified(bad),
                Err(ClaimError::Invalid(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(
            GroupResource::parse_lenient("secrets"),
            Ok(gr("", "secrets"))
        );
        assert_eq!(
            GroupResource::parse_lenient("secrets.core"),
            Ok(gr("", "secrets"))
        );
        assert!(GroupResource::parse_lenient(".x").is_err());
        assert_eq!(gr("", "secrets").to_string(), "secrets");
        assert_eq!(
            gr("wildwest.dev", "cowboys").to_string(),
            "cowboys.wildwest.dev"
        );
    }

    #[test]
    fn flags_exclude_each_other_in_kcps_words() {
        let err = |a: &[&str], r: &[&str], aa, ra| {
            ClaimAnswers::from_flags(&strings(a), &strings(r), aa, ra)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&[], &[], true, true),
            "cannot use both --accept-all-permission-claims and --reject-all-permission-claims"
        );
        assert_eq!(
            err(&["a.b"], &[], true, false),
            "cannot use --accept-all-permission-claims with --accept-permission-claim"
        );
        assert_eq!(
            err(&[], &["a.b"], true, false),
            "cannot use --accept-all-permission-claims together with --reject-permission-claim"
        );
        assert_eq!(
            err(&[], &["a.b"], false, true),
            "cannot use --reject-all-permission-claims with --reject-permission-claim"
        );
        assert_eq!(
            err(&["a.b"], &[], false, true),
            "cannot use --reject-all-permission-claims together with --accept-permission-claim"
        );
        assert_eq!(
            err(&["x", "a.b", "y"], &[], false, false),
            "invalid accepted permission claims: [invalid permission claim \"x\" invalid permission claim \"y\"]"
        );
        assert_eq!(
            err(&[], &["x"], false, false),
            "invalid rejected permission claims: [invalid permission claim \"x\"]"
        );
        assert_eq!(
            err(&["secrets.core"], &["secrets.core"], false, false),
            "accepted permission claim secrets conflicts with rejected permission claim secrets"
        );
    }

    #[test]
    fn flags_to_answers() {
        let answers = ClaimAnswers::from_flags(
            &strings(&["secrets.core", "configmaps.core", "secrets.core"]),
            &strings(&["cowboys.wildwest.dev"]),
            false,
            false,
        )
        .unwrap();
        assert_eq!(
            answers,
            ClaimAnswers::Listed(vec![
                (gr("", "secrets"), ClaimState::Accepted),
                (gr("", "configmaps"), ClaimState::Accepted),
                (gr("wildwest.dev", "cowboys"), ClaimState::Rejected),
            ])
        );
        assert!(!answers.is_empty());
        assert!(
            ClaimAnswers::from_flags(&[], &[], false, false)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            ClaimAnswers::from_flags(&[], &[], false, true).unwrap(),
            ClaimAnswers::All(ClaimState::Rejected)
        );
    }

    fn export_claims() -> Vec<ExportClaim> {
        ExportClaim::list(
            &json!({"spec": {"permissionClaims": [
                {"resource": "configmaps", "verbs": ["get", "list"]},
                {"group": "wildwest.dev", "resource": "cowboys", "identityHash": "abc",
                 "verbs": ["*"], "defaultSelector": {"matchLabels": {"a": "b"}}},
            ]}}),
            "/spec/permissionClaims",
        )
    }

    #[test]
    fn answers_copy_the_exports_claims() {
        let answers = ClaimAnswers::from_flags(
            &strings(&["cowboys.wildwest.dev"]),
            &strings(&["configmaps.core"]),
            false,
            false,
        )
        .unwrap();
        assert_eq!(
            answers.resolve("root:p:e", &export_claims()).unwrap(),
            vec![
                json!({"group": "wildwest.dev", "resource": "cowboys", "verbs": ["*"],
                       "identityHash": "abc", "selector": {"matchLabels": {"a": "b"}},
                       "state": "Accepted"}),
                json!({"resource": "configmaps", "verbs": ["get", "list"],
                       "selector": {"matchAll": true}, "state": "Rejected"}),
            ]
        );
        let all = ClaimAnswers::All(ClaimState::Accepted)
            .resolve("root:p:e", &export_claims())
            .unwrap();
        assert_eq!(all.len(), 2);
        let missing = ClaimAnswers::from_flags(&strings(&["secrets.core"]), &[], false, false)
            .unwrap()
            .resolve("root:p:e", &export_claims())
            .unwrap_err();
        assert_eq!(
            missing.to_string(),
            "APIExport root:p:e has no permission claim for secrets"
        );
    }

    #[test]
    fn filters() {
        assert_eq!(ClaimFilter::new(None, Some("")), Err(ClaimError::NoFilter));
        let by_resource = ClaimFilter::new(Some("configmaps"), None).unwrap();
        assert_eq!(by_resource.describe(), "claim \"configmaps\"");
        let by_hash = ClaimFilter::new(Some(""), Some("abc")).unwrap();
        assert_eq!(by_hash.describe(), "claim with identity hash \"abc\"");
        let claims = export_claims();
        assert!(by_resource.matches(&claims[0]) && !by_resource.matches(&claims[1]));
        assert!(!by_hash.matches(&claims[0]) && by_hash.matches(&claims[1]));
        let both = ClaimFilter::new(Some("cowboys.wildwest.dev"), Some("other")).unwrap();
        assert!(!both.matches(&claims[1]));
    }

    #[test]
    fn answering_a_listed_claim_sets_its_state() {
        let mut binding = json!({"spec": {"permissionClaims": [
            {"resource": "configmaps", "verbs": ["get"], "selector": {"matchAll": true},
             "state": "Rejected"},
            "not a claim",
        ]}});
        let filter = ClaimFilter::new(Some("configmaps.core"), None).unwrap();
        assert_eq!(filter.answer(&mut binding, ClaimState::Accepted), 1);
        assert_eq!(binding["spec"]["permissionClaims"][0]["state"], "Accepted");
        assert_eq!(binding["spec"]["permissionClaims"][1], "not a claim");
    }

    #[test]
    fn answering_an_unlisted_claim_adds_the_exports() {
        let mut binding = json!({
            "spec": {"reference": {"export": {"path": "root:p", "name": "e"}}},
            "status": {"exportPermissionClaims": [
                {"group": "wildwest.dev", "resource": "cowboys", "identityHash": "abc", "verbs": ["get"]},
            ]},
        });
        let filter = ClaimFilter::new(None, Some("abc")).unwrap();
        assert_eq!(filter.answer(&mut binding, ClaimState::Rejected), 1);
        assert_eq!(
            binding["spec"]["permissionClaims"],
            json!([{"group": "wildwest.dev", "resource": "cowboys", "verbs": ["get"],
                    "identityHash": "abc", "selector": {"matchAll": true}, "state": "Rejected"}])
        );
        let nothing = ClaimFilter::new(Some("secrets"), None).unwrap();
        assert_eq!(nothing.answer(&mut binding, ClaimState::Accepted), 0);
        assert_eq!(nothing.answer(&mut json!("odd"), ClaimState::Accepted), 0);
    }
}
