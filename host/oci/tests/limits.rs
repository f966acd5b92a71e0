//! What a hostile or broken registry cannot do: endless manifests, signature
//! manifests and payloads are refused at their caps with memory bounded, error
//! bodies are cut, and one object's `insecure: true` never makes another pull
//! plain HTTP. The registry is a fake speaking just enough of the distribution
//! API over a raw TCP socket, so it can stream forever and tell a TLS hello
//! from a plain HTTP request.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rekon_oci::{
    HostPolicy, MAX_MANIFEST_BYTES, MAX_REGISTRY_TEXT, OciError, PullRequest, Puller,
    PullerOptions, Verification,
};
use sha2::Digest as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// What the fake answers for one path.
#[derive(Clone)]
enum Answer {
    Body(u16, &'static str, Vec<u8>),
    /// A 200 (or the status given) whose body never ends.
    Endless(u16, &'static str),
    /// A 401 with this `WWW-Authenticate` challenge.
    Challenge(String),
}

/// The fake registry: counts plain HTTP requests, TLS hellos and bytes sent.
struct Fake {
    addr: SocketAddr,
    plain_requests: Arc<AtomicU64>,
    tls_hellos: Arc<AtomicU64>,
    sent: Arc<AtomicU64>,
}

/// Stops an endless body after this much (the test is then failing anyway).
const SAFETY_VALVE: u64 = 2 << 30;

impl Fake {
    /// Serves on `ip`; `route` answers a path, given the request's headers (lowercased).
    async fn start(
        ip: IpAddr,
        route: impl Fn(&str, &str) -> Answer + Send + Sync + 'static,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let fake = Fake {
            addr: listener.local_addr().unwrap(),
            plain_requests: Arc::default(),
            tls_hellos: Arc::default(),
            sent: Arc::default(),
        };
        let route = Arc::new(route);
        let (plain, tls, sent) = (
            fake.plain_requests.clone(),
            fake.tls_hellos.clone(),
            fake.sent.clone(),
        );
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let (route, plain, tls, sent) =
                    (route.clone(), plain.clone(), tls.clone(), sent.clone());
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if head.is_empty() && byte[0] == 0x16 {
                            tls.fetch_add(1, Ordering::SeqCst);
                            return; // a TLS ClientHello: this fake speaks no TLS
                        }
                        head.push(byte[0]);
                    }
                    plain.fetch_add(1, Ordering::SeqCst);
                    let text = String::from_utf8_lossy(&head);
                    let path = text.split(' ').nth(1).unwrap_or("/").to_string();
                    let head_only = text.starts_with("HEAD");
                    match route(&path, &text.to_ascii_lowercase()) {
                        Answer::Body(status, content_type, body) => {
                            let head = format!(
                                "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                body.len()
                            );
                            let _ = socket.write_all(head.as_bytes()).await;
                            if !head_only {
                                let _ = socket.write_all(&body).await;
                            }
                        }
                        Answer::Challenge(challenge) => {
                            let head = format!(
                                "HTTP/1.1 401 X\r\nWWW-Authenticate: {challenge}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            );
                            let _ = socket.write_all(head.as_bytes()).await;
                        }
                        Answer::Endless(status, content_type) => {
                            let head = format!(
                                "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nConnection: close\r\n\r\n"
                            );
                            let _ = socket.write_all(head.as_bytes()).await;
                            let chunk = vec![b'{'; 64 * 1024];
                            while sent.load(Ordering::SeqCst) < SAFETY_VALVE {
                                if socket.write_all(&chunk).await.is_err() {
                                    break;
                                }
                                sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
                            }
                        }
                    }
                    let _ = socket.shutdown().await;
                });
            }
        });
        fake
    }

    fn image(&self, digest: &str) -> String {
        format!("{}/team/m@{digest}", self.addr)
    }
}

