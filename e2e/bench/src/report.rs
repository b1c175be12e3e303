//! The Markdown report.

mod apis;
mod authz;
mod custom;
mod workspaces;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::Plan;
use crate::crd_memory::CrdMemory;
use crate::etcd_raw::Baseline;
use crate::lc_memory::LcMemory;
use crate::phase::Summary;
use crate::procfs::Machine;
use crate::shard::Backend;
use crate::shard_load::ShardResults;
use crate::watch::WatchResult;

/// Targets from issue 2.
const TARGET_ETCD_RATIO: f64 = 0.8;
const TARGET_EMBEDDED_CREATE: f64 = 5_000.0;
const TARGET_GET: f64 = 20_000.0;
const TARGET_WATCH_P99: Duration = Duration::from_millis(5);
const TARGET_BYTES_PER_LC: f64 = 16.0 * 1024.0;

pub struct Report {
    pub machine: Machine,
    pub load_before_phases: String,
    pub started: chrono::DateTime<chrono::Local>,
    pub elapsed: Duration,
    pub plan: Plan,
    pub shard_bin: PathBuf,
    pub git: String,
    pub etcd_version: String,
    pub bench_debug_build: bool,
    pub baseline: Result<Baseline, String>,
    pub shards: Vec<(Backend, Result<ShardResults, String>)>,
    pub memory: Vec<(Backend, Result<LcMemory, String>)>,
    pub crd_memory: Vec<(Backend, CrdMemory)>,
    pub authz: Result<crate::authz::AuthzResults, String>,
    pub workspaces: Vec<(Backend, Result<crate::workspaces::Workspaces, String>)>,
    pub bindings: Vec<(Backend, Result<crate::bindings::Bindings, String>)>,
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 100.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

fn us(d: Option<Duration>) -> String {
    match d {
        Some(d) => format!("{:.0}", d.as_secs_f64() * 1e6),
        None => "–".into(),
    }
}

/// 12345.6 → "12 346".
fn rate(x: f64) -> String {
    if x < 10.0 && x.fract() != 0.0 {
        return format!("{x:.1}");
    }
    let n = x.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{202F}');
        }
        out.push(c);
    }
    out
}

/// An integer count with thin-space thousands separators.
fn count(n: u64) -> String {
    rate(n as f64)
}

fn clients(c: usize) -> String {
    if c == 1 {
        "1 client".into()
    } else {
        format!("{c} clients")
    }
}

fn bytes(b: f64) -> String {
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", b / (1024.0 * 1024.0 * 1024.0))
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

fn ratio(shard: &Summary, base: Option<&Summary>) -> String {
    match base {
        Some(base) if base.throughput() > 0.0 && shard.ops > 0 => {
            format!("{:.2}×", shard.throughput() / base.throughput())
        }
        _ => "–".into(),
    }
}

/// "1 234/s · 0.52 / 3.1 ms" plus an error count when there were errors.
fn cell(s: Option<&Summary>) -> String {
    let Some(s) = s else {
        return "not run".into();
    };
    if s.ops == 0 {
        return format!("**failed** ({} errors)", s.errors);
    }
    let mut text = format!("{} · {} / {}", rate(s.throughput()), ms(s.p50), ms(s.p99));
    if s.errors > 0 {
        let _ = write!(text, " (**{} errors**)", s.errors);
    }
    text
}

/// The explanations of missed targets after a targets table, or `all_met` when there are none.
fn missed_notes(out: &mut String, notes: &[String], all_met: &str) {
    if notes.is_empty() {
        let _ = writeln!(out, "{all_met}\n");
        return;
    }
    let _ = writeln!(
        out,
        "Where a target is missed, and what the run says about why:\n"
    );
    for note in notes {
        let _ = writeln!(out, "- {note}");
    }
    let _ = writeln!(out);
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "**missed**" }
}

impl Report {
    fn shard(&self, backend: Backend) -> Option<&ShardResults> {
        self.shards
            .iter()
            .find(|(b, _)| *b == backend)
            .and_then(|(_, r)| r.as_ref().ok())
    }

    fn baseline(&self) -> Option<&Baseline> {
        self.baseline.as_ref().ok()
    }

