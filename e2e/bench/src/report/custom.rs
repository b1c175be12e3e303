//! The report's section on custom resources, server-side apply and CRD memory.

use std::fmt::Write as _;

use super::{Report, bytes, cell, clients, count, met, ms, one_line, rate, us};
use crate::crd_memory::CrdMemory;
use crate::lc_memory::LcMemory;
use crate::phase::Summary;
use crate::shard::Backend;
use crate::shard_load::{Kind, ShardResults};

/// Custom resources within 1.5× of a built-in kind of the same size.
const TARGET_CR_THROUGHPUT: f64 = 0.67;
const TARGET_CR_LATENCY: f64 = 1.5;
/// RSS per logical cluster with the CRD ≤ 2× without.
const TARGET_CRD_MEMORY: f64 = 2.0;

type Pick = fn(&ShardResults) -> &Vec<Summary>;
/// (clients, ConfigMap phase, Widget phase, their ratios).
type Pair<'a> = (usize, &'a Summary, &'a Summary, Option<(f64, f64)>);

/// (operation, ConfigMap phases, Widget phases).
const OPS: [(&str, Pick, Pick); 4] = [
    ("create", |s| &s.create, |s| &s.custom.create),
    ("get", |s| &s.get, |s| &s.custom.get),
    ("list all", padded_list_full, |s| &s.custom.list_full),
    ("list page", padded_list_page, |s| &s.custom.list_page),
];

/// Lists compare with ConfigMaps of a Widget's stored size (those of the main tables when the
/// padded phases did not run).
fn padded_list_full(s: &ShardResults) -> &Vec<Summary> {
    if s.custom.padded_list_full.is_empty() {
        &s.list_full
    } else {
        &s.custom.padded_list_full
    }
}

fn padded_list_page(s: &ShardResults) -> &Vec<Summary> {
    if s.custom.padded_list_page.is_empty() {
        &s.list_page
    } else {
        &s.custom.padded_list_page
    }
}

/// Widget ÷ ConfigMap: (throughput ratio, p50 latency ratio).
fn ratios(cm: &Summary, cr: &Summary) -> Option<(f64, f64)> {
    (cm.ops > 0 && cr.ops > 0 && cm.throughput() > 0.0 && !cm.p50.is_zero()).then(|| {
        (
            cr.throughput() / cm.throughput(),
            cr.p50.as_secs_f64() / cm.p50.as_secs_f64(),
        )
    })
}

fn ratio_cell(r: Option<(f64, f64)>) -> String {
    r.map(|(t, l)| format!("{t:.2}× · {l:.2}×"))
        .unwrap_or_else(|| "–".into())
}

fn shard_cpu(s: &Summary) -> String {
    us(s.cpu_per_op(s.cpu.shard))
}

impl Report {
    fn crd_memory_of(&self, backend: Backend) -> Option<&CrdMemory> {
        self.crd_memory
            .iter()
            .find(|(b, _)| *b == backend)
            .map(|(_, m)| m)
    }

