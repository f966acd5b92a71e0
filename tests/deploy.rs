//! The manifests in deploy/: each parses into its k8s-openapi type with no field
//! lost on a round trip, `kubectl kustomize deploy/` renders them, the RBAC
//! rules are exactly what the controllers use, and the Deployment runs rekon
//! the way the issue asks (probes, leader election, a locked-down container).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// Every YAML document of the manifests, with the file it came from.
fn manifests() -> Vec<(String, Value)> {
    let mut docs = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(deploy_dir())
        .expect("deploy/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml") && !p.ends_with("kustomization.yaml")
        })
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value: Value = serde::Deserialize::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: not YAML: {e}", file.display()));
            docs.push((
                file.file_name().unwrap().to_string_lossy().into_owned(),
                value,
            ));
        }
    }
    docs
}

/// Parses `doc` as `T` and checks that serializing it back gives the same
/// document: a misspelt or misplaced field would be dropped and show up here.
fn round_trip<T: DeserializeOwned + Serialize>(file: &str, doc: &Value) -> T {
    let typed: T = serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        &back, doc,
        "{file}: fields were lost or changed in the round trip"
    );
    typed
}

fn check_kind(file: &str, doc: &Value) {
    match doc["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("{file}: no kind"))
    {
        "Namespace" => drop(round_trip::<Namespace>(file, doc)),
        "ServiceAccount" => drop(round_trip::<ServiceAccount>(file, doc)),
        "ClusterRole" => drop(round_trip::<ClusterRole>(file, doc)),
        "ClusterRoleBinding" => drop(round_trip::<ClusterRoleBinding>(file, doc)),
        "Role" => drop(round_trip::<Role>(file, doc)),
        "RoleBinding" => drop(round_trip::<RoleBinding>(file, doc)),
        "ConfigMap" => drop(round_trip::<ConfigMap>(file, doc)),
        "Deployment" => drop(round_trip::<Deployment>(file, doc)),
        "Service" => drop(round_trip::<Service>(file, doc)),
        // Generated from the Rust types (checked in rekon-modules); k8s-openapi
        // reads `minimum: 0` as a float, so only parsing is checked here.
        "CustomResourceDefinition" => drop(
            serde_json::from_value::<CustomResourceDefinition>(doc.clone())
                .unwrap_or_else(|e| panic!("{file}: {e}")),
        ),
        other => panic!("{file}: unexpected kind {other}"),
    }
}

fn find<T: DeserializeOwned>(kind: &str) -> T {
    let (file, doc) = manifests()
        .into_iter()
        .find(|(_, d)| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in deploy/"));
    serde_json::from_value(doc).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn every_manifest_parses_into_its_kubernetes_type_without_losing_fields() {
    let docs = manifests();
    let kinds: BTreeSet<&str> = docs
        .iter()
        .map(|(_, d)| d["kind"].as_str().unwrap())
        .collect();
    let expected = [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "CustomResourceDefinition",
        "Deployment",
        "Namespace",
        "Role",
        "RoleBinding",
        "Service",
        "ServiceAccount",
    ];
    assert_eq!(kinds, expected.into_iter().collect());
    for (file, doc) in &docs {
        check_kind(file, doc);
    }
}

#[test]
fn kubectl_kustomize_renders_every_manifest_into_the_namespace() {
    let output = Command::new("kubectl")
        .arg("kustomize")
        .arg(deploy_dir())
        .output()
        .expect("kubectl is installed");
    assert!(
        output.status.success(),
        "kubectl kustomize: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let rendered: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    assert_eq!(
        rendered.len(),
        manifests().len(),
        "kustomization.yaml lists every manifest"
    );
    for doc in &rendered {
        let kind = doc["kind"].as_str().unwrap();
        check_kind("kustomize output", doc);
        let cluster_scoped = [
            "Namespace",
            "ClusterRole",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
        ]
        .contains(&kind);
        if !cluster_scoped {
            assert_eq!(
                doc["metadata"]["namespace"], "rekon-system",
                "{kind} outside rekon-system"
            );
        }
        assert_eq!(
            doc["metadata"]["labels"]["app.kubernetes.io/part-of"], "rekon",
            "{kind}"
        );
    }
    let deployment = rendered.iter().find(|d| d["kind"] == "Deployment").unwrap();
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["image"],
        "rekon:dev"
    );
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |items: &[&str]| Some(items.iter().map(|s| s.to_string()).collect());
    PolicyRule {
        api_groups: strings(groups),
        resources: strings(resources),
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        ..PolicyRule::default()
    }
}

#[test]
fn the_cluster_role_grants_exactly_what_the_controllers_use() {
    let role: ClusterRole = find("ClusterRole");
    let expected = vec![
        rule(&[""], &["pods"], &["get", "list", "watch"]),
        rule(&[""], &["pods/status"], &["patch"]),
        rule(&[""], &["pods/finalizers"], &["update"]),
        rule(
            &[""],
            &["persistentvolumeclaims"],
            &["get", "list", "watch", "create", "patch"],
        ),
        rule(
            &["resource.k8s.io"],
            &["resourceclaims"],
            &["get", "list", "watch", "create", "patch", "delete"],
        ),
        rule(&["resource.k8s.io"], &["resourceclaims/status"], &["patch"]),
        rule(
            &["resource.k8s.io"],
            &["resourceclaimtemplates"],
            &["get", "list", "watch"],
        ),
        rule(&["events.k8s.io"], &["events"], &["create", "patch"]),
        rule(
            &["rekon.dev"],
            &["decisionmodules"],
            &["get", "list", "watch", "patch"],
        ),
        rule(
            &["rekon.dev"],
            &["decisionmodules/status"],
            &["update", "patch"],
        ),
        rule(&[""], &["configmaps"], &["get"]),
    ];
    assert_eq!(role.rules.unwrap(), expected);

    let binding: ClusterRoleBinding = find("ClusterRoleBinding");
    assert_eq!(binding.role_ref.name, "rekon");
    let subject = &binding.subjects.unwrap()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str()),
        ("ServiceAccount", "rekon")
    );
    assert_eq!(subject.namespace.as_deref(), Some("rekon-system"));
}

