//! Push, pull, pins, limits, refusals, signatures and credentials against a
//! real distribution registry on loopback (`rekon_oci::testing::TestRegistry`).

use std::time::Duration;

use base64::Engine as _;
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use rekon_oci::testing::{TestRegistry, free_loopback_port};
use rekon_oci::{
    HostPolicy, OciError, PullRequest, Puller, PullerOptions, RegistryAuth, RegistryOptions,
    Verification, auth_from_dockerconfigjson,
};
use sha2::Digest as _;

/// A valid (empty) core wasm module padded with a custom section to `len` bytes.
fn wasm(len: usize, fill: u8) -> Vec<u8> {
    let mut bytes = b"\0asm\x01\0\0\0".to_vec();
    let body = len.saturating_sub(bytes.len() + 6).max(2);
    bytes.push(0); // custom section
    let payload_len = body;
    let mut leb = Vec::new();
    let mut n = payload_len;
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            leb.push(byte);
            break;
        }
        leb.push(byte | 0x80);
    }
    bytes.extend(leb);
    bytes.push(1); // name length
    bytes.push(b'x');
    bytes.extend(std::iter::repeat_n(fill, payload_len - 2));
    bytes
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Pushes one layer with oci-client itself (layouts `rekon_oci::push` does not
/// write) and returns `HOST/REPO@<manifest digest>`.
async fn push_with_oci_client(
    registry: &TestRegistry,
    path: &str,
    layer: ImageLayer,
    config: Config,
) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = oci_client::Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..Default::default()
    });
    let reference: oci_client::Reference = registry.reference(path).parse().unwrap();
    let anonymous = oci_client::secrets::RegistryAuth::Anonymous;
    client
        .push(&reference, &[layer], config, &anonymous, None)
        .await
        .unwrap();
    let (_, digest) = client.pull_manifest(&reference, &anonymous).await.unwrap();
    format!("{}/{}@{digest}", registry.host(), reference.repository())
}

fn quick() -> RegistryOptions {
    RegistryOptions {
        timeout: Duration::from_secs(20),
        retries: 0,
        ..Default::default()
    }
}

fn puller(cache: &tempfile::TempDir) -> Puller {
    Puller::new(PullerOptions {
        cache_dir: cache.path().into(),
        retries: 0,
        ..Default::default()
    })
    .unwrap()
}

#[tokio::test]
async fn a_pushed_module_pulls_back_byte_for_byte_and_a_second_pull_needs_no_registry() {
    let registry = TestRegistry::start();
    let module = wasm(4096, 7);
    let pushed = rekon_oci::push(&module, &registry.reference("team/pvc:v1"), &quick())
        .await
        .unwrap();
    assert!(
        pushed.starts_with(&format!("{}/team/pvc@sha256:", registry.host())),
        "{pushed}"
    );
    let again = rekon_oci::push(&module, &registry.reference("team/pvc:v2"), &quick())
        .await
        .unwrap();
    assert_eq!(
        pushed, again,
        "the same bytes give the same manifest digest"
    );

    let cache = tempfile::tempdir().unwrap();
    let pulled = puller(&cache)
        .pull(&PullRequest::new(&pushed))
        .await
        .unwrap();
    assert_eq!(&pulled.bytes[..], &module[..]);
    assert_eq!(pulled.wasm_sha256, sha256_hex(&module));
    assert_eq!(
        format!("{}/team/pvc@{}", registry.host(), pulled.manifest_digest),
        pushed
    );
    assert!(!pulled.from_cache);
    assert_eq!(std::fs::read(&pulled.path).unwrap(), module);

    drop(registry);
    let cached = puller(&cache)
        .pull(&PullRequest::new(&pushed))
        .await
        .unwrap();
    assert!(cached.from_cache);
    assert_eq!(&cached.bytes[..], &module[..]);
    assert_eq!(cached.manifest_digest, pulled.manifest_digest);
}

#[tokio::test]
async fn a_module_in_the_older_wasm_to_oci_layout_is_pulled() {
    let registry = TestRegistry::start();
    let module = wasm(512, 3);
    let by_digest = push_with_oci_client(
        &registry,
        "kubewarden/policy:v1",
        ImageLayer::new(
            module.clone(),
            "application/vnd.wasm.content.layer.v1+wasm".into(),
            None,
        ),
        Config::new(
            b"{}".to_vec(),
            "application/vnd.wasm.config.v1+json".into(),
            None,
        ),
    )
    .await;

    let cache = tempfile::tempdir().unwrap();
    let pulled = puller(&cache)
        .pull(&PullRequest::new(by_digest))
        .await
        .unwrap();
    assert_eq!(&pulled.bytes[..], &module[..]);
}

