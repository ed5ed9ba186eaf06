// A latency histogram with 1 ms buckets up to a ceiling (plus exact max): constant memory
// at any rate, exact percentiles at the resolution of the ingest timestamp (epoch ms).

export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export class Histogram {
  private buckets: Uint32Array;
  count = 0;
  max = 0;
  private sum = 0;

  constructor(private readonly ceilingMs = 120_000) {
    this.buckets = new Uint32Array(ceilingMs + 1);
  }

  record(ms: number): void {
    const v = Math.max(0, Math.round(ms));
    this.buckets[Math.min(v, this.ceilingMs)]! += 1;
    this.count++;
    this.sum += v;
    if (v > this.max) this.max = v;
  }

  percentile(p: number): number {
    if (this.count === 0) return 0;
    const rank = Math.ceil((p / 100) * this.count);
    let seen = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      seen += this.buckets[i]!;
      if (seen >= rank) return i;
    }
    return this.max;
  }

  summary(): LatencySummary {
    return { count: this.count, p50: this.percentile(50), p90: this.percentile(90), p99: this.percentile(99), max: this.max, mean: this.count ? Math.round((this.sum / this.count) * 10) / 10 : 0 };
  }

  reset(): void {
    this.buckets.fill(0);
    this.count = 0;
    this.max = 0;
    this.sum = 0;
  }
}