    fn memory(&self, backend: Backend) -> Option<&LcMemory> {
        self.memory
            .iter()
            .find(|(b, _)| *b == backend)
            .and_then(|(_, r)| r.as_ref().ok())
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        self.header(&mut out);
        self.targets(&mut out);
        self.comparisons(&mut out);
        self.custom_section(&mut out);
        self.apis_section(&mut out);
        self.authz_section(&mut out);
        self.baseline_table(&mut out);
        self.cpu_table(&mut out);
        self.watch_table(&mut out);
        self.memory_table(&mut out);
        self.workspaces_section(&mut out);
        self.failures(&mut out);
        self.method(&mut out);
        out
    }

    fn header(&self, out: &mut String) {
        let m = &self.machine;
        let p = &self.plan;
        let _ = writeln!(out, "# Benchmarks\n");
        let _ = writeln!(
            out,
            "Written by `kcp-bench` (`e2e/bench`). Reproduce with:\n\n```sh\ncargo run --release -p kcp-bench -- --out docs/benchmarks.md          # full run, ~20 min on 2 cores\ncargo run --release -p kcp-bench -- --quick --out /tmp/bench.md     # smoke run, ~2 min\n```\n"
        );
        if p.quick {
            let _ = writeln!(
                out,
                "> **This is a `--quick` smoke run**: short phases and small sizes; do not quote these numbers.\n"
            );
        }
        if self.bench_debug_build {
            let _ = writeln!(
                out,
                "> **The load generator was a debug build**: client overhead inflates every number. Use `--release`.\n"
            );
        }
        let _ = writeln!(out, "| | |\n| --- | --- |");
        let _ = writeln!(
            out,
            "| date | {} (run took {:.0} s) |",
            self.started.format("%Y-%m-%d %H:%M:%S %Z"),
            self.elapsed.as_secs_f64()
        );
        let _ = writeln!(out, "| CPU | {} × {} |", m.nproc, m.cpu_model);
        let _ = writeln!(out, "| memory | {} |", m.mem_total);
        let _ = writeln!(out, "| kernel / OS | {} / {} |", m.kernel, m.os);
        let _ = writeln!(
            out,
            "| load average before the run | {} (at start) · {} (after building, before the first phase) |",
            m.load_before, self.load_before_phases
        );
        let _ = writeln!(out, "| kcp-rs revision | {} |", self.git);
        let _ = writeln!(
            out,
            "| shard binary | `{}` (release) |",
            self.shard_bin.display()
        );
        let _ = writeln!(
            out,
            "| etcd | {} (Debian `etcd-server`, single member, data on the root disk) |",
            self.etcd_version
        );
        let _ = writeln!(
            out,
            "| sizes | phases capped at {:.0} s / {} ops each; ConfigMaps with {} B of data ({} B JSON as sent, also the raw etcd value); list of {} objects, pages of {}; {} events per watch run; {} logical clusters for memory, {} for CRD memory; server-side apply with {} clients |\n",
            p.phase.as_secs_f64(),
            rate(p.max_ops as f64),
            p.payload_bytes,
            self.baseline().map(|b| b.value_bytes).unwrap_or_default(),
            rate(p.list_objects as f64),
            p.page_size,
            p.watch_events,
            rate(p.lcs as f64),
            rate(p.crd_lcs as f64),
            p.apply_clients,
        );
        let _ = writeln!(
            out,
            "Cells read `throughput · p50 / p99 latency`. etcd, the shard and the load generator share the same {} cores, so every number includes the competition between them (see the CPU table).\n",
            m.nproc
        );
    }

