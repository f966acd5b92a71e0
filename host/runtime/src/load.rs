//! Loading a guest: read, digest, classify the binary, compile, check that it
//! exports a supported world and version, and resolve it against the host linker.

use std::path::Path;

use rekon_contract::{ContractVersion, SUPPORTED_VERSIONS};
use wasmtime::component::Component;

use crate::engine::Engine;
use crate::guest::GuestPre;
use crate::id::GuestId;
use crate::limits::Limits;
use crate::world::World;

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{origin}: cannot read: {source}")]
    Read {
        origin: String,
        source: std::io::Error,
    },
    #[error(
        "{origin}: is a core WebAssembly module, not a component; build for wasm32-wasip2 \
         (`cargo build --target wasm32-wasip2`) or wrap it with `wasm-tools component new`"
    )]
    CoreModule { origin: String },
    #[error("{origin}: is a precompiled module (.cwasm); load it with GuestLoader::precompiled")]
    Precompiled { origin: String },
    #[error("{origin}: not a valid WebAssembly component: {source}")]
    Compile {
        origin: String,
        source: wasmtime::Error,
    },
    #[error(
        "{origin}: does not export {expected}; it exports {}; host supports rekon:reconcile {}",
        list_or_nothing(.exports),
        supported_versions()
    )]
    NoSupportedWorld {
        origin: String,
        exports: Vec<String>,
        /// What was looked for, e.g. "rekon:reconcile/pvc-decider@0.1.0".
        expected: String,
    },
    #[error(
        "{origin}: exports {export}: rekon:reconcile {found} is not a contract version this host \
         supports (it supports {}); rebuild the guest against one of them",
        supported_versions()
    )]
    UnsupportedVersion {
        origin: String,
        /// The decider interface found, e.g. "rekon:reconcile/pvc-decider@0.3.0".
        export: String,
        /// Its version, e.g. "0.3.0".
        found: String,
    },
    #[error("{origin}: exports the worlds {}; say which to load", .worlds.join(", "))]
    AmbiguousWorld {
        origin: String,
        worlds: Vec<&'static str>,
    },
    #[error(
        "{origin}: cannot be linked (it imports something the host does not provide): {source}"
    )]
    Link {
        origin: String,
        source: wasmtime::Error,
    },
    #[error("{origin}: memory cap of {requested} bytes exceeds the engine's largest ({max} bytes)")]
    MemoryCapTooLarge {
        origin: String,
        requested: usize,
        max: usize,
    },
}

fn list_or_nothing(items: &[String]) -> String {
    if items.is_empty() {
        "nothing".to_owned()
    } else {
        items.join(", ")
    }
}

fn supported_versions() -> String {
    SUPPORTED_VERSIONS
        .iter()
        .map(|v| v.version)
        .collect::<Vec<_>>()
        .join(", ")
}

impl Engine {
    /// Starts loading a guest into this engine.
    pub fn loader(&self) -> GuestLoader<'_> {
        GuestLoader::new(self)
    }
}

/// Builds a [`GuestPre`]: `engine.loader().world(world).file(path)`.
pub struct GuestLoader<'e> {
    engine: &'e Engine,
    world: Option<World>,
    limits: Limits,
    id: Option<GuestId>,
}

impl<'e> GuestLoader<'e> {
    fn new(engine: &'e Engine) -> Self {
        Self {
            engine,
            world: None,
            limits: engine.config().default_limits,
            id: None,
        }
    }

    /// Names the guest `id` rather than after the bytes loaded: a module loaded
    /// from its precompiled form keeps the name and digest of its component.
    pub fn id(mut self, id: GuestId) -> Self {
        self.id = Some(id);
        self
    }

    /// The id given with [`Self::id`], else `name` with the digest of `bytes`.
    fn id_or(&mut self, name: &str, bytes: &[u8]) -> GuestId {
        self.id.take().unwrap_or_else(|| GuestId::of(name, bytes))
    }

    /// Require this world; without it the world is detected from the exports.
    pub fn world(mut self, world: World) -> Self {
        self.world = Some(world);
        self
    }

    /// Deadline and memory cap of every decision of this guest.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Loads a component file; the guest is named after the file stem.
    pub fn file(mut self, path: impl AsRef<Path>) -> Result<GuestPre, LoadError> {
        let file = ComponentFile::read(path.as_ref())?;
        let id = self.id_or(&file.name, &file.bytes);
        self.load(file.origin, id, Format::Component(&file.bytes))
    }

    /// Loads a component (binary, or WAT text) held in memory.
    pub fn bytes(mut self, name: &str, bytes: &[u8]) -> Result<GuestPre, LoadError> {
        let id = self.id_or(name, bytes);
        self.load(name.to_owned(), id, Format::Component(bytes))
    }

