import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CapabilityDef, ProofStatus } from './capability-types';

export interface ResolvedCapability {
  def: CapabilityDef;
  status: ProofStatus;
  /** `file#test name` for every proving test, when proven. */
  evidence_refs: string[];
  /** `sha256:<hex>` over the files the status rests on (tests, else implementation); `none` for neither. */
  integrity_ref: string;
  /** What was looked for and not found (why a status is lower than it could be). */
  missing: string[];
}

function integrity(repoRoot: string, files: readonly string[]): string {
  const hash = createHash('sha256');
  for (const f of files) hash.update(f).update('\0').update(readFileSync(join(repoRoot, f))).update('\0');
  return `sha256:${hash.digest('hex')}`;
}

// A statement `test('…')`, `it('…')` or `.only`: a test that runs. A name in a comment (a
// commented-out test), in a string, or in a test.skip / test.todo / xit proves nothing.
const DECLARED_TEST = /^[ \t]*(?:test|it)(?:\.only)?\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/gm;

/** The titles of the tests a file declares (escapes undone). */
export function declaredTests(source: string): Set<string> {
  return new Set([...source.matchAll(DECLARED_TEST)].map((m) => (m[2] ?? '').replace(/\\(.)/g, '$1')));
}

/**
 * Works a capability's status out from the repository as it is now: `proven_local_mock`
 * only when every named test file exists and declares every named test; otherwise
 * `implementation_present` when its implementation files exist; otherwise what it
 * declares (planned / blocked / not_claimed). Nothing is ever `victory_locked`.
 */
export function resolveCapability(def: CapabilityDef, repoRoot: string): ResolvedCapability {
  const missing: string[] = [];
  const refs: string[] = [];
  for (const proof of def.proofs) {
    const path = join(repoRoot, proof.file);
    if (!existsSync(path)) {
      missing.push(proof.file);
      continue;
    }
    const declared = declaredTests(readFileSync(path, 'utf8'));
    for (const name of proof.tests) (declared.has(name) ? refs : missing).push(`${proof.file}#${name}`);
  }
  const proven = def.proofs.length > 0 && missing.length === 0;
  const implemented = def.implementation.length > 0 && def.implementation.every((f) => existsSync(join(repoRoot, f)));
  const status: ProofStatus = proven ? 'proven_local_mock' : implemented ? 'implementation_present' : def.otherwise;
  const basis = proven ? def.proofs.map((p) => p.file) : implemented ? def.implementation : [];
  return { def, status, evidence_refs: proven ? refs : [], integrity_ref: basis.length ? integrity(repoRoot, basis) : 'none', missing };
}
