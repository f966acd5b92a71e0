//! Label sets of the exported families, named as controller-runtime names them.

use prometheus_client::encoding::EncodeLabelSet;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    pub controller: String,
}

impl ControllerLabels {
    pub fn new(controller: &str) -> Self {
        Self {
            controller: controller.into(),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub controller: String,
    pub result: String,
}

impl ResultLabels {
    pub fn new(controller: &str, result: &str) -> Self {
        Self {
            controller: controller.into(),
            result: result.into(),
        }
    }
}

/// `name`: a work queue's name, or a lease's for the leader-election gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    pub name: String,
}

impl QueueLabels {
    pub fn new(name: &str) -> Self {
        Self { name: name.into() }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GuestLabels {
    pub controller: String,
    pub guest: String,
}

impl GuestLabels {
    pub fn new(controller: &str, guest: &str) -> Self {
        Self {
            controller: controller.into(),
            guest: guest.into(),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct GuestInfoLabels {
    pub controller: String,
    pub guest: String,
    pub digest: String,
    /// `rekon:reconcile@<version>` the module exports.
    pub contract: String,
}

impl GuestInfoLabels {
    pub fn new(controller: &str, guest: &str, digest: &str, contract: &str) -> Self {
        Self {
            controller: controller.into(),
            guest: guest.into(),
            digest: digest.into(),
            contract: contract.into(),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ShadowLabels {
    pub controller: String,
    pub result: String,
}

impl ShadowLabels {
    pub fn new(controller: &str, result: &str) -> Self {
        Self {
            controller: controller.into(),
            result: result.into(),
        }
    }
}
