//! Every write a redb store acknowledged survives SIGKILL. The test re-executes its own binary as a
//! child (`crash_child`, switched on by an environment variable) that writes from several tasks and
//! prints each acknowledged key; the parent kills it mid-stream, reopens the file and looks for them.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kcp_store::{RedbStore, Store};

const CHILD_ENV: &str = "KCP_STORE_CRASH_DB";
const ROUND_ENV: &str = "KCP_STORE_CRASH_ROUND";

/// The child: writes until killed. Does nothing in a normal test run.
#[test]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let round = std::env::var(ROUND_ENV).unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let store = std::sync::Arc::new(RedbStore::open(&path).expect("open"));
        let tasks: Vec<_> = (0..8)
            .map(|t| {
                let store = store.clone();
                let round = round.clone();
                tokio::spawn(async move {
                    for i in 0.. {
                        let key = format!("/crash/{round}/{t}/{i}");
                        let rev = store
                            .create(&key, key.clone().into())
                            .await
                            .expect("create");
                        // Written straight to the process's stdout, past the test harness's capture.
                        let mut out = std::io::stdout().lock();
                        writeln!(out, "ack {key} {rev}").expect("stdout");
                        out.flush().expect("flush");
                    }
                })
            })
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    });
}

/// Runs one child until it acknowledged `min_acks` writes (or 20 s passed), kills it, and returns the
/// acknowledged keys with their revisions.
fn run_and_kill(db: &Path, round: usize, min_acks: usize) -> Vec<(String, i64)> {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, db)
        .env(ROUND_ENV, round.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acks = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while acks.len() < min_acks && Instant::now() < deadline {
        match lines.next() {
            Some(Ok(line)) => acks.extend(parse(&line)),
            _ => break,
        }
    }
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    // Acknowledgements still in the pipe count too.
    for line in lines.map_while(Result::ok) {
        acks.extend(parse(&line));
    }
    acks
}

fn parse(line: &str) -> Option<(String, i64)> {
    let mut parts = line.strip_prefix("ack ")?.split(' ');
    Some((parts.next()?.to_owned(), parts.next()?.parse().ok()?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("store.redb");
    let mut all = Vec::new();
    for round in 0..3 {
        let acks = run_and_kill(&db, round, 300 * (round + 1));
        assert!(
            !acks.is_empty(),
            "round {round}: the child acknowledged nothing"
        );
        all.extend(acks);
        let store = RedbStore::open(&db).expect("reopen after SIGKILL");
        let current = store.current_revision().await.expect("revision");
        for (key, rev) in &all {
            let kv = store
                .get(key)
                .await
                .expect("get")
                .unwrap_or_else(|| panic!("acknowledged {key} is lost"));
            assert_eq!(
                (kv.mod_revision, kv.value.as_ref()),
                (*rev, key.as_bytes()),
                "{key}"
            );
            assert!(current >= *rev);
        }
        eprintln!(
            "round {round}: {} acknowledged writes in total all present (revision {current})",
            all.len()
        );
    }
}
