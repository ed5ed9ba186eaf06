// Checks over a rendered output. Each returns the list of problems it found (empty when
// all is well), so a test can assert `[]` and show every problem at once.
import type { IProbe } from 'kubernetes-models/v1/Probe';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { parseDedicatedPools, parseDeliverQueues } from '@hookline/queues';
import { schemaError } from './k8s-models';
import type { K8sObject } from './kustomize-lite';
import { effectiveConfig, envProblems } from './process-env';
import { mainProcess, type Process, type Workload } from './workloads';

export function schemaProblems(objects: K8sObject[]): string[] {
  return objects.flatMap((o) => {
    const err = schemaError(o);
    return err ? [`${o.kind}/${o.metadata.name}: ${err}`] : [];
  });
}

/** Every process runs an entry that exists, gets what it requires, and only what it reads. */
export function envContractProblems(wls: Workload[]): string[] {
  return wls.flatMap((w) =>
    w.processes.flatMap((p) => {
      const at = `${w.kind}/${w.name} ${p.container.name}`;
      if (!p.contract) return [`${at}: ${p.contractError}`];
      return [...p.resolved.problems, ...envProblems(p.contract, p.resolved.env)].map((m) => `${at}: ${m}`);
    }),
  );
}

function containerPort(c: IContainer, port: number | string | undefined): number | undefined {
  if (typeof port === 'number') return c.ports?.some((p) => p.containerPort === port) ? port : undefined;
  return c.ports?.find((p) => p.name === port)?.containerPort;
}

function httpProbe(probe: IProbe | undefined, path: string, c: IContainer, listen: number, what: string): string[] {
  const get = probe?.httpGet;
  if (!get) return [`${what} is not an httpGet probe`];
  const problems = get.path === path ? [] : [`${what} asks ${get.path ?? '(no path)'}, not ${path}`];
  const port = containerPort(c, get.port);
  if (port === undefined) problems.push(`${what} port ${get.port} is not a port of the container`);
  else if (port !== listen) problems.push(`${what} hits port ${port} but the process listens on PORT=${listen}`);
  return problems;
}

type Config = Record<string, string | number | boolean>;

/** Runs `check` on each Deployment whose main process would start, with its configuration. */
function perDeployment(wls: Workload[], check: (w: Workload, p: Process, config: Config) => string[]): string[] {
  return wls
    .filter((w) => w.kind === 'Deployment')
    .flatMap((w) => {
      const p = mainProcess(w);
      const config = effectiveConfig(p.contract, p.resolved.env);
      return config ? check(w, p, config) : [];
    });
}

/** Readiness on /readyz, liveness (and startup) on /healthz, on the port the process listens on. */
export function probeProblems(wls: Workload[]): string[] {
  return perDeployment(wls, (w, { container: c }, config) => {
    const listen = Number(config.PORT);
    const at = `Deployment/${w.name}`;
    return [
      ...httpProbe(c.readinessProbe, '/readyz', c, listen, `${at} readinessProbe`),
      ...httpProbe(c.livenessProbe, '/healthz', c, listen, `${at} livenessProbe`),
      ...(c.startupProbe ? httpProbe(c.startupProbe, '/healthz', c, listen, `${at} startupProbe`) : []),
    ];
  });
}

function preStopSeconds(c: IContainer): number {
  const pre = c.lifecycle?.preStop as { exec?: { command?: string[] }; sleep?: { seconds: number } } | undefined;
  if (pre?.sleep) return pre.sleep.seconds;
  const cmd = pre?.exec?.command ?? [];
  return cmd[0] === 'sleep' ? Number(cmd[1] ?? 0) : 0;
}

/** The kubelet's SIGKILL comes after preStop + the process's own drain deadline. */
export function shutdownProblems(wls: Workload[]): string[] {
  return perDeployment(wls, (w, p, config) => {
    if (config.SHUTDOWN_TIMEOUT_MS === undefined) return [];
    const graceS = w.pod.terminationGracePeriodSeconds ?? 30;
    const needS = preStopSeconds(p.container) + Number(config.SHUTDOWN_TIMEOUT_MS) / 1000;
    return graceS > needS ? [] : [`Deployment/${w.name}: terminationGracePeriodSeconds ${graceS} must exceed preStop + SHUTDOWN_TIMEOUT_MS = ${needS} s`];
  });
}

