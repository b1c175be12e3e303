//! Waiting until the shard is idle before an RSS reading: the clients being done does not mean the
//! shard is (its controllers may still be creating what each new logical cluster or workspace gets).

use std::time::{Duration, Instant};

use crate::procfs;

/// Pause before each RSS reading (let background work settle) at least this long ...
const SETTLE: Duration = Duration::from_secs(3);
/// ... and then until the shard is idle.
const IDLE_WINDOW: Duration = Duration::from_secs(1);
/// Idle: less CPU than this share of one core over [`IDLE_WINDOW`].
const IDLE_CPU_SHARE: f64 = 0.03;
/// Give up waiting for idleness after this long (the reading is then taken anyway).
const IDLE_CAP: Duration = Duration::from_secs(60);

/// Waits [`SETTLE`], then until `pid` uses (almost) no CPU, at most [`IDLE_CAP`].
pub async fn settle(pid: u32) {
    tokio::time::sleep(SETTLE).await;
    let start = Instant::now();
    let mut last = procfs::cpu_time(pid);
    while start.elapsed() < IDLE_CAP {
        tokio::time::sleep(IDLE_WINDOW).await;
        let now = procfs::cpu_time(pid);
        let (Some(before), Some(after)) = (last, now) else {
            return;
        };
        if (after.saturating_sub(before)).as_secs_f64() < IDLE_CPU_SHARE * IDLE_WINDOW.as_secs_f64()
        {
            return;
        }
        last = now;
    }
}
