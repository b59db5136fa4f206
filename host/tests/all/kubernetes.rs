//! The Kubernetes manifests (`deploy/kubernetes/`), as `kubectl kustomize`
//! renders each overlay (offline: no cluster is needed), read as YAML and
//! checked for what a fleet depends on, then the rendered configuration
//! run for real.
//!
//! - Every overlay: the probes ask the real paths (`/livez`, `/readyz`) on
//!   the port the ConfigMap's `probe_listen` binds; the Service reaches the
//!   port `listen` binds; the grace period outlasts the preStop pause plus
//!   `shutdown_grace_secs`; the pod runs as 65532 on a read-only root with
//!   no capability and RuntimeDefault seccomp, writing only to emptyDirs;
//!   the Secret holds exactly the variables the configuration names, and
//!   `serve` refuses the base's placeholders; a PodDisruptionBudget and a
//!   NetworkPolicy select the pods; egress goes only where the overlay
//!   names (DNS, PostgreSQL, and in production the registry and origins),
//!   every rule with its ports.
//! - The base and production Services have no session affinity (stateless
//!   clients need none); `sticky` has ClientIP, a headless Service, and an
//!   HAProxy configuration with the lines `fleet_clients` tests.
//! - The rendered `scout.toml` runs three `serve` processes on one
//!   PostgreSQL, each given what a pod gets (its environment from the
//!   Deployment, its emptyDirs); all three become ready on their probe
//!   listeners, answer only to the Service's names, and serve one session
//!   opened on the first: calls on the other two are recorded by each, and
//!   every host shows the session and what the calls left. A host stopped
//!   as Kubernetes stops it (SIGTERM) gives its lease back and exits 0 while
//!   the others serve on.

use super::common::{self, EVENTUALLY};
use super::crash_safety::{ADMIN_TOKEN, Admin, wait_for};
use reqwest::Method;
use scout_host::serve::ServeConfig;
use scout_host::store::TraceState;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The overlays an operator applies, and the base they build on.
const OVERLAYS: [&str; 3] = ["base", "overlays/production", "overlays/sticky"];

fn manifests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes")
}

/// One rendered overlay.
struct Rendered {
    name: &'static str,
    objects: Vec<Value>,
}

impl Rendered {
    fn render(kubectl: &Path, name: &'static str) -> Rendered {
        Rendered {
            name,
            objects: scout_tests::kubectl::render(kubectl, &manifests().join(name)),
        }
    }

    /// Every object of `kind`.
    fn all(&self, kind: &str) -> Vec<&Value> {
        self.objects.iter().filter(|o| o["kind"] == kind).collect()
    }

    /// The one object of `kind` named `name`, or a panic naming the overlay.
    fn named(&self, kind: &str, name: &str) -> &Value {
        let found: Vec<_> = self
            .all(kind)
            .into_iter()
            .filter(|o| o["metadata"]["name"] == name)
            .collect();
        assert_eq!(found.len(), 1, "{}: one {kind} {name}", self.name);
        found[0]
    }

    /// The one object of `kind`.
    fn one(&self, kind: &str) -> &Value {
        let found = self.all(kind);
        assert_eq!(found.len(), 1, "{}: one {kind}: {found:?}", self.name);
        found[0]
    }

    fn deployment(&self) -> &Value {
        self.one("Deployment")
    }

    fn container(&self) -> &Value {
        let containers = self.deployment()["spec"]["template"]["spec"]["containers"]
            .as_array()
            .expect("containers");
        assert_eq!(containers.len(), 1, "{}: one container", self.name);
        &containers[0]
    }