    fn targets(&self, out: &mut String) {
        let _ = writeln!(out, "## Targets (issue 2) next to the measured values\n");
        let _ = writeln!(out, "| target | measured | verdict |\n| --- | --- | --- |");
        let mut notes: Vec<String> = Vec::new();
        let base = self.baseline();
        let on_etcd = self.shard(Backend::Etcd);
        let embedded = self.shard(Backend::Embedded);

        for (i, c) in self.plan.concurrency.iter().enumerate() {
            let put = base.and_then(|b| b.put.get(i));
            let create = on_etcd.and_then(|s| s.create.get(i));
            match (put, create) {
                (Some(put), Some(create)) if put.throughput() > 0.0 => {
                    let r = create.throughput() / put.throughput();
                    let _ = writeln!(
                        out,
                        "| shard-on-etcd create ≥ {TARGET_ETCD_RATIO}× raw etcd put, {} | {} vs {} /s = {r:.2}× | {} |",
                        clients(*c),
                        rate(create.throughput()),
                        rate(put.throughput()),
                        met(r >= TARGET_ETCD_RATIO)
                    );
                    if r < TARGET_ETCD_RATIO {
                        let txn = base
                            .and_then(|b| b.txn_create.get(i))
                            .filter(|t| t.throughput() > 0.0)
                            .map(|t| {
                                format!(
                                    " A create is a create-if-absent transaction on etcd, not a plain put: raw etcd does those at {} /s here, so the shard reaches {:.2}× of that.",
                                    rate(t.throughput()),
                                    create.throughput() / t.throughput()
                                )
                            })
                            .unwrap_or_default();
                        notes.push(format!(
                            "Create on etcd, {}: {r:.2}× raw put. {}{txn}",
                            clients(*c),
                            self.why_throughput(create, Some(put))
                        ));
                    }
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "| shard-on-etcd create ≥ {TARGET_ETCD_RATIO}× raw etcd put, {} | not measured | **missed** |",
                        clients(*c)
                    );
                }
            }
        }

        let idx64 = self.plan.concurrency.iter().position(|c| *c == 64);
        match embedded.and_then(|s| idx64.and_then(|i| s.create.get(i))) {
            Some(create) => {
                let ok = create.throughput() >= TARGET_EMBEDDED_CREATE && create.errors == 0;
                let _ = writeln!(
                    out,
                    "| embedded durable create ≥ {} /s at 64 clients | {} /s | {} |",
                    rate(TARGET_EMBEDDED_CREATE),
                    rate(create.throughput()),
                    met(ok)
                );
                if !ok {
                    notes.push(format!(
                        "Embedded create at 64 clients: {} /s. {}",
                        rate(create.throughput()),
                        self.why_throughput(create, None)
                    ));
                }
            }
            None => {
                let _ = writeln!(
                    out,
                    "| embedded durable create ≥ {} /s at 64 clients | not measured | **missed** |",
                    rate(TARGET_EMBEDDED_CREATE)
                );
            }
        }

        for (backend, results) in [(Backend::Etcd, on_etcd), (Backend::Embedded, embedded)] {
            let best = results.and_then(|s| {
                s.get
                    .iter()
                    .filter(|g| g.ops > 0)
                    .max_by(|a, b| a.throughput().total_cmp(&b.throughput()))
            });
            match best {
                Some(get) => {
                    let ok = get.throughput() >= TARGET_GET;
                    let _ = writeln!(
                        out,
                        "| GET ≥ {} req/s ({}) | {} req/s at {} | {} |",
                        rate(TARGET_GET),
                        backend.label(),
                        rate(get.throughput()),
                        clients(get.clients),
                        met(ok)
                    );
                    if !ok {
                        notes.push(format!(
                            "GET on the {}: best {} req/s at {}. {}",
                            backend.label(),
                            rate(get.throughput()),
                            clients(get.clients),
                            self.why_throughput(get, None)
                        ));
                    }
                }
                None => {
                    let _ = writeln!(
                        out,
                        "| GET ≥ {} req/s ({}) | not measured | **missed** |",
                        rate(TARGET_GET),
                        backend.label()
                    );
                }
            }
        }

