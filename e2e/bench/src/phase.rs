//! Closed-loop load phases: N workers, each sending one request after the other, until the phase's
//! time or operation cap; latencies and the CPU the processes under test used.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::procfs;

/// One client of a phase: `op` performs one operation (the `seq`-th of the phase).
pub trait Worker: Send + 'static {
    fn op(&mut self, seq: u64) -> impl Future<Output = anyhow::Result<()>> + Send;
}

/// A client that measures its own latency: the part of `op` that counts (a workspace creator counts
/// from its POST to the Ready event, not the wait for a parent to become creatable).
pub trait TimedWorker: Send + 'static {
    fn op(&mut self, seq: u64) -> impl Future<Output = anyhow::Result<Duration>> + Send;
}

/// A [`Worker`] timed from the start to the end of each operation.
struct WholeOp<W>(W);

impl<W: Worker> TimedWorker for WholeOp<W> {
    async fn op(&mut self, seq: u64) -> anyhow::Result<Duration> {
        let t0 = Instant::now();
        self.0.op(seq).await?;
        Ok(t0.elapsed())
    }
}

/// Caps of a phase.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub duration: Duration,
    pub max_ops: u64,
}

/// Which processes' CPU time a phase accounts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Probe {
    pub shard: Option<u32>,
    pub etcd: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
pub struct CpuSnapshot {
    shard: Option<Duration>,
    etcd: Option<Duration>,
    bench: Option<Duration>,
}

impl Probe {
    pub fn snapshot(&self) -> CpuSnapshot {
        CpuSnapshot {
            shard: self.shard.and_then(procfs::cpu_time),
            etcd: self.etcd.and_then(procfs::cpu_time),
            bench: procfs::cpu_time(std::process::id()),
        }
    }
}

/// CPU time used during a phase, per process.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuUse {
    pub shard: Option<Duration>,
    pub etcd: Option<Duration>,
    pub bench: Option<Duration>,
}

impl CpuUse {
    /// The CPU of two phases together.
    fn plus(self, other: CpuUse) -> CpuUse {
        let sum = |a: Option<Duration>, b: Option<Duration>| Some(a? + b?);
        CpuUse {
            shard: sum(self.shard, other.shard),
            etcd: sum(self.etcd, other.etcd),
            bench: sum(self.bench, other.bench),
        }
    }
}

fn delta(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    Some(b?.saturating_sub(a?))
}

impl CpuSnapshot {
    pub fn until(&self, later: &CpuSnapshot) -> CpuUse {
        CpuUse {
            shard: delta(self.shard, later.shard),
            etcd: delta(self.etcd, later.etcd),
            bench: delta(self.bench, later.bench),
        }
    }
}

/// The outcome of a phase.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub clients: usize,
    /// Successful operations.
    pub ops: u64,
    pub errors: u64,
    pub elapsed: Duration,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
    pub cpu: CpuUse,
    /// The first failure, with the request and response when the worker knows them.
    pub first_error: Option<String>,
}

impl Summary {
    pub fn throughput(&self) -> f64 {
        if self.elapsed.is_zero() {
            0.0
        } else {
            self.ops as f64 / self.elapsed.as_secs_f64()
        }
    }

    /// CPU time per successful operation of one process.
    pub fn cpu_per_op(&self, cpu: Option<Duration>) -> Option<Duration> {
        let cpu = cpu?;
        (self.ops > 0).then(|| cpu / u32::try_from(self.ops).unwrap_or(u32::MAX))
    }

    /// Runs of one phase taken together, with their latencies: operations, errors, time and CPU
    /// add up, and the percentiles are those of every latency.
    pub fn merged(runs: Vec<(Summary, Vec<Duration>)>) -> Summary {
        let mut total = Summary::default();
        let mut latencies = Vec::new();
        for (i, (run, samples)) in runs.into_iter().enumerate() {
            latencies.extend(samples);
            total.clients = run.clients;
            total.errors += run.errors;
            total.elapsed += run.elapsed;
            total.cpu = if i == 0 {
                run.cpu
            } else {
                total.cpu.plus(run.cpu)
            };
            total.first_error = total.first_error.or(run.first_error);
        }
        let counted = Summary::from_latencies(latencies);
        Summary {
            ops: counted.ops,
            p50: counted.p50,
            p99: counted.p99,
            max: counted.max,
            ..total
        }
    }