/** Requests and limits everywhere; non-root, no privilege escalation, writable /tmp only. */
export function hardeningProblems(wls: Workload[]): string[] {
  return wls.flatMap((w) =>
    w.processes.flatMap((p) => {
      const at = `${w.kind}/${w.name} ${p.container.name}`;
      const c = p.container;
      const problems: string[] = [];
      for (const kind of ['requests', 'limits'] as const) {
        for (const r of ['cpu', 'memory']) if (c.resources?.[kind]?.[r] === undefined) problems.push(`${at}: no ${kind}.${r}`);
      }
      const nonRoot = c.securityContext?.runAsNonRoot ?? w.pod.securityContext?.runAsNonRoot;
      const uid = c.securityContext?.runAsUser ?? w.pod.securityContext?.runAsUser;
      // runAsNonRoot alone cannot be verified by the kubelet for an image whose USER is a name.
      if (nonRoot !== true || !uid) problems.push(`${at}: must set runAsNonRoot: true and a numeric non-zero runAsUser`);
      if (c.securityContext?.allowPrivilegeEscalation !== false) problems.push(`${at}: allowPrivilegeEscalation must be false`);
      if (c.securityContext?.readOnlyRootFilesystem !== true) problems.push(`${at}: readOnlyRootFilesystem must be true`);
      else if (!c.volumeMounts?.some((m) => m.mountPath === '/tmp')) problems.push(`${at}: a read-only root needs a /tmp volume (scratch space for node and its libraries)`);
      return problems;
    }),
  );
}

export function matches(selector: Record<string, string> | undefined, labels: Record<string, string>): boolean {
  const entries = Object.entries(selector ?? {});
  return entries.length > 0 && entries.every(([k, v]) => labels[k] === v);
}

/** Selectors pick their own pods only; one PDB per Deployment; Services reach a named port. */
export function selectorProblems(wls: Workload[], objects: K8sObject[]): string[] {
  const deployments = wls.filter((w) => w.kind === 'Deployment');
  const problems: string[] = [];
  for (const d of deployments) {
    const selector = (d.object.spec as { selector?: { matchLabels?: Record<string, string> } }).selector?.matchLabels;
    if (!matches(selector, d.podLabels)) problems.push(`Deployment/${d.name}: selector does not match its own pod labels`);
    for (const other of deployments) if (other !== d && matches(selector, other.podLabels)) problems.push(`Deployment/${d.name}: selector also matches the pods of ${other.name}`);
    const pdbs = objects.filter((o) => o.kind === 'PodDisruptionBudget' && matches((o.spec as { selector?: { matchLabels?: Record<string, string> } }).selector?.matchLabels, d.podLabels));
    if (pdbs.length !== 1) problems.push(`Deployment/${d.name}: covered by ${pdbs.length} PodDisruptionBudgets, want 1`);
  }
  for (const s of objects.filter((o) => o.kind === 'Service')) {
    const spec = s.spec as { selector?: Record<string, string>; ports?: { port: number; targetPort?: number | string }[] };
    const backends = deployments.filter((d) => matches(spec.selector, d.podLabels));
    if (backends.length !== 1) problems.push(`Service/${s.metadata.name}: selects ${backends.length} Deployments, want 1`);
    for (const b of backends) {
      for (const port of spec.ports ?? []) {
        if (containerPort(mainProcess(b).container, port.targetPort ?? port.port) === undefined) problems.push(`Service/${s.metadata.name}: targetPort ${port.targetPort} is not a port of ${b.name}`);
      }
    }
  }
  return problems;
}

/** One migration Job; every service pod waits for the schema of the same database. */
export function migrationProblems(wls: Workload[]): string[] {
  const jobs = wls.filter((w) => w.kind === 'Job' && mainProcess(w).entry === 'scripts/migrate.ts');
  if (jobs.length !== 1) return [`want exactly one Job running scripts/migrate.ts, found ${jobs.length}`];
  const db = mainProcess(jobs[0]!).resolved.env.DATABASE_URL;
  const problems: string[] = [];
  for (const w of wls.filter((x) => x.kind === 'Deployment' && mainProcess(x).service)) {
    const wait = w.processes.find((p) => p.init && p.entry === 'deploy/scripts/wait-for-migrations.ts');
    if (!wait) problems.push(`Deployment/${w.name}: no wait-for-migrations init container`);
    else if (wait.resolved.env.DATABASE_URL !== db) problems.push(`Deployment/${w.name}: wait-for-migrations watches another DATABASE_URL than the migration Job`);
    if (mainProcess(w).resolved.env.DATABASE_URL !== db) problems.push(`Deployment/${w.name}: uses another DATABASE_URL than the migration Job`);
  }
  return problems;
}

/**
 * One image runs every Hookline process; in particular wait-for-migrations must run the
 * same image as its service, or it waits for another image's migrations.
 */