/// A valid core wasm module with a custom section of `n` bytes.
fn wasm(n: usize) -> Vec<u8> {
    let mut bytes = b"\0asm\x01\0\0\0\0".to_vec();
    assert!(n < 127);
    bytes.push((n + 2) as u8);
    bytes.extend([1, b'x']);
    bytes.extend(std::iter::repeat_n(7, n));
    bytes
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// A module's manifest and its wasm layer, as `push` would write them.
struct Module {
    manifest: Vec<u8>,
    manifest_digest: String,
    wasm: Vec<u8>,
}

fn module() -> Module {
    let wasm = wasm(64);
    let manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": digest(b"{}"), "size": 2},
        "layers": [{"mediaType": "application/wasm", "digest": digest(&wasm), "size": wasm.len()}],
    }))
    .unwrap();
    Module {
        manifest_digest: digest(&manifest),
        manifest,
        wasm,
    }
}

/// Answers `/v2/`, the module's manifest and its wasm layer; `other` first.
fn serving<F>(module: &Module, other: F) -> impl Fn(&str, &str) -> Answer + use<F>
where
    F: Fn(&str, &str) -> Option<Answer>,
{
    let manifest_path = format!("/v2/team/m/manifests/{}", module.manifest_digest);
    let wasm_path = format!("/v2/team/m/blobs/{}", digest(&module.wasm));
    let (manifest, wasm) = (module.manifest.clone(), module.wasm.clone());
    move |path: &str, headers: &str| {
        if let Some(answer) = other(path, headers) {
            answer
        } else if path == "/v2/" {
            Answer::Body(200, "application/json", b"{}".to_vec())
        } else if path == manifest_path {
            Answer::Body(200, OCI_MANIFEST, manifest.clone())
        } else if path == wasm_path {
            Answer::Body(200, "application/octet-stream", wasm.clone())
        } else {
            Answer::Body(
                404,
                "application/json",
                br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"unknown"}]}"#.to_vec(),
            )
        }
    }
}