    /// Loads a component precompiled by [`Engine::precompile`] (a `.cwasm`).
    ///
    /// # Safety
    ///
    /// The bytes must come from [`Engine::precompile`] of a compatible engine and
    /// be trusted: wasmtime maps them as executable code without validation.
    pub unsafe fn precompiled(mut self, name: &str, bytes: &[u8]) -> Result<GuestPre, LoadError> {
        let id = self.id_or(name, bytes);
        self.load(name.to_owned(), id, Format::Precompiled(bytes))
    }

    /// Loads a precompiled module from a file, mapped rather than copied: the code
    /// is shared with the page cache and only the pages that run become resident
    /// (a TypeScript module's precompiled form is about 37 MB). The guest is
    /// `id`, the component it was compiled from; `origin` names it in errors.
    ///
    /// # Safety
    ///
    /// As [`Self::precompiled`], for the file's contents, which must also not be
    /// modified while the guest is loaded (replace it by renaming a new file over it).
    pub unsafe fn precompiled_file(
        self,
        origin: &str,
        id: GuestId,
        path: &Path,
    ) -> Result<GuestPre, LoadError> {
        self.load(origin.to_owned(), id, Format::PrecompiledFile(path))
    }

    fn load(self, origin: String, id: GuestId, format: Format) -> Result<GuestPre, LoadError> {
        let engine = self.engine;
        let max = engine.config().max_memory_bytes;
        if self.limits.memory_bytes > max {
            return Err(LoadError::MemoryCapTooLarge {
                origin,
                requested: self.limits.memory_bytes,
                max,
            });
        }
        let component = match format {
            Format::Component(bytes) => compile(engine, &origin, bytes)?,
            // SAFETY: the caller of `precompiled` vouches for the bytes.
            Format::Precompiled(bytes) => unsafe {
                Component::deserialize(engine.wasmtime(), bytes)
            }
            .map_err(|source| LoadError::Compile {
                origin: origin.clone(),
                source,
            })?,
            // SAFETY: the caller of `precompiled_file` vouches for the file.
            Format::PrecompiledFile(path) => {
                unsafe { Component::deserialize_file(engine.wasmtime(), path) }.map_err(
                    |source| LoadError::Compile {
                        origin: origin.clone(),
                        source,
                    },
                )?
            }
        };
        let (world, version) = detect_world(engine, &component, self.world, &origin)?;
        let link_err = |source| LoadError::Link {
            origin: origin.clone(),
            source,
        };
        let pre = engine
            .linker()
            .instantiate_pre(&component)
            .map_err(link_err)?;
        let bound = world
            .bind(version.version, pre.clone())
            .unwrap_or_else(|| {
                unreachable!("version {version} is listed as supported but not bound")
            })
            .map_err(link_err)?;
        tracing::debug!(guest = %id, %world, version = version.version, "guest loaded");
        Ok(GuestPre::new(
            id,
            world,
            self.limits,
            pre,
            bound,
            engine.clone(),
        ))
    }
}

/// A component read from disk, before it is compiled.
pub struct ComponentFile {
    /// The path as errors and logs show it.
    pub origin: String,
    /// The file stem: what the guest is named.
    pub name: String,
    pub bytes: Vec<u8>,
}

impl ComponentFile {
    pub fn read(path: &Path) -> Result<Self, LoadError> {
        let origin = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
            origin: origin.clone(),
            source,
        })?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| origin.clone());
        Ok(Self {
            origin,
            name,
            bytes,
        })
    }
}