#[tokio::test]
async fn a_tag_needs_a_sha256_pin_and_a_wrong_pin_is_a_mismatch() {
    let registry = TestRegistry::start();
    let module = wasm(256, 1);
    rekon_oci::push(&module, &registry.reference("team/pvc:stable"), &quick())
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let puller = puller(&cache);
    let tag = registry.reference("team/pvc:stable");

    let err = puller.pull(&PullRequest::new(&tag)).await.unwrap_err();
    assert!(matches!(err, OciError::Unpinned { .. }), "{err}");
    assert!(err.to_string().contains(&tag), "{err}");

    let wrong = "0".repeat(64);
    let err = puller
        .pull(&PullRequest {
            sha256: Some(wrong.clone()),
            ..PullRequest::new(&tag)
        })
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::DigestMismatch { .. }), "{err}");
    assert!(
        err.to_string().contains(&wrong) && err.to_string().contains(&sha256_hex(&module)),
        "{err}"
    );

    let pin = format!("sha256:{}", sha256_hex(&module));
    let pulled = puller
        .pull(&PullRequest {
            sha256: Some(pin.clone()),
            ..PullRequest::new(&tag)
        })
        .await
        .unwrap();
    assert_eq!(&pulled.bytes[..], &module[..]);
    drop(registry);
    let cached = puller
        .pull(&PullRequest {
            sha256: Some(pin),
            ..PullRequest::new(&tag)
        })
        .await
        .unwrap();
    assert!(
        cached.from_cache,
        "a pinned tag pulled before is served from the cache"
    );
}

#[tokio::test]
async fn a_missing_manifest_is_not_found_and_names_the_reference() {
    let registry = TestRegistry::start();
    let cache = tempfile::tempdir().unwrap();
    let missing = format!("{}/team/absent@sha256:{}", registry.host(), "1".repeat(64));
    let err = puller(&cache)
        .pull(&PullRequest::new(&missing))
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::NotFound { .. }), "{err}");
    assert!(
        err.to_string().contains(&missing) && err.to_string().contains("manifest not found"),
        "{err}"
    );
}

#[tokio::test]
async fn an_unreachable_registry_is_reported_after_the_retries() {
    let cache = tempfile::tempdir().unwrap();
    let puller = Puller::new(PullerOptions {
        cache_dir: cache.path().into(),
        retries: 2,
        backoff: Duration::from_millis(20),
        ..Default::default()
    })
    .unwrap();
    let nobody = format!(
        "{}/team/pvc@sha256:{}",
        free_loopback_port(),
        "2".repeat(64)
    );
    let started = std::time::Instant::now();
    let err = puller.pull(&PullRequest::new(&nobody)).await.unwrap_err();
    assert!(matches!(err, OciError::Unreachable { .. }), "{err}");
    assert!(err.is_transient());
    assert!(
        err.to_string().contains(&nobody) && err.to_string().contains("plain HTTP"),
        "{err}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(60),
        "two backoffs of 20 and 40 ms were waited"
    );
}

#[tokio::test]
async fn a_module_over_the_size_limit_is_refused_before_download() {
    let registry = TestRegistry::start();
    let module = wasm(10_000, 9);
    let pushed = rekon_oci::push(&module, &registry.reference("team/big:v1"), &quick())
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let puller = Puller::new(PullerOptions {
        cache_dir: cache.path().into(),
        max_bytes: 4096,
        ..Default::default()
    })
    .unwrap();
    let err = puller.pull(&PullRequest::new(&pushed)).await.unwrap_err();
    assert!(
        matches!(err, OciError::TooLarge { size, limit: 4096, .. } if size == module.len() as u64),
        "{err}"
    );
    assert!(err.to_string().contains(&pushed), "{err}");
    let cached: Vec<_> = std::fs::read_dir(cache.path().join("blobs/sha256"))
        .unwrap()
        .collect();
    assert!(cached.is_empty(), "nothing was written to the cache");
}

