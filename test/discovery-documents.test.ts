import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildDiscovery, validateManifest, type CapabilityManifest } from '@hookline/evidence';
import { REPO_ROOT } from '../services/api/src/discovery/discovery.routes';
import { startMcp, type McpHarness } from './mcp-harness';

let h: McpHarness;
let manifest: CapabilityManifest;

beforeAll(async () => {
  h = await startMcp('discovery');
  const res = await h.http('GET', '/ai/evidence/v1/capability-manifest.json');
  expect(res.status).toBe(200);
  manifest = res.body;
});

afterAll(async () => {
  await h.close();
});

const opts = { baseUrl: 'http://127.0.0.1:1', repository: 'https://github.com/hookline/hookline', evidenceScope: 'local_mock_harness_only' as const, sealIntervalMs: 1000, windowMs: 1000 };

test('the capability manifest is valid against the JSON Schema of SPEC.md', () => {
  expect(validateManifest(manifest)).toEqual({ valid: true, errors: [] });
  expect(manifest['@context']).toEqual({ schema: 'https://schema.org/', xsd: 'http://www.w3.org/2001/XMLSchema#' });
  expect(manifest.compliance_mappings.ref).toBe(`${h.url}/ai/security/v1/compliance-readiness.json`);
  // The schema has teeth: each of these breaks a rule of SPEC.md.
  const broken: [string, unknown][] = [
    ['schema_version', { ...manifest, schema_version: 'v1' }],
    ['@type', { ...manifest, '@type': [] }],
    ['evidence_scope', { ...manifest, evidence_scope: 'everywhere' }],
    ['proof_levels', { ...manifest, proof_levels: { 'Bad-Key': { label: 'x', description: 'x', confidence: 'low' } } }],
    ['confidence', { ...manifest, proof_levels: { fine: { label: 'x', description: 'x', confidence: 'certain' } } }],
    ['proof_status', { ...manifest, capabilities: [{ ...manifest.capabilities[0], proof_status: 'done' }] }],
    ['capability field', { ...manifest, capabilities: [{ ...manifest.capabilities[0], integrity_ref: undefined }] }],
    ['entries_count', { ...manifest, compliance_mappings: { ref: manifest.compliance_mappings.ref, entries_count: -1 } }],
    ['repository', { ...manifest, repository: 'not a uri' }],
    ['generated_at', { ...manifest, generated_at: 'yesterday' }],
    ['validation', { ...manifest, validation: { make_targets: ['test'] } }],
    // victory_locked agrees with proof_status, and a proven capability names what proves it.
    ['victory_locked without its status', { ...manifest, capabilities: [{ ...manifest.capabilities[0], proof_status: 'planned', victory_locked: true }] }],
    ['victory_locked status, flag false', { ...manifest, capabilities: [{ ...manifest.capabilities[0], proof_status: 'victory_locked', victory_locked: false }] }],
    ['proven without evidence', { ...manifest, capabilities: [{ ...manifest.capabilities[0], proof_status: 'proven_local_mock', evidence_refs: [] }] }],
    ['proven without validators', { ...manifest, capabilities: [{ ...manifest.capabilities[0], proof_status: 'proven_local_mock', validator_refs: [] }] }],
  ];
  for (const [what, doc] of broken) expect([what, validateManifest(JSON.parse(JSON.stringify(doc))).valid]).toEqual([what, false]);
});

test('every proven_local_mock capability names test files that exist and contain its tests', () => {
  const proven = manifest.capabilities.filter((c) => c.proof_status === 'proven_local_mock');
  expect(proven.map((c) => c.proof_id)).toEqual(expect.arrayContaining(['PROOF-009', 'PROOF-010', 'TRUST-003', 'TRUST-004', 'TRUST-006', 'TRUST-009']));
  for (const c of proven) {
    expect(c.evidence_refs.length).toBeGreaterThan(0);
    for (const ref of c.evidence_refs) {
      const [file, name] = ref.split('#') as [string, string];
      expect([ref, existsSync(join(REPO_ROOT, file))]).toEqual([ref, true]);
      expect([ref, readFileSync(join(REPO_ROOT, file), 'utf8').includes(name)]).toEqual([ref, true]);
    }
    expect(c.integrity_ref).toMatch(/^sha256:[0-9a-f]{64}$/);
    for (const ref of c.validator_refs) expect([ref, existsSync(join(REPO_ROOT, ref))]).toEqual([ref, true]);
  }
  expect(existsSync(join(REPO_ROOT, manifest.validation.validator_script))).toBe(true);
});

