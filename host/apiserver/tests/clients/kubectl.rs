//! The installed `kubectl` against the embedded server: create from YAML, get, patch, delete
//! with a finalizer, server-side apply, watch.

use std::process::Stdio;
use std::time::Duration;

use rekon_apiserver::{ServerConfig, resources};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::support::*;

const MANIFEST: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: c1
data:
  k: v
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: p1
  finalizers: [example.com/keep]
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
"#;

const LEASE: &str = r#"
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: l1
spec:
  holderIdentity: kubectl-test
  leaseDurationSeconds: 15
"#;

pub(crate) struct Kubectl {
    kubeconfig: tempfile::NamedTempFile,
    dir: tempfile::TempDir,
}

impl Kubectl {
    pub(crate) fn new(t: &TestServer) -> Self {
        let kubeconfig = tempfile::NamedTempFile::new().unwrap();
        t.server.write_kubeconfig(kubeconfig.path()).unwrap();
        Kubectl {
            kubeconfig,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig").arg(self.kubeconfig.path());
        // A private discovery cache per test.
        cmd.arg("--cache-dir").arg(self.dir.path());
        cmd.args(args);
        cmd.kill_on_drop(true);
        cmd
    }

    /// Runs kubectl; panics with its stderr unless it succeeds. Returns stdout.
    pub(crate) async fn run(&self, args: &[&str]) -> String {
        let out = tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .expect("kubectl finishes")
            .expect("kubectl runs");
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {stderr}\n{stdout}"
        );
        stdout
    }

    pub(crate) fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_create_get_patch_delete_apply_watch() {
    let t = start(ServerConfig::new()).await;
    let kubectl = Kubectl::new(&t);
    let store = t.server.store();

    let manifest = kubectl.write("manifest.yaml", MANIFEST);
    let out = kubectl.run(&["create", "-f", &manifest]).await;
    assert!(
        out.contains("configmap/c1 created") && out.contains("persistentvolumeclaim/p1 created"),
        "{out}"
    );

    let got: Value =
        serde_json::from_str(&kubectl.run(&["get", "configmap", "c1", "-o", "json"]).await)
            .unwrap();
    assert_eq!(
        (got["kind"].as_str(), got["data"]["k"].as_str()),
        (Some("ConfigMap"), Some("v"))
    );
    let listed = kubectl.run(&["get", "pvc", "-o", "name"]).await;
    assert_eq!(listed.trim(), "persistentvolumeclaim/p1");

    kubectl
        .run(&[
            "patch",
            "configmap",
            "c1",
            "--type",
            "merge",
            "-p",
            r#"{"data":{"k":"patched"}}"#,
        ])
        .await;
    let configmaps = resources::by_plural("", "configmaps").unwrap();
    assert_eq!(
        store.get(configmaps, "default", "c1").unwrap()["data"]["k"],
        "patched"
    );

    let out = kubectl.run(&["delete", "pvc", "p1", "--wait=false"]).await;
    assert!(out.contains("deleted"), "{out}");
    let pvc = store
        .get(resources::persistent_volume_claims(), "default", "p1")
        .expect("the finalizer keeps the PVC");
    assert!(pvc["metadata"]["deletionTimestamp"].is_string());

    let lease = kubectl.write("lease.yaml", LEASE);
    kubectl.run(&["apply", "--server-side", "-f", &lease]).await;
    let leases = resources::by_plural("coordination.k8s.io", "leases").unwrap();
    let stored = store.get(leases, "default", "l1").unwrap();
    assert_eq!(stored["spec"]["holderIdentity"], "kubectl-test");
    assert_eq!(stored["metadata"]["managedFields"][0]["manager"], "kubectl");
    assert_eq!(stored["metadata"]["managedFields"][0]["operation"], "Apply");

    // Watch: kubectl prints the current object, then the change we make.
    let mut watch = kubectl
        .command(&[
            "get",
            "configmaps",
            "--watch",
            "-o",
            "name",
            "--request-timeout=20s",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.as_deref(), Some("configmap/c1"));
    let second_manifest = kubectl.write(
        "c2.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c2\n",
    );
    kubectl.run(&["create", "-f", &second_manifest]).await;
    let second = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.as_deref(), Some("configmap/c2"));
    watch.kill().await.unwrap();

    // Plain `kubectl get` (which asks for a Table first) also works.
    let table = kubectl.run(&["get", "configmaps"]).await;
    assert!(table.contains("c1") && table.contains("c2"), "{table}");

    // Client-side apply: create, then a strategic merge patch with kubectl's directives.
    let c3 = kubectl.write(
        "c3.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c3\ndata:\n  a: \"1\"\n  b: \"2\"\n",
    );
    kubectl.run(&["apply", "-f", &c3]).await;
    let c3 = kubectl.write(
        "c3.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c3\ndata:\n  a: \"3\"\n",
    );
    kubectl.run(&["apply", "-f", &c3]).await;
    let applied = store.get(configmaps, "default", "c3").unwrap();
    assert_eq!(
        applied["data"],
        serde_json::json!({"a": "3"}),
        "b was removed by the three-way merge"
    );

    // `kubectl wait` and a waiting `kubectl delete` (both watch with a field selector).
    kubectl
        .run(&[
            "wait",
            "--for=jsonpath={.data.k}=patched",
            "configmap/c1",
            "--timeout=10s",
        ])
        .await;
    kubectl
        .run(&["delete", "configmap", "c2", "--timeout=10s"])
        .await;
    assert!(store.get(configmaps, "default", "c2").is_err());
    let waited = kubectl
        .command(&["wait", "--for=delete", "pvc/p1", "--timeout=1s"])
        .output()
        .await
        .unwrap();
    assert!(!waited.status.success(), "the PVC is held by its finalizer");
}

/// kubectl's typed generators send protobuf bodies; the server decodes them and answers JSON.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_typed_generators_send_protobuf() {
    let t = start(ServerConfig::new()).await;
    let kubectl = Kubectl::new(&t);
    let store = t.server.store();
    let configmaps = resources::by_plural("", "configmaps").unwrap();

