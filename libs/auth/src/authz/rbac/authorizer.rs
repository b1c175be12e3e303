//! The RBAC authorizer over an [`RbacIndex`], and the rules a user holds (SelfSubjectRulesReview).

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use crate::authn::UserInfo;
use crate::authz::rbac::index::RbacIndex;
use crate::authz::rbac::rule::PolicyRule;
use crate::authz::{Attributes, Authorizer, Decision};

/// The user name and group Kubernetes gives requests without credentials.
pub const ANONYMOUS_USER: &str = "system:anonymous";
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";

/// Allows what some binding grants; has no opinion otherwise (RBAC never denies).
#[derive(Clone, Debug)]
pub struct RbacAuthorizer {
    index: Arc<RbacIndex>,
}

/// A decision with the reason Kubernetes gives: `RBAC: allowed by ...` when allowed, otherwise the
/// errors met while evaluating (empty when there were none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RbacDecision {
    pub allowed: bool,
    pub reason: String,
}

/// A `SelfSubjectRulesReview` status entry for resources.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
}

/// A `SelfSubjectRulesReview` status entry for non-resource URLs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

/// The rules a user holds in one LC and namespace, as a `SelfSubjectRulesReview` status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubjectRules {
    pub resource_rules: Vec<ResourceRule>,
    pub non_resource_rules: Vec<NonResourceRule>,
    /// Some binding could not be evaluated, so the lists may miss rules.
    pub incomplete: bool,
    /// Why, when `incomplete`.
    pub evaluation_error: String,
}

impl SubjectRules {
    /// The `status` of a `SelfSubjectRulesReview` (`authorization.k8s.io/v1`).
    pub fn to_status_json(&self) -> Value {
        let resource_rules: Vec<Value> = self
            .resource_rules
            .iter()
            .map(|r| {
                let mut rule =
                    json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
                if !r.resource_names.is_empty() {
                    rule["resourceNames"] = json!(r.resource_names);
                }
                rule
            })
            .collect();
        let non_resource_rules: Vec<Value> = self
            .non_resource_rules
            .iter()
            .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
            .collect();
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": self.incomplete,
        });
        if !self.evaluation_error.is_empty() {
            status["evaluationError"] = json!(self.evaluation_error);
        }
        status
    }
}

impl RbacAuthorizer {
    pub fn new(index: Arc<RbacIndex>) -> Self {
        RbacAuthorizer { index }
    }

    pub fn index(&self) -> &Arc<RbacIndex> {
        &self.index
    }

    /// Decides a request. A request without a user is evaluated as `system:anonymous` in
    /// `system:unauthenticated`, as Kubernetes' anonymous authenticator would present it.
    pub fn decide(&self, attrs: &Attributes<'_>) -> RbacDecision {
        let user: &UserInfo = match attrs.user {
            Some(user) => user,
            None => anonymous(),
        };
        let mut allowed_by = None;
        let errors =
            self.index
                .visit_rules(user, attrs.cluster, attrs.namespace, |source, rule| {
                    if rule.allows(attrs) {
                        allowed_by = Some(source.to_string());
                        return ControlFlow::Break(());
                    }
                    ControlFlow::Continue(())
                });
        match allowed_by {
            Some(source) => RbacDecision {
                allowed: true,
                reason: format!("RBAC: allowed by {source}"),
            },
            None => RbacDecision {
                allowed: false,
                reason: if errors.is_empty() {
                    String::new()
                } else {
                    format!("RBAC: {}", aggregate(&errors))
                },
            },
        }
    }

    /// Every rule `user` holds in `cluster` and `namespace` (empty: cluster-wide rules only), split as
    /// a SelfSubjectRulesReview does: a rule with resources gives a resource rule, a rule with
    /// non-resource URLs a non-resource rule. Duplicates are dropped.
    pub fn rules_for(&self, user: &UserInfo, cluster: &str, namespace: &str) -> SubjectRules {
        let mut seen: HashSet<PolicyRule> = HashSet::new();
        let mut out = SubjectRules::default();
        let errors = self.index.visit_rules(user, cluster, namespace, |_, rule| {
            if seen.insert(rule.clone()) {
                if !rule.resources.is_empty() {
                    out.resource_rules.push(ResourceRule {
                        verbs: rule.verbs.clone(),
                        api_groups: rule.api_groups.clone(),
                        resources: rule.resources.clone(),
                        resource_names: rule.resource_names.clone(),
                    });
                }
                if !rule.non_resource_urls.is_empty() {
                    out.non_resource_rules.push(NonResourceRule {
                        verbs: rule.verbs.clone(),
                        non_resource_urls: rule.non_resource_urls.clone(),
                    });
                }
            }
            ControlFlow::Continue(())
        });
        if !errors.is_empty() {
            out.incomplete = true;
            out.evaluation_error = aggregate(&errors);
        }
        out
    }
}

impl Authorizer for RbacAuthorizer {
    fn authorize(&self, attrs: &Attributes<'_>) -> Decision {
        if self.decide(attrs).allowed {
            Decision::Allow
        } else {
            Decision::NoOpinion
        }
    }
}

fn anonymous() -> &'static UserInfo {
    static ANONYMOUS: OnceLock<UserInfo> = OnceLock::new();
    ANONYMOUS.get_or_init(|| UserInfo {
        name: ANONYMOUS_USER.into(),
        groups: vec![UNAUTHENTICATED_GROUP.into()],
        ..UserInfo::default()
    })
}

/// Several errors as apimachinery's aggregate error prints them.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}