#[test]
fn leader_election_may_only_touch_leases_in_its_namespace() {
    let role: Role = find("Role");
    assert_eq!(role.metadata.namespace.as_deref(), Some("rekon-system"));
    assert_eq!(
        role.rules.unwrap(),
        vec![rule(
            &["coordination.k8s.io"],
            &["leases"],
            &["get", "create", "update"]
        )]
    );
    let binding: RoleBinding = find("RoleBinding");
    assert_eq!(binding.role_ref.name, role.metadata.name.unwrap());
    assert_eq!(binding.subjects.unwrap()[0].name, "rekon");
}

#[test]
fn the_deployment_runs_two_locked_down_replicas_with_probes_and_leader_election() {
    let deployment: Deployment = find("Deployment");
    let spec = deployment.spec.unwrap();
    assert_eq!(spec.replicas, Some(2));
    let pod = spec.template.spec.unwrap();
    assert_eq!(pod.service_account_name.as_deref(), Some("rekon"));
    let pod_security = pod.security_context.unwrap();
    assert_eq!(pod_security.run_as_non_root, Some(true));
    assert_eq!(
        pod_security.seccomp_profile.unwrap().type_,
        "RuntimeDefault"
    );

    let container = &pod.containers[0];
    let security = container.security_context.clone().unwrap();
    assert_eq!(security.read_only_root_filesystem, Some(true));
    assert_eq!(security.allow_privilege_escalation, Some(false));
    assert_eq!(
        security.capabilities.unwrap().drop,
        Some(vec!["ALL".to_string()])
    );
    let resources = container.resources.clone().unwrap();
    for key in ["cpu", "memory"] {
        assert!(
            resources.requests.as_ref().unwrap().contains_key(key),
            "request {key}"
        );
    }
    assert!(resources.limits.as_ref().unwrap().contains_key("memory"));

    let probe_path = |probe: &Option<k8s_openapi::api::core::v1::Probe>| {
        probe
            .as_ref()
            .unwrap()
            .http_get
            .as_ref()
            .unwrap()
            .path
            .clone()
            .unwrap()
    };
    assert_eq!(probe_path(&container.liveness_probe), "/healthz");
    assert_eq!(probe_path(&container.readiness_probe), "/readyz");

    let args = container.args.clone().unwrap();
    for wanted in [
        "--leader-elect",
        "--guests=/etc/rekon/guests",
        "--lease-namespace=$(POD_NAMESPACE)",
    ] {
        assert!(
            args.iter().any(|a| a == wanted),
            "missing {wanted} in {args:?}"
        );
    }
    let env: BTreeSet<String> = container
        .env
        .clone()
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(
        env.contains("POD_NAME") && env.contains("POD_NAMESPACE"),
        "{env:?}"
    );
    let mount = container.volume_mounts.clone().unwrap();
    assert!(
        mount
            .iter()
            .any(|m| m.mount_path == "/etc/rekon/guests" && m.read_only == Some(true))
    );
    let guests_volume = pod
        .volumes
        .unwrap()
        .into_iter()
        .find(|v| v.name == "guests")
        .unwrap();
    assert_eq!(guests_volume.config_map.unwrap().name, "rekon-guests");

    // Shutdown must fit in the kubelet's grace period.
    let grace: i64 = args
        .iter()
        .find_map(|a| a.strip_prefix("--shutdown-grace-seconds="))
        .expect("--shutdown-grace-seconds")
        .parse()
        .unwrap();
    assert!(grace < pod.termination_grace_period_seconds.unwrap());
}

