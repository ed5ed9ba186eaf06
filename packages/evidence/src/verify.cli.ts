import { readFileSync } from 'node:fs';
import { evidenceKey } from './evidence-key';
import { verifyBundles } from './verify-bundles';

/**
 * `pnpm evidence:verify <file.json>`: verifies receipts against their inclusion proofs and
 * Merkle roots (see packages/evidence/README.md). With EVIDENCE_KEY or SECRETS_KEY in the
 * environment the HMACs of receipts and roots are checked as well. Exit 0 = all valid.
 */
function main(argv: string[]): number {
  const file = argv[0];
  const usage = 'usage: pnpm evidence:verify <file.json>   (a saved evidence answer; EVIDENCE_KEY or SECRETS_KEY set: HMACs checked too)\n';
  if (file === '--help' || file === '-h') {
    process.stdout.write(usage);
    return 0;
  }
  if (!file || argv.length > 1) {
    process.stderr.write(usage);
    return 2;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    process.stderr.write(`cannot read ${file}: ${(err as Error).message}\n`);
    return 2;
  }
  const secrets = process.env['SECRETS_KEY'];
  const override = process.env['EVIDENCE_KEY'];
  const key = override || secrets ? evidenceKey(secrets ?? '', override).key : undefined;
  const report = verifyBundles(doc, key);
  process.stdout.write(`${report.lines.join('\n')}\n`);
  return report.ok ? 0 : 1;
}

process.exitCode = main(process.argv.slice(2));
