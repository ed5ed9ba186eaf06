// `pnpm chaos` flags.
import { parseArgs } from 'node:util';

export interface ChaosOptions {
  events: number;
  rate: number;
  fanouts: number[];
  faults: string;
  pgDownMs: number;
  failRate: number;
  timeoutMs: number;
  settleTimeoutMs: number;
  perEventDeadlineMs: number;
  privatePostgres: boolean;
  out: string | null;
  serviceEnv: Record<string, string>;
  sharedDatabaseUrl: string;
}

const HELP = `pnpm chaos [--events 20000] [--rate 250] [--faults router:3,deliverer:3,ingest:3,redis:1,postgres:1]
  --fanouts 1,2,3        one ingester per entry, with that many destinations
  --pg-down-ms MS        how long PostgreSQL stays down (default 3000)
  --fail-rate R          share of receiver answers that fail (default 0.3: 500 / slow / dropped)
  --timeout-ms MS        destinations' config.timeout_ms (default 500; slow answers take twice that)
  --settle-timeout S     longest wait for quiescence after the load (default 300)
  --no-private-postgres  use the shared PostgreSQL (no PostgreSQL fault then)
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
      faults: { type: 'string', default: 'router:3,deliverer:3,ingest:3,redis:1,postgres:1' },
      'pg-down-ms': { type: 'string', default: '3000' },
      'fail-rate': { type: 'string', default: '0.3' },
      'timeout-ms': { type: 'string', default: '500' },
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
  return {
    events,
    rate,
    fanouts: values.fanouts.split(',').map(Number).filter((n) => n > 0),
    faults: values.faults,
    pgDownMs: Number(values['pg-down-ms']),
    failRate: Number(values['fail-rate']),
    timeoutMs: Number(values['timeout-ms']),
    settleTimeoutMs: Number(values['settle-timeout']) * 1000,
    perEventDeadlineMs: 120_000,
    privatePostgres: !values['no-private-postgres'],
    out: values.out ?? null,
    serviceEnv,
    sharedDatabaseUrl: process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test',
  };
}
