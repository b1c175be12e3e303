//! The report's section on the cost of authorization.

use std::fmt::Write as _;

use super::{Report, cell, count, met, us};

/// GET through kcp's authorizer chain loses at most 10 % of throughput.
const TARGET_AUTHZ_RATIO: f64 = 0.9;

impl Report {
    pub(super) fn authz_section(&self, out: &mut String) {
        let _ = writeln!(out, "## Authorization cost\n");
        let r = match &self.authz {
            Ok(r) => r,
            Err(err) => {
                let _ = writeln!(out, "Not measured: {}\n", super::one_line(err));
                return;
            }
        };
        let _ = writeln!(
            out,
            "A fresh shard on the embedded store holds {} logical clusters besides `authz`, whose `default` namespace holds {} RoleBindings (to other users). One ConfigMap there is read by `shard-admin` (group `system:masters`: authorization returns at its first step, the foundation's always-allow path) and by `kcp-admin` (group `system:kcp:admin`: kcp's whole chain — workspace access, then the logical cluster's RBAC, then the bootstrap policy that grants it), side by side at the same concurrency. Decisions are cached until RBAC or a logical cluster changes.\n",
            count(r.other_lcs as u64),
            count(r.role_bindings as u64)
        );
        let worst = r
            .pairs
            .iter()
            .filter(|(m, a)| m.ops > 0 && a.ops > 0)
            .map(|(m, a)| a.throughput() / m.throughput())
            .fold(None, |acc: Option<f64>, x| {
                Some(acc.map_or(x, |a| a.min(x)))
            });
        let _ = writeln!(out, "| target | measured | verdict |\n| --- | --- | --- |");
        match worst {
            Some(w) => {
                let _ = writeln!(
                    out,
                    "| GET through the authorizer chain ≥ {TARGET_AUTHZ_RATIO:.2}× of system:masters | worst over {} clients: {w:.2}× | {} |\n",
                    r.clients
                        .iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(" / "),
                    met(w >= TARGET_AUTHZ_RATIO)
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "| GET through the authorizer chain ≥ {TARGET_AUTHZ_RATIO:.2}× of system:masters | no result | **missed** |\n"
                );
            }
        }
        let _ = writeln!(
            out,
            "| clients | system:masters | through RBAC | ratio | shard CPU per GET (masters · RBAC) |\n| ---: | --- | --- | ---: | --- |"
        );
        for (c, (m, a)) in r.clients.iter().zip(&r.pairs) {
            let ratio = if m.throughput() > 0.0 && a.ops > 0 {
                format!("{:.2}×", a.throughput() / m.throughput())
            } else {
                "–".into()
            };
            let _ = writeln!(
                out,
                "| {c} | {} | {} | {ratio} | {} µs · {} µs |",
                cell(Some(m)),
                cell(Some(a)),
                us(m.cpu_per_op(m.cpu.shard)),
                us(a.cpu_per_op(a.cpu.shard)),
            );
        }
        let _ = writeln!(out);
    }
}
