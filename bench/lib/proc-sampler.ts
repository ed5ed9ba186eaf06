// Samples RSS and CPU of named processes from /proc once a second (Linux). CPU is the
// share of one core over the last interval (100 % = one core busy).
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

export interface ProcSample {
  t: number;
  cpuPct: number;
  rssMb: number;
}

export interface ProcSummary {
  peakRssMb: number;
  lastRssMb: number;
  peakCpuPct: number;
  meanCpuPct: number;
  samples: number;
}

function readTicks(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces: fields are counted after the closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime + stime (fields 14 and 15)
  } catch {
    return null;
  }
}

/** Direct children of a process (e.g. PostgreSQL's backends under the postmaster). */
export function childPids(ppid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === ppid) out.push(Number(d));
    } catch {
      // gone already
    }
  }
  return out;
}

function readRssMb(pid: number): { rss: number; hwm: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

export class ProcSampler {
  readonly series = new Map<string, ProcSample[]>();
  private last = new Map<string, { pid: string; ticks: number; t: number }>();
  private peakHwm = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  /**
   * `pids` is asked every tick, so restarted processes are followed by name. A name may
   * stand for a group (PostgreSQL's backends): CPU and RSS are summed over it (RSS then
   * counts shared memory once per process).
   */
  constructor(private readonly pids: () => Record<string, number | number[] | undefined>, private readonly intervalMs = 1000) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sample();
  }

  private sample(): void {
    const now = Date.now();
    for (const [name, given] of Object.entries(this.pids())) {
      const group = (Array.isArray(given) ? given : [given]).filter((p): p is number => !!p && p > 0);
      if (!group.length) continue;
      let ticks = 0;
      const mem = { rss: 0, hwm: 0 };
      for (const p of group) {
        const t = readTicks(p);
        const m = readRssMb(p);
        if (t === null || m === null) continue;
        ticks += t;
        mem.rss += m.rss;
        mem.hwm += m.hwm;
      }
      if (!mem.rss) continue;
      // A backend that exits takes its ticks with it: a group's CPU is a lower bound.
      const pid = group.join(',');
      const prev = this.last.get(name);
      this.last.set(name, { pid: Array.isArray(given) ? 'group' : pid, ticks, t: now });
      this.peakHwm.set(name, Math.max(this.peakHwm.get(name) ?? 0, mem.hwm));
      if (!prev || prev.pid !== (Array.isArray(given) ? 'group' : pid) || now <= prev.t) continue;
      const cpuPct = Math.max(0, ((ticks - prev.ticks) / TICKS_PER_SECOND / ((now - prev.t) / 1000)) * 100);
      const list = this.series.get(name) ?? [];
      list.push({ t: now, cpuPct: Math.round(cpuPct), rssMb: Math.round(mem.rss) });
      this.series.set(name, list);
    }
  }

  /** Per process over [from, to]: peak RSS (including the kernel's high-water mark) and CPU. */
  summary(from = 0, to = Number.MAX_SAFE_INTEGER): Record<string, ProcSummary> {
    const out: Record<string, ProcSummary> = {};
    for (const [name, all] of this.series) {
      const s = all.filter((x) => x.t >= from && x.t <= to);
      if (!s.length) continue;
      const whole = from === 0 && to === Number.MAX_SAFE_INTEGER;
      out[name] = {
        peakRssMb: Math.round(Math.max(...s.map((x) => x.rssMb), whole ? (this.peakHwm.get(name) ?? 0) : 0)),
        lastRssMb: s[s.length - 1]!.rssMb,
        peakCpuPct: Math.max(...s.map((x) => x.cpuPct)),
        meanCpuPct: Math.round(s.reduce((a, x) => a + x.cpuPct, 0) / s.length),
        samples: s.length,
      };
    }
    return out;
  }
}
