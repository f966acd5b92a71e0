//! Which controllers run: `--controllers` (kube-controller-manager's syntax)
//! and API discovery (whether the server serves the APIs a controller needs).

use std::str::FromStr;

use kube::Client;

use crate::builtin::{CONTROLLERS, names};

/// Which controllers run, as kube-controller-manager's `--controllers`: a list
/// of names, `*` for all, `-name` to disable one. An explicit name wins over
/// its negation's absence; `-name` wins over `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection(Vec<String>);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SelectionError {
    #[error("--controllers: unknown controller {name:?} (known: {known})")]
    Unknown { name: String, known: String },
    #[error("--controllers: empty entry")]
    Empty,
}

impl Default for Selection {
    fn default() -> Self {
        Self(vec!["*".into()])
    }
}

impl FromStr for Selection {
    type Err = SelectionError;

    /// Any names parse: controller modules are known only once loaded, so
    /// [`Selection::check_known`] refuses unknown names then.
    fn from_str(text: &str) -> Result<Self, SelectionError> {
        let entries: Vec<String> = text.split(',').map(|e| e.trim().to_string()).collect();
        if entries
            .iter()
            .any(|entry| entry.strip_prefix('-').unwrap_or(entry).is_empty())
        {
            return Err(SelectionError::Empty);
        }
        Ok(Self(entries))
    }
}

impl Selection {
    /// Refuses a name that is neither a built-in controller nor one of
    /// `modules` (the controller modules loaded), naming the known ones.
    pub fn check_known<'a>(
        &self,
        modules: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), SelectionError> {
        let mut known: Vec<&str> = names().collect();
        known.extend(modules);
        for entry in &self.0 {
            let name = entry.strip_prefix('-').unwrap_or(entry);
            if name != "*" && !known.contains(&name) {
                return Err(SelectionError::Unknown {
                    name: name.into(),
                    known: known.join(", "),
                });
            }
        }
        Ok(())
    }

    /// Only the controllers deciding in world `world`.
    pub fn for_world(world: &str) -> Self {
        Self(
            CONTROLLERS
                .iter()
                .filter(|c| c.world == world)
                .map(|c| c.name.to_string())
                .collect(),
        )
    }

    pub fn is_enabled(&self, name: &str) -> bool {
        self.enables(name, true)
    }

    /// Whether `name` runs, for a controller that `*` enables only when it is
    /// `on_by_default` (kube-controller-manager's off-by-default controllers):
    /// an unpinned controller module runs only when named.
    pub fn enables(&self, name: &str, on_by_default: bool) -> bool {
        if self.0.iter().any(|e| e == name) {
            return true;
        }
        if self.0.iter().any(|e| e.strip_prefix('-') == Some(name)) {
            return false;
        }
        on_by_default && self.0.iter().any(|e| e == "*")
    }
}

/// Whether the server serves `api` (`v1` or `group/version`). Not found is
/// `Ok(false)`; any other failure is an error (asked again later).
pub async fn serves(client: &Client, api: &str) -> Result<bool, kube::Error> {
    if !api.contains('/') {
        let core = client.list_core_api_versions().await?;
        return Ok(core.versions.iter().any(|v| v == api));
    }
    match client.list_api_group_resources(api).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(err) => Err(err),
    }
}

/// The APIs of `apis` the server does not serve, per `served`.
pub async fn missing_apis<'a>(
    client: &Client,
    apis: &[&'a str],
) -> Result<Vec<&'a str>, kube::Error> {
    let mut missing = Vec::new();
    for api in apis {
        if !serves(client, api).await? {
            missing.push(*api);
        }
    }
    Ok(missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(text: &str) -> Selection {
        text.parse().unwrap()
    }

    #[test]
    fn controllers_flag_follows_kube_controller_manager() {
        assert!(Selection::default().is_enabled("resource-claim"));
        assert!(sel("*").is_enabled("pvc-protection"));
        assert!(!sel("*,-resource-claim").is_enabled("resource-claim"));
        assert!(sel("*,-resource-claim").is_enabled("pvc-protection"));
        assert!(sel("pvc-protection").is_enabled("pvc-protection"));
        assert!(!sel("pvc-protection").is_enabled("resource-claim"));
        assert!(
            !sel("-resource-claim").is_enabled("pvc-protection"),
            "without * only named controllers run"
        );
    }

    #[test]
    fn unknown_names_are_refused_with_the_known_ones() {
        let err = "*,-volume-binder"
            .parse::<Selection>()
            .unwrap()
            .check_known([])
            .unwrap_err();
        assert!(matches!(&err, SelectionError::Unknown { name, .. } if name == "volume-binder"));
        assert!(err.to_string().contains("pvc-protection, resource-claim"));
        let all = Selection::default();
        assert!(all.enables("my-controller", true));
        assert!(
            !all.enables("my-controller", false),
            "off by default: only when named"
        );
        let module = "my-controller".parse::<Selection>().unwrap();
        assert!(module.enables("my-controller", false));
        assert!(module.check_known([]).is_err());
        assert_eq!(module.check_known(["my-controller"]), Ok(()));
        assert_eq!(
            "pvc-protection,,resource-claim".parse::<Selection>(),
            Err(SelectionError::Empty)
        );
    }
}
