//! The usual `process_*` metrics, read from `/proc/self` when scraped (Linux only; elsewhere they
//! stay 0, and the start time is when the server was built).

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use super::FloatGauge;

/// Linux reports CPU times in clock ticks of `USER_HZ`, which is 100 on every architecture it
/// supports for user space.
const TICKS_PER_SECOND: f64 = 100.0;

pub struct ProcessMetrics {
    cpu: Counter<f64, AtomicU64>,
    resident: Gauge,
    virtual_memory: Gauge,
    open_fds: Gauge,
    max_fds: Gauge,
}

impl ProcessMetrics {
    pub fn register(registry: &mut Registry) -> ProcessMetrics {
        let metrics = ProcessMetrics {
            cpu: Counter::default(),
            resident: Gauge::default(),
            virtual_memory: Gauge::default(),
            open_fds: Gauge::default(),
            max_fds: Gauge::default(),
        };
        registry.register_with_unit(
            "process_cpu",
            "Total user and system CPU time spent in seconds",
            Unit::Seconds,
            metrics.cpu.clone(),
        );
        registry.register_with_unit(
            "process_resident_memory",
            "Resident memory size in bytes",
            Unit::Bytes,
            metrics.resident.clone(),
        );
        registry.register_with_unit(
            "process_virtual_memory",
            "Virtual memory size in bytes",
            Unit::Bytes,
            metrics.virtual_memory.clone(),
        );
        registry.register(
            "process_open_fds",
            "Number of open file descriptors",
            metrics.open_fds.clone(),
        );
        registry.register(
            "process_max_fds",
            "Maximum number of open file descriptors",
            metrics.max_fds.clone(),
        );
        let start = FloatGauge::default();
        start.set(start_time().unwrap_or_else(super::now_seconds));
        registry.register_with_unit(
            "process_start_time",
            "Start time of the process since unix epoch in seconds",
            Unit::Seconds,
            start,
        );
        metrics
    }

    /// Reads the current values.
    pub fn update(&self) {
        if let Some(seconds) = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .as_deref()
            .and_then(cpu_seconds)
        {
            // A counter only grows: add what was spent since the last scrape.
            let delta = seconds - self.cpu.get();
            if delta > 0.0 {
                self.cpu.inc_by(delta);
            }
        }
        if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
            if let Some(bytes) = status_bytes(&status, "VmRSS:") {
                self.resident.set(bytes);
            }
            if let Some(bytes) = status_bytes(&status, "VmSize:") {
                self.virtual_memory.set(bytes);
            }
        }
        if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
            self.open_fds
                .set(i64::try_from(entries.count()).unwrap_or(i64::MAX));
        }
        if let Some(max) = std::fs::read_to_string("/proc/self/limits")
            .ok()
            .as_deref()
            .and_then(max_open_files)
        {
            self.max_fds.set(max);
        }
    }
}

/// Field `n` (1-based, as proc(5) numbers them) of `/proc/self/stat`, as a number. The command
/// name (field 2, in parentheses) may hold spaces, so fields are counted after its `)`.
fn stat_field(stat: &str, n: usize) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name
        .split_whitespace()
        .nth(n.checked_sub(3)?)?
        .parse()
        .ok()
}

/// User plus system time (fields 14 and 15).
fn cpu_seconds(stat: &str) -> Option<f64> {
    Some((stat_field(stat, 14)? + stat_field(stat, 15)?) / TICKS_PER_SECOND)
}

/// When the process started, in seconds since the epoch: its start in ticks after boot
/// (`/proc/self/stat` field 22) plus the boot time (`btime` of `/proc/stat`).
fn start_time() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    start_seconds(&stat, &boot)
}

fn start_seconds(stat: &str, boot: &str) -> Option<f64> {
    let ticks = stat_field(stat, 22)?;
    let btime: f64 = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some(btime + ticks / TICKS_PER_SECOND)
}

/// A `kB` line of `/proc/self/status`, in bytes.
fn status_bytes(status: &str, field: &str) -> Option<i64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: i64 = line[field.len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// The soft limit of `Max open files` in `/proc/self/limits`.
fn max_open_files(limits: &str) -> Option<i64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read() {
        let stat = "1234 (kcp shard) S 1 1234 1234 0 -1 4194560 5000 0 0 0 250 50 0 0 20 0 30 0";
        assert_eq!(cpu_seconds(stat), Some(3.0));
        let started = "1 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 12345 0";
        assert_eq!(
            start_seconds(started, "cpu  1 2\nbtime 1700000000\n"),
            Some(1_700_000_123.45)
        );
        assert!(
            start_time().is_some_and(|t| t > 1.0e9),
            "read from /proc here"
        );
        let status = "Name:\tkcp-shard\nVmSize:\t  200 kB\nVmRSS:\t    10 kB\n";
        assert_eq!(status_bytes(status, "VmRSS:"), Some(10 * 1024));
        assert_eq!(status_bytes(status, "VmSize:"), Some(200 * 1024));
        let limits = "Limit                     Soft Limit           Hard Limit           Units\nMax open files            1024                 524288               files\n";
        assert_eq!(max_open_files(limits), Some(1024));
    }
}
