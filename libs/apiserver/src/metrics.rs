//! `/metrics`: the shard's metrics in the Prometheus (OpenMetrics) text format.
//!
//! Request metrics carry kube-apiserver's names and labels, so its dashboards and alerts read
//! them unchanged: `apiserver_request_total`, `apiserver_request_duration_seconds`,
//! `apiserver_current_inflight_requests`, `apiserver_longrunning_requests`. kcp's own
//! `kcp_logicalcluster_count` and `kcp_workspace_count` (per phase), and the usual `process_*`
//! metrics, are read when scraped. No label names a logical cluster: kcp's per-workspace series
//! grew without bound with the number of workspaces; ours do not.

use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::Method;
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

mod process;

use kcp_api_types::ResourceDef;

use kcp_http::query::Query;
use kcp_http::request_info::{RequestInfo, Target};

/// kube-apiserver's buckets for `apiserver_request_duration_seconds`.
const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// What a request's metrics are labelled with: kube-apiserver's labels and values. The resource's
/// names come from the resource found among those served ([`RequestShape::served_by`]), never
/// from the path: a label must not take whatever a client puts there.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestShape {
    /// `GET`, `LIST`, `WATCH`, `POST`, `PUT`, `PATCH`, `APPLY`, `DELETE`, ... (`other` beyond).
    verb: &'static str,
    /// `All` for a dry run, `invalid` for a `dryRun` that is not one, else empty.
    dry_run: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: &'static str,
    /// `resource` (one object, or a create), `namespace`, `cluster`, or empty (not a resource).
    scope: &'static str,
    component: &'static str,
}

impl RequestShape {
    /// A request known only by its method (refused before its path was read).
    pub fn of_method(method: &Method) -> RequestShape {
        RequestShape {
            verb: clean_method(method),
            component: "apiserver",
            ..RequestShape::default()
        }
    }

    pub fn is_watch(&self) -> bool {
        self.verb == "WATCH"
    }

    /// A request as parsed: the verb and scope as kube-apiserver reports them. The resource is
    /// named only once found ([`RequestShape::served_by`]).
    pub fn of(
        method: &Method,
        info: &RequestInfo,
        query: &Query,
        content_type: Option<&str>,
    ) -> RequestShape {
        let Target::Resource(r) = &info.target else {
            return RequestShape::of_method(method);
        };
        let scope = if r.name.is_some() || r.verb == "create" {
            "resource"
        } else if r.namespace.is_some() {
            "namespace"
        } else {
            "cluster"
        };
        let verb = match (method, r.verb.as_str()) {
            (_, "watch") => "WATCH",
            (&Method::GET | &Method::HEAD, _) if scope != "resource" => "LIST",
            (&Method::PATCH, _)
                if matches!(
                    content_type,
                    Some("application/apply-patch+yaml" | "application/apply-patch+cbor")
                ) =>
            {
                "APPLY"
            }
            _ => clean_method(method),
        };
        RequestShape {
            verb,
            dry_run: match query.get("dryRun") {
                None => "",
                Some("All") => "All",
                Some(_) => "invalid",
            },
            scope,
            component: "apiserver",
            ..RequestShape::default()
        }
    }

    /// Names the resource `def` (served) and, if it is one `def` serves, the subresource.
    pub fn served_by(&mut self, def: &ResourceDef, subresource: Option<&str>) {
        self.group.clone_from(&def.group);
        self.version.clone_from(&def.version);
        self.resource.clone_from(&def.plural);
        self.subresource = subresource
            .and_then(|s| {
                crate::discovery::subresources(def)
                    .into_iter()
                    .find(|known| *known == s)
            })
            .unwrap_or_default();
    }
}

/// Methods as kube-apiserver counts them; anything else is `other`, so the label stays bounded.
fn clean_method(method: &Method) -> &'static str {
    match *method {
        Method::GET | Method::HEAD => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Completed {
    #[prometheus(flatten)]
    shape: RequestShape,
    code: u16,
}

/// `apiserver_longrunning_requests`' labels: kube-apiserver's, without `dry_run`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LongRunningShape {
    verb: &'static str,
    group: String,
    version: String,
    resource: String,
    subresource: &'static str,
    scope: &'static str,
    component: &'static str,
}