    let out = kubectl.run(&["create", "namespace", "x"]).await;
    assert!(out.contains("namespace/x created"), "{out}");
    let out = kubectl
        .run(&[
            "create",
            "configmap",
            "c",
            "-n",
            "x",
            "--from-literal=a=b",
            "--from-literal=empty=",
        ])
        .await;
    assert!(out.contains("configmap/c created"), "{out}");
    // Bytes that are not UTF-8 go to binaryData.
    let blob = kubectl.dir.path().join("blob");
    std::fs::write(&blob, [0xff, 0x00, 0x01]).unwrap();
    let from_file = format!("--from-file=blob={}", blob.display());
    kubectl
        .run(&["create", "configmap", "bin", "-n", "x", &from_file])
        .await;
    let stored = store.get(configmaps, "x", "bin").unwrap();
    assert_eq!(stored["binaryData"], serde_json::json!({"blob": "/wAB"}));

    let ns: Value =
        serde_json::from_str(&kubectl.run(&["get", "namespace", "x", "-o", "json"]).await).unwrap();
    assert_eq!(ns["status"]["phase"], "Active");
    assert!(!ns["metadata"]["uid"].as_str().unwrap_or("").is_empty());
    let cm: Value = serde_json::from_str(
        &kubectl
            .run(&["get", "configmap", "c", "-n", "x", "-o", "json"])
            .await,
    )
    .unwrap();
    assert_eq!(cm["data"], serde_json::json!({"a": "b", "empty": ""}));
    assert_eq!(
        store.get(resources::namespaces(), "", "x").unwrap()["metadata"]["name"],
        "x"
    );
}

const DECISION_MODULE: &str = r#"
apiVersion: rekon.dev/v1alpha1
kind: DecisionModule
metadata:
  name: pvc-protection
spec:
  world: pvc-protection
  module: {image: "registry.test/pvc@sha256:00"}
"#;

