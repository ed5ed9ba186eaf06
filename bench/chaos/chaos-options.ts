// `pnpm chaos` flags.
import { parseArgs } from 'node:util';
import { DEFAULT_FAULTS, parseFaultSpec } from './faults';

export interface ChaosOptions {
  events: number;
  rate: number;
  fanouts: number[];
  faults: string;
  /** --faults was given: a schedule smaller than DEFAULT_FAULTS is then what was asked for. */
  faultsExplicit: boolean;
  pgDownMs: number;
  failRate: number;
  timeoutMs: number;
  /** Destinations' config.max_attempts: a delivery is exhausted after this many retryable failures. */
  maxAttempts: number;
  settleTimeoutMs: number;
  perEventDeadlineMs: number;
  privatePostgres: boolean;
  out: string | null;
  serviceEnv: Record<string, string>;
  sharedDatabaseUrl: string;
}

const HELP = `pnpm chaos [--events 20000] [--rate 250] [--faults ${DEFAULT_FAULTS}]
  --faults SPEC          KIND[:COUNT],… of router, deliverer, ingest, api (kill -9), redis (restart
                         empty), postgres (stop); a planned fault that does not happen makes the
                         verdict INCOMPLETE (exit 3), and so does an empty schedule
  --fanouts 1,2,3        one ingester per entry, with that many destinations
  --pg-down-ms MS        how long PostgreSQL stays down (default 3000)
  --fail-rate R          share of receiver answers that fail (default 0.3: 500 / slow / dropped)
  --timeout-ms MS        destinations' config.timeout_ms (default 500; slow answers take twice that)
  --max-attempts N       destinations' config.max_attempts (default 5)
  --settle-timeout S     longest wait for quiescence after the load (default 300)
  --no-private-postgres  use the shared PostgreSQL (give --faults without postgres, else INCOMPLETE)
  --env K=V              extra env for the services (repeatable)
  --out FILE             JSON path (default bench/results/chaos-<timestamp>.json)`;

export function parseChaosOptions(argv: string[]): ChaosOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      help: { type: 'boolean', default: false },
      events: { type: 'string', default: '20000' },
      rate: { type: 'string', default: '250' },
      fanouts: { type: 'string', default: '1,2,3' },
      faults: { type: 'string' },
      'pg-down-ms': { type: 'string', default: '3000' },
      'fail-rate': { type: 'string', default: '0.3' },
      'timeout-ms': { type: 'string', default: '500' },
      'max-attempts': { type: 'string', default: '5' },
      'settle-timeout': { type: 'string', default: '300' },
      'no-private-postgres': { type: 'boolean', default: false },
      env: { type: 'string', multiple: true, default: [] },
      out: { type: 'string' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(HELP);
    process.exit(0);
  }
  const serviceEnv: Record<string, string> = {};
  for (const kv of values.env) {
    const i = kv.indexOf('=');
    if (i < 1) throw new Error(`--env wants KEY=VALUE (got "${kv}")`);
    serviceEnv[kv.slice(0, i)] = kv.slice(i + 1);
  }
  const events = Number(values.events);
  const rate = Number(values.rate);
  if (!(events > 0) || !(rate > 0)) throw new Error('--events and --rate must be positive');
  const maxAttempts = Number(values['max-attempts']);
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 50) throw new Error('--max-attempts must be a whole number from 1 to 50');
  const faults = values.faults ?? DEFAULT_FAULTS;
  parseFaultSpec(faults);
  return {
    events,
    rate,
    fanouts: values.fanouts.split(',').map(Number).filter((n) => n > 0),
    faults,
    faultsExplicit: values.faults !== undefined,
    pgDownMs: Number(values['pg-down-ms']),
    failRate: Number(values['fail-rate']),
    timeoutMs: Number(values['timeout-ms']),
    maxAttempts,
    settleTimeoutMs: Number(values['settle-timeout']) * 1000,
    perEventDeadlineMs: 120_000,
    privatePostgres: !values['no-private-postgres'],
    out: values.out ?? null,
    serviceEnv,
    sharedDatabaseUrl: process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test',
  };
}
