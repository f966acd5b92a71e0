/**
 * kubernetes/sample-controller (controller.go, `syncHandler`) as a module of
 * the generic `controller` world: a Foo (`samplecontroller.k8s.io/v1alpha1`)
 * owns a Deployment named by its `spec.deploymentName`, created as upstream's
 * `newDeployment` (nginx:latest, labels app=nginx and controller=<foo>) with the
 * Foo's replicas; the replicas follow the Foo; the Deployment's
 * `status.availableReplicas` is copied into the Foo's status; an Event `Synced`
 * records a sync that wrote something. A Deployment of that name the Foo does
 * not control is never written: a Warning Event `ErrResourceExists` says so.
 *
 * Upstream writes the status and the Event on every sync; here a write that
 * would change nothing is not asked for, so a steady state writes nothing.
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
  type KubeObject,
} from "../../../sdk/ts/src/index.js";

export const FOO = kind("samplecontroller.k8s.io", "v1alpha1", "Foo");
export const DEPLOYMENT = kind("apps", "v1", "Deployment");
/** What the decision reads of a Deployment. */
const DEPLOYMENT_FIELDS = ["spec.replicas", "status.availableReplicas"];

// Upstream's Event reasons and messages.
export const SUCCESS_SYNCED = "Synced";
export const ERR_RESOURCE_EXISTS = "ErrResourceExists";
export const MESSAGE_RESOURCE_SYNCED = "Foo synced successfully";

/** Upstream's MessageResourceExists (Go's %q of a DNS name is the name in double quotes). */
export function messageResourceExists(name: string): string {
  return `Resource ${JSON.stringify(name)} already exists and is not managed by Foo`;
}

/** Watch 0: the Deployments the Foo owns; watch 1: the one its spec.deploymentName names. */
const OWNED = 0;
const NAMED = 1;

export function describe(): ctl.Description {
  return {
    name: "sample-controller",
    primary: FOO,
    primaryFields: ["spec.deploymentName", "spec.replicas", "status.availableReplicas"],
    watches: [
      { kind: DEPLOYMENT, mapping: { tag: "owner" }, fields: DEPLOYMENT_FIELDS },
      // Also a Deployment of that name the Foo does not own (upstream's lister Get).
      { kind: DEPLOYMENT, mapping: { tag: "named-by", val: "spec.deploymentName" }, fields: DEPLOYMENT_FIELDS },
    ],
    scope: {
      finalizers: [],
      labels: [],
      annotations: [],
      statusFields: ["availableReplicas"],
      deletePrimary: false,
      children: [{ kind: DEPLOYMENT, create: true, update: true, delete: false }],
      eventReasons: [SUCCESS_SYNCED, ERR_RESOURCE_EXISTS],
      reads: [],
    },
  };
}

export function decide(input: ctl.Input): ctl.Decision {
  const foo = primary(input);
  const deploymentName = foo.str("spec.deploymentName") ?? "";
  // Upstream reports "deployment name must be specified" and drops the key.
  if (deploymentName === "") return actions();
  const named = (objects: KubeObject[]): KubeObject | undefined => objects.find((d) => d.name === deploymentName);
  const deployment = named(related(input, NAMED)) ?? named(related(input, OWNED));
  const replicas = foo.int("spec.replicas");

  const writes: ctl.Action[] = [];
  let available = 0;
  if (deployment === undefined) {
    writes.push(createChild(newDeployment(foo, deploymentName, replicas)));
  } else if (!deployment.isControlledBy(foo.uid)) {
    return actions(event(ERR_RESOURCE_EXISTS, messageResourceExists(deploymentName), true));
  } else {
    if (replicas !== undefined && replicas !== deployment.int("spec.replicas")) {
      writes.push(updateChild(DEPLOYMENT, deployment, { spec: { replicas } }));
    }
    available = deployment.int("status.availableReplicas") ?? 0;
  }
  if (foo.int("status.availableReplicas") !== available) {
    writes.push(patchStatus({ availableReplicas: available }));
  }
  if (writes.length === 0) return actions();
  return actions(...writes, event(SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED));
}

/** Upstream's newDeployment; the host adds the namespace and the Foo as controller owner. */
export function newDeployment(foo: KubeObject, name: string, replicas: number | undefined): object {
  const labels = { app: "nginx", controller: foo.name };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: "nginx", image: "nginx:latest" }] },
      },
    },
  };
}
