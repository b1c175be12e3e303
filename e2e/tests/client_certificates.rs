//! Client certificates as kube-apiserver judges them, on both stores: the certificates are made with
//! the openssl command line, as people make them by hand.
//!
//! - An X.509 **v1** certificate (what `openssl x509 -req` writes without extensions) of the shard's CA
//!   authenticates its CN and O's.
//! - An expired certificate, or one of a CA the shard does not trust, is a 401 `Unauthorized` Status
//!   (kubectl: "You must be logged in to the server"), not a failed TLS handshake.
//! - A bearer token sent beside such a certificate still authenticates.

use std::path::{Path, PathBuf};
use std::process::Command;

use kcp_e2e::{Caller, Shard, StoreKind, on_both_stores};

on_both_stores!(client_certificates);

const TOKEN: &str = "token-of-bob-7f3c";
const WHOAMI: &str = "/clusters/root/apis/authentication.k8s.io/v1/selfsubjectreviews";
const REVIEW: &str = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#;

fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("running openssl (is it installed? scripts/setup.sh installs it)");
    assert!(
        output.status.success(),
        "openssl {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A key and a certificate for `subject`, signed by `ca` (`<ca>.crt`, `<ca>.key` in `dir`) with
/// `openssl x509 -req`, valid for `days` (negative: already expired).
fn sign(dir: &Path, stem: &str, subject: &str, ca: &Path, ca_key: &Path, days: i32) -> Caller {
    let key = format!("{stem}.key");
    let csr = format!("{stem}.csr");
    let crt = format!("{stem}.crt");
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            subject,
        ],
    );
    let days = days.to_string();
    let (ca, ca_key) = (path_str(ca), path_str(ca_key));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            ca,
            "-CAkey",
            ca_key,
            "-set_serial",
            "7",
            "-days",
            &days,
            "-out",
            &crt,
        ],
    );
    Caller::Cert {
        cert: dir.join(crt),
        key: dir.join(key),
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn cert_files(caller: &Caller) -> (&PathBuf, &PathBuf) {
    match caller {
        Caller::Cert { cert, key } => (cert, key),
        _ => unreachable!("only certificates are made here"),
    }
}

fn client_certificates(store: StoreKind) {
    let files = tempfile::Builder::new()
        .prefix("kcp-e2e-certs-")
        .tempdir()
        .expect("a temporary directory");
    let dir = files.path();
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, format!("{TOKEN},bob,uid-bob\n")).expect("writing tokens.csv");
    let shard =
        Shard::start_with_args(store, ["--token-auth-file".into(), tokens.into_os_string()]);
    let root = shard.root_directory();
    let (ca, ca_key) = (root.join("ca.crt"), root.join("ca.key"));

    let jane = sign(dir, "jane", "/CN=jane/O=dev/O=ops", &ca, &ca_key, 30);
    let text = Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(cert_files(&jane).0)
        .output()
        .expect("openssl x509 -text");
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("Version: 1 (0x0)"),
        "the test means an X.509 v1 certificate:\n{}",
        String::from_utf8_lossy(&text.stdout)
    );
    let expired = sign(dir, "expired", "/CN=jane", &ca, &ca_key, -1);
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            "other-ca.key",
            "-out",
            "other-ca.crt",
            "-subj",
            "/CN=other-ca",
            "-days",
            "30",
        ],
    );
    let foreign = sign(
        dir,
        "foreign",
        "/CN=jane",
        &dir.join("other-ca.crt"),
        &dir.join("other-ca.key"),
        30,
    );

    // kubectl with the v1 certificate: jane, in her groups.
    let kubeconfig = |stem: &str, caller: &Caller| -> PathBuf {
        let (cert, key) = cert_files(caller);
        let path = dir.join(format!("{stem}.kubeconfig"));
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: root\n  cluster:\n    server: {server}\n    certificate-authority: {ca}\nusers:\n- name: u\n  user:\n    client-certificate: {cert}\n    client-key: {key}\ncontexts:\n- name: c\n  context: {{cluster: root, user: u}}\ncurrent-context: c\n",
                server = shard.cluster_url("root"),
                ca = ca.display(),
                cert = cert.display(),
                key = key.display(),
            ),
        )
        .expect("writing a kubeconfig");
        path
    };
    let review = shard
        .kubectl_cmd()
        .kubeconfig(&kubeconfig("jane", &jane))
        .json(&["auth", "whoami", "-o", "json"]);
    assert_eq!(review["status"]["userInfo"]["username"], "jane", "{review}");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        serde_json::json!(["dev", "ops", "system:authenticated"]),
        "{review}"
    );

    // Expired or foreign: kubectl is told it is not logged in; the API answers a 401 Status.
    for (stem, caller) in [("expired", &expired), ("foreign", &foreign)] {
        let stderr = shard
            .kubectl_cmd()
            .kubeconfig(&kubeconfig(stem, caller))
            .fails(&["get", "namespaces"]);
        assert!(
            stderr.contains("You must be logged in to the server"),
            "{stem}: {stderr}"
        );
        let (code, body) = shard.curl_with(
            caller,
            "POST",
            WHOAMI,
            &[],
            Some(("application/json", REVIEW)),
        );
        assert_eq!(code, 401, "{stem}: {body}");
        let status: serde_json::Value = serde_json::from_str(&body).expect("a Status");
        assert_eq!(status["kind"], "Status", "{stem}: {body}");
        assert_eq!(status["reason"], "Unauthorized", "{stem}: {body}");

        // A token beside the certificate is a credential of its own.
        let (code, body) = shard.curl_with(
            caller,
            "POST",
            WHOAMI,
            &[("Authorization", &format!("Bearer {TOKEN}"))],
            Some(("application/json", REVIEW)),
        );
        assert_eq!(code, 201, "{stem} with a token: {body}");
        assert!(body.contains(r#""username":"bob""#), "{stem}: {body}");
    }
}