impl From<&RequestShape> for LongRunningShape {
    fn from(shape: &RequestShape) -> Self {
        LongRunningShape {
            verb: shape.verb,
            group: shape.group.clone(),
            version: shape.version.clone(),
            resource: shape.resource.clone(),
            subresource: shape.subresource,
            scope: shape.scope,
            component: shape.component,
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestKind {
    request_kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Phase {
    shard: String,
    phase: String,
}

/// What is only counted when scraped.
pub struct ScrapeInputs {
    /// Read and write requests in flight.
    pub in_flight: (usize, usize),
    /// Logical clusters and workspaces of this shard per phase (`""` for none yet).
    pub logical_clusters: Vec<(String, i64)>,
    pub workspaces: Vec<(String, i64)>,
}

/// The shard's metrics.
pub struct Metrics {
    shard: String,
    requests: Family<Completed, Counter>,
    durations: Family<RequestShape, Histogram, fn() -> Histogram>,
    long_running: Family<LongRunningShape, Gauge>,
    in_flight: Family<RequestKind, Gauge>,
    logical_clusters: Family<Phase, Gauge>,
    workspaces: Family<Phase, Gauge>,
    process: process::ProcessMetrics,
    /// One scrape at a time: a scrape sets the gauges it then encodes.
    registry: Mutex<Registry>,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

impl Metrics {
    pub fn new(shard: &str) -> Metrics {
        let mut registry = Registry::default();
        let requests = Family::<Completed, Counter>::default();
        registry.register(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code",
            requests.clone(),
        );
        let durations = Family::<RequestShape, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram,
        );
        registry.register_with_unit(
            "apiserver_request_duration",
            "Response latency distribution for each verb, dry run value, group, version, resource, subresource, scope and component (watches not included)",
            prometheus_client::registry::Unit::Seconds,
            durations.clone(),
        );
        let long_running = Family::<LongRunningShape, Gauge>::default();
        registry.register(
            "apiserver_longrunning_requests",
            "Gauge of all active long-running apiserver requests (watches) broken out by verb, group, version, resource, scope and component",
            long_running.clone(),
        );
        let in_flight = Family::<RequestKind, Gauge>::default();
        registry.register(
            "apiserver_current_inflight_requests",
            "Maximal number of currently used inflight request limit of this apiserver per request kind",
            in_flight.clone(),
        );
        let logical_clusters = Family::<Phase, Gauge>::default();
        registry.register(
            "kcp_logicalcluster_count",
            "Number of logical clusters currently running with specific phases on this shard",
            logical_clusters.clone(),
        );
        let workspaces = Family::<Phase, Gauge>::default();
        registry.register(
            "kcp_workspace_count",
            "Number of workspaces currently running with specific phases on this shard",
            workspaces.clone(),
        );
        let process = process::ProcessMetrics::register(&mut registry);
        Metrics {
            shard: shard.to_string(),
            requests,
            durations,
            long_running,
            in_flight,
            logical_clusters,
            workspaces,
            process,
            registry: Mutex::new(registry),
        }
    }

    /// A request answered with `code` after `elapsed`.
    pub fn observe(&self, shape: RequestShape, code: u16, elapsed: Duration) {
        self.durations
            .get_or_create(&shape)
            .observe(elapsed.as_secs_f64());
        self.count(shape, code);
    }

    /// A request answered with `code`, without timing it (a watch, which goes on).
    pub fn count(&self, shape: RequestShape, code: u16) {
        self.requests
            .get_or_create(&Completed { shape, code })
            .inc();
    }

    /// A long-running request (a watch) open until the returned guard is dropped.
    pub fn long_running(&self, shape: &RequestShape) -> LongRunning {
        let gauge = self
            .long_running
            .get_or_create(&LongRunningShape::from(shape))
            .clone();
        gauge.inc();
        LongRunning(gauge)
    }

    /// The text exposition, with the gauges that are read when scraped set from `inputs`.
    pub fn scrape(&self, inputs: ScrapeInputs) -> String {
        let registry = self.registry.lock();
        let (reads, writes) = inputs.in_flight;
        for (kind, value) in [("readOnly", reads), ("mutating", writes)] {
            self.in_flight
                .get_or_create(&RequestKind { request_kind: kind })
                .set(i64::try_from(value).unwrap_or(i64::MAX));
        }
        for (family, counts) in [
            (&self.logical_clusters, inputs.logical_clusters),
            (&self.workspaces, inputs.workspaces),
        ] {
            // A phase nothing is in any more reads 0 rather than its last count.
            family.clear();
            for (phase, count) in counts {
                family
                    .get_or_create(&Phase {
                        shard: self.shard.clone(),
                        phase,
                    })
                    .set(count);
            }
        }
        self.process.update();
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        text
    }
}

/// Keeps a long-running request counted; dropping it (when the response body ends) stops.
pub struct LongRunning(Gauge<i64, std::sync::atomic::AtomicI64>);

impl Drop for LongRunning {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Seconds since the epoch, for `process_start_time_seconds`.
pub(crate) fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// An f64 gauge.
pub(crate) type FloatGauge = Gauge<f64, AtomicU64>;

#[cfg(test)]
mod tests {
    use super::*;
    use kcp_http::request_info::{VerbHints, parse};

    fn shape(method: Method, path: &str, query: &str, content_type: Option<&str>) -> RequestShape {
        let q = Query::parse(Some(query));
        let info = parse(
            &method,
            path,
            VerbHints {
                watch: q.flag("watch"),
            },
        );
        let mut shape = RequestShape::of(&method, &info, &q, content_type);
        // As the handler does once the resource is found among those served.
        if let Target::Resource(r) = &info.target
            && let Some(def) = kcp_api_types::builtin::catalogue()
                .into_iter()
                .find(|d| d.group == r.group && d.version == r.version && d.plural == r.resource)
        {
            shape.served_by(&def, r.subresource.as_deref());
        }
        shape
    }

    #[test]
    fn labels_never_take_what_the_path_says() {
        let unknown = shape(Method::GET, "/clusters/root/apis/x%22%7D%0A/v1/y", "", None);
        assert_eq!(
            (
                unknown.group.as_str(),
                unknown.resource.as_str(),
                unknown.verb
            ),
            ("", "", "LIST")
        );
        let odd = shape(
            Method::GET,
            "/clusters/root/api/v1/namespaces/a/configmaps/x/odd%22",
            "dryRun=Some",
            None,
        );
        assert_eq!((odd.resource.as_str(), odd.subresource), ("configmaps", ""));
        assert_eq!(odd.dry_run, "invalid");
    }

    #[test]
    fn verbs_and_scopes_are_kube_apiservers() {
        let list = shape(
            Method::GET,
            "/clusters/root/api/v1/namespaces/a/configmaps",
            "",
            None,
        );
        assert_eq!((list.verb, list.scope), ("LIST", "namespace"));
        assert_eq!(list.resource, "configmaps");
        let get = shape(
            Method::GET,
            "/clusters/root/api/v1/namespaces/a/configmaps/x",
            "",
            None,
        );
        assert_eq!((get.verb, get.scope), ("GET", "resource"));
        let watch = shape(
            Method::GET,
            "/clusters/root/api/v1/configmaps",
            "watch=1",
            None,
        );
        assert_eq!((watch.verb, watch.scope), ("WATCH", "cluster"));
        let create = shape(
            Method::POST,
            "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces",
            "dryRun=All",
            None,
        );
        assert_eq!(
            (create.verb, create.scope, create.dry_run),
            ("POST", "resource", "All")
        );
        assert_eq!(create.group, "tenancy.kcp.io");
        let apply = shape(
            Method::PATCH,
            "/clusters/root/api/v1/namespaces/a/configmaps/x",
            "",
            Some("application/apply-patch+yaml"),
        );
        assert_eq!(apply.verb, "APPLY");
        let status = shape(
            Method::PUT,
            "/clusters/root/api/v1/namespaces/a/status",
            "",
            None,
        );
        assert_eq!((status.verb, status.subresource), ("PUT", "status"));
        let version = shape(Method::GET, "/version", "", None);
        assert_eq!(
            (version.verb, version.scope, version.resource.as_str()),
            ("GET", "", "")
        );
    }

    #[test]
    fn a_scrape_shows_requests_watches_and_counts() {
        let metrics = Metrics::new("root");
        let list = shape(Method::GET, "/clusters/root/api/v1/namespaces", "", None);
        metrics.observe(list.clone(), 200, Duration::from_millis(3));
        metrics.observe(list, 200, Duration::from_millis(30));
        let watch = shape(
            Method::GET,
            "/clusters/root/api/v1/namespaces",
            "watch=1",
            None,
        );
        let open = metrics.long_running(&watch);
        metrics.count(watch, 200);
        let text = metrics.scrape(ScrapeInputs {
            in_flight: (2, 1),
            logical_clusters: vec![("Ready".into(), 3)],
            workspaces: vec![("Ready".into(), 2), ("Initializing".into(), 1)],
        });
        assert!(
            text.contains(r#"apiserver_request_total{verb="LIST",dry_run="",group="",version="v1",resource="namespaces",subresource="",scope="cluster",component="apiserver",code="200"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"apiserver_request_duration_seconds_bucket{le="0.005",verb="LIST",dry_run="",group="",version="v1",resource="namespaces",subresource="",scope="cluster",component="apiserver"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"apiserver_longrunning_requests{verb="WATCH","#),
            "{text}"
        );
        assert!(
            text.contains(r#"scope="cluster",component="apiserver"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"apiserver_current_inflight_requests{request_kind="readOnly"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"kcp_workspace_count{shard="root",phase="Initializing"} 1"#),
            "{text}"
        );
        assert!(text.contains("process_resident_memory_bytes "), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        drop(open);
        let text = metrics.scrape(ScrapeInputs {
            in_flight: (0, 0),
            logical_clusters: vec![],
            workspaces: vec![("Ready".into(), 3)],
        });
        assert!(
            !text.contains(r#"phase="Initializing""#),
            "a phase left is not shown:\n{text}"
        );
        assert!(
            text.contains(r#"scope="cluster",component="apiserver"} 0"#),
            "{text}"
        );
    }
}
