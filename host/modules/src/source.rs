//! Reading the guests directory into what each controller should run: the
//! configuration, the module files it names, each checked against its pinned
//! digest before anything is compiled.
//!
//! A mounted ConfigMap changes by an atomic swap of the `..data` symlink; the
//! whole directory is read through one resolution of it, so a configuration
//! and the modules it pins always come from the same generation.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rekon_runtime::{Limits, World};

use crate::config::{
    AutoPromote, AutoRollback, CONFIG_FILE, ConfigError, ControllerConfig, GuestsConfig, Mode,
    ModuleRef,
};
use crate::digest::ModuleDigest;

/// The symlink kubelet swaps atomically in a mounted ConfigMap or Secret.
const CONFIGMAP_DATA: &str = "..data";

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: is a {kind}, not a regular file; the module was not loaded")]
    NotAFile { path: String, kind: &'static str },
    #[error(
        "{controller}: {path} has sha256 {actual}, but guests.yaml pins {expected}; \
         the module was not loaded"
    )]
    DigestMismatch {
        controller: World,
        path: String,
        expected: ModuleDigest,
        actual: ModuleDigest,
    },
    #[error("{controller}: no module in {dir}: expected {expected} or a guests.yaml naming one")]
    NoModule {
        controller: World,
        dir: String,
        expected: String,
    },
}

/// A module file as read, with the digest of its bytes.
#[derive(Clone)]
pub struct ModuleFile {
    /// Guest name for logs and the journal: the file stem.
    pub name: String,
    pub path: PathBuf,
    pub bytes: Arc<[u8]>,
    pub digest: ModuleDigest,
}

impl std::fmt::Debug for ModuleFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, sha256 {})",
            self.name,
            self.path.display(),
            self.digest.short()
        )
    }
}

/// What one controller should run.
#[derive(Debug, Clone)]
pub struct ControllerPlan {
    pub world: World,
    /// Decides and is applied.
    pub serving: ModuleFile,
    /// Decides beside `serving`, never applied.
    pub shadow: Option<ModuleFile>,
    /// Kept loaded; automatic rollback republishes it.
    pub fallback: Option<ModuleFile>,
    pub mode: Mode,
    pub limits: Limits,
    pub auto_rollback: Option<AutoRollback>,
    /// In mode shadow: promote the shadow on evidence.
    pub auto_promote: Option<AutoPromote>,
    /// Whether a guests.yaml pinned the digests (else they are only logged).
    pub pinned: bool,
}

/// Identifies a plan: equal fingerprints need no reload.
#[derive(Debug, Clone, PartialEq)]
pub struct Fingerprint {
    serving: ModuleDigest,
    shadow: Option<ModuleDigest>,
    fallback: Option<ModuleDigest>,
    mode: Mode,
    limits: Limits,
    auto_rollback: Option<(u64, u64)>,
    auto_promote: Option<AutoPromote>,
}

impl ControllerPlan {
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint {
            serving: self.serving.digest.clone(),
            shadow: self.shadow.as_ref().map(|m| m.digest.clone()),
            fallback: self.fallback.as_ref().map(|m| m.digest.clone()),
            mode: self.mode,
            limits: self.limits,
            auto_rollback: self
                .auto_rollback
                .map(|p| (p.max_failure_fraction.to_bits(), p.min_decisions)),
            auto_promote: self.auto_promote,
        }
    }
}

/// One read of the guests directory.
pub struct DirPlan {
    /// Per world, in [`World::all`] order: the plan, or why it could not be read.
    pub controllers: Vec<(World, Result<ControllerPlan, SourceError>)>,
}

/// Conventional module file names, used without guests.yaml: `<world>.wasm`,
/// or the `rekon_guest_<world>.wasm` that `make guests` builds.
pub fn conventional_names(world: World) -> [String; 2] {
    let name = world.name();
    [
        format!("{name}.wasm"),
        format!("rekon_guest_{}.wasm", name.replace('-', "_")),
    ]
}

