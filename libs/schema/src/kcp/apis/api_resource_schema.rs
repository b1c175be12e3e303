//! `apis.kcp.io/v1alpha1` APIResourceSchema: one immutable definition of a resource (a CRD's
//! spec, more or less), which APIExports offer and APIBindings bind.

use serde_json::{Value, json};

use super::{VERSION_PATTERN, k8s_ref, map_list, rule, with};
use crate::kcp::{api_version, boolean, kind, object_meta, string, string_list};

/// Where k8s-openapi's apiextensions.k8s.io/v1 components live.
const APIEXTENSIONS: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1";

fn apiextensions(name: &str, description: &str) -> Value {
    k8s_ref(&format!("{APIEXTENSIONS}.{name}"), description)
}

/// One served version of the resource.
fn version() -> Value {
    json!({
        "type": "object",
        "description": "One version of the resource and its schema.",
        "required": ["name", "schema", "served", "storage"],
        "properties": {
            "name": with(
                string("The version, e.g. v1 or v2beta1, served under /apis/<group>/<name>."),
                json!({"minLength": 1, "pattern": VERSION_PATTERN}),
            ),
            "served": with(
                boolean("Whether the version is served."),
                json!({"default": true}),
            ),
            "storage": boolean("Whether objects are stored in this version; true for exactly one."),
            "deprecated": boolean("Whether requests to this version get a deprecation warning."),
            "deprecationWarning": string("Replaces the default deprecation warning; only with deprecated."),
            "schema": {
                "type": "object",
                "description": "The version's structural OpenAPI v3 schema, as a CRD's openAPIV3Schema.",
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-map-type": "atomic",
            },
            "subresources": apiextensions(
                "CustomResourceSubresources",
                "The status and scale subresources the version serves."),
            "additionalPrinterColumns": map_list(
                "Columns of the version's table output, besides the name; the age alone when none.",
                apiextensions("CustomResourceColumnDefinition", "One column."),
                &["name"],
            ),
            "selectableFields": {
                "type": "array",
                "description": "Fields usable in field selectors (at most 8).",
                "items": apiextensions("SelectableField", "One selectable field."),
                "x-kubernetes-list-type": "atomic",
            },
        },
    })
}

/// kcp's CustomResourceConversion: like a CRD's, but a webhook is reached by URL only.
fn conversion() -> Value {
    json!({
        "type": "object",
        "description": "How objects are converted between versions; needed with more than one version.",
        "required": ["strategy"],
        "properties": {
            "strategy": {
                "type": "string",
                "description": "None changes only apiVersion; Webhook calls the webhook.",
                "enum": ["None", "Webhook"],
            },
            "webhook": {
                "type": "object",
                "description": "The conversion webhook; set exactly when the strategy is Webhook.",
                "required": ["conversionReviewVersions"],
                "properties": {
                    "clientConfig": {
                        "type": "object",
                        "description": "How to call the webhook.",
                        "properties": {
                            "url": {
                                "type": "string",
                                "format": "uri",
                                "description": "The webhook's https:// URL, without user info, query or \
                                                fragment (service references are not supported).",
                            },
                            "caBundle": {
                                "type": "string",
                                "format": "byte",
                                "description": "PEM CA bundle to verify the webhook's certificate; the \
                                                system roots when unset.",
                            },
                        },
                    },
                    "conversionReviewVersions": with(
                        string_list(
                            "ConversionReview versions the webhook accepts, preferred first; the \
                             first one the server knows is used."),
                        json!({"x-kubernetes-list-type": "atomic"}),
                    ),
                },
            },
        },
        "x-kubernetes-validations": [
            rule(
                "(self.strategy == 'None' && !has(self.webhook))  || (self.strategy == 'Webhook' && has(self.webhook))",
                "Webhook must be specified if strategy=Webhook",
            ),
        ],
    })
}

fn spec() -> Value {
    json!({
        "type": "object",
        "description": "The resource's definition; immutable.",
        "required": ["group", "names", "scope", "versions"],
        "properties": {
            "group": string("API group of the resource; empty for the core group (not \"core\")."),
            "names": apiextensions(
                "CustomResourceDefinitionNames",
                "The resource's plural, singular, kind, list kind, short names and categories."),
            "scope": {
                "type": "string",
                "description": "Whether objects are namespaced or cluster-wide.",
                "enum": ["Cluster", "Namespaced"],
            },
            "versions": with(
                map_list("The versions of the resource; at least one.", version(), &["name"]),
                json!({"minItems": 1}),
            ),
            "nameValidation": {
                "type": "string",
                "description": "How names of bound objects are checked: as DNS-1123 subdomains \
                                (as for CRDs) or only as safe path segments (not . or .., no / or %).",
                "enum": ["DNS1123Subdomain", "PathSegmentName"],
                "default": "DNS1123Subdomain",
            },
            "conversion": conversion(),
        },
        "x-kubernetes-validations": [
            rule(
                "size(self.versions) == 1 || (size(self.versions) > 1 && has(self.conversion))",
                "Conversion must be specified when multiple versions exist",
            ),
        ],
    })
}

/// The APIResourceSchema component schema (OpenAPI v3 JSON).
pub fn api_resource_schema_schema() -> Value {
    json!({
        "description": "APIResourceSchema defines one resource, like a CustomResourceDefinition \
                        that is never served by itself: APIExports list schemas, and bindings \
                        serve them. Its name is <prefix>.<plural>.<group> (core for the empty \
                        group), and its spec never changes.",
        "type": "object",
        "properties": {
            "apiVersion": api_version("apis.kcp.io/v1alpha1"),
            "kind": kind("APIResourceSchema"),
            "metadata": object_meta(),
            "spec": spec(),
        },
    })
}