test('a skipped, todo or commented-out test proves nothing, nor does its name in a comment', () => {
  const repo = mkdtempSync(join(tmpdir(), 'repo-'));
  const copy = (file: string, edit: (s: string) => string = (s) => s) => {
    mkdirSync(dirname(join(repo, file)), { recursive: true });
    writeFileSync(join(repo, file), edit(readFileSync(join(REPO_ROOT, file), 'utf8')));
  };
  for (const f of ['packages/evidence/src/issue-receipts.ts', 'packages/evidence/src/seal-window.ts', 'packages/evidence/src/inclusion-proof.ts']) copy(f);
  const name = 'the sealer issues and seals under its lock, once';
  const declaration = `test('${name}'`;
  const statusWith = (edit: (s: string) => string) => {
    copy('test/evidence-receipts.test.ts', (s) => {
      expect(s).toContain(declaration);
      return edit(s);
    });
    return buildDiscovery({ ...opts, repoRoot: repo }).capabilities.find((c) => c.def.proof_id === 'PROOF-009')!;
  };
  expect(statusWith((s) => s).status).toBe('proven_local_mock');
  for (const disabled of [`test.skip('${name}'`, `test.todo('${name}'`, `xit('${name}'`, `// ${declaration}`, `/* ${name} */ test('renamed'`]) {
    const c = statusWith((s) => s.replace(declaration, disabled));
    expect([disabled, c.status, c.missing]).toEqual([disabled, 'implementation_present', [`test/evidence-receipts.test.ts#${name}`]]);
  }
});

