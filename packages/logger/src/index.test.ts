// The logger drops lines below its level before formatting them, and still writes (and
// redacts) the ones at or above it.
import { Writable } from 'node:stream';
import winston from 'winston';
import { createLogger } from './index';

function captured(level: string): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger('logger-test', level);
  logger.clear(); // no console output from the test: one stream transport instead
  logger.add(new winston.transports.Stream({ stream: new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }) }));
  return { logger, lines };
}

test('a line below the level is never serialized; one at the level is, redacted', () => {
  const { logger, lines } = captured('warn');
  let serialized = 0;
  const meta = () => ({ detail: { toJSON: () => (serialized++, 'shown') }, secret: 'whsec_x' });
  logger.debug('skipped', meta());
  logger.child({ job_id: 'j1' }).info('skipped too', meta());
  expect(serialized).toBe(0);
  expect(lines).toEqual([]);
  logger.warn('kept', meta());
  expect(serialized).toBe(1);
  expect(lines).toHaveLength(1);
  expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'warn', message: 'kept', detail: 'shown', secret: '[redacted]', service: 'logger-test' });
});

test('the level can change at run time', () => {
  const { logger, lines } = captured('warn');
  logger.level = 'debug';
  logger.debug('now kept', { n: 1 });
  expect(lines.map((l) => JSON.parse(l).message)).toEqual(['now kept']);
});
