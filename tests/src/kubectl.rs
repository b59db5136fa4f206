//! Kustomize, as `kubectl kustomize DIR` runs it, for the tests that check
//! the Kubernetes manifests (`deploy/kubernetes/`): it renders offline, so
//! no cluster is needed. The rendered YAML is read by PyYAML in the tests'
//! Python environment ([`crate::python`]) and handed over as JSON, so the
//! tests parse it once and check it with `serde_json`.
//!
//! `$SCOUT_KUBECTL`, else a `kubectl` on `PATH` that knows `kustomize`.
//! Without one a test is skipped (and says so), except with `CI=true`,
//! where it fails naming what to install.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A `kubectl` with the `kustomize` command, or `None` (the caller skips)
/// when there is none and `CI` is not `true`; on CI a missing one fails the
/// test.
pub fn binary() -> Option<PathBuf> {
    let candidates = std::env::var_os("SCOUT_KUBECTL")
        .map(PathBuf::from)
        .into_iter()
        .chain(std::env::var_os("PATH").into_iter().flat_map(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("kubectl"))
                .collect::<Vec<_>>()
        }));
    for candidate in candidates {
        if candidate.is_file() && knows_kustomize(&candidate) {
            return Some(candidate);
        }
    }
    let why = "no kubectl with `kustomize` (install kubectl 1.14 or later, e.g. Debian's \
               kubernetes-client, or set SCOUT_KUBECTL to one)";
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true, but {why}");
    }
    eprintln!("scout-tests: skipped a Kubernetes manifest test: {why}");
    None
}

fn knows_kustomize(kubectl: &Path) -> bool {
    Command::new(kubectl)
        .args(["kustomize", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `kubectl kustomize dir`: every object it renders, in its order (JSON
/// values of the YAML documents); panics with kubectl's or PyYAML's stderr
/// if either fails.
pub fn render(kubectl: &Path, dir: &Path) -> Vec<Value> {
    let out = Command::new(kubectl)
        .arg("kustomize")
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("run {} kustomize: {e}", kubectl.display()));
    assert!(
        out.status.success(),
        "kubectl kustomize {} failed ({}): {}",
        dir.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    yaml_documents(&out.stdout)
}

/// The documents of the YAML stream `yaml` (empty ones left out), read by
/// PyYAML's safe loader.
pub fn yaml_documents(yaml: &[u8]) -> Vec<Value> {
    use std::io::Write as _;
    const TO_JSON: &str = "import json, sys, yaml\n\
        json.dump([d for d in yaml.safe_load_all(sys.stdin) if d is not None], sys.stdout)";
    let mut child = Command::new(crate::python())
        .args(["-c", TO_JSON])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the tests' Python to read YAML");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let input = yaml.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("PyYAML's answer");
    writer
        .join()
        .expect("the YAML writer")
        .expect("YAML written to Python");
    assert!(
        out.status.success(),
        "PyYAML could not read the rendered YAML: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_slice(&out.stdout) {
        Ok(Value::Array(documents)) => documents,
        other => panic!("PyYAML's JSON is not a list of documents: {other:?}"),
    }
}