/// Reads the directory. Fails as a whole only when guests.yaml is unreadable or
/// invalid; a bad module fails its controller's plan alone. `max_memory_bytes`
/// is the engine's bound on any guest's memory cap.
pub fn read_plan(
    dir: &Path,
    defaults: Limits,
    max_memory_bytes: usize,
) -> Result<DirPlan, SourceError> {
    let root = generation_root(dir);
    let config_path = root.join(CONFIG_FILE);
    let config = match read_regular(&config_path) {
        Ok(bytes) => {
            let text = String::from_utf8(bytes).map_err(|err| SourceError::Read {
                path: config_path.display().to_string(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, err),
            })?;
            let file = config_path.display().to_string();
            Some(GuestsConfig::parse(&file, &text, max_memory_bytes >> 20)?)
        }
        Err(SourceError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            None
        }
        Err(err) => return Err(err),
    };
    let controllers = World::dedicated()
        .map(|world| {
            let plan = match config.as_ref().and_then(|c| c.controller(world)) {
                Some(controller) => configured(&root, world, controller, defaults),
                None => conventional(&root, world, defaults),
            };
            (world, plan)
        })
        .collect();
    Ok(DirPlan { controllers })
}

/// The directory every file is read from: the current generation of a mounted
/// ConfigMap, or the directory itself.
fn generation_root(dir: &Path) -> PathBuf {
    let data = dir.join(CONFIGMAP_DATA);
    match std::fs::canonicalize(&data) {
        Ok(resolved) if resolved.is_dir() => resolved,
        _ => dir.to_path_buf(),
    }
}

fn configured(
    root: &Path,
    world: World,
    config: &ControllerConfig,
    defaults: Limits,
) -> Result<ControllerPlan, SourceError> {
    let module = ModuleRef {
        module: config.module.clone(),
        sha256: config.sha256.clone(),
    };
    let read = |m: &ModuleRef| read_pinned(root, world, m);
    let optional = |m: &Option<ModuleRef>| m.as_ref().map(read).transpose();
    let module = match config.mode {
        Mode::Rollback => None,
        _ => Some(read(&module)?),
    };
    let plan = PlannedModules {
        module,
        shadow: optional(&config.shadow)?,
        previous: optional(&config.previous)?,
    }
    .compose(world, config.mode, config.limits(defaults));
    Ok(ControllerPlan {
        auto_rollback: config.auto_rollback,
        auto_promote: config.auto_promote,
        ..plan
    })
}

/// The module files a configuration names: `module` (absent in mode
/// rollback, where it is not run), `shadow`, `previous`.
pub struct PlannedModules {
    pub module: Option<ModuleFile>,
    pub shadow: Option<ModuleFile>,
    pub previous: Option<ModuleFile>,
}

impl PlannedModules {
    /// What serves, shadows and backs up in `mode` (validated: the modes
    /// other than active have a previous version, mode shadow no `shadow`).
    pub fn compose(self, world: World, mode: Mode, limits: Limits) -> ControllerPlan {
        let (serving, shadow, fallback) = match mode {
            Mode::Active => (
                self.module.expect("read in mode active"),
                self.shadow,
                self.previous,
            ),
            Mode::Shadow => (self.previous.expect("validated"), self.module, None),
            Mode::Rollback => (self.previous.expect("validated"), None, None),
        };
        ControllerPlan {
            world,
            serving,
            shadow,
            fallback,
            mode,
            limits,
            auto_rollback: None,
            auto_promote: None,
            pinned: true,
        }
    }
}

fn conventional(
    root: &Path,
    world: World,
    defaults: Limits,
) -> Result<ControllerPlan, SourceError> {
    let names = conventional_names(world);
    // Whatever the name points at is read (and refused if it is no regular file).
    let path = names
        .iter()
        .map(|n| root.join(n))
        .find(|p| p.exists())
        .ok_or_else(|| SourceError::NoModule {
            controller: world,
            dir: root.display().to_string(),
            expected: names.join(" or "),
        })?;
    let serving = read_module(&path)?;
    Ok(ControllerPlan {
        world,
        serving,
        shadow: None,
        fallback: None,
        mode: Mode::Active,
        limits: defaults,
        auto_rollback: None,
        auto_promote: None,
        pinned: false,
    })
}