export function imageProblems(wls: Workload[]): string[] {
  const images = new Map<string, string[]>();
  for (const w of wls) {
    for (const p of w.processes) {
      if (p.entry === 'hookline-edge') continue;
      const image = p.container.image ?? '(none)';
      images.set(image, [...(images.get(image) ?? []), `${w.name}/${p.container.name}`]);
    }
  }
  return images.size === 1 ? [] : [`Hookline processes run ${images.size} images: ${[...images].map(([i, users]) => `${i} (${users.join(', ')})`).join('; ')}`];
}

/**
 * Dedicated deliverer pools (docs/deployment.md): the router routes by DEDICATED_POOLS, the
 * deliverers' recovery sweep and the api's retries and replays re-enqueue by it, so all of
 * them must read the same map; each pool it names, and the default `deliver` queue, must be
 * consumed by some deliverer (DELIVER_QUEUES), or those deliveries wait forever.
 */
export function poolProblems(wls: Workload[]): string[] {
  const readers: { at: string; service: string; pools: ReadonlyMap<string, string>; queues: string[] }[] = [];
  for (const w of wls.filter((x) => x.kind === 'Deployment')) {
    const p = mainProcess(w);
    const config = effectiveConfig(p.contract, p.resolved.env);
    if (!p.service || !config || config.DEDICATED_POOLS === undefined) continue;
    try {
      const queues = config.DELIVER_QUEUES === undefined ? [] : parseDeliverQueues(String(config.DELIVER_QUEUES)).map((q) => q.queue);
      readers.push({ at: `Deployment/${w.name}`, service: p.service, pools: parseDedicatedPools(String(config.DEDICATED_POOLS)), queues });
    } catch {
      // An invalid value: envContractProblems reports it.
    }
  }
  const show = (m: ReadonlyMap<string, string>): string => [...m].map(([t, pool]) => `${t}=${pool}`).sort().join(',') || '(empty)';
  const reference = readers.find((r) => r.service === 'router') ?? readers[0];
  if (!reference) return [];
  const problems: string[] = [];
  for (const r of readers) {
    if (show(r.pools) !== show(reference.pools)) problems.push(`${r.at}: DEDICATED_POOLS is ${show(r.pools)}, but ${reference.at} has ${show(reference.pools)}`);
  }
  const consumed = new Set(readers.flatMap((r) => r.queues));
  if (!consumed.has('deliver')) problems.push('no deliverer consumes the default queue deliver (DELIVER_QUEUES)');
  for (const [tenant, pool] of reference.pools) {
    if (!consumed.has(`deliver.${pool}`)) problems.push(`no deliverer consumes deliver.${pool}, where DEDICATED_POOLS sends the deliveries of ${tenant}`);
  }
  return problems;
}

/**
 * Secrets committed in the manifests hold example values only: each is annotated
 * `hookline.dev/example-values: "true"` and every value says EXAMPLE (values are not printed).
 */
export function secretProblems(objects: K8sObject[]): string[] {
  const problems: string[] = [];
  for (const o of objects.filter((x) => x.kind === 'Secret')) {
    const at = `Secret/${o.metadata.name}`;
    if ((o.metadata as { annotations?: Record<string, string> }).annotations?.['hookline.dev/example-values'] !== 'true') problems.push(`${at}: must be annotated hookline.dev/example-values: "true"`);
    const values = {
      ...Object.fromEntries(Object.entries((o.data ?? {}) as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])),
      ...((o.stringData ?? {}) as Record<string, string>),
    };
    for (const [k, v] of Object.entries(values)) if (!v.includes('EXAMPLE')) problems.push(`${at}: ${k} does not look like an example value (it must contain EXAMPLE)`);
  }
  return problems;
}

/** The variables that name a public URL (hook URLs, discovery links); a loopback default there is a mistake. */
export const PUBLIC_URL_VARIABLES = ['INGEST_PUBLIC_URL', 'API_PUBLIC_URL'] as const;

/** Every public URL a deployed process uses (its own value or its default) points at a real host, not loopback. */
export function publicUrlProblems(wls: Workload[]): string[] {
  return perDeployment(wls, (w, _p, config) =>
    PUBLIC_URL_VARIABLES.flatMap((k) => {
      if (config[k] === undefined) return [];
      let host: string;
      try {
        host = new URL(String(config[k])).hostname;
      } catch {
        return [`Deployment/${w.name}: ${k} is not a URL`];
      }
      return /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|0\.0\.0\.0)$/.test(host) ? [`Deployment/${w.name}: ${k} is ${config[k]}, a loopback address (its default?): set the public URL`] : [];
    }),
  );
}
