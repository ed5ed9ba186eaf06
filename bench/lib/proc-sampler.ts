// Samples RSS and CPU of named processes from /proc once a second (Linux). CPU is the
// share of one core over the last interval (100 % = one core busy).
//
// Peak RSS: a once-a-second sample misses short peaks, so a measurement window (a phase,
// or a system's whole run) takes the kernel's high-water mark (VmHWM) instead. Opening a
// window resets every process's VmHWM to its current RSS (`echo 5 > /proc/<pid>/clear_refs`),
// after folding the mark reached so far into the windows already open (so that nested
// windows keep their own peaks); every sample and the window's end read VmHWM again. When
// the reset is refused (not our process, not permitted, no /proc), the window falls back
// to the largest sampled RSS and says so (`peakRssFrom`).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

export interface ProcSample {
  t: number;
  cpuPct: number;
  rssMb: number;
}

/**
 * Where a peak RSS comes from: `vmhwm`, the kernel's high-water mark over the window (reset
 * at its start); `vmhwm-sum`, the same summed over a group of processes (PostgreSQL's
 * backends: an upper bound, their peaks need not coincide); `sampled`, the largest
 * once-a-second sample (short peaks missed).
 */
export type PeakRssSource = 'vmhwm' | 'vmhwm-sum' | 'sampled';

export interface ProcSummary {
  peakRssMb: number;
  lastRssMb: number;
  peakCpuPct: number;
  meanCpuPct: number;
  samples: number;
  peakRssFrom?: PeakRssSource;
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

/** Resets a process's VmHWM to its current RSS; false when the kernel refuses. */
export function resetHighWaterMark(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** A window's peak RSS for one name: the high-water mark when its reset held, else the samples'. */
export function windowPeak(sampledMaxMb: number, hwmMb: number | undefined, resetHeld: boolean, group: boolean): { peakRssMb: number; peakRssFrom: PeakRssSource } {
  if (!resetHeld || hwmMb === undefined) return { peakRssMb: Math.round(sampledMaxMb), peakRssFrom: 'sampled' };
  return { peakRssMb: Math.round(Math.max(sampledMaxMb, hwmMb)), peakRssFrom: group ? 'vmhwm-sum' : 'vmhwm' };
}

interface OpenWindow {
  id: number;
  from: number;
  /** Per name: false when the reset of one of its processes was refused at the window's start. */
  resetHeld: Map<string, boolean>;
  /** Per name: the largest VmHWM (MB, summed over a group) read since the window opened. */
  hwm: Map<string, number>;
}

export interface PeakWindow {
  readonly from: number;
  /** Closes the window: each process's figures over it, peak RSS from VmHWM where it could be reset. */
  end(): Record<string, ProcSummary>;
}

export class ProcSampler {
  readonly series = new Map<string, ProcSample[]>();
  private last = new Map<string, { pid: string; ticks: number; t: number }>();
  private timer: NodeJS.Timeout | null = null;
  private windows: OpenWindow[] = [];
  private nextWindow = 1;
  private groups = new Set<string>();

  /**
   * `pids` is asked every tick, so restarted processes are followed by name. A name may
   * stand for a group (PostgreSQL's backends): CPU and RSS are summed over it (RSS then
   * counts shared memory once per process).
   */
  constructor(private readonly pids: () => Record<string, number | number[] | undefined>, private readonly intervalMs = 1000) {}

  start(): void {
    if (this.timer) return;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.sample();
  }

  private groupsNow(): Array<[string, number[]]> {
    const out: Array<[string, number[]]> = [];
    for (const [name, given] of Object.entries(this.pids())) {
      if (Array.isArray(given)) this.groups.add(name);
      const group = (Array.isArray(given) ? given : [given]).filter((p): p is number => !!p && p > 0);
      if (group.length) out.push([name, group]);
    }
    return out;
  }

  /** Folds a VmHWM reading (MB) of `name` into every open window. */
  private fold(name: string, hwmMb: number): void {
    for (const w of this.windows) w.hwm.set(name, Math.max(w.hwm.get(name) ?? 0, hwmMb));
  }

  /** Reads every process's VmHWM and folds it into the open windows. */
  private readMarks(): void {
    for (const [name, group] of this.groupsNow()) {
      let hwm = 0;
      let seen = false;
      for (const p of group) {
        const m = readRssMb(p);
        if (!m) continue;
        seen = true;
        hwm += m.hwm;
      }
      if (seen) this.fold(name, hwm);
    }
  }

  private sample(): void {
    const now = Date.now();
    for (const [name, group] of this.groupsNow()) {
      const isGroup = this.groups.has(name);
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
      this.fold(name, mem.hwm);
      // A backend that exits takes its ticks with it: a group's CPU is a lower bound.
      const pid = isGroup ? 'group' : group.join(',');
      const prev = this.last.get(name);
      this.last.set(name, { pid, ticks, t: now });
      if (!prev || prev.pid !== pid || now <= prev.t) continue;
      const cpuPct = Math.max(0, ((ticks - prev.ticks) / TICKS_PER_SECOND / ((now - prev.t) / 1000)) * 100);
      const list = this.series.get(name) ?? [];
      list.push({ t: now, cpuPct: Math.round(cpuPct), rssMb: Math.round(mem.rss) });
      this.series.set(name, list);
    }
  }

  /**
   * Opens a measurement window: reads the marks reached so far into the windows already
   * open, then resets every process's VmHWM. A process started later in the window (a
   * restarted worker) needs no reset: its mark starts at its birth.
   */
  window(): PeakWindow {
    this.readMarks();
    const resetHeld = new Map<string, boolean>();
    for (const [name, group] of this.groupsNow()) resetHeld.set(name, group.every((p) => resetHighWaterMark(p)));
    const w: OpenWindow = { id: this.nextWindow++, from: Date.now(), resetHeld, hwm: new Map() };
    this.windows.push(w);
    return {
      from: w.from,
      end: () => {
        this.readMarks();
        this.windows = this.windows.filter((x) => x !== w);
        const to = Date.now();
        const out = this.summary(w.from, to);
        // A window shorter than the sampling interval may hold no sample: its peak is still known.
        for (const name of w.hwm.keys()) out[name] ??= { peakRssMb: 0, lastRssMb: 0, peakCpuPct: 0, meanCpuPct: 0, samples: 0 };
        for (const [name, s] of Object.entries(out)) {
          // A name absent at the start (started during the window) was born inside it.
          const held = w.resetHeld.get(name) ?? true;
          Object.assign(s, windowPeak(s.peakRssMb, w.hwm.get(name), held, this.groups.has(name)));
        }
        return out;
      },
    };
  }

  /** Per process over [from, to], from the once-a-second samples (peak RSS: the largest sample). */
  summary(from = 0, to = Number.MAX_SAFE_INTEGER): Record<string, ProcSummary> {
    const out: Record<string, ProcSummary> = {};
    for (const [name, all] of this.series) {
      const s = all.filter((x) => x.t >= from && x.t <= to);
      if (!s.length) continue;
      out[name] = {
        peakRssMb: Math.round(Math.max(...s.map((x) => x.rssMb))),
        lastRssMb: s[s.length - 1]!.rssMb,
        peakCpuPct: Math.max(...s.map((x) => x.cpuPct)),
        meanCpuPct: Math.round(s.reduce((a, x) => a + x.cpuPct, 0) / s.length),
        samples: s.length,
        peakRssFrom: 'sampled',
      };
    }
    return out;
  }
}
