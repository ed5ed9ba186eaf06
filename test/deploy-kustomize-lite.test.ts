// kustomize-lite, the renderer the manifest tests use, against `kubectl kustomize` on
// features the real overlays do not exercise yet (list merges by key), and its refusals.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kustomizeBuild, objectKey, readYamlObjects, type K8sObject } from '../deploy/checks/kustomize-lite';
import { strategicMerge } from '../deploy/checks/strategic-merge';

const root = mkdtempSync(join(tmpdir(), 'hookline-kustomize-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function write(path: string, text: string): void {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), text);
}

const DEPLOYMENT = `apiVersion: apps/v1
kind: Deployment
metadata: { name: web }
spec:
  selector: { matchLabels: { app: web } }
  template:
    metadata: { labels: { app: web } }
    spec:
      containers:
        - name: web
          image: hookline:latest
          env: [{ name: A, value: "1" }, { name: B, value: "2" }]
          ports: [{ name: http, containerPort: 8080 }]
          resources: { requests: { cpu: 100m } }
        - name: side
          image: busybox:1.36
`;

test('list merges by key, images, replicas and namespace render as kubectl renders them', () => {
  write('t1/base/kustomization.yaml', 'resources: [deploy.yaml]\n');
  write('t1/base/deploy.yaml', DEPLOYMENT);
  write(
    't1/overlay/kustomization.yaml',
    `namespace: demo
resources: [../base]
images: [{ name: hookline, newName: registry.example.com/hookline, newTag: "2.0" }]
replicas: [{ name: web, count: 3 }]
patches: [{ path: patch.yaml }]
`,
  );
  write(
    't1/overlay/patch.yaml',
    `apiVersion: apps/v1
kind: Deployment
metadata: { name: web }
spec:
  template:
    spec:
      containers:
        - name: web
          env: [{ name: B, value: "two" }, { name: C, value: "3" }]
          resources: { requests: { cpu: null, memory: 64Mi } }
`,
  );
  const dir = join(root, 't1/overlay');
  const mine = kustomizeBuild(dir);
  const theirs = readYamlObjectsFromText(execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 }));
  expect(mine).toEqual(theirs);
  const web = (mine[0]!.spec as { template: { spec: { containers: { env: unknown[]; image: string }[] } } }).template.spec.containers[0]!;
  // kubectl's order: the patch's items first, then the target's other items.
  expect(web.env).toEqual([{ name: 'B', value: 'two' }, { name: 'C', value: '3' }, { name: 'A', value: '1' }]);
  expect(web.image).toBe('registry.example.com/hookline:2.0');
});

function readYamlObjectsFromText(text: string): K8sObject[] {
  write('kubectl-out.yaml', text);
  return readYamlObjects(join(root, 'kubectl-out.yaml'));
}

test('kustomization fields it does not implement are refused, not ignored', () => {
  write('t2/kustomization.yaml', 'resources: [deploy.yaml]\ncommonLabels: { team: a }\n');
  write('t2/deploy.yaml', DEPLOYMENT);
  expect(() => kustomizeBuild(join(root, 't2'))).toThrow('kustomize-lite does not implement commonLabels');
});

test('a patch of an object that is not rendered, and a duplicate object, are errors', () => {
  write('t3/kustomization.yaml', 'resources: [deploy.yaml]\npatches: [{ path: p.yaml }]\n');
  write('t3/deploy.yaml', DEPLOYMENT);
  write('t3/p.yaml', 'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: webb }\nspec: {}\n');
  expect(() => kustomizeBuild(join(root, 't3'))).toThrow('the patch targets Deployment/webb, which is not rendered');
  write('t4/kustomization.yaml', 'resources: [a.yaml, b.yaml]\n');
  write('t4/a.yaml', DEPLOYMENT);
  write('t4/b.yaml', DEPLOYMENT);
  expect(() => kustomizeBuild(join(root, 't4'))).toThrow(`${objectKey({ kind: 'Deployment', metadata: { name: 'web' } })} is declared twice`);
});

test('strategic merge: null deletes, unkeyed lists are replaced, $patch is refused', () => {
  expect(strategicMerge({ a: 1, b: { c: 2, d: 3 }, args: ['x', 'y'] }, { b: { c: null }, args: ['z'] })).toEqual({ a: 1, b: { d: 3 }, args: ['z'] });
  expect(() => strategicMerge({ containers: [] }, { containers: [{ name: 'a', $patch: 'delete' }] })).toThrow('$-directives are not implemented');
});
