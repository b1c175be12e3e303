//! The report's section on workspaces: creation to Ready, RSS per workspace, deleting a tree,
//! restarting with many workspaces; next to kcp's published figures.

use std::fmt::Write as _;
use std::time::Duration;

use super::{Report, bytes, count, met, ms, one_line, rate, us};
use crate::shard::Backend;
use crate::workspaces::{Creation, RssAt, WARM_UP, Workspaces};

const TARGET_RATE: f64 = 1_000.0;
const TARGET_P99: Duration = Duration::from_millis(50);
const TARGET_BYTES: f64 = 16.0 * 1024.0;
const TARGET_DELETE: Duration = Duration::from_secs(30);
const TARGET_RESTART: Duration = Duration::from_secs(5);

/// kcp (Go), as published in kcp issue #4072.
const KCP_RATE: &str = "2–8 /s at 10,000 workspaces";
const KCP_BYTES: &str = "7–10 MiB";
const KCP_DELETE: &str = "about an hour";
const KCP_SOURCE: &str = "kcp issue #4072";

fn secs(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        ms(d)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// "N Ready" plus what cut it short.
fn reached(c: &Creation) -> String {
    let mut text = format!(
        "{} of {} Ready",
        count(c.load.ops),
        count(c.requested as u64)
    );
    if c.capped() {
        let _ = write!(text, " (**capped at {:.0} s**)", c.cap.as_secs_f64());
    }
    if c.load.errors > 0 {
        let _ = write!(text, ", **{} errors**", c.load.errors);
    }
    text
}

fn per_ws(at: &RssAt, before: &RssAt) -> String {
    at.per_workspace(before)
        .map(bytes)
        .unwrap_or_else(|| "–".into())
}

/// The restarted process's idle RSS, and per workspace against the long-running process's reading
/// after the warm-up.
fn restarted_rss(w: &Workspaces, rss: Option<u64>) -> String {
    let Some(rss) = rss else {
        return "–".into();
    };
    let m = &w.memory;
    let workspaces = m.at_total.as_ref().unwrap_or(&m.at_flat).workspaces;
    let at = RssAt {
        workspaces,
        rss,
        lcs: None,
    };
    format!("{} ({})", bytes(rss as f64), per_ws(&at, &m.before))
}

impl Report {
    fn workspace_results(&self) -> impl Iterator<Item = (Backend, &Workspaces)> {
        self.workspaces
            .iter()
            .filter_map(|(b, r)| r.as_ref().ok().map(|w| (*b, w)))
    }

    pub(super) fn workspaces_section(&self, out: &mut String) {
        let _ = writeln!(out, "## Workspaces\n");
        if self.workspaces.is_empty() {
            let _ = writeln!(out, "Not run.\n");
            return;
        }
        let ws = &self.plan.ws;
        let _ = writeln!(
            out,
            "One fresh shard per store; the workspaces are created by `kcp-admin` (group `system:kcp:admin`: the user of the admin kubeconfig's current context, authorized by kcp's whole chain; not system:masters, for which kcp records no creator and writes no `workspace-admin` binding), watched and deleted by `system:admin`; every workspace is of type `root:universal`. One watch on the Workspaces of all logical clusters (`/clusters/*/…/workspaces?watch=1`) tells each creator when its workspace is Ready. Closed loop: {} creators, each POSTs a workspace and waits for its Ready event before the next (an unready workspace counts as an error after {:.0} s). Latency is POST start → Ready event; workspaces/s = Ready workspaces ÷ (first POST → last Ready). The creators keep the shard saturated, so the mean latency is about creators ÷ workspaces/s ({} ÷ 1 000 /s = {:.0} ms): the p99 follows the throughput. A new workspace is 10 objects written in 2 store writes (etcd transactions), both on its way to Ready: the POST writes the Workspace with namespace `kube-system` of its logical cluster-to-be and that namespace's `default` ServiceAccount and `kube-root-ca.crt` ConfigMap; one write holds its LogicalCluster, the `workspace-admin` binding, namespace `default` with its ServiceAccount and ConfigMap, and the Workspace's placement and Ready status. A new logical cluster's name begins with the time, so its objects' keys land next to those of the workspaces created just before it, at the end of each resource's key range. etcd's CPU per workspace is in the table below, beside the shard's; it grows with etcd's keys, and so does etcd's tail. Measured outside the report's runs (etcd with `GODEBUG=gctrace=1`, each creation timed): every creation of the tree slower than its p99 ended within a mark phase of etcd's Go GC; during the tree next to 100 000 flat workspaces, etcd's live heap was 380-540 MB and each mark phase took 0.6-0.7 s of every 1.5 s on the shared cores. A heap profile of etcd (`--enable-pprof`) during the flat creation shows what drives these collections: 61 % of what etcd allocated were the copies of its uncommitted writes that 3.4 makes for every transaction (see the etcd settings under Method; etcd 3.5 checks a write transaction's comparisons in place, etcd-io/etcd#12896). With the 10 ms commit, each copy is already of 3.4's smallest size (512 entries for each of the two buckets a write touches, about 50 KB, as measured): no etcd setting makes it smaller, only fewer transactions. Nor does a larger GOGC for etcd help: at 200 and 400 the marks come less often, but one 0.6 s mark alone stalls more than 1 % of a 7 s phase's creations (two interleaved rounds each, tree p99 54.8/83.1 ms at Go's default, 51.3/49.3 at 200, 52.0/90.1 at 400). With fewer creators the queue is shorter: the etcd tree next to 103 000 workspaces ran at 1 138, 1 234 and 1 377 workspaces/s with p99 36.8, 46.8 and 52.4 ms at 16, 24 and 32 creators (one run each, outside the report's runs).\n",
            ws.clients,
            ws.ready_timeout.as_secs_f64(),
            ws.clients,
            ws.clients as f64
        );
        let _ = writeln!(
            out,
            "Order on each shard: workspace `flat` in root and {WARM_UP} warm-up children; {} more children of `flat` from {} creators (cap {:.0} s): the latency of a fresh shard that is not saturated, where the p99 is the path's own and not the queue's; RSS; {} children of `flat` (cap {:.0} s), RSS; more children of `flat` up to {} (cap {:.0} s), RSS; SIGTERM and start again on the same data, RSS once idle; then `tree` in root with {} children of {} children each ({} workspaces, a child's children only once it is Ready; cap {:.0} s) next to all the flat ones, and DELETE `tree` (followed for {:.0} s). The tree comes last so that what it leaves behind is not counted as memory per workspace. RSS is `VmRSS` of the idle shard (as for logical clusters above); RSS per workspace = (RSS − RSS after the warm-up and the fewer creators' children) ÷ workspaces added since.\n",
            count(ws.light as u64),
            ws.light_clients,
            ws.light_cap.as_secs_f64(),
            count(ws.flat as u64),
            ws.flat_cap.as_secs_f64(),
            count(ws.total as u64),
            ws.total_cap.as_secs_f64(),
            ws.tree_children,
            ws.tree_grandchildren,
            count(ws.tree_size() as u64),
            ws.tree_cap.as_secs_f64(),
            ws.delete_cap.as_secs_f64(),
        );
        self.workspace_targets(out);
        self.workspace_creation_table(out);
        self.workspace_memory_table(out);
        self.workspace_delete_table(out);
        self.workspace_restart_table(out);
        for (backend, result) in &self.workspaces {
            if let Err(err) = result {
                let _ = writeln!(
                    out,
                    "- {}: **failed**: {}\n",
                    backend.label(),
                    one_line(err)
                );
            }
        }
    }

    fn workspace_targets(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "| target | store | measured | kcp (Go), published | verdict |\n| --- | --- | --- | --- | --- |"
        );
        for (backend, w) in self.workspace_results() {
            let label = backend.label();
            let creations = [("flat", Ok(&w.flat)), ("tree", w.tree.as_ref())];
            if backend == Backend::Embedded {
                for (name, c) in creations {
                    let (measured, ok) = match c {
                        Ok(c) if c.load.ops > 0 => (
                            format!("{} /s ({})", rate(c.load.throughput()), reached(c)),
                            c.load.throughput() >= TARGET_RATE,
                        ),
                        Ok(c) => (reached(c), false),
                        Err(e) => (format!("failed: {}", one_line(e)), false),
                    };
                    let _ = writeln!(
                        out,
                        "| ≥ {} workspaces/s to Ready, {name} | {label} | {measured} | {KCP_RATE} | {} |",
                        rate(TARGET_RATE),
                        met(ok)
                    );
                }
            }
            let light = format!(
                "flat, {} creators (not saturated)",
                self.plan.ws.light_clients
            );
            let latencies = creations
                .into_iter()
                .map(|(name, c)| (name.to_string(), c))
                .chain([(light, Ok(&w.light))]);
            for (name, c) in latencies {
                let (measured, ok) = match c {
                    Ok(c) if c.load.ops > 0 => (
                        format!("p99 {} (p50 {})", ms(c.load.p99), ms(c.load.p50)),
                        c.load.p99 <= TARGET_P99,
                    ),
                    Ok(c) => (reached(c), false),
                    Err(e) => (format!("failed: {}", one_line(e)), false),
                };
                let _ = writeln!(
                    out,
                    "| create → Ready p99 ≤ {}, {name} | {label} | {measured} | – | {} |",
                    ms(TARGET_P99),
                    met(ok)
                );
            }
            let m = &w.memory;
            let mut points = vec![(&m.at_flat, "first flat set".to_string())];
            if let Some(at) = &m.at_total {
                let mut what = format!("target {}", count(m.requested_total as u64));
                if let Some(more) = &m.more
                    && more.capped()
                {
                    let _ = write!(what, ", **capped at {:.0} s**", more.cap.as_secs_f64());
                }
                points.push((at, what));
            }
            for (at, what) in points {
                let per = at.per_workspace(&m.before);
                let _ = writeln!(
                    out,
                    "| ≤ 16 KiB RSS per Ready empty workspace | {label} | {} per workspace over {} ({what}) | {KCP_BYTES} | {} |",
                    per.map(bytes).unwrap_or_else(|| "–".into()),
                    count(at.workspaces),
                    met(per.is_some_and(|p| p <= TARGET_BYTES))
                );
            }
            let (measured, ok) = match &w.delete {
                Ok(d) => match d.gone {
                    Some(gone) => (
                        format!("{} workspaces gone in {}", count(d.workspaces), secs(gone)),
                        gone <= TARGET_DELETE,
                    ),
                    None => (
                        format!(
                            "**not gone after {:.0} s** ({} of {} deletions seen)",
                            d.cap.as_secs_f64(),
                            count(d.deleted_events),
                            count(d.workspaces)
                        ),
                        false,
                    ),
                },
                Err(e) => (format!("failed: {}", one_line(e)), false),
            };
            let _ = writeln!(
                out,
                "| deleting a {}-workspace tree ≤ {:.0} s | {label} | {measured} | {KCP_DELETE} for 10,000 | {} |",
                count(self.plan.ws.tree_size() as u64 + 1),
                TARGET_DELETE.as_secs_f64(),
                met(ok)
            );
            let (measured, ok) = match &w.restart {
                Ok(r) => {
                    let first = match &r.first_get {
                        Ok(d) => format!("first GET by path {}", secs(*d)),
                        Err(_) => "**no GET by path succeeded**".into(),
                    };
                    let slowest = r.first_get.as_ref().map_or(r.ready, |d| (*d).max(r.ready));
                    (
                        format!(
                            "ready {}, {first}, with {} workspaces",
                            secs(r.ready),
                            count(r.workspaces)
                        ),
                        r.first_get.is_ok() && slowest <= TARGET_RESTART,
                    )
                }
                Err(e) => (format!("failed: {}", one_line(e)), false),
            };
            let _ = writeln!(
                out,
                "| restart (process start → ready and → first GET by path) ≤ {:.0} s | {label} | {measured} | – | {} |",
                TARGET_RESTART.as_secs_f64(),
                met(ok)
            );
        }
        let _ = writeln!(
            out,
            "\nkcp's figures are from {KCP_SOURCE} (kcp in Go, its own machine and setup), not from this run.\n"
        );
    }

    fn workspace_creation_table(&self, out: &mut String) {
        let _ = writeln!(out, "### Creation to Ready\n");
        let _ = writeln!(
            out,
            "| store | workspaces | Ready | workspaces/s | p50 | p99 | max | CPU per workspace: shard · etcd · client |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
        );
        for (backend, w) in self.workspace_results() {
            let mut rows: Vec<(String, &Creation)> = vec![(
                format!("{} children of `flat`", count(w.flat.requested as u64)),
                &w.flat,
            )];
            if let Ok(tree) = &w.tree {
                rows.push((format!("tree of {}", count(tree.requested as u64)), tree));
            }
            if let Some(more) = &w.memory.more {
                rows.push((
                    format!(
                        "children of `flat` {} → {}",
                        count(w.flat.load.ops),
                        count(w.memory.requested_total as u64)
                    ),
                    more,
                ));
            }
            rows.push((
                format!(
                    "{} children of `flat` after the warm-up, {} creators",
                    count(w.light.requested as u64),
                    self.plan.ws.light_clients
                ),
                &w.light,
            ));
            for (what, c) in rows {
                let l = &c.load;
                let _ = writeln!(
                    out,
                    "| {} | {what} | {} | {} | {} | {} | {} | {} · {} · {} µs |",
                    backend.label(),
                    reached(c),
                    rate(l.throughput()),
                    ms(l.p50),
                    ms(l.p99),
                    ms(l.max),
                    us(l.cpu_per_op(l.cpu.shard)),
                    us(l.cpu_per_op(l.cpu.etcd)),
                    us(l.cpu_per_op(l.cpu.bench)),
                );
            }
            if let Err(e) = &w.tree {
                let _ = writeln!(
                    out,
                    "| {} | tree | **failed**: {} | | | | | |",
                    backend.label(),
                    one_line(e)
                );
            }
        }
        let _ = writeln!(out);
    }

    fn workspace_memory_table(&self, out: &mut String) {
        let _ = writeln!(out, "### RSS per Ready empty workspace\n");
        let _ = writeln!(
            out,
            "| store | RSS after warm-up | after the first flat set | per workspace | after more flat children | per workspace | peak RSS | LogicalClusters (warm-up → end) |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        );
        for (backend, w) in self.workspace_results() {
            let m = &w.memory;
            let lcs = |at: &RssAt| at.lcs.map(count).unwrap_or_else(|| "?".into());
            let last = m.at_total.as_ref().unwrap_or(&m.at_flat);
            let _ = writeln!(
                out,
                "| {} | {} | {} ({} workspaces) | {} | {} | {} | {} | {} → {} |",
                backend.label(),
                bytes(m.before.rss as f64),
                bytes(m.at_flat.rss as f64),
                count(m.at_flat.workspaces),
                per_ws(&m.at_flat, &m.before),
                m.at_total
                    .map(|a| format!(
                        "{} ({} workspaces)",
                        bytes(a.rss as f64),
                        count(a.workspaces)
                    ))
                    .unwrap_or_else(|| "–".into()),
                m.at_total
                    .as_ref()
                    .map(|a| per_ws(a, &m.before))
                    .unwrap_or_else(|| "–".into()),
                bytes(m.peak_rss as f64),
                lcs(&m.before),
                lcs(last),
            );
        }
        let _ = writeln!(
            out,
            "\nEach workspace is a Workspace object, its LogicalCluster, namespaces `default` and `kube-system` and the `workspace-admin` ClusterRoleBinding, plus what the shard's controllers add to them (a `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap in each namespace). The restart table below has the RSS of a fresh process holding the same workspaces.\n"
        );
    }

    fn workspace_delete_table(&self, out: &mut String) {
        let _ = writeln!(out, "### Deleting the tree\n");
        let _ = writeln!(
            out,
            "DELETE of `tree` in root, then GET of it every 50 ms until 404; the watch counts the Workspace deletions; the LogicalCluster count is read with `limit=1` (`remainingItemCount`).\n"
        );
        let _ = writeln!(
            out,
            "| store | workspaces | `tree` 404 after | Workspace deletions seen by the watch (last after) | deletions/s | LogicalClusters before → after (back after) |\n| --- | ---: | ---: | --- | ---: | --- |"
        );
        for (backend, w) in self.workspace_results() {
            match &w.delete {
                Ok(d) => {
                    let opt_count = |n: Option<u64>| n.map(count).unwrap_or_else(|| "?".into());
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} | {} ({}) | {} | {} → {} ({}) |",
                        backend.label(),
                        count(d.workspaces),
                        d.gone.map(secs).unwrap_or_else(|| format!(
                            "**not within {:.0} s**",
                            d.cap.as_secs_f64()
                        )),
                        count(d.deleted_events),
                        d.last_deleted.map(secs).unwrap_or_else(|| "–".into()),
                        d.last_deleted
                            .filter(|l| !l.is_zero())
                            .map(|l| rate(d.deleted_events as f64 / l.as_secs_f64()))
                            .unwrap_or_else(|| "–".into()),
                        opt_count(d.lcs_before),
                        opt_count(d.lcs_after),
                        d.lcs_back.map(secs).unwrap_or_else(|| "not back".into()),
                    );
                }
                Err(e) => {
                    let _ = writeln!(
                        out,
                        "| {} | **failed**: {} | | | | |",
                        backend.label(),
                        one_line(e)
                    );
                }
            }
        }
        let _ = writeln!(out);
    }

    fn workspace_restart_table(&self, out: &mut String) {
        let _ = writeln!(out, "### Restart with many workspaces\n");
        let _ = writeln!(
            out,
            "SIGTERM, then `kcp-shard start` again on the same root directory (and etcd). Ready = the new `admin.kubeconfig` written and `/readyz` answered (polled every 20 ms); first GET = `GET /clusters/root:flat:<child>/api/v1/namespaces/default` answering 200 (polled every 10 ms). Then a sample of `flat`'s children, evenly spread, is checked: Workspace phase Ready, and namespace `default` served by path.\n"
        );
        let _ = writeln!(
            out,
            "| store | workspaces | SIGTERM → exit | start → ready | start → first GET by path | sample Ready · served | RSS once idle (per workspace beyond the warm-up) |\n| --- | ---: | ---: | ---: | ---: | --- | --- |"
        );
        for (backend, w) in self.workspace_results() {
            match &w.restart {
                Ok(r) => {
                    let _ = writeln!(
                        out,
                        "| {} | {} | {}{} | {} | {} | {} · {} of {}{} | {} |",
                        backend.label(),
                        count(r.workspaces),
                        secs(r.stop),
                        if r.clean_exit { "" } else { " (**killed**)" },
                        secs(r.ready),
                        match &r.first_get {
                            Ok(d) => secs(*d),
                            Err(e) => format!("**failed**: {}", one_line(e)),
                        },
                        r.sample_ready,
                        r.sample_served,
                        r.sampled,
                        r.first_problem
                            .as_deref()
                            .map(|p| format!(" (first problem: {})", one_line(p)))
                            .unwrap_or_default(),
                        restarted_rss(w, r.rss_idle),
                    );
                }
                Err(e) => {
                    let _ = writeln!(
                        out,
                        "| {} | **failed**: {} | | | | | |",
                        backend.label(),
                        one_line(e)
                    );
                }
            }
        }
        let _ = writeln!(out);
    }

    pub(super) fn workspace_failures(&self, lines: &mut Vec<String>) {
        for (backend, result) in &self.workspaces {
            let label = backend.label();
            let w = match result {
                Ok(w) => w,
                Err(e) => {
                    lines.push(format!("workspaces on the {label}: {e}"));
                    continue;
                }
            };
            let mut phases = vec![("flat creation", &w.flat)];
            if let Ok(tree) = &w.tree {
                phases.push(("tree creation", tree));
            }
            if let Some(more) = &w.memory.more {
                phases.push(("more flat creation", more));
            }
            phases.push(("flat creation, fewer creators", &w.light));
            for (name, c) in phases.into_iter().filter(|(_, c)| c.load.errors > 0) {
                lines.push(format!(
                    "workspaces on the {label}, {name}: {} errors; first: {}",
                    c.load.errors,
                    c.load.first_error.as_deref().unwrap_or("?")
                ));
            }
            for (name, e) in [
                ("tree", w.tree.as_ref().err()),
                ("tree deletion", w.delete.as_ref().err()),
                ("restart", w.restart.as_ref().err()),
            ] {
                if let Some(e) = e {
                    lines.push(format!("workspaces on the {label}, {name}: {e}"));
                }
            }
            if let Ok(r) = &w.restart {
                if let Err(e) = &r.first_get {
                    lines.push(format!("workspaces on the {label}, after the restart: {e}"));
                }
                if let Some(p) = &r.first_problem {
                    lines.push(format!(
                        "workspaces on the {label}, after the restart: {} of {} sampled Ready, {} served; first problem: {p}",
                        r.sample_ready, r.sampled, r.sample_served
                    ));
                }
            }
            if !w.shard_log.trim().is_empty() {
                lines.push(format!(
                    "workspaces on the {label}: the shard logged (last lines):\n{}",
                    w.shard_log.trim_end()
                ));
            }
            if w.watch_failures > 0 {
                lines.push(format!(
                    "workspaces on the {label}: the Ready watch failed {} times (re-opened each time); first: {}",
                    w.watch_failures,
                    w.watch_first_failure.as_deref().unwrap_or("?")
                ));
            }
        }
    }
}
