//! `kcp-bench`: one command that starts etcd and the `kcp-shard` binary (on etcd and on its embedded
//! store), drives load over HTTPS from this process, and writes `docs/benchmarks.md`.
//!
//! Phases, each capped in time and operations: raw etcd put / txn create / get / range (the baseline);
//! on each shard: create, get, update, list (whole and paged), the same (but update) on custom
//! resources of the same size, server-side apply next to a merge patch, watch latency with 1 and
//! 1,000 watchers; then, on fresh shards, RSS per logical cluster, without and with a CRD in each;
//! then workspaces: creation to Ready, RSS per workspace, deleting a tree, restarting with many;
//! then one APIExport bound into many workspaces. Bound resources are measured next to local CRDs
//! in the load phases.
//! Nothing here is a test: numbers are reported, never asserted.

mod apply;
mod authz;
mod bindings;
mod board;
mod bound;
mod client;
mod config;
mod crd_memory;
mod custom;
mod etcd_raw;
mod idle;
mod lc_memory;
mod objects;
mod phase;
mod procfs;
mod report;
mod shard;
mod shard_load;
mod virtual_ws;
mod watch;
mod workspaces;

use std::time::Instant;

use anyhow::Context as _;

pub use config::Args;
use config::{Part, Plan};
use shard::{Backend, ShardProcess};

/// Runs the whole benchmark and writes the report.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let plan = Plan::from_args(&args);
    let machine = procfs::Machine::read();
    let started = chrono::Local::now();
    let binary = shard::shard_binary(args.shard_bin.as_deref())?;
    let t0 = Instant::now();
    let load_before_phases = procfs::load_average();
    eprintln!(
        "kcp-bench: {} run with {}; load average {load_before_phases}",
        if plan.quick { "quick" } else { "full" },
        binary.display()
    );

    let mut report = report::Report {
        machine,
        load_before_phases,
        started,
        elapsed: Default::default(),
        plan: plan.clone(),
        shard_bin: binary.clone(),
        git: procfs::git_revision(&shard::workspace_root()),
        etcd_version: procfs::version_of("/usr/bin/etcd", &["--version"]),
        bench_debug_build: cfg!(debug_assertions),
        baseline: Err("not run".into()),
        shards: Vec::new(),
        memory: Vec::new(),
        crd_memory: Vec::new(),
        authz: Err("not run".into()),
        workspaces: Vec::new(),
        bindings: Vec::new(),
    };

    if args.runs(Part::Baseline) {
        report.baseline = baseline(&plan).await.map_err(|e| format!("{e:#}"));
    }

    for backend in [Backend::Etcd, Backend::Embedded] {
        if !args.runs(Part::Load) {
            break;
        }
        let outcome = match ShardProcess::start(&binary, backend).await {
            Ok(shard) => {
                let results = shard_load::run(&plan, &shard).await;
                drop(shard);
                Ok(results)
            }
            Err(err) => Err(format!("starting the shard: {err:#}")),
        };
        report.shards.push((backend, outcome));
    }

    for backend in [Backend::Embedded, Backend::Etcd] {
        if !args.runs(Part::Memory) {
            break;
        }
        let outcome = match ShardProcess::start(&binary, backend).await {
            Ok(shard) => {
                let result = lc_memory::measure(&plan, &shard).await;
                let result =
                    result.map_err(|e| format!("{e:#}\nshard log tail:\n{}", shard.log_tail(20)));
                drop(shard);
                result
            }
            Err(err) => Err(format!("starting the shard: {err:#}")),
        };
        report.memory.push((backend, outcome));
    }

    for backend in [Backend::Embedded, Backend::Etcd] {
        if !args.runs(Part::CrdMemory) {
            break;
        }
        let result = crd_memory::measure(&plan, &binary, backend).await;
        report.crd_memory.push((backend, result));
    }

    if args.runs(Part::Authz) {
        report.authz = authz::measure(&plan, &binary)
            .await
            .map_err(|e| format!("{e:#}"));
    }

    for backend in [Backend::Embedded, Backend::Etcd] {
        if !args.runs(Part::Workspaces) {
            break;
        }
        let result = workspaces::measure(&plan, &binary, backend).await;
        report.workspaces.push((backend, result));
    }

    for backend in [Backend::Embedded, Backend::Etcd] {
        if !args.runs(Part::Bindings) {
            break;
        }
        let result = bindings::measure(&plan, &binary, backend).await;
        report.bindings.push((backend, result));
    }

    report.elapsed = t0.elapsed();
    let markdown = report.render();
    if let Some(parent) = args.out.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&args.out, markdown)
        .with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!(
        "kcp-bench: wrote {} after {:.0} s",
        args.out.display(),
        report.elapsed.as_secs_f64()
    );
    Ok(())
}

async fn baseline(plan: &Plan) -> anyhow::Result<etcd_raw::Baseline> {
    let (etcd, pid) = shard::start_etcd()?;
    let result = etcd_raw::run(plan, &etcd.endpoint(), pid).await;
    drop(etcd);
    result
}