test('the published registries say what the evidence and the MCP surface do not do', async () => {
  const nonClaims = (await h.http('GET', '/ai/evidence/v1/non-claims.json')).body;
  // A root names no earlier root (see rootSchema): the registries must not imply a chain.
  expect(nonClaims.categories.evidence).toEqual(expect.arrayContaining([expect.stringMatching(/^Merkle roots are not chained/)]));
  // MCP calls are rate-limited with the control API (test/mcp-rate-limit.test.ts) and per MCP
  // key (test/mcp-key-rate-limit.test.ts): what is published is what is still missing.
  expect(nonClaims.categories.api).toEqual(expect.arrayContaining([expect.stringMatching(/^Only MCP keys have a rate limit of their own/), expect.stringMatching(/fail open: while Redis is unreachable/)]));
  expect(JSON.stringify(nonClaims)).not.toMatch(/not rate-limited|no rate limit per MCP key/);
  const gaps = (await h.http('GET', '/ai/security/v1/security-gaps.json')).body.gaps as { id: string; title: string; description: string }[];
  expect(gaps.find((g) => g.id === 'SG-006')).toMatchObject({ title: 'Rate limits fail open without Redis', description: expect.stringMatching(/each MCP key's own bucket\) live in Redis, and the limiter fails open/) });
  expect(gaps.map((g) => `${g.title}\n${g.description}`).join('\n')).not.toMatch(/are not rate-limited|relies on the host|no limit per MCP key|Per-key rate limits/);
  // The per-key limit is claimed with the tests that prove it, and a runaway key is in the threat model.
  const trust003 = manifest.capabilities.find((c) => c.proof_id === 'TRUST-003')!;
  expect(trust003).toMatchObject({ proof_status: 'proven_local_mock', description: expect.stringMatching(/Each key has its own rate limit/) });
  expect(trust003.evidence_refs).toEqual(expect.arrayContaining([expect.stringMatching(/^test\/mcp-key-rate-limit\.test\.ts#/)]));
  const threats = (await h.http('GET', '/ai/security/v1/threat-model.json')).body.threats as { id: string; category: string; mitigations: string[] }[];
  expect(threats.find((t) => t.id === 'TM-011')).toMatchObject({ category: 'denial_of_service', mitigations: ['mcp_key_auth'] });
  const tm003 = (await h.http('GET', '/ai/security/v1/threat-model.json')).body.threats.find((t: { id: string }) => t.id === 'TM-003');
  expect(tm003.residual_risk).not.toMatch(/before it is sealed/);
});

test('statuses follow the repository: without the tests nothing is proven, without the code nothing is present', () => {
  const empty = mkdtempSync(join(tmpdir(), 'repo-'));
  const bare = buildDiscovery({ ...opts, repoRoot: empty });
  expect(new Set(bare.manifest.capabilities.map((c) => c.proof_status))).toEqual(new Set(['planned', 'not_claimed']));
  expect(validateManifest(bare.manifest).valid).toBe(true);

  // The implementation of the evidence capability, and its test file with one test renamed.
  const partial = mkdtempSync(join(tmpdir(), 'repo-'));
  const copy = (file: string, edit: (s: string) => string = (s) => s) => {
    mkdirSync(dirname(join(partial, file)), { recursive: true });
    writeFileSync(join(partial, file), edit(readFileSync(join(REPO_ROOT, file), 'utf8')));
  };
  for (const f of ['packages/evidence/src/issue-receipts.ts', 'packages/evidence/src/seal-window.ts', 'packages/evidence/src/inclusion-proof.ts']) copy(f);
  copy('test/evidence-receipts.test.ts', (s) => s.replace('the sealer issues and seals under its lock, once', 'renamed'));
  const d = buildDiscovery({ ...opts, repoRoot: partial });
  const evidence = d.capabilities.find((c) => c.def.proof_id === 'PROOF-009')!;
  expect(evidence.status).toBe('implementation_present');
  expect(evidence.missing).toEqual(['test/evidence-receipts.test.ts#the sealer issues and seals under its lock, once']);
  copy('test/evidence-receipts.test.ts');
  expect(buildDiscovery({ ...opts, repoRoot: partial }).capabilities.find((c) => c.def.proof_id === 'PROOF-009')!.status).toBe('proven_local_mock');
});

test('never claims what is not built', () => {
  expect(manifest.capabilities.some((c) => c.victory_locked || c.proof_status === 'victory_locked')).toBe(false);
  const status = (id: string) => manifest.capabilities.find((c) => c.id === id)?.proof_status;
  expect(status('multi_region_failover')).toBe('not_claimed');
  expect(status('automatic_cert_rotation')).toBe('not_claimed');
  expect(status('git_configuration')).toBe('planned');
  expect(status('private_edge_delivery')).toBe('proven_local_mock');
  for (const phrase of ['Multi-region failover is not offered.', 'Git-based configuration is not implemented (planned for v1.1).', 'Automatic certificate rotation is not offered; certificates are rotated manually.']) {
    expect(manifest.non_claims).toContain(phrase);
  }
  expect(manifest.evidence_scope).toBe('local_mock_harness_only');
});

test('serves every discovery document, linked from the index', async () => {
  const index = await h.http('GET', '/ai/evidence/v1/');
  expect(index.status).toBe(200);
  expect((await h.http('GET', '/ai/evidence/v1')).body).toEqual(index.body);
  const paths: string[] = index.body.documents.map((d: { path: string }) => d.path);
  expect(paths.sort()).toEqual([
    '/ai/evidence/v1/capability-manifest.json', '/ai/evidence/v1/freshness.json', '/ai/evidence/v1/non-claims.json',
    '/ai/security/v1/claim-maturity.json', '/ai/security/v1/compliance-readiness.json', '/ai/security/v1/security-gaps.json', '/ai/security/v1/threat-model.json',
  ]);
  const docs: Record<string, any> = {};
  for (const p of [...paths, '/ai/security/v1/']) {
    const res = await h.http('GET', p);
    expect([p, res.status, res.headers.get('cache-control')]).toEqual([p, 200, 'public, max-age=300']);
    expect(res.body.generated_at).toBe(manifest.generated_at);
    docs[p] = res.body;
  }
  expect(docs['/ai/evidence/v1/freshness.json'].surfaces.map((s: { surface: string }) => s.surface)).toEqual(['discovery_documents', 'capability_manifest', 'delivery_receipts', 'merkle_roots', 'mcp_tools']);
  expect(docs['/ai/security/v1/compliance-readiness.json'].entries).toHaveLength(manifest.compliance_mappings.entries_count);
  // A control is no more ready than its least proven capability.
  expect(docs['/ai/security/v1/compliance-readiness.json'].entries.find((e: { id: string }) => e.id === 'CR-008').readiness).toBe('not_claimed');
  expect(docs['/ai/security/v1/claim-maturity.json'].controls.map((c: { control_id: string }) => c.control_id)).toEqual(Array.from({ length: 10 }, (_, i) => `TRUST-${String(i + 1).padStart(3, '0')}`));
  expect(docs['/ai/security/v1/threat-model.json'].threats.every((t: { mitigations: string[] }) => t.mitigations.every((m) => manifest.capabilities.some((c) => c.id === m)))).toBe(true);
  expect(docs['/ai/security/v1/security-gaps.json'].gaps.length).toBeGreaterThan(0);
  expect(docs['/ai/evidence/v1/non-claims.json'].categories.availability).toContain('Multi-region failover is not offered.');
  expect((await h.http('GET', '/ai/evidence/v1/nothing.json')).status).toBe(404);
});