/// `kubectl apply -f` of a CRD, then `kubectl get <plural>` prints its printer columns from
/// the server's Table; an invalid object is refused with the schema's message.
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_applies_a_crd_and_gets_its_printer_columns() {
    let t = start(ServerConfig::new()).await;
    let kubectl = Kubectl::new(&t);
    let crd = kubectl.write("crd.yaml", crate::custom_resources::DECISION_MODULE_CRD);
    let out = kubectl.run(&["apply", "-f", &crd]).await;
    assert!(
        out.contains(
            "customresourcedefinition.apiextensions.k8s.io/decisionmodules.rekon.dev created"
        ),
        "{out}"
    );
    kubectl
        .run(&[
            "wait",
            "--for=condition=established",
            "crd/decisionmodules.rekon.dev",
            "--timeout=10s",
        ])
        .await;

    let module = kubectl.write("dm.yaml", DECISION_MODULE);
    let out = kubectl.run(&["apply", "-f", &module]).await;
    assert!(
        out.contains("decisionmodule.rekon.dev/pvc-protection created"),
        "{out}"
    );
    kubectl
        .run(&[
            "patch", "decisionmodule", "pvc-protection", "--subresource=status", "--type=merge", "-p",
            r#"{"status":{"phase":"Shadowing","active":{"digest":"sha256:1234"},"shadow":{"agreed":7,"differed":1}}}"#,
        ])
        .await;

    let table = kubectl.run(&["get", "decisionmodules"]).await;
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        vec![
            "NAME", "WORLD", "PHASE", "DIGEST", "AGREED", "DIFFERED", "AGE"
        ],
        "{table}"
    );
    assert_eq!(
        lines[1][..6],
        [
            "pvc-protection",
            "pvc-protection",
            "Shadowing",
            "sha256:1234",
            "7",
            "1"
        ],
        "{table}"
    );
    assert!(lines[1][6].ends_with('s'), "an age in seconds: {table}");
    // The short name from the CRD works too.
    assert!(
        kubectl
            .run(&["get", "dm", "-o", "name"])
            .await
            .contains("decisionmodule.rekon.dev/pvc-protection")
    );

    let bad = kubectl.write(
        "bad.yaml",
        "apiVersion: rekon.dev/v1alpha1\nkind: DecisionModule\nmetadata:\n  name: bad\nspec:\n  world: w\n  module: {}\n  mode: fast\n",
    );
    let refused = kubectl
        .command(&["apply", "-f", &bad])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains(r#"spec.mode: Unsupported value: "fast": supported values: "active", "shadow", "rollback""#),
        "{stderr}"
    );
}

/// What `kubectl get -o yaml` prints (a `kind: List`) applies back: kubectl validates a List
/// against `/openapi/v2` first (issue 18.6).
#[tokio::test(flavor = "multi_thread")]
async fn kubectl_applies_a_list_as_get_prints_it() {
    let t = start(ServerConfig::new()).await;
    let kubectl = Kubectl::new(&t);
    let store = t.server.store();
    let manifest = kubectl.write("manifest.yaml", MANIFEST);
    kubectl.run(&["create", "-f", &manifest]).await;
    let crd = kubectl.write("crd.yaml", crate::custom_resources::DECISION_MODULE_CRD);
    kubectl.run(&["apply", "-f", &crd]).await;
    kubectl
        .run(&[
            "wait",
            "--for=condition=established",
            "crd/decisionmodules.rekon.dev",
            "--timeout=10s",
        ])
        .await;
    let module = kubectl.write("dm.yaml", DECISION_MODULE);
    kubectl.run(&["apply", "-f", &module]).await;

    let printed = kubectl
        .run(&["get", "configmaps,decisionmodules", "-o", "yaml"])
        .await;
    assert!(printed.contains("kind: List"), "{printed}");
    let edited = printed
        .replace("k: v", "k: from-list")
        .replace("world: pvc-protection", "world: edited");
    let list = kubectl.write("list.yaml", &edited);
    let out = kubectl.run(&["apply", "-f", &list]).await;
    assert!(out.contains("configmap/c1 configured"), "{out}");
    assert!(
        out.contains("decisionmodule.rekon.dev/pvc-protection configured"),
        "{out}"
    );
    let configmaps = resources::by_plural("", "configmaps").unwrap();
    assert_eq!(
        store.get(configmaps, "default", "c1").unwrap()["data"]["k"],
        "from-list"
    );
    let modules: Value = serde_json::from_str(
        &kubectl
            .run(&["get", "decisionmodule", "pvc-protection", "-o", "json"])
            .await,
    )
    .unwrap();
    assert_eq!(modules["spec"]["world"], "edited");
}
