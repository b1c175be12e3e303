//! The report's section on APIs as a service: a bound resource next to the same schema as a local
//! CRD, and one export bound into many workspaces.

use std::fmt::Write as _;

use super::{Report, bytes, cell, count, met, ms, rate};
use crate::bindings::Bindings;
use crate::phase::Summary;
use crate::shard::Backend;
use crate::shard_load::ShardResults;

/// A bound resource within 5 % of the same schema as a local CRD (issue 33).
const TARGET_BOUND_RATIO: f64 = 0.95;
/// A wildcard list through the APIExport virtual workspace at least this fast next to direct.
const TARGET_VW_LIST_RATIO: f64 = 0.8;
/// RSS per binding beyond its workspace.
const TARGET_BYTES_PER_BINDING: f64 = 4.0 * 1024.0;

type Pick = fn(&ShardResults) -> &Vec<Summary>;

/// (operation, local Widget phases, bound Widget phases).
const OPS: [(&str, Pick, Pick); 4] = [
    ("create", |s| &s.custom.create, |s| &s.custom.bound.create),
    ("get", |s| &s.custom.get, |s| &s.custom.bound.get),
    (
        "list all",
        |s| &s.custom.list_full,
        |s| &s.custom.bound.list_full,
    ),
    (
        "list page",
        |s| &s.custom.list_page,
        |s| &s.custom.bound.list_page,
    ),
];

/// Bound ÷ local throughput, when both ran.
fn ratio(local: &Summary, bound: &Summary) -> Option<f64> {
    (local.ops > 0 && bound.ops > 0 && local.throughput() > 0.0)
        .then(|| bound.throughput() / local.throughput())
}

impl Report {
    fn bindings_of(&self, backend: Backend) -> Option<&Result<Bindings, String>> {
        self.bindings
            .iter()
            .find(|(b, _)| *b == backend)
            .map(|(_, r)| r)
    }

    pub(super) fn apis_section(&self, out: &mut String) {
        let _ = writeln!(out, "## APIs as a service\n");
        let _ = writeln!(
            out,
            "Bound Widgets are the Widgets of the section above, served through an APIBinding: logical cluster `bench-provider` exports an APIResourceSchema with the CRD's schema, `bench-bound` binds it, and the same phases run there interleaved with their local-CRD twins, on the same shard, at the same concurrency: each phase of the two runs in halves, local, bound, bound, local, and each one's halves are added up (operations ÷ time; percentiles over every request), so that a drift of the shard during the phase (the store growing with the creates, caches warming) weighs on both alike. Throughput ratio = bound ÷ local. The bindings part runs on a fresh shard per store: `kcp-admin` creates workspace `root:provider` with the export, then {} children of `root:consumers` (after {} warm-up children), then one APIBinding of the export in each from {} creators, each POSTing a binding and waiting for its Bound event (one watch on the APIBindings of all logical clusters) before the next; latency is POST start → Bound event; bindings/s = Bound bindings ÷ (first POST → last Bound). RSS per binding = idle RSS after the bindings − idle RSS before them (after the warm-up bindings), ÷ bindings: what a binding costs beyond its workspace.\n",
            count(self.plan.bindings.workspaces as u64),
            crate::workspaces::WARM_UP,
            self.plan.bindings.clients,
        );
        self.apis_targets(out);
        self.bound_table(out);
        self.bindings_table(out);
        self.virtual_table(out);
    }

    fn apis_targets(&self, out: &mut String) {
        let _ = writeln!(out, "### Targets next to the measured values\n");
        let _ = writeln!(out, "| target | measured | verdict |\n| --- | --- | --- |");
        for backend in [Backend::Etcd, Backend::Embedded] {
            let results = self.shard(backend);
            for (op, local, bound) in OPS {
                let ratios: Vec<Option<f64>> = results
                    .map(|s| {
                        local(s)
                            .iter()
                            .zip(bound(s))
                            .map(|(l, b)| ratio(l, b))
                            .collect()
                    })
                    .unwrap_or_default();
                let measured = if ratios.is_empty() || ratios.iter().any(Option::is_none) {
                    None
                } else {
                    ratios.iter().flatten().copied().reduce(f64::min)
                };
                let (text, ok) = match measured {
                    Some(worst) => (
                        format!("worst over the concurrencies: {worst:.2}×"),
                        worst >= TARGET_BOUND_RATIO,
                    ),
                    None => ("not measured".into(), false),
                };
                let _ = writeln!(
                    out,
                    "| bound Widget {op} ≥ {TARGET_BOUND_RATIO}× the local CRD's throughput ({}) | {text} | {} |",
                    backend.label(),
                    met(ok)
                );
            }
        }
        for backend in [Backend::Etcd, Backend::Embedded] {
            let per = self
                .bindings_of(backend)
                .and_then(|r| r.as_ref().ok())
                .and_then(Bindings::rss_per_binding);
            let (text, ok) = match per {
                Some(per) => (bytes(per), per <= TARGET_BYTES_PER_BINDING),
                None => ("not measured".into(), false),
            };
            let _ = writeln!(
                out,
                "| RSS per binding ≤ {} beyond its workspace ({}) | {text} | {} |",
                bytes(TARGET_BYTES_PER_BINDING),
                backend.label(),
                met(ok)
            );
        }
        let _ = writeln!(out);
    }

