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

type ModelClass = new (data: never) => { validate(): void };

const MODELS: Record<string, ModelClass> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'keda.sh/v1alpha1/ScaledObject': ScaledObject,
  'keda.sh/v1alpha1/TriggerAuthentication': TriggerAuthentication,
};

/** The validation error of one object, or null when it is valid. */
export function schemaError(o: K8sObject): string | null {
  const Model = MODELS[`${o.apiVersion}/${o.kind}`];
  if (!Model) return `${o.apiVersion}/${o.kind} has no registered model`;
  try {
    new Model(o as never).validate();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