fn puller(cache: &tempfile::TempDir, policy: HostPolicy) -> Puller {
    Puller::new(PullerOptions {
        cache_dir: cache.path().into(),
        timeout: Duration::from_secs(10),
        retries: 0,
        policy,
        ..PullerOptions::default()
    })
    .unwrap()
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Pulls `request` and checks the refusal came fast, with memory and the
/// bytes the fake sent bounded; returns the error.
async fn refused_fast(fake: &Fake, puller: &Puller, request: PullRequest) -> OciError {
    let (rss, sent) = (rss_bytes(), fake.sent.load(Ordering::SeqCst));
    let started = Instant::now();
    let err = puller.pull(&request).await.unwrap_err();
    let elapsed = started.elapsed();
    let grown = rss_bytes().saturating_sub(rss);
    let read = fake.sent.load(Ordering::SeqCst) - sent;
    eprintln!(
        "{}: refused in {elapsed:?}, RSS grew by {grown} bytes, the fake sent {read} bytes",
        err.reason()
    );
    assert!(elapsed < Duration::from_secs(5), "{err} after {elapsed:?}");
    assert!(grown < 48 << 20, "RSS grew by {grown} bytes: {err}");
    // What the fake sent before rekon hung up: the cap plus socket buffers.
    assert!(read < 48 << 20, "the fake sent {read} bytes: {err}");
    err
}

#[tokio::test(flavor = "multi_thread")]
async fn endless_manifests_signatures_and_error_bodies_are_cut_at_their_caps() {
    let module = module();
    let sig_tag = format!(
        "/v2/team/m/manifests/{}.sig",
        module.manifest_digest.replace(':', "-")
    );
    let payload_digest = digest(b"payload");
    let sig_manifest = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(b"{}"), "size": 2},
        "layers": [{
            "mediaType": rekon_oci::cosign::SIMPLE_SIGNING_MEDIA_TYPE,
            "digest": payload_digest,
            "size": 200,
            "annotations": {rekon_oci::cosign::SIGNATURE_ANNOTATION: "MEUCIQ=="},
        }],
    }))
    .unwrap();
    let verify = Some(Verification {
        cosign_public_key_pem: rekon_oci::generate_key().public_pem.into_bytes(),
    });
    let cache = tempfile::tempdir().unwrap();
    let puller = puller(&cache, HostPolicy::default());

    // 1. The manifest never ends.
    let endless_manifest = Fake::start(
        [127, 0, 0, 1].into(),
        serving(&module, |path: &str, _: &str| {
            path.contains("/manifests/")
                .then_some(Answer::Endless(200, OCI_MANIFEST))
        }),
    )
    .await;
    let request = PullRequest::new(endless_manifest.image(&module.manifest_digest));
    let err = refused_fast(&endless_manifest, &puller, request).await;
    assert!(
        matches!(&err, OciError::TooLarge { what, limit, .. } if what == "manifest" && *limit == MAX_MANIFEST_BYTES),
        "{err}"
    );

    // 2. The signature manifest never ends.
    let tag = sig_tag.clone();
    let endless_signature_manifest = Fake::start(
        [127, 0, 0, 1].into(),
        serving(&module, move |path: &str, _: &str| {
            (path == tag).then_some(Answer::Endless(200, OCI_MANIFEST))
        }),
    )
    .await;
    let request = PullRequest {
        verify: verify.clone(),
        ..PullRequest::new(endless_signature_manifest.image(&module.manifest_digest))
    };
    let err = refused_fast(&endless_signature_manifest, &puller, request).await;
    assert!(
        matches!(&err, OciError::TooLarge { what, .. } if what == "signature manifest"),
        "{err}"
    );

    // 3. The signature payload never ends (its manifest says 200 bytes).
    let (tag, payload_path) = (
        sig_tag.clone(),
        format!("/v2/team/m/blobs/{payload_digest}"),
    );
    let endless_payload = Fake::start(
        [127, 0, 0, 1].into(),
        serving(&module, move |path: &str, _: &str| {
            if path == tag {
                Some(Answer::Body(200, OCI_MANIFEST, sig_manifest.clone()))
            } else {
                (path == payload_path).then_some(Answer::Endless(200, "application/octet-stream"))
            }
        }),
    )
    .await;
    let request = PullRequest {
        verify: verify.clone(),
        ..PullRequest::new(endless_payload.image(&module.manifest_digest))
    };
    let err = refused_fast(&endless_payload, &puller, request).await;
    assert!(
        matches!(&err, OciError::TooLarge { what, limit, .. } if what == "signature payload" && *limit == 64 * 1024),
        "{err}"
    );

    // 4. An error whose body never ends: refused, and its text cut.
    let endless_error = Fake::start(
        [127, 0, 0, 1].into(),
        serving(&module, |path: &str, _: &str| {
            path.contains("/manifests/")
                .then_some(Answer::Endless(500, "text/plain"))
        }),
    )
    .await;
    let request = PullRequest::new(endless_error.image(&module.manifest_digest));
    let err = refused_fast(&endless_error, &puller, request).await;
    assert_eq!(err.reason(), "RegistryError", "{err}");
    assert!(
        err.to_string().len() < MAX_REGISTRY_TEXT + 300,
        "{} bytes: {err}",
        err.to_string().len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_error_body_reaches_the_message_cut() {
    let module = module();
    let noise = format!("{}\n\u{1b}[2J", "denied ".repeat(500));
    let fake = Fake::start(
        [127, 0, 0, 1].into(),
        serving(&module, move |path: &str, _: &str| {
            path.contains("/manifests/")
                .then(|| Answer::Body(403, "text/plain", noise.clone().into_bytes()))
        }),
    )
    .await;
    let cache = tempfile::tempdir().unwrap();
    let err = puller(&cache, HostPolicy::default())
        .pull(&PullRequest::new(fake.image(&module.manifest_digest)))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert_eq!(err.reason(), "Credentials", "{text}");
    assert!(
        text.contains("HTTP 403") && text.contains("bytes cut"),
        "{text}"
    );
    assert!(text.len() < MAX_REGISTRY_TEXT + 300, "{}", text.len());
    assert!(!text.contains('\u{1b}') && !text.contains('\n'), "{text:?}");
}

/// A local address that is not loopback (the host's own), where plain HTTP is
/// not allowed without the host's say.
fn non_loopback_ip() -> IpAddr {
    let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
    for target in ["192.0.2.1:9", "10.255.255.1:9", "203.0.113.1:9"] {
        if socket.connect(target).is_ok()
            && let Ok(local) = socket.local_addr()
            && !local.ip().is_loopback()
            && !local.ip().is_unspecified()
        {
            return local.ip();
        }
    }
    panic!("this test needs a non-loopback interface (any container network has one)");
}

#[tokio::test(flavor = "multi_thread")]
async fn one_objects_insecure_never_makes_another_pull_plain_http() {
    let module = module();
    let fake = Fake::start(non_loopback_ip(), serving(&module, |_: &str, _: &str| None)).await;
    let image = fake.image(&module.manifest_digest);
    let cache = tempfile::tempdir().unwrap();
    let puller = puller(&cache, HostPolicy::default());

    // Object A asks for plain HTTP to a registry the host does not list.
    let a = PullRequest {
        insecure: true,
        ..PullRequest::new(&image)
    };
    let err = puller.pull(&a).await.unwrap_err();
    assert_eq!(err.reason(), "PolicyViolation", "{err}");
    assert!(
        err.to_string()
            .contains("`insecure: true` asks for plain HTTP")
            && err.to_string().contains("--insecure-registry"),
        "{err}"
    );
    // Object B does not: HTTPS only, however often A asked before.
    puller.pull(&a).await.unwrap_err();
    let err = puller.pull(&PullRequest::new(&image)).await.unwrap_err();
    assert_eq!(err.reason(), "Unreachable", "{err}");
    assert_eq!(
        fake.plain_requests.load(Ordering::SeqCst),
        0,
        "no request went out in plain HTTP"
    );
    assert!(fake.tls_hellos.load(Ordering::SeqCst) >= 1, "B tried HTTPS");

    // The host lists the registry: plain HTTP for every object, its choice.
    let listed = puller_for(&fake, &cache);
    let pulled = listed.pull(&PullRequest::new(&image)).await.unwrap();
    assert_eq!(&pulled.bytes[..], &module.wasm[..]);
    assert!(fake.plain_requests.load(Ordering::SeqCst) >= 1);
}

fn puller_for(fake: &Fake, cache: &tempfile::TempDir) -> Puller {
    puller(
        cache,
        HostPolicy {
            insecure_registries: vec![fake.addr.to_string()],
            ..HostPolicy::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bearer_challenge_is_answered_with_a_token_from_the_realm() {
    let module = module();
    let realm = Arc::new(std::sync::OnceLock::<String>::new());
    let challenge = realm.clone();
    let fake = Fake::start(
        [127, 0, 0, 1].into(),
        serving(&module, move |path: &str, headers: &str| {
            if path.starts_with("/token?") {
                assert!(
                    path.contains("scope=repository%3Ateam%2Fm%3Apull"),
                    "{path}"
                );
                assert!(path.contains("service=fake"), "{path}");
                return Some(Answer::Body(
                    200,
                    "application/json",
                    br#"{"token":"t0k3n"}"#.to_vec(),
                ));
            }
            (path.starts_with("/v2/team/") && !headers.contains("authorization: bearer t0k3n"))
                .then(|| {
                    Answer::Challenge(format!(
                        r#"Bearer realm="{}",service="fake""#,
                        challenge.get().unwrap()
                    ))
                })
        }),
    )
    .await;
    realm.set(format!("http://{}/token", fake.addr)).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let pulled = puller(&cache, HostPolicy::default())
        .pull(&PullRequest::new(fake.image(&module.manifest_digest)))
        .await
        .unwrap();
    assert_eq!(&pulled.bytes[..], &module.wasm[..]);
}