    fn bound_table(&self, out: &mut String) {
        let on_etcd = self.shard(Backend::Etcd);
        let embedded = self.shard(Backend::Embedded);
        let _ = writeln!(out, "### Bound Widget vs local CRD\n");
        let _ = writeln!(
            out,
            "| operation | clients | local on etcd | bound on etcd | bound ÷ local | local on embedded | bound on embedded | bound ÷ local |\n| --- | ---: | --- | --- | ---: | --- | --- | ---: |"
        );
        for (op, local, bound) in OPS {
            for (i, c) in self.plan.concurrency.iter().enumerate() {
                let pair = |s: Option<&ShardResults>| {
                    let l = s.and_then(|s| local(s).get(i));
                    let b = s.and_then(|s| bound(s).get(i));
                    let r = l
                        .zip(b)
                        .and_then(|(l, b)| ratio(l, b))
                        .map(|r| format!("{r:.2}×"))
                        .unwrap_or_else(|| "–".into());
                    (cell(l), cell(b), r)
                };
                let (el, eb, er) = pair(on_etcd);
                let (ml, mb, mr) = pair(embedded);
                let _ = writeln!(
                    out,
                    "| {op} | {c} | {el} | {eb} | {er} | {ml} | {mb} | {mr} |"
                );
            }
        }
        let _ = writeln!(out);
    }

    fn bindings_table(&self, out: &mut String) {
        let _ = writeln!(out, "### One export bound into many workspaces\n");
        let _ = writeln!(
            out,
            "| store | bindings Bound / asked | bindings/s | create → Bound p50 / p99 | RSS before → after | RSS per binding |\n| --- | ---: | ---: | --- | --- | ---: |"
        );
        for backend in [Backend::Etcd, Backend::Embedded] {
            match self.bindings_of(backend) {
                None => {
                    let _ = writeln!(out, "| {} | not run | | | | |", backend.label());
                }
                Some(Err(err)) => {
                    let _ = writeln!(
                        out,
                        "| {} | **failed**: {} | | | | |",
                        backend.label(),
                        super::one_line(err)
                    );
                }
                Some(Ok(b)) => {
                    let mut bound =
                        format!("{} / {}", count(b.load.ops), count(b.requested as u64));
                    if b.load.errors > 0 {
                        let _ = write!(bound, " (**{} errors**)", b.load.errors);
                    }
                    if (b.load.ops as usize) < b.requested {
                        let _ = write!(bound, " (capped at {:.0} s)", b.cap.as_secs_f64());
                    }
                    let _ = writeln!(
                        out,
                        "| {} | {bound} | {} | {} / {} | {} → {} | {} |",
                        backend.label(),
                        rate(b.load.throughput()),
                        ms(b.load.p50),
                        ms(b.load.p99),
                        bytes(b.rss_before as f64),
                        bytes(b.rss_after as f64),
                        b.rss_per_binding().map(bytes).unwrap_or_else(|| "–".into()),
                    );
                }
            }
        }
        let _ = writeln!(out);
    }