#[tokio::test]
async fn an_image_without_a_wasm_layer_is_not_wasm() {
    let registry = TestRegistry::start();
    let by_digest = push_with_oci_client(
        &registry,
        "team/container:v1",
        ImageLayer::new(
            b"not wasm".to_vec(),
            "application/vnd.oci.image.layer.v1.tar".into(),
            None,
        ),
        Config::oci_v1(b"{}".to_vec(), None),
    )
    .await;
    let cache = tempfile::tempdir().unwrap();
    let err = puller(&cache)
        .pull(&PullRequest::new(by_digest))
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::NotWasm { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("application/vnd.oci.image.layer.v1.tar"),
        "{err}"
    );
}

#[tokio::test]
async fn a_layer_corrupted_in_the_registry_is_a_digest_mismatch() {
    let registry = TestRegistry::start();
    let module = wasm(2048, 5);
    let pushed = rekon_oci::push(&module, &registry.reference("team/pvc:v1"), &quick())
        .await
        .unwrap();
    let hex = sha256_hex(&module);
    let data = registry.storage_dir().join(format!(
        "docker/registry/v2/blobs/sha256/{}/{hex}/data",
        &hex[..2]
    ));
    let mut corrupted = module.clone();
    corrupted[100] ^= 0xff;
    std::fs::write(&data, corrupted).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let err = puller(&cache)
        .pull(&PullRequest::new(&pushed))
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::DigestMismatch { .. }), "{err}");
    assert!(
        err.to_string().contains(&hex) && err.to_string().contains("wasm layer"),
        "{err}"
    );
}

#[tokio::test]
async fn plain_http_to_a_remote_registry_is_refused_before_connecting() {
    let cache = tempfile::tempdir().unwrap();
    let remote = format!(
        "http://registry.example.invalid/team/pvc@sha256:{}",
        "3".repeat(64)
    );
    let err = puller(&cache)
        .pull(&PullRequest::new(&remote))
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::PolicyViolation { .. }), "{err}");
    assert!(
        err.to_string().contains("registry.example.invalid")
            && err.to_string().contains("--insecure-registry"),
        "{err}"
    );
    let err = rekon_oci::push(
        &wasm(64, 0),
        "http://registry.example.invalid/team/pvc:v1",
        &quick(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, OciError::InsecureRefused { .. }), "{err}");
}

#[tokio::test]
async fn signed_modules_verify_and_unsigned_or_wrongly_signed_ones_are_refused() {
    let registry = TestRegistry::start();
    let signed = rekon_oci::push(
        &wasm(300, 1),
        &registry.reference("team/signed:v1"),
        &quick(),
    )
    .await
    .unwrap();
    let unsigned = rekon_oci::push(
        &wasm(300, 2),
        &registry.reference("team/unsigned:v1"),
        &quick(),
    )
    .await
    .unwrap();
    let key = rekon_oci::generate_key();
    let other = rekon_oci::generate_key();
    let sig = rekon_oci::sign(&signed, key.private_pem.as_bytes(), &quick())
        .await
        .unwrap();
    assert!(sig.ends_with(".sig") && sig.contains(":sha256-"), "{sig}");
    assert_eq!(
        rekon_oci::verify(&signed, key.public_pem.as_bytes(), &quick())
            .await
            .unwrap(),
        signed.split('@').nth(1).unwrap()
    );

    let cache = tempfile::tempdir().unwrap();
    let puller = puller(&cache);
    let verify = |pem: &str| {
        Some(Verification {
            cosign_public_key_pem: pem.as_bytes().to_vec(),
        })
    };
    let pulled = puller
        .pull(&PullRequest {
            verify: verify(&key.public_pem),
            ..PullRequest::new(&signed)
        })
        .await
        .unwrap();
    assert!(pulled.verified && !pulled.from_cache);

    let err = puller
        .pull(&PullRequest {
            verify: verify(&other.public_pem),
            ..PullRequest::new(&signed)
        })
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::BadSignature { .. }), "{err}");
    assert!(
        err.to_string().contains(&signed) && err.to_string().contains("does not verify"),
        "{err}"
    );

    let err = puller
        .pull(&PullRequest {
            verify: verify(&key.public_pem),
            ..PullRequest::new(&unsigned)
        })
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::Unsigned { .. }), "{err}");
    assert!(
        err.to_string().contains(&unsigned) && err.to_string().contains(".sig"),
        "{err}"
    );

    // A second signer adds a layer; both keys verify; signing twice adds nothing.
    rekon_oci::sign(&signed, other.private_pem.as_bytes(), &quick())
        .await
        .unwrap();
    rekon_oci::sign(&signed, other.private_pem.as_bytes(), &quick())
        .await
        .unwrap();
    rekon_oci::verify(&signed, other.public_pem.as_bytes(), &quick())
        .await
        .unwrap();
    rekon_oci::verify(&signed, key.public_pem.as_bytes(), &quick())
        .await
        .unwrap();

    drop(registry);
    let cached = puller
        .pull(&PullRequest {
            verify: verify(&key.public_pem),
            ..PullRequest::new(&signed)
        })
        .await
        .unwrap();
    assert!(
        cached.from_cache && cached.verified,
        "a verification is remembered per key"
    );
}