enum Format<'a> {
    Component(&'a [u8]),
    Precompiled(&'a [u8]),
    PrecompiledFile(&'a Path),
}

/// Compiles after telling apart the binaries people pass by mistake.
fn compile(engine: &Engine, origin: &str, bytes: &[u8]) -> Result<Component, LoadError> {
    match classify(bytes) {
        Binary::CoreModule => {
            return Err(LoadError::CoreModule {
                origin: origin.to_owned(),
            });
        }
        Binary::Precompiled => {
            return Err(LoadError::Precompiled {
                origin: origin.to_owned(),
            });
        }
        Binary::Component | Binary::Other => {}
    }
    // Anything else (a component, or WAT text for hand-written test components)
    // is left to the compiler, whose error says what is wrong.
    crate::progress::compiling(origin, bytes.len(), || {
        Component::new(engine.wasmtime(), bytes)
    })
    .map_err(|source| LoadError::Compile {
        origin: origin.to_owned(),
        source,
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Binary {
    Component,
    CoreModule,
    Precompiled,
    Other,
}

/// The preamble: `\0asm`, then a 16-bit version and a 16-bit layer
/// (core modules: version 1, layer 0; components: layer 1).
fn classify(bytes: &[u8]) -> Binary {
    const CORE: [u8; 8] = [0, b'a', b's', b'm', 1, 0, 0, 0];
    match bytes.get(..8) {
        Some(head) if head == CORE => Binary::CoreModule,
        Some(head) if head[..4] == *b"\0asm" && head[6..8] == [1, 0] => Binary::Component,
        _ if wasmtime::Engine::detect_precompiled(bytes).is_some() => Binary::Precompiled,
        _ => Binary::Other,
    }
}

/// Finds the world (and version) whose decider interface the component exports.
fn detect_world(
    engine: &Engine,
    component: &Component,
    wanted: Option<World>,
    origin: &str,
) -> Result<(World, &'static ContractVersion), LoadError> {
    let ty = component.component_type();
    let exports: Vec<String> = ty
        .exports(engine.wasmtime())
        .map(|(name, _)| name.to_owned())
        .collect();
    let worlds: Vec<World> = match wanted {
        Some(world) => vec![world],
        None => World::all().collect(),
    };
    let worlds = &worlds[..];
    let found: Vec<(World, &'static ContractVersion)> = SUPPORTED_VERSIONS
        .iter()
        .flat_map(|v| worlds.iter().map(move |w| (*w, v)))
        .filter(|(w, v)| w.export(v).is_some_and(|x| exports.contains(&x)))
        .collect();
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(match unsupported_version(&exports, worlds) {
            Some((export, found)) => LoadError::UnsupportedVersion {
                origin: origin.to_owned(),
                export,
                found,
            },
            None => LoadError::NoSupportedWorld {
                origin: origin.to_owned(),
                expected: expected_exports(worlds),
                exports,
            },
        }),
        // Newest supported version first; a component exporting two versions of
        // the same world is served by the newest.
        [first, rest @ ..] if rest.iter().all(|(w, _)| *w == first.0) => Ok(*first),
        _ => Err(LoadError::AmbiguousWorld {
            origin: origin.to_owned(),
            worlds: {
                let mut names: Vec<&'static str> = found.iter().map(|(w, _)| w.name()).collect();
                names.sort_unstable();
                names.dedup();
                names
            },
        }),
    }
}

/// A decider interface of one of `worlds` at a version the host does not bind:
/// `(export, version)`.
fn unsupported_version(exports: &[String], worlds: &[World]) -> Option<(String, String)> {
    exports.iter().find_map(|export| {
        let (interface, version) = export.strip_prefix("rekon:reconcile/")?.split_once('@')?;
        worlds
            .iter()
            .any(|w| w.interface() == interface)
            .then(|| (export.clone(), version.to_owned()))
    })
}

fn expected_exports(worlds: &[World]) -> String {
    let names: Vec<String> = SUPPORTED_VERSIONS
        .iter()
        .flat_map(|v| worlds.iter().filter_map(move |w| w.export(v)))
        .collect();
    match names.as_slice() {
        [one] => one.clone(),
        _ => format!("any of {}", names.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_preamble() {
        assert_eq!(
            classify(&wat::parse_str("(module)").unwrap()),
            Binary::CoreModule
        );
        assert_eq!(
            classify(&wat::parse_str("(component)").unwrap()),
            Binary::Component
        );
        assert_eq!(classify(b"(component)"), Binary::Other);
        assert_eq!(classify(b""), Binary::Other);
    }

    #[test]
    fn no_supported_world_names_exports_expected_and_versions() {
        let err = LoadError::NoSupportedWorld {
            origin: "g.wasm".into(),
            exports: vec!["rekon:reconcile/pvc-decider@0.2.0".into()],
            expected: expected_exports(&[World::named("pvc-protection").unwrap()]),
        };
        assert_eq!(
            err.to_string(),
            "g.wasm: does not export any of rekon:reconcile/pvc-decider@0.2.0, \
             rekon:reconcile/pvc-decider@0.1.0; it exports \
             rekon:reconcile/pvc-decider@0.2.0; host supports rekon:reconcile 0.3.0, 0.2.0, 0.1.0"
        );
    }

    #[test]
    fn unknown_version_of_a_known_world_names_what_was_found_and_what_is_supported() {
        let exports = vec![
            "wasi:cli/run@0.2.0".to_owned(),
            "rekon:reconcile/claim-decider@0.9.0".to_owned(),
        ];
        let all: Vec<World> = World::all().collect();
        let (export, found) = unsupported_version(&exports, &all).unwrap();
        assert_eq!(found, "0.9.0");
        let err = LoadError::UnsupportedVersion {
            origin: "g.wasm".into(),
            export,
            found,
        };
        assert_eq!(
            err.to_string(),
            "g.wasm: exports rekon:reconcile/claim-decider@0.9.0: rekon:reconcile 0.9.0 is not a \
             contract version this host supports (it supports 0.3.0, 0.2.0, 0.1.0); rebuild the guest \
             against one of them"
        );
        let pvc = World::named("pvc-protection").unwrap();
        assert!(unsupported_version(&exports, &[pvc]).is_none());
    }
}
