//! `kubectl kcp crd snapshot -f <file|-> --prefix <p> [-o yaml|json]`: each CRD of the input as an
//! APIResourceSchema named `<prefix>.<plural>.<group>`, every document followed by `---` (kcp's
//! `cli/pkg/crd/plugin/snapshot.go`). Talks to no server.

use std::io::{Read, Write};

use serde_json::Value;

use kcp_api_types::apis::snapshot::{crd_defaults, schema_from_crd};
use kcp_apimachinery::field_error::aggregate_message;
use kcp_apimachinery::numbers::integral_floats_to_integers;

use crate::error::{Error, Result};

#[derive(Debug, Clone, clap::Args)]
pub struct SnapshotArgs {
    /// Path to a file containing the CRD to convert to an APIResourceSchema, or - for stdin
    #[arg(short = 'f', long = "filename", default_value = "")]
    pub filename: String,
    /// Prefix to use for the APIResourceSchema's name, before <resource>.<group>
    #[arg(long, default_value = "")]
    pub prefix: String,
    /// Output format. Valid values are 'json' and 'yaml'
    #[arg(short = 'o', long = "output", default_value = "yaml")]
    pub output: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Yaml,
    Json,
}

impl SnapshotArgs {
    /// kcp's checks, all reported at once.
    pub fn validate(&self) -> Result<Format> {
        let mut errors = Vec::new();
        if self.filename.is_empty() {
            errors.push("--filename is required".to_owned());
        }
        if self.prefix.is_empty() {
            errors.push("--prefix is required".to_owned());
        }
        let format = match self.output.as_str() {
            "yaml" => Some(Format::Yaml),
            "json" => Some(Format::Json),
            other => {
                errors.push(format!(
                    "invalid value {other:?} for --output; valid values are json, yaml"
                ));
                None
            }
        };
        match format {
            Some(format) if errors.is_empty() => Ok(format),
            _ => Err(Error::SnapshotFlags(aggregate_message(&errors))),
        }
    }
}

/// Reads the CRDs from the file (or `stdin` for `-`) and writes their schemas to `out`.
pub fn run(args: &SnapshotArgs, stdin: &mut dyn Read, out: &mut dyn Write) -> Result<()> {
    let format = args.validate()?;
    let text = if args.filename == "-" {
        let mut text = String::new();
        stdin.read_to_string(&mut text).map_err(Error::Stdin)?;
        text
    } else {
        std::fs::read_to_string(&args.filename).map_err(|source| Error::Open {
            file: args.filename.clone(),
            source,
        })?
    };
    write!(
        out,
        "{}",
        snapshot(&text, &args.filename, &args.prefix, format)?
    )?;
    Ok(())
}

/// The schemas of the CRDs in `text` (YAML or JSON, documents separated by `---`; `file` names it
/// in errors), each followed by a `---` line as kcp prints them.
pub fn snapshot(text: &str, file: &str, prefix: &str, format: Format) -> Result<String> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| Error::Decode {
        file: file.to_owned(),
        message: e.to_string(),
    })?;
    let mut out = String::new();
    for mut crd in docs.into_iter().filter(|d| !d.is_null()) {
        // As a Go decoder reads YAML: `1.0` is the number 1; and the API server's defaults.
        integral_floats_to_integers(&mut crd);
        crd_defaults(&mut crd);
        let schema = schema_from_crd(&crd, prefix)?;
        let encoded = match format {
            Format::Yaml => {
                serde_saphyr::to_string(&schema).map_err(|e| Error::Encode(e.to_string()))?
            }
            Format::Json => {
                serde_json::to_string(&schema).map_err(|e| Error::Encode(e.to_string()))?
            }
        };
        out.push_str(encoded.trim_end_matches('\n'));
        out.push_str("\n---\n");
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: cowboys.wildwest.dev
spec:
  group: wildwest.dev
  names:
    kind: Cowboy
    plural: cowboys
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              intent:
                type: string
                maxLength: 10.0
"#;

    fn args(filename: &str, prefix: &str, output: &str) -> SnapshotArgs {
        SnapshotArgs {
            filename: filename.into(),
            prefix: prefix.into(),
            output: output.into(),
        }
    }

    #[test]
    fn flag_checks_in_kcps_words() {
        assert_eq!(
            args("", "", "xml").validate().unwrap_err().to_string(),
            "[--filename is required, --prefix is required, invalid value \"xml\" for --output; valid values are json, yaml]"
        );
        assert_eq!(
            args("f", "", "yaml").validate().unwrap_err().to_string(),
            "--prefix is required"
        );
        assert_eq!(args("-", "p", "json").validate().unwrap(), Format::Json);
    }

    #[test]
    fn yaml_documents_with_defaults() {
        let two = format!(
            "{CRD}---\n{}",
            CRD.replace("cowboys", "horses").replace("Cowboy", "Horse")
        );
        let out = snapshot(&two, "crd.yaml", "today", Format::Yaml).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&out).unwrap();
        assert_eq!(docs.len(), 2, "{out}");
        assert!(out.ends_with("\n---\n"), "{out}");
        let schema = &docs[0];
        assert_eq!(schema["kind"], "APIResourceSchema");
        assert_eq!(schema["metadata"]["name"], "today.cowboys.wildwest.dev");
        assert_eq!(schema["spec"]["names"]["singular"], "cowboy");
        assert_eq!(schema["spec"]["names"]["listKind"], "CowboyList");
        assert_eq!(schema["spec"]["conversion"]["strategy"], "None");
        assert_eq!(
            schema["spec"]["versions"][0]["schema"]["properties"]["spec"]["properties"]["intent"]["maxLength"],
            10
        );
        assert_eq!(docs[1]["metadata"]["name"], "today.horses.wildwest.dev");
    }

    #[test]
    fn json_output_and_errors() {
        let out = snapshot(CRD, "-", "p", Format::Json).unwrap();
        let (first, rest) = out.split_once("\n---\n").unwrap();
        assert_eq!(rest, "");
        let schema: Value = serde_json::from_str(first).unwrap();
        assert_eq!(schema["metadata"]["name"], "p.cowboys.wildwest.dev");
        let err = snapshot("kind: ConfigMap\n", "cm.yaml", "p", Format::Yaml).unwrap_err();
        assert!(
            err.to_string().starts_with("error converting CRD: "),
            "{err}"
        );
        let err = snapshot("a: [", "bad.yaml", "p", Format::Yaml).unwrap_err();
        assert!(
            err.to_string().starts_with("error decoding bad.yaml: "),
            "{err}"
        );
    }

    #[test]
    fn reads_stdin_and_files() {
        let mut out = Vec::new();
        run(&args("-", "p", "yaml"), &mut CRD.as_bytes(), &mut out).unwrap();
        assert!(
            String::from_utf8(out)
                .unwrap()
                .contains("name: p.cowboys.wildwest.dev")
        );
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.yaml");
        let err = run(
            &args(missing.to_str().unwrap(), "p", "yaml"),
            &mut std::io::empty(),
            &mut Vec::<u8>::new(),
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("error opening "), "{err}");
    }
}
