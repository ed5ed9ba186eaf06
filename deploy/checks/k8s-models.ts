// Offline schema validation of rendered objects with kubernetes-models (the API's own
// OpenAPI schemas) and @kubernetes-models/keda (KEDA's CRD schemas). A kind that is not
// registered here fails: add it deliberately rather than let it pass unchecked.
import { ScaledObject, TriggerAuthentication } from '@kubernetes-models/keda/keda.sh/v1alpha1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import type { K8sObject } from './kustomize-lite';

interface Model {
  validate(): void;
}

const MODELS: Record<string, (o: K8sObject) => Model> = {
  'v1/Namespace': (o) => new Namespace(o as never),
  'v1/ConfigMap': (o) => new ConfigMap(o as never),
  'v1/Secret': (o) => new Secret(o as never),
  'v1/Service': (o) => new Service(o as never),
  'v1/ServiceAccount': (o) => new ServiceAccount(o as never),
  'apps/v1/Deployment': (o) => new Deployment(o as never),
  'batch/v1/Job': (o) => new Job(o as never),
  'policy/v1/PodDisruptionBudget': (o) => new PodDisruptionBudget(o as never),
  'autoscaling/v2/HorizontalPodAutoscaler': (o) => new HorizontalPodAutoscaler(o as never),
  'networking.k8s.io/v1/NetworkPolicy': (o) => new NetworkPolicy(o as never),
  'keda.sh/v1alpha1/ScaledObject': (o) => new ScaledObject(o as never),
  'keda.sh/v1alpha1/TriggerAuthentication': (o) => new TriggerAuthentication(o as never),
};

/** The validation error of one object, or null when it is valid. */
export function schemaError(o: K8sObject): string | null {
  const make = MODELS[`${o.apiVersion}/${o.kind}`];
  if (!make) return `${o.apiVersion}/${o.kind} has no registered model`;
  try {
    make(o).validate();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