    /// The ConfigMap the Deployment mounts, and the `scout.toml` in it, as
    /// `serve` reads it.
    fn config(&self) -> (String, ServeConfig) {
        let volume = self.volume("config");
        let name = volume["configMap"]["name"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: the config volume is a ConfigMap", self.name));
        let text = self.named("ConfigMap", name)["data"]["scout.toml"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: {name} holds scout.toml", self.name))
            .to_string();
        let config = ServeConfig::parse(&text)
            .unwrap_or_else(|e| panic!("{}: scout.toml does not parse: {e}", self.name));
        (text, config)
    }

    /// The pod's volume `name`.
    fn volume(&self, name: &str) -> &Value {
        self.deployment()["spec"]["template"]["spec"]["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("{}: a volume {name}", self.name))
    }

    /// The container port a probe or Service names (by name or number).
    fn container_port(&self, port: &Value) -> u16 {
        let number = match port {
            Value::String(name) => self.container()["ports"]
                .as_array()
                .expect("ports")
                .iter()
                .find(|p| p["name"] == name.as_str())
                .unwrap_or_else(|| panic!("{}: a container port named {name}", self.name))
                ["containerPort"]
                .as_u64(),
            number => number.as_u64(),
        };
        number
            .and_then(|n| u16::try_from(n).ok())
            .unwrap_or_else(|| panic!("{}: a port: {port}", self.name))
    }

    /// The pod template's labels.
    fn pod_labels(&self) -> &Value {
        &self.deployment()["spec"]["template"]["metadata"]["labels"]
    }
}

/// Whether the `matchLabels`-style `selector` selects a pod labelled `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    let Some(wanted) = selector.as_object() else {
        return false;
    };
    !wanted.is_empty() && wanted.iter().all(|(k, v)| labels[k] == *v)
}

fn kubectl_or_skip() -> Option<PathBuf> {
    scout_tests::kubectl::binary()
}

#[test]
fn every_overlay_renders_a_fleet_the_host_can_run() {
    let Some(kubectl) = kubectl_or_skip() else {
        return;
    };
    for overlay in OVERLAYS {
        let rendered = Rendered::render(&kubectl, overlay);
        check_fleet(&rendered);
    }
}

/// What every overlay must get right.
fn check_fleet(r: &Rendered) {
    let name = r.name;
    let (_, config) = r.config();
    let deployment = r.deployment();
    let pod = &deployment["spec"]["template"]["spec"];
    let container = r.container();
    assert_eq!(deployment["spec"]["replicas"], 3, "{name}: three hosts");
    assert!(
        selects(
            &deployment["spec"]["selector"]["matchLabels"],
            r.pod_labels()
        ),
        "{name}: the Deployment selects its pods"
    );

    // The configuration: a fleet on PostgreSQL, listening on the pod's address.
    assert_eq!(
        config.store.backend,
        scout_host::config::StoreBackend::Postgres,
        "{name}: PostgreSQL"
    );
    assert!(
        config.listen.ip().is_unspecified(),
        "{name}: the pod's address"
    );
    let probe_listen = config
        .probe_listen
        .unwrap_or_else(|| panic!("{name}: probe_listen is set"));
    let metrics_listen = config
        .metrics_listen
        .unwrap_or_else(|| panic!("{name}: metrics_listen is set"));
    assert!(probe_listen.ip().is_unspecified() && metrics_listen.ip().is_unspecified());
    let image = container["image"].as_str().expect("an image");
    assert!(
        image.contains("scout-host"),
        "{name}: the Containerfile's image: {image}"
    );
    let args: Vec<&str> = container["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mounts = container["volumeMounts"].as_array().expect("volume mounts");
    let config_mount = mounts
        .iter()
        .find(|m| m["name"] == "config")
        .and_then(|m| m["mountPath"].as_str())
        .expect("the ConfigMap is mounted");
    assert_eq!(
        args,
        ["serve", "--config", &format!("{config_mount}/scout.toml")],
        "{name}: serve reads the mounted scout.toml"
    );

    // Probes: the real paths, on the port probe_listen binds.
    for (probe, path) in [
        ("startupProbe", "/livez"),
        ("livenessProbe", "/livez"),
        ("readinessProbe", "/readyz"),
    ] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"], path, "{name}: {probe}'s path");
        assert_eq!(
            r.container_port(&get["port"]),
            probe_listen.port(),
            "{name}: {probe} asks probe_listen's port"
        );
    }
    let named_port = |port: &str| r.container_port(&Value::String(port.to_string()));
    assert_eq!(named_port("http"), config.listen.port(), "{name}: listen");
    assert_eq!(
        named_port("metrics"),
        metrics_listen.port(),
        "{name}: metrics_listen"
    );

    // The grace: the preStop pause, then the drain, within the period.
    let pause = container["lifecycle"]["preStop"]["sleep"]["seconds"]
        .as_u64()
        .unwrap_or(0);
    let grace = pod["terminationGracePeriodSeconds"]
        .as_u64()
        .unwrap_or_else(|| panic!("{name}: terminationGracePeriodSeconds"));
    assert!(
        grace > pause + config.shutdown_grace_secs,
        "{name}: a grace of {grace} s outlasts the {pause} s pause plus shutdown_grace_secs {}",
        config.shutdown_grace_secs
    );
    let rolling = &deployment["spec"]["strategy"]["rollingUpdate"];
    assert_eq!(
        rolling["maxUnavailable"], 0,
        "{name}: a rollout starts a pod before it stops one"
    );

    // Security context.
    let pod_security = &pod["securityContext"];
    let security = &container["securityContext"];
    for context in [pod_security, security] {
        assert_eq!(context["runAsNonRoot"], true, "{name}: {context}");
        assert_eq!(context["runAsUser"], 65532, "{name}: {context}");
        assert_eq!(context["seccompProfile"]["type"], "RuntimeDefault");
    }
    assert_eq!(security["readOnlyRootFilesystem"], true, "{name}");
    assert_eq!(security["allowPrivilegeEscalation"], false, "{name}");
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]), "{name}");
    assert!(security["capabilities"]["add"].is_null(), "{name}");
    assert_eq!(pod["automountServiceAccountToken"], false, "{name}");

    // Where serve writes (its caches, temporary files) is an emptyDir.
    let written = ["HOME", "XDG_CACHE_HOME", "TMPDIR"];
    let env = container["env"].as_array().expect("env");
    for variable in written {
        let path = env
            .iter()
            .find(|e| e["name"] == variable)
            .and_then(|e| e["value"].as_str())
            .unwrap_or_else(|| panic!("{name}: {variable} is set"));
        let mount = mounts
            .iter()
            .filter(|m| {
                m["mountPath"]
                    .as_str()
                    .is_some_and(|at| Path::new(path).starts_with(at))
            })
            .max_by_key(|m| m["mountPath"].as_str().map(str::len))
            .unwrap_or_else(|| panic!("{name}: {variable}={path} is on a mounted volume"));
        let volume = r.volume(mount["name"].as_str().expect("a mount's volume"));
        assert!(
            volume["emptyDir"].is_object() && mount["readOnly"] != true,
            "{name}: {variable}={path} is on a writable emptyDir: {volume}"
        );
    }

    // The Secret: exactly the variables the configuration names.
    let named_env: BTreeSet<&str> = [
        config.admin_token_env.as_str(),
        config.store_key_env.as_str(),
        config.store.url_env.as_deref().expect("url_env"),
    ]
    .into();
    let from_secrets: Vec<(&str, &str, &str)> = env
        .iter()
        .filter(|e| e["valueFrom"]["secretKeyRef"].is_object())
        .map(|e| {
            let reference = &e["valueFrom"]["secretKeyRef"];
            (
                e["name"].as_str().expect("a name"),
                reference["name"].as_str().expect("a Secret"),
                reference["key"].as_str().expect("a key"),
            )
        })
        .collect();
    assert_eq!(
        from_secrets
            .iter()
            .map(|(v, _, _)| *v)
            .collect::<BTreeSet<_>>(),
        named_env,
        "{name}: the Secret fills the variables scout.toml names"
    );
    for (variable, secret, key) in &from_secrets {
        assert!(
            r.named("Secret", secret)["data"][key].is_string(),
            "{name}: {variable} comes from {secret}'s {key}"
        );
    }
    assert!(
        env.iter()
            .filter(|e| named_env.contains(e["name"].as_str().unwrap_or_default()))
            .all(|e| e["value"].is_null()),
        "{name}: no secret is written in the manifest itself"
    );

    // The Service: reaches the pods' listener; affinity by overlay.
    let service = r.named("Service", "scout-host");
    assert!(
        selects(&service["spec"]["selector"], r.pod_labels()),
        "{name}: the Service selects the pods"
    );
    let http = service["spec"]["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .find(|p| p["name"] == "http")
        .expect("the http port");
    assert_eq!(r.container_port(&http["targetPort"]), config.listen.port());
    let affinity = service["spec"]["sessionAffinity"]
        .as_str()
        .unwrap_or("None");
    if name.ends_with("sticky") {
        assert_eq!(affinity, "ClientIP", "{name}: the sticky alternative");
    } else {
        assert_eq!(
            affinity, "None",
            "{name}: stateless clients need no affinity"
        );
    }
    // Every pod announces the fleet's address (the Service), and answers to its names.
    let namespace = service["metadata"]["namespace"]
        .as_str()
        .expect("a namespace");
    let port = http["port"].as_u64().expect("a port");
    let fleet = format!("scout-host.{namespace}.svc.cluster.local:{port}");
    assert_eq!(
        config.public_url.as_deref(),
        Some(format!("http://{fleet}").as_str()),
        "{name}: public_url is the Service's address"
    );
    assert!(
        config.hosts().contains(&fleet) && config.hosts().contains(&format!("scout-host:{port}")),
        "{name}: allowed_hosts names the Service: {:?}",
        config.hosts()
    );

    // The disruption budget: one pod at a time.
    let budget = r.one("PodDisruptionBudget");
    assert!(
        selects(&budget["spec"]["selector"]["matchLabels"], r.pod_labels()),
        "{name}: the budget selects the pods"
    );
    assert_eq!(budget["spec"]["maxUnavailable"], 1, "{name}");

    check_network_policy(r, config.listen.port(), probe_listen.port());
}