    pub(super) fn custom_section(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "## Custom resources, server-side apply and CRD memory\n"
        );
        let any = self.shard(Backend::Etcd).or(self.shard(Backend::Embedded));
        let (sent, stored) = any
            .map(|s| (s.custom.sent_bytes, s.custom.stored_bytes))
            .unwrap_or_default();
        let (padded_payload, padded_stored) = any
            .map(|s| (s.custom.padded_payload, s.custom.padded_stored_bytes))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "Widgets are custom resources of CRD `widgets.bench.example.com` (structural schema: 13 typed `spec` fields — strings, integers with bounds, a number, a boolean, an enum, a pattern, a nested object, a list of strings and a list of objects — and one CEL rule), so every write is validated and defaulted against the schema. Each Widget is sent with as many JSON bytes as the ConfigMap it is compared with ({} B and {} B here); stored with their managedFields, a GET returns {} B for a ConfigMap and {} B for a Widget (the Widget's managedFields name more fields). Creates and gets compare with the ConfigMaps of the tables above (same bytes sent). Lists cost what their bytes cost, so they compare with ConfigMaps padded to a Widget's stored size ({} B of data, a GET of {} B), listed in their own namespace right after the Widget lists, on the same shard, at the same concurrency.\n",
            sent.0, sent.1, stored.0, stored.1, padded_payload, padded_stored
        );
        self.custom_targets(out);
        self.custom_tables(out);
        self.apply_table(out);
        self.crd_memory_table(out);
    }

    fn custom_targets(&self, out: &mut String) {
        let _ = writeln!(out, "### Targets next to the measured values\n");
        let _ = writeln!(out, "| target | measured | verdict |\n| --- | --- | --- |");
        let mut notes = Vec::new();
        for backend in [Backend::Etcd, Backend::Embedded] {
            let results = self.shard(backend);
            for (op, pick_cm, pick_cr) in OPS {
                let pairs: Vec<Pair> = results
                    .map(|s| {
                        pick_cm(s)
                            .iter()
                            .zip(pick_cr(s))
                            .map(|(cm, cr)| (cm.clients, cm, cr, ratios(cm, cr)))
                            .collect()
                    })
                    .unwrap_or_default();
                let measured: Vec<(f64, f64)> = pairs.iter().filter_map(|p| p.3).collect();
                if measured.is_empty() || measured.len() < pairs.len() {
                    let _ = writeln!(
                        out,
                        "| Widget {op} within {TARGET_CR_LATENCY}× of ConfigMap ({}) | not measured | **missed** |",
                        backend.label()
                    );
                    notes.push(format!(
                        "Widget {op} on the {}: not measured (see Failures and errors).",
                        backend.label()
                    ));
                    continue;
                }
                let worst_t = measured.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
                let worst_l = measured.iter().map(|r| r.1).fold(0.0, f64::max);
                let ok = worst_t >= TARGET_CR_THROUGHPUT && worst_l <= TARGET_CR_LATENCY;
                let _ = writeln!(
                    out,
                    "| Widget {op} within {TARGET_CR_LATENCY}× of ConfigMap ({}): throughput ≥ {TARGET_CR_THROUGHPUT}×, p50 ≤ {TARGET_CR_LATENCY}× | worst over {}: throughput {worst_t:.2}×, p50 {worst_l:.2}× | {} |",
                    backend.label(),
                    pairs
                        .iter()
                        .map(|p| p.0.to_string())
                        .collect::<Vec<_>>()
                        .join(" / ")
                        + " clients",
                    met(ok)
                );
                if !ok {
                    let list_sizes = results
                        .filter(|s| op.starts_with("list") && s.list_bytes > 0)
                        .map(|s| {
                            format!(
                                " A whole list of Widgets is {} vs {} of ConfigMaps ({:.2}×): their managedFields name more fields, and list cost follows bytes.",
                                bytes(s.custom.list_bytes as f64),
                                bytes(s.list_bytes as f64),
                                s.custom.list_bytes as f64 / s.list_bytes as f64
                            )
                        })
                        .unwrap_or_default();
                    for (c, cm, cr, r) in &pairs {
                        let Some((t, l)) = r else { continue };
                        if *t >= TARGET_CR_THROUGHPUT && *l <= TARGET_CR_LATENCY {
                            continue;
                        }
                        notes.push(format!(
                            "Widget {op} on the {}, {}: {} vs {} /s = {t:.2}×, p50 {} vs {} = {l:.2}×. Shard CPU per operation: Widget {} µs, ConfigMap {} µs; load generator {} vs {} µs.{list_sizes}",
                            backend.label(),
                            clients(*c),
                            rate(cr.throughput()),
                            rate(cm.throughput()),
                            ms(cr.p50),
                            ms(cm.p50),
                            shard_cpu(cr),
                            shard_cpu(cm),
                            us(cr.cpu_per_op(cr.cpu.bench)),
                            us(cm.cpu_per_op(cm.cpu.bench)),
                        ));
                    }
                }
            }
        }
        for backend in [Backend::Embedded, Backend::Etcd] {
            let m = self.crd_memory_of(backend);
            let per_lc = |r: Option<&Result<LcMemory, String>>| {
                r.and_then(|r| r.as_ref().ok())
                    .and_then(LcMemory::bytes_per_lc)
            };
            let without = per_lc(m.map(|m| &m.without));
            let with = per_lc(m.map(|m| &m.with));
            match (m.and_then(CrdMemory::ratio), without, with) {
                (Some(r), Some(without), Some(with)) => {
                    let ok = r <= TARGET_CRD_MEMORY;
                    let _ = writeln!(
                        out,
                        "| RSS per LC with one CRD ≤ {TARGET_CRD_MEMORY}× without ({}) | {} vs {} = {r:.2}× | {} |",
                        backend.label(),
                        bytes(with),
                        bytes(without),
                        met(ok)
                    );
                    if !ok {
                        let crd = m
                            .and_then(|m| m.crd_bytes)
                            .map(|b| format!(" The CRD itself is {} of JSON as served; the served resource, its compiled schema and its discovery are shared by every LC (one interned API set), so the rest is per-object state: the CRD as the watch cache holds it (with managedFields and status, and its pre-status version in the watch history), the store's own cost per object (on the embedded store its pages, which also show in the data on disk), and allocator overhead. This run does not break it down further.", bytes(b as f64)))
                            .unwrap_or_default();
                        notes.push(format!(
                            "CRD memory on the {}: each logical cluster with the CRD costs {} more than one without it ({} vs {}).{crd}",
                            backend.label(),
                            bytes(with - without),
                            bytes(with),
                            bytes(without)
                        ));
                    }
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "| RSS per LC with one CRD ≤ {TARGET_CRD_MEMORY}× without ({}) | not measured | **missed** |",
                        backend.label()
                    );
                    notes.push(format!(
                        "CRD memory on the {}: not measured (see Failures and errors).",
                        backend.label()
                    ));
                }
            }
        }
        let _ = writeln!(out);
        super::missed_notes(
            out,
            &notes,
            "Every target of this section was met in this run.",
        );
    }

    fn custom_tables(&self, out: &mut String) {
        let on_etcd = self.shard(Backend::Etcd);
        let embedded = self.shard(Backend::Embedded);
        for (op, pick_cm, pick_cr) in OPS {
            let _ = writeln!(out, "### Widget vs ConfigMap: {op}\n");
            if op == "list all" {
                let _ = writeln!(
                    out,
                    "{} objects; one response is {} of ConfigMaps, {} of Widgets.\n",
                    rate(self.plan.list_objects as f64),
                    bytes(
                        on_etcd
                            .or(embedded)
                            .map(|s| s.list_bytes)
                            .unwrap_or_default() as f64
                    ),
                    bytes(
                        on_etcd
                            .or(embedded)
                            .map(|s| s.custom.list_bytes)
                            .unwrap_or_default() as f64
                    ),
                );
            }
            let _ = writeln!(
                out,
                "| clients | ConfigMap on etcd | Widget on etcd | Widget ÷ ConfigMap (ops/s · p50) | ConfigMap on embedded | Widget on embedded | Widget ÷ ConfigMap (ops/s · p50) |\n| ---: | --- | --- | ---: | --- | --- | ---: |"
            );
            for (i, c) in self.plan.concurrency.iter().enumerate() {
                let (ecm, ecr) = (
                    on_etcd.and_then(|s| pick_cm(s).get(i)),
                    on_etcd.and_then(|s| pick_cr(s).get(i)),
                );
                let (mcm, mcr) = (
                    embedded.and_then(|s| pick_cm(s).get(i)),
                    embedded.and_then(|s| pick_cr(s).get(i)),
                );
                let r = |a: Option<&Summary>, b: Option<&Summary>| {
                    ratio_cell(a.zip(b).and_then(|(a, b)| ratios(a, b)))
                };
                let _ = writeln!(
                    out,
                    "| {c} | {} | {} | {} | {} | {} | {} |",
                    cell(ecm),
                    cell(ecr),
                    r(ecm, ecr),
                    cell(mcm),
                    cell(mcr),
                    r(mcm, mcr),
                );
            }
            let _ = writeln!(out);
        }
        let _ = writeln!(
            out,
            "Shard CPU per operation (µs), ConfigMap / Widget:\n\n| operation | clients | shard on etcd | shard on embedded store |\n| --- | ---: | --- | --- |"
        );
        for (op, pick_cm, pick_cr) in OPS {
            for (i, c) in self.plan.concurrency.iter().enumerate() {
                let cpu = |s: Option<&ShardResults>| {
                    s.and_then(|s| pick_cm(s).get(i).zip(pick_cr(s).get(i)))
                        .map(|(cm, cr)| format!("{} / {}", shard_cpu(cm), shard_cpu(cr)))
                        .unwrap_or_else(|| "–".into())
                };
                let _ = writeln!(out, "| {op} | {c} | {} | {} |", cpu(on_etcd), cpu(embedded));
            }
        }
        let _ = writeln!(out);
    }

    fn apply_table(&self, out: &mut String) {
        let _ = writeln!(out, "### Server-side apply next to a merge patch\n");
        let n = self
            .shards
            .iter()
            .find_map(|(_, r)| r.as_ref().ok()?.apply.as_ref().map(|a| a.clients))
            .unwrap_or(self.plan.apply_clients);
        let _ = writeln!(
            out,
            "{} clients, each rewriting its own object with a changed value every time, with the same full body: as an apply (`PATCH`, `application/apply-patch+yaml`, `fieldManager={}`) and as a JSON merge patch (`application/merge-patch+json`), on different objects of the same size. No target; the ratio is apply ÷ merge patch.\n",
            n,
            crate::apply::FIELD_MANAGER
        );
        let _ = writeln!(
            out,
            "| store | kind | apply | merge patch | apply ÷ merge (ops/s · p50) | shard CPU per op, apply / merge (µs) |\n| --- | --- | --- | --- | ---: | --- |"
        );
        for (backend, results) in &self.shards {
            let Some(apply) = results.as_ref().ok().and_then(|r| r.apply.as_ref()) else {
                let _ = writeln!(out, "| {} | – | not run | | | |", backend.label());
                continue;
            };
            for pair in &apply.pairs {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} / {} |",
                    backend.label(),
                    match pair.kind {
                        Kind::ConfigMap => "ConfigMap",
                        Kind::Widget => "Widget",
                        Kind::BoundWidget => "bound Widget",
                    },
                    cell(Some(&pair.apply)),
                    cell(Some(&pair.merge)),
                    ratio_cell(ratios(&pair.merge, &pair.apply)),
                    shard_cpu(&pair.apply),
                    shard_cpu(&pair.merge),
                );
            }
        }
        let _ = writeln!(out);
    }

    fn crd_memory_table(&self, out: &mut String) {
        let _ = writeln!(out, "### Memory per logical cluster with one CRD\n");
        let _ = writeln!(
            out,
            "Two fresh shards per store: one creates N logical clusters (their `LogicalCluster` only), the other N logical clusters each with the same CRD (`widgets.bench.example.com`, created and polled until `Established`). As in the memory phase above: {} warm-up logical clusters of the same kind first, 64 clients, `VmRSS` read once the shard is idle (at least 3 s, then until it uses under 3 % of a core for a second) after the warm-up and after the last one; bytes per LC = (after − before) ÷ N.\n",
            crate::lc_memory::WARM_UP_LCS
        );
        let _ = writeln!(
            out,
            "| store | logical clusters | created | LCs/s | shard CPU per LC | RSS before | RSS after | **RSS per LC** | peak RSS | data on disk per LC |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        for (backend, m) in &self.crd_memory {
            for (what, r) in [("without a CRD", &m.without), ("with the CRD", &m.with)] {
                match r {
                    Ok(m) => {
                        let _ = writeln!(
                            out,
                            "| {} | {what} | {} of {}{} | {} | {} µs | {} | {} | **{}** | {} | {} |",
                            backend.label(),
                            count(m.created),
                            count(m.requested as u64),
                            if m.load.errors > 0 {
                                format!(" (**{} errors**)", m.load.errors)
                            } else {
                                String::new()
                            },
                            rate(m.load.throughput()),
                            shard_cpu(&m.load),
                            bytes(m.rss_before as f64),
                            bytes(m.rss_after as f64),
                            m.bytes_per_lc().map(bytes).unwrap_or_else(|| "–".into()),
                            bytes(m.peak_rss as f64),
                            m.disk_per_lc().map(bytes).unwrap_or_else(|| "–".into()),
                        );
                    }
                    Err(err) => {
                        let _ = writeln!(
                            out,
                            "| {} | {what} | **failed**: {} | | | | | | | |",
                            backend.label(),
                            one_line(err)
                        );
                    }
                }
            }
        }
        let sizes: Vec<String> = self
            .crd_memory
            .iter()
            .filter_map(|(b, m)| Some(format!("{} B on the {}", m.crd_bytes?, b.label())))
            .collect();
        if !sizes.is_empty() {
            let _ = writeln!(
                out,
                "\nThe CRD itself, as a GET returns it (spec, status, managedFields): {}.",
                sizes.join(", ")
            );
        }
        let _ = writeln!(out);
    }

    /// Failure lines of this section's phases.
    pub(super) fn custom_failures(&self, lines: &mut Vec<String>) {
        for (backend, results) in &self.shards {
            let Ok(r) = results else { continue };
            let mut phases: Vec<(String, &Summary)> = Vec::new();
            for (op, _, pick_cr) in OPS {
                for s in pick_cr(r) {
                    phases.push((format!("Widget {op}"), s));
                }
            }
            if let Some(a) = &r.apply {
                for p in &a.pairs {
                    phases.push((format!("apply {:?}", p.kind), &p.apply));
                    phases.push((format!("merge patch {:?}", p.kind), &p.merge));
                }
            }
            for (name, s) in phases.into_iter().filter(|(_, s)| s.errors > 0) {
                lines.push(format!(
                    "{} {name}, {} clients: {} errors; first: {}",
                    backend.label(),
                    s.clients,
                    s.errors,
                    s.first_error.as_deref().unwrap_or("?")
                ));
            }
        }
        for (backend, m) in &self.crd_memory {
            for (what, r) in [("without a CRD", &m.without), ("with the CRD", &m.with)] {
                match r {
                    Err(err) => lines.push(format!(
                        "CRD memory on the {} ({what}): {err}",
                        backend.label()
                    )),
                    Ok(m) if m.load.errors > 0 => lines.push(format!(
                        "CRD memory on the {} ({what}): {} errors; first: {}",
                        backend.label(),
                        m.load.errors,
                        m.load.first_error.as_deref().unwrap_or("?")
                    )),
                    Ok(_) => {}
                }
            }
        }
    }
}
