/**
 * `compute` kept per key, at most `max` keys (then the memo starts over): for answers that
 * depend only on the key and are asked for on every request (a URL host's SSRF verdict, a
 * destination URL parsed). A call that throws keeps nothing. `compute` never returns
 * undefined.
 */
export function boundedMemo<V>(max: number, compute: (key: string) => V): (key: string) => V {
  const memo = new Map<string, V>();
  return (key) => {
    const known = memo.get(key);
    if (known !== undefined) return known;
    const value = compute(key);
    if (memo.size >= max) memo.clear();
    memo.set(key, value);
    return value;
  };
}
