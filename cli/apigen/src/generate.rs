//! One run: read the CRDs and the previous schemas, convert, keep what did not change, write the
//! schemas and exports, delete what is no longer generated.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use kcp_api_types::apis::conversion::API_VERSION_V1ALPHA1;
use kcp_api_types::apis::snapshot::{SCHEMA_KIND, schema_from_crd};

use crate::error::ApigenError;
use crate::exports;
use crate::files::{read_object, stem, write_object, yaml_files};
use crate::group_resource::GroupResource;
use crate::options::Settings;

pub const SCHEMA_FILE_PREFIX: &str = "apiresourceschema-";
pub const EXPORT_FILE_PREFIX: &str = "apiexport-";
/// Groups whose CRDs are never published (kcp's own APIs, and Kubernetes' RBAC and admission).
const SKIPPED_GROUPS: [&str; 3] = [
    "apis.kcp.io",
    "rbac.authorization.k8s.io",
    "admissionregistration.k8s.io",
];

/// Writes the manifests of `settings.input_dir`'s CRDs to `settings.output_dir`, new schemas
/// named with `prefix`; progress goes to `log`.
pub fn run(settings: &Settings, prefix: &str, log: &mut dyn Write) -> Result<(), ApigenError> {
    let crds = load_crds(&settings.input_dir, log)?;
    std::fs::create_dir_all(&settings.output_dir).map_err(|source| ApigenError::CreateDir {
        path: settings.output_dir.clone(),
        source,
    })?;
    let previous = load_schemas(&settings.output_dir, log)?;

    let mut schemas = BTreeMap::new();
    for (gr, crd) in &crds {
        let current = schema_from_crd(crd, prefix).map_err(|source| ApigenError::Convert {
            resource: gr.to_string(),
            source,
        })?;
        let schema = match previous.get(gr) {
            Some(old) if same_spec(old, &current) => {
                writeln!(
                    log,
                    "Using previous APIResourceSchema for {gr}, as no changes were detected."
                )?;
                old.clone()
            }
            _ => current,
        };
        schemas.insert(gr.clone(), schema);
    }

    let names: BTreeMap<GroupResource, String> = schemas
        .iter()
        .map(|(gr, schema)| (gr.clone(), member(schema, "/metadata/name").to_owned()))
        .collect();
    let manifests = exports::exports(
        &names,
        &settings.ignored,
        settings.preserve_resources,
        |name| {
            let path = export_path(&settings.output_dir, name);
            if path.is_file() {
                read_object(&path).map(Some)
            } else {
                Ok(None)
            }
        },
    )?;

    let mut written = BTreeSet::new();
    for (name, export) in &manifests {
        let path = export_path(&settings.output_dir, name);
        write_object(&path, &settings.header, export)?;
        writeln!(log, "Wrote APIExport {name} to {}", path.display())?;
        written.insert(path);
    }
    for (gr, schema) in &schemas {
        let path = settings
            .output_dir
            .join(format!("{SCHEMA_FILE_PREFIX}{gr}.yaml"));
        write_object(&path, &settings.header, schema)?;
        writeln!(log, "Wrote APIResourceSchema {gr} to {}", path.display())?;
        written.insert(path);
    }

    for path in yaml_files(&settings.output_dir)? {
        let name = stem(&path);
        let ours = name.starts_with(EXPORT_FILE_PREFIX) || name.starts_with(SCHEMA_FILE_PREFIX);
        if ours && !written.contains(&path) {
            writeln!(log, "Pruning {}", path.display())?;
            std::fs::remove_file(&path).map_err(|source| ApigenError::Remove {
                path: path.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

fn export_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{EXPORT_FILE_PREFIX}{name}.yaml"))
}

/// The CRDs of `dir`, by the group and resource of their file names.
fn load_crds(
    dir: &Path,
    log: &mut dyn Write,
) -> Result<BTreeMap<GroupResource, Value>, ApigenError> {
    writeln!(
        log,
        "Loading CustomResourceDefinitions from {}",
        dir.display()
    )?;
    let mut crds = BTreeMap::new();
    for path in yaml_files(dir)? {
        let name = stem(&path);
        let parts: Vec<&str> = name.split('_').collect();
        let &[group, resource] = parts.as_slice() else {
            return Err(ApigenError::CrdFileName(format!("{name}.yaml")));
        };
        let gr = GroupResource::new(group, resource);
        if SKIPPED_GROUPS.contains(&group) {
            writeln!(
                log,
                "Skipping CustomResourceDefinition {gr} from {}",
                path.display()
            )?;
            continue;
        }
        let crd = read_object(&path)?;
        writeln!(
            log,
            "Loaded CustomResourceDefinition for {gr} from {}",
            path.display()
        )?;
        crds.insert(gr, crd);
    }
    writeln!(log, "Loaded {} CustomResourceDefinitions", crds.len())?;
    Ok(crds)
}

/// The schemas an earlier run wrote to `dir`, by the group and resource of their file names.
fn load_schemas(
    dir: &Path,
    log: &mut dyn Write,
) -> Result<BTreeMap<GroupResource, Value>, ApigenError> {
    let mut schemas = BTreeMap::new();
    for path in yaml_files(dir)? {
        let name = stem(&path);
        let Some(rest) = name.strip_prefix(SCHEMA_FILE_PREFIX) else {
            continue;
        };
        let Some((resource, group)) = rest.split_once('.') else {
            return Err(ApigenError::SchemaFileName(format!("{name}.yaml")));
        };
        let gr = GroupResource::new(group, resource);
        let mut schema = read_object(&path)?;
        let api_version = member(&schema, "/apiVersion");
        let kind = member(&schema, "/kind");
        if (!api_version.is_empty() && api_version != API_VERSION_V1ALPHA1)
            || (!kind.is_empty() && kind != SCHEMA_KIND)
        {
            return Err(ApigenError::Decode {
                path,
                message: format!(
                    "decoded APIResourceSchema {gr} into incorrect kind {kind:?} of {api_version:?}"
                ),
            });
        }
        // Written again as it was read, complete.
        if let Some(fields) = schema.as_object_mut() {
            fields.insert("apiVersion".into(), json!(API_VERSION_V1ALPHA1));
            fields.insert("kind".into(), json!(SCHEMA_KIND));
        }
        writeln!(
            log,
            "Loaded APIResourceSchema for {gr} from {}",
            path.display()
        )?;
        schemas.insert(gr, schema);
    }
    Ok(schemas)
}

fn member<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Whether two schemas say the same: their specs as data (key order, and `null` against absent,
/// do not count), as kcp compares the decoded specs.
fn same_spec(a: &Value, b: &Value) -> bool {
    use kcp_api_types::apis::conversion::without_nulls;
    without_nulls(&a["spec"]) == without_nulls(&b["spec"])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests may panic on unexpected input
mod tests {
    use super::*;

    const COWBOYS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: cowboys.wildwest.dev
spec:
  group: wildwest.dev
  names: {kind: Cowboy, listKind: CowboyList, plural: cowboys, singular: cowboy}
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
              intent: {type: string}
"#;

    struct Dirs {
        _root: tempfile::TempDir,
        input: PathBuf,
        output: PathBuf,
    }

    fn dirs() -> Dirs {
        let root = tempfile::tempdir().unwrap();
        let input = root.path().join("crds");
        let output = root.path().join("out");
        std::fs::create_dir_all(&input).unwrap();
        Dirs {
            input,
            output,
            _root: root,
        }
    }

    fn settings(d: &Dirs) -> Settings {
        Settings {
            input_dir: d.input.clone(),
            output_dir: d.output.clone(),
            ignored: Vec::new(),
            preserve_resources: false,
            header: String::new(),
        }
    }

    fn read(path: &Path) -> Value {
        read_object(path).unwrap()
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn writes_schemas_and_one_export_per_group() {
        let d = dirs();
        std::fs::write(d.input.join("wildwest.dev_cowboys.yaml"), COWBOYS).unwrap();
        std::fs::write(
            d.input.join("wildwest.dev_sheriffs.yaml"),
            COWBOYS
                .replace("cowboy", "sheriff")
                .replace("Cowboy", "Sheriff"),
        )
        .unwrap();
        std::fs::write(
            d.input.join("rbac.authorization.k8s.io_roles.yaml"),
            "not: read\n",
        )
        .unwrap();
        std::fs::write(d.input.join("notes.txt"), "not yaml").unwrap();
        let mut log = Vec::new();
        run(&settings(&d), "v260807-abc1234", &mut log).unwrap();
        assert_eq!(
            listing(&d.output),
            [
                "apiexport-wildwest.dev.yaml",
                "apiresourceschema-cowboys.wildwest.dev.yaml",
                "apiresourceschema-sheriffs.wildwest.dev.yaml",
            ]
        );
        let schema = read(&d.output.join("apiresourceschema-cowboys.wildwest.dev.yaml"));
        assert_eq!(schema["kind"], "APIResourceSchema");
        assert_eq!(
            schema["metadata"]["name"],
            "v260807-abc1234.cowboys.wildwest.dev"
        );
        let export = read(&d.output.join("apiexport-wildwest.dev.yaml"));
        assert_eq!(export["apiVersion"], "apis.kcp.io/v1alpha2");
        assert_eq!(export["metadata"]["name"], "wildwest.dev");
        assert_eq!(
            export["spec"]["resources"],
            json!([
                {"name": "cowboys", "group": "wildwest.dev",
                 "schema": "v260807-abc1234.cowboys.wildwest.dev", "storage": {"crd": {}}},
                {"name": "sheriffs", "group": "wildwest.dev",
                 "schema": "v260807-abc1234.sheriffs.wildwest.dev", "storage": {"crd": {}}},
            ])
        );
        let log = String::from_utf8(log).unwrap();
        assert!(
            log.contains("Skipping CustomResourceDefinition roles.rbac.authorization.k8s.io"),
            "{log}"
        );
    }

    #[test]
    fn unchanged_schemas_keep_their_names() {
        let d = dirs();
        let crd = d.input.join("wildwest.dev_cowboys.yaml");
        std::fs::write(&crd, COWBOYS).unwrap();
        run(&settings(&d), "v260801-aaaaaaa", &mut Vec::new()).unwrap();
        let schema_file = d.output.join("apiresourceschema-cowboys.wildwest.dev.yaml");
        let export_file = d.output.join("apiexport-wildwest.dev.yaml");

        // Same CRD, written differently: the schema and the export stay.
        std::fs::write(
            &crd,
            COWBOYS.replace(
                "intent: {type: string}",
                "intent:\n                type: string",
            ),
        )
        .unwrap();
        run(&settings(&d), "v260802-bbbbbbb", &mut Vec::new()).unwrap();
        assert_eq!(
            read(&schema_file)["metadata"]["name"],
            "v260801-aaaaaaa.cowboys.wildwest.dev"
        );
        assert_eq!(
            read(&export_file)["spec"]["resources"][0]["schema"],
            "v260801-aaaaaaa.cowboys.wildwest.dev"
        );

        // A changed CRD gets the new prefix.
        std::fs::write(
            &crd,
            COWBOYS.replace(
                "intent: {type: string}",
                "intent: {type: string}\n              mood: {type: string}",
            ),
        )
        .unwrap();
        run(&settings(&d), "v260803-ccccccc", &mut Vec::new()).unwrap();
        assert_eq!(
            read(&schema_file)["metadata"]["name"],
            "v260803-ccccccc.cowboys.wildwest.dev"
        );
        assert_eq!(
            read(&export_file)["spec"]["resources"][0]["schema"],
            "v260803-ccccccc.cowboys.wildwest.dev"
        );
    }

    #[test]
    fn exports_keep_their_fields_and_stale_files_go() {
        let d = dirs();
        std::fs::write(d.input.join("wildwest.dev_cowboys.yaml"), COWBOYS).unwrap();
        std::fs::create_dir_all(&d.output).unwrap();
        std::fs::write(
            d.output.join("apiexport-wildwest.dev.yaml"),
            "apiVersion: apis.kcp.io/v1alpha2\nkind: APIExport\nmetadata:\n  name: wildwest.dev\nspec:\n  permissionClaims:\n  - {resource: configmaps, verbs: [get]}\n  resources:\n  - {name: horses, group: wildwest.dev, schema: old.horses.wildwest.dev, storage: {crd: {}}}\n",
        )
        .unwrap();
        std::fs::write(
            d.output.join("apiexport-gone.example.io.yaml"),
            "kind: APIExport\n",
        )
        .unwrap();
        std::fs::write(
            d.output.join("apiresourceschema-horses.wildwest.dev.yaml"),
            "apiVersion: apis.kcp.io/v1alpha1\nkind: APIResourceSchema\nmetadata: {name: old.horses.wildwest.dev}\nspec: {}\n",
        )
        .unwrap();
        std::fs::write(d.output.join("kustomization.yaml"), "resources: []\n").unwrap();

        let mut keep = settings(&d);
        keep.preserve_resources = true;
        run(&keep, "p", &mut Vec::new()).unwrap();
        let export = read(&d.output.join("apiexport-wildwest.dev.yaml"));
        assert_eq!(
            export["spec"]["permissionClaims"][0]["resource"],
            "configmaps"
        );
        let names: Vec<&str> = export["spec"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["horses", "cowboys"]);
        assert_eq!(
            listing(&d.output),
            [
                "apiexport-wildwest.dev.yaml",
                "apiresourceschema-cowboys.wildwest.dev.yaml",
                "kustomization.yaml",
            ]
        );

        run(&settings(&d), "p", &mut Vec::new()).unwrap();
        let export = read(&d.output.join("apiexport-wildwest.dev.yaml"));
        assert_eq!(
            export["spec"]["permissionClaims"][0]["resource"],
            "configmaps"
        );
        assert_eq!(export["spec"]["resources"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn header_and_refusals() {
        let d = dirs();
        std::fs::write(d.input.join("wildwest.dev_cowboys.yaml"), COWBOYS).unwrap();
        let mut with_header = settings(&d);
        with_header.header = "# Copyright 2026 The Authors.\n".into();
        run(&with_header, "p", &mut Vec::new()).unwrap();
        let text = std::fs::read_to_string(d.output.join("apiexport-wildwest.dev.yaml")).unwrap();
        assert!(
            text.starts_with("# Copyright 2026 The Authors.\n\n"),
            "{text}"
        );
        assert_eq!(
            read(&d.output.join("apiexport-wildwest.dev.yaml"))["kind"],
            "APIExport"
        );

        std::fs::write(d.input.join("cowboys.yaml"), COWBOYS).unwrap();
        let err = run(&settings(&d), "p", &mut Vec::new()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "could not parse filename cowboys.yaml as group_resource.yaml"
        );
        std::fs::remove_file(d.input.join("cowboys.yaml")).unwrap();

        std::fs::write(d.input.join("example.io_widgets.yaml"), "kind: ConfigMap\n").unwrap();
        let err = run(&settings(&d), "p", &mut Vec::new()).unwrap_err();
        assert!(matches!(err, ApigenError::Convert { .. }), "{err}");
    }
}