#[tokio::test]
async fn a_basic_auth_https_registry_needs_the_credentials_and_the_ca() {
    let registry = TestRegistry::start_with_basic_auth("team", "s3cret");
    let ca = registry.ca_pem().unwrap().to_vec();
    let docker_config = format!(
        r#"{{"auths":{{"{}":{{"auth":"{}"}}}}}}"#,
        registry.host(),
        base64::engine::general_purpose::STANDARD.encode("team:s3cret")
    );
    let auth = auth_from_dockerconfigjson(docker_config.as_bytes(), &registry.host())
        .unwrap()
        .unwrap();
    assert!(matches!(auth, RegistryAuth::Basic { .. }));
    let with_ca = RegistryOptions {
        extra_ca_pem: vec![ca.clone()],
        ..quick()
    };

    let err = rekon_oci::push(&wasm(100, 1), &registry.reference("team/pvc:v1"), &with_ca)
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::Credentials { .. }), "{err}");

    let wrong = RegistryAuth::Basic {
        username: "team".into(),
        password: "wrong".into(),
    };
    let err = rekon_oci::push(
        &wasm(100, 1),
        &registry.reference("team/pvc:v1"),
        &RegistryOptions {
            auth: Some(wrong),
            ..with_ca.clone()
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(err, OciError::Credentials { .. }), "{err}");

    let authed = RegistryOptions {
        auth: Some(auth.clone()),
        ..with_ca.clone()
    };
    let pushed = rekon_oci::push(&wasm(100, 1), &registry.reference("team/pvc:v1"), &authed)
        .await
        .unwrap();

    let cache = tempfile::tempdir().unwrap();
    let trusting = Puller::new(PullerOptions {
        cache_dir: cache.path().into(),
        extra_ca_pem: vec![ca],
        retries: 0,
        ..Default::default()
    })
    .unwrap();
    let err = trusting.pull(&PullRequest::new(&pushed)).await.unwrap_err();
    assert!(matches!(err, OciError::Credentials { .. }), "{err}");
    let pulled = trusting
        .pull(&PullRequest {
            auth: Some(auth.clone()),
            ..PullRequest::new(&pushed)
        })
        .await
        .unwrap();
    assert_eq!(&pulled.bytes[..], &wasm(100, 1)[..]);

    let https_only = pushed.replacen("", "https://", 1);
    let distrusting = puller(&tempfile::tempdir().unwrap());
    let err = distrusting
        .pull(&PullRequest {
            auth: Some(auth),
            ..PullRequest::new(&https_only)
        })
        .await
        .unwrap_err();
    assert!(matches!(err, OciError::Unreachable { .. }), "{err}");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
}

#[test]
fn a_bad_ca_pem_is_refused_when_the_puller_is_made() {
    let cache = tempfile::tempdir().unwrap();
    let err = Puller::new(PullerOptions {
        cache_dir: cache.path().into(),
        extra_ca_pem: vec![
            b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n".to_vec(),
        ],
        ..Default::default()
    })
    .err()
    .unwrap();
    assert!(err.to_string().contains("CA"), "{err}");
}

fn policed(cache: &tempfile::TempDir, policy: HostPolicy) -> Puller {
    Puller::new(PullerOptions {
        cache_dir: cache.path().into(),
        retries: 0,
        policy,
        ..Default::default()
    })
    .unwrap()
}