    /// The APIExport virtual workspace over the bound workspaces of the bindings part.
    fn virtual_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "### Through the APIExport virtual workspace
"
        );
        let _ = writeln!(
            out,
            "On the bindings part's shard, once every consumer workspace is bound: {} Widgets in each, then the initial list of every Widget across them through the virtual workspace (`/services/apiexport/<provider>/widgets/clusters/*/...`, in process) and direct (`/clusters/*/.../widgets:<identity>`), alternated, the median of 3 each; ratio = direct time ÷ virtual-workspace time (target ≥ {TARGET_VW_LIST_RATIO}). RSS: the shard's before the lists and the most sampled (every 20 ms) while it served them. Watch latency: {} events created in a bound workspace, create start → event at each of 10 watchers, through each endpoint (the partition is an object-partitioned endpoint slice selecting `app=kcp-bench`, which every Widget carries).\n",
            self.plan.bindings.objects_per_workspace, self.plan.watch_events,
        );
        let _ = writeln!(
            out,
            "| store | Widgets listed | list direct | list through VW | ratio | list size | RSS idle → serving | watch p50 / p99: direct | VW | partition |\n| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | --- |"
        );
        for backend in [Backend::Etcd, Backend::Embedded] {
            let v = match self.bindings_of(backend) {
                Some(Ok(b)) => &b.virtual_ws,
                _ => {
                    let _ = writeln!(out, "| {} | not run | | | | | | | | |", backend.label());
                    continue;
                }
            };
            let v = match v {
                Ok(v) => v,
                Err(err) => {
                    let _ = writeln!(
                        out,
                        "| {} | **failed**: {} | | | | | | | | |",
                        backend.label(),
                        super::one_line(err)
                    );
                    continue;
                }
            };
            let watch = |i: usize| match v.watches.get(i).map(|(_, r)| r) {
                Some(Ok(w)) if w.delivered == w.expected => {
                    format!("{} / {}", ms(w.latency.p50), ms(w.latency.p99))
                }
                Some(Ok(w)) => format!(
                    "{} / {} ({} of {} events)",
                    ms(w.latency.p50),
                    ms(w.latency.p99),
                    w.delivered,
                    w.expected
                ),
                Some(Err(err)) => format!("**failed**: {}", super::one_line(err)),
                None => "–".into(),
            };
            let ratio = v.list_ratio();
            let _ = writeln!(
                out,
                "| {} | {} of {} ({} created/s) | {} | {} | {} {} | {} | {} → {} | {} | {} | {} |",
                backend.label(),
                count(v.listed as u64),
                count(v.objects),
                rate(v.fill.throughput()),
                ms(v.direct_list),
                ms(v.vw_list),
                ratio
                    .map(|r| format!("{r:.2}"))
                    .unwrap_or_else(|| "–".into()),
                met(ratio.is_some_and(|r| r >= TARGET_VW_LIST_RATIO)),
                bytes(v.list_bytes as f64),
                bytes(v.rss_idle as f64),
                bytes(v.rss_serving as f64),
                watch(0),
                watch(1),
                watch(2),
            );
        }
        let _ = writeln!(out);
        self.standalone_table(out);
    }

    /// The same list and watch through a kcp-vw process beside the shard.
    fn standalone_table(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "Through `kcp-vw`, a process of its own following the shard's store over gRPC, started beside the shard once the lists above are done: the same list (median of 3; ratio = direct time above ÷ this time), kcp-vw's RSS once its cache is loaded and the most while it served the lists, and watch latency with 10 watchers on kcp-vw and the Widgets created on the shard.\n"
        );
        let _ = writeln!(
            out,
            "| store | list through kcp-vw | ratio to direct | kcp-vw RSS loaded → serving | watch p50 / p99 through kcp-vw |\n| --- | ---: | ---: | --- | --- |"
        );
        for backend in [Backend::Etcd, Backend::Embedded] {
            let Some(Ok(b)) = self.bindings_of(backend) else {
                continue;
            };
            let Ok(v) = &b.virtual_ws else { continue };
            let s = match &v.standalone {
                Ok(s) => s,
                Err(err) => {
                    let _ = writeln!(
                        out,
                        "| {} | **failed**: {} | | | |",
                        backend.label(),
                        super::one_line(err)
                    );
                    continue;
                }
            };
            let watch = match &s.watch {
                Ok(w) => format!(
                    "{} / {}{}",
                    ms(w.latency.p50),
                    ms(w.latency.p99),
                    if w.delivered == w.expected {
                        String::new()
                    } else {
                        format!(" ({} of {} events)", w.delivered, w.expected)
                    }
                ),
                Err(err) => format!("**failed**: {}", super::one_line(err)),
            };
            let ratio =
                (!s.list.is_zero()).then(|| v.direct_list.as_secs_f64() / s.list.as_secs_f64());
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} → {} | {} |",
                backend.label(),
                ms(s.list),
                ratio
                    .map(|r| format!("{r:.2}"))
                    .unwrap_or_else(|| "–".into()),
                bytes(s.rss_idle as f64),
                bytes(s.rss_serving as f64),
                watch,
            );
        }
        let _ = writeln!(out);
    }

    /// Errors of the bindings part, for the report's failures section.
    pub(super) fn binding_failures(&self, lines: &mut Vec<String>) {
        for (backend, result) in &self.bindings {
            match result {
                Err(err) => lines.push(format!("bindings on the {}: {err}", backend.label())),
                Ok(b) => {
                    if b.load.errors > 0 {
                        lines.push(format!(
                            "bindings on the {}: {} errors; first: {}",
                            backend.label(),
                            b.load.errors,
                            b.load.first_error.as_deref().unwrap_or("?")
                        ));
                    }
                    if let Err(err) = &b.virtual_ws {
                        lines.push(format!(
                            "the virtual workspace on the {}: {err}",
                            backend.label()
                        ));
                    }
                    if let Ok(v) = &b.virtual_ws
                        && let Err(err) = &v.standalone
                    {
                        lines.push(format!("kcp-vw on the {}: {err}", backend.label()));
                    }
                    if b.watch_failures > 0 {
                        lines.push(format!(
                            "bindings on the {}: the Bound watch failed {} times; first: {}",
                            backend.label(),
                            b.watch_failures,
                            b.watch_first_failure.as_deref().unwrap_or("?")
                        ));
                    }
                }
            }
        }
    }
}