/// Every `--flag` the Deployment passes exists on `rekon run` (its own
/// arguments and the groups it flattens in).
#[test]
fn the_deployment_only_passes_flags_rekon_run_has() {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/cli/src");
    let run: String = [
        "cmd/run.rs",
        "decision_modules.rs",
        "guests.rs",
        "module_cache.rs",
    ]
    .iter()
    .map(|file| std::fs::read_to_string(cli.join(file)).unwrap())
    .collect();
    let deployment: Deployment = find("Deployment");
    let container = &deployment.spec.unwrap().template.spec.unwrap().containers[0];
    let args = container.args.clone().unwrap();
    assert_eq!(args[0], "run");
    for arg in &args[1..] {
        let flag = arg.trim_start_matches("--").split('=').next().unwrap();
        let field = flag.replace('-', "_");
        let declared =
            run.contains(&format!("    {field}: ")) || run.contains(&format!("    pub {field}: "));
        assert!(declared, "rekon run has no --{flag}");
    }
}

#[test]
fn the_guests_config_map_holds_guests_yaml_and_every_worlds_module() {
    let config_map: ConfigMap = find("ConfigMap");
    assert_eq!(config_map.metadata.name.as_deref(), Some("rekon-guests"));
    let guests_yaml = &config_map.data.unwrap()["guests.yaml"];
    let parsed: serde_yaml::Value = serde_yaml::from_str(guests_yaml).unwrap();
    for world in rekon_runtime::World::dedicated() {
        let (controller, module) = (world.name(), &format!("{}.wasm", world.name()));
        assert_eq!(parsed[controller]["module"].as_str(), Some(module.as_str()));
        assert!(
            parsed[controller]["sha256"]
                .as_str()
                .is_some_and(|d| d.len() == 64)
        );
        assert!(
            config_map
                .binary_data
                .as_ref()
                .unwrap()
                .contains_key(module),
            "binaryData {module}"
        );
    }
}

#[test]
fn module_secrets_are_readable_only_by_name_in_rekon_system() {
    let role: Role = manifests()
        .into_iter()
        .find(|(file, _)| file == "role-module-secrets.yaml")
        .map(|(file, doc)| serde_json::from_value(doc).unwrap_or_else(|e| panic!("{file}: {e}")))
        .expect("deploy/role-module-secrets.yaml");
    let rules = role.rules.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0].resources.as_deref(),
        Some(&["secrets".to_string()][..])
    );
    assert_eq!(rules[0].verbs, ["get"]);
    assert!(
        rules[0]
            .resource_names
            .as_ref()
            .is_some_and(|n| !n.is_empty()),
        "named Secrets only"
    );
}