        for (backend, results) in [(Backend::Etcd, on_etcd), (Backend::Embedded, embedded)] {
            let watch = results.and_then(|s| s.watch.iter().find(|w| w.watchers == 1_000));
            match watch {
                Some(w) if w.delivered > 0 => {
                    let ok = w.latency.p99 <= TARGET_WATCH_P99 && w.delivered == w.expected;
                    let _ = writeln!(
                        out,
                        "| watch event p99 ≤ {} with 1,000 watchers ({}) | p99 {} (p50 {}), {} of {} events delivered | {} |",
                        ms(TARGET_WATCH_P99),
                        backend.label(),
                        ms(w.latency.p99),
                        ms(w.latency.p50),
                        rate(w.delivered as f64),
                        rate(w.expected as f64),
                        met(ok)
                    );
                    if !ok {
                        notes.push(format!(
                            "Watch with 1,000 watchers on the {}: p99 {}. {}",
                            backend.label(),
                            ms(w.latency.p99),
                            why_watch(w)
                        ));
                    }
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "| watch event p99 ≤ {} with 1,000 watchers ({}) | not measured | **missed** |",
                        ms(TARGET_WATCH_P99),
                        backend.label()
                    );
                }
            }
        }

        for backend in [Backend::Embedded, Backend::Etcd] {
            match self
                .memory(backend)
                .and_then(|m| m.bytes_per_lc().map(|b| (m, b)))
            {
                Some((m, per_lc)) => {
                    let ok = per_lc <= TARGET_BYTES_PER_LC;
                    let _ = writeln!(
                        out,
                        "| ≤ 16 KiB RSS per logical cluster ({}) | {} per LC over {} LCs | {} |",
                        backend.label(),
                        bytes(per_lc),
                        rate(m.created as f64),
                        met(ok)
                    );
                    if !ok {
                        notes.push(format!(
                            "Memory on the {}: {} per LC (RSS {} → {} for {} LCs).",
                            backend.label(),
                            bytes(per_lc),
                            bytes(m.rss_before as f64),
                            bytes(m.rss_after as f64),
                            rate(m.created as f64)
                        ));
                    }
                    if (m.created as usize) < m.requested {
                        notes.push(format!(
                            "Memory on the {}: only {} of {} logical clusters were created within the {:.0} s cap ({} LC/s{}).",
                            backend.label(),
                            rate(m.created as f64),
                            rate(m.requested as f64),
                            self.plan.lcs_cap.as_secs_f64(),
                            rate(m.load.throughput()),
                            if m.load.errors > 0 { format!(", {} errors", m.load.errors) } else { String::new() }
                        ));
                    }
                }
                None => {
                    let _ = writeln!(
                        out,
                        "| ≤ 16 KiB RSS per logical cluster ({}) | not measured | **missed** |",
                        backend.label()
                    );
                }
            }
        }
        let _ = writeln!(out);
        missed_notes(out, &notes, "Every target was met in this run.");
    }

    /// A data-based explanation of a throughput: CPU per operation of each process, and the ceiling
    /// that implies on this many cores.
    fn why_throughput(&self, s: &Summary, base: Option<&Summary>) -> String {
        let shard = s.cpu_per_op(s.cpu.shard);
        let etcd = s.cpu_per_op(s.cpu.etcd);
        let bench = s.cpu_per_op(s.cpu.bench);
        let total: Duration = [shard, etcd, bench].iter().flatten().sum();
        let mut text = format!(
            "CPU per operation: shard {} µs, etcd {} µs, load generator {} µs",
            us(shard),
            us(etcd),
            us(bench)
        );
        if !total.is_zero() {
            let ceiling = self.machine.nproc as f64 / total.as_secs_f64();
            let busy = ([s.cpu.shard, s.cpu.etcd, s.cpu.bench]
                .iter()
                .flatten()
                .sum::<Duration>()
                .as_secs_f64()
                / s.elapsed.as_secs_f64().max(1e-9))
                / self.machine.nproc as f64;
            let _ = write!(
                text,
                " = {} µs; {} cores can do at most ≈ {} /s of that, and the cores were {:.0} % busy",
                us(Some(total)),
                self.machine.nproc,
                rate(ceiling),
                busy * 100.0
            );
            if busy > 0.85 {
                text.push_str(" — CPU-bound on this machine");
            }
        }
        if let Some(base) = base {
            let base_cpu = base.cpu_per_op(base.cpu.etcd);
            let _ = write!(
                text,
                " (raw etcd put: etcd {} µs, client {} µs per op; p50 {} vs {}).",
                us(base_cpu),
                us(base.cpu_per_op(base.cpu.bench)),
                ms(s.p50),
                ms(base.p50)
            );
        } else {
            text.push('.');
        }
        text
    }

    fn comparisons(&self, out: &mut String) {
        let _ = writeln!(out, "## The shard next to raw etcd\n");
        let base = self.baseline();
        let on_etcd = self.shard(Backend::Etcd);
        let embedded = self.shard(Backend::Embedded);
        type Pick = fn(&ShardResults) -> &Vec<Summary>;
        type PickBase = fn(&Baseline) -> &Vec<Summary>;
        let sections: [(&str, &str, PickBase, Pick); 5] = [
            (
                "Create (POST a ConfigMap)",
                "raw etcd put",
                |b| &b.put,
                |s| &s.create,
            ),
            (
                "Get (GET one ConfigMap)",
                "raw etcd get (linearizable)",
                |b| &b.get,
                |s| &s.get,
            ),
            (
                "Update (PUT with resourceVersion, each client its own object)",
                "raw etcd put",
                |b| &b.put,
                |s| &s.update,
            ),
            (
                "List all objects (one response)",
                "raw etcd range (whole prefix)",
                |b| &b.range_full,
                |s| &s.list_full,
            ),
            (
                "List in pages (one page per operation, following `continue`)",
                "raw etcd range page (limit)",
                |b| &b.range_page,
                |s| &s.list_page,
            ),
        ];
        for (title, base_label, pick_base, pick) in sections {
            let _ = writeln!(out, "### {title}\n");
            if title.starts_with("List all") {
                let _ = writeln!(
                    out,
                    "{} objects; one shard response is {}. Latency is the time for a whole list.\n",
                    rate(self.plan.list_objects as f64),
                    bytes(
                        on_etcd
                            .or(embedded)
                            .map(|s| s.list_bytes)
                            .unwrap_or_default() as f64
                    )
                );
            }
            if title.starts_with("List in pages") {
                let _ = writeln!(
                    out,
                    "Pages of {} objects; latency is per page.\n",
                    self.plan.page_size
                );
            }
            let _ = writeln!(
                out,
                "| clients | {base_label} | shard on etcd | ratio | shard on embedded store | ratio |\n| ---: | --- | --- | ---: | --- | ---: |"
            );
            for (i, c) in self.plan.concurrency.iter().enumerate() {
                let b = base.and_then(|b| pick_base(b).get(i));
                let e = on_etcd.and_then(|s| pick(s).get(i));
                let m = embedded.and_then(|s| pick(s).get(i));
                let _ = writeln!(
                    out,
                    "| {c} | {} | {} | {} | {} | {} |",
                    cell(b),
                    cell(e),
                    e.map(|e| ratio(e, b)).unwrap_or_else(|| "–".into()),
                    cell(m),
                    m.map(|m| ratio(m, b)).unwrap_or_else(|| "–".into()),
                );
            }
            if title.starts_with("Create") {
                let _ = writeln!(
                    out,
                    "\nFor reference, raw etcd *create-if-absent* transactions (what a create really is):\n"
                );
                let _ = writeln!(
                    out,
                    "| clients | raw etcd txn create | shard on etcd ÷ txn |\n| ---: | --- | ---: |"
                );
                for (i, c) in self.plan.concurrency.iter().enumerate() {
                    let t = base.and_then(|b| b.txn_create.get(i));
                    let e = on_etcd.and_then(|s| s.create.get(i));
                    let _ = writeln!(
                        out,
                        "| {c} | {} | {} |",
                        cell(t),
                        e.map(|e| ratio(e, t)).unwrap_or_else(|| "–".into())
                    );
                }
            }
            let _ = writeln!(out);
        }
        let _ = writeln!(
            out,
            "Ratios are shard throughput ÷ raw etcd throughput at the same concurrency (> 1 is faster than raw etcd; the shard serves reads from its watch cache).\n"
        );
    }

    fn baseline_table(&self, out: &mut String) {
        let _ = writeln!(out, "## Raw etcd baseline (`etcd-client`, this run)\n");
        let base = match &self.baseline {
            Ok(b) => b,
            Err(err) => {
                let _ = writeln!(out, "**Failed**: {err}\n");
                return;
            }
        };
        let _ = writeln!(
            out,
            "| operation | clients | ops/s | p50 | p99 | max | errors |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        let rows: [(&str, &Vec<Summary>); 5] = [
            ("put", &base.put),
            ("txn create-if-absent", &base.txn_create),
            ("get (linearizable)", &base.get),
            ("range, whole prefix", &base.range_full),
            ("range, one page", &base.range_page),
        ];
        for (name, list) in rows {
            for s in list {
                let _ = writeln!(
                    out,
                    "| {name} | {} | {} | {} | {} | {} | {} |",
                    s.clients,
                    rate(s.throughput()),
                    ms(s.p50),
                    ms(s.p99),
                    ms(s.max),
                    s.errors
                );
            }
        }
        let _ = writeln!(
            out,
            "\nClients share gRPC connections as in the reference baseline for this machine kind: 1 → 1, 16 → 4, 64 → 8. That reference (B5, measured earlier on this machine kind, not this run) found put 1 594 / 5 851 / 7 722 /s and linearizable get 2 372 / 5 982 / 6 200 /s at 1 / 16 / 64 clients; compare the rows above with it before comparing the shard with them.\n"
        );
    }

    fn cpu_table(&self, out: &mut String) {
        let _ = writeln!(out, "## Where the CPU goes (µs of CPU per operation)\n");
        let _ = writeln!(
            out,
            "From `/proc/<pid>/stat` (user + system) around each phase. The load generator is this process (TLS, HTTP/2, JSON on the client side).\n"
        );
        let _ = writeln!(
            out,
            "| phase | clients | raw etcd: etcd / client | shard on etcd: shard / etcd / client | embedded: shard / client |\n| --- | ---: | --- | --- | --- |"
        );
        let base = self.baseline();
        let on_etcd = self.shard(Backend::Etcd);
        let embedded = self.shard(Backend::Embedded);
        type Pick = fn(&ShardResults) -> &Vec<Summary>;
        type PickBase = fn(&Baseline) -> &Vec<Summary>;
        let rows: [(&str, PickBase, Pick); 5] = [
            ("create (etcd: put)", |b| &b.put, |s| &s.create),
            ("get", |b| &b.get, |s| &s.get),
            ("update (etcd: put)", |b| &b.put, |s| &s.update),
            ("list all", |b| &b.range_full, |s| &s.list_full),
            ("list page", |b| &b.range_page, |s| &s.list_page),
        ];
        for (name, pick_base, pick) in rows {
            for (i, c) in self.plan.concurrency.iter().enumerate() {
                let b = base.and_then(|b| pick_base(b).get(i));
                let e = on_etcd.and_then(|s| pick(s).get(i));
                let m = embedded.and_then(|s| pick(s).get(i));
                let _ = writeln!(
                    out,
                    "| {name} | {c} | {} | {} | {} |",
                    b.map(|b| format!(
                        "{} / {}",
                        us(b.cpu_per_op(b.cpu.etcd)),
                        us(b.cpu_per_op(b.cpu.bench))
                    ))
                    .unwrap_or_else(|| "–".into()),
                    e.map(|e| format!(
                        "{} / {} / {}",
                        us(e.cpu_per_op(e.cpu.shard)),
                        us(e.cpu_per_op(e.cpu.etcd)),
                        us(e.cpu_per_op(e.cpu.bench))
                    ))
                    .unwrap_or_else(|| "–".into()),
                    m.map(|m| format!(
                        "{} / {}",
                        us(m.cpu_per_op(m.cpu.shard)),
                        us(m.cpu_per_op(m.cpu.bench))
                    ))
                    .unwrap_or_else(|| "–".into()),
                );
            }
        }
        let _ = writeln!(out);
    }

    fn watch_table(&self, out: &mut String) {
        let _ = writeln!(out, "## Watch event latency\n");
        let _ = writeln!(
            out,
            "Watchers watch one namespace's ConfigMaps (HTTP/2, 100 watch streams per connection) from a known resourceVersion; one writer creates {} ConfigMaps, one every {} ms; latency runs from the start of each create request to the event's arrival at each watcher (so it includes the create itself, as in the etcd reference).\n",
            self.plan.watch_events,
            self.plan.watch_interval.as_millis()
        );
        let _ = writeln!(
            out,
            "| store | watchers | events delivered | p50 | p99 | max | create p50 / p99 | shard CPU per create + fan-out | client CPU per create |\n| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"
        );
        for (backend, results) in &self.shards {
            let Ok(results) = results else { continue };
            for w in &results.watch {
                let per_event = |cpu: Option<Duration>| {
                    cpu.map(|c| c / u32::try_from(w.events.max(1)).unwrap_or(u32::MAX))
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} / {}{} | {} | {} | {} | {} / {} | {} µs | {} µs |",
                    backend.label(),
                    count(w.watchers as u64),
                    count(w.delivered),
                    count(w.expected),
                    if w.stream_errors > 0 {
                        format!(" (**{} streams failed**)", w.stream_errors)
                    } else {
                        String::new()
                    },
                    ms(w.latency.p50),
                    ms(w.latency.p99),
                    ms(w.latency.max),
                    ms(w.create.p50),
                    ms(w.create.p99),
                    us(per_event(w.cpu.shard)),
                    us(per_event(w.cpu.bench)),
                );
            }
        }
        let _ = writeln!(
            out,
            "\nReference, not this run (B5 of the baselines for this machine kind): raw etcd watch, put → event, 1 watcher p50 0.73 ms / p99 4.8 ms; 100 watchers p50 1.61 ms / p99 7.4 ms.\n"
        );
    }

    fn memory_table(&self, out: &mut String) {
        let _ = writeln!(out, "## Memory per logical cluster\n");
        let _ = writeln!(
            out,
            "A fresh shard; {} warm-up logical clusters; then N logical clusters, each created with its `LogicalCluster` (the shard adds namespace `default`) and one ConfigMap ({} B of data), 64 clients. RSS is `VmRSS` of the shard, read once the shard is idle (at least 3 s, then until it uses under 3 % of a core for a second) after the warm-up and after the last create; bytes per LC = (after − before) ÷ N.\n",
            200, self.plan.payload_bytes
        );
        let _ = writeln!(
            out,
            "| store | LCs created | LCs/s (LC + ConfigMap) | RSS before | RSS after | **RSS per LC** | peak RSS | data on disk per LC |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        for (backend, m) in &self.memory {
            match m {
                Ok(m) => {
                    let _ = writeln!(
                        out,
                        "| {} | {} of {}{} | {} | {} | {} | **{}** | {} | {} |",
                        backend.label(),
                        count(m.created),
                        count(m.requested as u64),
                        if m.load.errors > 0 {
                            format!(" (**{} errors**)", m.load.errors)
                        } else {
                            String::new()
                        },
                        rate(m.load.throughput()),
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
                        "| {} | **failed**: {} | | | | | | |",
                        backend.label(),
                        one_line(err)
                    );
                }
            }
        }
        let _ = writeln!(out);
    }

    fn failures(&self, out: &mut String) {
        let mut lines = Vec::new();
        if let Err(err) = &self.baseline {
            lines.push(format!("raw etcd baseline: {err}"));
        }
        if let Ok(b) = &self.baseline {
            for (name, list) in [
                ("put", &b.put),
                ("txn create", &b.txn_create),
                ("get", &b.get),
                ("range", &b.range_full),
                ("range page", &b.range_page),
            ] {
                for s in list.iter().filter(|s| s.errors > 0) {
                    lines.push(format!(
                        "raw etcd {name}, {} clients: {} errors; first: {}",
                        s.clients,
                        s.errors,
                        s.first_error.as_deref().unwrap_or("?")
                    ));
                }
            }
        }
        for (backend, results) in &self.shards {
            match results {
                Err(err) => lines.push(format!("{}: {err}", backend.label())),
                Ok(r) => {
                    for f in &r.failures {
                        lines.push(format!("{}: {f}", backend.label()));
                    }
                    for (name, list) in [
                        ("create", &r.create),
                        ("get", &r.get),
                        ("update", &r.update),
                        ("list", &r.list_full),
                        ("list page", &r.list_page),
                    ] {
                        for s in list.iter().filter(|s| s.errors > 0) {
                            lines.push(format!(
                                "{} {name}, {} clients: {} errors; first: {}",
                                backend.label(),
                                s.clients,
                                s.errors,
                                s.first_error.as_deref().unwrap_or("?")
                            ));
                        }
                    }
                    for w in r
                        .watch
                        .iter()
                        .filter(|w| w.stream_errors > 0 || w.delivered < w.expected)
                    {
                        lines.push(format!(
                            "{} watch with {} watchers: {} of {} events delivered, {} streams failed; first: {}",
                            backend.label(),
                            w.watchers,
                            w.delivered,
                            w.expected,
                            w.stream_errors,
                            w.first_error.as_deref().unwrap_or("(no stream error: events missing at the end of the drain period)")
                        ));
                    }
                }
            }
        }
        for (backend, m) in &self.memory {
            match m {
                Err(err) => lines.push(format!("memory on the {}: {err}", backend.label())),
                Ok(m) if m.load.errors > 0 => lines.push(format!(
                    "memory on the {}: {} errors; first: {}",
                    backend.label(),
                    m.load.errors,
                    m.load.first_error.as_deref().unwrap_or("?")
                )),
                Ok(_) => {}
            }
        }
        self.custom_failures(&mut lines);
        self.workspace_failures(&mut lines);
        self.binding_failures(&mut lines);
        let _ = writeln!(out, "## Failures and errors\n");
        if lines.is_empty() {
            let _ = writeln!(out, "None: every request of every phase succeeded.\n");
        } else {
            for line in lines {
                let _ = writeln!(out, "- {}\n", line.replace('\n', "\n  "));
            }
        }
    }

    fn method(&self, out: &mut String) {
        let _ = writeln!(out, "## Method\n");
        let _ = writeln!(
            out,
            "- One process (`kcp-bench`) starts everything it measures on 127.0.0.1: a fresh etcd for the baseline, a fresh etcd + `kcp-shard --etcd-servers` for the shard on etcd, `kcp-shard` on its embedded store, two more fresh shards for the memory phase, four for the CRD memory phase (without and with the CRD, on each store) and two for the workspaces part (each restarted once on its own data). Each process is killed when its part is done; temporary directories are removed.\n\
             - Closed loop: each client sends its next request when the previous one answered; throughput = successful operations ÷ wall time of the phase. Every phase stops at its time or operation cap; every request times out after 30 s.\n\
             - The shard is driven over HTTPS with the `system:admin` client certificate of its `admin.kubeconfig` (hyper 1 HTTP/2 over tokio-rustls, JSON). Clients share HTTP/2 connections like the etcd clients share gRPC connections: 1 → 1, 16 → 4, 64 → 8.\n\
             - The shard runs with `RUST_LOG=warn` (set `KCP_BENCH_SHARD_LOG` to change it): the per-request log line is not measured.\n\
             - Creates go to a fresh name each; gets pick random objects among the listed collection; updates PUT the client's own object with the resourceVersion of its last write; lists read the whole body; pages follow `continue` and start over at the end. Widgets (custom resources) go through the same phases (but update) in their own collections, each phase right after its ConfigMap twin.\n\
             - The raw etcd baseline stores the same JSON bytes the shard is sent, at the same concurrency. Every etcd (baseline and shard) is Debian's 3.4 with fsync on every commit and three settings from `EtcdProcess`: the `map` freelist (3.5's default), a backend commit every 10 ms instead of 100 (3.4 copies the uncommitted writes for every transaction) and a snapshot every 10,000 raft entries instead of 100,000 (3.6's default: etcd keeps the entries since its last snapshot in memory, and its Go GC marks them all); the embedded store also acknowledges a write only once it is on disk.\n\
             - Nothing here is asserted by a test; timings on a shared 2-core machine move with the load average."
        );
    }
}

fn why_watch(w: &WatchResult) -> String {
    let events = u32::try_from(w.events.max(1)).unwrap_or(u32::MAX);
    let deliveries = u32::try_from(w.expected.max(1)).unwrap_or(u32::MAX);
    format!(
        "Per create, the shard used {} µs of CPU ({} µs per event delivered to one watcher, so the last of 1,000 watchers waits for the 999 before it) and the 1,000 watching clients (this process: TLS, HTTP/2, one JSON parse per event per watcher) {} µs; the writer's own create took p50 {} / p99 {}. Client and server share the 2 cores, so the client's work for 1,000 events per create sits inside the measured latencies too.",
        us(w.cpu.shard.map(|c| c / events)),
        w.cpu
            .shard
            .map(|c| format!("{:.1}", (c / deliveries).as_secs_f64() * 1e6))
            .unwrap_or_else(|| "–".into()),
        us(w.cpu.bench.map(|c| c / events)),
        ms(w.create.p50),
        ms(w.create.p99),
    )
}

fn one_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    if line.len() > 200 {
        let mut end = 200;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &line[..end])
    } else {
        line.to_string()
    }
}
