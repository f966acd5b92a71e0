/**
 * `{{controller}}`, a controller module made by `rekon new`: an App
 * (`example.com/v1alpha1`, crd.yaml) owns a Deployment of its name running
 * `spec.image` with `spec.replicas`; the Deployment follows the App; the App's
 * `status.availableReplicas` copies the Deployment's; an Event `Synced`
 * records a sync that wrote something, so a steady state writes nothing.
 * The shape of Kubernetes' canonical sample controller: a custom resource
 * owning a Deployment.
 */
import {
  actions,
  createChild,
  event,
  kind,
  patchStatus,
  primary,
  related,
  updateChild,
  type ctl,
} from "../rekon-guest/src/index.js";

export const APP = kind("example.com", "v1alpha1", "App");
export const DEPLOYMENT = kind("apps", "v1", "Deployment");
/** The Event reason of a sync that wrote something. */
export const SYNCED = "Synced";
const SYNCED_MESSAGE = "App synced successfully";
/** The Deployment's one container. */
const CONTAINER = "app";

/** What the controller watches, sees and may write: the host enforces it. */
export function describe(): ctl.Description {
  return {
    name: "{{controller}}",
    primary: APP,
    primaryFields: ["spec.image", "spec.replicas", "status.availableReplicas"],
    // Watch 0: the Deployments the App owns (`related(input, 0)`).
    watches: [
      {
        kind: DEPLOYMENT,
        mapping: { tag: "owner" },
        fields: ["spec.replicas", "spec.template.spec.containers[*].image", "status.availableReplicas"],
      },
    ],
    scope: {
      finalizers: [],
      labels: [],
      annotations: [],
      statusFields: ["availableReplicas"],
      deletePrimary: false,
      children: [{ kind: DEPLOYMENT, create: true, update: true, delete: false }],
      eventReasons: [SYNCED],
      reads: [],
    },
  };
}

/** What to do for one App. */
export function decide(input: ctl.Input): ctl.Decision {
  const app = primary(input);
  const image = app.str("spec.image");
  if (image === undefined) return actions();
  const replicas = app.int("spec.replicas");
  const deployment = related(input, 0).find((d) => d.name === app.name);

  const writes: ctl.Action[] = [];
  let available = 0;
  if (deployment === undefined) {
    writes.push(createChild(newDeployment(app.name, image, replicas)));
  } else {
    const containers = deployment.get("spec.template.spec.containers");
    const current = Array.isArray(containers) ? (containers[0] as { image?: unknown } | undefined)?.image : undefined;
    if ((replicas !== undefined && replicas !== deployment.int("spec.replicas")) || current !== image) {
      writes.push(updateChild(DEPLOYMENT, deployment, { spec: { replicas, template: { spec: podSpec(image) } } }));
    }
    available = deployment.int("status.availableReplicas") ?? 0;
  }
  if (app.int("status.availableReplicas") !== available) {
    writes.push(patchStatus({ availableReplicas: available }));
  }
  if (writes.length === 0) return actions();
  return actions(...writes, event(SYNCED, SYNCED_MESSAGE));
}

/** The pod spec of the Deployment: one container running the App's image. */
function podSpec(image: string): object {
  return { containers: [{ name: CONTAINER, image }] };
}

/** The App's Deployment; the host sets its namespace and the App as its controller owner. */
export function newDeployment(name: string, image: string, replicas: number | undefined): object {
  const labels = { app: name };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, labels },
    spec: { replicas, selector: { matchLabels: labels }, template: { metadata: { labels }, spec: podSpec(image) } },
  };
}