fn read_pinned(root: &Path, world: World, module: &ModuleRef) -> Result<ModuleFile, SourceError> {
    let file = read_module(&root.join(&module.module))?;
    if file.digest != module.sha256 {
        return Err(SourceError::DigestMismatch {
            controller: world,
            path: file.path.display().to_string(),
            expected: module.sha256.clone(),
            actual: file.digest,
        });
    }
    Ok(file)
}

pub(crate) fn read_module(path: &Path) -> Result<ModuleFile, SourceError> {
    let bytes = read_regular(path)?;
    Ok(ModuleFile {
        name: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: path.to_path_buf(),
        digest: ModuleDigest::of(&bytes),
        bytes: bytes.into(),
    })
}

/// Reads a regular file. Anything else (a FIFO, a socket, a device, a
/// directory) is refused without reading: a FIFO would block the read until a
/// writer came. It is opened non-blocking and checked after opening, so a file
/// swapped in between cannot block either.
fn read_regular(path: &Path) -> Result<Vec<u8>, SourceError> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};

    let read_error = |source| SourceError::Read {
        path: path.display().to_string(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(read_error)?;
    let file_type = file.metadata().map_err(read_error)?.file_type();
    let kind = if file_type.is_file() {
        None
    } else if file_type.is_dir() {
        Some("directory")
    } else if file_type.is_fifo() {
        Some("FIFO")
    } else if file_type.is_socket() {
        Some("socket")
    } else if file_type.is_block_device() || file_type.is_char_device() {
        Some("device")
    } else {
        Some("special file")
    };
    if let Some(kind) = kind {
        return Err(SourceError::NotAFile {
            path: path.display().to_string(),
            kind,
        });
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(read_error)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, bytes: &[u8]) {
        std::fs::write(dir.join(name), bytes).unwrap();
    }

    fn plan(dir: &Path, world: World) -> Result<ControllerPlan, SourceError> {
        let mut plan = read_plan(dir, Limits::default(), 256 << 20).unwrap();
        let index = World::dedicated().position(|w| w == world).unwrap();
        plan.controllers.remove(index).1
    }

    #[test]
    fn without_guests_yaml_the_conventional_files_serve_unpinned() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "rekon_guest_pvc_protection.wasm", b"pvc");
        let pvc = plan(dir.path(), World::named("pvc-protection").unwrap()).unwrap();
        assert_eq!(pvc.serving.name, "rekon_guest_pvc_protection");
        assert_eq!(pvc.serving.digest, ModuleDigest::of(b"pvc"));
        assert!(!pvc.pinned);
        let err = plan(dir.path(), World::named("resource-claim").unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("resource-claim.wasm or rekon_guest_resource_claim.wasm"),
            "{err}"
        );
    }

    #[test]
    fn a_pinned_module_with_other_bytes_is_refused_before_compiling() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "v2.wasm", b"tampered");
        let pinned = ModuleDigest::of(b"original");
        write(
            dir.path(),
            CONFIG_FILE,
            format!("pvc-protection: {{module: v2.wasm, sha256: {pinned}}}\n").as_bytes(),
        );
        let err = plan(dir.path(), World::named("pvc-protection").unwrap()).unwrap_err();
        assert!(matches!(err, SourceError::DigestMismatch { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("v2.wasm") && text.contains(pinned.hex()),
            "{text}"
        );
    }

    #[test]
    fn modes_choose_what_serves() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "new.wasm", b"new");
        write(dir.path(), "old.wasm", b"old");
        let (new, old) = (ModuleDigest::of(b"new"), ModuleDigest::of(b"old"));
        for (mode, serving, shadow, fallback) in [
            ("active", &new, None, Some(&old)),
            ("shadow", &old, Some(&new), None),
            ("rollback", &old, None, None),
        ] {
            let config = format!(
                "pvc-protection:\n  module: new.wasm\n  sha256: {new}\n  mode: {mode}\n  \
                 previous: {{module: old.wasm, sha256: {old}}}\n"
            );
            write(dir.path(), CONFIG_FILE, config.as_bytes());
            let plan = plan(dir.path(), World::named("pvc-protection").unwrap()).unwrap();
            assert_eq!(&plan.serving.digest, serving, "{mode}");
            assert_eq!(plan.shadow.as_ref().map(|m| &m.digest), shadow, "{mode}");
            assert_eq!(
                plan.fallback.as_ref().map(|m| &m.digest),
                fallback,
                "{mode}"
            );
        }
    }

    #[test]
    fn a_fifo_named_as_a_module_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("v2.wasm");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let pinned = ModuleDigest::of(b"original");
        write(
            dir.path(),
            CONFIG_FILE,
            format!("pvc-protection: {{module: v2.wasm, sha256: {pinned}}}\n").as_bytes(),
        );
        // A blocking read would wait here forever for a writer.
        let (done, result) = std::sync::mpsc::channel();
        let path = dir.path().to_path_buf();
        std::thread::spawn(move || {
            let _ = done.send(plan(&path, World::named("pvc-protection").unwrap()).map(|_| ()));
        });
        let err = result
            .recv_timeout(std::time::Duration::from_secs(5))
            .expect("reading a FIFO module returns")
            .unwrap_err();
        assert!(
            matches!(err, SourceError::NotAFile { kind: "FIFO", .. }),
            "{err}"
        );
        assert!(err.to_string().contains("v2.wasm: is a FIFO"), "{err}");
    }

    #[test]
    fn a_directory_with_a_conventional_name_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pvc-protection.wasm")).unwrap();
        let err = plan(dir.path(), World::named("pvc-protection").unwrap()).unwrap_err();
        assert!(
            matches!(
                err,
                SourceError::NotAFile {
                    kind: "directory",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_memory_cap_over_the_engine_maximum_names_file_controller_and_field() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "v2.wasm", b"v2");
        let digest = ModuleDigest::of(b"v2");
        write(
            dir.path(),
            CONFIG_FILE,
            format!("pvc-protection: {{module: v2.wasm, sha256: {digest}, memoryMiB: 512}}\n")
                .as_bytes(),
        );
        let err = read_plan(dir.path(), Limits::default(), 256 << 20)
            .err()
            .expect("refused")
            .to_string();
        assert!(
            err.contains("guests.yaml: field `pvc-protection.memoryMiB`")
                && err.contains("between 1 and 256"),
            "{err}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn reads_one_configmap_generation_through_the_data_symlink() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let generation = |name: &str, content: &[u8]| {
            let g = dir.path().join(name);
            std::fs::create_dir(&g).unwrap();
            write(&g, "pvc-protection.wasm", content);
        };
        generation("..2026_01", b"v1");
        generation("..2026_02", b"v2");
        symlink("..2026_01", dir.path().join(CONFIGMAP_DATA)).unwrap();
        symlink(
            "..data/pvc-protection.wasm",
            dir.path().join("pvc-protection.wasm"),
        )
        .unwrap();
        assert_eq!(
            plan(dir.path(), World::named("pvc-protection").unwrap())
                .unwrap()
                .serving
                .digest,
            ModuleDigest::of(b"v1")
        );

        // What kubelet does: a new symlink renamed over ..data.
        symlink("..2026_02", dir.path().join("..data_tmp")).unwrap();
        std::fs::rename(
            dir.path().join("..data_tmp"),
            dir.path().join(CONFIGMAP_DATA),
        )
        .unwrap();
        assert_eq!(
            plan(dir.path(), World::named("pvc-protection").unwrap())
                .unwrap()
                .serving
                .digest,
            ModuleDigest::of(b"v2")
        );
    }
}