/// Ingress to the listener and the probes; egress only where named, each
/// rule with its ports.
fn check_network_policy(r: &Rendered, listen: u16, probes: u16) {
    let name = r.name;
    let policy = r.one("NetworkPolicy");
    let spec = &policy["spec"];
    assert!(
        selects(&spec["podSelector"]["matchLabels"], r.pod_labels()),
        "{name}: the policy selects the pods"
    );
    assert_eq!(spec["policyTypes"], json!(["Ingress", "Egress"]), "{name}");
    let ports_of = |rule: &Value| -> BTreeSet<(u64, String)> {
        rule["ports"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: every rule names its ports: {rule}"))
            .iter()
            .map(|p| {
                (
                    p["port"].as_u64().expect("a port number"),
                    p["protocol"].as_str().unwrap_or("TCP").to_string(),
                )
            })
            .collect()
    };
    let ingress: BTreeSet<u64> = spec["ingress"]
        .as_array()
        .expect("ingress rules")
        .iter()
        .flat_map(|rule| ports_of(rule).into_iter().map(|(port, _)| port))
        .collect();
    assert!(
        ingress.contains(&u64::from(listen)) && ingress.contains(&u64::from(probes)),
        "{name}: the listener and the probes are reachable: {ingress:?}"
    );
    let egress = spec["egress"].as_array().expect("egress rules");
    let mut reached = Vec::new();
    for rule in egress {
        let to = rule["to"]
            .as_array()
            .filter(|to| !to.is_empty())
            .unwrap_or_else(|| panic!("{name}: an egress rule without `to` reaches anywhere"));
        for peer in to {
            if let Some(cidr) = peer["ipBlock"]["cidr"].as_str() {
                assert!(
                    !cidr.ends_with("/0"),
                    "{name}: egress to everywhere: {cidr}"
                );
            }
        }
        reached.push(ports_of(rule));
    }
    let udp_dns = (53, "UDP".to_string());
    let tcp = |port: u64| (port, "TCP".to_string());
    let mut expected = vec![
        [udp_dns, tcp(53)].into_iter().collect::<BTreeSet<_>>(),
        [tcp(5432)].into(),
    ];
    if name != "base" {
        // The registry and the connectors' origins, which the operator fills in.
        expected.push([tcp(443)].into());
        expected.push([tcp(443)].into());
    }
    assert_eq!(
        reached, expected,
        "{name}: egress: DNS, PostgreSQL (and HTTPS)"
    );
}

#[test]
fn sticky_names_the_balancer_that_sticks_on_the_mcp_session_id() {
    let Some(kubectl) = kubectl_or_skip() else {
        return;
    };
    let sticky = Rendered::render(&kubectl, "overlays/sticky");
    let pods = sticky.named("Service", "scout-host-pods");
    assert_eq!(
        pods["spec"]["clusterIP"], "None",
        "headless: every pod in DNS"
    );
    assert!(selects(&pods["spec"]["selector"], sticky.pod_labels()));
    let service = sticky.named("Service", "scout-host");
    assert_eq!(
        service["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
        1800
    );
    let cfg_path = manifests().join("overlays/sticky/haproxy.cfg");
    let cfg = std::fs::read_to_string(&cfg_path).expect("haproxy.cfg");
    for line in scout_tests::haproxy::STICKY_LINES.lines() {
        assert!(
            cfg.lines().any(|l| l.trim() == line.trim()),
            "haproxy.cfg has the tested line {line:?}"
        );
    }
    let namespace = service["metadata"]["namespace"]
        .as_str()
        .expect("namespace");
    assert!(
        cfg.contains(&format!(
            "scout-host-pods.{namespace}.svc.cluster.local:7420"
        )),
        "haproxy.cfg finds the pods through the headless Service"
    );
    if let Some(haproxy) = scout_tests::haproxy::binary() {
        let out = std::process::Command::new(haproxy)
            .args(["-c", "-f"])
            .arg(&cfg_path)
            .output()
            .expect("run haproxy -c");
        assert!(
            out.status.success(),
            "haproxy -c: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The Secret's values as the base renders them (base64-decoded).
fn secret_values(r: &Rendered) -> Vec<(String, String)> {
    use base64::Engine as _;
    let secret = r.one("Secret");
    secret["data"]
        .as_object()
        .expect("data")
        .iter()
        .map(|(key, value)| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(value.as_str().expect("base64"))
                .expect("base64");
            (key.clone(), String::from_utf8(bytes).expect("UTF-8"))
        })
        .collect()
}

#[test]
fn serve_refuses_the_placeholder_secret_of_the_base() {
    let Some(kubectl) = kubectl_or_skip() else {
        return;
    };
    let base = Rendered::render(&kubectl, "base");
    let (text, config) = base.config();
    let placeholders = secret_values(&base);
    assert!(
        placeholders.iter().all(|(_, v)| v.contains("REPLACE_ME")),
        "placeholders say so: {placeholders:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = scout_tests::serve::write_config(dir.path(), &text);
    // The admin token first: refused before anything is reached.
    let refused = scout_tests::Serve::new(common::SCOUT_HOST, &path)
        .envs(&placeholders)
        .current_dir(dir.path())
        .refused();
    assert!(
        refused.contains(&config.admin_token_env),
        "names the admin token's variable: {refused}"
    );
    // With a real admin token, the placeholder store key is refused.
    let refused = scout_tests::Serve::new(common::SCOUT_HOST, &path)
        .envs(&placeholders)
        .env(&config.admin_token_env, ADMIN_TOKEN)
        .current_dir(dir.path())
        .refused();
    assert!(
        refused.contains(&config.store_key_env) || refused.contains("store key"),
        "names the store key: {refused}"
    );
}

/// One rendered `serve` of the fleet, with its probe and metrics listeners.
struct Pod {
    serve: scout_tests::ServeProcess,
    probes: String,
    metrics: String,
    admin: Admin,
}

/// What a pod of the production overlay gets, given to a process here: the
/// rendered `scout.toml` with the only rewrites a pod needs none of (each
/// process's own loopback ports, as each pod has its own address), the
/// Deployment's environment with its paths under the process's own
/// folder (the pod's emptyDirs) and the Secret's variables filled as an
/// operator fills them.
fn start_pod(
    rendered: &Rendered,
    text: &str,
    db: &scout_tests::pg::PgDatabase,
    dir: &Path,
    http: &reqwest::Client,
) -> Pod {
    let (_, config) = rendered.config();
    std::fs::create_dir_all(dir).unwrap();
    let mut table: toml::Table = toml::from_str(text).expect("scout.toml");
    // The rewrites: 0.0.0.0:PORT, the pod's own address, becomes a port of
    // this process's own on loopback (three processes share one address),
    // which it announces once bound.
    for key in ["listen", "probe_listen", "metrics_listen"] {
        let at = toml::Value::String("127.0.0.1:0".into());
        let was = table.insert(key.into(), at);
        assert!(
            was.is_some_and(|v| v.as_str().is_some_and(|v| v.starts_with("0.0.0.0:"))),
            "{key} was the pod's address"
        );
    }
    let path = scout_tests::serve::write_config(dir, toml::to_string(&table).unwrap());
    // The pod's emptyDirs, each an empty folder of its own.
    for mount in rendered.container()["volumeMounts"]
        .as_array()
        .expect("mounts")
    {
        let volume = rendered.volume(mount["name"].as_str().expect("a volume"));
        if volume["emptyDir"].is_object() {
            let at = mount["mountPath"].as_str().expect("a mount path");
            std::fs::create_dir_all(dir.join(at.trim_start_matches('/'))).unwrap();
        }
    }
    let mut serve = scout_tests::Serve::new(common::SCOUT_HOST, &path).current_dir(dir);
    for variable in rendered.container()["env"].as_array().expect("env") {
        let name = variable["name"].as_str().expect("a name");
        let value = if let Some(value) = variable["value"].as_str() {
            match value.strip_prefix('/') {
                Some(relative) => dir.join(relative).display().to_string(),
                None => value.to_string(),
            }
        } else if name == config.admin_token_env {
            ADMIN_TOKEN.to_string()
        } else if name == config.store_key_env {
            "5c".repeat(32)
        } else if Some(name) == config.store.url_env.as_deref() {
            db.url()
        } else {
            panic!("{name}: a variable this test does not know how to fill: {variable}")
        };
        serve = serve.env(name, value);
    }
    let serve = serve.start();
    Pod {
        admin: Admin {
            http: http.clone(),
            base: serve.base.clone(),
        },
        probes: announced(&serve, "probes (/livez, /readyz) on "),
        metrics: announced(&serve, "metrics (/metrics) on "),
        serve,
    }
}

/// The address `serve` announced on stderr after `what` (the probe or the
/// metrics listener's line, said before it prints its main address).
fn announced(serve: &scout_tests::ServeProcess, what: &str) -> String {
    let started = std::time::Instant::now();
    loop {
        let stderr = serve.stderr();
        if let Some(after) = stderr.split(what).nth(1) {
            let address: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, ':' | '/' | '.'))
                .collect();
            assert!(address.starts_with("http://127.0.0.1:"), "{what}{address}");
            return address;
        }
        assert!(
            started.elapsed() < EVENTUALLY,
            "serve never said {what:?}: {stderr}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "kubernetes-test", "version": "0"}}"#;

/// One stateless (2026-07-28) request, as a client with no affinity sends
/// it through the Service: its JSON-RPC answer.
async fn stateless(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    method: &str,
    mut params: Value,
) -> Value {
    params["_meta"] = serde_json::from_str(META).unwrap();
    let mut request = http
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(tool) = params["name"].as_str() {
        request = request.header("mcp-name", tool);
    }
    let response = request
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string())
        .send()
        .await
        .unwrap_or_else(|e| panic!("{method} on {url}: {e}"));
    let status = response.status();
    let text = response.text().await.unwrap();
    assert_eq!(status, 200, "{method} on {url}: {text}");
    // Answered as JSON, or as an event stream whose last data is the answer.
    let json = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .next_back()
        .unwrap_or(&text);
    serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("{method}: {e}: {text}"))
}

async fn get_status(http: &reqwest::Client, url: &str) -> Option<u16> {
    http.get(url).send().await.ok().map(|r| r.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rendered_configuration_runs_three_hosts_on_one_postgresql() {
    let Some(kubectl) = kubectl_or_skip() else {
        return;
    };
    let Some(db) = scout_tests::pg::database_or_skip("kubernetes_fleet") else {
        return;
    };
    let production = Rendered::render(&kubectl, "overlays/production");
    let (text, config) = production.config();
    let public_url = config.public_url.clone().expect("public_url");
    let fleet = url::Url::parse(&public_url).expect("public_url is a URL");
    let fleet_authority = format!(
        "{}:{}",
        fleet.host_str().expect("a host"),
        fleet.port_or_known_default().expect("a port")
    );
    // As a client in the cluster reaches the Service: its Host header is the Service's name.
    let through_service = reqwest::Client::builder()
        .default_headers(
            [(
                reqwest::header::HOST,
                fleet_authority.parse().expect("a header value"),
            )]
            .into_iter()
            .collect(),
        )
        .timeout(EVENTUALLY)
        .build()
        .unwrap();
    let plain = reqwest::Client::builder()
        .timeout(EVENTUALLY)
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut pods: Vec<Pod> = ["a", "b", "c"]
        .iter()
        .map(|pod| {
            start_pod(
                &production,
                &text,
                &db,
                &dir.path().join(pod),
                &through_service,
            )
        })
        .collect();

    // Ready on the probe listener, as the kubelet asks; metrics without a credential.
    for pod in &pods {
        wait_for("the pod's /readyz", EVENTUALLY, async || {
            (get_status(&plain, &format!("{}/readyz", pod.probes)).await == Some(200)).then_some(())
        })
        .await;
        assert_eq!(
            get_status(&plain, &format!("{}/livez", pod.probes)).await,
            Some(200)
        );
        let scrape = plain
            .get(format!("{}/metrics", pod.metrics))
            .send()
            .await
            .expect("a scrape");
        assert_eq!(scrape.status(), 200, "metrics_listen needs no credential");
        assert!(
            scrape.text().await.unwrap().contains("# EOF"),
            "OpenMetrics"
        );
    }

    // Only the Service's names are answered: a request naming the pod's own
    // address is refused, and opens nothing.
    let refused = plain
        .post(format!("{}/v1/sessions", pods[0].serve.base))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"brand": "acme", "role": "person-chat"}))
        .send()
        .await
        .expect("an answer");
    assert_eq!(refused.status(), 403, "a Host allowed_hosts does not name");
    let (status, listed) = pods[0]
        .admin
        .request(Method::GET, "/v1/sessions", None)
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        listed["sessions"],
        json!([]),
        "the refused request opened nothing"
    );

    // A session opened on the first host; its endpoints name the fleet.
    let view = pods[0].admin.session().await;
    let id = view["id"].as_str().expect("an id").to_string();
    let token = view["token"].as_str().expect("a token").to_string();
    let endpoint = view["mcp"]["scout"]
        .as_str()
        .unwrap_or_else(|| panic!("the host's own tools: {view}"))
        .to_string();
    assert!(
        endpoint.starts_with(&public_url),
        "endpoints name the Service: {endpoint}"
    );
    // Served by the other two, as the Service may send any request anywhere.
    for (index, pod) in pods.iter().enumerate().skip(1) {
        let url = endpoint.replacen(&public_url, &pod.serve.base, 1);
        let listed = stateless(&through_service, &url, &token, "tools/list", json!({})).await;
        let names: Vec<&str> = listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools: {listed}"))
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(names.contains(&"scout_request_capability"), "{names:?}");
        let called = stateless(
            &through_service,
            &url,
            &token,
            "tools/call",
            json!({"name": "scout_request_capability", "arguments": {
                "goal": format!("asked on host {index}"),
                "missing_observation": "which pod serves this",
                "proposed_effect": "read",
                "safe_alternative_tried": "none"}}),
        )
        .await;
        assert_ne!(called["result"]["isError"], true, "{called}");
        assert!(called["result"].is_object(), "{called}");
    }
    // Every host shows the session and both requests its calls parked.
    for pod in &pods {
        let (status, shown) = pod
            .admin
            .request(Method::GET, &format!("/v1/sessions/{id}"), None)
            .await;
        assert_eq!(status, 200, "{shown}");
        let (status, parked) = pod
            .admin
            .request(
                Method::GET,
                &format!("/v1/capability-requests?session={id}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{parked}");
        let goals: BTreeSet<&str> = parked["requests"]
            .as_array()
            .expect("requests")
            .iter()
            .filter_map(|r| r["request"]["goal"].as_str())
            .collect();
        assert_eq!(goals, ["asked on host 1", "asked on host 2"].into());
    }
    // Each call recorded by the host that served it.
    let serving: BTreeSet<String> = pods[0]
        .admin
        .trace("acme")
        .await
        .into_iter()
        .filter(|e| {
            e.state == TraceState::Result
                && e.tool
                    .as_deref()
                    .is_some_and(|t| t.ends_with("scout_request_capability"))
        })
        .map(|e| e.origin.host.unwrap_or_default())
        .collect();
    assert_eq!(serving.len(), 2, "two hosts served a call: {serving:?}");

    // Stopped as Kubernetes stops a pod: it drains, gives its lease back, exits 0.
    let mut stopped = pods.pop().expect("a third host");
    stopped.serve.signal("TERM");
    let status = stopped
        .serve
        .exited_within(EVENTUALLY)
        .await
        .expect("the stopped host exits");
    assert!(status.success(), "{status:?}: {}", stopped.serve.stderr());
    assert!(
        stopped
            .serve
            .stderr()
            .contains("released this host's lease"),
        "{}",
        stopped.serve.stderr()
    );
    // The other two serve on.
    let url = endpoint.replacen(&public_url, &pods[1].serve.base, 1);
    let listed = stateless(&through_service, &url, &token, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    for pod in &pods {
        assert_eq!(
            get_status(&plain, &format!("{}/readyz", pod.probes)).await,
            Some(200)
        );
    }
}
