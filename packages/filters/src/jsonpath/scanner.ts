import type { Literal } from './ast';

/** A syntax error with the 0-based position where parsing stopped. */
export class JsonPathSyntaxError extends Error {
  constructor(
    readonly reason: string,
    readonly position: number,
  ) {
    super(`invalid JSONPath at position ${position}: ${reason}`);
    this.name = 'JsonPathSyntaxError';
  }
}

const NAME_START = /[A-Za-z_$\u0080-\uffff]/;
const NAME_CHAR = /[A-Za-z0-9_$\-\u0080-\uffff]/;
const ESCAPES: Record<string, string> = { '"': '"', "'": "'", '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** Character-level reading shared by the path and filter-expression parsers. */
export class Scanner {
  pos = 0;
  constructor(readonly src: string) {}

  fail(reason: string, at = this.pos): never {
    throw new JsonPathSyntaxError(reason, at);
  }

  peek(offset = 0): string {
    return this.src.charAt(this.pos + offset);
  }

  get done(): boolean {
    return this.pos >= this.src.length;
  }

  skipSpace(): void {
    while (/\s/.test(this.peek()) && !this.done) this.pos++;
  }

  /** Consumes `token` when it comes next (after blank space). */
  eat(token: string): boolean {
    this.skipSpace();
    if (this.src.startsWith(token, this.pos)) {
      this.pos += token.length;
      return true;
    }
    return false;
  }

  expect(token: string): void {
    if (!this.eat(token)) this.fail(`expected '${token}'`);
  }

  isNameStart(): boolean {
    return NAME_START.test(this.peek());
  }

  /** A member name written after `.` (letters, digits, `_`, `$`, `-`). */
  readName(): string {
    const start = this.pos;
    if (!this.isNameStart()) this.fail('expected a member name');
    while (!this.done && NAME_CHAR.test(this.peek())) this.pos++;
    return this.src.slice(start, this.pos);
  }

  readString(): string {
    const quote = this.peek();
    const start = this.pos++;
    let out = '';
    while (!this.done) {
      const c = this.src[this.pos++]!;
      if (c === quote) return out;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.src[this.pos++] ?? '';
      if (e === 'u') {
        const hex = this.src.slice(this.pos, this.pos + 4);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('bad \\u escape', this.pos);
        out += String.fromCharCode(parseInt(hex, 16));
        this.pos += 4;
      } else if (ESCAPES[e] !== undefined) out += ESCAPES[e];
      else this.fail(`bad escape '\\${e}'`, this.pos - 1);
    }
    return this.fail('unterminated string', start);
  }

  /** An integer (indexes and slice bounds). */
  readInteger(): number | undefined {
    this.skipSpace();
    const m = /^-?\d+/.exec(this.src.slice(this.pos, this.pos + 24));
    if (!m) return undefined;
    this.pos += m[0].length;
    const n = Number(m[0]);
    if (!Number.isSafeInteger(n)) this.fail('integer out of range', this.pos - m[0].length);
    return n;
  }

  /** The text of a JSON number token, if one comes next (consumed). */
  readNumberText(): string | undefined {
    const num = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/.exec(this.src.slice(this.pos, this.pos + 64));
    if (!num) return undefined;
    this.pos += num[0].length;
    return num[0];
  }

  /** A string, number, true, false or null, if one comes next. */
  readLiteral(): { value: Literal } | undefined {
    this.skipSpace();
    const c = this.peek();
    if (c === "'" || c === '"') return { value: this.readString() };
    const num = this.readNumberText();
    if (num !== undefined) {
      // An integer beyond ±(2^53−1) is kept exactly, as a bigint, and compared exactly with
      // the body's numbers (json-values.ts); a double would round it, so that
      // 1234567890123456789 equalled 1234567890123456800. Such a literal, like `1e400`
      // (Infinity), is refused on write by validateFilter (non-finite.ts); a stored one keeps
      // the meaning it is written with.
      return { value: literalNumber(num) };
    }
    for (const [word, value] of [['true', true], ['false', false], ['null', null]] as const) {
      if (this.src.startsWith(word, this.pos) && !NAME_CHAR.test(this.peek(word.length))) {
        this.pos += word.length;
        return { value };
      }
    }
    return undefined;
  }
}

/** A number literal's value: a bigint for an integer beyond ±(2^53−1) written as one (no fraction or exponent). */
export function literalNumber(text: string): number | bigint {
  const n = Number(text);
  return Number.isSafeInteger(n) || !/^-?\d+$/.test(text) ? n : BigInt(text);
}
