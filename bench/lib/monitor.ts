// Once a second: every delivery the receiver counted (all phases: a time series), process
// samples and queue depths; every 2 s (or less often when the count is slow) Hookline's
// open work in PostgreSQL; every few seconds a progress line on stderr.
import type { BacklogSampler } from './backlog-sampler';
import type { IpcClient } from './ipc';
import type { ProcSampler } from './proc-sampler';
import { QueueSampler } from './queue-sampler';

export interface DeliveryPoint {
  t: number;
  delivered: number;
}

export class Monitor {
  readonly deliveries: DeliveryPoint[] = [];
  private timer: NodeJS.Timeout | null = null;
  private phase = '';
  private phaseStart = 0;
  private phaseMs = 0;
  private lastPrint = 0;
  private lastPrinted: DeliveryPoint | null = null;

  constructor(
    private readonly receiver: IpcClient,
    private readonly procs: ProcSampler,
    private readonly queues: QueueSampler | null,
    private readonly backlog: BacklogSampler | null = null,
    private readonly progressEveryMs = 5000,
  ) {}

  start(): void {
    this.procs.start();
    this.backlog?.start();
    this.timer = setInterval(() => void this.tick(), 1000);
    this.timer.unref();
  }

  setPhase(label: string, durationMs: number): void {
    this.phase = label;
    this.phaseStart = Date.now();
    this.phaseMs = durationMs;
    this.lastPrint = Date.now();
    process.stderr.write(`\n▶ ${label} (${Math.round(durationMs / 1000)} s)\n`);
  }

  /** Requests the receiver got so far, all phases and duplicates included. */
  async delivered(): Promise<number> {
    return this.receiver.call<number>('count', undefined, 5000);
  }

  private async tick(): Promise<void> {
    const delivered = await this.delivered().catch(() => null);
    if (delivered === null) return;
    const point = { t: Date.now(), delivered };
    this.deliveries.push(point);
    await this.queues?.sample();
    if (point.t - this.lastPrint >= this.progressEveryMs) this.print(point);
  }

  private print(p: DeliveryPoint): void {
    const prev = this.lastPrinted ?? this.deliveries[0] ?? p;
    const rate = p.t > prev.t ? Math.round(((p.delivered - prev.delivered) * 1000) / (p.t - prev.t)) : 0;
    const procs = this.procs.summary(p.t - 1500, p.t);
    const cpu = Object.entries(procs).map(([n, s]) => `${n} ${s.meanCpuPct}%/${s.lastRssMb}MB`).join(' ');
    const jobs = this.queues ? ` jobs waiting ${QueueSampler.backlog(this.queues.latest())}` : '';
    const open = this.backlog?.latest();
    const db = open ? ` | PostgreSQL: ${open.eventsToRoute} events to route, ${open.openDeliveries} deliveries open` : '';
    const el = Math.round((p.t - this.phaseStart) / 1000);
    process.stderr.write(`  [${this.phase} ${el}/${Math.round(this.phaseMs / 1000)} s] received ${p.delivered} (${rate}/s)${jobs}${db} | ${cpu}\n`);
    this.lastPrint = p.t;
    this.lastPrinted = p;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.backlog?.stop();
    this.procs.stop();
  }
}