#[tokio::test]
async fn the_hosts_policy_refuses_unsigned_wrongly_signed_and_unlisted_modules_whatever_they_name()
{
    let registry = TestRegistry::start();
    let host_key = rekon_oci::generate_key();
    let other_key = rekon_oci::generate_key();
    let push = |path: &'static str, fill: u8| {
        let reference = registry.reference(path);
        async move {
            rekon_oci::push(&wasm(300, fill), &reference, &quick())
                .await
                .unwrap()
        }
    };
    let (unsigned, wrong, right) = (
        push("team/unsigned:v1", 1).await,
        push("team/wrong:v1", 2).await,
        push("team/right:v1", 3).await,
    );
    rekon_oci::sign(&wrong, other_key.private_pem.as_bytes(), &quick())
        .await
        .unwrap();
    rekon_oci::sign(&right, host_key.private_pem.as_bytes(), &quick())
        .await
        .unwrap();

    // An unsigned module is pulled into the cache while no signature is required.
    let cache = tempfile::tempdir().unwrap();
    policed(&cache, HostPolicy::default())
        .pull(&PullRequest::new(&unsigned))
        .await
        .unwrap();

    let requiring = policed(
        &cache,
        HostPolicy {
            verification_keys: vec![host_key.public_pem.clone().into_bytes()],
            ..HostPolicy::default()
        },
    );
    let refused = |err: OciError, why: &str| {
        assert_eq!(err.reason(), "PolicyViolation", "{err}");
        let text = err.to_string();
        assert!(
            text.contains("--require-signature") && text.contains(why),
            "{text}"
        );
    };
    // Unsigned: refused, although the cache holds it.
    refused(
        requiring
            .pull(&PullRequest::new(&unsigned))
            .await
            .unwrap_err(),
        "no cosign signature",
    );
    // Signed by a key the host does not hold, even when the object names that key.
    refused(
        requiring
            .pull(&PullRequest {
                verify: Some(Verification {
                    cosign_public_key_pem: other_key.public_pem.clone().into_bytes(),
                }),
                ..PullRequest::new(&wrong)
            })
            .await
            .unwrap_err(),
        "does not verify",
    );
    let pulled = requiring.pull(&PullRequest::new(&right)).await.unwrap();
    assert!(pulled.verified && !pulled.from_cache);
    drop(registry);
    let cached = requiring.pull(&PullRequest::new(&right)).await.unwrap();
    assert!(
        cached.from_cache && cached.verified,
        "the host key's verification is kept"
    );

    // A registry the host does not allow is refused before the cache and the network.
    let listed = policed(
        &cache,
        HostPolicy {
            allowed_registries: Some(vec!["registry.example.com".into()]),
            ..HostPolicy::default()
        },
    );
    let err = listed.pull(&PullRequest::new(&right)).await.unwrap_err();
    assert_eq!(err.reason(), "PolicyViolation", "{err}");
    assert!(
        err.to_string()
            .contains("--allowed-registries registry.example.com"),
        "{err}"
    );
}

#[tokio::test]
async fn a_corrupted_cache_record_is_dropped_and_pulled_again_never_served() {
    let registry = TestRegistry::start();
    let (x_bytes, y_bytes) = (wasm(2048, 1), wasm(2048, 2));
    let x = rekon_oci::push(&x_bytes, &registry.reference("team/x:v1"), &quick())
        .await
        .unwrap();
    let y = rekon_oci::push(&y_bytes, &registry.reference("team/y:v1"), &quick())
        .await
        .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let puller = puller(&cache);
    puller.pull(&PullRequest::new(&x)).await.unwrap();
    puller.pull(&PullRequest::new(&y)).await.unwrap();

    // Every record naming X's bytes now names Y's (whatever the layout).
    let (x_hex, y_hex) = (sha256_hex(&x_bytes), sha256_hex(&y_bytes));
    let mut rewritten = 0;
    for entry in walk(cache.path()) {
        let content = std::fs::read(&entry).unwrap();
        if let Ok(text) = String::from_utf8(content)
            && text.contains(&x_hex)
        {
            std::fs::write(&entry, text.replace(&x_hex, &y_hex)).unwrap();
            rewritten += 1;
        }
    }
    assert!(rewritten > 0, "some record names X's bytes");
    let again = puller.pull(&PullRequest::new(&x)).await.unwrap();
    assert!(
        again.bytes[..] == x_bytes[..],
        "X's bytes, never Y's: got sha256 {}",
        sha256_hex(&again.bytes)
    );
    assert!(
        !again.from_cache,
        "the changed record was dropped and X pulled again"
    );

    // X's bytes change on disk while the registry is gone: refused, not served.
    drop(registry);
    let mut flipped = std::fs::read(&again.path).unwrap();
    flipped[100] ^= 0xff;
    std::fs::write(&again.path, &flipped).unwrap();
    let err = puller.pull(&PullRequest::new(&x)).await.unwrap_err();
    assert_eq!(err.reason(), "Unreachable", "{err}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