/// The book's operator chapters and the README, with the path they came from.
fn operator_docs() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    [
        "README.md",
        "docs/src/operating.md",
        "docs/src/quickstart.md",
        "docs/src/delivery/local.md",
        "docs/src/delivery/decision-modules.md",
        "deploy/kustomization.yaml",
        "deploy/guests-configmap.yaml",
        "deploy/make-guests-configmap.sh",
    ]
    .into_iter()
    .map(|path| {
        let text =
            std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        (path.to_string(), text)
    })
    .collect()
}

/// The generated guests ConfigMap is larger than client-side apply's
/// `last-applied-configuration` annotation (256 KiB): every apply of deploy/
/// or of a guests ConfigMap the docs show is server-side.
#[test]
fn every_apply_of_the_base_or_a_guests_config_map_is_server_side() {
    let mut problems = Vec::new();
    for (path, text) in operator_docs() {
        for (n, line) in text.lines().enumerate() {
            let applies_base = line.contains("kubectl apply")
                && (line.contains("-k deploy")
                    || line.contains("guests-configmap")
                    || line.contains("| kubectl apply"));
            if applies_base && !line.contains("--server-side") {
                problems.push(format!("{path}:{}: {line}", n + 1));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "client-side applies:\n{}",
        problems.join("\n")
    );
}

/// Values the operating chapter states are the Deployment's: the shutdown
/// grace, the termination grace period, and every object of deploy/ in the
/// install table.
#[test]
fn the_operating_chapter_states_the_deployments_values() {
    let docs: std::collections::HashMap<String, String> = operator_docs().into_iter().collect();
    let operating = &docs["docs/src/operating.md"];
    let deployment: Deployment = find("Deployment");
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    let args = pod.containers[0].args.clone().unwrap();
    let grace = args
        .iter()
        .find(|a| a.starts_with("--shutdown-grace-seconds="))
        .unwrap();
    for (n, line) in operating.lines().enumerate() {
        if let Some(at) = line.find("--shutdown-grace-seconds=") {
            assert!(
                line[at..].starts_with(grace.as_str()),
                "operating.md:{}: states another shutdown grace than the Deployment's {grace}: {line}",
                n + 1
            );
        }
    }
    let period = format!(
        "terminationGracePeriodSeconds: {}",
        pod.termination_grace_period_seconds.unwrap()
    );
    assert!(
        operating.contains(&period),
        "operating.md must state `{period}`"
    );
    for (file, doc) in manifests() {
        let kind = doc["kind"].as_str().unwrap();
        let name = doc["metadata"]["name"].as_str().unwrap();
        let row = format!("`{kind} {name}`");
        let listed = operating.lines().any(|l| {
            l.starts_with("| ") && (l.contains(&row) || l.contains(&format!("`{kind} {name}`,")))
        });
        assert!(listed, "operating.md's install table lacks {row} ({file})");
    }
}

/// Pulled OCI modules go to the cache volume, not to the small /tmp.
#[test]
fn the_oci_cache_lives_on_the_cache_volume() {
    let deployment: Deployment = find("Deployment");
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    let container = &pod.containers[0];
    let env = |name: &str| {
        container
            .env
            .iter()
            .flatten()
            .find(|e| e.name == name)
            .and_then(|e| e.value.clone())
            .unwrap_or_else(|| panic!("the Deployment sets no {name}"))
    };
    let cache_mount = container
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.name == "cache")
        .expect("a cache volume mount");
    for name in ["REKON_CACHE_DIR", "REKON_OCI_CACHE_DIR"] {
        assert!(
            env(name).starts_with(&cache_mount.mount_path),
            "{name} is not under the cache volume {}",
            cache_mount.mount_path
        );
    }
}