    pub fn from_latencies(mut latencies: Vec<Duration>) -> Summary {
        latencies.sort_unstable();
        Summary::from_sorted(&latencies)
    }

    fn from_sorted(latencies: &[Duration]) -> Summary {
        Summary {
            ops: latencies.len() as u64,
            p50: percentile(latencies, 0.50),
            p99: percentile(latencies, 0.99),
            max: latencies.last().copied().unwrap_or_default(),
            ..Summary::default()
        }
    }
}

/// The `q` quantile (nearest rank) of sorted samples.
pub fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

struct WorkerResult {
    latencies: Vec<Duration>,
    errors: u64,
    first_error: Option<String>,
}

/// Runs `workers` concurrently until `limits`, then summarizes. A phase never outlives its cap by more
/// than one request timeout: workers stop starting operations at the deadline.
pub async fn run<W: Worker>(workers: Vec<W>, limits: Limits, probe: Probe) -> Summary {
    run_timed(workers.into_iter().map(WholeOp).collect(), limits, probe).await
}

/// [`run`], keeping every latency (to merge runs with [`Summary::merged`]).
pub async fn run_sampled<W: Worker>(
    workers: Vec<W>,
    limits: Limits,
    probe: Probe,
) -> (Summary, Vec<Duration>) {
    run_timed_sampled(workers.into_iter().map(WholeOp).collect(), limits, probe).await
}

/// [`run`] for workers that time their operations themselves.
pub async fn run_timed<W: TimedWorker>(workers: Vec<W>, limits: Limits, probe: Probe) -> Summary {
    run_timed_sampled(workers, limits, probe).await.0
}

async fn run_timed_sampled<W: TimedWorker>(
    workers: Vec<W>,
    limits: Limits,
    probe: Probe,
) -> (Summary, Vec<Duration>) {
    let clients = workers.len();
    let counter = Arc::new(AtomicU64::new(0));
    let before = probe.snapshot();
    let start = Instant::now();
    let deadline = start + limits.duration;
    let mut tasks = tokio::task::JoinSet::new();
    for mut worker in workers {
        let counter = counter.clone();
        tasks.spawn(async move {
            let mut result = WorkerResult {
                latencies: Vec::new(),
                errors: 0,
                first_error: None,
            };
            loop {
                let seq = counter.fetch_add(1, Ordering::Relaxed);
                if seq >= limits.max_ops || Instant::now() >= deadline {
                    break;
                }
                match worker.op(seq).await {
                    Ok(took) => result.latencies.push(took),
                    Err(err) => {
                        result.errors += 1;
                        if result.first_error.is_none() {
                            result.first_error = Some(format!("{err:#}"));
                        }
                        // Do not spin on a broken server.
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            result
        });
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(result) => {
                latencies.extend(result.latencies);
                errors += result.errors;
                if first_error.is_none() {
                    first_error = result.first_error;
                }
            }
            Err(err) => {
                errors += 1;
                first_error.get_or_insert_with(|| format!("worker task failed: {err}"));
            }
        }
    }
    let elapsed = start.elapsed();
    let after = probe.snapshot();
    latencies.sort_unstable();
    let summary = Summary {
        clients,
        errors,
        elapsed,
        cpu: before.until(&after),
        first_error,
        ..Summary::from_sorted(&latencies)
    };
    (summary, latencies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ms: &[u64], elapsed: u64) -> (Summary, Vec<Duration>) {
        let latencies: Vec<Duration> = ms.iter().map(|m| Duration::from_millis(*m)).collect();
        let summary = Summary {
            clients: 2,
            errors: 1,
            elapsed: Duration::from_secs(elapsed),
            ..Summary::from_latencies(latencies.clone())
        };
        (summary, latencies)
    }

    #[test]
    fn merged_runs_add_up_and_take_percentiles_over_every_request() {
        let merged = Summary::merged(vec![run(&[1, 2, 3], 1), run(&[10, 20, 30, 40], 2)]);
        assert_eq!(merged.ops, 7);
        assert_eq!(merged.errors, 2);
        assert_eq!(merged.elapsed, Duration::from_secs(3));
        assert_eq!(merged.clients, 2);
        assert_eq!(merged.p50, Duration::from_millis(10));
        assert_eq!(merged.max, Duration::from_millis(40));
        assert!((merged.throughput() - 7.0 / 3.0).abs() < 1e-9);
        assert_eq!(Summary::merged(Vec::new()).ops, 0);
    }
}
