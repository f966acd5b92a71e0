//! What the OCI commands (`push`, `pull`, `inspect`, `sign`, `verify`) share,
//! and how `test`, `eval` and `diff` take a module: a file, or a registry
//! reference pulled through the OCI cache.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use rekon_modules::PrecompiledCache;
use rekon_oci::{HostPolicy, ModuleRef, PullRequest, Puller, PullerOptions, RegistryOptions};
use rekon_runtime::{Engine, GuestLoader, GuestPre};

use crate::module_cache;

/// Registry flags.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct RegistryArgs {
    /// Allow plain HTTP to a registry that is not on loopback (loopback registries may use it anyway).
    #[arg(long)]
    pub insecure: bool,
    /// Trust this CA certificate (PEM) for registries, besides the system roots; repeatable.
    #[arg(long = "ca-file", value_name = "PEM")]
    pub ca_files: Vec<PathBuf>,
    /// Registry credentials: a docker config json (`~/.docker/config.json`, or a
    /// `kubernetes.io/dockerconfigjson` Secret's `.dockerconfigjson`).
    #[arg(long, value_name = "FILE", env = "REKON_DOCKER_CONFIG")]
    pub docker_config: Option<PathBuf>,
    /// Limit of one registry attempt, in seconds (two retries follow a transient failure).
    #[arg(long, default_value_t = 60)]
    pub registry_timeout_seconds: u64,
    /// The OCI cache pulled modules are kept in
    /// (default `$XDG_CACHE_HOME/rekon/oci`, else `~/.cache/rekon/oci`).
    #[arg(long, value_name = "DIR")]
    pub oci_cache_dir: Option<PathBuf>,
}

impl RegistryArgs {
    /// Connection settings for `reference`: CAs read, credentials for its registry looked up.
    pub fn options(&self, reference: &ModuleRef) -> anyhow::Result<RegistryOptions> {
        Ok(RegistryOptions {
            insecure: self.insecure,
            auth: self.auth(reference)?,
            extra_ca_pem: self.ca_pems()?,
            timeout: Duration::from_secs(self.registry_timeout_seconds),
            ..RegistryOptions::default()
        })
    }

    /// A puller for `reference`; with `--insecure`, its registry may be reached over plain HTTP.
    pub fn puller(&self, reference: &ModuleRef) -> anyhow::Result<Puller> {
        let cache_dir = match &self.oci_cache_dir {
            Some(dir) => dir.clone(),
            None => default_cache_dir()?,
        };
        Ok(Puller::new(PullerOptions {
            cache_dir,
            extra_ca_pem: self.ca_pems()?,
            timeout: Duration::from_secs(self.registry_timeout_seconds),
            policy: HostPolicy {
                insecure_registries: self
                    .insecure
                    .then(|| reference.registry().to_string())
                    .into_iter()
                    .collect(),
                ..HostPolicy::default()
            },
            ..PullerOptions::default()
        })?)
    }

    fn ca_pems(&self) -> anyhow::Result<Vec<Vec<u8>>> {
        self.ca_files
            .iter()
            .map(|path| {
                std::fs::read(path)
                    .with_context(|| format!("{}: cannot read the CA file", path.display()))
            })
            .collect()
    }

    fn auth(&self, reference: &ModuleRef) -> anyhow::Result<Option<rekon_oci::RegistryAuth>> {
        let Some(path) = &self.docker_config else {
            return Ok(None);
        };
        let bytes = std::fs::read(path)
            .with_context(|| format!("{}: cannot read the docker config", path.display()))?;
        rekon_oci::auth_from_dockerconfigjson(&bytes, reference.registry())
            .with_context(|| format!("{}", path.display()))
    }

    /// Pulls `reference` (a tag is resolved to its manifest digest first; with
    /// `sha256`, the wasm bytes must match it).
    pub async fn pull(
        &self,
        reference: &str,
        sha256: Option<String>,
    ) -> anyhow::Result<rekon_oci::Pulled> {
        let module = ModuleRef::parse(reference)?;
        let options = self.options(&module)?;
        let image = if module.digest().is_none() && sha256.is_none() {
            rekon_oci::resolve(reference, &options).await?
        } else {
            reference.to_string()
        };
        let request = PullRequest {
            image,
            sha256,
            insecure: self.insecure,
            auth: options.auth,
            verify: None,
        };
        Ok(self.puller(&module)?.pull(&request).await?)
    }
}

fn default_cache_dir() -> anyhow::Result<PathBuf> {
    let base = match (std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")) {
        (Some(xdg), _) if !xdg.is_empty() => PathBuf::from(xdg),
        (_, Some(home)) => PathBuf::from(home).join(".cache"),
        _ => anyhow::bail!("no cache directory: set --oci-cache-dir, XDG_CACHE_HOME or HOME"),
    };
    Ok(base.join("rekon").join("oci"))
}

/// Whether `spec` names a registry reference rather than a file: it is not an
/// existing file, and it starts with `oci://`, `http(s)://`, or a registry host
/// (a first path segment with a `.` or `:`, or `localhost`) and has a tag or digest.
pub fn is_reference(spec: &Path) -> bool {
    if spec.exists() {
        return false;
    }
    let Some(text) = spec.to_str() else {
        return false;
    };
    if ["oci://", "http://", "https://"]
        .iter()
        .any(|p| text.starts_with(p))
    {
        return true;
    }
    let Some((host, rest)) = text.split_once('/') else {
        return false;
    };
    let names_registry = host.contains('.') || host.contains(':') || host == "localhost";
    let last = rest.rsplit('/').next().unwrap_or_default();
    names_registry && (last.contains(':') || last.contains('@'))
}

/// Loads the guest `spec` names: a component file, or a registry reference.
pub async fn load_guest<'e>(
    cache: &PrecompiledCache,
    engine: &'e Engine,
    loader: impl Fn() -> GuestLoader<'e>,
    spec: &Path,
    registry: &RegistryArgs,
) -> anyhow::Result<GuestPre> {
    if !is_reference(spec) {
        return Ok(module_cache::load_file(cache, engine, loader, spec)?);
    }
    let reference = spec.to_string_lossy();
    let pulled = registry
        .pull(&reference, None)
        .await
        .with_context(|| format!("pulling {reference}"))?;
    Ok(module_cache::load_bytes(
        cache,
        engine,
        loader,
        &pulled.image,
        pulled.image.clone(),
        &pulled.bytes,
    )?)
}

/// [`load_guest`] from synchronous code running on the multi-threaded runtime of `main`.
pub fn load_guest_blocking<'e>(
    cache: &PrecompiledCache,
    engine: &'e Engine,
    loader: impl Fn() -> GuestLoader<'e>,
    spec: &Path,
    registry: &RegistryArgs,
) -> anyhow::Result<GuestPre> {
    if !is_reference(spec) {
        return Ok(module_cache::load_file(cache, engine, loader, spec)?);
    }
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current()
            .block_on(load_guest(cache, engine, loader, spec, registry))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_told_apart_from_file_names() {
        for reference in [
            "127.0.0.1:5000/team/pvc:v1",
            "registry.example.com/team/pvc@sha256:0123",
            "localhost/pvc:v1",
            "oci://registry.example.com/pvc",
        ] {
            assert!(is_reference(Path::new(reference)), "{reference}");
        }
        for file in [
            "guest.wasm",
            "target/guest.wasm",
            "./dir.v2/guest.wasm",
            "registry.example.com/pvc",
        ] {
            assert!(!is_reference(Path::new(file)), "{file}");
        }
    }
}
